//! Clients of a program's `Callbacks` servers (transforms and hooks call
//! the program back through them), one per server address, connected on
//! first use and shared after.

use std::collections::HashMap;

use converge_proto::pulumirpc::callbacks_client::CallbacksClient;
use converge_proto::MessageLimits;
use tonic::transport::{Channel, Endpoint};

#[derive(Debug, Default)]
pub(crate) struct CallbackClients {
    clients: tokio::sync::Mutex<HashMap<String, CallbacksClient<Channel>>>,
}

impl CallbackClients {
    /// The client of the `Callbacks` server at `target` (`host:port`).
    pub(crate) async fn get(
        &self,
        target: &str,
    ) -> Result<CallbacksClient<Channel>, tonic::transport::Error> {
        let mut clients = self.clients.lock().await;
        if let Some(client) = clients.get(target) {
            return Ok(client.clone());
        }
        let channel = Endpoint::from_shared(format!("http://{target}"))?
            .tcp_nodelay(true)
            .connect()
            .await?;
        let client = CallbacksClient::new(channel).with_message_limits();
        clients.insert(target.to_owned(), client.clone());
        Ok(client)
    }
}
