//! Pulumi's top-level commands that Converge does not have. Typed to
//! `converge`, each is refused with what it is in Pulumi and where to look
//! instead, rather than clap's "unrecognized subcommand 'logs' … similar
//! subcommands: logout, login" (`main.rs` intercepts clap's error; the
//! exit code stays clap's 2 for a usage error).

use std::ffi::OsString;

/// A command of Pulumi's that Converge lacks: its name, what it does in
/// Pulumi, and what to do instead.
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

/// Whether `name`, the word clap did not recognize, is the command itself
/// (`converge logs`), not a subcommand of one (`converge config env`):
/// no command of `commands` comes before it.
pub fn is_command(args: &[OsString], name: &str, commands: &[&str]) -> bool {
    for arg in args {
        let Some(arg) = arg.to_str() else {
            continue;
        };
        if arg == name {
            return true;
        }
        if commands.contains(&arg) {
            return false;
        }
    }
    false
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
    fn a_subcommand_is_not_the_command() {
        let args = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        let commands = ["config", "stack", "help"];
        assert!(is_command(&args(&["logs", "-f"]), "logs", &commands));
        assert!(is_command(&args(&["-C", "dir", "env"]), "env", &commands));
        assert!(!is_command(&args(&["config", "env"]), "env", &commands));
        assert!(!is_command(&args(&["help", "logs"]), "logs", &commands));
    }
}
