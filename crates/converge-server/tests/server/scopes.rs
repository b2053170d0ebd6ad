//! Who may call what, route by route: every route of `ROUTES` (so a new
//! route cannot be missed) called with a token of every kind — each role
//! (admin, member, read-only) with each scope (organization, team, stack)
//! and each access (read, write), a member outside the stack's team,
//! scopes that miss the stack, an expired and a revoked token — each
//! getting exactly the answer this test's own model says: the route's
//! success, 403, or 401. The model classifies routes by method and path
//! itself and checks that the route table agrees. Afterwards the audit
//! log holds exactly the writes the test made (action and token, one
//! record each) and no secret: no token, lease token or secret value.

use crate::common;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use converge_server::{Need, Route, ROUTES};
use converge_state::checkpoint::{write_checkpoint, StackCheckpoint};
use converge_state::journal::base_digest;
use converge_state::secrets::SecretsMode;
use converge_state::Snapshot;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

/// A marker standing for a secret value in the state and config.
const SECRET: &str = "v1:MARKER-secret-ciphertext";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Admin,
    Member,
    ReadOnly,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ScopeKind {
    Org,
    /// The team that owns the stack under test.
    Team,
    /// The stack under test.
    Stack,
    /// Another team.
    OtherTeam,
    /// Another stack.
    OtherStack,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Profile {
    Token {
        role: Role,
        /// The member is in the team owning the stack (admins and
        /// read-only members are not in it).
        in_team: bool,
        scope: ScopeKind,
        write: bool,
    },
    Expired,
    Revoked,
}

fn profiles() -> Vec<Profile> {
    let mut all = Vec::new();
    for role in [Role::Admin, Role::Member, Role::ReadOnly] {
        for scope in [ScopeKind::Org, ScopeKind::Team, ScopeKind::Stack] {
            for write in [false, true] {
                all.push(Profile::Token {
                    role,
                    in_team: role == Role::Member,
                    scope,
                    write,
                });
            }
        }
    }
    for scope in [ScopeKind::Org, ScopeKind::Team] {
        // A member outside the stack's team.
        all.push(Profile::Token {
            role: Role::Member,
            in_team: false,
            scope,
            write: true,
        });
    }
    for scope in [ScopeKind::OtherTeam, ScopeKind::OtherStack] {
        for role in [Role::Admin, Role::Member] {
            all.push(Profile::Token {
                role,
                in_team: role == Role::Member,
                scope,
                write: true,
            });
        }
    }
    all.push(Profile::Expired);
    all.push(Profile::Revoked);
    all
}

/// What a route needs, as this test reads its method and path.
fn classify(route: &Route) -> Need {
    let (m, p) = (route.method, route.path);
    let under_stack = p.starts_with("/api/stacks/{org}/{project}/{stack}");
    match (m, p) {
        (_, "/api/openapi.json") => Need::Public,
        ("get", "/api/user" | "/api/user/stacks" | "/api/stacks/{org}") => Need::Token,
        ("get", "/api/tokens") => Need::OrgRead,
        (_, p) if p.starts_with("/api/tokens") => Need::OrgWrite,
        ("get", "/api/orgs/{org}/auditlog") => Need::AdminRead,
        // What every update's client reads, whatever its token's scope.
        (
            "get",
            "/api/orgs/{org}/policypacks/required"
            | "/api/orgs/{org}/policypacks/{name}/versions/{version}",
        ) => Need::Token,
        ("get", p) if p.starts_with("/api/orgs/") => Need::OrgRead,
        (_, p) if p.starts_with("/api/orgs/") => Need::AdminWrite,
        ("put", p) if p.ends_with("/{stack}/team") => Need::AdminWrite,
        ("post", "/api/stacks/{org}/{project}") => Need::StackCreate,
        ("get", _) if under_stack => Need::StackRead,
        (_, _) if under_stack => Need::StackWrite,
        _ => panic!("this test does not know the route {m} {p}: classify it"),
    }
}

/// Whether `profile` may call a route that needs `need`.
fn allowed(need: Need, profile: Profile) -> bool {
    let Profile::Token {
        role,
        in_team,
        scope,
        write,
    } = profile
    else {
        return need == Need::Public;
    };
    let org = scope == ScopeKind::Org;
    let reaches = matches!(scope, ScopeKind::Org | ScopeKind::Team | ScopeKind::Stack);
    match need {
        Need::Public | Need::Token => true,
        Need::OrgRead => org,
        Need::OrgWrite => org && write,
        Need::AdminRead => org && role == Role::Admin,
        Need::AdminWrite => org && role == Role::Admin && write,
        Need::StackCreate => {
            write
                && role != Role::ReadOnly
                && match scope {
                    ScopeKind::Org => true,
                    // `dev` is in the stack's team, `outsider` in the other.
                    ScopeKind::Team => role == Role::Admin || in_team,
                    ScopeKind::OtherTeam => {
                        role == Role::Admin || (role == Role::Member && !in_team)
                    }
                    ScopeKind::Stack | ScopeKind::OtherStack => false,
                }
        }
        Need::StackRead => reaches,
        Need::StackWrite => {
            reaches
                && write
                && match role {
                    Role::Admin => true,
                    Role::Member => in_team,
                    Role::ReadOnly => false,
                }
        }
    }
}

/// The answer an allowed call gets (status, and error code for a
/// refusal that is the route's own).
fn success(route: &Route) -> (StatusCode, Option<&'static str>) {
    let (m, p) = (route.method, route.path);
    let suffix = p
        .strip_prefix("/api/stacks/{org}/{project}/{stack}")
        .unwrap_or("");
    match (m, suffix) {
        ("get", "/resources/{urn}") => (StatusCode::NOT_FOUND, Some("resource_not_found")),
        ("get", "/checkpoint/previous") => (StatusCode::NO_CONTENT, None),
        ("get", _) => (StatusCode::OK, None),
        (
            "post",
            "/rename" | "/update/{updateID}/renew_lease" | "/update/{updateID}/journalentries",
        ) => (StatusCode::OK, None),
        ("delete", "/locks") => (StatusCode::OK, None),
        ("post", "/history" | "/updates" | "/journal") => (StatusCode::CREATED, None),
        ("post", "")
            if p == "/api/tokens"
                || p == "/api/stacks/{org}/{project}"
                || p == "/api/orgs/{org}/policypacks" =>
        {
            (StatusCode::CREATED, None)
        }
        _ => (StatusCode::NO_CONTENT, None),
    }
}

struct World {
    server: common::TestServer,
    client: reqwest::Client,
    admin: String,
    /// Token secret to id, for every token the test holds.
    ids: HashMap<String, String>,
    /// (action, token id) of every audited write that succeeded.
    expected: Vec<(String, String)>,
    /// Every token and lease token handed out: none may be in the log.
    secrets: Vec<String>,
    counter: usize,
}

struct Reply {
    status: StatusCode,
    body: Value,
}

impl World {
    fn org(&self) -> &str {
        &self.server.organization
    }

    fn fresh(&mut self, prefix: &str) -> String {
        self.counter += 1;
        format!("{prefix}{}", self.counter)
    }

    /// Sends `method path` (a concrete path of `route`) and records an
    /// audited success.
    async fn send(
        &mut self,
        route: &Route,
        path: &str,
        token: Option<&str>,
        lease: Option<&(String, String)>,
        body: Option<Vec<u8>>,
    ) -> Reply {
        let method = Method::from_bytes(route.method.to_uppercase().as_bytes()).unwrap();
        let mut req = self
            .client
            .request(method, format!("{}{path}", self.server.url()));
        if let Some(t) = token {
            req = req.header("authorization", format!("token {t}"));
        }
        if let Some((update, lease)) = lease {
            req = req
                .header("x-converge-update-id", update)
                .header("x-converge-lease-token", lease);
        }
        if let Some(b) = body {
            req = req.body(b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status();
        let body = if route.streams && status.is_success() {
            Value::Null
        } else {
            serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap_or(Value::Null)
        };
        if status.is_success() {
            if let (Some(action), Some(token)) = (route.audit, token) {
                self.expected
                    .push((action.to_owned(), self.ids[token].clone()));
            }
        }
        Reply { status, body }
    }

    /// A call as the admin, which must succeed.
    async fn admin_call(&mut self, method: &str, template: &str, path: &str, body: Value) -> Value {
        let route = *ROUTES
            .iter()
            .find(|r| r.method == method && r.path == template)
            .unwrap();
        let admin = self.admin.clone();
        let body = (!body.is_null()).then(|| body.to_string().into_bytes());
        let reply = self.send(&route, path, Some(&admin), None, body).await;
        assert!(
            reply.status.is_success(),
            "{method} {path}: {} {}",
            reply.status,
            reply.body
        );
        reply.body
    }

    /// A token made by the admin for `member`.
    async fn mint(
        &mut self,
        member: &str,
        scope: Value,
        write: bool,
        expires_in: Option<i64>,
    ) -> String {
        let mut body = json!({
            "name": self.fresh("token-"),
            "member": member,
            "access": if write { "write" } else { "read" },
        });
        for (k, v) in scope.as_object().unwrap() {
            body[k] = v.clone();
        }
        if let Some(secs) = expires_in {
            body["expiresInSeconds"] = json!(secs);
        }
        let made = self
            .admin_call("post", "/api/tokens", "/api/tokens", body)
            .await;
        let token = made["token"].as_str().unwrap().to_owned();
        self.ids
            .insert(token.clone(), made["id"].as_str().unwrap().to_owned());
        self.secrets.push(token.clone());
        token
    }

    /// A new stack of team `payments` with a checkpoint holding a secret.
    async fn stack(&mut self) -> (String, Vec<u8>) {
        let name = self.fresh("s");
        let checkpoint = checkpoint(&name);
        let org = self.org().to_owned();
        let b64 = base64_encode(&checkpoint);
        self.admin_call(
            "post",
            "/api/stacks/{org}/{project}",
            &format!("/api/stacks/{org}/p"),
            json!({ "stackName": name, "checkpoint": b64 }),
        )
        .await;
        self.admin_call(
            "put",
            "/api/stacks/{org}/{project}/{stack}/team",
            &format!("/api/stacks/{org}/p/{name}/team"),
            json!({ "team": "payments" }),
        )
        .await;
        (name, checkpoint)
    }
}

impl World {
    /// Publishes version 1.0.0 of pack `name`, as the admin.
    async fn publish_pack(&mut self, name: &str) {
        let org = self.org().to_owned();
        let route = *ROUTES
            .iter()
            .find(|r| r.method == "post" && r.path == "/api/orgs/{org}/policypacks")
            .unwrap();
        let admin = self.admin.clone();
        let reply = self
            .send(
                &route,
                &format!("/api/orgs/{org}/policypacks?name={name}&version=1.0.0"),
                Some(&admin),
                None,
                Some(pack_archive()),
            )
            .await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    }

    /// Stops requiring every pack (a call under test may have required
    /// one), so that the next updates start without it.
    async fn require_no_packs(&mut self) {
        let org = self.org().to_owned();
        let required = self
            .admin_call(
                "get",
                "/api/orgs/{org}/policypacks/required",
                &format!("/api/orgs/{org}/policypacks/required"),
                Value::Null,
            )
            .await;
        for pack in required["requiredPolicyPacks"].as_array().unwrap().clone() {
            let name = pack["name"].as_str().unwrap();
            self.admin_call(
                "delete",
                "/api/orgs/{org}/policypacks/{name}/required",
                &format!("/api/orgs/{org}/policypacks/{name}/required"),
                Value::Null,
            )
            .await;
        }
    }
}

/// A minimal pack archive.
fn pack_archive() -> Vec<u8> {
    crate::policy_packs::pack_archive(&[("PulumiPolicy.yaml", "runtime: python\n")])
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn checkpoint(stack: &str) -> Vec<u8> {
    let cp = StackCheckpoint {
        stack: stack.to_owned(),
        config: Some(json!({ "p:password": { "secure": SECRET } }).to_string()),
        latest: Some(Snapshot::empty("2024-05-01T10:00:00Z")),
    };
    write_checkpoint(&cp, SecretsMode::Opaque).unwrap()
}

fn member_of(role: Role, in_team: bool) -> &'static str {
    match (role, in_team) {
        (Role::Admin, _) => "boss",
        (Role::Member, true) => "dev",
        (Role::Member, false) => "outsider",
        (Role::ReadOnly, _) => "viewer",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_answers_every_kind_of_token_as_it_should() {
    let (mut options, dir) = common::options(common::Storage::Sqlite).unwrap();
    options.rate_limit = None;
    let server = common::start_with(options, dir).await;
    let admin = server.token.clone();
    let user: Value = serde_json::from_slice(
        &reqwest::Client::new()
            .get(format!("{}/api/user", server.url()))
            .header("authorization", format!("token {admin}"))
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(user["role"], "admin");
    let mut w = World {
        client: reqwest::Client::new(),
        admin: admin.clone(),
        ids: HashMap::new(),
        expected: Vec::new(),
        secrets: vec![admin.clone()],
        counter: 0,
        server,
    };
    let tokens: Value = w
        .admin_call("get", "/api/tokens", "/api/tokens", Value::Null)
        .await;
    let admin_id = tokens["tokens"][0]["id"].as_str().unwrap().to_owned();
    w.ids.insert(admin.clone(), admin_id);
    let org = w.org().to_owned();

    // The organization: members of each role, a team owning the stacks
    // under test (with `dev`), another team (with `outsider`).
    for (member, role) in [
        ("boss", "admin"),
        ("dev", "member"),
        ("outsider", "member"),
        ("viewer", "read-only"),
    ] {
        w.admin_call(
            "put",
            "/api/orgs/{org}/members/{member}",
            &format!("/api/orgs/{org}/members/{member}"),
            json!({ "role": role }),
        )
        .await;
    }
    for (team, members) in [("payments", json!(["dev"])), ("other", json!(["outsider"]))] {
        w.admin_call(
            "put",
            "/api/orgs/{org}/teams/{team}",
            &format!("/api/orgs/{org}/teams/{team}"),
            json!({ "members": members }),
        )
        .await;
    }
    let (other_stack, _) = w.stack().await;
    let expired = w.mint("dev", json!({}), true, Some(1)).await;
    let revoked = w.mint("dev", json!({}), true, None).await;
    let revoked_id = w.ids[&revoked].clone();
    w.admin_call(
        "delete",
        "/api/tokens/{tokenID}",
        &format!("/api/tokens/{revoked_id}"),
        Value::Null,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1100)).await;

    let mut checked = 0;
    for route in ROUTES {
        assert_eq!(
            classify(route),
            route.need,
            "{} {}: the route table and this test disagree on what it needs",
            route.method,
            route.path
        );
        for profile in profiles() {
            let (stack, cp) = w.stack().await;
            let token = match profile {
                Profile::Expired => expired.clone(),
                Profile::Revoked => revoked.clone(),
                Profile::Token {
                    role,
                    in_team,
                    scope,
                    write,
                } => {
                    let scope = match scope {
                        ScopeKind::Org => json!({}),
                        ScopeKind::Team => json!({ "scope": "team", "team": "payments" }),
                        ScopeKind::OtherTeam => json!({ "scope": "team", "team": "other" }),
                        ScopeKind::Stack => {
                            json!({ "scope": "stack", "stack": format!("p/{stack}") })
                        }
                        ScopeKind::OtherStack => {
                            json!({ "scope": "stack", "stack": format!("p/{other_stack}") })
                        }
                    };
                    w.mint(member_of(role, in_team), scope, write, None).await
                }
            };
            let (path, lease, body) = fixture(&mut w, route, &stack, &cp, &token).await;
            let reply = w
                .send(route, &path, Some(&token), lease.as_ref(), body)
                .await;
            w.require_no_packs().await;
            let context = format!(
                "{} {} as {profile:?}: {} {}",
                route.method, route.path, reply.status, reply.body
            );
            if matches!(profile, Profile::Expired | Profile::Revoked) && route.need != Need::Public
            {
                assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{context}");
                assert_eq!(reply.body["code"], "unauthorized", "{context}");
                if profile == Profile::Expired {
                    let message = reply.body["message"].as_str().unwrap_or_default();
                    assert!(message.contains("expired"), "{context}");
                }
            } else if allowed(route.need, profile) {
                let (status, code) = success(route);
                assert_eq!(reply.status, status, "{context}");
                if let Some(code) = code {
                    assert_eq!(reply.body["code"], code, "{context}");
                }
            } else {
                assert_eq!(reply.status, StatusCode::FORBIDDEN, "{context}");
                assert_eq!(reply.body["code"], "forbidden", "{context}");
            }
            checked += 1;
        }
    }
    assert_eq!(checked, ROUTES.len() * profiles().len());

    // Listings show what the scope reaches: a stack-scoped token lists
    // its stack alone.
    let (stack, _) = w.stack().await;
    let pinned = w
        .mint(
            "dev",
            json!({ "scope": "stack", "stack": format!("p/{stack}") }),
            false,
            None,
        )
        .await;
    let list_route = ROUTES
        .iter()
        .find(|r| r.path == "/api/stacks/{org}")
        .unwrap();
    let listed = w
        .send(
            list_route,
            &format!("/api/stacks/{org}"),
            Some(&pinned),
            None,
            None,
        )
        .await;
    let names: Vec<&str> = listed.body["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stackName"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec![stack.as_str()]);

    // The audit log: one record per audited write of this test, each
    // with its token; the service's own records have no token.
    let mut logged: Vec<(String, String)> = Vec::new();
    let mut text = String::new();
    let mut continuation: Option<String> = None;
    loop {
        let path = match &continuation {
            Some(c) => format!("/api/orgs/{org}/auditlog?limit=500&continuationToken={c}"),
            None => format!("/api/orgs/{org}/auditlog?limit=500"),
        };
        let route = ROUTES
            .iter()
            .find(|r| r.path == "/api/orgs/{org}/auditlog")
            .unwrap();
        let admin = w.admin.clone();
        let page = w.send(route, &path, Some(&admin), None, None).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        text.push_str(&page.body.to_string());
        for r in page.body["records"].as_array().unwrap() {
            assert!(!r["time"].as_str().unwrap().is_empty());
            assert!(r["peer"].as_str().unwrap().starts_with("127.0.0.1:"), "{r}");
            logged.push((
                r["action"].as_str().unwrap().to_owned(),
                r["tokenID"].as_str().unwrap().to_owned(),
            ));
        }
        continuation = page.body["continuationToken"].as_str().map(str::to_owned);
        if continuation.is_none() {
            break;
        }
    }
    let count = |v: &[(String, String)]| {
        let mut m: BTreeMap<(String, String), usize> = BTreeMap::new();
        for k in v {
            *m.entry(k.clone()).or_default() += 1;
        }
        m
    };
    assert_eq!(
        count(&logged),
        count(&w.expected),
        "the audit log holds each write once"
    );
    assert!(
        w.expected.len() > 500,
        "{} audited writes",
        w.expected.len()
    );
    for secret in w.secrets.iter().chain([&SECRET.to_owned()]) {
        assert!(
            !text.contains(secret.as_str()),
            "the audit log holds a secret"
        );
    }
}

/// The concrete path, lease and body of a call of `route` on `stack`
/// that succeeds for a caller allowed to make it; sets up what the call
/// needs (an update holding the lease, an open journal, a member or
/// team to remove, a token to revoke) as the admin.
async fn fixture(
    w: &mut World,
    route: &Route,
    stack: &str,
    cp: &[u8],
    token: &str,
) -> (String, Option<(String, String)>, Option<Vec<u8>>) {
    let org = w.org().to_owned();
    let base = format!("/api/stacks/{org}/p/{stack}");
    let suffix = route
        .path
        .strip_prefix("/api/stacks/{org}/{project}/{stack}")
        .map(str::to_owned);
    let mut lease = None;
    if let Some(s) = &suffix {
        if s.starts_with("/update/")
            || s == "/journal/commit"
            || (s == "/journal" && route.method != "post")
        {
            // An update of the admin's holding the lease, with its journal open;
            // the call carries the lease.
            let started = w
                .admin_call(
                    "post",
                    "/api/stacks/{org}/{project}/{stack}/updates",
                    &format!("{base}/updates"),
                    json!({ "kind": "update", "lockInfo": {
                        "pid": 1, "username": "u", "hostname": "h",
                        "timestamp": "2024-05-01T10:00:00Z" } }),
                )
                .await;
            let update = started["updateID"].as_str().unwrap().to_owned();
            let secret = started["token"].as_str().unwrap().to_owned();
            w.secrets.push(secret.clone());
            let route = *ROUTES
                .iter()
                .find(|r| r.method == "post" && r.path.ends_with("/{stack}/journal"))
                .unwrap();
            let admin = w.admin.clone();
            let opened = w
                .send(
                    &route,
                    &format!("{base}/journal"),
                    Some(&admin),
                    Some(&(update.clone(), secret.clone())),
                    Some(
                        json!({ "baseDigest": base_digest(cp) })
                            .to_string()
                            .into_bytes(),
                    ),
                )
                .await;
            assert_eq!(opened.status, StatusCode::CREATED, "{}", opened.body);
            lease = Some((update, secret));
        }
    }
    let update = lease.as_ref().map(|l| l.0.clone()).unwrap_or_default();
    let urn = format!("urn:pulumi:{stack}::p::pulumi:pulumi:Stack::p-{stack}");
    let path = route
        .path
        .replace("{org}", &org)
        .replace("{project}", "p")
        .replace("{stack}", stack)
        .replace("{updateID}", &update)
        .replace("{urn}", &urn.replace(':', "%3A"));
    let body = match (route.method, suffix.as_deref(), route.path) {
        (_, _, "/api/tokens") if route.method == "post" => Some(json!({ "name": "made" })),
        ("post", None, "/api/stacks/{org}/{project}") => {
            Some(json!({ "stackName": w.fresh("created") }))
        }
        ("put", None, p) if p.ends_with("/members/{member}") => Some(json!({ "role": "member" })),
        ("put", None, p) if p.ends_with("/teams/{team}") => Some(json!({ "members": ["dev"] })),
        ("post", Some("/rename"), _) => Some(json!({ "newName": w.fresh("renamed") })),
        ("put", Some("/team"), _) => Some(json!({ "team": "other" })),
        ("put", Some("/checkpoint"), _) => return (path, lease, Some(checkpoint("changed"))),
        ("post", Some("/history"), _) => Some(json!({
            "kind": "update",
            "record": json!({ "kind": "update", "result": "succeeded" }).to_string(),
        })),
        ("post", Some("/updates"), _) => Some(json!({ "kind": "update", "lockInfo": {
            "pid": 2, "username": "u", "hostname": "h", "timestamp": "2024-05-01T10:00:00Z" } })),
        ("post", Some("/journal"), _) => Some(json!({ "baseDigest": base_digest(cp) })),
        ("post", Some(s), _) if s.ends_with("/journalentries") => {
            Some(json!({ "entries": [{ "sequenceID": 1, "entry": "{}" }] }))
        }
        ("put", Some("/tags"), _) => Some(json!({ "tags": { "owner": "MARKER-tag-value" } })),
        _ => None,
    };
    // Policy packs: a fresh pack published (and, to disable it, required)
    // first.
    let (path, body) = if route.path.starts_with("/api/orgs/{org}/policypacks") {
        let name = w.fresh("pack");
        if route.method != "post" {
            w.publish_pack(&name).await;
        }
        if route.method == "delete" && route.path.ends_with("/required") {
            w.admin_call(
                "put",
                "/api/orgs/{org}/policypacks/{name}/required",
                &format!("/api/orgs/{org}/policypacks/{name}/required"),
                json!({ "version": "1.0.0" }),
            )
            .await;
        }
        let path = path.replace("{name}", &name).replace("{version}", "1.0.0");
        match route.method {
            "post" => {
                let path = format!("{path}?name={name}&version=1.0.0");
                return (path, lease, Some(pack_archive()));
            }
            "put" => (path, Some(json!({ "version": "1.0.0" }))),
            _ => (path, None),
        }
    } else {
        (path, body)
    };
    // Names the call removes, made first.
    let path = if route.path.ends_with("/members/{member}") {
        let member = w.fresh("person");
        if route.method == "delete" {
            w.admin_call(
                "put",
                "/api/orgs/{org}/members/{member}",
                &format!("/api/orgs/{org}/members/{member}"),
                json!({ "role": "read-only" }),
            )
            .await;
        }
        path.replace("{member}", &member)
    } else if route.path.ends_with("/teams/{team}") {
        let team = w.fresh("team");
        if route.method == "delete" {
            w.admin_call(
                "put",
                "/api/orgs/{org}/teams/{team}",
                &format!("/api/orgs/{org}/teams/{team}"),
                json!({ "members": [] }),
            )
            .await;
        }
        path.replace("{team}", &team)
    } else if route.path == "/api/tokens/{tokenID}" {
        // A token of the caller's member, which any caller allowed the
        // route may revoke.
        let member = w.member_of_token(token).await;
        let victim = w.mint(&member, json!({}), false, None).await;
        path.replace("{tokenID}", &w.ids[&victim].clone())
    } else {
        path
    };
    (path, lease, body.map(|b| b.to_string().into_bytes()))
}

impl World {
    /// The member a token stands for (the admin's for a token that no
    /// longer authenticates).
    async fn member_of_token(&mut self, token: &str) -> String {
        let tokens = self
            .admin_call("get", "/api/tokens", "/api/tokens", Value::Null)
            .await;
        let id = &self.ids[token];
        tokens["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id.as_str())
            .map(|t| t["member"].as_str().unwrap().to_owned())
            .unwrap()
    }
}
