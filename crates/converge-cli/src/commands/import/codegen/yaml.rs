//! Pulumi YAML: a `resources:` section to add to `Pulumi.yaml` — each
//! resource with `type`, `properties` and `options` (`protect`,
//! `parent` and `provider` as `${name}` references), `name` when the
//! stack's name differs from the key; secrets as `fn::secret`.

use anyhow::{bail, Result};
use converge_model::{Asset, PropertyValue};
use serde_norway::{Mapping, Value};

use super::Resource;

pub fn render(resources: &[Resource]) -> Result<String> {
    let mut section = Mapping::new();
    for r in resources {
        if !r.custom {
            bail!(
                "{} is a component ({}): Pulumi YAML cannot declare components; write the code \
                 for a Python project, or import it without --out",
                r.code_name,
                r.type_token
            );
        }
        let mut entry = Mapping::new();
        if r.name != r.code_name {
            entry.insert("name".into(), r.name.clone().into());
        }
        entry.insert("type".into(), r.type_token.clone().into());
        let mut properties = Mapping::new();
        for (k, v) in r.inputs.iter().filter(|(k, _)| !k.starts_with("__")) {
            properties.insert(k.clone().into(), value(v, &r.code_name)?);
        }
        if !properties.is_empty() {
            entry.insert("properties".into(), Value::Mapping(properties));
        }
        let mut options = Mapping::new();
        if r.protect {
            options.insert("protect".into(), true.into());
        }
        if let Some(p) = &r.parent {
            options.insert("parent".into(), format!("${{{p}}}").into());
        }
        if let Some(p) = &r.provider {
            options.insert("provider".into(), format!("${{{p}}}").into());
        }
        if !options.is_empty() {
            entry.insert("options".into(), Value::Mapping(options));
        }
        section.insert(r.code_name.clone().into(), Value::Mapping(entry));
    }
    let mut doc = Mapping::new();
    doc.insert("resources".into(), Value::Mapping(section));
    Ok(serde_norway::to_string(&Value::Mapping(doc))?)
}

fn value(v: &PropertyValue, owner: &str) -> Result<Value> {
    Ok(match v {
        PropertyValue::Null => Value::Null,
        PropertyValue::Bool(b) => (*b).into(),
        PropertyValue::Number(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => (*n as i64).into(),
        PropertyValue::Number(n) => (*n).into(),
        PropertyValue::String(s) => literal(s),
        PropertyValue::Array(items) => Value::Sequence(
            items
                .iter()
                .map(|i| value(i, owner))
                .collect::<Result<_>>()?,
        ),
        PropertyValue::Object(map) => {
            let mut m = Mapping::new();
            for (k, v) in map {
                m.insert(k.clone().into(), value(v, owner)?);
            }
            Value::Mapping(m)
        }
        PropertyValue::Secret(inner) => call("fn::secret", value(inner, owner)?),
        PropertyValue::Output(o) => match (&o.element, o.secret) {
            (Some(inner), true) => call("fn::secret", value(inner, owner)?),
            (Some(inner), false) => value(inner, owner)?,
            (None, _) => bail!("{owner}: an input is not known"),
        },
        PropertyValue::Asset(a) => asset(a, owner)?,
        PropertyValue::Archive(_)
        | PropertyValue::ResourceReference(_)
        | PropertyValue::Unknown => {
            bail!(
                "{owner}: an input is a {}, which --out cannot write in Pulumi YAML",
                v.kind_name()
            )
        }
    })
}

/// A string, with `${` escaped so YAML does not read it as interpolation.
fn literal(s: &str) -> Value {
    s.replace("${", "$${").into()
}

fn call(name: &str, arg: Value) -> Value {
    let mut m = Mapping::new();
    m.insert(name.into(), arg);
    Value::Mapping(m)
}

fn asset(a: &Asset, owner: &str) -> Result<Value> {
    Ok(match super::asset_source(a, owner)? {
        super::AssetSource::Text(text) => call("fn::stringAsset", literal(text)),
        super::AssetSource::Path(path) => call("fn::fileAsset", literal(path)),
        super::AssetSource::Uri(uri) => call("fn::remoteAsset", literal(uri)),
    })
}
