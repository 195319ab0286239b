//! The mount tables of the traced processes' mount namespaces (`/proc/<pid>/mountinfo`):
//! read when a namespace is first seen, read again when the kernel says it changed, and each
//! mount written once to the `mounts` table.
//!
//! A namespace's table is held open: the open file keeps the namespace readable after its
//! last process ended (a container's, a job's private one), and polls with `POLLPRI` once a
//! mount or an unmount changed it, so a file system mounted during the run (an automounted
//! home directory, a job's own tmpfs) is seen without reading the table at every exec.
use std::{
    collections::HashSet,
    fs::{self, File},
    io::{Read as _, Seek as _, SeekFrom},
    os::fd::AsFd as _,
    path::{Path, PathBuf},
    time::{SystemTime, UNIX_EPOCH},
};

use procfs::{
    FromRead as _,
    process::{MountInfo, MountInfos},
};

use crate::{fast::HashMap, files::os_text, schema::MountRow};

/// Ticks (flush intervals) a namespace no process was seen in stays held: after that its
/// table is closed and forgotten, so that a node running job after job in namespaces of
/// their own holds only the recent ones.
const IDLE_TICKS: u64 = 600;

/// Namespaces held at once, each an open file (well within the 1,024 files a process may
/// open by default, with strata's own hundred or so); past it the one used longest ago
/// makes room.
const MAX_SPACES: usize = 256;

#[derive(Default)]
pub struct Mounts {
    spaces: HashMap<u64, Space>,
    /// strata's own namespace, read in place of a process's that is gone.
    own: Option<Option<u64>>,
    ticks: u64,
    /// The namespace of each live traced process, as the kernel side or /proc gave it at
    /// its start or exec: its files' mounts are looked up there even once it is gone.
    by_pid: HashMap<i32, u64>,
    /// Rows of mounts not written yet, taken by the correlator.
    pub new_rows: Vec<MountRow>,
}

struct Space {
    file: File,
    /// The root of the process the table was opened through, as strata names it: the table
    /// lists the mounts under it, from it, and its mount points are named from the
    /// namespace's root by putting it before them.
    from: PathBuf,
    table: Vec<MountInfo>,
    /// Whether the table has the namespace's root: not where it was opened through a
    /// process in a chroot, nor once that process's root left the namespace (`pivot_root`
    /// and an unmount of the old root, as container runtimes do).
    whole: bool,
    /// Mounts written: (mount id, device, mount point), as ids are reused after an unmount.
    written: HashSet<(i32, String, PathBuf)>,
    used: u64,
}

impl Mounts {
    /// Makes the table of namespace `ns`, which process `pid` is (or was) in, current: read
    /// from the process when the namespace is new, read again when it changed since, and
    /// through the process instead when it sees the whole namespace where the table did not.
    /// strata's own namespace is read through strata. False when the table could not be read.
    pub fn see(&mut self, ns: u64, pid: i32) -> bool {
        let ticks = self.ticks;
        let own = self.own() == Some(ns);
        // Named only where /proc is read: not at most execs.
        let who = || match own {
            true => "self".to_string(),
            false => pid.to_string(),
        };
        if let Some(space) = self.spaces.get_mut(&ns) {
            space.used = ticks;
            // Every mount of a table as it was last read is written: only a table read
            // again can have new ones (a loop of short processes sees one at each exec).
            let mut read_again = false;
            if changed(&space.file) {
                if let Some(table) = read(&mut space.file, &space.from) {
                    space.whole = has_root(&table);
                    space.table = table;
                    read_again = true;
                }
            }
            if !space.whole && at_root(&who()) {
                if let Some(mut wider) = Space::open(ns, &who(), ticks).filter(|s| s.whole) {
                    wider.written = std::mem::take(&mut space.written);
                    *space = wider;
                    read_again = true;
                }
            }
            if read_again {
                space.write_new(ns, &mut self.new_rows);
            }
            return true;
        }
        let Some(mut space) = Space::open(ns, &who(), ticks) else {
            return false;
        };
        if self.spaces.len() >= MAX_SPACES {
            let oldest = self
                .spaces
                .iter()
                .min_by_key(|(_, s)| s.used)
                .map(|(k, _)| *k);
            oldest.map(|k| self.spaces.remove(&k));
        }
        space.write_new(ns, &mut self.new_rows);
        self.spaces.insert(ns, space);
        true
    }

    /// Process `pid` is in namespace `ns` (at its start or exec): [`Mounts::see`], and its
    /// files are looked up there from now on.
    pub fn enter(&mut self, pid: i32, ns: u64) {
        self.by_pid.insert(pid, ns);
        self.see(ns, pid);
    }

    /// A new process is in its parent's namespace.
    pub fn fork(&mut self, parent: i32, child: i32) {
        if let Some(&ns) = self.by_pid.get(&parent) {
            self.by_pid.insert(child, ns);
        }
    }

    /// `pid` ended.
    pub fn forget(&mut self, pid: i32) {
        self.by_pid.remove(&pid);
    }

    /// The namespace `pid` is in, as strata was told at its start or exec.
    pub fn ns_of(&self, pid: i32) -> Option<u64> {
        self.by_pid.get(&pid).copied()
    }

    /// The table of namespace `ns` as last read.
    pub fn table(&self, ns: u64) -> Option<&[MountInfo]> {
        self.spaces.get(&ns).map(|s| s.table.as_slice())
    }

    /// strata's own namespace.
    pub fn own(&mut self) -> Option<u64> {
        *self.own.get_or_insert_with(|| crate::views::mnt_ns("self"))
    }

    /// Once per flush interval: namespaces no process was seen in for a while are let go.
    pub fn tick(&mut self) {
        self.ticks += 1;
        let now = self.ticks;
        self.spaces.retain(|_, s| now - s.used < IDLE_TICKS);
    }
}

impl Space {
    /// The table of namespace `ns` through process `who` (a pid, or `self`), if it is in
    /// that namespace, with the same root, once the table is open (the open file shows the
    /// namespace and root the process had when it was opened).
    fn open(ns: u64, who: &str, used: u64) -> Option<Space> {
        let root = || fs::read_link(format!("/proc/{who}/root")).ok();
        let from = root()?;
        let mut file = File::open(format!("/proc/{who}/mountinfo")).ok()?;
        if crate::views::mnt_ns(who) != Some(ns) || root().as_ref() != Some(&from) {
            return None;
        }
        let table = read(&mut file, &from)?;
        Some(Space {
            file,
            whole: has_root(&table),
            from,
            table,
            written: HashSet::new(),
            used,
        })
    }

    /// Rows for the mounts of the table not written before.
    fn write_new(&mut self, ns: u64, out: &mut Vec<MountRow>) {
        let seen_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64);
        for m in &self.table {
            let key = (m.mnt_id, m.majmin.clone(), m.mount_point.clone());
            if self.written.insert(key) {
                out.push(MountRow {
                    mnt_ns: ns as i64,
                    mount_id: m.mnt_id,
                    parent_id: m.pid,
                    dev: m.majmin.clone(),
                    root: m.root.clone(),
                    mount_point: os_text(&m.mount_point),
                    fs_type: m.fs_type.clone(),
                    mount_source: m.mount_source.clone(),
                    options: options(&m.mount_options),
                    fs_options: options(&m.super_options),
                    seen_ns,
                });
            }
        }
    }
}

/// The table, from its start, its mount points named from the namespace's root (the file
/// names them from `from`, the root of the process it was opened through).
fn read(file: &mut File, from: &Path) -> Option<Vec<MountInfo>> {
    file.seek(SeekFrom::Start(0)).ok()?;
    let mut text = Vec::with_capacity(8192);
    file.read_to_end(&mut text).ok()?;
    let mut table = MountInfos::from_read(text.as_slice()).ok()?.0;
    for m in &mut table {
        m.root = unescape(&m.root);
        let point = unescape(&m.mount_point.to_string_lossy());
        m.mount_point = match from == Path::new("/") {
            true => point.into(),
            false => from.join(point.trim_start_matches('/')),
        };
        m.mount_source = m.mount_source.as_deref().map(unescape);
    }
    Some(table)
}

/// Whether a table has a mount at the namespace's root.
fn has_root(table: &[MountInfo]) -> bool {
    table.iter().any(|m| m.mount_point == Path::new("/"))
}

/// Whether process `who` is at its namespace's root (no chroot), as /proc names its root.
fn at_root(who: &str) -> bool {
    fs::read_link(format!("/proc/{who}/root")).is_ok_and(|r| r == Path::new("/"))
}

/// A name as mountinfo writes it, with its space, tab, newline and backslash as `\ooo`,
/// as the name itself (as paths in calls and files have it).
fn unescape(s: &str) -> String {
    if !s.contains('\\') {
        return s.to_string();
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i..] {
            [
                b'\\',
                d0 @ b'0'..=b'3',
                d1 @ b'0'..=b'7',
                d2 @ b'0'..=b'7',
                ..,
            ] => {
                out.push((d0 - b'0') * 64 + (d1 - b'0') * 8 + (d2 - b'0'));
                i += 4;
            }
            _ => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether the namespace's mounts changed since the file was opened or last polled.
fn changed(file: &File) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    let mut fds = [PollFd::new(file.as_fd(), PollFlags::POLLPRI)];
    poll(&mut fds, PollTimeout::ZERO).is_ok_and(|_| {
        fds[0]
            .revents()
            .is_some_and(|r| r.intersects(PollFlags::POLLPRI | PollFlags::POLLERR))
    })
}

/// Mount options as mountinfo gives them, in a fixed order: `rw,nosuid,mode=755`.
fn options(opts: &std::collections::HashMap<String, Option<String>>) -> String {
    let mut all: Vec<String> = opts
        .iter()
        .map(|(k, v)| match v {
            Some(v) => format!("{k}={v}"),
            None => k.clone(),
        })
        .collect();
    all.sort();
    all.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// strata's own namespace: its table is read once and written once; a pid that is gone
    /// is read through strata only in strata's own namespace. (A mount made during a run is
    /// tested end to end, in a namespace of the workload's own: `record.rs`.)
    #[test]
    fn a_namespace_is_written_once_and_a_gone_process_read_through_strata() {
        let mut m = Mounts::default();
        let own = m.own().expect("/proc/self/ns/mnt");
        assert!(m.see(own, std::process::id() as i32));
        let first = std::mem::take(&mut m.new_rows);
        assert!(
            first.iter().any(|r| r.mount_point == "/"),
            "{}",
            first.len()
        );
        assert!(first.iter().all(|r| r.mnt_ns == own as i64));
        assert_eq!(first.len(), m.table(own).unwrap().len());
        assert!(m.see(own, std::process::id() as i32));
        assert!(m.new_rows.is_empty());
        // A pid that is not there, in strata's namespace: read through strata.
        let mut other = Mounts::default();
        assert!(other.see(own, i32::MAX));
        assert!(!other.see(own + 1, i32::MAX));
    }

    /// A namespace no process was seen in for IDLE_TICKS is let go (its file closed), and
    /// written again when seen again; one seen within them stays.
    #[test]
    fn an_idle_namespace_is_let_go_and_written_again_when_seen_again() {
        let mut m = Mounts::default();
        let own = m.own().unwrap();
        let me = std::process::id() as i32;
        assert!(m.see(own, me));
        let rows = std::mem::take(&mut m.new_rows).len();
        for _ in 0..IDLE_TICKS - 1 {
            m.tick();
        }
        assert!(m.see(own, me));
        for _ in 0..IDLE_TICKS - 1 {
            m.tick();
        }
        assert!(m.table(own).is_some() && m.new_rows.is_empty());
        m.tick();
        assert!(m.table(own).is_none());
        assert!(m.see(own, me));
        assert_eq!(m.new_rows.len(), rows);
    }

    #[test]
    fn names_are_unescaped_as_mountinfo_escapes_them() {
        assert_eq!(unescape("/mnt/my\\040disk"), "/mnt/my disk");
        assert_eq!(unescape("/a\\011b\\012c\\134d"), "/a\tb\nc\\d");
        assert_eq!(unescape("/plain"), "/plain");
        // Not an escape mountinfo writes: left as it is.
        assert_eq!(unescape("/x\\9y\\04"), "/x\\9y\\04");
    }

    #[test]
    fn options_are_written_in_a_fixed_order() {
        let opts = [("rw", None), ("mode", Some("755")), ("nosuid", None)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
            .collect();
        assert_eq!(options(&opts), "mode=755,nosuid,rw");
    }
}
