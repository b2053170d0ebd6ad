//! Pulumi's global logging and debugging flags (`-v N`, `--logtostderr`,
//! `--logflow`, `--tracing`, `--attach-debugger`): Converge's own logs
//! (the `tracing` events of its crates, plugins' output among them) go to
//! stderr at the level asked for.

use anyhow::{bail, Result};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::Layer as _;

use crate::args::DiagnosticArgs;

/// Sets up logging as `args` ask, before the command runs; an
/// `--attach-debugger` is refused, and a `--tracing` endpoint warned about.
pub fn apply(args: &DiagnosticArgs) -> Result<()> {
    if let Some(what) = &args.attach_debugger {
        bail!(
            "--attach-debugger {what}: Converge cannot start programs or plugins under a \
             debugger; run the program under your debugger yourself against `converge up \
             --client HOST:PORT` (the Automation API's inline programs do this), or drop the flag"
        );
    }
    if let Some(url) = &args.tracing {
        eprintln!(
            "warning: --tracing {url}: Converge does not emit Pulumi's traces, so nothing is \
             sent there; for Converge's own logs use -v N with --logtostderr"
        );
    }
    if args.disable_integrity_checking {
        eprintln!(
            "warning: --disable-integrity-checking: Converge checks every state it reads or \
             writes regardless, and refuses one that fails before anything changes; \
             `converge state repair` mends such a state"
        );
    }
    if let Some(file) = &args.profiling {
        eprintln!(
            "warning: --profiling {file}: Converge writes no Go profiles; for its own \
             timings use -v 4 with --logtostderr"
        );
    }
    if let Some(levels) = levels(args.verbose, args.logtostderr) {
        // A second subscriber cannot be set (only in tests, which run
        // in one process); logging then stays as it was.
        let _ = tracing_subscriber::registry()
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_filter(levels),
            )
            .try_init();
    }
    Ok(())
}

/// What `-v N` and `--logtostderr` log: Converge's crates at the level
/// for N, the libraries under them at warning level (at N ≥ 10, at the
/// same level); `None` when neither is given (or N is 0).
fn levels(verbose: Option<u8>, logtostderr: bool) -> Option<Targets> {
    let own = match verbose {
        None | Some(0) if !logtostderr => return None,
        None | Some(0) => LevelFilter::WARN,
        Some(1..=2) => LevelFilter::INFO,
        Some(3..=6) => LevelFilter::DEBUG,
        Some(_) => LevelFilter::TRACE,
    };
    let libraries = if verbose.is_some_and(|n| n >= 10) {
        own
    } else {
        LevelFilter::WARN
    };
    Some(
        Targets::new()
            .with_target("converge", own)
            .with_default(libraries),
    )
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::filter::LevelFilter;

    use super::levels;

    fn own_and_libraries(verbose: Option<u8>, logtostderr: bool) -> Option<(String, String)> {
        let t = levels(verbose, logtostderr)?;
        let at = |target: &str| {
            [
                LevelFilter::TRACE,
                LevelFilter::DEBUG,
                LevelFilter::INFO,
                LevelFilter::WARN,
            ]
            .into_iter()
            .find(|l| {
                l.into_level()
                    .is_some_and(|level| t.would_enable(target, &level))
            })
            .map_or("error".to_owned(), |l| l.to_string().to_lowercase())
        };
        Some((at("converge_plugin::host"), at("h2::proto")))
    }

    #[test]
    fn verbosity_maps_to_levels_of_convergess_own_logs() {
        assert_eq!(own_and_libraries(None, false), None);
        assert_eq!(own_and_libraries(Some(0), false), None);
        let pair = |a: &str, b: &str| Some((a.to_owned(), b.to_owned()));
        assert_eq!(own_and_libraries(None, true), pair("warn", "warn"));
        assert_eq!(own_and_libraries(Some(1), false), pair("info", "warn"));
        assert_eq!(own_and_libraries(Some(3), true), pair("debug", "warn"));
        assert_eq!(own_and_libraries(Some(9), false), pair("trace", "warn"));
        assert_eq!(own_and_libraries(Some(11), false), pair("trace", "trace"));
    }
}
