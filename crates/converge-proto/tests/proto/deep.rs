//! Values nested thousands of levels deep over a real connection: the
//! generated clients and servers decode messages nested up to
//! `MAX_MESSAGE_DEPTH` levels (Pulumi's 10,000), refuse deeper ones on
//! either side with an error naming the limit, and marshalling to
//! `PropertyValue` and back keeps them whole.
//!
//! Each level of a message is a level of recursion when it is decoded,
//! encoded, marshalled and dropped, so the tests run on a thread with the
//! stack the `converge` binary gives its work.

use converge_proto::pulumirpc::resource_provider_client::ResourceProviderClient;
use converge_proto::pulumirpc::resource_provider_server::{
    ResourceProvider, ResourceProviderServer,
};
use converge_proto::pulumirpc::{InvokeRequest, InvokeResponse};
use converge_proto::{
    marshal_value, unmarshal_value, MarshalOptions, MessageLimits, MAX_MESSAGE_DEPTH,
};
use prost_types::{value::Kind, Struct, Value};
use tonic::transport::server::TcpIncoming;
use tonic::{Code, Request, Response, Status};

/// The `converge` binary's work stack.
const STACK: usize = 256 << 20;

/// A provider whose `Invoke` answers `{"echo": <its arguments>}`: three
/// levels deeper than it was asked (the map entry, the `Value`, the
/// `Struct`).
struct Echo;

#[tonic::async_trait]
impl ResourceProvider for Echo {
    async fn invoke(
        &self,
        request: Request<InvokeRequest>,
    ) -> Result<Response<InvokeResponse>, Status> {
        let args = request.into_inner().args.unwrap_or_default();
        let echo = Value {
            kind: Some(Kind::StructValue(args)),
        };
        Ok(Response::new(InvokeResponse {
            r#return: Some(Struct {
                fields: [("echo".to_string(), echo)].into(),
            }),
            failures: Vec::new(),
        }))
    }
}

/// `{"a": {"a": ... true ...}}`, `levels` objects deep.
fn objects(levels: usize) -> Value {
    let mut v = Value {
        kind: Some(Kind::BoolValue(true)),
    };
    for _ in 0..levels {
        v = Value {
            kind: Some(Kind::StructValue(Struct {
                fields: [("a".to_string(), v)].into(),
            })),
        };
    }
    v
}

/// How many messages deep `InvokeRequest{args: {"v": objects(levels)}}`
/// nests: `args`, its entry, the `Value`, then three a level.
fn request_depth(levels: usize) -> usize {
    3 + 3 * levels
}

/// Runs `f` on a thread with [`STACK`] and a one-thread runtime, as the
/// `converge` binary runs its commands.
fn on_work_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(STACK)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

async fn invoke(levels: usize) -> Result<Value, Status> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(ResourceProviderServer::new(Echo).with_message_limits())
            .serve_with_incoming(TcpIncoming::from(listener)),
    );
    let mut client = ResourceProviderClient::connect(url)
        .await
        .unwrap()
        .with_message_limits();
    let args = Struct {
        fields: [("v".to_string(), objects(levels))].into(),
    };
    let answer = client
        .invoke(InvokeRequest {
            tok: "test:index:echo".into(),
            args: Some(args),
            ..InvokeRequest::default()
        })
        .await?
        .into_inner();
    let mut echo = answer.r#return.unwrap().fields;
    let Some(Kind::StructValue(mut args)) = echo.remove("echo").unwrap().kind else {
        panic!("echo is not an object");
    };
    Ok(args.fields.remove("v").unwrap())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_thousand_levels_cross_the_wire_and_marshal_both_ways() {
    on_work_stack(|| {
        let got = runtime().block_on(invoke(1_000)).unwrap();
        assert_eq!(got, objects(1_000));
        let opts = MarshalOptions::default();
        let value = unmarshal_value(&got, opts).unwrap().unwrap();
        assert_eq!(marshal_value(&value, opts).unwrap().unwrap(), got);
    });
}

#[test]
fn messages_nested_to_the_limit_are_decoded_and_deeper_ones_refused() {
    on_work_stack(|| {
        let rt = runtime();
        // The deepest request and answer the limit allows.
        let levels = (MAX_MESSAGE_DEPTH - 6) / 3;
        assert!(request_depth(levels) + 3 <= MAX_MESSAGE_DEPTH);
        assert_eq!(rt.block_on(invoke(levels)).unwrap(), objects(levels));

        // The request fits, the answer is three levels past the limit:
        // the client refuses it.
        let levels = (MAX_MESSAGE_DEPTH - 3) / 3;
        assert!(request_depth(levels) <= MAX_MESSAGE_DEPTH);
        assert!(request_depth(levels) + 3 > MAX_MESSAGE_DEPTH);
        let refused = rt.block_on(invoke(levels)).unwrap_err();
        assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");
        assert!(
            refused.message().contains("decodes at most 10000 levels"),
            "{refused:?}"
        );

        // The request is past the limit: the server refuses it.
        let refused = rt.block_on(invoke(levels + 1)).unwrap_err();
        assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");
        assert!(
            refused.message().contains("decodes at most 10000 levels"),
            "{refused:?}"
        );
    });
}
