//! Which program runs for a project: the language host of its runtime.

use anyhow::{bail, Result};
use converge_engine::Program;

use crate::project::Project;

/// The program of `project`, run by the host of its `runtime`.
pub fn program_for(project: &Project) -> Result<Box<dyn Program>> {
    match project.runtime() {
        Some(runtime @ ("python" | "nodejs" | "yaml")) => bail!(
            "running {runtime} programs is not supported by this version of Converge yet; \
             `converge refresh` and `converge destroy` work on any stack"
        ),
        Some(other) => bail!("{}: unknown runtime {other:?}", project.dir.display()),
        None => bail!("{}: the project has no runtime", project.dir.display()),
    }
}
