//! Where `converge new TEMPLATE` finds its template, in Pulumi's order:
//!
//! - a URL whose path ends in `.zip` — downloaded (bounded), unpacked
//!   into a temporary directory with every path checked to stay inside
//!   it, then read as a local directory;
//! - a local directory: a template (it has a `Pulumi.yaml`), or a
//!   directory of templates in the layout of Pulumi's public templates
//!   repository (one template per subdirectory), from which one is chosen;
//! - a name: a template of that name in Pulumi's template directory
//!   (`$PULUMI_HOME/templates`, where Pulumi keeps its copy of the
//!   templates repository), else one of the built-in templates.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context as _, Result};

use super::template::{self, Template};

/// The largest template archive Converge downloads.
const MAX_ARCHIVE_BYTES: u64 = 64 << 20;
/// The most an archive may unpack to, and the most files it may hold: a
/// template is a handful of small files, a zip bomb is not.
const MAX_UNPACKED_BYTES: u64 = 256 << 20;
const MAX_ARCHIVE_FILES: usize = 10_000;
/// How long a download may take.
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(120);

/// How a template is looked for.
#[derive(Debug, Clone, Default)]
pub struct SourceOptions {
    /// Ask which template to use when a directory holds several.
    pub interactive: bool,
    /// Download nothing: a URL is refused.
    pub offline: bool,
}

/// The template `arg` names, loaded.
pub async fn resolve(arg: &str, cwd: &Path, options: &SourceOptions) -> Result<Template> {
    if let Some(url) = zip_url(arg) {
        if options.offline {
            bail!("template {arg}: --offline downloads nothing; pass a local template directory");
        }
        let unpacked = download(&url).await?;
        let chosen = choose(unpacked.path(), arg, options)?;
        let mut template = template::load_dir(&chosen)?;
        template.name = arg.to_owned();
        return Ok(template);
    }
    if arg.contains("://") {
        bail!(
            "template {arg}: Converge fetches templates from URLs of .zip archives only; clone \
             the repository and pass the template's directory instead"
        );
    }
    let local = cwd.join(arg);
    if local.is_dir() {
        return template::load_dir(&choose(&local, arg, options)?);
    }
    if local.exists() {
        bail!("template {arg}: {} is not a directory", local.display());
    }
    if let Some(dir) = templates_dir().map(|d| d.join(arg)).filter(|d| d.is_dir()) {
        return template::load_dir(&dir);
    }
    if let Some(t) = template::builtin(arg) {
        return Ok(t);
    }
    bail!(
        "no template named {arg:?}: use a built-in template ({}), the path of a local template \
         directory, a template in {}, or the URL of a .zip archive of one",
        template::builtin_names().join(", "),
        templates_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_else(|| "$PULUMI_HOME/templates".to_owned())
    )
}

/// Pulumi's template directory (`$PULUMI_HOME/templates`, or
/// `~/.pulumi/templates`).
pub fn templates_dir() -> Option<PathBuf> {
    let plugins = converge_plugin::host::PluginDirectory::default_dir()?;
    Some(plugins.parent()?.join("templates"))
}

/// `arg` as a URL of a `.zip` archive (http or https).
fn zip_url(arg: &str) -> Option<reqwest::Url> {
    let url = reqwest::Url::parse(arg).ok()?;
    (matches!(url.scheme(), "http" | "https") && url.path().ends_with(".zip")).then_some(url)
}

/// The template directory under `dir`: `dir` itself when it has a
/// `Pulumi.yaml`; else the one template among its subdirectories (a
/// directory of templates, as Pulumi's templates repository is laid out),
/// asked for when there are several and a terminal is at hand. A single
/// subdirectory without a `Pulumi.yaml` (an archive's top folder) is
/// looked into.
fn choose(dir: &Path, arg: &str, options: &SourceOptions) -> Result<PathBuf> {
    if is_template(dir) {
        return Ok(dir.to_path_buf());
    }
    let subdirs = subdirectories(dir)?;
    let templates: Vec<&PathBuf> = subdirs.iter().filter(|d| is_template(d)).collect();
    match templates.as_slice() {
        [] => match subdirs.as_slice() {
            [only] => choose(only, arg, options),
            _ => bail!(
                "template {arg}: {} has no Pulumi.yaml, nor any subdirectory with one",
                dir.display()
            ),
        },
        [one] => Ok((*one).clone()),
        many => {
            let names: Vec<String> = many
                .iter()
                .filter_map(|d| d.file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .collect();
            if !options.interactive {
                bail!(
                    "template {arg} holds {} templates ({}): pass the one you want, as in \
                     `converge new {}/{}`",
                    names.len(),
                    names.join(", "),
                    arg.trim_end_matches('/'),
                    names[0]
                );
            }
            println!("Templates in {arg}:");
            for name in &names {
                println!("  {name}");
            }
            loop {
                let answer = crate::prompt::ask("Which template? ")?;
                let answer = answer.trim();
                if let Some(i) = names.iter().position(|n| n == answer) {
                    return Ok(many[i].clone());
                }
                println!("{answer:?} is not one of them");
            }
        }
    }
}

/// The templates in `dir`: `dir` itself when it is one, else its
/// subdirectories that are (a directory of templates).
pub fn template_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    if is_template(dir) {
        return Ok(vec![dir.to_path_buf()]);
    }
    Ok(subdirectories(dir)?
        .into_iter()
        .filter(|d| is_template(d))
        .collect())
}

fn is_template(dir: &Path) -> bool {
    dir.join("Pulumi.yaml").is_file() || dir.join("Pulumi.yml").is_file()
}

fn subdirectories(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .filter_map(Result::ok)
        .filter(|e| e.file_name() != ".git" && e.path().is_dir())
        .map(|e| e.path())
        .collect();
    out.sort();
    Ok(out)
}

/// Downloads the archive at `url` and unpacks it into a temporary
/// directory, removed when the value is dropped.
async fn download(url: &reqwest::Url) -> Result<tempfile::TempDir> {
    let client = reqwest::Client::builder()
        .timeout(DOWNLOAD_TIMEOUT)
        .build()
        .context("cannot set up an HTTP client")?;
    let mut response = client
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "application/zip")
        .send()
        .await
        .with_context(|| format!("cannot download the template {url}"))?;
    if !response.status().is_success() {
        bail!(
            "cannot download the template {url}: the server answered {}",
            response.status()
        );
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .with_context(|| format!("cannot download the template {url}"))?
    {
        bytes.extend_from_slice(&chunk);
        if bytes.len() as u64 > MAX_ARCHIVE_BYTES {
            bail!(
                "the template {url} is larger than {} MiB: not a template",
                MAX_ARCHIVE_BYTES >> 20
            );
        }
    }
    let dir = tempfile::Builder::new()
        .prefix("converge-template-")
        .tempdir()
        .context("cannot create a temporary directory for the template")?;
    unpack(&bytes, dir.path())
        .with_context(|| format!("the template {url} is not a usable .zip archive"))?;
    Ok(dir)
}

/// Unpacks a zip archive into `dest`, refusing any entry whose path would
/// leave it, and archives that unpack to more than the bounds.
fn unpack(bytes: &[u8], dest: &Path) -> Result<()> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))?;
    if archive.len() > MAX_ARCHIVE_FILES {
        bail!(
            "it holds {} files (at most {MAX_ARCHIVE_FILES})",
            archive.len()
        );
    }
    let mut total = 0u64;
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i)?;
        let Some(rel) = entry.enclosed_name() else {
            bail!(
                "its entry {:?} names a path outside the archive",
                entry.name()
            );
        };
        let target = dest.join(rel);
        if entry.is_dir() {
            std::fs::create_dir_all(&target)?;
            continue;
        }
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let mut content = Vec::new();
        let budget = MAX_UNPACKED_BYTES - total;
        (&mut entry).take(budget + 1).read_to_end(&mut content)?;
        total += content.len() as u64;
        if total > MAX_UNPACKED_BYTES {
            bail!("it unpacks to more than {} MiB", MAX_UNPACKED_BYTES >> 20);
        }
        std::fs::write(&target, &content)?;
        #[cfg(unix)]
        if let Some(mode) = entry.unix_mode() {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode & 0o777))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    fn zip_of(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = std::io::Cursor::new(Vec::new());
        let mut zip = zip::ZipWriter::new(&mut out);
        for (name, content) in files {
            zip.start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            zip.write_all(content).unwrap();
        }
        zip.finish().unwrap();
        out.into_inner()
    }

    #[test]
    fn an_archive_is_unpacked_inside_its_directory_only() {
        let d = tempfile::tempdir().unwrap();
        unpack(
            &zip_of(&[("t/Pulumi.yaml", b"name: x\n"), ("t/a/b.txt", b"b")]),
            d.path(),
        )
        .unwrap();
        assert_eq!(std::fs::read(d.path().join("t/a/b.txt")).unwrap(), b"b");
        let e = unpack(&zip_of(&[("../evil", b"x")]), d.path()).unwrap_err();
        assert!(e.to_string().contains("outside the archive"), "{e}");
        assert!(!d.path().parent().unwrap().join("evil").exists());
        let e = unpack(b"not a zip", d.path()).unwrap_err();
        assert!(!e.to_string().is_empty());
    }

    #[test]
    fn a_directory_of_templates_needs_a_choice_without_a_terminal() {
        let d = tempfile::tempdir().unwrap();
        for name in ["aws-python", "yaml"] {
            std::fs::create_dir_all(d.path().join(name)).unwrap();
            std::fs::write(d.path().join(name).join("Pulumi.yaml"), "name: x\n").unwrap();
        }
        std::fs::create_dir_all(d.path().join(".git")).unwrap();
        let e = choose(d.path(), "templates", &SourceOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("2 templates (aws-python, yaml)"), "{e}");
        assert!(e.contains("converge new templates/aws-python"), "{e}");
        let only = d.path().join("aws-python");
        assert_eq!(choose(&only, "x", &SourceOptions::default()).unwrap(), only);
        // An archive's single top folder is looked into.
        let top = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(top.path().join("repo-main/one")).unwrap();
        std::fs::write(top.path().join("repo-main/one/Pulumi.yaml"), "name: x\n").unwrap();
        assert_eq!(
            choose(top.path(), "x", &SourceOptions::default()).unwrap(),
            top.path().join("repo-main/one")
        );
    }

    #[test]
    fn only_zip_urls_are_downloaded() {
        assert!(zip_url("https://example.com/t/python.zip").is_some());
        assert!(zip_url("http://127.0.0.1:8080/a.zip?x=1").is_some());
        assert!(zip_url("https://github.com/pulumi/templates").is_none());
        assert!(zip_url("python").is_none());
        assert!(zip_url("./local.zip").is_none());
    }
}
