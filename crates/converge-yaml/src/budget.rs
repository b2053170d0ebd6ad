//! The limits, counted on the parser's event stream as it goes: nothing is
//! built to find out that a document is too big to build.
//!
//! An alias stands for a copy of what its anchor names: every reader of
//! the document (serde's, the YAML program's) builds that copy. Nine
//! levels of nine aliases are a file of a few hundred bytes that stands for
//! 387 million nodes, so what aliases stand for is bounded, as is how deep
//! the document nests once they are expanded.

use std::collections::HashMap;

use saphyr_parser::{Event, Span};

/// The largest YAML file Converge reads, in bytes (64 MiB). A YAML
/// program of 100,000 resources is about 8 MB; settings and project files
/// are a few KB.
pub const MAX_YAML_BYTES: u64 = 64 << 20;

/// The deepest a YAML document may nest mappings and lists, with aliases
/// expanded (the document's top-level node is level 1). Below the 128
/// levels at which `serde_norway` gives up without saying where, and far
/// above what a project, settings file or program needs.
pub const MAX_YAML_DEPTH: usize = 100;

/// The nodes aliases may stand for in any file, all its aliases together:
/// each `*name` counts every node of what its anchor names, aliases inside
/// that expanded. Past this, [`ALIAS_NODES_PER_NODE`] more for each node
/// the file writes out: what reading a file builds is bounded by a small
/// multiple of what it writes, as Go's YAML parser, which Pulumi uses,
/// bounds the share of a document that comes from aliases. Repeating a
/// block of tags in every resource of a program stays well inside; nine
/// levels of nine aliases (387 million nodes in a few hundred bytes) are
/// refused at the sixth level.
pub const ALIAS_NODES_ALLOWANCE: u64 = 100_000;

/// The further nodes aliases may stand for, per node written out in the
/// file ([`ALIAS_NODES_ALLOWANCE`]): a document read may be at most five
/// times what it writes out, past the allowance.
pub const ALIAS_NODES_PER_NODE: u64 = 4;

/// Which limit a document went past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// [`MAX_YAML_BYTES`].
    Size,
    /// [`MAX_YAML_DEPTH`].
    Depth,
    /// [`ALIAS_NODES_ALLOWANCE`] and [`ALIAS_NODES_PER_NODE`].
    Aliases,
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Limit::Size => write!(
                f,
                "the file is larger than {MAX_YAML_BYTES} bytes (64 MiB), the most Converge reads as YAML"
            ),
            Limit::Depth => write!(
                f,
                "the document nests mappings and lists more than {MAX_YAML_DEPTH} levels deep \
                 (aliases expanded), the most Converge reads"
            ),
            Limit::Aliases => write!(
                f,
                "the document contains excessive aliasing: its aliases stand for more than \
                 {ALIAS_NODES_ALLOWANCE} nodes plus {ALIAS_NODES_PER_NODE} for each node it \
                 writes out; write the repeated values out, or anchor smaller ones"
            ),
        }
    }
}

/// Where a document went past a limit: 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitExceeded {
    pub limit: Limit,
    pub line: usize,
    pub column: usize,
}

/// What an anchor names, as the limits count it.
#[derive(Debug, Clone, Copy)]
struct Anchored {
    /// Its nodes, aliases inside it expanded.
    nodes: u64,
    /// Its levels of nesting (a scalar 0, an empty list 1).
    depth: usize,
}

/// A mapping or list not yet ended.
#[derive(Debug)]
struct Open {
    anchor: usize,
    /// Its nodes so far, itself included, aliases expanded.
    nodes: u64,
    /// Its deepest level of nesting so far, itself counted.
    depth: usize,
}

/// The limits of one YAML stream, fed its events in order by
/// [`Budget::observe`]. Any reader built on `saphyr-parser` feeds it each
/// event before acting on it.
#[derive(Debug, Default)]
pub struct Budget {
    open: Vec<Open>,
    anchors: HashMap<usize, Anchored>,
    /// Nodes the stream writes out (aliases count one each).
    written: u64,
    /// Nodes the aliases stand for.
    aliased: u64,
}

impl Budget {
    pub fn new() -> Budget {
        Budget::default()
    }

    /// Counts `event`, which starts at `span`; `Err` once the stream has
    /// gone past a limit (the event is where).
    pub fn observe(&mut self, event: &Event<'_>, span: &Span) -> Result<(), LimitExceeded> {
        let exceeded = |limit| LimitExceeded {
            limit,
            line: span.start.line(),
            column: span.start.col() + 1,
        };
        match event {
            Event::Scalar(_, _, anchor, _) => {
                self.written += 1;
                if *anchor != 0 {
                    self.anchors
                        .insert(*anchor, Anchored { nodes: 1, depth: 0 });
                }
                self.add(Anchored { nodes: 1, depth: 0 });
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                self.written += 1;
                if self.open.len() >= MAX_YAML_DEPTH {
                    return Err(exceeded(Limit::Depth));
                }
                self.open.push(Open {
                    anchor: *anchor,
                    nodes: 1,
                    depth: 1,
                });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some(done) = self.open.pop() {
                    let named = Anchored {
                        nodes: done.nodes,
                        depth: done.depth,
                    };
                    if done.anchor != 0 {
                        self.anchors.insert(done.anchor, named);
                    }
                    self.add(named);
                }
            }
            Event::Alias(id) => {
                self.written += 1;
                // An alias of no anchor (yet) is the reader's to refuse.
                let named = self
                    .anchors
                    .get(id)
                    .copied()
                    .unwrap_or(Anchored { nodes: 1, depth: 0 });
                self.aliased = self.aliased.saturating_add(named.nodes);
                let allowed = ALIAS_NODES_ALLOWANCE
                    .saturating_add(self.written.saturating_mul(ALIAS_NODES_PER_NODE));
                if self.aliased > allowed {
                    return Err(exceeded(Limit::Aliases));
                }
                if self.open.len() + named.depth > MAX_YAML_DEPTH {
                    return Err(exceeded(Limit::Depth));
                }
                self.add(named);
            }
            Event::Nothing
            | Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart(_)
            | Event::DocumentEnd => {}
        }
        Ok(())
    }

    /// Counts a finished node into the collection holding it.
    fn add(&mut self, node: Anchored) {
        if let Some(parent) = self.open.last_mut() {
            parent.nodes = parent.nodes.saturating_add(node.nodes);
            parent.depth = parent.depth.max(node.depth + 1);
        }
    }
}
