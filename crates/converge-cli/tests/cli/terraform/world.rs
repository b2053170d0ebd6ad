//! A scratch world for Terraform providers: a project (YAML or Python), a
//! file backend, a user HOME of its own whose `~/.terraform.d/plugins`
//! (or a `TF_PLUGIN_CACHE_DIR`) holds the test providers, and the
//! directory their objects live in, one JSON file per object.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use converge_testkit::go_provider::{self, Events};
use converge_testkit::terraform_mirror::{self, TestProvider};
use serde_json::Value;

use crate::common::{self, Scratch};

/// The stack every test uses.
pub const STACK: &str = "dev";

/// True when the test providers can run (`$CONVERGE_TEST_TF_PYTHON`, the
/// interpreter with PyPI's `tf`); otherwise says why the test is skipped
/// (and fails in CI, where scripts/test always sets it).
pub fn providers_available() -> bool {
    if terraform_mirror::tf_python().is_some() {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "{} is not set: run scripts/test",
            terraform_mirror::TF_PYTHON_ENV
        );
    }
    eprintln!(
        "SKIPPED: set {} (scripts/test does) to run the Terraform test providers",
        terraform_mirror::TF_PYTHON_ENV
    );
    false
}

/// Where the providers are installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mirror {
    /// `~/.terraform.d/plugins`.
    HomePlugins,
    /// A directory named by `TF_PLUGIN_CACHE_DIR`.
    PluginCacheDir,
}

pub struct TfWorld {
    pub scratch: Scratch,
    /// The HOME the commands (and so the providers' discovery) see.
    pub user_home: PathBuf,
    /// Where the providers keep their objects.
    pub objects: PathBuf,
    mirror: Mirror,
    project: String,
    /// Values that must never appear in plaintext outside the providers'
    /// objects: in the state, the journal, the backend's other files or
    /// any command's output.
    secrets: Vec<String>,
    /// Extra environment of every command.
    env: Vec<(String, String)>,
}

impl TfWorld {
    /// A YAML project `name` with `program` as its body (resources,
    /// variables, outputs), and its stack.
    pub fn yaml(name: &str, program: &str) -> TfWorld {
        let w = TfWorld::new(name, &yaml_project(name, program), Mirror::HomePlugins);
        w.run(&["stack", "init", STACK]);
        w
    }

    /// A Python project `name` running `program` with the published
    /// `pulumi` SDK of the venv, and its stack.
    pub fn python(name: &str, venv: &Path, program: &str, mirror: Mirror) -> TfWorld {
        let w = TfWorld::new(
            name,
            &format!(
                "name: {name}\nruntime:\n  name: python\n  options:\n    virtualenv: {}\n",
                venv.display()
            ),
            mirror,
        );
        std::fs::write(w.scratch.project.join("__main__.py"), program).unwrap();
        w.run(&["stack", "init", STACK]);
        w
    }

    fn new(name: &str, pulumi_yaml: &str, mirror: Mirror) -> TfWorld {
        let scratch = Scratch::new(pulumi_yaml);
        let user_home = scratch.dir.path().join("user");
        let objects = scratch.dir.path().join("objects");
        std::fs::create_dir_all(&user_home).unwrap();
        std::fs::create_dir_all(&objects).unwrap();
        TfWorld {
            scratch,
            user_home,
            objects,
            mirror,
            project: name.to_owned(),
            secrets: Vec::new(),
            env: Vec::new(),
        }
    }

    /// The mirror directory the providers are installed under.
    pub fn mirror_dir(&self) -> PathBuf {
        match self.mirror {
            Mirror::HomePlugins => self.user_home.join(".terraform.d").join("plugins"),
            Mirror::PluginCacheDir => self.scratch.dir.path().join("plugin-cache"),
        }
    }

    /// Installs a release of a test provider in the mirror.
    pub fn install(&self, provider: TestProvider, version: &str) -> PathBuf {
        terraform_mirror::install(&self.mirror_dir(), provider, version)
    }

    /// Installs a release of the Go test provider (`gostore`) in the
    /// mirror.
    pub fn install_go(&self, version: &str) -> PathBuf {
        go_provider::install(&self.mirror_dir(), version)
    }

    /// Where the Go provider's processes write their events.
    pub fn events_path(&self) -> PathBuf {
        self.scratch.dir.path().join("gostore-events.log")
    }

    /// The Go provider's process events so far.
    pub fn events(&self) -> Events {
        Events::read(&self.events_path())
    }

    /// Forgets the events so far.
    pub fn clear_events(&self) {
        let _ = std::fs::remove_file(self.events_path());
    }

    /// Sets `key` in the environment of every later command.
    pub fn set_env(&mut self, key: &str, value: &str) {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_owned(), value.to_owned()));
    }

    /// Removes an installed release.
    pub fn uninstall(&self, provider: TestProvider, version: &str) {
        let dir = self
            .mirror_dir()
            .join(terraform_mirror::HOST)
            .join(terraform_mirror::NAMESPACE)
            .join(provider.type_name())
            .join(version);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Replaces the YAML program's body.
    pub fn set_yaml(&self, program: &str) {
        std::fs::write(
            self.scratch.project.join("Pulumi.yaml"),
            yaml_project(&self.project, program),
        )
        .unwrap();
    }

    /// From now on, `value` must never appear in plaintext outside the
    /// providers' objects.
    pub fn secret(&mut self, value: &str) {
        self.secrets.push(value.to_owned());
    }

    /// `converge --non-interactive args…` in this world.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = self.scratch.command("pw");
        c.env("HOME", &self.user_home)
            .env_remove("XDG_DATA_HOME")
            .env_remove(TestProvider::Store.directory_env())
            .env_remove(TestProvider::Breaker.directory_env())
            .env_remove(go_provider::DIRECTORY_ENV)
            .env_remove(go_provider::PROTOCOLS_ENV)
            .env_remove("TF_CLI_CONFIG_FILE")
            .env(go_provider::EVENTS_ENV, self.events_path());
        for (k, v) in &self.env {
            c.env(k, v);
        }
        match self.mirror {
            Mirror::HomePlugins => {
                c.env_remove("TF_PLUGIN_CACHE_DIR");
            }
            Mirror::PluginCacheDir => {
                c.env("TF_PLUGIN_CACHE_DIR", self.mirror_dir());
            }
        }
        c.args(args);
        c
    }

    /// Runs `converge args…`; its stdout and stderr, after checking that
    /// neither (nor anything the backend holds) shows a secret.
    pub fn output(&self, args: &[&str]) -> (Output, String) {
        let out = self.cmd(args).output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        for s in &self.secrets {
            assert!(
                !text.contains(s.as_str()),
                "converge {args:?} shows the secret {s:?}:\n{text}"
            );
        }
        self.assert_no_plaintext_secrets();
        (out, text)
    }

    /// Runs `converge args…`, which must succeed; its stdout and stderr.
    pub fn run(&self, args: &[&str]) -> String {
        let (out, text) = self.output(args);
        assert!(out.status.success(), "converge {args:?} failed:\n{text}");
        text
    }

    /// Runs `converge args…`, which must fail; its stdout and stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let (out, text) = self.output(args);
        assert!(
            !out.status.success(),
            "converge {args:?} succeeded:\n{text}"
        );
        text
    }

    /// `converge config set store:directory OBJECTS` (the provider's
    /// configuration from stack config).
    pub fn configure_directory(&self, package: &str) {
        let dir = self.objects.display().to_string();
        self.run(&["config", "set", &format!("{package}:directory"), &dir]);
    }

    /// `converge stack export`, parsed.
    pub fn export(&self) -> Value {
        serde_json::from_str(&self.run(&["stack", "export"])).unwrap()
    }

    /// The exported state's resources.
    pub fn resources(&self) -> Vec<Value> {
        self.export()["deployment"]["resources"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// The exported state of the custom resource named `name`, if any.
    pub fn resource(&self, name: &str) -> Option<Value> {
        let suffix = format!("::{name}");
        self.resources().into_iter().find(|r| {
            r["custom"] == Value::Bool(true)
                && r["urn"].as_str().is_some_and(|u| u.ends_with(&suffix))
                && !r["type"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("pulumi:providers:"))
        })
    }

    /// `name`'s recorded outputs, which must exist.
    pub fn outputs(&self, name: &str) -> Value {
        self.resource(name)
            .unwrap_or_else(|| panic!("{name} is not in the state"))["outputs"]
            .clone()
    }

    /// `converge stack output --json`, parsed.
    pub fn stack_outputs(&self) -> Value {
        serde_json::from_str(&self.run(&["stack", "output", "--json"])).unwrap()
    }

    /// The object `name` (its JSON file), if it exists.
    pub fn object(&self, name: &str) -> Option<Value> {
        let path = self.objects.join(format!("{name}.json"));
        let text = std::fs::read_to_string(path).ok()?;
        Some(serde_json::from_str(&text).unwrap())
    }

    /// The names of every object that exists, sorted.
    pub fn object_names(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.objects)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with('.'))
            .filter_map(|n| n.strip_suffix(".json").map(str::to_owned))
            .collect();
        names.sort();
        names
    }

    /// Writes the object `name`, as if made or changed outside Converge.
    pub fn write_object(&self, name: &str, content: &Value) {
        std::fs::write(
            self.objects.join(format!("{name}.json")),
            serde_json::to_string_pretty(content).unwrap(),
        )
        .unwrap();
    }

    /// The stack's journal file while an operation runs.
    pub fn journal_path(&self) -> PathBuf {
        self.scratch
            .backend
            .join(".pulumi/journals")
            .join(&self.project)
            .join(format!("{STACK}.journal"))
    }

    /// Every file under the backend and the Converge home (checkpoints,
    /// backups, history, journals, workspace settings) is free of the
    /// secrets.
    pub fn assert_no_plaintext_secrets(&self) {
        if self.secrets.is_empty() {
            return;
        }
        for root in [&self.scratch.backend, &self.scratch.home] {
            for file in crate::common::files_under(root) {
                let bytes = std::fs::read(&file).unwrap_or_default();
                let text = String::from_utf8_lossy(&bytes);
                for s in &self.secrets {
                    assert!(
                        !text.contains(s.as_str()),
                        "{} holds the secret {s:?} in plaintext",
                        file.display()
                    );
                }
            }
        }
    }
}

fn yaml_project(name: &str, program: &str) -> String {
    format!("name: {name}\nruntime: yaml\n{program}")
}

/// The `schema_version` and private data (base64) in recorded outputs'
/// `__meta`.
pub fn meta(outputs: &Value) -> (String, Option<String>) {
    let text = outputs["__meta"]
        .as_str()
        .unwrap_or_else(|| panic!("no __meta in {outputs}"));
    let meta: Value = serde_json::from_str(text).unwrap();
    (
        meta["schema_version"].as_str().unwrap().to_owned(),
        meta["private"].as_str().map(str::to_owned),
    )
}

/// Whether a value in the exported state is an encrypted secret.
pub fn is_secret(value: &Value) -> bool {
    value["4dabf18193072939515e22adb298388d"] == "1b47061264138c4ac30d75fd1eb44270"
        && value["ciphertext"].is_string()
}

/// `common`'s venv for Python programs, or `None` (skip).
pub fn python_venv() -> Option<PathBuf> {
    common::python::venv()
}
