//! What the JSON-lines format benchmarks share: the generated records (one schema, one line
//! shape), the checks compared outside the timings and the median.
#![allow(dead_code, clippy::unwrap_used)]

use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Duration;

use arrow_array::{Array, Int64Array, RecordBatch};

/// The schema of the generated records.
pub const DDL: &str =
    "id BIGINT, user STRING, price DOUBLE, qty INT, ts TIMESTAMP, ok BOOLEAN, tag STRING";

/// Record `id` as one JSON line (newline included).
pub fn json_line(id: u64) -> String {
    format!(
        "{{\"id\": {id}, \"user\": \"user-{u}\", \"price\": {p:.2}, \"qty\": {q}, \
         \"ts\": \"2024-05-{d:02}T10:{m:02}:00Z\", \"ok\": {ok}, \"tag\": \"tag{t}\"}}\n",
        u = id % 9973,
        p = (id % 1000) as f64 * 1.25,
        q = id % 17,
        d = 1 + id % 28,
        m = id % 60,
        ok = id.is_multiple_of(3),
        t = id % 11,
    )
}

/// Writes records to `path` until it holds at least `bytes` bytes; returns the record count.
pub fn generate(path: &Path, bytes: u64) -> u64 {
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    let (mut written, mut id) = (0u64, 0u64);
    while written < bytes {
        let line = json_line(id);
        w.write_all(line.as_bytes()).unwrap();
        written += line.len() as u64;
        id += 1;
    }
    w.flush().unwrap();
    id
}

/// At least `bytes` bytes of records in memory.
pub fn generate_in_memory(bytes: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes + 256);
    let mut id = 0u64;
    while out.len() < bytes {
        out.extend_from_slice(json_line(id).as_bytes());
        id += 1;
    }
    out
}

/// (rows, sum of ids) of batches.
pub fn summary(batches: &[RecordBatch]) -> (usize, i64) {
    let mut sum = 0;
    for b in batches {
        let id = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        sum += (0..id.len()).map(|i| id.value(i)).sum::<i64>();
    }
    (batches.iter().map(|b| b.num_rows()).sum(), sum)
}

/// The median of the timings.
pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// `cargo bench` passes `--bench`; `cargo test --benches` runs a bench without it, which then
/// stays quick (small inputs, one run).
pub fn full_run() -> bool {
    std::env::args().any(|a| a == "--bench")
}
