//! The object-store options of the files source, parsed once (no secret resolved here: the
//! credential options keep their text, a `{{secrets/scope/key}}` reference or a literal, in a
//! [`Secret`] that prints `***`; the build step resolves them).
//!
//! Options of another cloud than the one `path` names, and any of them with a local path, are
//! refused as ignored.

use tributary_sdk::options::conflicting;
use tributary_sdk::{ParsedOptions, Result, Secret};

use super::location::{Cloud, SourcePath};
use super::names::*;

/// Object-store access options (all optional: each cloud's standard chain fills the gaps).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CloudOptions {
    /// `cloudFiles.endpoint`.
    pub endpoint: Option<String>,
    /// `cloudFiles.region`.
    pub region: Option<String>,
    /// `cloudFiles.awsAccessKey` (reference or literal).
    pub aws_access_key: Option<Secret>,
    /// `cloudFiles.awsSecretKey` (reference or literal).
    pub aws_secret_key: Option<Secret>,
    /// `cloudFiles.roleArn`.
    pub role_arn: Option<String>,
    /// `cloudFiles.roleExternalId`.
    pub role_external_id: Option<String>,
    /// `cloudFiles.roleSessionName`.
    pub role_session_name: Option<String>,
    /// `cloudFiles.stsEndpoint`.
    pub sts_endpoint: Option<String>,
    /// `cloudFiles.connectionString` (reference or literal).
    pub connection_string: Option<Secret>,
    /// `cloudFiles.clientId`.
    pub client_id: Option<String>,
    /// `cloudFiles.clientSecret` (reference or literal).
    pub client_secret: Option<Secret>,
    /// `cloudFiles.tenantId`.
    pub tenant_id: Option<String>,
    /// `cloudFiles.clientEmail`.
    pub client_email: Option<String>,
    /// `cloudFiles.privateKey` (reference or literal).
    pub private_key: Option<Secret>,
    /// `cloudFiles.privateKeyId` (reference or literal).
    pub private_key_id: Option<Secret>,
}

const AWS: &[&str] = &[
    AWS_ACCESS_KEY,
    AWS_SECRET_KEY,
    ROLE_ARN,
    ROLE_EXTERNAL_ID,
    ROLE_SESSION_NAME,
    STS_ENDPOINT,
];
const AZURE: &[&str] = &[CONNECTION_STRING, CLIENT_ID, CLIENT_SECRET, TENANT_ID];
const GCP: &[&str] = &[CLIENT_EMAIL, PRIVATE_KEY, PRIVATE_KEY_ID];

/// Parses the object-store options for `path`, refusing those that `path` would ignore.
pub(super) fn parse(p: &ParsedOptions, path: &SourcePath) -> Result<CloudOptions> {
    let cloud = path.as_cloud().map(|c| c.cloud);
    for option in [ENDPOINT, REGION] {
        p.refuse_ignored(
            option,
            cloud.is_some(),
            PATH,
            "applies to object-store paths (s3://, gs://, abfss://) only",
        )?;
    }
    p.refuse_ignored(
        REGION,
        cloud != Some(Cloud::Gcs),
        PATH,
        "applies to S3 (and Azure queues); GCS buckets have no region to give",
    )?;
    for (names, which, store) in [
        (AWS, Cloud::S3, "s3://"),
        (AZURE, Cloud::Azure, "abfss:// or az://"),
        (GCP, Cloud::Gcs, "gs://"),
    ] {
        for option in names {
            p.refuse_ignored(
                option,
                cloud == Some(which),
                PATH,
                &format!("applies to {store} paths only"),
            )?;
        }
    }
    let secret = |name: &str| -> Result<Option<Secret>> { Ok(p.string(name)?.map(Secret::new)) };
    let out = CloudOptions {
        endpoint: p.string(ENDPOINT)?,
        region: p.string(REGION)?,
        aws_access_key: secret(AWS_ACCESS_KEY)?,
        aws_secret_key: secret(AWS_SECRET_KEY)?,
        role_arn: p.string(ROLE_ARN)?,
        role_external_id: p.string(ROLE_EXTERNAL_ID)?,
        role_session_name: p.string(ROLE_SESSION_NAME)?,
        sts_endpoint: p.string(STS_ENDPOINT)?,
        connection_string: secret(CONNECTION_STRING)?,
        client_id: p.string(CLIENT_ID)?,
        client_secret: secret(CLIENT_SECRET)?,
        tenant_id: p.string(TENANT_ID)?,
        client_email: p.string(CLIENT_EMAIL)?,
        private_key: secret(PRIVATE_KEY)?,
        private_key_id: secret(PRIVATE_KEY_ID)?,
    };
    if out.aws_access_key.is_some() != out.aws_secret_key.is_some() {
        let (given, missing) = if out.aws_access_key.is_some() {
            (AWS_ACCESS_KEY, AWS_SECRET_KEY)
        } else {
            (AWS_SECRET_KEY, AWS_ACCESS_KEY)
        };
        return Err(conflicting(given, missing, "is given without the other half of the key pair; give both, or neither to use the AWS credential chain"));
    }
    for (option, needs) in [
        (ROLE_EXTERNAL_ID, ROLE_ARN),
        (ROLE_SESSION_NAME, ROLE_ARN),
        (STS_ENDPOINT, ROLE_ARN),
    ] {
        p.refuse_ignored(
            option,
            out.role_arn.is_some(),
            needs,
            "is only used when assuming cloudFiles.roleArn",
        )?;
    }
    let sp = [
        out.client_id.is_some(),
        out.client_secret.is_some(),
        out.tenant_id.is_some(),
    ];
    if sp.iter().any(|b| *b) && !sp.iter().all(|b| *b) {
        return Err(conflicting(CLIENT_ID, CLIENT_SECRET, "a service principal needs cloudFiles.clientId, cloudFiles.clientSecret and cloudFiles.tenantId together"));
    }
    if sp[0] && out.connection_string.is_some() {
        return Err(conflicting(
            CLIENT_ID,
            CONNECTION_STRING,
            "give either a service principal or a connection string",
        ));
    }
    let gcp = [
        out.client_email.is_some(),
        out.private_key.is_some(),
        out.private_key_id.is_some(),
    ];
    if gcp.iter().any(|b| *b) && !gcp.iter().all(|b| *b) {
        return Err(conflicting(CLIENT_EMAIL, PRIVATE_KEY, "a service account key needs cloudFiles.clientEmail, cloudFiles.privateKey and cloudFiles.privateKeyId together"));
    }
    Ok(out)
}
