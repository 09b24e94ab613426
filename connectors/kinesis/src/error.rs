//! Mapping of `aws-sdk-kinesis` failures into the SDK's [`Error`] with stable codes.
//!
//! Every Kinesis call fails with an `SdkError`; [`ApiError::from_sdk`] keeps what the source
//! acts on (throttled, expired iterator, resource not found, resource in use) and the text for
//! users, and [`ApiError::into_error`] turns it into `AUTHENTICATION_FAILED` (bad or missing
//! credentials, signature problems), `CONNECTION_FAILED` (unreachable endpoint, TLS failures),
//! `TIMEOUT`, or the operation's own code (`SOURCE_READ_FAILED`, `SINK_WRITE_FAILED`), always
//! naming the stream. Secrets never appear: the SDK does not print credentials.

use std::fmt;

use aws_sdk_kinesis::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use tributary_sdk::{Error, ErrorCode};

/// What kind of failure a Kinesis call had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ApiFailure {
    /// ProvisionedThroughputExceeded / LimitExceeded / throttling.
    Throttled,
    /// ExpiredIteratorException.
    ExpiredIterator,
    /// ResourceNotFoundException.
    NotFound,
    /// ResourceInUseException.
    InUse,
    /// Credentials or signature refused.
    Auth,
    /// The endpoint cannot be reached (DNS, TCP, TLS).
    Connection,
    /// A timeout.
    Timeout,
    /// Anything else.
    Other,
}

/// A failed Kinesis call, classified.
#[derive(Debug, Clone)]
pub(crate) struct ApiError {
    /// The classification.
    pub failure: ApiFailure,
    /// The service's error code, if any.
    pub code: Option<String>,
    /// The full text (with the SDK's context).
    pub message: String,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ApiError {}

impl ApiError {
    /// Classifies an SDK error.
    pub fn from_sdk<E, R>(err: SdkError<E, R>) -> ApiError
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
        R: fmt::Debug,
    {
        let message = DisplayErrorContext(&err).to_string();
        let (failure, code) = match &err {
            SdkError::DispatchFailure(d) => {
                if d.is_timeout() {
                    (ApiFailure::Timeout, None)
                } else {
                    (ApiFailure::Connection, None)
                }
            }
            SdkError::TimeoutError(_) => (ApiFailure::Timeout, None),
            SdkError::ServiceError(s) => {
                let code = s.err().code().map(str::to_string);
                (classify_code(code.as_deref().unwrap_or_default()), code)
            }
            _ => {
                let code = err.code().map(str::to_string);
                (classify_code(code.as_deref().unwrap_or_default()), code)
            }
        };
        ApiError {
            failure,
            code,
            message,
        }
    }

    /// True when the endpoint's host name did not resolve (a misspelt region, a wrong
    /// endpoint, no DNS).
    pub fn is_unresolved_host(&self) -> bool {
        let m = self.message.to_ascii_lowercase();
        m.contains("dns error") || m.contains("failed to lookup address")
    }

    /// True when the service refused a timestamp as being in its future.
    pub fn is_future_timestamp(&self) -> bool {
        self.message.contains("cannot be in the future")
    }

    /// True when the failure is throttling.
    pub fn is_throttled(&self) -> bool {
        self.failure == ApiFailure::Throttled
    }

    /// Into the SDK error for an operation (`what`) on a stream; `read` picks the default code
    /// (`SOURCE_READ_FAILED` or `SINK_WRITE_FAILED`).
    pub fn into_error(self, what: &str, stream: &str, read: bool) -> Error {
        let unresolved = self.failure == ApiFailure::Connection && self.is_unresolved_host();
        let (code, hint) = match self.failure {
            ApiFailure::Connection if unresolved => (
                ErrorCode::Connection,
                " (the endpoint's host name does not resolve: check region, a region that does not exist has no endpoint, and endpoint)",
            ),
            ApiFailure::Auth => (
                ErrorCode::Authentication,
                " (check awsAccessKey/awsSecretKey, serviceCredential, roleArn or the AWS environment)",
            ),
            ApiFailure::Connection => (
                ErrorCode::Connection,
                " (check region, endpoint and tls.truststore.location)",
            ),
            ApiFailure::Timeout => (ErrorCode::Timeout, ""),
            // AT_TIMESTAMP (initialPosition latest or at_timestamp) past the service's clock.
            _ if read && self.is_future_timestamp() => (
                ErrorCode::SourceRead,
                " (the service says the start timestamp is in its future: this host's clock runs ahead of the service's, or the timestamp given is ahead; initialPosition=latest starts at this host's time, so check the host's clock, e.g. NTP)",
            ),
            _ if read => (ErrorCode::SourceRead, ""),
            _ => (ErrorCode::SinkWrite, ""),
        };
        let mut e = Error::new(
            code,
            format!("Kinesis {what} failed for stream '{stream}'{hint}"),
        )
        .with_context("stream", stream)
        .with_cause(self.clone());
        if self.failure == ApiFailure::NotFound {
            e = e.with_context("reason", "not found");
        }
        e
    }
}

fn classify_code(code: &str) -> ApiFailure {
    match code {
        "ProvisionedThroughputExceededException"
        | "LimitExceededException"
        | "ThrottlingException"
        | "KMSThrottlingException" => ApiFailure::Throttled,
        "ExpiredIteratorException" => ApiFailure::ExpiredIterator,
        "ResourceNotFoundException" => ApiFailure::NotFound,
        "ResourceInUseException" => ApiFailure::InUse,
        "UnrecognizedClientException"
        | "InvalidSignatureException"
        | "AccessDeniedException"
        | "ExpiredTokenException"
        | "IncompleteSignature"
        | "MissingAuthenticationToken"
        | "InvalidClientTokenId"
        | "SignatureDoesNotMatch" => ApiFailure::Auth,
        _ => ApiFailure::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real call to the endpoint of a region that does not exist: the host name does not
    /// resolve (on a machine without DNS for it as well), and the error names the region.
    #[tokio::test]
    async fn a_region_that_does_not_exist_is_named_as_the_cause() {
        let settings = crate::config::ConnectionSettings {
            region: Some("eu-wset-1".into()),
            endpoint: None,
            credentials: crate::config::BaseCredentials::Static {
                access_key: tributary_sdk::Secret::new("AKIDEXAMPLE"),
                secret_key: tributary_sdk::Secret::new("not-a-secret"),
            },
            assume_role: None,
            ca_file: None,
        };
        let client = crate::client::build_client(&settings, &tributary_sdk::EnvSecretStore)
            .await
            .expect("a client is built without I/O");
        let err = client
            .list_streams()
            .send()
            .await
            .expect_err("no such endpoint");
        let e = ApiError::from_sdk(err).into_error("ListStreams", "s", true);
        assert_eq!(e.code(), ErrorCode::Connection, "{e}");
        assert!(
            e.to_string()
                .contains("host name does not resolve: check region"),
            "{e}"
        );
        assert!(!e.to_string().contains("not-a-secret"), "{e}");
    }

    #[test]
    fn a_timestamp_in_the_service_s_future_names_the_clock() {
        let e = ApiError {
            failure: ApiFailure::Other,
            code: Some("InvalidArgumentException".into()),
            message: "InvalidArgumentException: Timestamp cannot be in the future".into(),
        }
        .into_error("GetShardIterator", "orders", true);
        assert_eq!(e.code(), ErrorCode::SourceRead);
        assert!(
            e.to_string().contains("this host's clock runs ahead"),
            "{e}"
        );
        let other = ApiError {
            failure: ApiFailure::Other,
            code: None,
            message: "InvalidArgumentException: something else".into(),
        }
        .into_error("GetShardIterator", "orders", true);
        assert!(!other.to_string().contains("clock"), "{other}");
    }

    #[test]
    fn codes_are_classified() {
        assert_eq!(
            classify_code("ProvisionedThroughputExceededException"),
            ApiFailure::Throttled
        );
        assert_eq!(
            classify_code("ExpiredIteratorException"),
            ApiFailure::ExpiredIterator
        );
        assert_eq!(
            classify_code("UnrecognizedClientException"),
            ApiFailure::Auth
        );
        assert_eq!(classify_code("Whatever"), ApiFailure::Other);
        let e = ApiError {
            failure: ApiFailure::Auth,
            code: None,
            message: "denied".into(),
        }
        .into_error("ListShards", "s", true);
        assert_eq!(e.code(), ErrorCode::Authentication);
        assert_eq!(e.context_value("stream"), Some("s"));
    }
}
