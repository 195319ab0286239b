//! Finding probed libraries and the file offsets of their functions.
//!
//! HPC libraries from distributions are stripped of `.symtab`, so both symbol tables are read;
//! versioned names (`H5Dwrite@@HDF5_MPI_1.8.7`) match their plain name. Offsets are file
//! offsets, which is what the kernel's uprobe API takes.
use std::{
    collections::HashMap,
    fs,
    path::{Path, PathBuf},
};

use object::{Object as _, ObjectSection as _, ObjectSymbol as _, ObjectSymbolTable as _};

#[derive(Debug, thiserror::Error)]
pub enum SymbolError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not an ELF shared object: {source}")]
    NotElf {
        path: PathBuf,
        source: object::Error,
    },
    #[error("library {0:?} not found (looked in ld.so.cache and the standard directories)")]
    LibraryNotFound(String),
}

/// Function name -> file offset for one library, and where its global variables are.
#[derive(Debug, Default)]
pub struct SymbolTable {
    functions: crate::fast::HashMap<String, Function>,
    variables: crate::fast::HashMap<String, Variable>,
    /// Where functions start, sorted: a probe is not moved onto another function's entry.
    starts: Vec<u64>,
    /// The file, for the first bytes of the functions looked up.
    data: Bytes,
}

/// A library file's bytes: mapped, or given.
#[derive(Debug)]
enum Bytes {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Default for Bytes {
    fn default() -> Self {
        Self::Owned(Vec::new())
    }
}

impl std::ops::Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Self::Mapped(m) => m,
            Self::Owned(v) => v,
        }
    }
}

/// A function's entry. Where it is probed (at its entry, or past a first instruction the
/// probe can pass over: [`crate::entry_insn::prologue_skip`]) is decoded from its first bytes
/// when it is looked up: a library has thousands of functions, a run probes dozens, and
/// decoding them all took a third of parsing libc while a library loaded mid-run waited.
#[derive(Debug, Clone, Copy)]
struct Function {
    offset: u64,
    address: u64,
    size: u64,
}

/// How many of a function's first bytes are decoded: the longest x86-64 instruction is 15.
const CODE_BYTES: usize = 16;

/// Where a function is probed.
struct ProbePoint {
    offset: u64,
    address: u64,
    /// Whether the kernel single-steps the instruction there (`None` without its bytes).
    stepped: Option<bool>,
    /// Bytes past the entry.
    skip: u8,
}

/// A global variable defined by the file, by link-time (virtual) address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variable {
    pub address: u64,
    /// The file's own GOT slot for it, where its code reaches it through one: the slot holds
    /// the address of the copy in use, which is an executable's copy when one was made.
    pub got: Option<u64>,
}

/// Bytes of an `Elf64_Sym`.
const ELF64_SYM_BYTES: u64 = 24;

/// x86-64 `R_X86_64_GLOB_DAT`: a GOT slot set to a symbol's address at load.
const R_X86_64_GLOB_DAT: u32 = 6;

impl SymbolTable {
    pub fn read(path: &Path) -> Result<Self, SymbolError> {
        let read = |source| SymbolError::Read {
            path: path.to_owned(),
            source,
        };
        let file = fs::File::open(path).map_err(read)?;
        // Mapped, not read (as libbpf reads the files it resolves uprobes in): libc is 2 MB,
        // of which strata looks at the symbol tables and the functions' first bytes, and a
        // library a process just loaded is parsed while its calls go unrecorded. Read into a
        // fresh buffer, a container's libc had its first call recorded 3.0 ms after its
        // first write(2) (median of 12); mapped, 1.85 ms.
        // SAFETY: a read-only private mapping, kept as long as the table (while strata
        // attaches to the library). A file cut shorter in place meanwhile would fault it
        // (SIGBUS); a loaded library is replaced by a new inode (install, package managers),
        // or its process would fault as well.
        let data = unsafe { memmap2::Mmap::map(&file) }.map_err(read)?;
        Self::parse_bytes(Bytes::Mapped(data)).map_err(|source| SymbolError::NotElf {
            path: path.to_owned(),
            source,
        })
    }

    pub fn parse(data: &[u8]) -> Result<Self, object::Error> {
        Self::parse_bytes(Bytes::Owned(data.to_vec()))
    }

    fn parse_bytes(data: Bytes) -> Result<Self, object::Error> {
        let file = object::File::parse(&*data)?;
        // Made at the size of the symbol tables: growing, they rehashed libc's thousands of
        // names several times.
        let symbols: usize = [".dynsym", ".symtab"]
            .iter()
            .filter_map(|name| file.section_by_name(name))
            .map(|s| usize::try_from(s.size() / ELF64_SYM_BYTES).unwrap_or(0))
            .sum();
        let mut functions =
            crate::fast::HashMap::with_capacity_and_hasher(symbols, Default::default());
        let mut variables = crate::fast::HashMap::default();
        let mut starts = Vec::with_capacity(symbols);
        for sym in file.dynamic_symbols().chain(file.symbols()) {
            if !sym.is_definition() {
                continue;
            }
            if sym.kind() == object::SymbolKind::Text {
                starts.push(sym.address());
            }
            let Ok(name) = sym.name() else { continue };
            let name = plain(name);
            match sym.kind() {
                object::SymbolKind::Data => {
                    variables.entry(name.to_string()).or_insert(Variable {
                        address: sym.address(),
                        got: None,
                    });
                }
                object::SymbolKind::Text => {
                    let Some(offset) = file_offset(&file, &sym) else {
                        continue;
                    };
                    functions.entry(name.to_string()).or_insert(Function {
                        offset,
                        address: sym.address(),
                        size: sym.size(),
                    });
                }
                _ => {}
            }
        }
        starts.sort_unstable();
        starts.dedup();
        for (slot, name) in slots(&file, R_X86_64_GLOB_DAT) {
            if let Some(v) = variables.get_mut(name) {
                v.got = Some(slot);
            }
        }
        drop(file);
        Ok(Self {
            functions,
            variables,
            starts,
            data,
        })
    }

    /// Where function `name` is probed: past a first instruction that would be
    /// single-stepped, where it can be.
    fn probe_point(&self, name: &str) -> Option<ProbePoint> {
        let f = self.functions.get(name)?;
        let code = cfg!(target_arch = "x86_64")
            .then(|| {
                usize::try_from(f.offset)
                    .ok()
                    .and_then(|o| self.data.get(o..))
            })
            .flatten()
            .filter(|c| !c.is_empty())
            .map(|c| &c[..c.len().min(CODE_BYTES)]);
        let skip = match code.map_or(0, crate::entry_insn::prologue_skip) {
            n if f
                .address
                .checked_add(n as u64)
                .is_none_or(|a| self.starts.binary_search(&a).is_ok()) =>
            {
                0
            }
            n => n,
        };
        Some(ProbePoint {
            offset: f.offset + skip as u64,
            address: f.address + skip as u64,
            stepped: code.map(|c| crate::entry_insn::single_stepped(&c[skip..])),
            skip: skip as u8,
        })
    }

    pub fn offset(&self, name: &str) -> Option<u64> {
        self.probe_point(name).map(|p| p.offset)
    }

    /// The link-time address where function `name` is probed.
    pub fn address(&self, name: &str) -> Option<u64> {
        self.probe_point(name).map(|p| p.address)
    }

    /// Whether a uprobe on `name` costs two traps per hit (see [`crate::entry_insn`]).
    pub fn single_stepped(&self, name: &str) -> Option<bool> {
        self.probe_point(name).and_then(|p| p.stepped)
    }

    /// Bytes past `name`'s entry where it is probed (see [`crate::entry_insn::prologue_skip`]).
    pub fn probe_skip(&self, name: &str) -> Option<u64> {
        self.probe_point(name).map(|p| u64::from(p.skip))
    }

    pub fn variable(&self, name: &str) -> Option<Variable> {
        self.variables.get(name).copied()
    }

    /// The file's bytes, as read.
    pub fn bytes(&self) -> &[u8] {
        &self.data
    }

    /// A defined function by plain name: (address, size, file offset); the first definition,
    /// in `.dynsym` and then `.symtab`.
    fn text(&self, name: &str) -> Option<(u64, u64, u64)> {
        self.functions
            .get(name)
            .map(|f| (f.address, f.size, f.offset))
    }
}

/// A symbol's name without its version (`H5Dwrite@@HDF5_MPI_1.8.7`: `H5Dwrite`).
fn plain(name: &str) -> &str {
    match name.bytes().position(|b| b == b'@') {
        Some(i) => &name[..i],
        None => name,
    }
}

/// x86-64 `R_X86_64_JUMP_SLOT`: a PLT entry's GOT slot, set to a function's address.
const R_X86_64_JUMP_SLOT: u32 = 7;

/// Where symbol `sym`'s bytes are in the file.
fn file_offset(file: &object::File, sym: &object::Symbol) -> Option<u64> {
    let section = file.section_by_index(sym.section_index()?).ok()?;
    let (sec_off, _) = section.file_range()?;
    sym.address()
        .checked_sub(section.address())?
        .checked_add(sec_off)
}

/// The GOT slots the dynamic relocations of type `r_type` fill, with the plain name of the
/// symbol each is set to.
fn slots<'a>(file: &'a object::File, r_type: u32) -> impl Iterator<Item = (u64, &'a str)> {
    file.dynamic_relocations()
        .into_iter()
        .flatten()
        .filter_map(move |(slot, reloc)| {
            let (object::RelocationFlags::Elf { r_type: t }, object::RelocationTarget::Symbol(i)) =
                (reloc.flags(), reloc.target())
            else {
                return None;
            };
            let name = file
                .dynamic_symbol_table()?
                .symbol_by_index(i)
                .ok()?
                .name()
                .ok()?;
            (t == r_type).then(|| (slot, plain(name)))
        })
}

/// Where `callee`, a function whose whole body is one load from its first argument (see
/// [`one_load`]), is called in the functions `callers`: the displacement, and the file
/// offsets of the instructions that reach it (see [`call_sites`]). None where the body is
/// another, or no call was found.
pub fn load_calls(
    table: &SymbolTable,
    callee: &str,
    callers: &[String],
) -> Option<(u32, Vec<u64>)> {
    let (_, _, off) = table.text(callee)?;
    let body = table.bytes().get(usize::try_from(off).ok()?..)?;
    let disp = one_load(body)?;
    Some((disp, call_sites(table, callee, callers)?))
}

/// The virtual address of file offset `off` in the ELF file `data`: where the segment that
/// holds it is loaded (None: in no loaded segment).
pub fn address_of_offset(data: &[u8], off: u64) -> Option<u64> {
    use object::{Object as _, ObjectSegment as _};
    let file = object::File::parse(data).ok()?;
    file.segments().find_map(|seg| {
        let (start, size) = seg.file_range();
        (start..start + size)
            .contains(&off)
            .then(|| seg.address() + (off - start))
    })
}

/// Where `callee` is called or tail-called in the functions `callers`, or anywhere in the
/// file's code for `["*"]` (a stripped library, whose functions have no names): the file
/// offsets of the `call rel32`, `jmp rel32` and `jcc rel32` that reach it directly or through
/// its PLT entry, instructions the kernel emulates at a probe. None where none was found, or
/// where a 2-byte jump could reach it: its 8-bit displacement says too little to tell a jump
/// from any two bytes, so such a call might go unprobed.
pub fn call_sites(table: &SymbolTable, callee: &str, callers: &[String]) -> Option<Vec<u64>> {
    let file = object::File::parse(table.bytes()).ok()?;
    let (address, _, _) = table.text(callee)?;
    let mut targets = vec![address];
    targets.extend(plt_entries(&file, callee));
    let mut found = Vec::new();
    for (start, code, off) in code_of(&file, table, callers) {
        let to = |i: usize, len: usize, rel: i64| {
            targets.contains(
                &start
                    .wrapping_add((i + len) as u64)
                    .wrapping_add_signed(rel),
            )
        };
        for i in 0..code.len() {
            let rel32 = |at: usize| {
                let d = code.get(at..at + 4)?;
                Some(i64::from(i32::from_le_bytes([d[0], d[1], d[2], d[3]])))
            };
            match code[i..] {
                [0xe8 | 0xe9, ..] if rel32(i + 1).is_some_and(|r| to(i, 5, r)) => {
                    found.push(off + i as u64)
                }
                [0x0f, 0x80..=0x8f, ..] if rel32(i + 2).is_some_and(|r| to(i, 6, r)) => {
                    found.push(off + i as u64)
                }
                [0xeb | 0x70..=0x7f, r, ..] if to(i, 2, i64::from(r as i8)) => return None,
                _ => {}
            }
        }
    }
    (!found.is_empty()).then_some(found)
}

/// The code of the functions `callers`, or of every code section but the PLT's for `["*"]`:
/// (address, bytes, file offset) of each.
fn code_of<'a>(
    file: &object::File,
    table: &'a SymbolTable,
    callers: &[String],
) -> Vec<(u64, &'a [u8], u64)> {
    let ranges: Vec<(u64, u64, u64)> = if callers.iter().any(|c| c == "*") {
        use object::SectionKind;
        file.sections()
            .filter(|s| s.kind() == SectionKind::Text)
            .filter(|s| !s.name().is_ok_and(|n| n.starts_with(".plt")))
            .filter_map(|s| Some((s.address(), s.size(), s.file_range()?.0)))
            .collect()
    } else {
        callers.iter().filter_map(|c| table.text(c)).collect()
    };
    ranges
        .into_iter()
        .filter_map(|(start, size, off)| {
            let o = usize::try_from(off).ok()?;
            let code = table
                .bytes()
                .get(o..o.checked_add(usize::try_from(size).ok()?)?)?;
            Some((start, code, off))
        })
        .collect()
}

/// The displacement of the load from its first argument that a function's body comes down
/// to, in the two shapes compilers give such accessors:
/// - `mov disp(%rdi),%rax; ret` (HDF5 1.10's `H5S_get_select_npoints`);
/// - the same load behind HDF5's check that its package is initialised, one byte tested
///   through a GOT slot (`H5S_get_simple_extent_npoints`, 1.10 and 2.0): `push %rbp; push
///   %rbx; sub $N,%rsp; mov slot(%rip),%rbx; cmpb $0,(%rbx)`, then `jne` to the load or `je`
///   past it, the load followed by `add $N,%rsp; pop %rbx; pop %rbp; ret`. The package is
///   initialised wherever the callers named run (they work on its objects), so their calls
///   get the load.
fn one_load(body: &[u8]) -> Option<u32> {
    // The load's displacement and length, from a non-negative displacement (a negative one
    // is not a field of the object the argument points to).
    let load = |code: &[u8]| match code {
        [0x48, 0x8b, 0x87, a, b, c, d, ..] => {
            let disp = u32::from_le_bytes([*a, *b, *c, *d]);
            (disp < 0x8000_0000).then_some((disp, 7))
        }
        [0x48, 0x8b, 0x47, d, ..] => (*d < 0x80).then_some((u32::from(*d), 4)),
        _ => None,
    };
    if let Some((disp, len)) = load(body) {
        return (body.get(len) == Some(&0xc3)).then_some(disp);
    }
    let [
        0x55,
        0x53,
        0x48,
        0x83,
        0xec,
        frame,
        0x48,
        0x8b,
        0x1d,
        _,
        _,
        _,
        _,
        0x80,
        0x3b,
        0x00,
        jump,
        rel,
        ..,
    ] = body
    else {
        return None;
    };
    let at = match jump {
        0x75 if *rel < 0x80 => 18 + usize::from(*rel),
        0x74 => 18,
        _ => return None,
    };
    let (disp, len) = load(body.get(at..)?)?;
    let epilogue = [0x48, 0x83, 0xc4, *frame, 0x5b, 0x5d, 0xc3];
    (body.get(at + len..at + len + epilogue.len())? == epilogue).then_some(disp)
}

/// Addresses of the PLT entries that jump to `name` (`jmp *slot(%rip)` through its GOT
/// slot), in `.plt` and `.plt.sec` (where entries open with `endbr64`, and `bnd`).
fn plt_entries(file: &object::File, name: &str) -> Vec<u64> {
    let slots: Vec<u64> = slots(file, R_X86_64_JUMP_SLOT)
        .filter(|&(_, n)| n == name)
        .map(|(slot, _)| slot)
        .collect();
    let mut entries = Vec::new();
    for section in file.sections() {
        if !matches!(section.name(), Ok(".plt" | ".plt.sec")) {
            continue;
        }
        let Ok(code) = section.data() else { continue };
        for (k, entry) in code.chunks_exact(16).enumerate() {
            let at = section.address() + 16 * k as u64;
            for i in [0, 4, 5] {
                if let Some([0xff, 0x25, d @ ..]) = entry.get(i..i + 6) {
                    let disp = i64::from(i32::from_le_bytes([d[0], d[1], d[2], d[3]]));
                    if slots.contains(&(at + i as u64 + 6).wrapping_add_signed(disp)) {
                        entries.push(at);
                    }
                }
            }
        }
    }
    entries
}

/// How a uprobe on `symbol` in a library's `table` (None: the library was not found) will
/// be hit, for `strata probes`: `emulated` (one trap; `+N`: probed N bytes past the entry),
/// `stepped` (two traps), `missing` or `no library`.
pub fn describe_entry(table: Option<&SymbolTable>, symbol: &str) -> String {
    let Some(table) = table else {
        return "no library".into();
    };
    match (table.single_stepped(symbol), table.probe_skip(symbol)) {
        (_, None) => "missing".into(),
        (Some(true), _) => "stepped".into(),
        (Some(false), Some(0)) => "emulated".into(),
        (Some(false), Some(n)) => format!("emulated +{n}"),
        (None, _) => "-".into(),
    }
}

const LIB_DIRS: &[&str] = &[
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
    "/usr/local/lib",
];

/// Resolves a soname or path to a file, through the loader's cache and then the standard dirs.
pub fn find_library(name: &str) -> Result<PathBuf, SymbolError> {
    find_library_in(&ld_cache(), name)
}

/// Resolves a soname or path to a file, through the loader's cache (from [`ld_cache`], read
/// once for all the libraries looked up) and then the standard dirs.
pub fn find_library_in(
    cache: &HashMap<String, PathBuf>,
    name: &str,
) -> Result<PathBuf, SymbolError> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        return if p.exists() {
            Ok(p)
        } else {
            Err(SymbolError::LibraryNotFound(name.to_string()))
        };
    }
    if let Some(p) = cache.get(name) {
        return Ok(p.clone());
    }
    LIB_DIRS
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.exists())
        .ok_or_else(|| SymbolError::LibraryNotFound(name.to_string()))
}

/// The loader's cache (`/etc/ld.so.cache`) as soname -> the path the loader takes for it;
/// empty when it cannot be read or is of no layout strata knows (then the standard dirs are
/// searched alone).
pub fn ld_cache() -> HashMap<String, PathBuf> {
    let entries = fs::read(crate::ldcache::PATH)
        .ok()
        .and_then(|data| crate::ldcache::entries(&data));
    if entries.is_none() {
        log::debug!(
            "cannot read the loader's cache {}: libraries are looked for in {} alone",
            crate::ldcache::PATH,
            LIB_DIRS.join(", ")
        );
    }
    crate::ldcache::resolve(entries.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    /// The x86-64 entries of `ldconfig -p`'s listing, in its order.
    fn listed(text: &str) -> Vec<(String, PathBuf)> {
        text.lines()
            .filter_map(|line| {
                let (lhs, path) = line.trim().split_once(" => ")?;
                let soname = lhs.split_whitespace().next()?;
                lhs.contains("x86-64")
                    .then(|| (soname.to_string(), PathBuf::from(path.trim())))
            })
            .collect()
    }

    /// glibc's own ldconfig writes caches of each layout from this machine's libraries and
    /// lists them: strata reads the same entries in the same order from the bytes.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_loader_cache_of_each_layout_reads_as_ldconfig_lists_it() {
        let dir = std::env::temp_dir().join(format!("strata-ldcache-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let mut layouts = vec![(None, PathBuf::from(crate::ldcache::PATH))];
        for format in ["new", "compat", "old"] {
            let file = dir.join(format!("{format}.cache"));
            // -X: leave the libraries' links alone.
            let made = Command::new("ldconfig")
                .args(["-X", "-c", format, "-C"])
                .arg(&file)
                .status()
                .expect("ldconfig (libc-bin) runs");
            assert!(made.success(), "ldconfig -c {format} failed");
            layouts.push((Some(format), file));
        }
        for (format, file) in layouts {
            let listing = Command::new("ldconfig")
                .arg("-p")
                .arg("-C")
                .arg(&file)
                .output()
                .unwrap();
            let want = listed(&String::from_utf8_lossy(&listing.stdout));
            assert!(
                want.len() > 50,
                "{format:?}: ldconfig lists {} libraries",
                want.len()
            );
            let data = std::fs::read(&file).unwrap();
            let got: Vec<_> = crate::ldcache::entries(&data)
                .expect("a layout strata reads")
                .into_iter()
                .map(|e| (e.soname, e.path))
                .collect();
            // The first difference, not two lists of hundreds.
            let first = (0..got.len().max(want.len())).find(|&i| got.get(i) != want.get(i));
            assert_eq!(
                first.map(|i| (i, got.get(i), want.get(i))),
                None,
                "{format:?} ({}): at entry i, strata's and ldconfig's ({} and {} entries)",
                file.display(),
                got.len(),
                want.len()
            );
        }
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn libc_symbols_have_offsets() {
        let libc = find_library("libc.so.6").unwrap();
        let t = SymbolTable::read(&libc).unwrap();
        let fopen = t.offset("fopen").unwrap();
        assert!(fopen > 0);
        // glibc exports fopen64 as an alias at the same address.
        assert_eq!(t.offset("fopen64"), Some(fopen));
        assert!(t.offset("no_such_function_here").is_none());
    }

    /// glibc reaches `stderr` through its GOT (an executable may hold the copy in use): the
    /// slot and the variable's own address agree with binutils' reading of the file.
    #[test]
    fn variables_and_their_got_slots_agree_with_readelf() {
        let libc = find_library("libc.so.6").unwrap();
        let t = SymbolTable::read(&libc).unwrap();
        let relocs = Command::new("readelf").arg("-rW").arg(&libc).output();
        let relocs = String::from_utf8(relocs.expect("readelf (binutils)").stdout).unwrap();
        let line = relocs
            .lines()
            .find(|l| l.contains("R_X86_64_GLOB_DAT") && l.contains(" stderr@"))
            .expect("a GLOB_DAT relocation of stderr in libc");
        let hex = |i: usize| u64::from_str_radix(line.split_whitespace().nth(i).unwrap(), 16);
        let var = t.variable("stderr").expect("stderr is a variable of libc");
        assert_eq!(var.got, Some(hex(0).unwrap()), "{line}");
        assert_eq!(var.address, hex(3).unwrap(), "{line}");
        assert!(
            t.variable("fopen").is_none(),
            "a function is not a variable"
        );
    }

    /// The shared object gcc builds from assembly `asm` with linker `flags`, as bytes (`name`
    /// keeps tests' scratch directories apart).
    fn shared_object(name: &str, asm: &str, flags: &[&str]) -> Vec<u8> {
        let dir = std::env::temp_dir().join(format!("strata-{name}-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let (src, so) = (dir.join("f.s"), dir.join("f.so"));
        fs::write(&src, asm).unwrap();
        let gcc = Command::new("gcc")
            .args(["-shared", "-nostdlib", "-o"])
            .arg(&so)
            .arg(&src)
            .args(flags)
            .status()
            .expect("gcc");
        assert!(gcc.success());
        let data = fs::read(&so).unwrap();
        fs::remove_dir_all(&dir).unwrap();
        data
    }

    /// A probe passes over a wrapper's argument set-up to its `jmp`, and stays at the entry of
    /// a function whose second instruction is where another one starts (built by gcc).
    #[test]
    fn probes_move_past_a_dead_write_but_not_onto_another_function() {
        let data = shared_object(
            "skip",
            ".text\n.globl wrapper, head, body, tail\n\
             .type wrapper, @function\n.type head, @function\n\
             .type body, @function\n.type tail, @function\n\
             wrapper: mov $6, %r9d\n jmp tail\n\
             head: mov $1, %eax\n\
             body: push %rbx\n pop %rbx\n ret\n\
             tail: ret\n",
            &[],
        );
        let file = object::File::parse(&*data).unwrap();
        let entry = |name: &str| {
            file.dynamic_symbols()
                .find(|s| s.name() == Ok(name))
                .map(|s| s.address())
                .unwrap()
        };
        let t = SymbolTable::parse(&data).unwrap();
        // mov $6,%r9d is 6 bytes; the jmp is emulated.
        assert_eq!(t.address("wrapper"), Some(entry("wrapper") + 6));
        assert_eq!(t.single_stepped("wrapper"), Some(false));
        assert_eq!(
            t.offset("wrapper").unwrap() - t.offset("tail").unwrap(),
            t.address("wrapper").unwrap() - entry("tail")
        );
        // head + 5 is body's entry: head's probe stays where it is, single-stepped.
        assert_eq!(entry("head") + 5, entry("body"));
        assert_eq!(t.address("head"), Some(entry("head")));
        assert_eq!(t.single_stepped("head"), Some(true));
        assert_eq!(t.address("body"), Some(entry("body")));
        assert_eq!(describe_entry(Some(&t), "wrapper"), "emulated +6");
        assert_eq!(describe_entry(Some(&t), "head"), "stepped");
        assert_eq!(describe_entry(Some(&t), "body"), "emulated");
        assert_eq!(describe_entry(Some(&t), "nowhere"), "missing");
        assert_eq!(describe_entry(None, "body"), "no library");
    }

    /// A function that is one load is found at its calls: through its PLT entry (classic, and
    /// the IBT layout with `endbr64`) and directly, only in the callers named.
    #[test]
    fn calls_of_a_one_load_function_are_found_through_the_plt_and_directly() {
        let asm = ".text\n.globl npoints, writer, reader, other\n\
             .type npoints, @function\nnpoints: mov 0x160(%rdi), %rax\n ret\n.size npoints, .-npoints\n\
             .set npoints_here, npoints\n\
             .type writer, @function\nwriter: push %rbx\n call npoints@PLT\n call npoints@PLT\n pop %rbx\n ret\n.size writer, .-writer\n\
             .type reader, @function\nreader: sub $8, %rsp\n call npoints_here\n add $8, %rsp\n ret\n.size reader, .-reader\n\
             .type other, @function\nother: call npoints@PLT\n ret\n.size other, .-other\n";
        for flags in [&[][..], &["-Wl,-z,now", "-Wl,-z,ibtplt"][..]] {
            let data = shared_object("calls", asm, flags);
            let t = SymbolTable::parse(&data).unwrap();
            let at = |name: &str, plus: u64| {
                let off = t.offset(name).unwrap() - t.probe_skip(name).unwrap();
                off + plus
            };
            let callers = ["writer".to_string(), "reader".to_string()];
            let (disp, sites) = load_calls(&t, "npoints", &callers).expect("calls found");
            assert_eq!(disp, 0x160);
            // push %rbx is 1 byte, a call 5; sub $8,%rsp 4.
            assert_eq!(
                sites,
                [at("writer", 1), at("writer", 6), at("reader", 4)],
                "{flags:?}"
            );
            // Not a one-load body; no caller that calls it.
            assert_eq!(load_calls(&t, "writer", &callers), None);
            assert_eq!(
                load_calls(&t, "npoints", &["no_such_function".to_string()]),
                None
            );
        }
    }

    /// A one-load function behind HDF5's package guard is found at its calls too, whether the
    /// guard jumps to the load (1.10) or past it (2.0); with anything between the load and
    /// the return, it is not a load.
    #[test]
    fn calls_of_a_guarded_load_are_found() {
        let guard =
            "push %rbp\n push %rbx\n sub $0x18, %rsp\n mov 0x100(%rip), %rbx\n cmpb $0, (%rbx)\n";
        let back = "add $0x18, %rsp\n pop %rbx\n pop %rbp\n ret\n";
        let data = shared_object(
            "guard",
            &format!(
                ".text\n.globl jumps_to, jumps_past, busy, reader\n\
                 .type jumps_to, @function\njumps_to: {guard} jne 1f\n mov $-1, %rax\n jmp 2f\n\
                 1: mov 0x30(%rdi), %rax\n 2: {back}.size jumps_to, .-jumps_to\n\
                 .type jumps_past, @function\njumps_past: {guard} je 1f\n mov 0x130(%rdi), %rax\n\
                 2: {back} 1: mov $-1, %rax\n jmp 2b\n.size jumps_past, .-jumps_past\n\
                 .type busy, @function\nbusy: {guard} jne 1f\n mov $-1, %rax\n jmp 2f\n\
                 1: mov 0x30(%rdi), %rax\n inc %rax\n 2: {back}.size busy, .-busy\n\
                 .type reader, @function\nreader: call jumps_to@PLT\n call jumps_past@PLT\n\
                 call busy@PLT\n ret\n.size reader, .-reader\n"
            ),
            &[],
        );
        let t = SymbolTable::parse(&data).unwrap();
        let reader = t.offset("reader").unwrap() - t.probe_skip("reader").unwrap();
        let callers = ["reader".to_string()];
        assert_eq!(
            load_calls(&t, "jumps_to", &callers),
            Some((0x30, vec![reader]))
        );
        assert_eq!(
            load_calls(&t, "jumps_past", &callers),
            Some((0x130, vec![reader + 5]))
        );
        assert_eq!(load_calls(&t, "busy", &callers), None);
    }

    /// Calls and tail calls of a function are found anywhere in a stripped library's code,
    /// direct or through its PLT entry; named callers limit the search to theirs. Where a
    /// 2-byte jump could reach it, none are given.
    #[test]
    fn calls_anywhere_in_a_stripped_library_are_found() {
        let asm = |near: &str| {
            format!(
                ".text\n.globl hook, b\n.type hook, @function\n\
                 hook: .globl hook_here\n.hidden hook_here\nhook_here: ret\n.size hook, 1\n\
                 .type n, @function\nn: {near}\n ret\n.size n, .-n\n.skip 200, 0x90\n\
                 .type a, @function\na: mov $0xe8, %eax\n call hook_here\n ret\n.size a, .-a\n\
                 .type b, @function\nb: push %rbx\n pop %rbx\n jmp hook_here\n.size b, .-b\n\
                 .type c, @function\nc: call hook@PLT\n test %eax, %eax\n jne hook_here\n ret\n.size c, .-c\n"
            )
        };
        let named = shared_object("anywhere", &asm("nop"), &[]);
        let file = object::File::parse(&*named).unwrap();
        let at = |name: &str| {
            let sym = file.symbols().find(|s| s.name() == Ok(name)).unwrap();
            file_offset(&file, &sym).unwrap()
        };
        let want = vec![at("a") + 5, at("b") + 2, at("c"), at("c") + 7];
        let all = ["*".to_string()];
        let named = SymbolTable::parse(&named).unwrap();
        assert_eq!(call_sites(&named, "hook", &all), Some(want.clone()));
        assert_eq!(
            call_sites(&named, "hook", &["b".to_string()]),
            Some(vec![at("b") + 2])
        );
        let stripped = shared_object("anywhere-stripped", &asm("nop"), &["-s"]);
        assert!(
            object::File::parse(&*stripped)
                .unwrap()
                .symbols()
                .next()
                .is_none()
        );
        let stripped = SymbolTable::parse(&stripped).unwrap();
        assert_eq!(call_sites(&stripped, "hook", &all), Some(want));
        assert_eq!(call_sites(&stripped, "b", &all), None);
        for near in ["jmp hook_here", "je hook_here"] {
            let short =
                SymbolTable::parse(&shared_object("anywhere-short", &asm(near), &["-s"])).unwrap();
            assert_eq!(call_sites(&short, "hook", &all), None, "{near}");
        }
    }

    #[test]
    fn not_elf_is_an_error() {
        let dir = std::env::temp_dir().join(format!("strata-sym-{}", std::process::id()));
        fs::write(&dir, b"not an elf").unwrap();
        let e = SymbolTable::read(&dir).unwrap_err();
        fs::remove_file(&dir).unwrap();
        assert!(matches!(e, SymbolError::NotElf { .. }), "{e}");
        assert!(matches!(
            find_library("libdoesnotexist.so.9"),
            Err(SymbolError::LibraryNotFound(_))
        ));
    }
}
