//! `GET /`: the stacks of the session's organization — what
//! `GET /api/user/stacks` answers.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use super::page::{self, stack_href, Nav};
use super::session::Viewer;
use crate::api::summaries::{self, ActiveUpdateJson, StackSummary};
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

/// A running update as a line: `update by user@host (pid N), started …`.
pub(crate) fn running(a: &ActiveUpdateJson) -> String {
    if a.started_at.is_empty() {
        format!("{} by {}", a.kind, a.holder)
    } else {
        format!(
            "{} by {}, started {}",
            a.kind,
            a.holder,
            readable_time(&a.started_at)
        )
    }
}

impl From<StackSummary> for Row {
    fn from(s: StackSummary) -> Row {
        Row {
            href: stack_href(&s.org, &s.project, &s.stack),
            last_update: readable_time(&s.last_update_time),
            resources: s.resource_count,
            running: s.active_update.map(|a| running(&a)),
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
    match summaries::list(
        &state.store,
        &viewer.caller,
        None,
        summaries::SUMMARY_PAGE_MAX,
    )
    .await
    {
        Ok((stacks, _)) => page::render(
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

/// An RFC 3339 time as people read it, in UTC to the second:
/// `2024-05-01 10:00:00 UTC` (text that is no such time, as it is).
pub(crate) fn readable_time(rfc3339: &str) -> String {
    time::OffsetDateTime::parse(rfc3339, &time::format_description::well_known::Rfc3339)
        .ok()
        .and_then(readable)
        .unwrap_or_else(|| rfc3339.to_owned())
}

/// `t` in UTC to the second: `2026-11-24 16:05:55 UTC`.
pub(crate) fn readable(t: time::OffsetDateTime) -> Option<String> {
    const FORMAT: &[time::format_description::FormatItem<'_>] =
        time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second] UTC");
    t.to_offset(time::UtcOffset::UTC).format(FORMAT).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_in_utc_to_the_second() {
        assert_eq!(
            readable_time("2026-11-24T16:05:55.810291574Z"),
            "2026-11-24 16:05:55 UTC"
        );
        assert_eq!(
            readable_time("2026-11-24T18:05:55+02:00"),
            "2026-11-24 16:05:55 UTC"
        );
        assert_eq!(readable_time(""), "");
    }
}
