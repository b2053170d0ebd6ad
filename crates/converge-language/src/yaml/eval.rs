//! Evaluation of expressions to property values.
//!
//! Secrets taint: an access into a secret, an interpolation or a function
//! over one is secret. Unknowns (previews) propagate: an interpolation or
//! a function over an unknown is unknown, and so is an access into one.
//!
//! Property access, decided as follows: a key missing from an object is
//! `null` (a resource's missing output is unknown in a preview, since it
//! may be computed later); reading a property of `null`, a string, a
//! number or a boolean, a key of a list, an index of an object, or an
//! index past a list's end is an error at the expression's position.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use converge_engine::Monitor;
use converge_model::{PropertyMap, PropertyValue, ResourceReference, Urn};

use super::expr::{Access, Accessor, Expr, ExprKind, Part};
use super::tokens::Tokens;
use super::{functions, Pos, YamlError};

pub(crate) type EvalFuture<'a> =
    Pin<Box<dyn Future<Output = Result<PropertyValue, YamlError>> + Send + 'a>>;

/// A registered resource, as expressions see it.
#[derive(Debug, Clone)]
pub(crate) struct ResourceOut {
    pub urn: Urn,
    pub id: Option<String>,
    pub outputs: PropertyMap,
}

impl ResourceOut {
    /// `<urn>::<id>`, for provider resources.
    pub fn provider_reference(&self) -> String {
        format!("{}::{}", self.urn, self.id.as_deref().unwrap_or_default())
    }
}

/// The value of a variable or resource that has resolved.
#[derive(Debug, Clone)]
pub(crate) enum Slot {
    Variable(PropertyValue),
    Resource(Arc<ResourceOut>),
}

/// The stack-wide facts `${pulumi.…}` reads.
#[derive(Debug, Clone)]
pub(crate) struct Info {
    pub stack: String,
    pub project: String,
    pub cwd: String,
    pub organization: String,
    pub preview: bool,
}

/// Everything an expression can see.
pub(crate) struct Scope<'a> {
    pub file: &'a str,
    /// The directory holding Pulumi.yaml (`pulumi.rootDirectory`).
    pub project_dir: &'a Path,
    /// The program's working directory (`pulumi.cwd`): the directory
    /// `main:` names, else the project directory. Relative paths of the
    /// file functions start here.
    pub work_dir: &'a Path,
    /// The engine: `fn::invoke` goes through it.
    pub monitor: &'a Monitor,
    pub config: &'a BTreeMap<String, PropertyValue>,
    pub slots: &'a HashMap<String, Slot>,
    pub info: &'a Info,
    /// The canonical tokens of `fn::invoke` functions.
    pub tokens: &'a Tokens,
}

impl Scope<'_> {
    pub fn error(&self, pos: Pos, message: impl Into<String>) -> YamlError {
        YamlError::at(self.file, pos, message)
    }

    pub fn eval<'s>(&'s self, e: &'s Expr) -> EvalFuture<'s> {
        Box::pin(async move {
            Ok(match &e.kind {
                ExprKind::Null => PropertyValue::Null,
                ExprKind::Bool(b) => PropertyValue::Bool(*b),
                ExprKind::Number(n) => PropertyValue::Number(*n),
                ExprKind::String(s) => PropertyValue::String(s.clone()),
                ExprKind::Access(a) => self.access(a)?,
                ExprKind::Interpolate(parts) => self.interpolate(parts)?,
                ExprKind::List(items) => {
                    let mut out = Vec::with_capacity(items.len());
                    for item in items {
                        out.push(self.eval(item).await?);
                    }
                    PropertyValue::Array(out)
                }
                ExprKind::Object(entries) => {
                    let mut out = PropertyMap::new();
                    for (k, v) in entries {
                        out.insert(k.name.clone(), self.eval(v).await?);
                    }
                    PropertyValue::Object(out)
                }
                ExprKind::DynamicObject(entries) => {
                    let mut out = PropertyMap::new();
                    let (mut secret, mut unknown) = (false, false);
                    for (k, v) in entries {
                        let key = strip(&self.eval(k).await?);
                        secret |= key.secret;
                        unknown |= key.unknown;
                        let value = self.eval(v).await?;
                        match key.value {
                            PropertyValue::String(name) => {
                                out.insert(name, value);
                            }
                            PropertyValue::Unknown => {}
                            other => {
                                return Err(self.error(
                                    k.pos,
                                    format!(
                                        "an object's key must be a string, not {}",
                                        article(&other)
                                    ),
                                ))
                            }
                        }
                    }
                    let object = if unknown {
                        PropertyValue::Unknown
                    } else {
                        PropertyValue::Object(out)
                    };
                    if secret {
                        PropertyValue::secret(object)
                    } else {
                        object
                    }
                }
                ExprKind::Call(call) => functions::call(self, call, e.pos).await?,
            })
        })
    }

    /// The resource a name refers to (validated to be one).
    pub fn resource(&self, a: &Access) -> Result<&Arc<ResourceOut>, YamlError> {
        match self.slots.get(&a.root) {
            Some(Slot::Resource(r)) => Ok(r),
            _ => Err(self.error(a.pos, format!("'{}' is not a resource", a.root))),
        }
    }

    pub fn access(&self, a: &Access) -> Result<PropertyValue, YamlError> {
        let mut path = a.path.as_slice();
        let mut value = match self.slots.get(&a.root) {
            Some(Slot::Variable(v)) => v.clone(),
            Some(Slot::Resource(r)) => match path.split_first() {
                None => PropertyValue::ResourceReference(Box::new(ResourceReference {
                    urn: r.urn.clone(),
                    id: Some(Box::new(
                        r.id.clone()
                            .map_or(PropertyValue::Unknown, PropertyValue::String),
                    )),
                    package_version: String::new(),
                })),
                Some((first, rest)) => {
                    path = rest;
                    match first {
                        Accessor::Key(k) if k == "urn" => PropertyValue::String(r.urn.to_string()),
                        Accessor::Key(k) if k == "id" => {
                            r.id.clone()
                                .map_or(PropertyValue::Unknown, PropertyValue::String)
                        }
                        Accessor::Key(k) => match r.outputs.get(k) {
                            Some(v) => v.clone(),
                            None if self.info.preview => PropertyValue::Unknown,
                            None => PropertyValue::Null,
                        },
                        Accessor::Index(i) => {
                            return Err(self.error(
                                a.pos,
                                format!("cannot index resource '{}' with [{i}]", a.root),
                            ))
                        }
                    }
                }
            },
            None if a.root == "pulumi" => {
                let Some((Accessor::Key(k), rest)) = path.split_first() else {
                    return Err(self.error(a.pos, "pulumi has no such property"));
                };
                path = rest;
                PropertyValue::String(match k.as_str() {
                    "stack" => self.info.stack.clone(),
                    "project" => self.info.project.clone(),
                    "cwd" => self.info.cwd.clone(),
                    // The directory of Pulumi.yaml.
                    "rootDirectory" => self.project_dir.to_string_lossy().into_owned(),
                    "organization" => self.info.organization.clone(),
                    other => {
                        return Err(self.error(a.pos, format!("unknown property 'pulumi.{other}'")))
                    }
                })
            }
            None => match self.config.get(&a.root) {
                Some(v) => v.clone(),
                None => return Err(self.error(a.pos, format!("'{}' is not defined", a.root))),
            },
        };
        let mut secret = false;
        for accessor in path {
            let (inner, s) = unwrap_shallow(value);
            secret |= s;
            value = match (inner, accessor) {
                (PropertyValue::Unknown, _) => return Ok(wrap(PropertyValue::Unknown, secret)),
                (PropertyValue::Object(mut m), Accessor::Key(k)) => {
                    m.remove(k).unwrap_or(PropertyValue::Null)
                }
                (PropertyValue::Array(items), Accessor::Index(i)) => {
                    let n = items.len();
                    match items.into_iter().nth(*i) {
                        Some(v) => v,
                        None => {
                            return Err(self.error(
                                a.pos,
                                format!(
                                    "index {i} is out of range for a list of {n} (in {})",
                                    show(a)
                                ),
                            ))
                        }
                    }
                }
                (other, accessor) => {
                    let what = match accessor {
                        Accessor::Key(k) => format!("property '{k}'"),
                        Accessor::Index(i) => format!("index [{i}]"),
                    };
                    return Err(self.error(
                        a.pos,
                        format!("cannot read {what} of {} (in {})", article(&other), show(a)),
                    ));
                }
            };
        }
        Ok(wrap(value, secret))
    }

    fn interpolate(&self, parts: &[Part]) -> Result<PropertyValue, YamlError> {
        let mut out = String::new();
        let (mut secret, mut unknown) = (false, false);
        for part in parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Access(a) => {
                    let s = strip(&self.access(a)?);
                    secret |= s.secret;
                    unknown |= s.unknown;
                    if !s.unknown {
                        let text = to_text(&s.value)
                            .map_err(|m| self.error(a.pos, format!("cannot interpolate {m}")))?;
                        out.push_str(&text);
                    }
                }
            }
        }
        let value = if unknown {
            PropertyValue::Unknown
        } else {
            PropertyValue::String(out)
        };
        Ok(wrap(value, secret))
    }
}

/// `${a.b[0]}` as written.
fn show(a: &Access) -> String {
    let mut s = format!("${{{}", a.root);
    for p in &a.path {
        match p {
            Accessor::Key(k) => {
                s.push('.');
                s.push_str(k);
            }
            Accessor::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s.push('}');
    s
}

/// "null", "a string", "an object", … for messages.
pub(crate) fn article(v: &PropertyValue) -> String {
    match v {
        PropertyValue::Null => "null".to_owned(),
        PropertyValue::Bool(_) => "a boolean".to_owned(),
        PropertyValue::Array(_) => "a list".to_owned(),
        PropertyValue::Object(_) | PropertyValue::Asset(_) | PropertyValue::Archive(_) => {
            format!("an {}", v.kind_name())
        }
        PropertyValue::Unknown => "an unknown value".to_owned(),
        other => format!("a {}", other.kind_name()),
    }
}

/// Wraps `v` as a secret if `secret` (and it is not one already).
pub(crate) fn wrap(v: PropertyValue, secret: bool) -> PropertyValue {
    match v {
        PropertyValue::Secret(_) => v,
        v if secret => PropertyValue::secret(v),
        v => v,
    }
}

/// Removes the outer secret/output wrappers: the value (unknown for an
/// unknown output) and whether it was secret.
pub(crate) fn unwrap_shallow(v: PropertyValue) -> (PropertyValue, bool) {
    match v {
        PropertyValue::Secret(inner) => {
            let (v, _) = unwrap_shallow(*inner);
            (v, true)
        }
        PropertyValue::Output(o) => {
            let (v, s) = match o.element {
                Some(e) => unwrap_shallow(*e),
                None => (PropertyValue::Unknown, false),
            };
            (v, s || o.secret)
        }
        v => (v, false),
    }
}

/// A value with every secret and output wrapper removed.
#[derive(Debug)]
pub(crate) struct Stripped {
    pub value: PropertyValue,
    pub secret: bool,
    pub unknown: bool,
}

pub(crate) fn strip(v: &PropertyValue) -> Stripped {
    let mut s = Stripped {
        value: PropertyValue::Null,
        secret: false,
        unknown: false,
    };
    s.value = strip_into(v, &mut s.secret, &mut s.unknown);
    s
}

fn strip_into(v: &PropertyValue, secret: &mut bool, unknown: &mut bool) -> PropertyValue {
    match v {
        PropertyValue::Secret(inner) => {
            *secret = true;
            strip_into(inner, secret, unknown)
        }
        PropertyValue::Output(o) => {
            *secret |= o.secret;
            match &o.element {
                Some(e) => strip_into(e, secret, unknown),
                None => {
                    *unknown = true;
                    PropertyValue::Unknown
                }
            }
        }
        PropertyValue::Unknown => {
            *unknown = true;
            PropertyValue::Unknown
        }
        PropertyValue::Array(items) => PropertyValue::Array(
            items
                .iter()
                .map(|i| strip_into(i, secret, unknown))
                .collect(),
        ),
        PropertyValue::Object(m) => PropertyValue::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), strip_into(v, secret, unknown)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A known, stripped value as interpolated text.
pub(crate) fn to_text(v: &PropertyValue) -> Result<String, String> {
    Ok(match v {
        PropertyValue::String(s) => s.clone(),
        PropertyValue::Number(n) => number_text(*n),
        PropertyValue::Bool(b) => b.to_string(),
        PropertyValue::Null => String::new(),
        PropertyValue::ResourceReference(r) => r.urn.to_string(),
        PropertyValue::Array(_) | PropertyValue::Object(_) => {
            let mut out = String::new();
            go_value_text(v, &mut out)?;
            out
        }
        other => return Err(article(other)),
    })
}

/// A list or object as Pulumi YAML interpolates it, with Go's `%v`:
/// `[a b c]`, `map[k:v x:1]` (keys in order), `<nil>` for null.
fn go_value_text(v: &PropertyValue, out: &mut String) -> Result<(), String> {
    match v {
        PropertyValue::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                go_value_text(item, out)?;
            }
            out.push(']');
        }
        PropertyValue::Object(map) => {
            out.push_str("map[");
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                go_value_text(item, out)?;
            }
            out.push(']');
        }
        PropertyValue::Null => out.push_str("<nil>"),
        other => out.push_str(&to_text(other)?),
    }
    Ok(())
}

/// A number as text: integers without a fraction.
pub(crate) fn number_text(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

pub(crate) fn json_to_value(v: &serde_json::Value) -> PropertyValue {
    match v {
        serde_json::Value::Null => PropertyValue::Null,
        serde_json::Value::Bool(b) => PropertyValue::Bool(*b),
        serde_json::Value::Number(n) => PropertyValue::Number(n.as_f64().unwrap_or(f64::NAN)),
        serde_json::Value::String(s) => PropertyValue::String(s.clone()),
        serde_json::Value::Array(items) => {
            PropertyValue::Array(items.iter().map(json_to_value).collect())
        }
        serde_json::Value::Object(m) => PropertyValue::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), json_to_value(v)))
                .collect(),
        ),
    }
}

/// A known, stripped value as JSON; assets and archives have none.
pub(crate) fn value_to_json(v: &PropertyValue) -> Result<serde_json::Value, String> {
    Ok(match v {
        PropertyValue::Null => serde_json::Value::Null,
        PropertyValue::Bool(b) => serde_json::Value::Bool(*b),
        PropertyValue::Number(n) if n.fract() == 0.0 && n.abs() < 9e15 => {
            serde_json::Value::from(*n as i64)
        }
        PropertyValue::Number(n) => serde_json::Number::from_f64(*n)
            .map(serde_json::Value::Number)
            .ok_or_else(|| format!("the number {n}"))?,
        PropertyValue::String(s) => serde_json::Value::String(s.clone()),
        PropertyValue::ResourceReference(r) => serde_json::Value::String(r.urn.to_string()),
        PropertyValue::Array(items) => {
            serde_json::Value::Array(items.iter().map(value_to_json).collect::<Result<_, _>>()?)
        }
        PropertyValue::Object(m) => serde_json::Value::Object(
            m.iter()
                .map(|(k, v)| Ok((k.clone(), value_to_json(v)?)))
                .collect::<Result<_, String>>()?,
        ),
        other => return Err(article(other)),
    })
}
