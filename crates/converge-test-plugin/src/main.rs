//! `pulumi-resource-convergetest <engine-address>`: see the library docs.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use converge_proto::pulumirpc::resource_provider_server::ResourceProviderServer;
use converge_proto::MessageLimits;
use converge_test_plugin::provider::TestProvider;
use converge_test_plugin::{reported_version, MODE_ENV, PIDS_ENV};
use tonic::transport::server::TcpIncoming;

/// How long the misbehaving modes hang before giving up on their own.
const HANG: Duration = Duration::from_secs(60);

/// The stack of the runtime's threads: decoding, encoding and dropping a
/// message recurses once per level, and messages may nest
/// [`converge_proto::MAX_MESSAGE_DEPTH`] levels deep (as the `converge`
/// binary, whose work stack is the same).
const STACK_BYTES: usize = 256 << 20;

fn main() -> ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(STACK_BYTES)
        .build();
    match runtime {
        Ok(runtime) => runtime.block_on(serve()),
        Err(e) => {
            eprintln!("fatal: cannot start the async runtime: {e}");
            ExitCode::from(1)
        }
    }
}

async fn serve() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if let Some(dir) = std::env::var_os(PIDS_ENV) {
        let _ = std::fs::write(
            std::path::Path::new(&dir).join(std::process::id().to_string()),
            b"",
        );
    }
    match std::env::var(MODE_ENV).as_deref() {
        Ok("exit") => {
            eprintln!("convergetest: exiting at once, as asked ({MODE_ENV}=exit)");
            return ExitCode::from(3);
        }
        Ok("garbage") => {
            eprintln!("convergetest: printing garbage");
            println!("hello from convergetest, this is not a port");
            let _ = std::io::stdout().flush();
            tokio::time::sleep(HANG).await;
            return ExitCode::from(4);
        }
        Ok("silent") => {
            eprintln!("convergetest: saying nothing");
            tokio::time::sleep(HANG).await;
            return ExitCode::from(5);
        }
        Ok("mute") => return mute().await,
        _ => {}
    }
    // As Pulumi's Go SDK: the engine address is required.
    let Some(engine) = args.get(1).cloned() else {
        eprintln!("fatal: could not connect to host RPC; missing argument");
        return ExitCode::from(1);
    };
    let version = reported_version(args.first().map(String::as_str));
    let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("fatal: {e}");
            return ExitCode::from(1);
        }
    };
    let port = match listener.local_addr() {
        Ok(a) => a.port(),
        Err(e) => {
            eprintln!("fatal: {e}");
            return ExitCode::from(1);
        }
    };
    println!("{port}");
    let _ = std::io::stdout().flush();
    eprintln!("convergetest {version:?} serving on port {port} (engine {engine})");
    let provider = TestProvider::new(version, engine);
    let served = tonic::transport::Server::builder()
        .add_service(ResourceProviderServer::new(provider).with_message_limits())
        .serve_with_incoming(TcpIncoming::from(listener))
        .await;
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fatal: {e}");
            ExitCode::from(1)
        }
    }
}

/// `mute`: prints a port and accepts connections on it, but never answers
/// (nor reads) anything.
async fn mute() -> ExitCode {
    let Ok(listener) = tokio::net::TcpListener::bind("127.0.0.1:0").await else {
        return ExitCode::from(1);
    };
    let Ok(addr) = listener.local_addr() else {
        return ExitCode::from(1);
    };
    eprintln!("convergetest: listening on {addr} and answering nothing");
    println!("{}", addr.port());
    let _ = std::io::stdout().flush();
    let mut held = Vec::new();
    let deadline = tokio::time::sleep(HANG);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => held.push(stream),
                Err(_) => return ExitCode::from(1),
            },
            () = &mut deadline => return ExitCode::from(6),
        }
    }
}
