//! `terraform-provider-gostore`, Converge's test Terraform provider written
//! in Go with HashiCorp's go-plugin (this crate's `go/gostore/`), as every
//! released provider is: go-plugin's own handshake and AutoMTLS, protocols
//! 5 and 6, `GRPCController.Shutdown`. Built from source by the tests with
//! Debian's Go packages in GOPATH mode (no module proxy):
//! `scripts/lib/go.sh` installs them and exports [`GO_ENV`], the `go`
//! binary; tests skip without it, and fail under `CI=true`.
//!
//! The build (protoc's Go code for our own tfplugin5/tfplugin6 `.proto`
//! files, then `go build`) lands in the system temporary directory under
//! the digest of its inputs, so test binaries share it, and Go's build
//! cache beside it keeps a rebuild to seconds. One build at a time (a file
//! lock).
//!
//! What the provider does: `gostore_item` objects as JSON files in a
//! directory (resource and data source; schema version 1 with `content`
//! in releases 1.x, 2 with `value` from 2.0.0, state upgrade; import; a
//! sensitive `note`); its provider configuration takes `directory` and
//! `read_delay_ms` (each `ReadResource` waits that long). The release is
//! read from the executable's name. With `GOSTORE_EVENTS` naming a file, each
//! process appends `start PID PROTOCOL`, `configure PID`, `stop PID` and,
//! when it ends through `Shutdown`, `exit PID` ([`Events`]).

#![cfg(unix)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

/// The `go` binary (`scripts/lib/go.sh` exports it).
pub const GO_ENV: &str = "CONVERGE_TEST_GO";
/// The provider's TYPE.
pub const TYPE: &str = "gostore";
/// Where the provider appends its process events.
pub const EVENTS_ENV: &str = "GOSTORE_EVENTS";
/// Its object directory when the configuration names none.
pub const DIRECTORY_ENV: &str = "GOSTORE_DIRECTORY";
/// Which protocols it serves: unset both, `5` or `6` one, `4` none of ours.
pub const PROTOCOLS_ENV: &str = "GOSTORE_PROTOCOLS";

/// `$CONVERGE_TEST_GO` when set and not empty.
pub fn go() -> Option<PathBuf> {
    std::env::var_os(GO_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// True when the Go provider can be built; otherwise says why the test is
/// skipped, and panics under `CI` (where `scripts/test` always sets
/// [`GO_ENV`]).
pub fn available() -> bool {
    if go().is_some() {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("{GO_ENV} is not set: run scripts/test (scripts/lib/go.sh installs Go)");
    }
    eprintln!("SKIPPED: set {GO_ENV} to the go binary (scripts/lib/go.sh does) to build the Go test provider");
    false
}

fn sources_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("go")
        .join("gostore")
}

fn protos_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../converge-proto/proto")
}

const PROTOS: &[&str] = &["tfplugin5/tfplugin5.proto", "tfplugin6/tfplugin6.proto"];

/// The provider's executable, built on first use in this process (and
/// reused across processes while its sources are unchanged).
///
/// # Panics
///
/// When [`GO_ENV`] is not set or the build fails (a test setup failure,
/// with the tool's output).
pub fn executable() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(build).clone()
}

fn build() -> PathBuf {
    let go = go().unwrap_or_else(|| panic!("{GO_ENV} is not set"));
    let mut inputs = BTreeMap::new();
    for entry in std::fs::read_dir(sources_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "go") {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            inputs.insert(name, std::fs::read(&path).unwrap());
        }
    }
    for proto in PROTOS {
        inputs.insert(
            (*proto).to_owned(),
            std::fs::read(protos_dir().join(proto)).unwrap(),
        );
    }
    let mut digest = Sha256::new();
    digest.update(go.as_os_str().as_encoded_bytes());
    for (name, bytes) in &inputs {
        digest.update(name.as_bytes());
        digest.update((bytes.len() as u64).to_le_bytes());
        digest.update(bytes);
    }
    let key = hex::encode(&digest.finalize()[..12]);
    let root = std::env::temp_dir().join("converge-go-provider");
    std::fs::create_dir_all(&root).unwrap();
    let exe = root.join(&key).join(format!("terraform-provider-{TYPE}"));
    let lock = std::fs::File::create(root.join(".lock")).unwrap();
    fs2::FileExt::lock_exclusive(&lock).unwrap();
    if exe.is_file() {
        return exe;
    }
    let work = root.join(format!("{key}.build"));
    let _ = std::fs::remove_dir_all(&work);
    let package = work.join("src").join(TYPE);
    std::fs::create_dir_all(&package).unwrap();
    for (name, bytes) in &inputs {
        if name.ends_with(".go") {
            std::fs::write(package.join(name), bytes).unwrap();
        }
    }
    let mut protoc = Command::new("protoc");
    protoc.arg("-I").arg(protos_dir());
    protoc.arg(format!("--go_out={}", work.join("src").display()));
    protoc.arg(format!("--go-grpc_out={}", work.join("src").display()));
    for proto in PROTOS {
        let dir = proto.split('/').next().unwrap();
        protoc.arg(format!("--go_opt=M{proto}={TYPE}/{dir}"));
        protoc.arg(format!("--go-grpc_opt=M{proto}={TYPE}/{dir}"));
    }
    protoc.args(PROTOS);
    run(
        &mut protoc,
        "protoc (protobuf-compiler, protoc-gen-go, protoc-gen-go-grpc)",
    );
    let built = work.join(format!("terraform-provider-{TYPE}"));
    let gopath = std::env::join_paths([work.clone(), PathBuf::from("/usr/share/gocode")]).unwrap();
    let mut build = Command::new(&go);
    build
        .current_dir(&work)
        .env("GOPATH", gopath)
        .env("GO111MODULE", "off")
        .env("GOFLAGS", "")
        .env("GOCACHE", root.join("gocache"))
        .arg("build")
        .arg("-o")
        .arg(&built)
        .arg(TYPE);
    run(&mut build, "go build");
    std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
    std::fs::rename(&built, &exe).unwrap();
    let _ = std::fs::remove_dir_all(&work);
    exe
}

fn run(command: &mut Command, what: &str) {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e} (scripts/lib/go.sh installs it)"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Installs release `version` under `mirror_root` in OpenTofu's unpacked
/// layout (`HOST/NAMESPACE/gostore/VERSION/OS_ARCH/terraform-provider-gostore_vVERSION`,
/// a copy of the executable) and returns its path.
pub fn install(mirror_root: &Path, version: &str) -> PathBuf {
    let dir = mirror_root
        .join(crate::terraform_mirror::HOST)
        .join(crate::terraform_mirror::NAMESPACE)
        .join(TYPE)
        .join(version)
        .join(converge_plugin::terraform::discovery::current_os_arch());
    std::fs::create_dir_all(&dir).unwrap();
    let target = dir.join(format!("terraform-provider-{TYPE}_v{version}"));
    std::fs::copy(executable(), &target).unwrap();
    target
}

/// The events the provider processes wrote to a [`EVENTS_ENV`] file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Events {
    /// Every line, in order: (event, pid, rest).
    pub lines: Vec<(String, u32, String)>,
}

impl Events {
    /// Reads `path` (no file: no events).
    pub fn read(path: &Path) -> Events {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines = text
            .lines()
            .filter_map(|l| {
                let mut fields = l.splitn(3, ' ');
                let event = fields.next()?.to_owned();
                let pid = fields.next()?.parse().ok()?;
                Some((event, pid, fields.next().unwrap_or("").to_owned()))
            })
            .collect();
        Events { lines }
    }

    /// The pids with event `what`, in order.
    pub fn pids(&self, what: &str) -> Vec<u32> {
        self.lines
            .iter()
            .filter(|(e, _, _)| e == what)
            .map(|(_, pid, _)| *pid)
            .collect()
    }

    /// The protocol each started process chose.
    pub fn protocols(&self) -> Vec<String> {
        self.lines
            .iter()
            .filter(|(e, _, _)| e == "start")
            .map(|(_, _, rest)| rest.clone())
            .collect()
    }
}

/// Release `version` as its `.zip` package (the executable, named
/// `terraform-provider-gostore_vVERSION`, mode 0755), as registries and
/// mirrors publish it.
pub fn package(version: &str) -> Vec<u8> {
    use std::io::Write;
    let binary = std::fs::read(executable()).unwrap();
    let mut out = std::io::Cursor::new(Vec::new());
    let mut zip = zip::ZipWriter::new(&mut out);
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .unix_permissions(0o755);
    zip.start_file(format!("terraform-provider-{TYPE}_v{version}"), options)
        .unwrap();
    zip.write_all(&binary).unwrap();
    zip.finish().unwrap();
    out.into_inner()
}

/// The package's file name for this platform:
/// `terraform-provider-gostore_VERSION_OS_ARCH.zip`.
pub fn package_name(version: &str) -> String {
    format!(
        "terraform-provider-{TYPE}_{version}_{}.zip",
        converge_plugin::terraform::discovery::current_os_arch()
    )
}
