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
use converge_backend::{JournalStore, StackRef, StackStore};

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
