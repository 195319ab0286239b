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
}

/// A root: the mount namespace it is seen in, and its directory's device and inode.
type RootKey = (Option<PathBuf>, u64, u64);

/// Roots held at most: one descriptor each. Past it (a node of many containers), a new
/// container's names are resolved through /proc while its processes live, and not at all
/// after (never as strata's own).
const MAX_ROOTS: usize = 256;

impl View {
    /// `path` (strata's name of a file, as /proc gives it) as the process names it.
    pub fn inside(&self, path: &str) -> String {
        crate::files::os_text(inside(&self.link, Path::new(path)))
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
    /// strata's own mount namespace, read once.
    own_ns: Option<Option<PathBuf>>,
}

impl Views {
    /// Reads how `pid` sees the files now: when strata first sees it, and after each exec (a
    /// `chroot` or `unshare` before it). A process already gone keeps the view it had (its
    /// parent's, from the fork). True when the view changed.
    pub fn see(&mut self, pid: i32) -> bool {
        let own_ns = self
            .own_ns
            .get_or_insert_with(|| fs::read_link("/proc/self/ns/mnt").ok());
        let at = format!("/proc/{pid}/root");
        let (Ok(link), Ok(dir)) = (fs::read_link(&at), fs::metadata(&at)) else {
            return false;
        };
        let ns = fs::read_link(format!("/proc/{pid}/ns/mnt")).ok();
        if link == Path::new("/") && ns.is_some() && ns == *own_ns {
            return self.by_pid.remove(&pid).is_some();
        }
        let key = (ns, dir.dev(), dir.ino());
        if self.by_pid.get(&pid).is_some_and(|v| v.key == key) {
            return false;
        }
        let view = match self.roots.get(&key).and_then(Weak::upgrade) {
            Some(view) => view,
            None => {
                if self.roots.len() >= MAX_ROOTS {
                    self.roots.retain(|_, v| v.strong_count() > 0);
                }
                let root = if self.roots.len() < MAX_ROOTS {
                    let Ok(root) = Root::open_dir(Path::new(&at)) else {
                        return false;
                    };
                    Some(root)
                } else {
                    None
                };
                let held = root.is_some();
                let view = Rc::new(View {
                    root,
                    link,
                    key: key.clone(),
                });
                if held {
                    self.roots.insert(key, Rc::downgrade(&view));
                }
                view
            }
        };
        self.by_pid.insert(pid, view);
        true
    }

    /// A new process sees the files as its parent did.
    pub fn fork(&mut self, parent: i32, child: i32) {
        match self.by_pid.get(&parent).cloned() {
            Some(v) => self.by_pid.insert(child, v),
            None => self.by_pid.remove(&child),
        };
    }

    /// `pid` exited: its root is let go (a container's file systems are not held past it).
    pub fn forget(&mut self, pid: i32) {
        self.by_pid.remove(&pid);
    }

    pub fn get(&self, pid: i32) -> Option<&View> {
        self.by_pid.get(&pid).map(|v| &**v)
    }

    /// Sets `pid`'s view to `dir`, named `link` by strata.
    #[cfg(test)]
    pub fn set(&mut self, pid: i32, dir: &Path) {
        let root = Root::open_dir(dir).unwrap();
        let link = dir.to_path_buf();
        let key = (None, 0, 0);
        let root = Some(root);
        self.by_pid.insert(pid, Rc::new(View { root, link, key }));
    }
}

/// The working directory of `pid` as it names it, read now: /proc gives it from strata's root,
/// through a chroot's directory.
pub fn cwd(pid: i32) -> Option<String> {
    let dir = fs::read_link(format!("/proc/{pid}/cwd")).ok()?;
    let root = fs::read_link(format!("/proc/{pid}/root")).ok()?;
    Some(crate::files::os_text(inside(&root, &dir)))
}
