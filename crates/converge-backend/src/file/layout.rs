//! Where Pulumi's DIY backend keeps each file, and which layout a directory
//! uses.
//!
//! ```text
//! <root>/.pulumi/meta.yaml                                  version: 1 (project-scoped)
//! <root>/.pulumi/stacks/<project>/<stack>.json              checkpoint (+ .json.bak)
//! <root>/.pulumi/stacks/<project>/<stack>.json.<unixnano>   retained checkpoints
//! <root>/.pulumi/backups/<project>/<stack>/<stack>.<unixnano>.json
//! <root>/.pulumi/history/<project>/<stack>/<stack>-<unixnano>.history.json
//! <root>/.pulumi/locks/organization/<project>/<stack>/<uuid>.json
//! <root>/.pulumi/journals/<project>/<stack>.journal        update journal (Converge only)
//! ```
//!
//! The legacy layout (version 0: no `meta.yaml`, stacks directly in
//! `.pulumi/stacks/<stack>.json`) drops the `<project>` level everywhere and
//! locks under `.pulumi/locks/<stack>/`.

use std::path::{Path, PathBuf};

use converge_yaml::YamlErrorKind;
use serde::Deserialize;

use crate::error::{BackendError, NameKind, Result};
use crate::file::atomic;
use crate::name::{
    validate_organization_name, validate_project_name, validate_stack_name, StackRef,
    DIY_ORGANIZATION,
};

/// Pulumi's bookkeeping directory inside a backend root.
pub const BOOKKEEPING_DIR: &str = ".pulumi";

/// The contents Pulumi writes to a new `meta.yaml`.
pub(crate) const META_V1: &str = "version: 1\n";

/// How a DIY backend directory lays out its stacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayoutVersion {
    /// Version 0: stacks are not scoped by project.
    Legacy,
    /// Version 1: `.pulumi/stacks/<project>/<stack>.json`.
    ProjectScoped,
}

/// Every path that belongs to one stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackPaths {
    /// The checkpoint, `<stack>.json`.
    pub checkpoint: PathBuf,
    /// The checkpoint the last save replaced, `<stack>.json.bak`.
    pub previous: PathBuf,
    /// Pulumi's stack tags file, `<stack>.pulumi-tags`.
    pub tags: PathBuf,
    pub history_dir: PathBuf,
    pub backup_dir: PathBuf,
    pub lock_dir: PathBuf,
}

impl StackPaths {
    /// The compressed checkpoint variants Pulumi may write instead of `.json`.
    pub(crate) fn compressed(&self) -> [PathBuf; 2] {
        [
            with_suffix(&self.checkpoint, ".gz"),
            with_suffix(&self.checkpoint, ".zst"),
        ]
    }
}

pub(crate) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// A backend directory and the layout it uses.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    pub root: PathBuf,
    pub version: LayoutVersion,
    /// Whether `.pulumi/meta.yaml` exists.
    pub has_meta: bool,
}

impl Layout {
    /// Reads `meta.yaml`; without one, a directory holding legacy stack files
    /// is legacy, and anything else is project-scoped (the meta file is
    /// written with the first stack).
    pub fn detect(root: &Path) -> Result<Layout> {
        let meta = meta_path(root);
        let (version, has_meta) = match read_meta(&meta)? {
            Some(text) => (parse_meta(&text, &meta)?, true),
            None if has_legacy_stacks(root)? => (LayoutVersion::Legacy, false),
            None => (LayoutVersion::ProjectScoped, false),
        };
        Ok(Layout {
            root: root.to_owned(),
            version,
            has_meta,
        })
    }

    pub fn stacks_dir(&self) -> PathBuf {
        self.root.join(BOOKKEEPING_DIR).join("stacks")
    }

    pub fn meta_path(&self) -> PathBuf {
        meta_path(&self.root)
    }

    /// Validates the reference for this layout and returns its paths.
    pub fn stack_paths(&self, stack: &StackRef) -> Result<StackPaths> {
        validate_for_file_backend(stack)?;
        let pulumi = self.root.join(BOOKKEEPING_DIR);
        let s = stack.stack.as_str();
        let scoped = |sub: &str| match self.version {
            LayoutVersion::ProjectScoped => pulumi.join(sub).join(&stack.project),
            LayoutVersion::Legacy => pulumi.join(sub),
        };
        if self.version == LayoutVersion::ProjectScoped && stack.project.is_empty() {
            return Err(BackendError::InvalidName {
                kind: NameKind::Project,
                name: String::new(),
                reason: "the name is empty".to_owned(),
            });
        }
        let checkpoint = scoped("stacks").join(format!("{s}.json"));
        let lock_dir = match self.version {
            LayoutVersion::ProjectScoped => pulumi
                .join("locks")
                .join(&stack.organization)
                .join(&stack.project)
                .join(s),
            LayoutVersion::Legacy => pulumi.join("locks").join(s),
        };
        Ok(StackPaths {
            previous: with_suffix(&checkpoint, ".bak"),
            tags: scoped("stacks").join(format!("{s}.pulumi-tags")),
            checkpoint,
            history_dir: scoped("history").join(s),
            backup_dir: scoped("backups").join(s),
            lock_dir,
        })
    }

    /// Writes `meta.yaml` (version 1) if a project-scoped directory lacks it.
    pub fn ensure_meta(&self) -> Result<()> {
        if self.version == LayoutVersion::ProjectScoped && !self.has_meta {
            atomic::create_atomic(&self.meta_path(), META_V1.as_bytes())?;
        }
        Ok(())
    }
}

/// The file backend's name rules: valid names, the single DIY organization,
/// and a project that may be empty only for legacy references.
pub(crate) fn validate_for_file_backend(stack: &StackRef) -> Result<()> {
    validate_organization_name(&stack.organization)?;
    if stack.organization != DIY_ORGANIZATION {
        return Err(BackendError::InvalidName {
            kind: NameKind::Organization,
            name: stack.organization.clone(),
            reason: format!("the file backend has a single organization, {DIY_ORGANIZATION:?}"),
        });
    }
    if !stack.project.is_empty() {
        validate_project_name(&stack.project)?;
    }
    validate_stack_name(&stack.stack)
}

fn meta_path(root: &Path) -> PathBuf {
    root.join(BOOKKEEPING_DIR).join("meta.yaml")
}

/// The stack name in a checkpoint file name (`dev.json`, `dev.json.gz`,
/// `dev.json.zst`), if it is one.
pub(crate) fn stack_name_of_checkpoint(file_name: &str) -> Option<&str> {
    let base = file_name
        .strip_suffix(".gz")
        .or_else(|| file_name.strip_suffix(".zst"))
        .unwrap_or(file_name);
    let name = base.strip_suffix(".json")?;
    validate_stack_name(name).ok().map(|()| name)
}

fn has_legacy_stacks(root: &Path) -> Result<bool> {
    let dir = root.join(BOOKKEEPING_DIR).join("stacks");
    Ok(atomic::list_dir(&dir)?
        .iter()
        .any(|e| !e.is_dir && stack_name_of_checkpoint(&e.name).is_some()))
}

/// The text of `meta.yaml`, if there is one; read within
/// `converge_yaml`'s size limit.
fn read_meta(path: &Path) -> Result<Option<String>> {
    match converge_yaml::read_file(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) => match e.kind {
            YamlErrorKind::Read(io) if io.kind() == std::io::ErrorKind::NotFound => Ok(None),
            YamlErrorKind::Read(io) => Err(BackendError::io("read", path, io)),
            kind => Err(BackendError::MalformedMeta {
                path: path.to_owned(),
                reason: kind.to_string(),
            }),
        },
    }
}

fn parse_meta(text: &str, path: &Path) -> Result<LayoutVersion> {
    #[derive(Deserialize)]
    struct Meta {
        version: Option<i64>,
    }
    let malformed = |reason: String| BackendError::MalformedMeta {
        path: path.to_owned(),
        reason,
    };
    let meta: Meta = converge_yaml::from_str(&path.display().to_string(), text)
        .map_err(|e| malformed(format!("not valid YAML with an integer version: {e}")))?;
    match meta.version {
        None => Err(malformed("it has no `version`".to_owned())),
        Some(0) => Ok(LayoutVersion::Legacy),
        Some(1) => Ok(LayoutVersion::ProjectScoped),
        Some(version) => Err(BackendError::UnsupportedLayout {
            path: path.to_owned(),
            version,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<LayoutVersion> {
        parse_meta(s, Path::new("/r/.pulumi/meta.yaml"))
    }

    #[test]
    fn meta_versions() {
        assert_eq!(parse("version: 1\n").unwrap(), LayoutVersion::ProjectScoped);
        assert_eq!(parse("version: 0").unwrap(), LayoutVersion::Legacy);
        assert_eq!(
            parse("version: 1\nother: x\n").unwrap(),
            LayoutVersion::ProjectScoped
        );
        for (bad, want) in [
            ("", "no `version`"),
            ("other: 1", "no `version`"),
            ("version: abc", "not valid YAML"),
            ("version: [1", "not valid YAML"),
            ("- 1", "not valid YAML"),
            (
                "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n\
                 c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n\
                 e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nversion: 1\n",
                "excessive aliasing",
            ),
        ] {
            let msg = parse(bad).unwrap_err().to_string();
            assert!(
                msg.contains(want) && msg.contains("meta.yaml"),
                "{bad:?}: {msg}"
            );
            assert!(!msg.contains('\n'), "{msg}");
        }
        let msg = parse("version: 7").unwrap_err().to_string();
        assert!(msg.contains("version 7"), "{msg}");
    }

    #[test]
    fn checkpoint_names() {
        assert_eq!(stack_name_of_checkpoint("dev.json"), Some("dev"));
        assert_eq!(stack_name_of_checkpoint("dev.json.gz"), Some("dev"));
        assert_eq!(stack_name_of_checkpoint("dev.json.zst"), Some("dev"));
        for not in [
            "dev.json.bak",
            "dev.pulumi-tags",
            "dev.json.1700000000000000000",
            "dev",
        ] {
            assert_eq!(stack_name_of_checkpoint(not), None, "{not}");
        }
    }
}
