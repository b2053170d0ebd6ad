//! Starting a real service on 127.0.0.1 for the tests: SQLite in a
//! temporary directory, or the PostgreSQL of `CONVERGE_TEST_DATABASE_URL`.

#![allow(dead_code)]

use std::time::Duration;

use converge_backend::http::{HttpBackend, HttpBackendOptions, RetryPolicy};
use converge_server::{RunningServer, Server, ServerOptions};

/// A running service with an admin token of a fresh organization.
pub struct TestServer {
    pub running: RunningServer,
    pub server: Server,
    pub token: String,
    pub organization: String,
    _dir: Option<tempfile::TempDir>,
}

/// Which database a test service uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    Sqlite,
    Postgres,
}

/// The PostgreSQL URL for tests, if any. Under CI it must be set: the
/// PostgreSQL tests never skip silently there.
pub fn postgres_url() -> Option<String> {
    match std::env::var("CONVERGE_TEST_DATABASE_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true but CONVERGE_TEST_DATABASE_URL is not set: scripts/test starts PostgreSQL"
            );
            eprintln!("skipped: CONVERGE_TEST_DATABASE_URL is not set");
            None
        }
    }
}

pub fn fresh_name(prefix: &str) -> String {
    format!(
        "{prefix}-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    )
}

/// Options for a service on `storage` (None: PostgreSQL is not available).
pub fn options(storage: Storage) -> Option<(ServerOptions, Option<tempfile::TempDir>)> {
    match storage {
        Storage::Sqlite => {
            let dir = tempfile::tempdir().unwrap();
            let options = ServerOptions::sqlite_in(dir.path()).unwrap();
            Some((options, Some(dir)))
        }
        Storage::Postgres => postgres_url().map(|url| (ServerOptions::new(url), None)),
    }
}

pub async fn start_with(options: ServerOptions, dir: Option<tempfile::TempDir>) -> TestServer {
    let server = Server::open(options).await.expect("open the service");
    let organization = fresh_name("org");
    let token = server
        .create_admin_token(&organization, "test admin")
        .await
        .unwrap()
        .token;
    let running = server
        .clone()
        .spawn("127.0.0.1:0".parse().unwrap())
        .await
        .expect("bind 127.0.0.1");
    TestServer {
        running,
        server,
        token,
        organization,
        _dir: dir,
    }
}

pub async fn start(storage: Storage) -> Option<TestServer> {
    let (options, dir) = options(storage)?;
    Some(start_with(options, dir).await)
}

impl TestServer {
    pub fn url(&self) -> String {
        self.running.url()
    }

    /// A new backend instance (as a new CLI process would have).
    pub fn backend(&self) -> HttpBackend {
        self.backend_with(&self.token, &self.organization)
    }

    pub fn backend_with(&self, token: &str, organization: &str) -> HttpBackend {
        HttpBackend::new(HttpBackendOptions {
            url: self.url(),
            token: token.to_owned(),
            organization: organization.to_owned(),
            retry: RetryPolicy {
                attempts: 3,
                initial_backoff: Duration::from_millis(50),
                max_backoff: Duration::from_millis(200),
                throttle_limit: Duration::from_secs(60),
            },
        })
        .unwrap()
    }

    /// A token of another organization.
    pub async fn other_org_token(&self) -> (String, String) {
        let org = fresh_name("other");
        let token = self
            .server
            .create_admin_token(&org, "other admin")
            .await
            .unwrap()
            .token;
        (org, token)
    }
}
