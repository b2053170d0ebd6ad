//! Where each object of Pulumi's DIY layout lives in a bucket, under the
//! backend's prefix — the same names as the file backend's project-scoped
//! layout (version 1), so a bucket Pulumi wrote opens here and vice versa:
//!
//! ```text
//! <prefix>/.pulumi/meta.yaml
//! <prefix>/.pulumi/stacks/<project>/<stack>.json (+ .json.bak)
//! <prefix>/.pulumi/backups/<project>/<stack>/<stack>.<unixnano>.json
//! <prefix>/.pulumi/history/<project>/<stack>/<stack>-<unixnano>.{history,checkpoint}.json
//! <prefix>/.pulumi/locks/organization/<project>/<stack>/<name>.json
//! <prefix>/.pulumi/journals/<project>/<stack>/base.json + <seq>.jsonl   (Converge only)
//! ```
//!
//! Names are validated before a key is made, so no name can reach outside
//! its stack's keys.

use object_store::path::Path;

use crate::error::{BackendError, NameKind, Result};
use crate::file::layout::validate_for_file_backend;
use crate::name::StackRef;

/// Every key that belongs to one stack.
#[derive(Debug, Clone)]
pub(crate) struct StackKeys {
    pub checkpoint: Path,
    pub previous: Path,
    pub tags: Path,
    pub history_dir: Path,
    pub backup_dir: Path,
    pub lock_dir: Path,
    pub journal_dir: Path,
}

/// The backend's prefix inside its bucket.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    prefix: Path,
}

impl Keys {
    pub fn new(prefix: Path) -> Keys {
        Keys { prefix }
    }

    fn pulumi(&self) -> Path {
        self.prefix.clone().join(".pulumi")
    }

    pub fn meta(&self) -> Path {
        self.pulumi().clone().join("meta.yaml")
    }

    pub fn stacks_dir(&self) -> Path {
        self.pulumi().clone().join("stacks")
    }

    /// Validates the reference and returns its keys.
    pub fn stack(&self, stack: &StackRef) -> Result<StackKeys> {
        validate_for_file_backend(stack)?;
        if stack.project.is_empty() {
            return Err(BackendError::InvalidName {
                kind: NameKind::Project,
                name: String::new(),
                reason: "the name is empty".to_owned(),
            });
        }
        let pulumi = self.pulumi();
        let (p, s) = (stack.project.as_str(), stack.stack.as_str());
        let scoped = |sub: &str| pulumi.clone().join(sub).clone().join(p);
        Ok(StackKeys {
            checkpoint: scoped("stacks").clone().join(format!("{s}.json")),
            previous: scoped("stacks").clone().join(format!("{s}.json.bak")),
            tags: scoped("stacks").clone().join(format!("{s}.pulumi-tags")),
            history_dir: scoped("history").clone().join(s),
            backup_dir: scoped("backups").clone().join(s),
            lock_dir: pulumi
                .clone()
                .join("locks")
                .clone()
                .join(stack.organization.as_str())
                .clone()
                .join(p)
                .clone()
                .join(s),
            journal_dir: scoped("journals").clone().join(s),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_diy_layout_under_the_prefix() {
        let keys = Keys::new(Path::from("team/state"));
        let k = keys
            .stack(&StackRef::with_organization("organization", "app", "dev").unwrap())
            .unwrap();
        assert_eq!(
            k.checkpoint.as_ref(),
            "team/state/.pulumi/stacks/app/dev.json"
        );
        assert_eq!(
            k.previous.as_ref(),
            "team/state/.pulumi/stacks/app/dev.json.bak"
        );
        assert_eq!(k.history_dir.as_ref(), "team/state/.pulumi/history/app/dev");
        assert_eq!(k.backup_dir.as_ref(), "team/state/.pulumi/backups/app/dev");
        assert_eq!(
            k.lock_dir.as_ref(),
            "team/state/.pulumi/locks/organization/app/dev"
        );
        assert_eq!(keys.meta().as_ref(), "team/state/.pulumi/meta.yaml");
        let root = Keys::new(Path::default());
        assert_eq!(
            root.stack(&StackRef::with_organization("organization", "app", "dev").unwrap())
                .unwrap()
                .checkpoint
                .as_ref(),
            ".pulumi/stacks/app/dev.json"
        );
    }

    #[test]
    fn names_that_could_escape_are_refused() {
        let keys = Keys::new(Path::from("p"));
        for bad in ["..", "a/b", "a\0b", "a\nb"] {
            let r = StackRef {
                organization: "organization".into(),
                project: "app".into(),
                stack: bad.into(),
            };
            assert!(keys.stack(&r).is_err(), "{bad:?}");
            let r = StackRef {
                organization: "organization".into(),
                project: bad.into(),
                stack: "dev".into(),
            };
            assert!(keys.stack(&r).is_err(), "{bad:?}");
        }
    }
}
