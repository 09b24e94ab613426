//! The Confluent wire format: magic byte 0, a 4-byte big-endian schema id, for protobuf the
//! message-index path, then the encoded record.
//!
//! Message indexes are a zig-zag varint count followed by that many zig-zag varint indexes; the
//! common case "first message of the file" is written either as the single byte `0` (count 0,
//! Confluent's short form) or as count 1 and index 0. Both decode.

use crate::metrics::{Bad, Malformed};

/// What the framing of one side expects.
#[derive(Debug, Clone, Default)]
pub(crate) struct Frame {
    /// Confluent framing is present.
    pub confluent: bool,
    /// The schema id records must carry (None: any id is accepted).
    pub schema_id: Option<u32>,
    /// Protobuf: the message-index path records must carry.
    pub message_indexes: Option<Vec<i64>>,
}

fn zigzag(b: &[u8], i: &mut usize) -> Result<i64, Bad> {
    let mut v: u64 = 0;
    let mut shift = 0u32;
    loop {
        let Some(&byte) = b.get(*i) else {
            return Err(Bad::new(
                Malformed::TruncatedProtobuf,
                "the record ends inside its message indexes",
                *i,
            ));
        };
        *i += 1;
        v |= ((byte & 0x7f) as u64) << shift;
        if byte & 0x80 == 0 {
            return Ok((v >> 1) as i64 ^ -((v & 1) as i64));
        }
        shift += 7;
        if shift > 63 {
            return Err(Bad::new(
                Malformed::BadProtobuf,
                "message index varint too long",
                *i,
            ));
        }
    }
}

impl Frame {
    /// The payload after the frame header, or why the header is wrong.
    #[inline]
    pub fn strip<'a>(&self, b: &'a [u8]) -> Result<&'a [u8], Bad> {
        if !self.confluent {
            return Ok(b);
        }
        if b.len() < 5 || b[0] != 0 {
            return Err(Bad::new(
                Malformed::BadMagicByte,
                "the record does not start with the Confluent magic byte 0 and a schema id",
                0,
            ));
        }
        let id = u32::from_be_bytes([b[1], b[2], b[3], b[4]]);
        if let Some(expected) = self.schema_id {
            if id != expected {
                return Err(Bad::new(
                    Malformed::WrongSchemaId,
                    "the record is framed with another schema id than the one resolved at start",
                    1,
                ));
            }
        }
        let mut i = 5;
        if let Some(expected) = &self.message_indexes {
            let count = zigzag(b, &mut i)?;
            let matches = if count == 0 {
                expected.as_slice() == [0]
            } else if count < 0 || count as usize > b.len() {
                return Err(Bad::new(
                    Malformed::BadProtobuf,
                    "invalid message index count",
                    5,
                ));
            } else {
                let mut ok = count as usize == expected.len();
                for k in 0..count as usize {
                    let v = zigzag(b, &mut i)?;
                    ok &= expected.get(k) == Some(&v);
                }
                ok
            };
            if !matches {
                return Err(Bad::new(
                    Malformed::WrongMessageIndex,
                    "the record's message indexes name another message than the resolved one",
                    5,
                ));
            }
        }
        Ok(&b[i..])
    }
}

/// Frames a payload (used by tests and benchmarks to make Confluent records).
pub fn confluent_frame(schema_id: u32, message_indexes: Option<&[i64]>, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 8);
    out.push(0);
    out.extend_from_slice(&schema_id.to_be_bytes());
    if let Some(idx) = message_indexes {
        let mut put = |v: i64| {
            let mut z = ((v << 1) ^ (v >> 63)) as u64;
            loop {
                if z < 0x80 {
                    out.push(z as u8);
                    break;
                }
                out.push((z as u8 & 0x7f) | 0x80);
                z >>= 7;
            }
        };
        if idx == [0] {
            put(0);
        } else {
            put(idx.len() as i64);
            for v in idx {
                put(*v);
            }
        }
    }
    out.extend_from_slice(payload);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proto_frame(id: u32, idx: Vec<i64>) -> Frame {
        Frame {
            confluent: true,
            schema_id: Some(id),
            message_indexes: Some(idx),
        }
    }

    #[test]
    fn both_encodings_of_the_first_message_decode() {
        let f = proto_frame(7, vec![0]);
        assert_eq!(f.strip(&[0, 0, 0, 0, 7, 0, 42]).unwrap(), &[42]);
        // count 1 (zig-zag 2), index 0
        assert_eq!(f.strip(&[0, 0, 0, 0, 7, 2, 0, 42]).unwrap(), &[42]);
    }

    #[test]
    fn nested_message_path_and_mismatches() {
        let f = proto_frame(7, vec![1, 0]);
        let framed = confluent_frame(7, Some(&[1, 0]), &[9]);
        assert_eq!(f.strip(&framed).unwrap(), &[9]);
        let other = confluent_frame(7, Some(&[0]), &[9]);
        assert_eq!(
            f.strip(&other).unwrap_err().reason,
            Malformed::WrongMessageIndex
        );
        let wrong_id = confluent_frame(8, Some(&[1, 0]), &[9]);
        assert_eq!(
            f.strip(&wrong_id).unwrap_err().reason,
            Malformed::WrongSchemaId
        );
        assert_eq!(
            f.strip(&[1, 0, 0, 0, 7]).unwrap_err().reason,
            Malformed::BadMagicByte
        );
        assert_eq!(
            f.strip(&[0, 0]).unwrap_err().reason,
            Malformed::BadMagicByte
        );
    }
}
