//! The `pulumirpc.Engine` service: the program's log messages, the root
//! resource, and the engine version check.

use std::cmp::Ordering;
use std::sync::Arc;

use converge_model::Urn;
use converge_proto::pulumirpc::engine_server::Engine;
use converge_proto::pulumirpc::{
    GetRootResourceRequest, GetRootResourceResponse, LogRequest, LogSeverity,
    RequirePulumiVersionRequest, RequirePulumiVersionResponse, SetRootResourceRequest,
    SetRootResourceResponse,
};
use semver::Version;
use tonic::{Request, Response, Status};

use super::{lock, Shared, COMPATIBLE_PULUMI_VERSION};
use crate::events::Severity;

#[derive(Debug)]
pub(crate) struct EngineService {
    pub shared: Arc<Shared>,
}

fn severity(req: &LogRequest) -> Severity {
    // An absent (or unknown) severity is DEBUG; ephemeral status messages
    // are only of interest when debugging.
    if req.ephemeral {
        return Severity::Debug;
    }
    match LogSeverity::try_from(req.severity).unwrap_or(LogSeverity::Debug) {
        LogSeverity::Debug => Severity::Debug,
        LogSeverity::Info => Severity::Info,
        LogSeverity::Warning => Severity::Warning,
        LogSeverity::Error => Severity::Error,
    }
}

#[tonic::async_trait]
impl Engine for EngineService {
    async fn log(&self, request: Request<LogRequest>) -> Result<Response<()>, Status> {
        let req = request.into_inner();
        let severity = severity(&req);
        let message = crate::events::strip_ansi(req.message.trim_end());
        if severity == Severity::Error {
            self.shared.record_error(&message);
        }
        if severity == Severity::Debug && !self.shared.options.verbose {
            return Ok(Response::new(()));
        }
        let urn = Urn::parse(&req.urn).ok();
        self.shared
            .monitor
            .diagnostic(severity, urn.as_ref(), message);
        Ok(Response::new(()))
    }

    async fn get_root_resource(
        &self,
        _request: Request<GetRootResourceRequest>,
    ) -> Result<Response<GetRootResourceResponse>, Status> {
        let set = lock(&self.shared.root).clone();
        let urn = set
            .or_else(|| self.shared.monitor.root_resource().map(|u| u.to_string()))
            .unwrap_or_default();
        Ok(Response::new(GetRootResourceResponse { urn }))
    }

    async fn set_root_resource(
        &self,
        request: Request<SetRootResourceRequest>,
    ) -> Result<Response<SetRootResourceResponse>, Status> {
        *lock(&self.shared.root) = Some(request.into_inner().urn);
        Ok(Response::new(SetRootResourceResponse {}))
    }

    async fn require_pulumi_version(
        &self,
        request: Request<RequirePulumiVersionRequest>,
    ) -> Result<Response<RequirePulumiVersionResponse>, Status> {
        let range = request.into_inner().pulumi_version_range;
        let ours = Version::parse(COMPATIBLE_PULUMI_VERSION)
            .map_err(|e| Status::internal(e.to_string()))?;
        match satisfies(&ours, &range) {
            Ok(true) => Ok(Response::new(RequirePulumiVersionResponse {})),
            Ok(false) => Err(Status::failed_precondition(format!(
                "Converge implements Pulumi {COMPATIBLE_PULUMI_VERSION}, which does not satisfy the \
                 program's required version range {range:?}"
            ))),
            Err(e) => Err(Status::invalid_argument(format!(
                "invalid Pulumi version range {range:?}: {e}"
            ))),
        }
    }
}

/// Whether `v` is in a range of Go's `blang/semver` syntax: comparators
/// (`>=3.0.0`, `<4`, `!3.7.7`, `3.1.2`) AND-ed by spaces, OR-ed by `||`.
fn satisfies(v: &Version, range: &str) -> Result<bool, String> {
    let mut any = false;
    for alternative in range.split("||") {
        let mut all = true;
        let mut empty = true;
        for comparator in alternative.split_whitespace() {
            empty = false;
            all &= comparator_holds(v, comparator)?;
        }
        if empty {
            return Err("empty range".to_owned());
        }
        any |= all;
    }
    Ok(any)
}

fn comparator_holds(v: &Version, comparator: &str) -> Result<bool, String> {
    const OPERATORS: [&str; 8] = [">=", "<=", "!=", "==", ">", "<", "!", "="];
    let (op, rest) = OPERATORS
        .iter()
        .find_map(|op| comparator.strip_prefix(op).map(|rest| (*op, rest)))
        .unwrap_or(("=", comparator));
    let wanted = parse_loose(rest.trim_start_matches('v'))?;
    let ordering = v.cmp_precedence(&wanted);
    Ok(match op {
        ">=" => ordering != Ordering::Less,
        "<=" => ordering != Ordering::Greater,
        ">" => ordering == Ordering::Greater,
        "<" => ordering == Ordering::Less,
        "!=" | "!" => ordering != Ordering::Equal,
        _ => ordering == Ordering::Equal,
    })
}

/// `3`, `3.1` and `3.1.2` (with optional pre-release/build).
fn parse_loose(text: &str) -> Result<Version, String> {
    if let Ok(v) = Version::parse(text) {
        return Ok(v);
    }
    let parts: Vec<&str> = text.split('.').collect();
    let padded = match parts.len() {
        1 => format!("{text}.0.0"),
        2 => format!("{text}.0"),
        _ => text.to_owned(),
    };
    Version::parse(&padded).map_err(|e| format!("{text:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_ranges() {
        let v = Version::parse("3.272.0").unwrap();
        assert_eq!(satisfies(&v, ">=3.0.0"), Ok(true));
        assert_eq!(satisfies(&v, ">=3.5.0 !3.272.0"), Ok(false));
        assert_eq!(satisfies(&v, "<3.4.0 || >3.8.0"), Ok(true));
        assert_eq!(satisfies(&v, ">=4"), Ok(false));
        assert_eq!(satisfies(&v, "3.272.0"), Ok(true));
        assert!(satisfies(&v, ">=x.y").is_err());
        assert!(satisfies(&v, "").is_err());
    }
}
