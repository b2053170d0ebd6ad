//! The builtin `fn::` functions. Each checks its arguments' types when
//! they are known, propagates unknowns (an unknown argument gives an
//! unknown result) and secrets (a secret argument gives a secret result).

use base64::Engine as _;
use converge_engine::asset_hashes::{ensure_archive_hash, ensure_asset_hash};
use converge_engine::{EngineError, InvokeGoal};
use converge_model::{Archive, ArchiveMember, Asset, PropertyMap, PropertyValue};

use super::eval::{article, strip, to_text, unwrap_shallow, value_to_json, wrap, Scope};
use super::expr::{Call, Expr, Invoke, Unary};
use super::syntax::Key;
use super::{Pos, YamlError};

/// An argument after evaluation: known and stripped of secrets, or
/// unknown.
enum Arg {
    Known(PropertyValue),
    Unknown,
}

pub(crate) async fn call(
    scope: &Scope<'_>,
    call: &Call,
    pos: Pos,
) -> Result<PropertyValue, YamlError> {
    let mut secret = false;
    macro_rules! known {
        ($e:expr) => {
            match arg(scope, $e, &mut secret).await? {
                Arg::Known(v) => v,
                Arg::Unknown => return Ok(wrap(PropertyValue::Unknown, secret)),
            }
        };
    }
    let err = |m: String| scope.error(pos, m);
    let value = match call {
        Call::Secret(e) => return Ok(wrap(scope.eval(e).await?, true)),
        Call::Select { index, list } => return select(scope, pos, index, list).await,
        Call::Invoke(invoke) => return self::invoke(scope, pos, invoke).await,
        Call::Unary(Unary::Unsecret, e) => {
            let s = strip(&scope.eval(e).await?);
            return Ok(if s.unknown {
                PropertyValue::Unknown
            } else {
                s.value
            });
        }
        Call::Unary(unary, e) => unary_call(scope, pos, *unary, known!(e))?,
        Call::StackReference { stack, property } => {
            let stack =
                string("fn::stackReference", "the stack name", known!(stack)).map_err(err)?;
            let property =
                string("fn::stackReference", "the property name", known!(property)).map_err(err)?;
            let (value, s) = stack_reference(scope, pos, &stack, &property).await?;
            secret |= s;
            value
        }
        Call::Join { delimiter, values } => {
            let d = known!(delimiter);
            let v = known!(values);
            let d = string("fn::join", "the delimiter", d).map_err(err)?;
            let PropertyValue::Array(items) = v else {
                return Err(err(format!(
                    "fn::join: the values must be a list, not {}",
                    article(&v)
                )));
            };
            let mut texts = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item {
                    PropertyValue::String(_)
                    | PropertyValue::Number(_)
                    | PropertyValue::Bool(_) => texts.push(to_text(item).unwrap_or_default()),
                    other => {
                        return Err(err(format!(
                            "fn::join: the values must be strings, but value {i} is {}",
                            article(other)
                        )))
                    }
                }
            }
            PropertyValue::String(texts.join(&d))
        }
        Call::Split { delimiter, source } => {
            let d = known!(delimiter);
            let s = known!(source);
            let d = string("fn::split", "the delimiter", d).map_err(err)?;
            let s = string("fn::split", "the source", s).map_err(err)?;
            let parts: Vec<PropertyValue> = if d.is_empty() {
                s.chars().map(|c| PropertyValue::String(c.into())).collect()
            } else {
                s.split(d.as_str()).map(PropertyValue::from).collect()
            };
            PropertyValue::Array(parts)
        }
        Call::ToJson(e) => {
            let v = known!(e);
            let json = value_to_json(&v)
                .map_err(|m| err(format!("fn::toJSON: cannot encode {m} as JSON")))?;
            PropertyValue::String(go_json_escapes(&json.to_string()))
        }
        Call::ToBase64(e) => {
            let s = string("fn::toBase64", "its argument", known!(e)).map_err(err)?;
            PropertyValue::String(base64::engine::general_purpose::STANDARD.encode(s))
        }
        Call::FromBase64(e) => {
            let s = string("fn::fromBase64", "its argument", known!(e)).map_err(err)?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(s.trim())
                .map_err(|e| err(format!("fn::fromBase64: invalid base64: {e}")))?;
            let text = String::from_utf8(bytes)
                .map_err(|_| err("fn::fromBase64: the decoded bytes are not UTF-8".to_owned()))?;
            PropertyValue::String(text)
        }
        Call::ReadFile(e) => {
            let path = string("fn::readFile", "its argument", known!(e)).map_err(err)?;
            let text = std::fs::read_to_string(scope.work_dir.join(&path))
                .map_err(|e| err(format!("fn::readFile: cannot read '{path}': {e}")))?;
            PropertyValue::String(text)
        }
        Call::StringAsset(e) => {
            let text = string("fn::stringAsset", "its argument", known!(e)).map_err(err)?;
            PropertyValue::Asset(Box::new(Asset::from_text(text)))
        }
        Call::FileAsset(e) => {
            let path = string("fn::fileAsset", "its argument", known!(e)).map_err(err)?;
            let mut asset = Asset::from_path(path);
            ensure_asset_hash(&mut asset, scope.work_dir)
                .map_err(|e| err(format!("fn::fileAsset: {e}")))?;
            PropertyValue::Asset(Box::new(asset))
        }
        Call::RemoteAsset(e) => {
            let uri = string("fn::remoteAsset", "its argument", known!(e)).map_err(err)?;
            PropertyValue::Asset(Box::new(Asset::from_uri(uri)))
        }
        Call::FileArchive(e) => {
            let path = string("fn::fileArchive", "its argument", known!(e)).map_err(err)?;
            let mut archive = Archive {
                path: Some(path),
                ..Archive::default()
            };
            ensure_archive_hash(&mut archive, scope.work_dir)
                .map_err(|e| err(format!("fn::fileArchive: {e}")))?;
            PropertyValue::Archive(Box::new(archive))
        }
        Call::RemoteArchive(e) => {
            let uri = string("fn::remoteArchive", "its argument", known!(e)).map_err(err)?;
            PropertyValue::Archive(Box::new(Archive {
                uri: Some(uri),
                ..Archive::default()
            }))
        }
        Call::AssetArchive(entries) => {
            let mut members = std::collections::BTreeMap::new();
            for (key, e) in entries {
                let member = match known!(e) {
                    PropertyValue::Asset(a) => ArchiveMember::Asset(*a),
                    PropertyValue::Archive(a) => ArchiveMember::Archive(*a),
                    other => {
                        return Err(scope.error(
                            key.pos,
                            format!(
                                "fn::assetArchive: '{}' must be an asset or an archive, not {}",
                                key.name,
                                article(&other)
                            ),
                        ))
                    }
                };
                members.insert(key.name.clone(), member);
            }
            let mut archive = Archive {
                assets: Some(members),
                ..Archive::default()
            };
            ensure_archive_hash(&mut archive, scope.work_dir)
                .map_err(|e| err(format!("fn::assetArchive: {e}")))?;
            PropertyValue::Archive(Box::new(archive))
        }
    };
    Ok(wrap(value, secret))
}

/// A builtin of one known value.
fn unary_call(
    scope: &Scope<'_>,
    pos: Pos,
    unary: Unary,
    value: PropertyValue,
) -> Result<PropertyValue, YamlError> {
    use sha1::Digest as _;
    let err = |m: String| scope.error(pos, m);
    let read = |func: &str, value: PropertyValue| -> Result<Vec<u8>, YamlError> {
        let path = string(func, "its argument", value).map_err(err)?;
        std::fs::read(scope.work_dir.join(&path))
            .map_err(|e| err(format!("{func}: cannot read '{path}': {e}")))
    };
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    Ok(match unary {
        Unary::FileBase64 => PropertyValue::String(b64(&read("fn::filebase64", value)?)),
        Unary::FileBase64Sha256 => {
            let bytes = read("fn::filebase64sha256", value)?;
            PropertyValue::String(b64(&sha2::Sha256::digest(&bytes)))
        }
        Unary::Sha1 => {
            let text = string("fn::sha1", "its argument", value).map_err(err)?;
            let digest = sha1::Sha1::digest(text.as_bytes());
            PropertyValue::String(digest.iter().map(|b| format!("{b:02x}")).collect())
        }
        Unary::Length => PropertyValue::Number(match &value {
            PropertyValue::Array(items) => items.len() as f64,
            PropertyValue::Object(m) => m.len() as f64,
            PropertyValue::String(s) => s.chars().count() as f64,
            other => {
                return Err(err(format!(
                    "fn::length takes a list, an object or a string, not {}",
                    article(other)
                )))
            }
        }),
        Unary::SingleOrNone => match value {
            PropertyValue::Array(items) if items.len() <= 1 => {
                items.into_iter().next().unwrap_or(PropertyValue::Null)
            }
            PropertyValue::Array(items) => {
                return Err(err(format!(
                    "fn::singleOrNone takes a list of at most one element, not {}",
                    items.len()
                )))
            }
            other => {
                return Err(err(format!(
                    "fn::singleOrNone takes a list, not {}",
                    article(&other)
                )))
            }
        },
        Unary::ResourceName | Unary::ResourceType => {
            let PropertyValue::ResourceReference(r) = value else {
                return Err(err(format!(
                    "{} takes a resource, not {}",
                    if unary == Unary::ResourceName {
                        "fn::pulumiResourceName"
                    } else {
                        "fn::pulumiResourceType"
                    },
                    article(&value)
                )));
            };
            PropertyValue::String(if unary == Unary::ResourceName {
                r.urn.name().to_owned()
            } else {
                r.urn.type_token().to_owned()
            })
        }
        Unary::Unsecret => value,
    })
}

/// `fn::stackReference`: one output of another stack of this backend,
/// read by the builtin provider (`pulumi:pulumi:readStackOutputs`); a
/// secret output stays secret.
async fn stack_reference(
    scope: &Scope<'_>,
    pos: Pos,
    stack: &str,
    property: &str,
) -> Result<(PropertyValue, bool), YamlError> {
    let failed = |m: String| scope.error(pos, format!("fn::stackReference of {stack}: {m}"));
    let response = scope
        .monitor
        .invoke(InvokeGoal {
            token: converge_engine::pulumi_provider::READ_STACK_OUTPUTS.to_owned(),
            args: PropertyMap::from([("name".to_owned(), PropertyValue::from(stack))]),
            provider: None,
            version: None,
        })
        .await
        .map_err(|e| match e {
            EngineError::Invoke { source, .. } => failed(source.to_string()),
            e => failed(e.to_string()),
        })?;
    if let Some(f) = response.failures.first() {
        return Err(failed(f.reason.clone()));
    }
    let secret_names = match response.outputs.get("secretOutputNames") {
        Some(PropertyValue::Array(names)) => names.clone(),
        _ => Vec::new(),
    };
    let secret = secret_names
        .iter()
        .any(|n| matches!(n, PropertyValue::String(s) if s == property));
    match response.outputs.get("outputs") {
        Some(PropertyValue::Object(outputs)) => match outputs.get(property) {
            Some(v) => Ok((v.clone(), secret)),
            None => Err(failed(format!("the stack has no output '{property}'"))),
        },
        _ => Err(failed("the stack's outputs could not be read".to_owned())),
    }
}

/// Evaluates an argument, noting whether it was secret.
async fn arg(scope: &Scope<'_>, e: &Expr, secret: &mut bool) -> Result<Arg, YamlError> {
    let s = strip(&scope.eval(e).await?);
    *secret |= s.secret;
    Ok(if s.unknown {
        Arg::Unknown
    } else {
        Arg::Known(s.value)
    })
}

fn string(func: &str, what: &str, v: PropertyValue) -> Result<String, String> {
    match v {
        PropertyValue::String(s) => Ok(s),
        other => Err(format!(
            "{func}: {what} must be a string, not {}",
            article(&other)
        )),
    }
}

/// `fn::select: [index, list]`: the element keeps its own secrecy; a
/// secret list or index makes it secret.
async fn select(
    scope: &Scope<'_>,
    pos: Pos,
    index: &Expr,
    list: &Expr,
) -> Result<PropertyValue, YamlError> {
    let i = strip(&scope.eval(index).await?);
    let (l, list_secret) = unwrap_shallow(scope.eval(list).await?);
    let secret = i.secret || list_secret;
    if i.unknown || matches!(l, PropertyValue::Unknown) {
        return Ok(wrap(PropertyValue::Unknown, secret));
    }
    let n = match i.value {
        PropertyValue::Number(n) if n >= 0.0 && n.fract() == 0.0 => n as usize,
        other => {
            return Err(scope.error(
                pos,
                format!(
                    "fn::select: the index must be a whole number ≥ 0, not {}",
                    match other {
                        PropertyValue::Number(n) => super::eval::number_text(n),
                        other => article(&other),
                    }
                ),
            ))
        }
    };
    let PropertyValue::Array(items) = l else {
        return Err(scope.error(
            pos,
            format!("fn::select: the list must be a list, not {}", article(&l)),
        ));
    };
    let len = items.len();
    match items.into_iter().nth(n) {
        Some(v) => Ok(wrap(v, secret)),
        None => Err(scope.error(
            pos,
            format!("fn::select: index {n} is out of range for a list of {len}"),
        )),
    }
}

/// `fn::invoke` through the engine's [`Monitor::invoke`], exactly as an
/// SDK's invoke: on the explicit provider (`options.provider`), else the
/// default provider of the function's package, configured from the
/// stack's configuration.
///
/// [`Monitor::invoke`]: converge_engine::Monitor::invoke
async fn invoke(scope: &Scope<'_>, pos: Pos, invoke: &Invoke) -> Result<PropertyValue, YamlError> {
    let token = scope.tokens.function(&invoke.function);
    let args = match &invoke.arguments {
        Some(e) => scope.eval(e).await?,
        None => PropertyValue::Object(PropertyMap::new()),
    };
    let (args, secret) = unwrap_shallow(args);
    let args = match args {
        PropertyValue::Object(m) => m,
        PropertyValue::Null => PropertyMap::new(),
        PropertyValue::Unknown => return Ok(wrap(PropertyValue::Unknown, secret)),
        other => {
            return Err(scope.error(
                pos,
                format!(
                    "fn::invoke of {token}: the arguments must be an object, not {}",
                    article(&other)
                ),
            ))
        }
    };
    let secret = secret || args.values().any(PropertyValue::contains_secrets);
    if args.values().any(PropertyValue::contains_unknowns) {
        return Ok(wrap(PropertyValue::Unknown, secret));
    }
    let provider = match &invoke.provider {
        Some(a) => Some(scope.resource(a)?.provider_reference()),
        None => None,
    };
    let version = match &invoke.version {
        Some(e) => match strip(&scope.eval(e).await?).value {
            PropertyValue::String(s) => Some(s),
            other => {
                return Err(scope.error(
                    e.pos,
                    format!(
                        "fn::invoke: version must be a string, not {}",
                        article(&other)
                    ),
                ))
            }
        },
        None => None,
    };
    let failed = |m: String| scope.error(pos, format!("fn::invoke of {token} failed: {m}"));
    let response = scope
        .monitor
        .invoke(InvokeGoal {
            token: token.to_owned(),
            args,
            provider,
            version,
        })
        .await
        .map_err(|e| match e {
            EngineError::Invoke { source, .. } => failed(source.to_string()),
            e => failed(e.to_string()),
        })?;
    if let Some(f) = response.failures.first() {
        let what = if f.property.is_empty() {
            f.reason.clone()
        } else {
            format!("{}: {}", f.property, f.reason)
        };
        return Err(failed(what));
    }
    let result = response.outputs;
    let value = match &invoke.ret {
        Some(Key { name: key, .. }) => result.get(key).cloned().ok_or_else(|| {
            scope.error(
                pos,
                format!("fn::invoke of {token}: the result has no '{key}'"),
            )
        })?,
        None => PropertyValue::Object(result),
    };
    Ok(wrap(value, secret))
}

/// JSON text with the escapes Go's `json.Marshal` (which Pulumi YAML's
/// `fn::toJSON` uses) makes: `<`, `>`, `&`, U+2028 and U+2029 as `\uXXXX`.
/// They occur only inside strings, so the text stays the same JSON.
fn go_json_escapes(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out
}
