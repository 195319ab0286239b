//! Expedited RCU grace periods while strata attaches or releases uprobes during a run.
//!
//! The kernel registers a uprobe under a per-CPU rw-semaphore taken for writing
//! (`dup_mmap_sem`, which every fork reads), and the first writer after a quiet spell waits
//! for an RCU grace period: 6-21 ms here, at the normal pace. A library a traced process
//! loads during the run (a dlopen, a container's own libc) runs unprobed for that long, and
//! its calls then are lost: 15-72 of 1000 calls made every 200 us. With
//! `/sys/kernel/rcu_expedited` set, the same wait takes microseconds (the first call was
//! recorded 1.2 ms after the library's open, 3 calls lost). Expedited grace periods
//! interrupt each busy CPU once; CPUs idle or running user code on a tickless core are
//! left alone. So strata sets the knob only around its own registrations and releases, and
//! puts it back at once.
use std::{
    fs, io,
    path::{Path, PathBuf},
};

const EXPEDITED: &str = "/sys/kernel/rcu_expedited";
/// Set by sites that want no expedited grace periods at all (real-time nodes): it wins over
/// `rcu_expedited`, and strata then leaves both alone.
const NORMAL: &str = "/sys/kernel/rcu_normal";

/// Grace periods expedited while this lives, if strata turned them on.
#[must_use]
pub struct Expedited {
    /// The knob strata set, to put back.
    set: Option<PathBuf>,
}

impl Expedited {
    /// Turns expedited grace periods on where they are off and allowed. Any failure (no such
    /// knob, a read-only /sys in a container) leaves the normal pace, which costs time only.
    pub fn begin() -> Self {
        Self::begin_at(Path::new(EXPEDITED), Path::new(NORMAL))
    }

    fn begin_at(expedited: &Path, normal: &Path) -> Self {
        let allowed = match (read(expedited), read(normal)) {
            (Ok(0), Ok(0)) => true,
            // Kernels before 4.9 have no rcu_normal.
            (Ok(0), Err(e)) => e.kind() == io::ErrorKind::NotFound,
            _ => false,
        };
        let set = allowed
            .then(|| match fs::write(expedited, "1") {
                Ok(()) => Some(expedited.to_path_buf()),
                Err(e) => {
                    log::debug!(
                        "cannot expedite RCU grace periods ({}): {e}",
                        expedited.display()
                    );
                    None
                }
            })
            .flatten();
        Self { set }
    }
}

impl Drop for Expedited {
    fn drop(&mut self) {
        // Back to 0 only if strata set it. Two strata at once may each see 0, and the
        // first to finish turns it off under the other: that one's wait is then normal,
        // and the knob is never left on.
        if let Some(knob) = &self.set {
            if let Err(e) = fs::write(knob, "0") {
                log::warn!(
                    "cannot set {} back to 0: {e}; RCU grace periods stay expedited until \
                     `echo 0 > {}`",
                    knob.display(),
                    knob.display()
                );
            }
        }
    }
}

fn read(path: &Path) -> io::Result<u32> {
    fs::read_to_string(path)?
        .trim()
        .parse()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Knob files with the given contents (None: absent) in a fresh directory.
    fn knobs(name: &str, expedited: Option<&str>, normal: Option<&str>) -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("strata-grace-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let (e, n) = (dir.join("rcu_expedited"), dir.join("rcu_normal"));
        for (path, v) in [(&e, expedited), (&n, normal)] {
            if let Some(v) = v {
                fs::write(path, v).unwrap();
            }
        }
        (e, n)
    }

    fn value(path: &Path) -> String {
        fs::read_to_string(path).unwrap().trim().to_string()
    }

    #[test]
    fn expedited_while_held_and_normal_after() {
        for normal in [Some("0\n"), None] {
            let (e, n) = knobs("held", Some("0\n"), normal);
            let g = Expedited::begin_at(&e, &n);
            assert_eq!(value(&e), "1", "rcu_normal {normal:?}");
            drop(g);
            assert_eq!(value(&e), "0", "rcu_normal {normal:?}");
        }
    }

    #[test]
    fn a_site_setting_is_left_alone() {
        // Already expedited: left on after. rcu_normal set: neither is touched.
        for (name, expedited, normal) in [("on", "1\n", "0\n"), ("normal", "0\n", "1\n")] {
            let (e, n) = knobs(name, Some(expedited), Some(normal));
            drop(Expedited::begin_at(&e, &n));
            assert_eq!(value(&e), expedited.trim(), "{name}");
            assert_eq!(value(&n), normal.trim(), "{name}");
        }
        // No knob, or one that says nothing readable: nothing is created or written.
        let (e, n) = knobs("absent", None, None);
        drop(Expedited::begin_at(&e, &n));
        assert!(!e.exists());
        let (e, n) = knobs("garbled", Some("x"), Some("0"));
        drop(Expedited::begin_at(&e, &n));
        assert_eq!(value(&e), "x");
    }

    #[test]
    fn overlapping_holders_never_leave_it_on() {
        let (e, n) = knobs("overlap", Some("0"), Some("0"));
        // The second sees the first's 1 and leaves the knob to it, in either order of ends.
        let (a, b) = (Expedited::begin_at(&e, &n), Expedited::begin_at(&e, &n));
        drop(a);
        assert_eq!(value(&e), "0");
        drop(b);
        assert_eq!(value(&e), "0");
        let (a, b) = (Expedited::begin_at(&e, &n), Expedited::begin_at(&e, &n));
        drop(b);
        assert_eq!(value(&e), "1");
        drop(a);
        assert_eq!(value(&e), "0");
    }
}
