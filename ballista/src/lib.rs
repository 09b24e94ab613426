//! # tributary-ballista
//!
//! Scale-out on Apache Ballista (see the crate description).
