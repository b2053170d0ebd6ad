//! The program's entry point: `main:` of `Pulumi.yaml`, checked for every
//! runtime before anything runs.
//!
//! `main` names a file or a directory inside the project directory that
//! exists. A path that does not exist is refused rather than read as an
//! empty program (a YAML program that is not there would delete every
//! resource of the stack), and a path outside the project — through `..`,
//! as an absolute path, or through a symbolic link that resolves outside —
//! is refused rather than run. The messages begin with Pulumi's words for
//! the same refusals.

use std::io;
use std::path::{Component, Path, PathBuf};

use converge_backend::os_words;

/// Why `main` cannot be the program's entry point.
#[derive(Debug, thiserror::Error)]
pub enum EntryPointError {
    #[error("project 'main' must be a relative path: {main:?} is absolute")]
    Absolute { main: String },
    #[error(
        "project 'main' must be a subfolder: {main:?} resolves to {}, outside the project directory {}",
        resolved.display(),
        project_dir.display()
    )]
    Outside {
        main: String,
        resolved: PathBuf,
        project_dir: PathBuf,
    },
    /// The operating system's words are the message's end (not a
    /// `source`, which a caller printing the chain would repeat).
    #[error("project 'main' could not be read: {}: {}", path.display(), os_words(error))]
    Unreadable { path: PathBuf, error: io::Error },
}

/// The program `main` names in the project directory `project_dir`: the
/// path to run (the project directory itself when `main` is unset or
/// empty), once it is known to exist inside the project.
pub fn resolve(project_dir: &Path, main: Option<&str>) -> Result<PathBuf, EntryPointError> {
    let Some(main) = main.filter(|m| !m.is_empty()) else {
        return Ok(project_dir.to_path_buf());
    };
    let relative = Path::new(main);
    if relative.is_absolute() {
        return Err(EntryPointError::Absolute {
            main: main.to_owned(),
        });
    }
    let outside = |resolved: PathBuf, project_dir: PathBuf| EntryPointError::Outside {
        main: main.to_owned(),
        resolved,
        project_dir,
    };
    // As written: `..` that climbs out of the project.
    let lexical = lexical_join(project_dir, relative);
    let lexical_project = lexical_join(project_dir, Path::new(""));
    if !lexical.starts_with(&lexical_project) {
        return Err(outside(lexical, lexical_project));
    }
    let path = project_dir.join(relative);
    let unreadable = |path: &Path, error| EntryPointError::Unreadable {
        path: path.to_path_buf(),
        error,
    };
    // As it resolves: symbolic links that lead out of the project.
    let real = std::fs::canonicalize(&path).map_err(|e| unreadable(&path, e))?;
    let real_project =
        std::fs::canonicalize(project_dir).map_err(|e| unreadable(project_dir, e))?;
    if !real.starts_with(&real_project) {
        return Err(outside(real, real_project));
    }
    Ok(path)
}

/// `dir` joined with `relative`, `.` and `..` folded away as written
/// (links not followed).
fn lexical_join(dir: &Path, relative: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in dir.components().chain(relative.components()) {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn main_must_exist_inside_the_project() {
        let root = tempfile::tempdir().unwrap();
        let project = root.path().join("project");
        std::fs::create_dir_all(project.join("src/app")).unwrap();
        std::fs::write(project.join("src/index.js"), "").unwrap();
        std::fs::create_dir_all(root.path().join("outside")).unwrap();

        assert_eq!(resolve(&project, None).unwrap(), project);
        assert_eq!(resolve(&project, Some("")).unwrap(), project);
        assert_eq!(
            resolve(&project, Some("src/")).unwrap(),
            project.join("src/")
        );
        assert_eq!(
            resolve(&project, Some("./src/app/../index.js")).unwrap(),
            project.join("./src/app/../index.js")
        );

        let e = resolve(&project, Some("prog/")).unwrap_err().to_string();
        assert!(
            e.starts_with("project 'main' could not be read: ")
                && e.ends_with("prog/: no such file or directory"),
            "{e}"
        );
        let e = resolve(&project, Some("../outside/"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("project 'main' must be a subfolder: "), "{e}");
        assert!(
            e.contains(&root.path().join("outside").display().to_string()),
            "{e}"
        );
        // Climbing out and back in ends inside, as in Pulumi.
        resolve(&project, Some("src/../../project/src")).unwrap();
        let e = resolve(&project, Some("src/../../elsewhere")).unwrap_err();
        assert!(matches!(e, EntryPointError::Outside { .. }), "{e}");
        let e = resolve(&project, Some("/etc")).unwrap_err().to_string();
        assert!(
            e.starts_with("project 'main' must be a relative path"),
            "{e}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_link_that_resolves_outside_is_outside() {
        let root = tempfile::tempdir().unwrap();
        let project = root.path().join("project");
        std::fs::create_dir_all(project.join("inner")).unwrap();
        std::fs::create_dir_all(root.path().join("outside")).unwrap();
        std::os::unix::fs::symlink(root.path().join("outside"), project.join("out")).unwrap();
        std::os::unix::fs::symlink(project.join("inner"), project.join("in")).unwrap();
        let e = resolve(&project, Some("out")).unwrap_err();
        assert!(matches!(e, EntryPointError::Outside { .. }), "{e}");
        assert_eq!(resolve(&project, Some("in")).unwrap(), project.join("in"));
        // A link to nothing cannot be read.
        std::os::unix::fs::symlink(root.path().join("gone"), project.join("dangling")).unwrap();
        let e = resolve(&project, Some("dangling")).unwrap_err();
        assert!(matches!(e, EntryPointError::Unreadable { .. }), "{e}");
    }
}
