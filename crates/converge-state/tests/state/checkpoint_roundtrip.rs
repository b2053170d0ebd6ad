//! Reading and writing Pulumi state JSON: hand-written fixtures in
//! `tests/fixtures/`, round trips, byte stability, opaque secrets and the
//! messages malformed state gets.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use converge_model::{PropertyValue, ResourceState, Urn};
use converge_state::checkpoint::{
    decrypt_snapshot, read_checkpoint, read_deployment, write_checkpoint, write_checkpoint_into,
    write_checkpoint_to, write_deployment, CheckpointError, CheckpointView, StackCheckpoint,
};
use converge_state::secrets::{BlindingCrypter, Crypter, CryptoError, SecretsMode};
use converge_state::{Manifest, OperationType, Snapshot};
use serde_json::Value;

/// Deterministic test crypter: `b64:` + base64 of the plaintext. The
/// fixtures' ciphertexts were made with `printf '%s' … | base64`.
#[derive(Debug)]
struct TestCrypter;

impl Crypter for TestCrypter {
    fn encrypt(&self, plaintext: &str) -> Result<String, CryptoError> {
        Ok(format!("b64:{}", B64.encode(plaintext)))
    }

    fn decrypt(&self, ciphertext: &str) -> Result<String, CryptoError> {
        let encoded = ciphertext
            .strip_prefix("b64:")
            .ok_or_else(|| CryptoError::Malformed(ciphertext.to_owned()))?;
        let bytes = B64.decode(encoded).map_err(|_| CryptoError::Decrypt)?;
        String::from_utf8(bytes).map_err(|_| CryptoError::Decrypt)
    }
}

const CRYPTER: SecretsMode<'static> = SecretsMode::Crypter(&TestCrypter);

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// JSON with every number as a double, so that `1` and `1.0` compare equal.
fn normalized(bytes: &[u8]) -> Value {
    fn walk(v: Value) -> Value {
        match v {
            Value::Number(n) => Value::from(n.as_f64().unwrap()),
            Value::Array(items) => Value::Array(items.into_iter().map(walk).collect()),
            Value::Object(map) => {
                Value::Object(map.into_iter().map(|(k, v)| (k, walk(v))).collect())
            }
            other => other,
        }
    }
    walk(serde_json::from_slice(bytes).unwrap())
}

fn urn(s: &str) -> Urn {
    Urn::parse(s).unwrap()
}

fn resource<'a>(snapshot: &'a Snapshot, name: &str) -> &'a ResourceState {
    snapshot
        .resources
        .iter()
        .find(|r| r.urn.name() == name)
        .unwrap_or_else(|| panic!("no resource {name}"))
}

#[test]
fn checkpoint_fixture_reads_into_the_domain() {
    let cp = read_checkpoint(&fixture("checkpoint_v3.json"), CRYPTER).unwrap();
    assert_eq!(cp.stack, "dev");
    let config: Value = serde_json::from_str(cp.config.as_deref().unwrap()).unwrap();
    assert_eq!(config["shop:apiKey"]["secure"], "v1:bm9uY2U=:Y2lwaGVy");
    let snap = cp.latest.unwrap();
    assert_eq!(snap.manifest.version, "v3.113.0");
    assert_eq!(snap.secrets_providers.as_ref().unwrap().kind, "passphrase");
    assert_eq!(snap.resources.len(), 8);

    let stack = resource(&snap, "shop-dev");
    assert_eq!(
        stack.outputs["dbPassword"],
        PropertyValue::secret("s3cr3t".into())
    );
    assert_eq!(stack.outputs["count"], PropertyValue::Number(3.0));
    assert_eq!(
        stack.outputs["mixed"],
        PropertyValue::secret(PropertyValue::Array(vec![
            "a".into(),
            PropertyValue::Number(1.5),
            PropertyValue::Bool(true)
        ]))
    );

    let site = resource(&snap, "site");
    assert_eq!(site.outputs["endpoint"], PropertyValue::Unknown);
    assert_eq!(
        site.aliases,
        vec![urn("urn:pulumi:dev::shop::acme:web:Website::site")]
    );

    let bucket = resource(&snap, "site-bucket");
    assert!(bucket.custom && bucket.protect);
    assert_eq!(bucket.parent.as_ref(), Some(&site.urn));
    assert_eq!(
        bucket.provider.as_ref().unwrap().id,
        "f2a9c4e0-1b2c-4d5e-8f90-0123456789ab"
    );
    assert_eq!(bucket.outputs["huge"], PropertyValue::Number(1e21));
    assert_eq!(bucket.outputs["tiny"], PropertyValue::Number(1e-7));
    let timeouts = bucket.custom_timeouts.as_ref().unwrap();
    assert_eq!(timeouts.create.as_deref(), Some("300s"));
    assert_eq!(timeouts.update, None);
    assert_eq!(timeouts.delete.as_deref(), Some("1.5s"));
    assert_eq!(timeouts.read.as_deref(), Some("45s"));
    assert_eq!(bucket.property_dependencies["tags"], Vec::<Urn>::new());

    let object = resource(&snap, "index");
    let PropertyValue::Secret(config) = &object.outputs["config"] else {
        panic!("config is not secret");
    };
    let config = config.as_object().unwrap();
    assert_eq!(config["password"], PropertyValue::secret("hunter2".into()));
    assert_eq!(config["port"], PropertyValue::Number(5432.0));
    let PropertyValue::ResourceReference(reference) = &object.inputs["bucket"] else {
        panic!("bucket is not a reference");
    };
    assert_eq!(reference.urn, bucket.urn);
    assert_eq!(reference.package_version, "6.0.0");
    assert!(
        matches!(&object.inputs["source"], PropertyValue::Asset(a) if a.text.as_deref() == Some("<h1>hi</h1>"))
    );
    assert_eq!(object.deleted_with.as_ref(), Some(&bucket.urn));

    let handler = resource(&snap, "handler");
    assert!(
        matches!(&handler.inputs["code"], PropertyValue::Archive(a) if a.assets.as_ref().unwrap().len() == 3)
    );
    assert_eq!(handler.import_id.as_deref(), Some("handler-fn"));
    assert!(handler.retain_on_delete);
    assert_eq!(
        handler.unknown_fields.keys().collect::<Vec<_>>(),
        ["futureFlag", "hooks", "zeta"]
    );
    assert_eq!(
        handler.unknown_fields["hooks"],
        r#"{"beforeCreate":["notify"]}"#
    );

    assert!(resource(&snap, "default-vpc").external);
    let db = resource(&snap, "db");
    assert!(db.delete && db.pending_replacement);
    assert_eq!(db.init_errors.len(), 1);

    assert_eq!(snap.pending_operations.len(), 1);
    assert_eq!(snap.pending_operations[0].kind, OperationType::Creating);
    assert_eq!(snap.metadata.as_deref(), Some("{}"));
}

#[test]
fn checkpoint_round_trips_semantically_and_byte_stably() {
    let input = fixture("checkpoint_v3.json");
    let cp = read_checkpoint(&input, CRYPTER).unwrap();
    let written = write_checkpoint(&cp, CRYPTER).unwrap();
    assert_eq!(normalized(&written), normalized(&input));

    let reread = read_checkpoint(&written, CRYPTER).unwrap();
    assert_eq!(reread, cp);
    assert_eq!(write_checkpoint(&reread, CRYPTER).unwrap(), written);
    assert_eq!(
        write_checkpoint(&cp, CRYPTER).unwrap(),
        written,
        "same input, same bytes"
    );

    let text = String::from_utf8(written).unwrap();
    assert!(text.starts_with(
        "{\n    \"version\": 3,\n    \"checkpoint\": {\n        \"stack\": \"dev\",\n"
    ));
    assert!(text.ends_with("}\n"));
    for expected in [
        "\"huge\": 1e+21,",
        "\"tiny\": 1e-7,",
        "\"count\": 3,",
        "\"create\": 300,",
        "\"delete\": 1.5,",
        "\"read\": 45\n",
        // Unknown fields come back after the known ones, sorted.
        "\"retainOnDelete\": true,\n                    \"futureFlag\": true,\n                    \"hooks\": {",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in\n{text}");
    }
    assert!(!text.contains("\"features\""));
}

/// The same text whichever way it is written: whole, into a used buffer,
/// or to a writer as it is produced; a manifest passed beside the
/// snapshot is written in place of its own, and nothing else changes.
#[test]
fn a_checkpoint_is_the_same_text_into_a_buffer_or_a_writer() {
    let cp = read_checkpoint(&fixture("checkpoint_v3.json"), CRYPTER).unwrap();
    let whole = write_checkpoint(&cp, CRYPTER).unwrap();
    let used = b"the previous checkpoint's text, longer than nothing".to_vec();
    assert_eq!(
        write_checkpoint_into(cp.view(), CRYPTER, used).unwrap(),
        whole
    );
    let mut streamed = Vec::new();
    write_checkpoint_to(cp.view(), CRYPTER, &mut streamed).unwrap();
    assert_eq!(streamed, whole);

    let stamp = Manifest::converge("2030-01-01T00:00:00Z");
    let view = CheckpointView {
        manifest: Some(&stamp),
        ..cp.view()
    };
    let stamped = read_checkpoint(
        &write_checkpoint_into(view, CRYPTER, Vec::new()).unwrap(),
        CRYPTER,
    )
    .unwrap();
    let mut expected = cp.clone();
    expected.latest.as_mut().unwrap().manifest = stamp;
    assert_eq!(stamped, expected);
}

/// A writer that fails part of the way is a write error, not a value the
/// state could not hold.
#[test]
fn a_failing_writer_is_a_write_error() {
    struct FailsAfter(usize);
    impl std::io::Write for FailsAfter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.0 < buf.len() {
                return Err(std::io::Error::new(std::io::ErrorKind::BrokenPipe, "gone"));
            }
            self.0 -= buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let cp = read_checkpoint(&fixture("checkpoint_v3.json"), CRYPTER).unwrap();
    let err = write_checkpoint_to(cp.view(), CRYPTER, FailsAfter(100)).unwrap_err();
    match err {
        CheckpointError::Write(io) => assert_eq!(io.kind(), std::io::ErrorKind::BrokenPipe),
        other => panic!("want a write error, got {other}"),
    }
}

#[test]
fn opaque_mode_round_trips_byte_for_byte() {
    let written = write_checkpoint(
        &read_checkpoint(&fixture("checkpoint_v3.json"), CRYPTER).unwrap(),
        CRYPTER,
    )
    .unwrap();
    let opaque = read_checkpoint(&written, SecretsMode::Opaque).unwrap();
    let stack = resource(opaque.latest.as_ref().unwrap(), "shop-dev");
    assert_eq!(
        stack.outputs["dbPassword"],
        PropertyValue::secret("b64:InMzY3IzdCI=".into())
    );
    assert_eq!(
        write_checkpoint(&opaque, SecretsMode::Opaque).unwrap(),
        written
    );

    // The fixture itself, without the key, gives the same bytes.
    let direct = read_checkpoint(&fixture("checkpoint_v3.json"), SecretsMode::Opaque).unwrap();
    assert_eq!(
        write_checkpoint(&direct, SecretsMode::Opaque).unwrap(),
        written
    );
}

#[test]
fn version_4_export_with_refresh_before_update() {
    let input = fixture("export_v4_refresh.json");
    let snap = read_deployment(&input, CRYPTER).unwrap();
    let release = resource(&snap, "ingress");
    assert!(release.refresh_before_update);
    let controller = resource(&snap, "ingress-controller");
    assert_eq!(controller.view_of.as_ref(), Some(&release.urn));
    assert_eq!(
        resource(&snap, "k8s").inputs["kubeconfig"],
        PropertyValue::Unknown
    );
    assert!(snap.secrets_providers.is_none());

    let written = write_deployment(&snap, CRYPTER).unwrap();
    assert_eq!(normalized(&written), normalized(&input));
    assert_eq!(
        write_deployment(&read_deployment(&written, CRYPTER).unwrap(), CRYPTER).unwrap(),
        written
    );
    let text = String::from_utf8(written).unwrap();
    assert!(text.starts_with(
        "{\n    \"version\": 4,\n    \"features\": [\n        \"refreshBeforeUpdate\"\n    ],\n    \"deployment\": {\n"
    ));

    // Without the flag, version 3 and no features.
    let mut plain = snap.clone();
    plain
        .resources
        .iter_mut()
        .for_each(|r| r.refresh_before_update = false);
    let v = normalized(&write_deployment(&plain, CRYPTER).unwrap());
    assert_eq!(v["version"], 3.0);
    assert!(v.get("features").is_none());
}

/// A snapshot of `resources` with a fixed manifest.
fn snapshot_of(resources: Vec<ResourceState>) -> Snapshot {
    Snapshot {
        manifest: Manifest {
            time: "2025-01-01T00:00:00Z".into(),
            magic: "m".into(),
            version: "converge-test".into(),
            plugins: None,
        },
        secrets_providers: None,
        resources,
        pending_operations: Vec::new(),
        metadata: None,
    }
}

#[test]
fn a_snapshot_built_in_code_writes_like_pulumi() {
    let stack = urn("urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev");
    let mut res = ResourceState::new(stack, false);
    res.outputs.insert("n".into(), PropertyValue::Number(2.0));
    let snapshot = snapshot_of(vec![res]);
    let text =
        String::from_utf8(write_deployment(&snapshot, SecretsMode::Opaque).unwrap()).unwrap();
    let expected = r#"{
    "version": 3,
    "deployment": {
        "manifest": {
            "time": "2025-01-01T00:00:00Z",
            "magic": "m",
            "version": "converge-test"
        },
        "resources": [
            {
                "urn": "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev",
                "custom": false,
                "type": "pulumi:pulumi:Stack",
                "outputs": {
                    "n": 2
                }
            }
        ],
        "metadata": {}
    }
}
"#;
    assert_eq!(text, expected);

    let empty = StackCheckpoint {
        stack: "dev".into(),
        config: None,
        latest: None,
    };
    let bytes = write_checkpoint(&empty, SecretsMode::Opaque).unwrap();
    assert_eq!(
        String::from_utf8(bytes.clone()).unwrap(),
        "{\n    \"version\": 3,\n    \"checkpoint\": {\n        \"stack\": \"dev\"\n    }\n}\n"
    );
    assert_eq!(read_checkpoint(&bytes, SecretsMode::Opaque).unwrap(), empty);
}

#[test]
fn decrypt_failures_name_the_resource_and_property() {
    let err = read_checkpoint(
        &fixture("checkpoint_v3.json"),
        SecretsMode::Crypter(&BlindingCrypter),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("resource urn:pulumi:dev::shop::pulumi:pulumi:Stack::shop-dev: outputs.dbPassword: failed to decrypt"),
        "{err}"
    );
}

/// The fixture with secrets in every place a value can hold one: inside
/// a list, inside an output value, and in a pending operation.
fn fixture_with_more_secrets() -> Vec<u8> {
    let secret = |plain: &str| {
        serde_json::json!({
            "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
            "ciphertext": TestCrypter.encrypt(plain).unwrap(),
        })
    };
    let mut cp: Value = serde_json::from_slice(&fixture("checkpoint_v3.json")).unwrap();
    let latest = &mut cp["checkpoint"]["latest"];
    latest["resources"][0]["outputs"]["list"] =
        serde_json::json!(["plain", secret(r#"{"k":[1,"two"]}"#)]);
    latest["resources"][0]["outputs"]["wrapped"] = serde_json::json!({
        "4dabf18193072939515e22adb298388d": "d0e6a833031e9bbcd3f4e8bde6ca49a4",
        "value": secret(r#""inside""#),
        "secret": false,
    });
    latest["pending_operations"][0]["resource"]["inputs"]["token"] = secret(r#""t0k""#);
    serde_json::to_vec(&cp).unwrap()
}

#[test]
fn an_opaque_read_decrypted_in_place_equals_a_read_with_the_crypter() {
    let bytes = fixture_with_more_secrets();
    let with_crypter = read_checkpoint(&bytes, CRYPTER).unwrap().latest.unwrap();
    let mut decrypted = read_checkpoint(&bytes, SecretsMode::Opaque)
        .unwrap()
        .latest
        .unwrap();
    assert_ne!(decrypted, with_crypter, "the opaque read holds ciphertext");
    decrypt_snapshot(&mut decrypted, &TestCrypter).unwrap();
    assert_eq!(decrypted, with_crypter);
    let pending = &decrypted.pending_operations[0].resource.inputs["token"];
    assert_eq!(
        pending,
        &PropertyValue::secret(PropertyValue::String("t0k".into()))
    );
}

#[test]
fn decrypting_in_place_fails_as_a_read_with_the_crypter_does() {
    let bytes = fixture_with_more_secrets();
    let read_error = read_checkpoint(&bytes, SecretsMode::Crypter(&BlindingCrypter))
        .unwrap_err()
        .to_string();
    let mut opaque = read_checkpoint(&bytes, SecretsMode::Opaque)
        .unwrap()
        .latest
        .unwrap();
    let error = decrypt_snapshot(&mut opaque, &BlindingCrypter)
        .unwrap_err()
        .to_string();
    assert_eq!(error, read_error);

    // A secret whose plaintext is not JSON, nested in a list.
    let mut cp: Value = serde_json::from_slice(&bytes).unwrap();
    cp["checkpoint"]["latest"]["resources"][0]["outputs"]["list"][1]["ciphertext"] =
        Value::String(TestCrypter.encrypt("not json").unwrap());
    let bytes = serde_json::to_vec(&cp).unwrap();
    let read_error = read_checkpoint(&bytes, CRYPTER).unwrap_err().to_string();
    let mut opaque = read_checkpoint(&bytes, SecretsMode::Opaque)
        .unwrap()
        .latest
        .unwrap();
    let error = decrypt_snapshot(&mut opaque, &TestCrypter)
        .unwrap_err()
        .to_string();
    assert_eq!(error, read_error);
    assert!(error.contains("outputs.list[1]"), "{error}");
}

// ---- malformed state ----

const MANIFEST: &str =
    r#""manifest": {"time": "2025-01-01T00:00:00Z", "magic": "", "version": "v3"}"#;
const STACK_URN: &str = "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev";

/// A `stack export` file with one resource.
fn export_with(resource: &str) -> String {
    format!(r#"{{"version": 3, "deployment": {{{MANIFEST}, "resources": [{resource}]}}}}"#)
}

fn deployment_error(text: &str, mode: SecretsMode<'_>) -> String {
    match read_deployment(text.as_bytes(), mode) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

fn checkpoint_error(text: &str) -> String {
    match read_checkpoint(text.as_bytes(), CRYPTER) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn malformed_files_are_refused_with_clear_messages() {
    let custom = |extra: &str| {
        export_with(&format!(
            r#"{{"urn": "urn:pulumi:dev::p::aws:s3/bucket:Bucket::b", "custom": true, "id": "b-1", "type": "aws:s3/bucket:Bucket"{extra}}}"#
        ))
    };
    let cases: Vec<(&str, String, &[&str])> = vec![
        (
            "truncated JSON",
            "{\"version\": 3,\n \"checkpoint\": {".to_owned(),
            &["the state is not valid JSON (line 2, column 16)", "EOF"],
        ),
        ("too old", r#"{"version": 2, "checkpoint": {"stack": "dev"}}"#.to_owned(), &["state version 2 is too old"]),
        ("too new", r#"{"version": 5, "checkpoint": {"stack": "dev"}}"#.to_owned(), &["state version 5 is newer", "upgrade Converge"]),
        ("no version", r#"{"checkpoint": {"stack": "dev"}}"#.to_owned(), &["no `version` field"]),
        ("version text", r#"{"version": "3", "checkpoint": {"stack": "dev"}}"#.to_owned(), &["must be an integer, found \"3\""]),
        (
            "unknown feature",
            r#"{"version": 4, "features": ["refreshBeforeUpdate", "teleport"], "checkpoint": {"stack": "dev"}}"#.to_owned(),
            &["this state needs feature \"teleport\" which this version of Converge does not support"],
        ),
        (
            "export file given as checkpoint",
            format!(r#"{{"version": 3, "deployment": {{{MANIFEST}}}}}"#),
            &["no `checkpoint` object; it holds a `deployment`"],
        ),
        ("no stack", r#"{"version": 3, "checkpoint": {}}"#.to_owned(), &["the checkpoint: the required field `stack` is missing"]),
    ];
    for (what, text, expected) in &cases {
        let err = checkpoint_error(text);
        for e in *expected {
            assert!(err.contains(e), "{what}: {err:?} lacks {e:?}");
        }
    }

    let bad_resource = |extra: &str| custom(extra);
    let deployment_cases: Vec<(&str, String, &[&str])> = vec![
        (
            "bad URN",
            export_with(r#"{"urn": "not-a-urn", "custom": false, "type": "a:b:C"}"#),
            &["resources[0]: `urn`: invalid URN \"not-a-urn\""],
        ),
        (
            "no type",
            export_with(&format!(r#"{{"urn": "{STACK_URN}", "custom": false}}"#)),
            &["resource urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev: the required field `type` is missing"],
        ),
        (
            "bad parent",
            bad_resource(r#", "parent": "urn:pulumi:dev::p""#),
            &["resource urn:pulumi:dev::p::aws:s3/bucket:Bucket::b: `parent`: invalid URN"],
        ),
        (
            "bad dependency",
            bad_resource(r#", "dependencies": ["urn:pulumi:dev::p::a:b:C::ok", "nope"]"#),
            &["`dependencies[1]`: invalid URN \"nope\""],
        ),
        (
            "bad property dependency",
            bad_resource(r#", "propertyDependencies": {"tags": ["urn:x"]}"#),
            &["`propertyDependencies.tags[0]`: invalid URN"],
        ),
        (
            "provider of the wrong type",
            bad_resource(r#", "provider": "urn:pulumi:dev::p::aws:s3/bucket:Bucket::b::id""#),
            &["`provider`: invalid provider reference", "not a provider type"],
        ),
        (
            "provider without ID",
            bad_resource(r#", "provider": "garbage""#),
            &["`provider`: invalid provider reference \"garbage\": expected <urn>::<id>"],
        ),
        (
            "unknown operation",
            format!(
                r#"{{"version": 3, "deployment": {{{MANIFEST}, "pending_operations": [{{"resource": {{"urn": "{STACK_URN}", "custom": false, "type": "pulumi:pulumi:Stack"}}, "type": "exploding"}}]}}}}"#
            ),
            &["pending_operations[0]: unknown operation type \"exploding\""],
        ),
        (
            "unknown signature",
            bad_resource(r#", "inputs": {"weird": {"4dabf18193072939515e22adb298388d": "ffff"}}"#),
            &["resource urn:pulumi:dev::p::aws:s3/bucket:Bucket::b: inputs.weird: unknown signature \"ffff\""],
        ),
        (
            "undecryptable secret",
            bad_resource(r#", "outputs": {"nested": {"password": {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "ciphertext": "v1:garbage"}}}"#),
            &["resource urn:pulumi:dev::p::aws:s3/bucket:Bucket::b: outputs.nested.password: failed to decrypt a secret"],
        ),
        (
            "secret with both texts",
            bad_resource(r#", "outputs": {"s": {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "ciphertext": "b64:MQ==", "plaintext": "1"}}"#),
            &["outputs.s: malformed secret: exactly one of `ciphertext` and `plaintext`"],
        ),
        (
            "wrong type",
            format!("{{\"version\": 3, \"deployment\": {{{MANIFEST}, \"resources\": [\n{{\"urn\": \"{STACK_URN}\", \"custom\": \"yes\", \"type\": \"pulumi:pulumi:Stack\"}}]}}}}"),
            &["the state has an unexpected value (line 2", "expected a boolean"],
        ),
        (
            "component with an ID",
            export_with(&format!(r#"{{"urn": "{STACK_URN}", "custom": false, "id": "x", "type": "pulumi:pulumi:Stack"}}"#)),
            &["`custom` is false but it has an `id`"],
        ),
        (
            "bad timeout",
            bad_resource(r#", "customTimeouts": {"create": "soon"}"#),
            &["`customTimeouts.create`: \"soon\" is not a number of seconds or a duration"],
        ),
        (
            "no manifest",
            r#"{"version": 3, "deployment": {"resources": []}}"#.to_owned(),
            &["the deployment: the required field `manifest` is missing"],
        ),
        (
            "checkpoint file given as export",
            r#"{"version": 3, "checkpoint": {"stack": "dev"}}"#.to_owned(),
            &["no `deployment` object; it holds a `checkpoint`"],
        ),
    ];
    for (what, text, expected) in &deployment_cases {
        let err = deployment_error(text, CRYPTER);
        for e in *expected {
            assert!(err.contains(e), "{what}: {err:?} lacks {e:?}");
        }
    }

    // A plaintext secret (from `stack export --show-secrets`) reads with a
    // crypter, and needs one.
    let plaintext = custom(
        r#", "outputs": {"s": {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "plaintext": "\"pw\""}}"#,
    );
    let snap = read_deployment(plaintext.as_bytes(), CRYPTER).unwrap();
    assert_eq!(
        snap.resources[0].outputs["s"],
        PropertyValue::secret("pw".into())
    );
    let err = deployment_error(&plaintext, SecretsMode::Opaque);
    assert!(
        err.contains("outputs.s: the secret is stored as plaintext"),
        "{err}"
    );
}

#[test]
fn unknown_top_level_keys_are_tolerated() {
    let text = format!(
        r#"{{"version": 3, "future": 1, "deployment": {{{MANIFEST}, "extensions": {{"x": 1}}, "resources": [{{"urn": "{STACK_URN}", "custom": false, "type": "pulumi:pulumi:Stack", "stackTrace": [1, 2]}}]}}}}"#
    );
    let snap = read_deployment(text.as_bytes(), SecretsMode::Opaque).unwrap();
    assert_eq!(snap.resources[0].unknown_fields["stackTrace"], "[1,2]");
    let written = String::from_utf8(write_deployment(&snap, SecretsMode::Opaque).unwrap()).unwrap();
    assert!(
        written.contains(
            "\"stackTrace\": [\n                    1,\n                    2\n                ]"
        ),
        "{written}"
    );
}

/// Values that cannot be written stop the write with the resource and the
/// property they are at, whether in a checkpoint, an export or a journal
/// entry (property maps are written straight from the values, so the
/// path is kept beside the serializer).
#[test]
fn values_that_cannot_be_written_name_the_resource_and_property() {
    use converge_model::CustomTimeouts;
    use converge_state::journal::{json::entry_to_json, JournalEntry};

    let stack = urn("urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev");
    let fine = ResourceState::new(stack.clone(), false);
    let mut bad = ResourceState::new(urn("urn:pulumi:dev::p::pkg:index:Thing::bad"), true);
    let mut tags = converge_model::PropertyMap::new();
    tags.insert("weight".into(), PropertyValue::Number(f64::INFINITY));
    bad.outputs.insert(
        "tags".into(),
        PropertyValue::Array(vec![PropertyValue::Null, PropertyValue::Object(tags)]),
    );
    let expected = "resource urn:pulumi:dev::p::pkg:index:Thing::bad: outputs.tags[1].weight: inf cannot be written as JSON (not a finite number)";

    let with_bad = snapshot_of(vec![fine.clone(), bad.clone()]);
    let err = write_deployment(&with_bad, SecretsMode::Opaque).unwrap_err();
    assert_eq!(err.to_string(), expected);
    let checkpoint = StackCheckpoint {
        stack: "dev".into(),
        config: None,
        latest: Some(with_bad),
    };
    let err = write_checkpoint(&checkpoint, CRYPTER).unwrap_err();
    assert_eq!(err.to_string(), expected);
    let entry = JournalEntry::success(1, 1).with_state(bad);
    let err = entry_to_json(&entry, SecretsMode::Opaque).unwrap_err();
    assert_eq!(err.to_string(), expected);

    // A secret in opaque mode must be its ciphertext.
    let mut opaque = fine.clone();
    opaque.inputs.insert(
        "password".into(),
        PropertyValue::Secret(Box::new(PropertyValue::Bool(true))),
    );
    let err = write_deployment(&snapshot_of(vec![opaque]), SecretsMode::Opaque)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("resource urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev: inputs.password: a secret read without its secrets provider"),
        "{err}"
    );

    // The resource's other fields fail the same way from inside the list.
    let mut slow = fine;
    slow.custom_timeouts = Some(Box::new(CustomTimeouts {
        create: Some("soon".into()),
        ..CustomTimeouts::default()
    }));
    let err = write_deployment(&snapshot_of(vec![slow]), SecretsMode::Opaque)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "resource urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev: `customTimeouts.create`: \"soon\" is not a number of seconds or a duration"
    );
}
