//! Azure Blob Storage (ADLS Gen2 through its Blob endpoint): object_store's `MicrosoftAzure`
//! with credentials from `cloudFiles.connectionString` (account key or SAS), a service
//! principal (`cloudFiles.clientId`/`clientSecret`/`tenantId`), else object_store's Azure chain
//! (`AZURE_STORAGE_ACCOUNT_KEY`, `AZURE_CLIENT_ID`/`AZURE_CLIENT_SECRET`/`AZURE_TENANT_ID`,
//! workload identity, managed identity).
//!
//! Connection strings (`Key=Value;...`) are split here by hand: object_store does not read
//! them, and the format is a flat list of pairs.

use object_store::azure::{MicrosoftAzure, MicrosoftAzureBuilder};
use tributary_sdk::{Error, ErrorCode, Result, Secret};

use super::{client_options, retry, CloudSpec, ResolvedCloudOptions};
use crate::config::{names, CloudPath};

/// The parts of a storage account connection string the source uses.
#[derive(Debug, Clone, Default)]
pub(crate) struct ConnectionString {
    pub account: Option<String>,
    pub key: Option<Secret>,
    pub sas: Option<Secret>,
    pub blob_endpoint: Option<String>,
    pub queue_endpoint: Option<String>,
}

impl ConnectionString {
    /// Parses `AccountName=..;AccountKey=..;BlobEndpoint=..;...` (no value is ever printed).
    pub fn parse(text: &Secret) -> Result<ConnectionString> {
        let mut out = ConnectionString::default();
        for pair in text
            .expose()
            .split(';')
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            let Some((k, v)) = pair.split_once('=') else {
                return Err(Error::new(
                    ErrorCode::InvalidOption,
                    format!(
                        "option '{}' is not a connection string (Key=Value pairs separated by ';')",
                        names::CONNECTION_STRING
                    ),
                )
                .with_context("option", names::CONNECTION_STRING));
            };
            let v = v.trim().to_string();
            match k.trim().to_ascii_lowercase().as_str() {
                "accountname" => out.account = Some(v),
                "accountkey" => out.key = Some(Secret::new(v)),
                "sharedaccesssignature" => out.sas = Some(Secret::new(v)),
                "blobendpoint" => out.blob_endpoint = Some(v),
                "queueendpoint" => out.queue_endpoint = Some(v),
                _ => {}
            }
        }
        Ok(out)
    }
}

/// The Blob client for `spec`'s container.
pub(super) fn build(spec: &CloudSpec) -> object_store::Result<MicrosoftAzure> {
    let o = &spec.options;
    let cs = o.connection_string.clone().unwrap_or_default();
    let endpoint = o.endpoint.clone().or(cs.blob_endpoint.clone());
    let mut b = MicrosoftAzureBuilder::from_env()
        .with_container_name(&spec.path.bucket)
        .with_client_options(client_options(endpoint.as_deref()))
        .with_retry(retry());
    if let Some(account) = cs.account.as_ref().or(spec.path.account.as_ref()) {
        b = b.with_account(account);
    }
    if let Some(endpoint) = endpoint {
        b = b.with_endpoint(endpoint);
    }
    if let Some(key) = &cs.key {
        b = b.with_access_key(key.expose());
    }
    if let Some(sas) = &cs.sas {
        let pairs: Vec<(String, String)> =
            url::form_urlencoded::parse(sas.expose().trim_start_matches('?').as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
        b = b.with_sas_authorization(pairs);
    }
    if let Some((id, secret, tenant)) = &o.client_secret {
        b = b.with_client_secret_authorization(id, secret.expose(), tenant);
    }
    b.build()
}

/// What credentials are tried, for messages.
pub(super) fn tried(o: &ResolvedCloudOptions, path: &CloudPath) -> String {
    let account = o
        .connection_string
        .as_ref()
        .and_then(|c| c.account.clone())
        .or(path.account.clone())
        .unwrap_or_else(|| "from AZURE_STORAGE_ACCOUNT_NAME".into());
    if let Some(cs) = &o.connection_string {
        let how = if cs.key.is_some() {
            "account key"
        } else if cs.sas.is_some() {
            "shared access signature"
        } else {
            "no key"
        };
        return format!("the {how} of cloudFiles.connectionString for account {account}");
    }
    if let Some((id, _, tenant)) = &o.client_secret {
        return format!("the service principal {id} of tenant {tenant} (cloudFiles.clientId) for account {account}");
    }
    format!(
        "the Azure credential chain for account {account} (AZURE_STORAGE_ACCOUNT_KEY, \
         AZURE_STORAGE_SAS_KEY, AZURE_CLIENT_ID/AZURE_CLIENT_SECRET/AZURE_TENANT_ID, workload \
         identity, managed identity)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_strings_split_and_hide_the_key() {
        let cs = ConnectionString::parse(&Secret::new(
            "DefaultEndpointsProtocol=http;AccountName=dev;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:1/dev;QueueEndpoint=http://127.0.0.1:2/dev;",
        ))
        .unwrap();
        assert_eq!(cs.account.as_deref(), Some("dev"));
        assert_eq!(cs.blob_endpoint.as_deref(), Some("http://127.0.0.1:1/dev"));
        assert_eq!(cs.queue_endpoint.as_deref(), Some("http://127.0.0.1:2/dev"));
        assert!(!format!("{cs:?}").contains("a2V5"));
        let e = ConnectionString::parse(&Secret::new("hunter2secret")).unwrap_err();
        assert!(!e.message().contains("hunter2"), "{}", e.message());
    }
}
