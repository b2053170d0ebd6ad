//! A token over its request rate: the service answers 429 with
//! `Retry-After`, and Converge's HTTP backend waits and retries, so a
//! client over its rate is slowed, not failed. A proxy in front of the
//! service counts the answers that pass.

use crate::common;

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use common::Storage;
use converge_backend::{JournalStore, StackRef, StackStore};
use converge_server::RateLimit;

/// A status that passed, with its Retry-After.
type Seen = (u16, Option<String>);

#[derive(Clone)]
struct Counter {
    upstream: String,
    client: reqwest::Client,
    /// Every status that passed, with its Retry-After.
    seen: Arc<Mutex<Vec<Seen>>>,
}

async fn forward(
    State(proxy): State<Counter>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri
        .path_and_query()
        .map(|p| p.to_string())
        .unwrap_or_default();
    let mut request = proxy
        .client
        .request(method, format!("{}{path}", proxy.upstream))
        .body(body.to_vec());
    for (name, value) in &headers {
        if name != "host" && name != "content-length" {
            request = request.header(name.as_str(), value.as_bytes());
        }
    }
    let upstream = request.send().await.unwrap();
    let status = upstream.status().as_u16();
    let retry_after = upstream
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    let bytes = upstream.bytes().await.unwrap();
    proxy
        .seen
        .lock()
        .unwrap()
        .push((status, retry_after.clone()));
    let mut response = (StatusCode::from_u16(status).unwrap(), bytes.to_vec()).into_response();
    if let Some(r) = retry_after {
        response
            .headers_mut()
            .insert("retry-after", r.parse().unwrap());
    }
    response
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_over_its_rate_is_slowed_not_failed() {
    let (mut options, dir) = common::options(Storage::Sqlite).unwrap();
    options.rate_limit = Some(RateLimit {
        per_second: 4.0,
        burst: 4.0,
    });
    let server = common::start_with(options, dir).await;
    let seen = Arc::default();
    let proxy = Counter {
        upstream: server.url(),
        client: reqwest::Client::new(),
        seen: Arc::clone(&seen),
    };
    let app = axum::Router::new().fallback(forward).with_state(proxy);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy_url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    // Raw: a burst past the limit is refused with Retry-After.
    let client = reqwest::Client::new();
    let mut refused = None;
    for _ in 0..10 {
        let resp = client
            .get(format!("{}/api/user", server.url()))
            .header("authorization", format!("token {}", server.token))
            .send()
            .await
            .unwrap();
        if resp.status() == StatusCode::TOO_MANY_REQUESTS {
            refused = Some(resp);
            break;
        }
    }
    let refused = refused.expect("a burst past the rate is refused");
    let after: u64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(after >= 1, "Retry-After in whole seconds");
    let body: serde_json::Value = serde_json::from_slice(&refused.bytes().await.unwrap()).unwrap();
    assert_eq!(body["code"], "rate_limited");

    // Through the backend (few attempts: a 429 uses none), many requests
    // at once, well past the rate: every one succeeds.
    let backend =
        converge_backend::http::HttpBackend::new(converge_backend::http::HttpBackendOptions {
            url: proxy_url,
            token: server.token.clone(),
            organization: server.organization.clone(),
            retry: converge_backend::http::RetryPolicy {
                attempts: 2,
                initial_backoff: std::time::Duration::from_millis(10),
                max_backoff: std::time::Duration::from_millis(50),
                throttle_limit: std::time::Duration::from_secs(120),
            },
        })
        .unwrap();
    let stack = StackRef::with_organization(server.organization.clone(), "p", "dev").unwrap();
    backend.create_stack(&stack, b"{}").await.unwrap();
    backend
        .open_journal(&stack, &converge_backend::conformance::test_digest(1))
        .await
        .unwrap();
    let entries: Vec<Vec<u8>> = (1..=12)
        .map(converge_backend::conformance::test_entry)
        .collect();
    let tasks: Vec<_> = entries
        .chunks(1)
        .map(|batch| {
            let (backend, stack, batch) = (backend.clone(), stack.clone(), batch.to_vec());
            tokio::spawn(async move { backend.append_journal(&stack, &batch).await })
        })
        .collect();
    for t in tasks {
        t.await
            .unwrap()
            .expect("a throttled append succeeds in the end");
    }
    let journal = backend.load_journal(&stack).await.unwrap().unwrap();
    assert_eq!(journal.entries.len(), 12, "every entry stored once");
    let seen = seen.lock().unwrap().clone();
    let throttled = seen.iter().filter(|(s, _)| *s == 429).count();
    assert!(throttled > 0, "the backend was throttled: {seen:?}");
    assert!(
        seen.iter()
            .filter(|(s, _)| *s == 429)
            .all(|(_, r)| r.is_some()),
        "every 429 says when to retry"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_come_a_page_at_a_time_and_the_backend_reads_every_page() {
    use converge_backend::{HistoryStore, ListHistoryOptions, ListStacksOptions, UpdateKind};
    let (mut options, dir) = common::options(Storage::Sqlite).unwrap();
    options.rate_limit = None;
    let server = common::start_with(options, dir).await;
    let backend = server.backend();
    let stack = StackRef::with_organization(server.organization.clone(), "p", "dev").unwrap();
    backend.create_stack(&stack, b"{}").await.unwrap();
    for i in 1..=1003 {
        let record = serde_json::json!({ "kind": "update", "version": i });
        backend
            .add_history(&stack, UpdateKind::Update, record.to_string().as_bytes())
            .await
            .unwrap();
    }
    // More than a page: the backend follows the continuation tokens.
    let all = backend
        .list_history(&stack, &ListHistoryOptions::default())
        .await
        .unwrap();
    assert_eq!(all.len(), 1003);
    let versions: Vec<i64> = all
        .iter()
        .map(|h| {
            serde_json::from_slice::<serde_json::Value>(&h.record).unwrap()["version"]
                .as_i64()
                .unwrap()
        })
        .collect();
    assert_eq!(
        versions,
        (1..=1003).rev().collect::<Vec<_>>(),
        "newest first, each once"
    );
    let some = backend
        .list_history(&stack, &ListHistoryOptions { limit: Some(1001) })
        .await
        .unwrap();
    assert_eq!(some.len(), 1001);
    // The API's pages, raw.
    let client = reqwest::Client::new();
    let get = |path: String| {
        let client = client.clone();
        let token = server.token.clone();
        async move {
            let resp = client
                .get(path)
                .header("authorization", format!("token {token}"))
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), StatusCode::OK);
            serde_json::from_slice::<serde_json::Value>(&resp.bytes().await.unwrap()).unwrap()
        }
    };
    let base = format!(
        "{}/api/stacks/{}/p/dev/history",
        server.url(),
        server.organization
    );
    let first = get(format!("{base}?limit=2")).await;
    assert_eq!(first["updates"].as_array().unwrap().len(), 2);
    let token = first["continuationToken"].as_str().unwrap();
    let second = get(format!("{base}?limit=2&continuationToken={token}")).await;
    let version = |v: &serde_json::Value, i: usize| -> i64 {
        serde_json::from_str::<serde_json::Value>(v["updates"][i]["record"].as_str().unwrap())
            .unwrap()["version"]
            .as_i64()
            .unwrap()
    };
    assert_eq!((version(&first, 1), version(&second, 0)), (1002, 1001));
    for name in ["a", "b", "c"] {
        let s = StackRef::with_organization(server.organization.clone(), "q", name).unwrap();
        backend.create_stack(&s, b"{}").await.unwrap();
    }
    let stacks = format!(
        "{}/api/stacks/{}?project=q&limit=2",
        server.url(),
        server.organization
    );
    let page = get(stacks.clone()).await;
    assert_eq!(page["stacks"].as_array().unwrap().len(), 2);
    let token = page["continuationToken"].as_str().unwrap();
    let rest = get(format!("{stacks}&continuationToken={token}")).await;
    assert_eq!(rest["stacks"][0]["stackName"], "c");
    assert!(rest["continuationToken"].is_null());
    let listed = backend
        .list_stacks(&ListStacksOptions::default())
        .await
        .unwrap();
    assert_eq!(listed.len(), 4);
}
