//! The file backend writes and reads exactly Pulumi's DIY layout.

use std::fs;
use std::path::{Path, PathBuf};

use converge_backend::{
    BackendError, Bytes, FileBackend, FileBackendOptions, HistoryStore, LayoutVersion,
    ListHistoryOptions, ListStacksOptions, LockInfo, RemoveOptions, SaveOptions, StackLocker,
    StackRef, StackStore, UpdateKind,
};

fn dev() -> StackRef {
    StackRef::new("proj", "dev").unwrap()
}

fn info() -> LockInfo {
    LockInfo {
        pid: 99,
        username: "alice".into(),
        hostname: "box".into(),
        timestamp: "2024-05-01T10:00:00Z".into(),
    }
}

/// Every file under `root`, relative, with digit runs of 10+ replaced by
/// `<n>` and UUIDs by `<uuid>`, sorted.
fn tree(root: &Path) -> Vec<String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out)
            } else {
                out.push(p)
            }
        }
    }
    let mut files = Vec::new();
    walk(root, &mut files);
    let mut out: Vec<String> = files
        .iter()
        .map(|p| normalize(&p.strip_prefix(root).unwrap().to_string_lossy()))
        .collect();
    out.sort();
    out
}

fn normalize(s: &str) -> String {
    let mut out = String::new();
    for part in s.split('/') {
        let (stem, ext) = part.split_once('.').unwrap_or((part, ""));
        let part = if uuid::Uuid::parse_str(stem).is_ok() {
            format!("<uuid>.{ext}")
        } else {
            part.to_owned()
        };
        let mut digits = String::new();
        let mut piece = String::new();
        for c in part.chars().chain(std::iter::once('\0')) {
            if c.is_ascii_digit() {
                digits.push(c);
                continue;
            }
            if digits.len() >= 10 {
                assert_eq!(digits.len(), 19, "unix nanos have 19 digits: {s}");
                piece.push_str("<n>");
            } else {
                piece.push_str(&digits);
            }
            digits.clear();
            if c != '\0' {
                piece.push(c);
            }
        }
        if !out.is_empty() {
            out.push('/');
        }
        out.push_str(&piece);
    }
    out
}

#[tokio::test]
async fn writes_pulumis_project_scoped_layout() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let b = FileBackend::new(root, "");
    b.create_stack(&dev(), b"v1").await.unwrap();
    assert_eq!(
        fs::read_to_string(root.join(".pulumi/meta.yaml")).unwrap(),
        "version: 1\n"
    );
    assert_eq!(b.layout_version().unwrap(), LayoutVersion::ProjectScoped);
    assert_eq!(
        fs::read(root.join(".pulumi/stacks/proj/dev.json")).unwrap(),
        b"v1"
    );

    b.save_checkpoint(&dev(), Bytes::from_static(b"v2"), &SaveOptions::default())
        .await
        .unwrap();
    assert_eq!(
        fs::read(root.join(".pulumi/stacks/proj/dev.json.bak")).unwrap(),
        b"v1"
    );
    // The `.bak` took the old file's place by a link, not a copy, and is
    // now the only name of those bytes: the stack file was replaced.
    {
        use std::os::unix::fs::MetadataExt;
        let bak = fs::metadata(root.join(".pulumi/stacks/proj/dev.json.bak")).unwrap();
        let current = fs::metadata(root.join(".pulumi/stacks/proj/dev.json")).unwrap();
        assert_eq!(bak.nlink(), 1);
        assert_ne!(bak.ino(), current.ino());
    }

    let record = br#"{"kind":"update","result":"succeeded"}"#;
    b.add_history(&dev(), UpdateKind::Update, record)
        .await
        .unwrap();
    let guard = b.lock(&dev(), info()).await.unwrap();

    assert_eq!(
        tree(root),
        [
            ".pulumi/backups/proj/dev/dev.<n>.json",
            ".pulumi/history/proj/dev/dev-<n>.checkpoint.json",
            ".pulumi/history/proj/dev/dev-<n>.history.json",
            ".pulumi/locks/organization/proj/dev/<uuid>.json",
            ".pulumi/meta.yaml",
            ".pulumi/stacks/proj/dev.json",
            ".pulumi/stacks/proj/dev.json.bak",
        ]
    );
    let history_dir = root.join(".pulumi/history/proj/dev");
    for e in fs::read_dir(&history_dir).unwrap() {
        let p = e.unwrap().path();
        let want: &[u8] = if p.to_string_lossy().ends_with(".history.json") {
            record
        } else {
            b"v2"
        };
        assert_eq!(fs::read(&p).unwrap(), want, "{}", p.display());
    }
    let backup = fs::read_dir(root.join(".pulumi/backups/proj/dev"))
        .unwrap()
        .next()
        .unwrap();
    let backup = backup.unwrap().path();
    assert_eq!(fs::read(&backup).unwrap(), b"v2");
    // The history copy and the backup are the checkpoint's bytes under
    // more names (written once), and keep them when the checkpoint moves on.
    {
        use std::os::unix::fs::MetadataExt;
        let copy = fs::read_dir(&history_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().ends_with(".checkpoint.json"))
            .unwrap();
        let stack_file = root.join(".pulumi/stacks/proj/dev.json");
        let ino = |p: &std::path::Path| fs::metadata(p).unwrap().ino();
        assert_eq!(ino(&copy), ino(&stack_file));
        assert_eq!(ino(&backup), ino(&stack_file));
        b.save_checkpoint(&dev(), Bytes::from_static(b"v3"), &SaveOptions::default())
            .await
            .unwrap();
        assert_eq!(fs::read(&stack_file).unwrap(), b"v3");
        assert_eq!(fs::read(&copy).unwrap(), b"v2");
        assert_eq!(fs::read(&backup).unwrap(), b"v2");
    }

    let lock_file = PathBuf::from(guard.location());
    assert_eq!(
        lock_file.parent().unwrap(),
        root.join(".pulumi/locks/organization/proj/dev")
    );
    // Pulumi's fields, and Converge's tie-break phase (Pulumi ignores it).
    assert_eq!(
        fs::read_to_string(&lock_file).unwrap(),
        r#"{"pid":99,"username":"alice","hostname":"box","timestamp":"2024-05-01T10:00:00Z","convergeLock":"held"}"#
    );
    guard.release().await.unwrap();
    assert!(!lock_file.exists());

    let paths = b.stack_paths(&dev()).unwrap();
    assert_eq!(paths.checkpoint, root.join(".pulumi/stacks/proj/dev.json"));
    assert_eq!(
        paths.previous,
        root.join(".pulumi/stacks/proj/dev.json.bak")
    );
    assert_eq!(paths.history_dir, history_dir);
    assert_eq!(paths.backup_dir, root.join(".pulumi/backups/proj/dev"));
    assert_eq!(
        paths.lock_dir,
        root.join(".pulumi/locks/organization/proj/dev")
    );
}

#[tokio::test]
async fn retained_checkpoints_and_disabled_backups() {
    let dir = tempfile::tempdir().unwrap();
    let options = FileBackendOptions {
        retain_checkpoints: true,
        checkpoint_backups: false,
    };
    let b = FileBackend::with_options(dir.path(), "", options);
    b.create_stack(&dev(), b"v1").await.unwrap();
    b.save_checkpoint(&dev(), Bytes::from_static(b"v2"), &SaveOptions::default())
        .await
        .unwrap();
    b.save_checkpoint(&dev(), Bytes::from_static(b"v3"), &SaveOptions::default())
        .await
        .unwrap();
    b.add_history(&dev(), UpdateKind::Update, b"{}")
        .await
        .unwrap();
    let files = tree(dir.path());
    let retained: Vec<_> = files
        .iter()
        .filter(|f| f.ends_with("dev.json.<n>"))
        .collect();
    assert_eq!(retained.len(), 2, "{files:?}");
    assert!(!files.iter().any(|f| f.contains("backups")), "{files:?}");
    let listed = b.list_stacks(&ListStacksOptions::default()).await.unwrap();
    assert_eq!(
        listed.len(),
        1,
        "retained copies are not stacks: {listed:?}"
    );
}

/// A project-scoped directory as Pulumi leaves it, with the odd files it and
/// crashed writers leave around.
#[tokio::test]
async fn reads_a_directory_pulumi_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let put = |rel: &str, body: &str| {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, body).unwrap();
    };
    let checkpoint =
        r#"{"version":3,"checkpoint":{"stack":"organization/proj/dev","latest":null}}"#;
    put(".pulumi/meta.yaml", "version: 1\n");
    put(".pulumi/stacks/proj/dev.json", checkpoint);
    put(".pulumi/stacks/proj/dev.json.bak", "{}");
    put(
        ".pulumi/stacks/proj/dev.pulumi-tags",
        r#"{"version":1,"tags":{}}"#,
    );
    put(".pulumi/stacks/proj/dev.json.1700000000000000000", "{}");
    put(".pulumi/stacks/proj/.dev.json.0123.tmp", "{half");
    put(".pulumi/stacks/other/x.json", "{}");
    put(".pulumi/stacks/bad name/y.json", "{}");
    put(
        ".pulumi/history/proj/dev/dev-1700000000000000001.history.json",
        r#"{"kind":"update"}"#,
    );
    put(
        ".pulumi/history/proj/dev/dev-1700000000000000001.checkpoint.json",
        "{}",
    );
    let go_lock = r#"{"pid":4321,"username":"bob","hostname":"ci","timestamp":"2023-01-02T03:04:05.123456789-07:00"}"#;
    put(
        ".pulumi/locks/organization/proj/dev/0b7e1f7e-6a4e-4c53-9b7c-1f2d3e4a5b6c.json",
        go_lock,
    );
    // gocloud's fileblob keeps each blob's attributes in a sidecar file.
    let lock_dir = ".pulumi/locks/organization/proj/dev";
    put(
        &format!("{lock_dir}/0b7e1f7e-6a4e-4c53-9b7c-1f2d3e4a5b6c.json.attrs"),
        "{}",
    );
    put(".pulumi/meta.yaml.attrs", "{}");
    put(".pulumi/stacks/proj/dev.json.attrs", "{}");
    put(
        ".pulumi/history/proj/dev/dev-1700000000000000001.history.json.attrs",
        "{}",
    );

    let b = FileBackend::new(root, "file://fixture");
    let names: Vec<String> = b
        .list_stacks(&ListStacksOptions::default())
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.stack_ref.to_string())
        .collect();
    assert_eq!(names, ["organization/other/x", "organization/proj/dev"]);
    let summary = &b
        .list_stacks(&ListStacksOptions {
            project: Some("proj".into()),
        })
        .await
        .unwrap()[0];
    assert!(summary.last_modified.unwrap() > 1_600_000_000);

    assert_eq!(
        b.load_checkpoint(&dev()).await.unwrap().unwrap(),
        checkpoint.as_bytes()
    );
    let history = b
        .list_history(&dev(), &ListHistoryOptions::default())
        .await
        .unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].kind, Some(UpdateKind::Update));
    assert_eq!(history[0].recorded_at_unix_nanos, 1_700_000_000_000_000_001);

    assert_eq!(
        b.list_locks(&dev()).await.unwrap().len(),
        1,
        "sidecars are not locks"
    );
    let err = b.lock(&dev(), info()).await.unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("bob@ci (pid 4321) since 2023-01-02T03:04:05.123456789-07:00"),
        "{msg}"
    );
    assert!(
        msg.contains("0b7e1f7e-6a4e-4c53-9b7c-1f2d3e4a5b6c.json"),
        "{msg}"
    );
    assert!(!msg.contains('\n'), "{msg}");

    b.remove_stack(&dev(), &RemoveOptions::default())
        .await
        .unwrap();
    assert!(!root.join(".pulumi/stacks/proj/dev.json").exists());
    assert_eq!(
        fs::read_to_string(root.join(".pulumi/stacks/proj/dev.json.bak")).unwrap(),
        checkpoint
    );
    assert!(!root.join(".pulumi/stacks/proj/dev.pulumi-tags").exists());
    assert!(!root.join(".pulumi/history/proj/dev").exists());
}

#[tokio::test]
async fn remove_backups_removes_every_copy() {
    let dir = tempfile::tempdir().unwrap();
    let b = FileBackend::new(dir.path(), "");
    b.create_stack(&dev(), b"v1").await.unwrap();
    b.save_checkpoint(&dev(), Bytes::from_static(b"v2"), &SaveOptions::default())
        .await
        .unwrap();
    b.add_history(&dev(), UpdateKind::Update, b"{}")
        .await
        .unwrap();
    let keep = StackRef::new("proj", "keep").unwrap();
    b.create_stack(&keep, b"k").await.unwrap();
    let full = RemoveOptions {
        remove_backups: true,
    };
    b.remove_stack(&dev(), &full).await.unwrap();
    assert_eq!(
        tree(dir.path()),
        [".pulumi/meta.yaml", ".pulumi/stacks/proj/keep.json"]
    );
}

#[tokio::test]
async fn legacy_layout_is_read_and_written_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join(".pulumi/stacks")).unwrap();
    fs::write(root.join(".pulumi/stacks/dev.json"), b"legacy").unwrap();
    let b = FileBackend::new(root, "");
    assert_eq!(b.layout_version().unwrap(), LayoutVersion::Legacy);

    let all = b.list_stacks(&ListStacksOptions::default()).await.unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(
        all[0].stack_ref.to_string(),
        "dev",
        "legacy stacks have no project"
    );
    let in_proj = b
        .list_stacks(&ListStacksOptions {
            project: Some("proj".into()),
        })
        .await
        .unwrap();
    assert_eq!(in_proj[0].stack_ref, dev());

    // Both the listed (project-less) reference and a project one work.
    assert_eq!(
        b.load_checkpoint(&all[0].stack_ref).await.unwrap().unwrap(),
        b"legacy"
    );
    b.save_checkpoint(&dev(), Bytes::from_static(b"new"), &SaveOptions::default())
        .await
        .unwrap();
    b.add_history(&dev(), UpdateKind::Update, b"{}")
        .await
        .unwrap();
    let prod = StackRef::new("proj", "prod").unwrap();
    b.create_stack(&prod, b"p").await.unwrap();
    let guard = b.lock(&dev(), info()).await.unwrap();
    assert_eq!(
        tree(root),
        [
            ".pulumi/backups/dev/dev.<n>.json",
            ".pulumi/history/dev/dev-<n>.checkpoint.json",
            ".pulumi/history/dev/dev-<n>.history.json",
            ".pulumi/locks/dev/<uuid>.json",
            ".pulumi/stacks/dev.json",
            ".pulumi/stacks/dev.json.bak",
            ".pulumi/stacks/prod.json",
        ],
        "legacy layout, and no meta.yaml written"
    );
    guard.release().await.unwrap();
    assert_eq!(
        fs::read(root.join(".pulumi/stacks/dev.json.bak")).unwrap(),
        b"legacy"
    );

    fs::write(root.join(".pulumi/meta.yaml"), "version: 0\n").unwrap();
    assert_eq!(b.layout_version().unwrap(), LayoutVersion::Legacy);
}

#[tokio::test]
async fn bad_meta_yaml_is_a_clear_error() {
    for (body, want) in [
        ("version: [", "malformed backend metadata"),
        ("other: 1\n", "no `version`"),
        ("version: 2\n", "layout version 2"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join(".pulumi")).unwrap();
        fs::write(dir.path().join(".pulumi/meta.yaml"), body).unwrap();
        let b = FileBackend::new(dir.path(), "");
        let err = b
            .list_stacks(&ListStacksOptions::default())
            .await
            .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains(want) && msg.contains("meta.yaml"),
            "{body:?}: {msg}"
        );
        assert!(
            b.create_stack(&dev(), b"{}").await.is_err(),
            "no writes under bad meta"
        );
        assert!(!dir.path().join(".pulumi/stacks").exists());
    }
}

#[tokio::test]
async fn many_saves_leave_no_temp_files_and_failures_keep_the_old_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let b = FileBackend::new(dir.path(), "");
    b.create_stack(&dev(), b"v0").await.unwrap();
    for i in 1..=50 {
        let body = format!("checkpoint {i}").repeat(100);
        b.save_checkpoint(&dev(), Bytes::from(body), &SaveOptions::default())
            .await
            .unwrap();
    }
    assert_eq!(
        tree(dir.path()),
        [
            ".pulumi/meta.yaml",
            ".pulumi/stacks/proj/dev.json",
            ".pulumi/stacks/proj/dev.json.bak"
        ]
    );

    // Make the backup write fail: a non-empty directory where `.bak` goes.
    let bak = dir.path().join(".pulumi/stacks/proj/dev.json.bak");
    fs::remove_file(&bak).unwrap();
    fs::create_dir_all(bak.join("blocker")).unwrap();
    let err = b
        .save_checkpoint(&dev(), Bytes::from_static(b"new"), &SaveOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, BackendError::Io { .. }), "{err}");
    assert!(err.to_string().contains("dev.json.bak"), "{err}");
    let kept = b.load_checkpoint(&dev()).await.unwrap().unwrap();
    assert_eq!(
        kept,
        "checkpoint 50".repeat(100).as_bytes(),
        "old checkpoint intact"
    );
    let stray: Vec<_> = tree(dir.path())
        .into_iter()
        .filter(|f| f.contains(".tmp"))
        .collect();
    assert!(stray.is_empty(), "temporary files left: {stray:?}");
}

#[tokio::test]
async fn concurrent_creates_have_exactly_one_winner() {
    let dir = tempfile::tempdir().unwrap();
    let b = FileBackend::new(dir.path(), "");
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let b = b.clone();
            tokio::spawn(async move { b.create_stack(&dev(), format!("{i}").as_bytes()).await })
        })
        .collect();
    let mut wins = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(()) => wins += 1,
            Err(BackendError::StackAlreadyExists { .. }) => {}
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert_eq!(wins, 1);
}

#[tokio::test]
async fn compressed_checkpoints_are_reported_not_misread() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(".pulumi/stacks/proj");
    fs::create_dir_all(&p).unwrap();
    fs::write(dir.path().join(".pulumi/meta.yaml"), "version: 1\n").unwrap();
    fs::write(p.join("dev.json.gz"), [0x1f, 0x8b]).unwrap();
    let b = FileBackend::new(dir.path(), "");
    assert!(b.stack_exists(&dev()).await.unwrap());
    assert_eq!(
        b.list_stacks(&ListStacksOptions::default())
            .await
            .unwrap()
            .len(),
        1
    );
    let msg = b.load_checkpoint(&dev()).await.unwrap_err().to_string();
    assert!(
        msg.contains("compressed") && msg.contains("dev.json.gz"),
        "{msg}"
    );
    let err = b.create_stack(&dev(), b"{}").await.unwrap_err();
    assert!(
        matches!(err, BackendError::StackAlreadyExists { .. }),
        "{err}"
    );
}

#[tokio::test]
async fn urls_and_organizations() {
    let cwd = tempfile::tempdir().unwrap();
    let b = FileBackend::open("file://./state", cwd.path()).unwrap();
    assert_eq!(b.root(), cwd.path().join("state"));
    assert_eq!(converge_backend::Backend::url(&b), "file://./state");
    let b = FileBackend::new(cwd.path(), "");
    assert_eq!(
        converge_backend::Backend::url(&b),
        format!("file://{}", cwd.path().display())
    );

    let acme = StackRef::with_organization("acme", "proj", "dev").unwrap();
    let msg = b.create_stack(&acme, b"{}").await.unwrap_err().to_string();
    assert!(msg.contains("invalid organization name \"acme\""), "{msg}");

    let missing = b.load_checkpoint(&dev()).await.unwrap_err().to_string();
    assert!(
        missing.contains("no stack named organization/proj/dev"),
        "{missing}"
    );
    assert!(
        missing.contains("converge stack init organization/proj/dev"),
        "{missing}"
    );
}

/// Tags live in Pulumi's `<stack>.pulumi-tags`, and a rename leaves the
/// files where Pulumi's rename leaves them.
#[tokio::test]
async fn tags_and_rename_on_pulumis_layout() {
    use converge_backend::TagStore;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let b = FileBackend::new(root, "");
    b.create_stack(&dev(), b"{}").await.unwrap();
    b.add_history(&dev(), UpdateKind::Update, br#"{"kind":"update"}"#)
        .await
        .unwrap();
    let mut tags = std::collections::BTreeMap::new();
    tags.insert("owner".to_owned(), "me".to_owned());
    b.save_tags(&dev(), &tags).await.unwrap();
    let written: serde_json::Value = serde_json::from_slice(
        &fs::read(root.join(".pulumi/stacks/proj/dev.pulumi-tags")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        written,
        serde_json::json!({"version": 1, "tags": {"owner": "me"}})
    );

    let prod = StackRef::new("proj", "prod").unwrap();
    b.rename_stack(&dev(), &prod, b"{\"renamed\":1}")
        .await
        .unwrap();
    let files = tree(root);
    for want in [
        ".pulumi/stacks/proj/dev.json.bak",
        ".pulumi/stacks/proj/prod.json",
        ".pulumi/stacks/proj/prod.pulumi-tags",
        ".pulumi/history/proj/prod/prod-<n>.history.json",
        ".pulumi/history/proj/prod/prod-<n>.checkpoint.json",
    ] {
        assert!(files.iter().any(|f| f == want), "{want} in {files:#?}");
    }
    assert!(
        !files.iter().any(
            |f| f.contains("stacks/proj/dev.json") && !f.ends_with(".bak")
                || f.contains("history/proj/dev/")
                || f.contains("dev.pulumi-tags")
        ),
        "{files:#?}"
    );
    assert_eq!(
        fs::read(root.join(".pulumi/stacks/proj/prod.json")).unwrap(),
        b"{\"renamed\":1}"
    );
}
