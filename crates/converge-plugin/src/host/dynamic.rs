//! Dynamic providers: resource providers written in the program itself
//! (`pulumi.dynamic.ResourceProvider` in Python, `pulumi.dynamic` in
//! Node.js).
//!
//! The SDK serializes the provider's code into the resource's `__provider`
//! input and registers the resource with type
//! `pulumi-python:dynamic:Resource` (or `pulumi-python:dynamic/<module>:<Name>`)
//! / `pulumi-nodejs:dynamic:Resource`, so its package is `pulumi-python` or
//! `pulumi-nodejs`. No `pulumi-resource-pulumi-python` is installed
//! anywhere: the plugin is the SDK's own provider server, run by the
//! program's interpreter —
//!
//! - Python: `<python> -u -m pulumi.dynamic <engine>` with the program's
//!   interpreter (its virtualenv holds the `pulumi` SDK and whatever the
//!   provider's code imports);
//! - Node.js: `node <node_modules>/@pulumi/pulumi/cmd/dynamic-provider <engine>`.
//!
//! Both print their port and speak `pulumirpc.ResourceProvider` like any
//! plugin, so [`super::GrpcProvider`] drives them. What they need of the
//! engine is what it does for every plugin: `Configure` always carries
//! `args` (Node refuses a request without it); both answer
//! `acceptSecrets: false`, so the secret-wrapped `__provider` and other
//! secret inputs are sent as plain values and the outputs whose inputs were
//! secret are marked secret again; and no preview create or update is sent
//! to them (they do not declare `supportsPreview`), so a `__provider` that
//! is unknown in a preview never reaches them (Check and Diff fall back to
//! the old `__provider` themselves). They run in the program's directory,
//! where the deserialized code finds the program's own modules.

use std::ffi::OsString;
use std::path::PathBuf;

use super::process::PluginCommand;

/// The package of Python dynamic providers.
pub const PYTHON_DYNAMIC_PACKAGE: &str = "pulumi-python";
/// The package of Node.js dynamic providers.
pub const NODEJS_DYNAMIC_PACKAGE: &str = "pulumi-nodejs";

/// Where the Node.js SDK keeps its dynamic provider server, inside a
/// `node_modules` directory.
const NODE_SERVER: [&str; 4] = ["@pulumi", "pulumi", "cmd", "dynamic-provider"];

/// How to start the program's dynamic providers. Set from the program's
/// runtime by whoever runs it; a package left `None` is looked up like any
/// other plugin (and, normally, not found).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DynamicProviders {
    /// The Python interpreter with the `pulumi` SDK (`pulumi-python`).
    pub python: Option<PathBuf>,
    /// `node` and the SDK's `cmd/dynamic-provider` (`pulumi-nodejs`).
    pub nodejs: Option<NodeDynamicProvider>,
    /// Where the servers run: the program's working directory.
    pub working_dir: Option<PathBuf>,
}

/// The Node.js dynamic provider server and the `node` that runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeDynamicProvider {
    pub node: PathBuf,
    /// `…/node_modules/@pulumi/pulumi/cmd/dynamic-provider`.
    pub server: PathBuf,
}

impl NodeDynamicProvider {
    /// The server of the SDK installed in `node_modules`, if it is there.
    pub fn in_node_modules(node: impl Into<PathBuf>, node_modules: PathBuf) -> Option<Self> {
        let mut server = node_modules;
        NODE_SERVER.iter().for_each(|part| server.push(part));
        server
            .join("index.js")
            .is_file()
            .then(|| NodeDynamicProvider {
                node: node.into(),
                server,
            })
    }
}

impl DynamicProviders {
    /// The command that serves `package`, if it is a dynamic provider
    /// package this program can run.
    pub fn command(&self, package: &str) -> Option<PluginCommand> {
        let (program, args): (PathBuf, Vec<OsString>) = match package {
            PYTHON_DYNAMIC_PACKAGE => (
                self.python.clone()?,
                vec!["-u".into(), "-m".into(), "pulumi.dynamic".into()],
            ),
            NODEJS_DYNAMIC_PACKAGE => {
                let node = self.nodejs.as_ref()?;
                (node.node.clone(), vec![node.server.clone().into()])
            }
            _ => return None,
        };
        Some(PluginCommand {
            program,
            args,
            working_dir: self.working_dir.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_runs_the_sdk_module_with_the_programs_interpreter() {
        let d = DynamicProviders {
            python: Some("/venv/bin/python".into()),
            working_dir: Some("/proj".into()),
            ..DynamicProviders::default()
        };
        let c = d.command("pulumi-python").unwrap();
        assert_eq!(c.to_string(), "/venv/bin/python -u -m pulumi.dynamic");
        assert_eq!(c.working_dir.as_deref(), Some("/proj".as_ref()));
        assert_eq!(d.command("pulumi-nodejs"), None);
        assert_eq!(d.command("random"), None);
    }

    #[test]
    fn node_needs_the_sdk_in_node_modules() {
        let tmp = tempfile::tempdir().unwrap();
        let modules = tmp.path().join("node_modules");
        assert_eq!(
            NodeDynamicProvider::in_node_modules("node", modules.clone()),
            None
        );
        let server = modules.join("@pulumi/pulumi/cmd/dynamic-provider");
        std::fs::create_dir_all(&server).unwrap();
        std::fs::write(server.join("index.js"), "").unwrap();
        let node = NodeDynamicProvider::in_node_modules("node", modules).unwrap();
        let d = DynamicProviders {
            nodejs: Some(node),
            ..DynamicProviders::default()
        };
        let c = d.command("pulumi-nodejs").unwrap();
        assert_eq!(c.to_string(), format!("node {}", server.display()));
        assert_eq!(d.command("pulumi-python"), None);
    }
}
