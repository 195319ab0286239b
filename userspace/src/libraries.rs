//! Which shared objects are builds of a probed library, and which ones a program loads at
//! start.
//!
//! probes.toml names a library as this system's build calls it (`libhdf5_openmpi.so.103`), but
//! jobs bring their own: `libhdf5.so.310` from a module tree or Spack, `libhdf5_serial.so.103`,
//! a Python wheel's `libhdf5-9e18f0c6.so.320.0.0`. Those are found by name and confirmed by the
//! functions they define. A program's libraries are found as the dynamic loader finds them
//! (ld.so(8)), so that the probed ones are attached before the program's first call rather
//! than when strata sees them opened.
use std::{
    collections::{HashMap, HashSet, VecDeque},
    fs,
    path::{Path, PathBuf},
};

use object::{
    Endianness, ReadCache, ReadRef, elf,
    read::elf::{Dyn as _, FileHeader as _, ProgramHeader as _},
};

use crate::{
    probes::{Probe, Target},
    symbols::SymbolTable,
    views::Root,
};

/// How a shared object's file name relates to the library a probe names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LibraryMatch {
    /// The same name, or the same name before `.so` (another version: `libmpi.so.12`).
    Same,
    /// Perhaps another build: the library's base name (its name up to the first `_`, `-` or
    /// `.so`: `libhdf5` of `libhdf5_openmpi.so.103`), then `_`, `-` or `.so`. It is one only
    /// if it defines functions the probes name: `libhdf5_hl` and `libhdf5_fortran` call
    /// HDF5's functions without defining them; `libnetcdff` and `libmpiP` do not match.
    Kin,
    No,
}

/// A library's base name: its file name up to the first `_`, `-` or `.so`.
pub fn base_name(library: &str) -> &str {
    let library = library.rsplit('/').next().unwrap_or(library);
    let end = library.find(['_', '-']).unwrap_or(usize::MAX);
    &library[..end.min(library.find(".so").unwrap_or(library.len()))]
}

/// How `file_name` relates to `library`, whose builds may also go by the base names
/// `other_names` (probes.toml's `[library_names]`: Debian's MPICH is `libmpich.so.12`).
pub fn library_match(library: &str, other_names: &[String], file_name: &str) -> LibraryMatch {
    match_name(library, other_names, file_name, is_shared_object(file_name))
}

/// [`library_match`] for a name whose [`is_shared_object`] is known: a name is matched
/// against every probed library, and each new process opens some thirty.
pub fn match_name(
    library: &str,
    other_names: &[String],
    file_name: &str,
    shared_object: bool,
) -> LibraryMatch {
    let library = library.rsplit('/').next().unwrap_or(library);
    if !shared_object {
        return if file_name == library {
            LibraryMatch::Same
        } else {
            LibraryMatch::No
        };
    }
    fn stem(n: &str) -> &str {
        n.split(".so").next().unwrap_or(n)
    }
    if file_name == library || stem(file_name) == stem(library) {
        return LibraryMatch::Same;
    }
    let kin = |base: &str| {
        file_name
            .strip_prefix(base)
            .is_some_and(|rest| rest.starts_with(['_', '-']) || rest.starts_with(".so"))
    };
    if kin(base_name(library)) || other_names.iter().any(|b| kin(b)) {
        LibraryMatch::Kin
    } else {
        LibraryMatch::No
    }
}

/// Whether a file name is a shared object's: `.so`, then nothing or a version
/// (`libc.so.6`, `libc-2.28.so`; not `ld.so.cache`).
pub fn is_shared_object(file_name: &str) -> bool {
    // A byte scan: `match_indices` builds a substring searcher each call (some 170
    // instructions of every open's 7,500 in user space).
    let bytes = file_name.as_bytes();
    (0..bytes.len().saturating_sub(2))
        .filter(|&i| &bytes[i..i + 3] == b".so")
        .any(|i| {
            let rest = &file_name[i + 3..];
            rest.is_empty()
                || rest.strip_prefix('.').is_some_and(|v| {
                    v.split('.')
                        .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                })
        })
}

/// The probes whose library `file_name` may be (see [`library_match`]).
pub fn named<'a>(probes: &'a [Probe], file_name: &str) -> Vec<(&'a Probe, LibraryMatch)> {
    // Matched once per run of probes on one library (their other names come from it), not
    // per probe: every library a new process maps is looked up, against some 400 probes.
    let mut last: Option<(&str, LibraryMatch)> = None;
    let shared_object = is_shared_object(file_name);
    probes
        .iter()
        .filter(|p| p.enabled)
        .filter_map(|p| match &p.target {
            Target::Uprobe { library, .. } => {
                let m = match last {
                    Some((l, m)) if l == library => m,
                    _ => match_name(library, &p.other_names, file_name, shared_object),
                };
                last = Some((library, m));
                Some((p, m))
            }
            _ => None,
        })
        .filter(|(_, m)| *m != LibraryMatch::No)
        .collect()
}

/// Of the probes `named` found, those the file is the library of. A build only by name
/// (`Kin`) is one if it defines some function of the library's probes; then it is probed for
/// all of them, as the library itself is (what it lacks is reported, not silently left out).
pub fn confirmed<'a>(named: &[(&'a Probe, LibraryMatch)], table: &SymbolTable) -> Vec<&'a Probe> {
    let library_of = |p: &'a Probe| match &p.target {
        Target::Uprobe { library, symbol } => Some((library.as_str(), symbol.as_str())),
        _ => None,
    };
    // The libraries (as probes.toml names them) some of whose functions the file defines.
    let defined: HashSet<&str> = named
        .iter()
        .filter_map(|(p, _)| library_of(p))
        .filter(|(_, symbol)| table.offset(symbol).is_some())
        .map(|(library, _)| library)
        .collect();
    named
        .iter()
        .filter(|(p, m)| {
            *m == LibraryMatch::Same || library_of(p).is_some_and(|(l, _)| defined.contains(l))
        })
        .map(|(p, _)| *p)
        .collect()
}

/// What the loader reads from one object.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Dynamic {
    /// The loader the kernel maps with a program (PT_INTERP), where it names one.
    pub interpreter: Option<String>,
    pub needed: Vec<String>,
    pub rpath: Vec<String>,
    pub runpath: Vec<String>,
}

/// The machine strata runs on: the loader skips objects built for another.
const MACHINE: u16 = if cfg!(target_arch = "aarch64") {
    elf::EM_AARCH64
} else {
    elf::EM_X86_64
};

/// The dynamic section of a 64-bit ELF object of this machine; None for anything else (a
/// script, a static program, another architecture: the loader would skip it too).
pub fn read_dynamic(data: &[u8]) -> Option<Dynamic> {
    dynamic_of(data)
}

/// [`read_dynamic`] of data read as needed: a program's libraries may be hundreds of MB, of
/// which the headers, the dynamic section and its strings are read.
fn dynamic_of<'data, R: ReadRef<'data>>(data: R) -> Option<Dynamic> {
    let header = elf::FileHeader64::<Endianness>::parse(data).ok()?;
    let endian = header.endian().ok()?;
    if header.e_machine(endian) != MACHINE {
        return None;
    }
    let sections = header.sections(endian, data).ok()?;
    let (entries, link) = sections.dynamic(endian, data).ok()??;
    let strings = sections.strings(endian, data, link).ok()?;
    let mut out = Dynamic {
        interpreter: (header.program_headers(endian, data).ok())
            .and_then(|headers| {
                (headers.iter()).find_map(|h| h.interpreter(endian, data).ok().flatten())
            })
            .map(|p| String::from_utf8_lossy(p).into_owned()),
        ..Default::default()
    };
    for d in entries {
        let tag = d.tag32(endian)?;
        if tag == elf::DT_NULL {
            break;
        }
        if !matches!(tag, elf::DT_NEEDED | elf::DT_RPATH | elf::DT_RUNPATH) {
            continue;
        }
        let Some(value) = u32::try_from(d.d_val(endian))
            .ok()
            .and_then(|at| strings.get(at).ok())
        else {
            continue;
        };
        let value = String::from_utf8_lossy(value);
        let dirs = || {
            value
                .split(':')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        match tag {
            elf::DT_NEEDED => out.needed.push(value.into_owned()),
            elf::DT_RPATH => out.rpath.extend(dirs()),
            elf::DT_RUNPATH => out.runpath.extend(dirs()),
            _ => {}
        }
    }
    Some(out)
}

/// What a program is started with: the `LD_LIBRARY_PATH` it inherits, the loader's cache, and
/// the root its paths are under.
pub struct Loader<'a> {
    pub ld_library_path: Option<&'a str>,
    /// ld.so.cache: soname -> path.
    pub cache: &'a HashMap<String, PathBuf>,
    /// The program's `/` where it is not strata's (a process in a container); paths in and
    /// out are the program's.
    pub root: Option<&'a Root>,
}

/// At most this many objects are followed: a loader chain beyond it is not a program's.
const MAX_OBJECTS: usize = 1_000;

/// The default directories, after the cache.
const DEFAULT_DIRS: &[&str] = &["/lib64", "/usr/lib64", "/lib", "/usr/lib"];

impl Loader<'_> {
    /// The shared objects `exe` (a path in the program's view) loads at start, breadth first
    /// as the loader loads them, each as the program sees its path. A name found once is not
    /// searched again (the loader reuses what it loaded by that name); one not found is left
    /// out (the program would not start).
    pub fn closure(&self, exe: &str) -> Vec<String> {
        self.closure_and_loader(exe).0
    }

    /// [`Self::closure`], and whether its first object is the loader the program names
    /// (PT_INTERP), which the kernel maps with it.
    fn closure_and_loader(&self, exe: &str) -> (Vec<String>, bool) {
        let mut out = Vec::new();
        let Some(top) = self.dynamic(exe) else {
            return (out, false);
        };
        // The program's `$ORIGIN` is the directory of its real path (under another root, the
        // caller gives that: /proc resolves it).
        let exe_origin = match self.root {
            None => {
                fs::canonicalize(exe).map_or_else(|_| origin_of(Path::new(exe)), |p| origin_of(&p))
            }
            Some(_) => origin_of(Path::new(exe)),
        };
        let exe_rpath: Vec<String> = if top.runpath.is_empty() {
            expand(&top.rpath, &exe_origin)
        } else {
            Vec::new()
        };
        let mut seen: HashSet<String> = HashSet::new();
        // The loader comes first, mapped by the kernel; an object that needs it by name (libc
        // does) is given the one loaded, as the loader matches its own name.
        let loader = match top
            .interpreter
            .clone()
            .filter(|p| self.dynamic(p).is_some())
        {
            Some(interp) => {
                seen.insert(interp.rsplit('/').next().unwrap_or(&interp).to_string());
                out.push(interp);
                true
            }
            None => false,
        };
        let mut todo: VecDeque<(Dynamic, String)> = VecDeque::from([(top, exe_origin)]);
        while let Some((object, origin)) = todo.pop_front() {
            for name in &object.needed {
                if !seen.insert(name.clone()) || out.len() >= MAX_OBJECTS {
                    continue;
                }
                let Some((path, dynamic)) = self.search(name, &object, &origin, &exe_rpath) else {
                    continue;
                };
                todo.push_back((dynamic, origin_of(Path::new(&path))));
                out.push(path);
            }
        }
        (out, loader)
    }

    /// ld.so(8)'s order: a name with a slash as it is; else the object's DT_RPATH and the
    /// program's (unless the object has a DT_RUNPATH), LD_LIBRARY_PATH, the object's
    /// DT_RUNPATH, ld.so.cache, the default directories. A file of another architecture is
    /// passed over, as the loader does.
    fn search(
        &self,
        name: &str,
        object: &Dynamic,
        origin: &str,
        exe_rpath: &[String],
    ) -> Option<(String, Dynamic)> {
        if name.contains('/') {
            return self.dynamic(name).map(|d| (name.to_string(), d));
        }
        let mut dirs: Vec<String> = Vec::new();
        if object.runpath.is_empty() {
            dirs.extend(expand(&object.rpath, origin));
            dirs.extend(exe_rpath.iter().cloned());
        }
        dirs.extend(
            self.ld_library_path
                .into_iter()
                .flat_map(|p| p.split([':', ';']))
                .filter(|d| !d.is_empty())
                .map(str::to_string),
        );
        dirs.extend(expand(&object.runpath, origin));
        let in_dirs = dirs
            .iter()
            .map(|d| format!("{}/{name}", d.trim_end_matches('/')));
        let cached = self.cache.get(name).map(|p| p.display().to_string());
        let defaults = DEFAULT_DIRS.iter().map(|d| format!("{d}/{name}"));
        in_dirs
            .chain(cached)
            .chain(defaults)
            .find_map(|path| self.dynamic(&path).map(|d| (path, d)))
    }

    fn dynamic(&self, path: &str) -> Option<Dynamic> {
        let file = match self.root {
            Some(root) => root.open(path),
            None => fs::File::open(path),
        };
        dynamic_of(&ReadCache::new(file.ok()?))
    }
}

/// `$ORIGIN` of an object: its directory.
fn origin_of(path: &Path) -> String {
    path.parent()
        .map_or_else(|| "/".into(), |d| d.display().to_string())
}

/// Substitutes `$ORIGIN` in search directories; a directory naming another dynamic string
/// token (`$LIB`, `$PLATFORM`) is kept as it is and will not be found.
fn expand(dirs: &[String], origin: &str) -> Vec<String> {
    dirs.iter()
        .map(|d| d.replace("${ORIGIN}", origin).replace("$ORIGIN", origin))
        .collect()
}

/// The libraries new images load at start, found at their exec from the program and the
/// `LD_LIBRARY_PATH` the process was started with, in the process's own view of the files (a
/// container's root and loader's cache): a module tree's HDF5 that a job script put on its
/// path, or the HDF5 of a container's image, is probed as the loader maps it, not once its
/// report reaches strata (a short tool's calls are over by then). Kept per program, view and
/// path, so that a script's thousand `sed`s cost one search.
#[derive(Debug, Default)]
pub struct StartLibraries {
    /// Each program's libraries, and whether its loader is the first of them.
    known: HashMap<ProgramKey, (Vec<String>, bool)>,
    /// The loader's caches of other roots (containers), by their file's identity.
    caches: HashMap<FileId, HashMap<String, PathBuf>>,
    /// strata's own mount namespace: there, under `/`, the paths and the loader's cache are
    /// strata's own.
    own_ns: Option<Option<PathBuf>>,
}

/// A process that has just executed a new image, as strata read it then: read once for all
/// that look at it (its identity, its probes, its libraries).
pub struct NewImage {
    pub pid: i32,
    /// Its program as /proc names it (the `/proc/<pid>/exe` link), and the file's metadata.
    pub exe: PathBuf,
    pub meta: fs::Metadata,
    /// `LD_LIBRARY_PATH` in the environment it started with.
    pub ld_library_path: Option<String>,
    /// Whether strata knows it sees the files as strata does (its mount namespace and root):
    /// else its namespace and root are read from /proc.
    pub own_view: bool,
}

impl NewImage {
    /// Process `pid` as /proc shows it now; None where it is gone.
    pub fn read(pid: i32, own_view: bool, ld_library_path: Option<String>) -> Option<NewImage> {
        let exe = format!("/proc/{pid}/exe");
        Some(NewImage {
            pid,
            exe: fs::read_link(&exe).ok()?,
            meta: fs::metadata(&exe).ok()?,
            ld_library_path,
            own_view,
        })
    }
}

/// What [`StartLibraries::of`] found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Start {
    /// The process sees the files as strata does (its mount namespace, under `/`): the
    /// paths are strata's too. Else they are under `/proc/<pid>/root`.
    pub own_view: bool,
    pub libraries: Vec<String>,
    /// The program's loader, which the kernel maps with it, is the first of `libraries`: a
    /// look at what the process maps at its exec would find nothing else that its loader's
    /// report will not show.
    pub loader: bool,
}

/// What a search depends on: the process's mount namespace and root, its program's file, the
/// loader's cache it sees and its `LD_LIBRARY_PATH`.
type ProgramKey = (Option<PathBuf>, PathBuf, FileId, CacheId, Option<String>);

/// A file's device, inode and modification time.
type FileId = (u64, u64, i64, i64);

/// The loader's cache a process sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum CacheId {
    /// strata's own: the process is in strata's mount namespace, under `/`.
    Own,
    /// None under the process's root (musl, a static image): the default directories alone.
    Missing,
    /// Another root's, read and kept in `StartLibraries::caches`.
    Other(FileId),
}

/// Searches, and other roots' caches, kept before the oldest are forgotten.
const MAX_PROGRAMS: usize = 4_096;
const MAX_CACHES: usize = 64;

impl StartLibraries {
    /// The shared objects process `image.pid`, which has just executed a new image, loads at
    /// start, as paths in its view; none where it is gone or not a dynamic program.
    /// `own_cache`: strata's loader cache.
    pub fn of(&mut self, image: &NewImage, own_cache: &HashMap<String, PathBuf>) -> Start {
        let pid = image.pid;
        let own_ns = self
            .own_ns
            .get_or_insert_with(|| fs::read_link("/proc/self/ns/mnt").ok())
            .clone();
        let (ns, root_link) = match image.own_view {
            true => (own_ns.clone(), PathBuf::from("/")),
            false => {
                let ns = fs::read_link(format!("/proc/{pid}/ns/mnt")).ok();
                let Ok(root_link) = fs::read_link(format!("/proc/{pid}/root")) else {
                    return Start::default();
                };
                (ns, root_link)
            }
        };
        let own = own_ns.is_some() && ns == own_ns && root_link == Path::new("/");
        // The program's path in its own view: /proc gives it from strata's root, through a
        // chroot's directory where strata sees one.
        let path = crate::views::inside(&root_link, &image.exe);
        let root = if own {
            None
        } else {
            match Root::of(pid) {
                Ok(root) => Some(root),
                Err(_) => return Start::default(),
            }
        };
        let cache_id = match &root {
            None => CacheId::Own,
            Some(root) => self.cache_of(root).map_or(CacheId::Missing, CacheId::Other),
        };
        let key = (
            ns,
            root_link,
            file_id(&image.meta),
            cache_id,
            image.ld_library_path.clone(),
        );
        if let Some((libs, loader)) = self.known.get(&key) {
            return Start {
                own_view: own,
                libraries: libs.clone(),
                loader: *loader,
            };
        }
        let none = HashMap::new();
        let cache = match cache_id {
            CacheId::Own => own_cache,
            CacheId::Other(id) => self.caches.get(&id).unwrap_or(&none),
            CacheId::Missing => &none,
        };
        let search = Loader {
            ld_library_path: key.4.as_deref(),
            cache,
            root: root.as_ref(),
        };
        let (libs, loader) = search.closure_and_loader(&path.to_string_lossy());
        if self.known.len() >= MAX_PROGRAMS {
            self.known.clear();
        }
        self.known.insert(key, (libs.clone(), loader));
        Start {
            own_view: own,
            libraries: libs,
            loader,
        }
    }

    /// The identity of the loader's cache under `root`, read and kept the first time; None
    /// where there is none or it cannot be read.
    fn cache_of(&mut self, root: &Root) -> Option<FileId> {
        use std::io::Read as _;
        let mut file = root.open(crate::ldcache::PATH).ok()?;
        let id = file_id(&file.metadata().ok()?);
        if !self.caches.contains_key(&id) {
            let mut data = Vec::new();
            file.read_to_end(&mut data).ok()?;
            let entries = crate::ldcache::entries(&data)?;
            if self.caches.len() >= MAX_CACHES {
                self.caches.clear();
            }
            self.caches.insert(id, crate::ldcache::resolve(entries));
        }
        Some(id)
    }
}

fn file_id(meta: &fs::Metadata) -> FileId {
    use std::os::unix::fs::MetadataExt as _;
    (meta.dev(), meta.ino(), meta.mtime(), meta.mtime_nsec())
}

/// `LD_LIBRARY_PATH` in an environment as /proc gives it (`name=value`, NUL after each).
pub fn ld_library_path(env: &[u8]) -> Option<String> {
    env.split(|b| *b == 0)
        .find_map(|kv| kv.strip_prefix(b"LD_LIBRARY_PATH="))
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_path_is_read_from_an_environment() {
        let env = b"PATH=/bin\0MY_LD_LIBRARY_PATH=/no\0LD_LIBRARY_PATH=/a/lib:/b\0X=1\0";
        assert_eq!(ld_library_path(env).as_deref(), Some("/a/lib:/b"));
        assert_eq!(ld_library_path(b"PATH=/bin\0"), None);
        assert_eq!(ld_library_path(b"LD_LIBRARY_PATH=\0").as_deref(), Some(""));
    }

    /// This test program's own libraries, found from its /proc entries as a new image's are,
    /// and searched once.
    #[test]
    fn a_running_programs_start_libraries_are_found_once() {
        let cache = crate::symbols::ld_cache();
        let mut start = StartLibraries::default();
        let pid = std::process::id() as i32;
        let env = crate::procs::read_small("/proc/self/environ").unwrap();
        let ld_path = ld_library_path(&env);
        let image = |own_view| NewImage::read(pid, own_view, ld_path.clone()).unwrap();
        // What strata knew of its view, or not.
        let found = start.of(&image(true), &cache);
        assert!(found.own_view);
        let libs = &found.libraries;
        let names: Vec<&str> = libs.iter().filter_map(|l| l.rsplit('/').next()).collect();
        assert!(names.contains(&"libc.so.6"), "{libs:?}");
        // First the loader the kernel mapped, the one this process maps, and once.
        assert!(found.loader, "{libs:?}");
        let loader = fs::metadata(&libs[0]).unwrap();
        use std::os::unix::fs::MetadataExt as _;
        assert!(
            crate::maps::shared_objects(pid)
                .iter()
                .any(|(_, f)| *f == (loader.dev(), loader.ino())),
            "{} is not mapped",
            libs[0]
        );
        let same_file = |p: &String| fs::metadata(p).is_ok_and(|m| m.ino() == loader.ino());
        assert_eq!(libs.iter().filter(|p| same_file(p)).count(), 1, "{libs:?}");
        assert_eq!(start.of(&image(false), &cache), found);
        assert_eq!(start.known.len(), 1);
        assert!(
            NewImage::read(i32::MAX, true, None).is_none(),
            "no such process"
        );
    }

    #[test]
    fn other_builds_of_a_library_are_kin() {
        use LibraryMatch::*;
        let m = |file| library_match("libhdf5_openmpi.so.103", &[], file);
        assert_eq!(m("libhdf5_openmpi.so.103"), Same);
        assert_eq!(m("libhdf5_openmpi.so.200"), Same);
        assert_eq!(m("libhdf5.so.310"), Kin);
        assert_eq!(m("libhdf5.so"), Kin);
        assert_eq!(m("libhdf5_serial.so.103"), Kin);
        assert_eq!(m("libhdf5-9e18f0c6.so.320.0.0"), Kin);
        // Kin by name, told apart by the functions they define.
        assert_eq!(m("libhdf5_hl.so.310"), Kin);
        assert_eq!(m("libhdf5hl_fortran.so.310"), No);
        assert_eq!(m("libhdf5.a"), No);
        let nc = |file| library_match("libnetcdf_mpi.so.19", &[], file);
        assert_eq!(nc("libnetcdf.so.19"), Kin);
        assert_eq!(nc("libnetcdf-3622e713.so.22"), Kin);
        assert_eq!(nc("libnetcdff.so.7"), No);
        let mpi = |file| library_match("libmpi.so.40", &[], file);
        assert_eq!(mpi("libmpi.so.12"), Same);
        assert_eq!(mpi("libmpi_cray.so.12"), Kin);
        assert_eq!(mpi("libmpiP.so"), No);
        assert_eq!(mpi("libmpich.so.12"), No);
        let mpich = ["libmpich".to_string()];
        let mpi = |file| library_match("libmpi.so.40", &mpich, file);
        assert_eq!(mpi("libmpich.so.12"), Kin);
        assert_eq!(mpi("libmpi.so.12"), Same);
        assert_eq!(mpi("libmpichfort.so.12"), No);
        assert_eq!(base_name("/usr/lib/libhdf5_openmpi.so.103"), "libhdf5");
        let c = |file| library_match("libc.so.6", &[], file);
        assert_eq!(c("libc-2.28.so"), Kin);
        assert_eq!(c("libcrypto.so.3"), No);
        assert_eq!(c("libc++.so.1"), No);
        assert_eq!(
            library_match("/opt/x/libfoo.so.1", &[], "libfoo.so.1"),
            Same
        );
        let ld = |file| library_match("ld-linux-x86-64.so.2", &[], file);
        assert_eq!(ld("ld-2.28.so"), Kin);
        assert_eq!(ld("ld.so.cache"), No);
        assert_eq!(ld("ld.so.preload"), No);
        assert!(is_shared_object("libhdf5.so") && is_shared_object("libhdf5.so.310.4.0"));
        assert!(!is_shared_object("libhdf5.so.310.") && !is_shared_object("x.sock"));
        // Any `.so` may be the one: the last, or an earlier one followed by a version.
        for yes in [".so", "é.so", "a.sock.so", "a.so.1.so", "libé.so.2"] {
            assert!(is_shared_object(yes), "{yes}");
        }
        for no in ["", "so", ".s", "a.so.1b", "a.so.", "é", "libx.so.1.2.x"] {
            assert!(!is_shared_object(no), "{no}");
        }
    }

    /// Debian's serial HDF5 and NetCDF are other builds of the MPI ones probes.toml names;
    /// the high-level HDF5 library and the Fortran bindings only call their functions.
    #[test]
    fn builds_are_confirmed_by_the_functions_they_define() {
        let probes = crate::probes::parse(crate::probes::BUILTIN, "probes.toml").unwrap();
        let count = |lib: &str| {
            probes
                .iter()
                .filter(|p| matches!(&p.target, Target::Uprobe { library, .. } if library == lib))
                .count()
        };
        let dir = Path::new("/usr/lib/x86_64-linux-gnu");
        let probed = |file: &str| {
            let found = named(&probes, file);
            assert!(!found.is_empty(), "{file} is kin by name");
            let table = SymbolTable::read(&dir.join(file))
                .unwrap_or_else(|e| panic!("{e} (run `cargo xtask setup`)"));
            confirmed(&found, &table).len()
        };
        assert_eq!(
            probed("libhdf5_serial.so.103"),
            count("libhdf5_openmpi.so.103")
        );
        assert_eq!(probed("libnetcdf.so.19"), count("libnetcdf_mpi.so.19"));
        assert_eq!(probed("libhdf5_openmpi_hl.so.100"), 0);
        assert_eq!(probed("libmpi_mpifh.so.40"), 0);
        assert_eq!(probed("libmpi_cxx.so.40"), 0);
    }

    /// The closure of a program of this system agrees with the loader's own answer (ldd runs
    /// the loader in list mode).
    #[test]
    fn a_programs_libraries_are_those_the_loader_loads() {
        let cache = crate::symbols::ld_cache();
        let loader = Loader {
            ld_library_path: None,
            cache: &cache,
            root: None,
        };
        let mut compared = 0;
        for exe in ["/usr/bin/python3", "/usr/bin/ssh", "/usr/bin/mpirun"] {
            if !Path::new(exe).exists() {
                continue;
            }
            compared += 1;
            let out = std::process::Command::new("ldd")
                .arg(exe)
                .env_remove("LD_LIBRARY_PATH")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            let mut ldd: Vec<String> = text
                .lines()
                .filter_map(|l| {
                    let l = l.trim();
                    let path = l.split_once(" => ").map_or(l, |(_, p)| p);
                    path.split(" (").next()
                })
                .filter(|p| p.starts_with('/'))
                .map(|p| fs::canonicalize(p).unwrap().display().to_string())
                .collect();
            let mut ours: Vec<String> = loader
                .closure(exe)
                .iter()
                .map(|p| fs::canonicalize(p).unwrap().display().to_string())
                .collect();
            ldd.sort();
            ours.sort();
            assert!(!ours.is_empty(), "{exe}");
            assert_eq!(ours, ldd, "{exe}");
        }
        assert!(
            compared > 0,
            "no program to compare (run `cargo xtask setup`)"
        );
    }

    /// Under another root (a container's), files are looked for there, with that root's
    /// cache, through its absolute links as the program follows them, and named as the
    /// program sees them.
    #[test]
    fn a_programs_libraries_under_another_root_are_its_own() {
        let root = std::env::temp_dir().join(format!("strata-root-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("usr/lib")).unwrap();
        fs::create_dir_all(root.join("opt/app")).unwrap();
        let cache = crate::symbols::ld_cache();
        let libc = cache.get("libc.so.6").expect("libc in the loader's cache");
        fs::copy(libc, root.join("usr/lib/libc.so.6")).unwrap();
        fs::copy("/bin/true", root.join("opt/app/true")).unwrap();
        // A Spack view's absolute link, which leads to the copy only inside the root.
        fs::create_dir_all(root.join("opt/view/lib")).unwrap();
        std::os::unix::fs::symlink("/usr/lib/libc.so.6", root.join("opt/view/lib/libc.so.6"))
            .unwrap();
        let dir = Root::open_dir(&root).unwrap();
        let with = |cache: &[(&str, &str)]| {
            let cache = cache
                .iter()
                .map(|(k, v)| (k.to_string(), PathBuf::from(v)))
                .collect();
            Loader {
                ld_library_path: None,
                cache: &cache,
                root: Some(&dir),
            }
            .closure("/opt/app/true")
        };
        // Not the node's cache: the container has none, so its default directories.
        assert_eq!(with(&[]), ["/usr/lib/libc.so.6"]);
        // A cache naming a file the root lacks: passed over, as the loader would.
        assert_eq!(
            with(&[("libc.so.6", "/no/libc.so.6")]),
            ["/usr/lib/libc.so.6"]
        );
        assert_eq!(
            with(&[("libc.so.6", "/opt/view/lib/libc.so.6")]),
            ["/opt/view/lib/libc.so.6"]
        );
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn origin_is_substituted() {
        assert_eq!(
            expand(&["$ORIGIN/../lib".into(), "${ORIGIN}".into()], "/opt/a/bin"),
            ["/opt/a/bin/../lib", "/opt/a/bin"]
        );
    }

    #[test]
    fn what_is_not_an_elf_object_has_no_libraries() {
        assert_eq!(read_dynamic(b"#!/bin/sh\n"), None);
        assert_eq!(read_dynamic(&[]), None);
    }
}
