//! The routes the web console's pages show, against a real service: a
//! stack's resources, one resource and the graph with secrets masked and
//! the organization enforced, and the journal's event stream following an
//! update entry by entry until it ends.

use std::time::Duration;

use converge_model::{PropertyValue, ResourceState, Urn};
use converge_state::journal::{base_digest, entry_to_json, JournalEntry};
use converge_state::secrets::SecretsMode;
use converge_state::{OperationType, PendingOperation};
use reqwest::Method;
use serde_json::{json, Value};

use crate::common::{self, Storage};

/// A checkpoint holding the stack resource and a random string whose
/// output `result` is secret (its ciphertext as Pulumi writes it).
fn checkpoint(stack_urn: &str, urn: &str) -> String {
    json!({
        "version": 3,
        "checkpoint": {
            "stack": "organization/p/dev",
            "latest": {
                "manifest": { "time": "2024-05-01T10:00:00Z", "magic": "", "version": "v3" },
                "resources": [
                    { "urn": stack_urn, "custom": false, "type": "pulumi:pulumi:Stack",
                      "outputs": { "greeting": "hello",
                                   "token": { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
                                              "ciphertext": "v1:CIPHERTEXT-OUTPUT" } } },
                    { "urn": urn, "custom": true, "id": "abc", "type": "random:index/randomString:RandomString",
                      "parent": stack_urn,
                      "inputs": { "length": 8 },
                      "outputs": { "length": 8,
                                   "result": { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
                                               "ciphertext": "v1:CIPHERTEXT-RESULT" } } }
                ]
            }
        }
    })
    .to_string()
}

async fn call(
    client: &reqwest::Client,
    method: Method,
    url: String,
    token: &str,
    headers: &[(&str, String)],
    body: Option<Value>,
) -> (u16, Value, String) {
    let mut request = client
        .request(method, url)
        .header("authorization", format!("token {token}"));
    for (k, v) in headers {
        request = request.header(*k, v);
    }
    if let Some(b) = body {
        request = request
            .header("content-type", "application/json")
            .body(b.to_string());
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::Null),
        text,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_and_the_graph_come_from_the_state_with_secrets_masked() {
    let server = common::start(Storage::Sqlite).await.unwrap();
    let client = reqwest::Client::new();
    let org = &server.organization;
    let stack_urn = "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev";
    let urn = "urn:pulumi:dev::p::random:index/randomString:RandomString::word";
    let cp = base64_encode(checkpoint(stack_urn, urn).as_bytes());
    let (status, _, text) = call(
        &client,
        Method::POST,
        format!("{}/api/stacks/{org}/p", server.url()),
        &server.token,
        &[],
        Some(json!({ "stackName": "dev", "checkpoint": cp })),
    )
    .await;
    assert_eq!(status, 201, "{text}");
    let stack = format!("{}/api/stacks/{org}/p/dev", server.url());
    let get = |path: String| call(&client, Method::GET, path, &server.token, &[], None);

    let (status, list, text) = get(format!("{stack}/resources")).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(list["resources"].as_array().unwrap().len(), 2);
    let (_, list, _) = get(format!("{stack}/resources?filter=RANDOM")).await;
    assert_eq!(list["resources"][0]["name"], "word", "{list}");
    assert_eq!(list["resources"].as_array().unwrap().len(), 1);

    let encoded = urn.replace(':', "%3A").replace('/', "%2F");
    let (status, detail, text) = get(format!("{stack}/resources/{encoded}")).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(detail["outputs"]["result"], "[secret]");
    assert_eq!(detail["outputs"]["length"], 8);
    assert_eq!(detail["parent"], stack_urn);
    assert!(!text.contains("CIPHERTEXT"), "{text}");
    let (_, stack_detail, _) = get(format!(
        "{stack}/resources/{}",
        stack_urn.replace(':', "%3A")
    ))
    .await;
    assert_eq!(stack_detail["children"], json!([urn]));
    let (status, _, _) = get(format!("{stack}/resources/urn%3Anope")).await;
    assert_eq!(status, 404);

    let (_, summary, text) = get(format!("{stack}/summary")).await;
    assert_eq!(summary["resourceCount"], 2);
    assert_eq!(
        summary["outputs"],
        json!({ "greeting": "hello", "token": "[secret]" })
    );
    assert!(!text.contains("CIPHERTEXT"), "{text}");
    let (_, stacks, _) = get(format!("{}/api/user/stacks", server.url())).await;
    assert_eq!(stacks["stacks"][0]["resourceCount"], 2, "{stacks}");
    assert_eq!(stacks["stacks"][0]["activeUpdate"], Value::Null);

    let (_, graph, _) = get(format!("{stack}/graph")).await;
    assert_eq!(graph["nodes"].as_array().unwrap().len(), 2);
    assert_eq!(
        graph["edges"],
        json!([{ "from": urn, "to": stack_urn, "kind": "parent" }])
    );

    // Another organization's token sees none of it.
    let (_, other) = server.other_org_token().await;
    for path in ["resources", "graph", "summary", "journal/events"] {
        let (status, body, _) = call(
            &client,
            Method::GET,
            format!("{stack}/{path}"),
            &other,
            &[],
            None,
        )
        .await;
        assert_eq!(
            (status, body["code"].clone()),
            (403, json!("forbidden")),
            "{path}"
        );
    }
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Reads the event stream until an event named `name` whose data
/// contains `needle` arrives; returns its data.
async fn next_event(
    response: &mut reqwest::Response,
    buffer: &mut String,
    name: &str,
    needle: &str,
) -> Value {
    loop {
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let event = block
                .lines()
                .find_map(|l| l.strip_prefix("event: "))
                .unwrap_or("");
            let data = block
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .unwrap_or("");
            if event == name && data.contains(needle) {
                return serde_json::from_str(data).unwrap();
            }
        }
        let chunk = tokio::time::timeout(Duration::from_secs(60), response.chunk())
            .await
            .unwrap_or_else(|_| panic!("no `{name}` event with {needle} came"))
            .unwrap()
            .expect("the stream ended");
        buffer.push_str(std::str::from_utf8(&chunk).unwrap());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_stream_follows_an_update_entry_by_entry() {
    let server = common::start(Storage::Sqlite).await.unwrap();
    let client = reqwest::Client::new();
    let org = &server.organization;
    let stack = format!("{}/api/stacks/{org}/p/dev", server.url());
    let post = |path: String, headers: Vec<(&'static str, String)>, body: Value| {
        let client = client.clone();
        let token = server.token.clone();
        async move { call(&client, Method::POST, path, &token, &headers, Some(body)).await }
    };
    let (status, _, _) = post(
        format!("{}/api/stacks/{org}/p", server.url()),
        vec![],
        json!({ "stackName": "dev" }),
    )
    .await;
    assert_eq!(status, 201);

    let mut events = client
        .get(format!("{stack}/journal/events"))
        .header("authorization", format!("token {}", server.token))
        .send()
        .await
        .unwrap();
    assert_eq!(events.status().as_u16(), 200);
    assert!(events.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let mut buffer = String::new();
    next_event(&mut events, &mut buffer, "idle", "").await;

    // An update takes the lease and journals a resource's creation.
    let (status, lease, text) = post(
        format!("{stack}/updates"),
        vec![],
        json!({ "kind": "update", "lockInfo": { "pid": 7, "username": "ada", "hostname": "box", "timestamp": "2024-05-01T10:00:00Z" } }),
    )
    .await;
    assert_eq!(status, 201, "{text}");
    let update = lease["updateID"].as_str().unwrap().to_owned();
    let lease_headers = vec![
        ("x-converge-update-id", update.clone()),
        (
            "x-converge-lease-token",
            lease["token"].as_str().unwrap().to_owned(),
        ),
    ];
    let started = next_event(&mut events, &mut buffer, "update", &update).await;
    assert_eq!(started["holder"], "ada@box (pid 7)");
    let (status, _, text) = post(
        format!("{stack}/journal"),
        lease_headers.clone(),
        json!({ "baseDigest": base_digest(b"") }),
    )
    .await;
    assert_eq!(status, 201, "{text}");

    let urn =
        Urn::parse("urn:pulumi:dev::p::random:index/randomString:RandomString::word").unwrap();
    let mut resource = ResourceState::new(urn.clone(), true);
    resource.outputs.insert(
        "result".to_owned(),
        PropertyValue::secret(PropertyValue::string("v1:CIPHERTEXT")),
    );
    let begin = JournalEntry::begin(
        1,
        1,
        Some(PendingOperation {
            resource: resource.clone(),
            kind: OperationType::Creating,
        }),
    );
    let success = JournalEntry::success(2, 1).with_state(resource);
    let append = |seq: i64, entry: &JournalEntry| {
        let text = String::from_utf8(entry_to_json(entry, SecretsMode::Opaque).unwrap()).unwrap();
        post(
            format!("{stack}/update/{update}/journalentries"),
            lease_headers.clone(),
            json!({ "entries": [{ "sequenceID": seq, "entry": text }] }),
        )
    };
    let (status, _, text) = append(1, &begin).await;
    assert_eq!(status, 200, "{text}");
    let step = next_event(&mut events, &mut buffer, "step", "creating").await;
    assert_eq!(
        step,
        json!({ "sequence": 1, "kind": "Begin", "status": "creating", "urn": urn.as_str(),
                "type": "random:index/randomString:RandomString", "name": "word" })
    );
    let (status, _, _) = append(2, &success).await;
    assert_eq!(status, 200);
    let step = next_event(&mut events, &mut buffer, "step", "created").await;
    assert_eq!(step["sequence"], 2);
    assert!(!buffer.contains("CIPHERTEXT"));

    // A step begins; before its end is seen, the client records the
    // update as succeeded in the history and releases the stack.
    let other = Urn::parse("urn:pulumi:dev::p::random:index/randomPet:RandomPet::pet").unwrap();
    let begin_other = JournalEntry::begin(
        3,
        2,
        Some(PendingOperation {
            resource: ResourceState::new(other.clone(), true),
            kind: OperationType::Creating,
        }),
    );
    let (status, _, _) = append(3, &begin_other).await;
    assert_eq!(status, 200);
    next_event(&mut events, &mut buffer, "step", "::pet").await;
    let record =
        json!({ "kind": "update", "result": "succeeded", "resourceChanges": { "create": 2 } });
    let (status, _, text) = post(
        format!("{stack}/history"),
        lease_headers.clone(),
        json!({ "kind": "update", "record": record.to_string() }),
    )
    .await;
    assert_eq!(status, 201, "{text}");

    // The update ends: its journal is compacted and the stream says so;
    // the step left open succeeded with it.
    let (status, _, text) = post(
        format!("{stack}/update/{update}/complete"),
        lease_headers.clone(),
        json!({ "status": "succeeded" }),
    )
    .await;
    assert!(status < 300, "{text}");
    let finished = next_event(&mut events, &mut buffer, "step", "::pet").await;
    assert_eq!(
        (finished["status"].clone(), finished["sequence"].clone()),
        (json!("created"), Value::Null)
    );
    let ended = next_event(&mut events, &mut buffer, "end", &update).await;
    assert_eq!(ended["status"], "succeeded");
    assert_eq!(ended["result"], "succeeded");
    assert_eq!(ended["resourceChanges"], json!({ "create": 2 }));
}
