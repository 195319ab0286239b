//! Targets by cgroup: a cgroup v2 directory (its id and depth, for the kernel-side filter) and
//! the cgroup Slurm gives a job or step on this node.
use std::{
    os::unix::fs::MetadataExt as _,
    path::{Path, PathBuf},
};

/// A cgroup v2 to trace: its id is the inode number of its directory in cgroupfs, its level
/// the number of directories between it and the cgroup v2 root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cgroup {
    pub id: u64,
    pub level: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    #[error("cgroup {0}: {1}")]
    Access(PathBuf, std::io::Error),
    #[error(
        "{0} is not a cgroup v2 directory; strata filters by cgroup v2 (mounted at /sys/fs/cgroup, or /sys/fs/cgroup/unified on hybrid systems)"
    )]
    NotV2(PathBuf),
    #[error(
        "no cgroup of Slurm job {job}{step} on this node (looked for {looked}); is the job running here, and does slurmd use cgroup/v2 (CgroupPlugin=cgroup/v2)?"
    )]
    NoSlurmJob {
        job: String,
        step: String,
        looked: String,
    },
}

/// `CGROUP2_SUPER_MAGIC` from <linux/magic.h>.
const CGROUP2_MAGIC: i64 = 0x6367_7270;

fn is_cgroup2(path: &Path) -> bool {
    nix::sys::statfs::statfs(path).is_ok_and(|s| s.filesystem_type().0 == CGROUP2_MAGIC)
}

/// The processes of cgroup `dir` and of the cgroups beneath it, from each `cgroup.procs`
/// (a cgroup removed meanwhile is skipped).
pub fn processes(dir: &Path) -> Vec<i32> {
    let mut pids = Vec::new();
    let mut dirs = vec![dir.to_owned()];
    while let Some(d) = dirs.pop() {
        if let Ok(text) = std::fs::read_to_string(d.join("cgroup.procs")) {
            pids.extend(text.lines().filter_map(|l| l.trim().parse::<i32>().ok()));
        }
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        dirs.extend(
            entries
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path()),
        );
    }
    pids
}

/// Resolves a cgroup v2 directory.
pub fn resolve(path: &Path) -> Result<Cgroup, CgroupError> {
    let meta = std::fs::metadata(path).map_err(|e| CgroupError::Access(path.to_owned(), e))?;
    if !meta.is_dir() || !is_cgroup2(path) {
        return Err(CgroupError::NotV2(path.to_owned()));
    }
    let canonical =
        std::fs::canonicalize(path).map_err(|e| CgroupError::Access(path.to_owned(), e))?;
    // Up to the root of the cgroup v2 mount: the first ancestor on another file system.
    let mut level = 0;
    let mut dir = canonical.as_path();
    while let Some(parent) = dir.parent() {
        if !std::fs::metadata(parent).is_ok_and(|m| m.dev() == meta.dev()) || !is_cgroup2(parent) {
            break;
        }
        level += 1;
        dir = parent;
    }
    Ok(Cgroup {
        id: meta.ino(),
        level,
    })
}

/// Where cgroup v2 is mounted: /sys/fs/cgroup, or /sys/fs/cgroup/unified on hybrid systems.
pub fn v2_root() -> Option<PathBuf> {
    ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| is_cgroup2(p))
}

/// The cgroup of a Slurm job (or one of its steps) on this node. slurmd's cgroup/v2 plugin
/// puts jobs under its own scope: `<root>/system.slice/slurmstepd.scope/job_<id>/step_<step>`
/// (Slurm 22.05 and later); some sites run slurmd outside systemd, where the scope sits at
/// `<root>/slurmstepd.scope` or `<root>/slurm`. cgroup v1 layouts
/// (`/sys/fs/cgroup/<controller>/slurm/uid_<uid>/job_<id>`) cannot be filtered in the kernel
/// by cgroup id and are not supported.
pub fn slurm(job: &str, step: Option<&str>) -> Result<PathBuf, CgroupError> {
    let leaf = match step {
        Some(s) => format!("job_{job}/step_{s}"),
        None => format!("job_{job}"),
    };
    let roots: Vec<PathBuf> = v2_root().into_iter().collect();
    let mut looked = Vec::new();
    for root in &roots {
        for scope in ["system.slice/slurmstepd.scope", "slurmstepd.scope", "slurm"] {
            let p = root.join(scope).join(&leaf);
            if p.is_dir() {
                return Ok(p);
            }
            looked.push(p.display().to_string());
        }
    }
    Err(CgroupError::NoSlurmJob {
        job: job.into(),
        step: step.map(|s| format!(" step {s}")).unwrap_or_default(),
        looked: if looked.is_empty() {
            "no cgroup v2 mount found".into()
        } else {
            looked.join(", ")
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_v2_root_is_level_zero_and_plain_dirs_are_refused() {
        let root = v2_root().expect("this machine mounts cgroup v2");
        let c = resolve(&root).unwrap();
        assert_eq!(c.level, 0);
        assert!(matches!(
            resolve(Path::new("/tmp")),
            Err(CgroupError::NotV2(_))
        ));
        assert!(matches!(
            resolve(Path::new("/sys/fs/cgroup/no/such/group")),
            Err(CgroupError::Access(..))
        ));
        let e = slurm("999999999", Some("0")).unwrap_err().to_string();
        assert!(e.contains("job_999999999/step_0"), "{e}");
    }
}
