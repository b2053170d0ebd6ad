//! State migrations over gRPC: the engine's [`StateMigrator`] calls the
//! program's migration callback through its `Callbacks` service with
//! Pulumi's `StateMigrationRequest` (the registration's URN and the old
//! states as checkpoint JSON) and reads its `StateMigrationResponse`.

use async_trait::async_trait;
use converge_model::Urn;
use converge_proto::pulumirpc::{
    CallbackInvokeRequest, StateMigrationRequest, StateMigrationResponse,
};
use prost::Message;

use crate::step_generator::migrations::{MigrationAnswer, MigrationCallback, StateMigrator};

/// Clients of the program's `Callbacks` servers, for its migrations.
#[derive(Debug, Default)]
pub(crate) struct Migrations {
    clients: super::callbacks::CallbackClients,
}

#[async_trait]
impl StateMigrator for Migrations {
    async fn migrate(
        &self,
        callback: &MigrationCallback,
        urn: &Urn,
        old_state: Vec<u8>,
    ) -> Result<Option<MigrationAnswer>, String> {
        let mut client = self.clients.get(&callback.target).await.map_err(|e| {
            format!(
                "the program's Callbacks server at {} cannot be reached: {e}",
                callback.target
            )
        })?;
        let request = StateMigrationRequest {
            urn: urn.to_string(),
            old_state,
        };
        let answer = client
            .invoke(CallbackInvokeRequest {
                token: callback.token.clone(),
                request: request.encode_to_vec(),
            })
            .await
            .map_err(|s| s.message().to_owned())?
            .into_inner();
        let response: StateMigrationResponse = converge_proto::decode_message(&answer.response)
            .map_err(|e| format!("its answer cannot be read: {e}"))?;
        if response.new_state.is_empty() {
            return Ok(None);
        }
        Ok(Some(MigrationAnswer {
            new_state: response.new_state,
            successors: response.successors.into_iter().collect(),
        }))
    }
}
