//! Locking one stack from separate processes.
//!
//! The helper "test" below does nothing in a normal run; the other tests
//! re-run this test binary with `LOCK_HELPER_DIR` set, so that it becomes a
//! child process that locks a stack and reports on stdout.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use converge_backend::{BackendError, FileBackend, LockInfo, StackLocker, StackRef, StackStore};

const DIR_VAR: &str = "LOCK_HELPER_DIR";
const MODE_VAR: &str = "LOCK_HELPER_MODE";

fn stack() -> StackRef {
    StackRef::new("proj", "dev").unwrap()
}

fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// The child side. Modes:
/// - `hold`: lock, print `ACQUIRED`, wait for stdin to close, release;
/// - `try`: lock once and report;
/// - `race`: create `<dir>/ready.<pid>`, wait for `<dir>/go`, lock, and if
///   that worked hold 200 ms, printing when the hold started and ended.
#[test]
fn lock_helper_process() {
    let Ok(dir) = std::env::var(DIR_VAR) else {
        return;
    };
    let mode = std::env::var(MODE_VAR).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let backend = FileBackend::new(&dir, "");
        if mode == "race" {
            let ready = Path::new(&dir).join(format!("ready.{}", std::process::id()));
            std::fs::write(ready, b"").unwrap();
            let start = Instant::now();
            while !Path::new(&dir).join("go").exists() {
                assert!(start.elapsed() < Duration::from_secs(20), "no go signal");
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        match backend.lock(&stack(), LockInfo::current()).await {
            Ok(guard) => {
                println!("ACQUIRED {}", now_nanos());
                match mode.as_str() {
                    "hold" => {
                        let mut rest = String::new();
                        std::io::stdin().read_to_string(&mut rest).unwrap();
                    }
                    "race" => std::thread::sleep(Duration::from_millis(200)),
                    _ => {}
                }
                let released_at = now_nanos();
                guard.release().await.unwrap();
                println!("RELEASED {released_at}");
            }
            Err(err @ BackendError::Locked { .. }) => {
                let BackendError::Locked { holder, .. } = &err else {
                    unreachable!()
                };
                println!("LOCKED pid={} {}", holder.pid, now_nanos());
                println!("MESSAGE {err}");
            }
            Err(other) => println!("ERROR {other}"),
        }
    });
}

fn spawn_helper(dir: &Path, mode: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "file_lock_process::lock_helper_process",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(DIR_VAR, dir)
        .env(MODE_VAR, mode)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// Reads the child's stdout until a line starting with `prefix`.
fn wait_for(out: &mut BufReader<ChildStdout>, prefix: &str) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        let n = out.read_line(&mut line).unwrap();
        assert!(n > 0, "helper exited before printing {prefix}");
        // libtest may print "test name ... " on the same line first.
        if let Some(at) = line.find(prefix) {
            return line[at..].trim_end().to_owned();
        }
    }
}

/// The helper's report lines (without the test harness's own output).
fn report(child: Child) -> Vec<String> {
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "helper failed: {out:?}");
    const MARKERS: [&str; 5] = ["ACQUIRED", "RELEASED", "LOCKED", "MESSAGE", "ERROR"];
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| {
            // libtest may print "test name ... " on the same line first.
            let at = MARKERS.iter().filter_map(|m| l.find(m)).min()?;
            Some(l[at..].to_owned())
        })
        .collect()
}

async fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    FileBackend::new(dir.path(), "")
        .create_stack(&stack(), b"{}")
        .await
        .unwrap();
    dir
}

#[tokio::test]
async fn a_second_process_is_refused_and_told_the_holders_pid() {
    let dir = setup().await;
    let mut holder = spawn_helper(dir.path(), "hold");
    let holder_pid = holder.id();
    let mut out = BufReader::new(holder.stdout.take().unwrap());
    wait_for(&mut out, "ACQUIRED");

    let loser = report(spawn_helper(dir.path(), "try"));
    assert_eq!(
        loser[0].split(' ').nth(1).unwrap(),
        format!("pid={holder_pid}"),
        "{loser:?}"
    );
    let message = &loser[1];
    assert!(
        message.contains(&format!("(pid {holder_pid})")),
        "{message}"
    );
    assert!(
        message.contains(".pulumi/locks/organization/proj/dev/"),
        "{message}"
    );
    assert!(message.contains("stale"), "{message}");

    // This process is refused too, and sees the same holder.
    let backend = FileBackend::new(dir.path(), "");
    let held = backend.list_locks(&stack()).await.unwrap();
    assert_eq!(
        held.iter().map(|h| h.info.pid).collect::<Vec<_>>(),
        [holder_pid]
    );

    drop(holder.stdin.take()); // closing stdin makes the holder release
    wait_for(&mut out, "RELEASED");
    assert!(holder.wait().unwrap().success());

    let after = report(spawn_helper(dir.path(), "try"));
    assert!(
        after[0].starts_with("ACQUIRED"),
        "released lock is free again: {after:?}"
    );
    assert!(backend.list_locks(&stack()).await.unwrap().is_empty());
}

/// Processes that start locking at the same instant: exactly one gets the
/// lock, and every refusal is a `Locked` naming one of the others.
#[tokio::test]
async fn racing_processes_have_exactly_one_winner() {
    let dir = setup().await;
    for _round in 0..5 {
        let _ = std::fs::remove_file(dir.path().join("go"));
        let children: Vec<Child> = (0..4).map(|_| spawn_helper(dir.path(), "race")).collect();
        let pids: Vec<u32> = children.iter().map(Child::id).collect();
        // Let them all reach the barrier.
        let start = Instant::now();
        while !pids
            .iter()
            .all(|pid| dir.path().join(format!("ready.{pid}")).exists())
        {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "helpers not ready"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        std::fs::write(dir.path().join("go"), b"").unwrap();

        let mut holds: Vec<(u128, u128)> = Vec::new();
        for child in children {
            let lines = report(child);
            let stamp = |l: &str| l.rsplit(' ').next().unwrap().parse::<u128>().unwrap();
            match lines[0].split(' ').next().unwrap() {
                "ACQUIRED" => holds.push((stamp(&lines[0]), stamp(&lines[1]))),
                "LOCKED" => {
                    let pid: u32 = lines[0].split(['=', ' ']).nth(2).unwrap().parse().unwrap();
                    assert!(pids.contains(&pid), "refusal names a contender: {lines:?}");
                }
                _ => panic!("unexpected report {lines:?}"),
            }
        }
        assert_eq!(holds.len(), 1, "not exactly one winner: {holds:?}");
        for pid in &pids {
            std::fs::remove_file(dir.path().join(format!("ready.{pid}"))).unwrap();
        }
        let backend = FileBackend::new(dir.path(), "");
        assert!(
            backend.list_locks(&stack()).await.unwrap().is_empty(),
            "no lock left behind"
        );
    }
}
