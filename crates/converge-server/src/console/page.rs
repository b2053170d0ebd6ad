//! What every page shares: rendering a template into a response with the
//! console's security headers, the error page, the header's navigation,
//! and the console's URLs.

use askama::Template;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use crate::error::ApiError;
use crate::store::Caller;

/// Scripts, styles and requests from this origin only; no inline script
/// or style, no framing.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
    style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; \
    base-uri 'none'; frame-ancestors 'none'";

/// The header's navigation: who is logged in.
#[derive(Debug, Clone)]
pub(crate) struct Nav {
    pub organization: String,
    pub token_name: String,
    pub member: String,
    pub role: &'static str,
}

impl Nav {
    pub fn of(caller: &Caller) -> Nav {
        Nav {
            organization: caller.organization.clone(),
            token_name: caller.token_name.clone(),
            member: caller.member.clone(),
            role: caller.role.as_str(),
        }
    }
}

/// Adds the headers every console response carries.
pub(crate) fn secure(mut response: Response) -> Response {
    let headers = response.headers_mut();
    let mut set = |name: header::HeaderName, value: &'static str| {
        headers.insert(name, HeaderValue::from_static(value));
    };
    set(header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY);
    set(header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(header::X_FRAME_OPTIONS, "DENY");
    // Not `no-referrer`: with it a browser sends `Origin: null` on the
    // console's own form posts, which [`super::session::same_origin`] refuses.
    set(header::REFERRER_POLICY, "same-origin");
    set(header::CACHE_CONTROL, "no-store");
    response
}

/// A rendered page.
pub(crate) fn render(status: StatusCode, page: &impl Template) -> Response {
    match page.render() {
        Ok(html) => secure(
            (
                status,
                [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                html,
            )
                .into_response(),
        ),
        Err(e) => secure(
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the page cannot be rendered: {e}"),
            )
                .into_response(),
        ),
    }
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage {
    nav: Option<Nav>,
    status: u16,
    reason: String,
    message: String,
}

/// The error page for a refused or failed request, with its status.
pub(crate) fn error(nav: Option<Nav>, e: &ApiError) -> Response {
    let page = ErrorPage {
        nav,
        status: e.status.as_u16(),
        reason: e.status.canonical_reason().unwrap_or("Error").to_owned(),
        message: e.message.clone(),
    };
    render(e.status, &page)
}

/// The page for a path the console does not serve.
pub(crate) fn not_found() -> Response {
    error(
        None,
        &ApiError::not_found("no_page", "There is no such page in the console."),
    )
}

/// Everything but unreserved characters (RFC 3986) is encoded.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

pub(crate) fn encode(text: &str) -> String {
    utf8_percent_encode(text, COMPONENT).to_string()
}

/// The console's URL of a stack (names are validated: no encoding needed,
/// encoded all the same).
pub(crate) fn stack_href(org: &str, project: &str, stack: &str) -> String {
    format!(
        "/stacks/{}/{}/{}",
        encode(org),
        encode(project),
        encode(stack)
    )
}

/// The console's URL of a resource page.
pub(crate) fn resource_href(stack_href: &str, urn: &str) -> String {
    format!("{stack_href}/resources/{}", encode(urn))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_urn_is_one_path_segment() {
        let href = resource_href(
            "/stacks/o/p/s",
            "urn:pulumi:s::p::a:b/c:D$e:f::my name/x?y#z",
        );
        assert_eq!(
            href,
            "/stacks/o/p/s/resources/urn%3Apulumi%3As%3A%3Ap%3A%3Aa%3Ab%2Fc%3AD%24e%3Af%3A%3Amy%20name%2Fx%3Fy%23z"
        );
    }
}
