//! Property paths: Pulumi's syntax for naming a location inside a resource's
//! properties (`a.b[0]["key.with.dots"]`, `tags.*`, `list[*].name`), as used
//! by `ignoreChanges`, `replaceOnChanges` and the keys of detailed diffs.
//!
//! Grammar, read leniently as Pulumi does:
//!
//! ```text
//! path     := first { accessor }
//! first    := name | bracket
//! accessor := '.' name | bracket | '.' bracket   (tolerated: old providers write it)
//! name     := one or more characters but '.', '[', ']', '"'   ("*" is the wildcard)
//! bracket  := '[' ( digits | '*' | '"' { char | '\"' | '\\' } '"' ) ']'
//! ```
//!
//! Printing gives the canonical form: a key made only of ASCII letters,
//! digits and `_` is written `.name` (bare when first), any other key
//! `["..."]` with `"` and `\` escaped, an index `[n]`, a wildcard `[*]`.
//!
//! One deliberate difference from Pulumi: a quoted `["*"]` is the literal key
//! `*`, not a wildcard; only an unquoted `*` or `[*]` is a wildcard.
//!
//! Secrets and known output values along a path are entered transparently: a
//! path names the content of a secret object, not the wrapper.

use std::fmt;
use std::str::FromStr;

use crate::{PropertyMap, PropertyValue};

/// One step of a [`PropertyPath`].
///
/// The derived order (keys, then indices, then wildcards; keys by string,
/// indices by number) is the order of [`PropertyPath`]s in a detailed diff.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathElement {
    /// A property of an object.
    Key(String),
    /// An element of an array.
    Index(usize),
    /// Any property of an object or any element of an array.
    Wildcard,
}

/// A path to a location inside a property map.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PropertyPath(Vec<PathElement>);

/// Why a string is not a property path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid property path {path:?} at column {column}: {kind}")]
pub struct PropertyPathError {
    pub path: String,
    /// 1-based, in characters.
    pub column: usize,
    pub kind: PropertyPathErrorKind,
}

/// What is wrong with a malformed property path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PropertyPathErrorKind {
    #[error("the path is empty")]
    Empty,
    #[error("a path cannot start with '.'")]
    LeadingDot,
    #[error("a path cannot end with '.'")]
    TrailingDot,
    #[error("empty property name between two '.'")]
    EmptyKey,
    #[error("'[' is never closed")]
    UnterminatedBracket,
    #[error("the quoted key is never closed")]
    UnterminatedQuote,
    #[error("expected ']' after the quoted key")]
    ExpectedClosingBracket,
    #[error("{0:?} is not an array index (digits or '*'; quote keys as [\"key\"])")]
    BadIndex(String),
    #[error("unexpected {0:?}")]
    UnexpectedCharacter(char),
}

/// How many nulls [`PropertyPath::set`] may add to reach an index: beyond,
/// an index is a mistake, not a request for a huge array.
pub const MAX_PADDING: usize = 1 << 16;

/// Why [`PropertyPath::set`] could not set a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathSetError {
    #[error("cannot set a value at an empty property path")]
    Empty,
    #[error("cannot set a value at {path}: it contains a wildcard")]
    Wildcard { path: PropertyPath },
    #[error(
        "cannot set a value at {path}: index {index} is over {MAX_PADDING} past the array's end"
    )]
    IndexTooLarge { path: PropertyPath, index: usize },
    #[error("cannot set a value at {path}: {} is {found}, not {expected}", location(.at))]
    TypeMismatch {
        path: PropertyPath,
        /// The prefix of `path` whose value has the wrong type.
        at: PropertyPath,
        found: &'static str,
        expected: &'static str,
    },
}

/// Why [`PropertyPath::reset`] could not carry the old value over.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot reset {path} to its old value: at {}, {reason}", location(.at))]
pub struct PathResetError {
    pub path: PropertyPath,
    /// The concrete prefix where old and new could not be reconciled.
    pub at: PropertyPath,
    pub reason: &'static str,
}

fn location(at: &PropertyPath) -> String {
    if at.0.is_empty() {
        "the root".to_owned()
    } else {
        at.to_string()
    }
}

impl PropertyPath {
    pub fn new(elements: Vec<PathElement>) -> Self {
        PropertyPath(elements)
    }

    pub fn elements(&self) -> &[PathElement] {
        &self.0
    }

    pub fn has_wildcards(&self) -> bool {
        self.0.contains(&PathElement::Wildcard)
    }

    /// Parses a property path. The empty string is refused: every path a
    /// user or provider writes names something.
    pub fn parse(s: &str) -> Result<Self, PropertyPathError> {
        parse(s)
    }

    /// True if `concrete` has as many elements as this pattern and each is
    /// matched (a wildcard matches any key or index).
    pub fn matches(&self, concrete: &PropertyPath) -> bool {
        self.0.len() == concrete.0.len() && self.contains(concrete)
    }

    /// True if this pattern matches `other` or one of its ancestors: the
    /// pattern `tags` contains `tags.Name`, `list[*]` contains `list[2].x`.
    /// This is Pulumi's `Contains`, used to ask whether a changed path is
    /// covered by an `ignoreChanges` or `replaceOnChanges` entry.
    pub fn contains(&self, other: &PropertyPath) -> bool {
        other.0.len() >= self.0.len()
            && self.0.iter().zip(&other.0).all(|(p, o)| match (p, o) {
                (PathElement::Wildcard, _) => true,
                (PathElement::Key(a), PathElement::Key(b)) => a == b,
                (PathElement::Index(a), PathElement::Index(b)) => a == b,
                _ => false,
            })
    }

    /// The value at this path in `map`, if every step exists. A path with a
    /// wildcard names no single value: `None`.
    pub fn get<'a>(&self, map: &'a PropertyMap) -> Option<&'a PropertyValue> {
        let (PathElement::Key(first), rest) = self.0.split_first()? else {
            return None;
        };
        get_in(map.get(first)?, rest)
    }

    /// The value at this path inside `value` (the empty path names `value`).
    pub fn get_value<'a>(&self, value: &'a PropertyValue) -> Option<&'a PropertyValue> {
        get_in(value, &self.0)
    }

    /// Sets the value at this path, creating missing (or null) intermediate
    /// objects for keys and arrays for indices; an array too short for an
    /// index is padded with nulls. Fails, changing nothing, if a value along
    /// the way has the wrong type.
    pub fn set(&self, map: &mut PropertyMap, value: PropertyValue) -> Result<(), PathSetError> {
        let (first, rest) = self.0.split_first().ok_or(PathSetError::Empty)?;
        if self.has_wildcards() {
            return Err(PathSetError::Wildcard { path: self.clone() });
        }
        let PathElement::Key(first) = first else {
            return Err(self.mismatch(0, "object", "array"));
        };
        match map.get_mut(first) {
            Some(slot) if !rest.is_empty() => self.set_in(slot, 1, value),
            _ => {
                let built = self.build(1, value)?;
                map.insert(first.clone(), built);
                Ok(())
            }
        }
    }

    /// Removes the value at this path and returns it; `None` if it did not
    /// exist. An array element is replaced by null, as in Pulumi, so that the
    /// other indices keep naming the same elements.
    pub fn delete(&self, map: &mut PropertyMap) -> Option<PropertyValue> {
        let (PathElement::Key(first), rest) = self.0.split_first()? else {
            return None;
        };
        if rest.is_empty() {
            return map.remove(first);
        }
        let (last, middle) = rest.split_last()?;
        let mut target = map.get_mut(first)?;
        for element in middle {
            target = step_mut(target, element)?;
        }
        match (last, peel_mut(target)) {
            (PathElement::Key(k), PropertyValue::Object(m)) => m.remove(k),
            (PathElement::Index(i), PropertyValue::Array(items)) => items
                .get_mut(*i)
                .map(|v| std::mem::replace(v, PropertyValue::Null)),
            _ => None,
        }
    }

    /// Makes `new` hold, at every location this path matches, what `old`
    /// holds there (deleting it from `new` where `old` has none), as
    /// `ignoreChanges` requires. Wildcards are expanded over both sides.
    ///
    /// The rules are Pulumi's: intermediate locations are never created, and
    /// array elements are never added or removed, so a path that reaches
    /// into a part present on one side only is an error (a path absent from
    /// both sides is fine). A value carried out of an old secret into a
    /// place that is not secret in `new` is wrapped as a secret.
    pub fn reset(&self, old: &PropertyMap, new: &mut PropertyMap) -> Result<(), PathResetError> {
        let mut at = Vec::new();
        let old = Old {
            view: View::Object(old),
            secret: false,
        };
        let outcome = if self.0.is_empty() {
            Err("the path is empty")
        } else {
            reset_in(&self.0, old, ViewMut::Object(new), false, &mut at)
        };
        outcome.map_err(|reason| PathResetError {
            path: self.clone(),
            at: PropertyPath(at),
            reason,
        })
    }

    fn mismatch(&self, depth: usize, expected: &'static str, found: &'static str) -> PathSetError {
        PathSetError::TypeMismatch {
            path: self.clone(),
            at: PropertyPath(self.0[..depth].to_vec()),
            found,
            expected,
        }
    }

    /// Sets the value at elements `depth..` inside `target`, which holds the
    /// value at elements `..depth`. Only existing values are checked, and
    /// nothing changes before the last check has passed.
    fn set_in(
        &self,
        target: &mut PropertyValue,
        depth: usize,
        value: PropertyValue,
    ) -> Result<(), PathSetError> {
        let Some(element) = self.0.get(depth) else {
            *target = value;
            return Ok(());
        };
        let last = depth + 1 == self.0.len();
        match (element, peel_mut(target)) {
            (_, inner @ PropertyValue::Null) => {
                *inner = self.build(depth, value)?;
                Ok(())
            }
            (PathElement::Key(k), PropertyValue::Object(m)) => match m.get_mut(k) {
                Some(child) if !last => self.set_in(child, depth + 1, value),
                _ => {
                    let built = self.build(depth + 1, value)?;
                    m.insert(k.clone(), built);
                    Ok(())
                }
            },
            (PathElement::Index(i), PropertyValue::Array(items)) if *i < items.len() => {
                self.set_in(&mut items[*i], depth + 1, value)
            }
            (PathElement::Index(i), PropertyValue::Array(items)) => {
                self.check_padding(*i, items.len())?;
                let built = self.build(depth + 1, value)?;
                items.resize(*i, PropertyValue::Null);
                items.push(built);
                Ok(())
            }
            (PathElement::Key(_), other) => Err(self.mismatch(depth, "object", other.kind_name())),
            (PathElement::Index(_), other) => Err(self.mismatch(depth, "array", other.kind_name())),
            (PathElement::Wildcard, _) => Err(PathSetError::Wildcard { path: self.clone() }),
        }
    }

    fn check_padding(&self, index: usize, len: usize) -> Result<(), PathSetError> {
        if index.saturating_sub(len) > MAX_PADDING {
            return Err(PathSetError::IndexTooLarge {
                path: self.clone(),
                index,
            });
        }
        Ok(())
    }

    /// The value that holds `value` at elements `depth..`, built from nothing.
    fn build(&self, depth: usize, value: PropertyValue) -> Result<PropertyValue, PathSetError> {
        self.0[depth..]
            .iter()
            .rev()
            .try_fold(value, |inner, element| match element {
                PathElement::Key(k) => Ok(PropertyValue::Object(PropertyMap::from([(
                    k.clone(),
                    inner,
                )]))),
                PathElement::Index(i) => {
                    self.check_padding(*i, 0)?;
                    let mut items = vec![PropertyValue::Null; *i];
                    items.push(inner);
                    Ok(PropertyValue::Array(items))
                }
                PathElement::Wildcard => Err(PathSetError::Wildcard { path: self.clone() }),
            })
    }
}

impl FromStr for PropertyPath {
    type Err = PropertyPathError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PropertyPath::parse(s)
    }
}

impl fmt::Display for PropertyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, element) in self.0.iter().enumerate() {
            match element {
                PathElement::Key(k) if is_simple_name(k) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(k)?;
                }
                PathElement::Key(k) => {
                    f.write_str("[\"")?;
                    for c in k.chars() {
                        if c == '"' || c == '\\' {
                            f.write_str("\\")?;
                        }
                        write!(f, "{c}")?;
                    }
                    f.write_str("\"]")?;
                }
                PathElement::Index(n) => write!(f, "[{n}]")?,
                PathElement::Wildcard => f.write_str("[*]")?,
            }
        }
        Ok(())
    }
}

/// Pulumi's rule for keys printed without quotes.
fn is_simple_name(k: &str) -> bool {
    !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses a non-empty path; `error` builds an error at a 0-based index.
fn parse(source: &str) -> Result<PropertyPath, PropertyPathError> {
    use PropertyPathErrorKind as K;
    let chars: Vec<char> = source.chars().collect();
    let error = |index: usize, kind| PropertyPathError {
        path: source.to_owned(),
        column: index + 1,
        kind,
    };
    if chars.is_empty() {
        return Err(error(0, K::Empty));
    }
    let mut elements = Vec::new();
    let mut after_dot = false;
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '[' if chars.get(i + 1) == Some(&'"') => {
                let mut key = String::new();
                let mut j = i + 2;
                loop {
                    match chars.get(j) {
                        None => return Err(error(i + 1, K::UnterminatedQuote)),
                        Some('"') => break,
                        Some('\\') if matches!(chars.get(j + 1), Some('"' | '\\')) => {
                            key.push(chars[j + 1]);
                            j += 2;
                        }
                        Some(&c) => {
                            key.push(c);
                            j += 1;
                        }
                    }
                }
                match chars.get(j + 1) {
                    Some(']') => elements.push(PathElement::Key(key)),
                    None => return Err(error(i, K::UnterminatedBracket)),
                    Some(_) => return Err(error(j + 1, K::ExpectedClosingBracket)),
                }
                after_dot = false;
                i = j + 2;
            }
            '[' => {
                let close = chars[i + 1..]
                    .iter()
                    .position(|&c| c == ']')
                    .ok_or_else(|| error(i, K::UnterminatedBracket))?
                    + i
                    + 1;
                let segment: String = chars[i + 1..close].iter().collect();
                let index = (!segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit()))
                    .then(|| segment.parse().ok())
                    .flatten();
                elements.push(match index {
                    Some(index) => PathElement::Index(index),
                    None if segment == "*" => PathElement::Wildcard,
                    None => return Err(error(i + 1, K::BadIndex(segment))),
                });
                after_dot = false;
                i = close + 1;
            }
            '.' if elements.is_empty() => return Err(error(i, K::LeadingDot)),
            '.' if after_dot => return Err(error(i, K::EmptyKey)),
            '.' if i + 1 == chars.len() => return Err(error(i, K::TrailingDot)),
            '.' => {
                after_dot = true;
                i += 1;
            }
            c if !elements.is_empty() && !after_dot => {
                return Err(error(i, K::UnexpectedCharacter(c)))
            }
            _ => {
                let start = i;
                while i < chars.len() && chars[i] != '.' && chars[i] != '[' {
                    if chars[i] == ']' || chars[i] == '"' {
                        return Err(error(i, K::UnexpectedCharacter(chars[i])));
                    }
                    i += 1;
                }
                let name: String = chars[start..i].iter().collect();
                elements.push(if name == "*" {
                    PathElement::Wildcard
                } else {
                    PathElement::Key(name)
                });
                after_dot = false;
            }
        }
    }
    Ok(PropertyPath(elements))
}

/// A value with its secret and known-output wrappers removed, and whether
/// any of them was secret. `value` is `None` when the value is unknown.
#[derive(Debug, Clone, Copy)]
pub struct Peeled<'a> {
    pub secret: bool,
    pub value: Option<&'a PropertyValue>,
}

pub fn peel(mut v: &PropertyValue) -> Peeled<'_> {
    let mut secret = false;
    loop {
        match v {
            PropertyValue::Secret(inner) => {
                secret = true;
                v = inner;
            }
            PropertyValue::Output(o) => {
                secret |= o.secret;
                match &o.element {
                    Some(element) => v = element,
                    None => {
                        return Peeled {
                            secret,
                            value: None,
                        }
                    }
                }
            }
            PropertyValue::Unknown => {
                return Peeled {
                    secret,
                    value: None,
                }
            }
            _ => {
                return Peeled {
                    secret,
                    value: Some(v),
                }
            }
        }
    }
}

fn peel_mut(v: &mut PropertyValue) -> &mut PropertyValue {
    let peels = match &*v {
        PropertyValue::Secret(_) => true,
        PropertyValue::Output(o) => o.element.is_some(),
        _ => false,
    };
    if !peels {
        return v;
    }
    match v {
        PropertyValue::Secret(inner) => peel_mut(inner),
        PropertyValue::Output(o) => match &mut o.element {
            Some(element) => peel_mut(element),
            None => unreachable!("checked above"),
        },
        other => other,
    }
}

fn step<'a>(v: &'a PropertyValue, element: &PathElement) -> Option<&'a PropertyValue> {
    match (element, peel(v).value?) {
        (PathElement::Key(k), PropertyValue::Object(m)) => m.get(k),
        (PathElement::Index(i), PropertyValue::Array(items)) => items.get(*i),
        _ => None,
    }
}

fn step_mut<'a>(v: &'a mut PropertyValue, element: &PathElement) -> Option<&'a mut PropertyValue> {
    match (element, peel_mut(v)) {
        (PathElement::Key(k), PropertyValue::Object(m)) => m.get_mut(k),
        (PathElement::Index(i), PropertyValue::Array(items)) => items.get_mut(*i),
        _ => None,
    }
}

fn get_in<'a>(v: &'a PropertyValue, path: &[PathElement]) -> Option<&'a PropertyValue> {
    path.iter().try_fold(v, step)
}

/// The old side of a reset, peeled.
#[derive(Clone, Copy)]
struct Old<'a> {
    view: View<'a>,
    secret: bool,
}

#[derive(Clone, Copy)]
enum View<'a> {
    Object(&'a PropertyMap),
    Array(&'a [PropertyValue]),
    Other,
}

enum ViewMut<'a> {
    Object(&'a mut PropertyMap),
    Array(&'a mut Vec<PropertyValue>),
    Other,
}

fn old_view(v: &PropertyValue, secret: bool) -> Old<'_> {
    let peeled = peel(v);
    let view = match peeled.value {
        Some(PropertyValue::Object(m)) => View::Object(m),
        Some(PropertyValue::Array(items)) => View::Array(items),
        _ => View::Other,
    };
    Old {
        view,
        secret: secret || peeled.secret,
    }
}

fn new_view(v: &mut PropertyValue, secret: bool) -> (ViewMut<'_>, bool) {
    let secret = secret || peel(v).secret;
    let view = match peel_mut(v) {
        PropertyValue::Object(m) => ViewMut::Object(m),
        PropertyValue::Array(items) => ViewMut::Array(items),
        _ => ViewMut::Other,
    };
    (view, secret)
}

fn carry(v: &PropertyValue, old: Old<'_>, new_secret: bool) -> PropertyValue {
    if old.secret && !new_secret {
        PropertyValue::secret(v.clone())
    } else {
        v.clone()
    }
}

type Reset = Result<(), &'static str>;

fn reset_in(
    path: &[PathElement],
    old: Old<'_>,
    new: ViewMut<'_>,
    new_secret: bool,
    at: &mut Vec<PathElement>,
) -> Reset {
    let Some((element, rest)) = path.split_first() else {
        return Ok(());
    };
    let mut descend = |element: PathElement, o: Old<'_>, n: &mut PropertyValue| {
        at.push(element);
        let (n, n_secret) = new_view(n, new_secret);
        reset_in(rest, o, n, n_secret, at)?;
        at.pop();
        Ok(())
    };
    match (element, old.view, new) {
        (PathElement::Index(i), View::Array(o), ViewMut::Array(n)) => {
            match (o.get(*i), n.get_mut(*i)) {
                (None, None) if rest.is_empty() => Ok(()),
                (Some(ov), Some(nv)) if rest.is_empty() => {
                    *nv = carry(ov, old, new_secret);
                    Ok(())
                }
                (Some(ov), Some(nv)) => descend(element.clone(), old_view(ov, old.secret), nv),
                _ => Err("the index exists in only one of the old and new arrays"),
            }
        }
        (PathElement::Index(_), View::Array(_), _)
        | (PathElement::Index(_), _, ViewMut::Array(_)) => Err("it is an array on one side only"),
        (PathElement::Index(_), _, _) => Ok(()),
        (PathElement::Key(k), o, n) if rest.is_empty() => {
            let ov = match o {
                View::Object(m) => m.get(k),
                _ => None,
            };
            match (ov, n) {
                (Some(ov), ViewMut::Object(n)) => {
                    n.insert(k.clone(), carry(ov, old, new_secret));
                    Ok(())
                }
                (Some(_), _) => Err("it is an object on the old side only"),
                (None, ViewMut::Object(n)) => {
                    n.remove(k);
                    Ok(())
                }
                (None, _) => Ok(()),
            }
        }
        (PathElement::Key(k), View::Object(o), ViewMut::Object(n)) => {
            match (o.get(k), n.get_mut(k)) {
                (Some(ov), Some(nv)) => descend(element.clone(), old_view(ov, old.secret), nv),
                (None, Some(nv)) => {
                    let absent = Old {
                        view: View::Other,
                        secret: old.secret,
                    };
                    descend(element.clone(), absent, nv)
                }
                (Some(_), None) => {
                    at.push(element.clone());
                    Err("it is missing from the new value")
                }
                (None, None) => Ok(()),
            }
        }
        (PathElement::Key(_), View::Object(_), _)
        | (PathElement::Key(_), _, ViewMut::Object(_)) => Err("it is an object on one side only"),
        (PathElement::Key(_), _, _) => Ok(()),
        (PathElement::Wildcard, o, n) if rest.is_empty() => match (o, n) {
            (View::Object(o), ViewMut::Object(n)) => {
                *n = o
                    .iter()
                    .map(|(k, v)| (k.clone(), carry(v, old, new_secret)))
                    .collect();
                Ok(())
            }
            (View::Array(o), ViewMut::Array(n)) if o.len() == n.len() => {
                *n = o.iter().map(|v| carry(v, old, new_secret)).collect();
                Ok(())
            }
            (View::Array(_), ViewMut::Array(_)) => Err("the arrays have different lengths"),
            (_, ViewMut::Object(_) | ViewMut::Array(_)) => Ok(()),
            (_, ViewMut::Other) => Err("a wildcard needs an object or an array"),
        },
        (PathElement::Wildcard, View::Object(o), ViewMut::Object(n)) => {
            for (k, ov) in o {
                let Some(nv) = n.get_mut(k) else {
                    at.push(PathElement::Key(k.clone()));
                    return Err("it is missing from the new value");
                };
                descend(PathElement::Key(k.clone()), old_view(ov, old.secret), nv)?;
            }
            Ok(())
        }
        (PathElement::Wildcard, View::Array(o), ViewMut::Array(n)) if o.len() == n.len() => {
            for (i, (ov, nv)) in o.iter().zip(n.iter_mut()).enumerate() {
                descend(PathElement::Index(i), old_view(ov, old.secret), nv)?;
            }
            Ok(())
        }
        (PathElement::Wildcard, View::Array(_), ViewMut::Array(_)) => {
            Err("the arrays have different lengths")
        }
        (PathElement::Wildcard, _, _) => {
            Err("a wildcard needs an object or an array on both sides")
        }
    }
}

#[cfg(test)]
mod tests;
