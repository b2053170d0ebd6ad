//! Message size limits: Pulumi's SDKs and engine accept gRPC messages of up to
//! 400 MiB (large program outputs and checkpoints travel in one message);
//! tonic's default decoding limit is 4 MiB.

use tonic::body::Body;
use tonic::codegen::{Body as HttpBody, Bytes, StdError};

use crate::pulumirpc::{
    analyzer_client::AnalyzerClient, analyzer_server::AnalyzerServer,
    callbacks_client::CallbacksClient, callbacks_server::CallbacksServer,
    engine_client::EngineClient, engine_server::EngineServer,
    language_runtime_client::LanguageRuntimeClient, language_runtime_server::LanguageRuntimeServer,
    package_resolver_client::PackageResolverClient, package_resolver_server::PackageResolverServer,
    resource_monitor_client::ResourceMonitorClient, resource_monitor_server::ResourceMonitorServer,
    resource_provider_client::ResourceProviderClient,
    resource_provider_server::ResourceProviderServer,
};

/// The largest message Converge sends or accepts: 400 MiB, as Pulumi.
pub const MAX_MESSAGE_SIZE: usize = 400 * 1024 * 1024;

/// Raises a generated client's or server's decoding and encoding limits to
/// [`MAX_MESSAGE_SIZE`].
///
/// ```no_run
/// use converge_proto::pulumirpc::resource_provider_client::ResourceProviderClient;
/// use converge_proto::MessageLimits;
///
/// # async fn connect() -> Result<(), tonic::transport::Error> {
/// let provider = ResourceProviderClient::connect("http://127.0.0.1:50051")
///     .await?
///     .with_message_limits();
/// # Ok(())
/// # }
/// ```
pub trait MessageLimits: Sized {
    /// Sets both limits to `limit` bytes.
    fn with_message_limit(self, limit: usize) -> Self;

    /// Sets both limits to [`MAX_MESSAGE_SIZE`].
    fn with_message_limits(self) -> Self {
        self.with_message_limit(MAX_MESSAGE_SIZE)
    }
}

macro_rules! server_limits {
    ($($server:ident),* $(,)?) => {$(
        impl<T> MessageLimits for $server<T> {
            fn with_message_limit(self, limit: usize) -> Self {
                self.max_decoding_message_size(limit)
                    .max_encoding_message_size(limit)
            }
        }
    )*};
}

macro_rules! client_limits {
    ($($client:ident),* $(,)?) => {$(
        impl<T> MessageLimits for $client<T>
        where
            T: tonic::client::GrpcService<Body>,
            T::Error: Into<StdError>,
            T::ResponseBody: HttpBody<Data = Bytes> + Send + 'static,
            <T::ResponseBody as HttpBody>::Error: Into<StdError> + Send,
        {
            fn with_message_limit(self, limit: usize) -> Self {
                self.max_decoding_message_size(limit)
                    .max_encoding_message_size(limit)
            }
        }
    )*};
}

server_limits!(
    AnalyzerServer,
    CallbacksServer,
    EngineServer,
    LanguageRuntimeServer,
    PackageResolverServer,
    ResourceMonitorServer,
    ResourceProviderServer,
);

client_limits!(
    AnalyzerClient,
    CallbacksClient,
    EngineClient,
    LanguageRuntimeClient,
    PackageResolverClient,
    ResourceMonitorClient,
    ResourceProviderClient,
);
