//! Pulumi's commands that Converge does not have (`logs`, `state edit`).
//! Typed to `converge`, each is refused with what it is in Pulumi and
//! where to look instead, rather than clap's "unrecognized subcommand
//! 'logs' … similar subcommands: logout, login" (`main.rs` intercepts
//! clap's error; the exit code stays clap's 2 for a usage error).

use std::ffi::OsString;

/// A command of Pulumi's that Converge lacks: its name (a subcommand's
/// with its parent's: `state edit`), what it does in Pulumi, and what to
/// do instead.
struct Absent {
    name: &'static str,
    pulumi: &'static str,
    instead: &'static str,
}

const ABSENT: &[Absent] = &[
    Absent {
        name: "ai",
        pulumi: "asks Pulumi AI, a Pulumi Cloud service, to write a program",
        instead: "write the program yourself or with Pulumi's tools; Converge runs it unchanged",
    },
    Absent {
        name: "console",
        pulumi: "opens the stack's page in the Pulumi Cloud console",
        instead: "a Converge state service has a web console of its own, at the address \
                  `converge serve` listens on",
    },
    Absent {
        name: "convert",
        pulumi: "converts a program from another tool (Terraform, ARM, CloudFormation, \
                 Kubernetes YAML) or between Pulumi languages",
        instead: "run `pulumi convert`; the program it writes runs under Converge",
    },
    Absent {
        name: "deployment",
        pulumi: "runs updates with Pulumi Deployments, a Pulumi Cloud service",
        instead: "run `converge up` from your CI system",
    },
    Absent {
        name: "env",
        pulumi: "manages Pulumi ESC environments, a Pulumi Cloud service",
        instead: "set the stack's configuration and secrets with `converge config set`",
    },
    Absent {
        name: "config env",
        pulumi: "adds, lists and removes the Pulumi ESC environments a stack imports, a \
                 Pulumi Cloud service",
        instead: "set the stack's configuration and secrets with `converge config set`",
    },
    Absent {
        name: "gen-completion",
        pulumi: "writes a shell completion script",
        instead: "Converge has no completion scripts yet",
    },
    Absent {
        name: "logs",
        pulumi: "shows the logs of a stack's resources, gathered from the cloud",
        instead: "read them with the cloud's own log tools",
    },
    Absent {
        name: "org",
        pulumi: "manages Pulumi Cloud organizations",
        instead: "`converge whoami -v` names the backend and, on a state service, its \
                  organization",
    },
    Absent {
        name: "package",
        pulumi: "adds, generates and publishes packages and their SDKs",
        instead: "run `pulumi package`; the SDKs it generates run under Converge",
    },
    Absent {
        name: "policy rm",
        pulumi: "removes a published policy pack, or one of its versions, from a Pulumi \
                 Cloud organization",
        instead: "`converge policy disable NAME` stops requiring a pack; `converge policy ls` \
                  lists what is published",
    },
    Absent {
        name: "policy validate-config",
        pulumi: "checks a policy pack configuration file against a published pack's \
                 policies",
        instead: "`converge preview --policy-pack DIR --policy-pack-config FILE` checks the \
                  file against the pack before anything runs, naming each problem",
    },
    Absent {
        name: "project",
        pulumi: "lists the projects of a Pulumi Cloud organization",
        instead: "`converge stack ls --all` lists the backend's stacks of every project",
    },
    Absent {
        name: "schema",
        pulumi: "checks a Pulumi.yaml against Pulumi's project schema",
        instead: "Converge checks the project file whenever a command loads it",
    },
    Absent {
        name: "state edit",
        pulumi: "opens the stack's state in an editor and writes back what was saved",
        instead: "`converge stack export --file state.json`, edit the file, then \
                  `converge stack import --file state.json`, which checks it before \
                  writing it; `converge state` has a subcommand for each common edit",
    },
    Absent {
        name: "state upgrade",
        pulumi: "moves a file or bucket backend from the legacy layout to the \
                 project-scoped one",
        instead: "Converge reads and writes both layouts; `pulumi state upgrade` run on \
                  the same backend upgrades it, and Converge reads the result",
    },
    Absent {
        name: "template",
        pulumi: "publishes templates to Pulumi Cloud's registry",
        instead: "`converge new` takes a local template directory or a .zip URL",
    },
    Absent {
        name: "view-trace",
        pulumi: "shows a trace written with --tracing",
        instead: "Converge writes no traces; use `-v N --logtostderr` for its logs",
    },
    Absent {
        name: "watch",
        pulumi: "runs an update each time the program's files change",
        instead: "run `converge up` after a change",
    },
];

/// The error for `name` if it is a command of Pulumi's that Converge
/// lacks.
pub fn absent(name: &str) -> Option<String> {
    let a = ABSENT.iter().find(|a| a.name == name)?;
    let mut instead = a.instead.chars();
    let instead: String = instead
        .next()
        .map(|c| c.to_uppercase().chain(instead).collect())
        .unwrap_or_default();
    Some(format!(
        "Converge has no `{}` command (in Pulumi it {}). {instead}. \
         The guide's \"Migrating from Pulumi\" (docs/src/migrating-from-pulumi.md) \
         lists what Converge does differently.",
        a.name, a.pulumi
    ))
}

/// The command `name`, the word clap did not recognize, was meant as:
/// the subcommands before it on the command line and `name` itself
/// (`logs`, `state edit`, `config env`); `None` after `help`.
pub fn command_path(args: &[OsString], name: &str, root: &clap::Command) -> Option<String> {
    let mut command = root;
    let mut path = Vec::new();
    for arg in args.iter().filter_map(|a| a.to_str()) {
        if arg == name {
            path.push(name);
            return Some(path.join(" "));
        }
        if arg == "help" && path.is_empty() {
            return None;
        }
        if let Some(sub) = command.find_subcommand(arg) {
            path.push(sub.get_name());
            command = sub;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_pulumi_commands_are_explained() {
        let m = absent("logs").unwrap();
        assert!(
            m.starts_with("Converge has no `logs` command (in Pulumi it"),
            "{m}"
        );
        assert!(m.contains("migrating-from-pulumi.md"), "{m}");
        assert_eq!(absent("lgos"), None);
        assert_eq!(absent("up"), None);
    }

    #[test]
    fn the_migration_guide_lists_each_command() {
        let guide = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../docs/src/migrating-from-pulumi.md"),
        )
        .unwrap();
        for a in ABSENT {
            let row = format!("| `pulumi {}` |", a.name);
            assert!(guide.contains(&row), "no {row:?} in the migration guide");
        }
    }

    #[test]
    fn the_path_names_the_subcommands_before_the_word() {
        use clap::CommandFactory;
        let root = crate::args::Cli::command();
        let args = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        let path = |a: &[&str], name| command_path(&args(a), name, &root);
        assert_eq!(path(&["logs", "-f"], "logs").as_deref(), Some("logs"));
        assert_eq!(path(&["-C", "dir", "env"], "env").as_deref(), Some("env"));
        assert_eq!(
            path(&["config", "env"], "env").as_deref(),
            Some("config env")
        );
        assert_eq!(
            path(&["state", "edit", "-s", "dev"], "edit").as_deref(),
            Some("state edit")
        );
        assert_eq!(path(&["help", "logs"], "logs"), None);
        assert!(absent("config env").is_some());
        assert!(absent("state edit")
            .unwrap()
            .contains("`state edit` command"));
    }
}
