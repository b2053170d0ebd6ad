//! The runtime options a new project needs before its dependencies are
//! installed, asked for as Pulumi's language hosts ask (their
//! `RuntimeOptionsPrompts`) and written into its `Pulumi.yaml`:
//!
//! - Python: `toolchain` (pip; Converge runs Python programs in a pip
//!   virtualenv, so poetry and uv are refused with a clear error), then
//!   for pip `virtualenv` (default `venv`): dependencies are never
//!   installed into the interpreter everyone shares;
//! - Node.js: `packagemanager` (npm, the default; yarn and pnpm offered
//!   when installed).
//!
//! Without a terminal (`--yes`, `--non-interactive`) the defaults are
//! taken. Options the template already sets are kept and not asked.

use anyhow::{bail, Context as _, Result};
use serde_norway::{Mapping, Value};

/// One option the project lacks: its key, what it is for, the answers
/// accepted (the first is the default).
#[derive(Debug, Clone, PartialEq)]
struct Prompt {
    key: &'static str,
    description: &'static str,
    choices: Vec<String>,
}

/// The Python toolchains Converge runs programs with.
const PYTHON_TOOLCHAINS: [&str; 1] = ["pip"];

/// A project file with its runtime options filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct Completed {
    /// The new text of the project file (`None`: nothing was added, the
    /// text stays as written).
    pub text: Option<String>,
    /// The options added, in the order they were asked.
    pub added: Vec<(String, String)>,
}

/// Fills in the runtime options of the project file `text` (named `what`
/// in errors), asking when `interactive`; refuses options Converge cannot
/// honour, before anything is written or installed.
pub fn complete(text: &str, what: &str, interactive: bool) -> Result<Completed> {
    let mut doc: Value = converge_yaml::from_str(what, text)?;
    let Some(root) = doc.as_mapping_mut() else {
        bail!("{what} is not a mapping");
    };
    let (runtime, mut options) = runtime_of(root, what)?;
    check_supported(&runtime, &options, what)?;
    let mut added = Vec::new();
    // Each answer may raise the next question (pip → virtualenv), as the
    // language hosts' prompts are asked until none is left.
    while let Some(prompt) = next_prompt(&runtime, &options) {
        let answer = if interactive {
            ask(&prompt)?
        } else {
            prompt.choices[0].clone()
        };
        options.insert(Value::from(prompt.key), Value::from(answer.clone()));
        added.push((prompt.key.to_owned(), answer));
    }
    if added.is_empty() {
        return Ok(Completed { text: None, added });
    }
    let mut rt = Mapping::new();
    rt.insert(Value::from("name"), Value::from(runtime));
    rt.insert(Value::from("options"), Value::Mapping(options));
    root.insert(Value::from("runtime"), Value::Mapping(rt));
    let rendered = serde_norway::to_string(&doc).context("cannot render the project file")?;
    Ok(Completed {
        text: Some(rendered),
        added,
    })
}

/// The project's runtime name and its options (`runtime: python` or
/// `runtime: {name: python, options: {...}}`).
fn runtime_of(root: &Mapping, what: &str) -> Result<(String, Mapping)> {
    match root.get("runtime") {
        Some(Value::String(name)) => Ok((name.clone(), Mapping::new())),
        Some(Value::Mapping(m)) => {
            let name = m
                .get("name")
                .and_then(Value::as_str)
                .with_context(|| format!("{what}: runtime has no name"))?;
            let options = match m.get("options") {
                None | Some(Value::Null) => Mapping::new(),
                Some(Value::Mapping(o)) => o.clone(),
                Some(_) => bail!("{what}: runtime.options must be a mapping"),
            };
            Ok((name.to_owned(), options))
        }
        _ => bail!("{what}: the project has no runtime"),
    }
}

/// Refuses options Converge cannot honour, before anything is installed.
fn check_supported(runtime: &str, options: &Mapping, what: &str) -> Result<()> {
    let option = |k: &str| options.get(k).and_then(Value::as_str);
    match (runtime, option("toolchain"), option("packagemanager")) {
        ("python", Some(toolchain), _) if !PYTHON_TOOLCHAINS.contains(&toolchain) => bail!(
            "{what}: runtime.options.toolchain is {toolchain:?}, and Converge runs Python \
             programs with pip in a virtualenv: set `toolchain: pip` and `virtualenv: venv`"
        ),
        ("nodejs", _, Some(manager)) if !["npm", "yarn", "pnpm"].contains(&manager) => bail!(
            "{what}: runtime.options.packagemanager is {manager:?}, which Converge does not \
             run: use npm, yarn or pnpm"
        ),
        _ => Ok(()),
    }
}

/// The next option the project lacks, as the runtime's language host
/// would ask for it.
fn next_prompt(runtime: &str, options: &Mapping) -> Option<Prompt> {
    let has = |k: &str| options.contains_key(k);
    match runtime {
        "python" if !has("toolchain") => Some(Prompt {
            key: "toolchain",
            description: "The toolchain to use for installing dependencies and running the program",
            choices: PYTHON_TOOLCHAINS.iter().map(|s| (*s).to_owned()).collect(),
        }),
        "python"
            if options.get("toolchain").and_then(Value::as_str) == Some("pip")
                && !has("virtualenv") =>
        {
            Some(Prompt {
                key: "virtualenv",
                description: "The virtualenv to use",
                choices: vec!["venv".to_owned()],
            })
        }
        "nodejs" if !has("packagemanager") => Some(Prompt {
            key: "packagemanager",
            description: "The package manager to use for installing dependencies",
            choices: std::iter::once("npm")
                .chain(["yarn", "pnpm"].into_iter().filter(|m| on_path(m)))
                .map(str::to_owned)
                .collect(),
        }),
        _ => None,
    }
}

/// Asks for one option until the answer is one of its choices (an empty
/// answer takes the default). A virtualenv may be any directory name.
fn ask(prompt: &Prompt) -> Result<String> {
    let free = prompt.key == "virtualenv";
    loop {
        let line = crate::prompt::ask(&format!(
            "{} [{}] ({}): ",
            prompt.description,
            prompt.choices.join("/"),
            prompt.choices[0]
        ))?;
        let answer = line.trim();
        if answer.is_empty() {
            return Ok(prompt.choices[0].clone());
        }
        if free || prompt.choices.iter().any(|c| c == answer) {
            return Ok(answer.to_owned());
        }
        println!("choose one of: {}", prompt.choices.join(", "));
    }
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(tool).is_file()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn completed(yaml: &str) -> (Result<Vec<(String, String)>>, String) {
        match complete(yaml, "Pulumi.yaml", false) {
            Ok(c) => (Ok(c.added), c.text.unwrap_or_else(|| yaml.to_owned())),
            Err(e) => (Err(e), yaml.to_owned()),
        }
    }

    #[test]
    fn python_gets_pip_and_a_virtualenv() {
        let (added, text) = completed("name: p\nruntime: python\ndescription: d\n");
        assert_eq!(
            added.unwrap(),
            [
                ("toolchain".to_owned(), "pip".to_owned()),
                ("virtualenv".to_owned(), "venv".to_owned())
            ]
        );
        assert_eq!(
            text,
            "name: p\nruntime:\n  name: python\n  options:\n    toolchain: pip\n    virtualenv: venv\ndescription: d\n"
        );
        // A template that names its virtualenv keeps it.
        let (added, text) =
            completed("name: p\nruntime:\n  name: python\n  options:\n    virtualenv: .env\n");
        assert_eq!(added.unwrap(), [("toolchain".to_owned(), "pip".to_owned())]);
        assert!(text.contains("virtualenv: .env"), "{text}");
        // Complete already: untouched, byte for byte.
        let whole = "# c\nname: p\nruntime:\n  name: python\n  options: {toolchain: pip, virtualenv: venv}\n";
        let (added, text) = completed(whole);
        assert!(added.unwrap().is_empty());
        assert_eq!(text, whole);
    }

    #[test]
    fn toolchains_converge_does_not_run_are_refused() {
        let (added, _) =
            completed("name: p\nruntime:\n  name: python\n  options:\n    toolchain: uv\n");
        let e = added.unwrap_err().to_string();
        assert!(e.contains("\"uv\"") && e.contains("toolchain: pip"), "{e}");
        let (added, _) =
            completed("name: p\nruntime:\n  name: nodejs\n  options:\n    packagemanager: bun\n");
        assert!(added.unwrap_err().to_string().contains("\"bun\""));
    }

    #[test]
    fn nodejs_gets_npm_and_yaml_nothing() {
        let (added, text) = completed("name: p\nruntime: nodejs\n");
        assert_eq!(
            added.unwrap(),
            [("packagemanager".to_owned(), "npm".to_owned())]
        );
        assert!(text.contains("packagemanager: npm"), "{text}");
        let (added, text) = completed("name: p\nruntime: yaml\n");
        assert!(added.unwrap().is_empty());
        assert_eq!(text, "name: p\nruntime: yaml\n");
    }
}
