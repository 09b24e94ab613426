//! Mapping of librdkafka failures into the SDK's [`Error`] with stable codes.
//!
//! librdkafka reports configuration problems, broker problems and authentication problems through
//! one error type ([`KafkaError`]) and, for problems that happen on its own threads (a failed SASL
//! handshake, a TLS certificate that does not verify), through the client context's error
//! callback. The connector keeps the last such callback error ([`ClientFailure`]) and uses it to
//! explain a timeout: "metadata request timed out" becomes "authentication failed: SASL SCRAM
//! ... invalid password" or "certificate verify failed". Everything a user sees is an
//! [`Error`] with a code: `UNKNOWN_OPTION` / `INVALID_OPTION` for options librdkafka refuses,
//! `AUTHENTICATION_FAILED`, `CONNECTION_FAILED`, `SOURCE_READ_FAILED`, `SINK_WRITE_FAILED`.

use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::types::RDKafkaConfRes;
use tributary_sdk::{Error, ErrorCode};

/// A failure librdkafka reported through the error callback, kept to explain later timeouts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClientFailure {
    /// The librdkafka error code.
    pub code: Option<RDKafkaErrorCode>,
    /// The message librdkafka gave (never holds a secret: librdkafka does not print passwords).
    pub message: String,
}

impl ClientFailure {
    /// True when the failure is about credentials or certificates rather than reachability.
    pub fn is_authentication(&self) -> bool {
        let m = self.message.to_ascii_lowercase();
        matches!(
            self.code,
            Some(RDKafkaErrorCode::Authentication)
                | Some(RDKafkaErrorCode::SaslAuthenticationFailed)
                | Some(RDKafkaErrorCode::SSL)
        ) || m.contains("authentication")
            || m.contains("certificate")
            || m.contains("ssl handshake")
            || m.contains("sasl")
    }
}

/// A configuration value librdkafka refused while building a client.
pub(crate) fn config_error(err: KafkaError, prefix: &str) -> Error {
    match err {
        KafkaError::ClientConfig(res, desc, key, value) => {
            let option = format!("{prefix}{key}");
            let shown = tributary_sdk::options::printable_value(&key, &value).into_owned();
            match res {
                RDKafkaConfRes::RD_KAFKA_CONF_UNKNOWN => Error::new(
                    ErrorCode::UnknownOption,
                    format!("librdkafka does not know the option '{option}': {desc} (the Java client settings this connector translates are listed in docs/kafka-java-settings.md)"),
                )
                .with_context("option", option),
                _ => Error::new(
                    ErrorCode::InvalidOption,
                    format!("librdkafka refused '{shown}' for option '{option}': {desc}"),
                )
                .with_context("option", option),
            }
        }
        KafkaError::ClientCreation(msg) => Error::new(
            ErrorCode::InvalidOption,
            format!("librdkafka refused the client configuration: {msg}"),
        ),
        other => Error::new(
            ErrorCode::Internal,
            format!("cannot create the Kafka client: {other}"),
        ),
    }
}

/// A failed broker request (metadata, offsets, watermarks): an authentication error when the
/// client reported one, otherwise a connection error naming the bootstrap servers.
pub(crate) fn request_error(
    what: &str,
    bootstrap: &str,
    err: &KafkaError,
    last_failure: Option<ClientFailure>,
) -> Error {
    if let Some(f) = last_failure.as_ref().filter(|f| f.is_authentication()) {
        return Error::new(
            ErrorCode::Authentication,
            format!(
                "{what} failed: the brokers at {bootstrap} refused the connection: {}",
                f.message
            ),
        )
        .with_context("location", bootstrap);
    }
    let cause = match &last_failure {
        Some(f) => format!("{err} (last client error: {})", f.message),
        None => err.to_string(),
    };
    let code = match err.rdkafka_error_code() {
        Some(RDKafkaErrorCode::UnknownTopicOrPartition) | Some(RDKafkaErrorCode::UnknownTopic) => {
            ErrorCode::SourceRead
        }
        Some(RDKafkaErrorCode::SaslAuthenticationFailed)
        | Some(RDKafkaErrorCode::Authentication)
        | Some(RDKafkaErrorCode::TopicAuthorizationFailed)
        | Some(RDKafkaErrorCode::GroupAuthorizationFailed)
        | Some(RDKafkaErrorCode::ClusterAuthorizationFailed) => ErrorCode::Authentication,
        _ => ErrorCode::Connection,
    };
    Error::new(
        code,
        format!("{what} failed against the brokers at {bootstrap}: {cause}"),
    )
    .with_context("location", bootstrap)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn unknown_and_invalid_options_are_named_with_their_prefix() {
        let e = config_error(
            KafkaError::ClientConfig(
                RDKafkaConfRes::RD_KAFKA_CONF_UNKNOWN,
                "No such configuration property".into(),
                "fetch.max.bytez".into(),
                "1".into(),
            ),
            "kafka.",
        );
        assert_eq!(e.code(), ErrorCode::UnknownOption);
        assert_eq!(e.context_value("option"), Some("kafka.fetch.max.bytez"));
        let e = config_error(
            KafkaError::ClientConfig(
                RDKafkaConfRes::RD_KAFKA_CONF_INVALID,
                "Invalid value".into(),
                "sasl.password".into(),
                "hunter2".into(),
            ),
            "kafka.",
        );
        assert_eq!(e.code(), ErrorCode::InvalidOption);
        assert!(!e.to_string().contains("hunter2"));
    }

    #[test]
    fn authentication_failures_explain_timeouts() {
        let f = ClientFailure {
            code: Some(RDKafkaErrorCode::Authentication),
            message: "SASL SCRAM-SHA-256 mechanism handshake failed".into(),
        };
        let e = request_error(
            "fetching metadata",
            "h:1",
            &KafkaError::MetadataFetch(RDKafkaErrorCode::OperationTimedOut),
            Some(f),
        );
        assert_eq!(e.code(), ErrorCode::Authentication);
        let e = request_error(
            "fetching metadata",
            "h:1",
            &KafkaError::MetadataFetch(RDKafkaErrorCode::OperationTimedOut),
            None,
        );
        assert_eq!(e.code(), ErrorCode::Connection);
        assert!(e.message().contains("h:1"));
    }
}
