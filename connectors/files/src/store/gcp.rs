//! Google Cloud Storage: object_store's `GoogleCloudStorage` with a service account key made
//! from `cloudFiles.clientEmail`/`privateKey`/`privateKeyId`, else object_store's chain
//! (`GOOGLE_SERVICE_ACCOUNT`/`GOOGLE_APPLICATION_CREDENTIALS`, application default credentials,
//! the metadata server). Configuration only is tested here (no emulator is installed).

use object_store::gcp::{GoogleCloudStorage, GoogleCloudStorageBuilder};

use super::{client_options, retry, CloudSpec, ResolvedCloudOptions};

/// The GCS client for `spec`'s bucket.
pub(super) fn build(spec: &CloudSpec) -> object_store::Result<GoogleCloudStorage> {
    builder(spec).build()
}

/// The configured client builder (no I/O).
fn builder(spec: &CloudSpec) -> GoogleCloudStorageBuilder {
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
    b
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

#[cfg(test)]
mod tests {
    use object_store::gcp::GoogleConfigKey;
    use object_store::ClientConfigKey;
    use tributary_sdk::{OptionSpec, Options};

    use super::*;
    use crate::config::{option_specs, FilesConfig, SourcePath};
    use crate::store::StoreSpec;

    fn spec(extra: &[(&str, &str)]) -> CloudSpec {
        let mut options: Options = [
            ("path", "gs://landing-bucket/events/in"),
            ("cloudFiles.format", "json"),
            ("schema", "id BIGINT"),
        ]
        .into_iter()
        .collect();
        for (k, v) in extra {
            options.set(*k, *v);
        }
        let parsed = OptionSpec::validate_all(&option_specs(), &options, "files").unwrap();
        let config = FilesConfig::parse(&parsed).unwrap();
        let SourcePath::Cloud(path) = &config.path else {
            panic!("not a cloud path: {:?}", config.path)
        };
        match StoreSpec::cloud(path, &config.cloud, &tributary_sdk::EnvSecretStore).unwrap() {
            StoreSpec::Cloud(spec) => *spec,
            StoreSpec::Local(p) => panic!("local: {p:?}"),
        }
    }

    #[test]
    fn gs_path_with_service_account_options_configures_the_client() {
        let s = spec(&[
            (
                "cloudFiles.clientEmail",
                "loader@proj.iam.gserviceaccount.com",
            ),
            (
                "cloudFiles.privateKey",
                "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n",
            ),
            ("cloudFiles.privateKeyId", "key-id-1"),
            ("cloudFiles.endpoint", "http://127.0.0.1:4443"),
        ]);
        assert_eq!(s.path.bucket, "landing-bucket");
        assert_eq!(s.path.key, "events/in");
        let b = builder(&s);
        let value = |k: GoogleConfigKey| b.get_config_value(&k);
        assert_eq!(
            value(GoogleConfigKey::Bucket).as_deref(),
            Some("landing-bucket")
        );
        assert_eq!(
            value(GoogleConfigKey::BaseUrl).as_deref(),
            Some("http://127.0.0.1:4443")
        );
        assert_eq!(
            value(GoogleConfigKey::Client(ClientConfigKey::AllowHttp)).as_deref(),
            Some("true")
        );
        let key: serde_json::Value =
            serde_json::from_str(&value(GoogleConfigKey::ServiceAccountKey).unwrap()).unwrap();
        assert_eq!(key["type"], "service_account");
        assert_eq!(key["client_email"], "loader@proj.iam.gserviceaccount.com");
        assert_eq!(key["private_key_id"], "key-id-1");
        assert!(key["private_key"]
            .as_str()
            .unwrap()
            .starts_with("-----BEGIN PRIVATE KEY-----"));
        assert!(tried(&s.options).contains("loader@proj.iam.gserviceaccount.com"));
        // The resolved secrets never print.
        let debug = format!("{s:?}");
        assert!(
            !debug.contains("MIIB") && !debug.contains("key-id-1"),
            "{debug}"
        );
    }

    #[test]
    fn gs_path_without_credential_options_uses_the_google_chain() {
        let s = spec(&[]);
        let b = builder(&s);
        assert_eq!(
            b.get_config_value(&GoogleConfigKey::Bucket).as_deref(),
            Some("landing-bucket")
        );
        assert_eq!(b.get_config_value(&GoogleConfigKey::BaseUrl), None);
        if std::env::var_os("GOOGLE_SERVICE_ACCOUNT_KEY").is_none() {
            assert_eq!(
                b.get_config_value(&GoogleConfigKey::ServiceAccountKey),
                None
            );
        }
        assert!(tried(&s.options).contains("GOOGLE_APPLICATION_CREDENTIALS"));
    }
}
