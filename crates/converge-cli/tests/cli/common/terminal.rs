//! `converge` at a terminal of its own (a pseudo-terminal), for what it
//! does only at a terminal: prompts for a passphrase, Ctrl-C typed at one.
//! The test waits for each prompt, answers it, and reads everything the
//! command wrote. `setsid --ctty` makes the terminal the command's
//! controlling one, so `/dev/tty` is this terminal and a typed Ctrl-C
//! reaches the command as SIGINT.

use std::io::{Read as _, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};

use super::Scratch;

/// How long a test waits for text it expects before failing with what the
/// command wrote (a guard against a hang, not a timing assertion).
const PATIENCE: Duration = Duration::from_secs(120);

/// A `converge` command running at a pseudo-terminal.
pub struct AtTerminal {
    master: std::fs::File,
    output: Arc<(Mutex<Output>, Condvar)>,
    /// How much of the output `expect` has consumed.
    seen: usize,
    child: Child,
}

/// How a command at a terminal ended.
pub struct Ended {
    pub status: ExitStatus,
    /// Everything it wrote to the terminal (without carriage returns).
    pub text: String,
    /// Whether the terminal echoes typing after it.
    pub echoes: bool,
}

#[derive(Default)]
struct Output {
    text: String,
    closed: bool,
}

impl AtTerminal {
    /// `converge args…` in `scratch`'s project, at a terminal, with no
    /// passphrase in the environment and without `--non-interactive`.
    pub fn converge(scratch: &Scratch, args: &[&str]) -> AtTerminal {
        let master =
            openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).expect("openpt");
        grantpt(&master).expect("grantpt");
        unlockpt(&master).expect("unlockpt");
        let name = ptsname(&master, Vec::new()).expect("ptsname");
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOCTTY)
            .open(name.to_str().unwrap())
            .expect("open the terminal's slave side");
        let master = std::fs::File::from(master);

        let mut cmd = Command::new("setsid");
        cmd.arg("--ctty")
            .arg("--wait")
            .arg(assert_cmd::cargo::cargo_bin("converge"))
            .args(args)
            .current_dir(&scratch.project)
            .env("CONVERGE_HOME", &scratch.home)
            .env(
                "PULUMI_BACKEND_URL",
                format!("file://{}", scratch.backend.display()),
            )
            .env("TERM", "dumb")
            .env_remove("PULUMI_CONFIG_PASSPHRASE")
            .env_remove("PULUMI_CONFIG_PASSPHRASE_FILE")
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        let child = cmd.spawn().expect("start setsid");
        // Only the child holds the slave side now: when it exits, reading
        // the master side ends.
        drop(cmd);

        let output = Arc::new((Mutex::new(Output::default()), Condvar::new()));
        let mut reader = master.try_clone().unwrap();
        let shared = output.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                // Linux answers EIO once the last slave descriptor closes.
                let n = reader.read(&mut buf).unwrap_or(0);
                let (lock, ready) = &*shared;
                let mut out = lock.lock().unwrap();
                if n == 0 {
                    out.closed = true;
                    ready.notify_all();
                    return;
                }
                out.text
                    .push_str(&String::from_utf8_lossy(&buf[..n]).replace('\r', ""));
                ready.notify_all();
            }
        });
        AtTerminal {
            master,
            output,
            seen: 0,
            child,
        }
    }

    /// Waits until the command has written `text` (after what earlier
    /// calls consumed); panics with everything it wrote if it never does.
    pub fn expect(&mut self, text: &str) {
        let deadline = Instant::now() + PATIENCE;
        let (lock, ready) = &*self.output;
        let mut out = lock.lock().unwrap();
        loop {
            if let Some(at) = out.text[self.seen..].find(text) {
                self.seen += at + text.len();
                return;
            }
            let now = Instant::now();
            assert!(
                !out.closed && now < deadline,
                "the command never wrote {text:?} (closed: {}); it wrote:\n{}",
                out.closed,
                out.text
            );
            out = ready.wait_timeout(out, deadline - now).unwrap().0;
        }
    }

    /// Types `line` and Enter.
    pub fn answer(&mut self, line: &str) {
        self.master
            .write_all(format!("{line}\n").as_bytes())
            .unwrap();
    }

    /// Types `secret` and Enter once the prompt has turned echo off, as a
    /// person would after reading the prompt.
    pub fn answer_secret(&mut self, secret: &str) {
        self.expect_echo_off();
        self.answer(secret);
    }

    /// Waits until the terminal no longer echoes (a passphrase prompt is
    /// reading).
    pub fn expect_echo_off(&self) {
        let deadline = Instant::now() + PATIENCE;
        while self.echoes() {
            assert!(
                Instant::now() < deadline,
                "the terminal's echo was never turned off; the command wrote:\n{}",
                self.output.0.lock().unwrap().text
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Types Ctrl-C.
    pub fn interrupt(&mut self) {
        self.master.write_all(&[0x03]).unwrap();
    }

    /// Whether the terminal echoes what is typed (a passphrase prompt
    /// turns echo off while it waits).
    pub fn echoes(&self) -> bool {
        let termios = rustix::termios::tcgetattr(&self.master).expect("tcgetattr");
        termios
            .local_modes
            .contains(rustix::termios::LocalModes::ECHO)
    }

    /// Waits for the command to end: its exit status, all it wrote, and
    /// whether it left the terminal echoing.
    pub fn finish(mut self) -> Ended {
        let deadline = Instant::now() + PATIENCE;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let text = self.output.0.lock().unwrap().text.clone();
                panic!("the command did not end; it wrote:\n{text}");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let (lock, ready) = &*self.output;
        let mut out = lock.lock().unwrap();
        while !out.closed && Instant::now() < deadline {
            out = ready
                .wait_timeout(out, Duration::from_millis(200))
                .unwrap()
                .0;
        }
        Ended {
            status,
            text: out.text.clone(),
            echoes: self.echoes(),
        }
    }
}
