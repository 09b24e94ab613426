//! TLS and mutual TLS: trust store and key store in PEM, PKCS#12 or JKS, checked before
//! connecting.
//!
//! PEM files are read with `rustls-pki-types` (`PemObject`) and handed to librdkafka by path;
//! PKCS#12 stores with OpenSSL (which librdkafka links anyway), JKS stores with this crate's
//! reader ([`super::jks`]); both are converted to PEM in memory (`ssl.ca.pem`,
//! `ssl.certificate.pem`, `ssl.key.pem`), so the file formats Java's Kafka client reads work with
//! librdkafka. A store's format is the one named by its `type` option, or else recognised from
//! its content. A missing file, a file without a certificate, a wrong password or a key that does
//! not belong to the certificate is an `INVALID_OPTION` error naming the option and the file,
//! never the password.

use std::fmt;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use openssl::pkcs12::Pkcs12;
use openssl::pkey::{PKey, Private};
use openssl::x509::X509;
use rdkafka::ClientConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tributary_sdk::options::conflicting;
use tributary_sdk::{Authenticator, Credentials, Error, ErrorCode, Result, Secret, TlsMaterial};

use super::jks;

/// The format of a trust store or key store file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreFormat {
    /// PEM text (certificates, and for a key store the private key or a separate key file).
    Pem,
    /// A PKCS#12 archive (`.p12`, `.pfx`), usually password protected.
    Pkcs12,
    /// A Java KeyStore (`.jks`).
    Jks,
}

impl StoreFormat {
    /// The format named by a `type` option (`PEM`, `PKCS12`, `JKS`, case-insensitive).
    pub fn from_name(name: &str) -> Option<StoreFormat> {
        match name.trim().to_ascii_uppercase().as_str() {
            "PEM" => Some(StoreFormat::Pem),
            "PKCS12" => Some(StoreFormat::Pkcs12),
            "JKS" => Some(StoreFormat::Jks),
            _ => None,
        }
    }

    /// The format of a store's bytes: JKS by its magic number, PEM by its `-----BEGIN` marker,
    /// PKCS#12 otherwise.
    pub fn detect(bytes: &[u8]) -> StoreFormat {
        if jks::looks_like_jks(bytes) {
            StoreFormat::Jks
        } else if bytes.windows(10).any(|w| w == b"-----BEGIN") {
            StoreFormat::Pem
        } else {
            StoreFormat::Pkcs12
        }
    }
}

/// The option names a [`TlsSettings`] came from, for messages (the `tls.*` names or Spark's
/// `kafka.ssl.*` names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlsOptionNames {
    /// The trust store location option.
    pub truststore: &'static str,
    /// The trust store password option.
    pub truststore_password: &'static str,
    /// The key store location option.
    pub keystore: &'static str,
    /// The key store password option.
    pub keystore_password: &'static str,
    /// The key password option.
    pub key_password: &'static str,
}

impl Default for TlsOptionNames {
    fn default() -> Self {
        TlsOptionNames {
            truststore: "tls.truststore.location",
            truststore_password: "tls.truststore.password",
            keystore: "tls.keystore.location",
            keystore_password: "tls.keystore.password",
            key_password: "tls.key.password",
        }
    }
}

/// What the user configured (paths and resolved passwords); [`TlsAuthenticator::load`] checks it.
#[derive(Debug, Clone)]
pub struct TlsSettings {
    /// CA certificates to verify the brokers with; `None` uses the system roots.
    pub truststore: Option<PathBuf>,
    /// Format of the trust store; `None`: recognised from the content.
    pub truststore_format: Option<StoreFormat>,
    /// Password of a PKCS#12 or JKS trust store.
    pub truststore_password: Option<Secret>,
    /// Client certificate (PEM chain, or a PKCS#12 / JKS store with the key) for mutual TLS.
    pub keystore: Option<PathBuf>,
    /// Format of the key store; `None`: recognised from the content.
    pub keystore_format: Option<StoreFormat>,
    /// Password of a PKCS#12 or JKS key store.
    pub keystore_password: Option<Secret>,
    /// Private key (PEM) when the PEM key store holds only certificates.
    pub key: Option<PathBuf>,
    /// Password of an encrypted PEM private key, or of the key inside a JKS store (default:
    /// the store password).
    pub key_password: Option<Secret>,
    /// Verify the broker certificate (on unless turned off by name).
    pub verify: bool,
    /// Verify the broker host name against its certificate (`ssl.endpoint.identification.algorithm`).
    pub verify_hostname: bool,
    /// The option names, for messages.
    pub names: TlsOptionNames,
}

impl Default for TlsSettings {
    fn default() -> Self {
        TlsSettings {
            truststore: None,
            truststore_format: None,
            truststore_password: None,
            keystore: None,
            keystore_format: None,
            keystore_password: None,
            key: None,
            key_password: None,
            verify: true,
            verify_hostname: true,
            names: TlsOptionNames::default(),
        }
    }
}

/// The client certificate chain and its (decrypted) key, as PEM text for librdkafka.
#[derive(Clone)]
struct ClientPem {
    chain: String,
    key: Secret,
}

/// TLS (server verification) and, with a key store, mutual TLS.
#[derive(Clone)]
pub struct TlsAuthenticator {
    settings: TlsSettings,
    truststore_format: StoreFormat,
    keystore_format: StoreFormat,
    /// CA certificates converted from a PKCS#12 or JKS trust store (public material).
    ca_pem: Option<String>,
    /// Certificate and key converted from a PKCS#12 or JKS key store.
    client_pem: Option<ClientPem>,
    /// Where the PEM private key is (the key file, or the key store file holding it).
    key_file: Option<PathBuf>,
}

impl fmt::Debug for TlsAuthenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsAuthenticator")
            .field("truststore", &self.settings.truststore)
            .field("truststore_format", &self.truststore_format)
            .field("keystore", &self.settings.keystore)
            .field("keystore_format", &self.keystore_format)
            .field("key", &self.key_file)
            .field("verify", &self.settings.verify)
            .field("verify_hostname", &self.settings.verify_hostname)
            .finish()
    }
}

fn bad_file(option: &str, path: &Path, why: impl fmt::Display) -> Error {
    Error::new(
        ErrorCode::InvalidOption,
        format!(
            "option '{option}': the file {} cannot be used: {why}",
            path.display()
        ),
    )
    .with_context("option", option)
    .with_context("file", path.display())
}

fn read_pem_certs(option: &str, path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<std::result::Result<Vec<_>, _>>())
        .map_err(|e| bad_file(option, path, e))?;
    if certs.is_empty() {
        return Err(bad_file(option, path, "it holds no PEM certificate"));
    }
    Ok(certs)
}

fn read_pkcs12(
    option: &str,
    path: &Path,
    bytes: &[u8],
    password: Option<&Secret>,
) -> Result<openssl::pkcs12::ParsedPkcs12_2> {
    let p12 =
        Pkcs12::from_der(bytes).map_err(|_| bad_file(option, path, "it is not a PKCS#12 file"))?;
    p12.parse2(password.map(Secret::expose).unwrap_or(""))
        .map_err(|_| {
            bad_file(
                option,
                path,
                "the PKCS#12 password is wrong or the file is damaged",
            )
        })
}

fn pem_of(certs: impl IntoIterator<Item = X509>, option: &str, path: &Path) -> Result<String> {
    let mut text = String::new();
    for c in certs {
        let pem = c.to_pem().map_err(|e| bad_file(option, path, e))?;
        text.push_str(&String::from_utf8_lossy(&pem));
    }
    Ok(text)
}

/// A password given for a PEM store, which has none: refused as Java's client refuses it.
fn refuse_pem_password(password_option: &str, location_option: &str, given: bool) -> Result<()> {
    if given {
        return Err(conflicting(
            password_option,
            location_option,
            "is only used with a PKCS12 or JKS store, and the store is PEM (an encrypted PEM key takes tls.key.password / kafka.ssl.key.password)",
        ));
    }
    Ok(())
}

impl TlsAuthenticator {
    /// Reads and checks the key material and builds the authenticator. Nothing connects.
    pub fn load(settings: TlsSettings) -> Result<TlsAuthenticator> {
        let names = settings.names;
        let read = |opt: &str, path: &Path| std::fs::read(path).map_err(|e| bad_file(opt, path, e));
        let mut ca_pem = None;
        let mut truststore_format = StoreFormat::Pem;
        if let Some(path) = &settings.truststore {
            let opt = names.truststore;
            let bytes = read(opt, path)?;
            truststore_format = settings
                .truststore_format
                .unwrap_or_else(|| StoreFormat::detect(&bytes));
            match truststore_format {
                StoreFormat::Pem => {
                    refuse_pem_password(
                        names.truststore_password,
                        opt,
                        settings.truststore_password.is_some(),
                    )?;
                    read_pem_certs(opt, path)?;
                }
                StoreFormat::Pkcs12 => {
                    let parsed =
                        read_pkcs12(opt, path, &bytes, settings.truststore_password.as_ref())?;
                    let certs = parsed.ca.into_iter().flatten().chain(parsed.cert);
                    ca_pem = Some(pem_of(certs, opt, path)?);
                }
                StoreFormat::Jks => {
                    let store = jks::read(
                        &bytes,
                        settings.truststore_password.as_ref().map(Secret::expose),
                    )
                    .map_err(|e| bad_file(opt, path, e))?;
                    ca_pem = Some(pem_of(store.trusted, opt, path)?);
                }
            }
            if ca_pem.as_deref() == Some("") {
                return Err(bad_file(opt, path, "it holds no trusted certificate"));
            }
        }
        let mut key_file = None;
        let mut client_pem = None;
        let mut keystore_format = StoreFormat::Pem;
        if let Some(path) = &settings.keystore {
            let opt = names.keystore;
            let bytes = read(opt, path)?;
            keystore_format = settings
                .keystore_format
                .unwrap_or_else(|| StoreFormat::detect(&bytes));
            match keystore_format {
                StoreFormat::Pem => {
                    refuse_pem_password(
                        names.keystore_password,
                        opt,
                        settings.keystore_password.is_some(),
                    )?;
                    let certs = read_pem_certs(opt, path)?;
                    let (key_opt, key_path) = match &settings.key {
                        Some(k) => ("tls.key.location", k.clone()),
                        None => (opt, path.clone()),
                    };
                    let key = load_pem_key(
                        key_opt,
                        &key_path,
                        settings.key_password.as_ref(),
                        names.key_password,
                    )?;
                    let cert = X509::from_der(&certs[0]).map_err(|e| bad_file(opt, path, e))?;
                    check_pair(&cert, &key, key_opt, &key_path)?;
                    key_file = Some(key_path);
                }
                StoreFormat::Pkcs12 => {
                    if let (Some(k), Some(s)) =
                        (&settings.key_password, &settings.keystore_password)
                    {
                        if k.expose() != s.expose() {
                            return Err(conflicting(
                                names.key_password,
                                names.keystore_password,
                                "differs from the PKCS12 store password, and a PKCS12 store is read with one password",
                            ));
                        }
                    }
                    let password = settings
                        .keystore_password
                        .as_ref()
                        .or(settings.key_password.as_ref());
                    let parsed = read_pkcs12(opt, path, &bytes, password)?;
                    let (Some(cert), Some(key)) = (parsed.cert, parsed.pkey) else {
                        return Err(bad_file(
                            opt,
                            path,
                            "the PKCS#12 key store must hold a certificate and its private key",
                        ));
                    };
                    check_pair(&cert, &key, opt, path)?;
                    let chain = std::iter::once(cert).chain(parsed.ca.into_iter().flatten());
                    client_pem = Some(client_pem_of(chain, &key, opt, path)?);
                }
                StoreFormat::Jks => {
                    let store_pw = settings.keystore_password.as_ref().map(Secret::expose);
                    let store = jks::read(&bytes, store_pw).map_err(|e| bad_file(opt, path, e))?;
                    let key_pw = settings
                        .key_password
                        .as_ref()
                        .map(Secret::expose)
                        .or(store_pw)
                        .ok_or_else(|| {
                            Error::new(
                                ErrorCode::MissingOption,
                                format!(
                                    "option '{opt}': the private key of a JKS store needs '{}' or '{}'",
                                    names.keystore_password, names.key_password
                                ),
                            )
                            .with_context("option", names.keystore_password)
                        })?;
                    let mut keys = store.keys.into_iter();
                    let Some(entry) = keys.next() else {
                        return Err(bad_file(
                            opt,
                            path,
                            "the JKS key store holds no private key",
                        ));
                    };
                    if keys.next().is_some() {
                        tracing::warn!(
                            alias = %entry.alias,
                            "the JKS key store {} holds several private keys; using the first",
                            path.display()
                        );
                    }
                    let key = entry.decrypt(key_pw).map_err(|e| bad_file(opt, path, e))?;
                    let Some(leaf) = entry.chain.first() else {
                        return Err(bad_file(opt, path, "the private key has no certificate"));
                    };
                    check_pair(leaf, &key, opt, path)?;
                    client_pem = Some(client_pem_of(entry.chain, &key, opt, path)?);
                }
            }
        } else if let Some(k) = &settings.key {
            return Err(bad_file(
                "tls.key.location",
                k,
                "a private key needs its certificate: set tls.keystore.location",
            ));
        }
        Ok(TlsAuthenticator {
            settings,
            truststore_format,
            keystore_format,
            ca_pem,
            client_pem,
            key_file,
        })
    }

    /// True when a client certificate is presented (mutual TLS).
    pub fn is_mutual(&self) -> bool {
        self.settings.keystore.is_some()
    }

    /// Sets librdkafka's `ssl.*` options (security.protocol is chosen by the connection profile).
    pub(crate) fn apply(&self, config: &mut ClientConfig) {
        let s = &self.settings;
        if let Some(path) = &s.truststore {
            match &self.ca_pem {
                Some(pem) => config.set("ssl.ca.pem", pem),
                None => config.set("ssl.ca.location", path.display().to_string()),
            };
        }
        if let Some(path) = &s.keystore {
            match &self.client_pem {
                Some(pem) => {
                    config
                        .set("ssl.certificate.pem", &pem.chain)
                        .set("ssl.key.pem", pem.key.expose());
                }
                None => {
                    config.set("ssl.certificate.location", path.display().to_string());
                    if let Some(k) = &self.key_file {
                        config.set("ssl.key.location", k.display().to_string());
                    }
                    if let Some(pw) = &s.key_password {
                        config.set("ssl.key.password", pw.expose());
                    }
                }
            }
        }
        if !s.verify {
            config
                .set("enable.ssl.certificate.verification", "false")
                .set("ssl.endpoint.identification.algorithm", "none");
        } else if !s.verify_hostname {
            config.set("ssl.endpoint.identification.algorithm", "none");
        } else {
            config.set("ssl.endpoint.identification.algorithm", "https");
        }
    }
}

fn client_pem_of(
    chain: impl IntoIterator<Item = X509>,
    key: &PKey<Private>,
    option: &str,
    path: &Path,
) -> Result<ClientPem> {
    let key_pem = key
        .private_key_to_pem_pkcs8()
        .map_err(|e| bad_file(option, path, e))?;
    Ok(ClientPem {
        chain: pem_of(chain, option, path)?,
        key: Secret::new(String::from_utf8_lossy(&key_pem).into_owned()),
    })
}

fn load_pem_key(
    option: &str,
    path: &Path,
    password: Option<&Secret>,
    password_option: &str,
) -> Result<PKey<Private>> {
    match password {
        None => {
            // Structure check with rustls types, then the key itself for the pair check.
            PrivateKeyDer::from_pem_file(path).map_err(|e| {
                bad_file(
                    option,
                    path,
                    format!("no unencrypted PEM private key ({e}); an encrypted key needs {password_option}"),
                )
            })?;
            let pem = std::fs::read(path).map_err(|e| bad_file(option, path, e))?;
            PKey::private_key_from_pem(&pem).map_err(|e| bad_file(option, path, e))
        }
        Some(pw) => {
            let pem = std::fs::read(path).map_err(|e| bad_file(option, path, e))?;
            PKey::private_key_from_pem_passphrase(&pem, pw.expose().as_bytes()).map_err(|_| {
                bad_file(
                    option,
                    path,
                    format!("the private key cannot be decrypted with {password_option}"),
                )
            })
        }
    }
}

fn check_pair(cert: &X509, key: &PKey<Private>, option: &str, path: &Path) -> Result<()> {
    let public = cert.public_key().map_err(|e| bad_file(option, path, e))?;
    if public.public_eq(key) {
        Ok(())
    } else {
        Err(bad_file(
            option,
            path,
            "the private key does not belong to the client certificate",
        ))
    }
}

#[async_trait]
impl Authenticator for TlsAuthenticator {
    fn name(&self) -> &str {
        if self.is_mutual() {
            "mtls"
        } else {
            "tls"
        }
    }

    async fn credentials(&self) -> Result<Credentials> {
        Ok(Credentials::None)
    }

    fn tls(&self) -> Option<TlsMaterial> {
        let s = &self.settings;
        let pem = |p: &Option<PathBuf>, f: StoreFormat| p.clone().filter(|_| f == StoreFormat::Pem);
        Some(TlsMaterial {
            ca_pem: pem(&s.truststore, self.truststore_format),
            client_cert_pem: pem(&s.keystore, self.keystore_format),
            client_key_pem: self.key_file.clone(),
            key_password: s.key_password.clone(),
            verify: s.verify,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use openssl::asn1::Asn1Time;
    use openssl::hash::MessageDigest;
    use openssl::pkcs12::Pkcs12;
    use openssl::rsa::Rsa;
    use openssl::symm::Cipher;
    use openssl::x509::X509NameBuilder;

    fn self_signed(cn: &str) -> (X509, PKey<Private>) {
        let key = PKey::from_rsa(Rsa::generate(2048).unwrap()).unwrap();
        let mut name = X509NameBuilder::new().unwrap();
        name.append_entry_by_text("CN", cn).unwrap();
        let name = name.build();
        let mut b = X509::builder().unwrap();
        b.set_version(2).unwrap();
        b.set_subject_name(&name).unwrap();
        b.set_issuer_name(&name).unwrap();
        b.set_pubkey(&key).unwrap();
        b.set_not_before(&Asn1Time::days_from_now(0).unwrap())
            .unwrap();
        b.set_not_after(&Asn1Time::days_from_now(1).unwrap())
            .unwrap();
        b.sign(&key, MessageDigest::sha256()).unwrap();
        (b.build(), key)
    }

    #[test]
    fn pem_and_pkcs12_material_is_checked_and_applied() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = self_signed("client");
        let (_, other_key) = self_signed("other");
        let cert_path = dir.path().join("client.pem");
        let key_path = dir.path().join("client.key");
        let enc_key_path = dir.path().join("client-enc.key");
        let wrong_key_path = dir.path().join("wrong.key");
        let p12_path = dir.path().join("client.p12");
        std::fs::write(&cert_path, cert.to_pem().unwrap()).unwrap();
        std::fs::write(&key_path, key.private_key_to_pem_pkcs8().unwrap()).unwrap();
        std::fs::write(
            &enc_key_path,
            key.private_key_to_pem_pkcs8_passphrase(Cipher::aes_256_cbc(), b"pw")
                .unwrap(),
        )
        .unwrap();
        std::fs::write(
            &wrong_key_path,
            other_key.private_key_to_pem_pkcs8().unwrap(),
        )
        .unwrap();
        let p12 = Pkcs12::builder()
            .name("c")
            .pkey(&key)
            .cert(&cert)
            .build2("pw")
            .unwrap();
        std::fs::write(&p12_path, p12.to_der().unwrap()).unwrap();

        let pem = TlsAuthenticator::load(TlsSettings {
            truststore: Some(cert_path.clone()),
            keystore: Some(cert_path.clone()),
            key: Some(key_path.clone()),
            ..Default::default()
        })
        .unwrap();
        assert!(pem.is_mutual());
        let mut c = ClientConfig::new();
        pem.apply(&mut c);
        assert_eq!(c.get("ssl.key.location"), Some(key_path.to_str().unwrap()));
        assert_eq!(c.get("ssl.ca.location"), Some(cert_path.to_str().unwrap()));

        let enc = TlsAuthenticator::load(TlsSettings {
            keystore: Some(cert_path.clone()),
            key: Some(enc_key_path.clone()),
            key_password: Some(Secret::new("pw")),
            ..Default::default()
        });
        assert!(enc.is_ok(), "{enc:?}");
        let e = TlsAuthenticator::load(TlsSettings {
            keystore: Some(cert_path.clone()),
            key: Some(enc_key_path.clone()),
            key_password: Some(Secret::new("nope")),
            ..Default::default()
        })
        .unwrap_err();
        assert_eq!(e.context_value("option"), Some("tls.key.location"));

        let e = TlsAuthenticator::load(TlsSettings {
            keystore: Some(cert_path.clone()),
            key: Some(wrong_key_path.clone()),
            ..Default::default()
        })
        .unwrap_err();
        assert!(e.message().contains("does not belong"), "{}", e.message());

        let p12_ok = TlsAuthenticator::load(TlsSettings {
            keystore: Some(p12_path.clone()),
            keystore_password: Some(Secret::new("pw")),
            truststore: Some(p12_path.clone()),
            truststore_format: Some(StoreFormat::Pkcs12),
            truststore_password: Some(Secret::new("pw")),
            ..Default::default()
        })
        .unwrap();
        let mut c = ClientConfig::new();
        p12_ok.apply(&mut c);
        assert!(c.get("ssl.ca.pem").unwrap().contains("BEGIN CERTIFICATE"));
        assert!(c
            .get("ssl.certificate.pem")
            .unwrap()
            .contains("BEGIN CERTIFICATE"));
        assert!(c.get("ssl.key.pem").unwrap().contains("PRIVATE KEY"));
        assert!(!format!("{p12_ok:?}").contains("PRIVATE KEY"));
        assert_eq!(
            c.get("ssl.endpoint.identification.algorithm"),
            Some("https")
        );

        // A password for a PEM store is refused, as Java's client refuses it.
        let e = TlsAuthenticator::load(TlsSettings {
            truststore: Some(cert_path.clone()),
            truststore_password: Some(Secret::new("pw")),
            ..Default::default()
        })
        .unwrap_err();
        assert_eq!(e.code(), ErrorCode::ConflictingOptions);
        assert_eq!(e.context_value("option"), Some("tls.truststore.password"));

        // Host name verification off keeps certificate verification.
        let no_host = TlsAuthenticator::load(TlsSettings {
            truststore: Some(cert_path.clone()),
            verify_hostname: false,
            ..Default::default()
        })
        .unwrap();
        let mut c = ClientConfig::new();
        no_host.apply(&mut c);
        assert_eq!(c.get("ssl.endpoint.identification.algorithm"), Some("none"));
        assert_eq!(c.get("enable.ssl.certificate.verification"), None);

        let e = TlsAuthenticator::load(TlsSettings {
            keystore: Some(p12_path.clone()),
            keystore_format: Some(StoreFormat::Pkcs12),
            keystore_password: Some(Secret::new("wrong")),
            ..Default::default()
        })
        .unwrap_err();
        assert_eq!(e.context_value("file"), Some(p12_path.to_str().unwrap()));
        assert!(!e.to_string().contains("wrong\""));
    }

    #[test]
    fn missing_and_garbage_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not a certificate").unwrap();
        for path in [junk.clone(), dir.path().join("missing.pem")] {
            let e = TlsAuthenticator::load(TlsSettings {
                truststore: Some(path.clone()),
                ..Default::default()
            })
            .unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidOption);
            assert_eq!(e.context_value("option"), Some("tls.truststore.location"));
            assert!(e.message().contains(path.to_str().unwrap()));
        }
    }
}
