//! Google Cloud Storage: object_store's `GoogleCloudStorage` with a service account key made
//! from `cloudFiles.clientEmail`/`privateKey`/`privateKeyId`, else object_store's chain
//! (`GOOGLE_SERVICE_ACCOUNT`/`GOOGLE_APPLICATION_CREDENTIALS`, application default credentials,
//! the metadata server). Configuration only is tested here (no emulator is installed).

use std::sync::Arc;

use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::ObjectStore;

use super::{client_options, retry, CloudSpec, ResolvedCloudOptions};

/// The GCS client for `spec`'s bucket.
pub(super) fn build(spec: &CloudSpec) -> object_store::Result<Arc<dyn ObjectStore>> {
    let o = &spec.options;
    let mut b = GoogleCloudStorageBuilder::from_env()
        .with_bucket_name(&spec.path.bucket)
        .with_client_options(client_options(o.endpoint.as_deref()))
        .with_retry(retry());
    if let Some(endpoint) = &o.endpoint {
        b = b.with_base_url(endpoint);
    }
    if let Some(key) = service_account_key(o) {
        b = b.with_service_account_key(key);
    }
    Ok(Arc::new(b.build()?))
}

/// The service account key JSON the options describe.
fn service_account_key(o: &ResolvedCloudOptions) -> Option<String> {
    let (email, key, key_id) = o.service_account.as_ref()?;
    Some(
        serde_json::json!({
            "type": "service_account",
            "client_email": email,
            "private_key": key.expose(),
            "private_key_id": key_id.expose(),
        })
        .to_string(),
    )
}

/// What credentials are tried, for messages.
pub(super) fn tried(o: &ResolvedCloudOptions) -> String {
    match &o.service_account {
        Some((email, _, _)) => {
            format!("the service account key of {email} (cloudFiles.clientEmail)")
        }
        None => {
            "the Google credential chain (GOOGLE_SERVICE_ACCOUNT, GOOGLE_APPLICATION_CREDENTIALS, \
                 application default credentials, the metadata server)"
                .into()
        }
    }
}
