//! The shared objects a process maps, from /proc/<pid>/maps.
//!
//! Read at every report of a traced process's loader, and at an exec whose loader strata
//! does not know beforehand. Where the kernel answers `PROCMAP_QUERY` (Linux 6.11), only the
//! executable file mappings are asked for, each with its name, rather than the text of all:
//! of an idle short process's ~40 mappings, the text took 28-37 µs to read here and the query
//! of its 3 executable ones 8-10 µs; over a loop of `cat`s, whose loaders map as strata asks,
//! the look was 14.5% of strata's CPU samples with the text and 10.4% with the query.
//! Elsewhere the text is read, and only the lines that name a shared object are turned into
//! text.
use std::{fs::File, os::fd::AsRawFd as _};

/// A mapped shared object: its name in the process's maps, and its (dev, ino) as `stat`
/// gives them.
pub type Mapped = (String, (u64, u64));

/// Whether this kernel answers `PROCMAP_QUERY`; cleared at its first refusal.
static QUERY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// The shared objects process `pid` maps, sorted and without repeats; none when the process
/// is gone.
pub fn shared_objects(pid: i32) -> Vec<Mapped> {
    use std::sync::atomic::Ordering::Relaxed;
    let Ok(mut file) = File::open(format!("/proc/{pid}/maps")) else {
        return Vec::new();
    };
    if QUERY.load(Relaxed) {
        match query::executable(&file) {
            Ok(mut out) => {
                out.sort();
                out.dedup();
                return out;
            }
            Err(query::Unanswered) => QUERY.store(false, Relaxed),
        }
    }
    crate::procs::read_whole(&mut file).map_or_else(Vec::new, |m| parse(&m))
}

/// `PROCMAP_QUERY` (include/uapi/linux/fs.h).
mod query {
    use super::*;

    /// What the kernel reads and fills in; its size (104 bytes) is part of the request.
    #[repr(C)]
    #[derive(Default)]
    struct ProcmapQuery {
        size: u64,
        query_flags: u64,
        query_addr: u64,
        vma_start: u64,
        vma_end: u64,
        vma_flags: u64,
        vma_page_size: u64,
        vma_offset: u64,
        inode: u64,
        dev_major: u32,
        dev_minor: u32,
        vma_name_size: u32,
        build_id_size: u32,
        vma_name_addr: u64,
        build_id_addr: u64,
    }

    const _: () = assert!(size_of::<ProcmapQuery>() == 104);

    /// `_IOWR('f', 17, struct procmap_query)`.
    const PROCMAP_QUERY: libc::c_ulong =
        (3 << 30) | ((size_of::<ProcmapQuery>() as libc::c_ulong) << 16) | (0x66 << 8) | 17;
    const VMA_EXECUTABLE: u64 = 0x04;
    const COVERING_OR_NEXT_VMA: u64 = 0x10;
    const FILE_BACKED_VMA: u64 = 0x20;

    /// The kernel does not know the query (before 6.11).
    pub struct Unanswered;

    /// The shared objects among the executable file mappings of the maps file `maps`, in
    /// address order; none once the process has gone.
    pub fn executable(maps: &File) -> Result<Vec<Mapped>, Unanswered> {
        let mut out: Vec<Mapped> = Vec::new();
        let mut name = vec![0u8; libc::PATH_MAX as usize];
        let mut addr = 0;
        // Bounded by the mappings a process may have (vm.max_map_count, 65,530 by default).
        for _ in 0..1 << 20 {
            let q = match ask(maps, addr, &mut name) {
                Ok(q) => q,
                Err(libc::ENOTTY | libc::EINVAL) if addr == 0 => return Err(Unanswered),
                // A name longer than PATH_MAX is no library's: the mapping's end, without.
                Err(libc::ENAMETOOLONG) => match ask(maps, addr, &mut []) {
                    Ok(q) => {
                        addr = q.vma_end;
                        continue;
                    }
                    Err(_) => return Ok(out),
                },
                // ENOENT: no mapping from `addr` on; ESRCH: the process has gone.
                Err(_) => return Ok(out),
            };
            addr = q.vma_end;
            // The size counts the closing NUL.
            let path = &name[..(q.vma_name_size as usize).saturating_sub(1)];
            let file = (libc::makedev(q.dev_major, q.dev_minor), q.inode);
            if let Some(m) = library(path, file) {
                out.push(m);
            }
        }
        Ok(out)
    }

    /// The first executable file mapping at or above `addr`, its name in `name` (none
    /// asked for where `name` is empty); else the error number.
    fn ask(maps: &File, addr: u64, name: &mut [u8]) -> Result<ProcmapQuery, i32> {
        let mut q = ProcmapQuery {
            size: size_of::<ProcmapQuery>() as u64,
            query_flags: COVERING_OR_NEXT_VMA | FILE_BACKED_VMA | VMA_EXECUTABLE,
            query_addr: addr,
            vma_name_size: name.len() as u32,
            vma_name_addr: name.as_mut_ptr() as u64,
            ..Default::default()
        };
        // SAFETY: the kernel reads and writes `q`, whose size it is told, and writes at most
        // `vma_name_size` bytes at `vma_name_addr`, which `name` holds.
        match unsafe { libc::ioctl(maps.as_raw_fd(), PROCMAP_QUERY, &mut q) } {
            0.. => Ok(q),
            _ => Err(std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO)),
        }
    }
}

/// A mapping of file `file` named `path` as a shared object: None for another file.
fn library(path: &[u8], file: (u64, u64)) -> Option<Mapped> {
    let name = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
    // Names of shared objects are ASCII in practice; one that is not is no library
    // strata probes by name.
    std::str::from_utf8(name)
        .is_ok_and(crate::libraries::is_shared_object)
        .then(|| (crate::files::text(path), file))
}

/// The shared objects in the text of a maps file (see [`shared_objects`]).
pub fn parse(maps: &[u8]) -> Vec<Mapped> {
    let mut out: Vec<Mapped> = Vec::new();
    for line in maps.split(|&b| b == b'\n') {
        let Some((dev, ino, path)) = fields(line) else {
            continue;
        };
        // A library's mappings follow one another: its name once.
        if out
            .last()
            .is_some_and(|(p, f)| *f == (dev, ino) && p.as_bytes() == path)
        {
            continue;
        }
        out.extend(library(path, (dev, ino)));
    }
    out.sort();
    out.dedup();
    out
}

/// The dev, inode and path of one maps line
/// (`start-end perms offset major:minor inode   path`); None for a line with no file path
/// (anonymous memory, `[heap]`, `[vdso]`).
fn fields(line: &[u8]) -> Option<(u64, u64, &[u8])> {
    let mut rest = line;
    let mut field = || {
        let end = rest.iter().position(|&b| b == b' ')?;
        let f = &rest[..end];
        rest = &rest[end + 1..];
        Some(f)
    };
    let (_range, perms, _offset) = (field()?, field()?, field()?);
    // Code is where probes go: a library's other mappings, as the query, are passed over.
    if perms.get(2) != Some(&b'x') {
        return None;
    }
    let dev = field()?;
    let ino = field()?;
    // The path is padded to a column; a name may itself hold spaces, at either end too,
    // but not at its start (an absolute path).
    let path = rest.trim_ascii_start();
    if path.is_empty() || path[0] == b'[' {
        return None;
    }
    let (major, minor) = dev.split_at(dev.iter().position(|&b| b == b':')?);
    let hex = |s: &[u8]| u32::from_str_radix(std::str::from_utf8(s).ok()?, 16).ok();
    let dev = libc::makedev(hex(major)?, hex(&minor[1..])?);
    let ino = std::str::from_utf8(ino).ok()?.parse().ok()?;
    Some((dev, ino, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The (dev, ino) of a mapping as /proc gives it is the one `stat` gives: a library a
    /// process maps is known as looked at without a look.
    #[test]
    fn mapped_files_are_named_as_stat_names_them() {
        use std::os::unix::fs::MetadataExt as _;
        let mapped = shared_objects(std::process::id() as i32);
        let libc = mapped
            .iter()
            .find(|(p, _)| {
                p.rsplit('/')
                    .next()
                    .is_some_and(|n| n.starts_with("libc.so"))
            })
            .expect("the test maps libc");
        let m = std::fs::metadata(&libc.0).unwrap();
        assert_eq!(libc.1, (m.dev(), m.ino()), "{}", libc.0);
        for (p, (dev, ino)) in &mapped {
            let m = std::fs::metadata(p).unwrap();
            assert_eq!((*dev, *ino), (m.dev(), m.ino()), "{p}");
        }
    }

    /// The same shared objects as the procfs crate's general parser finds in this process's
    /// own maps, each library of several mappings once.
    #[test]
    fn a_live_process_maps_the_libraries_procfs_finds() {
        let pid = std::process::id() as i32;
        let text = std::fs::read(format!("/proc/{pid}/maps")).unwrap();
        let mut theirs: Vec<Mapped> = procfs::process::Process::new(pid)
            .unwrap()
            .maps()
            .unwrap()
            .into_iter()
            .filter_map(|m| match m.pathname {
                procfs::process::MMapPath::Path(p)
                    if m.perms.contains(procfs::process::MMPermissions::EXECUTE) =>
                {
                    let dev = libc::makedev(m.dev.0 as u32, m.dev.1 as u32);
                    Some((crate::files::os_text(p), (dev, m.inode)))
                }
                _ => None,
            })
            .filter(|(p, _)| crate::libraries::is_shared_object(p.rsplit('/').next().unwrap_or(p)))
            .collect();
        theirs.sort();
        theirs.dedup();
        let ours = parse(&text);
        assert!(ours.len() >= 2, "libc and the loader at least: {ours:?}");
        assert_eq!(ours, theirs);
    }

    /// The kernel's answer to the query is what its text shows: the same libraries, named
    /// and numbered alike (kernels before 6.11 have their text read instead).
    #[test]
    fn the_query_finds_what_the_text_shows() {
        let maps = format!("/proc/{}/maps", std::process::id());
        let Ok(mut queried) = query::executable(&File::open(&maps).unwrap()) else {
            let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
            panic!(
                "this kernel ({}) does not answer PROCMAP_QUERY, which Linux 6.11 and later do",
                release.trim()
            );
        };
        queried.sort();
        queried.dedup();
        let text = parse(&std::fs::read(&maps).unwrap());
        assert!(text.len() >= 2, "libc and the loader at least: {text:?}");
        assert_eq!(queried, text);
        assert_eq!(shared_objects(std::process::id() as i32), text);
    }

    /// Lines of every kind the kernel writes; only code is looked at.
    #[test]
    fn lines_without_a_library_are_passed_over() {
        let text = b"\
55d0c0a00000-55d0c0a02000 r-xp 00000000 fd:01 131                        /usr/bin/cat
55d0c1000000-55d0c1021000 rw-p 00000000 00:00 0                          [heap]
7f0000000000-7f0000001000 r--p 00000000 103:02 4455                      /usr/lib/libc.so.6
7f0000001000-7f0000100000 r-xp 00001000 103:02 4455                      /usr/lib/libc.so.6
7f0000100000-7f0000101000 r-xp 00000000 00:05 99                         /memfd:x (deleted)
7f0000101000-7f0000102000 r-xp 00000000 fd:01 77                         /opt/my lib/libz.so.1.3
7f0000102000-7f0000103000 r-xp 00000000 fd:01 78                         /gone/libold.so.2 (deleted)
7f0000103000-7f0000104000 r-xp 00000000 fd:01 79                         /x/\xff/libh5.so
7f0000104000-7f0000105000 rw-p 00000000 00:00 0 
7f0000105000-7f0000106000 r-xp 00000000 fd:01 80                         /usr/lib/libm.so.6.bak
7ffd00000000-7ffd00001000 r-xp 00000000 00:00 0                          [vdso]
7f0000106000-7f0000107000 r-xp 00000000 fd:01 66                         /lib64/ld-linux-x86-64.so.2
7f0000107000-7f0000108000 r-xp 00000000 fd:01 55                         /usr/lib/libc.so.6
7f0000108000-7f0000109000 r--p 00000000 fd:01 56                         /usr/lib/libdata.so.1
7f0000109000-7f000010a000 rw-p 00001000 fd:01 56                         /usr/lib/libdata.so.1
trailing";
        let dev = |major, minor| libc::makedev(major, minor);
        assert_eq!(
            parse(text),
            vec![
                ("/lib64/ld-linux-x86-64.so.2".into(), (dev(0xfd, 1), 66)),
                ("/opt/my lib/libz.so.1.3".into(), (dev(0xfd, 1), 77)),
                ("/usr/lib/libc.so.6".into(), (dev(0xfd, 1), 55)),
                ("/usr/lib/libc.so.6".into(), (dev(0x103, 2), 4455)),
                ("/x/\\xff/libh5.so".into(), (dev(0xfd, 1), 79)),
            ]
        );
    }
}
