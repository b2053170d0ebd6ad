//! Which resources an operation may change: `--target`, `--exclude` and
//! `--replace` patterns ([`UrnPattern`]) matched against the URNs the
//! engine sees (the base's and the program's registrations), and, with
//! `target_dependents` / `exclude_dependents`, whatever depends on a
//! selected resource (dependency, property dependency, deletedWith,
//! parent, provider).
//!
//! Dependents are found in two places: among the base's resources (in
//! snapshot order, where a resource comes after what it depends on) when
//! the deployment starts, and among registrations as they arrive (a
//! registration's dependencies are registered before it).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use converge_model::{ResourceState, Urn, UrnPattern};
use converge_state::Snapshot;

use crate::deployment::DeploymentOptions;
use crate::error::EngineError;

/// How a resource is selected through what it depends on (rather than
/// by a pattern of its own).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Reach {
    targeted: bool,
    excluded: bool,
}

/// One deployment's targeting: the options' patterns and the dependents
/// reached so far (only those reached are in the map).
#[derive(Debug)]
pub(crate) struct Selection {
    opts: DeploymentOptions,
    reached: Mutex<HashMap<Urn, Reach>>,
}

fn any_match(patterns: &[UrnPattern], urn: &Urn) -> bool {
    patterns.iter().any(|p| p.matches(urn))
}

impl Selection {
    /// The selection of `opts` over `base`, with the base's dependents.
    pub fn new(opts: &DeploymentOptions, base: &Snapshot) -> Self {
        let s = Selection {
            opts: opts.clone(),
            reached: Mutex::new(HashMap::new()),
        };
        for r in &base.resources {
            s.reach(r);
        }
        s
    }

    fn reached(&self) -> MutexGuard<'_, HashMap<Urn, Reach>> {
        self.reached.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `--target` (with `--target-replace`) names it. `--replace` alone
    /// does not: with `--target`, an untargeted resource stays as it is,
    /// whatever `--replace` says (as in Pulumi).
    fn target_matches(&self, urn: &Urn) -> bool {
        self.opts
            .targets
            .as_ref()
            .is_some_and(|t| any_match(t, urn))
    }

    fn reach_of(&self, urn: &Urn) -> Reach {
        self.reached().get(urn).copied().unwrap_or_default()
    }

    /// Records how `r` is reached through what it depends on (replacing
    /// what an earlier state of it recorded).
    fn reach(&self, r: &ResourceState) {
        // Without `--target-dependents` or `--exclude-dependents`, nothing
        // is reached through a dependency and the map stays empty.
        if !self.opts.target_dependents && !self.opts.exclude_dependents {
            return;
        }
        let dependent_of =
            |selected: &dyn Fn(&Urn) -> bool| r.all_dependencies().any(|(_, dep)| selected(dep));
        let reach = Reach {
            targeted: self.opts.target_dependents
                && !self.target_matches(&r.urn)
                && dependent_of(&|u| self.targeted_by_pattern_or_dependency(u)),
            excluded: self.opts.exclude_dependents
                && !any_match(&self.opts.excludes, &r.urn)
                && dependent_of(&|u| self.excluded(u)),
        };
        let mut reached = self.reached();
        if reach == Reach::default() {
            reached.remove(&r.urn);
        } else {
            reached.insert(r.urn.clone(), reach);
        }
    }

    fn targeted_by_pattern_or_dependency(&self, urn: &Urn) -> bool {
        self.target_matches(urn) || self.reach_of(urn).targeted
    }

    /// `--exclude` (or `--exclude-dependents`) leaves it out.
    pub fn excluded(&self, urn: &Urn) -> bool {
        any_match(&self.opts.excludes, urn) || self.reach_of(urn).excluded
    }

    /// True if this resource may change in this operation.
    pub fn is_targeted(&self, urn: &Urn) -> bool {
        if self.excluded(urn) {
            return false;
        }
        self.opts.targets.is_none() || self.targeted_by_pattern_or_dependency(urn)
    }

    /// True if `--target` (or a dependent of one) selects this resource:
    /// deleting it is what the user asked for.
    pub fn is_explicitly_targeted(&self, urn: &Urn) -> bool {
        self.opts.targets.is_some() && self.is_targeted(urn)
    }

    /// Whether the registration `state` may change. How it is reached
    /// follows its new dependencies, not its old state's, and is recorded
    /// first, so its own dependents find it.
    ///
    /// The stack resource's registration is always targeted (as in
    /// Pulumi's engine), so that a targeted update of a new stack can
    /// create what it targets; only an exclusion leaves it out. (A destroy
    /// deletes it only when targeted.)
    pub fn register(&self, state: &ResourceState) -> bool {
        self.reach(state);
        let stack = state.urn.is_stack() && !self.excluded(&state.urn);
        stack || self.is_targeted(&state.urn)
    }

    /// The first pattern that matches none of `urns`, as an error.
    /// Whether any `--target`, `--exclude` or `--replace` pattern was given
    /// (without one there is nothing for [`Selection::check_matched`] to
    /// check).
    pub fn has_patterns(&self) -> bool {
        self.opts.targets.is_some()
            || !self.opts.excludes.is_empty()
            || !self.opts.replace.is_empty()
    }

    pub fn check_matched<'a>(
        &self,
        urns: impl Iterator<Item = &'a Urn> + Clone,
    ) -> Result<(), EngineError> {
        let flags = [
            ("target", self.opts.targets.as_deref().unwrap_or_default()),
            ("exclude", &self.opts.excludes[..]),
            ("replace", &self.opts.replace[..]),
        ];
        for (flag, patterns) in flags {
            for p in patterns {
                if !urns.clone().any(|u| p.matches(u)) {
                    return Err(EngineError::NoResourceMatches {
                        flag,
                        pattern: p.to_string(),
                        glob: p.is_glob(),
                    });
                }
            }
        }
        Ok(())
    }
}
