//! The generated servers and clients over a real connection: methods an
//! implementation does not override answer Unimplemented, and
//! `MessageLimits` lifts tonic's 4 MiB decoding limit.

use converge_proto::pulumirpc::engine_client::EngineClient;
use converge_proto::pulumirpc::engine_server::{Engine, EngineServer};
use converge_proto::pulumirpc::LogRequest;
use converge_proto::{MessageLimits, MAX_MESSAGE_SIZE};
use tonic::transport::server::TcpIncoming;
use tonic::Code;

/// An engine that overrides nothing.
struct NothingImplemented;

impl Engine for NothingImplemented {}

/// Serves `server` on a random local port and returns its URL.
async fn serve(server: EngineServer<NothingImplemented>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(server)
            .serve_with_incoming(TcpIncoming::from(listener)),
    );
    url
}

async fn log(url: String, message: String) -> Code {
    let mut client = EngineClient::connect(url)
        .await
        .unwrap()
        .with_message_limits();
    let request = LogRequest {
        message,
        ..LogRequest::default()
    };
    client.log(request).await.unwrap_err().code()
}

#[tokio::test]
async fn stubs_answer_unimplemented_and_limits_are_raised() {
    let five_mib = "x".repeat(5 * 1024 * 1024);
    assert!(five_mib.len() < MAX_MESSAGE_SIZE);

    let raised = serve(EngineServer::new(NothingImplemented).with_message_limits()).await;
    assert_eq!(
        log(raised.clone(), "small".to_owned()).await,
        Code::Unimplemented
    );
    assert_eq!(log(raised, five_mib.clone()).await, Code::Unimplemented);

    // tonic's default refuses the same message before it reaches the stub.
    let default = serve(EngineServer::new(NothingImplemented)).await;
    assert_eq!(log(default, five_mib).await, Code::OutOfRange);
}
