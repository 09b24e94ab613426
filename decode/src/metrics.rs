//! Why a record was malformed, and the per-reason counters reported as source metrics.
//!
//! In PERMISSIVE mode a malformed record becomes a null struct and one counter is incremented;
//! the counters appear in progress events as `malformed.<reason>` plus the total
//! `malformedRecords`. Field-level type mismatches (a JSON string where a number was declared)
//! null only that field and are counted as `typeMismatchFields`.

use tributary_sdk::SourceMetrics;

/// The reason a record could not be decoded.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Malformed {
    /// Not valid JSON (syntax, nesting too deep, trailing characters, top level not an object).
    BadJson,
    /// A JSON value of another type than the schema declares (FAILFAST only; PERMISSIVE nulls the field).
    JsonTypeMismatch,
    /// Avro bytes ended before the record did.
    TruncatedAvro,
    /// Avro bytes that cannot be valid for the schema (bad union branch, enum index, length).
    BadAvro,
    /// Avro bytes left over after the record.
    AvroTrailingBytes,
    /// A Confluent-framed record whose first byte is not 0 (or shorter than the frame header).
    BadMagicByte,
    /// A Confluent-framed record with another schema id than the one resolved at start.
    WrongSchemaId,
    /// Confluent protobuf message indexes that do not name the resolved message.
    WrongMessageIndex,
    /// A protobuf field with a wire type its declared type cannot have (or an invalid wire type).
    ProtobufWireType,
    /// Protobuf bytes that end inside a field.
    TruncatedProtobuf,
    /// Protobuf bytes that are otherwise invalid (varint overflow, bad length, bad timestamp).
    BadProtobuf,
    /// A string that is not valid UTF-8.
    InvalidUtf8,
    /// `schemaResolution=writer`: a record framed with a schema id the registry does not know,
    /// or whose writer schema the pinned (reader) schema cannot read.
    UnresolvableSchemaId,
}

impl Malformed {
    /// Every reason, in declaration order (`reason as usize` indexes it).
    const ALL: [Malformed; 13] = [
        Malformed::BadJson,
        Malformed::JsonTypeMismatch,
        Malformed::TruncatedAvro,
        Malformed::BadAvro,
        Malformed::AvroTrailingBytes,
        Malformed::BadMagicByte,
        Malformed::WrongSchemaId,
        Malformed::WrongMessageIndex,
        Malformed::ProtobufWireType,
        Malformed::TruncatedProtobuf,
        Malformed::BadProtobuf,
        Malformed::InvalidUtf8,
        Malformed::UnresolvableSchemaId,
    ];

    /// The counter name, `malformed.<reason>`.
    pub fn counter(&self) -> &'static str {
        match self {
            Malformed::BadJson => "malformed.badJson",
            Malformed::JsonTypeMismatch => "malformed.jsonTypeMismatch",
            Malformed::TruncatedAvro => "malformed.truncatedAvro",
            Malformed::BadAvro => "malformed.badAvro",
            Malformed::AvroTrailingBytes => "malformed.avroTrailingBytes",
            Malformed::BadMagicByte => "malformed.badMagicByte",
            Malformed::WrongSchemaId => "malformed.wrongSchemaId",
            Malformed::WrongMessageIndex => "malformed.wrongMessageIndex",
            Malformed::ProtobufWireType => "malformed.protobufWireType",
            Malformed::TruncatedProtobuf => "malformed.truncatedProtobuf",
            Malformed::BadProtobuf => "malformed.badProtobuf",
            Malformed::InvalidUtf8 => "malformed.invalidUtf8",
            Malformed::UnresolvableSchemaId => "malformed.unresolvableSchemaId",
        }
    }
}

/// A decoding failure inside one record: the reason and a short description with the position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bad {
    pub reason: Malformed,
    pub what: &'static str,
    pub at: usize,
}

impl Bad {
    #[inline]
    pub fn new(reason: Malformed, what: &'static str, at: usize) -> Bad {
        Bad { reason, what, at }
    }
}

/// Counters of one decoder.
#[derive(Debug, Default, Clone)]
pub(crate) struct Counters {
    /// Per reason, indexed by `reason as usize`.
    by_reason: [u64; Malformed::ALL.len()],
    total: u64,
    mismatches: u64,
    decoded: u64,
    /// `schemaResolution=writer`: records read with a writer schema other than the pinned one;
    /// None when writer resolution is off (the counters are then not reported).
    resolved_records: Option<u64>,
}

impl Counters {
    pub fn malformed(&mut self, reason: Malformed) {
        self.by_reason[reason as usize] += 1;
        self.total += 1;
    }
    pub fn mismatches(&mut self, n: u64) {
        self.mismatches += n;
    }
    pub fn decoded(&mut self, n: u64) {
        self.decoded += n;
    }
    /// Reports `resolvedSchemaIds` and `resolvedRecords` from now on.
    #[cfg_attr(not(feature = "registry"), allow(dead_code))]
    pub fn enable_resolution(&mut self) {
        self.resolved_records.get_or_insert(0);
    }
    #[cfg_attr(not(feature = "registry"), allow(dead_code))]
    pub fn resolved_record(&mut self) {
        *self.resolved_records.get_or_insert(0) += 1;
    }

    pub fn to_metrics(&self) -> SourceMetrics {
        let mut m = SourceMetrics::new();
        for (reason, n) in Malformed::ALL.iter().zip(self.by_reason) {
            if n > 0 {
                m.insert(reason.counter().to_string(), n.into());
            }
        }
        m.insert("malformedRecords".into(), self.total.into());
        m.insert("typeMismatchFields".into(), self.mismatches.into());
        m.insert("decodedValues".into(), self.decoded.into());
        if let Some(records) = self.resolved_records {
            m.insert("resolvedRecords".into(), records.into());
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_has_its_own_slot() {
        for (i, r) in Malformed::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i, "{r:?} is out of order in Malformed::ALL");
        }
        let mut c = Counters::default();
        c.malformed(Malformed::InvalidUtf8);
        c.malformed(Malformed::BadJson);
        c.malformed(Malformed::BadJson);
        let m = c.to_metrics();
        assert_eq!(m["malformed.badJson"], 2);
        assert_eq!(m["malformed.invalidUtf8"], 1);
        assert_eq!(m["malformedRecords"], 3);
        assert!(!m.contains_key("malformed.badAvro"));
    }
}
