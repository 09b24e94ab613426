//! The checks a plugin file passes before it is mapped (the object parser, segment bounds,
//! the entry symbol), on arbitrary bytes as the file.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tributary_runtime::fuzzing::plugin_file(data);
});
