//! A stack's state opened for an operation (`preview`, `up`, `refresh`,
//! `destroy`, `import`): the interrupted update the lock recovered
//! reported, the stack's settings and crypter loaded, the base decrypted
//! and verified, the stack's secrets provider recorded; and the lock
//! released afterwards, whatever happened.

use std::sync::Arc;

use anyhow::Result;
use converge_engine::stack_state::Recovery;
use converge_engine::{LockedStack, StackStateError};
use converge_state::secrets::Crypter;

use crate::context::Context;
use crate::project::Project;
use crate::secrets::stack_secrets;
use crate::stack_settings::StackSettings;

/// What an operation needs of an opened stack besides its state.
pub(crate) struct Opened {
    pub settings: StackSettings,
    pub crypter: Arc<dyn Crypter>,
}

/// Opens `locked` for an operation of `project`.
pub(crate) async fn open(
    ctx: &Context,
    project: &Project,
    locked: &mut LockedStack,
) -> Result<Opened> {
    let stack_name = locked.stack().stack.clone();
    if let Recovery::Replayed { entries, pending } = locked.recovery() {
        eprintln!(
            "note: recovered an interrupted update of stack {stack_name}: {entries} journal \
             entries replayed, {pending} operation(s) were in flight"
        );
    }
    let mut settings = StackSettings::load(&project.stack_config_file(&stack_name))?;
    let recorded = locked.base().secrets_providers.clone();
    let secrets = stack_secrets(
        &mut settings,
        recorded.as_ref(),
        ctx.passphrase_options(),
        true,
    )
    .await?;
    let crypter: Arc<dyn Crypter> = secrets.crypter;
    locked.decrypt(crypter.clone()).await?;
    locked.verify()?;
    locked.set_secrets_providers(secrets.provider);
    Ok(Opened { settings, crypter })
}

/// Releases the lock after an operation that ended with `result`. The
/// operation's error comes first; a release that fails is the error only
/// of an operation that succeeded (after a failure it is a warning, and
/// none at all when the lease was already lost).
pub(crate) async fn release(locked: LockedStack, result: Result<()>) -> Result<()> {
    let released = locked.release().await;
    match (result, released) {
        (Err(e), Err(r)) => {
            if !matches!(&r, StackStateError::Backend(b) if b.is_lease_lost()) {
                eprintln!("warning: the stack's lock could not be released: {r}");
            }
            Err(e)
        }
        (result, released) => result.and(released.map_err(Into::into)),
    }
}
