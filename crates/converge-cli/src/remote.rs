//! Backends on a Converge state service (`converge serve`), reached at
//! `http(s)://host:port` with an access token: from `PULUMI_ACCESS_TOKEN`,
//! else the one `converge login` stored in the home's credentials file.

use anyhow::{Context as _, Result};
use converge_backend::http::{normalize_service_url, HttpBackend, HttpBackendOptions, RetryPolicy};
use converge_backend::Backend;

use crate::context::{now_rfc3339, Context};
use crate::home::{Home, ServiceAccount};

/// Whether `url` names a state service.
pub fn is_service_url(url: &str) -> bool {
    url.starts_with("http://") || url.starts_with("https://")
}

fn env_token() -> Option<String> {
    std::env::var("PULUMI_ACCESS_TOKEN")
        .ok()
        .filter(|t| !t.is_empty())
}

/// The backend at a state service URL, with the token to use there.
pub fn open_service_backend(url: &str) -> Result<Box<dyn Backend>> {
    let url = normalize_service_url(url)?;
    let stored = Home::from_env()?.service_account(&url)?;
    let token = env_token()
        .or_else(|| stored.as_ref().map(|a| a.token.clone()))
        .with_context(|| {
            format!(
                "no access token for {url}: set PULUMI_ACCESS_TOKEN, or run \
                 `converge login {url} --token TOKEN`"
            )
        })?;
    // The organization `converge login` recorded for this token; a token
    // given only in PULUMI_ACCESS_TOKEN is asked for its own, as Pulumi
    // asks for the user's default organization.
    let organization = match stored.filter(|a| a.token == token) {
        Some(ServiceAccount {
            organization: Some(organization),
            ..
        }) => organization,
        _ => token_organization(&url, &token)?,
    };
    Ok(Box::new(HttpBackend::new(HttpBackendOptions {
        url,
        token,
        organization,
        retry: RetryPolicy::default(),
    })?))
}

/// The organization of `token` on the service at `url` (`whoami`), asked
/// on a thread of its own: backends are opened outside async code.
fn token_organization(url: &str, token: &str) -> Result<String> {
    let (url, token) = (url.to_owned(), token.to_owned());
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .context("cannot start the runtime that asks the service")?;
                let who = runtime
                    .block_on(HttpBackend::identify(&url, &token))
                    .with_context(|| {
                        format!("cannot ask {url} which organization the token is in")
                    })?;
                Ok(who.organization)
            })
            .join()
            .unwrap_or_else(|_| anyhow::bail!("asking {url} for the token's organization failed"))
    })
}

/// Who the token for `url` is, when `url` names a state service (`None`
/// for other backends).
pub async fn identify(url: &str) -> Result<Option<converge_backend::http::TokenIdentity>> {
    if !is_service_url(url) {
        return Ok(None);
    }
    let url = normalize_service_url(url)?;
    let stored = Home::from_env()?.service_account(&url)?;
    let token = env_token()
        .or_else(|| stored.map(|a| a.token))
        .with_context(|| format!("no access token for {url}: set PULUMI_ACCESS_TOKEN"))?;
    let who = HttpBackend::identify(&url, &token)
        .await
        .with_context(|| format!("cannot ask {url} who the token is"))?;
    Ok(Some(who))
}

/// `converge login http://…`: checks the token with the service and
/// stores it (the credentials file is owner-only).
pub async fn login(ctx: &Context, url: &str, token: Option<String>) -> Result<()> {
    let url = normalize_service_url(url)?;
    let token = token.or_else(env_token).with_context(|| {
        format!(
            "logging in to {url} needs an access token: pass --token or set PULUMI_ACCESS_TOKEN"
        )
    })?;
    let who = HttpBackend::identify(&url, &token)
        .await
        .with_context(|| format!("cannot log in to {url}"))?;
    ctx.home.login_service(
        &url,
        &now_rfc3339(),
        ServiceAccount {
            token,
            organization: Some(who.organization.clone()),
        },
    )?;
    println!(
        "Logged in to {url} as {} (organization {})",
        who.token_name, who.organization
    );
    Ok(())
}
