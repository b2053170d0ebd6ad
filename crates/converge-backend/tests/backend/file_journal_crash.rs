//! A process killed (SIGKILL) at a random moment while appending to a
//! journal: loading afterwards succeeds and returns a prefix of what it
//! appended that holds every entry whose append had returned.
//!
//! The helper "test" below does nothing in a normal run; the crash test
//! re-runs this test binary with `JOURNAL_CRASH_DIR` set, so that it becomes
//! a child process that appends batches in a loop and prints `acked N` after
//! each append returns (N entries so far).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use converge_backend::conformance::test_digest;
use converge_backend::{FileBackend, JournalStore, StackRef, StackStore};

const DIR_VAR: &str = "JOURNAL_CRASH_DIR";

fn stack() -> StackRef {
    StackRef::new("proj", "dev").unwrap()
}

/// Entry `n` (from 1): sizes vary up to ~400 KiB, so a kill can land inside
/// the write of a batch.
fn entry(n: usize) -> Vec<u8> {
    let pad = "z".repeat((n * 7919) % 400_000);
    format!(r#"{{"n":{n},"pad":"{pad}"}}"#).into_bytes()
}

/// A small pseudo-random number from the clock (no dependency needed).
fn random_below(n: u64) -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64;
    let mut x = nanos ^ 0x9e37_79b9_7f4a_7c15;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x % n
}

/// The child side: append batches of 1 to 8 entries until killed (or 30 s).
#[test]
fn journal_append_helper_process() {
    let Ok(dir) = std::env::var(DIR_VAR) else {
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let backend = FileBackend::new(&dir, "");
        let start = Instant::now();
        let mut next = 1;
        while start.elapsed() < Duration::from_secs(30) {
            let size = 1 + next % 8;
            let batch: Vec<Vec<u8>> = (next..next + size).map(entry).collect();
            backend.append_journal(&stack(), &batch).await.unwrap();
            next += size;
            println!("acked {}", next - 1);
        }
    });
}

/// Runs one child until a random moment after its first acknowledged
/// append, kills it, and returns the most entries it reported as appended.
fn run_and_kill(dir: &Path) -> usize {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "file_journal_crash::journal_append_helper_process",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(DIR_VAR, dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            // libtest may print "test name ... " on the same line first.
            if let Some(at) = line.find("acked ") {
                let n: usize = line[at + 6..].trim().parse().unwrap();
                let _ = tx.send(n);
            }
        }
    });
    let first = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the helper acknowledged no append");
    assert!(first > 0);
    std::thread::sleep(Duration::from_micros(random_below(40_000)));
    child.kill().unwrap(); // SIGKILL on Unix: no cleanup runs.
    child.wait().unwrap();
    reader.join().unwrap();
    // Everything printed before the kill is in the pipe; the reader saw it.
    rx.try_iter().fold(first, usize::max)
}

#[tokio::test]
async fn a_killed_appender_leaves_a_prefix_with_every_acknowledged_entry() {
    let mut torn_tails = 0;
    for round in 0..8 {
        let dir = tempfile::tempdir().unwrap();
        let backend = FileBackend::new(dir.path(), "");
        backend.create_stack(&stack(), b"{}").await.unwrap();
        backend
            .open_journal(&stack(), &test_digest(round))
            .await
            .unwrap();

        let acked = run_and_kill(dir.path());

        let path = backend.journal_path(&stack()).unwrap();
        if !std::fs::read(&path).unwrap().ends_with(b"\n") {
            torn_tails += 1;
        }
        let journal = backend
            .load_journal(&stack())
            .await
            .expect("a killed append never makes the journal unreadable")
            .expect("the journal is still there");
        assert_eq!(journal.base_digest, test_digest(round));
        assert!(
            journal.entries.len() >= acked,
            "round {round}: {acked} entries were acknowledged, {} loaded",
            journal.entries.len()
        );
        for (i, got) in journal.entries.iter().enumerate() {
            assert!(
                *got == entry(i + 1),
                "round {round}: entry {} is not what was appended",
                i + 1
            );
        }

        // Appending again after the crash continues the prefix cleanly.
        let n = journal.entries.len();
        backend
            .append_journal(&stack(), &[entry(n + 1)])
            .await
            .unwrap();
        let again = backend.load_journal(&stack()).await.unwrap().unwrap();
        assert_eq!(again.entries.len(), n + 1);
        assert!(again.entries[n] == entry(n + 1));

        // Recovery ends with closing; the next update can open.
        backend.close_journal(&stack()).await.unwrap();
        backend
            .open_journal(&stack(), &test_digest(100))
            .await
            .unwrap();
    }
    eprintln!("torn tails seen: {torn_tails} of 8 rounds");
}
