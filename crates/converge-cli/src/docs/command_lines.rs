//! Every `converge …` command line that README.md and the guide show must
//! parse with the real command-line definition (`Cli::try_parse_from`), so
//! a renamed command or flag fails the test suite instead of a reader.
//!
//! What counts as a command line: each line of a shell code block (`sh`,
//! `bash`, `shell`, `console` or no language), a leading `$ ` prompt
//! removed, continuation lines (`\`) joined, split at `&&`, `||`, `;` and
//! `|`; and each inline code span starting with `converge `. A piece whose
//! first word, after `NAME=value` assignments, is `converge` is parsed.
//! Inline spans holding synopsis notation (`[`, `]`, `<`, `>`, `…`, `{`)
//! describe a command's shape rather than a command; they are skipped. The
//! generated reference (`docs/src/reference/`) is checked by its own test.

use std::path::Path;

use clap::Parser;
use pulldown_cmark::{CodeBlockKind, Event, Parser as Markdown, Tag, TagEnd};

use crate::args::Cli;

/// A command line found in a document.
#[derive(Debug, PartialEq)]
pub struct CommandLine {
    /// 1-based line number in the document.
    pub line: usize,
    /// The words, `converge` first.
    pub words: Vec<String>,
}

/// Why a command line of a document is wrong.
#[derive(Debug)]
pub struct BadLine {
    pub line: usize,
    pub text: String,
    pub error: String,
}

const SHELL_LANGUAGES: &[&str] = &["", "sh", "bash", "shell", "console"];
const SYNOPSIS_MARKS: &[char] = &['[', ']', '<', '>', '…', '{', '}'];

/// The `converge …` command lines of a Markdown document, and the pieces
/// that cannot even be split into words (an unbalanced quote).
pub fn command_lines(markdown: &str) -> (Vec<CommandLine>, Vec<BadLine>) {
    let mut lines = Vec::new();
    let mut bad = Vec::new();
    // A code block's text may come in several events: it is gathered and
    // read at the block's end, from the offset of its first line.
    let mut block: Option<(Option<usize>, String)> = None;
    for (event, range) in Markdown::new(markdown).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(kind)) => {
                let shell = match kind {
                    CodeBlockKind::Indented => true,
                    CodeBlockKind::Fenced(info) => {
                        let language = info.split([',', ' ']).next().unwrap_or("");
                        SHELL_LANGUAGES.contains(&language)
                    }
                };
                block = shell.then(|| (None, String::new()));
            }
            Event::Text(text) => {
                if let Some((start, body)) = block.as_mut() {
                    start.get_or_insert(range.start);
                    body.push_str(&text);
                }
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some((Some(start), body)) = block.take() {
                    let first_line = line_of(markdown, start);
                    for (offset, logical) in joined_lines(&body) {
                        let logical = logical.trim_start();
                        let logical = logical.strip_prefix("$ ").unwrap_or(logical);
                        scan(logical, first_line + offset, &mut lines, &mut bad);
                    }
                }
            }
            Event::Code(code)
                if code.starts_with("converge ") && !code.contains(SYNOPSIS_MARKS) =>
            {
                scan(&code, line_of(markdown, range.start), &mut lines, &mut bad);
            }
            _ => {}
        }
    }
    (lines, bad)
}

/// Checks every command line of `markdown`: the lines that do not parse.
pub fn check_document(markdown: &str) -> Vec<BadLine> {
    let (lines, mut bad) = command_lines(markdown);
    for found in lines {
        if let Err(e) = Cli::try_parse_from(&found.words) {
            use clap::error::ErrorKind;
            // `converge stack` names a group of commands and prints its
            // help: it parses.
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                continue;
            }
            let error = e.to_string();
            let error = error.lines().next().unwrap_or_default().to_string();
            bad.push(BadLine {
                line: found.line,
                text: found.words.join(" "),
                error,
            });
        }
    }
    bad
}

/// 1-based line number of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset].matches('\n').count() + 1
}

/// The block's lines with `\` continuations joined, each with the offset
/// of its first physical line within the block.
fn joined_lines(block: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, raw) in block.lines().enumerate() {
        let (start, mut text) = current.take().unwrap_or((i, String::new()));
        match raw.strip_suffix('\\') {
            Some(head) => {
                text.push_str(head);
                text.push(' ');
                current = Some((start, text));
            }
            None => {
                text.push_str(raw);
                out.push((start, text));
            }
        }
    }
    out.extend(current);
    out
}

/// Splits one shell line into its commands and keeps those that run
/// `converge`.
fn scan(line: &str, number: usize, lines: &mut Vec<CommandLine>, bad: &mut Vec<BadLine>) {
    for piece in split_commands(line) {
        let Some(words) = shlex::split(&piece) else {
            if piece.contains("converge") {
                bad.push(BadLine {
                    line: number,
                    text: piece.trim().to_string(),
                    error: "cannot be split into words (an unbalanced quote?)".to_string(),
                });
            }
            continue;
        };
        let words: Vec<String> = words.into_iter().skip_while(|w| is_assignment(w)).collect();
        if words.first().is_some_and(|w| w == "converge") {
            lines.push(CommandLine {
                line: number,
                words,
            });
        }
    }
}

/// `NAME=value`, a variable assignment before a command.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// The commands of a shell line: split at `&&`, `||`, `;` and `|` outside
/// quotes; a `#` comment ends it.
fn split_commands(line: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut chars = line.chars().peekable();
    let mut at_word_start = true;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), _) if c == q => {
                quote = None;
                current.push(c);
            }
            (Some(_), _) => current.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                current.push(c);
            }
            (None, '#') if at_word_start => break,
            (None, ';') => pieces.push(std::mem::take(&mut current)),
            (None, '&') if chars.peek() == Some(&'&') => {
                chars.next();
                pieces.push(std::mem::take(&mut current));
            }
            (None, '|') => {
                if chars.peek() == Some(&'|') {
                    chars.next();
                }
                pieces.push(std::mem::take(&mut current));
            }
            (None, _) => current.push(c),
        }
        at_word_start = c.is_whitespace();
    }
    pieces.push(current);
    pieces.retain(|p| !p.trim().is_empty());
    pieces
}

/// The documents whose command lines are checked: README.md and the
/// guide, except the generated reference.
fn documents() -> Vec<std::path::PathBuf> {
    let mut docs = vec![super::repo_root().join("README.md")];
    let reference = super::guide_src().join("reference");
    docs.extend(
        super::markdown_files(&super::guide_src())
            .into_iter()
            .filter(|p| !p.starts_with(&reference)),
    );
    docs
}

fn report(path: &Path, bad: &[BadLine]) -> String {
    bad.iter()
        .map(|b| {
            format!(
                "{}:{}: `{}`: {}\n",
                super::shown(path),
                b.line,
                b.text,
                b.error
            )
        })
        .collect()
}

#[test]
fn every_converge_line_of_the_readme_and_the_guide_parses() {
    let mut failures = String::new();
    let mut checked = 0;
    for path in documents() {
        let text = std::fs::read_to_string(&path).unwrap();
        checked += command_lines(&text).0.len();
        failures.push_str(&report(&path, &check_document(&text)));
    }
    assert!(
        failures.is_empty(),
        "command lines in the documentation that `converge` no longer accepts \
         (change the document, or the CLI back):\n{failures}"
    );
    // The guide shows commands on nearly every page: finding few means the
    // extraction broke, not that the documents are right.
    assert!(checked > 100, "only {checked} command lines found");
}

#[test]
fn a_line_that_no_longer_parses_is_reported_with_its_line_number() {
    let doc = "# Title\n\nRun:\n\n```sh\nconverge stack init dev\nconverge up --yes --no-such-flag\n```\n\nThen `converge stack selekt dev`.\n";
    let bad = check_document(doc);
    let lines: Vec<usize> = bad.iter().map(|b| b.line).collect();
    assert_eq!(lines, [7, 10], "{bad:?}");
    assert!(bad[0].error.contains("--no-such-flag"), "{}", bad[0].error);
    assert!(bad[1].error.contains("selekt"), "{}", bad[1].error);
}

#[test]
fn shell_syntax_around_a_command_is_understood() {
    let doc = "```sh\n$ cd hello && converge up --yes\nPULUMI_CONFIG_PASSPHRASE=x converge preview \\\n  --diff\nconverge stack export | jq . # a comment\necho converge\n```\n\n```yaml\nconverge up --bogus\n```\n\n`converge login [URL]` and `converge whoami --json`\n";
    let (lines, bad) = command_lines(doc);
    assert!(bad.is_empty(), "{bad:?}");
    let words: Vec<String> = lines.iter().map(|l| l.words.join(" ")).collect();
    assert_eq!(
        words,
        [
            "converge up --yes",
            "converge preview   --diff",
            "converge stack export",
            "converge whoami --json"
        ]
        .map(|w| w.split_whitespace().collect::<Vec<_>>().join(" "))
    );
    let numbers: Vec<usize> = lines.iter().map(|l| l.line).collect();
    assert_eq!(numbers, [2, 3, 5, 13]);
    assert!(check_document(doc).is_empty());
}

#[test]
fn an_unbalanced_quote_is_reported() {
    let bad = check_document("```sh\nconverge config set greeting 'hello\n```\n");
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert_eq!(bad[0].line, 2);
}
