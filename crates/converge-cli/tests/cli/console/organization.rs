//! The console's organization pages in headless Chromium, on a real
//! `converge serve`: an admin logs in, sees the tokens, members and
//! roles, teams, revokes a token with its button (which then no longer
//! authenticates), and finds the revocation in the audit log, filtered;
//! a read-only member's session is refused the audit log.

use serde_json::{json, Value};

use super::browser::Browser;
use crate::common::service::Service;

async fn api(base: &str, token: &str, method: reqwest::Method, path: &str, body: Value) -> Value {
    let resp = reqwest::Client::new()
        .request(method, format!("{base}{path}"))
        .header("authorization", format!("token {token}"))
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{path}: {}", resp.status());
    serde_json::from_str(&resp.text().await.unwrap()).unwrap_or(Value::Null)
}

async fn login(browser: &Browser, base: &str, token: &str) {
    browser.goto(&format!("{base}/login")).await;
    browser
        .wait_for("#token")
        .await
        .send_keys(token)
        .await
        .unwrap();
    browser.click("#login").await;
    browser.wait_for("table#stacks, p.empty").await;
}

#[tokio::test(flavor = "current_thread")]
async fn the_console_shows_tokens_roles_teams_and_the_audit_log() {
    use reqwest::Method;
    let Some(browser) = Browser::start().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let service = Service::start(&home, &dir.path().join("service"), "127.0.0.1:0");
    let (base, admin) = (service.url.clone(), service.token.clone());
    let org = "organization";
    api(
        &base,
        &admin,
        Method::PUT,
        &format!("/api/orgs/{org}/members/dev"),
        json!({"role": "member"}),
    )
    .await;
    api(
        &base,
        &admin,
        Method::PUT,
        &format!("/api/orgs/{org}/members/viewer"),
        json!({"role": "read-only"}),
    )
    .await;
    api(
        &base,
        &admin,
        Method::PUT,
        &format!("/api/orgs/{org}/teams/payments"),
        json!({"members": ["dev"]}),
    )
    .await;
    let ci = api(
        &base,
        &admin,
        Method::POST,
        "/api/tokens",
        json!({"name": "ci-deploy", "member": "dev"}),
    )
    .await;
    let viewer = api(
        &base,
        &admin,
        Method::POST,
        "/api/tokens",
        json!({"name": "viewer-token", "member": "viewer", "access": "read"}),
    )
    .await;
    let ci_secret = ci["token"].as_str().unwrap().to_owned();

    login(&browser, &base, &admin).await;
    browser.click("#nav-members").await;
    let dev_role = browser.text("tr[data-member='dev'] td.role").await;
    assert_eq!(dev_role, "member");
    assert_eq!(
        browser.text("tr[data-member='viewer'] td.role").await,
        "read-only"
    );
    assert_eq!(
        browser.text("tr[data-member='dev'] td.teams").await,
        "payments"
    );
    browser.screenshot("20-members").await;
    browser.click("#nav-teams").await;
    assert_eq!(
        browser.text("tr[data-team='payments'] td.members").await,
        "dev"
    );
    browser.screenshot("21-teams").await;

    browser.click("#nav-tokens").await;
    let id = ci["id"].as_str().unwrap();
    let row = format!("tr[data-token='{id}']");
    assert_eq!(browser.text(&format!("{row} td.state")).await, "active");
    assert!(
        !browser.source().await.contains(&ci_secret),
        "no secret on the page"
    );
    browser.screenshot("22-tokens").await;
    browser.click(&format!("{row} button.revoke-button")).await;
    browser.wait_for("table#tokens").await;
    assert_eq!(browser.text(&format!("{row} td.state")).await, "revoked");
    let who = reqwest::Client::new()
        .get(format!("{base}/api/user"))
        .header("authorization", format!("token {ci_secret}"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        who.status().as_u16(),
        401,
        "the revoked token no longer works"
    );

    browser.click("#nav-audit").await;
    browser.wait_for("table#audit").await;
    assert!(browser.count("tr[data-action='token.revoke']").await >= 1);
    browser
        .wait_for("#filter-action")
        .await
        .send_keys("member.set")
        .await
        .unwrap();
    browser.click("#audit-filter button").await;
    browser.wait_for("table#audit").await;
    assert_eq!(browser.count("tr[data-action='member.set']").await, 2);
    assert_eq!(browser.count("tr[data-action='token.revoke']").await, 0);
    browser.screenshot("23-audit-log").await;

    // A read-only member's session: the audit log is refused.
    browser.click("#logout").await;
    login(&browser, &base, viewer["token"].as_str().unwrap()).await;
    browser.goto(&format!("{base}/audit")).await;
    assert!(browser.text("#error-message").await.contains("admin role"));
    browser.screenshot("24-audit-refused").await;
    browser.close().await;
    drop(service);
}
