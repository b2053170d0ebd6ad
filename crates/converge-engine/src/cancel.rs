//! A user's interruption of an operation, in two degrees.
//!
//! - **Cancel** (the first Ctrl-C or SIGTERM, `converge cancel`'s cue): no
//!   new step starts — a registration, a deletion or a read not yet under
//!   way is refused — and every loaded provider is asked to stop its work
//!   (`Provider::cancel`: pulumirpc `Cancel`, Terraform `StopProvider`).
//!   Steps already under way are waited for and journaled as they end, so
//!   the state says exactly what happened to them.
//! - **Stop** (the second Ctrl-C, or the front-end's bound on the wait):
//!   the operation stops waiting. A step still under way is abandoned
//!   where it stands: its Begin entry is durable and no end entry follows,
//!   so the replayed state keeps it as a pending operation (the object may
//!   or may not exist; `converge refresh` settles it). The program's
//!   process is ended.
//!
//! Either way the operation then ends as usual — the journal flushed and
//! replayed, the result returned — with [`crate::EngineError::Interrupted`]
//! as its error when the interruption changed what it did.
//!
//! A [`Cancellation`] is a cheap handle: the front-end keeps one to
//! trigger, the deployment and the language hosts clones to watch.

use std::fmt;
use std::sync::Arc;

use tokio::sync::watch;

/// How far an interruption has gone. Only ever moves forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Interruption {
    /// Running as asked.
    #[default]
    None,
    /// No new step starts; steps under way are waited for.
    Cancel,
    /// Steps under way are no longer waited for.
    Stop,
}

/// The handle through which an operation is interrupted and watches for
/// it. Clones share one state.
#[derive(Clone)]
pub struct Cancellation {
    state: Arc<watch::Sender<Interruption>>,
}

impl fmt::Debug for Cancellation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Cancellation").field(&self.state()).finish()
    }
}

impl Default for Cancellation {
    fn default() -> Self {
        Cancellation::new()
    }
}

impl Cancellation {
    /// A handle that nothing has interrupted yet.
    pub fn new() -> Self {
        Cancellation {
            state: Arc::new(watch::Sender::new(Interruption::None)),
        }
    }

    /// No new step starts from now on. Returns false if the operation was
    /// already cancelled (or stopped).
    pub fn cancel(&self) -> bool {
        self.raise(Interruption::Cancel)
    }

    /// Steps under way are no longer waited for (implies
    /// [`Cancellation::cancel`]). Returns false if already stopped.
    pub fn stop(&self) -> bool {
        self.raise(Interruption::Stop)
    }

    fn raise(&self, to: Interruption) -> bool {
        self.state.send_if_modified(|now| {
            if *now < to {
                *now = to;
                true
            } else {
                false
            }
        })
    }

    pub fn state(&self) -> Interruption {
        *self.state.borrow()
    }

    /// True once cancelled or stopped.
    pub fn is_cancelled(&self) -> bool {
        self.state() >= Interruption::Cancel
    }

    /// True once stopped.
    pub fn is_stopped(&self) -> bool {
        self.state() == Interruption::Stop
    }

    /// Waits until the operation is cancelled (or stopped).
    pub async fn cancelled(&self) {
        self.reached(Interruption::Cancel).await;
    }

    /// Waits until the operation is stopped.
    pub async fn stopped(&self) {
        self.reached(Interruption::Stop).await;
    }

    async fn reached(&self, level: Interruption) {
        let mut rx = self.state.subscribe();
        // The sender lives as long as `self`, so this never fails.
        let _ = rx.wait_for(|now| *now >= level).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn moves_only_forward_and_wakes_watchers() {
        let c = Cancellation::new();
        assert_eq!(c.state(), Interruption::None);
        let watcher = c.clone();
        let cancelled = tokio::spawn(async move { watcher.cancelled().await });
        assert!(c.cancel());
        assert!(!c.cancel());
        cancelled.await.unwrap();
        assert!(c.is_cancelled() && !c.is_stopped());
        assert!(c.stop());
        assert!(!c.cancel(), "a stopped operation stays stopped");
        assert_eq!(c.state(), Interruption::Stop);
        c.stopped().await;
        c.cancelled().await;
    }
}
