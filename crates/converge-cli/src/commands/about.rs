//! `converge about [--json] [--stack S]`: what a bug report needs —
//! Converge's version, the plugins it can use, the host, the project's
//! language runtime and its dependencies, the current stack and the
//! backend. `--json` has Pulumi's keys (`cliAbout`, `plugins`, `host`,
//! `runtime`, `dependencies`, `currentStack`, `backend`, `errors`); what
//! cannot be found is `null` with a line in `errors`, as in Pulumi.
//! `cliAbout` has no Go fields; `plugins` lists the plugin directory's
//! plugins and the providers built into Converge (Pulumi lists the
//! project's required plugins, which Converge does not compute).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, Result};
use clap::Args;
use converge_backend::Backend;
use serde_json::{json, Value};

use crate::context::{username, Context};
use crate::project::Project;
use crate::table::Table;

#[derive(Debug, Args)]
pub struct AboutArgs {
    /// Print JSON.
    #[arg(short, long)]
    pub json: bool,
    /// The stack to describe (default: the current stack).
    #[arg(short, long, value_name = "STACK")]
    pub stack: Option<String>,
}

#[derive(Default)]
struct Summary {
    plugins: Vec<Value>,
    host: Value,
    backend: Value,
    current_stack: Value,
    runtime: Value,
    dependencies: Value,
    errors: Vec<String>,
}

pub async fn run(ctx: &Context, args: AboutArgs) -> Result<()> {
    let mut s = Summary {
        host: host(),
        ..Summary::default()
    };
    match plugins() {
        Ok(p) => s.plugins = p,
        Err(e) => s.errors.push(format!(
            "Failed to get information about the plugins: {e:#}"
        )),
    }
    let project = match Project::require(&ctx.cwd) {
        Ok(p) => Some(p),
        Err(e) => {
            s.errors.push(format!("Failed to read project: {e:#}"));
            None
        }
    };
    if let Some(p) = &project {
        match runtime(p) {
            Ok((runtime, deps)) => {
                s.runtime = runtime;
                s.dependencies = deps;
            }
            Err(e) => s.errors.push(format!(
                "Failed to get information about the project runtime: {e:#}"
            )),
        }
    }
    match backend(ctx, project.as_ref()) {
        Ok((backend, info)) => {
            s.backend = info;
            if let Some(p) = &project {
                match current_stack(ctx, &backend, p, args.stack.as_deref()).await {
                    Ok(v) => s.current_stack = v,
                    Err(e) => s.errors.push(format!(
                        "Failed to get information about the current stack: {e:#}"
                    )),
                }
            }
        }
        Err(e) => s
            .errors
            .push(format!("Could not access the backend: {e:#}")),
    }
    if args.json {
        let doc = json!({
            "plugins": s.plugins,
            "host": s.host,
            "backend": s.backend,
            "currentStack": s.current_stack,
            "cliAbout": { "version": env!("CARGO_PKG_VERSION") },
            "runtime": s.runtime,
            "dependencies": s.dependencies,
            "errors": s.errors,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    print_text(&s);
    Ok(())
}

fn print_text(s: &Summary) {
    let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let mut cli = Table::new(["CLI", ""]);
    cli.row(["Version".into(), env!("CARGO_PKG_VERSION").into()]);
    println!("{cli}");
    let mut plugins = Table::new(["KIND", "NAME", "VERSION"]);
    for p in &s.plugins {
        let version = field(p, "version");
        plugins.row([
            field(p, "kind"),
            field(p, "name"),
            if version.is_empty() {
                "unknown".into()
            } else {
                version
            },
        ]);
    }
    println!("Plugins\n{plugins}");
    let mut host = Table::new(["Host", ""]);
    for (label, key) in [("OS", "os"), ("Version", "version"), ("Arch", "arch")] {
        host.row([label.into(), field(&s.host, key)]);
    }
    println!("{host}");
    if !s.runtime.is_null() {
        let mut params = Vec::new();
        for key in ["executable", "version"] {
            let v = field(&s.runtime, key);
            if !v.is_empty() {
                params.push(format!("{key}='{v}'"));
            }
        }
        let params = if params.is_empty() {
            String::new()
        } else {
            format!(": {}", params.join(" "))
        };
        println!(
            "This project is written in {}{params}\n",
            field(&s.runtime, "language")
        );
    }
    if !s.current_stack.is_null() {
        let name = field(&s.current_stack, "fullyQualifiedName");
        let short = field(&s.current_stack, "name");
        println!("Current Stack: {name}\n");
        for (key, header, none) in [
            ("resources", "TYPE", "resources"),
            ("pendingOps", "OPP TYPE", "pending operations"),
        ] {
            let list = s.current_stack[key].as_array().cloned().unwrap_or_default();
            if list.is_empty() {
                println!("Found no {none} associated with {short}\n");
            } else {
                let mut t = Table::new([header, "URN"]);
                for r in &list {
                    t.row([field(r, "type"), field(r, "urn")]);
                }
                println!("{t}");
            }
        }
    }
    if !s.backend.is_null() {
        let mut b = Table::new(["Backend", ""]);
        let orgs: Vec<String> = s.backend["organizations"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        b.row(["Name".into(), field(&s.backend, "name")]);
        b.row(["URL".into(), field(&s.backend, "url")]);
        b.row(["User".into(), field(&s.backend, "user")]);
        b.row(["Organizations".into(), orgs.join(", ")]);
        println!("{b}");
    }
    if let Some(deps) = s.dependencies.as_array() {
        if deps.is_empty() {
            println!("No dependencies found\n");
        } else {
            let mut t = Table::new(["NAME", "VERSION"]);
            for d in deps {
                t.row([field(d, "name"), field(d, "version")]);
            }
            println!("Dependencies:\n{t}");
        }
    }
    for e in &s.errors {
        eprintln!("warning: {e}");
    }
}

/// The plugin directory's plugins, then the built-in providers.
fn plugins() -> Result<Vec<Value>> {
    let dir = super::plugin::plugins_dir()?;
    let mut out: Vec<Value> = converge_plugin::host::catalog::list(&dir)
        .with_context(|| format!("cannot read the plugin directory {}", dir.display()))?
        .into_iter()
        .map(|e| json!({"name": e.name, "version": e.version.to_string(), "kind": e.kind}))
        .collect();
    let mut builtins = converge_plugin::builtin::PACKAGES.to_vec();
    builtins.sort_unstable();
    for package in builtins {
        let version = converge_plugin::builtin::version(package).map(|v| v.to_string());
        out.push(json!({"name": package, "version": version, "kind": "resource"}));
    }
    Ok(out)
}

/// The OS distribution (`/etc/os-release`'s `ID` and `VERSION_ID` on
/// Linux), and the machine's architecture.
fn host() -> Value {
    let mut os = std::env::consts::OS.to_owned();
    let mut version = String::new();
    if let Ok(text) = std::fs::read_to_string("/etc/os-release") {
        for line in text.lines() {
            let unquote = |v: &str| v.trim_matches('"').to_owned();
            if let Some(v) = line.strip_prefix("ID=") {
                os = unquote(v);
            } else if let Some(v) = line.strip_prefix("VERSION_ID=") {
                version = unquote(v);
            }
        }
    }
    json!({"os": os, "version": version, "arch": std::env::consts::ARCH})
}

fn backend(ctx: &Context, project: Option<&Project>) -> Result<(Arc<dyn Backend>, Value)> {
    let url = ctx.backend_url(project)?;
    let backend: Arc<dyn Backend> = Arc::from(ctx.backend(project)?);
    let service = crate::remote::is_service_url(&url);
    let organizations = if service {
        let org = converge_backend::http::normalize_service_url(&url)
            .ok()
            .and_then(|u| ctx.home.service_account(&u).ok().flatten())
            .and_then(|a| a.organization)
            .unwrap_or_else(|| converge_backend::DIY_ORGANIZATION.to_owned());
        json!([org])
    } else {
        Value::Null
    };
    let name = if service { url.clone() } else { hostname() };
    let info = json!({
        "name": name,
        "url": backend.url(),
        "user": username(),
        "organizations": organizations,
    });
    Ok((backend, info))
}

/// The host's name, as Pulumi names a DIY backend.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default()
}

async fn current_stack(
    ctx: &Context,
    backend: &Arc<dyn Backend>,
    project: &Project,
    name: Option<&str>,
) -> Result<Value> {
    let stack = ctx.resolve_stack(project, name)?;
    ctx.require_stack(backend.as_ref(), &stack).await?;
    let state = super::stack::current_state(ctx, backend, &stack).await?;
    let snapshot = state.checkpoint.latest;
    let resources: Vec<Value> = snapshot
        .iter()
        .flat_map(|s| &s.resources)
        .map(|r| json!({"type": r.type_token, "urn": r.urn.as_str()}))
        .collect();
    let pending: Vec<Value> = snapshot
        .iter()
        .flat_map(|s| &s.pending_operations)
        .map(|p| json!({"type": p.kind.as_str(), "urn": p.resource.urn.as_str()}))
        .collect();
    Ok(json!({
        "name": stack.stack,
        "fullyQualifiedName": format!("{}/{}/{}", stack.organization, stack.project, stack.stack),
        "resources": resources,
        "pendingOps": pending,
    }))
}

/// The project's language runtime (`language`, `executable`, `version`)
/// and its direct dependencies as installed.
fn runtime(project: &Project) -> Result<(Value, Value)> {
    let language = project.runtime().unwrap_or_default().to_owned();
    match language.as_str() {
        "python" => {
            let program = converge_language::python::PythonProgram::new(&project.dir)?;
            let python = program.interpreter();
            let version = command_output(&python, &["--version"])?;
            let version = version.trim().trim_start_matches("Python ").to_owned();
            let deps = python_dependencies(&python).unwrap_or(Value::Null);
            Ok((
                json!({"language": language, "executable": python.display().to_string(), "version": version}),
                deps,
            ))
        }
        "nodejs" => {
            let node = which("node").context("node is not on PATH")?;
            let version = command_output(&node, &["--version"])?;
            let version = version.trim().trim_start_matches('v').to_owned();
            Ok((
                json!({"language": language, "executable": node.display().to_string(), "version": version}),
                node_dependencies(&project.dir),
            ))
        }
        _ => Ok((
            json!({"language": language, "version": env!("CARGO_PKG_VERSION")}),
            Value::Null,
        )),
    }
}

fn command_output(program: &Path, args: &[&str]) -> Result<String> {
    let out = std::process::Command::new(program)
        .args(args)
        .output()
        .with_context(|| format!("cannot run {}", program.display()))?;
    anyhow::ensure!(
        out.status.success(),
        "{} {} failed: {}",
        program.display(),
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The packages pip has installed that no other installed package needs.
fn python_dependencies(python: &Path) -> Option<Value> {
    let text = command_output(
        python,
        &[
            "-m",
            "pip",
            "list",
            "--format",
            "json",
            "--not-required",
            "--disable-pip-version-check",
        ],
    )
    .ok()?;
    let list: Vec<Value> = serde_json::from_str(&text).ok()?;
    Some(Value::Array(
        list.into_iter()
            .filter(|p| !matches!(p["name"].as_str(), Some("pip" | "setuptools" | "wheel")))
            .map(|p| json!({"name": p["name"], "version": p["version"]}))
            .collect(),
    ))
}

/// `package.json`'s dependencies, each at the version its `node_modules`
/// holds.
fn node_dependencies(dir: &Path) -> Value {
    let Ok(text) = std::fs::read_to_string(dir.join("package.json")) else {
        return Value::Null;
    };
    let Ok(manifest) = serde_json::from_str::<Value>(&text) else {
        return Value::Null;
    };
    let mut deps = Vec::new();
    for key in ["dependencies", "devDependencies"] {
        let Some(map) = manifest[key].as_object() else {
            continue;
        };
        for (name, wanted) in map {
            let installed =
                std::fs::read_to_string(dir.join("node_modules").join(name).join("package.json"))
                    .ok()
                    .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                    .and_then(|m| m["version"].as_str().map(str::to_owned));
            let version = installed.unwrap_or_else(|| wanted.as_str().unwrap_or("").to_owned());
            deps.push(json!({"name": name, "version": version}));
        }
    }
    Value::Array(deps)
}
