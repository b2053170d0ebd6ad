//! A stack's secrets provider: which one a command line names
//! (`--secrets-provider`), the key services behind `cloud` providers, and
//! the crypter a stack's settings and state call for ([`stack`]).

use async_trait::async_trait;

pub mod awskms;
pub mod stack;

pub use stack::{restore_recorded, stack_secrets, StackSecrets};

/// A secrets provider named on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderChoice {
    /// `passphrase`, or `default` (which on Pulumi's DIY backends, and on
    /// every Converge backend, is the passphrase provider).
    Passphrase,
    /// A key service URL (`awskms://…`): Pulumi's `cloud` provider.
    Cloud(String),
}

impl ProviderChoice {
    /// Parses `--secrets-provider`'s value, checking a key URL's form.
    pub fn parse(text: &str) -> anyhow::Result<ProviderChoice> {
        match text {
            "passphrase" | "default" => Ok(ProviderChoice::Passphrase),
            url if url.starts_with(&format!("{}://", awskms::SCHEME)) => {
                awskms::AwsKmsUrl::parse(url)
                    .map_err(|e| anyhow::anyhow!("invalid secrets provider {url:?}: {e}"))?;
                Ok(ProviderChoice::Cloud(url.to_owned()))
            }
            other => anyhow::bail!("{}", unsupported(other)),
        }
    }
}

/// Why Converge refuses a secrets provider it does not implement.
pub fn unsupported(provider: &str) -> String {
    let scheme = provider.split("://").next().unwrap_or(provider);
    format!(
        "secrets provider {provider:?} is not supported by Converge: it knows `passphrase`, \
         `default` (the passphrase provider) and `awskms://KEY?region=REGION`{}",
        if ["gcpkms", "azurekeyvault", "hashivault", "base64key"].contains(&scheme) {
            format!(" (Pulumi's `{scheme}://` keys are not implemented)")
        } else {
            String::new()
        }
    )
}

/// Why a key service could not encrypt or decrypt a data key. Each says
/// what to do about it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum KeyServiceError {
    #[error("invalid key URL: {0}")]
    BadUrl(String),
    #[error("the key does not exist ({0}): check the key id or alias and the region in the URL")]
    KeyNotFound(String),
    #[error("the key cannot be used ({0}): enable it, or cancel its deletion, in KMS")]
    KeyUnusable(String),
    #[error(
        "access denied ({0}): the credentials may not use this key, or the encrypted data key \
         was made by another key"
    )]
    Denied(String),
    #[error("{0}")]
    Credentials(String),
    #[error(
        "the key service is unreachable: {0}; check the network and the URL's `endpoint` \
         parameter (or AWS_ENDPOINT_URL_KMS)"
    )]
    Unreachable(String),
    #[error("the key service failed: {0}")]
    Unexpected(String),
}

/// A key management service holding one key: it encrypts and decrypts a
/// stack's data key. The secrets code knows only this; HTTP lives in the
/// implementations.
#[async_trait]
pub trait KeyService: Send + Sync + std::fmt::Debug {
    async fn encrypt(&self, plaintext: &[u8]) -> Result<Vec<u8>, KeyServiceError>;
    async fn decrypt(&self, ciphertext: &[u8]) -> Result<Vec<u8>, KeyServiceError>;
}

/// The key service a `cloud` provider's URL names.
pub fn open_key_service(url: &str) -> Result<Box<dyn KeyService>, KeyServiceError> {
    if url.starts_with(&format!("{}://", awskms::SCHEME)) {
        return Ok(Box::new(awskms::AwsKms::open(url)?));
    }
    Err(KeyServiceError::BadUrl(unsupported(url)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices() {
        assert_eq!(
            ProviderChoice::parse("default").unwrap(),
            ProviderChoice::Passphrase
        );
        assert_eq!(
            ProviderChoice::parse("passphrase").unwrap(),
            ProviderChoice::Passphrase
        );
        assert_eq!(
            ProviderChoice::parse("awskms://alias/x?region=us-east-1").unwrap(),
            ProviderChoice::Cloud("awskms://alias/x?region=us-east-1".to_owned())
        );
        let e = ProviderChoice::parse("gcpkms://projects/p/keys/k").unwrap_err();
        assert!(
            e.to_string()
                .contains("`gcpkms://` keys are not implemented"),
            "{e}"
        );
        let e = ProviderChoice::parse("awskms://k?bogus=1").unwrap_err();
        assert!(e.to_string().contains("unknown parameter `bogus`"), "{e}");
        assert!(ProviderChoice::parse("").is_err());
    }
}
