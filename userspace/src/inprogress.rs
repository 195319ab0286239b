//! Files written under a hidden temporary name (`.<name>.tmp`) and renamed into place once
//! complete: a flush's file, a rewritten segment, a compaction's merged file. The writer holds
//! an exclusive `flock` on the file while it writes it, so that `strata compact` can tell a
//! file still being written (locked) from one a killed strata left behind (unlocked, and not
//! modified for [`STALE_AFTER`]), which would otherwise keep its partition from compaction
//! until removed by hand.
use std::{
    fs,
    io::{self, ErrorKind},
    os::{
        fd::AsRawFd as _,
        unix::fs::{MetadataExt as _, OpenOptionsExt as _},
    },
    path::{Path, PathBuf},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

/// How long an unlocked temporary file must have been left unmodified to count as left by a
/// killed writer. A live writer holds its lock except in the microseconds between creating the
/// file and locking it, and between closing and renaming it; this covers those, and clocks a
/// network file system's server keeps a little apart from the node's.
pub const STALE_AFTER: Duration = Duration::from_secs(60);

/// Creates (or truncates) `tmp` for writing with permissions `mode`, locked for as long as
/// the returned file (or a clone of it) is open. A file system without `flock` writes it
/// unlocked: recording never depends on the lock.
pub fn create(tmp: &Path, mode: u32) -> io::Result<fs::File> {
    let file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(tmp)?;
    // SAFETY: flock on a descriptor this function owns.
    let _ = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    Ok(file)
}

/// What a temporary file found in a partition is.
#[derive(Debug, PartialEq, Eq)]
pub enum State {
    /// Being written: its lock is held, or it was modified within [`STALE_AFTER`].
    Written(String),
    /// Left by a writer that was killed: nobody holds its lock and it has not changed for
    /// [`STALE_AFTER`].
    Left,
    /// Whether it is written cannot be told (the file system has no `flock`).
    Unknown(String),
    /// Gone since it was listed (renamed into place or removed by its writer).
    Gone,
}

/// Whether `tmp` is still being written, as of `now`.
pub fn state(tmp: &Path, now: SystemTime) -> io::Result<State> {
    let file = match fs::File::open(tmp) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(State::Gone),
        Err(e) => return Err(e),
    };
    // SAFETY: flock on a descriptor this function owns; the lock goes with it.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EWOULDBLOCK) => Ok(State::Written(
                "a running strata holds its lock: compact after the run has ended".into(),
            )),
            Some(libc::ENOLCK | libc::EOPNOTSUPP | libc::ENOSYS | libc::EINVAL) => {
                Ok(State::Unknown(format!(
                    "its file system has no flock ({e}): compact after the run has ended, or \
                     remove the file if no strata writes here"
                )))
            }
            _ => Err(e),
        };
    }
    let meta = file.metadata()?;
    let modified = UNIX_EPOCH + Duration::new(meta.mtime().max(0) as u64, meta.mtime_nsec() as u32);
    match now.duration_since(modified) {
        Ok(age) if age >= STALE_AFTER => Ok(State::Left),
        Ok(age) => Ok(State::Written(format!(
            "it was modified {:.0} s ago: compact after the run has ended (a file no strata \
             writes any more is put in place or removed once {} s old)",
            age.as_secs_f64(),
            STALE_AFTER.as_secs()
        ))),
        Err(_) => Ok(State::Written(
            "it was modified later than now (by a clock ahead of this node's)".into(),
        )),
    }
}

/// The name a temporary file is renamed to once complete: `.<name>.tmp` and a compaction's
/// `.<name>.compact.tmp` both become `<name>`.
pub fn target(tmp: &Path) -> Option<PathBuf> {
    let name = tmp.file_name()?.to_str()?;
    let stem = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let stem = stem.strip_suffix(".compact").unwrap_or(stem);
    (!stem.is_empty()).then(|| tmp.with_file_name(stem))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_or_a_recent_change_means_written_and_neither_means_left() {
        let dir = std::env::temp_dir().join(format!("strata-inprogress-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let tmp = dir.join(".part-1-2-000001.parquet.tmp");
        let later = SystemTime::now() + STALE_AFTER + Duration::from_secs(1);
        let writer = create(&tmp, 0o600).unwrap();
        assert!(matches!(state(&tmp, later).unwrap(), State::Written(why) if why.contains("lock")));
        drop(writer);
        assert!(
            matches!(state(&tmp, SystemTime::now()).unwrap(), State::Written(why) if why.contains("modified"))
        );
        assert_eq!(state(&tmp, later).unwrap(), State::Left);
        fs::remove_file(&tmp).unwrap();
        assert_eq!(state(&tmp, later).unwrap(), State::Gone);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_temporary_file_is_renamed_to_its_name_without_the_dot_and_suffixes() {
        let t = |s: &str| target(Path::new(s)).map(|p| p.display().to_string());
        assert_eq!(
            t("/d/.part-1-2-000003.parquet.tmp").as_deref(),
            Some("/d/part-1-2-000003.parquet")
        );
        assert_eq!(
            t("/d/.part-1-2-000003.parquet.compact.tmp").as_deref(),
            Some("/d/part-1-2-000003.parquet")
        );
        for s in ["/d/part-1.parquet", "/d/..tmp", "/d/.x.parquet"] {
            assert_eq!(t(s), None, "{s}");
        }
    }
}
