//! Command lines as Pulumi's flag parser (Go's pflag) reads them, turned
//! into ones clap reads the same way, before clap sees them:
//!
//! - `--yes=true`, `--refresh=false`: pflag gives every boolean flag an
//!   optional `=VALUE` (Go's `strconv.ParseBool`: `1`, `t`, `true`, `0`,
//!   `f`, `false`, any case of the words); each becomes the bare flag or
//!   nothing. A value that is no boolean is left for clap to refuse.
//! - `PULUMI_SKIP_CONFIRMATIONS` set truthy: `--yes`, where the command
//!   takes it and the line has none.
//! - `converge stack -s dev output`: the `--stack` Pulumi's `stack`
//!   passes down to its subcommands moves after the subcommand.
//! - `-d` on the operations (`preview`, `up`, `refresh`, `destroy`,
//!   `import`): Pulumi's short `--debug` there (Converge's `--debug` is
//!   global, and `config cp -d` is `--dest`).
//!
//! Nothing after `--` changes.

use std::ffi::OsString;

use clap::ArgAction;

/// The operations on which `-d` is `--debug`.
const DEBUG_SHORT_ON: &[&str] = &["preview", "up", "refresh", "destroy", "import"];

/// `args` (the program's name first) as clap should read them; `env`
/// looks up an environment variable.
pub fn normalize(
    args: Vec<OsString>,
    root: &clap::Command,
    env: impl Fn(&str) -> Option<String>,
) -> Vec<OsString> {
    let mut root = root.clone();
    root.build();
    let mut out: Vec<OsString> = Vec::with_capacity(args.len() + 1);
    let mut command = &root;
    let mut path: Vec<String> = Vec::new();
    let mut moved_stack: Vec<OsString> = Vec::new();
    let mut has_yes = false;
    let mut rest = args.into_iter();
    if let Some(program) = rest.next() {
        out.push(program);
    }
    let mut literal = false;
    let mut positional_seen = false;
    while let Some(arg) = rest.next() {
        let Some(text) = arg.to_str().map(str::to_owned) else {
            out.push(arg);
            continue;
        };
        if literal {
            out.push(arg);
            continue;
        }
        if text == "--" {
            literal = true;
            out.append(&mut moved_stack);
            out.push(arg);
            continue;
        }
        if let Some(long) = text.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            let found = command.get_arguments().find(|a| a.get_long() == Some(name));
            if found.is_some_and(|a| a.get_id() == "yes") {
                has_yes = true;
            }
            match (found, value) {
                (Some(a), Some(v)) if is_switch(a) => match parse_bool(v) {
                    Some(true) => out.push(format!("--{name}").into()),
                    Some(false) => {}
                    None => out.push(arg),
                },
                (Some(a), None) if takes_value(a) => {
                    let to = match passes_stack_down(&path, command, a) {
                        true => &mut moved_stack,
                        false => &mut out,
                    };
                    to.push(arg);
                    to.extend(rest.next());
                }
                (Some(a), Some(_)) if passes_stack_down(&path, command, a) => {
                    moved_stack.push(arg);
                }
                _ => out.push(arg),
            }
            continue;
        }
        if let Some(shorts) = text.strip_prefix('-').filter(|s| !s.is_empty()) {
            let first = shorts.chars().next().unwrap_or('-');
            if shorts == "d"
                && path.len() == 1
                && DEBUG_SHORT_ON.contains(&path[0].as_str())
                && command.get_arguments().all(|a| a.get_short() != Some('d'))
            {
                out.push("--debug".into());
                continue;
            }
            let found = command
                .get_arguments()
                .find(|a| a.get_short() == Some(first));
            if found.is_some_and(|a| a.get_id() == "yes") {
                has_yes = true;
            }
            match found {
                Some(a) if shorts.chars().count() == 1 && takes_value(a) => {
                    let to = match passes_stack_down(&path, command, a) {
                        true => &mut moved_stack,
                        false => &mut out,
                    };
                    to.push(arg);
                    to.extend(rest.next());
                }
                _ => out.push(arg),
            }
            continue;
        }
        // A word: a subcommand (the flags moved down follow the last
        // one), or an argument of the command.
        let sub = (!positional_seen)
            .then(|| {
                command.get_subcommands().find(|s| {
                    s.get_name() == text || s.get_all_aliases().any(|alias| alias == text)
                })
            })
            .flatten();
        out.push(arg);
        match sub {
            Some(sub) => {
                path.push(sub.get_name().to_owned());
                command = sub;
                if !command.has_subcommands() {
                    out.append(&mut moved_stack);
                }
            }
            None => {
                positional_seen = true;
                out.append(&mut moved_stack);
            }
        }
    }
    out.append(&mut moved_stack);
    let skip_confirmations = env("PULUMI_SKIP_CONFIRMATIONS")
        .and_then(|v| parse_bool(&v))
        .unwrap_or(false);
    // A hidden `--yes` is one the command refuses (`preview`).
    let takes_yes = command
        .get_arguments()
        .any(|a| a.get_id() == "yes" && !a.is_hide_set());
    if skip_confirmations && !has_yes && takes_yes {
        // Before a `--` the user wrote, if any.
        let at = out.iter().position(|a| a == "--").unwrap_or(out.len());
        out.insert(at, "--yes".into());
    }
    out
}

/// Whether `arg`, given to `command` (at `path`), is the `--stack` that
/// Pulumi's `stack` passes down to the subcommand that follows.
fn passes_stack_down(path: &[String], command: &clap::Command, arg: &clap::Arg) -> bool {
    path.first().is_some_and(|p| p == "stack")
        && command.has_subcommands()
        && arg.get_id() == "stack"
}

/// A flag that takes no value (clap's `SetTrue`).
fn is_switch(arg: &clap::Arg) -> bool {
    matches!(arg.get_action(), ArgAction::SetTrue)
}

/// A flag whose value may be the next word.
fn takes_value(arg: &clap::Arg) -> bool {
    arg.get_action().takes_values()
        && arg.get_num_args().is_some_and(|n| n.min_values() > 0)
        && !arg.is_positional()
}

/// Go's `strconv.ParseBool`.
pub fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;
    use crate::args::Cli;

    fn normalized(line: &str, env: &[(&str, &str)]) -> String {
        let args: Vec<OsString> = std::iter::once("converge")
            .chain(line.split_whitespace())
            .map(OsString::from)
            .collect();
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let out = normalize(args, &Cli::command(), |name| {
            env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        });
        out[1..]
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn boolean_flags_take_go_boolean_values() {
        assert_eq!(
            normalized("up --yes=true --skip-preview=false --diff=1 -s dev", &[]),
            "up --yes --diff -s dev"
        );
        assert_eq!(
            normalized("preview --suppress-outputs=False --json=T", &[]),
            "preview --json"
        );
        // Not a boolean: clap refuses it as before.
        assert_eq!(normalized("up --yes=maybe", &[]), "up --yes=maybe");
        // A flag with a value keeps it; a global switch is read too.
        assert_eq!(
            normalized("--non-interactive=true up --message=x=false", &[]),
            "--non-interactive up --message=x=false"
        );
    }

    #[test]
    fn skip_confirmations_adds_yes_where_the_command_takes_it() {
        let env = [("PULUMI_SKIP_CONFIRMATIONS", "true")];
        assert_eq!(normalized("up -s dev", &env), "up -s dev --yes");
        assert_eq!(normalized("up -y", &env), "up -y");
        assert_eq!(normalized("stack rm dev", &env), "stack rm dev --yes");
        assert_eq!(normalized("stack ls", &env), "stack ls");
        assert_eq!(normalized("preview", &env), "preview");
        let off = [("PULUMI_SKIP_CONFIRMATIONS", "0")];
        assert_eq!(normalized("up", &off), "up");
    }

    #[test]
    fn stack_passes_its_stack_flag_down_to_the_subcommand() {
        assert_eq!(
            normalized("stack -s dev output num", &[]),
            "stack output -s dev num"
        );
        assert_eq!(
            normalized("stack --stack=dev tag ls", &[]),
            "stack tag ls --stack=dev"
        );
        // `stack -s dev` alone shows the stack, as before.
        assert_eq!(normalized("stack -s dev", &[]), "stack -s dev");
    }

    #[test]
    fn d_is_debug_on_the_operations_only() {
        assert_eq!(normalized("up -d -y", &[]), "up --debug -y");
        assert_eq!(
            normalized("config cp -d prod key", &[]),
            "config cp -d prod key"
        );
    }

    #[test]
    fn nothing_after_a_double_dash_changes() {
        assert_eq!(
            normalized("config set -- key --yes=true", &[]),
            "config set -- key --yes=true"
        );
    }
}
