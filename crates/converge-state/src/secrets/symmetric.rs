//! Pulumi's symmetric crypter: the cipher under both the passphrase
//! provider (its key derived from the passphrase) and the `cloud` provider
//! (its key a random 32-byte data key that a key management service keeps
//! encrypted).
//!
//! Cipher: AES-256-GCM with a 12-byte random nonce and no associated data.
//! A ciphertext is the string `v1:<base64 nonce>:<base64 ciphertext||tag>`
//! (standard, padded base64).

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use rand::RngCore as _;

use super::{Crypter, CryptoError};

/// Length in bytes of the AES-256 key.
pub const KEY_LEN: usize = 32;
/// Length in bytes of an AES-GCM nonce.
pub const NONCE_LEN: usize = 12;
/// Length in bytes of an AES-GCM authentication tag.
pub const TAG_LEN: usize = 16;

pub(crate) const VERSION: &str = "v1";
const CIPHERTEXT_FORM: &str = "`v1:<base64 12-byte nonce>:<base64 ciphertext+16-byte tag>`";

/// AES-256-GCM over the JSON text of secrets, in Pulumi's `v1:` form.
#[derive(Clone)]
pub struct SymmetricCrypter {
    cipher: Aes256Gcm,
}

impl std::fmt::Debug for SymmetricCrypter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SymmetricCrypter")
            .field("key", &"<redacted>")
            .finish()
    }
}

impl SymmetricCrypter {
    /// A crypter with this 32-byte key.
    pub fn from_key(key: &[u8; KEY_LEN]) -> Self {
        SymmetricCrypter {
            cipher: Aes256Gcm::new(key.into()),
        }
    }

    /// Seals `plaintext` with a given nonce. Only tests choose nonces.
    #[cfg(test)]
    pub(crate) fn seal_with_nonce(&self, nonce: &[u8; NONCE_LEN], plaintext: &[u8]) -> Vec<u8> {
        self.cipher
            .encrypt(Nonce::from_slice(nonce), plaintext)
            .unwrap()
    }
}

impl Crypter for SymmetricCrypter {
    fn encrypt(&self, plaintext: &str) -> Result<String, CryptoError> {
        let mut nonce = [0u8; NONCE_LEN];
        random_bytes(&mut nonce)?;
        let sealed = self
            .cipher
            .encrypt(Nonce::from_slice(&nonce), plaintext.as_bytes())
            .map_err(|_| CryptoError::Encrypt("AES-GCM sealing failed".to_owned()))?;
        Ok(format!(
            "{VERSION}:{}:{}",
            B64.encode(nonce),
            B64.encode(sealed)
        ))
    }

    fn decrypt(&self, ciphertext: &str) -> Result<String, CryptoError> {
        let (nonce, sealed) = parse_ciphertext(ciphertext)?;
        let plain = self
            .cipher
            .decrypt(Nonce::from_slice(&nonce), sealed.as_slice())
            .map_err(|_| CryptoError::Decrypt)?;
        String::from_utf8(plain).map_err(|_| {
            CryptoError::Malformed("it decrypts, but the plaintext is not valid UTF-8".to_owned())
        })
    }
}

/// Fills `buf` from the operating system's random source.
pub(crate) fn random_bytes(buf: &mut [u8]) -> Result<(), CryptoError> {
    rand::rngs::OsRng
        .try_fill_bytes(buf)
        .map_err(|e| CryptoError::Encrypt(format!("no randomness from the OS: {e}")))
}

/// Splits `v1:<b64 nonce>:<b64 sealed>` into nonce and sealed bytes.
pub(crate) fn parse_ciphertext(
    ciphertext: &str,
) -> Result<([u8; NONCE_LEN], Vec<u8>), CryptoError> {
    let malformed =
        |what: &str| CryptoError::Malformed(format!("{what}; expected {CIPHERTEXT_FORM}"));
    let mut parts = ciphertext.split(':');
    let (Some(version), Some(nonce), Some(sealed), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(malformed("not three `:`-separated parts"));
    };
    if version != VERSION {
        return Err(malformed("unknown version (only `v1` is known)"));
    }
    let nonce = B64
        .decode(nonce)
        .map_err(|_| malformed("the nonce is not standard base64"))?;
    let nonce: [u8; NONCE_LEN] = nonce
        .try_into()
        .map_err(|_| malformed("the nonce is not 12 bytes"))?;
    let sealed = B64
        .decode(sealed)
        .map_err(|_| malformed("the ciphertext is not standard base64"))?;
    if sealed.len() < TAG_LEN {
        return Err(malformed("the ciphertext is shorter than the 16-byte tag"));
    }
    Ok((nonce, sealed))
}
