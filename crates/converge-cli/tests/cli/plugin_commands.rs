//! End to end: `converge plugin install | ls | rm` on a plugin directory
//! of the test's own (`PULUMI_HOME`), with the real test plugin
//! (`pulumi-resource-convergetest`), installed from a directory and from
//! a `.tar.gz`, then serving a YAML program (ambient plugins off, so the
//! program can only get it from the plugin directory); a damaged archive
//! leaves nothing behind; `rm` removes what it names.

use std::path::{Path, PathBuf};

use crate::common;

const PROGRAM: &str = "name: plugproj
runtime: yaml
resources:
  thing:
    type: convergetest:Thing
    properties:
      value: hello
outputs:
  version: ${thing.pluginVersion}
";

struct World {
    scratch: common::Scratch,
    pulumi_home: PathBuf,
    /// The test plugin's executable.
    plugin: PathBuf,
}

impl World {
    fn new() -> World {
        let scratch = common::Scratch::new(PROGRAM);
        let bin = common::convergetest_bin_dir(scratch.dir.path());
        let plugin = std::fs::canonicalize(bin.join("pulumi-resource-convergetest")).unwrap();
        let pulumi_home = scratch.dir.path().join("pulumi-home");
        World {
            scratch,
            pulumi_home,
            plugin,
        }
    }

    fn plugins_dir(&self) -> PathBuf {
        self.pulumi_home.join("plugins")
    }

    /// `converge` on this world's plugin directory and test cloud.
    fn command(&self) -> std::process::Command {
        common::with_own_plugins(&self.scratch, &self.pulumi_home)
    }

    fn run(&self, args: &[&str]) -> String {
        common::stdout_of(self.command(), args)
    }

    fn fails(&self, args: &[&str]) -> String {
        common::failure_of(self.command(), args)
    }

    /// `plugin ls --json` as (name, kind, version) and the whole entries.
    fn listed(&self) -> (Vec<(String, String, String)>, Vec<serde_json::Value>) {
        let list: Vec<serde_json::Value> =
            serde_json::from_str(&self.run(&["plugin", "ls", "--json"])).unwrap();
        let keys = list
            .iter()
            .map(|p| {
                let s = |k: &str| p[k].as_str().unwrap().to_owned();
                (s("name"), s("kind"), s("version"))
            })
            .collect();
        (keys, list)
    }
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

fn entry(name: &str, version: &str) -> (String, String, String) {
    (name.to_owned(), "resource".to_owned(), version.to_owned())
}

#[test]
fn installed_from_a_directory_and_an_archive_listed_used_and_removed() {
    let w = World::new();
    let root = w.scratch.dir.path();
    // The plugin as its release would ship it: the executable at the top.
    let src = root.join("plugin-src");
    std::fs::create_dir(&src).unwrap();
    std::fs::copy(&w.plugin, src.join("pulumi-resource-convergetest")).unwrap();
    std::fs::write(src.join("README.md"), "test plugin\n").unwrap();
    let archive = root.join("convergetest.tar.gz");
    let tar = std::process::Command::new("tar")
        .arg("czf")
        .arg(&archive)
        .arg("-C")
        .arg(&src)
        .arg(".")
        .status()
        .unwrap();
    assert!(tar.success());

    let e = w.fails(&["plugin", "install", "resource", "convergetest", "1.0.0"]);
    assert!(
        e.contains("Converge does not download plugins: pass --file PATH"),
        "{e}"
    );
    // The Automation API's install_plugin_from_server: refused, saying why.
    let e = w.fails(&[
        "plugin",
        "install",
        "resource",
        "convergetest",
        "1.0.0",
        "--server",
        "https://example.com",
    ]);
    assert!(e.contains("Converge does not download plugins"), "{e}");
    let src_arg = src.to_str().unwrap();
    let archive_arg = archive.to_str().unwrap();
    let out = w.run(&[
        "plugin",
        "install",
        "resource",
        "convergetest",
        "1.0.0",
        "--file",
        src_arg,
    ]);
    assert!(
        out.contains("Installed resource plugin convergetest 1.0.0"),
        "{out}"
    );
    w.run(&[
        "plugin",
        "install",
        "resource",
        "convergetest",
        "v2.0.0",
        "-f",
        archive_arg,
    ]);
    let again = w.run(&[
        "plugin",
        "install",
        "resource",
        "convergetest",
        "2.0.0",
        "-f",
        archive_arg,
    ]);
    assert!(again.contains("already installed"), "{again}");
    assert_eq!(
        entries(&w.plugins_dir()),
        [
            "resource-convergetest-v1.0.0",
            "resource-convergetest-v1.0.0.lock",
            "resource-convergetest-v2.0.0",
            "resource-convergetest-v2.0.0.lock"
        ]
    );

    // A damaged archive and a directory without the executable install
    // nothing, and leave no temporary directory behind.
    let damaged = root.join("damaged.tar.gz");
    let bytes = std::fs::read(&archive).unwrap();
    std::fs::write(&damaged, &bytes[..bytes.len() / 2]).unwrap();
    let e = w.fails(&[
        "plugin",
        "install",
        "resource",
        "convergetest",
        "3.0.0",
        "-f",
        damaged.to_str().unwrap(),
    ]);
    assert!(e.contains("damaged"), "{e}");
    let e = w.fails(&[
        "plugin", "install", "resource", "other", "1.0.0", "-f", src_arg,
    ]);
    assert!(e.contains("holds no `pulumi-resource-other`"), "{e}");
    let e = w.fails(&[
        "plugin", "install", "resource", "../x", "1.0.0", "-f", src_arg,
    ]);
    assert!(e.contains("invalid plugin name"), "{e}");
    let dirs: Vec<String> = entries(&w.plugins_dir())
        .into_iter()
        .filter(|n| !n.ends_with(".lock"))
        .collect();
    assert_eq!(
        dirs,
        [
            "resource-convergetest-v1.0.0",
            "resource-convergetest-v2.0.0"
        ]
    );

    // Pulumi's --json shape, newest first.
    let (keys, list) = w.listed();
    assert_eq!(
        keys,
        [
            entry("convergetest", "2.0.0"),
            entry("convergetest", "1.0.0")
        ]
    );
    let size = std::fs::metadata(&w.plugin).unwrap().len();
    assert_eq!(
        list[1]["size"].as_u64().unwrap(),
        size + "test plugin\n".len() as u64
    );
    for p in &list {
        let mut fields: Vec<&str> = p.as_object().unwrap().keys().map(String::as_str).collect();
        fields.sort_unstable();
        assert_eq!(
            fields,
            [
                "installTime",
                "kind",
                "lastUsedTime",
                "name",
                "size",
                "version"
            ]
        );
        let t = p["installTime"].as_str().unwrap();
        assert!(
            t.len() == 24 && t.ends_with('Z') && t.as_bytes()[19] == b'.',
            "{t}"
        );
    }
    let human = w.run(&["plugin", "ls"]);
    let lines: Vec<&str> = human.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        [
            "NAME",
            "KIND",
            "VERSION",
            "SIZE",
            "INSTALLED",
            "LAST",
            "USED"
        ],
        "{human}"
    );
    assert!(
        lines[0].starts_with("NAME          KIND      VERSION  SIZE   INSTALLED"),
        "{human}"
    );
    // The size is the test plugin's, which depends on the build (its debug
    // info): only its form is fixed here.
    let prefix = "convergetest  resource  2.0.0    ";
    assert!(lines[1].starts_with(prefix), "{human}");
    let size: Vec<&str> = lines[1][prefix.len()..].split_whitespace().collect();
    assert!(
        size.len() == 4 && size[0].parse::<f64>().is_ok() && size[1] == "MB",
        "{human}"
    );
    // Whatever the size's width, the next column stays under its header.
    let installed = lines[0].find("INSTALLED").unwrap();
    assert!(lines[1][installed..].starts_with("now"), "{human}");
    assert!(human.contains("TOTAL plugin cache size: "), "{human}");
    assert!(human.contains("Built into converge"), "{human}");
    assert!(human.contains("random    resource  4.21.4"), "{human}");

    // The program gets the newest installed plugin from the directory.
    w.run(&["stack", "init", "dev"]);
    w.run(&["up", "--yes"]);
    let outputs: serde_json::Value =
        serde_json::from_str(&w.run(&["stack", "output", "--json"])).unwrap();
    assert_eq!(outputs["version"], "2.0.0");

    let e = w.fails(&["plugin", "rm", "resource", "convergetest", "2.0.0"]);
    assert!(e.contains("needs confirmation: pass --yes"), "{e}");
    let e = w.fails(&["plugin", "rm"]);
    assert!(e.contains("pass --all"), "{e}");
    let out = w.run(&["plugin", "rm", "resource", "convergetest", "2.0.0", "--yes"]);
    assert!(
        out.contains("removed resource plugin convergetest 2.0.0"),
        "{out}"
    );
    assert_eq!(w.listed().0, [entry("convergetest", "1.0.0")]);
    // The stack's provider is still served, by 1.0.0 now.
    let preview = w.run(&["preview", "--expect-no-changes"]);
    assert!(preview.contains("unchanged"), "{preview}");
    w.run(&["plugin", "rm", "resource", "convergetest", "--yes"]);
    assert!(w.listed().0.is_empty());
    // Only the lock files of the two failed installs remain, as Pulumi
    // leaves them.
    assert_eq!(
        entries(&w.plugins_dir()),
        [
            "resource-convergetest-v3.0.0.lock",
            "resource-other-v1.0.0.lock"
        ]
    );
    let e = w.fails(&["preview"]);
    assert!(e.contains("convergetest"), "{e}");
}
