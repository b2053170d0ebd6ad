//! Journal replay: the acceptance property (every prefix of every journal an
//! engine may emit replays to a valid snapshot), and one hand-written case
//! per entry kind following seed 002.

use converge_model::{PropertyValue, ProviderReference, ResourceState, Urn};
use converge_state::integrity::verify;
use converge_state::journal::{replay, JournalEntry, JournalEntryKind, ReplayError, Replayer};
use converge_state::testing::{
    arb_causal_journal, arb_journal, arb_snapshot, arb_snapshot_and_journal,
};
use converge_state::{OperationType, PendingOperation, SecretsProviders, Snapshot};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;

// ---------------------------------------------------------------------------
// Properties. Case counts follow PROPTEST_CASES (256 by default).

proptest! {
    #[test]
    fn generated_snapshots_are_valid(snapshot in arb_snapshot()) {
        prop_assert_eq!(verify(&snapshot), Ok(()));
    }

    /// The acceptance test: a crash may stop the journal anywhere.
    #[test]
    fn every_prefix_of_a_journal_replays_to_a_valid_snapshot(
        (base, journal) in arb_snapshot_and_journal()
    ) {
        let mut replayer = Replayer::new(base.clone());
        for k in 0..=journal.len() {
            let snapshot = replay(&base, &journal[..k])
                .map_err(|e| TestCaseError::fail(format!("prefix {k}: {e}\n{}", render(&journal[..k]))))?;
            if let Err(e) = verify(&snapshot) {
                return Err(TestCaseError::fail(format!(
                    "prefix of {k} entries: {e}\njournal:\n{}",
                    render(&journal[..k])
                )));
            }
            if k > 0 {
                replayer.apply(&journal[k - 1]).map_err(|e| TestCaseError::fail(e.to_string()))?;
            }
            prop_assert_eq!(&replayer.snapshot(), &snapshot, "incremental replay differs at {}", k);
        }
        // A journal whose every Begin ended leaves no pending operation of
        // its own; the base's `creating` ones are kept.
        let ended = journal.iter().filter(|e| e.kind != JournalEntryKind::Begin).map(|e| e.operation_id);
        let ended: std::collections::HashSet<u64> = ended.collect();
        if journal.iter().all(|e| e.kind != JournalEntryKind::Begin || ended.contains(&e.operation_id)) {
            let last = replay(&base, &journal).unwrap();
            let creating: Vec<_> = base
                .pending_operations
                .iter()
                .filter(|op| op.kind == OperationType::Creating)
                .cloned()
                .collect();
            prop_assert_eq!(last.pending_operations, creating);
        }
    }

    /// The engine's replay (entries moved in as they are persisted, the
    /// base shared, the replay consumed at the end) gives the same
    /// snapshot as `replay` at every prefix, and leaves the base as it was.
    #[test]
    fn owned_entries_onto_a_shared_base_replay_the_same(
        (base, journal) in arb_snapshot_and_journal()
    ) {
        let shared = std::sync::Arc::new(base.clone());
        for k in 0..=journal.len() {
            let mut replayer = Replayer::shared(std::sync::Arc::clone(&shared));
            for entry in &journal[..k] {
                replayer.apply_owned(entry.clone()).map_err(|e| TestCaseError::fail(e.to_string()))?;
            }
            let expected = replay(&base, &journal[..k]).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&replayer.snapshot(), &expected, "snapshot() differs at {}", k);
            prop_assert_eq!(&replayer.into_snapshot(), &expected, "into_snapshot() differs at {}", k);
        }
        prop_assert_eq!(&*shared, &base, "the shared base changed");
    }

    /// Entries may reach a backend out of order, some not yet: whatever set
    /// the client's waiting rules allow replays, in any order, to a valid
    /// snapshot, the same as when sorted.
    #[test]
    fn any_delivered_subset_in_any_order_replays_to_a_valid_snapshot(
        (base, journal, arrived, shuffle) in arb_snapshot().prop_flat_map(|base| {
            let journal = arb_causal_journal(&base);
            (Just(base), journal).prop_flat_map(|(base, journal)| {
                let n = journal.entries.len();
                (
                    Just(base),
                    Just(journal),
                    prop::collection::vec(prop::bool::weighted(0.8), n),
                    Just((0..n).collect::<Vec<usize>>()).prop_shuffle(),
                )
            })
        })
    ) {
        let delivered = journal.delivered(&arrived);
        let sorted = replay(&base, &delivered).map_err(|e| TestCaseError::fail(e.to_string()))?;
        if let Err(e) = verify(&sorted) {
            return Err(TestCaseError::fail(format!("{e}\ndelivered:\n{}", render(&delivered))));
        }
        let mut shuffled: Vec<JournalEntry> = shuffle
            .iter()
            .filter_map(|&i| delivered.get(i).cloned())
            .collect();
        shuffled.extend(delivered.iter().skip(shuffle.len()).cloned());
        prop_assert_eq!(replay(&base, &shuffled).unwrap(), sorted);
    }

    /// The generator keeps to the engine's rules.
    #[test]
    fn generated_journals_are_well_formed((_base, journal) in arb_snapshot_and_journal()) {
        for (i, e) in journal.iter().enumerate() {
            prop_assert_eq!(e.sequence_id, i as u64 + 1);
            if e.kind == JournalEntryKind::Write {
                prop_assert!(journal[..i].iter().all(|p| p.kind == JournalEntryKind::SecretsManager));
            }
            if matches!(e.kind, JournalEntryKind::Success | JournalEntryKind::Failure | JournalEntryKind::RefreshSuccess) {
                let begun = journal[..i]
                    .iter()
                    .any(|p| p.kind == JournalEntryKind::Begin && p.operation_id == e.operation_id);
                prop_assert!(begun, "entry {} ends an operation that never began", e);
            }
        }
    }
}

/// The generator is not degenerate: over a fixed sample, every kind of entry
/// and every reference field occurs.
#[test]
fn generated_journals_cover_every_entry_kind() {
    let mut runner = TestRunner::deterministic();
    let strategy = arb_snapshot().prop_flat_map(|base| arb_journal(&base));
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..400 {
        let journal = strategy.new_tree(&mut runner).unwrap().current();
        for e in &journal {
            seen.insert(e.kind.as_str().to_owned());
            let fields = [
                ("removeOld", e.remove_old.is_some()),
                ("removeNew", e.remove_new.is_some()),
                ("deleteOld", e.delete_old.is_some()),
                ("pendingReplacementOld", e.pending_replacement_old.is_some()),
                (
                    "refresh-removes",
                    e.kind == JournalEntryKind::RefreshSuccess && e.state.is_none(),
                ),
                (
                    "persisted-refresh",
                    e.kind == JournalEntryKind::Success && e.is_refresh,
                ),
                ("pending-operation", e.operation.is_some()),
            ];
            seen.extend(
                fields
                    .iter()
                    .filter(|(_, on)| *on)
                    .map(|(name, _)| name.to_string()),
            );
        }
    }
    for kind in [
        "Begin",
        "Success",
        "Failure",
        "RefreshSuccess",
        "Outputs",
        "Write",
        "SecretsManager",
        "RebuiltBaseState",
        "removeOld",
        "removeNew",
        "deleteOld",
        "pendingReplacementOld",
        "refresh-removes",
        "persisted-refresh",
        "pending-operation",
    ] {
        assert!(
            seen.contains(kind),
            "no generated journal has {kind}: {seen:?}"
        );
    }
}

fn render(entries: &[JournalEntry]) -> String {
    entries.iter().map(|e| format!("  {e}\n")).collect()
}

// ---------------------------------------------------------------------------
// Hand-written cases, one per entry kind (seed 002).

fn urn(ty: &str, name: &str) -> Urn {
    Urn::new("dev", "proj", None, ty, name).unwrap()
}

fn stack() -> ResourceState {
    ResourceState::new(urn("pulumi:pulumi:Stack", "proj-dev"), false)
}

fn provider() -> ResourceState {
    let mut p = ResourceState::new(urn("pulumi:providers:aws", "default"), true);
    p.id = Some("p1".into());
    p
}

fn custom(name: &str, id: &str) -> ResourceState {
    let mut r = ResourceState::new(urn("aws:s3:Bucket", name), true);
    r.id = Some(id.into());
    r.parent = Some(stack().urn);
    r.provider = Some(ProviderReference {
        urn: provider().urn,
        id: "p1".into(),
    });
    r
}

fn base(resources: Vec<ResourceState>) -> Snapshot {
    let mut s = Snapshot::empty("2024-01-01T00:00:00Z");
    s.resources = resources;
    s
}

fn op(resource: &ResourceState, kind: OperationType) -> Option<PendingOperation> {
    Some(PendingOperation {
        resource: resource.clone(),
        kind,
    })
}

/// Replays and checks integrity; returns the resources' (name, id, delete,
/// pending replacement).
#[track_caller]
fn replay_valid(base: &Snapshot, entries: &[JournalEntry]) -> Snapshot {
    let s = replay(base, entries).unwrap();
    verify(&s).unwrap();
    s
}

fn names(s: &Snapshot) -> Vec<String> {
    s.resources
        .iter()
        .map(|r| {
            let mut n = r.urn.name().to_owned();
            if r.delete {
                n.push_str("[delete]");
            }
            if r.pending_replacement {
                n.push_str("[pending]");
            }
            n
        })
        .collect()
}

/// The stack and the default provider registered unchanged (ops 1 and 2).
fn same_stack_and_provider(b: &Snapshot) -> Vec<JournalEntry> {
    vec![
        JournalEntry::begin(1, 1, None),
        JournalEntry::success(2, 1)
            .with_state(b.resources[0].clone())
            .with_remove_old(0),
        JournalEntry::begin(3, 2, None),
        JournalEntry::success(4, 2)
            .with_state(b.resources[1].clone())
            .with_remove_old(1),
    ]
}

#[test]
fn create_appends_after_the_new_resources() {
    let b = base(vec![stack(), provider()]);
    let x = custom("x", "x1");
    let mut j = same_stack_and_provider(&b);
    j.push(JournalEntry::begin(5, 3, op(&x, OperationType::Creating)));
    let s = replay_valid(&b, &j);
    assert_eq!(names(&s), ["proj-dev", "default"]);
    assert_eq!(
        s.pending_operations,
        vec![op(&x, OperationType::Creating).unwrap()]
    );
    j.push(JournalEntry::success(6, 3).with_state(x.clone()));
    let s = replay_valid(&b, &j);
    assert_eq!(names(&s), ["proj-dev", "default", "x"]);
    assert!(s.pending_operations.is_empty());
}

#[test]
fn update_replaces_the_old_resource_with_remove_old() {
    let b = base(vec![stack(), provider(), custom("a", "a1")]);
    let mut a2 = custom("a", "a1");
    a2.outputs.insert("v".into(), PropertyValue::Number(2.0));
    let mut j = same_stack_and_provider(&b);
    j.push(JournalEntry::begin(5, 3, op(&a2, OperationType::Updating)));
    j.push(
        JournalEntry::success(6, 3)
            .with_state(a2.clone())
            .with_remove_old(2),
    );
    let s = replay_valid(&b, &j);
    assert_eq!(names(&s), ["proj-dev", "default", "a"]);
    assert_eq!(s.resources[2], a2);
}

#[test]
fn delete_removes_dependents_first() {
    let a = custom("a", "a1");
    let mut dependent = custom("b", "b1");
    dependent.dependencies = vec![a.urn.clone()];
    let b = base(vec![stack(), provider(), a.clone(), dependent.clone()]);
    let j = vec![
        JournalEntry::begin(1, 1, op(&dependent, OperationType::Deleting)),
        JournalEntry::success(2, 1).with_remove_old(3),
        JournalEntry::begin(3, 2, op(&a, OperationType::Deleting)),
    ];
    let s = replay_valid(&b, &j);
    assert_eq!(names(&s), ["proj-dev", "default", "a"]);
    assert_eq!(
        s.pending_operations,
        vec![op(&a, OperationType::Deleting).unwrap()]
    );
    let mut j = j;
    j.push(JournalEntry::success(4, 2).with_remove_old(2));
    assert_eq!(names(&replay_valid(&b, &j)), ["proj-dev", "default"]);
}

#[test]
fn create_before_delete_marks_the_old_copy() {
    let b = base(vec![stack(), provider(), custom("a", "a1")]);
    let a2 = custom("a", "a2");
    let mut j = same_stack_and_provider(&b);
    j.push(JournalEntry::begin(5, 3, op(&a2, OperationType::Creating)));
    j.push(
        JournalEntry::success(6, 3)
            .with_state(a2.clone())
            .with_delete_old(2),
    );
    let s = replay_valid(&b, &j);
    assert_eq!(names(&s), ["proj-dev", "default", "a", "a[delete]"]);
    assert_eq!(s.resources[2].id.as_deref(), Some("a2"));
    j.push(JournalEntry::begin(
        7,
        4,
        op(&b.resources[2], OperationType::Deleting),
    ));
    j.push(JournalEntry::success(8, 4).with_remove_old(2));
    assert_eq!(names(&replay_valid(&b, &j)), ["proj-dev", "default", "a"]);
}

#[test]
fn delete_before_replace_marks_pending_replacement_then_removes() {
    let b = base(vec![stack(), provider(), custom("a", "a1")]);
    let a2 = custom("a", "a2");
    let mut j = same_stack_and_provider(&b);
    j.push(JournalEntry::begin(
        5,
        3,
        op(&b.resources[2], OperationType::Deleting),
    ));
    j.push(JournalEntry::success(6, 3).with_pending_replacement_old(2));
    let s = replay_valid(&b, &j);
    assert_eq!(names(&s), ["proj-dev", "default", "a[pending]"]);
    j.push(JournalEntry::begin(7, 4, op(&a2, OperationType::Creating)));
    j.push(
        JournalEntry::success(8, 4)
            .with_state(a2.clone())
            .with_remove_old(2),
    );
    let s = replay_valid(&b, &j);
    assert_eq!(names(&s), ["proj-dev", "default", "a"]);
    assert_eq!(s.resources[2].id.as_deref(), Some("a2"));
}

#[test]
fn refresh_removing_a_resource_rebuilds_dependencies() {
    let a = custom("a", "a1");
    let mut child = custom("child", "c1");
    child.parent = Some(a.urn.clone());
    child.dependencies = vec![a.urn.clone(), provider().urn];
    child
        .property_dependencies
        .insert("x".into(), vec![a.urn.clone()]);
    child.deleted_with = Some(a.urn.clone());
    let b = base(vec![stack(), provider(), a, child]);
    let j = vec![
        JournalEntry::begin(1, 1, None),
        JournalEntry::refresh_success(2, 1).with_remove_old(2),
    ];
    let s = replay_valid(&b, &j);
    assert_eq!(names(&s), ["proj-dev", "default", "child"]);
    let child = &s.resources[2];
    // Re-parented to the removed parent's parent, references dropped.
    assert_eq!(child.parent, Some(stack().urn));
    assert_eq!(child.dependencies, vec![provider().urn]);
    assert_eq!(child.property_dependencies["x"], Vec::<Urn>::new());
    assert_eq!(child.deleted_with, None);
}

#[test]
fn refresh_success_replaces_in_place() {
    let b = base(vec![
        stack(),
        provider(),
        custom("a", "a1"),
        custom("b", "b1"),
    ]);
    let mut a2 = custom("a", "a1");
    a2.outputs.insert("drift".into(), true.into());
    let j = vec![
        JournalEntry::begin(1, 1, None),
        JournalEntry::refresh_success(2, 1)
            .with_remove_old(2)
            .with_state(a2.clone()),
    ];
    let s = replay_valid(&b, &j);
    assert_eq!(names(&s), ["proj-dev", "default", "a", "b"]);
    assert_eq!(s.resources[2], a2);
}

#[test]
fn refresh_success_of_a_new_resource_replaces_or_removes_it() {
    let b = base(vec![stack(), provider()]);
    let x = custom("x", "x1");
    let mut x2 = x.clone();
    x2.outputs.insert("drift".into(), true.into());
    let mut j = same_stack_and_provider(&b);
    j.push(JournalEntry::begin(5, 3, op(&x, OperationType::Creating)));
    j.push(JournalEntry::success(6, 3).with_state(x.clone()));
    j.push(JournalEntry::begin(7, 4, None));
    let mut replaced = j.clone();
    replaced.push(
        JournalEntry::refresh_success(8, 4)
            .with_remove_new(3)
            .with_state(x2.clone()),
    );
    assert_eq!(replay_valid(&b, &replaced).resources[2], x2);
    j.push(JournalEntry::refresh_success(8, 4).with_remove_new(3));
    assert_eq!(names(&replay_valid(&b, &j)), ["proj-dev", "default"]);
}

#[test]
fn outputs_replace_the_state_in_place() {
    let mut comp = ResourceState::new(urn("my:index:Component", "c"), false);
    comp.parent = Some(stack().urn);
    let b = base(vec![stack(), provider(), comp.clone(), custom("a", "a1")]);
    // A base resource, by index.
    let mut comp2 = comp.clone();
    comp2.outputs.insert("out".into(), "v".into());
    let s = replay_valid(
        &b,
        &[JournalEntry::outputs(1, 1, comp2.clone()).with_remove_old(2)],
    );
    assert_eq!(names(&s), ["proj-dev", "default", "c", "a"]);
    assert_eq!(s.resources[2], comp2);
    // A new resource, by operation.
    let mut stack2 = stack();
    stack2.outputs.insert("export".into(), "v".into());
    let mut j = same_stack_and_provider(&b);
    j.push(JournalEntry::outputs(5, 3, stack2.clone()).with_remove_new(1));
    let s = replay_valid(&b, &j);
    assert_eq!(names(&s), ["proj-dev", "default", "c", "a"]);
    assert_eq!(s.resources[0], stack2);
}

#[test]
fn failure_ends_the_pending_operation_and_changes_nothing() {
    let b = base(vec![stack(), provider(), custom("a", "a1")]);
    let a2 = custom("a", "a2");
    let j = vec![
        JournalEntry::begin(1, 1, op(&a2, OperationType::Updating)),
        JournalEntry::failure(2, 1),
    ];
    let s = replay_valid(&b, &j);
    assert_eq!(s.resources, b.resources);
    assert!(s.pending_operations.is_empty());
}

#[test]
fn incomplete_begins_are_pending_operations() {
    let mut b = base(vec![stack(), provider(), custom("a", "a1")]);
    let orphan = custom("orphan", "o1");
    b.pending_operations = vec![
        op(&orphan, OperationType::Creating).unwrap(),
        op(&orphan, OperationType::Updating).unwrap(),
    ];
    let x = custom("x", "x1");
    let j = vec![
        JournalEntry::begin(1, 1, op(&b.resources[2], OperationType::Deleting)),
        JournalEntry::begin(2, 2, op(&x, OperationType::Creating)),
        JournalEntry::begin(3, 3, None),
    ];
    let s = replay_valid(&b, &j);
    // Incomplete begins in order, then the base's `creating` operations.
    assert_eq!(
        s.pending_operations,
        vec![
            op(&b.resources[2], OperationType::Deleting).unwrap(),
            op(&x, OperationType::Creating).unwrap(),
            op(&orphan, OperationType::Creating).unwrap(),
        ]
    );
}

/// A delete's compact Begin (`deletingOld`) is the full one's pending
/// operation, the base resource as the base holds it; it stays so across a
/// rebuilt base, and ends like any other.
#[test]
fn a_compact_begin_of_a_delete_is_its_base_resource_pending_deletion() {
    let b = base(vec![
        stack(),
        provider(),
        custom("a", "a1"),
        custom("b", "b1"),
    ]);
    let compact = vec![
        JournalEntry::begin_deleting(1, 1, 2),
        JournalEntry::begin_deleting(2, 2, 3),
    ];
    let full = vec![
        JournalEntry::begin(1, 1, op(&b.resources[2], OperationType::Deleting)),
        JournalEntry::begin(2, 2, op(&b.resources[3], OperationType::Deleting)),
    ];
    let s = replay_valid(&b, &compact);
    assert_eq!(s, replay_valid(&b, &full));
    assert_eq!(
        s.pending_operations,
        vec![
            op(&b.resources[2], OperationType::Deleting).unwrap(),
            op(&b.resources[3], OperationType::Deleting).unwrap(),
        ]
    );

    // Across a rebuilt base (which drops `a`), `b`'s delete still names
    // `b`; once ended, nothing is pending.
    let mut j = vec![
        JournalEntry::begin_deleting(1, 1, 3),
        JournalEntry::begin(2, 2, None),
        JournalEntry::refresh_success(3, 2).with_remove_old(2),
        JournalEntry::rebuilt_base_state(4),
    ];
    let s = replay_valid(&b, &j);
    assert_eq!(names(&s), ["proj-dev", "default", "b"]);
    assert_eq!(
        s.pending_operations,
        vec![op(&b.resources[3], OperationType::Deleting).unwrap()]
    );
    // Index 2 of the rebuilt base is `b`.
    j.push(JournalEntry::success(5, 1).with_remove_old(2));
    let s = replay_valid(&b, &j);
    assert_eq!(names(&s), ["proj-dev", "default"]);
    assert!(s.pending_operations.is_empty());

    let out_of_range = JournalEntry::begin_deleting(1, 1, 4);
    assert_eq!(
        replay(&b, &[out_of_range]),
        Err(ReplayError::IndexOutOfRange {
            sequence_id: 1,
            field: "deletingOld",
            index: 4,
            len: 4
        })
    );
    let mut with_operation =
        JournalEntry::begin(1, 1, op(&b.resources[2], OperationType::Deleting));
    with_operation.deleting_old = Some(2);
    let mut on_success = JournalEntry::success(1, 1);
    on_success.deleting_old = Some(2);
    for misplaced in [with_operation, on_success] {
        assert_eq!(
            replay(&b, &[misplaced]),
            Err(ReplayError::MisplacedDeleting { sequence_id: 1 })
        );
    }
}

#[test]
fn write_replaces_the_base_only_at_the_start() {
    let b = base(vec![stack(), provider()]);
    let mut migrated = b.clone();
    migrated.resources[1]
        .outputs
        .insert("migrated".into(), true.into());
    let secrets = SecretsProviders {
        kind: "passphrase".into(),
        state: Some("{}".into()),
    };
    let j = vec![
        JournalEntry::secrets_manager(1, secrets.clone()),
        JournalEntry::write(2, migrated.clone()),
        JournalEntry::begin(3, 1, None),
    ];
    let s = replay_valid(&b, &j);
    assert_eq!(s.resources, migrated.resources);
    assert_eq!(s.secrets_providers, None, "the Write's snapshot wins");
    let s = replay_valid(&b, &[JournalEntry::secrets_manager(1, secrets.clone())]);
    assert_eq!(s.secrets_providers, Some(secrets));

    let late = vec![
        JournalEntry::begin(1, 1, None),
        JournalEntry::write(2, migrated.clone()),
    ];
    assert_eq!(
        replay(&b, &late),
        Err(ReplayError::MisplacedWrite { sequence_id: 2 })
    );
    let twice = vec![
        JournalEntry::write(1, migrated.clone()),
        JournalEntry::write(2, migrated),
    ];
    assert_eq!(
        replay(&b, &twice),
        Err(ReplayError::MisplacedWrite { sequence_id: 2 })
    );
    let empty = JournalEntry::new(1, JournalEntryKind::Write, 0);
    assert_eq!(
        replay(&b, &[empty]),
        Err(ReplayError::WriteWithoutSnapshot { sequence_id: 1 })
    );
}

#[test]
fn rebuilt_base_state_reindexes_later_entries() {
    let b = base(vec![
        stack(),
        provider(),
        custom("a", "a1"),
        custom("b", "b1"),
    ]);
    let mut b2 = custom("b", "b1");
    b2.outputs.insert("v".into(), PropertyValue::Number(2.0));
    let j = vec![
        JournalEntry::begin(1, 1, None),
        JournalEntry::refresh_success(2, 1).with_remove_old(2),
        JournalEntry::rebuilt_base_state(3),
        JournalEntry::success(4, 2)
            .with_state(stack())
            .with_remove_old(0),
        JournalEntry::success(5, 3)
            .with_state(provider())
            .with_remove_old(1),
        // Index 2 of the rebuilt base is "b".
        JournalEntry::begin(6, 4, op(&b2, OperationType::Updating)),
        JournalEntry::success(7, 4)
            .with_state(b2.clone())
            .with_remove_old(2),
    ];
    let s = replay_valid(&b, &j);
    assert_eq!(names(&s), ["proj-dev", "default", "b"]);
    assert_eq!(s.resources[2], b2);
}

#[test]
fn entries_are_ordered_by_sequence_id_and_gaps_are_allowed() {
    let b = base(vec![stack(), provider()]);
    let x = custom("x", "x1");
    let mut j = same_stack_and_provider(&b);
    j.push(JournalEntry::begin(10, 3, op(&x, OperationType::Creating)));
    j.push(JournalEntry::success(12, 3).with_state(x));
    let expected = replay_valid(&b, &j);
    let mut shuffled = j.clone();
    shuffled.reverse();
    assert_eq!(replay_valid(&b, &shuffled), expected);
    // A retried upload repeats an entry; a conflicting repeat is an error.
    let mut repeated = j.clone();
    repeated.push(j[4].clone());
    assert_eq!(replay_valid(&b, &repeated), expected);
    let mut conflicting = j.clone();
    conflicting.push(JournalEntry::failure(10, 3));
    assert_eq!(
        replay(&b, &conflicting),
        Err(ReplayError::ConflictingDuplicate { sequence_id: 10 })
    );
}

#[test]
fn bad_references_are_errors_not_panics() {
    let b = base(vec![stack()]);
    let cases = [
        (
            JournalEntry::success(1, 1).with_remove_old(5),
            "removeOld index 5 is out of range",
        ),
        (
            JournalEntry::success(1, 1).with_delete_old(1),
            "deleteOld index 1 is out of range",
        ),
        (
            JournalEntry::success(1, 1).with_pending_replacement_old(9),
            "pendingReplacementOld index 9 is out of range",
        ),
        (
            JournalEntry::success(1, 1).with_remove_new(7),
            "removeNew refers to operation 7",
        ),
        (
            JournalEntry::outputs(1, 1, stack()).with_remove_new(7),
            "removeNew refers to operation 7",
        ),
        (
            JournalEntry::refresh_success(1, 1).with_remove_old(1),
            "removeOld index 1 is out of range",
        ),
    ];
    for (entry, message) in cases {
        let err = replay(&b, std::slice::from_ref(&entry))
            .unwrap_err()
            .to_string();
        assert!(err.contains(message), "{entry}: {err}");
    }
    let mut delete_new = JournalEntry::success(1, 1);
    delete_new.delete_new = Some(3);
    assert!(matches!(
        replay(&b, &[delete_new]),
        Err(ReplayError::UnknownOperation {
            operation_id: 3,
            ..
        })
    ));
    let twice = [
        JournalEntry::success(1, 1)
            .with_state(stack())
            .with_remove_old(0),
        JournalEntry::success(2, 1).with_state(stack()),
    ];
    assert_eq!(
        replay(&b, &twice),
        Err(ReplayError::DuplicateOperation {
            sequence_id: 2,
            operation_id: 1
        })
    );
    let mut replayer = Replayer::new(b.clone());
    replayer.apply(&JournalEntry::begin(5, 1, None)).unwrap();
    assert_eq!(
        replayer.apply(&JournalEntry::begin(4, 2, None)),
        Err(ReplayError::OutOfOrder {
            sequence_id: 4,
            last: 5
        })
    );
}

#[test]
fn marks_on_new_resources_apply_by_operation() {
    let b = base(vec![stack(), provider()]);
    let x = custom("x", "x1");
    let mut j = same_stack_and_provider(&b);
    j.push(JournalEntry::success(5, 3).with_state(x.clone()));
    let mut mark = JournalEntry::success(6, 4);
    mark.delete_new = Some(3);
    mark.pending_replacement_new = Some(3);
    j.push(mark);
    assert_eq!(
        names(&replay_valid(&b, &j)),
        ["proj-dev", "default", "x[delete][pending]"]
    );
}
