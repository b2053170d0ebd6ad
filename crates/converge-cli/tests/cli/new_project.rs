//! End to end: `converge new` with the built-in templates (`yaml`,
//! `python`, `typescript` — their SDKs installed for real from PyPI and
//! npm, as a user's would be) and a local template directory in Pulumi's
//! format, each followed by `converge up` that deploys at once and a
//! second `up` that changes nothing; templates from a .zip URL served on
//! 127.0.0.1, from a directory of templates (Pulumi's templates
//! repository layout) and from `$PULUMI_HOME/templates`, with the runtime
//! options they lack written in (Python always in its own virtualenv);
//! the refusals (a non-empty directory, an existing stack, an unknown
//! template, a toolchain Converge does not run); and `converge about
//! --json` on the projects made.

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;

use crate::common;

/// A Converge home, a file backend and a Pulumi home in a temporary
/// directory; projects are made under `root`.
struct World {
    dir: tempfile::TempDir,
    /// Extra environment (another backend) for every command.
    env: Vec<(String, String)>,
}

impl World {
    fn new() -> World {
        let w = World {
            dir: tempfile::tempdir().unwrap(),
            env: Vec::new(),
        };
        std::fs::create_dir_all(w.dir.path().join("backend")).unwrap();
        w
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn project(&self, name: &str) -> PathBuf {
        self.root().join(name)
    }

    /// `converge` in `cwd`, on this world's homes and backend.
    fn command(&self, cwd: &Path) -> Command {
        let mut cmd = Command::cargo_bin("converge").unwrap();
        cmd.current_dir(cwd)
            .env("CONVERGE_HOME", self.root().join("home"))
            .env("PULUMI_HOME", self.root().join("pulumi-home"))
            .env(
                "PULUMI_BACKEND_URL",
                format!("file://{}", self.root().join("backend").display()),
            )
            .env("PULUMI_CONFIG_PASSPHRASE", "pw")
            .env_remove("PULUMI_CONFIG_PASSPHRASE_FILE")
            .env_remove("PULUMI_PYTHON_CMD")
            .envs(self.env.iter().cloned());
        cmd
    }

    fn run(&self, cwd: &Path, args: &[&str]) -> String {
        common::stdout_of(self.command(cwd), args)
    }

    fn fails(&self, cwd: &Path, args: &[&str]) -> String {
        common::failure_of(self.command(cwd), args)
    }

    /// `up`, which creates the template's stack resource and pet (and
    /// its default provider, not counted), then a second `up` that must
    /// change nothing; the outputs.
    fn deploy_twice(&self, project: &Path) -> serde_json::Value {
        let up = self.run(project, &["up", "--yes"]);
        assert!(up.contains("+ 2 created"), "{up}");
        let again = self.run(project, &["up", "--yes", "--expect-no-changes"]);
        assert!(again.contains("2 unchanged"), "{again}");
        serde_json::from_str(&self.run(project, &["stack", "output", "--json"])).unwrap()
    }

    fn about(&self, cwd: &Path) -> serde_json::Value {
        serde_json::from_str(&self.run(cwd, &["about", "--json"])).unwrap()
    }
}

fn is_pet_name(v: &serde_json::Value) -> bool {
    v.as_str().is_some_and(|s| s.split('-').count() == 2)
}

fn dependency_names(about: &serde_json::Value) -> Vec<String> {
    about["dependencies"]
        .as_array()
        .unwrap_or_else(|| panic!("no dependencies: {about}"))
        .iter()
        .map(|d| d["name"].as_str().unwrap().replace('_', "-").to_lowercase())
        .collect()
}

#[test]
fn yaml_template_deploys_at_once_and_about_describes_it() {
    let w = World::new();
    let out = w.run(
        w.root(),
        &[
            "new",
            "yaml",
            "--yes",
            "--dir",
            "hello",
            "--name",
            "hello-yaml",
        ],
    );
    assert!(out.contains("Created stack 'dev'"), "{out}");
    let project = w.project("hello");
    let pulumi_yaml = std::fs::read_to_string(project.join("Pulumi.yaml")).unwrap();
    assert!(
        pulumi_yaml.starts_with(
            "name: hello-yaml\ndescription: A minimal Pulumi YAML program using the built-in random provider\nruntime: yaml\n"
        ),
        "{pulumi_yaml}"
    );
    assert!(!pulumi_yaml.contains("template:"), "{pulumi_yaml}");
    assert!(w.run(&project, &["stack", "ls"]).contains("dev*"));
    // Pulumi's `stack ls --json`: a stack never deployed has neither a
    // `lastUpdate` nor a `resourceCount` key (left out, not null).
    let listed = || -> serde_json::Value {
        serde_json::from_str(&w.run(&project, &["stack", "ls", "--json"])).unwrap()
    };
    assert_eq!(
        listed(),
        serde_json::json!([{"name": "dev", "current": true, "updateInProgress": false}])
    );
    let outputs = w.deploy_twice(&project);
    assert!(is_pet_name(&outputs["petName"]), "{outputs}");
    let deployed = listed();
    assert!(
        deployed[0]["lastUpdate"].is_string() && deployed[0]["resourceCount"].as_u64() > Some(1),
        "{deployed}"
    );

    // Pulumi's `about --json` keys.
    let about = w.about(&project);
    assert_eq!(about["cliAbout"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(!about["host"]["os"].as_str().unwrap().is_empty(), "{about}");
    assert_eq!(about["host"]["arch"], std::env::consts::ARCH);
    let backend_url = format!("file://{}", w.root().join("backend").display());
    assert_eq!(about["backend"]["url"], backend_url.as_str());
    assert!(!about["backend"]["user"].as_str().unwrap().is_empty());
    assert_eq!(about["currentStack"]["name"], "dev");
    assert_eq!(
        about["currentStack"]["fullyQualifiedName"],
        "organization/hello-yaml/dev"
    );
    let types: Vec<&str> = about["currentStack"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "pulumi:pulumi:Stack",
            "pulumi:providers:random",
            "random:index/randomPet:RandomPet"
        ]
    );
    assert_eq!(about["currentStack"]["pendingOps"], serde_json::json!([]));
    assert_eq!(about["runtime"]["language"], "yaml");
    assert!(about["plugins"]
        .as_array()
        .unwrap()
        .contains(&serde_json::json!({"name": "random", "version": "4.21.4", "kind": "resource"})));
    assert_eq!(about["errors"], serde_json::json!([]));
    let text = w.run(&project, &["about"]);
    assert!(
        text.contains("Current Stack: organization/hello-yaml/dev"),
        "{text}"
    );
    // Outside a project: what is known, and what is not as an error.
    let outside = w.about(w.root());
    assert!(outside["currentStack"].is_null() && outside["runtime"].is_null());
    assert!(
        outside["errors"][0]
            .as_str()
            .unwrap()
            .starts_with("Failed to read project"),
        "{outside}"
    );

    // The refusals, each leaving what is there as it was.
    let e = w.fails(w.root(), &["new", "yaml", "--yes", "--dir", "hello"]);
    assert!(e.contains("is not empty") && e.contains("--force"), "{e}");
    let e = w.fails(
        w.root(),
        &[
            "new",
            "yaml",
            "--yes",
            "--dir",
            "hello",
            "--name",
            "hello-yaml",
            "--force",
        ],
    );
    assert!(
        e.contains("stack dev of project hello-yaml already exists"),
        "{e}"
    );
    assert_eq!(
        std::fs::read_to_string(project.join("Pulumi.yaml")).unwrap(),
        pulumi_yaml
    );
    let e = w.fails(w.root(), &["new", "cobol", "--yes"]);
    assert!(e.contains("yaml, python, typescript"), "{e}");
    let e = w.fails(w.root(), &["new", "--yes"]);
    assert!(e.contains("which template?"), "{e}");
    let e = w.fails(
        w.root(),
        &["new", "yaml", "--yes", "--dir", "x", "--name", "a/b"],
    );
    assert!(e.contains("cannot be a project name"), "{e}");
    assert!(!w.project("x").exists());
    let e = w.fails(
        w.root(),
        &[
            "new",
            "yaml",
            "--yes",
            "--dir",
            "x",
            "--name",
            "p1",
            "--stack",
            "otherproj/eps",
        ],
    );
    assert!(
        e.contains("provided project name \"otherproj\" doesn't match Pulumi.yaml"),
        "{e}"
    );
    assert!(!w.project("x").exists());
    // --force writes into a non-empty directory; the default name is the
    // directory's.
    std::fs::create_dir(w.project("busy")).unwrap();
    std::fs::write(w.project("busy/notes.txt"), "keep").unwrap();
    w.run(
        w.root(),
        &[
            "new", "yaml", "--yes", "--dir", "busy", "--force", "--stack", "prod",
        ],
    );
    let busy = std::fs::read_to_string(w.project("busy/Pulumi.yaml")).unwrap();
    assert!(busy.starts_with("name: busy\n"), "{busy}");
    assert_eq!(
        std::fs::read_to_string(w.project("busy/notes.txt")).unwrap(),
        "keep"
    );
    assert!(w
        .run(&w.project("busy"), &["stack", "ls"])
        .contains("prod*"));
}

/// `new` creates its stack, and `about` reads it, on the backend in use:
/// an S3 bucket and a state service too.
#[test]
fn new_and_about_on_s3_and_on_a_state_service() {
    let data = tempfile::tempdir().unwrap();
    let service =
        common::service::Service::start(data.path(), &data.path().join("db"), "127.0.0.1:0");
    let mut backends = vec![(
        service.url.clone(),
        vec![
            ("PULUMI_BACKEND_URL".to_owned(), service.url.clone()),
            ("PULUMI_ACCESS_TOKEN".to_owned(), service.token.clone()),
        ],
    )];
    if let Some(url) = converge_backend::conformance::test_s3_url("new") {
        backends.push((url.clone(), vec![("PULUMI_BACKEND_URL".to_owned(), url)]));
    }
    for (url, env) in backends {
        let mut w = World::new();
        w.env = env;
        w.run(
            w.root(),
            &[
                "new",
                "yaml",
                "--yes",
                "--dir",
                "p",
                "--name",
                "remote-demo",
            ],
        );
        let project = w.project("p");
        let outputs = w.deploy_twice(&project);
        assert!(is_pet_name(&outputs["petName"]), "{outputs}");
        let about = w.about(&project);
        assert_eq!(about["errors"], serde_json::json!([]), "{about}");
        assert_eq!(
            about["currentStack"]["resources"].as_array().unwrap().len(),
            3
        );
        let shown = about["backend"]["url"].as_str().unwrap();
        assert!(
            url.starts_with(shown.trim_end_matches('/')),
            "{shown} vs {url}"
        );
        let e = w.fails(
            w.root(),
            &[
                "new",
                "yaml",
                "--yes",
                "--dir",
                "q",
                "--name",
                "remote-demo",
            ],
        );
        assert!(e.contains("already exists"), "{e}");
        assert!(!w.project("q").exists());
    }
}

const LOCAL_TEMPLATE: &str = "name: ${PROJECT}
description: ${DESCRIPTION}
runtime: yaml
template:
  description: A local template
  important: true
  config:
    greeting:
      description: What to say
      default: hello
    token:
      description: A secret token
      default: s3cr3t-token
      secret: true
    apiKey:
      description: A secret without a default
      secret: true
config:
  greeting: {type: string}
  token: {type: string, secret: true}
resources:
  pet:
    type: random:RandomPet
    properties:
      prefix: ${greeting}
outputs:
  project: ${PROJECT}
  greeting: ${greeting}
  token: ${token}
";

#[test]
fn a_local_template_directory_is_rendered_configured_and_deployed() {
    let w = World::new();
    let template = w.project("tmpl");
    std::fs::create_dir_all(template.join("scripts")).unwrap();
    std::fs::write(template.join("Pulumi.yaml"), LOCAL_TEMPLATE).unwrap();
    std::fs::write(
        template.join("README.md"),
        "# ${PROJECT}\n\n${DESCRIPTION}\n",
    )
    .unwrap();
    let script = template.join("scripts/check.sh");
    std::fs::write(&script, "#!/bin/sh\necho ${PROJECT}\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();

    let out = w.run(
        w.root(),
        &[
            "new",
            "tmpl",
            "--yes",
            "--dir",
            "out",
            "--name",
            "local-demo",
            "--description",
            "Demo project",
            "-c",
            "greeting=hi",
        ],
    );
    assert!(out.contains("important"), "{out}");
    assert!(
        out.contains(
            "note: config local-demo:apiKey has no default; set it with \
             `converge config set --secret local-demo:apiKey VALUE`"
        ),
        "{out}"
    );
    let project = w.project("out");
    assert_eq!(
        std::fs::read_to_string(project.join("README.md")).unwrap(),
        "# local-demo\n\nDemo project\n"
    );
    let script = project.join("scripts/check.sh");
    assert_eq!(
        std::fs::read_to_string(&script).unwrap(),
        "#!/bin/sh\necho local-demo\n"
    );
    assert_eq!(
        std::fs::metadata(&script).unwrap().permissions().mode() & 0o777,
        0o755
    );
    let pulumi_yaml = std::fs::read_to_string(project.join("Pulumi.yaml")).unwrap();
    assert!(
        pulumi_yaml
            .starts_with("name: local-demo\ndescription: Demo project\nruntime: yaml\nconfig:\n"),
        "{pulumi_yaml}"
    );
    let settings = std::fs::read_to_string(project.join("Pulumi.dev.yaml")).unwrap();
    assert!(settings.contains("encryptionsalt:"), "{settings}");
    assert!(settings.contains("local-demo:greeting: hi"), "{settings}");
    assert!(
        settings.contains("local-demo:token:\n    secure: "),
        "{settings}"
    );
    assert!(!settings.contains("s3cr3t"), "{settings}");

    let outputs = w.deploy_twice(&project);
    assert_eq!(outputs["project"], "local-demo");
    assert_eq!(outputs["greeting"], "hi");
    assert_eq!(outputs["token"], "[secret]");
    let shown: serde_json::Value =
        serde_json::from_str(&w.run(&project, &["stack", "output", "--json", "--show-secrets"]))
            .unwrap();
    assert_eq!(shown["token"], "s3cr3t-token");
}

#[test]
fn python_template_installs_its_sdk_in_a_virtualenv_and_deploys() {
    let w = World::new();
    w.run(
        w.root(),
        &["new", "python", "--yes", "--dir", "py", "--name", "py-demo"],
    );
    let project = w.project("py");
    let pulumi_yaml = std::fs::read_to_string(project.join("Pulumi.yaml")).unwrap();
    assert!(
        pulumi_yaml.contains("    virtualenv: venv\n"),
        "{pulumi_yaml}"
    );
    assert!(project.join("venv/bin/python").exists());
    let outputs = w.deploy_twice(&project);
    assert!(is_pet_name(&outputs["petName"]), "{outputs}");
    let about = w.about(&project);
    assert_eq!(about["runtime"]["language"], "python");
    let executable = about["runtime"]["executable"].as_str().unwrap();
    assert!(executable.ends_with("py/venv/bin/python"), "{about}");
    assert!(
        about["runtime"]["version"]
            .as_str()
            .unwrap()
            .starts_with("3."),
        "{about}"
    );
    let deps = dependency_names(&about);
    assert!(deps.contains(&"pulumi-random".to_owned()), "{deps:?}");
}

#[test]
fn typescript_template_installs_its_packages_with_npm_and_deploys() {
    let w = World::new();
    w.run(
        w.root(),
        &[
            "new",
            "typescript",
            "--yes",
            "--dir",
            "ts",
            "--name",
            "ts-demo",
        ],
    );
    let project = w.project("ts");
    assert!(project
        .join("node_modules/@pulumi/pulumi/package.json")
        .exists());
    let outputs = w.deploy_twice(&project);
    assert!(is_pet_name(&outputs["petName"]), "{outputs}");
    let about = w.about(&project);
    assert_eq!(about["runtime"]["language"], "nodejs");
    let deps = dependency_names(&about);
    assert!(
        deps.contains(&"@pulumi/pulumi".to_owned()) && deps.contains(&"@pulumi/random".to_owned()),
        "{deps:?}"
    );
}

/// Serves `body` at any path on 127.0.0.1 (a path ending in `missing.zip`
/// answers 404), for as many requests as come; returns the base URL.
fn serve(body: Vec<u8>) -> String {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0u8; 4096];
            let n = stream.read(&mut request).unwrap_or(0);
            let head = String::from_utf8_lossy(&request[..n]).into_owned();
            let missing = head.lines().next().unwrap_or("").contains("missing.zip");
            let (status, body) = if missing {
                ("404 Not Found", &b"no such template"[..])
            } else {
                ("200 OK", &body[..])
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: application/zip\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(body);
        }
    });
    format!("http://{addr}")
}

fn zip_of(files: &[(&str, &str)]) -> Vec<u8> {
    use std::io::Write as _;
    let mut out = std::io::Cursor::new(Vec::new());
    let mut zip = zip::ZipWriter::new(&mut out);
    for (name, content) in files {
        zip.start_file(*name, zip::write::SimpleFileOptions::default())
            .unwrap();
        zip.write_all(content.as_bytes()).unwrap();
    }
    zip.finish().unwrap();
    out.into_inner()
}

/// A Python template as Pulumi's older templates are written: no
/// runtime options at all.
const BARE_PYTHON_TEMPLATE: &str = "\
name: ${PROJECT}
description: ${DESCRIPTION}
runtime: python
template:
  description: A bare Python program
";

#[test]
fn a_zip_url_template_gets_pips_virtualenv_and_never_the_shared_interpreter() {
    let w = World::new();
    let url = serve(zip_of(&[
        (
            "templates-main/bare-python/Pulumi.yaml",
            BARE_PYTHON_TEMPLATE,
        ),
        (
            "templates-main/bare-python/__main__.py",
            "import pulumi\npulumi.export(\"where\", __import__(\"sys\").prefix)\n",
        ),
        (
            "templates-main/bare-python/requirements.txt",
            "pulumi>=3.0.0,<4.0.0\n",
        ),
    ]));
    let out = w.run(
        w.root(),
        &[
            "new",
            &format!("{url}/archive/templates.zip"),
            "--yes",
            "--dir",
            "bare",
            "--name",
            "bare-demo",
        ],
    );
    assert!(out.contains("Runtime option toolchain: pip"), "{out}");
    assert!(out.contains("Runtime option virtualenv: venv"), "{out}");
    let project = w.project("bare");
    let pulumi_yaml = std::fs::read_to_string(project.join("Pulumi.yaml")).unwrap();
    assert_eq!(
        pulumi_yaml,
        "name: bare-demo\ndescription: A bare Python program\nruntime:\n  name: python\n  \
         options:\n    toolchain: pip\n    virtualenv: venv\n"
    );
    assert!(project.join("venv/bin/python").exists());
    let up = w.run(&project, &["up", "--yes"]);
    assert!(up.contains("+ 1 created"), "{up}");
    let outputs: serde_json::Value =
        serde_json::from_str(&w.run(&project, &["stack", "output", "--json"])).unwrap();
    let prefix = outputs["where"].as_str().unwrap();
    assert!(prefix.ends_with("bare/venv"), "{outputs}");

    // A missing archive, an archive that is not one, --offline: each a
    // clear refusal, nothing written.
    let e = w.fails(
        w.root(),
        &["new", &format!("{url}/missing.zip"), "--yes", "--dir", "m"],
    );
    assert!(e.contains("404"), "{e}");
    assert!(!w.project("m").exists());
    let e = w.fails(
        w.root(),
        &[
            "new",
            &format!("{url}/t.zip"),
            "--yes",
            "--offline",
            "--dir",
            "o",
        ],
    );
    assert!(e.contains("--offline"), "{e}");
    let e = w.fails(
        w.root(),
        &[
            "new",
            "https://github.com/pulumi/templates",
            "--yes",
            "--dir",
            "g",
        ],
    );
    assert!(e.contains(".zip archives only"), "{e}");
}

#[test]
fn a_directory_of_templates_and_pulumis_template_directory() {
    let w = World::new();
    let repo = w.project("templates");
    let write = |rel: &str, text: &str| {
        let path = repo.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("yaml-pet/Pulumi.yaml", LOCAL_TEMPLATE);
    write("bare-python/Pulumi.yaml", BARE_PYTHON_TEMPLATE);
    write(
        "node-bare/Pulumi.yaml",
        "name: ${PROJECT}\nruntime: nodejs\ntemplate:\n  description: Node\n",
    );
    write(
        "uv-python/Pulumi.yaml",
        "name: ${PROJECT}\nruntime:\n  name: python\n  options:\n    toolchain: uv\n",
    );
    // `--list-templates` names them, with their descriptions.
    let listed = w.run(w.root(), &["new", "--list-templates", "templates"]);
    assert!(listed.starts_with("Available templates:\n"), "{listed}");
    for line in [
        "    node-bare    Node\n",
        "    yaml-pet     A local template\n",
    ] {
        assert!(listed.contains(line), "no {line:?} in\n{listed}");
    }
    // Without a terminal, a directory of templates needs one named.
    let e = w.fails(w.root(), &["new", "templates", "--yes", "--dir", "x"]);
    assert!(
        e.contains("holds 4 templates (bare-python, node-bare, uv-python, yaml-pet)"),
        "{e}"
    );
    assert!(!w.project("x").exists());
    // One of them, by its directory.
    let out = w.run(
        w.root(),
        &[
            "new",
            "templates/node-bare",
            "--yes",
            "--generate-only",
            "--dir",
            "node",
            "--name",
            "node-demo",
        ],
    );
    assert!(out.contains("Runtime option packagemanager: npm"), "{out}");
    let pulumi_yaml = std::fs::read_to_string(w.project("node").join("Pulumi.yaml")).unwrap();
    assert!(
        pulumi_yaml.contains("  options:\n    packagemanager: npm\n"),
        "{pulumi_yaml}"
    );
    // A toolchain Converge does not run: refused, nothing written.
    let e = w.fails(
        w.root(),
        &["new", "templates/uv-python", "--yes", "--dir", "uv"],
    );
    assert!(e.contains("toolchain is \"uv\""), "{e}");
    assert!(!w.project("uv").exists());
    // By name, from Pulumi's template directory ($PULUMI_HOME/templates).
    let pulumi_templates = w.root().join("pulumi-home/templates/yaml-pet");
    std::fs::create_dir_all(&pulumi_templates).unwrap();
    std::fs::write(pulumi_templates.join("Pulumi.yaml"), LOCAL_TEMPLATE).unwrap();
    // Without a directory, the built-in templates and Pulumi's.
    let listed = w.run(w.root(), &["new", "-l"]);
    for line in [
        "    python      A minimal Python program using the built-in random provider\n",
        "    yaml-pet    A local template\n",
    ] {
        assert!(listed.contains(line), "no {line:?} in\n{listed}");
    }
    let out = w.run(
        w.root(),
        &[
            "new",
            "yaml-pet",
            "--yes",
            "--dir",
            "pet",
            "--name",
            "pet-demo",
            "-c",
            "greeting=hey",
        ],
    );
    assert!(out.contains("Created stack 'dev'"), "{out}");
    let outputs = w.deploy_twice(&w.project("pet"));
    assert_eq!(outputs["greeting"], "hey");
}
