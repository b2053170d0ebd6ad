//! Where the passphrase comes from, the stack's passphrase crypter, and
//! the crypters of the stacks it references.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};
use converge_backend::StackRef;
use converge_engine::pulumi_provider::{OpenError, SecretsOpener};
use converge_state::secrets::cloud::{self, CloudProviderState};
use converge_state::secrets::passphrase::{EMPTY_PASSPHRASE_WARNING, PROVIDER_TYPE};
use converge_state::secrets::{Crypter, PassphraseCrypter, PassphraseError};
use converge_state::SecretsProviders;

use crate::stack_settings::StackSettings;

const ENV_PASSPHRASE: &str = "PULUMI_CONFIG_PASSPHRASE";
const ENV_PASSPHRASE_FILE: &str = "PULUMI_CONFIG_PASSPHRASE_FILE";

/// How the CLI may obtain a passphrase.
#[derive(Debug, Clone, Copy)]
pub struct PassphraseOptions {
    /// Never prompt, even in a terminal.
    pub non_interactive: bool,
}

/// The passphrase from `PULUMI_CONFIG_PASSPHRASE`, else from the file named
/// by `PULUMI_CONFIG_PASSPHRASE_FILE`, else from a prompt in a terminal.
pub fn read_passphrase(opts: PassphraseOptions, prompt: &str) -> Result<String> {
    if let Some(p) = from_environment()? {
        return Ok(p);
    }
    require_prompt(opts)?;
    crate::prompt::read_secret(prompt).context("cannot read the passphrase from the terminal")
}

/// What a new passphrase is for (the first prompt says which).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NewPassphrase {
    /// A stack's first passphrase.
    First,
    /// The passphrase that replaces a stack's secrets provider.
    Replacement,
}

/// How many times a new passphrase may be entered twice differently.
const CONFIRM_ATTEMPTS: usize = 3;

/// A new passphrase: from the environment as it is, or entered twice at a
/// terminal, as Pulumi asks, so that a typo does not lock the stack's
/// secrets away under a passphrase nobody knows.
pub fn read_new_passphrase(opts: PassphraseOptions, purpose: NewPassphrase) -> Result<String> {
    if let Some(p) = from_environment()? {
        return Ok(p);
    }
    require_prompt(opts)?;
    let first_prompt = match purpose {
        NewPassphrase::First => "Enter your passphrase to protect config/secrets: ",
        NewPassphrase::Replacement => "Enter your new passphrase to protect config/secrets: ",
    };
    for _ in 0..CONFIRM_ATTEMPTS {
        let first = crate::prompt::read_secret(first_prompt)
            .context("cannot read the passphrase from the terminal")?;
        let again = crate::prompt::read_secret("Re-enter your passphrase to confirm: ")
            .context("cannot read the passphrase from the terminal")?;
        if first == again {
            if first.is_empty() {
                eprintln!("{EMPTY_PASSPHRASE_WARNING}");
            }
            return Ok(first);
        }
        eprintln!("error: the passphrases do not match; enter it again");
    }
    bail!(
        "the two passphrases entered differed {CONFIRM_ATTEMPTS} times; nothing was changed \
         (or set {ENV_PASSPHRASE} and run the command again)"
    )
}

/// Whether a passphrase is at hand without asking: in the environment.
pub fn in_environment() -> bool {
    std::env::var_os(ENV_PASSPHRASE).is_some()
        || std::env::var_os(ENV_PASSPHRASE_FILE).is_some_and(|f| !f.is_empty())
}

/// Whether a passphrase may be asked for at a terminal.
pub fn can_prompt(opts: PassphraseOptions) -> bool {
    !opts.non_interactive && std::io::stdin().is_terminal()
}

fn require_prompt(opts: PassphraseOptions) -> Result<()> {
    if !can_prompt(opts) {
        bail!(
            "a passphrase is needed to encrypt or decrypt this stack's secrets: \
             set {ENV_PASSPHRASE} or {ENV_PASSPHRASE_FILE}"
        );
    }
    Ok(())
}

/// The passphrase `PULUMI_CONFIG_PASSPHRASE` holds, else the one in the
/// file `PULUMI_CONFIG_PASSPHRASE_FILE` names (without its line ending).
fn from_environment() -> Result<Option<String>> {
    if let Some(p) = std::env::var_os(ENV_PASSPHRASE) {
        return p
            .into_string()
            .map(Some)
            .map_err(|_| anyhow::anyhow!("{ENV_PASSPHRASE} is not valid UTF-8"));
    }
    if let Some(file) = std::env::var_os(ENV_PASSPHRASE_FILE).filter(|f| !f.is_empty()) {
        let text = std::fs::read_to_string(&file).with_context(|| {
            format!(
                "cannot read the passphrase file {} named by {ENV_PASSPHRASE_FILE}",
                std::path::Path::new(&file).display()
            )
        })?;
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        return Ok(Some(text.to_owned()));
    }
    Ok(None)
}

/// The passphrase crypter for a stack's secrets (see
/// `crate::secrets::stack_secrets`, which chooses the provider). The salt
/// comes from the stack's settings file, else from the state's secrets
/// provider (and is then written back to the settings, as Pulumi does);
/// with neither, a new salt is made when `create` allows it.
pub fn passphrase_crypter(
    settings: &mut StackSettings,
    state_salt: Option<&str>,
    opts: PassphraseOptions,
    create: bool,
) -> Result<PassphraseCrypter> {
    if let Some(salt) = settings.encryption_salt().map(str::to_owned) {
        let passphrase = read_passphrase(opts, "Enter your passphrase to unlock config/secrets: ")?;
        let derived = match take_derived(&passphrase, &salt) {
            Some(derived) => derived,
            None => PassphraseCrypter::from_encryption_salt(&passphrase, &salt),
        };
        return derived.context("cannot unlock this stack's secrets");
    }
    if let Some(salt) = state_salt {
        let passphrase = read_passphrase(opts, "Enter your passphrase to unlock config/secrets: ")?;
        let crypter = PassphraseCrypter::from_encryption_salt(&passphrase, salt)
            .context("cannot unlock this stack's secrets")?;
        settings.set_encryption_salt(salt);
        settings.save()?;
        return Ok(crypter);
    }
    if !create {
        bail!(
            "{} has no `encryptionsalt` to decrypt the stack's secrets with, and the \
             stack's state records none: restore the file's `encryptionsalt` line",
            settings.path.display()
        );
    }
    let passphrase = read_new_passphrase(opts, NewPassphrase::First)?;
    let (crypter, salt) =
        PassphraseCrypter::generate(&passphrase).context("cannot set up passphrase encryption")?;
    settings.set_encryption_salt(&salt);
    settings.save()?;
    Ok(crypter)
}

/// A key derivation started ahead: the passphrase and salt it is for, and
/// the thread deriving it.
struct Ahead {
    passphrase: String,
    salt: String,
    thread: std::thread::JoinHandle<Result<PassphraseCrypter, PassphraseError>>,
}

static AHEAD: Mutex<Option<Ahead>> = Mutex::new(None);

/// Starts deriving the passphrase key of the stack whose settings file is
/// `settings_path` on a thread of its own, when the file has an
/// `encryptionsalt`, names no other secrets provider, and the passphrase
/// comes from the environment (never a prompt). PBKDF2's million rounds
/// take about as long as locking the stack and reading a 10,000-resource
/// checkpoint, which they now overlap; [`passphrase_crypter`] takes the
/// result if the passphrase and salt are still the ones it needs, and
/// reports a wrong passphrase exactly as before. Anything unusable here
/// is left for that call to report.
pub fn derive_ahead(settings_path: &std::path::Path) {
    let Ok(settings) = StackSettings::load(settings_path) else {
        return;
    };
    if !matches!(
        settings.secrets_provider(),
        None | Some("passphrase") | Some("default")
    ) {
        return;
    }
    let Some(salt) = settings.encryption_salt().map(str::to_owned) else {
        return;
    };
    let never_prompt = PassphraseOptions {
        non_interactive: true,
    };
    let Ok(passphrase) = read_passphrase(never_prompt, "") else {
        return;
    };
    let thread = {
        let (passphrase, salt) = (passphrase.clone(), salt.clone());
        std::thread::spawn(move || PassphraseCrypter::from_encryption_salt(&passphrase, &salt))
    };
    *AHEAD.lock().unwrap_or_else(|p| p.into_inner()) = Some(Ahead {
        passphrase,
        salt,
        thread,
    });
}

/// The key [`derive_ahead`] derived for `passphrase` and `salt`, if it
/// started one for them.
fn take_derived(
    passphrase: &str,
    salt: &str,
) -> Option<Result<PassphraseCrypter, PassphraseError>> {
    let ahead = AHEAD.lock().unwrap_or_else(|p| p.into_inner()).take()?;
    if ahead.passphrase != passphrase || ahead.salt != salt {
        return None;
    }
    ahead.thread.join().ok()
}

/// The salt a passphrase secrets provider records (`state.salt`), if it
/// is one.
pub fn provider_salt(provider: &SecretsProviders) -> Option<String> {
    if provider.kind != PROVIDER_TYPE {
        return None;
    }
    let state: serde_json::Value = serde_json::from_str(provider.state.as_deref()?).ok()?;
    state.get("salt")?.as_str().map(str::to_owned)
}

/// Opens the secrets of stacks a program references (`StackReference`):
/// a passphrase stack with this process's passphrase, from
/// `PULUMI_CONFIG_PASSPHRASE` or `PULUMI_CONFIG_PASSPHRASE_FILE` (never a
/// prompt: the operation's display is running; the common case is one
/// passphrase for related stacks), keys derived once per salt; a `cloud`
/// (`awskms://`) stack through its key service, once per data key.
#[derive(Debug, Default)]
pub struct ReferencedSecrets {
    crypters: Mutex<HashMap<String, Arc<dyn Crypter>>>,
}

impl ReferencedSecrets {
    pub fn new() -> Self {
        ReferencedSecrets::default()
    }

    fn open_any(&self, provider: Option<&SecretsProviders>) -> Result<Arc<dyn Crypter>> {
        let Some(provider) = provider else {
            bail!("its state names no secrets provider");
        };
        if provider.kind == cloud::PROVIDER_TYPE {
            return self.open_cloud(provider);
        }
        self.open_passphrase(provider)
    }

    /// Called on a blocking thread (the engine opens references there), so
    /// the key service is asked on a runtime of this thread's own.
    fn open_cloud(&self, provider: &SecretsProviders) -> Result<Arc<dyn Crypter>> {
        let state = CloudProviderState::from_provider(provider)?;
        let cache_key = format!("cloud:{}:{}", state.url, state.encrypted_key_base64());
        if let Some(c) = self.cached(&cache_key) {
            return Ok(c);
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start a runtime to reach the key service")?;
        let crypter = runtime
            .block_on(crate::secrets::stack::open_cloud(&state))?
            .crypter;
        self.crypters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(cache_key, crypter.clone());
        Ok(crypter)
    }

    fn cached(&self, key: &str) -> Option<Arc<dyn Crypter>> {
        let crypters = self.crypters.lock().unwrap_or_else(|p| p.into_inner());
        crypters.get(key).cloned()
    }

    fn open_passphrase(&self, provider: &SecretsProviders) -> Result<Arc<dyn Crypter>> {
        if provider.kind != PROVIDER_TYPE {
            bail!("{}", crate::secrets::unsupported(&provider.kind));
        }
        let Some(salt) = provider_salt(provider) else {
            bail!("its passphrase secrets provider records no salt");
        };
        if let Some(c) = self.cached(&salt) {
            return Ok(c);
        }
        let passphrase = read_passphrase(
            PassphraseOptions {
                non_interactive: true,
            },
            "",
        )?;
        let crypter: Arc<dyn Crypter> =
            match PassphraseCrypter::from_encryption_salt(&passphrase, &salt) {
                Ok(c) => Arc::new(c),
                Err(PassphraseError::WrongPassphrase) => bail!(
                    "the passphrase in {ENV_PASSPHRASE} (or {ENV_PASSPHRASE_FILE}) is not the one \
                     its secrets were encrypted with; a stack reference decrypts the referenced \
                     stack's secret outputs with this stack's passphrase, so both stacks need the \
                     same"
                ),
                Err(e) => return Err(e.into()),
            };
        self.crypters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(salt, crypter.clone());
        Ok(crypter)
    }
}

impl SecretsOpener for ReferencedSecrets {
    fn open(
        &self,
        _stack: &StackRef,
        provider: Option<&SecretsProviders>,
    ) -> std::result::Result<Arc<dyn Crypter>, OpenError> {
        self.open_any(provider).map_err(Into::into)
    }
}
