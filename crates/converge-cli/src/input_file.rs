//! JSON files a user hands in (`stack import --file`, `up --plan`,
//! `import --file`), read whole but never past
//! [`converge_state::json_limits::MAX_JSON_BYTES`]: a device or an endless
//! stream named as the file (`/dev/zero`) is refused once the limit is
//! reached, not read until memory runs out.

use std::io::Read;
use std::path::Path;

use anyhow::{anyhow, bail, Result};
use converge_backend::StorageFailure;
use converge_state::json_limits::MAX_JSON_BYTES;

/// The bytes of the file at `path`; `what` names it in errors ("the
/// plan").
pub fn read_file(path: &Path, what: &str) -> Result<Vec<u8>> {
    let file = std::fs::File::open(path).map_err(|e| {
        anyhow!(
            "could not read {what} {}: {}",
            path.display(),
            StorageFailure::of(&e).cause
        )
    })?;
    read_bounded(file, &format!("{what} {}", path.display()))
}

/// Everything `reader` gives, up to [`MAX_JSON_BYTES`]; `what` names it
/// in errors ("the deployment from stdin").
pub fn read_bounded(reader: impl Read, what: &str) -> Result<Vec<u8>> {
    read_up_to(reader, what, MAX_JSON_BYTES)
}

fn read_up_to(reader: impl Read, what: &str, limit: u64) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| anyhow!("could not read {what}: {}", StorageFailure::of(&e).cause))?;
    if bytes.len() as u64 > limit {
        bail!(
            "could not read {what}: it is larger than {limit} bytes, the most Converge reads as \
             one JSON document"
        );
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_stream_stops_at_the_limit() {
        let endless = std::io::repeat(b' ');
        let e = read_up_to(endless, "the deployment from stdin", 1 << 20).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("could not read the deployment from stdin: it is larger than"),
            "{e}"
        );
        assert_eq!(read_bounded(&b"{}"[..], "x").unwrap(), b"{}");
        let e = read_file(Path::new("/nonexistent/plan.json"), "the plan").unwrap_err();
        assert_eq!(
            e.to_string(),
            "could not read the plan /nonexistent/plan.json: no such file or directory"
        );
    }
}
