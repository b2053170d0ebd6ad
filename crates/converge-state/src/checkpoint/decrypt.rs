//! Decrypting a snapshot read without its secrets provider.
//!
//! A stack is read once, under its lock, before its secrets provider is
//! known ([`SecretsMode::Opaque`]: every top-level secret holds its
//! ciphertext). Once the provider is open, [`decrypt_snapshot`] turns
//! those ciphertexts into values in place: the same values, and the same
//! errors, a read with the provider would give, without decoding the
//! checkpoint's JSON a second time.

use converge_model::{PropertyMap, PropertyValue};

use super::property_path::{join_paths, render_path, Step};
use super::values::secret_from_ciphertext;
use super::CheckpointError;
use crate::secrets::Crypter;
use crate::snapshot::Snapshot;

/// Decrypts every secret of `snapshot`, which was read with
/// [`SecretsMode::Opaque`](crate::secrets::SecretsMode::Opaque), with
/// `crypter`. On an error the snapshot is partly decrypted: read it again.
pub fn decrypt_snapshot(
    snapshot: &mut Snapshot,
    crypter: &dyn Crypter,
) -> Result<(), CheckpointError> {
    let states = snapshot.resources.iter_mut().chain(
        snapshot
            .pending_operations
            .iter_mut()
            .map(|p| &mut p.resource),
    );
    for state in states {
        let urn = &state.urn;
        for (field, map) in [
            ("inputs", &mut state.inputs),
            ("outputs", &mut state.outputs),
        ] {
            decrypt_map(map, crypter, &mut Vec::new()).map_err(|(path, e)| {
                CheckpointError::Property {
                    urn: urn.to_string(),
                    property: join_paths(field, &join_paths(&path, &e.path)),
                    source: e.kind,
                }
            })?;
        }
        if let Some(trigger) = &mut state.replacement_trigger {
            decrypt_value(trigger, crypter, &mut Vec::new()).map_err(|(path, e)| {
                CheckpointError::Property {
                    urn: urn.to_string(),
                    property: join_paths("replacementTrigger", &join_paths(&path, &e.path)),
                    source: e.kind,
                }
            })?;
        }
    }
    Ok(())
}

/// Where a secret failed (the path to it) and why.
type Failure = (String, super::values::PropertyValueError);

fn decrypt_map<'a>(
    map: &'a mut PropertyMap,
    crypter: &dyn Crypter,
    path: &mut Vec<Step<'a>>,
) -> Result<(), Failure> {
    for (key, value) in map.iter_mut() {
        path.push(Step::Key(key));
        decrypt_value(value, crypter, path)?;
        path.pop();
    }
    Ok(())
}

fn decrypt_value<'a>(
    value: &'a mut PropertyValue,
    crypter: &dyn Crypter,
    path: &mut Vec<Step<'a>>,
) -> Result<(), Failure> {
    match value {
        PropertyValue::Secret(inner) => {
            // An opaque read leaves exactly the ciphertext here.
            if let PropertyValue::String(ciphertext) = inner.as_ref() {
                let plain = secret_from_ciphertext(ciphertext, crypter)
                    .map_err(|e| (render_path(path), e))?;
                **inner = plain;
            }
        }
        PropertyValue::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                path.push(Step::Index(i));
                decrypt_value(item, crypter, path)?;
                path.pop();
            }
        }
        PropertyValue::Object(map) => decrypt_map(map, crypter, path)?,
        PropertyValue::Output(output) => {
            if let Some(element) = output.element.as_deref_mut() {
                decrypt_value(element, crypter, path)?;
            }
        }
        _ => {}
    }
    Ok(())
}
