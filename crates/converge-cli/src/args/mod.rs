//! Command-line arguments, as the user types them. Validation and the
//! building of working objects happen in `context` and the commands.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

mod config;
pub mod pulumi_spelling;
mod stack;
mod state;

pub use config::*;
pub use stack::*;
pub use state::*;

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
    /// Emoji in the output: accepted as Pulumi's; Converge's output has
    /// none either way.
    #[arg(short = 'e', long, global = true)]
    pub emoji: bool,
    /// Show stacks' fully qualified names (`org/project/stack`) in
    /// `stack ls`.
    #[arg(short = 'Q', long, global = true)]
    pub fully_qualify_stack_names: bool,
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
    /// Pulumi's escape from its checkpoint checks: accepted, but
    /// Converge checks every state it reads or writes (a warning says so);
    /// `converge state repair` mends a state that fails.
    #[arg(long, global = true)]
    pub disable_integrity_checking: bool,
    /// Pulumi's Go profiles: accepted, but Converge writes none (a warning
    /// says so).
    #[arg(long, global = true, value_name = "FILE")]
    pub profiling: Option<String>,
    /// The Go memory profile rate of --profiling: accepted, no effect.
    #[arg(long, global = true, value_name = "RATE")]
    pub memprofilerate: Option<i64>,
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
        #[arg(conflicts_with_all = ["local", "cloud_url"])]
        url: Option<String>,
        /// Use the local backend in the home directory (`file://~`).
        #[arg(short = 'l', long, conflicts_with = "cloud_url")]
        local: bool,
        /// The backend URL, as a flag (Pulumi's spelling of the argument).
        #[arg(short = 'c', long, value_name = "URL")]
        cloud_url: Option<String>,
        /// The access token of a state service (default: PULUMI_ACCESS_TOKEN).
        #[arg(long, value_name = "TOKEN")]
        token: Option<String>,
    },
    /// Run the HTTP state service (stacks, checkpoints, leases, journals) and
    /// its web console at `/`.
    Serve(ServeArgs),
    /// Log out of the current backend, or of the one named (URL,
    /// --cloud-url or --local), or of all (--all).
    Logout {
        /// The backend URL to log out of (default: the current one).
        #[arg(conflicts_with_all = ["local", "cloud_url", "all"])]
        url: Option<String>,
        /// Log out of the local backend in the home directory (`file://~`).
        #[arg(short = 'l', long, conflicts_with_all = ["cloud_url", "all"])]
        local: bool,
        /// The backend URL to log out of, as a flag.
        #[arg(short = 'c', long, value_name = "URL", conflicts_with = "all")]
        cloud_url: Option<String>,
        /// Log out of every backend logged in to.
        #[arg(long)]
        all: bool,
    },
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
    #[command(alias = "pre", mut_args(hide_refused("preview")))]
    Preview(OperationArgs),
    /// Create or update the stack's resources.
    #[command(alias = "update", mut_args(hide_refused("up")))]
    Up(OperationArgs),
    /// Read every resource's current state into the stack.
    #[command(mut_args(hide_refused("refresh")))]
    Refresh(OperationArgs),
    /// Delete every resource of the stack.
    #[command(aliases = ["down", "dn"], mut_args(hide_refused("destroy")))]
    Destroy(OperationArgs),
    /// Adopt existing cloud objects into the stack: `TYPE NAME ID`, or
    /// `--file` with Pulumi's bulk import JSON.
    Import(ImportArgs),
    /// Cancel the update running on a stack: show who holds its lock, then
    /// interrupt it as Ctrl-C would if it runs on this host, else break it.
    Cancel {
        /// The stack (as `--stack`; Pulumi's `cancel [stack-name]`).
        #[arg(value_name = "STACK", conflicts_with = "stack")]
        name: Option<String>,
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
            "show-policy-remediations",
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
            "show-policy-remediations",
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
    #[arg(short = 'x', long = "exclude", value_name = "URN")]
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
    /// always` in Pulumi.yaml, which `--refresh=false` overrides).
    #[arg(short, long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub refresh: Option<bool>,
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
    /// Print JSON instead of the display, as Pulumi does: a preview's
    /// digest (`steps`, `diagnostics`, `changeSummary`); an update,
    /// refresh or destroy streams its engine events, one a line, after
    /// its preview's digest (PULUMI_ENABLE_STREAMING_JSON_PREVIEW streams
    /// a preview's too).
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
    /// Under each policy remediation, show the inputs it changed.
    #[arg(long)]
    pub show_policy_remediations: bool,
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
    /// Pulumi's link to the update on Pulumi Cloud: accepted; Converge's
    /// backends have no such page, so it prints none either way.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "false", value_parser = go_bool)]
    pub suppress_permalink: Option<bool>,
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
    /// Pulumi's link to the update on Pulumi Cloud: accepted; Converge
    /// prints none either way.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "false", value_parser = go_bool)]
    pub suppress_permalink: Option<bool>,
    /// Pulumi's converters (`--from terraform`): refused, since Converge
    /// runs none; write the bulk import JSON for --file instead.
    #[arg(long, value_name = "CONVERTER")]
    pub from: Option<String>,
}

/// A boolean as Pulumi's flags take one (Go's `strconv.ParseBool`).
fn go_bool(text: &str) -> Result<bool, String> {
    pulumi_spelling::parse_bool(text)
        .ok_or_else(|| format!("{text:?} is not a boolean (write true or false)"))
}

/// A Go duration (`30s`, `1m30s`, `500ms`), as Pulumi's flags take them.
fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    converge_model::go_duration_seconds(text)
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(std::time::Duration::from_secs_f64)
        .ok_or_else(|| format!("{text:?} is not a duration (write it as 30s, 5m or 1m30s)"))
}
