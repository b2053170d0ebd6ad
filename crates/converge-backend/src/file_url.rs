//! `file://` backend URLs.

use std::path::{Path, PathBuf};

use crate::error::{BackendError, Result};

const FORMS: &str = "use file://~, file://~/dir, file:///absolute/dir or file://./relative/dir";

/// The directory a `file://` backend URL names. `~` expands to `$HOME`;
/// `./` and `../` paths resolve against `cwd`.
pub fn parse_file_url(url: &str, cwd: &Path) -> Result<PathBuf> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    parse_file_url_with_home(url, cwd, home.as_deref())
}

/// [`parse_file_url`] with an explicit home directory (`None`: unknown).
pub fn parse_file_url_with_home(url: &str, cwd: &Path, home: Option<&Path>) -> Result<PathBuf> {
    let bad = |reason: String| BackendError::InvalidUrl {
        url: url.to_owned(),
        reason,
    };
    let Some(rest) = url.strip_prefix("file://") else {
        return Err(bad(format!("not a file:// URL; {FORMS}")));
    };
    if rest.contains(['?', '#']) {
        return Err(bad(format!(
            "query parameters and fragments are not supported; {FORMS}"
        )));
    }
    if rest.contains('\0') {
        return Err(bad("the path contains a NUL character".to_owned()));
    }
    let path = if rest.is_empty() {
        return Err(bad(format!("no directory given; {FORMS}")));
    } else if rest == "~" || rest.starts_with("~/") {
        let home = home.ok_or_else(|| bad("cannot expand ~: HOME is not set".to_owned()))?;
        home.join(rest.trim_start_matches('~').trim_start_matches('/'))
    } else if rest.starts_with('~') {
        return Err(bad(format!(
            "only the current user's home (~) can be expanded; {FORMS}"
        )));
    } else if rest.starts_with('/') {
        PathBuf::from(rest)
    } else if is_explicitly_relative(rest) {
        cwd.join(rest)
    } else {
        return Err(bad(format!(
            "the path is neither absolute (file:///{rest}) nor explicitly relative \
             (file://./{rest})"
        )));
    };
    // Drop interior `.` components and trailing slashes.
    Ok(path.components().collect())
}

fn is_explicitly_relative(p: &str) -> bool {
    p == "." || p == ".." || p.starts_with("./") || p.starts_with("../")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(url: &str) -> Result<PathBuf> {
        parse_file_url_with_home(url, Path::new("/work/proj"), Some(Path::new("/home/me")))
    }

    #[test]
    fn expands_the_supported_forms() {
        assert_eq!(parse("file://~").unwrap(), PathBuf::from("/home/me"));
        assert_eq!(parse("file://~/").unwrap(), PathBuf::from("/home/me"));
        assert_eq!(
            parse("file://~/state/x").unwrap(),
            PathBuf::from("/home/me/state/x")
        );
        assert_eq!(parse("file:///abs/dir").unwrap(), PathBuf::from("/abs/dir"));
        assert_eq!(
            parse("file:///abs/dir/").unwrap(),
            PathBuf::from("/abs/dir")
        );
        assert_eq!(parse("file:///").unwrap(), PathBuf::from("/"));
        assert_eq!(
            parse("file://./state").unwrap(),
            PathBuf::from("/work/proj/state")
        );
        assert_eq!(parse("file://.").unwrap(), PathBuf::from("/work/proj"));
        assert_eq!(
            parse("file://../up").unwrap(),
            PathBuf::from("/work/proj/../up")
        );
    }

    #[test]
    fn rejects_everything_else_clearly() {
        for (url, want) in [
            ("s3://bucket", "not a file:// URL"),
            ("file:/x", "not a file:// URL"),
            ("file://", "no directory"),
            ("file://relative/dir", "file://./relative/dir"),
            ("file://~bob/x", "current user's home"),
            ("file://~?no_tmp_dir=1", "query parameters"),
        ] {
            let msg = parse(url).unwrap_err().to_string();
            assert!(msg.contains(want), "{url}: {msg}");
            assert!(msg.contains(url), "{url}: {msg}");
        }
        let msg = parse_file_url_with_home("file://~", Path::new("/"), None)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("HOME is not set"), "{msg}");
    }
}
