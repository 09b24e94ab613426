//! Generic OAUTHBEARER with OIDC client credentials, as librdkafka names its properties:
//! `kafka.sasl.mechanism=OAUTHBEARER` with `kafka.sasl.oauthbearer.method=oidc` and the token
//! endpoint, client id, client secret and scope. Without `method=oidc`, OAUTHBEARER means AWS
//! MSK IAM (as before). librdkafka OAUTHBEARER properties that the connector's own token
//! callback would make meaningless are refused, naming why.

use tributary_sdk::options::{conflicting, redact_embedded};
use tributary_sdk::{Error, ErrorCode, ParsedOptions, Result, Secret};

use super::settings::{AuthSettings, Mechanism};

/// The OIDC client-credentials options (librdkafka's names).
pub(crate) const OIDC_ENDPOINT: &str = "kafka.sasl.oauthbearer.token.endpoint.url";
pub(crate) const OIDC_CLIENT_ID: &str = "kafka.sasl.oauthbearer.client.id";
pub(crate) const OIDC_CLIENT_SECRET: &str = "kafka.sasl.oauthbearer.client.secret";
pub(crate) const OIDC_SCOPE: &str = "kafka.sasl.oauthbearer.scope";
pub(crate) const OIDC_METHOD: &str = "kafka.sasl.oauthbearer.method";

/// librdkafka OAUTHBEARER properties that the connector's token callback makes meaningless,
/// with why.
const OAUTHBEARER_REFUSED: &[(&str, &str)] = &[
    ("sasl.oauthbearer.extensions", "rdkafka's token callback cannot hand SASL extensions to librdkafka (Confluent Cloud's logicalCluster / identityPoolId extensions are not sent)"),
    ("sasl.oauthbearer.config", "the connector supplies every OAUTHBEARER token itself (MSK IAM, or OIDC with kafka.sasl.oauthbearer.method=oidc); librdkafka's unsecured test tokens are not used"),
    ("enable.sasl.oauthbearer.unsecure.jwt", "the connector supplies every OAUTHBEARER token itself (MSK IAM, or OIDC with kafka.sasl.oauthbearer.method=oidc); librdkafka's unsecured test tokens are not used"),
    ("sasl.oauthbearer.grant.type", "only the client-credentials grant is supported (kafka.sasl.oauthbearer.method=oidc)"),
];

/// `kafka.sasl.oauthbearer.method=oidc` turns OAUTHBEARER into OIDC; the OIDC options without
/// it, the method without OAUTHBEARER and the refused librdkafka properties are errors.
pub(crate) fn refine_mechanism(
    p: &ParsedOptions,
    mut mechanism: Mechanism,
    mechanism_option: &'static str,
) -> Result<Mechanism> {
    if let Some(method) = p.string(OIDC_METHOD)? {
        if mechanism != Mechanism::OAuthBearer {
            return Err(conflicting(
                OIDC_METHOD,
                mechanism_option,
                "is only used with kafka.sasl.mechanism=OAUTHBEARER",
            ));
        }
        if method.trim().eq_ignore_ascii_case("oidc") {
            mechanism = Mechanism::Oidc;
        }
    }
    for name in [
        OIDC_ENDPOINT,
        OIDC_CLIENT_ID,
        OIDC_CLIENT_SECRET,
        OIDC_SCOPE,
    ] {
        p.refuse_ignored(
            name,
            mechanism == Mechanism::Oidc,
            OIDC_METHOD,
            "is only used with kafka.sasl.mechanism=OAUTHBEARER and kafka.sasl.oauthbearer.method=oidc",
        )?;
    }
    for (k, _) in p.prefixed("kafka.") {
        if let Some((name, why)) = OAUTHBEARER_REFUSED
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(&k))
        {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                format!("option 'kafka.{name}' is not supported: {why}"),
            )
            .with_context("option", format!("kafka.{name}")));
        }
    }
    Ok(mechanism)
}

/// The OIDC client-credentials settings: endpoint, client id and secret are required.
pub(crate) fn parse_oidc(p: &ParsedOptions) -> Result<AuthSettings> {
    let required = |name: &'static str| -> Result<String> {
        p.string(name)?
            .filter(|v| !v.trim().is_empty())
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::MissingOption,
                    format!("kafka.sasl.oauthbearer.method=oidc needs '{name}'"),
                )
                .with_context("option", name)
            })
    };
    let token_endpoint = required(OIDC_ENDPOINT)?.trim().to_string();
    let shown = redact_embedded(&token_endpoint).into_owned();
    match url::Url::parse(&token_endpoint) {
        Ok(u) if matches!(u.scheme(), "https" | "http") && u.host().is_some() => {}
        _ => {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                format!("invalid value '{shown}' for option '{OIDC_ENDPOINT}': expected an https:// (or http://) URL of the token endpoint"),
            )
            .with_context("option", OIDC_ENDPOINT))
        }
    }
    Ok(AuthSettings::Oidc {
        token_endpoint,
        client_id: required(OIDC_CLIENT_ID)?,
        client_secret: Secret::new(required(OIDC_CLIENT_SECRET)?),
        scope: p.string(OIDC_SCOPE)?.filter(|s| !s.trim().is_empty()),
    })
}
