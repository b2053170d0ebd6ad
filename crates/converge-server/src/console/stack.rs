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
use super::stacks::{readable, readable_time, running};
use crate::api::summaries::{self, StackDetail};
use crate::api::AppState;
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
    version: String,
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
    let stack = viewer.stack(state, path).await?;
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
        let stack = viewer.stack(&state, path).await?;
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
    let start = record.get("startTime").and_then(time_of);
    let end = record.get("endTime").and_then(time_of);
    HistoryRow {
        version: record
            .get("version")
            .and_then(Value::as_i64)
            .map(|v| v.to_string())
            .unwrap_or_default(),
        kind: h.kind.clone().unwrap_or_else(|| text("kind").to_owned()),
        result: if converge_backend::is_cancelled(&record) {
            "cancelled".to_owned()
        } else {
            text("result").to_owned()
        },
        started: start.and_then(readable).unwrap_or_default(),
        duration: match (start, end) {
            // Whole seconds (Pulumi's records) say nothing finer.
            (Some(start), Some(end))
                if record["startTime"].is_number()
                    && record["endTime"].is_number()
                    && (end - start).whole_seconds() < 10 =>
            {
                match (end - start).whole_seconds().max(0) {
                    0 => "<1s".to_owned(),
                    s => format!("{s}s"),
                }
            }
            (Some(start), Some(end)) => duration(start, end),
            _ => String::new(),
        },
        changes: record
            .get("resourceChanges")
            .and_then(Value::as_object)
            .map(changes)
            .unwrap_or_default(),
        message: text("message").to_owned(),
    }
}

/// A history record's time: integer Unix seconds (as Pulumi and
/// Converge write them), or RFC 3339 text (older records).
fn time_of(v: &Value) -> Option<OffsetDateTime> {
    match v {
        Value::Number(n) => OffsetDateTime::from_unix_timestamp(n.as_i64()?).ok(),
        Value::String(s) => OffsetDateTime::parse(s, &Rfc3339).ok(),
        _ => None,
    }
}

/// `1m 05s` from `start` to `end`.
fn duration(start: OffsetDateTime, end: OffsetDateTime) -> String {
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
        let at = |s: &str| OffsetDateTime::parse(s, &Rfc3339).unwrap();
        assert_eq!(
            duration(at("2024-05-01T10:00:00Z"), at("2024-05-01T10:01:05Z")),
            "1m 05s"
        );
        assert_eq!(
            duration(at("2024-05-01T10:00:00Z"), at("2024-05-01T10:00:00Z")),
            "<0.1s"
        );
        assert_eq!(
            duration(at("2024-05-01T10:00:00Z"), at("2024-05-01T10:00:04.25Z")),
            "4.2s"
        );
        let m = serde_json::json!({"create": 3, "same": 2, "update": 0});
        assert_eq!(changes(m.as_object().unwrap()), "+3 created, 2 unchanged");
    }

    fn row(record: Value) -> HistoryRow {
        history_row(&HistoryRecord {
            kind: Some("update".to_owned()),
            recorded_at: 0,
            record: record.to_string(),
        })
    }

    #[test]
    fn history_rows_read_unix_seconds_and_rfc3339_times() {
        let r = row(serde_json::json!({
            "kind": "update", "startTime": 1_700_000_000, "endTime": 1_700_000_065,
            "version": 3, "result": "succeeded", "resourceChanges": {"create": 2}
        }));
        assert_eq!(r.version, "3");
        assert_eq!(r.started, "2023-11-14 22:13:20 UTC");
        assert_eq!(r.duration, "1m 05s");
        assert_eq!(r.changes, "+2 created");
        let quick = row(serde_json::json!({"startTime": 1_700_000_000, "endTime": 1_700_000_000}));
        assert_eq!(quick.duration, "<1s");
        let four = row(serde_json::json!({"startTime": 1_700_000_000, "endTime": 1_700_000_004}));
        assert_eq!(four.duration, "4s");
        let older = row(serde_json::json!({
            "kind": "update", "startTime": "2023-11-14T22:13:20Z",
            "endTime": "2023-11-14T22:13:24.5Z", "result": "failed"
        }));
        assert_eq!(older.version, "");
        assert_eq!(older.started, "2023-11-14 22:13:20 UTC");
        assert_eq!(older.duration, "4.5s");
        let blank = row(serde_json::json!({"kind": "update", "startTime": null}));
        assert_eq!((blank.started.as_str(), blank.duration.as_str()), ("", ""));
    }
}
