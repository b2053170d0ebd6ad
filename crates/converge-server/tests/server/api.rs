//! The service's HTTP surface, raw: authentication and organizations,
//! malformed and oversized bodies, bad names, journal idempotence, the
//! OpenAPI document against the routes.

use crate::common;

use common::Storage;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

struct Call<'a> {
    server: &'a common::TestServer,
    client: reqwest::Client,
}

impl<'a> Call<'a> {
    fn new(server: &'a common::TestServer) -> Call<'a> {
        Call {
            server,
            client: reqwest::Client::new(),
        }
    }

    /// Sends a request with `token` (None: no Authorization header).
    async fn send(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Vec<u8>>,
    ) -> (StatusCode, Value) {
        let mut req = self
            .client
            .request(method, format!("{}{path}", self.server.url()));
        if let Some(t) = token {
            req = req.header("authorization", format!("token {t}"));
        }
        if let Some(b) = body {
            req = req.header("content-type", "application/json").body(b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status();
        let bytes = resp.bytes().await.unwrap();
        let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (status, value)
    }

    async fn admin(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let body = body.map(|b| b.to_string().into_bytes());
        self.send(method, path, Some(&self.server.token), body)
            .await
    }

    /// The service still answers a good request.
    async fn still_serving(&self) {
        let (status, user) = self.admin(Method::GET, "/api/user", None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(user["organization"], self.server.organization.as_str());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_needs_a_valid_token() {
    let server = common::start(Storage::Sqlite).await.unwrap();
    let call = Call::new(&server);
    let org = &server.organization;
    let path = format!("/api/stacks/{org}");
    for auth in [None, Some("cvg-unknown"), Some("")] {
        let (status, body) = call.send(Method::GET, &path, auth, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{auth:?}: {body}");
        assert_eq!(body["code"], "unauthorized");
    }
    let resp = reqwest::Client::new()
        .get(format!("{}{path}", server.url()))
        .header("authorization", format!("Bearer {}", server.token))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED, "only `token <t>`");

    // A token made and then revoked stops working.
    let (status, made) = call
        .admin(Method::POST, "/api/tokens", Some(json!({ "name": "ci" })))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let token = made["token"].as_str().unwrap();
    assert_eq!(
        call.send(Method::GET, &path, Some(token), None).await.0,
        StatusCode::OK
    );
    let revoke = format!("/api/tokens/{}", made["id"].as_str().unwrap());
    assert_eq!(
        call.admin(Method::DELETE, &revoke, None).await.0,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        call.send(Method::GET, &path, Some(token), None).await.0,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_sees_nothing_outside_its_organization() {
    use converge_backend::{StackLocker, StackRef, StackStore};
    let server = common::start(Storage::Sqlite).await.unwrap();
    let ours = server.backend();
    let stack = StackRef::with_organization(server.organization.clone(), "p", "dev").unwrap();
    ours.create_stack(&stack, b"secret state").await.unwrap();

    let (other_org, other_token) = server.other_org_token().await;
    let call = Call::new(&server);
    let base = format!("/api/stacks/{}", server.organization);
    for (method, path) in [
        (Method::GET, base.clone()),
        (Method::GET, format!("{base}/p/dev")),
        (Method::GET, format!("{base}/p/dev/checkpoint")),
        (Method::GET, format!("{base}/p/dev/history")),
        (Method::DELETE, format!("{base}/p/dev")),
        (Method::DELETE, format!("{base}/p/dev/locks")),
    ] {
        let (status, body) = call
            .send(method.clone(), &path, Some(&other_token), None)
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path}: {body}");
        assert!(!body.to_string().contains("secret state"));
    }
    // Through the backend, with the other token: no access either way.
    let theirs = server.backend_with(&other_token, &other_org);
    let err = theirs.load_checkpoint(&stack).await.unwrap_err();
    assert!(err.to_string().contains("403"), "{err}");
    let err = theirs
        .lock(&stack, converge_backend::LockInfo::current())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("403"), "{err}");
    let listed = theirs
        .list_stacks(&converge_backend::ListStacksOptions::default())
        .await
        .unwrap();
    assert!(
        listed.is_empty(),
        "the other organization has no stacks: {listed:?}"
    );
    // No token, not even an admin's, mints tokens of another organization.
    let body = json!({ "name": "x", "organization": other_org }).to_string();
    let (status, _) = call
        .send(
            Method::POST,
            "/api/tokens",
            Some(&server.token),
            Some(body.clone().into_bytes()),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (_, made) = call
        .admin(
            Method::POST,
            "/api/tokens",
            Some(json!({ "name": "plain" })),
        )
        .await;
    let plain = made["token"].as_str().unwrap();
    let (status, _) = call
        .send(
            Method::POST,
            "/api/tokens",
            Some(plain),
            Some(body.into_bytes()),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        ours.load_checkpoint(&stack).await.unwrap().as_deref(),
        Some(&b"secret state"[..])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_oversized_bodies_are_refused_and_the_service_keeps_serving() {
    let (mut options, dir) = common::options(Storage::Sqlite).unwrap();
    options.max_body_bytes = 64 * 1024;
    let server = common::start_with(options, dir).await;
    let call = Call::new(&server);
    let create = format!("/api/stacks/{}/p", server.organization);
    let token = Some(server.token.as_str());
    for body in [
        &b"{"[..],
        b"not json",
        b"[]",
        br#"{"stackName": 7}"#,
        br#"{"stackName": "dev", "unknown": 1}"#,
        br#"{"stackName": "dev", "checkpoint": "***"}"#,
        b"\xff\xfe",
    ] {
        let (status, reply) = call
            .send(Method::POST, &create, token, Some(body.to_vec()))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body:?}: {reply}");
        assert!(reply["message"].as_str().is_some(), "{reply}");
        call.still_serving().await;
    }
    let big = json!({ "stackName": "dev", "checkpoint": "A".repeat(128 * 1024) });
    let (status, reply) = call.admin(Method::POST, &create, Some(big)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{reply}");
    call.still_serving().await;
    let (status, _) = call
        .admin(Method::POST, &create, Some(json!({ "stackName": "dev" })))
        .await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "a good request after the bad ones"
    );
    let journal = format!("/api/stacks/{}/p/dev/journal", server.organization);
    let (status, reply) = call
        .admin(
            Method::POST,
            &journal,
            Some(json!({ "baseDigest": "../../etc" })),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{reply}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_names_are_rejected() {
    let server = common::start(Storage::Sqlite).await.unwrap();
    let call = Call::new(&server);
    let org = &server.organization;
    // Sent raw: an HTTP client would normalize `..` and `%2E%2E` away.
    for bad in [
        "..",
        ".",
        "%2E%2E",
        "%2E",
        "a%2Fb",
        "a%00b",
        "a%07b",
        "a%0Ab",
        "a%20b",
        "%C3%A9",
        &"x".repeat(101),
    ] {
        for path in [
            format!("/api/stacks/{org}/{bad}/dev"),
            format!("/api/stacks/{org}/p/{bad}"),
            format!("/api/stacks/{org}/p/{bad}/checkpoint"),
            format!("/api/stacks/{bad}/p/dev"),
        ] {
            let (status, reply) = raw_get(server.running.addr, &path, &server.token).await;
            assert_eq!(status, 400, "GET {path}: {reply}");
            assert!(reply.contains("invalid_name"), "GET {path}: {reply}");
        }
        let decoded = bad
            .replace("%2E", ".")
            .replace("%2F", "/")
            .replace("%00", "\0");
        let (status, reply) = call
            .admin(
                Method::POST,
                &format!("/api/stacks/{org}/p"),
                Some(json!({ "stackName": decoded })),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {reply}");
        assert_eq!(reply["code"], "invalid_name");
    }
    let (_, list) = call
        .admin(Method::GET, &format!("/api/stacks/{org}"), None)
        .await;
    assert_eq!(list["stacks"], json!([]), "nothing was created");
}

/// A GET sent over a bare TCP connection, the path exactly as given;
/// returns the status and the body.
async fn raw_get(addr: std::net::SocketAddr, path: &str, token: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: token {token}\r\nConnection: close\r\n\r\n"
    );
    tokio::task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let status = response
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let body = response
            .split("\r\n\r\n")
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        (status, body)
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn journal_appends_are_idempotent_and_may_arrive_out_of_order() {
    let server = common::start(Storage::Sqlite).await.unwrap();
    let call = Call::new(&server);
    let stack = format!("/api/stacks/{}/p/dev", server.organization);
    let create = format!("/api/stacks/{}/p", server.organization);
    call.admin(Method::POST, &create, Some(json!({ "stackName": "dev" })))
        .await;
    let (status, opened) = call
        .admin(
            Method::POST,
            &format!("{stack}/journal"),
            Some(json!({ "baseDigest": "a".repeat(64) })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{opened}");
    let entries = format!(
        "{stack}/update/{}/journalentries",
        opened["updateID"].as_str().unwrap()
    );
    let entry = |seq: i64, text: &str| json!({ "sequenceID": seq, "entry": text });
    let post =
        |batch: Vec<Value>| call.admin(Method::POST, &entries, Some(json!({ "entries": batch })));

    let (status, r) = post(vec![entry(3, r#"{"n":3}"#)]).await;
    assert_eq!((status, r["stored"].clone()), (StatusCode::OK, json!(1)));
    let (status, r) = post(vec![entry(1, r#"{"n":1}"#), entry(2, r#"{"n":2}"#)]).await;
    assert_eq!((status, r["stored"].clone()), (StatusCode::OK, json!(2)));
    // The same batch again (a retry): stored once.
    let (status, r) = post(vec![entry(1, r#"{"n":1}"#), entry(2, r#"{"n":2}"#)]).await;
    assert_eq!((status, r["stored"].clone()), (StatusCode::OK, json!(0)));
    // The same sequence ID with other bytes: refused, and nothing of the
    // batch is stored.
    let (status, r) = post(vec![entry(4, r#"{"n":4}"#), entry(2, r#"{"n":"two"}"#)]).await;
    assert_eq!(status, StatusCode::CONFLICT, "{r}");
    assert_eq!(r["code"], "sequence_conflict");
    let (_, journal) = call
        .admin(Method::GET, &format!("{stack}/journal"), None)
        .await;
    assert_eq!(
        journal["entries"],
        json!([r#"{"n":1}"#, r#"{"n":2}"#, r#"{"n":3}"#]),
        "in sequence order, the refused batch absent"
    );
    assert_eq!(journal["nextSequenceID"], 4);
    for bad in [
        vec![entry(0, "{}")],
        vec![entry(5, "{\n}")],
        vec![entry(5, "{")],
    ] {
        let (status, r) = post(bad).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{r}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_lists_every_route() {
    let server = common::start(Storage::Sqlite).await.unwrap();
    let call = Call::new(&server);
    let (status, doc) = call
        .send(Method::GET, "/api/openapi.json", None, None)
        .await;
    assert_eq!(status, StatusCode::OK, "served without a token");
    let paths = doc["paths"].as_object().unwrap();
    let mut documented: Vec<(String, String)> = paths
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .map(move |m| (m.clone(), path.clone()))
        })
        .collect();
    let mut routes: Vec<(String, String)> = converge_server::ROUTES
        .iter()
        .map(|r| (r.method.to_string(), r.path.to_string()))
        .collect();
    documented.sort();
    routes.sort();
    assert_eq!(documented, routes, "the document lists exactly the routes");

    // And every listed route is served: without a token it is refused with
    // 401 (not the fallback's 404), the document itself excepted.
    for route in converge_server::ROUTES {
        let (method, path) = (route.method, route.path);
        let concrete = path
            .replace("{org}", "o")
            .replace("{project}", "p")
            .replace("{stack}", "s")
            .replace("{updateID}", "u")
            .replace("{urn}", "urn%3Apulumi%3As%3A%3Ap%3A%3At%3A%3An")
            .replace("{tokenID}", "t")
            .replace("{member}", "m")
            .replace("{team}", "t");
        let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
        let (status, body) = call.send(method.clone(), &concrete, None, None).await;
        if path == "/api/openapi.json" {
            assert_eq!(status, StatusCode::OK);
        } else {
            assert_eq!(
                status,
                StatusCode::UNAUTHORIZED,
                "{method} {concrete}: {body}"
            );
        }
    }
    let (status, body) = call.send(Method::GET, "/api/nothing", None, None).await;
    assert_eq!(
        (status, body["code"].clone()),
        (StatusCode::NOT_FOUND, json!("no_route"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stacks_are_created_listed_renamed_and_deleted() {
    let server = common::start(Storage::Sqlite).await.unwrap();
    let call = Call::new(&server);
    let org = &server.organization;
    for (project, stack) in [("web", "dev"), ("web", "prod"), ("db", "dev")] {
        let (status, made) = call
            .admin(
                Method::POST,
                &format!("/api/stacks/{org}/{project}"),
                Some(json!({ "stackName": stack, "checkpoint": "e30=" })),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{made}");
        assert_eq!(made["stackName"], stack);
    }
    let names = |list: &Value| -> Vec<String> {
        list["stacks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                format!(
                    "{}/{}",
                    s["projectName"].as_str().unwrap(),
                    s["stackName"].as_str().unwrap()
                )
            })
            .collect()
    };
    let (_, all) = call
        .admin(Method::GET, &format!("/api/stacks/{org}"), None)
        .await;
    assert_eq!(names(&all), ["db/dev", "web/dev", "web/prod"]);
    let (_, web) = call
        .admin(Method::GET, &format!("/api/stacks/{org}?project=web"), None)
        .await;
    assert_eq!(names(&web), ["web/dev", "web/prod"]);

    let rename = format!("/api/stacks/{org}/web/dev/rename");
    let (status, taken) = call
        .admin(Method::POST, &rename, Some(json!({ "newName": "prod" })))
        .await;
    assert_eq!(
        (status, taken["code"].clone()),
        (StatusCode::CONFLICT, json!("stack_exists"))
    );
    let (status, renamed) = call
        .admin(
            Method::POST,
            &rename,
            Some(json!({ "newName": "staging", "newProject": "app" })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{renamed}");
    let (status, _) = call
        .admin(Method::GET, &format!("/api/stacks/{org}/web/dev"), None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, got) = call
        .admin(Method::GET, &format!("/api/stacks/{org}/app/staging"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{got}");
    let (status, _) = call
        .admin(
            Method::POST,
            &rename.replace("web/dev", "app/staging"),
            Some(json!({ "newName": "../x" })),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // An update started and cancelled (`converge cancel`).
    let updates = format!("/api/stacks/{org}/app/staging/updates");
    let info = json!({ "pid": 9, "username": "u", "hostname": "h", "timestamp": "t" });
    let (status, lease) = call
        .admin(
            Method::POST,
            &updates,
            Some(json!({ "kind": "update", "lockInfo": info })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{lease}");
    let (status, refused) = call
        .admin(
            Method::POST,
            &updates,
            Some(json!({ "kind": "update", "lockInfo": info })),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(refused["holder"], info, "the refusal names the holder");
    assert_eq!(refused["updateID"], lease["updateID"]);
    let cancel = format!(
        "/api/stacks/{org}/app/staging/update/{}/cancel",
        lease["updateID"].as_str().unwrap()
    );
    assert_eq!(
        call.admin(Method::POST, &cancel, None).await.0,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        call.admin(Method::POST, &cancel, None).await.0,
        StatusCode::NOT_FOUND
    );

    let (status, _) = call
        .admin(
            Method::DELETE,
            &format!("/api/stacks/{org}/app/staging"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, all) = call
        .admin(Method::GET, &format!("/api/stacks/{org}"), None)
        .await;
    assert_eq!(names(&all), ["db/dev", "web/prod"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_see_the_open_journal_replayed_and_writers_the_stored_base() {
    use converge_state::journal::{base_digest, entry_to_json, JournalEntry};
    use converge_state::secrets::SecretsMode;
    use converge_state::SecretsProviders;

    let server = common::start(Storage::Sqlite).await.unwrap();
    let call = Call::new(&server);
    let stack = format!("/api/stacks/{}/p/dev", server.organization);
    let create = format!("/api/stacks/{}/p", server.organization);
    call.admin(Method::POST, &create, Some(json!({ "stackName": "dev" })))
        .await;
    // An update that has journaled its secrets provider, and no more.
    let (status, opened) = call
        .admin(
            Method::POST,
            &format!("{stack}/journal"),
            Some(json!({ "baseDigest": base_digest(b"") })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{opened}");
    let entry = JournalEntry::secrets_manager(
        1,
        SecretsProviders {
            kind: "passphrase".to_owned(),
            state: Some(r#"{"salt":"v1:c2FsdA==:v1:abc"}"#.to_owned()),
        },
    );
    let text = String::from_utf8(entry_to_json(&entry, SecretsMode::Opaque).unwrap()).unwrap();
    let entries = format!(
        "{stack}/update/{}/journalentries",
        opened["updateID"].as_str().unwrap()
    );
    let (status, r) = call
        .admin(
            Method::POST,
            &entries,
            Some(json!({ "entries": [{ "sequenceID": 1, "entry": text }] })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{r}");

    // A reader: the checkpoint and the export hold the journaled change.
    let (status, current) = call
        .admin(Method::GET, &format!("{stack}/checkpoint"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        current["checkpoint"]["latest"]["secrets_providers"]["type"], "passphrase",
        "{current}"
    );
    let (status, export) = call
        .admin(Method::GET, &format!("{stack}/export"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(export["version"], 3);
    assert_eq!(
        export["deployment"]["secrets_providers"]["type"], "passphrase",
        "{export}"
    );
    // A writer: the stored base, untouched (this stack has none yet).
    let (status, _) = call
        .admin(Method::GET, &format!("{stack}/checkpoint?base=true"), None)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_are_replaced_whole_and_refused_when_malformed() {
    let server = common::start(Storage::Sqlite).await.unwrap();
    let call = Call::new(&server);
    let org = &server.organization;
    let (status, _) = call
        .admin(
            Method::POST,
            &format!("/api/stacks/{org}/web"),
            Some(json!({ "stackName": "dev" })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let tags = format!("/api/stacks/{org}/web/dev/tags");
    let (status, got) = call.admin(Method::GET, &tags, None).await;
    assert_eq!((status, got), (StatusCode::OK, json!({ "tags": {} })));
    let (status, _) = call
        .admin(
            Method::PUT,
            &tags,
            Some(json!({ "tags": { "env": "dev", "a": "" } })),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, got) = call.admin(Method::GET, &tags, None).await;
    assert_eq!(got, json!({ "tags": { "a": "", "env": "dev" } }));
    for bad in [
        json!({ "tags": { " ": "x" } }),
        json!({ "tags": { "n": 1 } }),
        json!({ "tags": {}, "extra": 1 }),
    ] {
        let (status, err) = call.admin(Method::PUT, &tags, Some(bad.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {err}");
    }
    let (_, got) = call.admin(Method::GET, &tags, None).await;
    assert_eq!(got["tags"]["env"], "dev", "a refused write changes nothing");
    let (status, _) = call
        .admin(
            Method::GET,
            &format!("/api/stacks/{org}/web/missing/tags"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = call
        .send(
            Method::GET,
            "/api/stacks/elsewhere/web/dev/tags",
            Some("nope"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}
