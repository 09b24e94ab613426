//! The JSON decoder (a hand-written parser into Arrow builders) on arbitrary lines.
#![no_main]
use std::sync::Mutex;

use libfuzzer_sys::fuzz_target;
use tributary_fuzz::{records, Decoders, Format};
use tributary_sdk::WireFormat;

static DECODERS: Mutex<Option<Decoders>> = Mutex::new(None);

fuzz_target!(|data: &[u8]| {
    let mut d = DECODERS.lock().unwrap_or_else(|e| e.into_inner());
    d.get_or_insert_with(|| Decoders::new(Format::Json, WireFormat::Plain))
        .check(&records(data, b'\n'));
});
