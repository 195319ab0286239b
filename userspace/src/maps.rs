//! The shared objects a process maps, from /proc/<pid>/maps.
//!
//! Read at every exec and every report of a traced process's loader: over a loop of short
//! processes, parsing each line into an owned record (a string per line, most of them
//! anonymous memory or the executable) took a tenth of strata's CPU. Only the lines that
//! name a shared object are turned into text here.

/// A mapped shared object: its name in the process's maps, and its (dev, ino) as `stat`
/// gives them.
pub type Mapped = (String, (u64, u64));

/// The shared objects process `pid` maps, sorted and without repeats; none when the process
/// is gone.
pub fn shared_objects(pid: i32) -> Vec<Mapped> {
    crate::procs::read_small(&format!("/proc/{pid}/maps")).map_or_else(Vec::new, |m| parse(&m))
}

/// The shared objects in the text of a maps file (see [`shared_objects`]).
pub fn parse(maps: &[u8]) -> Vec<Mapped> {
    let mut out: Vec<Mapped> = Vec::new();
    for line in maps.split(|&b| b == b'\n') {
        let Some((dev, ino, path)) = fields(line) else {
            continue;
        };
        let name = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
        // Names of shared objects are ASCII in practice; one that is not is no library
        // strata probes by name.
        if !std::str::from_utf8(name).is_ok_and(crate::libraries::is_shared_object) {
            continue;
        }
        // A library's mappings follow one another: its name once.
        if out
            .last()
            .is_some_and(|(p, f)| *f == (dev, ino) && p.as_bytes() == path)
        {
            continue;
        }
        out.push((crate::files::text(path), (dev, ino)));
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
    let (_range, _perms, _offset) = (field()?, field()?, field()?);
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
                procfs::process::MMapPath::Path(p) => {
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

    /// Lines of every kind the kernel writes.
    #[test]
    fn lines_without_a_library_are_passed_over() {
        let text = b"\
55d0c0a00000-55d0c0a02000 r--p 00000000 fd:01 131                        /usr/bin/cat
55d0c1000000-55d0c1021000 rw-p 00000000 00:00 0                          [heap]
7f0000000000-7f0000001000 r--p 00000000 103:02 4455                      /usr/lib/libc.so.6
7f0000001000-7f0000100000 r-xp 00001000 103:02 4455                      /usr/lib/libc.so.6
7f0000100000-7f0000101000 r--p 00000000 00:05 99                         /memfd:x (deleted)
7f0000101000-7f0000102000 r--p 00000000 fd:01 77                         /opt/my lib/libz.so.1.3
7f0000102000-7f0000103000 r--p 00000000 fd:01 78                         /gone/libold.so.2 (deleted)
7f0000103000-7f0000104000 r--p 00000000 fd:01 79                         /x/\xff/libh5.so
7f0000104000-7f0000105000 rw-p 00000000 00:00 0 
7f0000105000-7f0000106000 r--p 00000000 fd:01 80                         /usr/lib/libm.so.6.bak
7ffd00000000-7ffd00001000 r-xp 00000000 00:00 0                          [vdso]
7f0000106000-7f0000107000 r--p 00000000 fd:01 66                         /lib64/ld-linux-x86-64.so.2
7f0000107000-7f0000108000 r--p 00000000 fd:01 55                         /usr/lib/libc.so.6
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
