//! Policy packs required by the state service, through the `converge`
//! binary: a real pack written with PyPI's `pulumi-policy`
//! (`policy/strings_pack.py`) published with `converge policy publish`
//! and enabled for the organization; then updates whose client names no
//! pack run it anyway. A mandatory violation stops the update (the
//! resource is not created, the state keeps its resources) and the
//! violation is read back from the service; configured advisory, the
//! pack warns and the update goes on; a raw API client that does not run
//! the pack cannot start an update, nor end one as succeeded without
//! reporting it. `converge import` runs the pack on what it adopts.

use crate::common;

use common::service::Service;

use serde_json::{json, Value};

const PY_PACK: &str = include_str!("policy/strings_pack.py");

const SHORT: &str = "name: yamlproj
runtime: yaml
resources:
  short:
    type: random:index/randomString:RandomString
    properties:
      length: 4
";

/// Calls the service's API with `token`: status and JSON body.
fn api(method: &str, url: &str, token: &str, body: Option<Value>) -> (u16, Value) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = reqwest::Client::new();
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut req = client
            .request(method, url)
            .header("authorization", format!("token {token}"));
        if let Some(b) = body {
            req = req
                .header("content-type", "application/json")
                .body(b.to_string());
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let bytes = resp.bytes().await.unwrap();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    })
}

fn run(scratch: &common::Scratch, args: &[&str]) -> std::process::Output {
    let mut cmd = scratch.command("pw");
    cmd.env_remove("PULUMI_BACKEND_URL")
        .env_remove("PULUMI_ACCESS_TOKEN")
        .args(args);
    cmd.output().unwrap()
}

fn ok(scratch: &common::Scratch, args: &[&str]) -> String {
    let out = run(scratch, args);
    assert!(
        out.status.success(),
        "converge {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn fails(scratch: &common::Scratch, args: &[&str]) -> String {
    let out = run(scratch, args);
    assert!(!out.status.success(), "converge {args:?} should fail");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The resources' names in the stack's state, as the service exports it.
fn resource_names(service: &Service) -> Vec<String> {
    let (status, export) = api(
        "GET",
        &format!(
            "{}/api/stacks/organization/yamlproj/dev/export",
            service.url
        ),
        &service.token,
        None,
    );
    assert_eq!(status, 200, "{export}");
    export["deployment"]["resources"]
        .as_array()
        .map(|rs| {
            rs.iter()
                .filter_map(|r| r["urn"].as_str())
                .filter_map(|u| u.rsplit("::").next())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The policy record of the stack's last finished update.
fn last_update_policies(service: &Service) -> Value {
    let (status, log) = api(
        "GET",
        &format!(
            "{}/api/orgs/organization/auditlog?action=update.finish&limit=1",
            service.url
        ),
        &service.token,
        None,
    );
    assert_eq!(status, 200, "{log}");
    let update = log["records"][0]["detail"]["updateID"].as_str().unwrap();
    let (status, policies) = api(
        "GET",
        &format!(
            "{}/api/stacks/organization/yamlproj/dev/update/{update}/policies",
            service.url
        ),
        &service.token,
        None,
    );
    assert_eq!(status, 200, "{policies}");
    policies
}

#[test]
fn a_pack_the_organization_requires_runs_in_updates_that_name_none() {
    let Some(venv) = common::python::venv() else {
        return;
    };
    let scratch = common::Scratch::new(SHORT);
    let data = scratch.dir.path().join("service");
    let service = Service::start(&scratch.home, &data, "127.0.0.1:0");
    ok(
        &scratch,
        &["login", &service.url, "--token", &service.token],
    );
    ok(&scratch, &["stack", "init", "dev"]);

    // The pack, published: its name and version are the pack's own.
    let pack = scratch.dir.path().join("py-policies");
    std::fs::create_dir_all(&pack).unwrap();
    std::fs::write(
        pack.join("PulumiPolicy.yaml"),
        format!(
            "runtime:\n  name: python\n  options:\n    virtualenv: {}\nversion: 1.2.0\n",
            venv.display()
        ),
    )
    .unwrap();
    std::fs::write(pack.join("__main__.py"), PY_PACK).unwrap();
    let out = ok(
        &scratch,
        &["policy", "publish", &pack.display().to_string()],
    );
    assert!(out.contains("Published strings@1.2.0"), "{out}");
    // Publishing the same pack again changes nothing.
    ok(
        &scratch,
        &["policy", "publish", &pack.display().to_string()],
    );
    let out = ok(&scratch, &["policy", "ls"]);
    assert!(out.contains("strings") && out.contains("1.2.0"), "{out}");

    // Not yet required: the update runs no pack.
    ok(&scratch, &["policy", "enable", "strings", "1.2.0"]);
    let listed = ok(&scratch, &["policy", "ls", "--json"]);
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed[0]["required"], true, "{listed}");

    // Required: an update that names no pack is stopped by its mandatory
    // policy; the resource is not created.
    let before = resource_names(&service);
    let out = fails(&scratch, &["up", "--yes"]);
    assert!(
        out.contains("strings") && out.contains("min-length") && out.contains("short"),
        "{out}"
    );
    assert!(out.contains("length 4 is below 8"), "{out}");
    let after = resource_names(&service);
    assert_eq!(before, after, "the state keeps its resources");
    assert!(!after.contains(&"short".to_owned()), "{after:?}");
    // The service holds the violation the client reported.
    let policies = last_update_policies(&service);
    assert_eq!(policies["required"][0]["name"], "strings", "{policies}");
    let violations = policies["report"]["violations"].as_array().unwrap();
    assert!(
        violations.iter().any(|v| v["policyName"] == "min-length"
            && v["enforcementLevel"] == "mandatory"
            && v["urn"].as_str().unwrap_or_default().ends_with("::short")),
        "{policies}"
    );
    // A preview fails as well.
    let out = fails(&scratch, &["preview"]);
    assert!(out.contains("min-length"), "{out}");

    // `converge import` runs the required pack on what it adopts: an
    // object that breaks a mandatory policy is not adopted...
    const STRING: &str = "random:index/randomString:RandomString";
    let out = fails(&scratch, &["import", STRING, "adopted", "abcd", "--yes"]);
    assert!(
        out.contains("min-length") && out.contains("length 4 is below 8"),
        "{out}"
    );
    assert!(!resource_names(&service).contains(&"adopted".to_owned()));
    // ...one that keeps the policies is, and the service holds the report.
    ok(
        &scratch,
        &[
            "import",
            STRING,
            "adopted",
            "abcdefghijkl",
            "--protect=false",
            "--yes",
        ],
    );
    assert!(resource_names(&service).contains(&"adopted".to_owned()));
    let policies = last_update_policies(&service);
    assert_eq!(policies["required"][0]["name"], "strings", "{policies}");
    assert!(
        policies["report"]["packs"][0]["name"] == "strings",
        "{policies}"
    );

    // Configured advisory by the organization, the policy warns and the
    // update goes on.
    let config = scratch.dir.path().join("advisory.json");
    std::fs::write(&config, json!({ "min-length": "advisory" }).to_string()).unwrap();
    ok(
        &scratch,
        &[
            "policy",
            "enable",
            "strings",
            "1.2.0",
            "--config",
            &config.display().to_string(),
        ],
    );
    let out = ok(&scratch, &["up", "--yes"]);
    assert!(
        out.contains("min-length") && out.contains("advisory"),
        "{out}"
    );
    assert!(resource_names(&service).contains(&"short".to_owned()));
    let policies = last_update_policies(&service);
    assert!(
        policies["report"]["violations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["policyName"] == "min-length" && v["enforcementLevel"] == "advisory"),
        "{policies}"
    );

    // A state edit runs no program and no analyzer: the required pack is
    // not asked of it, here or for a raw API client naming that kind.
    let export: Value = serde_json::from_str(&ok(&scratch, &["stack", "export"])).unwrap();
    let short = export["deployment"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|r| r["urn"].as_str().filter(|u| u.ends_with("::short")))
        .unwrap()
        .to_owned();
    ok(&scratch, &["state", "protect", &short, "--yes"]);
    let export: Value = serde_json::from_str(&ok(&scratch, &["stack", "export"])).unwrap();
    assert!(
        export["deployment"]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["urn"] == short.as_str() && r["protect"] == true),
        "{export}"
    );
    ok(&scratch, &["state", "unprotect", &short, "--yes"]);

    // A client that does not run the pack cannot start an update...
    let updates = format!(
        "{}/api/stacks/organization/yamlproj/dev/updates",
        service.url
    );
    let lock_info = json!({ "pid": 1, "username": "u", "hostname": "h",
                            "timestamp": "2024-05-01T10:00:00Z" });
    let (status, refused) = api(
        "POST",
        &updates,
        &service.token,
        Some(json!({ "kind": "update", "lockInfo": lock_info })),
    );
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["code"], "policy_packs_required");
    // ...nor, claiming the pack, end one as succeeded without its report.
    let digest = policies["required"][0]["digest"].clone();
    let (status, started) = api(
        "POST",
        &updates,
        &service.token,
        Some(json!({ "kind": "update", "lockInfo": lock_info,
                     "policyPacks": [{ "name": "strings", "version": "1.2.0", "digest": digest }] })),
    );
    assert_eq!(status, 201, "{started}");
    let update = started["updateID"].as_str().unwrap();
    let complete = format!(
        "{}/api/stacks/organization/yamlproj/dev/update/{update}/complete",
        service.url
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let status = runtime.block_on(async {
        reqwest::Client::new()
            .post(&complete)
            .header("authorization", format!("token {}", service.token))
            .header("x-converge-lease-token", started["token"].as_str().unwrap())
            .header("content-type", "application/json")
            .body(json!({ "status": "succeeded" }).to_string())
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    });
    assert_eq!(status, 409, "completion without the report is refused");

    // Disabled, updates run no pack of the organization's.
    let (status, _) = api(
        "DELETE",
        &format!("{}/api/stacks/organization/yamlproj/dev/locks", service.url),
        &service.token,
        None,
    );
    assert!(status < 300);
    ok(&scratch, &["policy", "disable", "strings"]);
    ok(&scratch, &["destroy", "--yes"]);
}
