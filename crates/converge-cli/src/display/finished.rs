//! The lines of a step that finished without error: its summary line (with
//! the changed keys, `[diff: ~length]`), and with `--diff` the values that
//! change, old → new.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use converge_engine::StepOp;
use converge_model::{DiffKind, PropertyDiff, PropertyMap, PropertyPath, ResourceState, Urn};

use super::values::{changed_keys, diff_lines, property_lines, ChangedKeys, ValueStyle};
use super::{done, elapsed_suffix, label, progressive, symbol, DisplayOptions};

pub(super) struct FinishedStep<'a> {
    pub op: StepOp,
    pub old: Option<&'a ResourceState>,
    pub new: Option<&'a ResourceState>,
    /// The provider's (or the engine's) diff: property path → change.
    pub diff: &'a BTreeMap<String, PropertyDiff>,
}

/// What a step's detail compares.
enum Detail<'a> {
    None,
    /// Every property, under one sign.
    Whole(char, &'a PropertyMap),
    /// Old → new.
    Change(Cow<'a, PropertyMap>, Cow<'a, PropertyMap>),
}

impl FinishedStep<'_> {
    pub fn render(
        &self,
        urn: &Urn,
        elapsed: Option<Duration>,
        opts: DisplayOptions,
    ) -> Vec<String> {
        if self.op == StepOp::Same {
            return match opts.show_sames {
                true => vec![format!("    {} {}", label(urn), done(StepOp::Same))],
                false => Vec::new(),
            };
        }
        let op = match (self.op, self.new) {
            // A refresh that found the object gone deletes it from the state.
            (StepOp::Refresh, None) => StepOp::Delete,
            // Without --show-replacement-steps a replacement is one line,
            // when its replacement is made.
            (StepOp::CreateReplacement, _) if !opts.show_replacement_steps => StepOp::Replace,
            (op, _) => op,
        };
        let verb = if opts.preview {
            progressive(op, true)
        } else {
            done(op)
        };
        let mut line = format!(
            " {:<2} {} {}{}",
            symbol(op),
            label(urn),
            verb,
            elapsed_suffix(elapsed)
        );
        let keys = self.changed_keys();
        if !opts.diff && !keys.is_empty() {
            line.push_str(&format!(" [diff: {}]", keys.compact()));
        }
        let mut lines = vec![line];
        if opts.diff {
            lines.extend(self.detail(opts));
        }
        lines
    }

    fn detail_source(&self) -> Detail<'_> {
        match (self.op, self.old, self.new) {
            // Drift: what the program asked for (the prior inputs) → what
            // the refresh found, at the keys the provider's Diff named.
            (StepOp::Refresh, Some(old), Some(new)) => {
                Detail::Change(Cow::Borrowed(&old.inputs), Cow::Owned(self.old_values(new)))
            }
            (
                StepOp::Update | StepOp::Replace | StepOp::CreateReplacement,
                Some(old),
                Some(new),
            ) => Detail::Change(Cow::Owned(self.old_values(old)), Cow::Borrowed(&new.inputs)),
            (StepOp::Create | StepOp::Import | StepOp::Read, _, Some(new)) => {
                Detail::Whole('+', &new.inputs)
            }
            (StepOp::Delete, Some(old), _) => Detail::Whole('-', &old.inputs),
            _ => Detail::None,
        }
    }

    /// The old values a change is shown from: the old inputs, except where
    /// the provider compared the new inputs with the old outputs (state
    /// that drifted, as a refresh recorded it).
    fn old_values(&self, old: &ResourceState) -> PropertyMap {
        let mut values = old.inputs.clone();
        for (path, change) in self.diff {
            let key = top_level(path);
            if change.input_diff || key.is_empty() {
                continue;
            }
            match old.outputs.get(key) {
                Some(v) => values.insert(key.to_owned(), v.clone()),
                None => values.remove(key),
            };
        }
        values
    }

    /// A diff kind as shown: a refresh's Diff ran from the refreshed state
    /// to the program's inputs, and drift is shown the other way.
    fn shown_kind(&self, kind: DiffKind) -> DiffKind {
        if self.op == StepOp::Refresh {
            inverted(kind)
        } else {
            kind
        }
    }

    /// The top-level keys that change, by kind: from the provider's diff
    /// when it names any, else from comparing the values.
    fn changed_keys(&self) -> ChangedKeys {
        if !self.diff.is_empty() {
            let mut out = ChangedKeys::default();
            let mut seen = BTreeSet::new();
            for (path, change) in self.diff {
                let key = top_level(path);
                if key.is_empty() || !seen.insert(key.to_owned()) {
                    continue;
                }
                let whole_key = path.len() == key.len();
                let list = match self.shown_kind(change.kind) {
                    DiffKind::Add | DiffKind::AddReplace if whole_key => &mut out.added,
                    DiffKind::Delete | DiffKind::DeleteReplace if whole_key => &mut out.deleted,
                    _ => &mut out.updated,
                };
                list.push(key.to_owned());
            }
            return out;
        }
        match self.detail_source() {
            Detail::Change(old, new) => changed_keys(&old, &new),
            _ => ChangedKeys::default(),
        }
    }

    fn detail(&self, opts: DisplayOptions) -> Vec<String> {
        let style = ValueStyle {
            show_secrets: opts.show_secrets,
        };
        let hidden = self.hidden_paths();
        let mut hidden_changes = Vec::new();
        let mut lines = match self.detail_source() {
            Detail::None => Vec::new(),
            Detail::Whole(sign, map) => {
                let mut shown = map.clone();
                for path in &hidden {
                    if path.delete(&mut shown).is_some() {
                        hidden_changes.push((sign, path));
                    }
                }
                property_lines(sign, &shown, style)
            }
            Detail::Change(old, new) => {
                let (mut old, mut new) = (old.into_owned(), new.into_owned());
                for path in &hidden {
                    let changed = path.get(&old) != path.get(&new);
                    path.delete(&mut old);
                    path.delete(&mut new);
                    if changed {
                        hidden_changes.push(('~', path));
                    }
                }
                let mut lines = diff_lines(&old, &new, style);
                // What the provider reports beyond the compared values (a
                // change of an output, say) is named without values.
                let shown = changed_keys(&old, &new);
                let shown: BTreeSet<&str> = shown
                    .added
                    .iter()
                    .chain(&shown.deleted)
                    .chain(&shown.updated)
                    .map(String::as_str)
                    .collect();
                for (path, change) in self.diff {
                    let is_hidden = PropertyPath::parse(path)
                        .is_ok_and(|p| hidden.iter().any(|h| h.contains(&p)));
                    if !path.is_empty() && !is_hidden && !shown.contains(top_level(path)) {
                        lines.push(format!(
                            "      {} {path}",
                            kind_sign(self.shown_kind(change.kind))
                        ));
                    }
                }
                lines
            }
        };
        // `hideDiffs`: the paths are named, their values not shown.
        for (sign, path) in hidden_changes {
            lines.push(format!("      {sign} {path}: (diff hidden)"));
        }
        let replacing: BTreeSet<&str> = self
            .diff
            .iter()
            .filter(|(_, change)| change.kind.is_replace())
            .map(|(path, _)| top_level(path))
            .filter(|k| !k.is_empty())
            .collect();
        if !replacing.is_empty() {
            let keys: Vec<&str> = replacing.into_iter().collect();
            lines.push(format!(
                "      (replaced because of changes to: {})",
                keys.join(", ")
            ));
        }
        lines
    }
}

impl FinishedStep<'_> {
    /// The resource's `hideDiffs` paths (those that parse).
    fn hidden_paths(&self) -> Vec<PropertyPath> {
        self.new
            .or(self.old)
            .map(|s| {
                s.hide_diff
                    .iter()
                    .filter_map(|p| PropertyPath::parse(p).ok())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The first element of a property path: `tags` of `tags.env`, `list` of
/// `list[0]`, `a.b` of `["a.b"].c`.
fn top_level(path: &str) -> &str {
    if let Some(rest) = path.strip_prefix("[\"") {
        return rest.split_once("\"]").map_or(path, |(k, _)| k);
    }
    let end = path.find(['.', '[']).unwrap_or(path.len());
    &path[..end]
}

fn inverted(kind: DiffKind) -> DiffKind {
    match kind {
        DiffKind::Add => DiffKind::Delete,
        DiffKind::Delete => DiffKind::Add,
        DiffKind::AddReplace => DiffKind::DeleteReplace,
        DiffKind::DeleteReplace => DiffKind::AddReplace,
        other => other,
    }
}

fn kind_sign(kind: DiffKind) -> char {
    match kind {
        DiffKind::Add | DiffKind::AddReplace => '+',
        DiffKind::Delete | DiffKind::DeleteReplace => '-',
        DiffKind::Update | DiffKind::UpdateReplace => '~',
    }
}

#[cfg(test)]
mod tests {
    use super::top_level;

    #[test]
    fn the_top_level_key_of_a_path() {
        assert_eq!(top_level("tags.env"), "tags");
        assert_eq!(top_level("list[0]"), "list");
        assert_eq!(top_level("length"), "length");
        assert_eq!(top_level("[\"a.b\"].c"), "a.b");
    }
}
