//! Arrow column builders for Kafka records: one [`Accum`] per partition range collects keys,
//! values, offsets, timestamps and headers and flushes them into batches of the source schema.
//! The range reader and the real-time stream reader share it.

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, ListBuilder, StringBuilder, StructBuilder};
use arrow_array::{
    ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray, TimestampMillisecondArray,
};
use arrow_schema::{DataType, Field, Fields, SchemaRef};
use rdkafka::message::{BorrowedMessage, Headers, Message};
use rdkafka::Timestamp;
use tributary_sdk::Result;

/// Column builders for one range.
pub(crate) struct Accum {
    pub(crate) topic: String,
    pub(crate) partition: i32,
    pub(crate) keys: BinaryBuilder,
    pub(crate) values: BinaryBuilder,
    pub(crate) offsets: Vec<i64>,
    pub(crate) timestamps: Vec<Option<i64>>,
    pub(crate) timestamp_types: Vec<i32>,
    pub(crate) headers: Option<ListBuilder<StructBuilder>>,
    pub(crate) batches: Vec<RecordBatch>,
    pub(crate) records: u64,
    pub(crate) bytes: u64,
}

fn header_builder() -> ListBuilder<StructBuilder> {
    let fields = Fields::from(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("value", DataType::Binary, true),
    ]);
    let sb = StructBuilder::new(
        fields.clone(),
        vec![
            Box::new(StringBuilder::new()),
            Box::new(BinaryBuilder::new()),
        ],
    );
    ListBuilder::new(sb).with_field(Arc::new(Field::new(
        "item",
        DataType::Struct(fields),
        false,
    )))
}

impl Accum {
    pub(crate) fn new(topic: &str, partition: i32, include_headers: bool) -> Self {
        Accum {
            topic: topic.to_string(),
            partition,
            keys: BinaryBuilder::new(),
            values: BinaryBuilder::new(),
            offsets: Vec::new(),
            timestamps: Vec::new(),
            timestamp_types: Vec::new(),
            headers: include_headers.then(header_builder),
            batches: Vec::new(),
            records: 0,
            bytes: 0,
        }
    }

    pub(crate) fn rows(&self) -> usize {
        self.offsets.len()
    }

    pub(crate) fn append(&mut self, msg: &BorrowedMessage<'_>, include_headers: bool) {
        let key = msg.key();
        let value = msg.payload();
        self.bytes += (key.map_or(0, <[u8]>::len) + value.map_or(0, <[u8]>::len)) as u64;
        self.keys.append_option(key);
        self.values.append_option(value);
        self.offsets.push(msg.offset());
        let (ts, kind) = match msg.timestamp() {
            Timestamp::CreateTime(t) => (Some(t), 0),
            Timestamp::LogAppendTime(t) => (Some(t), 1),
            Timestamp::NotAvailable => (None, -1),
        };
        self.timestamps.push(ts);
        self.timestamp_types.push(kind);
        if include_headers {
            if let Some(hb) = self.headers.as_mut() {
                match msg.headers().filter(|h| h.count() > 0) {
                    Some(hs) => {
                        for h in hs.iter() {
                            let sb = hb.values();
                            if let Some(k) = sb.field_builder::<StringBuilder>(0) {
                                k.append_value(h.key);
                            }
                            if let Some(v) = sb.field_builder::<BinaryBuilder>(1) {
                                v.append_option(h.value);
                            }
                            sb.append(true);
                        }
                        hb.append(true);
                    }
                    None => hb.append(false),
                }
            }
        }
        self.records += 1;
    }

    pub(crate) fn flush(&mut self, schema: &SchemaRef) -> Result<()> {
        let n = self.offsets.len();
        if n == 0 {
            return Ok(());
        }
        let mut cols: Vec<ArrayRef> = vec![
            Arc::new(self.keys.finish()),
            Arc::new(self.values.finish()),
            Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
                self.topic.as_str(),
                n,
            ))),
            Arc::new(Int32Array::from(vec![self.partition; n])),
            Arc::new(Int64Array::from(std::mem::take(&mut self.offsets))),
            Arc::new(
                TimestampMillisecondArray::from(std::mem::take(&mut self.timestamps))
                    .with_timezone("UTC"),
            ),
            Arc::new(Int32Array::from(std::mem::take(&mut self.timestamp_types))),
        ];
        if let Some(h) = self.headers.as_mut() {
            cols.push(Arc::new(h.finish()));
        }
        self.batches
            .push(RecordBatch::try_new(schema.clone(), cols)?);
        Ok(())
    }
}
