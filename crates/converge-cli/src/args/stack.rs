//! `converge stack` subcommands' arguments.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::StackArg;

/// What `--secrets-provider` accepts, for `--help`.
const SECRETS_PROVIDER_HELP: &str = "The secrets provider that encrypts the stack's secrets \
(config and state):
  passphrase  a key derived from PULUMI_CONFIG_PASSPHRASE (or _FILE, or a prompt)
  default     the passphrase provider: on Pulumi's self-managed (DIY) backends `default` \
means the passphrase provider, and Converge does the same on every backend
  awskms://KEYID?region=REGION  an AWS KMS key (a key id, `alias/NAME`, or an ARN as \
`awskms:///arn:aws:kms:...`) encrypts the stack's data key; optional `&endpoint=URL` for \
another KMS endpoint. Credentials: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, \
AWS_SESSION_TOKEN; AWS_REGION and AWS_ENDPOINT_URL_KMS are honoured too.";

/// `converge stack [SUBCOMMAND]`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct StackArgs {
    #[command(subcommand)]
    pub command: Option<StackCommand>,
    #[command(flatten)]
    pub show: StackShowArgs,
}

/// `converge stack` without a subcommand: what it shows.
#[derive(Debug, Args, Clone)]
pub struct StackShowArgs {
    #[command(flatten)]
    pub stack: StackArg,
    /// Print only the stack's name.
    #[arg(long)]
    pub show_name: bool,
    /// Show each resource's URN.
    #[arg(short = 'u', long)]
    pub show_urns: bool,
    /// Show each resource's ID.
    #[arg(short = 'i', long)]
    pub show_ids: bool,
    /// Show secret outputs in plaintext.
    #[arg(long)]
    pub show_secrets: bool,
}

#[derive(Debug, Subcommand)]
pub enum StackCommand {
    /// Create a stack and select it (unless --no-select).
    Init {
        /// Name of the stack (`stack` or `org/project/stack`).
        name: Option<String>,
        #[command(flatten)]
        stack: StackArg,
        /// The secrets provider: `passphrase`, `default` or `awskms://KEY?region=R`.
        #[arg(long, value_name = "PROVIDER", long_help = SECRETS_PROVIDER_HELP)]
        secrets_provider: Option<String>,
        /// Do not select the new stack.
        #[arg(long)]
        no_select: bool,
        /// Copy this stack's configuration into the new stack (secrets
        /// re-encrypted with the new stack's secrets provider).
        #[arg(long, value_name = "STACK")]
        copy_config_from: Option<String>,
    },
    /// Move the stack's secrets to another secrets provider, re-encrypting
    /// its config and state.
    ChangeSecretsProvider {
        /// The new secrets provider: `passphrase`, `default` or `awskms://KEY?region=R`.
        #[arg(value_name = "PROVIDER", long_help = SECRETS_PROVIDER_HELP)]
        provider: String,
        #[command(flatten)]
        stack: StackArg,
    },
    /// List the stacks of this project (or all, with --all; or another
    /// project's, with --project).
    Ls {
        /// List the stacks of every project in the backend.
        #[arg(short, long)]
        all: bool,
        /// Print JSON.
        #[arg(short, long)]
        json: bool,
        /// Only the stacks of this organization (`organization` on a
        /// file or bucket backend, the token's on a state service).
        #[arg(short, long, value_name = "ORG")]
        organization: Option<String>,
        /// List the stacks of this project (another project's names are
        /// shown as `project/stack`).
        #[arg(short, long, value_name = "NAME", conflicts_with = "all")]
        project: Option<String>,
        /// Only stacks with this tag (`NAME`), or with this tag set to
        /// this value (`NAME=VALUE`).
        #[arg(short, long, value_name = "NAME[=VALUE]")]
        tag: Option<String>,
    },
    /// Select the current stack.
    Select {
        name: Option<String>,
        #[command(flatten)]
        stack: StackArg,
        /// Create the stack if it does not exist.
        #[arg(short, long)]
        create: bool,
        /// With --create, the new stack's secrets provider: `passphrase`,
        /// `default` or `awskms://KEY?region=R`.
        #[arg(long, value_name = "PROVIDER", requires = "create", long_help = SECRETS_PROVIDER_HELP)]
        secrets_provider: Option<String>,
    },
    /// Forget which stack is selected: the next command asks, or needs
    /// --stack.
    Unselect,
    /// Write the stack's dependency graph (resources, their dependencies
    /// and parents) to FILE in Graphviz DOT.
    Graph(GraphArgs),
    /// Remove a stack and its configuration.
    Rm {
        name: Option<String>,
        #[command(flatten)]
        stack: StackArg,
        /// Remove even if the stack still has resources.
        #[arg(short, long)]
        force: bool,
        /// Keep the stack's configuration file.
        #[arg(long)]
        preserve_config: bool,
        /// Skip the confirmation prompt.
        #[arg(short, long)]
        yes: bool,
    },
    /// Write the stack's deployment as JSON (stdout, or --file).
    Export {
        #[command(flatten)]
        stack: StackArg,
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
        /// Write secret values decrypted (as `plaintext`), with the
        /// stack's secrets provider.
        #[arg(long)]
        show_secrets: bool,
        /// Export the deployment that update version N left (`stack
        /// history` numbers them), where the backend keeps it (the file
        /// and bucket backends do); default: the current one.
        #[arg(long, value_name = "N")]
        version: Option<u64>,
    },
    /// Replace the stack's deployment with a JSON export (stdin, or --file).
    Import {
        #[command(flatten)]
        stack: StackArg,
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
        /// Import even if the deployment fails integrity verification or
        /// holds resources of another stack or project.
        #[arg(short, long)]
        force: bool,
    },
    /// Show the stack's update history, newest first.
    #[command(alias = "hist")]
    History(HistoryArgs),
    /// Rename the stack (`stack`, `project/stack` or `org/project/stack`):
    /// its state, history, tags and configuration file follow.
    Rename {
        /// The new name.
        #[arg(value_name = "NEW_NAME")]
        new_name: String,
        #[command(flatten)]
        stack: StackArg,
    },
    /// Manage the stack's tags.
    Tag(TagArgs),
    /// Show the stack's outputs.
    Output {
        /// Show one output only.
        name: Option<String>,
        #[command(flatten)]
        stack: StackArg,
        /// Print JSON.
        #[arg(short, long, conflicts_with = "shell")]
        json: bool,
        /// Print a shell script: `NAME=VALUE` lines, each value quoted for
        /// a POSIX shell (`eval "$(converge stack output --shell)"`).
        #[arg(long)]
        shell: bool,
        /// Show secret values in plaintext.
        #[arg(long)]
        show_secrets: bool,
    },
}

/// `stack graph`, with Pulumi's flags.
#[derive(Debug, Args, Clone)]
pub struct GraphArgs {
    /// The DOT file to write.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    #[command(flatten)]
    pub stack: StackArg,
    /// The colour of dependency edges.
    #[arg(long, value_name = "COLOR", default_value = "#246C60")]
    pub dependency_edge_color: String,
    /// The colour of parent edges.
    #[arg(long, value_name = "COLOR", default_value = "#AA6639")]
    pub parent_edge_color: String,
    /// Leave out the edges of dependencies.
    #[arg(long)]
    pub ignore_dependency_edges: bool,
    /// Leave out the edges from a child to its parent.
    #[arg(long)]
    pub ignore_parent_edges: bool,
    /// Label each node with the resource's name rather than its URN.
    #[arg(long)]
    pub short_node_name: bool,
    /// DOT text put at the top of the graph (styles, graph attributes).
    #[arg(long, value_name = "DOT")]
    pub dot_fragment: Option<String>,
}

/// `stack history`.
#[derive(Debug, Args, Clone)]
pub struct HistoryArgs {
    #[command(flatten)]
    pub stack: StackArg,
    /// Print JSON (Pulumi's shape).
    #[arg(short, long)]
    pub json: bool,
    /// Show secret configuration values in plaintext.
    #[arg(long)]
    pub show_secrets: bool,
    /// Show full dates instead of relative ones.
    #[arg(long)]
    pub full_dates: bool,
    /// How many updates a page holds (with --page).
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub page_size: usize,
    /// Which page to show, from 1.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub page: usize,
}

/// `stack tag`.
#[derive(Debug, Args)]
pub struct TagArgs {
    /// The stack to operate on (default: the current stack); also accepted
    /// after the subcommand.
    #[arg(short = 's', long = "stack", value_name = "STACK", global = true)]
    pub stack: Option<String>,
    #[command(subcommand)]
    pub command: TagCommand,
}

#[derive(Debug, Subcommand)]
pub enum TagCommand {
    /// Print one tag's value.
    Get { name: String },
    /// List the stack's tags.
    Ls {
        /// Print JSON (an object of names to values).
        #[arg(short, long)]
        json: bool,
    },
    /// Remove a tag.
    Rm { name: String },
    /// Set a tag.
    Set { name: String, value: String },
}
