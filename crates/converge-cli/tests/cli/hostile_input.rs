//! Hostile input through the binary: a `main:` that names nothing or a
//! place outside the project, YAML alias bombs, nesting and sizes past the
//! limits, state values nested thousands of levels deep, output files
//! that are devices, FIFOs or links, and storage failures. Each is refused
//! (or handled) with a clear error and a non-zero exit, and the stack's
//! files stay byte for byte what they were.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{symlink, FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common;

const PROGRAM: &str = "name: hostile\nruntime: yaml\nresources:\n  pet:\n    type: random:RandomPet\n  num:\n    type: random:RandomInteger\n    properties:\n      min: 1\n      max: 10\n";

/// A hang guard for one command, far beyond what any takes.
const HANG_GUARD: Duration = Duration::from_secs(600);

/// The peak memory a refused YAML file may cost (the binary itself, in a
/// debug build, takes 30 to 50 MB).
const MAX_RSS_KB: u64 = 100 * 1024;

/// A stack `dev` with two random resources, deployed.
struct World {
    scratch: common::Scratch,
}

impl World {
    fn deployed() -> World {
        let w = World {
            scratch: common::Scratch::new(PROGRAM),
        };
        w.ok(&["stack", "init", "dev"]);
        w.ok(&["up", "--yes"]);
        assert_eq!(w.resources().len(), 4, "stack, provider, pet, num");
        w
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = self.scratch.command("pw");
        c.args(args);
        c
    }

    fn ok(&self, args: &[&str]) -> String {
        common::stdout_of(self.cmd(&[]), args)
    }

    fn fails(&self, args: &[&str]) -> String {
        common::failure_of(self.cmd(&[]), args)
    }

    fn project_file(&self, name: &str) -> PathBuf {
        self.scratch.project.join(name)
    }

    fn set_program(&self, text: &str) {
        fs::write(self.project_file("Pulumi.yaml"), text).unwrap();
    }

    fn checkpoint(&self) -> PathBuf {
        self.scratch.backend.join(".pulumi/stacks/hostile/dev.json")
    }

    /// Every regular file of the backend (checkpoint, backups, history,
    /// tags, locks), by path.
    fn stack_files(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
            for entry in fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, out);
                } else {
                    out.insert(path.clone(), fs::read(&path).unwrap());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.scratch.backend, &mut out);
        out
    }

    /// The names of the stack's resources, from `stack export` (read
    /// past their values, which may be nested deeper than serde_json
    /// builds).
    fn resources(&self) -> Vec<String> {
        #[derive(serde::Deserialize)]
        struct Export {
            deployment: Deployment,
        }
        #[derive(serde::Deserialize)]
        struct Deployment {
            resources: Vec<Resource>,
        }
        #[derive(serde::Deserialize)]
        struct Resource {
            urn: String,
        }
        let export: Export = serde_json::from_str(&self.ok(&["stack", "export"])).unwrap();
        export
            .deployment
            .resources
            .into_iter()
            .map(|r| r.urn.rsplit("::").next().unwrap().to_owned())
            .collect()
    }

    /// Runs `converge args` with stdout and stderr captured: whether it
    /// succeeded, what it printed, and its peak resident memory in KB.
    fn measured(&self, args: &[&str]) -> (bool, String, u64) {
        run_measured(self.cmd(args))
    }
}

/// Runs a program (argv[1:]) and reports its own peak RSS: the parent
/// that reaps a child must be small, since Linux counts what the parent
/// had mapped when it forked into the child's `ru_maxrss` (the test
/// process is large). The program's exit code is passed on.
const RSS_WRAPPER: &str = r#"
import os, sys, time
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ)
deadline = time.monotonic() + float(os.environ["HANG_GUARD_SECS"])
while True:
    reaped, status, usage = os.wait4(pid, os.WNOHANG)
    if reaped == pid:
        break
    if time.monotonic() > deadline:
        os.kill(pid, 9)
        os.wait4(pid, 0)
        sys.exit("converge did not end in time")
    time.sleep(0.02)
sys.stderr.write("\npeak-rss-kb %d\n" % usage.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status))
"#;

/// Runs `cmd` to its end under [`RSS_WRAPPER`]: whether it exited 0, its
/// stdout and stderr, and its peak RSS in KB (Linux reports kilobytes).
fn run_measured(cmd: Command) -> (bool, String, u64) {
    let python = std::env::var_os("CONVERGE_TEST_PYTHON").unwrap_or_else(|| "python3".into());
    let mut wrapper = Command::new(python);
    wrapper
        .arg("-c")
        .arg(RSS_WRAPPER)
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .env("HANG_GUARD_SECS", HANG_GUARD.as_secs().to_string());
    if let Some(dir) = cmd.get_current_dir() {
        wrapper.current_dir(dir);
    }
    for (key, value) in cmd.get_envs() {
        match value {
            Some(v) => wrapper.env(key, v),
            None => wrapper.env_remove(key),
        };
    }
    let out = wrapper.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let (stderr, peak) = stderr
        .trim_end()
        .rsplit_once("\npeak-rss-kb ")
        .unwrap_or_else(|| panic!("no peak RSS reported:\n{stderr}"));
    let text = format!("{}{stderr}", String::from_utf8_lossy(&out.stdout));
    (out.status.success(), text, peak.parse().unwrap())
}

/// A value nested `depth` levels: objects `{"k": …}` and lists `[…]` in
/// turn around `"leaf"`.
fn nested_json(depth: usize) -> String {
    let mut text = String::with_capacity(depth * 8);
    for i in 0..depth {
        text.push_str(if i % 2 == 0 { "{\"k\":" } else { "[" });
    }
    text.push_str("\"leaf\"");
    for i in (0..depth).rev() {
        text.push(if i % 2 == 0 { '}' } else { ']' });
    }
    text
}

/// How deep `bytes` nests arrays and objects, brackets in strings not
/// counted.
fn max_depth(bytes: &[u8]) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in bytes {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth -= 1,
            _ => {}
        }
    }
    max
}

/// Nine levels of nine aliases: 387 million nodes in a few hundred bytes.
fn alias_bomb(indent: &str) -> String {
    let mut text = format!("{indent}l0: &l0 [{}]\n", ["\"lol\""; 9].join(", "));
    for level in 1..9 {
        let aliases = vec![format!("*l{}", level - 1); 9].join(", ");
        text.push_str(&format!("{indent}l{level}: &l{level} [{aliases}]\n"));
    }
    text
}

#[test]
fn a_main_that_names_nothing_or_a_place_outside_the_project_is_refused() {
    let w = World::deployed();
    let outside = w.scratch.dir.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    fs::write(
        outside.join("__main__.py"),
        "raise SystemExit('ran outside')\n",
    )
    .unwrap();
    fs::write(outside.join("index.js"), "throw new Error('ran outside')\n").unwrap();
    fs::write(outside.join("Main.yaml"), "resources: {}\n").unwrap();
    symlink(&outside, w.project_file("linked")).unwrap();
    let before = w.stack_files();
    let program = |runtime: &str, main: &str| {
        PROGRAM.replace("runtime: yaml", &format!("runtime: {runtime}"))
            + &format!("main: {main}\n")
    };
    for runtime in ["yaml", "python", "nodejs"] {
        for (main, words) in [
            ("prog/", "project 'main' could not be read"),
            ("../outside/", "project 'main' must be a subfolder"),
            ("../outside", "project 'main' must be a subfolder"),
            ("linked", "project 'main' must be a subfolder"),
        ] {
            w.set_program(&program(runtime, main));
            for args in [&["up", "--yes"][..], &["preview"][..]] {
                let text = w.fails(args);
                assert!(
                    text.contains(&format!("error: {words}")),
                    "{runtime} main: {main} {args:?}:\n{text}"
                );
                assert!(!text.contains("ran outside"), "{text}");
            }
            assert_eq!(w.stack_files(), before, "{runtime} main: {main}");
        }
    }
    let text = w.fails(&["up", "--yes"]);
    assert!(
        text.contains("no such file or directory") || text.contains("subfolder"),
        "{text}"
    );
    // Nothing was deleted: the program as it was changes nothing.
    w.set_program(PROGRAM);
    w.ok(&["up", "--yes", "--expect-no-changes"]);
    assert_eq!(w.resources().len(), 4);
}

#[test]
fn yaml_alias_bombs_are_refused_in_little_memory() {
    let w = World::deployed();
    let before = w.stack_files();
    let check = |what: &str, file: &str, line: usize| {
        let (ok, text, rss_kb) = w.measured(&["up", "--yes"]);
        assert!(!ok, "{what}: succeeded:\n{text}");
        assert!(
            text.contains(&format!("{file}:{line}:"))
                && text.contains("the document contains excessive aliasing"),
            "{what}:\n{text}"
        );
        assert!(rss_kb < MAX_RSS_KB, "{what}: peak RSS {rss_kb} KB");
        assert_eq!(w.stack_files(), before, "{what}");
    };

    // In the project file, after the program.
    w.set_program(&format!("{PROGRAM}{}", alias_bomb("")));
    check("Pulumi.yaml", "Pulumi.yaml", 16);
    w.set_program(PROGRAM);

    // In the stack's settings, under `config`.
    let settings = w.project_file("Pulumi.dev.yaml");
    fs::write(&settings, format!("config:\n{}", alias_bomb("  "))).unwrap();
    check("Pulumi.dev.yaml", "Pulumi.dev.yaml", 7);
    fs::remove_file(&settings).unwrap();

    // In a YAML program's Main.yaml, under `variables`.
    fs::create_dir_all(w.project_file("prog")).unwrap();
    fs::write(
        w.project_file("prog/Main.yaml"),
        format!("resources: {{}}\nvariables:\n{}", alias_bomb("  ")),
    )
    .unwrap();
    w.set_program(&format!("{PROGRAM}main: prog/\n"));
    check("Main.yaml", "prog/Main.yaml", 8);
    w.set_program(PROGRAM);
    w.ok(&["up", "--yes", "--expect-no-changes"]);
}

#[test]
fn yaml_nested_too_deep_or_too_large_is_refused() {
    let w = World::deployed();
    let before = w.stack_files();
    // A config value nested 101 levels deep (as flow lists).
    let deep = format!("{}1{}", "[".repeat(101), "]".repeat(101));
    w.set_program(&format!("{PROGRAM}config:\n  deep:\n    default: {deep}\n"));
    let text = w.fails(&["up", "--yes"]);
    assert!(
        text.contains("Pulumi.yaml:13:")
            && text.contains("nests mappings and lists more than 100 levels deep"),
        "{text}"
    );
    assert_eq!(w.stack_files(), before);
    w.set_program(PROGRAM);
    let settings = w.project_file("Pulumi.dev.yaml");
    fs::write(&settings, format!("config:\n  hostile:deep: {deep}\n")).unwrap();
    let text = w.fails(&["up", "--yes"]);
    assert!(
        text.contains("Pulumi.dev.yaml:2:") && text.contains("more than 100 levels deep"),
        "{text}"
    );
    assert_eq!(w.stack_files(), before);
    fs::remove_file(&settings).unwrap();

    // Files past 64 MiB are refused unread (sparse: nothing is written).
    for name in ["Pulumi.dev.yaml", "Pulumi.yaml"] {
        let path = w.project_file(name);
        let kept = fs::read(&path).ok();
        let file = fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(false)
            .open(&path)
            .unwrap();
        file.set_len(64 * 1024 * 1024 + 1).unwrap();
        let (ok, text, rss_kb) = w.measured(&["up", "--yes"]);
        assert!(!ok, "{text}");
        assert!(
            text.contains(name) && text.contains("larger than 67108864 bytes"),
            "{name}:\n{text}"
        );
        assert!(rss_kb < MAX_RSS_KB, "{name}: peak RSS {rss_kb} KB");
        assert_eq!(w.stack_files(), before, "{name}");
        match kept {
            Some(bytes) => fs::write(&path, bytes).unwrap(),
            None => fs::remove_file(&path).unwrap(),
        }
    }
    w.ok(&["up", "--yes", "--expect-no-changes"]);
}

/// The stack's outputs (`STACK`), or the outputs of `num` (`NUM`).
const STACK: &str = "pulumi:pulumi:Stack";
const NUM: &str = "random:index/randomInteger:RandomInteger";

/// The checkpoint with the outputs of the resources of these `types`
/// holding `deep` under the key `deep`.
fn with_deep_outputs(w: &World, types: &[&str], deep: &str) {
    let mut checkpoint: serde_json::Value =
        serde_json::from_slice(&fs::read(w.checkpoint()).unwrap()).unwrap();
    let resources = checkpoint["checkpoint"]["latest"]["resources"]
        .as_array_mut()
        .unwrap();
    for r in resources.iter_mut() {
        if types.iter().any(|t| r["type"] == *t) {
            r["outputs"]["deep"] = "__DEEP__".into();
        }
    }
    let text = serde_json::to_string(&checkpoint)
        .unwrap()
        .replace("\"__DEEP__\"", deep);
    fs::write(w.checkpoint(), text).unwrap();
}

#[test]
fn state_values_nested_a_thousand_levels_deep_are_read_written_and_updated() {
    let w = World::deployed();
    with_deep_outputs(&w, &[STACK, NUM], &nested_json(1_000));
    // Read, shown, exported (checkpoint level 6 + 1,000; export 5 + 1,000).
    assert!(w.ok(&["stack", "output", "deep"]).contains("leaf"));
    assert!(w.ok(&["stack", "output", "--json"]).contains("leaf"));
    let export = w.scratch.dir.path().join("export.json");
    w.ok(&["stack", "export", "--file", export.to_str().unwrap()]);
    assert_eq!(max_depth(&fs::read(&export).unwrap()), 1_005);
    // Imported back, and updated: `num`'s outputs are kept, the stack's
    // are the program's (none).
    w.ok(&["stack", "import", "--file", export.to_str().unwrap()]);
    assert_eq!(max_depth(&fs::read(w.checkpoint()).unwrap()), 1_006);
    w.ok(&["up", "--yes"]);
    w.ok(&["preview", "--expect-no-changes"]);
    assert_eq!(max_depth(&fs::read(w.checkpoint()).unwrap()), 1_006);
    assert!(!w.ok(&["stack", "output", "--json"]).contains("leaf"));
    assert_eq!(w.resources().len(), 4);
}

#[test]
fn state_values_at_the_depth_limit_are_read_written_and_updated_and_past_it_refused() {
    // 10,000 levels in all: 6 around the value in a checkpoint, 9,994 in
    // it. Pretty-printed, such a value is some 200 MB of indentation.
    const AT_LIMIT: usize = 9_994;
    let w = World::deployed();
    let shallow = fs::read(w.checkpoint()).unwrap();
    let quiet = |args: &[&str]| {
        let out = w
            .cmd(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    // In the stack's outputs: read, shown, exported, imported, and
    // dropped by an update (the program has no outputs).
    with_deep_outputs(&w, &[STACK], &nested_json(AT_LIMIT));
    let export = w.scratch.dir.path().join("export.json");
    quiet(&["stack", "export", "--file", export.to_str().unwrap()]);
    assert_eq!(max_depth(&fs::read(&export).unwrap()), 5 + AT_LIMIT);
    quiet(&["stack", "output"]);
    quiet(&["stack", "output", "--json"]);
    quiet(&["stack", "import", "--file", export.to_str().unwrap()]);
    assert_eq!(max_depth(&fs::read(w.checkpoint()).unwrap()), 10_000);
    quiet(&["up", "--yes"]);
    fs::remove_file(&export).unwrap();
    // In `num`'s outputs: kept by an update, and exported again.
    fs::write(w.checkpoint(), &shallow).unwrap();
    with_deep_outputs(&w, &[NUM], &nested_json(AT_LIMIT));
    quiet(&["up", "--yes"]);
    assert_eq!(max_depth(&fs::read(w.checkpoint()).unwrap()), 10_000);
    quiet(&["stack", "export", "--file", export.to_str().unwrap()]);
    assert_eq!(max_depth(&fs::read(&export).unwrap()), 5 + AT_LIMIT);
    fs::remove_file(&export).unwrap();

    // One level more in the checkpoint: refused by every command, naming
    // the limit, the files untouched.
    fs::write(w.checkpoint(), &shallow).unwrap();
    with_deep_outputs(&w, &[STACK], &nested_json(AT_LIMIT + 1));
    let before = w.stack_files();
    for args in [
        &["stack", "export"][..],
        &["stack", "output"][..],
        &["up", "--yes"][..],
        &["preview"][..],
    ] {
        let text = w.fails(args);
        assert!(
            text.contains("more than 10000 levels deep") && text.contains("reads at most 10000"),
            "{args:?}: {text}"
        );
        assert_eq!(w.stack_files(), before, "{args:?}");
    }

    // An export whose value is one level deeper than a checkpoint can
    // hold (the document itself is within the limit): refused, nothing
    // written.
    fs::write(w.checkpoint(), &shallow).unwrap();
    let before = w.stack_files();
    let mut doc: serde_json::Value = serde_json::from_str(&w.ok(&["stack", "export"])).unwrap();
    let stack = doc["deployment"]["resources"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|r| r["type"] == "pulumi:pulumi:Stack")
        .unwrap();
    stack["outputs"] = serde_json::json!({"deep": "__DEEP__"});
    let text = serde_json::to_string(&doc)
        .unwrap()
        .replace("\"__DEEP__\"", &nested_json(AT_LIMIT + 1));
    assert_eq!(max_depth(text.as_bytes()), 10_000);
    let past = w.scratch.dir.path().join("past.json");
    fs::write(&past, text).unwrap();
    let text = w.fails(&["stack", "import", "--file", past.to_str().unwrap()]);
    assert!(text.contains("more than 9994 levels deep"), "{text}");
    assert_eq!(w.stack_files(), before);
}

/// A command that writes a file the user names, and a piece of text the
/// file holds.
struct Writer {
    name: &'static str,
    args: fn(&str, usize) -> Vec<String>,
    marker: &'static str,
    /// Whether `-` means stdout.
    dash: bool,
}

const WRITERS: [Writer; 4] = [
    Writer {
        name: "stack export --file",
        args: |f, _| vec!["stack".into(), "export".into(), "--file".into(), f.into()],
        marker: "\"deployment\"",
        dash: true,
    },
    Writer {
        name: "preview --save-plan",
        args: |f, _| vec!["preview".into(), "--save-plan".into(), f.into()],
        marker: "\"resourcePlans\"",
        dash: false,
    },
    Writer {
        name: "import --out",
        args: |f, n| {
            vec![
                "import".into(),
                "random:index/randomString:RandomString".into(),
                format!("code{n}"),
                format!("abc{n}"),
                "--preview-only".into(),
                "--out".into(),
                f.into(),
            ]
        },
        marker: "random:index/randomString:RandomString",
        dash: false,
    },
    Writer {
        name: "preview --import-file",
        args: |f, _| vec!["preview".into(), "--import-file".into(), f.into()],
        marker: "\"resources\"",
        dash: false,
    },
];

impl World {
    /// Runs `writer` on `target`; its stdout, or its stdout and stderr
    /// when it fails.
    fn write_to(&self, writer: &Writer, target: &Path, n: usize) -> Result<String, String> {
        let args = (writer.args)(target.to_str().unwrap(), n);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = self.cmd(&args).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        match out.status.success() {
            true => Ok(stdout),
            false => Err(format!("{stdout}{}", String::from_utf8_lossy(&out.stderr))),
        }
    }

    /// `writer` into the FIFO `path` (or a link to one) while a reader
    /// reads it: what the reader got.
    fn write_through_fifo(&self, writer: &Writer, target: &Path, fifo: &Path, n: usize) -> String {
        let reader = {
            let fifo = fifo.to_path_buf();
            std::thread::spawn(move || fs::read_to_string(fifo).unwrap())
        };
        let result = self.write_to(writer, target, n);
        // Should the writer not have opened the FIFO, the reader still
        // waits for one: an open that does not block ends it.
        let _ = fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(fifo);
        let read = reader.join().unwrap();
        if let Err(text) = result {
            panic!("{} into a FIFO failed:\n{text}", writer.name);
        }
        read
    }
}

fn is_char_device(path: &str) -> bool {
    fs::symlink_metadata(path)
        .unwrap()
        .file_type()
        .is_char_device()
}

#[test]
fn output_files_that_are_devices_fifos_or_links_are_written_in_place() {
    let w = World::deployed();
    let dir = w.scratch.dir.path().join("out");
    fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let fifo_link = dir.join("fifo-link");
    symlink(&fifo, &fifo_link).unwrap();
    for (n, writer) in WRITERS.iter().enumerate() {
        let name = writer.name;
        // A full device: an error naming the cause, the device kept.
        let e = w.write_to(writer, Path::new("/dev/full"), n).unwrap_err();
        assert!(
            e.contains("no space left on device"),
            "{name} /dev/full:\n{e}"
        );
        assert!(is_char_device("/dev/full"));
        // /dev/null: written in place, still the device.
        w.write_to(writer, Path::new("/dev/null"), n).unwrap();
        assert!(is_char_device("/dev/null"), "{name} replaced /dev/null");
        // /dev/stdout: the text on stdout, the link kept.
        let out = w.write_to(writer, Path::new("/dev/stdout"), n).unwrap();
        assert!(out.contains(writer.marker), "{name} /dev/stdout:\n{out}");
        assert!(fs::symlink_metadata("/dev/stdout")
            .unwrap()
            .file_type()
            .is_symlink());
        // A FIFO, and a link to one: read by whoever reads it, both kept.
        for target in [&fifo, &fifo_link] {
            let read = w.write_through_fifo(writer, target, &fifo, n);
            assert!(read.contains(writer.marker), "{name} {target:?}:\n{read}");
        }
        assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
        assert!(fs::symlink_metadata(&fifo_link)
            .unwrap()
            .file_type()
            .is_symlink());
        // A link to a regular file: the file replaced, the link kept.
        let file = dir.join(format!("file{n}"));
        fs::write(&file, "old").unwrap();
        let link = dir.join(format!("link{n}"));
        symlink(&file, &link).unwrap();
        w.write_to(writer, &link, n).unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(
            fs::read_to_string(&file).unwrap().contains(writer.marker),
            "{name}"
        );
        // `-`: stdout where the flag takes it, refused where the command
        // shows its progress on stdout.
        match (writer.dash, w.write_to(writer, Path::new("-"), n)) {
            (true, Ok(out)) => assert!(out.contains(writer.marker), "{name} -:\n{out}"),
            (false, Err(e)) => assert!(e.contains(" -: this command shows its progress"), "{e}"),
            (dash, result) => panic!("{name} - (takes it: {dash}): {result:?}"),
        }
        assert!(
            !w.project_file("-").exists(),
            "{name} - made a file named -"
        );
    }
    // Nothing was imported or changed by the previews.
    assert_eq!(w.resources().len(), 4);
}

#[test]
fn storage_errors_name_the_operating_systems_cause() {
    let w = World::deployed();
    // Not a directory: a path through a regular file.
    let through_file = w.project_file("Pulumi.yaml").join("out.json");
    let text = w.fails(&["stack", "export", "--file", through_file.to_str().unwrap()]);
    assert!(text.contains(": not a directory; "), "{text}");
    let mut init = w.cmd(&["stack", "init", "other"]);
    init.env(
        "PULUMI_BACKEND_URL",
        format!("file://{}", w.project_file("Pulumi.yaml/backend").display()),
    );
    let text = common::failure_of(init, &[]);
    assert!(
        text.contains("the state backend's storage failed (not a directory; "),
        "{text}"
    );
    // Refused by the kernel even to root: sysfs takes no new files.
    let denied = [
        "permission denied",
        "operation not permitted",
        "read-only file system",
    ];
    let text = w.fails(&[
        "stack",
        "export",
        "--file",
        "/sys/converge-hostile-input.json",
    ]);
    assert!(denied.iter().any(|d| text.contains(d)), "{text}");
    let mut init = w.cmd(&["stack", "init", "other"]);
    init.env("PULUMI_BACKEND_URL", "file:///sys/converge-hostile-input");
    let text = common::failure_of(init, &[]);
    assert!(
        text.contains("the state backend's storage failed (")
            && denied.iter().any(|d| text.contains(d)),
        "{text}"
    );
    assert!(!text.contains("disk error or full disk"), "{text}");
}
