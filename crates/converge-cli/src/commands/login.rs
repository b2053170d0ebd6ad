//! `converge login | logout | whoami`.

use anyhow::Result;

use crate::context::{now_rfc3339, open_backend, username, Context, DEFAULT_BACKEND_URL};

pub async fn login(
    ctx: &Context,
    url: Option<String>,
    local: bool,
    token: Option<String>,
) -> Result<()> {
    let url = match (url, local) {
        (Some(_), true) => anyhow::bail!("pass either a backend URL or --local, not both"),
        (Some(u), false) => u,
        (None, true) => DEFAULT_BACKEND_URL.to_owned(),
        (None, false) => match std::env::var("PULUMI_BACKEND_URL").ok().filter(|u| !u.is_empty()) {
            Some(u) => u,
            None => anyhow::bail!(
                "which backend? run `converge login file://DIR`, or `converge login --local` for {DEFAULT_BACKEND_URL}"
            ),
        },
    };
    if crate::remote::is_service_url(&url) {
        return crate::remote::login(ctx, &url, token).await;
    }
    if token.is_some() {
        anyhow::bail!("--token is for state services (http://HOST:PORT), not {url}");
    }
    // Opening checks that the URL is one Converge understands.
    let backend = open_backend(&url, &ctx.cwd)?;
    ctx.home.login(&url, &now_rfc3339())?;
    println!("Logged in to {} as {}", backend.url(), username());
    Ok(())
}

/// Which backend `converge logout` logs out of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogoutOf {
    /// The one logged in to.
    Current,
    /// This one (the current login too, if it is this one).
    Url(String),
    /// Every one.
    All,
}

pub fn logout(ctx: &Context, which: LogoutOf) -> Result<()> {
    match which {
        LogoutOf::Current => match ctx.home.logout()? {
            Some(url) => println!("Logged out of {url}"),
            None => println!("Not logged in; the default backend is {DEFAULT_BACKEND_URL}"),
        },
        LogoutOf::Url(url) => {
            if ctx.home.logout_of(&url)? {
                println!("Logged out of {url}");
            } else {
                println!("Not logged in to {url}");
            }
        }
        LogoutOf::All => {
            let urls = ctx.home.logout_all()?;
            if urls.is_empty() {
                println!("Not logged in to any backend");
            }
            for url in urls {
                println!("Logged out of {url}");
            }
        }
    }
    Ok(())
}

pub async fn whoami(ctx: &Context, verbose: bool, json: bool) -> Result<()> {
    let project = crate::project::Project::find(&ctx.cwd)?;
    let url = ctx.backend_url(project.as_ref())?;
    // A state service names the token and its organization; a
    // self-managed backend has the OS user and none.
    let (user, organizations) = match crate::remote::identify(&url).await? {
        Some(who) => (who.token_name, vec![who.organization]),
        None => (username(), Vec::new()),
    };
    if json {
        // Pulumi's shape: `user`, `url`, `organizations` (the SDKs read
        // all three).
        let out = serde_json::json!({
            "user": user,
            "url": url,
            "organizations": organizations,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    if verbose {
        println!("User: {user}");
        if !organizations.is_empty() {
            println!("Organizations: {}", organizations.join(", "));
        }
        println!("Backend URL: {url}");
    } else {
        println!("{user}");
    }
    Ok(())
}
