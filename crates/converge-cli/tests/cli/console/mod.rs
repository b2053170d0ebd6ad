//! The web console of `converge serve`, in a real headless Chromium:
//! stacks made by the `converge` binary on the service (a YAML program
//! with the built-in random and command providers, a secret config value
//! and secret outputs), then logging in (a wrong token refused), the
//! stack list, a running update followed live as its journal grows (the
//! program's commands wait for files the test creates, so the update
//! advances step by step), a stack's outputs and history, the resource
//! list and its filter, a resource, the graph, another organization's
//! stack refused, logging out — and no page or API document holding a
//! secret's plaintext or ciphertext. Screenshots of each page go to
//! `target/console-screenshots/`.

mod browser;
mod organization;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::service::Service;
use crate::common::{converge_on, stdout_of, Backend, Scratch};
use browser::{Browser, PATIENCE};

const PROGRAM: &str = r#"name: console
runtime: yaml
config:
  gateDir:
    type: string
  dbPassword:
    type: string
    secret: true
resources:
  pet:
    type: random:RandomPet
  password:
    type: random:RandomPassword
    properties:
      length: 24
      special: false
  keeper:
    type: random:RandomString
    properties:
      length: 8
      special: false
      keepers:
        db: ${dbPassword}
  first:
    type: command:local:Command
    properties:
      create: while [ ! -e "${gateDir}/first" ]; do sleep 0.05; done; echo first
    options:
      dependsOn:
        - ${pet}
  second:
    type: command:local:Command
    properties:
      create: while [ ! -e "${gateDir}/second" ]; do sleep 0.05; done; echo second
    options:
      dependsOn:
        - ${first}
outputs:
  petName: ${pet.id}
  password: ${password.result}
  dbPassword: ${dbPassword}
"#;

struct World {
    scratch: Scratch,
    backend: Backend,
    base: String,
    token: String,
}

impl World {
    fn converge(&self, args: &[&str]) -> String {
        stdout_of(converge_on(&self.scratch, &self.backend, &[]), args)
    }

    /// A stack of the program whose commands wait for files in `gates`.
    fn init_stack(&self, stack: &str, gates: &Path, db_password: &str) {
        std::fs::create_dir_all(gates).unwrap();
        self.converge(&["stack", "init", stack]);
        let gates = gates.to_str().unwrap();
        self.converge(&["config", "set", "gateDir", gates, "--stack", stack]);
        self.converge(&[
            "config",
            "set",
            "--secret",
            "dbPassword",
            db_password,
            "--stack",
            stack,
        ]);
    }

    fn up_in_background(&self, stack: &str) -> Child {
        let log =
            std::fs::File::create(self.scratch.dir.path().join(format!("up-{stack}.log"))).unwrap();
        converge_on(
            &self.scratch,
            &self.backend,
            &["up", "--yes", "--stack", stack],
        )
        .stdout(Stdio::from(log.try_clone().unwrap()))
        .stderr(Stdio::from(log))
        .spawn()
        .unwrap()
    }

    fn up_log(&self, stack: &str) -> String {
        std::fs::read_to_string(self.scratch.dir.path().join(format!("up-{stack}.log")))
            .unwrap_or_default()
    }
}

/// HTTP for checks the browser cannot make (statuses, headers, the API).
struct Http {
    client: reqwest::Client,
    base: String,
}

impl Http {
    fn new(base: &str) -> Http {
        Http {
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            base: base.to_owned(),
        }
    }

    /// `GET path` with the API token: status and JSON body (and its text).
    async fn api(&self, token: &str, path: &str) -> (u16, Value, String) {
        let response = self
            .client
            .get(format!("{}{path}", self.base))
            .header("Authorization", format!("token {token}"))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let json = serde_json::from_str(&text).unwrap_or(Value::Null);
        (status, json, text)
    }

    /// The status a POST of `body` gets.
    async fn post_json_status(&self, token: &str, path: &str, body: Value) -> u16 {
        self.client
            .post(format!("{}{path}", self.base))
            .header("Authorization", format!("token {token}"))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    }

    /// A console page with a session cookie: status, Location, body.
    async fn page(&self, session: &str, path: &str) -> (u16, String, String) {
        let response = self
            .client
            .get(format!("{}{path}", self.base))
            .header("Cookie", format!("converge_session={session}"))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let location = response
            .headers()
            .get("location")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        (status, location, response.text().await.unwrap())
    }

    /// `POST /login` as a form, with extra headers: status and Set-Cookie.
    async fn login(&self, token: &str, headers: &[(&str, &str)]) -> (u16, String) {
        let mut request = self
            .client
            .post(format!("{}/login", self.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("token={token}"));
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let response = request.send().await.unwrap();
        let cookie = response
            .headers()
            .get("set-cookie")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        (response.status().as_u16(), cookie)
    }
}

/// Every `ciphertext` of the secrets in an exported deployment.
fn ciphertexts(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if map.contains_key("4dabf18193072939515e22adb298388d") {
                if let Some(Value::String(c)) = map.get("ciphertext") {
                    found.push(c.clone());
                }
            }
            map.values().for_each(|v| ciphertexts(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| ciphertexts(v, found)),
        _ => {}
    }
}

/// The `secure:` values of a stack's config file.
fn secure_config_values(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter_map(|l| l.trim().strip_prefix("secure:"))
        .map(|v| v.trim().to_owned())
        .collect()
}

fn wait_for_exit(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("converge up did not finish");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_web_console_shows_stacks_a_live_update_resources_and_the_graph_without_secrets() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let scratch = Scratch::new(PROGRAM);
    let data = scratch.dir.path().join("service");
    let service = Service::start(&scratch.home, &data, "127.0.0.1:0");
    let (base, token) = (service.url.clone(), service.token.clone());
    let world = World {
        scratch,
        backend: Backend::Service(service),
        base,
        token,
    };
    let http = Http::new(&world.base);
    let org = "organization";

    // --- Stacks made by the binary: `dev` deployed (its gates open),
    // `live` to be deployed while the browser watches. ---
    let db_password = format!("db-{}", uuid::Uuid::new_v4().simple());
    let dir = world.scratch.dir.path().to_owned();
    let dev_gates = dir.join("gates-dev");
    world.init_stack("dev", &dev_gates, &db_password);
    std::fs::write(dev_gates.join("first"), "").unwrap();
    std::fs::write(dev_gates.join("second"), "").unwrap();
    world.converge(&["up", "--yes", "--stack", "dev"]);
    let password = world
        .converge(&[
            "stack",
            "output",
            "password",
            "--show-secrets",
            "--stack",
            "dev",
        ])
        .trim()
        .to_owned();
    let pet_name = world
        .converge(&["stack", "output", "petName", "--stack", "dev"])
        .trim()
        .to_owned();
    assert!(password.len() == 24 && !pet_name.is_empty());
    let live_gates = dir.join("gates-live");
    world.init_stack("live", &live_gates, &db_password);

    // The secrets no page may show: plaintexts, and the ciphertexts the
    // state and the config files hold.
    let export: Value =
        serde_json::from_str(&world.converge(&["stack", "export", "--stack", "dev"])).unwrap();
    let mut forbidden = vec![db_password.clone(), password.clone()];
    ciphertexts(&export, &mut forbidden);
    for stack in ["dev", "live"] {
        let file = world.scratch.project.join(format!("Pulumi.{stack}.yaml"));
        forbidden.extend(secure_config_values(&file));
    }
    assert!(forbidden.len() >= 5, "secrets to look for: {forbidden:?}");
    let mut seen: Vec<(String, String)> = Vec::new();

    // Another organization's stack: no token of this organization may
    // create one (or a token of another organization), so its paths are
    // refused by the organization check alone, whether it exists or not.
    let refused = http
        .post_json_status(
            &world.token,
            "/api/tokens",
            json!({ "name": "other", "organization": "other-org" }),
        )
        .await;
    assert_eq!(refused, 403, "a token of another organization is refused");

    // --- Login: no session goes to the login page; a wrong token is
    // refused; the right one starts a session. ---
    browser.goto(&format!("{}/", world.base)).await;
    browser.wait_for("form input#token").await;
    assert_eq!(browser.path().await, "/login");
    browser.screenshot("01-login").await;

    let wrong = format!("cvg-{}", "0".repeat(64));
    browser
        .wait_for("#token")
        .await
        .send_keys(&wrong)
        .await
        .unwrap();
    browser.click("#login").await;
    let refused = browser.text("#login-error").await;
    assert!(refused.contains("unknown or was revoked"), "{refused}");
    assert_eq!(
        browser.path().await,
        "/login",
        "the token never goes in a URL"
    );
    assert!(browser
        .client
        .get_named_cookie("converge_session")
        .await
        .is_err());
    browser.screenshot("02-login-refused").await;
    let (status, cookie) = http.login(&wrong, &[]).await;
    assert_eq!(
        (status, cookie.as_str()),
        (401, ""),
        "a wrong token gets no session"
    );
    let (status, _) = http
        .login(&world.token, &[("origin", "http://elsewhere.example")])
        .await;
    assert_eq!(
        status, 403,
        "a login form posted from another site is refused"
    );

    browser
        .wait_for("#token")
        .await
        .send_keys(&world.token)
        .await
        .unwrap();
    browser.click("#login").await;
    browser.wait_for("table#stacks").await;
    let path = browser.path().await;
    assert_eq!(path, "/");
    assert!(!path.contains(&world.token));
    let cookie = browser
        .client
        .get_named_cookie("converge_session")
        .await
        .unwrap();
    assert_eq!(cookie.http_only(), Some(true));
    assert_eq!(format!("{:?}", cookie.same_site()), "Some(Strict)");
    assert_eq!(cookie.path(), Some("/"));
    assert_ne!(
        cookie.value(),
        world.token,
        "the cookie holds a session id, not the token"
    );
    let session = cookie.value().to_owned();

    // --- The stack list: what GET /api/user/stacks answers. ---
    let (status, stacks, text) = http.api(&world.token, "/api/user/stacks").await;
    assert_eq!(status, 200, "{text}");
    seen.push(("GET /api/user/stacks".into(), text));
    let dev_summary = stacks["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stackName"] == "dev")
        .unwrap()
        .clone();
    let dev_count = dev_summary["resourceCount"].as_u64().unwrap();
    assert_eq!(
        dev_count, 8,
        "the stack, 5 resources, 2 providers: {dev_summary}"
    );
    let dev_row = r#"tr[data-stack="console/dev"]"#;
    assert_eq!(
        browser.text(&format!("{dev_row} td.num")).await,
        dev_count.to_string()
    );
    assert_eq!(browser.count(r#"tr[data-stack="console/live"]"#).await, 1);
    assert_eq!(
        browser.count(r#"tr[data-stack^="hidden/"]"#).await,
        0,
        "another organization's stacks are not listed"
    );
    browser.screenshot("03-stacks").await;
    seen.push(("/".into(), browser.source().await));

    // --- A running update, followed live. ---
    let mut up = world.up_in_background("live");
    let running_row = r#"tr[data-stack="console/live"] .badge.running"#;
    let deadline = Instant::now() + PATIENCE;
    loop {
        browser.goto(&format!("{}/", world.base)).await;
        browser.wait_for("table#stacks").await;
        if browser.count(running_row).await == 1 {
            break;
        }
        assert!(
            Instant::now() < deadline && up.try_wait().unwrap().is_none(),
            "the update never showed as running: {}",
            world.up_log("live")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    browser.screenshot("04-stacks-update-running").await;
    browser.click(r#"tr[data-stack="console/live"] a"#).await;
    browser.wait_for("#live-status.running").await;
    // A marker that a reload would lose: the page must update in place.
    browser
        .client
        .execute("window.convergeTestMarker = 'kept'; return null;", vec![])
        .await
        .unwrap();
    browser
        .wait_for(r#"#live-steps li[data-urn$="::pet"][data-status="created"]"#)
        .await;
    browser
        .wait_for(r#"#live-steps li[data-urn$="::first"][data-status="creating"]"#)
        .await;
    assert_eq!(
        browser
            .count(r#"#live-steps li[data-urn$="::second"]"#)
            .await,
        0,
        "second waits for first"
    );
    browser.screenshot("05-live-update-waiting").await;

    std::fs::write(live_gates.join("first"), "").unwrap();
    browser
        .wait_for(r#"#live-steps li[data-urn$="::first"][data-status="created"]"#)
        .await;
    browser
        .wait_for(r#"#live-steps li[data-urn$="::second"][data-status="creating"]"#)
        .await;
    browser.screenshot("06-live-update-advanced").await;

    std::fs::write(live_gates.join("second"), "").unwrap();
    let ended = browser
        .text(r#"#live[data-state="ended succeeded"] #live-status"#)
        .await;
    assert!(ended.contains("succeeded"), "{ended}");
    let marker = browser
        .client
        .execute("return window.convergeTestMarker || null;", vec![])
        .await
        .unwrap();
    assert_eq!(
        marker,
        json!("kept"),
        "the live view updated without a reload"
    );
    browser.screenshot("07-live-update-ended").await;
    seen.push(("live stack page".into(), browser.source().await));
    let status = wait_for_exit(&mut up);
    assert!(status.success(), "converge up: {}", world.up_log("live"));

    // --- A stack: outputs (secrets masked) and history. ---
    let dev_href = format!("/stacks/{org}/console/dev");
    browser.goto(&format!("{}{dev_href}", world.base)).await;
    browser.wait_for("#outputs").await;
    assert_eq!(
        browser.text(r#"tr[data-output="petName"] pre"#).await,
        pet_name
    );
    for secret in ["password", "dbPassword"] {
        assert_eq!(
            browser
                .text(&format!(r#"tr[data-output="{secret}"] .secret"#))
                .await,
            "[secret]"
        );
    }
    let history = browser.text("#history tbody tr").await;
    assert!(
        history.contains("update")
            && history.contains("succeeded")
            && history.contains("+6 created"),
        "{history}"
    );
    // Every column filled: Pulumi's integer-second times read as dates
    // and a duration, and the update's version.
    let started = browser.text("#history tbody tr td.started").await;
    assert!(
        started.len() == "2026-11-24 16:05:55 UTC".len() && started.ends_with(" UTC"),
        "{started}"
    );
    let took = browser.text("#history tbody tr td.duration").await;
    assert!(!took.is_empty(), "no duration in {history}");
    let version: u32 = browser
        .text("#history tbody tr td.version")
        .await
        .parse()
        .unwrap_or_else(|e| panic!("version: {e} in {history}"));
    assert!(version >= 1, "{history}");
    browser.screenshot("08-stack").await;
    seen.push((dev_href.clone(), browser.source().await));
    let (status, summary, text) = http
        .api(
            &world.token,
            &format!("/api/stacks/{org}/console/dev/summary"),
        )
        .await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(summary["outputs"]["password"], "[secret]");
    assert_eq!(summary["outputs"]["petName"], pet_name.as_str());
    assert_eq!(summary["activeUpdate"], Value::Null);
    seen.push(("summary".into(), text));
    let (_, _, text) = http
        .api(
            &world.token,
            &format!("/api/stacks/{org}/console/live/summary"),
        )
        .await;
    seen.push(("live summary".into(), text));

    // --- The resources, filtered in the page and by the API. ---
    browser.click("#tab-resources").await;
    browser.wait_for("#resources").await;
    let api_resources = format!("/api/stacks/{org}/console/dev/resources");
    let (_, resources, text) = http.api(&world.token, &api_resources).await;
    seen.push((api_resources.clone(), text));
    let resources = resources["resources"].as_array().unwrap().clone();
    assert_eq!(resources.len() as u64, dev_count);
    assert_eq!(browser.count("#resources tbody tr").await, resources.len());
    browser.screenshot("09-resources").await;
    browser
        .wait_for("#filter")
        .await
        .send_keys("RandomPet")
        .await
        .unwrap();
    assert_eq!(browser.text("#shown-count").await, "1");
    assert_eq!(browser.count("#resources tbody tr:not([hidden])").await, 1);
    assert_eq!(
        browser.text("#resources tbody tr:not([hidden]) a").await,
        "pet"
    );
    browser.screenshot("10-resources-filtered").await;
    browser
        .goto(&format!(
            "{}{dev_href}/resources?filter=command",
            world.base
        ))
        .await;
    browser.wait_for("#resources").await;
    // The two commands and their provider.
    assert_eq!(browser.count("#resources tbody tr").await, 3);
    let (_, filtered, _) = http
        .api(&world.token, &format!("{api_resources}?filter=command"))
        .await;
    assert_eq!(filtered["resources"].as_array().unwrap().len(), 3);
    seen.push(("resources?filter".into(), browser.source().await));

    // --- One resource: values masked, relations linked. ---
    browser
        .goto(&format!("{}{dev_href}/resources", world.base))
        .await;
    browser.click(r#"tr[data-name="keeper"] a"#).await;
    assert_eq!(browser.text("#resource-name").await, "keeper");
    assert_eq!(
        browser.text("#resource-type").await,
        "random:index/randomString:RandomString"
    );
    let keepers = browser.text(r#"#inputs tr[data-property="keepers"]"#).await;
    assert!(keepers.contains("[secret]"), "{keepers}");
    assert_eq!(browser.text("#resource-parent a").await, "console-dev");
    assert_eq!(browser.text("#resource-provider a").await, "default");
    browser.screenshot("11-resource").await;
    seen.push(("keeper".into(), browser.source().await));
    for r in &resources {
        let urn = r["urn"].as_str().unwrap();
        let path = format!(
            "{api_resources}/{}",
            urn.replace('%', "%25")
                .replace(':', "%3A")
                .replace('/', "%2F")
                .replace('$', "%24")
        );
        let (status, detail, text) = http.api(&world.token, &path).await;
        assert_eq!(status, 200, "{path}: {text}");
        assert_eq!(detail["urn"], urn);
        seen.push((path, text));
    }
    browser.click(r#"#resource-parent a"#).await;
    let children = browser.text("#children").await;
    for name in ["pet", "password", "keeper", "first", "second"] {
        assert!(children.contains(name), "{children}");
    }

    // --- The graph: an SVG with a node per resource, each a link. ---
    browser.click("#tab-graph").await;
    browser.wait_for("#graph svg").await;
    let api_graph = format!("/api/stacks/{org}/console/dev/graph");
    let (_, graph, text) = http.api(&world.token, &api_graph).await;
    seen.push((api_graph, text));
    let nodes = graph["nodes"].as_array().unwrap();
    assert_eq!(nodes.len() as u64, dev_count);
    assert_eq!(browser.count("#graph svg .node").await, nodes.len());
    for node in nodes {
        let urn = node["urn"].as_str().unwrap();
        assert_eq!(
            browser
                .count(&format!(r#"#graph svg .node[data-urn="{urn}"]"#))
                .await,
            1,
            "{urn}"
        );
    }
    let edges = graph["edges"].as_array().unwrap();
    assert!(
        edges
            .iter()
            .any(|e| e["kind"] == "dependency" && e["from"].as_str().unwrap().ends_with("::second")),
        "{edges:?}"
    );
    assert_eq!(
        browser.count("#graph svg .edge").await,
        edges.len(),
        "one drawn edge per relation"
    );
    browser.screenshot("12-graph").await;
    seen.push(("graph".into(), browser.source().await));
    browser
        .client
        .execute(
            r#"document.querySelector('#graph .node[data-urn$="::pet"]').dispatchEvent(new MouseEvent('click', {bubbles: true})); return null;"#,
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(browser.text("#resource-name").await, "pet");
    let dependents = browser.text("#dependents").await;
    assert!(dependents.contains("first"), "{dependents}");

    // --- Another organization's stack is refused, in the console and
    // in the API. ---
    browser
        .goto(&format!("{}/stacks/other-org/hidden/prod", world.base))
        .await;
    assert_eq!(browser.text("#error-status").await, "403 Forbidden");
    assert!(browser.text("#error-message").await.contains("other-org"));
    browser.screenshot("13-other-organization-refused").await;
    for path in [
        "/stacks/other-org/hidden/prod",
        "/stacks/other-org/hidden/prod/resources",
        "/stacks/other-org/hidden/prod/graph",
        "/stacks/other-org/hidden/prod/events",
    ] {
        let (status, _, _) = http.page(&session, path).await;
        assert_eq!(status, 403, "{path}");
    }
    let (status, _, _) = http
        .api(&world.token, "/api/stacks/other-org/hidden/prod/resources")
        .await;
    assert_eq!(status, 403);

    // --- No secret anywhere. ---
    for (page, text) in &seen {
        for secret in &forbidden {
            assert!(
                !text.contains(secret.as_str()),
                "{page} shows a secret ({secret}):\n{text}"
            );
        }
    }

    // --- Logging out ends the session, in the browser and the service. ---
    browser.click("#logout").await;
    browser.wait_for("form input#token").await;
    assert_eq!(browser.path().await, "/login");
    browser.goto(&format!("{}{dev_href}", world.base)).await;
    browser.wait_for("form input#token").await;
    assert_eq!(browser.path().await, "/login");
    let (status, location, _) = http.page(&session, &dev_href).await;
    assert_eq!((status, location.as_str()), (303, "/login"));
    browser.close().await;
}
