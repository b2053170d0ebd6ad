//! The built-in `converge` package: `converge:index:File`, a local file.
//!
//! No Pulumi package is called `converge`, so the token cannot collide.
//!
//! - Inputs: `path` (required; relative paths are relative to the engine's
//!   working directory), `content` (text, default empty), `permissions`
//!   (octal text, default `"0644"`, normalised by Check to four digits).
//!   The outputs are the same three properties, as found on disk.
//! - ID: the path.
//! - Create and Update write atomically (a temporary file in the same
//!   directory, fsync, rename, fsync of the directory), creating missing
//!   parent directories. Read returns the file as it is now, so a refresh
//!   sees drift; a file that is gone reads as ID `""`. Import by path.
//! - Diff compares the new inputs with the last state: a new `path`
//!   replaces; `content` and `permissions` update in place. Any
//!   replacement (a new path, replaceOnChanges, `--replace`, a taint)
//!   deletes the old file first, in case both name the same file.
//! - Delete removes the file; a missing file is fine.

use std::io;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use converge_model::{PropertyMap, PropertyValue};
use rand::RngCore;

use super::spec::{self, failure, Dflt, Prop, Spec, Ty};
use crate::provider::{
    CheckRequest, CheckResponse, CreateRequest, CreateResponse, DeleteRequest, DiffConfigRequest,
    DiffRequest, DiffResponse, PluginInfo, ReadRequest, ReadResponse, UpdateRequest,
    UpdateResponse,
};
use crate::{Provider, ProviderError};

/// The package name.
pub const PACKAGE: &str = "converge";
/// The file resource.
pub const FILE: &str = "converge:index:File";
/// Permissions when none are given.
pub const DEFAULT_PERMISSIONS: &str = "0644";

static FILE_SPEC: Spec = Spec {
    token: FILE,
    doc: "A file on this machine, with the given content and permissions.",
    inputs: &[
        Prop::new(
            "content",
            Ty::Str,
            "The file's content (text). Defaults to empty.",
        )
        .default(Dflt::Str("")),
        Prop::new(
            "path",
            Ty::Str,
            "Where the file is. Changing it replaces the file.",
        )
        .required()
        .replace(),
        Prop::new(
            "permissions",
            Ty::Str,
            "The file's permissions in octal, e.g. \"0600\". Defaults to \"0644\".",
        )
        .default(Dflt::Str(DEFAULT_PERMISSIONS)),
    ],
    outputs: &[],
};

/// The package schema.
pub fn schema() -> serde_json::Value {
    spec::package_json(
        PACKAGE,
        super::CONVERGE_VERSION,
        "Converge's own built-in resources: local files.",
        &[&FILE_SPEC],
        &[],
    )
}

fn check_type(urn: &converge_model::Urn) -> Result<(), ProviderError> {
    if urn.type_token() == FILE {
        Ok(())
    } else {
        Err(crate::builtin::unknown_type(PACKAGE, urn.type_token()))
    }
}

/// Octal permissions text → mode bits.
pub fn parse_permissions(text: &str) -> Option<u32> {
    let ok = (1..=4).contains(&text.len()) && text.bytes().all(|b| (b'0'..=b'7').contains(&b));
    ok.then(|| u32::from_str_radix(text, 8).ok()).flatten()
}

fn format_permissions(mode: u32) -> String {
    format!("{:04o}", mode & 0o7777)
}

/// `path`, `content` and the mode of a file's inputs or state.
fn settings(m: &PropertyMap) -> Result<(PathBuf, String, u32), ProviderError> {
    let path = spec::get_str(m, "path")
        .filter(|p| !p.is_empty())
        .ok_or_else(|| ProviderError::failed("path must be a known, non-empty string"))?;
    let content = spec::get_str(m, "content").unwrap_or("").to_owned();
    let permissions = spec::get_str(m, "permissions").unwrap_or(DEFAULT_PERMISSIONS);
    let mode = parse_permissions(permissions)
        .ok_or_else(|| ProviderError::failed(format!("invalid permissions {permissions:?}")))?;
    Ok((PathBuf::from(path), content, mode))
}

fn io_error(what: &str, path: &Path, e: io::Error, secrets: &[String]) -> ProviderError {
    let text = format!("{what} {}: {e}", path.display());
    ProviderError::Failed(spec::redact(&text, secrets))
}

/// Writes `content` to `path` with `mode`, atomically.
fn write_atomic(path: &Path, content: &[u8], mode: u32) -> io::Result<()> {
    use std::io::Write;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir)?;
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
    let mut suffix = [0u8; 6];
    rand::rngs::OsRng.fill_bytes(&mut suffix);
    let tmp = dir.join(format!(
        ".{}.converge-{}",
        name.to_string_lossy(),
        hex::encode(suffix)
    ));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        set_mode(&tmp, mode)?;
        f.write_all(content)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        sync_dir(&dir)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    let mut p = std::fs::metadata(path)?.permissions();
    p.set_readonly(mode & 0o222 == 0);
    std::fs::set_permissions(path, p)
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

/// The file's `(content, permissions)`, or `None` if it does not exist.
fn read_file(path: &Path, fallback_permissions: &str) -> io::Result<Option<(String, String)>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = std::fs::metadata(path)?;
    #[cfg(unix)]
    let permissions = {
        use std::os::unix::fs::PermissionsExt;
        let _ = fallback_permissions;
        format_permissions(meta.permissions().mode())
    };
    #[cfg(not(unix))]
    let permissions = {
        let _ = meta;
        fallback_permissions.to_owned()
    };
    Ok(Some((
        String::from_utf8_lossy(&bytes).into_owned(),
        permissions,
    )))
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ProviderError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ProviderError::failed(format!("file task failed: {e}")))
}

async fn write(m: &PropertyMap) -> Result<(), ProviderError> {
    let (path, content, mode) = settings(m)?;
    let secrets = spec::secret_strings(m);
    let p = path.clone();
    blocking(move || write_atomic(&p, content.as_bytes(), mode))
        .await?
        .map_err(|e| io_error("writing", &path, e, &secrets))
}

/// A local file resource (`converge:index:File`).
#[derive(Debug, Clone, Copy, Default)]
pub struct FileProvider;

impl FileProvider {
    pub fn new() -> Self {
        FileProvider
    }
}

#[async_trait]
impl Provider for FileProvider {
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
        let mut checked = spec::check(&FILE_SPEC, &req.news);
        if let Some(PropertyValue::String(text)) = checked.inputs.get_mut("permissions") {
            match parse_permissions(text) {
                Some(mode) if mode <= 0o7777 => *text = format_permissions(mode),
                _ => checked.failures.push(failure(
                    "permissions",
                    format!("{text:?} is not octal permissions such as \"0644\""),
                )),
            }
        }
        if spec::get_str(&checked.inputs, "path") == Some("") {
            checked
                .failures
                .push(failure("path", "path must not be empty"));
        }
        Ok(checked)
    }

    async fn diff(&self, req: DiffRequest) -> Result<DiffResponse, ProviderError> {
        check_type(&req.urn)?;
        let olds = if req.old_outputs.is_empty() {
            &req.old_inputs
        } else {
            &req.old_outputs
        };
        let mut diff = spec::diff(
            &FILE_SPEC,
            olds,
            &req.new_inputs,
            &req.ignore_changes,
            |k| k == "path",
        );
        // Whatever replaces the file (a new path, which may name the same
        // file, or the program's replaceOnChanges, --replace, a taint),
        // the old one goes first, or its delete would remove the new one.
        diff.delete_before_replace = true;
        Ok(diff)
    }

    async fn create(&self, req: CreateRequest) -> Result<CreateResponse, ProviderError> {
        check_type(&req.urn)?;
        if req.preview || spec::any_unknown(&req.properties) {
            return Ok(CreateResponse {
                id: String::new(),
                properties: req.properties,
            });
        }
        write(&req.properties).await?;
        let (path, _, _) = settings(&req.properties)?;
        Ok(CreateResponse {
            id: path.to_string_lossy().into_owned(),
            properties: req.properties,
        })
    }

    async fn read(&self, req: ReadRequest) -> Result<ReadResponse, ProviderError> {
        check_type(&req.urn)?;
        let known = req.state.clone().unwrap_or_default();
        let path = spec::get_str(&known, "path")
            .map(str::to_owned)
            .unwrap_or_else(|| req.id.clone());
        if path.is_empty() {
            return Err(ProviderError::failed("a file is read by its path (the ID)"));
        }
        let fallback = spec::get_str(&known, "permissions")
            .unwrap_or(DEFAULT_PERMISSIONS)
            .to_owned();
        let p = PathBuf::from(&path);
        let found = blocking(move || read_file(&p, &fallback))
            .await?
            .map_err(|e| {
                io_error(
                    "reading",
                    Path::new(&path),
                    e,
                    &spec::secret_strings(&known),
                )
            })?;
        let Some((content, permissions)) = found else {
            return Ok(ReadResponse::default());
        };
        let was_secret = matches!(known.get("content"), Some(PropertyValue::Secret(_)));
        let content = if was_secret {
            PropertyValue::secret(content.into())
        } else {
            content.into()
        };
        let mut properties = PropertyMap::new();
        properties.insert(
            "path".into(),
            known.get("path").cloned().unwrap_or(path.as_str().into()),
        );
        properties.insert("content".into(), content);
        properties.insert("permissions".into(), permissions.into());
        let inputs = req.inputs.unwrap_or_else(|| properties.clone());
        Ok(ReadResponse {
            id: path,
            inputs,
            properties,
        })
    }

    async fn update(&self, req: UpdateRequest) -> Result<UpdateResponse, ProviderError> {
        check_type(&req.urn)?;
        if !req.preview && !spec::any_unknown(&req.new_inputs) {
            write(&req.new_inputs).await?;
        }
        Ok(UpdateResponse {
            properties: req.new_inputs,
        })
    }

    async fn delete(&self, req: DeleteRequest) -> Result<(), ProviderError> {
        check_type(&req.urn)?;
        let state = if req.outputs.is_empty() {
            &req.inputs
        } else {
            &req.outputs
        };
        let path = PathBuf::from(spec::get_str(state, "path").unwrap_or(&req.id));
        let secrets = spec::secret_strings(state);
        let p = path.clone();
        match blocking(move || std::fs::remove_file(&p)).await? {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                Err(io_error("removing", &path, e, &secrets))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_text() {
        assert_eq!(parse_permissions("0644"), Some(0o644));
        assert_eq!(parse_permissions("600"), Some(0o600));
        assert_eq!(parse_permissions("4755"), Some(0o4755));
        for bad in ["", "0x12", "0648", "12345", "rw-"] {
            assert_eq!(parse_permissions(bad), None, "{bad}");
        }
        assert_eq!(format_permissions(0o100644), "0644");
    }
}
