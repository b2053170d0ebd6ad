//! Every environment variable Converge's code names is on the reference's
//! environment page (`docs/src/reference/environment.md`): a variable
//! added to the code without a line there fails this test. Variables are
//! found as string literals (`"PULUMI_…"`, `"CONVERGE_…"`, `"AWS_…"`,
//! `"AZURE_…"`, `"GOOGLE_…"`, `"TF_…"`) in the library and binary sources;
//! the test crates' own (`CONVERGE_TEST_…`, `CONVERGE_FUZZ_…`) are not for
//! users.

use std::collections::BTreeSet;
use std::path::Path;

const PREFIXES: &[&str] = &["PULUMI_", "CONVERGE_", "AWS_", "AZURE_", "GOOGLE_", "TF_"];
const NOT_FOR_USERS: &[&str] = &["CONVERGE_TEST_", "CONVERGE_FUZZ_"];
const TEST_CRATES: &[&str] = &["converge-testkit", "converge-test-plugin"];

/// The variable names quoted in Rust source `text`.
fn names_in(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for piece in text.split('"').skip(1).step_by(2) {
        let is_name = PREFIXES.iter().any(|p| piece.starts_with(p))
            && piece
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            && !piece.ends_with('_')
            && !NOT_FOR_USERS.iter().any(|p| piece.starts_with(p));
        if is_name {
            names.insert(piece.to_string());
        }
    }
    names
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_environment_variable_converge_reads_is_documented() {
    let crates = super::repo_root().join("crates");
    let mut files = Vec::new();
    for krate in std::fs::read_dir(&crates).unwrap() {
        let krate = krate.unwrap().path();
        let name = krate.file_name().unwrap().to_string_lossy().into_owned();
        if !TEST_CRATES.contains(&name.as_str()) && krate.join("src").is_dir() {
            rust_files(&krate.join("src"), &mut files);
        }
    }
    // This module's own tests name variables that are not Converge's.
    let own = super::repo_root().join("crates/converge-cli/src/docs");
    files.retain(|f| !f.starts_with(&own));
    let mut names = BTreeSet::new();
    for file in &files {
        names.extend(names_in(&std::fs::read_to_string(file).unwrap()));
    }
    assert!(names.contains("PULUMI_BACKEND_URL"), "{names:?}");
    let page_path = super::guide_src().join("reference/environment.md");
    let page = std::fs::read_to_string(&page_path).unwrap();
    let missing: Vec<&String> = names
        .iter()
        .filter(|n| !page.contains(&format!("`{n}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "environment variables the code names but {} does not: {missing:?}",
        super::shown(&page_path)
    );
}

#[test]
fn names_are_found_in_string_literals_only() {
    let names = names_in(
        r#"let a = std::env::var("PULUMI_HOME"); // PULUMI_NOT_QUOTED
        let b = "CONVERGE_TEST_GO"; let c = format!("AWS_{x}"); let d = "TF_LOG";"#,
    );
    let want: BTreeSet<String> = ["PULUMI_HOME", "TF_LOG"].map(String::from).into();
    assert_eq!(names, want);
}
