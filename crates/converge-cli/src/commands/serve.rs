//! `converge serve`: runs the HTTP state service.

use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, Result};
use converge_server::{Server, ServerOptions};

use crate::args::ServeArgs;
use crate::atomic_write::write_private_atomically;
use crate::context::Context;
use crate::interrupts::Response;

pub async fn run(ctx: &Context, args: ServeArgs) -> Result<()> {
    let mut options = match (&args.database_url, &args.data_dir) {
        (Some(url), _) => ServerOptions::new(url.clone()),
        (None, Some(dir)) => ServerOptions::sqlite_in(&ctx.cwd.join(dir))?,
        (None, None) => ServerOptions::sqlite_in(&ctx.home.dir().join("server"))?,
    };
    if let Some(secs) = args.lease_seconds {
        options.lease_duration = Duration::from_secs(secs.max(1));
    }
    if let Some(mib) = args.max_body_mib {
        options.max_body_bytes = mib.saturating_mul(1 << 20);
    }
    if let Some(rate) = args.rate_limit {
        options.rate_limit = (rate > 0.0).then_some(converge_server::RateLimit {
            per_second: rate,
            burst: rate * 2.0,
        });
    }
    if let Some(secs) = args.request_timeout {
        options.request_timeout = Duration::from_secs(secs.max(1));
    }
    for proxy in &args.trusted_proxy {
        options
            .trusted_proxies
            .push(converge_server::parse_trusted_proxy(proxy)?);
    }
    let server = Server::open(options).await?;
    if let Some(file) = &args.token_file {
        bootstrap(&server, &ctx.cwd.join(file), &args.organization).await?;
    }
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let addr = listener.local_addr()?;
    println!("Converge state service listening on http://{addr}");
    println!("Web console: http://{addr}/ (log in with an access token)");
    std::io::stdout().flush()?;
    // Ctrl-C or SIGTERM: stop accepting, finish the requests in flight
    // (a rolling restart of replicas loses nothing), then exit.
    ctx.interrupts.respond_with(Response::Drain);
    let cancel = ctx.interrupts.cancellation().clone();
    server
        .serve_until(listener, async move { cancel.cancelled().await })
        .await
        .context("the service stopped")?;
    println!("Converge state service stopped");
    Ok(())
}

/// Makes sure `file` holds an admin token of `organization`: keeps a valid
/// one, else creates one and writes it (mode 0600).
async fn bootstrap(server: &Server, file: &Path, organization: &str) -> Result<()> {
    if let Ok(existing) = std::fs::read_to_string(file) {
        let existing = existing.trim();
        if let Ok(caller) = server.authenticate(existing).await {
            if caller.is_org_admin() && caller.organization == organization {
                println!("Using the admin token in {}", file.display());
                return Ok(());
            }
        }
    }
    let token = server
        .create_admin_token(organization, "bootstrap admin")
        .await?;
    write_private_atomically(file, format!("{}\n", token.token).as_bytes())?;
    println!(
        "Wrote an admin token of organization {organization} to {}",
        file.display()
    );
    Ok(())
}
