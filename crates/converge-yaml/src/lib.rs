//! Every YAML file Converge reads, read within bounds.
//!
//! Project files (`Pulumi.yaml`), stack settings (`Pulumi.<stack>.yaml`),
//! YAML programs and `Main.yaml`, the templates of `converge new`, a file
//! backend's `meta.yaml`, and any YAML file a later feature reads go
//! through here: a file larger than [`MAX_YAML_BYTES`], a document nested
//! deeper than [`MAX_YAML_DEPTH`], or one whose aliases stand for more
//! than [`ALIAS_NODES_ALLOWANCE`] nodes (plus [`ALIAS_NODES_PER_NODE`] for
//! each node written out) is refused with a [`YamlError`] naming the file
//! and the line, before anything is built from it.
//!
//! - [`load`] / [`from_str`]: a file or text into any `serde` type, through
//!   `serde_norway`, once [`check`] passed.
//! - [`read_file`]: a file's text, refused unread when it is too large.
//! - [`Budget`]: the limits themselves, fed `saphyr-parser` events; a
//!   reader built on that parser (the YAML program reader keeps each node's
//!   position) feeds it every event instead of parsing twice.
//!
//! `serde_norway`'s own bounds (a recursion limit of 128, a cap on alias
//! replays at 100 per event of the document) are not enough: a list of
//! 50,000 aliases of a 50,000-item list passes the cap and stands for 2.5
//! billion nodes.

mod budget;

use std::fmt;
use std::io::Read as _;
use std::path::Path;

use saphyr_parser::Parser;
use serde::de::DeserializeOwned;

pub use budget::{
    Budget, Limit, LimitExceeded, ALIAS_NODES_ALLOWANCE, ALIAS_NODES_PER_NODE, MAX_YAML_BYTES,
    MAX_YAML_DEPTH,
};

/// A YAML file that could not be read, and where: displays as
/// `file:line:column: message`, or `file: message` when no line is known.
#[derive(Debug, thiserror::Error)]
pub struct YamlError {
    /// The file as the user knows it (a path, or a name such as
    /// `Pulumi.yaml`).
    pub file: String,
    /// 1-based; 0 when unknown.
    pub line: usize,
    pub column: usize,
    pub kind: YamlErrorKind,
}

/// What is wrong with a YAML file.
#[derive(Debug, thiserror::Error)]
pub enum YamlErrorKind {
    #[error("cannot read it: {0}")]
    Read(#[source] std::io::Error),
    #[error("{0}")]
    Limit(Limit),
    /// Not YAML (or not UTF-8).
    #[error("invalid YAML: {0}")]
    Syntax(String),
    /// YAML, but not of the shape asked for.
    #[error("{0}")]
    Shape(String),
}

impl fmt::Display for YamlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => write!(f, "{}: {}", self.file, self.kind),
            line => write!(f, "{}:{}:{}: {}", self.file, line, self.column, self.kind),
        }
    }
}

impl YamlError {
    fn new(file: &str, kind: YamlErrorKind) -> YamlError {
        YamlError {
            file: file.to_owned(),
            line: 0,
            column: 0,
            kind,
        }
    }

    /// The limit the document went past, if that is what is wrong.
    pub fn limit(&self) -> Option<Limit> {
        match self.kind {
            YamlErrorKind::Limit(limit) => Some(limit),
            _ => None,
        }
    }

    /// A limit the document went past, in `file`.
    pub fn exceeded(file: &str, at: LimitExceeded) -> YamlError {
        YamlError {
            file: file.to_owned(),
            line: at.line,
            column: at.column,
            kind: YamlErrorKind::Limit(at.limit),
        }
    }
}

/// The text of the YAML file at `path`, named `path` in errors; a file
/// larger than [`MAX_YAML_BYTES`] is refused without being read.
pub fn read_file(path: &Path) -> Result<String, YamlError> {
    read_named(path, &path.display().to_string())
}

/// [`read_file`], with the file called `file` in errors.
pub fn read_named(path: &Path, file: &str) -> Result<String, YamlError> {
    let read = |e| YamlError::new(file, YamlErrorKind::Read(e));
    let f = std::fs::File::open(path).map_err(read)?;
    if f.metadata().map_err(read)?.len() > MAX_YAML_BYTES {
        return Err(YamlError::new(file, YamlErrorKind::Limit(Limit::Size)));
    }
    // A file that grows while read (or a device) stops at the limit.
    let mut bytes = Vec::new();
    f.take(MAX_YAML_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read)?;
    if bytes.len() as u64 > MAX_YAML_BYTES {
        return Err(YamlError::new(file, YamlErrorKind::Limit(Limit::Size)));
    }
    String::from_utf8(bytes)
        .map_err(|e| YamlError::new(file, YamlErrorKind::Syntax(format!("not UTF-8 text: {e}"))))
}

/// Checks `text` (the contents of `file`) against every limit, parsing it
/// without building anything.
pub fn check(file: &str, text: &str) -> Result<(), YamlError> {
    if text.len() as u64 > MAX_YAML_BYTES {
        return Err(YamlError::new(file, YamlErrorKind::Limit(Limit::Size)));
    }
    let mut budget = Budget::new();
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(|e| YamlError {
            file: file.to_owned(),
            line: e.marker().line(),
            column: e.marker().col() + 1,
            kind: YamlErrorKind::Syntax(e.info().to_owned()),
        })?;
        budget
            .observe(&event, &span)
            .map_err(|at| YamlError::exceeded(file, at))?;
    }
    Ok(())
}

/// A `T` from `text` (the contents of `file`), once [`check`] passed.
pub fn from_str<T: DeserializeOwned>(file: &str, text: &str) -> Result<T, YamlError> {
    check(file, text)?;
    serde_norway::from_str(text).map_err(|e| {
        let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
        YamlError {
            file: file.to_owned(),
            line,
            column,
            kind: YamlErrorKind::Shape(without_location(&e.to_string())),
        }
    })
}

/// A `T` from `bytes` (the contents of `file`): [`from_str`] of UTF-8 text.
pub fn from_slice<T: DeserializeOwned>(file: &str, bytes: &[u8]) -> Result<T, YamlError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| YamlError::new(file, YamlErrorKind::Syntax(format!("not UTF-8 text: {e}"))))?;
    from_str(file, text)
}

/// A `T` from the YAML file at `path`: [`read_file`], then [`from_str`].
pub fn load<T: DeserializeOwned>(path: &Path) -> Result<T, YamlError> {
    let file = path.display().to_string();
    let text = read_named(path, &file)?;
    from_str(&file, &text)
}

/// serde_norway's message without the " at line L column C" it appends,
/// since [`YamlError`] says where.
fn without_location(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) if message[at..].contains(" column ") => message[..at].to_owned(),
        _ => message.to_owned(),
    }
}

#[cfg(test)]
mod tests;
