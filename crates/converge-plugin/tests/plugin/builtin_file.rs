//! The built-in `converge:index:File` resource on a real file system.

use converge_model::{DiffKind, PropertyMap, PropertyValue, Urn};
use converge_plugin::builtin::{self, file::FileProvider, BuiltinLoader};
use converge_plugin::{
    CheckRequest, CheckResponse, CreateRequest, CreateResponse, DeleteRequest, DiffChanges,
    DiffRequest, DiffResponse, Provider, ProviderLoader, ReadRequest, ReadResponse, UpdateRequest,
};

const FILE: &str = "converge:index:File";

fn urn() -> Urn {
    Urn::new("dev", "proj", None, FILE, "f").unwrap()
}

fn map<const N: usize>(entries: [(&str, PropertyValue); N]) -> PropertyMap {
    entries
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
}

async fn check(news: PropertyMap) -> CheckResponse {
    FileProvider::new()
        .check(CheckRequest {
            urn: urn(),
            olds: PropertyMap::new(),
            news,
            random_seed: Vec::new(),
        })
        .await
        .unwrap()
}

async fn create_with(news: PropertyMap, preview: bool) -> CreateResponse {
    let c = check(news).await;
    assert!(c.failures.is_empty(), "{:?}", c.failures);
    FileProvider::new()
        .create(CreateRequest {
            urn: urn(),
            properties: c.inputs,
            timeout: None,
            preview,
            planned: None,
        })
        .await
        .unwrap()
}

async fn create(news: PropertyMap) -> CreateResponse {
    create_with(news, false).await
}

async fn refresh(id: &str, state: &PropertyMap) -> ReadResponse {
    FileProvider::new()
        .read(ReadRequest {
            urn: urn(),
            id: id.into(),
            inputs: Some(state.clone()),
            state: Some(state.clone()),
            timeout: None,
        })
        .await
        .unwrap()
}

async fn diff(olds: &PropertyMap, news: PropertyMap) -> DiffResponse {
    let c = check(news).await;
    FileProvider::new()
        .diff(DiffRequest {
            urn: urn(),
            id: "id".into(),
            old_inputs: olds.clone(),
            old_outputs: olds.clone(),
            new_inputs: c.inputs,
            ignore_changes: Vec::new(),
        })
        .await
        .unwrap()
}

fn path_of(dir: &tempfile::TempDir, name: &str) -> String {
    dir.path().join(name).to_str().unwrap().to_owned()
}

#[cfg(unix)]
fn mode(path: &str) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[tokio::test]
async fn check_defaults_and_normalises() {
    let c = check(map([("path", "x".into())])).await;
    assert!(c.failures.is_empty());
    assert_eq!(
        c.inputs,
        map([
            ("path", "x".into()),
            ("content", "".into()),
            ("permissions", "0644".into())
        ])
    );
    let c = check(map([("path", "x".into()), ("permissions", "600".into())])).await;
    assert_eq!(c.inputs["permissions"], "0600".into());
    for bad in ["rw-r--r--", "0999", "77777"] {
        let c = check(map([("path", "x".into()), ("permissions", bad.into())])).await;
        assert_eq!(c.failures[0].property, "permissions", "{bad}");
    }
    let c = check(map([("content", "x".into())])).await;
    assert_eq!(c.failures[0].property, "path");
    let c = check(map([("path", "".into())])).await;
    assert_eq!(c.failures[0].property, "path");
}

#[tokio::test]
async fn create_writes_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_of(&dir, "sub/dir/hello.txt");
    let r = create(map([
        ("path", path.as_str().into()),
        ("content", "hello\n".into()),
        ("permissions", "0600".into()),
    ]))
    .await;
    assert_eq!(r.id, path);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello\n");
    #[cfg(unix)]
    assert_eq!(mode(&path), 0o600);
    // No temporary file is left behind.
    let names: Vec<_> = std::fs::read_dir(dir.path().join("sub/dir"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["hello.txt"]);
}

#[tokio::test]
async fn preview_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_of(&dir, "p.txt");
    let r = create_with(map([("path", path.as_str().into())]), true).await;
    assert!(!std::path::Path::new(&path).exists());
    assert_eq!(r.properties["path"], path.as_str().into());
}

#[tokio::test]
async fn refresh_sees_drift_and_diff_repairs_it_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_of(&dir, "f.txt");
    let inputs = || map([("path", path.as_str().into()), ("content", "v1".into())]);
    let r = create(inputs()).await;

    let unchanged = refresh(&r.id, &r.properties).await;
    assert_eq!(unchanged.id, r.id);
    assert_eq!(unchanged.properties, r.properties);

    std::fs::write(&path, "edited by hand").unwrap();
    let drifted = refresh(&r.id, &r.properties).await;
    assert_eq!(drifted.properties["content"], "edited by hand".into());
    assert_eq!(drifted.inputs, r.properties, "refresh keeps the inputs");

    let d = diff(&drifted.properties, inputs()).await;
    assert_eq!(d.changes, DiffChanges::Some);
    assert_eq!(d.detailed_diff.unwrap()["content"].kind, DiffKind::Update);
    assert!(d.replace_keys.is_empty());

    let c = check(inputs()).await;
    let updated = FileProvider::new()
        .update(UpdateRequest {
            urn: urn(),
            id: r.id.clone(),
            old_inputs: r.properties.clone(),
            old_outputs: drifted.properties.clone(),
            new_inputs: c.inputs.clone(),
            timeout: None,
            ignore_changes: Vec::new(),
            preview: false,
            planned: None,
        })
        .await
        .unwrap();
    assert_eq!(updated.properties, c.inputs);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "v1");

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let perms = std::fs::Permissions::from_mode(0o600);
        std::fs::set_permissions(&path, perms).unwrap();
        let drifted = refresh(&r.id, &updated.properties).await;
        assert_eq!(drifted.properties["permissions"], "0600".into());
        let d = diff(&drifted.properties, inputs()).await;
        assert_eq!(
            d.detailed_diff.unwrap()["permissions"].kind,
            DiffKind::Update
        );
    }

    std::fs::remove_file(&path).unwrap();
    let gone = refresh(&r.id, &r.properties).await;
    assert_eq!(gone.id, "", "a deleted file reads as gone");
}

#[tokio::test]
async fn a_new_path_replaces_deleting_first() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (path_of(&dir, "a"), path_of(&dir, "b"));
    let r = create(map([("path", a.as_str().into())])).await;
    let d = diff(&r.properties, map([("path", b.as_str().into())])).await;
    assert_eq!(
        d.detailed_diff.clone().unwrap()["path"].kind,
        DiffKind::UpdateReplace
    );
    assert_eq!(d.replace_keys, ["path"]);
    assert!(d.requires_replacement() && d.delete_before_replace);
    let same = diff(&r.properties, map([("path", a.as_str().into())])).await;
    assert_eq!(same.changes, DiffChanges::None);
}

#[tokio::test]
async fn delete_removes_and_tolerates_a_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_of(&dir, "d.txt");
    let r = create(map([("path", path.as_str().into())])).await;
    let provider = FileProvider::new();
    let delete = || {
        provider.delete(DeleteRequest {
            urn: urn(),
            id: r.id.clone(),
            inputs: PropertyMap::new(),
            outputs: r.properties.clone(),
            timeout: None,
        })
    };
    delete().await.unwrap();
    assert!(!std::path::Path::new(&path).exists());
    delete().await.unwrap();
}

#[tokio::test]
async fn import_by_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_of(&dir, "existing.conf");
    std::fs::write(&path, "key=value").unwrap();
    let r = FileProvider::new()
        .read(ReadRequest {
            urn: urn(),
            id: path.clone(),
            inputs: None,
            state: None,
            timeout: None,
        })
        .await
        .unwrap();
    assert_eq!(r.id, path);
    assert_eq!(r.properties["content"], "key=value".into());
    assert_eq!(r.inputs, r.properties);
    let missing = FileProvider::new()
        .read(ReadRequest {
            urn: urn(),
            id: path_of(&dir, "nope"),
            inputs: None,
            state: None,
            timeout: None,
        })
        .await
        .unwrap();
    assert_eq!(missing.id, "");
}

#[tokio::test]
async fn secret_content_stays_secret() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_of(&dir, "s");
    let r = create(map([
        ("path", path.as_str().into()),
        ("content", PropertyValue::secret("pw".into())),
    ]))
    .await;
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "pw");
    let read = refresh(&r.id, &r.properties).await;
    assert_eq!(
        read.properties["content"],
        PropertyValue::secret("pw".into())
    );
    let d = diff(
        &read.properties,
        map([
            ("path", path.as_str().into()),
            ("content", PropertyValue::secret("pw".into())),
        ]),
    )
    .await;
    assert_eq!(d.changes, DiffChanges::None);
}

#[tokio::test]
async fn loader_and_schema() {
    let p = BuiltinLoader::new().load("converge", None).await.unwrap();
    assert_eq!(p.package(), "converge");
    let schema = builtin::schema("converge").unwrap();
    let file = &schema["resources"][FILE];
    assert_eq!(file["requiredInputs"], serde_json::json!(["path"]));
    assert_eq!(file["inputProperties"]["permissions"]["default"], "0644");
    assert_eq!(builtin::PACKAGES, ["random", "command", "converge"]);
}
