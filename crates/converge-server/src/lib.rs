//! `converge serve`: the HTTP state service, and its web console.
//!
//! Stacks, their checkpoints (opaque bytes, the current one and the one it
//! replaced), update history, update leases (the stack lock: one update per
//! stack at a time, renewed by the holder, broken by cancel or expiry),
//! the journal entries API of seed 002, and access tokens scoped to an
//! organization. Storage is SQLite by default and PostgreSQL with a
//! `postgres://` URL, through one code path ([`db`]). The web console
//! (`console`) shows the same data as the API, to a browser logged in with
//! a token.
//!
//! # Architecture invariants
//!
//! - Every request is authenticated (`Authorization: token <t>`) and sees
//!   only its token's organization; every organization, project and stack
//!   name is validated with `converge-backend`'s validators.
//! - Every race between requests is decided by the database schema (one
//!   lease row and one open journal per stack, one entry per sequence ID),
//!   so several service processes can share one PostgreSQL.
//! - A request is answered only after its writes are committed: a
//!   journal append acknowledged is durable.
//! - The service never decrypts: compaction replays journals with secrets
//!   opaque. It does not depend on the engine.

mod api;
mod compaction;
mod console;
mod db;
mod error;
mod store;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

pub use api::limits::RateLimit;
pub use api::{Need, Route, LEASE_HEADER, ROUTES, UPDATE_HEADER};
pub use compaction::{compact, Compaction};
pub use db::sqlite_url;
pub use error::{ApiError, ServerError};
pub use store::{Access, Caller, NewToken, Role, Scope, INTERRUPTED_MESSAGE};

use crate::api::limits::{Limits, RateLimiter};
use crate::api::AppState;
use crate::db::Db;
use crate::store::{Store, StoreOptions};

/// The OpenAPI 3 document of the API, served at `GET /api/openapi.json`.
pub const OPENAPI_JSON: &str = include_str!("openapi.json");

/// The member a bootstrap admin token belongs to.
pub const BOOTSTRAP_MEMBER: &str = "admin";

/// The organization of a fresh service's first token.
pub const DEFAULT_ORGANIZATION: &str = converge_backend::DIY_ORGANIZATION;

/// How long a shutting-down service waits for the requests in flight.
pub const DRAIN_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// A trusted proxy: an address (`127.0.0.1`) or a block (`10.0.0.0/8`).
pub fn parse_trusted_proxy(text: &str) -> Result<ipnet::IpNet, ServerError> {
    text.parse::<ipnet::IpNet>()
        .or_else(|_| text.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| {
            ServerError::BadOption(format!(
                "--trusted-proxy {text:?} is neither an IP address nor a CIDR block (10.0.0.0/8)"
            ))
        })
}

/// A token's default request rate in each replica: far above what one
/// update needs (its journal appends are batched), low enough that a
/// runaway script cannot take a replica from everyone else.
pub const DEFAULT_RATE_LIMIT: RateLimit = RateLimit {
    per_second: 200.0,
    burst: 400.0,
};

/// How to run the service.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// `sqlite://FILE?mode=rwc` or `postgres://…`.
    pub database_url: String,
    /// Larger request bodies are refused with 413.
    pub max_body_bytes: usize,
    /// How long an update's lease lasts without a renewal.
    pub lease_duration: Duration,
    /// How often expired leases are broken (and their journals compacted).
    pub sweep_interval: Duration,
    /// Each token's request rate in each replica (None: unlimited).
    pub rate_limit: Option<RateLimit>,
    /// How long a request may run (the live event stream excepted).
    pub request_timeout: Duration,
    /// Peers (balancers) whose `X-Forwarded-For` names the client in the
    /// audit log.
    pub trusted_proxies: Vec<ipnet::IpNet>,
}

impl ServerOptions {
    /// Defaults with the given database.
    pub fn new(database_url: impl Into<String>) -> ServerOptions {
        ServerOptions {
            database_url: database_url.into(),
            max_body_bytes: 256 << 20,
            lease_duration: Duration::from_secs(300),
            sweep_interval: Duration::from_secs(30),
            rate_limit: Some(DEFAULT_RATE_LIMIT),
            request_timeout: Duration::from_secs(120),
            trusted_proxies: Vec::new(),
        }
    }

    /// Defaults with a SQLite database in `data_dir` (created if missing).
    pub fn sqlite_in(data_dir: &Path) -> Result<ServerOptions, ServerError> {
        std::fs::create_dir_all(data_dir).map_err(|source| ServerError::Io {
            action: format!("cannot create {}", data_dir.display()),
            source,
        })?;
        Ok(ServerOptions::new(sqlite_url(
            &data_dir.join("converge.db"),
        )))
    }
}

/// An opened service: the database is connected and its schema created.
#[derive(Debug, Clone)]
pub struct Server {
    store: Store,
    options: ServerOptions,
    limits: std::sync::Arc<Limits>,
}

impl Server {
    pub async fn open(options: ServerOptions) -> Result<Server, ServerError> {
        let db = Db::open(&options.database_url).await?;
        let store = Store::new(
            db,
            StoreOptions {
                lease_duration: options.lease_duration,
            },
        );
        let limits = std::sync::Arc::new(Limits {
            limiter: options.rate_limit.map(RateLimiter::new),
            request_timeout: options.request_timeout,
            trusted_proxies: options.trusted_proxies.clone(),
        });
        Ok(Server {
            store,
            options,
            limits,
        })
    }

    /// Makes member `admin` of `organization` an admin (creating both if
    /// new) and creates an organization-wide read-write token for it,
    /// named `name`: how an operator bootstraps an organization.
    pub async fn create_admin_token(
        &self,
        organization: &str,
        name: &str,
    ) -> Result<NewToken, ServerError> {
        converge_backend::validate_organization_name(organization).map_err(ApiError::from)?;
        Ok(self
            .store
            .create_admin_token(organization, BOOTSTRAP_MEMBER, name)
            .await?)
    }

    /// The caller `token` stands for, if it is valid.
    pub async fn authenticate(&self, token: &str) -> Result<Caller, ServerError> {
        Ok(self.store.authenticate(token).await?)
    }

    /// The HTTP routes — the API under `/api`, the web console at `/` —
    /// for embedding.
    pub fn router(&self) -> axum::Router {
        let state = AppState {
            store: self.store.clone(),
            limits: std::sync::Arc::clone(&self.limits),
        };
        api::router(state.clone(), self.options.max_body_bytes).merge(console::router(state))
    }

    /// Serves on `listener` until the future is dropped, breaking expired
    /// leases every `sweep_interval`.
    pub async fn serve(self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        self.serve_until(listener, std::future::pending()).await
    }

    /// Serves until `shutdown` resolves; then stops accepting connections
    /// and lets the requests in flight finish, for at most [`DRAIN_LIMIT`]
    /// (a console's live view, which streams until its reader leaves, is
    /// cut there). Update leases are left as they are: the clients that
    /// hold them renew them through another replica, or they expire.
    pub async fn serve_until(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let (began, draining) = tokio::sync::watch::channel(false);
        let signal = async move {
            shutdown.await;
            let _ = began.send(true);
        };
        let store = self.store.clone();
        let interval = self.options.sweep_interval;
        let sweeper = tokio::spawn(async move {
            let mut ticks = tokio::time::interval(interval);
            loop {
                ticks.tick().await;
                // A failed sweep is retried at the next tick.
                let _ = store.sweep_expired().await;
            }
        });
        let app = self
            .router()
            .into_make_service_with_connect_info::<SocketAddr>();
        let serving = axum::serve(listener, app).with_graceful_shutdown(signal);
        let mut draining = draining;
        let limit = async move {
            let _ = draining.wait_for(|d| *d).await;
            tokio::time::sleep(DRAIN_LIMIT).await;
        };
        let result = tokio::select! {
            result = serving => result,
            () = limit => Ok(()),
        };
        sweeper.abort();
        result
    }

    /// Binds `addr` (port 0: any free port) and serves in a background
    /// task; returns the address bound.
    pub async fn spawn(self, addr: SocketAddr) -> std::io::Result<RunningServer> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(self.serve(listener));
        Ok(RunningServer { addr, task })
    }
}

/// A service serving in a background task; stopped when dropped.
#[derive(Debug)]
pub struct RunningServer {
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl RunningServer {
    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
