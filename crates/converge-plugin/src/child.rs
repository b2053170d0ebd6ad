//! A plugin's child process, whichever protocol it speaks (Pulumi's
//! `host/process.rs`, Terraform's `terraform/process.rs`): signals to the
//! process group it leads, and the tail of its stderr, kept and quoted in
//! errors.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// A signal to a plugin's process group.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Signal {
    Interrupt,
    Kill,
}

/// Signals the process group led by `pid` (every plugin leads its own).
#[cfg(unix)]
pub(crate) fn signal_group(pid: Option<u32>, signal: Signal) {
    use rustix::process::{kill_process_group, Pid, Signal as S};
    let Some(pid) = pid
        .and_then(|p| i32::try_from(p).ok())
        .and_then(Pid::from_raw)
    else {
        return;
    };
    let sig = match signal {
        Signal::Interrupt => S::INT,
        Signal::Kill => S::KILL,
    };
    let _ = kill_process_group(pid, sig);
}

#[cfg(not(unix))]
pub(crate) fn signal_group(_pid: Option<u32>, _signal: Signal) {}

/// The end of an error about a plugin: its last stderr lines, or that it
/// wrote none.
pub(crate) fn stderr_note(lines: &[String]) -> String {
    if lines.is_empty() {
        "; it wrote nothing to stderr".to_owned()
    } else {
        format!("; its last stderr lines:\n  {}", lines.join("\n  "))
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The stderr lines kept so far.
pub(crate) fn snapshot(tail: &Arc<Mutex<VecDeque<String>>>) -> Vec<String> {
    lock(tail).iter().cloned().collect()
}

/// `s` cut to `max` characters, marked with `…` when cut.
pub(crate) fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}
