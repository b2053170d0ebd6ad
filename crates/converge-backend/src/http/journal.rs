//! The journal of an update on the state service.

use async_trait::async_trait;
use reqwest::{Method, StatusCode};
use serde::Deserialize;
use serde_json::json;

use super::client::Idempotence;
use super::{lock_map, HttpBackend};
use crate::error::{BackendError, Result};
use crate::journal_store::{check_digest, check_entries, JournalStore, StoredJournal};
use crate::name::StackRef;

/// Where this backend appends to a stack's open journal.
#[derive(Debug, Clone)]
pub(super) struct Cursor {
    update_id: String,
    /// The sequence ID of the next entry.
    next: i64,
}

#[derive(Deserialize)]
struct OpenedJson {
    #[serde(rename = "updateID")]
    update_id: String,
}

#[derive(Deserialize)]
struct JournalJson {
    #[serde(rename = "updateID")]
    update_id: String,
    #[serde(rename = "baseDigest")]
    base_digest: String,
    #[serde(rename = "nextSequenceID")]
    next_sequence_id: i64,
    entries: Vec<String>,
}

impl HttpBackend {
    async fn fetch_journal(&self, stack: &StackRef) -> Result<Option<JournalJson>> {
        let inner = &self.inner;
        let reply = inner
            .send(inner.stack_request(Method::GET, stack, "/journal", Idempotence::Idempotent))
            .await?;
        if reply.status == StatusCode::NOT_FOUND && reply.failure().code == "no_journal" {
            return Ok(None);
        }
        inner.error_unless_ok(stack, &reply)?;
        reply.json(&inner.url).map(Some)
    }

    /// The cursor of the stack's open journal: cached, or read from the
    /// service (a journal another process opened).
    async fn cursor(&self, stack: &StackRef) -> Result<Cursor> {
        if let Some(c) = lock_map(&self.inner.journals).get(stack) {
            return Ok(c.clone());
        }
        let no_journal = || BackendError::NoJournal {
            stack: stack.to_string(),
        };
        let journal = match self.fetch_journal(stack).await {
            Ok(Some(j)) => j,
            Ok(None) => return Err(no_journal()),
            Err(e) if e.is_not_found() => return Err(no_journal()),
            Err(e) => return Err(e),
        };
        let cursor = Cursor {
            update_id: journal.update_id,
            next: journal.next_sequence_id,
        };
        lock_map(&self.inner.journals).insert(stack.clone(), cursor.clone());
        Ok(cursor)
    }

    /// Reserves `n` sequence IDs of the stack's journal; returns the first.
    fn reserve(&self, stack: &StackRef, cursor: &Cursor, n: usize) -> i64 {
        let mut journals = lock_map(&self.inner.journals);
        let c = journals
            .entry(stack.clone())
            .or_insert_with(|| cursor.clone());
        let first = c.next;
        c.next += i64::try_from(n).unwrap_or(i64::MAX / 2);
        first
    }
}

#[async_trait]
impl JournalStore for HttpBackend {
    async fn open_journal(&self, stack: &StackRef, base_checkpoint_digest: &str) -> Result<()> {
        stack.validate()?;
        let stack = &self.inner.qualify(stack);
        check_digest(stack, base_checkpoint_digest)?;
        let inner = &self.inner;
        let request = inner
            .stack_request(Method::POST, stack, "/journal", Idempotence::Once)
            .json(json!({ "baseDigest": base_checkpoint_digest }));
        let reply = inner.send(request).await?;
        inner.error_unless_ok(stack, &reply)?;
        let opened: OpenedJson = reply.json(&inner.url)?;
        lock_map(&inner.journals).insert(
            stack.clone(),
            Cursor {
                update_id: opened.update_id,
                next: 1,
            },
        );
        Ok(())
    }

    async fn append_journal(&self, stack: &StackRef, entries: &[Vec<u8>]) -> Result<()> {
        stack.validate()?;
        let stack = &self.inner.qualify(stack);
        check_entries(stack, entries)?;
        let texts = entries
            .iter()
            .enumerate()
            .map(|(i, e)| {
                std::str::from_utf8(e).map_err(|_| BackendError::InvalidJournal {
                    stack: stack.to_string(),
                    reason: format!("entry {i} of the batch is not UTF-8"),
                })
            })
            .collect::<Result<Vec<&str>>>()?;
        let cursor = self.cursor(stack).await?;
        if texts.is_empty() {
            return Ok(());
        }
        let first = self.reserve(stack, &cursor, texts.len());
        let batch: Vec<serde_json::Value> = texts
            .iter()
            .zip(first..)
            .map(|(text, seq)| json!({ "sequenceID": seq, "entry": text }))
            .collect();
        let inner = &self.inner;
        // Idempotent: each entry keeps its sequence ID on every attempt.
        let request = inner
            .stack_request(
                Method::POST,
                stack,
                &format!("/update/{}/journalentries", cursor.update_id),
                Idempotence::Idempotent,
            )
            .json(json!({ "entries": batch }));
        let reply = inner.send(request).await?;
        if reply.ok() {
            return Ok(());
        }
        let err = inner.error(stack, &reply);
        if matches!(err, BackendError::NoJournal { .. }) || err.is_not_found() {
            lock_map(&inner.journals).remove(stack);
            return Err(BackendError::NoJournal {
                stack: stack.to_string(),
            });
        }
        Err(err)
    }

    async fn load_journal(&self, stack: &StackRef) -> Result<Option<StoredJournal>> {
        stack.validate()?;
        let stack = &self.inner.qualify(stack);
        Ok(self.fetch_journal(stack).await?.map(|j| StoredJournal {
            base_digest: j.base_digest,
            entries: j.entries.into_iter().map(String::into_bytes).collect(),
        }))
    }

    fn compacts_journals(&self) -> bool {
        true
    }

    async fn commit_journal(&self, stack: &StackRef) -> Result<()> {
        stack.validate()?;
        let stack = &self.inner.qualify(stack);
        let inner = &self.inner;
        // Idempotence: a retried commit whose first attempt went through
        // finds no journal; that is success only if it was a retry.
        let request = inner.stack_request(
            Method::POST,
            stack,
            "/journal/commit",
            Idempotence::Idempotent,
        );
        let reply = inner.send(request).await?;
        if reply.retried && reply.failure().code == "no_journal" {
            lock_map(&inner.journals).remove(stack);
            return Ok(());
        }
        inner.error_unless_ok(stack, &reply)?;
        lock_map(&inner.journals).remove(stack);
        Ok(())
    }

    async fn close_journal(&self, stack: &StackRef) -> Result<()> {
        stack.validate()?;
        let stack = &self.inner.qualify(stack);
        let inner = &self.inner;
        lock_map(&inner.journals).remove(stack);
        let reply = inner
            .send(inner.stack_request(Method::DELETE, stack, "/journal", Idempotence::Idempotent))
            .await?;
        match inner.error_unless_ok(stack, &reply) {
            // Closing a journal of a stack that does not exist succeeds.
            Err(e) if e.is_not_found() => Ok(()),
            other => other,
        }
    }
}
