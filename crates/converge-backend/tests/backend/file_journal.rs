//! The file backend's journal on disk: where it lives, its exact bytes, and
//! what loading does with a torn or damaged file.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;

use converge_backend::conformance::{test_digest, test_entry};
use converge_backend::{
    BackendError, FileBackend, JournalStore, ListStacksOptions, RemoveOptions, StackRef, StackStore,
};

fn dev() -> StackRef {
    StackRef::new("proj", "dev").unwrap()
}

async fn with_journal(entries: usize) -> (tempfile::TempDir, FileBackend) {
    let dir = tempfile::tempdir().unwrap();
    let b = FileBackend::new(dir.path(), "");
    b.create_stack(&dev(), b"{}").await.unwrap();
    b.open_journal(&dev(), &test_digest(1)).await.unwrap();
    let batch: Vec<Vec<u8>> = (1..=entries).map(test_entry).collect();
    b.append_journal(&dev(), &batch).await.unwrap();
    (dir, b)
}

fn append_raw(path: &Path, bytes: &[u8]) {
    let mut f = OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(bytes).unwrap();
}

fn header() -> String {
    format!(
        "{{\"converge-journal\":1,\"base\":\"{}\"}}\n",
        test_digest(1)
    )
}

fn expected(n: usize) -> Vec<Vec<u8>> {
    (1..=n).map(test_entry).collect()
}

async fn loaded(b: &FileBackend) -> Vec<Vec<u8>> {
    b.load_journal(&dev()).await.unwrap().unwrap().entries
}

#[tokio::test]
async fn the_journal_is_json_lines_under_pulumi_journals() {
    let (dir, b) = with_journal(2).await;
    let path = dir.path().join(".pulumi/journals/proj/dev.journal");
    assert_eq!(b.journal_path(&dev()).unwrap(), path);
    let mut want = header().into_bytes();
    for entry in expected(2) {
        want.extend(entry);
        want.push(b'\n');
    }
    assert_eq!(fs::read(&path).unwrap(), want);
    // No temporary files are left behind, and stacks are listed as before.
    let names: Vec<String> = fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["dev.journal"]);
    let stacks = b.list_stacks(&ListStacksOptions::default()).await.unwrap();
    assert_eq!(stacks.len(), 1);
    assert_eq!(
        fs::read_to_string(dir.path().join(".pulumi/meta.yaml")).unwrap(),
        "version: 1\n"
    );

    b.close_journal(&dev()).await.unwrap();
    assert!(!path.exists());
}

#[tokio::test]
async fn a_torn_last_line_is_dropped_and_cut_before_the_next_append() {
    let (_dir, b) = with_journal(3).await;
    let path = b.journal_path(&dev()).unwrap();
    let clean = fs::read(&path).unwrap();
    let torn = test_entry(4);
    append_raw(&path, &torn[..torn.len() / 2]);
    assert_eq!(loaded(&b).await, expected(3), "the torn entry is dropped");

    b.append_journal(&dev(), &[test_entry(4)]).await.unwrap();
    assert_eq!(loaded(&b).await, expected(4));
    let mut want = clean;
    want.extend(test_entry(4));
    want.push(b'\n');
    assert_eq!(fs::read(&path).unwrap(), want, "the torn bytes are gone");

    // Complete JSON without its newline was never acknowledged either.
    append_raw(&path, &test_entry(5));
    assert_eq!(loaded(&b).await, expected(4));
}

#[tokio::test]
async fn a_garbage_last_line_is_dropped() {
    let (_dir, b) = with_journal(2).await;
    let path = b.journal_path(&dev()).unwrap();
    // What a power loss can leave: the file extended, the data not written.
    append_raw(&path, &[0u8; 300]);
    assert_eq!(loaded(&b).await, expected(2));
    append_raw(&path, b"\n");
    assert_eq!(loaded(&b).await, expected(2));
}

#[tokio::test]
async fn damage_before_the_last_line_names_the_file_and_line() {
    let (_dir, b) = with_journal(2).await;
    let path = b.journal_path(&dev()).unwrap();
    append_raw(&path, b"{\"broken\":\n");
    append_raw(&path, &test_entry(3));
    append_raw(&path, b"\n");
    let err = b.load_journal(&dev()).await.unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, BackendError::CorruptJournal { line: 4, .. }),
        "{msg}"
    );
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(
        msg.contains("line 4") && msg.contains("move the file aside"),
        "{msg}"
    );
    assert!(!msg.contains('\n'), "{msg}");

    fs::write(&path, b"{\"converge-journal\":1,\"base\":").unwrap();
    let msg = b.load_journal(&dev()).await.unwrap_err().to_string();
    assert!(msg.contains("line 1") && msg.contains("header"), "{msg}");
}

#[tokio::test]
async fn removing_the_stack_removes_its_journal() {
    let (_dir, b) = with_journal(1).await;
    let path = b.journal_path(&dev()).unwrap();
    assert!(path.exists());
    b.remove_stack(&dev(), &RemoveOptions::default())
        .await
        .unwrap();
    assert!(!path.exists());
}

#[tokio::test]
async fn legacy_layout_journals_have_no_project_level() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join(".pulumi/stacks")).unwrap();
    fs::write(root.join(".pulumi/stacks/dev.json"), b"legacy").unwrap();
    let b = FileBackend::new(root, "");
    b.open_journal(&dev(), &test_digest(1)).await.unwrap();
    b.append_journal(&dev(), &[test_entry(1)]).await.unwrap();
    let path = root.join(".pulumi/journals/dev.journal");
    assert_eq!(b.journal_path(&dev()).unwrap(), path);
    assert!(path.is_file());
    assert_eq!(loaded(&b).await, expected(1));
    assert!(
        !root.join(".pulumi/meta.yaml").exists(),
        "the layout is unchanged"
    );
    b.remove_stack(&dev(), &RemoveOptions::default())
        .await
        .unwrap();
    assert!(!path.exists());
}

/// Many tasks appending to one journal through clones of one backend: every
/// line stays whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_never_interleave() {
    let (_dir, b) = with_journal(0).await;
    let mut tasks = Vec::new();
    for t in 0..8 {
        let b = b.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..20 {
                let batch = vec![test_entry(1000 * t + i), test_entry(1000 * t + 500 + i)];
                b.append_journal(&dev(), &batch).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let entries = loaded(&b).await;
    assert_eq!(entries.len(), 8 * 20 * 2);
    let mut per_task = vec![Vec::new(); 8];
    for pair in entries.chunks(2) {
        let n = |e: &[u8]| {
            let v: serde_json::Value = serde_json::from_slice(e).unwrap();
            v["sequenceID"].as_u64().unwrap() as usize
        };
        let (first, second) = (n(&pair[0]), n(&pair[1]));
        assert_eq!(second, first + 500, "a batch's entries stay together");
        per_task[first / 1000].push(first % 1000);
    }
    for seen in per_task {
        assert_eq!(
            seen,
            (0..20).collect::<Vec<_>>(),
            "each task's batches in order"
        );
    }
}
