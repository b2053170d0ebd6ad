//! Retries through a faulty network: a proxy in front of the real service
//! that loses the response of every first attempt of a journal append (the
//! service stored the entries, the client saw a 502) and answers 429 to
//! every first attempt of other requests. The HTTP backend retries, and no
//! entry is ever stored twice.

use crate::common;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use common::Storage;
use converge_backend::conformance::{test_digest, test_entry};
use converge_backend::{HistoryStore, JournalStore, StackLocker, StackRef, StackStore};

/// A request as the proxy remembers it: method, path and body.
type Seen = (String, String, Vec<u8>);

#[derive(Clone)]
struct Proxy {
    upstream: String,
    client: reqwest::Client,
    /// Requests (method, path, body) seen once already.
    seen: Arc<Mutex<HashSet<Seen>>>,
    injected: Arc<Mutex<Vec<String>>>,
}

async fn forward(
    State(proxy): State<Proxy>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri
        .path_and_query()
        .map(|p| p.to_string())
        .unwrap_or_default();
    let key = (method.to_string(), path.clone(), body.to_vec());
    let first = proxy.seen.lock().unwrap().insert(key);
    let append = path.ends_with("/journalentries");
    if first && !append {
        proxy
            .injected
            .lock()
            .unwrap()
            .push(format!("429 {method} {path}"));
        return StatusCode::TOO_MANY_REQUESTS.into_response();
    }
    let mut request = proxy
        .client
        .request(method.clone(), format!("{}{path}", proxy.upstream))
        .body(body.to_vec());
    for (name, value) in &headers {
        if name != "host" && name != "content-length" {
            request = request.header(name.as_str(), value.as_bytes());
        }
    }
    let upstream = request.send().await.unwrap();
    let status = upstream.status().as_u16();
    let bytes = upstream.bytes().await.unwrap();
    if first && append {
        // Processed upstream; the answer is lost on the way back.
        proxy
            .injected
            .lock()
            .unwrap()
            .push(format!("lost {method} {path}"));
        return StatusCode::BAD_GATEWAY.into_response();
    }
    (StatusCode::from_u16(status).unwrap(), bytes.to_vec()).into_response()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retried_appends_are_stored_once() {
    let server = common::start(Storage::Sqlite).await.unwrap();
    let proxy = Proxy {
        upstream: server.url(),
        client: reqwest::Client::new(),
        seen: Arc::default(),
        injected: Arc::default(),
    };
    let injected = Arc::clone(&proxy.injected);
    let app = axum::Router::new().fallback(forward).with_state(proxy);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy_url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let backend =
        converge_backend::http::HttpBackend::new(converge_backend::http::HttpBackendOptions {
            url: proxy_url,
            token: server.token.clone(),
            organization: server.organization.clone(),
            retry: converge_backend::http::RetryPolicy {
                attempts: 4,
                initial_backoff: std::time::Duration::from_millis(10),
                max_backoff: std::time::Duration::from_millis(50),
                throttle_limit: std::time::Duration::from_secs(60),
            },
        })
        .unwrap();
    let stack = StackRef::with_organization(server.organization.clone(), "p", "dev").unwrap();
    backend.create_stack(&stack, b"{}").await.unwrap();
    backend.open_journal(&stack, &test_digest(1)).await.unwrap();
    let entries: Vec<Vec<u8>> = (1..=9).map(test_entry).collect();
    for batch in entries.chunks(3) {
        backend.append_journal(&stack, batch).await.unwrap();
    }
    let journal = backend.load_journal(&stack).await.unwrap().unwrap();
    assert_eq!(journal.entries, entries, "every entry once, in order");

    let injected = injected.lock().unwrap().clone();
    let lost = injected.iter().filter(|i| i.starts_with("lost")).count();
    assert_eq!(lost, 3, "each append's first answer was lost: {injected:?}");
    assert!(
        injected
            .iter()
            .any(|i| i.starts_with("429 POST") && i.contains("/api/stacks/")),
        "a create was throttled and retried: {injected:?}"
    );
}

/// What the rule proxy does with one attempt of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// Forwarded, the answer passed back.
    Pass,
    /// Not forwarded: answered with this status at once.
    Refuse(u16),
    /// Forwarded and processed; the answer replaced by this status.
    Lose(u16),
}

/// The n-th attempt (from 1) of `METHOD path` → what the proxy does.
type Rule = Arc<dyn Fn(&str, &str, usize) -> Fault + Send + Sync>;

#[derive(Clone)]
struct RuleProxy {
    upstream: String,
    client: reqwest::Client,
    rule: Rule,
    /// Attempts per `METHOD path`.
    attempts: Arc<Mutex<std::collections::HashMap<String, usize>>>,
}

async fn forward_by_rule(
    State(proxy): State<RuleProxy>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let key = format!("{method} {path}");
    let n = {
        let mut attempts = proxy.attempts.lock().unwrap();
        let n = attempts.entry(key).or_insert(0);
        *n += 1;
        *n
    };
    let fault = (proxy.rule)(method.as_str(), &path, n);
    if let Fault::Refuse(status) = fault {
        return StatusCode::from_u16(status).unwrap().into_response();
    }
    let target = uri
        .path_and_query()
        .map(|p| p.to_string())
        .unwrap_or_default();
    let mut request = proxy
        .client
        .request(method, format!("{}{target}", proxy.upstream))
        .body(body.to_vec());
    for (name, value) in &headers {
        if name != "host" && name != "content-length" {
            request = request.header(name.as_str(), value.as_bytes());
        }
    }
    let upstream = request.send().await.unwrap();
    let status = upstream.status().as_u16();
    let bytes = upstream.bytes().await.unwrap();
    match fault {
        Fault::Lose(status) => StatusCode::from_u16(status).unwrap().into_response(),
        _ => (StatusCode::from_u16(status).unwrap(), bytes.to_vec()).into_response(),
    }
}

/// The service behind a rule proxy, and a backend through the proxy
/// making 4 attempts.
async fn through_rules(
    rule: impl Fn(&str, &str, usize) -> Fault + Send + Sync + 'static,
) -> (
    common::TestServer,
    converge_backend::http::HttpBackend,
    Arc<Mutex<std::collections::HashMap<String, usize>>>,
) {
    let server = common::start(Storage::Sqlite).await.unwrap();
    let proxy = RuleProxy {
        upstream: server.url(),
        client: reqwest::Client::new(),
        rule: Arc::new(rule),
        attempts: Arc::default(),
    };
    let attempts = Arc::clone(&proxy.attempts);
    let app = axum::Router::new()
        .fallback(forward_by_rule)
        .with_state(proxy);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let backend = backend_at(url, &server);
    (server, backend, attempts)
}

fn backend_at(url: String, server: &common::TestServer) -> converge_backend::http::HttpBackend {
    converge_backend::http::HttpBackend::new(converge_backend::http::HttpBackendOptions {
        url,
        token: server.token.clone(),
        organization: server.organization.clone(),
        retry: converge_backend::http::RetryPolicy {
            attempts: 4,
            initial_backoff: std::time::Duration::from_millis(10),
            max_backoff: std::time::Duration::from_millis(40),
            throttle_limit: std::time::Duration::from_secs(60),
        },
    })
    .unwrap()
}

fn attempts_of(
    attempts: &Arc<Mutex<std::collections::HashMap<String, usize>>>,
    method: &str,
    suffix: &str,
) -> usize {
    attempts
        .lock()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.starts_with(method) && k.ends_with(suffix))
        .map(|(_, n)| n)
        .sum()
}

/// A read failing with 502 every time is sent `attempts` times, then the
/// error names the status; a refusal (404) is not sent again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_stop_at_the_bound_with_the_last_answer() {
    let (server, backend, attempts) = through_rules(|method, path, _| {
        if method == "GET" && path.ends_with("/checkpoint") {
            Fault::Refuse(502)
        } else {
            Fault::Pass
        }
    })
    .await;
    let stack = StackRef::with_organization(server.organization.clone(), "p", "dev").unwrap();
    backend.create_stack(&stack, b"{}").await.unwrap();
    let err = backend.load_checkpoint(&stack).await.unwrap_err();
    assert!(err.to_string().contains("502"), "{err}");
    assert_eq!(attempts_of(&attempts, "GET", "/checkpoint"), 4, "the bound");

    let missing = StackRef::with_organization(server.organization.clone(), "p", "nope").unwrap();
    let err = backend.stack_exists(&missing).await;
    assert!(matches!(err, Ok(false)), "{err:?}");
    let gets = attempts_of(&attempts, "GET", "/p/nope");
    assert_eq!(gets, 1, "a 404 is an answer, not a failure to retry");
}

/// Starting an update is not idempotent: when its answer is lost (502
/// after the service processed it) it is not sent again, and the error
/// says so; when the service answers 503 (nothing written) it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_is_not_idempotent_is_resent_only_when_certainly_unprocessed() {
    let (server, backend, attempts) =
        through_rules(
            |method, path, n| match (method, path.rsplit('/').next().unwrap_or(""), n) {
                ("POST", "updates", 1) if path.contains("/lost/") => Fault::Lose(502),
                ("POST", "updates", 1) => Fault::Refuse(503),
                _ => Fault::Pass,
            },
        )
        .await;
    let org = server.organization.clone();
    let lost = StackRef::with_organization(org.clone(), "p", "lost").unwrap();
    let refused = StackRef::with_organization(org, "p", "refused").unwrap();
    for s in [&lost, &refused] {
        backend.create_stack(s, b"{}").await.unwrap();
    }

    let err = backend
        .lock(&lost, converge_backend::LockInfo::current())
        .await
        .map(|_| ())
        .unwrap_err();
    assert!(err.to_string().contains("502"), "{err}");
    assert_eq!(attempts_of(&attempts, "POST", "/lost/updates"), 1);
    let held = backend.list_locks(&lost).await.unwrap();
    assert_eq!(held.len(), 1, "the lost start did land, once: {held:?}");

    let guard = backend
        .lock(&refused, converge_backend::LockInfo::current())
        .await
        .unwrap();
    assert_eq!(attempts_of(&attempts, "POST", "/refused/updates"), 2);
    guard.release().await.unwrap();
}

/// A history record added under the lease whose answer is lost is sent
/// again and stored once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_history_record_under_a_lease_is_resent_and_stored_once() {
    let (server, backend, attempts) = through_rules(|method, path, n| {
        if method == "POST" && path.ends_with("/history") && n == 1 {
            Fault::Lose(502)
        } else {
            Fault::Pass
        }
    })
    .await;
    let stack = StackRef::with_organization(server.organization.clone(), "p", "dev").unwrap();
    backend.create_stack(&stack, b"{}").await.unwrap();
    let guard = backend
        .lock(&stack, converge_backend::LockInfo::current())
        .await
        .unwrap();
    let record = br#"{"kind":"update","result":"succeeded","version":1}"#;
    backend
        .add_history(&stack, converge_backend::UpdateKind::Update, record)
        .await
        .unwrap();
    guard.release().await.unwrap();
    assert_eq!(attempts_of(&attempts, "POST", "/history"), 2);
    let history = backend
        .list_history(&stack, &converge_backend::ListHistoryOptions::default())
        .await
        .unwrap();
    assert_eq!(history.len(), 1, "stored once: {history:?}");
}

/// Nothing listening: every attempt fails to connect, and the error says
/// how many were made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_service_is_tried_attempts_times() {
    let server = common::start(Storage::Sqlite).await.unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let backend = backend_at(url, &server);
    let stack = StackRef::with_organization(server.organization.clone(), "p", "dev").unwrap();
    let err = backend.create_stack(&stack, b"{}").await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("cannot reach the state service") && text.contains("after 4 attempt(s)"),
        "{text}"
    );
}
