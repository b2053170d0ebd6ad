//! Secrets crypters.
//!
//! A crypter turns the JSON text of a secret's inner value into ciphertext
//! and back. [`symmetric::SymmetricCrypter`] is Pulumi's AES-256-GCM
//! cipher under both [`passphrase::PassphraseCrypter`] (key from a
//! passphrase) and the [`cloud`] provider (key from a key service); [`BlindingCrypter`] shows `[secret]`; [`SecretsMode`]
//! tells the checkpoint code whether to decrypt, or to keep ciphertext
//! opaque (Pulumi's "nop" crypter) when no key is at hand.

pub mod cloud;
pub mod passphrase;
pub mod symmetric;

pub use cloud::{CloudProviderState, CloudStateError};
pub use passphrase::{PassphraseCrypter, PassphraseError};
pub use symmetric::SymmetricCrypter;

/// Why a secret could not be encrypted or decrypted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CryptoError {
    #[error("malformed ciphertext: {0}")]
    Malformed(String),
    #[error(
        "failed to decrypt: the passphrase or key is wrong, or the ciphertext was made with another key"
    )]
    Decrypt,
    #[error("failed to encrypt: {0}")]
    Encrypt(String),
}

/// Encrypts and decrypts the JSON text of secret values.
pub trait Crypter: Send + Sync + std::fmt::Debug {
    fn encrypt(&self, plaintext: &str) -> Result<String, CryptoError>;
    fn decrypt(&self, ciphertext: &str) -> Result<String, CryptoError>;
}

/// Shows every secret as `[secret]`; decrypting is refused.
#[derive(Debug, Clone, Copy, Default)]
pub struct BlindingCrypter;

/// What display code prints in place of a secret.
pub const BLINDED: &str = "[secret]";

impl Crypter for BlindingCrypter {
    fn encrypt(&self, _plaintext: &str) -> Result<String, CryptoError> {
        Ok(BLINDED.to_owned())
    }
    fn decrypt(&self, _ciphertext: &str) -> Result<String, CryptoError> {
        Err(CryptoError::Decrypt)
    }
}

/// How the checkpoint code treats secrets while reading or writing.
#[derive(Debug, Clone, Copy)]
pub enum SecretsMode<'a> {
    /// Decrypt on read, encrypt on write, with this crypter.
    Crypter(&'a dyn Crypter),
    /// Keep ciphertext as it is: a secret reads as
    /// `Secret(String(ciphertext))` and writes that string back as its
    /// ciphertext. For commands that need no plaintext (export, import,
    /// integrity checks) and work without the passphrase.
    Opaque,
    /// Secrets in plaintext inside their envelopes (`plaintext`), never
    /// encrypted: for states handed to the program in memory (a state
    /// migration's), never for anything stored. Ciphertext is refused.
    Plaintext,
}
