//! Ctrl-C and SIGTERM.
//!
//! Converge catches both for its whole run (plugins and programs lead
//! process groups of their own, so the terminal's Ctrl-C reaches only
//! Converge):
//!
//! - An operation (`preview`, `up`, `refresh`, `destroy`, `import`)
//!   winds down on the first signal: its [`Cancellation`] is cancelled (no
//!   new step starts, providers are asked to stop), the steps under way
//!   are waited for up to the cancel timeout and journaled, and the
//!   command ends as usual — state saved, history recorded as cancelled,
//!   lock released, plugins shut down — with a non-zero exit. A second
//!   Ctrl-C, or the timeout, stops the wait: steps still under way stay
//!   pending operations in the state. A third signal, or a stopped
//!   command that is still not done after [`STOPPED_DEADLINE`], abandons
//!   the command outright.
//! - `converge serve` finishes the requests in flight on the first signal
//!   and is abandoned on the second.
//! - Every other command is short and is abandoned on the first signal:
//!   its future is dropped, which releases a lock it holds.
//!
//! Whatever the path, `main` ends every child process group on its way
//! out and exits with 128 + the first signal's number, as shells do.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use converge_engine::Cancellation;
use tokio::sync::Notify;

/// How long a cancelled operation waits for the steps under way before it
/// stops waiting, unless `--cancel-timeout` says otherwise: long enough
/// for providers that honour `Cancel` to return, short enough to finish
/// inside a CI runner's or a container's grace period after SIGTERM.
pub const DEFAULT_CANCEL_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a stopped command may still take to save what it has and
/// release its lock before it is abandoned.
pub const STOPPED_DEADLINE: Duration = Duration::from_secs(20);

/// Which signal interrupted Converge first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    Interrupt,
    Terminate,
}

impl Received {
    /// The exit code of a command it interrupted: 128 + the signal's
    /// number.
    pub fn exit_code(self) -> i32 {
        match self {
            Received::Interrupt => 130,
            Received::Terminate => 143,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Received::Interrupt => "Ctrl-C",
            Received::Terminate => "SIGTERM",
        }
    }
}

/// How the running command responds to the first signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Response {
    /// Dropped at once (short commands).
    Abandon = 0,
    /// Cancelled, then stopped (operations).
    WindDown = 1,
    /// Finishes what is in flight and ends (`converge serve`).
    Drain = 2,
}

/// The process's signal state, shared by `main`, the listener task and
/// the commands.
#[derive(Debug, Clone)]
pub struct Interrupts {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    cancel: Cancellation,
    first: Mutex<Option<Received>>,
    response: AtomicU8,
    cancel_timeout: Mutex<Duration>,
    /// Notified when the command is to be dropped where it stands.
    abandon: Notify,
    abandoned: AtomicBool,
}

impl Default for Interrupts {
    fn default() -> Self {
        Interrupts::new()
    }
}

impl Interrupts {
    pub fn new() -> Interrupts {
        Interrupts {
            inner: Arc::new(Inner {
                cancel: Cancellation::new(),
                first: Mutex::new(None),
                response: AtomicU8::new(Response::Abandon as u8),
                cancel_timeout: Mutex::new(DEFAULT_CANCEL_TIMEOUT),
                abandon: Notify::new(),
                abandoned: AtomicBool::new(false),
            }),
        }
    }

    /// Starts listening for SIGINT and SIGTERM, on a thread of its own:
    /// a signal is acted on even while the command's thread waits in a
    /// blocking call (a prompt, say). Until this is called, the signals
    /// keep their default action.
    #[cfg(unix)]
    pub fn listen(&self) -> std::io::Result<()> {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
        let this = self.clone();
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                for signal in signals.forever() {
                    this.received(if signal == SIGTERM {
                        Received::Terminate
                    } else {
                        Received::Interrupt
                    });
                }
            })?;
        Ok(())
    }

    #[cfg(not(unix))]
    pub fn listen(&self) -> std::io::Result<()> {
        Ok(())
    }

    /// The running command's response to the first signal.
    pub fn respond_with(&self, response: Response) {
        self.inner.response.store(response as u8, Ordering::SeqCst);
    }

    fn response(&self) -> Response {
        match self.inner.response.load(Ordering::SeqCst) {
            1 => Response::WindDown,
            2 => Response::Drain,
            _ => Response::Abandon,
        }
    }

    /// How long a cancelled operation waits for its steps under way.
    pub fn set_cancel_timeout(&self, timeout: Duration) {
        *lock(&self.inner.cancel_timeout) = timeout;
    }

    /// The operation's cancellation: what the engine and language hosts
    /// watch.
    pub fn cancellation(&self) -> &Cancellation {
        &self.inner.cancel
    }

    /// The first signal received, if any.
    pub fn first(&self) -> Option<Received> {
        *lock(&self.inner.first)
    }

    /// Resolves when the command is to be dropped where it stands.
    pub async fn abandoned(&self) {
        let notified = self.inner.abandon.notified();
        tokio::pin!(notified);
        // Registered before the flag is read: a notification in between
        // is not lost.
        notified.as_mut().enable();
        if self.inner.abandoned.load(Ordering::SeqCst) {
            return;
        }
        notified.await;
    }

    fn abandon(&self) {
        self.inner.abandoned.store(true, Ordering::SeqCst);
        self.inner.abandon.notify_waiters();
    }

    fn received(&self, received: Received) {
        RECEIVED.store(true, Ordering::SeqCst);
        let first = {
            let mut first = lock(&self.inner.first);
            let was = *first;
            first.get_or_insert(received);
            was
        };
        let cancel = &self.inner.cancel;
        match (first, self.response()) {
            (None, Response::Abandon) => {
                say(format!("{} received: stopping.", received.name()));
                self.abandon();
            }
            (None, Response::WindDown) => {
                cancel.cancel();
                let timeout = *lock(&self.inner.cancel_timeout);
                say(format!(
                    "{} received: cancelling. No new step starts; the steps under way are \
                     waited for (up to {}) and recorded. Press Ctrl-C again to stop waiting.",
                    received.name(),
                    crate::commands::deploy::go_duration(timeout),
                ));
                let this = self.clone();
                after(timeout, move || {
                    if this.inner.cancel.stop() {
                        say(format!(
                            "The steps under way did not end within {}: stopped waiting for \
                             them.",
                            crate::commands::deploy::go_duration(timeout)
                        ));
                        this.deadline_after_stop();
                    }
                });
            }
            (None, Response::Drain) => {
                cancel.cancel();
                say(format!(
                    "{} received: finishing the requests in flight, then stopping. \
                     Press Ctrl-C again to stop at once.",
                    received.name()
                ));
            }
            (Some(_), Response::WindDown) if cancel.stop() => {
                say(format!(
                    "{} received again: stopped waiting. Steps still under way are recorded \
                     as pending operations; saving the state and releasing the lock.",
                    received.name()
                ));
                self.deadline_after_stop();
            }
            (Some(_), _) => {
                say(format!("{} received again: exiting now.", received.name()));
                self.abandon();
            }
        }
    }

    /// A stopped command that is still not done after
    /// [`STOPPED_DEADLINE`] is abandoned.
    fn deadline_after_stop(&self) {
        let this = self.clone();
        after(STOPPED_DEADLINE, move || {
            say(format!(
                "Saving the state did not finish within {}: exiting now.",
                crate::commands::deploy::go_duration(STOPPED_DEADLINE)
            ));
            this.abandon();
        });
    }
}

/// The error of a command that a signal interrupted before it could end
/// on its own terms.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("interrupted by {}: the command was abandoned where it stood; if it held a stack's lock, run `converge refresh` before the next update", .0.name())]
pub struct Abandoned(pub Received);

/// The error of an operation cancelled before it changed anything (at
/// its confirmation, or before it took the stack's lock).
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("cancelled before anything changed")]
pub struct CancelledBeforeStart;

/// Fails with [`CancelledBeforeStart`] once the user cancelled.
pub fn check_not_cancelled(interrupts: &Interrupts) -> Result<(), CancelledBeforeStart> {
    if interrupts.cancellation().is_cancelled() {
        return Err(CancelledBeforeStart);
    }
    Ok(())
}

/// Set once any signal was received: a prompt waiting for input gives up.
static RECEIVED: AtomicBool = AtomicBool::new(false);

/// True once Ctrl-C or SIGTERM was received.
pub fn received_any() -> bool {
    RECEIVED.load(Ordering::SeqCst)
}

/// Runs `then` on a thread of its own after `delay`.
fn after(delay: Duration, then: impl FnOnce() + Send + 'static) {
    let _ = std::thread::Builder::new()
        .name("signal-timer".into())
        .spawn(move || {
            std::thread::sleep(delay);
            then();
        });
}

fn say(message: String) {
    eprintln!("\n{message}");
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
