//! A real headless Chromium, driven over WebDriver: Debian's `chromium`
//! and `chromium-driver` (scripts/lib/chromium.sh installs them) through
//! fantoccini. Skipped where they are missing, except under CI=true.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

/// How long a wait for the page to show something lasts at most.
pub const PATIENCE: Duration = Duration::from_secs(90);

/// A Chromium session with its chromedriver process.
pub struct Browser {
    pub client: Client,
    driver: Child,
    shots: PathBuf,
    _profile: tempfile::TempDir,
}

fn program(env: &str, default: &str) -> Option<PathBuf> {
    let path = std::env::var_os(env)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(default));
    path.exists().then_some(path)
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session; None (the
    /// test is skipped) when they are not installed, outside CI.
    pub async fn start() -> Option<Browser> {
        let driver = program("CONVERGE_TEST_CHROMEDRIVER", "/usr/bin/chromedriver");
        let chromium = program("CONVERGE_TEST_CHROMIUM", "/usr/bin/chromium");
        let (Some(driver), Some(chromium)) = (driver, chromium) else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true but chromium or chromedriver is missing: scripts/lib/chromium.sh installs them"
            );
            eprintln!("skipped: chromium and chromedriver are not installed");
            return None;
        };
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = Command::new(&driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let url = format!("http://127.0.0.1:{port}");
        let profile = tempfile::tempdir().unwrap();
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu",
                    "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", "--window-size=1280,1000",
                    format!("--user-data-dir={}", profile.path().display()),
                ],
            },
        });
        let serde_json::Value::Object(capabilities) = capabilities else {
            unreachable!()
        };
        // chromedriver takes a moment to listen: retry the session for a
        // bounded while.
        let mut attempt = 0;
        let client = loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(capabilities.clone())
                .connect(&url)
                .await
            {
                Ok(client) => break client,
                Err(e) => {
                    attempt += 1;
                    if attempt > 100 || child.try_wait().unwrap().is_some() {
                        let _ = child.kill();
                        panic!("cannot start a Chromium session through {url}: {e}");
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        };
        Some(Browser {
            client,
            driver: child,
            shots: screenshot_dir(),
            _profile: profile,
        })
    }

    /// Saves a PNG of the window as `target/console-screenshots/NAME.png`.
    pub async fn screenshot(&self, name: &str) {
        let png = self.client.screenshot().await.unwrap();
        std::fs::create_dir_all(&self.shots).unwrap();
        std::fs::write(self.shots.join(format!("{name}.png")), png).unwrap();
    }

    pub async fn goto(&self, url: &str) {
        self.client.goto(url).await.unwrap();
    }

    /// The path of the current URL, with its query if any.
    pub async fn path(&self) -> String {
        let url = self.client.current_url().await.unwrap();
        match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_owned(),
        }
    }

    /// Waits until an element matches `css`.
    pub async fn wait_for(&self, css: &str) -> fantoccini::elements::Element {
        match self
            .client
            .wait()
            .at_most(PATIENCE)
            .for_element(Locator::Css(css))
            .await
        {
            Ok(e) => e,
            Err(err) => {
                let source = self.client.source().await.unwrap_or_default();
                panic!("the page never showed {css}: {err}\n{source}")
            }
        }
    }

    pub async fn text(&self, css: &str) -> String {
        self.wait_for(css).await.text().await.unwrap()
    }

    pub async fn count(&self, css: &str) -> usize {
        self.client.find_all(Locator::Css(css)).await.unwrap().len()
    }

    pub async fn click(&self, css: &str) {
        self.wait_for(css).await.click().await.unwrap();
    }

    pub async fn source(&self) -> String {
        self.client.source().await.unwrap()
    }

    /// Ends the browser session (then chromedriver, on drop).
    pub async fn close(self) {
        let _ = self.client.clone().close().await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if self.driver.try_wait().ok().flatten().is_some() {
            return;
        }
        // Gracefully first: chromedriver then ends the browsers it started.
        let _ = Command::new("kill")
            .arg(self.driver.id().to_string())
            .stderr(Stdio::null())
            .status();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// `target/console-screenshots` of the workspace (or of CARGO_TARGET_DIR).
fn screenshot_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("console-screenshots")
}
