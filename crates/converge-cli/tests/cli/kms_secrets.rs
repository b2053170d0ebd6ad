//! Stacks whose secrets an AWS KMS key protects (`awskms://`, Pulumi's
//! `cloud` secrets provider), against a real KMS API: the moto server that
//! scripts/test starts for S3 serves KMS on the same endpoint. Keys are
//! made with boto3 from the test venv.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

const PROGRAM: &str = "name: kmsproj
runtime: yaml
config:
  dbPassword:
    type: string
resources:
  pw:
    type: random:index/randomPassword:RandomPassword
    properties:
      length: 24
outputs:
  password: ${pw.result}
  db: ${dbPassword}
";

/// The secret config value the tests set.
const DB_PASSWORD: &str = "kms-db-S3cret-value";

/// The KMS endpoint (moto, host:port) and the venv's Python with boto3, or
/// `None` to skip outside CI.
fn kms_server() -> Option<(String, String)> {
    let endpoint = std::env::var("CONVERGE_TEST_S3_ENDPOINT").ok();
    let python = std::env::var("CONVERGE_TEST_PYTHON").ok();
    match (endpoint, python) {
        (Some(e), Some(p)) => Some((e, p)),
        _ if std::env::var_os("CI").is_some() => {
            panic!(
                "CONVERGE_TEST_S3_ENDPOINT and CONVERGE_TEST_PYTHON must be set: run scripts/test"
            )
        }
        _ => {
            eprintln!(
                "SKIPPED: set CONVERGE_TEST_S3_ENDPOINT and CONVERGE_TEST_PYTHON (scripts/test \
                 does) for the KMS tests"
            );
            None
        }
    }
}

struct World {
    scratch: common::Scratch,
    backend: common::Backend,
    endpoint: String,
    python: String,
}

impl World {
    fn new() -> Option<World> {
        World::on(common::Backend::File)
    }

    fn on(backend: common::Backend) -> Option<World> {
        let (endpoint, python) = kms_server()?;
        Some(World {
            scratch: common::Scratch::new(PROGRAM),
            backend,
            endpoint,
            python,
        })
    }

    /// A new KMS key with a fresh alias; the alias (`alias/…`).
    fn new_key(&self) -> String {
        let alias = format!("alias/converge-{}", uuid::Uuid::new_v4().simple());
        let script = format!(
            "import boto3\n\
             kms = boto3.client('kms', endpoint_url='http://{}', region_name='us-east-1',\n\
                 aws_access_key_id='converge-test', aws_secret_access_key='converge-test')\n\
             key = kms.create_key()['KeyMetadata']['KeyId']\n\
             kms.create_alias(AliasName='{alias}', TargetKeyId=key)\n",
            self.endpoint
        );
        let out = Command::new(&self.python)
            .args(["-c", &script])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "boto3: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        alias
    }

    /// The `awskms://` URL of `alias` on the test server.
    fn url(&self, alias: &str) -> String {
        format!(
            "awskms://{alias}?region=us-east-1&endpoint=http://{}",
            self.endpoint
        )
    }

    /// `converge` with AWS credentials and, for a KMS stack, no passphrase
    /// at all: none may be asked for.
    fn cmd(&self, passphrase: Option<&str>) -> Command {
        let mut c = self.scratch.command("unused");
        self.backend.apply(&mut c);
        c.env("AWS_ACCESS_KEY_ID", "converge-test")
            .env("AWS_SECRET_ACCESS_KEY", "converge-test")
            .env_remove("AWS_SESSION_TOKEN")
            .env_remove("AWS_ENDPOINT_URL")
            .env_remove("AWS_ENDPOINT_URL_KMS")
            .env("AWS_REGION", "us-east-1");
        match passphrase {
            Some(p) => c.env("PULUMI_CONFIG_PASSPHRASE", p),
            None => c.env_remove("PULUMI_CONFIG_PASSPHRASE"),
        };
        c
    }

    fn run(&self, args: &[&str]) -> String {
        common::stdout_of(self.cmd(None), args)
    }

    fn run_pw(&self, args: &[&str]) -> String {
        common::stdout_of(self.cmd(Some("pw")), args)
    }

    fn fail(&self, args: &[&str]) -> String {
        common::failure_of(self.cmd(Some("pw")), args)
    }

    fn settings(&self) -> String {
        std::fs::read_to_string(self.scratch.project.join("Pulumi.dev.yaml")).unwrap()
    }

    fn checkpoint(&self) -> serde_json::Value {
        let path = self.scratch.backend.join(".pulumi/stacks/kmsproj/dev.json");
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    }

    /// The stack's outputs, decrypted (`--show-secrets --json`).
    fn outputs(&self, passphrase: Option<&str>) -> serde_json::Value {
        let text = common::stdout_of(
            self.cmd(passphrase),
            &["stack", "output", "--show-secrets", "--json"],
        );
        serde_json::from_str(&text).unwrap()
    }

    /// Every file of the world (backend, project, home) and its bytes.
    fn files(&self) -> BTreeMap<String, Vec<u8>> {
        let mut files = BTreeMap::new();
        collect(self.scratch.dir.path(), &mut files);
        files
    }

    /// No file but the program holds any of `plaintexts`.
    fn assert_no_plaintext(&self, plaintexts: &[&str]) {
        for (path, bytes) in self.files() {
            let text = String::from_utf8_lossy(&bytes);
            for p in plaintexts {
                assert!(!text.contains(p), "{path} holds the plaintext secret {p:?}");
            }
        }
    }
}

fn collect(dir: &Path, files: &mut BTreeMap<String, Vec<u8>>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, files);
        } else {
            files.insert(path.display().to_string(), std::fs::read(&path).unwrap());
        }
    }
}

/// The `secrets_providers` of a checkpoint.
fn provider(checkpoint: &serde_json::Value) -> &serde_json::Value {
    &checkpoint["checkpoint"]["latest"]["secrets_providers"]
}

#[test]
fn a_kms_stack_updates_exports_and_imports_without_a_passphrase() {
    let Some(w) = World::new() else {
        return;
    };
    let url = w.url(&w.new_key());
    w.run(&["stack", "init", "dev", "--secrets-provider", &url]);
    let settings = w.settings();
    assert!(
        settings.starts_with(&format!("secretsprovider: {url}\nencryptedkey: ")),
        "{settings}"
    );
    assert!(!settings.contains("encryptionsalt"), "{settings}");

    w.run(&["config", "set", "--secret", "dbPassword", DB_PASSWORD]);
    assert!(w.settings().contains("secure: v1:"), "{}", w.settings());
    assert_eq!(w.run(&["config", "get", "dbPassword"]).trim(), DB_PASSWORD);
    let up = w.run(&["up", "--yes"]);
    assert!(up.contains("[secret]") && !up.contains(DB_PASSWORD), "{up}");

    // The state records Pulumi's `cloud` provider with the same URL and
    // encrypted data key as the settings file.
    let cp = w.checkpoint();
    let p = provider(&cp);
    assert_eq!(p["type"], "cloud", "{p}");
    assert_eq!(p["state"]["url"], url.as_str());
    let key = p["state"]["encryptedkey"].as_str().unwrap();
    assert!(
        w.settings().contains(&format!("encryptedkey: {key}\n")),
        "{}",
        w.settings()
    );

    let outputs = w.outputs(None);
    assert_eq!(outputs["db"], DB_PASSWORD);
    let password = outputs["password"].as_str().unwrap().to_owned();
    assert_eq!(password.len(), 24);
    w.assert_no_plaintext(&[DB_PASSWORD, &password]);

    // Export, import back, and the stack still deploys with no changes.
    let export = w.run(&["stack", "export"]);
    assert!(!export.contains(DB_PASSWORD) && !export.contains(&password));
    let exported: serde_json::Value = serde_json::from_str(&export).unwrap();
    assert_eq!(exported["deployment"]["secrets_providers"], *p);
    std::fs::write(w.scratch.project.join("dev.export.json"), &export).unwrap();
    w.run(&["stack", "import", "--file", "dev.export.json"]);
    let preview = w.run(&["preview"]);
    assert!(
        preview.contains("2 unchanged") || preview.contains("unchanged"),
        "{preview}"
    );
    let up = w.run(&["up", "--yes", "--refresh"]);
    assert!(!up.contains(DB_PASSWORD) && !up.contains(&password), "{up}");
    assert_eq!(w.outputs(None)["password"], password.as_str());

    // A fresh checkout (no settings file) takes the provider from the
    // state, as Pulumi does, and still needs no passphrase.
    let config = w.settings();
    std::fs::remove_file(w.scratch.project.join("Pulumi.dev.yaml")).unwrap();
    assert_eq!(w.outputs(None)["password"], password.as_str());
    assert!(w
        .settings()
        .starts_with(&format!("secretsprovider: {url}\nencryptedkey: {key}\n")));
    std::fs::write(w.scratch.project.join("Pulumi.dev.yaml"), config).unwrap();

    // State edits and `converge import` on a KMS stack.
    let urn = "urn:pulumi:dev::kmsproj::random:index/randomPassword:RandomPassword::pw";
    w.run(&["state", "protect", urn, "--yes"]);
    assert_eq!(w.outputs(None)["password"], password.as_str());
    w.run(&["state", "unprotect", urn, "--yes"]);
    w.run(&[
        "import",
        "random:index/randomString:RandomString",
        "imported",
        "abc",
        "--protect=false",
        "--yes",
    ]);
    assert_eq!(w.outputs(None)["db"], DB_PASSWORD);

    // Another project's stack references this one: its secret outputs are
    // opened through the key service too.
    let consumer = w.scratch.dir.path().join("consumer");
    std::fs::create_dir_all(&consumer).unwrap();
    std::fs::write(consumer.join("Pulumi.yaml"), CONSUMER).unwrap();
    w.run(&[
        "-C",
        "../consumer",
        "stack",
        "select",
        "--create",
        "dev",
        "--secrets-provider",
        &url,
    ]);
    w.run(&["-C", "../consumer", "up", "--yes"]);
    let shown: serde_json::Value = serde_json::from_str(&w.run(&[
        "-C",
        "../consumer",
        "stack",
        "output",
        "--json",
        "--show-secrets",
    ]))
    .unwrap();
    assert_eq!(shown["db"], DB_PASSWORD, "{shown}");

    w.run(&["destroy", "--yes"]);
    w.assert_no_plaintext(&[DB_PASSWORD, &password]);
}

const CONSUMER: &str = r#"name: consumer
runtime: yaml
resources:
  ref:
    type: pulumi:pulumi:StackReference
    properties:
      name: kmsproj/dev
outputs:
  db: ${ref.outputs["db"]}
"#;

#[test]
fn changing_the_secrets_provider_round_trips_every_secret() {
    let Some(w) = World::new() else {
        return;
    };
    w.run_pw(&["stack", "init", "dev", "--secrets-provider", "default"]);
    assert!(
        w.settings().starts_with("encryptionsalt: v1:"),
        "{}",
        w.settings()
    );
    w.run_pw(&["config", "set", "--secret", "dbPassword", DB_PASSWORD]);
    w.run_pw(&["up", "--yes"]);
    let before = w.outputs(Some("pw"));
    let password = before["password"].as_str().unwrap().to_owned();
    let passphrase_ciphertext = w.settings();

    // Passphrase → KMS: config and state re-encrypted, no passphrase needed
    // afterwards.
    let url = w.url(&w.new_key());
    let said = w.run_pw(&["stack", "change-secrets-provider", &url]);
    assert!(said.contains(&url), "{said}");
    let settings = w.settings();
    assert!(
        settings.starts_with(&format!("secretsprovider: {url}\nencryptedkey: ")),
        "{settings}"
    );
    assert!(!settings.contains("encryptionsalt"), "{settings}");
    assert_ne!(settings, passphrase_ciphertext);
    assert_eq!(provider(&w.checkpoint())["type"], "cloud");
    assert_eq!(w.outputs(None), before);
    assert_eq!(w.run(&["config", "get", "dbPassword"]).trim(), DB_PASSWORD);
    let up = w.run(&["up", "--yes"]);
    assert!(up.contains("unchanged") && !up.contains("created"), "{up}");
    w.assert_no_plaintext(&[DB_PASSWORD, &password]);

    // KMS → another KMS key (rotation), then → passphrase.
    let url2 = w.url(&w.new_key());
    w.run(&["stack", "change-secrets-provider", &url2]);
    assert_eq!(provider(&w.checkpoint())["state"]["url"], url2.as_str());
    assert_eq!(w.outputs(None), before);
    w.run_pw(&["stack", "change-secrets-provider", "passphrase"]);
    let settings = w.settings();
    assert!(settings.starts_with("encryptionsalt: v1:"), "{settings}");
    assert!(!settings.contains("secretsprovider") && !settings.contains("encryptedkey"));
    assert_eq!(provider(&w.checkpoint())["type"], "passphrase");
    assert_eq!(w.outputs(Some("pw")), before);
    assert_eq!(
        w.run_pw(&["config", "get", "dbPassword"]).trim(),
        DB_PASSWORD
    );
    // The passphrase is needed again, and a wrong one is refused.
    let wrong = common::failure_of(w.cmd(Some("wrong")), &["stack", "output", "--show-secrets"]);
    assert!(wrong.contains("incorrect passphrase"), "{wrong}");
    w.assert_no_plaintext(&[DB_PASSWORD, &password]);
}

#[test]
fn unusable_keys_fail_cleanly_and_change_nothing() {
    let Some(w) = World::new() else {
        return;
    };
    let alias = w.new_key();
    let url = w.url(&alias);
    w.run(&["stack", "init", "dev", "--secrets-provider", &url]);
    w.run(&["config", "set", "--secret", "dbPassword", DB_PASSWORD]);
    w.run(&["up", "--yes"]);
    let files = w.files();

    // `stack init` does not silently give a settings file another provider.
    let err = w.fail(&["stack", "init", "dev", "--secrets-provider", "passphrase"]);
    assert!(err.contains("change-secrets-provider passphrase"), "{err}");
    assert_eq!(w.files(), files);

    // A key that does not exist.
    let missing = w.url("alias/converge-no-such-key");
    let err = w.fail(&["stack", "change-secrets-provider", &missing]);
    assert!(
        err.contains("alias/converge-no-such-key") && err.contains("does not exist"),
        "{err}"
    );
    assert_eq!(w.files(), files, "a failed change touched a file");

    // An endpoint nobody answers on.
    let unreachable = format!("awskms://{alias}?region=us-east-1&endpoint=http://127.0.0.1:1");
    let err = w.fail(&["stack", "change-secrets-provider", &unreachable]);
    assert!(
        err.contains("unreachable") && err.contains("127.0.0.1:1"),
        "{err}"
    );
    assert_eq!(w.files(), files, "a failed change touched a file");

    // The stack's settings name another key than the one that encrypted
    // its data key (a wrong key): every command that opens it fails,
    // naming the key, with state and config unchanged.
    let settings_path = w.scratch.project.join("Pulumi.dev.yaml");
    let original = std::fs::read_to_string(&settings_path).unwrap();
    let other = w.url(&w.new_key());
    std::fs::write(&settings_path, original.replace(&url, &other)).unwrap();
    let edited = w.files();
    for args in [
        &["up", "--yes"][..],
        &["preview"],
        &["config", "get", "dbPassword"],
        &["stack", "change-secrets-provider", "passphrase"],
    ] {
        let err = w.fail(args);
        assert!(
            err.contains(&other) && err.contains("access denied"),
            "{args:?}: {err}"
        );
        assert!(!err.contains(DB_PASSWORD), "{err}");
        assert_eq!(w.files(), edited, "{args:?} touched a file");
    }

    // The stack's own key behind an unreachable endpoint.
    std::fs::write(&settings_path, original.replace(&url, &unreachable)).unwrap();
    let edited = w.files();
    for args in [&["refresh", "--yes"][..], &["destroy", "--yes"]] {
        let err = w.fail(args);
        assert!(err.contains("unreachable"), "{args:?}: {err}");
        assert_eq!(w.files(), edited, "{args:?} touched a file");
    }

    // Back to the right key: everything as before.
    std::fs::write(&settings_path, &original).unwrap();
    assert_eq!(w.files(), files);
    assert_eq!(w.outputs(None)["db"], DB_PASSWORD);
}

/// `change-secrets-provider` on the backends whose state it rewrites
/// besides files: an S3 bucket and the state service.
#[test]
fn changing_the_secrets_provider_on_s3_and_the_service() {
    let Some(s3) = converge_backend::conformance::test_s3_url("kms") else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let service =
        common::service::Service::start(data.path(), &data.path().join("db"), "127.0.0.1:0");
    for backend in [common::Backend::Url(s3), common::Backend::Service(service)] {
        let w = World::on(backend).unwrap();
        w.run_pw(&["stack", "init", "dev"]);
        w.run_pw(&["config", "set", "--secret", "dbPassword", DB_PASSWORD]);
        w.run_pw(&["up", "--yes"]);
        let before = w.outputs(Some("pw"));
        let url = w.url(&w.new_key());
        w.run_pw(&["stack", "change-secrets-provider", &url]);
        let export: serde_json::Value = serde_json::from_str(&w.run(&["stack", "export"])).unwrap();
        assert_eq!(export["deployment"]["secrets_providers"]["type"], "cloud");
        assert_eq!(w.outputs(None), before, "{:?}", w.backend);
        let up = w.run(&["up", "--yes"]);
        assert!(!up.contains("created"), "{up}");
        w.run_pw(&["stack", "change-secrets-provider", "passphrase"]);
        assert_eq!(w.outputs(Some("pw")), before, "{:?}", w.backend);
        let export = w.run(&["stack", "export"]);
        assert!(!export.contains(DB_PASSWORD), "{export}");
    }
}

/// A checked-in settings file that names a key but has no data key yet: a
/// `stack init` with a passphrase in the environment makes the data key,
/// and no passphrase salt.
#[test]
fn stack_init_on_a_file_naming_a_key_makes_its_data_key_not_a_salt() {
    let Some(w) = World::new() else { return };
    let url = w.url(&w.new_key());
    std::fs::write(
        w.scratch.project.join("Pulumi.dev.yaml"),
        format!("secretsprovider: {url}\n"),
    )
    .unwrap();
    w.run_pw(&["stack", "init", "dev"]);
    let settings = w.settings();
    assert!(
        settings.starts_with(&format!("secretsprovider: {url}\nencryptedkey: ")),
        "{settings}"
    );
    assert!(!settings.contains("encryptionsalt"), "{settings}");
}
