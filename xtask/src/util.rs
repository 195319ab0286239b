//! Small process helpers shared by the tasks.
use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use anyhow::{Context as _, bail};

/// The workspace root (xtask lives one level below it).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask has a parent directory")
        .to_owned()
}

/// Cargo's target directory, honouring CARGO_TARGET_DIR.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| if p.is_absolute() { p } else { root().join(p) })
        .unwrap_or_else(|| root().join("target"))
}

/// Runs a command, failing with its name when it does not succeed.
pub fn exec(cmd: &mut Command) -> anyhow::Result<()> {
    let status = cmd
        .status()
        .with_context(|| format!("cannot start {:?}", cmd.get_program()))?;
    if !status.success() {
        bail!("{cmd:?} failed ({status})");
    }
    Ok(())
}

/// Runs a command quietly and tells whether it succeeded.
pub fn succeeds(cmd: &mut Command) -> bool {
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs a command and returns its stdout.
pub fn output(cmd: &mut Command) -> anyhow::Result<String> {
    let out = cmd
        .output()
        .with_context(|| format!("cannot start {:?}", cmd.get_program()))?;
    if !out.status.success() {
        bail!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Builds the workload `tests/workloads/<name>.c` with `cc -O2` into `dir/<name>`.
pub fn build_workload(dir: &Path, name: &str) -> anyhow::Result<PathBuf> {
    let exe = dir.join(name);
    exec(
        Command::new("cc")
            .args(["-O2", "-o"])
            .arg(&exe)
            .arg(root().join("tests/workloads").join(format!("{name}.c"))),
    )?;
    Ok(exe)
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Builds the release `strata` binary and returns its path.
pub fn build_strata() -> anyhow::Result<PathBuf> {
    exec(Command::new("cargo").current_dir(root()).args([
        "build",
        "--release",
        "--quiet",
        "--package",
        "strata",
    ]))?;
    Ok(target_dir().join("release/strata"))
}

/// Environment that lets Open MPI's launcher run as root, as an administrator's test does.
pub fn mpi_env(cmd: &mut Command) -> &mut Command {
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
}

/// (passed, failed) of a libtest summary line (`test result: ok. 3 passed; 0 failed; ...`).
pub fn test_counts(line: &str) -> Option<(u64, u64)> {
    let rest = line.split_once("test result: ")?.1;
    let count = |word: &str| {
        rest.split(';')
            .find_map(|part| {
                part.trim()
                    .strip_suffix(word)?
                    .trim()
                    .rsplit(' ')
                    .next()?
                    .parse::<u64>()
                    .ok()
            })
            .unwrap_or(0)
    };
    Some((count("passed"), count("failed")))
}
