//! Authenticators for Kafka connections: SASL PLAIN / SCRAM, TLS and mutual TLS (PEM, PKCS#12
//! and JKS stores), AWS MSK IAM, and generic OAUTHBEARER with OIDC client credentials.
//!
//! Each is a [`tributary_sdk::Authenticator`] (so the same credentials can serve another client,
//! a schema registry for instance) and also knows how to configure a librdkafka client
//! (`apply`). Key material is checked when the authenticator is built, before anything connects,
//! and a bad file yields an error naming the option and the file. Secrets (passwords, tokens)
//! are [`tributary_sdk::Secret`]s: they print `***`.

mod jks;
mod msk_iam;
mod oidc;
mod sasl;
mod tls;

pub(crate) use msk_iam::principal as msk_iam_principal;
pub use msk_iam::{msk_iam_token, MskIamAuthenticator};
pub use oidc::{fetch_token as oidc_token, OidcAuthenticator, OidcSettings, OidcToken};
pub use sasl::SaslAuthenticator;
pub use tls::{StoreFormat, TlsAuthenticator, TlsOptionNames, TlsSettings};
