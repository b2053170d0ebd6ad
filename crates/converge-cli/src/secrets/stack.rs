//! The crypter of one stack, from its settings file (`Pulumi.<stack>.yaml`)
//! and the secrets provider its state records.
//!
//! The settings file decides: `secretsprovider: awskms://…` with
//! `encryptedkey:` is a `cloud` stack, `encryptionsalt:` a passphrase one.
//! A file that says neither (a fresh checkout) takes what the state
//! records and is written back, as Pulumi does.

use std::sync::Arc;

use anyhow::{bail, Context as _, Result};
use converge_state::secrets::cloud::{self, CloudProviderState};
use converge_state::secrets::passphrase::PROVIDER_TYPE as PASSPHRASE_TYPE;
use converge_state::secrets::{Crypter, PassphraseCrypter};
use converge_state::SecretsProviders;

use super::{open_key_service, unsupported, KeyServiceError, ProviderChoice};
use crate::passphrase::{
    passphrase_crypter, provider_salt, read_new_passphrase, read_passphrase, NewPassphrase,
    PassphraseOptions,
};
use crate::stack_settings::StackSettings;

/// A stack's crypter and the secrets provider its state records for it.
#[derive(Debug, Clone)]
pub struct StackSecrets {
    pub crypter: Arc<dyn Crypter>,
    pub provider: SecretsProviders,
}

/// The snapshot's secrets provider of a passphrase stack with `salt`.
pub fn passphrase_provider(salt: &str) -> SecretsProviders {
    SecretsProviders {
        kind: PASSPHRASE_TYPE.to_owned(),
        state: Some(serde_json::json!({ "salt": salt }).to_string()),
    }
}

/// Opens the secrets of the stack whose settings are `settings` and whose
/// state records `state` (if any). With `create`, a stack without any
/// secrets provider gets one: the passphrase provider, or the `cloud`
/// provider its settings name with no data key yet.
pub async fn stack_secrets(
    settings: &mut StackSettings,
    state: Option<&SecretsProviders>,
    opts: PassphraseOptions,
    create: bool,
) -> Result<StackSecrets> {
    let named = settings.secrets_provider().map(str::to_owned);
    match named.as_deref() {
        None | Some("passphrase") | Some("default") => {}
        Some(url) => {
            if let Err(e) = ProviderChoice::parse(url) {
                bail!("{}: {e}", settings.path.display());
            }
            return open_cloud_settings(settings, url, state, create).await;
        }
    }
    // A settings file with no passphrase salt follows a `cloud` state.
    if settings.encryption_salt().is_none() {
        if let Some(cloud_state) = state.filter(|p| p.kind == cloud::PROVIDER_TYPE) {
            let cloud_state = CloudProviderState::from_provider(cloud_state)
                .context("the stack's state records an unusable secrets provider")?;
            let secrets = open_cloud(&cloud_state).await?;
            settings.set_cloud_provider(&cloud_state.url, &cloud_state.encrypted_key_base64());
            settings.save()?;
            return Ok(secrets);
        }
        if let Some(other) = state.filter(|p| p.kind != PASSPHRASE_TYPE) {
            bail!("{}", unsupported(&other.kind));
        }
    }
    let salt = state.and_then(provider_salt);
    let crypter = passphrase_crypter(settings, salt.as_deref(), opts, create)?;
    let provider = passphrase_provider(crypter.encryption_salt());
    Ok(StackSecrets {
        crypter: Arc::new(crypter),
        provider,
    })
}

async fn open_cloud_settings(
    settings: &mut StackSettings,
    url: &str,
    state: Option<&SecretsProviders>,
    create: bool,
) -> Result<StackSecrets> {
    let path = settings.path.display().to_string();
    if let Some(key) = settings.encrypted_key() {
        let cloud_state = CloudProviderState::from_settings(url, key)
            .with_context(|| format!("{path}: unusable `encryptedkey`"))?;
        return open_cloud(&cloud_state).await;
    }
    let recorded = state
        .filter(|p| p.kind == cloud::PROVIDER_TYPE)
        .and_then(|p| CloudProviderState::from_provider(p).ok())
        .filter(|s| s.url == url);
    if let Some(cloud_state) = recorded {
        let secrets = open_cloud(&cloud_state).await?;
        settings.set_cloud_provider(url, &cloud_state.encrypted_key_base64());
        settings.save()?;
        return Ok(secrets);
    }
    if !create {
        bail!(
            "{path} names the secrets provider {url} but has no `encryptedkey`, and the \
             stack's state records none for it: restore the file's `encryptedkey`, or run \
             `converge stack change-secrets-provider {url}`"
        );
    }
    let (secrets, cloud_state) = new_cloud(url).await?;
    settings.set_cloud_provider(url, &cloud_state.encrypted_key_base64());
    settings.save()?;
    Ok(secrets)
}

/// A `cloud` stack's crypter: its data key decrypted by the key service.
pub async fn open_cloud(state: &CloudProviderState) -> Result<StackSecrets> {
    let url = &state.url;
    let fail = |e: KeyServiceError| {
        anyhow::anyhow!("cannot decrypt this stack's data key with the key {url}: {e}")
    };
    let service = open_key_service(url).map_err(fail)?;
    let key = service.decrypt(&state.encrypted_key).await.map_err(fail)?;
    let crypter = cloud::data_key_crypter(&key).with_context(|| format!("key {url}"))?;
    Ok(StackSecrets {
        crypter: Arc::new(crypter),
        provider: state.to_provider(),
    })
}

/// A new data key for a `cloud` stack, encrypted by the key `url` names.
pub async fn new_cloud(url: &str) -> Result<(StackSecrets, CloudProviderState)> {
    let fail = |e: KeyServiceError| {
        anyhow::anyhow!("cannot encrypt a new data key with the key {url}: {e}")
    };
    let service = open_key_service(url).map_err(fail)?;
    let key = cloud::generate_data_key()?;
    let encrypted_key = service.encrypt(&key).await.map_err(fail)?;
    let state = CloudProviderState {
        url: url.to_owned(),
        encrypted_key,
    };
    let crypter = cloud::data_key_crypter(&key)?;
    Ok((
        StackSecrets {
            crypter: Arc::new(crypter),
            provider: state.to_provider(),
        },
        state,
    ))
}

/// A stack's next secrets provider, made but not yet written anywhere.
#[derive(Debug)]
pub struct NewProvider {
    pub secrets: StackSecrets,
    settings: NewSettings,
}

#[derive(Debug)]
enum NewSettings {
    Passphrase { salt: String },
    Cloud(CloudProviderState),
}

impl NewProvider {
    /// Makes the provider `choice` names: a new passphrase salt (the
    /// passphrase from the environment or a prompt) or a new data key
    /// encrypted by the key service.
    pub async fn make(choice: &ProviderChoice, opts: PassphraseOptions) -> Result<NewProvider> {
        match choice {
            ProviderChoice::Passphrase => {
                let passphrase = read_new_passphrase(opts, NewPassphrase::Replacement)?;
                let (crypter, salt) = PassphraseCrypter::generate(&passphrase)
                    .context("cannot set up passphrase encryption")?;
                Ok(NewProvider {
                    secrets: StackSecrets {
                        provider: passphrase_provider(&salt),
                        crypter: Arc::new(crypter),
                    },
                    settings: NewSettings::Passphrase { salt },
                })
            }
            ProviderChoice::Cloud(url) => {
                let (secrets, state) = new_cloud(url).await?;
                Ok(NewProvider {
                    secrets,
                    settings: NewSettings::Cloud(state),
                })
            }
        }
    }

    /// Writes the provider's keys into `settings` (in memory), replacing
    /// the old provider's.
    pub fn apply_to(&self, settings: &mut StackSettings) {
        match &self.settings {
            NewSettings::Passphrase { salt } => {
                settings.clear_secrets_provider();
                settings.set_encryption_salt(salt);
            }
            NewSettings::Cloud(state) => {
                settings.set_cloud_provider(&state.url, &state.encrypted_key_base64())
            }
        }
    }
}

/// Opens the secrets of a state that records `provider`, without a
/// settings file (another project's stack, an imported deployment): a
/// `cloud` provider through its key service, a passphrase one with the
/// passphrase from the environment or a prompt. `what` names the state in
/// errors and the prompt.
pub async fn open_recorded(
    provider: &SecretsProviders,
    opts: PassphraseOptions,
    what: &str,
) -> Result<StackSecrets> {
    if provider.kind == cloud::PROVIDER_TYPE {
        let state = CloudProviderState::from_provider(provider)
            .with_context(|| format!("the secrets provider of {what}"))?;
        return open_cloud(&state)
            .await
            .with_context(|| format!("cannot open the secrets of {what}"));
    }
    let Some(salt) = provider_salt(provider) else {
        bail!(
            "{what}: {}",
            if provider.kind == PASSPHRASE_TYPE {
                "its passphrase secrets provider records no salt".to_owned()
            } else {
                unsupported(&provider.kind)
            }
        );
    };
    let passphrase = read_passphrase(opts, &format!("Enter the passphrase of {what}: "))?;
    let crypter = PassphraseCrypter::from_encryption_salt(&passphrase, &salt)
        .with_context(|| format!("cannot unlock the secrets of {what}"))?;
    Ok(StackSecrets {
        crypter: Arc::new(crypter),
        provider: passphrase_provider(&salt),
    })
}

/// Writes into `settings` (in memory) the keys of the secrets provider a
/// state records — a passphrase salt, or a key service's URL and data key —
/// unless the file names another provider.
pub fn restore_recorded(settings: &mut StackSettings, provider: &SecretsProviders) -> Result<()> {
    let named = settings.secrets_provider().map(str::to_owned);
    if provider.kind == cloud::PROVIDER_TYPE {
        let state = CloudProviderState::from_provider(provider)
            .context("the stack's state records an unusable secrets provider")?;
        if named.is_none_or(|url| url == state.url) {
            settings.set_cloud_provider(&state.url, &state.encrypted_key_base64());
        }
        return Ok(());
    }
    let Some(salt) = provider_salt(provider) else {
        bail!("{}", unsupported(&provider.kind));
    };
    if named.is_none_or(|p| p == "passphrase" || p == "default") {
        settings.set_encryption_salt(&salt);
    }
    Ok(())
}

/// The secrets provider a settings file names, as a state records it:
/// `None` when the file names none yet.
pub fn settings_provider(settings: &StackSettings) -> Result<Option<SecretsProviders>> {
    if let (Some(url), Some(key)) = (settings.secrets_provider(), settings.encrypted_key()) {
        if !matches!(url, "passphrase" | "default") {
            let state = CloudProviderState::from_settings(url, key)
                .with_context(|| format!("{}: unusable `encryptedkey`", settings.path.display()))?;
            return Ok(Some(state.to_provider()));
        }
    }
    Ok(settings.encryption_salt().map(passphrase_provider))
}

/// Whether two recorded secrets providers are the same key (whatever the
/// JSON formatting of their states).
pub fn same_provider(a: &SecretsProviders, b: &SecretsProviders) -> bool {
    if a.kind != b.kind {
        return false;
    }
    if a.kind == cloud::PROVIDER_TYPE {
        return matches!(
            (CloudProviderState::from_provider(a), CloudProviderState::from_provider(b)),
            (Ok(x), Ok(y)) if x == y
        );
    }
    match (provider_salt(a), provider_salt(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}
