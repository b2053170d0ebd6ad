//! Pulumi's DIY stack tags file, `<stack>.pulumi-tags` beside the stack's
//! checkpoint: `{"version": 1, "tags": {"<name>": "<value>", …}}`. The file
//! backend and the object store read and write the same bytes, so Pulumi
//! sees the tags Converge sets and the other way round.

use serde::{Deserialize, Serialize};

use crate::capabilities::StackTags;
use crate::error::{BackendError, Result};

/// The only version of the file Pulumi writes and reads.
const TAGS_FILE_VERSION: i64 = 1;

#[derive(Serialize, Deserialize)]
struct TagsFile {
    version: i64,
    #[serde(default)]
    tags: Option<StackTags>,
}

/// Parses a tags file; `location` names it in errors.
pub(crate) fn parse(bytes: &[u8], location: &str) -> Result<StackTags> {
    let malformed = |reason: String| BackendError::MalformedTags {
        location: location.to_owned(),
        reason,
    };
    let file: TagsFile = serde_json::from_slice(bytes)
        .map_err(|e| malformed(format!("not a JSON object of string tags: {e}")))?;
    if file.version != TAGS_FILE_VERSION {
        return Err(malformed(format!(
            "its version is {}, and only version {TAGS_FILE_VERSION} is known",
            file.version
        )));
    }
    Ok(file.tags.unwrap_or_default())
}

/// The bytes of a tags file holding `tags`.
pub(crate) fn write(tags: &StackTags) -> Vec<u8> {
    let file = TagsFile {
        version: TAGS_FILE_VERSION,
        tags: Some(tags.clone()),
    };
    serde_json::to_vec_pretty(&file).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_reads_pulumis_shape() {
        let mut tags = StackTags::new();
        tags.insert("env".into(), "dev".into());
        tags.insert("pulumi:project".into(), "app".into());
        assert_eq!(parse(&write(&tags), "t").unwrap(), tags);
        let pulumi = br#"{"version":1,"tags":{"owner":"team"}}"#;
        assert_eq!(parse(pulumi, "t").unwrap()["owner"], "team");
        assert!(parse(br#"{"version":1,"tags":null}"#, "t")
            .unwrap()
            .is_empty());
    }

    #[test]
    fn refuses_other_versions_and_garbage() {
        for bad in [
            &br#"{"version":2,"tags":{}}"#[..],
            br#"{"tags":{}}"#,
            br#"{"version":1,"tags":{"a":1}}"#,
            b"nope",
        ] {
            let e = parse(bad, "x.pulumi-tags").unwrap_err();
            assert!(e.to_string().contains("x.pulumi-tags"), "{e}");
        }
    }
}
