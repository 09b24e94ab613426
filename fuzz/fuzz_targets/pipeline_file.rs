//! The pipeline-file parser (TOML into the spec: options, trigger, transform, engine).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        tributary_runtime::fuzzing::pipeline_file(text);
    }
});
