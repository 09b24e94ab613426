//! The Avro decoder (a hand-written binary reader into Arrow builders) on arbitrary records,
//! plain and Confluent-framed (the first byte picks which).
#![no_main]
use std::sync::Mutex;

use libfuzzer_sys::fuzz_target;
use tributary_fuzz::{records, Decoders, Format};
use tributary_sdk::WireFormat;

static DECODERS: Mutex<Option<[Decoders; 2]>> = Mutex::new(None);

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let mut d = DECODERS.lock().unwrap_or_else(|e| e.into_inner());
    let d = d.get_or_insert_with(|| {
        [
            Decoders::new(Format::Avro, WireFormat::Plain),
            Decoders::new(Format::Avro, WireFormat::Confluent),
        ]
    });
    // 0xFF separates records: it is rare inside short varints, common enough to mutate in.
    d[(pick & 1) as usize].check(&records(rest, 0xFF));
});
