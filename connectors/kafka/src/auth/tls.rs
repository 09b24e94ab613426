//! TLS and mutual TLS: trust store and key store in PEM or PKCS#12, checked before connecting.
//!
//! PEM files are read with `rustls-pki-types` (`PemObject`); PKCS#12 stores and encrypted PEM
//! keys with OpenSSL, which librdkafka links anyway (the `ssl` feature), so the check uses the
//! same library that later loads the material. A missing file, a file without a certificate, a
//! wrong password or a key that does not belong to the certificate is an `INVALID_OPTION` error
//! naming the option and the file.

use std::fmt;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use openssl::pkcs12::Pkcs12;
use openssl::pkey::{PKey, Private};
use openssl::x509::X509;
use rdkafka::ClientConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tributary_sdk::{Authenticator, Credentials, Error, ErrorCode, Result, Secret, TlsMaterial};

/// The format of a trust store or key store file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreFormat {
    /// PEM text (certificates, and for a key store the private key or a separate key file).
    Pem,
    /// A PKCS#12 archive (`.p12`, `.pfx`), usually password protected.
    Pkcs12,
}

impl StoreFormat {
    /// The format named by an option, or guessed from the file extension.
    pub fn from_option(value: Option<&str>, path: &Path) -> StoreFormat {
        match value.map(|v| v.to_ascii_uppercase()) {
            Some(v) if v == "PKCS12" => StoreFormat::Pkcs12,
            Some(_) => StoreFormat::Pem,
            None => match path.extension().and_then(|e| e.to_str()) {
                Some(e) if e.eq_ignore_ascii_case("p12") || e.eq_ignore_ascii_case("pfx") => {
                    StoreFormat::Pkcs12
                }
                _ => StoreFormat::Pem,
            },
        }
    }
}

/// What the user configured (paths and passwords); [`TlsAuthenticator::load`] checks it.
#[derive(Debug, Clone)]
pub struct TlsSettings {
    /// CA certificates to verify the brokers with; `None` uses the system roots.
    pub truststore: Option<PathBuf>,
    /// Format of the trust store.
    pub truststore_format: StoreFormat,
    /// Password of a PKCS#12 trust store.
    pub truststore_password: Option<Secret>,
    /// Client certificate (PEM chain, or PKCS#12 with the key) for mutual TLS.
    pub keystore: Option<PathBuf>,
    /// Format of the key store.
    pub keystore_format: StoreFormat,
    /// Password of a PKCS#12 key store.
    pub keystore_password: Option<Secret>,
    /// Private key (PEM) when the PEM key store holds only certificates.
    pub key: Option<PathBuf>,
    /// Password of an encrypted PEM private key.
    pub key_password: Option<Secret>,
    /// Verify the broker certificate and host name (on unless turned off by name).
    pub verify: bool,
}

impl Default for TlsSettings {
    fn default() -> Self {
        TlsSettings {
            truststore: None,
            truststore_format: StoreFormat::Pem,
            truststore_password: None,
            keystore: None,
            keystore_format: StoreFormat::Pem,
            keystore_password: None,
            key: None,
            key_password: None,
            verify: true,
        }
    }
}

/// TLS (server verification) and, with a key store, mutual TLS.
#[derive(Clone)]
pub struct TlsAuthenticator {
    settings: TlsSettings,
    /// CA certificates converted from a PKCS#12 trust store (public material).
    ca_pem: Option<String>,
    /// Where the PEM private key is (the key file, or the key store file holding it).
    key_file: Option<PathBuf>,
}

impl fmt::Debug for TlsAuthenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsAuthenticator")
            .field("truststore", &self.settings.truststore)
            .field("keystore", &self.settings.keystore)
            .field("key", &self.key_file)
            .field("verify", &self.settings.verify)
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
    password: Option<&Secret>,
) -> Result<openssl::pkcs12::ParsedPkcs12_2> {
    let der = std::fs::read(path).map_err(|e| bad_file(option, path, e))?;
    let p12 =
        Pkcs12::from_der(&der).map_err(|_| bad_file(option, path, "it is not a PKCS#12 file"))?;
    p12.parse2(password.map(Secret::expose).unwrap_or(""))
        .map_err(|_| {
            bad_file(
                option,
                path,
                "the PKCS#12 password is wrong or the file is damaged",
            )
        })
}

impl TlsAuthenticator {
    /// Checks the key material and builds the authenticator. Nothing connects.
    pub fn load(settings: TlsSettings) -> Result<TlsAuthenticator> {
        let mut ca_pem = None;
        if let Some(path) = &settings.truststore {
            let opt = "tls.truststore.location";
            match settings.truststore_format {
                StoreFormat::Pem => {
                    read_pem_certs(opt, path)?;
                }
                StoreFormat::Pkcs12 => {
                    let parsed = read_pkcs12(opt, path, settings.truststore_password.as_ref())?;
                    let mut text = String::new();
                    let certs = parsed.ca.into_iter().flatten().chain(parsed.cert);
                    for c in certs {
                        let pem = c.to_pem().map_err(|e| bad_file(opt, path, e))?;
                        text.push_str(&String::from_utf8_lossy(&pem));
                    }
                    if text.is_empty() {
                        return Err(bad_file(opt, path, "it holds no certificate"));
                    }
                    ca_pem = Some(text);
                }
            }
        }
        let mut key_file = None;
        if let Some(path) = &settings.keystore {
            let opt = "tls.keystore.location";
            match settings.keystore_format {
                StoreFormat::Pem => {
                    let certs = read_pem_certs(opt, path)?;
                    let (key_opt, key_path) = match &settings.key {
                        Some(k) => ("tls.key.location", k.clone()),
                        None => (opt, path.clone()),
                    };
                    let key = load_pem_key(key_opt, &key_path, settings.key_password.as_ref())?;
                    let cert = X509::from_der(&certs[0]).map_err(|e| bad_file(opt, path, e))?;
                    check_pair(&cert, &key, key_opt, &key_path)?;
                    key_file = Some(key_path);
                }
                StoreFormat::Pkcs12 => {
                    let parsed = read_pkcs12(opt, path, settings.keystore_password.as_ref())?;
                    let (Some(cert), Some(key)) = (parsed.cert, parsed.pkey) else {
                        return Err(bad_file(
                            opt,
                            path,
                            "the PKCS#12 key store must hold a certificate and its private key",
                        ));
                    };
                    check_pair(&cert, &key, opt, path)?;
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
            ca_pem,
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
            match s.keystore_format {
                StoreFormat::Pem => {
                    config.set("ssl.certificate.location", path.display().to_string());
                    if let Some(k) = &self.key_file {
                        config.set("ssl.key.location", k.display().to_string());
                    }
                    if let Some(pw) = &s.key_password {
                        config.set("ssl.key.password", pw.expose());
                    }
                }
                StoreFormat::Pkcs12 => {
                    config.set("ssl.keystore.location", path.display().to_string());
                    if let Some(pw) = &s.keystore_password {
                        config.set("ssl.keystore.password", pw.expose());
                    }
                }
            }
        }
        if !s.verify {
            config
                .set("enable.ssl.certificate.verification", "false")
                .set("ssl.endpoint.identification.algorithm", "none");
        }
    }
}

fn load_pem_key(option: &str, path: &Path, password: Option<&Secret>) -> Result<PKey<Private>> {
    match password {
        None => {
            // Structure check with rustls types, then the key itself for the pair check.
            PrivateKeyDer::from_pem_file(path).map_err(|e| {
                bad_file(
                    option,
                    path,
                    format!("no unencrypted PEM private key ({e}); an encrypted key needs tls.key.password"),
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
                    "the private key cannot be decrypted with tls.key.password",
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
            ca_pem: pem(&s.truststore, s.truststore_format),
            client_cert_pem: pem(&s.keystore, s.keystore_format),
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
            keystore_format: StoreFormat::from_option(None, &p12_path),
            keystore_password: Some(Secret::new("pw")),
            truststore: Some(p12_path.clone()),
            truststore_format: StoreFormat::Pkcs12,
            truststore_password: Some(Secret::new("pw")),
            ..Default::default()
        })
        .unwrap();
        let mut c = ClientConfig::new();
        p12_ok.apply(&mut c);
        assert!(c.get("ssl.ca.pem").unwrap().contains("BEGIN CERTIFICATE"));
        assert_eq!(c.get("ssl.keystore.password"), Some("pw"));
        assert!(!format!("{p12_ok:?}").contains("pw\""));

        let e = TlsAuthenticator::load(TlsSettings {
            keystore: Some(p12_path.clone()),
            keystore_format: StoreFormat::Pkcs12,
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
