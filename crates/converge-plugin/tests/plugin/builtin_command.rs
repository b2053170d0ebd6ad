//! The built-in `command` provider: `command:local:Command` and
//! `command:local:run`, on real processes.
#![cfg(unix)]

use std::time::Duration;

use converge_model::{DiffKind, PropertyMap, PropertyValue, Urn};
use converge_plugin::builtin::{self, command::CommandProvider};
use converge_plugin::{
    CheckRequest, CreateRequest, CreateResponse, DeleteRequest, DiffChanges, DiffRequest,
    DiffResponse, InvokeRequest, Provider, ProviderError, UpdateRequest,
};

const COMMAND: &str = "command:local:Command";

fn urn() -> Urn {
    Urn::new("dev", "proj", None, COMMAND, "cmd").unwrap()
}

fn map<const N: usize>(entries: [(&str, PropertyValue); N]) -> PropertyMap {
    entries
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
}

fn strings(items: &[&str]) -> PropertyValue {
    PropertyValue::Array(items.iter().map(|s| (*s).into()).collect())
}

fn out<'a>(m: &'a PropertyMap, k: &str) -> &'a str {
    m[k].as_str().unwrap_or_else(|| panic!("{k}: {:?}", m[k]))
}

async fn checked(news: PropertyMap) -> PropertyMap {
    let c = CommandProvider::new()
        .check(CheckRequest {
            urn: urn(),
            olds: PropertyMap::new(),
            news,
            random_seed: Vec::new(),
        })
        .await
        .unwrap();
    assert!(c.failures.is_empty(), "{:?}", c.failures);
    c.inputs
}

async fn create_with(
    news: PropertyMap,
    preview: bool,
    timeout: Option<Duration>,
) -> Result<CreateResponse, ProviderError> {
    let properties = checked(news).await;
    CommandProvider::new()
        .create(CreateRequest {
            urn: urn(),
            properties,
            timeout,
            preview,
            planned: None,
        })
        .await
}

async fn create(news: PropertyMap) -> CreateResponse {
    create_with(news, false, None).await.unwrap()
}

async fn update(olds: &PropertyMap, news: PropertyMap) -> Result<PropertyMap, ProviderError> {
    let new_inputs = checked(news).await;
    let r = CommandProvider::new()
        .update(UpdateRequest {
            urn: urn(),
            id: "id".into(),
            old_inputs: PropertyMap::new(),
            old_outputs: olds.clone(),
            new_inputs,
            timeout: None,
            ignore_changes: Vec::new(),
            preview: false,
            planned: None,
        })
        .await?;
    Ok(r.properties)
}

async fn diff(olds: &PropertyMap, news: PropertyMap) -> DiffResponse {
    let new_inputs = checked(news).await;
    CommandProvider::new()
        .diff(DiffRequest {
            urn: urn(),
            id: "id".into(),
            old_inputs: PropertyMap::new(),
            old_outputs: olds.clone(),
            new_inputs,
            ignore_changes: Vec::new(),
        })
        .await
        .unwrap()
}

async fn delete(state: &PropertyMap) -> Result<(), ProviderError> {
    CommandProvider::new()
        .delete(DeleteRequest {
            urn: urn(),
            id: "id".into(),
            inputs: PropertyMap::new(),
            outputs: state.clone(),
            timeout: None,
        })
        .await
}

#[tokio::test]
async fn create_runs_with_environment_dir_and_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let dir_text = dir.path().canonicalize().unwrap();
    let r = create(map([
        ("create", "echo \"$FOO\"; pwd -P; cat; echo warn >&2".into()),
        (
            "environment",
            PropertyValue::Object(map([("FOO", "bar".into())])),
        ),
        ("dir", dir.path().to_str().unwrap().into()),
        ("stdin", "from stdin".into()),
    ]))
    .await;
    assert!(
        r.id.starts_with("cmd") && r.id.len() == "cmd".len() + 8,
        "{}",
        r.id
    );
    let expected = format!("bar\n{}\nfrom stdin", dir_text.display());
    assert_eq!(out(&r.properties, "stdout"), expected);
    assert_eq!(out(&r.properties, "stderr"), "warn");
    assert_eq!(
        out(&r.properties, "create"),
        "echo \"$FOO\"; pwd -P; cat; echo warn >&2"
    );
    assert!(
        r.properties.contains_key("environment"),
        "inputs are outputs too"
    );
}

#[tokio::test]
async fn a_custom_interpreter() {
    let r = create(map([
        ("create", "echo $0".into()),
        ("interpreter", strings(&["/bin/sh", "-c"])),
    ]))
    .await;
    assert_eq!(out(&r.properties, "stdout"), "/bin/sh");
    assert_eq!(builtin::command::default_interpreter(), ["/bin/sh", "-c"]);
}

#[tokio::test]
async fn no_create_command_means_empty_outputs() {
    let r = create(map([("delete", "true".into())])).await;
    assert_eq!(out(&r.properties, "stdout"), "");
    assert_eq!(out(&r.properties, "stderr"), "");
}

#[tokio::test]
async fn update_gets_the_previous_output_and_falls_back_to_create() {
    let first = create(map([("create", "echo one".into())]))
        .await
        .properties;
    let news = || {
        map([
            ("create", "echo two".into()),
            ("update", "echo \"was $PULUMI_COMMAND_STDOUT\"".into()),
        ])
    };
    let second = update(&first, news()).await.unwrap();
    assert_eq!(out(&second, "stdout"), "was one");

    let no_update = update(
        &second,
        map([(
            "create",
            "echo \"create after $PULUMI_COMMAND_STDOUT\"".into(),
        )]),
    )
    .await
    .unwrap();
    assert_eq!(out(&no_update, "stdout"), "create after was one");

    let mut off = news();
    off.insert("addPreviousOutputInEnv".into(), false.into());
    let hidden = update(&second, off).await.unwrap();
    assert_eq!(out(&hidden, "stdout"), "was ");
}

#[tokio::test]
async fn delete_runs_with_the_last_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("deleted");
    let state = create(map([
        ("create", "echo made".into()),
        (
            "delete",
            format!("echo \"$PULUMI_COMMAND_STDOUT\" > {}", log.display()).into(),
        ),
    ]))
    .await
    .properties;
    assert!(!log.exists());
    delete(&state).await.unwrap();
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "made\n");
    // Without a delete command, deleting does nothing.
    delete(&map([("create", "echo".into())])).await.unwrap();
}

#[tokio::test]
async fn triggers_replace_and_other_changes_update() {
    let olds = create(map([
        ("create", "echo a".into()),
        (
            "triggers",
            PropertyValue::Array(vec![1.0.into(), "x".into()]),
        ),
    ]))
    .await
    .properties;
    let same = diff(
        &olds,
        map([
            ("create", "echo a".into()),
            (
                "triggers",
                PropertyValue::Array(vec![1.0.into(), "x".into()]),
            ),
        ]),
    )
    .await;
    assert_eq!(same.changes, DiffChanges::None);

    let triggered = diff(
        &olds,
        map([
            ("create", "echo a".into()),
            (
                "triggers",
                PropertyValue::Array(vec![2.0.into(), "x".into()]),
            ),
        ]),
    )
    .await;
    let detailed = triggered.detailed_diff.clone().unwrap();
    assert_eq!(detailed["triggers[0]"].kind, DiffKind::UpdateReplace);
    assert!(triggered.requires_replacement());

    let changed = diff(
        &olds,
        map([
            ("create", "echo b".into()),
            (
                "triggers",
                PropertyValue::Array(vec![1.0.into(), "x".into()]),
            ),
        ]),
    )
    .await;
    assert_eq!(changed.changes, DiffChanges::Some);
    assert_eq!(
        changed.detailed_diff.unwrap()["create"].kind,
        DiffKind::Update
    );
    assert!(changed.replace_keys.is_empty());
}

#[tokio::test]
async fn a_failing_command_fails_with_its_stderr() {
    let err = create_with(
        map([("create", "echo partial; echo 'it broke' >&2; exit 3".into())]),
        false,
        None,
    )
    .await
    .unwrap_err();
    let ProviderError::Failed(text) = err else {
        panic!("{err:?}")
    };
    assert!(text.contains("exit status 3"), "{text}");
    assert!(text.contains("it broke"), "{text}");
}

#[tokio::test]
async fn secret_inputs_are_redacted_from_errors() {
    let err = create_with(
        map([
            (
                "create",
                "echo \"token $TOKEN rejected\" >&2; exit 1".into(),
            ),
            (
                "environment",
                PropertyValue::Object(map([(
                    "TOKEN",
                    PropertyValue::secret("s3cr3t-v4lue".into()),
                )])),
            ),
        ]),
        false,
        None,
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(!err.contains("s3cr3t-v4lue"), "{err}");
    assert!(err.contains("token [secret] rejected"), "{err}");

    let err = create_with(
        map([(
            "create",
            PropertyValue::secret("exit 4 # hidden-command".into()),
        )]),
        false,
        None,
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("exit status 4") && !err.contains("hidden-command"),
        "{err}"
    );
}

#[tokio::test]
async fn preview_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let r = create_with(
        map([("create", format!("touch {}", marker.display()).into())]),
        true,
        None,
    )
    .await
    .unwrap();
    assert!(!marker.exists());
    assert_eq!(r.properties["stdout"], PropertyValue::Unknown);
    assert_eq!(r.properties["stderr"], PropertyValue::Unknown);
}

#[tokio::test]
async fn timeouts_stop_the_command() {
    let err = create_with(
        map([("create", "sleep 10".into())]),
        false,
        Some(Duration::from_millis(200)),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("timed out"), "{err}");
}

#[tokio::test]
async fn assets_and_archives_are_collected() {
    let dir = tempfile::tempdir().unwrap();
    let r = create(map([
        (
            "create",
            "mkdir -p sub && echo a > a.txt && echo b > sub/b.txt && echo s > sub/secret.txt"
                .into(),
        ),
        ("dir", dir.path().to_str().unwrap().into()),
        ("assetPaths", strings(&["*.txt"])),
        ("archivePaths", strings(&["**.txt", "!**secret.*"])),
    ]))
    .await;
    let PropertyValue::Object(assets) = &r.properties["assets"] else {
        panic!("{:?}", r.properties["assets"])
    };
    assert_eq!(assets.keys().collect::<Vec<_>>(), ["a.txt"]);
    let PropertyValue::Asset(a) = &assets["a.txt"] else {
        panic!()
    };
    assert_eq!(a.hash, converge_model::sha256_hex(b"a\n"));
    let PropertyValue::Archive(archive) = &r.properties["archive"] else {
        panic!()
    };
    let names: Vec<&String> = archive.assets.as_ref().unwrap().keys().collect();
    assert_eq!(names, ["a.txt", "sub/b.txt"]);
}

#[tokio::test]
async fn check_rejects_bad_inputs() {
    let c = CommandProvider::new()
        .check(CheckRequest {
            urn: urn(),
            olds: PropertyMap::new(),
            news: map([
                ("create", "true".into()),
                ("logging", "everything".into()),
                (
                    "environment",
                    PropertyValue::Object(map([("N", 1.0.into())])),
                ),
            ]),
            random_seed: Vec::new(),
        })
        .await
        .unwrap();
    let mut props: Vec<&str> = c.failures.iter().map(|f| f.property.as_str()).collect();
    props.sort();
    assert_eq!(props, ["environment", "logging"]);
}

#[tokio::test]
async fn run_invoke() {
    let p = CommandProvider::new();
    let r = p
        .invoke(InvokeRequest {
            token: "command:local:run".into(),
            args: map([("command", "printf 'hi\\n\\n'".into())]),
        })
        .await
        .unwrap();
    assert!(r.failures.is_empty());
    assert_eq!(
        out(&r.outputs, "stdout"),
        "hi\n",
        "one trailing newline goes"
    );
    assert_eq!(out(&r.outputs, "stderr"), "");

    let r = p
        .invoke(InvokeRequest {
            token: "command:local:run".into(),
            args: PropertyMap::new(),
        })
        .await
        .unwrap();
    assert_eq!(r.failures[0].property, "command");

    let err = p
        .invoke(InvokeRequest {
            token: "command:local:run".into(),
            args: map([("command", "exit 2".into())]),
        })
        .await
        .unwrap_err();
    assert!(err.to_string().contains("exit status 2"), "{err}");
}

#[tokio::test]
async fn the_schema_matches_the_sdk() {
    let schema = builtin::schema("command").unwrap();
    assert!(schema["version"].as_str().unwrap().starts_with("1."));
    let r = &schema["resources"][COMMAND];
    for k in [
        "addPreviousOutputInEnv",
        "archivePaths",
        "assetPaths",
        "create",
        "delete",
        "dir",
        "environment",
        "interpreter",
        "logging",
        "stdin",
        "triggers",
        "update",
    ] {
        assert!(r["inputProperties"][k].is_object(), "{k}");
    }
    assert_eq!(r["inputProperties"]["triggers"]["replaceOnChanges"], true);
    assert_eq!(r["required"], serde_json::json!(["stderr", "stdout"]));
    assert_eq!(
        r["inputProperties"]["logging"]["$ref"],
        "#/types/command:local:Logging"
    );
    assert!(schema["types"]["command:local:Logging"]["enum"].is_array());
    let run = &schema["functions"]["command:local:run"];
    assert_eq!(run["inputs"]["required"], serde_json::json!(["command"]));
    assert!(run["outputs"]["properties"]["stdout"].is_object());
}
