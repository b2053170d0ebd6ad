//! The command reference (`docs/src/reference/`), generated from the
//! command-line definition so that it cannot drift from the binary: an
//! index page with the global options and the commands, and one page per
//! command with its subcommands, arguments, options, defaults, accepted
//! values and environment variables. The test fails when the committed
//! pages differ from what the definition gives; running it with
//! `CONVERGE_UPDATE_REFERENCE=1` writes them instead.

use std::fmt::Write as _;

use clap::{Arg, ArgAction, CommandFactory};

use crate::args::Cli;

/// How to regenerate the pages, for the failure message and the pages.
const REGENERATE: &str =
    "CONVERGE_UPDATE_REFERENCE=1 cargo test -p converge-cli --bin converge docs::reference";

/// The index page's file name.
pub const INDEX: &str = "commands.md";

/// The reference's pages: file name (in `docs/src/reference/`) and text.
pub fn pages() -> Vec<(String, String)> {
    let mut root = Cli::command();
    root.build();
    let commands: Vec<&clap::Command> = root
        .get_subcommands()
        .filter(|c| !c.is_hide_set() && c.get_name() != "help")
        .collect();

    let mut index = String::new();
    let _ = writeln!(index, "# Commands\n");
    let _ = writeln!(index, "{}\n", generated_note());
    if let Some(about) = root.get_about() {
        let _ = writeln!(index, "{about}\n");
    }
    let _ = writeln!(index, "```text\n{}\n```\n", usage(&root));
    let _ = writeln!(index, "## Global options\n");
    let _ = writeln!(
        index,
        "These options are accepted by every command, before or after its name.\n"
    );
    let globals: Vec<&Arg> = root.get_arguments().filter(|a| shown_arg(a)).collect();
    write_args(&mut index, &globals);
    let _ = writeln!(index, "## Commands\n");
    let _ = writeln!(index, "| Command | What it does |\n| --- | --- |");
    let mut pages = Vec::new();
    for command in &commands {
        let file = format!("{}.md", command.get_name());
        let _ = writeln!(
            index,
            "| [`converge {}`]({file}) | {} |",
            command.get_name(),
            one_line(
                command
                    .get_about()
                    .map(|a| a.to_string())
                    .unwrap_or_default()
            )
        );
        let mut page = String::new();
        let _ = writeln!(page, "# converge {}\n", command.get_name());
        let _ = writeln!(page, "{}\n", generated_note());
        write_command(
            &mut page,
            command,
            &format!("converge {}", command.get_name()),
            true,
        );
        pages.push((file, page));
    }
    index.push('\n');
    pages.insert(0, (INDEX.to_string(), index));
    pages
}

fn generated_note() -> String {
    format!(
        "<!-- Generated from the command-line definition; do not edit. \
         Regenerate with: {REGENERATE} -->"
    )
}

/// Writes a command's description, usage, arguments and options, then its
/// subcommands, each under a heading of its own.
fn write_command(out: &mut String, command: &clap::Command, path: &str, top: bool) {
    if !top {
        let _ = writeln!(out, "## {path}\n");
    }
    let about = command
        .get_long_about()
        .or(command.get_about())
        .map(|a| a.to_string());
    if let Some(about) = about {
        let _ = writeln!(out, "{}\n", about.trim());
    }
    let aliases: Vec<&str> = command.get_visible_aliases().collect();
    if !aliases.is_empty() {
        let _ = writeln!(out, "Also: {}\n", code_list(&aliases));
    }
    let _ = writeln!(out, "```text\n{}\n```\n", usage(command));
    let positionals: Vec<&Arg> = command.get_positionals().filter(|a| shown_arg(a)).collect();
    if !positionals.is_empty() {
        let _ = writeln!(out, "Arguments:\n");
        write_args(out, &positionals);
    }
    let options: Vec<&Arg> = command
        .get_arguments()
        .filter(|a| !a.is_positional() && shown_arg(a) && !a.is_global_set())
        .collect();
    if !options.is_empty() {
        let _ = writeln!(out, "Options:\n");
        write_args(out, &options);
    }
    for sub in command
        .get_subcommands()
        .filter(|c| !c.is_hide_set() && c.get_name() != "help")
    {
        write_command(out, sub, &format!("{path} {}", sub.get_name()), false);
    }
}

/// Whether an argument belongs in the reference: not hidden, not the
/// automatic `--help` and `--version`.
fn shown_arg(arg: &Arg) -> bool {
    !arg.is_hide_set()
        && !matches!(
            arg.get_action(),
            ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version
        )
}

fn write_args(out: &mut String, args: &[&Arg]) {
    for arg in args {
        let mut line = format!("- `{}`", spelling(arg));
        let help = arg
            .get_long_help()
            .or(arg.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default();
        let mut lines = help.lines();
        let first = lines.next().map(|l| one_line(l.to_string()));
        if let Some(first) = first.filter(|f| !f.is_empty()) {
            let _ = write!(line, ": {first}");
        }
        // Indented lines of a help text are a table of values: each one an
        // item of a nested list; other lines are paragraphs of the item.
        let mut rest = String::new();
        for more in lines.filter(|l| !l.trim().is_empty()) {
            if more.starts_with(char::is_whitespace) {
                let _ = write!(rest, "\n  - {}", one_line(more.to_string()));
            } else {
                let _ = write!(rest, "\n\n  {}", one_line(more.to_string()));
            }
        }
        let values: Vec<String> = arg
            .get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| v.get_name().to_string())
            .collect();
        if !values.is_empty() && arg.get_action().takes_values() {
            let values: Vec<&str> = values.iter().map(String::as_str).collect();
            let _ = write!(line, " Values: {}.", code_list(&values));
        }
        let defaults: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|v| v.to_string_lossy().into_owned())
            .collect();
        if !defaults.is_empty() && arg.get_action().takes_values() {
            let defaults: Vec<&str> = defaults.iter().map(String::as_str).collect();
            let _ = write!(line, " Default: {}.", code_list(&defaults));
        }
        if let Some(env) = arg.get_env() {
            let _ = write!(line, " Environment: `{}`.", env.to_string_lossy());
        }
        let _ = writeln!(out, "{line}{rest}");
    }
    out.push('\n');
}

/// How an argument is written: `-s, --stack <STACK>`, `--yes`, `<NAME>`.
fn spelling(arg: &Arg) -> String {
    let value = arg
        .get_value_names()
        .map(|names| {
            names
                .iter()
                .map(|n| format!("<{n}>"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| format!("<{}>", arg.get_id().as_str().to_uppercase()));
    let repeated = matches!(arg.get_action(), ArgAction::Append)
        || arg.get_num_args().is_some_and(|n| n.max_values() > 1);
    let value = if repeated {
        format!("{value}...")
    } else {
        value
    };
    if arg.is_positional() {
        return value;
    }
    let mut names = Vec::new();
    if let Some(s) = arg.get_short() {
        names.push(format!("-{s}"));
    }
    if let Some(l) = arg.get_long() {
        names.push(format!("--{l}"));
    }
    for alias in arg.get_visible_aliases().unwrap_or_default() {
        names.push(format!("--{alias}"));
    }
    let names = names.join(", ");
    if arg.get_action().takes_values() {
        format!("{names} {value}")
    } else {
        names
    }
}

fn usage(command: &clap::Command) -> String {
    let usage = command.clone().render_usage().to_string();
    usage
        .strip_prefix("Usage: ")
        .unwrap_or(&usage)
        .trim()
        .to_string()
}

/// Help text on one line, its paragraphs joined.
fn one_line(text: String) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn code_list(items: &[&str]) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn the_command_reference_is_current() {
    let dir = super::guide_src().join("reference");
    let pages = pages();
    if std::env::var_os("CONVERGE_UPDATE_REFERENCE").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for (file, text) in &pages {
            std::fs::write(dir.join(file), text).unwrap();
        }
        return;
    }
    let mut stale = Vec::new();
    for (file, text) in &pages {
        match std::fs::read_to_string(dir.join(file)) {
            Ok(committed) if &committed == text => {}
            Ok(_) => stale.push(format!("{file} differs")),
            Err(_) => stale.push(format!("{file} is missing")),
        }
    }
    // A page for a command that no longer exists is stale too.
    let environment = "environment.md";
    for page in super::markdown_files(&dir) {
        let name = page.file_name().unwrap().to_string_lossy().into_owned();
        if name != environment && !pages.iter().any(|(f, _)| *f == name) {
            stale.push(format!("{name} documents no command (delete it)"));
        }
    }
    assert!(
        stale.is_empty(),
        "the command reference in docs/src/reference/ is stale: {}.\n\
         Regenerate it with:\n    {REGENERATE}\nand commit the result.",
        stale.join("; ")
    );
}

#[test]
fn the_reference_names_every_command_flag_and_variable() {
    let text: String = pages().into_iter().map(|(_, t)| t).collect();
    for needle in [
        "## converge stack init",
        "## converge state move",
        "`-t, --target <URN>...`",
        "`-s, --stack <STACK>`",
        "Environment: `CONVERGE_DATABASE_URL`",
        "Environment: `CONVERGE_CANCEL_TIMEOUT`",
        "`-C, --cwd <DIR>`",
    ] {
        assert!(text.contains(needle), "{needle} missing from the reference");
    }
}
