//! Writes hand-built Kafka record batches (magic 2) into a broker with one raw Produce request
//! (v3), for the offset layouts no client library produces on demand: a transaction's COMMIT
//! control batch (the marker a real broker appends on EndTxn, which librdkafka's mock cluster
//! does not write) and a batch with holes between its records' offsets, as log compaction leaves
//! them.
//!
//! The mock cluster assigns a batch as many offsets as its `RecordCount` says and rewrites its
//! base offset; the consumer computes each record's offset as base + the record's offset delta.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// One record of a batch: its offset delta, key and value.
#[derive(Debug, Clone)]
pub struct RawRecord {
    pub offset_delta: i32,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
}

/// A record batch to write.
#[derive(Debug, Clone)]
pub struct RawBatch {
    /// Offsets the batch occupies (`RecordCount`; the last offset delta is this minus one).
    pub span: i32,
    pub records: Vec<RawRecord>,
    /// Producer id of a transactional batch; `None` for a plain one.
    pub transactional_pid: Option<i64>,
    /// A control batch (transaction marker).
    pub control: bool,
}

impl RawBatch {
    /// Records at consecutive offsets, values `values`, keys `k-<value>`.
    pub fn data(values: &[&str], transactional_pid: Option<i64>) -> RawBatch {
        RawBatch {
            span: values.len() as i32,
            records: values
                .iter()
                .enumerate()
                .map(|(i, v)| RawRecord {
                    offset_delta: i as i32,
                    key: Some(format!("k-{v}").into_bytes()),
                    value: Some(v.as_bytes().to_vec()),
                })
                .collect(),
            transactional_pid,
            control: false,
        }
    }

    /// The COMMIT marker of producer `pid`'s transaction: one control record, one offset.
    pub fn commit_marker(pid: i64) -> RawBatch {
        RawBatch {
            span: 1,
            records: vec![RawRecord {
                offset_delta: 0,
                // version 0, type 1 (COMMIT)
                key: Some(vec![0, 0, 0, 1]),
                // version 0, coordinator epoch 0
                value: Some(vec![0, 0, 0, 0, 0, 0]),
            }],
            transactional_pid: Some(pid),
            control: true,
        }
    }

    /// A compacted batch: `span` offsets of which only the records at `kept` deltas remain.
    pub fn compacted(span: i32, kept: &[(i32, &str)]) -> RawBatch {
        RawBatch {
            span,
            records: kept
                .iter()
                .map(|(d, v)| RawRecord {
                    offset_delta: *d,
                    key: Some(format!("k-{v}").into_bytes()),
                    value: Some(v.as_bytes().to_vec()),
                })
                .collect(),
            transactional_pid: None,
            control: false,
        }
    }

    /// The batch in the wire format (magic 2), base offset 0.
    pub fn encode(&self) -> Vec<u8> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        let mut records = Vec::new();
        for r in &self.records {
            let mut body = vec![0u8]; // attributes
            varint(&mut body, 0); // timestamp delta
            varint(&mut body, r.offset_delta as i64);
            for part in [&r.key, &r.value] {
                match part {
                    Some(b) => {
                        varint(&mut body, b.len() as i64);
                        body.extend_from_slice(b);
                    }
                    None => varint(&mut body, -1),
                }
            }
            varint(&mut body, 0); // headers
            varint(&mut records, body.len() as i64);
            records.extend_from_slice(&body);
        }
        let mut attributes: i16 = 0;
        if self.transactional_pid.is_some() {
            attributes |= 0x10;
        }
        if self.control {
            attributes |= 0x20;
        }
        // From attributes to the end: the CRC-32C covers exactly this.
        let mut tail = Vec::new();
        tail.extend_from_slice(&attributes.to_be_bytes());
        tail.extend_from_slice(&(self.span - 1).to_be_bytes()); // last offset delta
        tail.extend_from_slice(&now.to_be_bytes()); // base timestamp
        tail.extend_from_slice(&now.to_be_bytes()); // max timestamp
        tail.extend_from_slice(&self.transactional_pid.unwrap_or(-1).to_be_bytes());
        tail.extend_from_slice(
            &(if self.transactional_pid.is_some() {
                0i16
            } else {
                -1
            })
            .to_be_bytes(),
        );
        tail.extend_from_slice(
            &(if self.transactional_pid.is_some() {
                0i32
            } else {
                -1
            })
            .to_be_bytes(),
        );
        tail.extend_from_slice(&self.span.to_be_bytes()); // RecordCount: offsets the mock assigns
        tail.extend_from_slice(&records);
        let mut out = Vec::new();
        out.extend_from_slice(&0i64.to_be_bytes()); // base offset
        let batch_length = 4 + 1 + 4 + tail.len() as i32; // leader epoch, magic, crc, tail
        out.extend_from_slice(&batch_length.to_be_bytes());
        out.extend_from_slice(&(-1i32).to_be_bytes()); // partition leader epoch
        out.push(2); // magic
        out.extend_from_slice(&crc32c(&tail).to_be_bytes());
        out.extend_from_slice(&tail);
        out
    }
}

fn varint(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    loop {
        let b = (z & 0x7f) as u8;
        z >>= 7;
        if z == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as i16).to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// Writes `batch` to `topic`/`partition` of the single-broker cluster at `bootstrap` with one
/// Produce v3 request (acks=all); returns the base offset the broker assigned.
pub fn produce_raw(bootstrap: &str, topic: &str, partition: i32, batch: &RawBatch) -> i64 {
    let records = batch.encode();
    let mut body = Vec::new();
    body.extend_from_slice(&0i16.to_be_bytes()); // api key: Produce
    body.extend_from_slice(&3i16.to_be_bytes()); // api version
    body.extend_from_slice(&7i32.to_be_bytes()); // correlation id
    string(&mut body, "raw-produce");
    body.extend_from_slice(&(-1i16).to_be_bytes()); // transactional id: null
    body.extend_from_slice(&(-1i16).to_be_bytes()); // acks
    body.extend_from_slice(&10_000i32.to_be_bytes()); // timeout
    body.extend_from_slice(&1i32.to_be_bytes()); // one topic
    string(&mut body, topic);
    body.extend_from_slice(&1i32.to_be_bytes()); // one partition
    body.extend_from_slice(&partition.to_be_bytes());
    body.extend_from_slice(&(records.len() as i32).to_be_bytes());
    body.extend_from_slice(&records);

    let addr = bootstrap.split(',').next().unwrap();
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    conn.write_all(&(body.len() as i32).to_be_bytes()).unwrap();
    conn.write_all(&body).unwrap();
    let mut len = [0u8; 4];
    conn.read_exact(&mut len).unwrap();
    let mut resp = vec![0u8; i32::from_be_bytes(len) as usize];
    conn.read_exact(&mut resp).unwrap();
    // correlation id, topic count, topic name, partition count, partition, error, base offset
    let mut at = 4 + 4;
    let name_len = i16::from_be_bytes([resp[at], resp[at + 1]]) as usize;
    at += 2 + name_len + 4 + 4;
    let error = i16::from_be_bytes([resp[at], resp[at + 1]]);
    assert_eq!(
        error, 0,
        "raw Produce to {topic}-{partition} failed with error {error}"
    );
    at += 2;
    i64::from_be_bytes(resp[at..at + 8].try_into().unwrap())
}
