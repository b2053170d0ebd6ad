//! Journal entries as JSON: every generated entry round-trips through a
//! single line, byte-stably, in both secrets modes; hand-written entries show
//! the field names, Pulumi's shape, secrets and the errors.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use converge_model::{PropertyValue, ProviderReference, ResourceState, Urn};
use converge_state::journal::{
    entries_to_json, entry_from_json, entry_to_json, journal_from_json, replay, JournalEntry,
    JournalEntryKind, JournalJsonError,
};
use converge_state::secrets::{Crypter, CryptoError, SecretsMode};
use converge_state::testing::arb_snapshot_and_journal;
use converge_state::{OperationType, PendingOperation, SecretsProviders, Snapshot};
use proptest::prelude::*;
use serde_json::Value;

/// Deterministic test crypter: `b64:` + base64 of the plaintext.
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
const MODES: [(&str, SecretsMode<'static>); 2] =
    [("opaque", SecretsMode::Opaque), ("crypter", CRYPTER)];

/// What a snapshot reads back as: the deployment's `metadata` object is
/// always written (as Go writes it), so an absent one reads as `{}`.
fn normalized(entry: &JournalEntry) -> JournalEntry {
    let mut entry = entry.clone();
    if let Some(snapshot) = entry.new_snapshot.as_mut() {
        snapshot.metadata.get_or_insert_with(|| "{}".to_owned());
    }
    entry
}

fn to_text(entry: &JournalEntry, mode: SecretsMode<'_>) -> String {
    String::from_utf8(entry_to_json(entry, mode).unwrap()).unwrap()
}

fn read(text: &str) -> Result<JournalEntry, JournalJsonError> {
    entry_from_json(text.as_bytes(), CRYPTER)
}

fn read_err(text: &str) -> String {
    read(text).unwrap_err().to_string()
}

proptest! {
    /// Every entry an engine may emit is one line of JSON that reads back as
    /// the same entry and writes again as the same bytes; the decoded journal
    /// replays to the same snapshot.
    #[test]
    fn entries_round_trip_as_single_lines((base, journal) in arb_snapshot_and_journal()) {
        for (name, mode) in MODES {
            let mut decoded = Vec::new();
            for entry in &journal {
                let bytes = entry_to_json(entry, mode)
                    .map_err(|e| TestCaseError::fail(format!("{name}: {entry}: {e}")))?;
                prop_assert!(!bytes.contains(&b'\n'), "{}: a newline in {}", name, entry);
                let back = entry_from_json(&bytes, mode)
                    .map_err(|e| TestCaseError::fail(format!("{name}: {entry}: {e}")))?;
                prop_assert_eq!(&back, &normalized(entry), "{}", name);
                prop_assert_eq!(entry_to_json(&back, mode).unwrap(), bytes, "{}: byte-stable", name);
                decoded.push(back);
            }
            let normal: Vec<JournalEntry> = journal.iter().map(normalized).collect();
            prop_assert_eq!(
                replay(&base, &decoded).map_err(|e| TestCaseError::fail(e.to_string()))?,
                replay(&base, &normal).unwrap()
            );
        }
    }
}

/// A journal as the engine writes a small update's: mostly compact Same
/// entries (no Begin), their operation IDs mostly counting up, now and
/// then a step that changes something.
fn arb_same_heavy_journal() -> impl Strategy<Value = Vec<JournalEntry>> {
    prop::collection::vec((0u8..8, 0usize..40, 1u64..3), 0..80).prop_map(|steps| {
        let mut op = 0;
        let mut entries = Vec::new();
        for (kind, old, gap) in steps {
            op += if kind == 0 { gap } else { 1 };
            let seq = entries.len() as u64 + 1;
            entries.push(match kind {
                7 => JournalEntry::begin(seq, op, None),
                6 => JournalEntry::success(seq, op).with_remove_old(old),
                _ => JournalEntry::same(seq, op, old),
            });
        }
        entries
    })
}

proptest! {
    /// Written in batches as the journal writer writes them (each run of
    /// compact Same entries whose IDs count up is one line), a journal
    /// reads back entry for entry; run lines are version 3.
    #[test]
    fn journals_written_in_batches_read_back_entry_for_entry(
        journal in arb_same_heavy_journal(),
        batch in 1usize..30,
    ) {
        let mut lines = Vec::new();
        for chunk in journal.chunks(batch) {
            lines.extend(entries_to_json(chunk, CRYPTER).unwrap());
        }
        prop_assert!(lines.len() <= journal.len());
        let mut listed = 0;
        for line in &lines {
            let v: Value = serde_json::from_slice(line).unwrap();
            match v.get("sameOlds") {
                Some(olds) => {
                    // A run line is version 3, whatever is newer.
                    prop_assert_eq!(&v["version"], 3);
                    prop_assert!(olds.as_array().unwrap().len() >= 2);
                    listed += olds.as_array().unwrap().len();
                }
                None => listed += 1,
            }
        }
        prop_assert_eq!(listed, journal.len());
        let back = journal_from_json(&lines, CRYPTER)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(back, journal);
    }
}

fn urn(name: &str) -> Urn {
    Urn::parse(&format!("urn:pulumi:dev::proj::aws:index:Thing::{name}")).unwrap()
}

fn secret_resource(name: &str) -> ResourceState {
    let provider = Urn::parse("urn:pulumi:dev::proj::pulumi:providers:aws::default").unwrap();
    let mut r = ResourceState::new(urn(name), true);
    r.id = Some(format!("id-{name}"));
    r.provider = Some(ProviderReference {
        urn: provider,
        id: "p1".to_owned(),
    });
    r.inputs.insert(
        "password".to_owned(),
        PropertyValue::Secret(Box::new(PropertyValue::String("hunter2\nline".to_owned()))),
    );
    r.outputs
        .insert("size".to_owned(), PropertyValue::Number(1.5));
    r
}

/// One entry of every kind, with every field it may carry set.
fn every_kind() -> Vec<JournalEntry> {
    let mut snapshot = Snapshot::empty("2024-01-01T00:00:00Z");
    snapshot.resources.push(secret_resource("migrated"));
    snapshot.metadata = Some("{}".to_owned());
    let providers = SecretsProviders {
        kind: "passphrase".to_owned(),
        state: Some(r#"{"salt":"v1:abc"}"#.to_owned()),
    };
    let operation = PendingOperation {
        resource: secret_resource("a"),
        kind: OperationType::Creating,
    };
    let mut success = JournalEntry::success(5, 3)
        .with_state(secret_resource("a"))
        .with_remove_old(0)
        .with_remove_new(1)
        .with_pending_replacement_old(2)
        .with_delete_old(4)
        .with_refresh();
    success.pending_replacement_new = Some(7);
    success.delete_new = Some(8);
    let mut same = JournalEntry::success(6, 4);
    same.elide_write = true;
    vec![
        JournalEntry::write(1, snapshot),
        JournalEntry::secrets_manager(2, providers),
        JournalEntry::begin(3, 3, Some(operation)),
        JournalEntry::begin(4, 4, None),
        success,
        same,
        JournalEntry::failure(7, 9),
        JournalEntry::refresh_success(8, 10)
            .with_remove_old(1)
            .with_state(secret_resource("b")),
        JournalEntry::outputs(9, 11, secret_resource("c")).with_remove_new(3),
        JournalEntry::rebuilt_base_state(10),
        JournalEntry::same(11, 12, 5),
    ]
}

#[test]
fn every_kind_round_trips_with_pulumis_field_names() {
    let entries = every_kind();
    for (i, entry) in entries.iter().enumerate() {
        for (name, mode) in MODES {
            let text = to_text(entry, mode);
            assert!(!text.contains('\n'), "{name}: {text}");
            let back = entry_from_json(text.as_bytes(), mode).unwrap();
            assert_eq!(back, *entry, "{name}: {text}");
            let v: Value = serde_json::from_str(&text).unwrap();
            // Version 2 only where an older reader would misread the entry
            // (version 3 is a run of such entries: `runs.rs`).
            let version = match entry.same_old {
                Some(_) => 2,
                None => 1,
            };
            assert_eq!(v["version"], version, "{text}");
            assert_eq!(v["kind"], u64::from(entry.kind.wire_number()), "{text}");
            assert_eq!(v["sequenceID"], i as u64 + 1);
        }
    }
    let success = to_text(&entries[4], CRYPTER);
    let v: Value = serde_json::from_str(&success).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "version",
            "kind",
            "sequenceID",
            "operationID",
            "removeOld",
            "removeNew",
            "pendingReplacementOld",
            "pendingReplacementNew",
            "deleteOld",
            "deleteNew",
            "state",
            "isRefresh",
        ],
        "Go's field order"
    );
    assert_eq!(v["state"]["urn"], urn("a").to_string());
    assert_eq!(v["state"]["id"], "id-a");
    assert_eq!(
        v["state"]["provider"],
        "urn:pulumi:dev::proj::pulumi:providers:aws::default::p1"
    );

    let begin: Value = serde_json::from_str(&to_text(&entries[2], CRYPTER)).unwrap();
    assert_eq!(begin["operation"]["type"], "creating");
    assert_eq!(begin["operation"]["resource"]["urn"], urn("a").to_string());
    let write: Value = serde_json::from_str(&to_text(&entries[0], CRYPTER)).unwrap();
    assert_eq!(write["operationID"], 0);
    assert!(write["newSnapshot"]["manifest"]["version"].is_string());
    assert_eq!(
        write["newSnapshot"]["resources"][0]["urn"],
        urn("migrated").to_string()
    );
    let secrets: Value = serde_json::from_str(&to_text(&entries[1], CRYPTER)).unwrap();
    assert_eq!(
        secrets["secretsProvider"],
        serde_json::json!({"type": "passphrase", "state": {"salt": "v1:abc"}})
    );
    assert_eq!(secrets["elideWrite"], true);
    let same: Value = serde_json::from_str(&to_text(&entries[5], CRYPTER)).unwrap();
    assert_eq!(same["elideWrite"], true);
    assert!(same.get("isRefresh").is_none() && same.get("state").is_none());
}

#[test]
fn secrets_are_encrypted_and_opaque_mode_keeps_ciphertext() {
    let entry = JournalEntry::success(1, 1).with_state(secret_resource("a"));
    let text = to_text(&entry, CRYPTER);
    assert!(!text.contains("hunter2"), "plaintext leaked: {text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    let secret = &v["state"]["inputs"]["password"];
    assert_eq!(
        secret["4dabf18193072939515e22adb298388d"],
        "1b47061264138c4ac30d75fd1eb44270"
    );
    let ciphertext = secret["ciphertext"].as_str().unwrap();
    assert!(ciphertext.starts_with("b64:"), "{ciphertext}");

    // Without the key the ciphertext is carried through unchanged.
    let opaque = entry_from_json(text.as_bytes(), SecretsMode::Opaque).unwrap();
    let kept = &opaque.state.as_ref().unwrap().inputs["password"];
    assert_eq!(
        kept,
        &PropertyValue::Secret(Box::new(PropertyValue::String(ciphertext.to_owned())))
    );
    assert_eq!(to_text(&opaque, SecretsMode::Opaque), text);
}

/// An entry as Pulumi's Go encoder writes it: version 0, `null` pointers,
/// keys Converge does not know.
#[test]
fn reads_what_pulumi_writes() {
    let text = format!(
        r#"{{"version":0,"kind":1,"sequenceID":12,"operationID":4,"removeOld":null,"removeNew":2,
            "state":{{"urn":"{}","custom":true,"id":"i","type":"aws:index:Thing"}},
            "snippets":[],"requiresByteString":false}}
"#,
        urn("x")
    );
    let entry = read(&text).unwrap();
    assert_eq!(entry.kind, JournalEntryKind::Success);
    assert_eq!((entry.sequence_id, entry.operation_id), (12, 4));
    assert_eq!((entry.remove_old, entry.remove_new), (None, Some(2)));
    assert_eq!(entry.state.unwrap().id.as_deref(), Some("i"));
    assert!(!entry.elide_write && !entry.is_refresh);

    let minimal = read(r#"{"kind":7,"sequenceID":3,"operationID":0}"#).unwrap();
    assert_eq!(minimal, JournalEntry::rebuilt_base_state(3));
}

#[test]
fn malformed_entries_are_refused_with_clear_messages() {
    let cases = [
        ("", "not valid JSON"),
        ("{\"kind\":", "not valid JSON"),
        ("[1,2,3]", "not a JSON object"),
        ("42", "not a JSON object"),
        (r#"{"sequenceID":1,"operationID":1}"#, "`kind` is missing"),
        (r#"{"kind":1,"sequenceID":1}"#, "`operationID` is missing"),
        (
            r#"{"kind":"1","sequenceID":1,"operationID":1}"#,
            "`kind` must be",
        ),
        (
            r#"{"kind":8,"sequenceID":5,"operationID":1}"#,
            "#5: unknown kind 8",
        ),
        (
            r#"{"kind":300,"sequenceID":5,"operationID":1}"#,
            "unknown kind 300",
        ),
        (
            r#"{"version":5,"kind":1,"sequenceID":1,"operationID":1}"#,
            "version 5 is newer",
        ),
        (
            r#"{"version":-1,"kind":1,"sequenceID":1,"operationID":1}"#,
            "`version` must be",
        ),
        (
            r#"{"kind":1,"sequenceID":1,"operationID":1,"deleteNew":"x"}"#,
            "`deleteNew`",
        ),
        (
            r#"{"kind":1,"sequenceID":1,"operationID":1,"isRefresh":1}"#,
            "unexpected value",
        ),
        (
            r#"{"kind":0,"sequenceID":9,"operationID":1,"operation":{"resource":{"urn":"urn:pulumi:dev::proj::a:b:C::n","type":"a:b:C"},"type":"exploding"}}"#,
            "#9: `operation.type`: unknown operation type \"exploding\"",
        ),
        (
            r#"{"kind":1,"sequenceID":1,"operationID":1,"state":{"type":"a:b:C"}}"#,
            "state: the required field `urn` is missing",
        ),
        (
            r#"{"kind":1,"sequenceID":1,"operationID":1,"state":{"urn":"nope","type":"a:b:C"}}"#,
            "`urn`",
        ),
        (
            r#"{"kind":5,"sequenceID":1,"operationID":0,"newSnapshot":{"resources":[]}}"#,
            "`manifest` is missing",
        ),
    ];
    for (text, want) in cases {
        let msg = read_err(text);
        assert!(msg.contains(want), "{text}: want {want:?} in {msg:?}");
        assert!(msg.starts_with("journal entry"), "{msg}");
        assert!(!msg.contains('\n'), "{msg}");
    }
}

#[test]
fn undecryptable_secrets_name_the_resource_and_property() {
    let entry = JournalEntry::success(1, 1).with_state(secret_resource("a"));
    let text = to_text(&entry, CRYPTER).replace("b64:", "zz:");
    let msg = read_err(&text);
    assert!(msg.contains(&urn("a").to_string()), "{msg}");
    assert!(msg.contains("inputs.password"), "{msg}");
}
