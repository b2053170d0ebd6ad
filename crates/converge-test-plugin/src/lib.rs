//! `pulumi-resource-convergetest`: a real resource provider plugin for the
//! plugin host's tests. It speaks `pulumirpc.ResourceProvider` over gRPC
//! exactly as Pulumi's plugins do: started with the engine address as its
//! first argument, it listens on 127.0.0.1, prints its port on the first
//! line of stdout, and serves until killed.
//!
//! **Package** `convergetest`, version from `CONVERGE_TEST_PLUGIN_VERSION`,
//! else from the directory it is started from
//! (`resource-convergetest-v1.2.3/pulumi-resource-convergetest`), else
//! none (an unversioned development build).
//!
//! **Resource** [`THING`] (`convergetest:index:Thing`): inputs `value`
//! (string, required), `size` (default `"small"`; changing it replaces; compared without
//! regard to case, so a cloud answering `"SMALL"` is normalisation),
//! `fail` (`"create"`: Create fails; `"create-until:<path>"`: Create fails
//! while no file is at `<path>`; `"init"`: Create makes the object but
//! reports `ErrorResourceInitFailed`), `nest` (a number of levels).
//! Outputs: the inputs plus `length` (of `value`; unknown in previews),
//! `pluginVersion`, and with `nest`, `nested`: objects nested that many
//! levels deep (`{"level": {"level": ... "bottom"}}`), as a provider's
//! answer may be. The plugin's threads have the stack to decode and
//! encode values as deep as gRPC carries.
//!
//! **Parameterize**: the process becomes package `<name>` (a recorded
//! value: its bytes are the parameter, as text; arguments: `<name>
//! <parameter…>`), serving `<name>:index:Thing` instead, whose outputs
//! also carry `package` and `parameter`.
//!
//! **Function** [`COUNT`] (`convergetest:index:count`): `{count, version}`,
//! and its argument `tag` given back as it came.
//!
//! **Remote component** [`COMPONENT`] (`convergetest:index:Component`,
//! `Construct`): registers itself and a child [`THING`] through the
//! engine's monitor, as SDK-built component providers do; **method**
//! [`DESCRIBE`] (`Call`). See [`component`].
//!
//! **The cloud** is a JSON file ([`Cloud`]): config `cloudFile`, else env
//! [`CLOUD_FILE_ENV`]. Objects by ID, plus a log of the calls that matter
//! (`configure`, `create <id>`, `update <id>`, `delete <id>`, `cancel`),
//! and the configuration as it arrived (`checkConfig <json>`,
//! `configureArgs <json>`, secrets redacted: see [`config_echo`]).
//!
//! **Misbehaviour** for tests, env [`MODE_ENV`]: `exit` (exit 3 at once,
//! after a stderr line), `garbage` (print a non-port line, then hang),
//! `silent` (print nothing, hang), `mute` (print a port and accept
//! connections on it, but never answer a call). Hangs end by themselves
//! after 60 s.
//!
//! **Slowness**, as a real cloud's: env [`DELAY_ENV`] (milliseconds)
//! makes every non-preview Create, Update, Delete and Read take that long.
//! A Create makes its object first and then waits, as a cloud object is
//! provisioned; `Cancel` ends the wait, a Create then answering
//! `ErrorResourceInitFailed` with the object's ID (the object exists) and
//! the others failing before they change anything. With [`HANG_ENV`] set,
//! those calls never answer and ignore `Cancel` (a Create still makes its
//! object first).
//!
//! **Processes**: with [`PIDS_ENV`] naming a directory, each process
//! writes an empty file named by its pid there when it starts, so a test
//! can check that none outlives the command that started it.
//!
//! A configured process refuses a second `Configure`, as a plugin holding
//! one configuration may.

pub mod cloud;
pub mod component;
pub mod config_echo;
pub mod provider;

pub use cloud::Cloud;

/// The package name.
pub const PACKAGE: &str = "convergetest";
/// The resource type.
pub const THING: &str = "convergetest:index:Thing";
/// The function.
pub const COUNT: &str = "convergetest:index:count";
/// The remote component type.
pub const COMPONENT: &str = "convergetest:index:Component";
/// The component's method.
pub const DESCRIBE: &str = "convergetest:index:Component/describe";
/// Env: the plugin's version.
pub const VERSION_ENV: &str = "CONVERGE_TEST_PLUGIN_VERSION";
/// Env: the cloud file, when the config does not name one.
pub const CLOUD_FILE_ENV: &str = "CONVERGE_TEST_CLOUD_FILE";
/// Env: `exit`, `garbage`, `silent` or `mute` to misbehave at start.
pub const MODE_ENV: &str = "CONVERGE_TEST_PLUGIN_MODE";
/// Env: how many milliseconds each resource operation takes.
pub const DELAY_ENV: &str = "CONVERGE_TEST_PLUGIN_DELAY_MS";
/// Env: set (to anything) to make resource operations never answer.
pub const HANG_ENV: &str = "CONVERGE_TEST_PLUGIN_HANG";
/// Env: a directory where each process records its pid.
pub const PIDS_ENV: &str = "CONVERGE_TEST_PLUGIN_PIDS";

/// The version this process reports: [`VERSION_ENV`], else the
/// `resource-convergetest-v<version>` directory of `argv0` (the path it
/// was started as, so a symlink counts where it is, not where it points),
/// else of the real executable; else `""` (unversioned).
pub fn reported_version(argv0: Option<&str>) -> String {
    if let Ok(v) = std::env::var(VERSION_ENV) {
        return v;
    }
    let prefix = format!("resource-{PACKAGE}-v");
    let from_dir = |path: &std::path::Path| {
        let dir = path.parent()?.file_name()?.to_str()?;
        dir.strip_prefix(&prefix).map(str::to_owned)
    };
    argv0
        .and_then(|a| from_dir(std::path::Path::new(a)))
        .or_else(|| std::env::current_exe().ok().and_then(|p| from_dir(&p)))
        .unwrap_or_default()
}
