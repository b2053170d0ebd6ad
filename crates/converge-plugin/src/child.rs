//! A plugin's child process, whichever protocol it speaks (Pulumi's
//! `host/process.rs`, Terraform's `terraform/process.rs`): signals to the
//! process group it leads, and the tail of its stderr, kept and quoted in
//! errors.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// A signal to a plugin's process group.
#[derive(Debug, Clone, Copy)]
pub enum Signal {
    Interrupt,
    Kill,
}

/// The process groups this process started (plugins, programs) and has
/// not yet ended: what [`end_all_groups`] reaches.
static GROUPS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// A child process that leads its own process group (spawned with
/// `process_group(0)`), registered from its spawn until this is dropped.
/// Dropping it kills what is left of the group (a plugin's or program's
/// own children too) and forgets it. Whatever way Converge ends — an
/// error, a signal, a panic that unwinds — [`end_all_groups`] on its way
/// out reaches the groups whose leaders were never dropped.
#[derive(Debug)]
pub struct GroupLeader {
    pid: Option<u32>,
}

impl GroupLeader {
    /// Registers the group led by `pid` (`None`: a process that exited
    /// before its id was read; nothing to register).
    pub fn new(pid: Option<u32>) -> GroupLeader {
        if let Some(pid) = pid {
            lock(&GROUPS).push(pid);
        }
        GroupLeader { pid }
    }

    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Sends `signal` to the whole group.
    pub fn signal(&self, signal: Signal) {
        signal_group(self.pid, signal);
    }
}

impl Drop for GroupLeader {
    fn drop(&mut self) {
        if let Some(pid) = self.pid {
            signal_group(Some(pid), Signal::Kill);
            lock(&GROUPS).retain(|p| *p != pid);
        }
    }
}

/// Kills every process group still registered: for Converge's exit
/// paths, after the graceful shutdown of plugins (which ends theirs
/// first) had its chance. Returns how many groups were signalled.
pub fn end_all_groups() -> usize {
    let groups = std::mem::take(&mut *lock(&GROUPS));
    for pid in &groups {
        signal_group(Some(*pid), Signal::Kill);
    }
    groups.len()
}

/// Signals the process group led by `pid` (every plugin leads its own).
#[cfg(unix)]
pub fn signal_group(pid: Option<u32>, signal: Signal) {
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
pub fn signal_group(_pid: Option<u32>, _signal: Signal) {}

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
