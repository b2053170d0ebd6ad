//! Unreadable and unwritable backend directories give one-line errors that
//! name the path and the OS error, and leave the stored state alone.
//!
//! Tests may run as root, for whom `chmod 000` blocks nothing: those checks
//! detect that and say so, while the "a file where a directory should be"
//! checks fail for every user.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use converge_backend::{
    BackendError, Bytes, FileBackend, ListStacksOptions, SaveOptions, StackRef, StackStore,
};

fn dev() -> StackRef {
    StackRef::new("proj", "dev").unwrap()
}

fn all() -> ListStacksOptions {
    ListStacksOptions::default()
}

fn assert_io(err: &BackendError, path: &Path, os_error: &str) {
    let msg = err.to_string();
    assert!(
        matches!(err, BackendError::Io { .. }),
        "want an I/O error, got {msg}"
    );
    assert!(
        msg.contains(&path.display().to_string()),
        "names the path: {msg}"
    );
    assert!(msg.contains(os_error), "names the OS error: {msg}");
    assert!(!msg.contains('\n'), "one line: {msg}");
}

fn chmod(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

#[tokio::test]
async fn unreadable_directory() {
    let dir = tempfile::tempdir().unwrap();
    let b = FileBackend::new(dir.path(), "");
    b.create_stack(&dev(), b"v1").await.unwrap();
    let project_dir = dir.path().join(".pulumi/stacks/proj");
    chmod(&project_dir, 0o000);
    let privileged = fs::read_dir(&project_dir).is_ok();
    let result = b.list_stacks(&all()).await;
    chmod(&project_dir, 0o755);
    if privileged {
        eprintln!(
            "running with privileges that bypass chmod 000; checked by the not-a-directory tests"
        );
        result.unwrap();
        return;
    }
    assert_io(&result.unwrap_err(), &project_dir, "Permission denied");
}

#[tokio::test]
async fn unwritable_directory() {
    let dir = tempfile::tempdir().unwrap();
    let b = FileBackend::new(dir.path(), "");
    b.create_stack(&dev(), b"v1").await.unwrap();
    let project_dir = dir.path().join(".pulumi/stacks/proj");
    chmod(&project_dir, 0o555);
    let privileged = fs::write(project_dir.join("probe"), b"").is_ok();
    let result = b
        .save_checkpoint(&dev(), Bytes::from_static(b"v2"), &SaveOptions::default())
        .await;
    chmod(&project_dir, 0o755);
    if privileged {
        eprintln!(
            "running with privileges that bypass chmod 555; checked by the not-a-directory tests"
        );
        return;
    }
    let err = result.unwrap_err();
    assert_io(&err, &project_dir.join("dev.json.bak"), "Permission denied");
    assert_eq!(
        b.load_checkpoint(&dev()).await.unwrap().unwrap(),
        b"v1",
        "state unchanged"
    );
}

#[tokio::test]
async fn a_file_where_the_stacks_directory_should_be() {
    let dir = tempfile::tempdir().unwrap();
    let stacks = dir.path().join(".pulumi/stacks");
    fs::create_dir_all(dir.path().join(".pulumi")).unwrap();
    fs::write(dir.path().join(".pulumi/meta.yaml"), "version: 1\n").unwrap();
    fs::write(&stacks, b"not a directory").unwrap();
    let b = FileBackend::new(dir.path(), "");

    let err = b.list_stacks(&all()).await.unwrap_err();
    assert_io(&err, &stacks, "Not a directory");
    assert!(
        err.to_string().starts_with("cannot list directory"),
        "{err}"
    );

    let err = b.create_stack(&dev(), b"{}").await.unwrap_err();
    assert_io(&err, &stacks.join("proj"), "Not a directory");
    assert_eq!(
        fs::read(&stacks).unwrap(),
        b"not a directory",
        "nothing overwritten"
    );
}

#[tokio::test]
async fn a_file_where_a_project_directory_should_be() {
    let dir = tempfile::tempdir().unwrap();
    let b = FileBackend::new(dir.path(), "");
    b.create_stack(&StackRef::new("other", "x").unwrap(), b"{}")
        .await
        .unwrap();
    let project = dir.path().join(".pulumi/stacks/proj");
    fs::write(&project, b"").unwrap();
    let err = b.create_stack(&dev(), b"{}").await.unwrap_err();
    assert_io(&err, &project.join("dev.json"), "Not a directory");
    let err = b
        .save_checkpoint(&dev(), Bytes::from_static(b"{}"), &SaveOptions::default())
        .await
        .unwrap_err();
    assert_io(&err, &project.join("dev.json"), "Not a directory");
}

#[tokio::test]
async fn unreadable_meta_yaml() {
    let dir = tempfile::tempdir().unwrap();
    let meta = dir.path().join(".pulumi/meta.yaml");
    fs::create_dir_all(&meta).unwrap();
    let b = FileBackend::new(dir.path(), "");
    let err = b.stack_exists(&dev()).await.unwrap_err();
    assert_io(&err, &meta, "Is a directory");
    assert!(err.to_string().starts_with("cannot read"), "{err}");
}

#[tokio::test]
async fn root_is_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("state");
    fs::write(&root, b"").unwrap();
    let b = FileBackend::new(&root, "");
    let err = b.list_stacks(&all()).await.unwrap_err();
    assert!(
        err.to_string().contains(&root.display().to_string()),
        "{err}"
    );
    assert!(err.to_string().contains("Not a directory"), "{err}");
}

#[tokio::test]
async fn a_missing_root_is_empty_and_created_on_first_stack() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("new/state");
    let b = FileBackend::new(&root, "");
    assert!(b.list_stacks(&all()).await.unwrap().is_empty());
    assert!(!root.exists(), "reading creates nothing");
    b.create_stack(&dev(), b"{}").await.unwrap();
    assert!(root.join(".pulumi/meta.yaml").is_file());
}
