//! Provider installation through `converge plugin install terraform`, as
//! OpenTofu's CLI configuration says (`TF_CLI_CONFIG_FILE`): from a packed
//! filesystem mirror, a network mirror and a registry served on 127.0.0.1
//! by a real HTTP server; hashes checked, the lock file written beside the
//! project and honoured by later runs (exactly the locked build, installed
//! again when missing); a tampered archive refused, and nothing run.

use std::path::PathBuf;

use converge_testkit::go_provider;
use converge_testkit::http_files::FileServer;
use serde_json::json;
use sha2::Digest;

use super::go::assert_processes;
use super::world::{meta, TfWorld};

fn program(attribute: &str) -> String {
    format!(
        "resources:
  item:
    type: gostore:Item
    properties:
      key: doc
      {attribute}: text
"
    )
}

/// A YAML world whose CLI configuration (TF_CLI_CONFIG_FILE) holds
/// `installation` and puts providers in its plugin cache directory.
fn world(name: &str, installation: &str, attribute: &str) -> (TfWorld, PathBuf) {
    let mut w = TfWorld::yaml(name, &program(attribute));
    let cache = w.scratch.dir.path().join("plugin-cache");
    let config = w.scratch.dir.path().join("tofurc");
    std::fs::write(
        &config,
        format!("plugin_cache_dir = \"{}\"\n{installation}", cache.display()),
    )
    .unwrap();
    w.set_env("TF_CLI_CONFIG_FILE", &config.display().to_string());
    w.configure_directory(go_provider::TYPE);
    (w, cache)
}

fn lock_file(w: &TfWorld) -> String {
    std::fs::read_to_string(w.scratch.project.join(".terraform.lock.hcl")).unwrap()
}

fn zh(bytes: &[u8]) -> String {
    format!("zh:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

#[test]
fn a_packed_filesystem_mirror_installs_the_constrained_version_and_the_lock_holds() {
    if !go_provider::available() {
        return;
    }
    let mirror = tempfile::tempdir().unwrap();
    let dir = mirror.path().join("example.com/converge-test/gostore");
    std::fs::create_dir_all(&dir).unwrap();
    let v1 = go_provider::package("1.0.0");
    std::fs::write(dir.join(go_provider::package_name("1.0.0")), &v1).unwrap();
    std::fs::write(
        dir.join(go_provider::package_name("2.0.0")),
        go_provider::package("2.0.0"),
    )
    .unwrap();
    let (w, cache) = world(
        "tfinstfs",
        &format!(
            "provider_installation {{\n  filesystem_mirror {{\n    path = \"{}\"\n  }}\n}}\n",
            mirror.path().display()
        ),
        "content",
    );

    let out = w.run(&[
        "plugin",
        "install",
        "terraform",
        "example.com/converge-test/gostore",
        "~> 1.0",
    ]);
    assert!(
        out.contains("Installed Terraform provider example.com/converge-test/gostore 1.0.0"),
        "{out}"
    );
    let lock = lock_file(&w);
    assert!(
        lock.contains("provider \"example.com/converge-test/gostore\" {"),
        "{lock}"
    );
    assert!(lock.contains("version     = \"1.0.0\""), "{lock}");
    assert!(lock.contains("constraints = \"~> 1.0\""), "{lock}");
    assert!(lock.contains(&zh(&v1)), "{lock}");
    assert!(lock.contains("\"h1:"), "{lock}");

    // 2.0.0 installed beside it does not change what runs: the lock says 1.0.0.
    go_provider::install(&cache, "2.0.0");
    w.run(&["up", "--yes"]);
    assert_eq!(meta(&w.outputs("item")).0, "1", "the locked release ran");
    assert_eq!(w.object("doc").unwrap()["value"], "text");
    assert_processes(&w, "6");

    // The locked files changed on disk: refused, nothing runs, the state stays.
    let exe = cache.join(format!(
        "example.com/converge-test/gostore/1.0.0/{}/terraform-provider-gostore_v1.0.0",
        converge_plugin::terraform::discovery::current_os_arch()
    ));
    let mut bytes = std::fs::read(&exe).unwrap();
    bytes.push(0);
    std::fs::write(&exe, bytes).unwrap();
    let before = w.export();
    w.set_yaml(&program("content").replace("text", "changed"));
    let out = w.fails(&["up", "--yes"]);
    let line = out
        .lines()
        .find(|l| l.contains("refusing Terraform provider example.com/converge-test/gostore 1.0.0"))
        .unwrap_or_else(|| panic!("no refusal:\n{out}"));
    assert!(
        line.contains("its files hash to h1:") && line.contains("the lock file locks h1:"),
        "{line}"
    );
    assert!(
        w.events().pids("start").is_empty(),
        "nothing ran: {:?}",
        w.events()
    );
    assert_eq!(w.export(), before);
    assert_eq!(w.object("doc").unwrap()["value"], "text");
}

fn network_mirror(server: &FileServer, archive: &[u8], hashes: &[String]) {
    let base = "/mirror/example.com/converge-test/gostore";
    server.put(
        &format!("{base}/index.json"),
        json!({"versions": {"2.0.0": {}}}).to_string(),
    );
    server.put(
        &format!("{base}/2.0.0.json"),
        json!({"archives": {converge_plugin::terraform::discovery::current_os_arch(): {
            "url": go_provider::package_name("2.0.0"), "hashes": hashes}}})
        .to_string(),
    );
    server.put(
        &format!("{base}/{}", go_provider::package_name("2.0.0")),
        archive.to_vec(),
    );
}

#[test]
fn a_network_mirror_installs_verified_and_a_missing_locked_provider_is_installed_again() {
    if !go_provider::available() {
        return;
    }
    let server = FileServer::start();
    let archive = go_provider::package("2.0.0");
    network_mirror(&server, &archive, &[zh(&archive)]);
    let (w, cache) = world(
        "tfinstnet",
        &format!(
            "provider_installation {{\n  network_mirror {{\n    url = \"{}\"\n  }}\n}}\n",
            server.url("/mirror/")
        ),
        "value",
    );
    w.run(&[
        "plugin",
        "install",
        "terraform",
        "example.com/converge-test/gostore",
    ]);
    assert!(lock_file(&w).contains("version     = \"2.0.0\""));
    assert!(lock_file(&w).contains(&zh(&archive)));

    // The cache is emptied: the run installs the locked build again.
    std::fs::remove_dir_all(&cache).unwrap();
    w.run(&["up", "--yes"]);
    assert_eq!(w.object("doc").unwrap()["value"], "text");
    assert_processes(&w, "6");

    // The mirror now serves another archive under the locked version:
    // refused against the lock file, nothing installed, nothing run.
    std::fs::remove_dir_all(&cache).unwrap();
    let tampered_zip = go_provider::package("2.0.0-tampered");
    network_mirror(&server, &tampered_zip, &[zh(&tampered_zip)]);
    let before = w.export();
    w.set_yaml(&program("value").replace("text", "changed"));
    let out = w.fails(&["up", "--yes"]);
    let line = out
        .lines()
        .find(|l| l.contains("refusing example.com/converge-test/gostore 2.0.0"))
        .unwrap_or_else(|| panic!("no refusal:\n{out}"));
    assert!(line.contains(&zh(&tampered_zip)), "{line}");
    assert!(line.contains(&zh(&archive)), "{line}");
    assert!(line.contains("in the lock file"), "{line}");
    assert!(go_provider_dirs(&cache).is_empty(), "nothing was installed");
    assert!(w.events().pids("start").is_empty(), "nothing ran");
    assert_eq!(w.export(), before);
}

fn registry(server: &FileServer, archive: &[u8], shasum: &str) {
    let (os, arch) = converge_plugin::terraform::discovery::current_os_arch()
        .split_once('_')
        .map(|(o, a)| (o.to_owned(), a.to_owned()))
        .unwrap();
    server.put(
        "/.well-known/terraform.json",
        json!({"providers.v1": "/v1/providers/"}).to_string(),
    );
    server.put(
        "/v1/providers/converge-test/gostore/versions",
        json!({"versions": [
            {"version": "1.0.0", "protocols": ["5.0", "6.0"], "platforms": [{"os": os, "arch": arch}]},
            {"version": "2.0.0", "protocols": ["5.0", "6.0"], "platforms": [{"os": os, "arch": arch}]},
            {"version": "3.0.0", "protocols": ["6.0"], "platforms": [{"os": "plan9", "arch": "mips"}]}
        ]})
        .to_string(),
    );
    server.put(
        &format!("/v1/providers/converge-test/gostore/2.0.0/download/{os}/{arch}"),
        json!({"protocols": ["5.0", "6.0"], "os": os, "arch": arch,
               "filename": go_provider::package_name("2.0.0"),
               "download_url": format!("/files/{}", go_provider::package_name("2.0.0")),
               "shasum": shasum})
        .to_string(),
    );
    server.put(
        &format!("/files/{}", go_provider::package_name("2.0.0")),
        archive.to_vec(),
    );
}

#[test]
fn a_registry_on_loopback_installs_by_service_discovery_and_a_bad_shasum_is_refused() {
    if !go_provider::available() {
        return;
    }
    let server = FileServer::start();
    let archive = go_provider::package("2.0.0");
    let address = format!("{}/converge-test/gostore", server.address);

    // The registry publishes a checksum the archive does not have.
    registry(&server, &archive, &"0".repeat(64));
    let (w, cache) = world("tfinstreg", "", "value");
    let out = w.fails(&["plugin", "install", "terraform", &address]);
    let line = out
        .lines()
        .find(|l| l.contains(&format!("refusing {address} 2.0.0 from its registry")))
        .unwrap_or_else(|| panic!("no refusal:\n{out}"));
    assert!(
        line.contains(&zh(&archive)) && line.contains(&format!("zh:{}", "0".repeat(64))),
        "{line}"
    );
    assert!(!w.scratch.project.join(".terraform.lock.hcl").exists());
    assert!(!cache.exists() || go_provider_dirs(&cache).is_empty());

    // With the right checksum: installed (the newest for this platform),
    // locked, and the program runs it.
    registry(
        &server,
        &archive,
        &hex::encode(sha2::Sha256::digest(&archive)),
    );
    w.run(&["plugin", "install", "terraform", &address, ">= 1.0"]);
    let lock = lock_file(&w);
    assert!(lock.contains(&format!("provider \"{address}\"")), "{lock}");
    assert!(lock.contains("version     = \"2.0.0\""), "{lock}");
    w.run(&["up", "--yes"]);
    assert_eq!(w.object("doc").unwrap()["value"], "text");
    let ls = w.run(&["plugin", "ls"]);
    assert!(ls.contains("gostore"), "{ls}");
    assert_processes(&w, "6");
}

fn go_provider_dirs(cache: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![cache.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.path().is_dir() {
                dirs.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out
}
