//! Errors: what a request gets back ([`ApiError`], a status and a JSON body
//! `{"code","message"}`), and why the service could not start
//! ([`ServerError`]).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use converge_backend::LockInfo;
use serde::Serialize;

/// A refused or failed request. The body is JSON:
/// `{"code": "stack_not_found", "message": "…"}`, plus `holder` (a
/// [`LockInfo`]) and `updateID` when the stack is locked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {code}: {message}")]
pub struct ApiError {
    pub status: StatusCode,
    /// A stable, machine-readable reason (`stack_not_found`, `locked`, …).
    pub code: &'static str,
    pub message: String,
    /// For `locked`: who holds the stack's lease.
    pub holder: Option<Box<LockInfo>>,
    /// For `locked`: the holder's update.
    pub update_id: Option<String>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            holder: None,
            update_id: None,
        }
    }

    pub fn bad_request(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub fn not_found(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, code, message)
    }

    pub fn conflict(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, code, message)
    }

    pub fn unauthorized(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    /// The stack is leased to `holder` by update `update_id`.
    pub fn locked(stack: &str, update_id: &str, holder: LockInfo) -> ApiError {
        ApiError {
            message: format!(
                "stack {stack}: the stack is currently locked by {}",
                holder.describe()
            ),
            holder: Some(Box::new(holder)),
            update_id: Some(update_id.to_owned()),
            ..ApiError::conflict("locked", "")
        }
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(e: sqlx::Error) -> ApiError {
        // A database failure outside a commit wrote nothing (a transaction
        // not committed is rolled back): 503 tells the client it may send
        // the request again. A failed commit is `store::commit`'s 500.
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "database",
            format!("the database failed: {e}"),
        )
    }
}

impl From<converge_backend::BackendError> for ApiError {
    fn from(e: converge_backend::BackendError) -> ApiError {
        use converge_backend::BackendError as B;
        let code = match &e {
            B::InvalidName { .. } | B::InvalidStackRef { .. } => "invalid_name",
            B::InvalidJournal { .. } => "invalid_journal",
            B::InvalidHistoryRecord { .. } => "invalid_history_record",
            _ => "bad_request",
        };
        ApiError::bad_request(code, e.to_string())
    }
}

#[derive(Serialize)]
struct Body<'a> {
    code: &'a str,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    holder: Option<&'a LockInfo>,
    #[serde(rename = "updateID", skip_serializing_if = "Option::is_none")]
    update_id: Option<&'a str>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = Body {
            code: self.code,
            message: &self.message,
            holder: self.holder.as_deref(),
            update_id: self.update_id.as_deref(),
        };
        (self.status, axum::Json(body)).into_response()
    }
}

/// Why the service could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot open the database {url}: {source}")]
    Database {
        url: String,
        #[source]
        source: sqlx::Error,
    },
    #[error("cannot create the database schema: {0}")]
    Migration(#[source] sqlx::Error),
    #[error("unsupported database URL {0:?}: use sqlite://FILE or postgres://…")]
    UnsupportedUrl(String),
    #[error("{0}")]
    Api(#[from] ApiError),
    #[error("{0}")]
    BadOption(String),
    #[error("{action}: {source}")]
    Io {
        action: String,
        #[source]
        source: std::io::Error,
    },
}
