//! A stack's update as it happens: a server-sent event stream that
//! follows the journal of the update holding the stack's live lease.
//! The service has no notification between its processes (several may
//! share one PostgreSQL), so the stream polls the database: the lease,
//! then the journal entries after the last one sent.
//!
//! Events (each `data` is JSON):
//! - `idle`: no update is running when the stream starts;
//! - `update`: an update started (or was running when the stream
//!   started): `updateID`, `kind`, `startedAt`, `holder`;
//! - `step`: a journal entry of that update: `sequence`, `kind` (the
//!   entry's), `status` (`creating`, `created`, `failed`, …), and the
//!   resource's `urn`, `type` and `name` when the entry names it;
//! - `end`: the update ended: `updateID`, `status` (how its lease ended:
//!   `succeeded` when released, `cancelled`, `expired`, …) and, when the
//!   client recorded the update in the history meanwhile, the record's
//!   `result` (`succeeded`, `failed`) and `resourceChanges`;
//! - `gone`: the stack no longer exists; the stream ends.
//!
//! Event ids are `updateID:sequence`, so a reconnecting `EventSource`
//! (`Last-Event-ID`) resumes after the last entry it saw. No event
//! carries a value: only URNs, types and names.
//!
//! A client compacts its journal as soon as its last step ends, which may
//! be sooner than the next poll: the last entries are then gone. When the
//! history says the update succeeded, every step it began succeeded, so
//! the stream sends a `step` for each one still open (`sequence` null)
//! before `end`.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::Path;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use converge_backend::StackRef;
use converge_state::journal::{entry_from_json, JournalEntry, JournalEntryKind};
use converge_state::secrets::SecretsMode;
use futures_util::Stream;
use serde_json::{json, Value};

use super::{stack_ref, St};
use crate::error::ApiError;
use crate::store::{Caller, Store};

/// How often the stream looks for news.
const POLL: Duration = Duration::from_millis(300);
/// How often an idle stream sends a comment, so proxies keep it open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// `GET …/journal/events`.
pub(crate) async fn route(
    state: St,
    caller: Caller,
    Path(path): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let stack = stack_ref(&caller, path)?;
    // 404 now, rather than a stream that says `gone` at once.
    state.store.get_stack(&stack).await?;
    Ok(stream_response(state.store.clone(), stack, &headers))
}

/// The event stream of `stack` as a response, resuming after the
/// request's `Last-Event-ID` if it names an entry.
pub(crate) fn stream_response(store: Store, stack: StackRef, headers: &HeaderMap) -> Response {
    let resume = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|id| {
            let (update, seq) = id.rsplit_once(':')?;
            Some((update.to_owned(), seq.parse().ok()?))
        });
    Sse::new(follow(store, stack, resume))
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response()
}

/// What the stream knows of one operation of the journal.
#[derive(Debug, Clone)]
struct Operation {
    label: Option<&'static str>,
    urn: Option<String>,
    type_token: Option<String>,
    /// Its Begin was sent and its end was not.
    open: bool,
}

struct Follower {
    store: Store,
    stack: StackRef,
    /// The update being followed.
    update: Option<String>,
    /// When it started, in seconds since the epoch.
    update_started: i64,
    /// The last sequence ID sent of its journal.
    last_seq: i64,
    operations: HashMap<u64, Operation>,
    queue: VecDeque<Event>,
    started: bool,
    done: bool,
}

fn follow(
    store: Store,
    stack: StackRef,
    resume: Option<(String, i64)>,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let (update, last_seq) = match resume {
        Some((update, seq)) => (Some(update), seq),
        None => (None, 0),
    };
    let follower = Follower {
        store,
        stack,
        update,
        update_started: 0,
        last_seq,
        operations: HashMap::new(),
        queue: VecDeque::new(),
        started: false,
        done: false,
    };
    futures_util::stream::unfold(follower, |mut f| async move {
        loop {
            if let Some(event) = f.queue.pop_front() {
                return Some((Ok(event), f));
            }
            if f.done {
                return None;
            }
            if f.started {
                tokio::time::sleep(POLL).await;
            }
            match f.poll().await {
                Ok(()) => {}
                Err(e) if e.status == axum::http::StatusCode::NOT_FOUND => {
                    f.queue
                        .push_back(event("gone", &json!({ "message": e.message })));
                    f.done = true;
                }
                // A transient failure (the database): try again later.
                Err(_) => {}
            }
            f.started = true;
        }
    })
}

fn event(name: &str, data: &Value) -> Event {
    Event::default().event(name).data(data.to_string())
}

impl Follower {
    async fn poll(&mut self) -> Result<(), ApiError> {
        let active = self.store.active_update(&self.stack).await?;
        match (&active, &self.update) {
            (Some(a), Some(u)) if a.update_id == *u => self.update_started = a.started_at_secs,
            (Some(a), _) => {
                if let Some(old) = self.update.take() {
                    self.end(&old).await?;
                }
                self.queue.push_back(event(
                    "update",
                    &json!({
                        "updateID": a.update_id,
                        "kind": a.kind,
                        "startedAt": a.started_at,
                        "holder": a.holder,
                    }),
                ));
                self.update = Some(a.update_id.clone());
                self.update_started = a.started_at_secs;
                self.last_seq = 0;
                self.operations.clear();
            }
            (None, Some(_)) => {
                let old = self.update.take().unwrap_or_default();
                self.end(&old).await?;
            }
            (None, None) if !self.started => {
                self.queue.push_back(event("idle", &json!({})));
            }
            (None, None) => {}
        }
        let Some(update) = self.update.clone() else {
            // Still 404 when the stack is gone.
            self.store.journal_tail(&self.stack, i64::MAX).await?;
            return Ok(());
        };
        match self.store.journal_tail(&self.stack, self.last_seq).await? {
            Some(tail) if tail.update_id == update => {
                for (seq, text) in tail.entries {
                    self.last_seq = seq;
                    if let Some(data) = self.step(seq, &text) {
                        self.queue
                            .push_back(event("step", &data).id(format!("{update}:{seq}")));
                    }
                }
            }
            // The update's journal is closed (compacted, or not opened
            // yet): a journal it opens next starts again at 1.
            Some(_) | None => self.last_seq = 0,
        }
        Ok(())
    }

    async fn end(&mut self, update: &str) -> Result<(), ApiError> {
        let status = self
            .store
            .update_status(update)
            .await?
            .unwrap_or_else(|| "ended".to_owned());
        // The history record the client added for this update, if any:
        // the most recent one, recorded after the update started.
        let record = self
            .store
            .list_history(&self.stack, Some(1))
            .await?
            .into_iter()
            .find(|r| r.recorded_at / 1_000_000_000 >= self.update_started)
            .and_then(|r| serde_json::from_str::<Value>(&r.record).ok());
        let result = record
            .as_ref()
            .and_then(|r| r.get("result"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        if result.as_deref() == Some("succeeded") {
            let mut open: Vec<(u64, Operation)> = self
                .operations
                .iter()
                .filter(|(_, o)| o.open && o.urn.is_some())
                .map(|(id, o)| (*id, o.clone()))
                .collect();
            open.sort_by_key(|(id, _)| *id);
            for (_, o) in open {
                let name = o
                    .urn
                    .as_deref()
                    .and_then(|u| converge_model::Urn::parse(u).ok())
                    .map(|u| u.name().to_owned());
                self.queue.push_back(event(
                    "step",
                    &json!({
                        "sequence": null,
                        "kind": "Success",
                        "status": o.label.map_or("done", past_tense),
                        "urn": o.urn,
                        "type": o.type_token,
                        "name": name,
                    }),
                ));
            }
        }
        self.operations.clear();
        let changes = record
            .as_ref()
            .and_then(|r| r.get("resourceChanges"))
            .cloned();
        self.queue.push_back(event(
            "end",
            &json!({
                "updateID": update,
                "status": status,
                "result": result,
                "resourceChanges": changes,
            }),
        ));
        Ok(())
    }

    /// The `step` event of one entry; None for an entry that names no
    /// resource yet (the Begin of a step that changes nothing).
    fn step(&mut self, seq: i64, text: &str) -> Option<Value> {
        let entry = entry_from_json(text.as_bytes(), SecretsMode::Opaque).ok()?;
        let named = named(&entry);
        let status = match entry.kind {
            JournalEntryKind::Begin => {
                let label = entry.operation.as_ref().map(|o| o.kind.as_str());
                let op = Operation {
                    label,
                    urn: named.as_ref().map(|n| n.0.clone()),
                    type_token: named.as_ref().map(|n| n.1.clone()),
                    open: true,
                };
                self.operations.insert(entry.operation_id, op);
                label.unwrap_or("started")
            }
            JournalEntryKind::Success => self
                .operations
                .get(&entry.operation_id)
                .and_then(|o| o.label)
                .map_or("done", past_tense),
            JournalEntryKind::Failure => "failed",
            JournalEntryKind::RefreshSuccess => "refreshed",
            JournalEntryKind::Outputs => "outputs registered",
            JournalEntryKind::Write => "state rewritten",
            JournalEntryKind::SecretsManager => "secrets provider set",
            JournalEntryKind::RebuiltBaseState => "base state rebuilt",
        };
        if matches!(
            entry.kind,
            JournalEntryKind::Success | JournalEntryKind::Failure
        ) {
            if let Some(o) = self.operations.get_mut(&entry.operation_id) {
                o.open = false;
            }
        }
        let known = self.operations.get(&entry.operation_id).cloned();
        let (urn, type_token) = match named {
            Some((urn, t)) => (Some(urn), Some(t)),
            None => match known {
                Some(o) if entry.operation_id != 0 => (o.urn, o.type_token),
                _ => (None, None),
            },
        };
        if urn.is_none() && entry.kind == JournalEntryKind::Begin {
            return None;
        }
        let name = urn
            .as_deref()
            .and_then(|u| converge_model::Urn::parse(u).ok())
            .map(|u| u.name().to_owned());
        Some(json!({
            "sequence": seq,
            "kind": entry.kind.as_str(),
            "status": status,
            "urn": urn,
            "type": type_token,
            "name": name,
        }))
    }
}

/// The resource an entry names itself: its state's, or its pending
/// operation's.
fn named(entry: &JournalEntry) -> Option<(String, String)> {
    entry
        .state
        .as_deref()
        .or(entry.operation.as_ref().map(|o| &o.resource))
        .map(|r| (r.urn.to_string(), r.type_token.clone()))
}

fn past_tense(label: &str) -> &'static str {
    match label {
        "creating" => "created",
        "updating" => "updated",
        "deleting" => "deleted",
        "reading" => "read",
        "importing" => "imported",
        _ => "done",
    }
}
