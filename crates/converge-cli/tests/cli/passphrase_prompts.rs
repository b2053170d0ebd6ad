//! The passphrase at a terminal, as a user types it: a new one is asked
//! for twice and must match, a Ctrl-C at the prompt leaves nothing behind
//! and the terminal echoing, and what was typed is what later commands
//! need.

#![cfg(unix)]

use crate::common::terminal::AtTerminal;
use crate::common::{failure_of, stdout_of, Scratch};

const PROJECT: &str = "name: prompts\nruntime: yaml\n";
const FIRST: &str = "Enter your passphrase to protect config/secrets: ";
const AGAIN: &str = "Re-enter your passphrase to confirm: ";

fn stack_names(w: &Scratch) -> String {
    stdout_of(w.command("unused"), &["stack", "ls"])
}

#[test]
fn stack_init_at_a_terminal_asks_for_the_passphrase_twice_and_keeps_its_salt() {
    let w = Scratch::new(PROJECT);
    let mut t = AtTerminal::converge(&w, &["stack", "init", "dev"]);
    t.expect(FIRST);
    t.answer_secret("correct horse");
    t.expect(AGAIN);
    t.answer_secret("correct hrose");
    t.expect("the passphrases do not match");
    t.expect(FIRST);
    t.answer_secret("correct horse");
    t.expect(AGAIN);
    t.answer_secret("correct horse");
    t.expect("Created stack 'dev'");
    let ended = t.finish();
    assert!(ended.status.success(), "{}", ended.text);
    assert!(
        !ended.text.contains("correct horse"),
        "the passphrase was echoed:\n{}",
        ended.text
    );

    let settings = std::fs::read_to_string(w.project.join("Pulumi.dev.yaml")).unwrap();
    assert!(settings.contains("encryptionsalt: v1:"), "{settings}");

    // The passphrase typed is the stack's: its secrets need it.
    stdout_of(
        w.command("correct horse"),
        &["config", "set", "--secret", "token", "s3cr3t"],
    );
    let value = stdout_of(w.command("correct horse"), &["config", "get", "token"]);
    assert_eq!(value.trim(), "s3cr3t");
    let wrong = failure_of(w.command("correct hrose"), &["config", "get", "token"]);
    assert!(
        wrong.contains("incorrect passphrase")
            && wrong.contains("the passphrase this stack's secrets are encrypted with"),
        "{wrong}"
    );
}

#[test]
fn stack_select_create_at_a_terminal_asks_for_the_passphrase_as_init_does() {
    let w = Scratch::new(PROJECT);
    let mut t = AtTerminal::converge(&w, &["stack", "select", "--create", "dev"]);
    t.expect(FIRST);
    t.answer_secret("s3lect");
    t.expect(AGAIN);
    t.answer_secret("s3lect");
    t.expect("Created stack 'dev'");
    let ended = t.finish();
    assert!(ended.status.success(), "{}", ended.text);
    let settings = std::fs::read_to_string(w.project.join("Pulumi.dev.yaml")).unwrap();
    assert!(settings.contains("encryptionsalt: v1:"), "{settings}");
    stdout_of(
        w.command("s3lect"),
        &["config", "set", "--secret", "k", "v"],
    );
    let wrong = failure_of(w.command("other"), &["config", "get", "k"]);
    assert!(wrong.contains("incorrect passphrase"), "{wrong}");
}

#[test]
fn passphrases_that_never_match_create_no_stack() {
    let w = Scratch::new(PROJECT);
    let mut t = AtTerminal::converge(&w, &["stack", "init", "dev"]);
    for attempt in 0..3 {
        t.expect(FIRST);
        t.answer_secret(&format!("first {attempt}"));
        t.expect(AGAIN);
        t.answer_secret(&format!("second {attempt}"));
    }
    let ended = t.finish();
    assert!(!ended.status.success(), "{}", ended.text);
    assert!(
        ended
            .text
            .contains("the two passphrases entered differed 3 times; nothing was changed"),
        "{}",
        ended.text
    );
    assert!(!stack_names(&w).contains("dev"));
    assert!(!w.project.join("Pulumi.dev.yaml").exists());
}

#[test]
fn ctrl_c_at_the_passphrase_prompt_creates_nothing_and_gives_the_echo_back() {
    let w = Scratch::new(PROJECT);
    let mut t = AtTerminal::converge(&w, &["stack", "init", "dev"]);
    t.expect(FIRST);
    t.expect_echo_off();
    t.interrupt();
    let ended = t.finish();
    assert!(!ended.status.success(), "{}", ended.text);
    assert!(ended.echoes, "the terminal was left without echo");
    assert!(!stack_names(&w).contains("dev"), "{}", ended.text);
    assert!(!w.project.join("Pulumi.dev.yaml").exists());
}

#[test]
fn a_new_passphrase_from_change_secrets_provider_is_confirmed_and_used() {
    let w = Scratch::new(PROJECT);
    stdout_of(w.command("old"), &["stack", "init", "dev"]);
    stdout_of(
        w.command("old"),
        &["config", "set", "--secret", "token", "s3cr3t"],
    );
    let mut t = AtTerminal::converge(&w, &["stack", "change-secrets-provider", "passphrase"]);
    t.expect("Enter your passphrase to unlock config/secrets: ");
    t.answer_secret("old");
    t.expect("Enter your new passphrase to protect config/secrets: ");
    t.answer_secret("new");
    t.expect(AGAIN);
    t.answer_secret("new");
    let ended = t.finish();
    assert!(ended.status.success(), "{}", ended.text);

    let value = stdout_of(w.command("new"), &["config", "get", "token"]);
    assert_eq!(value.trim(), "s3cr3t");
    let old = failure_of(w.command("old"), &["config", "get", "token"]);
    assert!(old.contains("incorrect passphrase"), "{old}");
}
