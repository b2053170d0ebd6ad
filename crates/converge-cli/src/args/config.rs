//! `converge config` subcommands' arguments.

use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// The stack to operate on (`stack`, `project/stack` or
    /// `org/project/stack`); also accepted after the subcommand.
    #[arg(short = 's', long = "stack", value_name = "STACK", global = true)]
    pub stack: Option<String>,
    /// Use this stack configuration file instead of `Pulumi.<stack>.yaml`
    /// (also accepted after the subcommand).
    #[arg(long, value_name = "FILE", global = true)]
    pub config_file: Option<std::path::PathBuf>,
    /// Show secret values in plaintext when listing.
    #[arg(long)]
    pub show_secrets: bool,
    /// Print JSON when listing (`{"<key>": {"value", "objectValue",
    /// "secret"}}`; secrets' values only with --show-secrets).
    #[arg(short, long)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Option<ConfigCommand>,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Set a configuration value.
    Set {
        key: String,
        /// The value; read from stdin when omitted.
        value: Option<String>,
        /// Encrypt the value.
        #[arg(long)]
        secret: bool,
        /// Store the value in plaintext (the default).
        #[arg(long, conflicts_with = "secret")]
        plaintext: bool,
        /// Treat the key as a property path (`a.b[0]`).
        #[arg(long)]
        path: bool,
        /// Save the value as this type: `string`, `bool`, `int` or
        /// `float` (default: a string at the top level; under --path,
        /// `true`/`false` and integers as such).
        #[arg(long = "type", value_name = "TYPE", value_parser = ["string", "bool", "int", "float"])]
        value_type: Option<String>,
    },
    /// Print a configuration value.
    Get {
        key: String,
        #[arg(long)]
        path: bool,
        /// Print JSON.
        #[arg(short, long)]
        json: bool,
    },
    /// Remove a configuration value.
    Rm {
        key: String,
        #[arg(long)]
        path: bool,
    },
    /// Set several configuration values at once (`--plaintext KEY=VALUE`,
    /// `--secret KEY=VALUE`, repeatable; or `--json`).
    SetAll {
        /// A plaintext value, `KEY=VALUE` (repeatable).
        #[arg(long = "plaintext", value_name = "KEY=VALUE")]
        plaintext: Vec<String>,
        /// A value to encrypt, `KEY=VALUE` (repeatable).
        #[arg(long = "secret", value_name = "KEY=VALUE")]
        secret: Vec<String>,
        /// Treat the keys as property paths (`a.b[0]`).
        #[arg(long)]
        path: bool,
        /// The values as JSON, in the shape `converge config --json`
        /// prints: `{"KEY": {"value": "…", "secret": false}, …}`
        /// (`objectValue` for objects and arrays).
        #[arg(long, value_name = "JSON", conflicts_with_all = ["plaintext", "secret", "path"])]
        json: Option<String>,
    },
    /// Remove several configuration values.
    RmAll {
        /// The keys to remove.
        #[arg(value_name = "KEY", required = true)]
        keys: Vec<String>,
        /// Treat the keys as property paths (`a.b[0]`).
        #[arg(long)]
        path: bool,
    },
    /// Replace the stack's configuration file with the configuration of
    /// its last update (the old file is kept as `.bak` unless --force).
    Refresh {
        /// Overwrite the configuration file without keeping a backup.
        #[arg(short, long)]
        force: bool,
    },
    /// Copy one configuration value, or all of them, to another stack
    /// (secrets are re-encrypted for it).
    Cp {
        /// The key to copy; every key when omitted.
        key: Option<String>,
        /// The stack to copy to.
        #[arg(short, long, value_name = "STACK")]
        dest: String,
        /// Treat the key as a property path (`a.b[0]`).
        #[arg(long)]
        path: bool,
    },
}
