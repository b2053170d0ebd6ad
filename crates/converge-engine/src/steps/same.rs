//! Same: nothing to do; the old state moves into the new snapshot with the
//! program's current options (and, from a provider that upgraded it, its
//! outputs in the provider's current form). When nothing of the state
//! changed, the journal records only the base index (a compact entry), and
//! so does the ledger.

use std::future::Future;
use std::sync::Arc;

use converge_model::ResourceState;
use converge_state::journal::JournalEntry;

use super::{claim, failed, finish, finish_unchanged};
use crate::deployment::Deployment;
use crate::error::EngineError;
use crate::events::StepOp;

/// Runs a Same step (an `async move` block: an `async fn` would keep
/// `new` twice).
#[allow(
    clippy::manual_async_fn,
    reason = "an async fn keeps its arguments twice"
)]
pub(crate) fn run(
    d: &Deployment,
    old_index: usize,
    new: ResourceState,
) -> impl Future<Output = Result<Arc<ResourceState>, EngineError>> + Send + '_ {
    async move {
        let urn = new.urn.clone();
        let op_id = d.next_operation();
        // No Begin: nothing is pending while a Same step runs. Its end entry
        // is not waited for either: a crash before it is durable leaves the
        // old state in place, which the next run carries over again.
        let old = &d.base.resources[old_index];
        let unchanged = *old == new;
        let entry = match unchanged {
            // The compact form: the base's state as it is.
            true => JournalEntry::same(0, op_id, old_index),
            false => {
                let mut entry = super::rename::take_over(
                    d,
                    JournalEntry::success(0, op_id).with_state(new.clone()),
                    old_index,
                    &new.urn,
                );
                // Only bookkeeping changed unless the outputs did.
                entry.elide_write = old.outputs == new.outputs;
                entry
            }
        };
        d.end_unsynced(entry)
            .map_err(|e| failed(d, StepOp::Same, &urn, e))?;
        claim(d, StepOp::Same, old_index, &urn)?;
        super::rename::finish(d, old_index, &new)
            .await
            .map_err(|e| failed(d, StepOp::Same, &urn, e))?;
        if unchanged {
            return Ok(finish_unchanged(d, op_id, old_index, new));
        }
        Ok(finish(
            d,
            StepOp::Same,
            Some(op_id),
            Some(&d.base.resources[old_index]),
            new,
            Default::default(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use converge_model::{PropertyValue, ResourceState, Urn};
    use converge_plugin::builtin::BuiltinLoader;
    use converge_plugin::ProviderRegistry;
    use converge_state::Snapshot;

    use crate::deployment::{Deployment, DeploymentOptions};
    use crate::events::EventSink;
    use crate::journaler::{DiscardSink, Journaler, JournalerOptions};
    use crate::ledger::Recorded;

    fn state(name: &str) -> ResourceState {
        let urn = Urn::new("dev", "p", None, "pkg:index:T", name).expect("a URN");
        let mut s = ResourceState::new(urn, false);
        s.outputs.insert("n".to_owned(), PropertyValue::from(name));
        s
    }

    #[tokio::test]
    async fn an_unchanged_state_is_recorded_as_its_base_index_and_a_changed_one_as_its_own() {
        let mut base = Snapshot::empty("2026-01-01T00:00:00Z");
        base.resources.extend([state("a"), state("b")]);
        let base = Arc::new(base);
        let journal = Journaler::start(
            Arc::new(DiscardSink),
            JournalerOptions {
                base: Arc::clone(&base),
                keep_entries: false,
            },
        );
        let d = Deployment::new(
            DeploymentOptions::new("dev", "p"),
            Arc::clone(&base),
            ProviderRegistry::new(Arc::new(BuiltinLoader::new())),
            journal,
            EventSink::discard(),
        );
        let unchanged = super::run(&d, 0, base.resources[0].clone()).await;
        assert_eq!(*unchanged.expect("same a"), base.resources[0]);
        let mut changed = base.resources[1].clone();
        changed
            .outputs
            .insert("n".to_owned(), PropertyValue::from("b2"));
        super::run(&d, 1, changed.clone()).await.expect("same b");

        let p = d.progress();
        let recorded = |i: usize| {
            let urn = &base.resources[i].urn;
            let all = &p.registered;
            (
                all.get(urn).expect("recorded").state.clone(),
                all.recorded(urn),
            )
        };
        let (a, a_held) = recorded(0);
        assert_eq!(a, base.resources[0], "lookups see the base's state");
        assert!(
            matches!(a_held, Some(Recorded::Base(0))),
            "no copy of an unchanged state: {a_held:?}"
        );
        let (b, b_held) = recorded(1);
        assert_eq!(b, changed);
        assert!(matches!(b_held, Some(Recorded::Own(_))), "{b_held:?}");
    }
}
