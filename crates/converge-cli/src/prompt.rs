//! Reading the user's input in a way Ctrl-C interrupts: a prompt's answer
//! (or a value piped to stdin) is read on a thread of its own while the
//! command waits for it or for a signal. A Ctrl-C at a prompt then ends
//! the command through its ordinary way out — a stack's lock released,
//! the terminal's echo restored after a passphrase prompt — instead of
//! waiting for Enter.

use std::io::{BufRead as _, Write as _};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use anyhow::{bail, Context as _, Result};

use crate::interrupts::{received_any, CancelledBeforeStart};

/// How often a waiting prompt looks for a signal.
const POLL: Duration = Duration::from_millis(50);

/// Prints `question` and reads one line from stdin (without its line
/// ending).
pub fn ask(question: &str) -> Result<String> {
    print!("{question}");
    std::io::stdout().flush()?;
    let line = wait_for(
        || {
            let mut line = String::new();
            std::io::stdin()
                .lock()
                .read_line(&mut line)
                .map(|_| line)
                .context("cannot read the answer")
        },
        || println!(),
    )?;
    Ok(line.trim_end_matches(['\n', '\r']).to_owned())
}

/// Asks `question` (`[yes/no]` is added) and fails with `declined` unless
/// the answer is `yes` or `y`.
pub fn confirm(question: &str, declined: &str) -> Result<()> {
    let answer = ask(&format!("{question} [yes/no] "))?;
    if !matches!(answer.trim(), "yes" | "y") {
        bail!("{declined}");
    }
    Ok(())
}

/// Asks `question` with Pulumi's three answers, `[yes/no/details]`:
/// `details` (or `d`) prints `details` and asks again; anything but `yes`
/// or `y` fails with `declined`.
pub fn confirm_or_details(question: &str, declined: &str, details: &[String]) -> Result<()> {
    loop {
        let answer = ask(&format!("{question} [yes/no/details] "))?;
        match answer.trim() {
            "yes" | "y" => return Ok(()),
            "details" | "d" => {
                let mut out = std::io::stdout().lock();
                if details.is_empty() {
                    writeln!(out, "(no changes to show)")?;
                }
                for line in details {
                    writeln!(out, "{line}")?;
                }
                writeln!(out)?;
            }
            _ => bail!("{declined}"),
        }
    }
}

/// All of stdin (a value or a document piped in, `what` in errors), up
/// to the most Converge reads as one JSON document.
pub fn read_stdin(what: &str) -> Result<Vec<u8>> {
    let what = what.to_owned();
    wait_for(
        move || crate::input_file::read_bounded(std::io::stdin().lock(), &what),
        || {},
    )
}

/// Prompts for a secret at the terminal, without echo.
pub fn read_secret(prompt: &str) -> Result<String> {
    let saved = TerminalMode::save();
    let prompt = prompt.to_owned();
    wait_for(
        move || rpassword::prompt_password(prompt).context("cannot read from the terminal"),
        move || {
            // The reader still waits with echo off: give the terminal back.
            if let Some(saved) = saved {
                saved.restore();
            }
            eprintln!();
        },
    )
}

/// Runs `read` on a thread of its own and waits for its answer, or for
/// Ctrl-C or SIGTERM: then `interrupted` runs and the command is told
/// nothing changed.
fn wait_for<T: Send + 'static>(
    read: impl FnOnce() -> Result<T> + Send + 'static,
    interrupted: impl FnOnce(),
) -> Result<T> {
    if received_any() {
        return Err(CancelledBeforeStart.into());
    }
    let (answer, answered) = mpsc::channel();
    std::thread::Builder::new()
        .name("prompt".into())
        .spawn(move || {
            let _ = answer.send(read());
        })
        .context("cannot start a thread to read the answer")?;
    loop {
        match answered.recv_timeout(POLL) {
            Ok(answer) => return answer,
            Err(RecvTimeoutError::Timeout) if received_any() => {
                interrupted();
                return Err(CancelledBeforeStart.into());
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => bail!("the input ended without an answer"),
        }
    }
}

/// The controlling terminal's mode, to put back after a prompt that
/// turned echo off was interrupted.
struct TerminalMode {
    #[cfg(unix)]
    tty: std::fs::File,
    #[cfg(unix)]
    termios: rustix::termios::Termios,
}

impl TerminalMode {
    #[cfg(unix)]
    fn save() -> Option<TerminalMode> {
        let tty = std::fs::File::open("/dev/tty").ok()?;
        let termios = rustix::termios::tcgetattr(&tty).ok()?;
        Some(TerminalMode { tty, termios })
    }

    #[cfg(not(unix))]
    fn save() -> Option<TerminalMode> {
        None
    }

    fn restore(self) {
        #[cfg(unix)]
        let _ = rustix::termios::tcsetattr(
            &self.tty,
            rustix::termios::OptionalActions::Now,
            &self.termios,
        );
    }
}
