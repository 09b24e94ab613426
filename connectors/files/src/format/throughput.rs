//! The streaming JSON-lines decoder against `arrow-json` decoding the same bytes directly, both
//! from memory (no file system, no object store), side by side in one run: median of 5 each,
//! rows and an id checksum compared outside the timings. An ignored test, for a release build:
//!
//! `cargo test --release -p tributary-files --lib format::throughput -- --ignored --nocapture`
//!
//! `FORMAT_BENCH_BYTES` sets the size (default 256 MiB); the chunk size pushed is 1 MiB.

use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{Array, Int64Array, RecordBatch};

use super::{DecodeContext, FileInfo, Format, BATCH_SIZE};
use crate::config::{CsvOptions, Mode};

const DDL: &str =
    "id BIGINT, user STRING, price DOUBLE, qty INT, ts TIMESTAMP, ok BOOLEAN, tag STRING";

fn data(bytes: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes + 256);
    let mut id = 0u64;
    while out.len() < bytes {
        out.extend_from_slice(
            format!(
                "{{\"id\": {id}, \"user\": \"user-{u}\", \"price\": {p:.2}, \"qty\": {q}, \
                 \"ts\": \"2024-05-{d:02}T10:{m:02}:00Z\", \"ok\": {ok}, \"tag\": \"tag{t}\"}}\n",
                u = id % 9973,
                p = (id % 1000) as f64 * 1.25,
                q = id % 17,
                d = 1 + id % 28,
                m = id % 60,
                ok = id % 3 == 0,
                t = id % 11,
            )
            .as_bytes(),
        );
        id += 1;
    }
    out
}

fn summary(batches: &[RecordBatch]) -> (usize, i64) {
    let mut sum = 0;
    for b in batches {
        let id = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        sum += (0..id.len()).map(|i| id.value(i)).sum::<i64>();
    }
    (batches.iter().map(|b| b.num_rows()).sum(), sum)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[test]
#[ignore = "a benchmark: run with --release --ignored (see the module docs)"]
fn streaming_json_decoder_against_arrow_json() {
    let bytes: usize = std::env::var("FORMAT_BENCH_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256 << 20);
    let input = data(bytes);
    let schema = Arc::new(crate::ddl::parse_ddl(DDL).unwrap());
    let ctx = DecodeContext::new(
        Format::Json,
        schema.clone(),
        "_rescued_data",
        Mode::Permissive,
        CsvOptions {
            header: false,
            delimiter: b',',
        },
    );
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let t = Instant::now();
        let info = FileInfo {
            path: "mem.json",
            size: input.len() as u64,
            modification_time_ms: 0,
        };
        let mut d = super::decoder(Format::Json, info, &ctx).unwrap();
        let mut a = Vec::new();
        for chunk in input.chunks(1 << 20) {
            d.push(chunk, &mut a).unwrap();
        }
        d.finish(&mut a).unwrap();
        ours.push(t.elapsed());

        let t = Instant::now();
        let mut dec = arrow_json::ReaderBuilder::new(schema.clone())
            .with_batch_size(BATCH_SIZE)
            .build_decoder()
            .unwrap();
        let (mut b, mut rest) = (Vec::new(), input.as_slice());
        while !rest.is_empty() {
            let n = dec.decode(rest).unwrap();
            rest = &rest[n..];
            if let Some(batch) = dec.flush().unwrap() {
                b.push(batch);
            }
        }
        if let Some(batch) = dec.flush().unwrap() {
            b.push(batch);
        }
        theirs.push(t.elapsed());
        assert_eq!(summary(&a), summary(&b));
    }
    let (o, t) = (median(ours), median(theirs));
    let mb = bytes as f64 / (1 << 20) as f64;
    println!(
        "THROUGHPUT {mb:.0} MiB: streaming decoder {:.3}s ({:.0} MiB/s), arrow-json {:.3}s \
         ({:.0} MiB/s), time ratio {:.2}",
        o.as_secs_f64(),
        mb / o.as_secs_f64(),
        t.as_secs_f64(),
        mb / t.as_secs_f64(),
        o.as_secs_f64() / t.as_secs_f64()
    );
}
