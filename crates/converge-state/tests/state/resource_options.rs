//! The resource options Pulumi records in a checkpoint beside the classic
//! ones — `hideDiff`, `replaceWith`, `replacementTrigger` (a property
//! value, its secrets encrypted) and `resourceHooks` — read into their
//! fields and written back under Pulumi's names.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use converge_model::PropertyValue;
use converge_state::checkpoint::{decrypt_snapshot, read_checkpoint, write_checkpoint};
use converge_state::secrets::{Crypter, CryptoError, SecretsMode};
use serde_json::{json, Value};

#[derive(Debug)]
struct TestCrypter;

impl Crypter for TestCrypter {
    fn encrypt(&self, plaintext: &str) -> Result<String, CryptoError> {
        Ok(format!("b64:{}", B64.encode(plaintext)))
    }

    fn decrypt(&self, ciphertext: &str) -> Result<String, CryptoError> {
        let encoded = ciphertext
            .strip_prefix("b64:")
            .ok_or_else(|| CryptoError::Malformed(ciphertext.to_owned()))?;
        let bytes = B64.decode(encoded).map_err(|_| CryptoError::Decrypt)?;
        String::from_utf8(bytes).map_err(|_| CryptoError::Decrypt)
    }
}

const CRYPTER: SecretsMode<'static> = SecretsMode::Crypter(&TestCrypter);
const SECRET_SIG: &str = "4dabf18193072939515e22adb298388d";
const SECRET_KIND: &str = "1b47061264138c4ac30d75fd1eb44270";

fn checkpoint(resource: Value) -> Vec<u8> {
    serde_json::to_vec_pretty(&json!({
        "version": 3,
        "checkpoint": {
            "stack": "dev",
            "latest": {
                "manifest": {"time": "2026-01-01T00:00:00Z", "magic": "m", "version": "v3.272.0"},
                "resources": [resource],
                "metadata": {}
            }
        }
    }))
    .unwrap()
}

fn resource() -> Value {
    json!({
        "urn": "urn:pulumi:dev::p::test:index:Thing::a",
        "custom": true,
        "id": "a-1",
        "type": "test:index:Thing",
        "hideDiff": ["tags", "spec.password"],
        "replaceWith": ["urn:pulumi:dev::p::test:index:Thing::b"],
        "replacementTrigger": {
            SECRET_SIG: SECRET_KIND,
            "ciphertext": format!("b64:{}", B64.encode("[1,2,3]"))
        },
        "resourceHooks": {
            "before-create": ["audit"],
            "after-delete": ["notify", "audit"]
        }
    })
}

#[test]
fn new_options_read_into_fields_and_write_back_under_pulumis_names() {
    let input = checkpoint(resource());
    let cp = read_checkpoint(&input, CRYPTER).unwrap();
    let r = &cp.latest.as_ref().unwrap().resources[0];
    assert_eq!(r.hide_diff, ["tags", "spec.password"]);
    assert_eq!(r.replace_with.len(), 1);
    assert_eq!(r.replace_with[0].name(), "b");
    assert_eq!(
        r.replacement_trigger,
        Some(PropertyValue::secret(PropertyValue::Array(vec![
            PropertyValue::Number(1.0),
            PropertyValue::Number(2.0),
            PropertyValue::Number(3.0),
        ])))
    );
    assert_eq!(r.resource_hooks["before-create"], ["audit"]);
    assert_eq!(r.resource_hooks["after-delete"], ["notify", "audit"]);
    assert!(r.unknown_fields.is_empty(), "{:?}", r.unknown_fields);

    let written = write_checkpoint(&cp, CRYPTER).unwrap();
    let text = String::from_utf8(written.clone()).unwrap();
    assert!(
        !text.contains("[1,2,3]"),
        "the trigger's secret is encrypted:\n{text}"
    );
    let value: Value = serde_json::from_slice(&written).unwrap();
    let back = &value["checkpoint"]["latest"]["resources"][0];
    for key in ["hideDiff", "replaceWith", "resourceHooks"] {
        assert_eq!(back[key], resource()[key], "{key}");
    }
    assert_eq!(back["replacementTrigger"][SECRET_SIG], SECRET_KIND);
    assert_eq!(read_checkpoint(&written, CRYPTER).unwrap(), cp);
}

#[test]
fn a_plain_trigger_is_written_as_its_value_and_absent_options_are_not_written() {
    let mut plain = resource();
    plain["replacementTrigger"] = json!("v1");
    let cp = read_checkpoint(&checkpoint(plain), CRYPTER).unwrap();
    let r = &cp.latest.as_ref().unwrap().resources[0];
    assert_eq!(r.replacement_trigger, Some(PropertyValue::from("v1")));
    let value: Value = serde_json::from_slice(&write_checkpoint(&cp, CRYPTER).unwrap()).unwrap();
    assert_eq!(
        value["checkpoint"]["latest"]["resources"][0]["replacementTrigger"],
        "v1"
    );

    let bare = json!({
        "urn": "urn:pulumi:dev::p::test:index:Thing::a",
        "custom": true,
        "id": "a-1",
        "type": "test:index:Thing"
    });
    let cp = read_checkpoint(&checkpoint(bare), CRYPTER).unwrap();
    let text = String::from_utf8(write_checkpoint(&cp, CRYPTER).unwrap()).unwrap();
    for key in [
        "hideDiff",
        "replaceWith",
        "replacementTrigger",
        "resourceHooks",
    ] {
        assert!(
            !text.contains(key),
            "{key} written for a resource without it"
        );
    }
}

#[test]
fn an_opaque_read_keeps_the_triggers_ciphertext_until_decrypted() {
    let input = checkpoint(resource());
    let mut cp = read_checkpoint(&input, SecretsMode::Opaque).unwrap();
    let snapshot = cp.latest.as_mut().unwrap();
    let opaque = snapshot.resources[0].replacement_trigger.clone().unwrap();
    assert!(
        matches!(opaque, PropertyValue::Secret(ref inner) if matches!(**inner, PropertyValue::String(_)))
    );
    decrypt_snapshot(snapshot, &TestCrypter).unwrap();
    let expected = read_checkpoint(&input, CRYPTER).unwrap();
    assert_eq!(
        snapshot.resources[0],
        expected.latest.as_ref().unwrap().resources[0]
    );
}

#[test]
fn a_trigger_that_cannot_be_decrypted_is_named() {
    let mut bad = resource();
    bad["replacementTrigger"]["ciphertext"] = json!("not-ours");
    let err = read_checkpoint(&checkpoint(bad), CRYPTER).unwrap_err();
    assert!(err.to_string().contains("replacementTrigger"), "{err}");
}
