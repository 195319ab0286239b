//! Finding probed libraries and the file offsets of their functions.
//!
//! HPC libraries from distributions are stripped of `.symtab`, so both symbol tables are read;
//! versioned names (`H5Dwrite@@HDF5_MPI_1.8.7`) match their plain name. Offsets are file
//! offsets, which is what the kernel's uprobe API takes.
use std::{
    collections::{HashMap, HashSet},
    fs,
    path::{Path, PathBuf},
    process::Command,
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
    functions: HashMap<String, Function>,
    variables: HashMap<String, Variable>,
}

/// Where a function is probed: its entry, or past a first instruction the probe can pass over
/// ([`crate::entry_insn::prologue_skip`]).
#[derive(Debug, Clone, Copy)]
struct Function {
    offset: u64,
    address: u64,
    /// Whether the kernel single-steps its first instruction (`None` off x86-64 or past the
    /// end of the file).
    stepped: Option<bool>,
    /// Bytes past the entry where it is probed.
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

/// x86-64 `R_X86_64_GLOB_DAT`: a GOT slot set to a symbol's address at load.
const R_X86_64_GLOB_DAT: u32 = 6;

impl SymbolTable {
    pub fn read(path: &Path) -> Result<Self, SymbolError> {
        let data = fs::read(path).map_err(|source| SymbolError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&data).map_err(|source| SymbolError::NotElf {
            path: path.to_owned(),
            source,
        })
    }

    pub fn parse(data: &[u8]) -> Result<Self, object::Error> {
        let file = object::File::parse(data)?;
        let mut functions = HashMap::new();
        let mut variables = HashMap::new();
        // Where functions start: a probe is not moved onto another function's entry.
        let starts: HashSet<u64> = file
            .dynamic_symbols()
            .chain(file.symbols())
            .filter(|s| s.is_definition() && s.kind() == object::SymbolKind::Text)
            .map(|s| s.address())
            .collect();
        for sym in file.dynamic_symbols().chain(file.symbols()) {
            if !sym.is_definition() {
                continue;
            }
            let Ok(name) = sym.name() else { continue };
            let name = name.split('@').next().unwrap_or(name);
            if sym.kind() == object::SymbolKind::Data {
                variables.entry(name.to_string()).or_insert(Variable {
                    address: sym.address(),
                    got: None,
                });
                continue;
            }
            if sym.kind() != object::SymbolKind::Text {
                continue;
            }
            let Some(section) = sym
                .section_index()
                .and_then(|i| file.section_by_index(i).ok())
            else {
                continue;
            };
            let Some((sec_off, _)) = section.file_range() else {
                continue;
            };
            let Some(off) = sym
                .address()
                .checked_sub(section.address())
                .and_then(|rel| rel.checked_add(sec_off))
            else {
                continue;
            };
            let code = cfg!(target_arch = "x86_64")
                .then(|| usize::try_from(off).ok().and_then(|o| data.get(o..)))
                .flatten()
                .map(|code| &code[..code.len().min(16)]);
            // Probed past a first instruction that would be single-stepped, where it can be.
            let skip = match code.map_or(0, crate::entry_insn::prologue_skip) {
                n if sym
                    .address()
                    .checked_add(n as u64)
                    .is_none_or(|a| starts.contains(&a)) =>
                {
                    0
                }
                n => n,
            };
            let stepped = code.map(|c| crate::entry_insn::single_stepped(&c[skip..]));
            functions.entry(name.to_string()).or_insert(Function {
                offset: off + skip as u64,
                address: sym.address() + skip as u64,
                stepped,
                skip: skip as u8,
            });
        }
        for (slot, reloc) in file.dynamic_relocations().into_iter().flatten() {
            let (object::RelocationFlags::Elf { r_type }, object::RelocationTarget::Symbol(i)) =
                (reloc.flags(), reloc.target())
            else {
                continue;
            };
            if r_type != R_X86_64_GLOB_DAT {
                continue;
            }
            let Some(name) = file
                .dynamic_symbol_table()
                .and_then(|t| t.symbol_by_index(i).ok())
                .and_then(|s| s.name().ok())
            else {
                continue;
            };
            if let Some(v) = variables.get_mut(name.split('@').next().unwrap_or(name)) {
                v.got = Some(slot);
            }
        }
        Ok(Self {
            functions,
            variables,
        })
    }

    pub fn offset(&self, name: &str) -> Option<u64> {
        self.functions.get(name).map(|f| f.offset)
    }

    /// The link-time address where function `name` is probed.
    pub fn address(&self, name: &str) -> Option<u64> {
        self.functions.get(name).map(|f| f.address)
    }

    /// Whether a uprobe on `name` costs two traps per hit (see [`crate::entry_insn`]).
    pub fn single_stepped(&self, name: &str) -> Option<bool> {
        self.functions.get(name).and_then(|f| f.stepped)
    }

    /// Bytes past `name`'s entry where it is probed (see [`crate::entry_insn::prologue_skip`]).
    pub fn probe_skip(&self, name: &str) -> Option<u64> {
        self.functions.get(name).map(|f| u64::from(f.skip))
    }

    pub fn variable(&self, name: &str) -> Option<Variable> {
        self.variables.get(name).copied()
    }
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

/// Resolves a soname or path to a file, through `ldconfig -p` and then the standard dirs.
pub fn find_library(name: &str) -> Result<PathBuf, SymbolError> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        return if p.exists() {
            Ok(p)
        } else {
            Err(SymbolError::LibraryNotFound(name.to_string()))
        };
    }
    if let Ok(out) = Command::new("ldconfig").arg("-p").output() {
        let text = String::from_utf8_lossy(&out.stdout);
        if let Some(p) = parse_ldconfig(&text, name) {
            return Ok(p);
        }
    }
    LIB_DIRS
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.exists())
        .ok_or_else(|| SymbolError::LibraryNotFound(name.to_string()))
}

/// Picks `name`'s x86-64 entry from `ldconfig -p` output.
fn parse_ldconfig(text: &str, name: &str) -> Option<PathBuf> {
    ldconfig_entries(text).find_map(|(soname, path)| (soname == name).then_some(path))
}

/// The x86-64 entries of `ldconfig -p` output, in its order (the loader's preference).
fn ldconfig_entries(text: &str) -> impl Iterator<Item = (&str, PathBuf)> {
    text.lines().filter_map(|line| {
        let (lhs, path) = line.trim().split_once(" => ")?;
        let soname = lhs.split_whitespace().next()?;
        (lhs.contains("x86-64") || !lhs.contains("libc6,"))
            .then(|| (soname, PathBuf::from(path.trim())))
    })
}

/// The loader's cache (`/etc/ld.so.cache`) as soname -> path; empty when it cannot be read.
pub fn ld_cache() -> HashMap<String, PathBuf> {
    let Ok(out) = Command::new("ldconfig").arg("-p").output() else {
        return HashMap::new();
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut map = HashMap::new();
    for (soname, path) in ldconfig_entries(&text) {
        map.entry(soname.to_string()).or_insert(path);
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldconfig_line() {
        let text = "\t1024 libs found in cache `/etc/ld.so.cache'\n\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6\n\tlibc.so.6 (libc6) => /lib32/libc.so.6\n";
        assert_eq!(
            parse_ldconfig(text, "libc.so.6").unwrap(),
            Path::new("/lib/x86_64-linux-gnu/libc.so.6")
        );
        assert!(parse_ldconfig(text, "libm.so.6").is_none());
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

    /// A probe passes over a wrapper's argument set-up to its `jmp`, and stays at the entry of
    /// a function whose second instruction is where another one starts (built by gcc).
    #[test]
    fn probes_move_past_a_dead_write_but_not_onto_another_function() {
        let dir = std::env::temp_dir().join(format!("strata-skip-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let asm = dir.join("f.s");
        fs::write(
            &asm,
            ".text\n.globl wrapper, head, body, tail\n\
             .type wrapper, @function\n.type head, @function\n\
             .type body, @function\n.type tail, @function\n\
             wrapper: mov $6, %r9d\n jmp tail\n\
             head: mov $1, %eax\n\
             body: push %rbx\n pop %rbx\n ret\n\
             tail: ret\n",
        )
        .unwrap();
        let so = dir.join("f.so");
        let gcc = Command::new("gcc")
            .args(["-shared", "-nostdlib", "-o"])
            .arg(&so)
            .arg(&asm)
            .status()
            .expect("gcc");
        assert!(gcc.success());
        let data = fs::read(&so).unwrap();
        fs::remove_dir_all(&dir).unwrap();
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
