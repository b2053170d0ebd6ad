//! The console's organization pages over HTTP with a session: tokens
//! (revoked from the page, audited as the API's revoke), members and
//! roles, teams and the audit log; each refused (403) to a session whose
//! token the API would refuse, and a revoke posted from another site
//! refused.

use crate::common;

use reqwest::redirect::Policy;
use serde_json::json;

struct Console {
    client: reqwest::Client,
    base: String,
}

impl Console {
    /// A session for `token`: its cookie.
    async fn login(&self, token: &str) -> String {
        let resp = self
            .client
            .post(format!("{}/login", self.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("token={token}"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 303, "logged in");
        let cookie = resp.headers()["set-cookie"].to_str().unwrap();
        cookie.split(';').next().unwrap().to_owned()
    }

    async fn page(&self, cookie: &str, path: &str) -> (u16, String) {
        let resp = self
            .client
            .get(format!("{}{path}", self.base))
            .header("cookie", cookie)
            .send()
            .await
            .unwrap();
        (resp.status().as_u16(), resp.text().await.unwrap())
    }

    async fn api(
        &self,
        token: &str,
        method: reqwest::Method,
        path: &str,
        body: serde_json::Value,
    ) -> serde_json::Value {
        let resp = self
            .client
            .request(method, format!("{}{path}", self.base))
            .header("authorization", format!("token {token}"))
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        assert!(resp.status().is_success(), "{path}: {}", resp.status());
        serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap_or(serde_json::Value::Null)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_shows_tokens_members_teams_and_the_audit_log() {
    use reqwest::Method;
    let server = common::start(common::Storage::Sqlite).await.unwrap();
    let c = Console {
        client: reqwest::Client::builder()
            .redirect(Policy::none())
            .build()
            .unwrap(),
        base: server.url(),
    };
    let org = server.organization.clone();
    let admin = server.token.clone();
    c.api(
        &admin,
        Method::PUT,
        &format!("/api/orgs/{org}/members/dev"),
        json!({"role": "member"}),
    )
    .await;
    c.api(
        &admin,
        Method::PUT,
        &format!("/api/orgs/{org}/members/viewer"),
        json!({"role": "read-only"}),
    )
    .await;
    c.api(
        &admin,
        Method::PUT,
        &format!("/api/orgs/{org}/teams/payments"),
        json!({"members": ["dev"]}),
    )
    .await;
    let ci = c
        .api(
            &admin,
            Method::POST,
            "/api/tokens",
            json!({"name": "ci deploy", "member": "dev", "access": "write"}),
        )
        .await;
    let ci_secret = ci["token"].as_str().unwrap().to_owned();
    let viewer = c
        .api(
            &admin,
            Method::POST,
            "/api/tokens",
            json!({"name": "viewer", "member": "viewer"}),
        )
        .await;

    let session = c.login(&admin).await;
    let (status, tokens) = c.page(&session, "/tokens").await;
    assert_eq!(status, 200);
    assert!(
        tokens.contains("ci deploy") && tokens.contains("viewer"),
        "{tokens}"
    );
    assert!(
        !tokens.contains(&ci_secret),
        "no token's secret on the page"
    );
    let (_, members) = c.page(&session, "/members").await;
    assert!(
        members.contains("data-member=\"dev\"") && members.contains("read-only"),
        "{members}"
    );
    assert!(members.contains("payments"));
    let (_, teams) = c.page(&session, "/teams").await;
    assert!(teams.contains("data-team=\"payments\""), "{teams}");

    // Revoked from the page: refused from another site, done from ours.
    let id = ci["id"].as_str().unwrap();
    let revoke = format!("{}/tokens/{id}/revoke", c.base);
    let cross = c
        .client
        .post(&revoke)
        .header("cookie", &session)
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(cross.status(), 403);
    let done = c
        .client
        .post(&revoke)
        .header("cookie", &session)
        .header("origin", c.base.as_str())
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 303);
    let who = c
        .client
        .get(format!("{}/api/user", c.base))
        .header("authorization", format!("token {ci_secret}"))
        .send()
        .await
        .unwrap();
    assert_eq!(who.status(), 401, "the revoked token no longer works");

    let (status, audit) = c.page(&session, "/audit").await;
    assert_eq!(status, 200);
    for action in ["member.set", "team.set", "token.create", "token.revoke"] {
        assert!(
            audit.contains(&format!("data-action=\"{action}\"")),
            "{action}: {audit}"
        );
    }
    let (_, filtered) = c.page(&session, "/audit?action=token.revoke").await;
    assert_eq!(filtered.matches("data-action=").count(), 1, "{filtered}");
    assert!(!audit.contains(&ci_secret));

    // A read-only member sees the lists but not the audit log, and revokes
    // nothing of others'.
    let viewing = c.login(viewer["token"].as_str().unwrap()).await;
    assert_eq!(c.page(&viewing, "/members").await.0, 200);
    let (status, refused) = c.page(&viewing, "/audit").await;
    assert_eq!(status, 403, "{refused}");
    assert!(refused.contains("admin role"), "{refused}");
    let (_, own) = c.page(&viewing, "/tokens").await;
    assert!(
        !own.contains("ci deploy"),
        "a member sees its own tokens only"
    );
}
