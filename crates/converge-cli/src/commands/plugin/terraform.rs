//! `converge plugin install terraform [HOST/]NAMESPACE/TYPE [CONSTRAINT]`:
//! installs a Terraform provider by the OpenTofu CLI configuration's
//! `provider_installation` methods (filesystem mirror, network mirror,
//! registry), checks its hashes against its source's and the project's
//! lock file, and records the chosen version and hashes in the lock file
//! beside the project (or in the current directory outside a project), so
//! every later run uses exactly that build.

use anyhow::{Context as _, Result};
use converge_plugin::terraform::discovery::current_os_arch;
use converge_terraform::install::{
    CliConfig, Constraint, Installer, LockFile, Locked, ProviderAddress,
};

use crate::project::Project;

pub fn install(source: &str, constraint: Option<&str>) -> Result<()> {
    let address = ProviderAddress::parse(source).map_err(anyhow::Error::msg)?;
    let constraint_text = constraint.unwrap_or("");
    let constraint = Constraint::parse(constraint_text).map_err(anyhow::Error::msg)?;
    let cwd = std::env::current_dir().context("no current directory")?;
    let dir = Project::locate(&cwd)
        .and_then(|file| file.parent().map(std::path::Path::to_path_buf))
        .unwrap_or(cwd);
    let mut lock = LockFile::read(&dir)?;
    // A lock that still satisfies the constraint is kept: the same build.
    let locked = lock
        .providers
        .get(&address)
        .filter(|l| constraint.matches(&l.version))
        .cloned();
    let config = CliConfig::from_environment()?;
    let installer = Installer::new(config, current_os_arch());
    // `plugin` commands are synchronous, called from within the CLI's
    // runtime: the download runs on a thread and runtime of its own.
    let installed = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .context("cannot start the async runtime")?;
                runtime
                    .block_on(installer.install(&address, &constraint, locked.as_ref()))
                    .map_err(anyhow::Error::from)
            })
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the installation thread panicked")))
    })?;
    let mut hashes = installed.hashes.clone();
    if let Some(l) = &locked {
        hashes.extend(l.hashes.iter().cloned());
    }
    hashes.sort();
    hashes.dedup();
    lock.providers.insert(
        address.clone(),
        Locked {
            version: installed.version.clone(),
            constraints: (!constraint.is_empty()).then(|| constraint.to_string()),
            hashes,
        },
    );
    let path = lock.write(&dir)?;
    println!(
        "Installed Terraform provider {address} {} in {} (locked in {})",
        installed.version,
        installed.dir.display(),
        path.display()
    );
    Ok(())
}
