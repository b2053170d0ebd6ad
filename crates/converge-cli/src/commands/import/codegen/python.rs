//! Python with the package's published SDK: `import pulumi_random as
//! random`, then one constructor call per resource —
//! `random.RandomString("name", length=8, opts=pulumi.ResourceOptions(
//! protect=True))` — with the SDK's snake_case argument names; components
//! as `pulumi.ComponentResource`.
//!
//! The SDK's module of a package is its schema's
//! `language.python.packageName` where Converge has the schema (the
//! built-in packages), else Pulumi's default, `pulumi_<package>`.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use anyhow::{bail, Result};
use converge_model::{package_of, Asset, PropertyValue};

use super::literal::{literal, string, Syntax};
use super::Resource;

pub fn render(resources: &[Resource]) -> Result<String> {
    let packages: BTreeSet<&str> = resources
        .iter()
        .filter(|r| r.custom)
        .map(|r| package_of(&r.type_token))
        .collect();
    let mut out = String::from("import pulumi\n");
    for p in &packages {
        let Some(module) = sdk_module(p) else {
            bail!("{}", no_sdk(p));
        };
        let _ = writeln!(out, "import {module} as {}", alias(p));
    }
    for r in resources {
        out.push('\n');
        let var = variable(&r.code_name);
        let mut args = Vec::new();
        if r.custom {
            for (k, v) in r.inputs.iter().filter(|(k, _)| !k.starts_with("__")) {
                args.push(format!("{}={}", argument(k), value(v, &r.code_name)?));
            }
        }
        let mut options = Vec::new();
        if r.protect {
            options.push("protect=True".to_owned());
        }
        if let Some(p) = &r.parent {
            options.push(format!("parent={}", variable(p)));
        }
        if let Some(p) = &r.provider {
            options.push(format!("provider={}", variable(p)));
        }
        if !options.is_empty() {
            args.push(format!(
                "opts=pulumi.ResourceOptions({})",
                options.join(", ")
            ));
        }
        let head = if r.custom {
            format!("{var} = {}({}", class(&r.type_token)?, string(&r.name))
        } else {
            format!(
                "{var} = pulumi.ComponentResource({}, {}",
                string(&r.type_token),
                string(&r.name)
            )
        };
        out.push_str(&head);
        for a in &args {
            let _ = write!(out, ",\n    {a}");
        }
        out.push_str(")\n");
    }
    Ok(out)
}

/// The Python module of a package's SDK, if it has one: for a built-in
/// package its schema's `language.python.packageName` (none for
/// Converge's own `converge` package), for a plugin Pulumi's default,
/// `pulumi_<package>`.
pub(super) fn sdk_module(package: &str) -> Option<String> {
    match converge_plugin::builtin::schema(package) {
        Some(schema) => schema
            .pointer("/language/python/packageName")
            .and_then(|v| v.as_str())
            .map(str::to_owned),
        None => Some(format!("pulumi_{}", package.replace('-', "_"))),
    }
}

/// Why Python code cannot declare a resource of `package`.
pub(super) fn no_sdk(package: &str) -> String {
    format!(
        "the package {package} has no Python SDK, so a Python program cannot declare its \
         resources (a Pulumi YAML program can)"
    )
}

/// The name the program imports a package's SDK as.
fn alias(package: &str) -> String {
    package.replace('-', "_")
}

/// `pkg:module/member:Name` → `pkg.module.Name` (`index` is the
/// package's top level).
fn class(token: &str) -> Result<String> {
    let (package, path, name) = super::class_path(token)?;
    let mut out = alias(package);
    for segment in path {
        out.push('.');
        out.push_str(&snake(segment));
    }
    out.push('.');
    out.push_str(name);
    Ok(out)
}

/// A keyword argument: the property's name in snake_case, as Pulumi's
/// Python SDKs name them.
fn argument(property: &str) -> String {
    variable(property)
}

/// A Python identifier for a name.
fn variable(name: &str) -> String {
    let mut s: String = snake(name)
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    if KEYWORDS.contains(&s.as_str()) {
        s.push('_');
    }
    s
}

const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// camelCase → snake_case; a run of capitals is one word (`SSHKey` →
/// `ssh_key`).
fn snake(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let prev = i.checked_sub(1).map(|j| chars[j]);
            let next = chars.get(i + 1);
            let boundary = match prev {
                Some(p) if p.is_lowercase() || p.is_ascii_digit() => true,
                Some(p) if p.is_uppercase() => next.is_some_and(|n| n.is_lowercase()),
                _ => false,
            };
            if boundary && !out.ends_with('_') {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Python's literals.
struct Python;

impl Syntax for Python {
    const LANGUAGE: &'static str = "Python";

    fn null() -> &'static str {
        "None"
    }

    fn boolean(b: bool) -> &'static str {
        if b {
            "True"
        } else {
            "False"
        }
    }

    fn object(entries: Vec<(&str, String)>, _depth: usize) -> String {
        let entries: Vec<String> = entries
            .into_iter()
            .map(|(k, v)| format!("{}: {v}", string(k)))
            .collect();
        format!("{{{}}}", entries.join(", "))
    }

    fn secret(inner: String) -> String {
        format!("pulumi.Output.secret({inner})")
    }

    fn asset(a: &Asset, owner: &str) -> Result<String> {
        Ok(match super::asset_source(a, owner)? {
            super::AssetSource::Text(text) => format!("pulumi.StringAsset({})", string(text)),
            super::AssetSource::Path(path) => format!("pulumi.FileAsset({})", string(path)),
            super::AssetSource::Uri(uri) => format!("pulumi.RemoteAsset({})", string(uri)),
        })
    }
}

fn value(v: &PropertyValue, owner: &str) -> Result<String> {
    literal::<Python>(v, owner, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_sdk() {
        assert_eq!(snake("minLower"), "min_lower");
        assert_eq!(snake("overrideSpecial"), "override_special");
        assert_eq!(snake("SSHKey"), "ssh_key");
        assert_eq!(variable("my-pet"), "my_pet");
        assert_eq!(variable("lambda"), "lambda_");
        assert_eq!(
            class("random:index/randomString:RandomString").unwrap(),
            "random.RandomString"
        );
        assert_eq!(class("aws:s3/bucket:Bucket").unwrap(), "aws.s3.Bucket");
        assert_eq!(class("random:index:RandomPet").unwrap(), "random.RandomPet");
        assert_eq!(sdk_module("random").unwrap(), "pulumi_random");
        assert_eq!(sdk_module("command").unwrap(), "pulumi_command");
        assert_eq!(sdk_module("converge"), None);
        assert_eq!(sdk_module("azure-native").unwrap(), "pulumi_azure_native");
    }
}
