//! A stack's page — its summary and outputs (`GET …/summary`), its update
//! history (`GET …/history`) and a live view of the running update, which
//! follows `…/events` (the API's `GET …/journal/events`) in the browser.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use converge_backend::StackRef;
use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::page::{self, stack_href, Nav};
use super::session::Viewer;
use super::stacks::{readable_time, running};
use crate::api::summaries::{self, StackDetail};
use crate::api::{stack_ref, AppState};
use crate::error::ApiError;
use crate::store::HistoryRecord;

/// How many updates the page lists.
const HISTORY_LIMIT: i64 = 25;

pub(crate) struct OutputRow {
    pub name: String,
    pub value: String,
    pub secret: bool,
}

struct HistoryRow {
    kind: String,
    result: String,
    started: String,
    duration: String,
    changes: String,
    message: String,
}

#[derive(Template)]
#[template(path = "stack.html")]
struct StackPage {
    nav: Option<Nav>,
    project: String,
    stack: String,
    href: String,
    last_update: String,
    resource_count: usize,
    running: Option<String>,
    outputs: Vec<OutputRow>,
    history: Vec<HistoryRow>,
}

/// The stack a console path names, checked as the API checks it.
pub(crate) async fn open(
    state: &AppState,
    viewer: &Viewer,
    path: (String, String, String),
) -> Result<(StackRef, StackDetail), ApiError> {
    let stack = stack_ref(&viewer.caller, path)?;
    let info = state.store.get_stack(&stack).await?;
    let detail = summaries::describe(&state.store, &info).await?;
    Ok((stack, detail))
}

pub(crate) async fn page(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(path): Path<(String, String, String)>,
) -> Response {
    let built = async {
        let (stack, detail) = open(&state, &viewer, path).await?;
        let history = state
            .store
            .list_history(&stack, Some(HISTORY_LIMIT))
            .await?;
        Ok::<_, ApiError>((stack, detail, history))
    }
    .await;
    let (stack, detail, history) = match built {
        Ok(b) => b,
        Err(e) => return page::error(Some(viewer.nav()), &e),
    };
    let href = stack_href(&stack.organization, &stack.project, &stack.stack);
    let s = detail.summary;
    let page = StackPage {
        nav: Some(viewer.nav()),
        project: stack.project,
        stack: stack.stack,
        last_update: readable_time(&s.last_update_time),
        resource_count: s.resource_count,
        running: s.active_update.as_ref().map(running),
        outputs: output_rows(&detail.outputs),
        history: history.iter().map(history_row).collect(),
        href,
    };
    page::render(StatusCode::OK, &page)
}

/// `GET …/events`: the journal's event stream, for the live view.
pub(crate) async fn events(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(path): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let checked = async {
        let stack = stack_ref(&viewer.caller, path)?;
        state.store.get_stack(&stack).await?;
        Ok::<_, ApiError>(stack)
    }
    .await;
    match checked {
        Ok(stack) => crate::api::journal_events(state.store.clone(), stack, &headers),
        Err(e) => page::error(Some(viewer.nav()), &e),
    }
}

/// Output rows: strings as they are, other values as JSON.
pub(crate) fn output_rows(outputs: &serde_json::Map<String, Value>) -> Vec<OutputRow> {
    outputs
        .iter()
        .map(|(name, v)| OutputRow {
            name: name.clone(),
            secret: v.as_str() == Some(crate::api::masked::SECRET),
            value: match v {
                Value::String(s) => s.clone(),
                other => serde_json::to_string_pretty(other).unwrap_or_default(),
            },
        })
        .collect()
}

fn history_row(h: &HistoryRecord) -> HistoryRow {
    let record: Value = serde_json::from_str(&h.record).unwrap_or(Value::Null);
    let text = |key: &str| record.get(key).and_then(Value::as_str).unwrap_or("");
    let start = text("startTime");
    let end = text("endTime");
    HistoryRow {
        kind: h.kind.clone().unwrap_or_else(|| text("kind").to_owned()),
        result: text("result").to_owned(),
        started: readable_time(start),
        duration: duration(start, end),
        changes: record
            .get("resourceChanges")
            .and_then(Value::as_object)
            .map(changes)
            .unwrap_or_default(),
        message: text("message").to_owned(),
    }
}

/// `1m 05s` between two RFC 3339 times (empty if either is missing).
fn duration(start: &str, end: &str) -> String {
    let (Ok(start), Ok(end)) = (
        OffsetDateTime::parse(start, &Rfc3339),
        OffsetDateTime::parse(end, &Rfc3339),
    ) else {
        return String::new();
    };
    let millis = (end - start).whole_milliseconds().max(0);
    let secs = i64::try_from(millis / 1000).unwrap_or(i64::MAX);
    match secs {
        0 if millis < 100 => "<0.1s".to_owned(),
        s if s < 10 => format!("{}.{}s", s, (millis % 1000) / 100),
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m {:02}s", s / 60, s % 60),
        s => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// `+3 created, 2 unchanged` from a `resourceChanges` object.
fn changes(map: &serde_json::Map<String, Value>) -> String {
    let mut parts = Vec::new();
    for (op, n) in map {
        let Some(n) = n.as_u64().filter(|n| *n > 0) else {
            continue;
        };
        let part = match op.as_str() {
            "create" => format!("+{n} created"),
            "update" => format!("~{n} updated"),
            "delete" => format!("-{n} deleted"),
            "replace" => format!("+-{n} replaced"),
            "same" => format!("{n} unchanged"),
            "read" => format!("{n} read"),
            "import" => format!("={n} imported"),
            "refresh" => format!("{n} refreshed"),
            other => format!("{n} {other}"),
        };
        parts.push(part);
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_changes_read_naturally() {
        assert_eq!(
            duration("2024-05-01T10:00:00Z", "2024-05-01T10:01:05Z"),
            "1m 05s"
        );
        assert_eq!(
            duration("2024-05-01T10:00:00Z", "2024-05-01T10:00:00Z"),
            "<0.1s"
        );
        assert_eq!(
            duration("2024-05-01T10:00:00Z", "2024-05-01T10:00:04.25Z"),
            "4.2s"
        );
        assert_eq!(duration("", "2024-05-01T10:00:00Z"), "");
        let m = serde_json::json!({"create": 3, "same": 2, "update": 0});
        assert_eq!(changes(m.as_object().unwrap()), "+3 created, 2 unchanged");
    }
}
