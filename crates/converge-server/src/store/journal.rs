//! Journals (seed 002, "Snapshot Journaling"): one open journal per stack,
//! named by the update it belongs to, holding entries by client sequence ID.
//! Appends are idempotent per sequence ID (the same bytes again: nothing
//! happens; other bytes: 409), may arrive out of order and are durable when
//! the response is sent.

use converge_backend::StackRef;
use sqlx::{AnyConnection, Row};

use super::leases::insert_update;
use super::{stack_id, LeaseCredential, Store};
use crate::compaction::{compact, Compaction};
use crate::error::ApiError;

/// A stack's open journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalView {
    pub update_id: String,
    pub base_digest: String,
    /// One more than the highest sequence ID stored (1 when empty).
    pub next_sequence_id: i64,
    /// The entries in sequence order, each exactly as sent.
    pub entries: Vec<String>,
}

/// One entry of an append: the client's sequence ID and the entry's text.
#[derive(Debug, Clone)]
pub struct NewEntry {
    pub sequence_id: i64,
    pub entry: String,
}

impl Store {
    /// Opens the stack's journal, on the lease holder's update or, without
    /// a lease, on a new lease-less update. 409 `journal_exists` if one is
    /// open.
    pub async fn open_journal(
        &self,
        stack: &StackRef,
        base_digest: &str,
        lease: Option<&LeaseCredential>,
    ) -> Result<String, ApiError> {
        check_digest(base_digest)?;
        let (mut tx, id) = self.begin_write(stack, lease).await?;
        let update_id = match lease {
            Some(cred) => cred.update_id.clone(),
            None => uuid::Uuid::new_v4().to_string(),
        };
        let inserted = sqlx::query(
            "INSERT INTO journals (stack_id, update_id, base_digest) VALUES ($1, $2, $3)
             ON CONFLICT (stack_id) DO NOTHING",
        )
        .bind(&id)
        .bind(&update_id)
        .bind(base_digest)
        .execute(&mut *tx)
        .await?;
        if inserted.rows_affected() == 0 {
            return Err(ApiError::conflict(
                "journal_exists",
                format!(
                    "stack {stack} has the journal of an unfinished update; recover it before \
                     starting another"
                ),
            ));
        }
        if lease.is_none() {
            insert_update(&mut tx, &stack.to_string(), &update_id, "journal", "{}").await?;
        }
        sqlx::query("UPDATE updates SET journaled = 1 WHERE id = $1")
            .bind(&update_id)
            .execute(&mut *tx)
            .await?;
        // A lease holder may journal several runs in one update (a refresh
        // before the update): each journal starts empty.
        sqlx::query("DELETE FROM journal_entries WHERE update_id = $1")
            .bind(&update_id)
            .execute(&mut *tx)
            .await?;
        super::commit(tx).await?;
        Ok(update_id)
    }

    pub async fn load_journal(&self, stack: &StackRef) -> Result<Option<JournalView>, ApiError> {
        let mut tx = self.db.pool.begin().await?;
        let id = stack_id(&mut tx, stack).await?;
        let Some(row) =
            sqlx::query("SELECT update_id, base_digest FROM journals WHERE stack_id = $1")
                .bind(&id)
                .fetch_optional(&mut *tx)
                .await?
        else {
            return Ok(None);
        };
        let update_id: String = row.try_get(0)?;
        let rows =
            sqlx::query("SELECT seq, entry FROM journal_entries WHERE update_id = $1 ORDER BY seq")
                .bind(&update_id)
                .fetch_all(&mut *tx)
                .await?;
        let mut next_sequence_id = 1;
        let mut entries = Vec::with_capacity(rows.len());
        for r in &rows {
            let seq: i64 = r.try_get(0)?;
            next_sequence_id = seq + 1;
            entries.push(r.try_get(1)?);
        }
        super::commit(tx).await?;
        Ok(Some(JournalView {
            update_id,
            base_digest: row.try_get(1)?,
            next_sequence_id,
            entries,
        }))
    }

    /// Stores a batch: all of it or, on any refusal, none of it.
    pub async fn append_journal(
        &self,
        stack: &StackRef,
        update_id: &str,
        batch: &[NewEntry],
        lease: Option<&LeaseCredential>,
    ) -> Result<usize, ApiError> {
        for (i, e) in batch.iter().enumerate() {
            check_entry(i, e)?;
        }
        let (mut tx, id) = self.begin_write(stack, lease).await?;
        let open = sqlx::query("SELECT update_id FROM journals WHERE stack_id = $1")
            .bind(&id)
            .fetch_optional(&mut *tx)
            .await?;
        let open: Option<String> = open.map(|r| r.try_get(0)).transpose()?;
        if open.as_deref() != Some(update_id) {
            return Err(ApiError::conflict(
                "no_journal",
                format!("update {update_id} of stack {stack} has no open journal"),
            ));
        }
        let mut stored = 0;
        for e in batch {
            let done = sqlx::query(
                "INSERT INTO journal_entries (update_id, seq, entry) VALUES ($1, $2, $3)
                 ON CONFLICT (update_id, seq) DO NOTHING",
            )
            .bind(update_id)
            .bind(e.sequence_id)
            .bind(&e.entry)
            .execute(&mut *tx)
            .await?;
            if done.rows_affected() == 1 {
                stored += 1;
                continue;
            }
            let existing: String =
                sqlx::query("SELECT entry FROM journal_entries WHERE update_id = $1 AND seq = $2")
                    .bind(update_id)
                    .bind(e.sequence_id)
                    .fetch_one(&mut *tx)
                    .await?
                    .try_get(0)?;
            if existing != e.entry {
                return Err(ApiError::conflict(
                    "sequence_conflict",
                    format!(
                        "journal entry {} of update {update_id} was already stored with \
                         different content",
                        e.sequence_id
                    ),
                ));
            }
        }
        super::commit(tx).await?;
        Ok(stored)
    }

    /// Compacts the stack's open journal now, for its writer: its entries
    /// replayed onto the checkpoint it started from, saved (the base kept
    /// as the previous checkpoint) and the journal closed, in one
    /// transaction. 409 `no_journal` without a journal, `base_changed` if
    /// the checkpoint is no longer the journal's base, `compaction_failed`
    /// if the journal cannot be replayed; the journal then stays open.
    pub async fn commit_journal(
        &self,
        stack: &StackRef,
        lease: Option<&LeaseCredential>,
    ) -> Result<(), ApiError> {
        let (mut tx, id) = self.begin_write(stack, lease).await?;
        match compact_open(&mut tx, &id).await? {
            None => Err(ApiError::conflict(
                "no_journal",
                format!("stack {stack} has no open journal"),
            )),
            Some(Ok(Compaction::Replayed(bytes))) => {
                super::stacks::write_checkpoint(&mut tx, &id, &bytes, true).await?;
                close(&mut tx, &id).await?;
                super::commit(tx).await?;
                Ok(())
            }
            Some(Ok(Compaction::AlreadyCompacted)) => Err(ApiError::conflict(
                "base_changed",
                format!(
                    "the checkpoint of stack {stack} is no longer the one its journal started from"
                ),
            )),
            Some(Err(reason)) => Err(ApiError::conflict("compaction_failed", reason)),
        }
    }

    /// Removes the stack's journal; succeeds if there is none.
    pub async fn close_journal(
        &self,
        stack: &StackRef,
        lease: Option<&LeaseCredential>,
        audit: &super::Audit,
    ) -> Result<(), ApiError> {
        let (mut tx, id) = self.begin_write(stack, lease).await?;
        let update = close(&mut tx, &id).await?;
        audit
            .record(
                &mut tx,
                &format!("stack {stack}"),
                serde_json::json!({ "updateID": update }),
            )
            .await?;
        super::commit(tx).await?;
        Ok(())
    }
}

impl Store {
    /// The stack's current state: its checkpoint with the open journal, if
    /// any, replayed onto it (nothing is written). A journal that cannot be
    /// replayed leaves the stored checkpoint as the answer: the client that
    /// recovers it reports why.
    pub async fn current_checkpoint(&self, stack: &StackRef) -> Result<Option<Vec<u8>>, ApiError> {
        let mut tx = self.db.pool.begin().await?;
        let id = stack_id(&mut tx, stack).await?;
        let replayed = compact_open(&mut tx, &id).await?;
        let stored: Option<Vec<u8>> = sqlx::query("SELECT checkpoint FROM stacks WHERE id = $1")
            .bind(&id)
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
        super::commit(tx).await?;
        Ok(match replayed {
            Some(Ok(Compaction::Replayed(bytes))) => Some(bytes),
            _ => stored,
        })
    }
}

/// What compacting the stack's open journal gives (None: no journal is
/// open): its entries replayed onto the current checkpoint if that is the
/// journal's base ([`compact`]).
pub(super) async fn compact_open(
    conn: &mut AnyConnection,
    stack_id: &str,
) -> Result<Option<Result<Compaction, String>>, ApiError> {
    let Some(journal) =
        sqlx::query("SELECT update_id, base_digest FROM journals WHERE stack_id = $1")
            .bind(stack_id)
            .fetch_optional(&mut *conn)
            .await?
    else {
        return Ok(None);
    };
    let update_id: String = journal.try_get(0)?;
    let base_digest: String = journal.try_get(1)?;
    let entries: Vec<String> =
        sqlx::query("SELECT entry FROM journal_entries WHERE update_id = $1 ORDER BY seq")
            .bind(&update_id)
            .fetch_all(&mut *conn)
            .await?
            .iter()
            .map(|r| r.try_get(0))
            .collect::<Result<_, _>>()?;
    let row = sqlx::query("SELECT checkpoint, org, project, name FROM stacks WHERE id = $1")
        .bind(stack_id)
        .fetch_one(&mut *conn)
        .await?;
    let current: Option<Vec<u8>> = row.try_get(0)?;
    // A stack created without a checkpoint is named as clients name it.
    let name = StackRef::with_organization(
        &row.try_get::<String, _>(1)?,
        &row.try_get::<String, _>(2)?,
        &row.try_get::<String, _>(3)?,
    )
    .map(|s| s.to_string())
    .unwrap_or_default();
    let now = converge_backend::now_rfc3339();
    Ok(Some(compact(
        current.as_deref(),
        &name,
        &base_digest,
        &entries,
        &now,
    )))
}

/// Deletes a stack's journal and its entries; returns its update, if a
/// journal was open.
pub(super) async fn close(
    conn: &mut AnyConnection,
    stack_id: &str,
) -> Result<Option<String>, ApiError> {
    let row = sqlx::query("DELETE FROM journals WHERE stack_id = $1 RETURNING update_id")
        .bind(stack_id)
        .fetch_optional(&mut *conn)
        .await?;
    if let Some(row) = row {
        let update_id: String = row.try_get(0)?;
        sqlx::query("DELETE FROM journal_entries WHERE update_id = $1")
            .bind(&update_id)
            .execute(&mut *conn)
            .await?;
        // A lease-less journal's update ends with it.
        sqlx::query(
            "UPDATE updates SET status = 'succeeded', ended_at = $1
             WHERE id = $2 AND kind = 'journal' AND status = 'running'",
        )
        .bind(super::now_secs())
        .bind(&update_id)
        .execute(&mut *conn)
        .await?;
        return Ok(Some(update_id));
    }
    Ok(None)
}

fn check_digest(digest: &str) -> Result<(), ApiError> {
    let ok = digest.len() == 64
        && digest
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if ok {
        Ok(())
    } else {
        Err(ApiError::bad_request(
            "invalid_journal",
            format!("the base digest {digest:?} is not 64 lowercase hexadecimal digits"),
        ))
    }
}

fn check_entry(i: usize, e: &NewEntry) -> Result<(), ApiError> {
    let bad = |reason: String| {
        ApiError::bad_request(
            "invalid_journal",
            format!("entry {i} of the batch: {reason}"),
        )
    };
    if e.sequence_id < 1 {
        return Err(bad(format!(
            "sequence ID {} is not positive",
            e.sequence_id
        )));
    }
    if e.entry.contains('\n') {
        return Err(bad(
            "it contains a newline; an entry must be a single line".to_owned()
        ));
    }
    serde_json::from_str::<serde::de::IgnoredAny>(&e.entry)
        .map(|_| ())
        .map_err(|err| bad(format!("it is not valid JSON: {err}")))
}
