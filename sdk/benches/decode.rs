//! Decoder benchmarks (being written).
fn main() {}
