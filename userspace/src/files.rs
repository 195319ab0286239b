//! Files behind handles: (dev, ino), canonical path, and the mount they live on, seen from the
//! traced process's own mount namespace (/proc/<pid>/root, /proc/<pid>/mountinfo).
use std::{
    ffi::{OsStr, OsString},
    fs,
    os::{
        fd::AsRawFd as _,
        unix::{
            ffi::{OsStrExt as _, OsStringExt as _},
            fs::MetadataExt as _,
        },
    },
    path::{Component, Path, PathBuf},
};

use procfs::process::MountInfo;

use crate::{fast::HashMap, mounts::Mounts, schema::FileRow, views::Views};

/// The bytes of a name (a path, an object name) as text: UTF-8 as it is, and each byte that is
/// not part of valid UTF-8 as `\xNN`. Parquet strings are UTF-8; a replacement character
/// instead would lose the name, and with it the file strata has to find by it.
pub fn text(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// [`text`] of a name the kernel gave (a link's target, a canonical path).
pub fn os_text(s: impl AsRef<OsStr>) -> String {
    text(s.as_ref().as_bytes())
}

/// The bytes [`text`] made `s` from: each `\xNN` back to its byte.
fn bytes_of(s: &str) -> Option<PathBuf> {
    let hex = |b: u8| char::from(b).to_digit(16);
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i..] {
            [b'\\', b'x', h, l, ..] if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h)? * 16 + hex(l)?) as u8);
                i += 4;
            }
            _ => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    (out != b).then(|| PathBuf::from(OsString::from_vec(out)))
}

/// `op` on the file named by `s` (made by [`text`]): the name with its escaped bytes first,
/// then as written (a name that really holds `\xNN`).
pub fn look_up<T>(s: &str, op: impl Fn(&Path) -> std::io::Result<T>) -> std::io::Result<T> {
    match bytes_of(s) {
        Some(raw) => op(&raw).or_else(|_| op(Path::new(s))),
        None => op(Path::new(s)),
    }
}

/// The `kind` column: what a file's mode (`st_mode`, `i_mode`) says it is.
fn kind_of(mode: u32) -> &'static str {
    match mode & libc::S_IFMT {
        libc::S_IFREG => "file",
        libc::S_IFDIR => "dir",
        libc::S_IFLNK => "symlink",
        libc::S_IFIFO => "fifo",
        libc::S_IFSOCK => "socket",
        libc::S_IFCHR => "char",
        libc::S_IFBLK => "block",
        _ => "other",
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Inode(u64, u64),
    Path(String),
}

/// Files known by key, path and inode: the current generation and the one before it.
#[derive(Default)]
struct Known {
    ids: HashMap<Key, i64>,
    /// Paths by file id, for the summary and the path filter.
    paths: HashMap<i64, String>,
    /// File systems by file id, for the summary: indexes into `Files::file_systems`.
    mounts: HashMap<i64, u32>,
    /// File ids by inode number alone (writeback events name no device); 0: ambiguous.
    by_ino: HashMap<u64, i64>,
    /// Files with no position to read or write at: FIFOs, sockets, character devices.
    unpositioned: std::collections::HashSet<i64, foldhash::fast::RandomState>,
    /// Files known only from the kernel side's read at their open: removed before strata
    /// looked. Their inode numbers may be another file's by now.
    removed: std::collections::HashSet<i64, foldhash::fast::RandomState>,
}

/// Files per generation: a node traced for days sees millions of distinct files (temporary
/// files of short jobs); past two generations a file is forgotten, and if it comes back it
/// gets a new id and a new row.
const GENERATION: usize = 65_536;

#[derive(Default)]
pub struct Files {
    known: Known,
    older: Known,
    next: i64,
    /// Mount tables by mount namespace, written to the `mounts` table as they are read.
    pub mounts: Mounts,
    /// The (type, mount point) pairs files were found on, each once.
    file_systems: Vec<(String, String)>,
    file_system_ids: HashMap<(String, String), u32>,
    /// New rows, written by the correlator.
    pub new_rows: Vec<FileRow>,
    /// Inode numbers of new regular files, for the kernel-layer programs to watch.
    pub new_inodes: Vec<u64>,
    /// Paths opened before, by process: see `recent_open`.
    recent: HashMap<i32, HashMap<String, RecentOpen>>,
    recent_len: usize,
    /// Paths opened before by any process, for the first opens of new ones.
    shared: HashMap<String, RecentOpen>,
    /// Roots of processes in containers, in which their names are resolved.
    pub views: Views,
}

/// What an open of a path led to.
#[derive(Clone, Copy)]
struct RecentOpen {
    dev: u64,
    ino: u64,
    id: i64,
}

/// A file found by its name.
struct Found {
    meta: fs::Metadata,
    /// strata's name of it, links resolved.
    canonical: String,
    /// Where strata can read it (its Lustre layout) while `_held` is.
    at: Option<String>,
    _held: Option<fs::File>,
}

/// What the kernel side read of the file behind a descriptor as the call that made it
/// returned (probes.toml `fd_inode`): the file's identity even if it is removed, or its fd
/// closed and reused, before user space looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelFile {
    /// As `stat` gives it.
    pub dev: u64,
    pub ino: u64,
    /// `i_mode`: the file's type and permissions.
    pub mode: u32,
}

impl KernelFile {
    /// From the two slots the kernel side fills: the inode number, then the device with the
    /// mode above it. None when it read nothing.
    pub fn from_slots(ino: u64, dev_mode: u64) -> Option<Self> {
        (ino != 0).then(|| Self {
            dev: crate::kernel::user_dev(dev_mode as u32),
            ino,
            mode: ((dev_mode >> 32) & 0xffff) as u32,
        })
    }

    pub fn kind(&self) -> &'static str {
        kind_of(self.mode)
    }
}

impl Files {
    /// The file an fd (or a path) of `pid` refers to. `path` is absolute in the process's view.
    pub fn resolve(&mut self, pid: i32, fd: Option<i32>, path: &str) -> i64 {
        self.resolve_inode(pid, fd, path, None).0
    }

    /// `resolve`, for an open the kernel side read the file of (`kernel`): its identity when
    /// the file is gone by now.
    pub fn resolve_made(
        &mut self,
        pid: i32,
        fd: Option<i32>,
        path: &str,
        kernel: Option<KernelFile>,
    ) -> i64 {
        self.resolve_inode(pid, fd, path, kernel).0
    }

    /// `resolve_made`, and what the open of `abs` led to is remembered for `recent_open`.
    pub fn resolve_open(
        &mut self,
        pid: i32,
        fd: i32,
        abs: &str,
        kernel: Option<KernelFile>,
    ) -> i64 {
        let (id, inode) = self.resolve_inode(pid, Some(fd), abs, kernel);
        if let Some((dev, ino)) = inode {
            self.remember_open(pid, abs, RecentOpen { dev, ino, id });
        }
        id
    }

    /// The file id, and (dev, ino) when the file could be stat'ed or the kernel side read it.
    fn resolve_inode(
        &mut self,
        pid: i32,
        fd: Option<i32>,
        path: &str,
        kernel: Option<KernelFile>,
    ) -> (i64, Option<(u64, u64)>) {
        // A name whose directory is unknown is not looked up (it would be strata's own).
        let by_path = || self.find(pid, path);
        // Through the process's fd the inode is found even if the name was since unlinked,
        // but events are read a little after they happen, and the process runs on while its
        // fd is looked at: the fd may have been closed and its number reused. It is trusted
        // only if it still names the file that was opened, and if its file is the same when
        // stat'ed before its name is read and after (else a name read before a reuse and an
        // inode after would make the open another file's).
        let by_fd = fd.and_then(|fd| {
            let link = format!("/proc/{pid}/fd/{fd}");
            let meta = fs::metadata(&link).ok()?;
            let target = os_text(fs::read_link(&link).ok()?);
            // Unlinked since: named as it was opened, as when only the kernel side's read is
            // left (the suffix is /proc's, not the file's).
            let name = if target.strip_suffix(" (deleted)") == Some(path) {
                path.to_string()
            } else if target == path || by_path().is_some_and(|f| f.canonical == target) {
                target
            } else {
                return None;
            };
            let again = fs::metadata(&link).ok()?;
            ((again.dev(), again.ino()) == (meta.dev(), meta.ino())).then_some((meta, name))
        });
        // Where the file was found: its Lustre layout is read there.
        let found = match by_fd {
            Some((meta, canonical)) => Some(Found {
                meta,
                canonical,
                at: fd.map(|fd| format!("/proc/{pid}/fd/{fd}")),
                _held: None,
            }),
            None => by_path(),
        };
        // What the kernel side read is the file the call made: a name that leads to another
        // inode by now (a file renamed over it since; the directory of an O_TMPFILE open,
        // whose file has no name) is not that file.
        let (found, tmpfile) = match (found, kernel) {
            (Some(f), Some(k)) if f.meta.ino() != k.ino || kind_of(f.meta.mode()) != k.kind() => {
                (None, f.meta.is_dir() && k.kind() == "file")
            }
            (found, _) => (found, false),
        };
        let (meta, canonical, found_at) = match &found {
            Some(f) => (Some(f.meta.clone()), f.canonical.clone(), f.at.clone()),
            // Not there any more: as the node would have named it (a chroot's directory
            // first), as the files found are.
            None => {
                // /proc/self was the process's /proc/<pid>, as the node names it.
                let outside = match (own_proc_link(pid, path), self.views.get(pid)) {
                    (Some(at), _) => at,
                    (None, Some(view)) => view.outside(path),
                    (None, None) => path.to_string(),
                };
                // An unnamed file in that directory, as /proc names it.
                let outside = match kernel.filter(|_| tmpfile) {
                    Some(k) => format!("{}/#{} (deleted)", outside.trim_end_matches('/'), k.ino),
                    None => outside,
                };
                (None, outside, None)
            }
        };
        // Gone before it could be stat'ed: what the kernel side read, if it did.
        let kernel = kernel.filter(|_| meta.is_none());
        let inode = meta
            .as_ref()
            .map(|m| (m.dev(), m.ino()))
            .or(kernel.map(|k| (k.dev, k.ino)));
        let kind = match (&meta, kernel) {
            (Some(m), _) => Some(kind_of(m.mode())),
            (None, Some(k)) => Some(k.kind()),
            (None, None) => None,
        };
        let key = match inode {
            Some((dev, ino)) => Key::Inode(dev, ino),
            None => Key::Path(canonical.clone()),
        };
        // The same file seen once by inode and once only by name (closed or gone before it
        // could be stat'ed) keeps one id.
        let path_key = Key::Path(canonical.clone());
        // A removed file's inode number is soon another file's. Under another name (a hard
        // link, a bind mount, or a reused number), the known file is this one only if it was
        // not already removed, this one is not known from the kernel side alone, and the
        // known name still leads to this inode; else the key moves to a new file.
        let by_key = self.known_id(&key).filter(|id| match self.path(*id) {
            Some(known) if known != canonical => {
                // Through a link to an fd the file was open as it was opened: not known
                // from the kernel side because it was removed, but because the link was.
                let removed = (kernel.is_some() && own_fd_link(pid, path).is_none())
                    || self.known.removed.contains(id)
                    || self.older.removed.contains(id);
                // A pipe's or socket's inode numbers are not reused while the system runs
                // (pipefs and sockfs count them up), and its name is its number.
                !removed
                    && inode.is_some_and(|(dev, ino)| {
                        unnamed_inode(&known) == Some(ino)
                            || fs::metadata(&known).is_ok_and(|m| (m.dev(), m.ino()) == (dev, ino))
                    })
            }
            _ => true,
        });
        if let Some(id) = by_key.or_else(|| self.known_id(&path_key)) {
            self.known.ids.entry(key).or_insert(id);
            return (id, inode);
        }
        let id = self.new_id(key, Some(path_key), &canonical);
        if kernel.is_some() {
            self.known.removed.insert(id);
        }
        if matches!(kind, Some("fifo" | "socket" | "char")) {
            self.known.unpositioned.insert(id);
        }
        if let (Some((_, ino)), Some("file")) = (inode, kind) {
            self.new_inodes.push(ino);
            let e = self.known.by_ino.entry(ino).or_insert(id);
            if *e != id {
                *e = 0;
            }
        }
        let mount = inode.and_then(|(dev, _)| self.mount_of(pid, dev, &canonical));
        let mut row = FileRow {
            file_id: id,
            path: canonical,
            kind: kind.map(str::to_string),
            dev: inode.map(|(dev, _)| format!("{}:{}", libc::major(dev), libc::minor(dev))),
            ino: inode.map(|(_, ino)| ino as i64),
            fs_type: mount.as_ref().map(|m| m.fs_type.clone()),
            mount_point: mount.as_ref().map(|m| os_text(&m.mount_point)),
            mount_source: mount.as_ref().and_then(|m| m.mount_source.clone()),
            ..FileRow::default()
        };
        if let (Some(fs_type), Some(point)) = (&row.fs_type, &row.mount_point) {
            let key = (fs_type.clone(), point.clone());
            let n = self.file_systems.len() as u32;
            let fs = *self.file_system_ids.entry(key.clone()).or_insert(n);
            if fs == n {
                self.file_systems.push(key);
            }
            self.known.mounts.insert(id, fs);
        }
        if let (true, Some(at)) = (mount.is_some_and(|m| m.fs_type == "lustre"), found_at) {
            add_lustre_layout(&mut row, &bytes_of(&at).unwrap_or_else(|| at.into()));
        }
        self.new_rows.push(row);
        (id, inode)
    }

    /// The file of an open of `abs` by `pid` that returned `fd`, when the same path led to
    /// the same file before: one stat of the fd instead of resolving the path again (a job
    /// that opens the same files over and over costs strata one system call per open).
    pub fn recent_open(
        &mut self,
        pid: i32,
        fd: i32,
        abs: &str,
        kernel: Option<KernelFile>,
    ) -> Option<i64> {
        let own = self.recent.get(&pid).and_then(|names| names.get(abs));
        // A process's first open of a name another process opened (every new process opens
        // its libraries and locale files, and resolving a name costs several system calls
        // through /proc): trusted only if the kernel side read the same file. Processes may
        // see different files under one name (in containers), and what a name led to for
        // another process says nothing of the file behind this one's fd.
        let r = own.or_else(|| {
            self.shared
                .get(abs)
                .filter(|r| kernel.is_some_and(|k| (k.dev, k.ino) == (r.dev, r.ino)))
        })?;
        let (dev, ino, id) = (r.dev, r.ino, r.id);
        // What the kernel side read says it without a look; else the fd names the file if
        // it is still open (it may since be closed, or reused by an open of the same file);
        // else the path, in the process's root. A process that is gone can no longer be
        // asked: what its path led to before is the best answer.
        let same = |m: fs::Metadata| (m.dev(), m.ino()) == (dev, ino);
        let confirmed = kernel.is_some_and(|k| (k.dev, k.ino) == (dev, ino))
            || fs::metadata(format!("/proc/{pid}/fd/{fd}")).is_ok_and(same)
            || self.find(pid, abs).is_some_and(|f| same(f.meta))
            || !Path::new(&format!("/proc/{pid}")).exists();
        if !confirmed {
            return None;
        }
        // A forgotten file (two generations ago) is resolved again and gets a new id.
        (self.known_id(&Key::Inode(dev, ino)) == Some(id)).then_some(id)
    }

    /// The file `pid` names `path` (absolute): in its container's root where strata holds
    /// it (whether or not the process still lives), else through `/proc/<pid>/root`, else,
    /// once a process that saw the files as strata does is gone, as strata names it.
    fn find(&self, pid: i32, path: &str) -> Option<Found> {
        if !path.starts_with('/') {
            return None;
        }
        // A name of one of the process's own fds leads to that fd's file, which only its
        // /proc/<pid>/fd shows: through its root it would be strata's own fd, and once the
        // process is gone it is nowhere.
        if let Some((at, whole)) = own_fd_link(pid, path) {
            let target = fs::read_link(&at).ok()?;
            // A pipe's or socket's name is no path: the link's text is its name.
            let canonical = match fs::canonicalize(&at) {
                Ok(p) => os_text(p),
                Err(_) if whole => os_text(target),
                Err(_) => return None,
            };
            return Some(Found {
                meta: fs::metadata(&at).ok()?,
                canonical,
                at: Some(at),
                _held: None,
            });
        }
        // /proc/self (and /proc/net, /proc/mounts, which lead through it) is the process's
        // own /proc/<pid>: through its root it would be strata's.
        if let Some(at) = own_proc_link(pid, path) {
            return Some(Found {
                canonical: os_text(fs::canonicalize(&at).ok()?),
                meta: fs::metadata(&at).ok()?,
                at: Some(at),
                _held: None,
            });
        }
        let view = self.views.get(pid);
        if let Some(root) = view.and_then(|v| v.root.as_ref()) {
            let held = look_up(path, |p| root.find(p)).ok()?;
            let at = format!("/proc/self/fd/{}", held.as_raw_fd());
            return Some(Found {
                meta: held.metadata().ok()?,
                canonical: os_text(fs::read_link(&at).ok()?),
                at: Some(at),
                _held: Some(held),
            });
        }
        let found = |at: String| {
            // The name first: a process that ends after it fails the stat, and both are
            // then taken again from strata's view (the other way round, its end between the
            // two left a file with an inode but an unresolved name).
            let canonical = os_text(look_up(&at, |p| fs::canonicalize(p)).ok()?);
            let meta = look_up(&at, |p| fs::metadata(p)).ok()?;
            Some(Found {
                meta,
                canonical,
                at: Some(at),
                _held: None,
            })
        };
        let proc_root = format!("/proc/{pid}/root");
        if view.is_some() {
            // In a container whose root strata does not hold: never strata's own file.
            found(format!("{proc_root}{path}"))
        } else if Path::new(&proc_root).exists() {
            // A process that ended between the look at its root and the lookup through it:
            // strata's view, as for a process already gone.
            found(format!("{proc_root}{path}")).or_else(|| {
                (!Path::new(&proc_root).exists())
                    .then(|| found(path.to_string()))
                    .flatten()
            })
        } else {
            found(path.to_string())
        }
    }

    /// Whether `path` (absolute, as `pid` names it) names a file.
    pub fn exists(&self, pid: i32, path: &str) -> bool {
        self.find(pid, path).is_some()
    }

    /// `path` (absolute, as `pid` names it) with symbolic links resolved as the process
    /// resolves them, named as it names it; None if it is not found.
    pub fn resolved(&self, pid: i32, path: &str) -> Option<String> {
        let canonical = self.find(pid, path)?.canonical;
        Some(match self.views.get(pid) {
            Some(view) => view.inside(&canonical),
            None => canonical,
        })
    }

    fn remember_open(&mut self, pid: i32, abs: &str, r: RecentOpen) {
        if self.recent_len >= GENERATION {
            self.recent.clear();
            self.recent_len = 0;
        }
        if self.shared.len() >= GENERATION {
            self.shared.clear();
        }
        self.shared.insert(abs.to_string(), r);
        let names = self.recent.entry(pid).or_default();
        if names.insert(abs.to_string(), r).is_none() {
            self.recent_len += 1;
        }
    }

    /// Forgets the names a process opened, and its root (it exited; its pid may be reused).
    pub fn forget_process(&mut self, pid: i32) {
        self.views.forget(pid);
        self.mounts.forget(pid);
        if let Some(m) = self.recent.remove(&pid) {
            self.recent_len -= m.len();
        }
    }

    /// The file with inode `ino` on device `dev` (user-space dev_t), or with inode `ino` on
    /// any device when `dev` is not known and only one file has that number.
    pub fn by_inode(&self, dev: Option<u64>, ino: u64) -> Option<i64> {
        [&self.known, &self.older]
            .into_iter()
            .find_map(|k| match dev {
                Some(d) => k.ids.get(&Key::Inode(d, ino)).copied(),
                None => k.by_ino.get(&ino).copied().filter(|id| *id != 0),
            })
    }

    pub fn path(&self, id: i64) -> Option<String> {
        self.known
            .paths
            .get(&id)
            .or_else(|| self.older.paths.get(&id))
            .cloned()
    }

    /// The file system (type, mount point) of file `id`, when its mount was read.
    pub fn mount(&self, id: i64) -> Option<(String, String)> {
        let fs = self
            .known
            .mounts
            .get(&id)
            .or_else(|| self.older.mounts.get(&id))?;
        self.file_systems.get(*fs as usize).cloned()
    }

    /// The file the kernel side found behind a descriptor a call made, by its device (as
    /// `stat` gives it) and inode: a pipe or a memfd, which has no path to resolve and is known
    /// this way after its process is gone. `name` is its path column, as /proc names it.
    pub fn by_kernel_inode(&mut self, k: KernelFile, name: &str) -> i64 {
        let key = Key::Inode(k.dev, k.ino);
        if let Some(id) = self.known_id(&key) {
            return id;
        }
        // Such names need not be unique (two memfds of one name): no path key.
        let id = self.new_id(key, None, name);
        let kind = k.kind();
        if matches!(kind, "fifo" | "socket" | "char") {
            self.known.unpositioned.insert(id);
        }
        self.new_rows.push(FileRow {
            file_id: id,
            path: name.to_string(),
            kind: Some(kind.to_string()),
            dev: Some(format!("{}:{}", libc::major(k.dev), libc::minor(k.dev))),
            ino: Some(k.ino as i64),
            ..FileRow::default()
        });
        id
    }

    /// File `id` renamed to `abs`: known under that name from now on.
    pub fn renamed(&mut self, id: i64, abs: String) {
        self.known.ids.insert(Key::Path(abs.clone()), id);
        self.known.paths.insert(id, abs);
    }

    /// File `id` given another name `abs` (a hard link): known under it too. One known only
    /// from what the kernel side read, as an O_TMPFILE file is, has a name from now on, under
    /// which it is found again.
    pub fn linked(&mut self, id: i64, abs: String) {
        self.known.ids.insert(Key::Path(abs.clone()), id);
        if self.known.removed.remove(&id) | self.older.removed.remove(&id) {
            self.known.paths.insert(id, abs);
        }
    }

    /// Whether reads and writes of file `id` are at a position (not a FIFO, socket or
    /// character device, whose fd's offset means nothing: /dev/null's stays 0).
    pub fn has_position(&self, id: i64) -> bool {
        !self.known.unpositioned.contains(&id) && !self.older.unpositioned.contains(&id)
    }

    /// A new file id under `key` (and `path_key`), with its path.
    fn new_id(&mut self, key: Key, path_key: Option<Key>, path: &str) -> i64 {
        if self.known.paths.len() >= GENERATION {
            self.older = std::mem::take(&mut self.known);
        }
        self.next += 1;
        let id = self.next;
        self.known.ids.insert(key, id);
        if let Some(k) = path_key {
            self.known.ids.insert(k, id);
        }
        self.known.paths.insert(id, path.to_string());
        id
    }

    /// The file strata already knows at absolute path `abs` (found there when it was
    /// opened), without asking the file system: for calls that name a path and open nothing
    /// (stat, unlink, rename), which may come by the thousand.
    pub fn at_path(&mut self, abs: String) -> Option<i64> {
        self.known_id(&Key::Path(abs))
    }

    /// The id of a known file; one of the older generation moves to the current one.
    fn known_id(&mut self, key: &Key) -> Option<i64> {
        if let Some(id) = self.known.ids.get(key) {
            return Some(*id);
        }
        let id = *self.older.ids.get(key)?;
        self.known.ids.insert(key.clone(), id);
        if self.older.unpositioned.contains(&id) {
            self.known.unpositioned.insert(id);
        }
        if self.older.removed.contains(&id) {
            self.known.removed.insert(id);
        }
        if let Some(p) = self.older.paths.get(&id) {
            self.known.paths.insert(id, p.clone());
        }
        Some(id)
    }

    /// The mount holding a file, from the mount table of the process's namespace (read again
    /// when a mount changed it): the one its start or exec was in, else /proc's. The table
    /// strata holds is read even once the process is gone; where strata holds none, a
    /// process already gone is seen through strata's own mounts, as its paths are (`in_root`).
    fn mount_of(&mut self, pid: i32, dev: u64, path: &str) -> Option<MountInfo> {
        let ns = (self.mounts.ns_of(pid))
            .or_else(|| crate::views::mnt_ns(&pid.to_string()))
            .filter(|&ns| self.mounts.see(ns, pid));
        let ns = match ns {
            Some(ns) => ns,
            None => {
                let own = self.mounts.own()?;
                self.mounts
                    .see(own, std::process::id() as i32)
                    .then_some(own)?
            }
        };
        pick_mount(self.mounts.table(ns)?, dev, path).cloned()
    }
}

/// Fills the Lustre columns from the file's `lustre.lov` attribute.
fn add_lustre_layout(row: &mut FileRow, at: &Path) {
    match crate::lustre::read(at) {
        None => {}
        Some(Err(e)) => log::warn!("cannot parse the Lustre layout of {}: {e}", row.path),
        Some(Ok(layout)) => {
            if let Some(c) = layout.first() {
                row.lustre_stripe_size = Some(i64::from(c.stripe_size));
                row.lustre_stripe_count = Some(i64::from(c.stripe_count));
            }
            row.lustre_osts = layout.osts().into_iter().map(i64::from).collect();
            row.lustre_layout = serde_json::to_string(&layout).ok();
        }
    }
}

/// The mount holding `path`: among mounts of the file's device, the longest prefix of the path;
/// failing that (bind mounts, overlays), the longest prefix of any mount.
pub fn pick_mount<'a>(mounts: &'a [MountInfo], dev: u64, path: &str) -> Option<&'a MountInfo> {
    let majmin = format!("{}:{}", libc::major(dev), libc::minor(dev));
    let longest = |same_dev: bool| {
        mounts
            .iter()
            .filter(|m| !same_dev || m.majmin == majmin)
            .filter(|m| Path::new(path).starts_with(&m.mount_point))
            .max_by_key(|m| m.mount_point.as_os_str().len())
    };
    longest(true).or_else(|| longest(false))
}

/// The inode number in the name /proc gives a pipe or a socket (`pipe:[N]`, `socket:[N]`).
fn unnamed_inode(name: &str) -> Option<u64> {
    let n = (name.strip_prefix("pipe:[")).or_else(|| name.strip_prefix("socket:["))?;
    n.strip_suffix(']')?.parse().ok()
}

/// The fd and what follows its number, for a name by which a process reaches its own fd
/// (`/dev/fd/N`, `/proc/self/fd/N`, `/dev/stdin`; bash's process substitution, glibc's
/// `freopen(NULL, ..)`, a linkat that names an O_TMPFILE file).
fn own_fd_name(path: &str) -> Option<(i32, &str)> {
    let (fd, rest) = match path {
        "/dev/stdin" => ("0", ""),
        "/dev/stdout" => ("1", ""),
        "/dev/stderr" => ("2", ""),
        _ => {
            let tail = ["/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"]
                .iter()
                .find_map(|dir| path.strip_prefix(dir))?;
            tail.split_at(tail.find('/').unwrap_or(tail.len()))
        }
    };
    let digits = !fd.is_empty() && fd.bytes().all(|b| b.is_ascii_digit());
    Some((fd.parse().ok().filter(|_| digits)?, rest))
}

/// The fd `path` names, when it names one of the process's own fds itself.
pub fn own_fd(path: &str) -> Option<i32> {
    own_fd_name(path)
        .filter(|(_, rest)| rest.is_empty())
        .map(|(fd, _)| fd)
}

/// [`own_fd_name`] as strata reaches it, `/proc/<pid>/fd/N...`, and whether nothing follows
/// the number.
fn own_fd_link(pid: i32, path: &str) -> Option<(String, bool)> {
    let (fd, rest) = own_fd_name(path)?;
    Some((format!("/proc/{pid}/fd/{fd}{rest}"), rest.is_empty()))
}

/// `/proc/<pid>...` for a name that reaches the process's own /proc directory through
/// /proc's links to it (`/proc/self/status`, `/proc/net/route`, `/proc/mounts`; MPI
/// runtimes read these). `thread-self` is taken as the main thread's: a name of another
/// thread's file leads to another inode than the kernel side read, and keeps its name.
fn own_proc_link(pid: i32, path: &str) -> Option<String> {
    let rest = path.strip_prefix("/proc/")?;
    let (first, rest) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let dir = match first {
        "self" => format!("/proc/{pid}"),
        "thread-self" => format!("/proc/{pid}/task/{pid}"),
        "net" | "mounts" => format!("/proc/{pid}/{first}"),
        _ => return None,
    };
    Some(format!("{dir}{rest}"))
}

/// Makes `path` absolute against `base` and removes `.` and `..` lexically.
pub fn absolute(base: Option<&str>, path: &str) -> String {
    // Most names are clean already (a library's, a locale file's, a data file's in a clean
    // working directory): joined as they are, without a walk through their components,
    // which cost some 3,000 instructions per open.
    if is_clean(path) {
        return path.to_string();
    }
    match base {
        Some(base) if is_clean(base) && is_clean_relative(path) => {
            let sep = if base == "/" { "" } else { "/" };
            return format!("{base}{sep}{path}");
        }
        _ => {}
    }
    lexically_absolute(base, path)
}

/// Whether `path` is absolute with no empty, `.` or `..` component and no trailing slash:
/// its own [`absolute`] form.
fn is_clean(path: &str) -> bool {
    path == "/" || path.strip_prefix('/').is_some_and(is_clean_relative)
}

/// Whether `path` is relative with no empty, `.` or `..` component and no trailing slash.
/// One pass over the bytes: splitting the text cost 700 instructions per name.
fn is_clean_relative(path: &str) -> bool {
    // The component so far: its length, and how many of its bytes are dots.
    let (mut len, mut dots) = (0, 0);
    // A component that is empty, `.` or `..`.
    let unclean = |len: usize, dots: usize| len == dots && len <= 2;
    for &b in path.as_bytes() {
        if b == b'/' {
            if unclean(len, dots) {
                return false;
            }
            (len, dots) = (0, 0);
        } else {
            len += 1;
            dots += usize::from(b == b'.');
        }
    }
    !unclean(len, dots)
}

/// [`absolute`] through the path's components.
fn lexically_absolute(base: Option<&str>, path: &str) -> String {
    let joined = if path.starts_with('/') {
        PathBuf::from(path)
    } else {
        Path::new(base.unwrap_or("/")).join(path)
    };
    let mut out = PathBuf::from("/");
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use procfs::FromRead as _;

    use super::*;

    #[test]
    fn names_keep_their_bytes_as_text() {
        assert_eq!(text("/ok/é/a\\b".as_bytes()), "/ok/é/a\\b");
        assert_eq!(text(b"/d\xff/f\xfe\xc3.dat"), "/d\\xff/f\\xfe\\xc3.dat");
        assert_eq!(bytes_of("/ok/é"), None);
        assert_eq!(
            bytes_of("/d\\xff/f\\xFE.dat")
                .unwrap()
                .as_os_str()
                .as_bytes(),
            b"/d\xff/f\xfe.dat"
        );
        // Not an escape: left as it is.
        assert_eq!(bytes_of("/a\\xg1/\\x4"), None);
    }

    proptest::proptest! {
        /// Whatever the bytes of a name, its text is UTF-8 and gives them back, unless the
        /// name itself holds the text of an escape (then a lookup tries it as written too).
        #[test]
        fn text_of_any_name_gives_its_bytes_back(raw in proptest::collection::vec(proptest::num::u8::ANY, 0..40)) {
            let t = text(&raw);
            let literal = raw.windows(4).any(|w| {
                w[0] == b'\\' && w[1] == b'x' && w[2].is_ascii_hexdigit() && w[3].is_ascii_hexdigit()
            });
            proptest::prop_assume!(!literal);
            let back = bytes_of(&t).map_or_else(|| t.as_bytes().to_vec(), |p| p.as_os_str().as_bytes().to_vec());
            proptest::prop_assert_eq!(back, raw);
        }

        /// The shortcut for clean names gives what the walk through components gives, for
        /// any name and base made of `a`, `.` and `/`.
        #[test]
        fn a_clean_name_is_joined_as_the_walk_would(
            base in proptest::option::of("[a./]{0,8}"),
            path in "[a./]{0,10}",
        ) {
            proptest::prop_assert_eq!(
                absolute(base.as_deref(), &path),
                lexically_absolute(base.as_deref(), &path)
            );
        }
    }

    #[test]
    fn a_path_opened_again_is_the_same_file_until_it_is_replaced() {
        use std::os::fd::AsRawFd as _;
        let me = std::process::id() as i32;
        let dir = std::env::temp_dir().join(format!("strata-recent-{me}"));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("data");
        let name = path.to_str().unwrap();
        let mut files = Files::default();
        let f = fs::File::create(&path).unwrap();
        let fd = f.as_raw_fd();
        assert_eq!(
            files.recent_open(me, fd, name, None),
            None,
            "never opened before"
        );
        let id = files.resolve_open(me, fd, name, None);
        assert_eq!(files.recent_open(me, fd, name, None), Some(id));
        // Closed: the name still leads to the same file.
        drop(f);
        assert_eq!(files.recent_open(me, fd, name, None), Some(id));
        // Replaced by another file under the same name: resolved again (`resolve` decides).
        let other = dir.join("other");
        fs::write(&other, b"x").unwrap();
        fs::rename(&other, &path).unwrap();
        let f = fs::File::open(&path).unwrap();
        assert_eq!(files.recent_open(me, f.as_raw_fd(), name, None), None);
        files.forget_process(me);
        assert_eq!(files.recent_open(me, f.as_raw_fd(), name, None), None);
        assert_eq!(files.recent_len, 0);
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A new process's open of a name another process opened: the same file without a look
    /// through /proc only when the kernel side read that file's inode.
    #[test]
    fn another_process_opening_a_name_is_trusted_only_on_the_kernels_word() {
        use std::os::{fd::AsRawFd as _, unix::fs::MetadataExt as _};
        let me = std::process::id() as i32;
        let dir = std::env::temp_dir().join(format!("strata-shared-{me}"));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("data");
        let name = path.to_str().unwrap();
        let mut files = Files::default();
        let f = fs::File::create(&path).unwrap();
        let m = f.metadata().unwrap();
        let read = |ino| KernelFile {
            dev: m.dev(),
            ino,
            mode: m.mode(),
        };
        let id = files.resolve_open(me, f.as_raw_fd(), name, Some(read(m.ino())));
        // A process that does not exist, so nothing of it can be looked at: only the
        // kernel's word can make its open this file.
        let other = i32::MAX - 1;
        assert_eq!(
            files.recent_open(other, 3, name, Some(read(m.ino()))),
            Some(id)
        );
        assert_eq!(files.recent_open(other, 3, name, None), None);
        assert_eq!(
            files.recent_open(other, 3, name, Some(read(m.ino() + 1))),
            None,
            "another file under the same name (another root)"
        );
        // Its own opens then stand on their own.
        let id2 = files.resolve_open(other, 3, name, Some(read(m.ino())));
        assert_eq!(id2, id);
        files.forget_process(other);
        files.forget_process(me);
        assert_eq!(files.recent_len, 0);
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A process in a container, handled after it is gone: the names it gave are files under
    /// the root strata held for it, found as it found them (an absolute link inside leads
    /// to its file, not strata's), and named as strata sees them. A chdir it made names its
    /// directory as it does.
    #[test]
    fn a_gone_containers_names_are_resolved_in_its_held_root() {
        use std::os::unix::fs::MetadataExt as _;
        let me = std::process::id();
        let root = std::env::temp_dir().join(format!("strata-view-{me}"));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("scratch/run")).unwrap();
        fs::write(root.join("scratch/run/out.h5"), b"x").unwrap();
        std::os::unix::fs::symlink("/scratch/run", root.join("data")).unwrap();
        // A pid that does not exist: nothing of it can be looked at through /proc.
        let pid = i32::MAX - 2;
        let mut files = Files::default();
        files.views.set(pid, &root);
        let id = files.resolve(pid, None, "/data/out.h5");
        let row = files.new_rows.last().unwrap();
        let inside = root.join("scratch/run/out.h5");
        assert_eq!(row.path, inside.to_str().unwrap());
        assert_eq!(row.ino, Some(fs::metadata(&inside).unwrap().ino() as i64));
        assert_eq!(files.path(id).as_deref(), inside.to_str());
        assert_eq!(
            files.resolved(pid, "/data").as_deref(),
            Some("/scratch/run")
        );
        // Not under its root: not found, not taken for strata's file of that name, and
        // named where it would be from the node (as a file renamed since is).
        let own = std::env::temp_dir().join(format!("strata-view-own-{me}"));
        fs::write(&own, b"y").unwrap();
        let before = files.new_rows.len();
        files.resolve(pid, None, own.to_str().unwrap());
        let row = &files.new_rows[before];
        let under_root = root.join(own.strip_prefix("/").unwrap());
        assert_eq!(
            (row.path.as_str(), row.ino),
            (under_root.to_str().unwrap(), None)
        );
        // Its exit handled: its root is let go.
        files.forget_process(pid);
        assert!(files.views.get(pid).is_none());
        fs::remove_file(&own).unwrap();
        fs::remove_dir_all(&root).unwrap();
    }

    /// A file removed before user space looks (a temporary file, a FIFO): what the kernel
    /// side read when it was opened is its identity and its kind; without that, only its name.
    #[test]
    fn a_file_gone_before_it_is_looked_at_keeps_what_the_kernel_read() {
        // A pid that does not exist: paths are taken as they are, nothing is there.
        let pid = i32::MAX;
        let mut files = Files::default();
        let kdev = 99u64; // MKDEV(0, 99) in the kernel's encoding
        let k = KernelFile::from_slots(4242, kdev | (u64::from(libc::S_IFIFO | 0o600) << 32));
        assert_eq!(
            k,
            Some(KernelFile {
                dev: libc::makedev(0, 99),
                ino: 4242,
                mode: libc::S_IFIFO | 0o600
            })
        );
        assert_eq!(KernelFile::from_slots(0, kdev), None, "nothing read");
        let id = files.resolve_made(pid, Some(3), "/gone/fifo", k);
        let row = files.new_rows.last().unwrap();
        assert_eq!(
            (row.dev.as_deref(), row.ino, row.kind.as_deref()),
            (Some("0:99"), Some(4242), Some("fifo"))
        );
        assert!(!files.has_position(id), "a FIFO has no offsets");
        assert_eq!(
            files.resolve_made(pid, Some(5), "/gone/fifo", k),
            id,
            "opened again"
        );
        // Its inode number reused by a file made after it was removed: another file.
        let k2 = KernelFile::from_slots(4242, kdev | (u64::from(libc::S_IFREG) << 32));
        let reused = files.resolve_made(pid, Some(5), "/gone/tmp", k2);
        assert_ne!(reused, id);
        assert_eq!(files.new_rows.last().unwrap().kind.as_deref(), Some("file"));
        assert!(files.has_position(reused));
        // A file that exists, whose inode a removed one had (strata's own scratch file, with
        // a removed file's identity made up to match).
        let dir = std::env::temp_dir().join(format!("strata-reuse-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let live = dir.join("live");
        fs::write(&live, b"x").unwrap();
        let m = fs::metadata(&live).unwrap();
        let dev_k = u64::from((libc::major(m.dev()) << 20) | libc::minor(m.dev()));
        let before = KernelFile::from_slots(m.ino(), dev_k | (u64::from(libc::S_IFREG) << 32));
        let was = files.resolve_made(pid, Some(6), "/gone/was-here", before);
        let now = files.resolve(std::process::id() as i32, None, live.to_str().unwrap());
        assert_ne!(
            now, was,
            "the inode number of a removed file, now another's"
        );
        fs::remove_dir_all(&dir).unwrap();
        // Another name for a file: a hard link is the same file while the first name leads
        // to it; a rename strata saw moves the name; one it did not see is another file.
        let dir = std::env::temp_dir().join(format!("strata-names-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let me = std::process::id() as i32;
        let (a, b, c, d) = (dir.join("a"), dir.join("b"), dir.join("c"), dir.join("d"));
        fs::write(&a, b"x").unwrap();
        fs::hard_link(&a, &b).unwrap();
        let name = |p: &Path| p.to_str().unwrap().to_string();
        let first = files.resolve(me, None, &name(&a));
        assert_eq!(files.resolve(me, None, &name(&b)), first, "a hard link");
        fs::remove_file(&b).unwrap();
        fs::rename(&a, &c).unwrap();
        files.renamed(first, name(&c));
        assert_eq!(
            files.resolve(me, None, &name(&c)),
            first,
            "renamed, as seen"
        );
        fs::rename(&c, &d).unwrap();
        assert_ne!(
            files.resolve(me, None, &name(&d)),
            first,
            "its first name is gone"
        );
        fs::remove_dir_all(&dir).unwrap();
        let other = files.resolve(pid, Some(4), "/gone/other");
        let row = files.new_rows.last().unwrap();
        assert_eq!(
            (row.file_id, row.ino, row.kind.as_deref()),
            (other, None, None)
        );
        assert!(files.has_position(other));
    }

    #[test]
    fn files_are_forgotten_after_two_generations() {
        // A pid that does not exist: paths are taken as they are, nothing is stat'ed.
        let pid = i32::MAX;
        let mut files = Files::default();
        let first = files.resolve(pid, None, "/nonexistent/first");
        for i in 0..GENERATION {
            files.resolve(pid, None, &format!("/nonexistent/a{i}"));
        }
        // One generation later it is still known (and moves back to the current one).
        assert_eq!(files.resolve(pid, None, "/nonexistent/first"), first);
        assert_eq!(files.path(first).as_deref(), Some("/nonexistent/first"));
        for i in 0..2 * GENERATION {
            files.resolve(pid, None, &format!("/nonexistent/b{i}"));
        }
        assert!(files.known.paths.len() <= GENERATION && files.older.paths.len() <= GENERATION);
        assert_eq!(files.path(first), None);
        assert_ne!(
            files.resolve(pid, None, "/nonexistent/first"),
            first,
            "a new id"
        );
    }

    #[test]
    fn a_reused_fd_number_is_not_mistaken_for_the_file_opened_before() {
        use std::os::fd::AsRawFd as _;
        let dir = std::env::temp_dir().join(format!("strata-files-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a"), dir.join("b"));
        fs::write(&a, b"a").unwrap();
        fs::write(&b, b"b").unwrap();
        let me = std::process::id() as i32;
        let mut files = Files::default();
        // The traced open was of `a`, but by the time it is processed the fd names `b`.
        let fb = fs::File::open(&b).unwrap();
        let id_a = files.resolve(me, Some(fb.as_raw_fd()), a.to_str().unwrap());
        let id_b = files.resolve(me, Some(fb.as_raw_fd()), b.to_str().unwrap());
        assert_ne!(id_a, id_b);
        let rows = &files.new_rows;
        let ino = |p: &Path| fs::metadata(p).unwrap().ino() as i64;
        assert_eq!(rows[0].ino, Some(ino(&a)));
        assert_eq!(rows[1].ino, Some(ino(&b)));
        // The same file again, by either route, keeps its id.
        assert_eq!(files.resolve(me, None, b.to_str().unwrap()), id_b);
        fs::remove_dir_all(&dir).unwrap();
    }

    /// The traced open's fd is closed and its number reused while strata looks at it (the
    /// process runs on): its name read before the reuse and its inode after would make the
    /// open another file's. A symbolic link in the name (as /usr/share/locale/locale.alias is)
    /// widens the gap, by the name's resolution between the two looks.
    #[test]
    fn an_fd_reused_while_it_is_looked_at_is_not_taken_for_another_file() {
        use std::os::fd::AsRawFd as _;
        let dir = std::env::temp_dir().join(format!("strata-reuse-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let a = dir.join("a");
        fs::write(&a, b"a").unwrap();
        let link = dir.join("link");
        std::os::unix::fs::symlink(&a, &link).unwrap();
        let others: Vec<fs::File> = (0..64)
            .map(|i| {
                let p = dir.join(format!("other{i}"));
                fs::write(&p, b"o").unwrap();
                fs::File::open(p).unwrap()
            })
            .collect();
        let fa = fs::File::open(&a).unwrap();
        let ino_a = fs::metadata(&a).unwrap().ino() as i64;
        // The fd the traced open returned: `a` at first, then the other files in turn.
        // SAFETY: plain descriptor calls on descriptors this test owns.
        let fd = unsafe { libc::dup(fa.as_raw_fd()) };
        assert!(fd >= 0);
        let me = std::process::id() as i32;
        let wrong = (0..300u32)
            .filter(|attempt| {
                // SAFETY: as above.
                unsafe { libc::dup2(fa.as_raw_fd(), fd) };
                let start = std::sync::Barrier::new(2);
                std::thread::scope(|s| {
                    s.spawn(|| {
                        start.wait();
                        // Each attempt reuses the fd a little later.
                        let at = std::time::Instant::now();
                        let delay = std::time::Duration::from_micros(u64::from(attempt % 100));
                        while at.elapsed() < delay {}
                        for o in &others {
                            // SAFETY: as above.
                            unsafe { libc::dup2(o.as_raw_fd(), fd) };
                            let at = std::time::Instant::now();
                            while at.elapsed() < std::time::Duration::from_micros(2) {}
                        }
                    });
                    let mut files = Files::default();
                    start.wait();
                    let id = files.resolve_open(me, fd, link.to_str().unwrap(), None);
                    let row = files.new_rows.iter().find(|r| r.file_id == id).unwrap();
                    (row.path.as_str(), row.ino) != (a.to_str().unwrap(), Some(ino_a))
                })
            })
            .count();
        // SAFETY: as above.
        unsafe { libc::close(fd) };
        assert_eq!(
            wrong, 0,
            "of 300 opens of {link:?}, {wrong} were given another file's inode"
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn names_of_a_processs_own_fds() {
        let link = |p| own_fd_link(7, p);
        let at = |s: &str, whole| Some((s.to_string(), whole));
        assert_eq!(link("/dev/fd/63"), at("/proc/7/fd/63", true));
        assert_eq!(link("/proc/self/fd/3"), at("/proc/7/fd/3", true));
        assert_eq!(
            link("/proc/thread-self/fd/3/a/b"),
            at("/proc/7/fd/3/a/b", false)
        );
        assert_eq!(link("/dev/stdin"), at("/proc/7/fd/0", true));
        assert_eq!(link("/dev/stderr"), at("/proc/7/fd/2", true));
        for other in [
            "/dev/fd/",
            "/dev/fd/x",
            "/dev/fd/99999999999",
            "/dev/fd/-1",
            "/dev/stdin/x",
            "/proc/8/fd/3",
            "/proc/self/fdinfo/3",
            "/data/dev/fd/3",
        ] {
            assert_eq!(link(other), None, "{other}");
        }
        let proc_link = |p| own_proc_link(7, p);
        let at = |s: &str| Some(s.to_string());
        assert_eq!(proc_link("/proc/self"), at("/proc/7"));
        assert_eq!(proc_link("/proc/self/status"), at("/proc/7/status"));
        assert_eq!(
            proc_link("/proc/thread-self/stat"),
            at("/proc/7/task/7/stat")
        );
        assert_eq!(proc_link("/proc/net/route"), at("/proc/7/net/route"));
        assert_eq!(proc_link("/proc/mounts"), at("/proc/7/mounts"));
        for other in [
            "/proc/selfish",
            "/proc/8/status",
            "/proc/meminfo",
            "/data/proc/self",
        ] {
            assert_eq!(proc_link(other), None, "{other}");
        }
        assert_eq!(unnamed_inode("pipe:[2171645]"), Some(2171645));
        assert_eq!(unnamed_inode("socket:[12]"), Some(12));
        for other in [
            "pipe:[]",
            "pipe:[12",
            "anon_inode:[eventfd]",
            "/tmp/pipe:[1]",
        ] {
            assert_eq!(unnamed_inode(other), None, "{other}");
        }
    }

    #[test]
    fn absolute_paths() {
        assert_eq!(absolute(Some("/home/u"), "a/../b/./c"), "/home/u/b/c");
        assert_eq!(absolute(Some("/home/u"), "/etc/x"), "/etc/x");
        assert_eq!(absolute(None, "../../x"), "/x");
        assert_eq!(absolute(Some("/"), "x/y"), "/x/y");
        assert_eq!(absolute(Some("/a/"), "x"), "/a/x");
        assert_eq!(absolute(Some("/a"), "x/"), "/a/x");
        assert_eq!(absolute(None, "x"), "/x");
        assert_eq!(absolute(None, "//a//b/"), "/a/b");
        assert_eq!(absolute(Some("/a"), ""), "/a");
    }

    const MOUNTINFO: &str = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 22 0:25 / /proc rw - proc proc rw
40 22 0:50 / /lustre/scratch rw - lustre 10.0.0.1@tcp:/scratch rw
41 22 254:0 /srv/data /data rw - ext4 /dev/vda rw
";

    #[test]
    fn picks_mount_by_device_then_prefix() {
        let m = procfs::process::MountInfos::from_read(MOUNTINFO.as_bytes())
            .unwrap()
            .0;
        let lustre = libc::makedev(0, 50);
        let root = libc::makedev(254, 0);
        assert_eq!(
            pick_mount(&m, lustre, "/lustre/scratch/run/out.h5")
                .unwrap()
                .fs_type,
            "lustre"
        );
        // A bind mount of the root device: the longest same-device prefix wins.
        let bind = pick_mount(&m, root, "/data/x").unwrap();
        assert_eq!(bind.mount_point, Path::new("/data"));
        assert_eq!(
            pick_mount(&m, root, "/tmp/x").unwrap().mount_point,
            Path::new("/")
        );
        // Unknown device: longest prefix of any mount.
        assert_eq!(
            pick_mount(&m, libc::makedev(9, 9), "/proc/1")
                .unwrap()
                .fs_type,
            "proc"
        );
    }
}
