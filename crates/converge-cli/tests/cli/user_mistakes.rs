//! What a Pulumi user's slips meet, through `converge`: a misspelled key
//! in `Pulumi.<stack>.yaml` (refused, naming the key meant) or
//! `Pulumi.yaml` (a warning naming the file, the key and the key meant;
//! an unknown key kept when Converge rewrites the file), a Pulumi command
//! Converge lacks (what it is and where to look, exit code 2), a stack
//! whose state cannot be read in `stack ls` (listed, with a warning naming
//! it and why), a damaged secure value (named with its file and key, and
//! how to set it again), a failed preview (its error, without resource
//! counts), a hand-edited state (misspelled keys refused), a resource
//! option naming a property the schema lacks, and a misspelled stack name
//! (the stack meant).

use crate::common;

use std::process::Output;

use common::Scratch;

const PROGRAM: &str = "name: slips
runtime: yaml
resources:
  r:
    type: random:RandomString
    properties:
      length: 4
";

fn world(pulumi_yaml: &str) -> Scratch {
    let s = Scratch::new(pulumi_yaml);
    common::stdout_of(s.command("pw"), &["stack", "init", "dev"]);
    s
}

fn run(s: &Scratch, args: &[&str]) -> Output {
    s.command("pw").args(args).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn misspelled_stack_settings_keys_are_refused_and_strangers_kept() {
    let s = world(PROGRAM);
    let file = s.project.join("Pulumi.dev.yaml");
    let original = std::fs::read_to_string(&file).unwrap();
    let name = file.display();

    // A misspelled key would run the stack without its configuration (or
    // salt): every command refuses, naming the key meant.
    std::fs::write(
        &file,
        format!("{original}encryptionsalf: v1:abc\nconfg:\n  slips:x: 1\n"),
    )
    .unwrap();
    for args in [
        &["preview"][..],
        &["up", "--yes"],
        &["config", "set", "y", "2"],
    ] {
        let out = run(&s, args);
        assert!(!out.status.success(), "{args:?}");
        assert!(
            stderr(&out).contains(&format!(
                "{name}: unknown key `encryptionsalf` (`encryptionsalt`?), `confg` (`config`?): \
                 Converge would go on without what it holds; rename it to the key meant"
            )),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    // Nothing was deployed.
    std::fs::write(&file, &original).unwrap();
    let state = common::stdout_of(s.command("pw"), &["stack", "export"]);
    assert!(!state.contains("RandomString"), "{state}");

    // A key unlike any known one (a newer tool's) is warned about and kept.
    let mut text = original.clone();
    text.push_str("future: 1\n");
    std::fs::write(&file, &text).unwrap();
    let out = run(&s, &["preview"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let line = format!(
        "warning: {name}: unknown key `future` is ignored (the known keys are \
         secretsprovider, encryptedkey, encryptionsalt, environment, config)"
    );
    // Once, though the command reads the file more than once.
    assert_eq!(stderr(&out).matches(&line).count(), 1, "{}", stderr(&out));

    // A rewrite keeps what the user wrote.
    let out = run(&s, &["config", "set", "y", "2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let after = std::fs::read_to_string(&file).unwrap();
    for kept in ["future: 1", "slips:y: '2'"] {
        assert!(after.contains(kept), "no {kept:?} in\n{after}");
    }
}

#[test]
fn misspelled_project_keys_name_the_key_meant() {
    let s = world(PROGRAM);
    std::fs::write(
        s.project.join("Pulumi.yaml"),
        PROGRAM.replace("runtime:", "runtme:"),
    )
    .unwrap();
    let out = run(&s, &["preview"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("the project has no `runtime`; did you mean `runtime`? found `runtme`"),
        "{err}"
    );

    // Another runtime ignores unknown keys (Pulumi accepts them): a
    // warning, and the command goes on. (A YAML program refuses them
    // itself.) Keys of Pulumi's schema draw no warning.
    std::fs::write(
        s.project.join("Pulumi.yaml"),
        "name: slips\nruntime: nodejs\ndescripton: typo\nauthor: me\nlicense: MIT\n",
    )
    .unwrap();
    let out = run(&s, &["stack", "ls"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("unknown key `descripton` is ignored; did you mean `description`?"),
        "{err}"
    );
    assert_eq!(err.matches("warning:").count(), 1, "{err}");

    // A misspelled key inside `runtime:` (its options would be ignored).
    std::fs::write(
        s.project.join("Pulumi.yaml"),
        "name: slips\nruntime:\n  name: python\n  option:\n    virtualenv: venv\n\
         descripton: typo\n",
    )
    .unwrap();
    let out = run(&s, &["stack", "ls"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    // Both slips, each once.
    for line in [
        "unknown key `runtime.option` is ignored; did you mean `runtime.options`?",
        "unknown key `descripton` is ignored; did you mean `description`?",
    ] {
        assert_eq!(err.matches(line).count(), 1, "{line:?} in\n{err}");
    }

    // A misspelled runtime option (the virtualenv would not be used, and
    // the program would run without its SDK), for each runtime; the
    // options Pulumi's language hosts take draw no warning.
    for (runtime, options, line) in [
        (
            "python",
            "virtualen: venv\n    toolchain: pip\n    typechecker: mypy",
            "unknown key `runtime.options.virtualen` is ignored; did you mean \
             `runtime.options.virtualenv`?",
        ),
        (
            "nodejs",
            "packagemanger: npm\n    typescript: true\n    nodeargs: --x",
            "unknown key `runtime.options.packagemanger` is ignored; did you mean \
             `runtime.options.packagemanager`?",
        ),
    ] {
        std::fs::write(
            s.project.join("Pulumi.yaml"),
            format!("name: slips\nruntime:\n  name: {runtime}\n  options:\n    {options}\n"),
        )
        .unwrap();
        let out = run(&s, &["stack", "ls"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(line), "{line:?} in\n{err}");
        assert_eq!(err.matches("warning:").count(), 1, "{err}");
    }
}

/// A misspelled runtime names the runtime meant; another of Pulumi's
/// runtimes says Converge does not run it; nothing is locked or changed.
#[test]
fn a_misspelled_or_unsupported_runtime_says_which_runtimes_run() {
    let s = world(PROGRAM);
    let file = s.project.join("Pulumi.yaml");
    let state = s.backend.join(".pulumi/stacks/slips/dev.json");
    let before = std::fs::read(&state).unwrap();
    for (runtime, expected) in [
        (
            "pyhton",
            "unknown runtime `pyhton`; did you mean `python`? (Converge runs `yaml`, \
             `python` and `nodejs` programs)",
        ),
        (
            "go",
            "runtime `go` is not supported by Converge: Converge runs `yaml`, `python` and \
             `nodejs` programs",
        ),
    ] {
        // With YAML's config types, which only the YAML runtime knows,
        // the runtime is still the slip named.
        for config in [
            "",
            "config:\n  length:\n    type: Integer\n    default: 4\n",
        ] {
            std::fs::write(&file, format!("name: slips\nruntime: {runtime}\n{config}")).unwrap();
            for command in [&["preview"][..], &["up", "--yes"]] {
                let out = run(&s, command);
                assert_eq!(out.status.code(), Some(255), "{command:?}");
                assert_eq!(
                    stderr(&out).trim_end(),
                    format!("error: {}: {expected}", file.display())
                );
            }
        }
    }
    assert_eq!(std::fs::read(&state).unwrap(), before);
}

#[test]
fn pulumi_commands_converge_lacks_say_so() {
    let s = world(PROGRAM);
    for command in [
        "logs",
        "console",
        "watch",
        "org",
        "env",
        "convert",
        "gen-completion",
        "state edit",
        "state upgrade",
        "config env",
        "policy rm",
        "policy validate-config",
    ] {
        let mut args: Vec<&str> = command.split(' ').collect();
        args.push("--flag");
        let out = run(&s, &args);
        assert_eq!(out.status.code(), Some(2), "{command}");
        let err = stderr(&out);
        assert!(
            err.starts_with(&format!(
                "error: Converge has no `{command}` command (in Pulumi it "
            )),
            "{err}"
        );
        assert!(err.contains("migrating-from-pulumi.md"), "{err}");
        assert!(!err.contains("similar subcommands"), "{err}");
    }
    // Anything else is clap's, as before.
    let out = run(&s, &["lgos"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unrecognized subcommand 'lgos'"));
    let out = run(&s, &["config", "envv"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        !stderr(&out).contains("Converge has no"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn stack_ls_names_a_stack_whose_state_cannot_be_read() {
    let s = world(PROGRAM);
    common::stdout_of(s.command("pw"), &["stack", "init", "prod"]);
    common::stdout_of(s.command("pw"), &["stack", "select", "dev"]);
    common::stdout_of(s.command("pw"), &["up", "--yes"]);
    let checkpoint = s.backend.join(".pulumi/stacks/slips/dev.json");
    let text = std::fs::read_to_string(&checkpoint).unwrap();
    std::fs::write(&checkpoint, text.replace("\"checkpoint\"", "\"checkpont\"")).unwrap();

    let out = run(&s, &["stack", "ls"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        listed.contains("dev*") && listed.contains("prod"),
        "{listed}"
    );
    let err = stderr(&out);
    assert!(err.starts_with("warning: "), "{err}");
    assert!(
        err.contains("slips/dev") && err.contains("`checkpoint`"),
        "{err}"
    );
    assert!(!err.contains("prod"), "{err}");
}

/// A package no plugin serves (a misspelled package name): the error
/// names where Converge looked, the plugin directory of `$PULUMI_HOME`
/// when it is set.
#[test]
fn a_missing_plugin_names_the_plugin_directory_searched() {
    let s =
        world("name: slips\nruntime: yaml\nresources:\n  q:\n    type: nosuchpkg:index:Thing\n");
    let home = s.dir.path().join("pulumi-home");
    let out = s
        .command("pw")
        .env("PULUMI_HOME", &home)
        .arg("preview")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    let searched = format!(
        "no provider plugin found for package nosuchpkg (looked for a Pulumi plugin \
         pulumi-resource-nosuchpkg on PATH and in {},",
        home.join("plugins").display()
    );
    assert!(err.contains(&searched), "{err}");
    // Where it is written, before anything runs.
    assert!(
        err.contains("Pulumi.yaml:5:11: 'nosuchpkg:index:Thing': no provider plugin found"),
        "{err}"
    );
    // A slip in a package Converge has is named.
    std::fs::write(
        s.project.join("Pulumi.yaml"),
        "name: slips\nruntime: yaml\nresources:\n  q:\n    type: randm:RandomPet\n",
    )
    .unwrap();
    let out = s.command("pw").arg("preview").output().unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("did you mean 'random'?"), "{err}");
}

/// A secure value damaged by hand (or pasted from another stack) is named
/// where it is, with how to set it again, by every command that decrypts
/// it; the state stays as it was, and `config set --secret` repairs it.
#[test]
fn a_damaged_secure_value_names_its_file_and_key() {
    let s = world(PROGRAM);
    common::stdout_of(s.command("pw"), &["up", "--yes"]);
    common::stdout_of(
        s.command("pw"),
        &["config", "set", "--secret", "token", "s3cr3t"],
    );
    let file = s.project.join("Pulumi.dev.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    let start = text.find("secure: ").unwrap() + "secure: ".len();
    let end = start + text[start..].find('\n').unwrap();
    std::fs::write(
        &file,
        format!("{}v1:damaged{}", &text[..start], &text[end..]),
    )
    .unwrap();
    let state = s.backend.join(".pulumi/stacks/slips/dev.json");
    let before = std::fs::read(&state).unwrap();

    let expected = format!(
        "error: {}: configuration key `token` holds a secure value the stack's secrets \
         provider cannot decrypt (set it again with `converge config set --secret token VALUE`)",
        file.display()
    );
    for args in [
        &["preview"][..],
        &["up", "--yes"],
        &["config", "get", "token"],
        &["config", "--show-secrets"],
    ] {
        let out = run(&s, args);
        assert!(!out.status.success(), "{args:?}");
        let err = stderr(&out);
        assert!(err.starts_with(&expected), "{args:?}: {err}");
        assert!(!err.contains("s3cr3t"), "{err}");
    }
    assert_eq!(
        std::fs::read(&state).unwrap(),
        before,
        "the state is unchanged"
    );

    common::stdout_of(
        s.command("pw"),
        &["config", "set", "--secret", "token", "again"],
    );
    let got = common::stdout_of(s.command("pw"), &["config", "get", "token"]);
    assert_eq!(got.trim(), "again");
    common::stdout_of(s.command("pw"), &["preview"]);
}

/// A preview that fails shows no `Resources:` counts, as in Pulumi: they
/// would describe only what was planned before the error. An update that
/// fails still counts what it did.
#[test]
fn a_failed_preview_shows_no_resource_counts() {
    let s = world(&PROGRAM.replace("length: 4", "lenght: 4"));
    for args in [&["preview"][..], &["up", "--yes"]] {
        let out = run(&s, args);
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert!(!out.status.success(), "{args:?}: {text}");
        assert!(text.contains("lenght"), "{args:?}: {text}");
        assert!(!text.contains("Resources:"), "{args:?}: {text}");
    }

    let missing = "urn:pulumi:dev::slips::random:index/randomString:RandomString::nope";
    let s = world(PROGRAM);
    let out = run(&s, &["preview", "--target", missing]);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(!out.status.success(), "{text}");
    assert!(!text.contains("Resources:"), "{text}");

    // A failed update (no preview first) counts what it did.
    let s = world(&PROGRAM.replace("length: 4", "length: -4"));
    let out = run(&s, &["up", "--yes", "--skip-preview"]);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("Resources:"), "{text}");
}

/// A hand-edited state whose keys look misspelled, or whose resource
/// types contradict their URNs, is refused by `stack import` with each
/// slip named, the stack untouched; `--force` imports it as it is. A key
/// unlike any Converge reads (a newer Pulumi's) is kept, with a warning.
#[test]
fn stack_import_refuses_misspelled_keys_of_a_hand_edited_state() {
    let s = world(PROGRAM);
    let up = run(&s, &["up", "--yes"]);
    assert!(up.status.success(), "{}", stderr(&up));
    let export = || common::stdout_of(s.command("pw"), &["stack", "export"]);
    let before = export();
    let state: serde_json::Value = serde_json::from_str(&before).unwrap();
    let import = |edited: &serde_json::Value, extra: &[&str]| {
        let path = s.dir.path().join("edited.json");
        std::fs::write(&path, serde_json::to_vec_pretty(edited).unwrap()).unwrap();
        let mut args = vec!["stack", "import", "--file", path.to_str().unwrap()];
        args.extend_from_slice(extra);
        run(&s, &args)
    };

    let mut emptied = state.clone();
    let deployment = emptied["deployment"].as_object_mut().unwrap();
    let resources = deployment.remove("resources").unwrap();
    deployment.insert("resource".into(), resources);
    let out = import(&emptied, &[]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("`deployment`: unknown key `resource`; did you mean `resources`?"),
        "{}",
        stderr(&out)
    );
    assert_eq!(export(), before);

    let mut edited = state.clone();
    let r = edited["deployment"]["resources"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|r| r["urn"].as_str().unwrap().ends_with("::r"))
        .unwrap();
    r["protected"] = true.into();
    r["type"] = "random:index/randomString:RandomStrng".into();
    let out = import(&edited, &[]);
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(
        err.contains("unknown key `protected`; did you mean `protect`?")
            && err.contains(
                "its `type` is `random:index/randomString:RandomStrng`, but its URN names the \
                 type `random:index/randomString:RandomString`"
            )
            && err.contains("pass --force"),
        "{err}"
    );
    assert_eq!(export(), before);

    let mut newer = state.clone();
    newer["deployment"]["resources"][0]["futureField"] = 1.into();
    let out = import(&newer, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("key `futureField` is not one Converge reads; it is kept"),
        "{}",
        stderr(&out)
    );
    assert!(export().contains("\"futureField\": 1"));

    let out = import(&edited, &["--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("warning: "), "{}", stderr(&out));
}

/// The property names a resource's options list are checked against its
/// schema: a misspelled `ignoreChanges` entry would let the change it was
/// to ignore replace the resource, a misspelled `additionalSecretOutputs`
/// leave the output in plaintext.
#[test]
fn misspelled_property_names_in_resource_options_are_refused() {
    let program = |options: &str| {
        format!(
            "name: slips\nruntime: yaml\nresources:\n  r:\n    type: random:RandomString\n    \
             properties:\n      length: 4\n    options:\n{options}"
        )
    };
    let s = world(&program(
        "      ignoreChanges: [lenght]\n      additionalSecretOutputs: [reslt]\n      \
         replaceOnChanges: [\"keepers.a\", specail]\n",
    ));
    let out = run(&s, &["preview"]);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    for expected in [
        "Pulumi.yaml:9:23: resource 'r' (random:index/randomString:RandomString): ignoreChanges \
         names 'lenght', but it has no input property 'lenght'; did you mean 'length'?",
        "Pulumi.yaml:10:33: resource 'r' (random:index/randomString:RandomString): \
         additionalSecretOutputs names 'reslt', but it has no output property 'reslt'; did you \
         mean 'result'?",
        "replaceOnChanges names 'specail', but it has no input property 'specail'; did you mean \
         'special'?",
    ] {
        assert!(err.contains(expected), "{expected}\n{err}");
    }
    assert!(!err.contains("keepers"), "{err}");

    let s = world(&program(
        "      ignoreChanges: [length, \"keepers.a\", \"keepers[\\\"b\\\"]\"]\n      \
         additionalSecretOutputs: [result, id]\n      replaceOnChanges: [\"*\"]\n",
    ));
    let out = run(&s, &["preview"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// A stack name one slip away from a stack of the project names it.
#[test]
fn a_misspelled_stack_name_names_the_stack_meant() {
    let s = world(PROGRAM);
    for args in [
        &["stack", "select", "dve"][..],
        &["preview", "--stack", "dve"],
    ] {
        let out = run(&s, args);
        assert!(!out.status.success(), "{args:?}");
        assert!(
            stderr(&out).contains("no stack named dve found in file://")
                && stderr(&out).contains("; did you mean `dev`? (run `converge stack ls`"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    let out = run(&s, &["stack", "select", "production"]);
    assert!(!stderr(&out).contains("did you mean"), "{}", stderr(&out));
}

/// A misspelled key of a policy pack's `PulumiPolicy.yaml` is refused
/// before the pack runs, naming the key meant (a misspelled `options:`
/// ran the pack without its virtualenv, into a traceback that did not
/// say why); a key unlike any known one is warned about.
#[test]
fn a_policy_packs_misspelled_manifest_key_names_the_key_meant() {
    let s = world(PROGRAM);
    let pack = s.dir.path().join("pack");
    std::fs::create_dir_all(&pack).unwrap();
    let manifest = pack.join("PulumiPolicy.yaml");
    let pack_arg = pack.to_str().unwrap();
    for (text, expected) in [
        (
            "runtime:\n  name: python\n  option:\n    virtualenv: venv\n",
            "runtime: unknown key `option`; did you mean `options`?",
        ),
        (
            "runtime:\n  name: python\n  options:\n    virtualEnv: venv\n",
            "runtime.options: unknown key `virtualEnv`; did you mean `virtualenv`?",
        ),
        (
            "runtime: python\nversion: [1]\n",
            "`version` must be a string such as 1.2.3",
        ),
    ] {
        std::fs::write(&manifest, text).unwrap();
        for args in [
            &["preview", "--policy-pack", pack_arg][..],
            &["policy", "analyze", "--policy-pack", pack_arg],
        ] {
            let out = run(&s, args);
            assert!(!out.status.success(), "{args:?}");
            assert!(
                stderr(&out).contains(expected) && stderr(&out).contains(pack_arg),
                "{args:?}: {expected}\n{}",
                stderr(&out)
            );
        }
    }
}

/// A stack value one slip away from a declared config key the stack gives
/// no value is warned about, naming the key meant: the declaration took
/// its default.
#[test]
fn a_misspelled_stack_config_key_names_the_declared_one() {
    let s = world(
        "name: slips
runtime: yaml
config:
  length:
    type: integer
    default: 4
resources:
  r:
    type: random:RandomString
    properties:
      length: ${length}
",
    );
    common::stdout_of(s.command("pw"), &["config", "set", "lenght", "12"]);
    let out = run(&s, &["preview"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "warning: the stack sets config 'lenght', which the project does not declare; did \
             you mean 'length'? (the stack gives 'length' no value)"
        ),
        "{}",
        stderr(&out)
    );
    common::stdout_of(s.command("pw"), &["config", "set", "length", "12"]);
    let out = run(&s, &["preview"]);
    assert!(!stderr(&out).contains("lenght"), "{}", stderr(&out));
}

/// An alias one slip away from the URN of the resource it was meant for
/// finds nothing: the preview warns, naming the resource it deletes.
#[test]
fn an_alias_with_a_typo_is_warned_about_naming_the_resource_deleted() {
    let s = world(&PROGRAM.replace("  r:\n", "  database:\n"));
    let up = run(&s, &["up", "--yes"]);
    assert!(up.status.success(), "{}", stderr(&up));
    let typo = "urn:pulumi:dev::slips::random:index/randomString:RandomString::databsae";
    let renamed = PROGRAM.replace(
        "  r:\n",
        &format!("  db:\n    options:\n      aliases: [\"{typo}\"]\n"),
    );
    std::fs::write(s.project.join("Pulumi.yaml"), renamed).unwrap();
    let out = run(&s, &["preview"]);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(&format!("its alias {typo} names no resource of the stack"))
            && text.contains(
                "urn:pulumi:dev::slips::random:index/randomString:RandomString::database, of the \
                 same type, is deleted"
            ),
        "{text}"
    );
}
