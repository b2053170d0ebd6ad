//! Node.js with the package's published SDK, in TypeScript (`import * as
//! random from "@pulumi/random"`) or, for a JavaScript project, with
//! `require`: one `new` per resource — `new random.RandomString("name",
//! { length: 8 }, { protect: true })` — with the schema's camelCase
//! property names; components as `pulumi.ComponentResource`.
//!
//! The SDK's module of a package is its schema's
//! `language.nodejs.packageName` where Converge has the schema (the
//! built-in packages), else Pulumi's default, `@pulumi/<package>`.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use anyhow::{bail, Result};
use converge_model::{package_of, Asset, PropertyValue};

use super::literal::{literal, string, Syntax};
use super::Resource;

/// How the generated code loads modules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// `import * as x from "…"`.
    TypeScript,
    /// `const x = require("…")`.
    JavaScript,
}

pub fn render(resources: &[Resource], flavor: Flavor) -> Result<String> {
    let packages: BTreeSet<&str> = resources
        .iter()
        .filter(|r| r.custom)
        .map(|r| package_of(&r.type_token))
        .collect();
    let mut out = load(flavor, "pulumi", "@pulumi/pulumi");
    for p in &packages {
        let Some(module) = sdk_module(p) else {
            bail!("{}", no_sdk(p));
        };
        out.push_str(&load(flavor, &alias(p), &module));
    }
    for r in resources {
        out.push('\n');
        let var = variable(&r.code_name);
        let mut properties = Vec::new();
        if r.custom {
            for (k, v) in r.inputs.iter().filter(|(k, _)| !k.starts_with("__")) {
                properties.push(format!("{}: {}", key(k), value(v, &r.code_name, 1)?));
            }
        }
        let mut options = Vec::new();
        if r.protect {
            options.push("protect: true".to_owned());
        }
        if let Some(p) = &r.parent {
            options.push(format!("parent: {}", variable(p)));
        }
        if let Some(p) = &r.provider {
            options.push(format!("provider: {}", variable(p)));
        }
        let head = if r.custom {
            format!(
                "const {var} = new {}({}",
                class(&r.type_token)?,
                string(&r.name)
            )
        } else {
            format!(
                "const {var} = new pulumi.ComponentResource({}, {}",
                string(&r.type_token),
                string(&r.name)
            )
        };
        out.push_str(&head);
        out.push_str(", ");
        out.push_str(&object(&properties, 0));
        if !options.is_empty() {
            out.push_str(", ");
            out.push_str(&object(&options, 0));
        }
        out.push_str(");\n");
    }
    Ok(out)
}

/// The statement that loads `module` as `name`.
fn load(flavor: Flavor, name: &str, module: &str) -> String {
    match flavor {
        Flavor::TypeScript => format!("import * as {name} from {};\n", string(module)),
        Flavor::JavaScript => format!("const {name} = require({});\n", string(module)),
    }
}

/// An object literal of `entries`, one a line, closed at `indent` levels.
fn object(entries: &[String], indent: usize) -> String {
    if entries.is_empty() {
        return "{}".to_owned();
    }
    let inner = "    ".repeat(indent + 1);
    let mut out = String::from("{\n");
    for e in entries {
        let _ = writeln!(out, "{inner}{e},");
    }
    out.push_str(&"    ".repeat(indent));
    out.push('}');
    out
}

/// The npm module of a package's SDK, if it has one: for a built-in
/// package its schema's `language.nodejs.packageName` (none for
/// Converge's own `converge` package), for a plugin Pulumi's default,
/// `@pulumi/<package>`.
pub(super) fn sdk_module(package: &str) -> Option<String> {
    match converge_plugin::builtin::schema(package) {
        Some(schema) => schema
            .pointer("/language/nodejs/packageName")
            .and_then(|v| v.as_str())
            .map(str::to_owned),
        None => Some(format!("@pulumi/{package}")),
    }
}

/// Why Node.js code cannot declare a resource of `package`.
pub(super) fn no_sdk(package: &str) -> String {
    format!(
        "the package {package} has no Node.js SDK, so a Node.js program cannot declare its \
         resources (a Pulumi YAML program can)"
    )
}

/// The name the program loads a package's SDK as.
fn alias(package: &str) -> String {
    variable(package)
}

/// `pkg:module/member:Name` → `pkg.module.Name` (`index` is the
/// package's top level).
fn class(token: &str) -> Result<String> {
    let (package, path, name) = super::class_path(token)?;
    let mut out = alias(package);
    for segment in path {
        out.push('.');
        out.push_str(&variable(segment));
    }
    out.push('.');
    out.push_str(name);
    Ok(out)
}

/// A JavaScript identifier for a name, in camelCase (`my-pet` → `myPet`).
fn variable(name: &str) -> String {
    let mut s = String::new();
    let mut upper = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '$' {
            if upper && !s.is_empty() {
                s.extend(c.to_uppercase());
            } else {
                s.push(c);
            }
            upper = false;
        } else {
            upper = true;
        }
    }
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    if RESERVED.contains(&s.as_str()) {
        s.push('_');
    }
    s
}

const RESERVED: &[&str] = &[
    "arguments",
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "debugger",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "eval",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "function",
    "if",
    "implements",
    "import",
    "in",
    "instanceof",
    "interface",
    "let",
    "new",
    "null",
    "package",
    "private",
    "protected",
    "public",
    "return",
    "static",
    "super",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "typeof",
    "var",
    "void",
    "while",
    "with",
    "yield",
    "pulumi",
];

/// A property name as an object key: bare when it is an identifier.
fn key(k: &str) -> String {
    let identifier = k.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if identifier {
        k.to_owned()
    } else {
        string(k)
    }
}

/// JavaScript's (and TypeScript's) literals.
struct JavaScript;

impl Syntax for JavaScript {
    const LANGUAGE: &'static str = "Node.js";

    fn null() -> &'static str {
        "undefined"
    }

    fn boolean(b: bool) -> &'static str {
        if b {
            "true"
        } else {
            "false"
        }
    }

    fn object(entries: Vec<(&str, String)>, depth: usize) -> String {
        let entries: Vec<String> = entries
            .into_iter()
            .map(|(k, v)| format!("{}: {v}", key(k)))
            .collect();
        object(&entries, depth)
    }

    fn secret(inner: String) -> String {
        format!("pulumi.secret({inner})")
    }

    fn asset(a: &Asset, owner: &str) -> Result<String> {
        Ok(match super::asset_source(a, owner)? {
            super::AssetSource::Text(text) => {
                format!("new pulumi.asset.StringAsset({})", string(text))
            }
            super::AssetSource::Path(path) => {
                format!("new pulumi.asset.FileAsset({})", string(path))
            }
            super::AssetSource::Uri(uri) => {
                format!("new pulumi.asset.RemoteAsset({})", string(uri))
            }
        })
    }
}

fn value(v: &PropertyValue, owner: &str, depth: usize) -> Result<String> {
    literal::<JavaScript>(v, owner, depth)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_sdk() {
        assert_eq!(variable("my-pet"), "myPet");
        assert_eq!(variable("new"), "new_");
        assert_eq!(variable("2nd"), "_2nd");
        assert_eq!(
            class("random:index/randomString:RandomString").unwrap(),
            "random.RandomString"
        );
        assert_eq!(class("aws:s3/bucket:Bucket").unwrap(), "aws.s3.Bucket");
        assert_eq!(
            class("kubernetes:apps/v1:Deployment").unwrap(),
            "kubernetes.apps.v1.Deployment"
        );
        assert_eq!(
            class("azure-native:storage:StorageAccount").unwrap(),
            "azureNative.storage.StorageAccount"
        );
        assert_eq!(sdk_module("random").unwrap(), "@pulumi/random");
        assert_eq!(sdk_module("converge"), None);
        assert_eq!(key("length"), "length");
        assert_eq!(key("a-b"), "\"a-b\"");
    }

    #[test]
    fn a_resource_with_options_and_nested_values() {
        let r = Resource {
            code_name: "my-pet".to_owned(),
            name: "my-pet".to_owned(),
            type_token: "random:index/randomPet:RandomPet".to_owned(),
            custom: true,
            inputs: [
                ("length".to_owned(), PropertyValue::Number(2.0)),
                (
                    "keepers".to_owned(),
                    PropertyValue::Object(
                        [(
                            "team".to_owned(),
                            PropertyValue::secret(PropertyValue::String("web".into())),
                        )]
                        .into_iter()
                        .collect(),
                    ),
                ),
            ]
            .into_iter()
            .collect(),
            protect: true,
            parent: None,
            provider: None,
        };
        assert_eq!(
            render(std::slice::from_ref(&r), Flavor::TypeScript).unwrap(),
            "import * as pulumi from \"@pulumi/pulumi\";
import * as random from \"@pulumi/random\";

const myPet = new random.RandomPet(\"my-pet\", {
    keepers: {
        team: pulumi.secret(\"web\"),
    },
    length: 2,
}, {
    protect: true,
});
"
        );
        assert!(render(&[r], Flavor::JavaScript)
            .unwrap()
            .starts_with("const pulumi = require(\"@pulumi/pulumi\");\nconst random = require(\"@pulumi/random\");\n"));
    }
}
