//! Serde for option maps inside a [`crate::pipeline::PipelineSpec`] (sent to executors): an
//! [`Options`] travels as a JSON object of strings, as written. Its sensitivity marks do not
//! travel; the receiving factory marks them again from its declarations.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use tributary_sdk::Options;

fn to_map(options: &Options) -> BTreeMap<String, String> {
    options
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn from_map(map: BTreeMap<String, String>) -> Options {
    map.into_iter().collect()
}

/// `#[serde(with = "crate::serde_options")]` for an [`Options`].
pub fn serialize<S: Serializer>(options: &Options, s: S) -> Result<S::Ok, S::Error> {
    to_map(options).serialize(s)
}

/// See [`serialize`].
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Options, D::Error> {
    Ok(from_map(BTreeMap::deserialize(d)?))
}

/// `#[serde(with = "crate::serde_options::named")]` for `(name, options)` lists.
pub mod named {
    use super::*;

    /// Serialises `(name, options)` pairs.
    pub fn serialize<S: Serializer>(list: &[(String, Options)], s: S) -> Result<S::Ok, S::Error> {
        list.iter()
            .map(|(n, o)| (n.clone(), to_map(o)))
            .collect::<Vec<_>>()
            .serialize(s)
    }

    /// See [`serialize`].
    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<(String, Options)>, D::Error> {
        Ok(Vec::<(String, BTreeMap<String, String>)>::deserialize(d)?
            .into_iter()
            .map(|(n, m)| (n, from_map(m)))
            .collect())
    }
}
