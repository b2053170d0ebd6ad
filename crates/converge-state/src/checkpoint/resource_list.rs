//! A list of resource states as checkpoint resources (`ResourceV3`), with
//! their secrets in plaintext: what a state migration callback receives
//! and returns (Pulumi's `StateMigrationRequest.old_state` and
//! `StateMigrationResponse.new_state`). Held in memory and sent to the
//! program only; never stored.

use converge_model::ResourceState;

use super::dto::Resources;
use super::json_text::to_compact_bytes;
use super::props_out::{PropsWriter, WriteFailure};
use super::{resource, CheckpointError};
use crate::json_limits::{self, unchecked_from_slice};
use crate::secrets::SecretsMode;

/// `states` as a JSON array of checkpoint resources.
pub fn resources_to_json(states: &[ResourceState]) -> Result<Vec<u8>, CheckpointError> {
    let failure = WriteFailure::default();
    let list = Resources::Write {
        states,
        writer: PropsWriter {
            mode: SecretsMode::Plaintext,
            failure: &failure,
        },
    };
    to_compact_bytes(&list).map_err(|e| failure.to_error(e, "the resources"))
}

/// A JSON array of checkpoint resources as states. Secrets must be in
/// plaintext; the same limits as a state file's hold.
pub fn resources_from_json(bytes: &[u8]) -> Result<Vec<ResourceState>, CheckpointError> {
    json_limits::check(bytes)?;
    let list: Resources = unchecked_from_slice(bytes).map_err(CheckpointError::from_json)?;
    let Resources::Read(list) = list else {
        unreachable!("a list read is Resources::Read")
    };
    list.into_iter()
        .enumerate()
        .map(|(i, r)| {
            resource::resource_from_dto(r, &format!("resources[{i}]"), SecretsMode::Plaintext)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use converge_model::{PropertyMap, PropertyValue, Urn};

    use super::*;

    #[test]
    fn states_go_out_and_back_with_their_secrets_in_plaintext() {
        let urn = Urn::parse("urn:pulumi:s::p::pkg:index:Thing::a").unwrap();
        let mut state = ResourceState::new(urn, true);
        state.type_token = "pkg:index:Thing".to_owned();
        state.id = Some("id-1".to_owned());
        let mut outputs = PropertyMap::new();
        outputs.insert(
            "password".to_owned(),
            PropertyValue::secret(PropertyValue::String("hunter2".to_owned())),
        );
        state.outputs = outputs;
        let json = resources_to_json(std::slice::from_ref(&state)).unwrap();
        let text = String::from_utf8(json.clone()).unwrap();
        assert!(text.contains(r#""plaintext":"\"hunter2\"""#), "{text}");
        assert_eq!(resources_from_json(&json).unwrap(), vec![state]);
    }

    #[test]
    fn ciphertext_and_bad_shapes_are_refused() {
        let cipher = br#"[{"urn":"urn:pulumi:s::p::pkg:index:Thing::a","custom":true,"id":"x","type":"pkg:index:Thing",
            "outputs":{"p":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","ciphertext":"v1:abc"}}}]"#;
        let e = resources_from_json(cipher).unwrap_err().to_string();
        assert!(e.contains("ciphertext"), "{e}");
        assert!(resources_from_json(b"{}").is_err());
        assert!(resources_from_json(br#"[{"custom":true}]"#).is_err());
    }
}
