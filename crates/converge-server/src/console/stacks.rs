//! `GET /`: the stacks of the session's organization — what
//! `GET /api/user/stacks` answers.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use super::page::{self, stack_href, Nav};
use super::session::Viewer;
use crate::api::summaries::{self, StackSummary};
use crate::api::AppState;

/// One row of the list.
struct Row {
    project: String,
    stack: String,
    href: String,
    last_update: String,
    resources: usize,
    /// The running update, as `kind by holder`.
    running: Option<String>,
}

impl From<StackSummary> for Row {
    fn from(s: StackSummary) -> Row {
        Row {
            href: stack_href(&s.org, &s.project, &s.stack),
            last_update: readable_time(&s.last_update_time),
            resources: s.resource_count,
            running: s
                .active_update
                .map(|a| format!("{} by {}", a.kind, a.holder)),
            project: s.project,
            stack: s.stack,
        }
    }
}

#[derive(Template)]
#[template(path = "stacks.html")]
struct StacksPage {
    nav: Option<Nav>,
    organization: String,
    rows: Vec<Row>,
}

pub(crate) async fn page(State(state): State<AppState>, viewer: Viewer) -> Response {
    let org = viewer.caller.organization.clone();
    match summaries::list(&state.store, &org).await {
        Ok(stacks) => page::render(
            StatusCode::OK,
            &StacksPage {
                nav: Some(viewer.nav()),
                organization: org,
                rows: stacks.into_iter().map(Row::from).collect(),
            },
        ),
        Err(e) => page::error(Some(viewer.nav()), &e),
    }
}

/// An RFC 3339 time as people read it: `2024-05-01 10:00:00 UTC`.
pub(crate) fn readable_time(rfc3339: &str) -> String {
    match rfc3339.strip_suffix('Z') {
        Some(t) => format!("{} UTC", t.replacen('T', " ", 1)),
        None => rfc3339.replacen('T', " ", 1),
    }
}
