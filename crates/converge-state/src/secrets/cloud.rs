//! Pulumi's `cloud` secrets provider: envelope encryption under a key
//! management service (`awskms://…`, and in Pulumi also `gcpkms://`,
//! `azurekeyvault://`, `hashivault://`).
//!
//! A stack has a random 32-byte data key. The key service encrypts it
//! (for AWS KMS, its `Encrypt` call with the URL's key id) and only the
//! encrypted form is stored: in the snapshot as
//! `secrets_providers: {"type": "cloud", "state": {"url": URL,
//! "encryptedkey": BASE64}}` and in `Pulumi.<stack>.yaml` as
//! `secretsprovider: URL` and `encryptedkey: BASE64` (standard, padded
//! base64 of the key service's ciphertext blob). Each secret is encrypted
//! with the plaintext data key by the [`SymmetricCrypter`], exactly as a
//! passphrase stack's secrets are with the derived key.
//!
//! This module knows nothing of key services: the caller asks its service
//! to encrypt or decrypt the data key and hands the bytes here.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;

use super::symmetric::{random_bytes, SymmetricCrypter, KEY_LEN};
use super::CryptoError;
use crate::SecretsProviders;

/// The `secrets_providers.type` of a key-service-encrypted snapshot.
pub const PROVIDER_TYPE: &str = "cloud";
/// Length in bytes of a data key.
pub const DATA_KEY_LEN: usize = KEY_LEN;

/// Why a `cloud` provider's state or data key is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CloudStateError {
    #[error("the secrets provider is {0:?}, not \"cloud\"")]
    NotCloud(String),
    #[error("malformed \"cloud\" secrets provider state: {0}")]
    Malformed(String),
    #[error(
        "the key service returned a data key of {0} bytes; a stack's data key is 32 bytes, \
         so this encrypted key is not a Pulumi data key"
    )]
    DataKeyLength(usize),
}

/// What a `cloud` secrets provider records: the key service URL and the
/// data key as that service encrypted it.
#[derive(Clone, PartialEq, Eq)]
pub struct CloudProviderState {
    pub url: String,
    pub encrypted_key: Vec<u8>,
}

impl std::fmt::Debug for CloudProviderState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CloudProviderState")
            .field("url", &self.url)
            .field("encrypted_key", &self.encrypted_key_base64())
            .finish()
    }
}

impl CloudProviderState {
    /// From the settings file's `secretsprovider` and `encryptedkey`.
    pub fn from_settings(url: &str, encrypted_key_base64: &str) -> Result<Self, CloudStateError> {
        let encrypted_key = B64.decode(encrypted_key_base64.trim()).map_err(|e| {
            CloudStateError::Malformed(format!("`encryptedkey` is not standard base64: {e}"))
        })?;
        if encrypted_key.is_empty() {
            return Err(CloudStateError::Malformed(
                "`encryptedkey` is empty".to_owned(),
            ));
        }
        Ok(CloudProviderState {
            url: url.to_owned(),
            encrypted_key,
        })
    }

    /// From a snapshot's secrets provider.
    pub fn from_provider(provider: &SecretsProviders) -> Result<Self, CloudStateError> {
        if provider.kind != PROVIDER_TYPE {
            return Err(CloudStateError::NotCloud(provider.kind.clone()));
        }
        let state = provider
            .state
            .as_deref()
            .ok_or_else(|| CloudStateError::Malformed("it has no `state`".to_owned()))?;
        let state: serde_json::Value = serde_json::from_str(state)
            .map_err(|e| CloudStateError::Malformed(format!("`state` is not JSON: {e}")))?;
        let field = |name: &str| {
            state
                .get(name)
                .and_then(serde_json::Value::as_str)
                .ok_or_else(|| CloudStateError::Malformed(format!("`state.{name}` is missing")))
        };
        let url = field("url")?;
        Self::from_settings(url, field("encryptedkey")?)
    }

    /// The snapshot's secrets provider.
    pub fn to_provider(&self) -> SecretsProviders {
        SecretsProviders {
            kind: PROVIDER_TYPE.to_owned(),
            state: Some(
                serde_json::json!({
                    "url": self.url,
                    "encryptedkey": self.encrypted_key_base64(),
                })
                .to_string(),
            ),
        }
    }

    /// The `encryptedkey` text of the settings file and the snapshot.
    pub fn encrypted_key_base64(&self) -> String {
        B64.encode(&self.encrypted_key)
    }
}

/// A fresh random data key, to be encrypted by the key service.
pub fn generate_data_key() -> Result<[u8; DATA_KEY_LEN], CryptoError> {
    let mut key = [0u8; DATA_KEY_LEN];
    random_bytes(&mut key)?;
    Ok(key)
}

/// The crypter of a stack whose data key the key service decrypted.
pub fn data_key_crypter(plaintext_key: &[u8]) -> Result<SymmetricCrypter, CloudStateError> {
    let key: &[u8; DATA_KEY_LEN] = plaintext_key
        .try_into()
        .map_err(|_| CloudStateError::DataKeyLength(plaintext_key.len()))?;
    Ok(SymmetricCrypter::from_key(key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::Crypter;

    /// Known answer, made independently with Python's `cryptography`
    /// (`AESGCM(bytes(range(32))).encrypt(bytes(range(100, 112)), text,
    /// None)`): a data key's ciphertext in Pulumi's `v1:` form.
    #[test]
    fn decrypts_a_known_vector() {
        let key: Vec<u8> = (0u8..32).collect();
        let c = data_key_crypter(&key).unwrap();
        assert_eq!(c.decrypt(KNOWN_CIPHERTEXT).unwrap(), KNOWN_PLAINTEXT);
        let nonce: [u8; 12] = std::array::from_fn(|i| 100 + i as u8);
        let sealed = c.seal_with_nonce(&nonce, KNOWN_PLAINTEXT.as_bytes());
        assert_eq!(
            format!("v1:{}:{}", B64.encode(nonce), B64.encode(sealed)),
            KNOWN_CIPHERTEXT
        );
    }

    const KNOWN_PLAINTEXT: &str = r#""kms secret ✓""#;
    const KNOWN_CIPHERTEXT: &str =
        "v1:ZGVmZ2hpamtsbW5v:anCzFVmaM/1MByvIOPn53zPvAs1c8fhzkA+pI4WppYs=";

    #[test]
    fn data_key_must_be_32_bytes() {
        assert_eq!(
            data_key_crypter(&[0u8; 16]).unwrap_err(),
            CloudStateError::DataKeyLength(16)
        );
        let k = generate_data_key().unwrap();
        let c = data_key_crypter(&k).unwrap();
        assert_eq!(c.decrypt(&c.encrypt("\"x\"").unwrap()).unwrap(), "\"x\"");
        assert_ne!(generate_data_key().unwrap(), k);
    }

    #[test]
    fn provider_state_round_trips_in_pulumis_shape() {
        let s = CloudProviderState {
            url: "awskms://alias/stack?region=us-east-1".to_owned(),
            encrypted_key: vec![1, 2, 3, 250],
        };
        let p = s.to_provider();
        assert_eq!(p.kind, "cloud");
        assert_eq!(
            p.state.as_deref().unwrap(),
            r#"{"url":"awskms://alias/stack?region=us-east-1","encryptedkey":"AQID+g=="}"#
        );
        assert_eq!(CloudProviderState::from_provider(&p).unwrap(), s);
        assert_eq!(
            CloudProviderState::from_settings(&s.url, "AQID+g==").unwrap(),
            s
        );
    }

    #[test]
    fn malformed_provider_states_are_errors() {
        let mk = |kind: &str, state: Option<&str>| SecretsProviders {
            kind: kind.to_owned(),
            state: state.map(str::to_owned),
        };
        assert!(matches!(
            CloudProviderState::from_provider(&mk("passphrase", Some("{}"))),
            Err(CloudStateError::NotCloud(_))
        ));
        for state in [
            None,
            Some("not json"),
            Some(r#"{"url":"awskms://k"}"#),
            Some(r#"{"encryptedkey":"AQID"}"#),
            Some(r#"{"url":"awskms://k","encryptedkey":"%%%"}"#),
            Some(r#"{"url":"awskms://k","encryptedkey":""}"#),
        ] {
            assert!(
                matches!(
                    CloudProviderState::from_provider(&mk("cloud", state)),
                    Err(CloudStateError::Malformed(_))
                ),
                "{state:?}"
            );
        }
    }
}
