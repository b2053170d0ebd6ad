//! Property values as literals of a programming language: the walk over a
//! value is one, each language's spelling (`Syntax`) its own.

use anyhow::{bail, Result};
use converge_model::{Asset, PropertyValue};

/// How a language spells the literals of property values.
pub trait Syntax {
    /// The language's name, for errors.
    const LANGUAGE: &'static str;
    fn null() -> &'static str;
    fn boolean(b: bool) -> &'static str;
    /// An object of `(key, value)` entries (values already spelled) at
    /// nesting depth `depth`.
    fn object(entries: Vec<(&str, String)>, depth: usize) -> String;
    fn secret(inner: String) -> String;
    fn asset(a: &Asset, owner: &str) -> Result<String>;
}

/// A string literal: JSON's strings are Python's and JavaScript's.
pub fn string(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

/// `v` spelled in `S`, at nesting depth `depth`; `owner` names the
/// resource in errors.
pub fn literal<S: Syntax>(v: &PropertyValue, owner: &str, depth: usize) -> Result<String> {
    Ok(match v {
        PropertyValue::Null => S::null().to_owned(),
        PropertyValue::Bool(b) => S::boolean(*b).to_owned(),
        PropertyValue::Number(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => {
            format!("{}", *n as i64)
        }
        PropertyValue::Number(n) => format!("{n:?}"),
        PropertyValue::String(s) => string(s),
        PropertyValue::Array(items) => {
            let items: Vec<String> = items
                .iter()
                .map(|i| literal::<S>(i, owner, depth))
                .collect::<Result<_>>()?;
            format!("[{}]", items.join(", "))
        }
        PropertyValue::Object(map) => {
            let entries = map
                .iter()
                .map(|(k, v)| Ok((k.as_str(), literal::<S>(v, owner, depth + 1)?)))
                .collect::<Result<_>>()?;
            S::object(entries, depth)
        }
        PropertyValue::Secret(inner) => S::secret(literal::<S>(inner, owner, depth)?),
        PropertyValue::Output(o) => match (&o.element, o.secret) {
            (Some(inner), true) => S::secret(literal::<S>(inner, owner, depth)?),
            (Some(inner), false) => literal::<S>(inner, owner, depth)?,
            (None, _) => bail!("{owner}: an input is not known"),
        },
        PropertyValue::Asset(a) => S::asset(a, owner)?,
        PropertyValue::Archive(_)
        | PropertyValue::ResourceReference(_)
        | PropertyValue::Unknown => {
            bail!(
                "{owner}: an input is a {}, which the generated code cannot write in {}",
                v.kind_name(),
                S::LANGUAGE
            )
        }
    })
}
