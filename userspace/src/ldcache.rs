//! The dynamic loader's cache, `/etc/ld.so.cache`, read as glibc's loader reads it: which
//! file each soname resolves to. Read here rather than through `ldconfig -p`, so that strata
//! starts no process of its own (one that another strata tracing every process would record,
//! as it records whatever a strata process starts) and does not depend on ldconfig's PATH.
//!
//! Three layouts exist, all written by today's ldconfig (`-c new|compat|old`):
//! - new (glibc 2.32 and later by default): a 48-byte header, then 24-byte entries;
//! - compat (the default before): the old layout, then the new one aligned to 8 bytes;
//! - old: a 16-byte header, then 12-byte entries.
//!
//! Each entry holds flags and two offsets into a string table: the soname and its path. The
//! offsets count from the start of the new header, and in the old layout from the end of its
//! entries. A soname can have several entries: builds for newer CPUs (glibc-hwcaps
//! subdirectories, `x86-64-v3`), which the loader takes when this CPU runs them, before the
//! plain one.
use std::{collections::HashMap, ffi::CStr, os::unix::ffi::OsStrExt as _, path::PathBuf};

pub const PATH: &str = "/etc/ld.so.cache";

const OLD_MAGIC: &[u8] = b"ld.so-1.7.0";
const OLD_HEADER: usize = 16;
const OLD_ENTRY: usize = 12;
const NEW_MAGIC: &[u8] = b"glibc-ld.so.cache1.1";
const NEW_HEADER: usize = 48;
const NEW_ENTRY: usize = 24;

/// The entry's `hwcap` marks a glibc-hwcaps build with this bit (the rest indexes names
/// kept elsewhere in the file; the path names the subdirectory as well).
const HWCAP_EXTENSION: u64 = 1 << 62;

/// An entry's flags for a library of this machine's own kind: ELF for glibc (3) on this
/// architecture (the byte above). Others (i386 libraries on x86-64, say) are left out.
#[cfg(target_arch = "x86_64")]
const OWN_KIND: u32 = 0x0303;
#[cfg(target_arch = "aarch64")]
const OWN_KIND: u32 = 0x0a03;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const OWN_KIND: u32 = 0x0003;

fn u32_at(data: &[u8], at: usize) -> Option<u32> {
    let b = data.get(at..at.checked_add(4)?)?;
    Some(u32::from_ne_bytes(b.try_into().ok()?))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub soname: String,
    pub path: PathBuf,
    pub build: Build,
}

/// Which CPUs an entry's file is built for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Build {
    /// Every CPU of the architecture.
    Plain,
    /// The glibc-hwcaps level of its subdirectory (`x86-64-v3`; empty when the path names
    /// none).
    Level(String),
    /// A legacy hardware-capability subdirectory (`tls`, `avx512_1`), which glibc 2.37
    /// dropped: taken only for a soname without a plain entry.
    Legacy,
}

/// soname -> the file this machine's loader takes for it: the build of the most capable
/// glibc-hwcaps level this CPU runs, else the first plain entry.
pub fn resolve(entries: Vec<Entry>) -> HashMap<String, PathBuf> {
    let levels = supported_levels();
    // Per soname: its rank (the level's place in `levels`, plain entries last) and path.
    let mut best: HashMap<String, (usize, PathBuf)> = HashMap::new();
    for e in entries {
        let rank = match &e.build {
            Build::Plain => levels.len(),
            Build::Legacy => levels.len() + 1,
            Build::Level(dir) => match levels.iter().position(|l| l == dir) {
                Some(r) => r,
                None => continue,
            },
        };
        match best.get(&e.soname) {
            Some((r, _)) if *r <= rank => {}
            _ => {
                best.insert(e.soname, (rank, e.path));
            }
        }
    }
    best.into_iter().map(|(k, (_, p))| (k, p)).collect()
}

/// The glibc-hwcaps levels this CPU runs, most capable first, as the loader names them.
pub fn supported_levels() -> Vec<&'static str> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        let v2 = has!("cmpxchg16b")
            && has!("popcnt")
            && has!("sse3")
            && has!("sse4.1")
            && has!("sse4.2")
            && has!("ssse3");
        let v3 = v2
            && has!("avx")
            && has!("avx2")
            && has!("bmi1")
            && has!("bmi2")
            && has!("f16c")
            && has!("fma")
            && has!("lzcnt")
            && has!("movbe")
            && has!("xsave");
        let v4 = v3
            && has!("avx512f")
            && has!("avx512bw")
            && has!("avx512cd")
            && has!("avx512dq")
            && has!("avx512vl");
        [(v4, "x86-64-v4"), (v3, "x86-64-v3"), (v2, "x86-64-v2")]
            .into_iter()
            .filter_map(|(on, name)| on.then_some(name))
            .collect()
    }
    #[cfg(not(target_arch = "x86_64"))]
    Vec::new()
}

/// The entries of this machine's kind in the cache's order; `None` when `data` is none of
/// the three layouts or its entries run past its end.
pub fn entries(data: &[u8]) -> Option<Vec<Entry>> {
    if data.starts_with(NEW_MAGIC) {
        return new_entries(data);
    }
    if !data.starts_with(OLD_MAGIC) {
        return None;
    }
    let n = u32_at(data, OLD_MAGIC.len() + 1)? as usize;
    let end = n.checked_mul(OLD_ENTRY)?.checked_add(OLD_HEADER)?;
    if end > data.len() {
        return None;
    }
    // compat: the new layout follows, at the next multiple of 8.
    if let Some(new) = data.get(end.next_multiple_of(8)..)
        && new.starts_with(NEW_MAGIC)
    {
        return new_entries(new);
    }
    let strings = &data[end..];
    (0..n)
        .map(|i| OLD_HEADER + i * OLD_ENTRY)
        .filter(|&at| u32_at(data, at) == Some(OWN_KIND))
        .map(|at| entry(data, at, strings))
        .collect()
}

/// The entries of the new layout, `data` starting at its header.
fn new_entries(data: &[u8]) -> Option<Vec<Entry>> {
    let n = u32_at(data, NEW_MAGIC.len())? as usize;
    let end = n.checked_mul(NEW_ENTRY)?.checked_add(NEW_HEADER)?;
    if end > data.len() {
        return None;
    }
    (0..n)
        .map(|i| NEW_HEADER + i * NEW_ENTRY)
        .filter(|&at| u32_at(data, at) == Some(OWN_KIND))
        .map(|at| {
            let mut e = entry(data, at, data)?;
            let hwcap = u64::from_ne_bytes(data.get(at + 16..at + 24)?.try_into().ok()?);
            if hwcap & HWCAP_EXTENSION != 0 {
                // .../glibc-hwcaps/<level>/<file>
                let level = e
                    .path
                    .parent()
                    .filter(|d| {
                        d.parent().and_then(|p| p.file_name()) == Some("glibc-hwcaps".as_ref())
                    })
                    .and_then(|d| d.file_name()?.to_str());
                e.build = Build::Level(level.unwrap_or_default().to_string());
            } else if hwcap != 0 {
                e.build = Build::Legacy;
            }
            Some(e)
        })
        .collect()
}

/// The soname and path of the entry at `at`, their offsets counted from `strings`' start.
fn entry(data: &[u8], at: usize, strings: &[u8]) -> Option<Entry> {
    let text = |field: usize| {
        let off = u32_at(data, at + field)? as usize;
        CStr::from_bytes_until_nul(strings.get(off..)?).ok()
    };
    let soname = text(4)?.to_str().ok()?.to_string();
    let path = PathBuf::from(std::ffi::OsStr::from_bytes(text(8)?.to_bytes()));
    Some(Entry {
        soname,
        path,
        build: Build::Plain,
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// A cache of the new layout with the given (flags, soname, path) entries.
    fn new_cache(libs: &[(u32, &str, &str)]) -> Vec<u8> {
        let mut strings = Vec::new();
        let base = NEW_HEADER + libs.len() * NEW_ENTRY;
        let mut out = NEW_MAGIC.to_vec();
        out.extend((libs.len() as u32).to_ne_bytes());
        out.resize(NEW_HEADER, 0);
        for (flags, soname, path) in libs {
            out.extend(flags.to_ne_bytes());
            for s in [soname, path] {
                out.extend(((base + strings.len()) as u32).to_ne_bytes());
                strings.extend(s.as_bytes());
                strings.push(0);
            }
            out.extend([0; 12]);
        }
        out.extend(strings);
        out
    }

    #[test]
    fn only_this_machines_kind_is_kept_in_order() {
        let data = new_cache(&[
            (OWN_KIND, "libfoo.so.1", "/opt/v3/libfoo.so.1"),
            (0x0003 | 0x0800, "libfoo.so.1", "/lib32/libfoo.so.1"),
            (OWN_KIND, "libfoo.so.1", "/usr/lib/libfoo.so.1"),
        ]);
        let got: Vec<_> = entries(&data)
            .unwrap()
            .into_iter()
            .map(|e| (e.soname, e.path, e.build))
            .collect();
        let plain = |p: &str| ("libfoo.so.1".to_string(), PathBuf::from(p), Build::Plain);
        assert_eq!(
            got,
            [plain("/opt/v3/libfoo.so.1"), plain("/usr/lib/libfoo.so.1")]
        );
    }

    #[test]
    fn the_most_capable_build_this_cpu_runs_is_taken() {
        let e = |path: &str, build| Entry {
            soname: "libfoo.so.1".into(),
            path: path.into(),
            build,
        };
        let level = |l: &str| Build::Level(l.into());
        // A level no CPU has, and one whose path named none, are never taken.
        let got = resolve(vec![
            e("/l/glibc-hwcaps/x86-64-v9/libfoo.so.1", level("x86-64-v9")),
            e("/l/odd/libfoo.so.1", level("")),
            e("/l/tls/libfoo.so.1", Build::Legacy),
            e("/l/libfoo.so.1", Build::Plain),
            e("/m/libfoo.so.1", Build::Plain),
        ]);
        assert_eq!(got["libfoo.so.1"], Path::new("/l/libfoo.so.1"));
        let got = resolve(vec![e("/l/tls/libfoo.so.1", Build::Legacy)]);
        assert_eq!(got["libfoo.so.1"], Path::new("/l/tls/libfoo.so.1"));
        // Every level this CPU runs beats the plain build, the most capable first, whatever
        // the order of the entries.
        let levels = supported_levels();
        let mut all = vec![e("/l/libfoo.so.1", Build::Plain)];
        all.extend(
            levels
                .iter()
                .rev()
                .map(|l| e(&format!("/l/glibc-hwcaps/{l}/libfoo.so.1"), level(l))),
        );
        let want = match levels.first() {
            Some(l) => format!("/l/glibc-hwcaps/{l}/libfoo.so.1"),
            None => "/l/libfoo.so.1".into(),
        };
        assert_eq!(resolve(all)["libfoo.so.1"], Path::new(&want));
    }

    /// The levels this CPU runs are those glibc's loader says it searches (`ld.so --help`),
    /// and in a cache that ldconfig writes for a library built for each level, strata takes
    /// the build of the loader's first.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn hwcaps_levels_and_choice_agree_with_the_loader() {
        use std::process::Command;
        let help = Command::new("/lib64/ld-linux-x86-64.so.2")
            .arg("--help")
            .output()
            .expect("the loader runs");
        let help = String::from_utf8_lossy(&help.stdout);
        let section = help
            .split("Subdirectories of glibc-hwcaps directories, in priority order:")
            .nth(1)
            .expect("the loader lists glibc-hwcaps levels (glibc 2.33 or later)");
        let searched: Vec<&str> = section
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .filter(|l| l.contains("supported, searched"))
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        assert_eq!(supported_levels(), searched, "the loader's list:{section}");

        let dir = std::env::temp_dir().join(format!("strata-hwcaps-{}", std::process::id()));
        let lib = dir.join("lib");
        let src = dir.join("f.c");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::write(&src, "int f(void) { return 1; }\n").unwrap();
        let plain = lib.join("libhwtest.so.1");
        let built = Command::new("gcc")
            .args(["-shared", "-fPIC", "-Wl,-soname,libhwtest.so.1", "-o"])
            .arg(&plain)
            .arg(&src)
            .status()
            .expect("gcc");
        assert!(built.success());
        for level in ["x86-64-v2", "x86-64-v3", "x86-64-v4"] {
            let d = lib.join("glibc-hwcaps").join(level);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::copy(&plain, d.join("libhwtest.so.1")).unwrap();
        }
        let conf = dir.join("ld.so.conf");
        std::fs::write(&conf, format!("{}\n", lib.display())).unwrap();
        let cache = dir.join("ld.so.cache");
        let made = Command::new("ldconfig")
            .args(["-X", "-f"])
            .arg(&conf)
            .arg("-C")
            .arg(&cache)
            .status()
            .expect("ldconfig");
        assert!(made.success());
        let read = entries(&std::fs::read(&cache).unwrap()).expect("a layout strata reads");
        let ours: Vec<_> = read
            .iter()
            .filter(|e| e.soname == "libhwtest.so.1")
            .collect();
        assert_eq!(ours.len(), 4, "{ours:?}");
        let want = match searched.first() {
            Some(l) => lib.join("glibc-hwcaps").join(l).join("libhwtest.so.1"),
            None => plain,
        };
        assert_eq!(resolve(read)["libhwtest.so.1"], want);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn cut_short_or_foreign_data_gives_none() {
        let data = new_cache(&[(OWN_KIND, "libfoo.so.1", "/usr/lib/libfoo.so.1")]);
        for len in [0, 10, NEW_MAGIC.len() + 2, NEW_HEADER + 10] {
            assert_eq!(entries(&data[..len]), None, "cut at {len}");
        }
        // Strings cut off: the entry has no text to point at.
        assert_eq!(entries(&data[..data.len() - 3]), None);
        assert_eq!(entries(b"\x7fELF\x02\x01\x01"), None);
    }
}
