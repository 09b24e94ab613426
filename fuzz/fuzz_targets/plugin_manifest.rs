//! The plugin manifest reader: counts, kinds, strings without NUL or UTF-8, option lists that
//! are not option specs.
#![no_main]
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use tributary_runtime::fuzzing::{plugin_manifest, FuzzConnector};

#[derive(Arbitrary, Debug)]
struct Connector {
    kind: u32,
    name: Vec<u8>,
    options: Vec<u8>,
}

#[derive(Arbitrary, Debug)]
struct Manifest {
    abi_version: u32,
    strings: [Vec<u8>; 4],
    connectors: Vec<Connector>,
    declared: usize,
}

fuzz_target!(|m: Manifest| {
    let connectors: Vec<FuzzConnector> = m
        .connectors
        .into_iter()
        .map(|c| FuzzConnector {
            kind: c.kind % 4,
            name: c.name,
            options: c.options,
        })
        .collect();
    plugin_manifest(m.abi_version, m.strings, &connectors, m.declared);
});
