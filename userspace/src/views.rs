//! How processes see the files: a process in a container (another mount namespace, or a
//! chroot) names its files from its own root. strata holds that root open from when it first
//! sees the process until its exit is handled, so that the names its calls gave are resolved
//! as it resolved them even when strata handles the calls after the process is gone (a short
//! job's calls usually are).
use std::{
    fs,
    os::{
        fd::{AsRawFd as _, FromRawFd as _},
        unix::fs::MetadataExt as _,
    },
    path::{Path, PathBuf},
    rc::{Rc, Weak},
};

use strata_common::RootId;

use crate::fast::HashMap;

/// A directory held open as a root: files under it are opened as a process with that root
/// resolves their paths. An absolute symbolic link inside (a Spack view's links into its
/// install tree, a container's `/data` pointing at its scratch) leads to the process's file,
/// where a plain open through `/proc/<pid>/root` would follow it from strata's root.
pub struct Root(fs::File);

impl Root {
    pub fn open_dir(dir: &Path) -> std::io::Result<Root> {
        use std::os::unix::fs::OpenOptionsExt as _;
        fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_DIRECTORY)
            .open(dir)
            .map(Root)
    }

    /// The root of process `pid`.
    pub fn of(pid: i32) -> std::io::Result<Root> {
        Root::open_dir(Path::new(&format!("/proc/{pid}/root")))
    }

    /// `path`, as a process under this root names it, opened for reading.
    pub fn open(&self, path: impl AsRef<Path>) -> std::io::Result<fs::File> {
        self.open_with(path.as_ref(), nix::fcntl::OFlag::O_RDONLY)
    }

    /// The inode number of the directory as the kernel has it (fdinfo's `ino`, Linux 5.14 on):
    /// `stat` gives what the file system reports, which overlayfs maps from its layers.
    fn inode(&self) -> Option<u64> {
        let info = fs::read_to_string(format!("/proc/self/fdinfo/{}", self.0.as_raw_fd())).ok()?;
        let ino = info.lines().find_map(|l| l.strip_prefix("ino:"))?;
        ino.trim().parse().ok()
    }

    /// The root as the kernel programs read it ([`RootId`]), seen in mount namespace `ns`, its
    /// directory `stat`ed as `meta`.
    fn id(&self, ns: u64, meta: &fs::Metadata) -> RootId {
        let dev = meta.dev();
        RootId {
            ino: self.inode().unwrap_or(meta.ino()),
            dev: libc::major(dev) << 20 | libc::minor(dev),
            mnt_ns: ns as u32,
        }
    }

    /// `path` held without being opened for I/O (`O_PATH`): any file, even one strata may
    /// not read, a FIFO or a device, to stat and to name.
    pub fn find(&self, path: impl AsRef<Path>) -> std::io::Result<fs::File> {
        self.open_with(path.as_ref(), nix::fcntl::OFlag::O_PATH)
    }

    fn open_with(&self, path: &Path, flags: nix::fcntl::OFlag) -> std::io::Result<fs::File> {
        use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat2};
        let relative = path.strip_prefix("/").unwrap_or(path);
        let relative = if relative.as_os_str().is_empty() {
            Path::new(".")
        } else {
            relative
        };
        let how = OpenHow::new()
            .flags(flags | OFlag::O_CLOEXEC)
            .resolve(ResolveFlag::RESOLVE_IN_ROOT);
        let fd = openat2(self.0.as_raw_fd(), relative, how)?;
        // SAFETY: a descriptor just opened, owned by nothing else.
        Ok(unsafe { fs::File::from_raw_fd(fd) })
    }
}

/// A process's view where it is not strata's.
pub struct View {
    /// None past [`MAX_ROOTS`].
    pub root: Option<Root>,
    /// The root's path as /proc gives it to strata: a chroot's directory, or `/` for the root
    /// of a container's own mount namespace.
    link: PathBuf,
    key: RootKey,
    /// The root as the kernel programs read it; all 0 where no root is held.
    id: RootId,
}

/// A root: the mount namespace it is seen in (its inode number), and its directory's device
/// and inode.
type RootKey = (u64, u64, u64);

/// The inode number of a mount namespace, from its `/proc/<pid>/ns/mnt` link (`mnt:[N]`).
pub fn mnt_ns(pid: &str) -> Option<u64> {
    let link = fs::read_link(format!("/proc/{pid}/ns/mnt")).ok()?;
    let text = link.to_str()?;
    text.strip_prefix("mnt:[")?.strip_suffix(']')?.parse().ok()
}

/// Roots held at most: one descriptor each. Past it (a node of many containers), a new
/// container's names are resolved through /proc while its processes live, and not at all
/// after (never as strata's own).
const MAX_ROOTS: usize = 256;

impl View {
    /// The root's directory as strata names it (from its mount namespace's root); None for
    /// a root strata never saw live (only the kernel's reading of it is known).
    fn dir(&self) -> Option<String> {
        (self.key.1 != 0).then(|| crate::files::os_text(&self.link))
    }

    /// `path` (strata's name of a file, as /proc gives it) as the process names it.
    pub fn inside(&self, path: &str) -> String {
        crate::files::os_text(inside(&self.link, Path::new(path)))
    }

    /// `path` (absolute, as the process names it) from strata's root, its links not followed:
    /// the name of a file no longer there to resolve (renamed or removed since).
    pub fn outside(&self, path: &str) -> String {
        match path.strip_prefix('/') {
            Some(rest) if self.link != Path::new("/") => {
                crate::files::os_text(self.link.join(rest))
            }
            _ => path.to_string(),
        }
    }
}

/// `path`, as /proc gives it to strata, as a process whose root /proc gives as `root` names
/// it: a chroot's directory taken off; unchanged where it is not under it (a working
/// directory outside the chroot, left there without a chdir: only strata's name is known).
pub fn inside(root: &Path, path: &Path) -> PathBuf {
    match path.strip_prefix(root) {
        Ok(rest) => Path::new("/").join(rest),
        Err(_) => path.to_path_buf(),
    }
}

/// The views of live processes that see the files otherwise than strata does. Processes that
/// see them as strata does have none: their names are strata's.
#[derive(Default)]
pub struct Views {
    by_pid: HashMap<i32, Rc<View>>,
    /// The roots held, by key: the processes of one container share one descriptor.
    roots: HashMap<RootKey, Weak<View>>,
    /// strata's own root, read once, and as the kernel programs read it.
    own: Option<Option<(RootKey, RootId)>>,
    /// The root the kernel last said each process had (at its fork, at its exec).
    ids: HashMap<i32, RootId>,
}

/// What [`Views::see`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// The process sees the files otherwise than strata knew.
    Changed,
    Same,
    /// The process is gone: it keeps the view it had.
    Gone,
}

impl Views {
    /// Reads how `pid` sees the files now: when strata first sees it, and after each exec (a
    /// `chroot` or `unshare` before it). A process already gone keeps the view it had (its
    /// parent's, from the fork); see [`Views::exec`] for what the kernel said of it.
    pub fn see(&mut self, pid: i32) -> Seen {
        let at = format!("/proc/{pid}/root");
        let (Ok(link), Ok(dir)) = (fs::read_link(&at), fs::metadata(&at)) else {
            return Seen::Gone;
        };
        let Some(ns) = mnt_ns(&pid.to_string()) else {
            return Seen::Gone;
        };
        let key = (ns, dir.dev(), dir.ino());
        if self.own().is_some_and(|own| own.0 == key) {
            return match self.by_pid.remove(&pid) {
                Some(_) => Seen::Changed,
                None => Seen::Same,
            };
        }
        if self.by_pid.get(&pid).is_some_and(|v| v.key == key) {
            return Seen::Same;
        }
        let view = match self.roots.get(&key).and_then(Weak::upgrade) {
            Some(view) => view,
            None => {
                if self.roots.len() >= MAX_ROOTS {
                    self.roots.retain(|_, v| v.strong_count() > 0);
                }
                let root = if self.roots.len() < MAX_ROOTS {
                    let Ok(root) = Root::open_dir(Path::new(&at)) else {
                        return Seen::Gone;
                    };
                    Some(root)
                } else {
                    None
                };
                let held = root.is_some();
                let id = root.as_ref().map(|r| r.id(ns, &dir)).unwrap_or_default();
                let view = Rc::new(View {
                    root,
                    link,
                    key,
                    id,
                });
                if held {
                    self.roots.insert(key, Rc::downgrade(&view));
                }
                view
            }
        };
        self.by_pid.insert(pid, view);
        Seen::Changed
    }

    /// strata's own root: its mount namespace and root directory, and as the kernel programs
    /// read it.
    fn own(&mut self) -> Option<(RootKey, RootId)> {
        *self.own.get_or_insert_with(|| {
            let dir = fs::metadata("/proc/self/root").ok()?;
            let ns = mnt_ns("self")?;
            let id = Root::open_dir(Path::new("/proc/self/root"))
                .ok()?
                .id(ns, &dir);
            Some(((ns, dir.dev(), dir.ino()), id))
        })
    }

    /// Records that the kernel saw `pid` with root `id`; true when it had said another before
    /// (`id` all 0: the kernel's fields are not known, nothing is compared).
    fn moved(&mut self, pid: i32, id: RootId) -> bool {
        if id == RootId::default() {
            return false;
        }
        self.ids.insert(pid, id).is_some_and(|was| was != id)
    }

    /// Whether `pid`'s view is root `id` as the kernel reads it, held live: strata's own
    /// where it has none.
    fn holds(&mut self, pid: i32, id: RootId) -> bool {
        match self.by_pid.get(&pid) {
            Some(view) => view.root.is_some() && view.id == id,
            None => self.own().is_some_and(|own| own.1 == id),
        }
    }

    /// `pid`, gone, had root `id` where strata knew another: it takes the held view of that
    /// root, or strata's own; where neither is it, a view strata holds no root of (its names
    /// are not resolved, rather than in the root it had before).
    fn settle(&mut self, pid: i32, id: &RootId) {
        if self.own().is_some_and(|own| own.1 == *id) {
            self.by_pid.remove(&pid);
            return;
        }
        // At most MAX_ROOTS, and only for a process gone with a root strata did not know.
        let mut held = self.roots.values().filter_map(Weak::upgrade);
        let view = held.find(|v| v.id == *id).unwrap_or_else(|| {
            Rc::new(View {
                root: None,
                link: PathBuf::from("/"),
                key: (u64::from(id.mnt_ns), 0, id.ino),
                id: RootId::default(),
            })
        });
        self.by_pid.insert(pid, view);
    }

    /// `pid` executed a program, the kernel read its root `id` then: [`Views::see`], or for a
    /// process already gone, whether a `chroot` or `unshare` before the exec changed its root
    /// since its fork.
    pub fn exec(&mut self, pid: i32, id: RootId) -> Seen {
        let moved = self.moved(pid, id);
        // The root strata holds for it (or its own), as the kernel read it at the exec: no
        // chroot or new namespace since, and nothing to read in /proc (three system calls
        // of every new program's).
        if id != RootId::default() && self.holds(pid, id) {
            return Seen::Same;
        }
        match self.see(pid) {
            Seen::Gone if moved => {
                self.settle(pid, &id);
                Seen::Changed
            }
            seen => seen,
        }
    }

    /// A new process sees the files as its parent did at the fork, with root `id` as the
    /// kernel read it then. The parent may have changed it since strata last knew: what
    /// [`Views::exec`] would say of the parent then.
    pub fn fork(&mut self, parent: i32, child: i32, id: RootId) -> Seen {
        let parent_seen = if self.moved(parent, id) {
            match self.see(parent) {
                Seen::Gone => {
                    self.settle(parent, &id);
                    Seen::Changed
                }
                seen => seen,
            }
        } else {
            Seen::Same
        };
        match self.by_pid.get(&parent).cloned() {
            Some(v) => self.by_pid.insert(child, v),
            None => self.by_pid.remove(&child),
        };
        self.ids.remove(&child);
        self.moved(child, id);
        parent_seen
    }

    /// `pid` exited: its root is let go (a container's file systems are not held past it).
    pub fn forget(&mut self, pid: i32) {
        self.by_pid.remove(&pid);
        self.ids.remove(&pid);
    }

    pub fn get(&self, pid: i32) -> Option<&View> {
        self.by_pid.get(&pid).map(|v| &**v)
    }

    /// `pid`'s root directory as strata names it (`/` where it sees the files as strata
    /// does); None where strata knows only the kernel's reading of it.
    pub fn root_dir(&self, pid: i32) -> Option<String> {
        match self.by_pid.get(&pid) {
            Some(view) => view.dir(),
            None => Some("/".to_string()),
        }
    }

    /// Sets `pid`'s view to `dir` (in strata's mount namespace), named `link` by strata, its
    /// root held as a chroot's would be.
    #[cfg(test)]
    pub fn set(&mut self, pid: i32, dir: &Path) {
        let root = Root::open_dir(dir).unwrap();
        let link = dir.to_path_buf();
        let meta = fs::metadata(dir).unwrap();
        let ns = mnt_ns("self").unwrap();
        let key = (ns, meta.dev(), meta.ino());
        let id = root.id(ns, &meta);
        let root = Some(root);
        let view = Rc::new(View {
            root,
            link,
            key,
            id,
        });
        self.roots.insert(key, Rc::downgrade(&view));
        self.by_pid.insert(pid, view);
    }
}

/// The working directory of `pid` as it names it, read now: /proc gives it from strata's root,
/// through a chroot's directory.
pub fn cwd(pid: i32) -> Option<String> {
    let dir = fs::read_link(format!("/proc/{pid}/cwd")).ok()?;
    let root = fs::read_link(format!("/proc/{pid}/root")).ok()?;
    Some(crate::files::os_text(inside(&root, &dir)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Processes strata gets to only after they are gone: what the kernel read of their root
    /// at the fork and the exec decides their view. An unchanged root keeps the view forked;
    /// a changed one takes the held view of that root, or strata's own, or else one with no
    /// root (its names are not resolved in the one it had).
    #[test]
    fn a_gone_process_has_the_root_the_kernel_read_at_its_exec() {
        let dir = std::env::temp_dir().join(format!("strata-views-{}", std::process::id()));
        fs::create_dir_all(dir.join("other")).unwrap();
        let mut views = Views::default();
        let own = views.own().expect("strata's own root").1;
        let held_pid = i32::MAX - 10;
        views.set(held_pid, &dir);
        let held = views.get(held_pid).unwrap().id;
        let other = RootId {
            ino: fs::metadata(dir.join("other")).unwrap().ino(),
            ..held
        };
        let (parent, pid) = (i32::MAX - 11, i32::MAX - 12);
        let root_of = |v: &Views, pid| v.get(pid).map(|v| (v.id, v.root.is_some()));

        // Forked in strata's view, an exec with the same root: strata's view, known without
        // a look in /proc.
        views.fork(parent, pid, own);
        assert_eq!(views.exec(pid, own), Seen::Same);
        assert_eq!(root_of(&views, pid), None);
        // A chroot into the held root before the exec: its view.
        assert_eq!(views.exec(pid, held), Seen::Changed);
        assert_eq!(root_of(&views, pid), Some((held, true)));
        assert_eq!(views.get(pid).unwrap().link, dir);
        // Into a root strata holds nothing of: a view without one.
        assert_eq!(views.exec(pid, other), Seen::Changed);
        assert_eq!(root_of(&views, pid), Some((RootId::default(), false)));
        // Back into strata's own.
        assert_eq!(views.exec(pid, own), Seen::Changed);
        assert_eq!(root_of(&views, pid), None);
        // The kernel's fields not known: nothing compared, the view forked is kept.
        views.fork(held_pid, pid, RootId::default());
        assert_eq!(views.exec(pid, RootId::default()), Seen::Gone);
        assert_eq!(root_of(&views, pid), Some((held, true)));

        // A parent that chrooted since strata last knew, seen at a fork: the child has the
        // new root, and so has the parent.
        views.forget(pid);
        views.fork(i32::MAX - 13, parent, own);
        assert_eq!(views.fork(parent, pid, held), Seen::Changed);
        assert_eq!(root_of(&views, parent), Some((held, true)));
        assert_eq!(root_of(&views, pid), Some((held, true)));
        // ... and the child's own exec in that root changes nothing.
        assert_eq!(views.exec(pid, held), Seen::Same);
        assert_eq!(root_of(&views, pid), Some((held, true)));
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A root as the kernel programs read it: the inode number the kernel has (fdinfo's), the
    /// kernel's `dev_t` (major << 20 | minor).
    #[test]
    fn a_root_is_identified_as_the_kernel_reads_it() {
        let meta = fs::metadata("/").unwrap();
        let id = Root::open_dir(Path::new("/")).unwrap().id(7, &meta);
        let (major, minor) = (libc::major(meta.dev()), libc::minor(meta.dev()));
        assert_eq!((id.dev >> 20, id.dev & 0xf_ffff), (major, minor));
        assert_eq!((id.ino, id.mnt_ns), (meta.ino(), 7));
    }
}
