//! What a configured source reads, known before anything is opened.
//!
//! The host needs a few facts about a source that only the connector can tell: the identity its
//! checkpoint is bound to, the named streams (topics, Kinesis streams) it reads — a registry
//! subject named after the topic needs exactly one — and which columns carry the record payload
//! and key, so a decode stage knows what to decode. The connector computes them from its parsed
//! config; the host never reads a connector's option names.

use serde::{Deserialize, Serialize};

use crate::source::SourceIdentity;
use crate::streaming::RealTimeSupport;

/// What a configured source reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceDescription {
    /// The checkpoint identity (connector name and canonical target).
    pub identity: SourceIdentity,
    /// The named streams read (topics, Kinesis streams), in the order given. Empty when the
    /// source reads by pattern or has no such notion (files).
    #[serde(default)]
    pub streams: Vec<String>,
    /// The pattern streams are matched by (Kafka's `subscribePattern`), for messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_pattern: Option<String>,
    /// The binary column carrying the record payload (`value`, `data`), if records have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload_column: Option<String>,
    /// The binary column carrying the record key, if records have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_column: Option<String>,
    /// Whether the configured source can run in real-time mode (and why not).
    #[serde(default)]
    pub real_time: RealTimeSupport,
}

impl SourceDescription {
    /// A description with only an identity (no streams, no payload column).
    pub fn new(connector: impl Into<String>, target: impl Into<String>) -> Self {
        SourceDescription {
            identity: SourceIdentity {
                connector: connector.into(),
                target: target.into(),
            },
            streams: Vec::new(),
            stream_pattern: None,
            payload_column: None,
            key_column: None,
            real_time: RealTimeSupport::default(),
        }
    }

    /// Sets the named streams.
    pub fn with_streams(mut self, streams: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.streams = streams.into_iter().map(Into::into).collect();
        self
    }

    /// Says whether the source can run in real-time mode.
    pub fn with_real_time(mut self, support: RealTimeSupport) -> Self {
        self.real_time = support;
        self
    }

    /// Sets the stream pattern.
    pub fn with_stream_pattern(mut self, pattern: impl Into<String>) -> Self {
        self.stream_pattern = Some(pattern.into());
        self
    }

    /// Sets the payload column.
    pub fn with_payload_column(mut self, column: impl Into<String>) -> Self {
        self.payload_column = Some(column.into());
        self
    }

    /// Sets the key column.
    pub fn with_key_column(mut self, column: impl Into<String>) -> Self {
        self.key_column = Some(column.into());
        self
    }

    /// A short text for messages: "topics matching 'x.*'", "2 streams (a, b)", "stream 'a'".
    pub fn streams_text(&self) -> String {
        if let Some(p) = &self.stream_pattern {
            return format!("streams matching pattern '{p}'");
        }
        match self.streams.len() {
            0 => "no named stream".to_string(),
            1 => format!("stream '{}'", self.streams[0]),
            n => format!("{n} streams ({})", self.streams.join(", ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_json_and_describes_streams() {
        let d = SourceDescription::new("kafka", "subscribe:a,b")
            .with_streams(["a", "b"])
            .with_payload_column("value")
            .with_key_column("key");
        let back: SourceDescription =
            serde_json::from_value(serde_json::to_value(&d).unwrap()).unwrap();
        assert_eq!(back, d);
        assert_eq!(d.streams_text(), "2 streams (a, b)");
        let p = SourceDescription::new("kafka", "pattern:x").with_stream_pattern("x.*");
        assert_eq!(p.streams_text(), "streams matching pattern 'x.*'");
        assert_eq!(
            SourceDescription::new("files", "/d").streams_text(),
            "no named stream"
        );
    }
}
