//! `converge`: the command-line tool.

#[cfg(feature = "mimalloc")]
mod allocator;
mod args;
mod atomic_write;
mod commands;
mod config_value;
mod context;
mod display;
#[cfg(test)]
mod docs;
mod event_log;
mod home;
mod input_file;
mod interrupts;
mod logging;
mod passphrase;
mod policy_packs;
mod program;
mod project;
mod project_config;
mod prompt;
mod providers;
mod pulumi_commands;
mod remote;
mod secrets;
mod service_policy;
mod stack_settings;
mod table;
mod unknown_keys;

use clap::{CommandFactory, Parser};

use crate::args::{Cli, Command, StackArg};
use crate::commands::deploy::Operation;
use crate::context::Context;
use crate::interrupts::{Abandoned, Interrupts, Received};

/// The stack of the thread that runs a command, and of the runtime's
/// blocking threads. A state value may nest
/// [`converge_state::json_limits::MAX_JSON_DEPTH`] (10,000) levels deep, as
/// in Pulumi, and reading, writing, comparing, showing and freeing one
/// recurses once per level: about 6 KB a level in a debug build (an
/// update at that depth needs 64 MB there), far less in a release build.
/// Only the pages a command touches are ever committed.
const WORK_STACK_BYTES: usize = 256 << 20;

fn main() {
    // `converge stack export | head` ends quietly, as Unix tools do;
    // operations catch SIGPIPE while they run (`commands::deploy`).
    #[cfg(unix)]
    sigpipe::reset();
    #[cfg(feature = "mimalloc")]
    allocator::configure();
    let argv =
        args::pulumi_spelling::normalize(std::env::args_os().collect(), &Cli::command(), |name| {
            std::env::var(name).ok()
        });
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(e) => usage_error(e),
    };
    let worker = std::thread::Builder::new()
        .name("converge".into())
        .stack_size(WORK_STACK_BYTES)
        .spawn(move || run_command(cli));
    match worker {
        // A panic was reported by the hook; 101 is Rust's code for it.
        Ok(worker) => exit(worker.join().unwrap_or(101)),
        Err(e) => {
            eprintln!("error: cannot start a thread to run the command: {e}");
            exit(1);
        }
    }
}

/// Reports a command line clap refused, and exits with clap's code (2 for
/// a usage error). A command of Pulumi's that Converge lacks (`converge
/// logs`) is named as such, with where to look instead.
fn usage_error(e: clap::Error) -> ! {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() == ErrorKind::InvalidSubcommand {
        if let Some(ContextValue::String(name)) = e.get(ContextKind::InvalidSubcommand) {
            let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
            if let Some(message) = pulumi_commands::command_path(&args, name, &Cli::command())
                .and_then(|path| pulumi_commands::absent(&path))
            {
                eprintln!("error: {message}");
                exit(2);
            }
        }
    }
    e.exit()
}

/// The exit code of a command that failed, as Pulumi's (`os.Exit(-1)`).
const FAILED: i32 = 255;

/// Runs the command on the async runtime; the process's exit code.
fn run_command(cli: Cli) -> i32 {
    // One thread: a multi-threaded runtime made a 10,000-resource `up`
    // slower (1.6 s to 2.5 s), since the journal's writer woke for smaller
    // batches; PBKDF2 runs on a thread of its own.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_stack_size(WORK_STACK_BYTES)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return 1;
        }
    };
    // Child process groups (plugins, programs) are ended on every way out,
    // a panic that unwinds through here included.
    let _children = EndChildren;
    let interrupts = Interrupts::new();
    let outcome = runtime.block_on(async {
        if let Err(e) = interrupts.listen() {
            eprintln!("warning: Ctrl-C cannot be caught ({e}): it ends Converge at once");
        }
        tokio::select! {
            result = run(cli, interrupts.clone()) => result,
            () = interrupts.abandoned() => {
                // The command was dropped where it stood: a stack lease it
                // held is being released by a task of its own.
                converge_backend::settle_dropped_locks(std::time::Duration::from_secs(3)).await;
                Err(Abandoned(interrupts.first().unwrap_or(Received::Interrupt)).into())
            }
        }
    });
    let code = match outcome {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {}{}", failure_kind(&e), error_text(&e));
            match interrupts.first() {
                Some(signal) => signal.exit_code(),
                // Pulumi's code for a command that fails (its `-1`), which
                // CI scripts and `--expect-no-changes` checks test.
                None => FAILED,
            }
        }
    };
    // The command is done: its tasks are dropped now (a child process
    // held by one is killed), but the blocking threads that free an
    // operation's bookkeeping and replaced state (`Deployment::retire`)
    // are not waited for, nor is memory handed back one allocation at a
    // time: the process ends, and the kernel reclaims it all at once.
    runtime.shutdown_background();
    code
}

/// Ends every child process group still running when dropped.
struct EndChildren;

impl Drop for EndChildren {
    fn drop(&mut self) {
        converge_plugin::child::end_all_groups();
    }
}

/// Ends the process with `code`, stdout and stderr flushed, and no child
/// process group left running.
fn exit(code: i32) -> ! {
    converge_plugin::child::end_all_groups();
    #[cfg(feature = "mimalloc")]
    allocator::exit(code);
    #[cfg(not(feature = "mimalloc"))]
    {
        flush_output();
        std::process::exit(code)
    }
}

/// Writes out what stdout and stderr still buffer.
fn flush_output() {
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
}

/// The error and its causes, each once: `a: b: c`. Converge's errors
/// say what their source says in their own message and also return it as
/// their `source()` (so callers can find a provider's or the backend's
/// error in the chain); a cause whose text the message already holds is
/// not repeated.
fn error_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = cause.to_string();
        if text.is_empty() {
            text = part;
        } else if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
    }
    text
}

/// What failed, in words a user can act on, before the error itself: the
/// stack's lease, the state backend's storage (with the operating system's
/// cause and what to do), or a provider.
fn failure_kind(e: &anyhow::Error) -> String {
    use converge_backend::BackendError;
    use converge_engine::{EngineError, StackStateError};
    for cause in e.chain() {
        let backend = cause
            .downcast_ref::<BackendError>()
            .or_else(|| {
                cause
                    .downcast_ref::<std::sync::Arc<BackendError>>()
                    .map(AsRef::as_ref)
            })
            .or_else(|| match cause.downcast_ref::<StackStateError>() {
                Some(StackStateError::Backend(b)) => Some(b),
                _ => None,
            });
        if let Some(b) = backend {
            if b.is_lease_lost() {
                return "the stack's lease was lost (broken by `converge cancel`, or expired), \
                        so this process could record no more: "
                    .to_owned();
            }
            if let Some(failure) = b.storage_failure() {
                return format!("the state backend's storage failed ({failure}): ");
            }
        }
        if let Some(
            EngineError::Step { .. } | EngineError::Construct { .. } | EngineError::Provider { .. },
        ) = cause.downcast_ref::<EngineError>()
        {
            return "a provider failed: ".to_owned();
        }
    }
    String::new()
}

async fn run(cli: Cli, interrupts: Interrupts) -> anyhow::Result<()> {
    logging::apply(&cli.global.diagnostics)?;
    let ctx = Context::new(&cli.global, interrupts)?;
    match cli.command {
        Command::Login {
            url,
            local,
            cloud_url,
            token,
        } => commands::login::login(&ctx, url.or(cloud_url), local, token).await,
        Command::Serve(args) => commands::serve::run(&ctx, args).await,
        Command::Logout {
            url,
            local,
            cloud_url,
            all,
        } => {
            let which = if all {
                commands::login::LogoutOf::All
            } else if local {
                commands::login::LogoutOf::Url(crate::context::DEFAULT_BACKEND_URL.to_owned())
            } else {
                match url.or(cloud_url) {
                    Some(u) => commands::login::LogoutOf::Url(u),
                    None => commands::login::LogoutOf::Current,
                }
            };
            commands::login::logout(&ctx, which)
        }
        Command::Whoami { json } => {
            let verbose = cli.global.diagnostics.verbose.is_some();
            commands::login::whoami(&ctx, verbose, json).await
        }
        Command::Stack(args) => match args.command {
            Some(cmd) => commands::stack::run(&ctx, cmd).await,
            None => commands::stack::summary::run(&ctx, args.show).await,
        },
        Command::Config(args) => commands::config::run(&ctx, args).await,
        Command::State(cmd) => commands::state::run(&ctx, cmd).await,
        Command::Preview(args) => commands::deploy::run(&ctx, Operation::Preview, args).await,
        Command::Up(args) => commands::deploy::run(&ctx, Operation::Up, args).await,
        Command::Refresh(args) => commands::deploy::run(&ctx, Operation::Refresh, args).await,
        Command::Destroy(args) => commands::deploy::run(&ctx, Operation::Destroy, args).await,
        Command::Import(args) => commands::import::run(&ctx, args).await,
        Command::Cancel { name, stack, yes } => {
            let stack = StackArg {
                stack: name.or(stack.stack),
            };
            commands::cancel::run(&ctx, stack, yes).await
        }
        Command::Plugin(cmd) => commands::plugin::run(&ctx, cmd),
        Command::About(args) => commands::about::run(&ctx, args).await,
        Command::New(args) => commands::new::run(&ctx, args).await,
        Command::Install(args) => commands::install::run(&ctx, &args),
        Command::Policy(cmd) => commands::policy::run(&ctx, cmd).await,
        Command::Version => {
            commands::version::run();
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fmt;

    use super::{error_text, failure_kind};

    /// An error that says its source's message and returns it as its
    /// source, as the engine's step errors do.
    #[derive(Debug)]
    struct Step(std::io::Error);

    impl fmt::Display for Step {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "import of x failed: {}", self.0)
        }
    }

    impl std::error::Error for Step {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_storage_failure_names_the_operating_systems_cause() {
        use converge_backend::BackendError;
        // Linux's EACCES and ENOTDIR.
        for (code, cause) in [(13, "permission denied"), (20, "not a directory")] {
            let io = std::io::Error::from_raw_os_error(code);
            let e = anyhow::Error::new(BackendError::io("write", "/b/x.json", io))
                .context("cannot save the checkpoint");
            let kind = failure_kind(&e);
            assert!(
                kind.starts_with(&format!("the state backend's storage failed ({cause}; ")),
                "{kind}"
            );
            assert!(!kind.contains("disk error or full disk"), "{kind}");
        }
        assert_eq!(failure_kind(&anyhow::anyhow!("other")), "");
    }

    #[test]
    fn a_cause_the_message_already_holds_is_printed_once() {
        let step = Step(std::io::Error::other("x cannot be imported"));
        let e = anyhow::Error::new(step).context("preview");
        assert_eq!(
            error_text(&e),
            "preview: import of x failed: x cannot be imported"
        );
        let io = anyhow::Error::new(std::io::Error::other("disk full")).context("cannot write f");
        assert_eq!(error_text(&io), "cannot write f: disk full");
    }
}
