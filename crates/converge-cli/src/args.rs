//! Command-line arguments, as the user types them. Validation and the
//! building of working objects happen in `context` and the commands.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "converge",
    version,
    about = "A desired-state deployment engine, compatible with Pulumi programs, plugins and state."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Run as if started in this directory.
    #[arg(short = 'C', long = "cwd", global = true, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Never prompt; fail where input would be needed.
    #[arg(long, global = true)]
    pub non_interactive: bool,
    /// Colour the output: always, never, raw or auto (Converge's output
    /// has no colour).
    #[arg(long, global = true, value_name = "MODE", value_parser = ["always", "never", "raw", "auto"])]
    pub color: Option<String>,
    #[command(flatten)]
    pub diagnostics: DiagnosticArgs,
}

/// Pulumi's logging and debugging flags, valid on every command (the
/// Automation API passes them to each operation).
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Logging and debugging")]
pub struct DiagnosticArgs {
    /// Show debug-level messages of the program and its plugins in the
    /// display and the event log.
    #[arg(long, global = true)]
    pub debug: bool,
    /// Write Converge's logs to stderr at this level: 1-2 info, 3-6 debug,
    /// 7 and above trace (10 and above: also the libraries' own). Alone,
    /// `-v` is 1 (and `converge whoami -v` also shows the backend URL).
    #[arg(short = 'v', long, global = true, value_name = "N", num_args = 0..=1, default_missing_value = "1")]
    pub verbose: Option<u8>,
    /// Write Converge's logs to stderr (at warning level unless -v says
    /// otherwise).
    #[arg(long, global = true)]
    pub logtostderr: bool,
    /// Give plugins the same log settings (their output is already part of
    /// Converge's logs, so this has no further effect).
    #[arg(long, global = true)]
    pub logflow: bool,
    /// Pulumi's trace endpoint: accepted, but Converge emits no Pulumi
    /// traces (a warning says so); use -v and --logtostderr instead.
    #[arg(long, global = true, value_name = "URL")]
    pub tracing: Option<String>,
    /// Pulumi's debugger attachment (`program`, `plugins`, `all`): refused,
    /// since Converge cannot start programs or plugins under a debugger.
    #[arg(long, global = true, value_name = "WHAT", num_args = 0..=1, default_missing_value = "program")]
    pub attach_debugger: Option<String>,
}

#[derive(Debug, Args, Clone, Default)]
pub struct StackArg {
    /// The stack to operate on (`stack`, `project/stack` or `org/project/stack`).
    #[arg(short = 's', long = "stack", value_name = "STACK")]
    pub stack: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Log in to a backend: `file://DIR`, `s3://BUCKET/PREFIX`, `gs://…`,
    /// `azblob://…`, `http://HOST:PORT` (a state service), or `--local` for
    /// `file://~`.
    Login {
        /// Backend URL.
        url: Option<String>,
        /// Use the local backend in the home directory (`file://~`).
        #[arg(long)]
        local: bool,
        /// The access token of a state service (default: PULUMI_ACCESS_TOKEN).
        #[arg(long, value_name = "TOKEN")]
        token: Option<String>,
    },
    /// Run the HTTP state service (stacks, checkpoints, leases, journals) and
    /// its web console at `/`.
    Serve(ServeArgs),
    /// Log out of the current backend.
    Logout,
    /// Show the current user and backend.
    /// `-v` also shows the backend URL.
    Whoami {
        /// Print JSON: `user`, `url`, `organizations`.
        #[arg(short, long)]
        json: bool,
    },
    /// Manage stacks; without a subcommand, show the current stack: when it
    /// was last updated, its resources and its outputs.
    Stack(StackArgs),
    /// Manage a stack's configuration.
    Config(ConfigArgs),
    /// Edit the stack's state without touching any cloud object.
    #[command(subcommand)]
    State(StateCommand),
    /// Show what an update would change.
    #[command(mut_args(hide_refused("preview")))]
    Preview(OperationArgs),
    /// Create or update the stack's resources.
    #[command(alias = "update", mut_args(hide_refused("up")))]
    Up(OperationArgs),
    /// Read every resource's current state into the stack.
    #[command(mut_args(hide_refused("refresh")))]
    Refresh(OperationArgs),
    /// Delete every resource of the stack.
    #[command(mut_args(hide_refused("destroy")))]
    Destroy(OperationArgs),
    /// Adopt existing cloud objects into the stack: `TYPE NAME ID`, or
    /// `--file` with Pulumi's bulk import JSON.
    Import(ImportArgs),
    /// Cancel the update running on a stack: show who holds its lock, then
    /// interrupt it as Ctrl-C would if it runs on this host, else break it.
    Cancel {
        #[command(flatten)]
        stack: StackArg,
        /// Cancel without asking for confirmation.
        #[arg(short, long)]
        yes: bool,
    },
    /// Manage the plugins of the plugin directory ($PULUMI_HOME/plugins).
    #[command(subcommand)]
    Plugin(crate::commands::plugin::PluginCommand),
    /// Show Converge's environment: version, backend, project, stack,
    /// plugins, language runtime and host.
    About(crate::commands::about::AboutArgs),
    /// Create a project from a template (`yaml`, `python`, `typescript`, or
    /// a local template directory), create its stack and install its SDK.
    New(crate::commands::new::NewArgs),
    /// Policy packs: create one from a template, judge a stack's state
    /// with packs, and publish, require (enable), disable and list the
    /// organization's packs on a state service.
    #[command(subcommand)]
    Policy(crate::commands::policy::PolicyCommand),
    /// Print Converge's version and the Pulumi CLI version it implements
    /// (under the name `pulumi`: that version alone, as Pulumi prints it).
    Version,
    /// Install the project's dependencies with its runtime's own tools:
    /// Python into its virtualenv (made if missing), Node.js with its
    /// package manager; YAML needs none.
    Install(InstallArgs),
}

/// `converge install`.
#[derive(Debug, Args, Clone)]
pub struct InstallArgs {
    /// Skip the language dependencies.
    #[arg(long)]
    pub no_dependencies: bool,
    /// Skip plugins (Converge downloads none either way).
    #[arg(long)]
    pub no_plugins: bool,
    /// Pulumi's: install plugins again. Converge installs none, and
    /// installs the dependencies on every run.
    #[arg(long)]
    pub reinstall: bool,
    /// Use pyenv, nvm and the like to pick the language's version: not
    /// something Converge runs (refused).
    #[arg(long)]
    pub use_language_version_tools: bool,
}

/// `converge serve`.
#[derive(Debug, Args, Clone)]
pub struct ServeArgs {
    /// Address to listen on; port 0 picks a free port (the address is printed).
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR")]
    pub listen: String,
    /// `postgres://…` or `sqlite://FILE?mode=rwc` (default: SQLite in --data-dir).
    #[arg(long, env = "CONVERGE_DATABASE_URL", value_name = "URL")]
    pub database_url: Option<String>,
    /// Directory of the default SQLite database (default: $CONVERGE_HOME/server).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Write an admin token to this file (mode 0600), unless it already holds one.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// The organization of the --token-file token.
    #[arg(long, default_value = converge_backend::DIY_ORGANIZATION, value_name = "ORG")]
    pub organization: String,
    /// How long an update's lease lasts without a heartbeat, in seconds.
    #[arg(long, value_name = "SECONDS")]
    pub lease_seconds: Option<u64>,
    /// Refuse request bodies larger than this many MiB (413).
    #[arg(long, value_name = "MIB")]
    pub max_body_mib: Option<usize>,
    /// Each token's requests per second in this replica (429 past it,
    /// with Retry-After); 0: no limit. Default 200, bursts of twice that.
    #[arg(long, value_name = "PER_SECOND")]
    pub rate_limit: Option<f64>,
    /// Stop a request that runs longer than this (504); the live event
    /// stream excepted. Default 120.
    #[arg(long, value_name = "SECONDS")]
    pub request_timeout: Option<u64>,
    /// A balancer in front of the service (an address or a CIDR block),
    /// whose X-Forwarded-For names the client in the audit log; repeatable.
    #[arg(long, value_name = "CIDR")]
    pub trusted_proxy: Vec<String>,
}

/// The shared operation flags a command does not take, as Pulumi's
/// command of that name does not: hidden from its `--help`, and refused
/// with a message naming the command when given.
pub fn refused_flags(command: &str) -> &'static [&'static str] {
    match command {
        "preview" => &[
            "skip-pending-creates",
            "import-pending-creates",
            "preview-only",
            "clear-pending-creates",
            "skip-preview",
            "yes",
            "plan",
            "exclude-protected",
            "remove",
        ],
        "up" => &[
            "skip-pending-creates",
            "import-pending-creates",
            "preview-only",
            "clear-pending-creates",
            "save-plan",
            "refresh-only",
            "import-file",
            "exclude-protected",
            "remove",
        ],
        "refresh" => &[
            "replace",
            "target-replace",
            "refresh",
            "import-file",
            "save-plan",
            "plan",
            "refresh-only",
            "policy-pack",
            "policy-pack-config",
            "exclude-protected",
            "config",
            "config-path",
            "remove",
        ],
        "destroy" => &[
            "skip-pending-creates",
            "import-pending-creates",
            "replace",
            "target-replace",
            "clear-pending-creates",
            "import-file",
            "save-plan",
            "plan",
            "refresh-only",
            "policy-pack",
            "policy-pack-config",
            "config",
            "config-path",
        ],
        _ => &[],
    }
}

/// Hides from `command`'s `--help` the shared flags it refuses.
fn hide_refused(command: &'static str) -> impl FnMut(clap::Arg) -> clap::Arg {
    move |arg| {
        let refused = arg
            .get_long()
            .is_some_and(|long| refused_flags(command).contains(&long));
        if refused {
            arg.hide(true)
        } else {
            arg
        }
    }
}

/// Flags shared by preview, up, refresh and destroy (Pulumi's names);
/// each command's `--help` lists only those it takes (`refused_flags`).
#[derive(Debug, Args, Clone, Default)]
pub struct OperationArgs {
    #[command(flatten)]
    pub stack: StackArg,
    /// Proceed without asking for confirmation.
    #[arg(short, long)]
    pub yes: bool,
    /// Do not preview first.
    #[arg(short = 'f', long)]
    pub skip_preview: bool,
    /// How many resource operations may run at once.
    #[arg(short, long, value_name = "N")]
    pub parallel: Option<usize>,
    /// Only these resources may change (URNs or patterns: `*` within a
    /// URN part, `**` across parts; repeatable).
    #[arg(short, long = "target", value_name = "URN")]
    pub target: Vec<String>,
    /// Also target the resources that depend on a target.
    #[arg(long)]
    pub target_dependents: bool,
    /// These resources may not change (URNs or patterns; repeatable).
    #[arg(long = "exclude", value_name = "URN")]
    pub exclude: Vec<String>,
    /// Also exclude the resources that depend on an excluded one.
    #[arg(long)]
    pub exclude_dependents: bool,
    /// Replace these resources (URNs or patterns; repeatable).
    #[arg(long = "replace", value_name = "URN")]
    pub replace: Vec<String>,
    /// Replace these resources and target them (`--target` + `--replace`).
    #[arg(long = "target-replace", value_name = "URN")]
    pub target_replace: Vec<String>,
    /// Refresh the state before the operation (also `options.refresh:
    /// always` in Pulumi.yaml).
    #[arg(short, long)]
    pub refresh: bool,
    /// Fail (exit code 255) if the operation changes, or would change,
    /// anything.
    #[arg(long)]
    pub expect_no_changes: bool,
    /// Only preview: show what would change and change nothing.
    #[arg(long)]
    pub preview_only: bool,
    /// Show detailed diffs.
    #[arg(long)]
    pub diff: bool,
    /// Print machine-readable JSON instead of the display.
    #[arg(short, long)]
    pub json: bool,
    /// A message for the update history.
    #[arg(short, long)]
    pub message: Option<String>,
    /// Keep going with independent work after a step fails.
    #[arg(long)]
    pub continue_on_error: bool,
    /// Show secret values in plaintext.
    #[arg(long)]
    pub show_secrets: bool,
    /// Show unchanged resources' steps too.
    #[arg(long)]
    pub show_sames: bool,
    /// Show the read steps of resources the program reads rather than
    /// manages.
    #[arg(long)]
    pub show_reads: bool,
    /// Show a replacement's create-replacement and delete-original steps
    /// instead of its one replace line.
    #[arg(long)]
    pub show_replacement_steps: bool,
    /// Show the stack's configuration before the operation (secrets as
    /// `[secret]` unless --show-secrets).
    #[arg(long)]
    pub show_config: bool,
    /// Show output values in full: Converge always does, so this changes
    /// nothing (accepted as Pulumi's).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub show_full_output: Option<bool>,
    /// Forget interrupted creates left in the state.
    #[arg(long)]
    pub clear_pending_creates: bool,
    /// Leave interrupted creates pending, as they are (Converge never asks
    /// about them, so this is what a refresh does without the flags).
    #[arg(long, conflicts_with = "clear_pending_creates")]
    pub skip_pending_creates: bool,
    /// Adopt interrupted creates whose objects exist: `URN,ID` pairs
    /// (comma-separated, repeatable), each pending create becoming a
    /// resource with that ID, which the refresh then reads.
    #[arg(
        long,
        value_name = "URN,ID",
        value_delimiter = ',',
        conflicts_with = "clear_pending_creates"
    )]
    pub import_pending_creates: Vec<String>,
    /// Save the plan to this file, for `converge up --plan`.
    #[arg(long, value_name = "FILE")]
    pub save_plan: Option<std::path::PathBuf>,
    /// Apply the plan saved in this file, and nothing else.
    #[arg(long, value_name = "FILE")]
    pub plan: Option<std::path::PathBuf>,
    /// Preview a refresh only: what reading every resource would change in
    /// the state.
    #[arg(long)]
    pub refresh_only: bool,
    /// Write a bulk import file (`converge import --file`) for
    /// the resources the program would create, IDs left empty.
    #[arg(long, value_name = "FILE")]
    pub import_file: Option<PathBuf>,
    /// After Ctrl-C or SIGTERM, how long to wait for the steps under way
    /// (a Go duration: `30s`, `5m`) before they are left as pending
    /// operations; a second Ctrl-C stops waiting at once.
    #[arg(long, value_name = "DURATION", env = "CONVERGE_CANCEL_TIMEOUT", value_parser = parse_duration)]
    pub cancel_timeout: Option<std::time::Duration>,
    /// Write the engine's events (Pulumi's `EngineEvent` JSON) to this
    /// file, one a line, or stream them to the `pulumirpc.Events` server
    /// at `tcp://HOST:PORT`.
    #[arg(long, value_name = "FILE")]
    pub event_log: Option<String>,
    /// Run the program that the language runtime at this address serves
    /// (an Automation API inline program) instead of the project's.
    #[arg(long, value_name = "HOST:PORT")]
    pub client: Option<String>,
    /// How the operation was started, recorded in the update's history
    /// as `exec.kind`.
    #[arg(long, value_name = "KIND", value_parser = ["cli", "auto.local", "auto.inline"])]
    pub exec_kind: Option<String>,
    /// The program that started the operation (the Automation API's user
    /// agent), recorded in the update's history as `exec.agent`.
    #[arg(long, value_name = "AGENT")]
    pub exec_agent: Option<String>,
    /// Destroy every resource except the protected ones and what they need
    /// (their parents, dependencies and providers).
    #[arg(long)]
    pub exclude_protected: bool,
    /// After a successful destroy, remove the stack and its configuration
    /// file, as `stack rm` does.
    #[arg(long)]
    pub remove: bool,
    /// Whether to run the program: preview and up always do; refresh and
    /// destroy work from the stack's state (`true` is not supported yet).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub run_program: Option<bool>,
    /// Do not show the stack's outputs.
    #[arg(long)]
    pub suppress_outputs: bool,
    /// Do not show progress while the operation runs: no spinners in a
    /// terminal, only a line as each step finishes.
    #[arg(long)]
    pub suppress_progress: bool,
    /// Run the policy pack in this directory (a
    /// `PulumiPolicy.yaml` and its program); repeatable.
    #[arg(long = "policy-pack", value_name = "PACK")]
    pub policy_pack: Vec<String>,
    /// A policy pack's configuration (Pulumi's JSON shape:
    /// policy name → level, or an object of `enforcementLevel` and
    /// settings); once per `--policy-pack`, in the same order.
    #[arg(long = "policy-pack-config", value_name = "FILE")]
    pub policy_pack_config: Vec<String>,
    /// Use this stack configuration file instead of `Pulumi.<stack>.yaml`.
    #[arg(long, value_name = "FILE")]
    pub config_file: Option<PathBuf>,
    /// Set this configuration value (`KEY=VALUE`, repeatable) in the
    /// stack's configuration file before the operation, as `config set`
    /// does; the operation then runs with it.
    #[arg(short = 'c', long = "config", value_name = "KEY=VALUE")]
    pub config: Vec<String>,
    /// The keys of --config are property paths (`a.b[0]`), as with
    /// `config set --path`.
    #[arg(long)]
    pub config_path: bool,
}

/// `converge import` (Pulumi's flags).
#[derive(Debug, Args, Clone, Default)]
pub struct ImportArgs {
    /// The resource type, e.g. `random:index/randomString:RandomString`.
    #[arg(value_name = "TYPE")]
    pub type_token: Option<String>,
    /// The resource's name in the stack.
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
    /// The ID of the object to import.
    #[arg(value_name = "ID")]
    pub id: Option<String>,
    #[command(flatten)]
    pub stack: StackArg,
    /// Import the resources of this bulk import JSON file (`nameTable`,
    /// `resources`).
    #[arg(short, long, value_name = "FILE", conflicts_with_all = ["type_token", "parent", "provider", "properties"])]
    pub file: Option<std::path::PathBuf>,
    /// The parent: `URN`, or `NAME=URN` (NAME names it in --out's code).
    #[arg(long, value_name = "URN")]
    pub parent: Option<String>,
    /// The provider: `URN::ID`, `URN`, or `NAME=URN`.
    #[arg(long, value_name = "URN")]
    pub provider: Option<String>,
    /// Which properties read from the object become inputs (default:
    /// every input the provider reads; comma-separated, repeatable).
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub properties: Vec<String>,
    /// Protect the imported resources (`--protect=false` does not).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub protect: bool,
    /// Write program text for the imported resources to this file, in the
    /// project's language.
    #[arg(short, long, value_name = "FILE")]
    pub out: Option<std::path::PathBuf>,
    /// Generate program text for the imported resources (`--out`);
    /// `--generate-code=false` writes none.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub generate_code: bool,
    /// Only preview: show what would be imported and change nothing.
    #[arg(long)]
    pub preview_only: bool,
    /// Proceed without asking for confirmation.
    #[arg(short, long)]
    pub yes: bool,
    /// Do not preview first.
    #[arg(long)]
    pub skip_preview: bool,
    /// How many resource operations may run at once.
    #[arg(short, long, value_name = "N")]
    pub parallel: Option<usize>,
    /// Show detailed diffs.
    #[arg(long)]
    pub diff: bool,
    /// Print machine-readable JSON instead of the display.
    #[arg(short, long)]
    pub json: bool,
    /// A message for the update history.
    #[arg(short, long)]
    pub message: Option<String>,
    /// Show secret values in plaintext.
    #[arg(long)]
    pub show_secrets: bool,
    /// After Ctrl-C or SIGTERM, how long to wait for the steps under way
    /// (a Go duration: `30s`, `5m`) before they are left as pending
    /// operations; a second Ctrl-C stops waiting at once.
    #[arg(long, value_name = "DURATION", env = "CONVERGE_CANCEL_TIMEOUT", value_parser = parse_duration)]
    pub cancel_timeout: Option<std::time::Duration>,
    /// Use this stack configuration file instead of `Pulumi.<stack>.yaml`.
    #[arg(long, value_name = "FILE")]
    pub config_file: Option<PathBuf>,
    /// Do not show the stack's outputs (an import shows none; accepted as
    /// the Node.js Automation API passes it).
    #[arg(long)]
    pub suppress_outputs: bool,
    /// Do not show progress while the import runs: no spinners in a
    /// terminal, only a line as each step finishes.
    #[arg(long)]
    pub suppress_progress: bool,
}

#[derive(Debug, Subcommand)]
pub enum StateCommand {
    /// Forget resources: delete them from the stack's state, leaving their
    /// cloud objects as they are.
    #[command(alias = "remove")]
    Delete {
        /// Exact URNs of the resources to forget.
        #[arg(
            value_name = "URN",
            required_unless_present = "all",
            conflicts_with = "all"
        )]
        urns: Vec<String>,
        #[command(flatten)]
        stack: StackArg,
        /// Forget every resource of the stack.
        #[arg(long)]
        all: bool,
        /// Forget protected resources too.
        #[arg(long)]
        force: bool,
        /// Forget the resources that depend on these too.
        #[arg(long)]
        target_dependents: bool,
        /// Skip the confirmation prompt.
        #[arg(short, long)]
        yes: bool,
    },
    /// Protect resources: an update or destroy will not delete them.
    Protect(ProtectArgs),
    /// Clear resources' protection.
    Unprotect(ProtectArgs),
    /// Taint resources: the next update replaces them.
    Taint(TaintArgs),
    /// Clear resources' taint.
    Untaint(TaintArgs),
    /// Rename a resource in the stack's state, rewriting every reference to it.
    Rename {
        /// Exact URN of the resource.
        #[arg(value_name = "URN")]
        urn: String,
        /// Its new name.
        #[arg(value_name = "NEW_NAME")]
        new_name: String,
        #[command(flatten)]
        stack: StackArg,
        /// Skip the confirmation prompt (asked only at a terminal).
        #[arg(short, long)]
        yes: bool,
    },
    /// Move resources, with their children, from one stack to another (the
    /// providers they use are copied).
    Move(MoveArgs),
    /// Repair a state that fails integrity verification: put resources in
    /// order and drop references to resources it does not hold.
    Repair {
        #[command(flatten)]
        stack: StackArg,
        /// Skip the confirmation prompt.
        #[arg(short, long)]
        yes: bool,
    },
}

/// `state move`.
#[derive(Debug, Args, Clone)]
pub struct MoveArgs {
    /// Exact URNs of the resources to move (in the source stack).
    #[arg(value_name = "URN", required = true)]
    pub urns: Vec<String>,
    /// The stack to move from (`stack`, `project/stack` or
    /// `org/project/stack`; default: the current stack).
    #[arg(long, value_name = "STACK")]
    pub source: Option<String>,
    /// The stack to move to (default: the current stack).
    #[arg(long, value_name = "STACK")]
    pub dest: Option<String>,
    /// Move the parents of the resources too.
    #[arg(long)]
    pub include_parents: bool,
    /// Skip the confirmation prompt.
    #[arg(short, long)]
    pub yes: bool,
}

/// `state taint` and `state untaint`.
#[derive(Debug, Args, Clone)]
pub struct TaintArgs {
    /// Exact URNs of the resources.
    #[arg(value_name = "URN", required = true)]
    pub urns: Vec<String>,
    #[command(flatten)]
    pub stack: StackArg,
    /// Skip the confirmation prompt (asked only at a terminal).
    #[arg(short, long)]
    pub yes: bool,
}

/// `state protect` and `state unprotect`.
#[derive(Debug, Args, Clone)]
pub struct ProtectArgs {
    /// Exact URNs of the resources.
    #[arg(
        value_name = "URN",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    pub urns: Vec<String>,
    #[command(flatten)]
    pub stack: StackArg,
    /// Every resource of the stack.
    #[arg(long)]
    pub all: bool,
    /// Skip the confirmation prompt (asked only at a terminal).
    #[arg(short, long)]
    pub yes: bool,
}

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

#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// The stack to operate on (`stack`, `project/stack` or
    /// `org/project/stack`); also accepted after the subcommand.
    #[arg(short = 's', long = "stack", value_name = "STACK", global = true)]
    pub stack: Option<String>,
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

/// A Go duration (`30s`, `1m30s`, `500ms`), as Pulumi's flags take them.
fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    converge_model::go_duration_seconds(text)
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(std::time::Duration::from_secs_f64)
        .ok_or_else(|| format!("{text:?} is not a duration (write it as 30s, 5m or 1m30s)"))
}
