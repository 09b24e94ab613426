//! A read-only reader of Java KeyStores (JKS), the default store format of Java 8 and older and
//! still what `keytool -storetype JKS` writes, so that a Spark configuration pointing
//! `kafka.ssl.truststore.location` / `kafka.ssl.keystore.location` at a `.jks` file works as is.
//!
//! The format (Sun's `JavaKeyStore`): magic `0xFEEDFEED`, version 1 or 2, a count, then entries
//! — tag 1, a private key protected with Sun's key protector (OID 1.3.6.1.4.1.42.2.17.1.1,
//! SHA-1 key stream) and its certificate chain; tag 2, a trusted certificate — and a SHA-1 over
//! the password (UTF-16BE), the words "Mighty Aphrodite" and everything before it. Every read is
//! bounds-checked: a damaged file is an error, never a panic. Hashing and certificate parsing use
//! OpenSSL, which librdkafka links anyway. JCEKS stores (`0xCECECECE`) are refused with the
//! `keytool` command that converts them.

use std::fmt;

use openssl::pkey::{PKey, Private};
use openssl::sha::Sha1;
use openssl::x509::X509;

const MAGIC: u32 = 0xFEED_FEED;
const JCEKS_MAGIC: u32 = 0xCECE_CECE;
/// DER of the OID 1.3.6.1.4.1.42.2.17.1.1 (Sun's JKS key protector).
const KEY_PROTECTOR_OID: &[u8] = &[0x2B, 0x06, 0x01, 0x04, 0x01, 0x2A, 0x02, 0x11, 0x01, 0x01];
const DIGEST_LEN: usize = 20;

/// Why a JKS file cannot be used (never holds a password).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum JksError {
    /// Not a JKS file.
    NotJks,
    /// A JCEKS file.
    Jceks,
    /// The file ends early or a length is impossible.
    Damaged(&'static str),
    /// The integrity check failed: wrong store password (or a damaged file).
    WrongStorePassword,
    /// The private key does not decrypt with the key password.
    WrongKeyPassword,
    /// A certificate or key that OpenSSL cannot read.
    Unreadable(String),
    /// A key entry protected with another algorithm.
    UnsupportedKeyProtection,
}

impl fmt::Display for JksError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JksError::NotJks => write!(f, "it is not a Java KeyStore (JKS) file"),
            JksError::Jceks => write!(
                f,
                "it is a JCEKS store, which is not supported; convert it with `keytool -importkeystore -srcstoretype JCEKS -deststoretype PKCS12`"
            ),
            JksError::Damaged(what) => write!(f, "the JKS file is damaged ({what})"),
            JksError::WrongStorePassword => {
                write!(f, "the JKS store password is wrong or the file is damaged")
            }
            JksError::WrongKeyPassword => write!(
                f,
                "the private key of the JKS store does not decrypt with the key password (ssl.key.password, default the store password)"
            ),
            JksError::Unreadable(why) => write!(f, "an entry cannot be read: {why}"),
            JksError::UnsupportedKeyProtection => write!(
                f,
                "the private key is protected with an algorithm other than JKS's own; convert the store with `keytool -importkeystore -deststoretype PKCS12`"
            ),
        }
    }
}

/// A private-key entry: the protected key and its certificate chain (leaf first).
pub(crate) struct JksKeyEntry {
    /// The entry's alias.
    pub alias: String,
    protected: Vec<u8>,
    /// The certificate chain, leaf first.
    pub chain: Vec<X509>,
}

impl fmt::Debug for JksKeyEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JksKeyEntry")
            .field("alias", &self.alias)
            .field("chain", &self.chain.len())
            .finish()
    }
}

/// The entries of a JKS file.
#[derive(Debug, Default)]
pub(crate) struct JksStore {
    /// Trusted certificate entries.
    pub trusted: Vec<X509>,
    /// Private key entries.
    pub keys: Vec<JksKeyEntry>,
}

/// True when the bytes start like a JKS (or JCEKS) file.
pub(crate) fn looks_like_jks(bytes: &[u8]) -> bool {
    bytes.len() >= 4
        && matches!(
            u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
            MAGIC | JCEKS_MAGIC
        )
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], JksError> {
        let end = self.pos.checked_add(n).ok_or(JksError::Damaged(what))?;
        let s = self
            .bytes
            .get(self.pos..end)
            .ok_or(JksError::Damaged(what))?;
        self.pos = end;
        Ok(s)
    }
    fn u16(&mut self, what: &'static str) -> Result<u16, JksError> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    fn u32(&mut self, what: &'static str) -> Result<u32, JksError> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn utf(&mut self, what: &'static str) -> Result<String, JksError> {
        let n = self.u16(what)? as usize;
        Ok(String::from_utf8_lossy(self.take(n, what)?).into_owned())
    }
    fn sized(&mut self, what: &'static str) -> Result<&'a [u8], JksError> {
        let n = self.u32(what)? as usize;
        self.take(n, what)
    }
    fn cert(&mut self, version: u32) -> Result<X509, JksError> {
        if version == 2 {
            let kind = self.utf("certificate type")?;
            if kind != "X.509" {
                return Err(JksError::Unreadable(format!(
                    "certificate type '{kind}' is not X.509"
                )));
            }
        }
        let der = self.sized("certificate")?;
        X509::from_der(der).map_err(|e| JksError::Unreadable(e.to_string()))
    }
}

/// Java's password bytes: each UTF-16 code unit, big-endian.
fn password_bytes(password: &str) -> Vec<u8> {
    password.encode_utf16().flat_map(u16::to_be_bytes).collect()
}

/// Reads a JKS file. With a password the integrity digest is checked (as Java does); without
/// one it is skipped (Java reads a trust store without a password the same way).
pub(crate) fn read(bytes: &[u8], password: Option<&str>) -> Result<JksStore, JksError> {
    let mut r = Reader { bytes, pos: 0 };
    match r.u32("magic").map_err(|_| JksError::NotJks)? {
        MAGIC => {}
        JCEKS_MAGIC => return Err(JksError::Jceks),
        _ => return Err(JksError::NotJks),
    }
    let version = r.u32("version")?;
    if version != 1 && version != 2 {
        return Err(JksError::Damaged("unknown version"));
    }
    let count = r.u32("entry count")?;
    let mut store = JksStore::default();
    for _ in 0..count {
        let tag = r.u32("entry tag")?;
        let alias = r.utf("alias")?;
        r.take(8, "timestamp")?;
        match tag {
            1 => {
                let protected = r.sized("private key")?.to_vec();
                let n = r.u32("chain length")?;
                let mut chain = Vec::new();
                for _ in 0..n {
                    chain.push(r.cert(version)?);
                }
                store.keys.push(JksKeyEntry {
                    alias,
                    protected,
                    chain,
                });
            }
            2 => store.trusted.push(r.cert(version)?),
            _ => return Err(JksError::Damaged("unknown entry tag")),
        }
    }
    let body_end = r.pos;
    let digest = r.take(DIGEST_LEN, "integrity digest")?;
    if let Some(pw) = password {
        let mut h = Sha1::new();
        h.update(&password_bytes(pw));
        h.update(b"Mighty Aphrodite");
        h.update(&bytes[..body_end]);
        if h.finish().as_slice() != digest {
            return Err(JksError::WrongStorePassword);
        }
    }
    Ok(store)
}

/// Reads one DER tag and length; returns (tag, content) and advances.
fn der<'a>(r: &mut Reader<'a>) -> Result<(u8, &'a [u8]), JksError> {
    let what = "protected key";
    let tag = r.take(1, what)?[0];
    let first = r.take(1, what)?[0];
    let len = if first < 0x80 {
        first as usize
    } else {
        let n = (first & 0x7F) as usize;
        if n == 0 || n > 4 {
            return Err(JksError::Damaged(what));
        }
        r.take(n, what)?
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | *b as usize)
    };
    Ok((tag, r.take(len, what)?))
}

impl JksKeyEntry {
    /// Decrypts the private key (Sun's key protector: SHA-1 key stream over the password and a
    /// salt, then a SHA-1 check of the plain key).
    pub(crate) fn decrypt(&self, password: &str) -> Result<PKey<Private>, JksError> {
        // EncryptedPrivateKeyInfo ::= SEQUENCE { AlgorithmIdentifier, OCTET STRING }
        let mut outer = Reader {
            bytes: &self.protected,
            pos: 0,
        };
        let (tag, seq) = der(&mut outer)?;
        if tag != 0x30 {
            return Err(JksError::Damaged("protected key is not a sequence"));
        }
        let mut inner = Reader { bytes: seq, pos: 0 };
        let (tag, algorithm) = der(&mut inner)?;
        if tag != 0x30 {
            return Err(JksError::Damaged("no key protection algorithm"));
        }
        let (tag, oid) = der(&mut Reader {
            bytes: algorithm,
            pos: 0,
        })?;
        if tag != 0x06 || oid != KEY_PROTECTOR_OID {
            return Err(JksError::UnsupportedKeyProtection);
        }
        let (tag, data) = der(&mut inner)?;
        if tag != 0x04 || data.len() < 2 * DIGEST_LEN {
            return Err(JksError::Damaged("protected key too short"));
        }
        let pw = password_bytes(password);
        let (salt, rest) = data.split_at(DIGEST_LEN);
        let (encrypted, check) = rest.split_at(rest.len() - DIGEST_LEN);
        let mut plain = Vec::with_capacity(encrypted.len());
        let mut digest = [0u8; DIGEST_LEN];
        digest.copy_from_slice(salt);
        for chunk in encrypted.chunks(DIGEST_LEN) {
            let mut h = Sha1::new();
            h.update(&pw);
            h.update(&digest);
            digest = h.finish();
            plain.extend(chunk.iter().zip(digest.iter()).map(|(c, k)| c ^ k));
        }
        let mut h = Sha1::new();
        h.update(&pw);
        h.update(&plain);
        if h.finish().as_slice() != check {
            return Err(JksError::WrongKeyPassword);
        }
        PKey::private_key_from_pkcs8(&plain).map_err(|e| JksError::Unreadable(e.to_string()))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn truncated_and_foreign_bytes_are_errors_not_panics() {
        assert_eq!(read(b"", None).unwrap_err(), JksError::NotJks);
        assert_eq!(read(b"-----BEGIN", None).unwrap_err(), JksError::NotJks);
        assert_eq!(
            read(&[0xCE, 0xCE, 0xCE, 0xCE, 0, 0, 0, 2], None).unwrap_err(),
            JksError::Jceks
        );
        let mut b = vec![
            0xFE, 0xED, 0xFE, 0xED, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2, 0xFF, 0xFF,
        ];
        assert!(matches!(read(&b, None).unwrap_err(), JksError::Damaged(_)));
        // An empty store: no entry, digest only.
        b.truncate(8);
        b.extend([0, 0, 0, 0]);
        let mut h = Sha1::new();
        h.update(&password_bytes("pw"));
        h.update(b"Mighty Aphrodite");
        h.update(&b);
        b.extend(h.finish());
        assert!(read(&b, Some("pw")).unwrap().trusted.is_empty());
        assert_eq!(
            read(&b, Some("nope")).unwrap_err(),
            JksError::WrongStorePassword
        );
        assert!(read(&b, None).is_ok());
        assert!(looks_like_jks(&b));
    }

    /// Stores written by the JDK's own keytool (when it is installed; the service script
    /// installs it): a trust store and a key store whose key decrypts to the right key.
    #[test]
    fn reads_stores_written_by_keytool() {
        let Some(keytool) = which_keytool() else {
            tributary_skip_log::skip(
                "keytool is not installed (scripts/services/kafka.sh installs it)",
            );
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let ks = dir.path().join("client.jks");
        let run = |args: &[&str]| {
            let out = std::process::Command::new(&keytool)
                .args(args)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let ks_s = ks.to_str().unwrap();
        run(&[
            "-genkeypair",
            "-keystore",
            ks_s,
            "-storetype",
            "JKS",
            "-storepass",
            "store-pw",
            "-keypass",
            "key-pw",
            "-alias",
            "client",
            "-keyalg",
            "RSA",
            "-keysize",
            "2048",
            "-dname",
            "CN=jks-test",
            "-validity",
            "2",
        ]);
        let cert = dir.path().join("client.crt");
        run(&[
            "-exportcert",
            "-keystore",
            ks_s,
            "-storepass",
            "store-pw",
            "-alias",
            "client",
            "-rfc",
            "-file",
            cert.to_str().unwrap(),
        ]);
        let ts = dir.path().join("trust.jks");
        run(&[
            "-importcert",
            "-noprompt",
            "-keystore",
            ts.to_str().unwrap(),
            "-storetype",
            "JKS",
            "-storepass",
            "trust-pw",
            "-alias",
            "ca",
            "-file",
            cert.to_str().unwrap(),
        ]);
        let bytes = std::fs::read(&ks).unwrap();
        let store = read(&bytes, Some("store-pw")).unwrap();
        assert_eq!(store.keys.len(), 1);
        assert_eq!(store.keys[0].alias, "client");
        let key = store.keys[0].decrypt("key-pw").unwrap();
        let public = store.keys[0].chain[0].public_key().unwrap();
        assert!(public.public_eq(&key));
        assert_eq!(
            store.keys[0].decrypt("store-pw").unwrap_err(),
            JksError::WrongKeyPassword
        );
        assert_eq!(
            read(&bytes, Some("wrong")).unwrap_err(),
            JksError::WrongStorePassword
        );
        let trust = read(&std::fs::read(&ts).unwrap(), Some("trust-pw")).unwrap();
        assert_eq!(trust.trusted.len(), 1);
        assert!(trust.keys.is_empty());
    }

    fn which_keytool() -> Option<std::path::PathBuf> {
        std::env::var_os("PATH")?
            .to_str()?
            .split(':')
            .map(|d| std::path::Path::new(d).join("keytool"))
            .find(|p| p.is_file())
    }
}
