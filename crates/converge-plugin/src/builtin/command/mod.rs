//! The built-in `command` provider: pulumi-command 1.x's local commands.
//!
//! - `command:local:Command`: Create runs `create`; Update runs `update`,
//!   or `create` when there is no `update`; Delete runs `delete`. Update and
//!   Delete get the last run's stdout and stderr as `PULUMI_COMMAND_STDOUT`
//!   and `PULUMI_COMMAND_STDERR` unless `addPreviousOutputInEnv` is false.
//!   A change of `triggers` replaces the resource (the schema marks it
//!   `replaceOnChanges`, so the SDKs ask for that too); any other change is
//!   an update. Nothing runs in a preview: stdout and stderr are unknown.
//! - `command:local:run` (invoke): runs `command` once, returns stdout and
//!   stderr.
//!
//! Stdout and stderr lose one trailing newline, as upstream. A non-zero
//! exit fails the step with the command's stderr (its tail); values that
//! were secret in the inputs are redacted from every error. `logging` is
//! accepted but output is not streamed: there is no log channel.
//! The ID of a Command is its name followed by 8 random hex digits.

use async_trait::async_trait;
use converge_model::{PropertyMap, PropertyValue};
use rand::RngCore;

use super::spec::{self, Prop, Spec, Ty};
use crate::provider::{
    CheckRequest, CheckResponse, CreateRequest, CreateResponse, DeleteRequest, DiffConfigRequest,
    DiffRequest, DiffResponse, InvokeRequest, InvokeResponse, PluginInfo, ReadRequest,
    ReadResponse, UpdateRequest, UpdateResponse,
};
use crate::{Provider, ProviderError};

pub mod glob;
mod run;

pub use run::{default_interpreter, PREVIOUS_STDERR, PREVIOUS_STDOUT};

/// The package name.
pub const PACKAGE: &str = "command";
/// The local command resource.
pub const COMMAND: &str = "command:local:Command";
/// The invoke that runs a command once.
pub const RUN: &str = "command:local:run";

const LOGGING: Ty = Ty::Enum(
    "command:local:Logging",
    &[
        ("stdout", "Capture stdout in logs but not stderr"),
        ("stderr", "Capture stderr in logs but not stdout"),
        ("stdoutAndStderr", "Capture stdout and stderr in logs"),
        ("none", "Capture no logs"),
    ],
);

const COMMON: [Prop; 7] = [
    Prop::new(
        "addPreviousOutputInEnv",
        Ty::Bool,
        "Whether the last run's stdout and stderr are given to the next run as \
         PULUMI_COMMAND_STDOUT and PULUMI_COMMAND_STDERR. Defaults to true.",
    ),
    Prop::new(
        "archivePaths",
        Ty::StrList,
        "Globs of files (relative to the working directory) to return as one archive after \
         the command: `*` matches anything but `/`, `**` anything, `!` excludes, rules apply \
         in order.",
    ),
    Prop::new(
        "assetPaths",
        Ty::StrList,
        "Globs of files to return as assets after the command (same rules as archivePaths).",
    ),
    Prop::new(
        "dir",
        Ty::Str,
        "The directory to run the command in; it must exist.",
    ),
    Prop::new(
        "environment",
        Ty::StrMap,
        "Environment variables added to the command's.",
    ),
    Prop::new(
        "interpreter",
        Ty::StrList,
        "The program and arguments that run the command. Defaults to [\"/bin/sh\", \"-c\"] \
         (on Windows [\"cmd\", \"/C\"]).",
    ),
    Prop::new(
        "logging",
        LOGGING,
        "Which of stdout and stderr to log (outputs always capture both).",
    ),
];

const RESULTS: [Prop; 4] = [
    Prop::new(
        "archive",
        Ty::Archive,
        "The files archivePaths selected, as one archive.",
    ),
    Prop::new(
        "assets",
        Ty::AssetMap,
        "The files assetPaths selected, by relative path.",
    ),
    Prop::new(
        "stderr",
        Ty::Str,
        "The command's standard error (one trailing newline removed).",
    )
    .required(),
    Prop::new(
        "stdout",
        Ty::Str,
        "The command's standard output (one trailing newline removed).",
    )
    .required(),
];

const STDIN: Prop = Prop::new(
    "stdin",
    Ty::Str,
    "Text given to the command as standard input.",
);

static COMMAND_SPEC: Spec = Spec {
    token: COMMAND,
    doc: "A command run on this machine when the resource is created, updated or deleted.",
    inputs: &[
        COMMON[0],
        COMMON[1],
        COMMON[2],
        Prop::new(
            "create",
            Ty::Str,
            "The command run when the resource is created (and on updates without `update`).",
        ),
        Prop::new(
            "delete",
            Ty::Str,
            "The command run when the resource is deleted.",
        ),
        COMMON[3],
        COMMON[4],
        COMMON[5],
        COMMON[6],
        STDIN,
        Prop::new(
            "triggers",
            Ty::AnyList,
            "Values of any type; a change of any of them replaces the resource.",
        )
        .replace()
        .replace_on_changes(),
        Prop::new(
            "update",
            Ty::Str,
            "The command run when the inputs change; `create` runs if it is not set.",
        ),
    ],
    outputs: &RESULTS,
};

static RUN_SPEC: Spec = Spec {
    token: RUN,
    doc: "Runs a command on this machine once, at every deployment that invokes it.",
    inputs: &[
        COMMON[0],
        COMMON[1],
        COMMON[2],
        Prop::new("command", Ty::Str, "The command to run.").required(),
        COMMON[3],
        COMMON[4],
        COMMON[5],
        COMMON[6],
        STDIN,
    ],
    outputs: &RESULTS,
};

/// The package schema.
pub fn schema() -> serde_json::Value {
    let mut schema = spec::package_json(
        PACKAGE,
        super::COMMAND_VERSION,
        "Run commands on this machine as part of a deployment. Built into Converge.",
        &[&COMMAND_SPEC],
        &[&RUN_SPEC],
    );
    // The published SDK whose programs it serves.
    schema["language"] = serde_json::json!({
        "python": {"packageName": "pulumi_command"},
        "nodejs": {"packageName": "@pulumi/command"},
    });
    schema
}

fn check_type(urn: &converge_model::Urn) -> Result<(), ProviderError> {
    if urn.type_token() == COMMAND {
        Ok(())
    } else {
        Err(crate::builtin::unknown_type(PACKAGE, urn.type_token()))
    }
}

fn non_empty<'a>(m: &'a PropertyMap, key: &str) -> Option<&'a str> {
    spec::get_str(m, key).filter(|s| !s.is_empty())
}

/// The inputs with the run's outputs unknown (previews).
fn unknown_outputs(inputs: &PropertyMap) -> PropertyMap {
    let mut out = inputs.clone();
    out.insert("stdout".into(), PropertyValue::Unknown);
    out.insert("stderr".into(), PropertyValue::Unknown);
    for (list, result) in [("assetPaths", "assets"), ("archivePaths", "archive")] {
        if inputs.contains_key(list) {
            out.insert(result.into(), PropertyValue::Unknown);
        }
    }
    out
}

/// The previous run's `(stdout, stderr)` from a state.
fn previous(state: &PropertyMap) -> (String, String) {
    let get = |k| spec::get_str(state, k).unwrap_or("").to_owned();
    (get("stdout"), get("stderr"))
}

/// pulumi-command makes every output depend on every input: one secret
/// input (the command, its environment, its stdin…) makes every output
/// secret, so what the command printed with it never reaches the state,
/// the display or the stack's outputs in plaintext.
fn secret_if_any_input_is(inputs: &PropertyMap, outputs: &mut PropertyMap) {
    if !inputs.values().any(PropertyValue::contains_secrets) {
        return;
    }
    for value in outputs.values_mut() {
        if !value.is_secret() {
            let plain = std::mem::replace(value, PropertyValue::Null);
            *value = PropertyValue::secret(plain);
        }
    }
}

/// pulumi-command's provider (local commands; version
/// [`super::COMMAND_VERSION`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct CommandProvider;

impl CommandProvider {
    pub fn new() -> Self {
        CommandProvider
    }
}

#[async_trait]
impl Provider for CommandProvider {
    fn package(&self) -> &str {
        PACKAGE
    }

    async fn schema(&self) -> Result<std::sync::Arc<crate::PackageSchema>, ProviderError> {
        crate::builtin::provider_schema(PACKAGE)
    }

    async fn plugin_info(&self) -> Result<PluginInfo, ProviderError> {
        Ok(PluginInfo {
            version: super::version(PACKAGE),
        })
    }

    async fn diff_config(&self, _req: DiffConfigRequest) -> Result<DiffResponse, ProviderError> {
        Ok(DiffResponse::none())
    }

    async fn check(&self, req: CheckRequest) -> Result<CheckResponse, ProviderError> {
        check_type(&req.urn)?;
        Ok(spec::check(&COMMAND_SPEC, &req.news))
    }

    async fn diff(&self, req: DiffRequest) -> Result<DiffResponse, ProviderError> {
        check_type(&req.urn)?;
        let olds = if req.old_outputs.is_empty() {
            &req.old_inputs
        } else {
            &req.old_outputs
        };
        Ok(spec::diff(
            &COMMAND_SPEC,
            olds,
            &req.new_inputs,
            &req.ignore_changes,
            |k| k == "triggers",
        ))
    }

    async fn create(&self, req: CreateRequest) -> Result<CreateResponse, ProviderError> {
        check_type(&req.urn)?;
        let mut suffix = [0u8; 4];
        rand::rngs::OsRng.fill_bytes(&mut suffix);
        let id = format!("{}{}", req.urn.name(), hex::encode(suffix));
        if req.preview || spec::any_unknown(&req.properties) {
            return Ok(CreateResponse {
                id: String::new(),
                properties: unknown_outputs(&req.properties),
            });
        }
        let mut properties = req.properties.clone();
        match non_empty(&req.properties, "create") {
            Some(command) => run::run(command, &req.properties, None, req.timeout)
                .await?
                .into_outputs(&mut properties),
            None => {
                properties.insert("stdout".into(), "".into());
                properties.insert("stderr".into(), "".into());
            }
        }
        secret_if_any_input_is(&req.properties, &mut properties);
        Ok(CreateResponse { id, properties })
    }

    async fn read(&self, req: ReadRequest) -> Result<ReadResponse, ProviderError> {
        check_type(&req.urn)?;
        // Nothing to look at: the state is what the last run produced.
        let Some(state) = req.state else {
            return Err(ProviderError::failed(format!(
                "{COMMAND} cannot be imported"
            )));
        };
        let inputs = req.inputs.unwrap_or_else(|| {
            state
                .iter()
                .filter(|(k, _)| COMMAND_SPEC.input(k).is_some())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        });
        Ok(ReadResponse {
            id: req.id,
            inputs,
            properties: state,
        })
    }

    async fn update(&self, req: UpdateRequest) -> Result<UpdateResponse, ProviderError> {
        check_type(&req.urn)?;
        let command = non_empty(&req.new_inputs, "update").or(non_empty(&req.new_inputs, "create"));
        let (stdout, stderr) = previous(&req.old_outputs);
        if spec::any_unknown(&req.new_inputs) || (req.preview && command.is_some()) {
            return Ok(UpdateResponse {
                properties: unknown_outputs(&req.new_inputs),
            });
        }
        let mut properties = req.new_inputs.clone();
        match command.filter(|_| !req.preview) {
            Some(command) => {
                let previous = Some((stdout.as_str(), stderr.as_str()));
                run::run(command, &req.new_inputs, previous, req.timeout)
                    .await?
                    .into_outputs(&mut properties);
            }
            // Nothing ran: the last run's output stays as it was recorded
            // (a secret one a secret).
            None => {
                for key in ["stdout", "stderr"] {
                    let last = req.old_outputs.get(key).cloned();
                    properties.insert(key.into(), last.unwrap_or_else(|| "".into()));
                }
            }
        }
        secret_if_any_input_is(&req.new_inputs, &mut properties);
        Ok(UpdateResponse { properties })
    }

    async fn delete(&self, req: DeleteRequest) -> Result<(), ProviderError> {
        check_type(&req.urn)?;
        let state = if req.outputs.is_empty() {
            &req.inputs
        } else {
            &req.outputs
        };
        if let Some(command) = non_empty(state, "delete") {
            let (stdout, stderr) = previous(state);
            let previous = Some((stdout.as_str(), stderr.as_str()));
            // Nothing to collect after a delete.
            let mut settings = state.clone();
            settings.remove("assetPaths");
            settings.remove("archivePaths");
            run::run(command, &settings, previous, req.timeout).await?;
        }
        Ok(())
    }

    async fn invoke(&self, req: InvokeRequest) -> Result<InvokeResponse, ProviderError> {
        if req.token != RUN {
            return Err(ProviderError::failed(format!(
                "command: unknown function {}",
                req.token
            )));
        }
        let checked = spec::check(&RUN_SPEC, &req.args);
        if !checked.failures.is_empty() {
            return Ok(InvokeResponse {
                outputs: PropertyMap::new(),
                failures: checked.failures,
            });
        }
        let args = checked.inputs;
        let command = spec::get_str(&args, "command").unwrap_or("");
        let mut outputs = args.clone();
        run::run(command, &args, None, None)
            .await?
            .into_outputs(&mut outputs);
        secret_if_any_input_is(&args, &mut outputs);
        Ok(InvokeResponse {
            outputs,
            failures: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urn() -> converge_model::Urn {
        converge_model::Urn::parse("urn:pulumi:dev::proj::command:local:Command::c").unwrap()
    }

    /// `echo $PW` with `PW` secret in the environment.
    fn echoing_a_secret() -> PropertyMap {
        let mut environment = PropertyMap::new();
        environment.insert("PW".into(), PropertyValue::secret("hunter2".into()));
        let mut inputs = PropertyMap::new();
        inputs.insert("create".into(), "echo pw=$PW".into());
        inputs.insert("environment".into(), PropertyValue::Object(environment));
        inputs
    }

    #[tokio::test]
    async fn a_secret_input_makes_every_output_secret() {
        let p = CommandProvider::new();
        let created = p
            .create(CreateRequest {
                urn: urn(),
                properties: echoing_a_secret(),
                timeout: None,
                preview: false,
                planned: None,
            })
            .await
            .unwrap();
        let stdout = &created.properties["stdout"];
        assert_eq!(
            stdout,
            &PropertyValue::secret("pw=hunter2".into()),
            "{created:?}"
        );
        assert!(created.properties.values().all(PropertyValue::is_secret));

        // An update that runs nothing keeps the last output, secret.
        let updated = p
            .update(UpdateRequest {
                urn: urn(),
                id: created.id.clone(),
                old_inputs: echoing_a_secret(),
                old_outputs: created.properties.clone(),
                new_inputs: echoing_a_secret(),
                timeout: None,
                ignore_changes: Vec::new(),
                preview: false,
                planned: None,
            })
            .await
            .unwrap();
        assert_eq!(updated.properties["stdout"], *stdout);
    }

    #[tokio::test]
    async fn plain_inputs_give_plain_outputs() {
        let mut inputs = PropertyMap::new();
        inputs.insert("create".into(), "echo hello".into());
        let created = CommandProvider::new()
            .create(CreateRequest {
                urn: urn(),
                properties: inputs,
                timeout: None,
                preview: false,
                planned: None,
            })
            .await
            .unwrap();
        assert_eq!(created.properties["stdout"], PropertyValue::from("hello"));
    }

    #[tokio::test]
    async fn run_with_a_secret_argument_returns_secret_output() {
        let mut args = PropertyMap::new();
        args.insert(
            "command".into(),
            PropertyValue::secret("echo s3cr3t".into()),
        );
        let ran = CommandProvider::new()
            .invoke(InvokeRequest {
                token: RUN.to_owned(),
                args,
            })
            .await
            .unwrap();
        assert_eq!(
            ran.outputs["stdout"],
            PropertyValue::secret("s3cr3t".into())
        );
    }
}
