//! Pulumi's passphrase secrets provider.
//!
//! Key: PBKDF2-HMAC-SHA256 over the passphrase and an 8-byte random salt,
//! 1,000,000 iterations, 32 bytes. Cipher: [`SymmetricCrypter`]
//! (AES-256-GCM, `v1:<base64 nonce>:<base64 ciphertext||tag>`).
//!
//! A stack keeps its salt as the `encryptionsalt` of `Pulumi.<stack>.yaml`
//! (and as `secrets_providers.state.salt` in its snapshot):
//! `v1:<base64 salt>:v1:<base64 nonce>:<base64 ct>`, where the embedded
//! ciphertext encrypts the literal `pulumi`. Decrypting it tells a right
//! passphrase from a wrong one before any secret is touched.
//!
//! Deriving the key is deliberately slow: build one [`PassphraseCrypter`] per
//! process and share it.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use sha2::Sha256;

use super::symmetric::{parse_ciphertext, random_bytes, SymmetricCrypter, VERSION};
pub use super::symmetric::{KEY_LEN, NONCE_LEN, TAG_LEN};
use super::{Crypter, CryptoError};

/// PBKDF2 iteration count of Pulumi's passphrase provider.
pub const PBKDF2_ITERATIONS: u32 = 1_000_000;
/// Length in bytes of the salt a new stack gets.
pub const SALT_LEN: usize = 8;
/// The plaintext of the check ciphertext inside an `encryptionsalt`.
pub const CHECK_PLAINTEXT: &str = "pulumi";
/// The `secrets_providers.type` of a passphrase-encrypted snapshot.
pub const PROVIDER_TYPE: &str = "passphrase";
/// What to tell the user when the passphrase is empty (Pulumi allows it).
pub const EMPTY_PASSPHRASE_WARNING: &str =
    "warning: the passphrase is empty; secrets are encrypted with a key anyone can derive. \
     Set PULUMI_CONFIG_PASSPHRASE or PULUMI_CONFIG_PASSPHRASE_FILE to a real passphrase.";

const SALT_FORM: &str = "`v1:<base64 salt>:v1:<base64 nonce>:<base64 ciphertext>`";

/// Why a passphrase crypter could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PassphraseError {
    /// The passphrase does not decrypt the stack's check ciphertext.
    #[error(
        "incorrect passphrase: it does not match this stack's encryptionsalt. \
         Set PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE, a file holding it) \
         to the passphrase this stack's secrets are encrypted with"
    )]
    WrongPassphrase,
    /// The `encryptionsalt` string is not of the expected form.
    #[error("malformed encryptionsalt: {0}")]
    MalformedSalt(String),
    /// Encrypting the check ciphertext of a new salt failed.
    #[error(transparent)]
    Crypto(#[from] CryptoError),
}

/// Pulumi's symmetric passphrase crypter. Holds the derived key.
#[derive(Clone)]
pub struct PassphraseCrypter {
    inner: SymmetricCrypter,
    encryption_salt: String,
}

impl std::fmt::Debug for PassphraseCrypter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PassphraseCrypter")
            .field("key", &"<redacted>")
            .field("encryption_salt", &self.encryption_salt)
            .finish()
    }
}

impl PassphraseCrypter {
    /// Opens a stack's secrets: parses its `encryptionsalt`, derives the key
    /// (once; slow) and checks the passphrase against the embedded check
    /// ciphertext. The empty passphrase is allowed (see
    /// [`EMPTY_PASSPHRASE_WARNING`]).
    pub fn from_encryption_salt(
        passphrase: &str,
        encryption_salt: &str,
    ) -> Result<Self, PassphraseError> {
        Self::from_encryption_salt_with_iterations(passphrase, encryption_salt, PBKDF2_ITERATIONS)
    }

    /// Makes a new random salt and its crypter; returns the crypter and the
    /// `encryptionsalt` string to store in `Pulumi.<stack>.yaml` and in the
    /// snapshot's `secrets_providers.state.salt`.
    pub fn generate(passphrase: &str) -> Result<(Self, String), PassphraseError> {
        Self::generate_with_iterations(passphrase, PBKDF2_ITERATIONS)
    }

    /// [`Self::from_encryption_salt`] with another iteration count. Only for
    /// tests: the result does not interoperate with Pulumi.
    #[cfg(any(test, feature = "testing"))]
    pub fn from_encryption_salt_insecure_for_tests(
        passphrase: &str,
        encryption_salt: &str,
        iterations: u32,
    ) -> Result<Self, PassphraseError> {
        Self::from_encryption_salt_with_iterations(passphrase, encryption_salt, iterations)
    }

    /// [`Self::generate`] with another iteration count. Only for tests: the
    /// result does not interoperate with Pulumi.
    #[cfg(any(test, feature = "testing"))]
    pub fn generate_insecure_for_tests(
        passphrase: &str,
        iterations: u32,
    ) -> Result<(Self, String), PassphraseError> {
        Self::generate_with_iterations(passphrase, iterations)
    }

    /// The stack's `encryptionsalt` string this crypter was made from.
    pub fn encryption_salt(&self) -> &str {
        &self.encryption_salt
    }

    /// The snapshot's `secrets_providers.state`: `{"salt": <encryptionsalt>}`.
    pub fn provider_state(&self) -> serde_json::Value {
        serde_json::json!({ "salt": self.encryption_salt })
    }

    fn from_encryption_salt_with_iterations(
        passphrase: &str,
        encryption_salt: &str,
        iterations: u32,
    ) -> Result<Self, PassphraseError> {
        let (salt, check) = parse_encryption_salt(encryption_salt)?;
        let crypter = Self {
            inner: derive_crypter(passphrase, &salt, iterations),
            encryption_salt: encryption_salt.to_owned(),
        };
        match crypter.decrypt(check) {
            Ok(plaintext) if plaintext == CHECK_PLAINTEXT => Ok(crypter),
            Ok(_) | Err(CryptoError::Decrypt) => Err(PassphraseError::WrongPassphrase),
            Err(CryptoError::Malformed(msg)) => Err(PassphraseError::MalformedSalt(format!(
                "its check ciphertext is malformed ({msg}); expected {SALT_FORM}"
            ))),
            // Decrypting never reports an encryption failure.
            Err(e @ CryptoError::Encrypt(_)) => Err(PassphraseError::Crypto(e)),
        }
    }

    fn generate_with_iterations(
        passphrase: &str,
        iterations: u32,
    ) -> Result<(Self, String), PassphraseError> {
        let mut salt = [0u8; SALT_LEN];
        random_bytes(&mut salt)?;
        let mut crypter = Self {
            inner: derive_crypter(passphrase, &salt, iterations),
            encryption_salt: String::new(),
        };
        let check = crypter.encrypt(CHECK_PLAINTEXT)?;
        let encryption_salt = format!("{VERSION}:{}:{check}", B64.encode(salt));
        crypter.encryption_salt.clone_from(&encryption_salt);
        Ok((crypter, encryption_salt))
    }
}

impl Crypter for PassphraseCrypter {
    fn encrypt(&self, plaintext: &str) -> Result<String, CryptoError> {
        self.inner.encrypt(plaintext)
    }

    fn decrypt(&self, ciphertext: &str) -> Result<String, CryptoError> {
        self.inner.decrypt(ciphertext)
    }
}

fn derive_crypter(passphrase: &str, salt: &[u8], iterations: u32) -> SymmetricCrypter {
    let mut key = pbkdf2_hmac_sha256(passphrase.as_bytes(), salt, iterations);
    let crypter = SymmetricCrypter::from_key(&key);
    key.fill(0);
    crypter
}

/// PBKDF2-HMAC-SHA256 with a 32-byte output. The root `Cargo.toml`
/// optimises this crate in dev and test builds, because the generic
/// `pbkdf2`/`hmac` code is instantiated here and 1,000,000 unoptimised
/// rounds would take seconds.
fn pbkdf2_hmac_sha256(password: &[u8], salt: &[u8], iterations: u32) -> [u8; KEY_LEN] {
    pbkdf2::pbkdf2_hmac_array::<Sha256, KEY_LEN>(password, salt, iterations)
}

/// Splits `v1:<b64 salt>:<ciphertext>` into salt bytes and check ciphertext.
fn parse_encryption_salt(encryption_salt: &str) -> Result<(Vec<u8>, &str), PassphraseError> {
    let malformed =
        |what: &str| PassphraseError::MalformedSalt(format!("{what}; expected {SALT_FORM}"));
    let mut parts = encryption_salt.splitn(3, ':');
    let (Some(version), Some(salt), Some(check)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(malformed("not enough `:`-separated parts"));
    };
    if version != VERSION {
        return Err(malformed("unknown version (only `v1` is known)"));
    }
    let salt = B64
        .decode(salt)
        .map_err(|_| malformed("the salt is not standard base64"))?;
    if salt.is_empty() {
        return Err(malformed("the salt is empty"));
    }
    // Check the shape now, so a malformed check ciphertext is reported as
    // such and not as a wrong passphrase.
    parse_ciphertext(check).map_err(|e| {
        PassphraseError::MalformedSalt(format!(
            "its check ciphertext is malformed ({e}); expected {SALT_FORM}"
        ))
    })?;
    Ok((salt, check))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Low iteration count for tests that do not need Pulumi interop.
    const FAST: u32 = 10;

    fn fast(passphrase: &str) -> (PassphraseCrypter, String) {
        PassphraseCrypter::generate_insecure_for_tests(passphrase, FAST).unwrap()
    }

    #[test]
    fn real_iterations_round_trip_and_reopen() {
        let (c, salt) = PassphraseCrypter::generate("correct horse").unwrap();
        assert_eq!(c.encryption_salt(), salt);
        assert_eq!(c.provider_state(), serde_json::json!({ "salt": salt }));
        let ct = c.encrypt(r#"{"a":"secret"}"#).unwrap();
        let reopened = PassphraseCrypter::from_encryption_salt("correct horse", &salt).unwrap();
        assert_eq!(reopened.decrypt(&ct).unwrap(), r#"{"a":"secret"}"#);
        assert_eq!(
            PassphraseCrypter::from_encryption_salt("wrong horse", &salt).unwrap_err(),
            PassphraseError::WrongPassphrase
        );
    }

    /// Known answer, made independently with Python's `cryptography`
    /// (PBKDF2HMAC SHA256, 1,000,000 rounds; AESGCM) from salt 01..08 and
    /// fixed nonces.
    #[test]
    fn known_answer_from_python_cryptography() {
        const PASSPHRASE: &str = "correct horse battery staple";
        const SALT: &str = "v1:AQIDBAUGBwg=:v1:FBUWFxgZGhscHR4f:grXR+iPYpM5KBOjHpyeexWTiLbAU+A==";
        const CIPHERTEXT: &str =
            "v1:KCkqKywtLi8wMTIz:M6ts98K6HugwtCiY8owT7Zy4qY9vvIEtpOXiFxck9Bz9+VVYhXIZ";
        assert_eq!(
            hex::encode(pbkdf2_hmac_sha256(
                PASSPHRASE.as_bytes(),
                &[1, 2, 3, 4, 5, 6, 7, 8],
                PBKDF2_ITERATIONS
            )),
            "c229acf68c5760d2d254f9989aebf9b33a19b017177519350ac0e868c43ce671"
        );
        let c = PassphraseCrypter::from_encryption_salt(PASSPHRASE, SALT).unwrap();
        assert_eq!(c.decrypt(CIPHERTEXT).unwrap(), r#"{"secret":"s3cr3t ✓"}"#);
        assert_eq!(c.encryption_salt(), SALT);
    }

    #[test]
    fn pbkdf2_matches_the_rfc_7914_vector() {
        // RFC 7914 section 11 (PBKDF2-HMAC-SHA256, c = 1, first 32 bytes).
        assert_eq!(
            hex::encode(pbkdf2_hmac_sha256(b"passwd", b"salt", 1)),
            "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"
        );
    }

    #[test]
    fn salt_layout() {
        let (_, salt) = fast("p");
        let parts: Vec<&str> = salt.split(':').collect();
        assert_eq!(parts.len(), 5);
        assert_eq!(parts[0], "v1");
        assert_eq!(B64.decode(parts[1]).unwrap().len(), SALT_LEN);
        assert_eq!(parts[2], "v1");
        assert_eq!(B64.decode(parts[3]).unwrap().len(), NONCE_LEN);
        assert_eq!(
            B64.decode(parts[4]).unwrap().len(),
            CHECK_PLAINTEXT.len() + TAG_LEN
        );
    }

    #[test]
    fn round_trip() {
        let (c, salt) = fast("pw");
        for text in ["", "\"x\"", "{\"nested\":[1,2,3]}", "ünïcödé ✓"] {
            let ct = c.encrypt(text).unwrap();
            assert!(ct.starts_with("v1:"));
            assert_eq!(c.decrypt(&ct).unwrap(), text);
        }
        // Fresh nonce each time.
        assert_ne!(c.encrypt("same").unwrap(), c.encrypt("same").unwrap());
        let again =
            PassphraseCrypter::from_encryption_salt_insecure_for_tests("pw", &salt, FAST).unwrap();
        assert_eq!(again.decrypt(&c.encrypt("v").unwrap()).unwrap(), "v");
    }

    #[test]
    fn empty_passphrase_is_allowed() {
        let (c, salt) = fast("");
        let again =
            PassphraseCrypter::from_encryption_salt_insecure_for_tests("", &salt, FAST).unwrap();
        assert_eq!(again.decrypt(&c.encrypt("s").unwrap()).unwrap(), "s");
    }

    #[test]
    fn wrong_passphrase() {
        let (c, salt) = fast("right");
        let err = PassphraseCrypter::from_encryption_salt_insecure_for_tests("wrong", &salt, FAST)
            .unwrap_err();
        assert_eq!(err, PassphraseError::WrongPassphrase);
        let msg = err.to_string();
        assert!(msg.contains("PULUMI_CONFIG_PASSPHRASE"), "{msg}");
        assert!(msg.contains("PULUMI_CONFIG_PASSPHRASE_FILE"), "{msg}");

        // A ciphertext from another key fails authentication.
        let (other, _) = fast("right");
        assert_eq!(
            other.decrypt(&c.encrypt("x").unwrap()),
            Err(CryptoError::Decrypt)
        );
    }

    #[test]
    fn tampered_ciphertext_is_decrypt_error() {
        let (c, _) = fast("pw");
        let ct = c.encrypt("hello world").unwrap();
        let parts: Vec<&str> = ct.split(':').collect();
        let nonce = B64.decode(parts[1]).unwrap();
        let sealed = B64.decode(parts[2]).unwrap();
        for i in 0..sealed.len() {
            let mut bad = sealed.clone();
            bad[i] ^= 0x01;
            let s = format!("v1:{}:{}", parts[1], B64.encode(&bad));
            assert_eq!(c.decrypt(&s), Err(CryptoError::Decrypt), "byte {i}");
        }
        let mut bad_nonce = nonce.clone();
        bad_nonce[0] ^= 0x80;
        let s = format!("v1:{}:{}", B64.encode(&bad_nonce), parts[2]);
        assert_eq!(c.decrypt(&s), Err(CryptoError::Decrypt));
        // Truncated (but still at least a tag long).
        let s = format!("v1:{}:{}", parts[1], B64.encode(&sealed[1..]));
        assert_eq!(c.decrypt(&s), Err(CryptoError::Decrypt));
    }

    #[test]
    fn non_utf8_plaintext_is_an_error() {
        let (c, _) = fast("pw");
        let nonce = [7u8; NONCE_LEN];
        let sealed = c.inner.seal_with_nonce(&nonce, &[0xff, 0xfe]);
        let s = format!("v1:{}:{}", B64.encode(nonce), B64.encode(sealed));
        assert!(matches!(c.decrypt(&s), Err(CryptoError::Malformed(m)) if m.contains("UTF-8")));
    }

    #[test]
    fn malformed_ciphertexts() {
        let (c, _) = fast("pw");
        let n = B64.encode([0u8; NONCE_LEN]);
        let t = B64.encode([0u8; TAG_LEN]);
        for bad in [
            String::new(),
            "v1".into(),
            "v1:".into(),
            "v1:a".into(),
            format!("v2:{n}:{t}"),
            format!("v1:{n}:{t}:extra"),
            format!("v1:!!!:{t}"),
            format!("v1:{}:{t}", B64.encode([0u8; 11])),
            format!("v1:{n}:%%%"),
            format!("v1:{n}:{}", B64.encode([0u8; TAG_LEN - 1])),
            format!("v1:{n}:{}", t.trim_end_matches('=')),
        ] {
            match c.decrypt(&bad) {
                Err(CryptoError::Malformed(m)) => assert!(m.contains("expected `v1:"), "{m}"),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
        // Well-formed but unauthenticated.
        assert_eq!(c.decrypt(&format!("v1:{n}:{t}")), Err(CryptoError::Decrypt));
    }

    #[test]
    fn malformed_salts() {
        let (c, _) = fast("pw");
        let check = c.encrypt(CHECK_PLAINTEXT).unwrap();
        let s = B64.encode([1u8; SALT_LEN]);
        for bad in [
            String::new(),
            "v1".into(),
            format!("v1:{s}"),
            format!("v2:{s}:{check}"),
            format!("v1:***:{check}"),
            format!("v1::{check}"),
            format!("v1:{s}:"),
            format!("v1:{s}:garbage"),
            format!("v1:{s}:{check}:more"),
        ] {
            match PassphraseCrypter::from_encryption_salt_insecure_for_tests("pw", &bad, FAST) {
                Err(PassphraseError::MalformedSalt(m)) => {
                    assert!(m.contains("expected `v1:<base64 salt>"), "{m}")
                }
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn check_plaintext_other_than_pulumi_is_wrong_passphrase() {
        let (c, _) = fast("pw");
        // Salt bytes do not matter to the check: build one with the key of `c`
        // by reusing its own salt.
        let parts: Vec<&str> = c.encryption_salt().splitn(3, ':').collect();
        let forged = format!("v1:{}:{}", parts[1], c.encrypt("not pulumi").unwrap());
        assert_eq!(
            PassphraseCrypter::from_encryption_salt_insecure_for_tests("pw", &forged, FAST)
                .unwrap_err(),
            PassphraseError::WrongPassphrase
        );
    }

    #[test]
    fn debug_does_not_show_key() {
        let (c, salt) = fast("pw");
        let dbg = format!("{c:?}");
        assert!(dbg.contains("<redacted>"), "{dbg}");
        assert!(dbg.contains(&salt), "{dbg}");
        assert!(!dbg.contains("cipher"), "{dbg}");
    }

    fn crypter() -> &'static PassphraseCrypter {
        static C: std::sync::OnceLock<PassphraseCrypter> = std::sync::OnceLock::new();
        C.get_or_init(|| fast("prop").0)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn decrypt_arbitrary_never_panics(s in any::<String>()) {
            prop_assert!(crypter().decrypt(&s).is_err());
        }

        #[test]
        fn decrypt_shaped_never_panics(
            version in prop_oneof![Just("v1".to_owned()), "[a-z0-9]{0,3}"],
            nonce in proptest::collection::vec(any::<u8>(), 0..20),
            sealed in proptest::collection::vec(any::<u8>(), 0..40),
        ) {
            let s = format!("{version}:{}:{}", B64.encode(nonce), B64.encode(sealed));
            prop_assert!(crypter().decrypt(&s).is_err());
        }

        #[test]
        fn salt_arbitrary_never_panics(p in any::<String>(), s in any::<String>()) {
            prop_assert!(
                PassphraseCrypter::from_encryption_salt_insecure_for_tests(&p, &s, 1).is_err()
            );
        }

        #[test]
        fn salt_shaped_never_panics(
            salt in proptest::collection::vec(any::<u8>(), 0..16),
            nonce in proptest::collection::vec(any::<u8>(), 0..20),
            sealed in proptest::collection::vec(any::<u8>(), 0..40),
        ) {
            let s = format!(
                "v1:{}:v1:{}:{}",
                B64.encode(salt),
                B64.encode(nonce),
                B64.encode(sealed)
            );
            prop_assert!(
                PassphraseCrypter::from_encryption_salt_insecure_for_tests("x", &s, 1).is_err()
            );
        }

        #[test]
        fn round_trip_arbitrary(text in any::<String>()) {
            let c = crypter();
            prop_assert_eq!(c.decrypt(&c.encrypt(&text).unwrap()).unwrap(), text);
        }
    }
}
