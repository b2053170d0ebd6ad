//! Requests to the state service: authentication, the lease headers,
//! retries with backoff, and the service's errors as [`BackendError`]s.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde::Deserialize;

use super::Inner;
use crate::error::BackendError;
use crate::lock::LockInfo;
use crate::name::StackRef;

/// How requests are retried.
///
/// Which: reads, lease renewals and completions, journal appends (each
/// entry keeps its sequence ID on every attempt, so an append that
/// already landed is acknowledged, never stored twice), checkpoint saves
/// (the service ignores the bytes it already has), a history record added
/// under the update's lease (the service acknowledges one it holds) and
/// the other idempotent requests after a connection error, a timeout or
/// any 5xx; a request that is not idempotent (starting an update, opening
/// a journal, creating, renaming or deleting a stack, a history record
/// without a lease) only when it certainly was not processed: the
/// connection could not be made, or the service answered 429 or 503 (its
/// answer when the database failed before writing anything; a failed
/// commit, whose outcome is unknown, is a 500).
///
/// Bound: `attempts` in all for failures, with exponential backoff from
/// `initial_backoff` to `max_backoff`, each wait drawn between half and
/// all of it (jitter, so that clients failed together do not retry
/// together). A 429 (the token is over its rate) does not use up
/// attempts: it is retried after the `Retry-After` it carries (at least
/// the current backoff), plus up to half again of jitter, for as long as
/// the waits for 429s add up to at most `throttle_limit`: a client over
/// its rate is slowed, not failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (429s excepted).
    pub attempts: u32,
    /// The wait after the first failure; doubled after each next one.
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// How long a request may wait, in all, on 429 answers.
    pub throttle_limit: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            attempts: 8,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            throttle_limit: Duration::from_secs(600),
        }
    }
}

/// A wait of between half and all of `d`.
fn jittered(d: Duration) -> Duration {
    d.mul_f64(rand::random::<f64>().mul_add(0.5, 0.5))
}

/// `d` plus up to half again.
fn spread(d: Duration) -> Duration {
    d.mul_f64(1.0 + rand::random::<f64>() * 0.5)
}

/// Whether a request may be sent again when its outcome is unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Idempotence {
    /// Sending it twice has the effect of sending it once: retried after
    /// any transport error, 5xx or 429.
    Idempotent,
    /// Retried only when it certainly was not processed: the connection
    /// failed, or the service answered 429 or 503.
    Once,
}

#[derive(Debug, Clone)]
pub(super) enum Body {
    Empty,
    Json(serde_json::Value),
    Bytes(bytes::Bytes),
}

/// The lease a write presents (`x-converge-update-id`, `x-converge-lease-token`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LeaseCredential {
    pub update_id: String,
    pub token: String,
}

#[derive(Debug)]
pub(super) struct Request {
    pub method: Method,
    pub path: String,
    pub query: Vec<(&'static str, String)>,
    pub body: Body,
    pub lease: Option<LeaseCredential>,
    pub idempotence: Idempotence,
}

impl Request {
    pub fn new(method: Method, path: String, idempotence: Idempotence) -> Request {
        Request {
            method,
            path,
            query: Vec::new(),
            body: Body::Empty,
            lease: None,
            idempotence,
        }
    }

    pub fn json(mut self, value: serde_json::Value) -> Request {
        self.body = Body::Json(value);
        self
    }

    /// A body of bytes, shared by every attempt, never copied.
    pub fn bytes(mut self, bytes: impl Into<bytes::Bytes>) -> Request {
        self.body = Body::Bytes(bytes.into());
        self
    }

    pub fn query(mut self, key: &'static str, value: String) -> Request {
        self.query.push((key, value));
        self
    }

    pub fn lease(mut self, lease: Option<LeaseCredential>) -> Request {
        self.lease = lease;
        self
    }
}

/// A response the service sent, success or not.
#[derive(Debug)]
pub(super) struct Reply {
    pub status: StatusCode,
    pub bytes: Vec<u8>,
    /// Whether this reply came after a retry (the request may have been
    /// processed by an earlier attempt; a 429 was not).
    pub retried: bool,
    /// A 429's or 503's `Retry-After`, in seconds.
    pub retry_after: Option<Duration>,
}

/// The service's error body.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Failure {
    #[serde(default)]
    pub code: String,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub holder: Option<LockInfo>,
    #[serde(rename = "updateID", default)]
    pub update_id: Option<String>,
}

impl Reply {
    pub fn ok(&self) -> bool {
        self.status.is_success()
    }

    pub fn failure(&self) -> Failure {
        serde_json::from_slice(&self.bytes).unwrap_or_else(|_| Failure {
            code: String::new(),
            message: String::from_utf8_lossy(&self.bytes).into_owned(),
            ..Failure::default()
        })
    }

    pub fn json<T: serde::de::DeserializeOwned>(&self, backend: &str) -> Result<T, BackendError> {
        serde_json::from_slice(&self.bytes).map_err(|e| BackendError::Service {
            backend: backend.to_owned(),
            status: self.status.as_u16(),
            code: "malformed_response".to_owned(),
            message: format!("the response is not the JSON expected: {e}"),
        })
    }
}

impl Inner {
    /// Sends `request`, retrying transient failures by its idempotence
    /// ([`RetryPolicy`]).
    pub(super) async fn send(&self, request: Request) -> Result<Reply, BackendError> {
        let policy = &self.retry;
        let mut backoff = policy.initial_backoff;
        let mut attempt = 1;
        let mut throttled = Duration::ZERO;
        let mut retried = false;
        loop {
            let outcome = self.send_once(&request).await;
            if let Ok(reply) = &outcome {
                if reply.status == StatusCode::TOO_MANY_REQUESTS {
                    let wait = spread(reply.retry_after.unwrap_or(backoff).max(backoff));
                    if throttled + wait <= policy.throttle_limit {
                        // Refused unprocessed: not a retry of a request
                        // that may have landed.
                        throttled += wait;
                        tokio::time::sleep(wait).await;
                        continue;
                    }
                }
            }
            let transient = match &outcome {
                Ok(reply) => {
                    let s = reply.status;
                    s == StatusCode::SERVICE_UNAVAILABLE
                        || (s.is_server_error() && request.idempotence == Idempotence::Idempotent)
                }
                Err(e) => e.is_connect() || request.idempotence == Idempotence::Idempotent,
            };
            if !transient || attempt >= policy.attempts {
                return match outcome {
                    Ok(mut reply) => {
                        reply.retried = retried;
                        Ok(reply)
                    }
                    Err(e) => Err(BackendError::Unreachable {
                        backend: self.url.clone(),
                        reason: format!("{e} (after {attempt} attempt(s))"),
                    }),
                };
            }
            let wait = match &outcome {
                Ok(reply) => reply.retry_after.unwrap_or(backoff).max(backoff),
                Err(_) => backoff,
            };
            tokio::time::sleep(jittered(wait)).await;
            backoff = (backoff * 2).min(policy.max_backoff);
            attempt += 1;
            retried = true;
        }
    }

    async fn send_once(&self, request: &Request) -> Result<Reply, reqwest::Error> {
        let url = format!("{}{}", self.url, request.path);
        let mut builder = self
            .client
            .request(request.method.clone(), &url)
            .header("authorization", format!("token {}", self.token));
        if !request.query.is_empty() {
            builder = builder.query(&request.query);
        }
        if let Some(lease) = &request.lease {
            builder = builder
                .header("x-converge-update-id", &lease.update_id)
                .header("x-converge-lease-token", &lease.token);
        }
        builder = match &request.body {
            Body::Empty => builder,
            Body::Json(value) => builder
                .header("content-type", "application/json")
                .body(value.to_string()),
            Body::Bytes(bytes) => builder
                .header("content-type", "application/octet-stream")
                .body(bytes.clone()),
        };
        let response = builder.send().await?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|secs| Duration::from_secs(secs.min(3600)));
        let bytes = response.bytes().await?.to_vec();
        Ok(Reply {
            status,
            bytes,
            retried: false,
            retry_after,
        })
    }

    /// The service's refusal of a request about `stack`, as a backend error.
    pub(super) fn error(&self, stack: &StackRef, reply: &Reply) -> BackendError {
        let f = reply.failure();
        let name = stack.to_string();
        match f.code.as_str() {
            "stack_not_found" => BackendError::StackNotFound {
                stack: name,
                backend: self.url.clone(),
            },
            "stack_exists" => BackendError::StackAlreadyExists {
                stack: name,
                backend: self.url.clone(),
            },
            "locked" => {
                let update = f.update_id.unwrap_or_default();
                BackendError::Locked {
                    path: format!("{}{}/update/{update}", self.url, stack_path(stack)),
                    stack: name,
                    holder: Box::new(f.holder.unwrap_or_else(LockInfo::unknown)),
                }
            }
            "journal_exists" => BackendError::JournalExists {
                stack: name,
                location: format!("{}{}/journal", self.url, stack_path(stack)),
            },
            "no_journal" => BackendError::NoJournal { stack: name },
            "invalid_journal" => BackendError::InvalidJournal {
                stack: name,
                reason: f.message,
            },
            "invalid_history_record" => BackendError::InvalidHistoryRecord {
                stack: name,
                reason: f.message,
            },
            _ => self.service_error(reply.status, f),
        }
    }

    pub(super) fn service_error(&self, status: StatusCode, f: Failure) -> BackendError {
        BackendError::Service {
            backend: self.url.clone(),
            status: status.as_u16(),
            code: f.code,
            message: f.message,
        }
    }
}

/// `/api/stacks/{org}/{project}/{stack}`; the names are validated, so no
/// escaping is needed.
pub(super) fn stack_path(stack: &StackRef) -> String {
    format!(
        "/api/stacks/{}/{}/{}",
        stack.organization, stack.project, stack.stack
    )
}
