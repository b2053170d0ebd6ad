//! Terraform providers launched the go-plugin way: a real provider written
//! with PyPI's `tf` (handshake, AutoMTLS over a unix socket, Shutdown), and
//! fake executables for every refusal.

#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use converge_plugin::terraform::handshake::{HandshakeError, Network};
use converge_plugin::terraform::process::{LaunchError, LaunchOptions, ProviderProcess};
use converge_proto::plugin::grpc_controller_server::{GrpcController, GrpcControllerServer};
use converge_proto::plugin::Empty;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tf")
        .join(name)
}

/// A shell script in `dir`, executable.
fn script(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("terraform-provider-fake");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// The pid a fake wrote to `dir/pid` is no longer a live process (it was
/// killed and reaped: no zombie either).
fn assert_gone(dir: &Path) {
    let pid = std::fs::read_to_string(dir.join("pid")).unwrap();
    let proc = PathBuf::from(format!("/proc/{}", pid.trim()));
    assert!(!proc.exists(), "process {} is still there", pid.trim());
}

#[tokio::test]
async fn a_real_tf_provider_hands_shakes_over_mtls_and_shuts_down() {
    let Some(python) = std::env::var_os("CONVERGE_TEST_TF_PYTHON") else {
        eprintln!("skipped: CONVERGE_TEST_TF_PYTHON is not set (scripts/test sets it)");
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let options = LaunchOptions {
        env: vec![
            ("CONVERGE_TEST_TF_PYTHON".into(), python),
            // tf caches its server key under ~/.cache.
            ("HOME".into(), home.path().into()),
        ],
        ..LaunchOptions::default()
    };
    let provider = ProviderProcess::launch(&fixture("terraform-provider-hello"), &options)
        .await
        .unwrap();
    let handshake = provider.handshake();
    assert_eq!(handshake.protocol_version, 6);
    assert_eq!(handshake.network, Network::Unix);
    assert!(handshake.server_certificate.is_some(), "tf serves TLS");
    let pid = provider.pid().unwrap();

    let status = provider.shutdown(Duration::from_secs(60)).await.unwrap();
    assert!(status.success(), "it exited by itself: {status}");
    assert!(!Path::new(&format!("/proc/{pid}")).exists());
    assert_eq!(provider.shutdown(Duration::from_secs(1)).await, None);
}

#[tokio::test]
async fn garbage_instead_of_a_handshake_is_refused_and_the_process_killed() {
    let dir = tempfile::tempdir().unwrap();
    let exe = script(
        dir.path(),
        &format!(
            "echo $$ > {}/pid\necho oops >&2\necho 'Listening on port 1234'\nexec sleep 300",
            dir.path().display()
        ),
    );
    let err = ProviderProcess::launch(&exe, &LaunchOptions::default())
        .await
        .unwrap_err();
    match &err {
        LaunchError::Handshake {
            line,
            source,
            stderr,
            ..
        } => {
            assert_eq!(line, "Listening on port 1234");
            assert_eq!(source, &HandshakeError::FieldCount { found: 1 });
            assert_eq!(stderr, &vec!["oops".to_owned()]);
        }
        other => panic!("expected a handshake error, got {other:?}"),
    }
    assert!(err.to_string().contains("bad handshake line"), "{err}");
    assert_gone(dir.path());
}

#[tokio::test]
async fn an_early_exit_is_reported_with_its_status_and_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let exe = script(dir.path(), "echo 'missing credentials' >&2\nexit 3");
    let err = ProviderProcess::launch(&exe, &LaunchOptions::default())
        .await
        .unwrap_err();
    match &err {
        LaunchError::Exited { status, stderr, .. } => {
            assert!(status.contains('3'), "{status}");
            assert_eq!(stderr, &vec!["missing credentials".to_owned()]);
        }
        other => panic!("expected an early exit, got {other:?}"),
    }
}

#[tokio::test]
async fn a_provider_that_never_shakes_hands_times_out_and_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let exe = script(
        dir.path(),
        &format!("echo $$ > {}/pid\nexec sleep 300", dir.path().display()),
    );
    let options = LaunchOptions {
        handshake_timeout: Duration::from_millis(500),
        ..LaunchOptions::default()
    };
    let err = ProviderProcess::launch(&exe, &options).await.unwrap_err();
    assert!(matches!(err, LaunchError::Timeout { .. }), "{err:?}");
    assert_gone(dir.path());
}

#[tokio::test]
async fn the_go_plugin_environment_is_set_and_a_dead_address_is_a_connect_error() {
    let dir = tempfile::tempdir().unwrap();
    // Prints a well-formed handshake only if the environment is right; the
    // socket it names does not exist.
    let exe = script(
        dir.path(),
        &format!(
            r#"echo $$ > {dir}/pid
[ "$TF_PLUGIN_MAGIC_COOKIE" = d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2 ] || exit 10
[ "$PLUGIN_PROTOCOL_VERSIONS" = 5,6 ] || exit 11
case "$PLUGIN_CLIENT_CERT" in "-----BEGIN CERTIFICATE-----"*) ;; *) exit 12 ;; esac
echo "1|6|unix|{dir}/no.sock|grpc|"
exec sleep 300"#,
            dir = dir.path().display()
        ),
    );
    let err = ProviderProcess::launch(&exe, &LaunchOptions::default())
        .await
        .unwrap_err();
    match &err {
        LaunchError::Connect { address, .. } => assert!(address.ends_with("no.sock")),
        other => panic!("expected a connect error, got {other:?}"),
    }
    assert_gone(dir.path());
}

#[tokio::test]
async fn a_missing_executable_is_a_spawn_error() {
    let err = ProviderProcess::launch(
        Path::new("/nonexistent/terraform-provider-x"),
        &LaunchOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, LaunchError::Spawn { .. }), "{err:?}");
}

/// A `GRPCController` that records Shutdown and does nothing else: the
/// process that "serves" it (a shell script) never exits by itself.
struct StubbornController(std::sync::Arc<std::sync::atomic::AtomicBool>);

#[tonic::async_trait]
impl GrpcController for StubbornController {
    async fn shutdown(
        &self,
        _request: tonic::Request<Empty>,
    ) -> Result<tonic::Response<Empty>, tonic::Status> {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        Ok(tonic::Response::new(Empty {}))
    }
}

#[tokio::test]
async fn plaintext_over_tcp_and_a_provider_that_ignores_shutdown_is_killed() {
    use std::os::unix::process::ExitStatusExt;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(GrpcControllerServer::new(StubbornController(asked.clone())))
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    let dir = tempfile::tempdir().unwrap();
    // An empty CERT field: the provider serves plaintext.
    let exe = script(
        dir.path(),
        &format!(
            "echo $$ > {}/pid\necho '1|6|tcp|{address}|grpc|'\nexec sleep 300",
            dir.path().display()
        ),
    );
    let provider = ProviderProcess::launch(&exe, &LaunchOptions::default())
        .await
        .unwrap();
    assert_eq!(provider.handshake().network, Network::Tcp);
    assert_eq!(provider.handshake().server_certificate, None);

    let status = provider.shutdown(Duration::from_millis(200)).await.unwrap();
    assert!(
        asked.load(std::sync::atomic::Ordering::SeqCst),
        "Shutdown was sent"
    );
    assert_eq!(
        status.signal(),
        Some(9),
        "killed after the grace period: {status}"
    );
    assert_gone(dir.path());
}

#[tokio::test]
async fn a_server_certificate_other_than_the_printed_one_is_refused() {
    let Some(python) = std::env::var_os("CONVERGE_TEST_TF_PYTHON") else {
        eprintln!("skipped: CONVERGE_TEST_TF_PYTHON is not set (scripts/test sets it)");
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // The real provider, with the certificate in its handshake line swapped
    // for another one (ours, PEM body without padding) on its way to us.
    let exe = script(
        dir.path(),
        &format!(
            r#"echo $$ > {dir}/pid
other=$(printf '%s' "$PLUGIN_CLIENT_CERT" | grep -v CERTIFICATE | tr -d '\n=')
{hello} | {{ read -r line; echo "${{line%|*}}|$other"; cat; }}"#,
            dir = dir.path().display(),
            hello = fixture("terraform-provider-hello").display(),
        ),
    );
    let options = LaunchOptions {
        env: vec![
            ("CONVERGE_TEST_TF_PYTHON".into(), python),
            ("HOME".into(), home.path().into()),
        ],
        ..LaunchOptions::default()
    };
    let err = ProviderProcess::launch(&exe, &options).await.unwrap_err();
    match &err {
        LaunchError::Connect { message, .. } => {
            assert!(
                message.contains("not the one its handshake line carried"),
                "{message}"
            )
        }
        other => panic!("expected a TLS refusal, got {other:?}"),
    }
    assert_gone(dir.path());
}
