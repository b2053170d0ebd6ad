//! A plugin that accepts connections but never answers: started once,
//! reported after one start-up timeout (`CONVERGE_PLUGIN_TIMEOUT`) naming
//! the plugin and the call it did not answer, and not left running.

use crate::common;

use std::time::{Duration, Instant};

/// A hang guard, not a timing assertion: the command must end.
const GUARD: Duration = Duration::from_secs(120);

#[test]
fn a_plugin_that_never_answers_is_started_once_and_reported_after_one_timeout() {
    let scratch = common::Scratch::new(
        "name: mute\nruntime: yaml\nresources:\n  a:\n    type: convergetest:index:Thing\n    properties:\n      value: x\n  b:\n    type: convergetest:index:Thing\n    properties:\n      value: y\n",
    );
    let bin = common::convergetest_bin_dir(scratch.dir.path());
    let pids = tempfile::tempdir().unwrap();
    let mut init = scratch.with_test_plugin(&bin);
    assert!(init
        .args(["stack", "init", "dev"])
        .status()
        .unwrap()
        .success());

    let err = scratch.dir.path().join("preview.err");
    let mut preview = scratch.with_test_plugin(&bin);
    preview
        .env("CONVERGE_TEST_PLUGIN_MODE", "mute")
        .env("CONVERGE_TEST_PLUGIN_PIDS", pids.path())
        .env("CONVERGE_PLUGIN_TIMEOUT", "2s")
        .arg("preview")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap());
    let mut child = preview.spawn().unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > GUARD {
            let _ = child.kill();
            panic!("the preview hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = std::fs::read_to_string(&err).unwrap();
    assert!(!status.success(), "{text}");
    assert!(
        text.contains("pulumi-resource-convergetest")
            && text.contains("did not answer GetPluginInfo within 2s"),
        "the error names the plugin and the call: {text}"
    );
    assert!(text.contains("CONVERGE_PLUGIN_TIMEOUT"), "{text}");
    let started: Vec<_> = std::fs::read_dir(pids.path()).unwrap().collect();
    assert_eq!(started.len(), 1, "the plugin was started once: {text}");
    let pid = started[0].as_ref().unwrap().file_name();
    let proc = std::path::Path::new("/proc").join(&pid);
    let gone = Instant::now();
    while proc.join("stat").exists()
        && !std::fs::read_to_string(proc.join("stat"))
            .unwrap_or_default()
            .rsplit_once(')')
            .is_some_and(|(_, s)| s.trim_start().starts_with('Z'))
    {
        assert!(
            gone.elapsed() < Duration::from_secs(10),
            "the plugin was left running"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
