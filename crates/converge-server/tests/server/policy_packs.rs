//! The policy pack registry and its enforcement, on SQLite and (with
//! `CONVERGE_TEST_DATABASE_URL`) PostgreSQL: publishing versions (the
//! same bytes again change nothing, other bytes are refused, a malformed
//! archive is refused), listing, downloading, requiring a version with a
//! configuration, and updates: one whose client does not say it runs the
//! required pack is refused before it holds the stack, one that does may
//! not end as succeeded without reporting the pack, and the report it
//! sends is read back with the update.

use crate::common::{self, Storage};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

/// A gzipped tar of a pack directory with these files.
pub fn pack_archive(files: &[(&str, &str)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::default(),
    ));
    for (path, text) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        // The name written as given, even one `tar` would refuse to set.
        header.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
        header.set_cksum();
        builder.append(&header, text.as_bytes()).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

struct Api<'a> {
    server: &'a common::TestServer,
    client: reqwest::Client,
}

impl Api<'_> {
    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
        lease: Option<(&str, &str)>,
    ) -> (StatusCode, Value, Vec<u8>) {
        let mut req = self
            .client
            .request(method, format!("{}{path}", self.server.url()))
            .header("authorization", format!("token {}", self.server.token));
        if let Some((update, token)) = lease {
            req = req
                .header("x-converge-update-id", update)
                .header("x-converge-lease-token", token);
        }
        if let Some(b) = body {
            req = req.body(b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status();
        let bytes = resp.bytes().await.unwrap().to_vec();
        let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (status, value, bytes)
    }

    async fn json(&self, method: Method, path: &str, body: Value) -> (StatusCode, Value) {
        let body = (!body.is_null()).then(|| body.to_string().into_bytes());
        let (status, value, _) = self.call(method, path, body, None).await;
        (status, value)
    }
}

fn lock_info() -> Value {
    json!({ "pid": 1, "username": "u", "hostname": "h", "timestamp": "2024-05-01T10:00:00Z" })
}

async fn registry_and_enforcement(storage: Storage) {
    let Some(server) = common::start(storage).await else {
        return;
    };
    let api = Api {
        server: &server,
        client: reqwest::Client::new(),
    };
    let org = server.organization.clone();
    let packs = format!("/api/orgs/{org}/policypacks");
    let v1 = pack_archive(&[
        ("PulumiPolicy.yaml", "runtime: python\n"),
        ("__main__.py", "# v1\n"),
    ]);
    let v1_other = pack_archive(&[
        ("PulumiPolicy.yaml", "runtime: python\n"),
        ("__main__.py", "# v1, changed\n"),
    ]);

    // Publish; the same bytes again change nothing; other bytes under the
    // same version are refused.
    let publish = |name: &str, version: &str| format!("{packs}?name={name}&version={version}");
    let (status, made, _) = api
        .call(
            Method::POST,
            &publish("guard", "1.0.0"),
            Some(v1.clone()),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let digest = made["digest"].as_str().unwrap().to_owned();
    assert!(digest.starts_with("sha256:"), "{made}");
    assert_eq!(made["required"], false);
    let (status, again, _) = api
        .call(
            Method::POST,
            &publish("guard", "1.0.0"),
            Some(v1.clone()),
            None,
        )
        .await;
    assert_eq!((status, &again["digest"]), (StatusCode::OK, &json!(digest)));
    let (status, refused, _) = api
        .call(
            Method::POST,
            &publish("guard", "1.0.0"),
            Some(v1_other),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert_eq!(refused["code"], "policy_pack_version_exists");

    // Malformed archives and names are refused, and store nothing.
    for (body, code) in [
        (b"not a tarball".to_vec(), "bad_policy_pack_archive"),
        (
            pack_archive(&[("index.js", "// no manifest\n")]),
            "bad_policy_pack_archive",
        ),
        (
            pack_archive(&[("PulumiPolicy.yaml", ""), ("../escape", "x")]),
            "bad_policy_pack_archive",
        ),
    ] {
        let (status, refused, _) = api
            .call(Method::POST, &publish("broken", "1.0.0"), Some(body), None)
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
        assert_eq!(refused["code"], code, "{refused}");
    }
    let (status, refused, _) = api
        .call(
            Method::POST,
            &publish("bad%20name", "1"),
            Some(v1.clone()),
            None,
        )
        .await;
    assert_eq!(
        (status, &refused["code"]),
        (StatusCode::BAD_REQUEST, &json!("bad_policy_pack_name"))
    );
    let (_, listed) = api.json(Method::GET, &packs, Value::Null).await;
    let names: Vec<&str> = listed["policyPacks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["guard"]);

    // Download gives the bytes published.
    let (status, _, bytes) = api
        .call(
            Method::GET,
            &format!("{packs}/guard/versions/1.0.0"),
            None,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(bytes, v1);

    // Require it, with a configuration; a config that is not an object
    // and an unknown version are refused.
    let (status, refused) = api
        .json(
            Method::PUT,
            &format!("{packs}/guard/required"),
            json!({ "version": "9.9.9" }),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{refused}");
    let (status, refused) = api
        .json(
            Method::PUT,
            &format!("{packs}/guard/required"),
            json!({ "version": "1.0.0", "config": [1] }),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    let config = json!({ "no-public-buckets": { "enforcementLevel": "advisory" } });
    let (status, body) = api
        .json(
            Method::PUT,
            &format!("{packs}/guard/required"),
            json!({ "version": "1.0.0", "config": config }),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let (_, required) = api
        .json(Method::GET, &format!("{packs}/required"), Value::Null)
        .await;
    assert_eq!(
        required["requiredPolicyPacks"],
        json!([{ "name": "guard", "version": "1.0.0", "digest": digest, "config": config }])
    );
    let (status, refused) = api
        .json(
            Method::DELETE,
            &format!("{packs}/guard/versions/1.0.0"),
            Value::Null,
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert_eq!(refused["code"], "policy_pack_required");

    // An update whose client does not say it runs the pack is refused
    // before it holds the stack.
    let (status, _) = api
        .json(
            Method::POST,
            &format!("/api/stacks/{org}/p"),
            json!({ "stackName": "s" }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let updates = format!("/api/stacks/{org}/p/s/updates");
    let (status, refused) = api
        .json(
            Method::POST,
            &updates,
            json!({ "kind": "update", "lockInfo": lock_info() }),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert_eq!(refused["code"], "policy_packs_required");
    assert!(refused["message"].as_str().unwrap().contains("guard@1.0.0"));
    let (_, locks) = api
        .json(
            Method::GET,
            &format!("/api/stacks/{org}/p/s/locks"),
            Value::Null,
        )
        .await;
    assert_eq!(
        locks["locks"],
        json!([]),
        "the refused update holds nothing"
    );

    // One that says so starts and is told what it must run; it cannot
    // end as succeeded without reporting the pack (and keeps its lease),
    // but can end with the report, which is read back.
    let (status, started) = api
        .json(
            Method::POST,
            &updates,
            json!({ "kind": "update", "lockInfo": lock_info(),
                    "policyPacks": [{ "name": "guard", "version": "1.0.0", "digest": digest }] }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{started}");
    assert_eq!(started["requiredPolicyPacks"][0]["digest"], json!(digest));
    let update = started["updateID"].as_str().unwrap();
    let lease = started["token"].as_str().unwrap();
    let complete = format!("/api/stacks/{org}/p/s/update/{update}/complete");
    let (status, refused, _) = api
        .call(
            Method::POST,
            &complete,
            Some(json!({ "status": "succeeded" }).to_string().into_bytes()),
            Some((update, lease)),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert_eq!(refused["code"], "policy_report_missing");
    let (_, locks) = api
        .json(
            Method::GET,
            &format!("/api/stacks/{org}/p/s/locks"),
            Value::Null,
        )
        .await;
    assert_eq!(locks["locks"][0]["updateID"], json!(update));
    let report = json!({
        "packs": [{ "name": "guard", "version": "1.0.0", "digest": digest }],
        "violations": [{
            "packName": "guard", "packVersion": "1.0.0", "policyName": "no-public-buckets",
            "enforcementLevel": "advisory", "urn": "urn:pulumi:s::p::aws:s3/bucket:Bucket::b",
            "message": "buckets must be private",
        }],
    });
    let (status, body, _) = api
        .call(
            Method::POST,
            &complete,
            Some(
                json!({ "status": "succeeded", "policyReport": report })
                    .to_string()
                    .into_bytes(),
            ),
            Some((update, lease)),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let (status, policies) = api
        .json(
            Method::GET,
            &format!("/api/stacks/{org}/p/s/update/{update}/policies"),
            Value::Null,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{policies}");
    assert_eq!(policies["report"], report);
    assert_eq!(policies["required"][0]["name"], "guard");

    // The console lists the pack, required, and the update's violation.
    let console = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let login = console
        .post(format!("{}/login", server.url()))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={}", server.token))
        .send()
        .await
        .unwrap();
    let cookie = login.headers()["set-cookie"].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    let page = console
        .get(format!("{}/policies", server.url()))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let page = page.text().await.unwrap();
    assert!(page.contains("data-pack=\"guard@1.0.0\""), "{page}");
    assert!(page.contains(">required<"), "{page}");
    assert!(
        page.contains("data-policy=\"no-public-buckets\"")
            && page.contains("buckets must be private"),
        "{page}"
    );

    // Disabled, the pack is no longer required: updates start without
    // it, and the version can be deleted.
    let (status, _) = api
        .json(
            Method::DELETE,
            &format!("{packs}/guard/required"),
            Value::Null,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, started) = api
        .json(
            Method::POST,
            &updates,
            json!({ "kind": "update", "lockInfo": lock_info() }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{started}");
    assert_eq!(started["requiredPolicyPacks"], json!([]));
    let (status, _) = api
        .json(
            Method::DELETE,
            &format!("{packs}/guard/versions/1.0.0"),
            Value::Null,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, listed) = api.json(Method::GET, &packs, Value::Null).await;
    assert_eq!(listed["policyPacks"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packs_are_published_required_and_enforced_on_sqlite() {
    registry_and_enforcement(Storage::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packs_are_published_required_and_enforced_on_postgres() {
    registry_and_enforcement(Storage::Postgres).await;
}
