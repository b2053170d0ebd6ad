//! [`TfClient`]: one client for both plugin protocols. The adapter speaks
//! tfplugin6's messages; a provider that negotiated protocol 5 gets each
//! request as its tfplugin5 counterpart and answers in kind, converted
//! back (`v5.rs`). The messages map one to one (renamed RPCs:
//! `GetSchema`, `PrepareProviderConfig`, `ValidateResourceTypeConfig`,
//! `ValidateDataSourceConfig`, `Configure`, `Stop`), so everything above
//! this module — values, rules, shapes — is the same for both.

use converge_proto::tfplugin5::provider_client::ProviderClient as Client5;
use converge_proto::tfplugin6::{self as tf, provider_client::ProviderClient as Client6};
use tonic::transport::Channel;
use tonic::{Response, Status};

mod v5;

/// The largest message a provider may send (schemas of big providers run
/// to tens of MB).
const MAX_MESSAGE: usize = 256 * 1024 * 1024;

/// A provider client at the protocol version the provider chose.
#[derive(Debug, Clone)]
pub enum TfClient {
    V5(Client5<Channel>),
    V6(Client6<Channel>),
}

/// One method per RPC the adapter makes: a tfplugin6 request in, a
/// tfplugin6 response out, whatever the provider speaks.
macro_rules! rpc {
    ($(#[$doc:meta])* $name:ident, $v5:ident, $module:ident) => {
        $(#[$doc])*
        pub async fn $name(
            &mut self,
            request: tf::$module::Request,
        ) -> Result<Response<tf::$module::Response>, Status> {
            match self {
                TfClient::V6(c) => c.$name(request).await,
                TfClient::V5(c) => c
                    .$v5(v5::request(request))
                    .await
                    .map(|r| Response::new(v5::response(r.into_inner()))),
            }
        }
    };
}

impl TfClient {
    /// A client of `channel` for protocol `version` (5 or 6; anything else
    /// is refused at the handshake, before a client is made).
    pub fn new(channel: Channel, version: u32) -> TfClient {
        match version {
            5 => TfClient::V5(Client5::new(channel).max_decoding_message_size(MAX_MESSAGE)),
            _ => TfClient::V6(Client6::new(channel).max_decoding_message_size(MAX_MESSAGE)),
        }
    }

    /// The protocol version spoken.
    pub fn version(&self) -> u32 {
        match self {
            TfClient::V5(_) => 5,
            TfClient::V6(_) => 6,
        }
    }

    rpc!(get_provider_schema, get_schema, get_provider_schema);
    rpc!(
        /// Protocol 5: `PrepareProviderConfig` (its prepared configuration
        /// is not used: Converge sends the configuration as the program
        /// wrote it, as Terraform Core does since 0.15).
        validate_provider_config,
        prepare_provider_config,
        validate_provider_config
    );
    rpc!(configure_provider, configure, configure_provider);
    rpc!(
        validate_resource_config,
        validate_resource_type_config,
        validate_resource_config
    );
    rpc!(
        validate_data_resource_config,
        validate_data_source_config,
        validate_data_resource_config
    );
    rpc!(
        upgrade_resource_state,
        upgrade_resource_state,
        upgrade_resource_state
    );
    rpc!(read_resource, read_resource, read_resource);
    rpc!(
        plan_resource_change,
        plan_resource_change,
        plan_resource_change
    );
    rpc!(
        apply_resource_change,
        apply_resource_change,
        apply_resource_change
    );
    rpc!(
        import_resource_state,
        import_resource_state,
        import_resource_state
    );
    rpc!(read_data_source, read_data_source, read_data_source);
    rpc!(stop_provider, stop, stop_provider);
}
