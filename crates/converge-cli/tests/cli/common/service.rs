//! `converge serve` as a subprocess, for tests of the HTTP backend.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use assert_cmd::cargo::CommandCargoExt;

/// A `converge serve` process, killed when dropped.
#[derive(Debug)]
pub struct Service {
    child: Child,
    pub url: String,
    pub token: String,
}

impl Service {
    /// Starts `converge serve` on `listen` (port 0: a free port) with its
    /// SQLite database in `data_dir` and an admin token in `data_dir/token`.
    pub fn start(home: &Path, data_dir: &Path, listen: &str) -> Service {
        Service::start_in(home, data_dir, listen, "organization")
    }

    /// Like [`Service::start`], the token of `organization`.
    pub fn start_in(home: &Path, data_dir: &Path, listen: &str, organization: &str) -> Service {
        Service::start_on(home, data_dir, listen, organization, None)
    }

    /// Like [`Service::start_in`], on the database at `database_url`
    /// (None: SQLite in `data_dir`).
    pub fn start_on(
        home: &Path,
        data_dir: &Path,
        listen: &str,
        organization: &str,
        database_url: Option<&str>,
    ) -> Service {
        Service::start_with(home, data_dir, listen, organization, database_url, &[])
    }

    /// Like [`Service::start_on`], with more arguments for `converge serve`.
    pub fn start_with(
        home: &Path,
        data_dir: &Path,
        listen: &str,
        organization: &str,
        database_url: Option<&str>,
        extra: &[&str],
    ) -> Service {
        let token_file = data_dir.join("token");
        let mut serve = Command::cargo_bin("converge").unwrap();
        match database_url {
            Some(url) => serve.env("CONVERGE_DATABASE_URL", url),
            None => serve.env_remove("CONVERGE_DATABASE_URL"),
        };
        let mut child = serve
            .env("CONVERGE_HOME", home)
            .args(["serve", "--listen", listen, "--data-dir"])
            .arg(data_dir)
            .arg("--token-file")
            .arg(&token_file)
            .args(["--organization", organization])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("converge serve exited before listening")
                .unwrap();
            if let Some(url) = line.strip_prefix("Converge state service listening on ") {
                break url.to_owned();
            }
        };
        // Keep draining stdout so the service never blocks on it.
        std::thread::spawn(move || for _ in lines {});
        let token = std::fs::read_to_string(&token_file)
            .unwrap()
            .trim()
            .to_owned();
        Service { child, url, token }
    }

    /// Sends SIGTERM (or SIGINT) and waits for the service to exit, at
    /// most `guard` (a hang guard: past it the service is killed and
    /// `None` returned).
    pub fn stop_with(
        &mut self,
        signal: rustix::process::Signal,
        guard: std::time::Duration,
    ) -> Option<std::process::ExitStatus> {
        let pid = rustix::process::Pid::from_raw(i32::try_from(self.child.id()).ok()?)?;
        let _ = rustix::process::kill_process(pid, signal);
        let started = std::time::Instant::now();
        while started.elapsed() < guard {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        self.kill();
        None
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.kill();
    }
}
