//! The console's session cookie and who a request comes from.
//!
//! The cookie holds only a random session id (`HttpOnly`, so scripts never
//! see it; `SameSite=Strict`, so other sites' pages never send it;
//! `Path=/`; `Secure` when a TLS-terminating proxy says the request came
//! over HTTPS). The database maps the id's SHA-256 to the token that
//! logged in, until it expires.

use std::time::Duration;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};

use converge_backend::StackRef;

use super::page::{self, Nav};
use crate::api::access::{authorize, Need, Params};
use crate::api::{stack_ref, AppState};
use crate::error::ApiError;
use crate::store::Caller;

/// The cookie's name.
pub(crate) const COOKIE: &str = "converge_session";
/// How long a session lasts.
pub(crate) const LIFETIME: Duration = Duration::from_secs(12 * 60 * 60);

/// The caller behind a request's session.
#[derive(Debug, Clone)]
pub(crate) struct Viewer {
    pub caller: Caller,
}

impl Viewer {
    pub fn nav(&self) -> Nav {
        Nav::of(&self.caller)
    }

    /// The stack a console path names, if the session's token may read
    /// it: the API's own check ([`crate::api::access::authorize`]).
    pub async fn stack(
        &self,
        state: &AppState,
        (org, project, stack): (String, String, String),
    ) -> Result<StackRef, ApiError> {
        let params: Params = [
            ("org".to_owned(), org.clone()),
            ("project".to_owned(), project.clone()),
            ("stack".to_owned(), stack.clone()),
        ]
        .into_iter()
        .collect();
        authorize(&state.store, &self.caller, Need::StackRead, &params).await?;
        stack_ref(&self.caller, (org, project, stack))
    }
}

impl FromRequestParts<AppState> for Viewer {
    /// Without a live session: to the login page.
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Viewer, Response> {
        let Some(id) = session_id(&parts.headers) else {
            return Err(to_login());
        };
        match state.store.session_caller(&id).await {
            Ok(caller) => Ok(Viewer { caller }),
            Err(e) if e.status == StatusCode::UNAUTHORIZED => Err(to_login()),
            Err(e) => Err(page::error(None, &e)),
        }
    }
}

fn to_login() -> Response {
    page::secure(Redirect::to("/login").into_response())
}

/// The session id the request's cookies carry, if any.
pub(crate) fn session_id(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, value)| *name == COOKIE && !value.is_empty())
        .map(|(_, value)| value.to_owned())
}

/// The `Set-Cookie` value that starts a session.
pub(crate) fn set_cookie(id: &str, headers: &HeaderMap) -> String {
    let secure = if over_https(headers) { "; Secure" } else { "" };
    format!(
        "{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
        LIFETIME.as_secs()
    )
}

/// The `Set-Cookie` value that ends it in the browser.
pub(crate) fn clear_cookie() -> String {
    format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0")
}

fn over_https(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("https"))
}

/// Whether a state-changing request comes from one of the console's own
/// pages: a browser says where a request comes from (`Sec-Fetch-Site`,
/// `Origin`); one that names another site is refused. A request without
/// either (not a browser's) carries no ambient cookie of a victim.
pub(crate) fn same_origin(headers: &HeaderMap) -> bool {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = text("sec-fetch-site") {
        if !matches!(site, "same-origin" | "none") {
            return false;
        }
    }
    let Some(origin) = text("origin") else {
        return true;
    };
    let Some((_, origin_host)) = origin.split_once("://") else {
        return false;
    };
    [text("x-forwarded-host"), text("host")]
        .into_iter()
        .flatten()
        .any(|host| host.eq_ignore_ascii_case(origin_host))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn the_session_cookie_is_found_among_others() {
        let h = headers(&[("cookie", "a=1; converge_session=cvs-abc; b=2")]);
        assert_eq!(session_id(&h).as_deref(), Some("cvs-abc"));
        assert_eq!(
            session_id(&headers(&[("cookie", "converge_session=")])),
            None
        );
        assert_eq!(session_id(&headers(&[])), None);
    }

    #[test]
    fn the_cookie_is_http_only_strict_and_secure_behind_https() {
        let plain = set_cookie("cvs-x", &headers(&[]));
        assert!(plain.contains("HttpOnly") && plain.contains("SameSite=Strict"));
        assert!(plain.contains("Path=/") && !plain.contains("Secure"));
        let tls = set_cookie("cvs-x", &headers(&[("x-forwarded-proto", "https")]));
        assert!(tls.ends_with("; Secure"));
    }

    #[test]
    fn cross_site_posts_are_recognised() {
        let host = ("host", "127.0.0.1:8080");
        assert!(same_origin(&headers(&[host])));
        assert!(same_origin(&headers(&[
            host,
            ("origin", "http://127.0.0.1:8080"),
            ("sec-fetch-site", "same-origin"),
        ])));
        assert!(!same_origin(&headers(&[
            host,
            ("origin", "http://evil.example")
        ])));
        assert!(!same_origin(&headers(&[host, ("origin", "null")])));
        assert!(!same_origin(&headers(&[
            host,
            ("sec-fetch-site", "cross-site")
        ])));
    }
}
