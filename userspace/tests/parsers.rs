//! Property tests of every parser that reads data from outside strata: probe files, tracepoint
//! format files, mountinfo lines, Lustre layout xattrs, ELF symbol tables and dynamic sections,
//! the loader's cache and ring-buffer records. Whatever the input, each returns a value or an error, and never
//! panics. Failing cases proptest finds are kept in `tests/parsers.proptest-regressions` and
//! replayed first.
use proptest::prelude::*;
use strata::{events, ldcache, libraries, lustre, probes, symbols::SymbolTable, tracefs};

const FORMAT: &str = "name: block_rq_issue\nID: 1234\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n\
\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n\
\tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;\n\
\tfield:__data_loc char[] cmd;\toffset:60;\tsize:4;\tsigned:0;\n\n\
print fmt: \"%d\", REC->dev\n";

const MOUNTINFO: &str =
    "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue";

/// This kernel's BTF, read once, to resolve io_uring request fields against.
static KERNEL_BTF: std::sync::LazyLock<Option<strata::btf::KernelBtf>> =
    std::sync::LazyLock::new(|| strata::btf::kernel().ok());

/// Lines of `text` with some removed or cut short.
fn mangled(text: &'static str) -> impl Strategy<Value = String> {
    let n = text.lines().count();
    (prop::collection::vec(any::<bool>(), n), 0usize..200).prop_map(move |(keep, cut)| {
        let mut s: String = text
            .lines()
            .zip(keep)
            .filter(|(_, k)| *k)
            .map(|(l, _)| format!("{l}\n"))
            .collect();
        let at = cut.min(s.len());
        if s.is_char_boundary(at) && cut < 100 {
            s.truncate(at);
        }
        s
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn probe_files_never_panic(text in "\\PC{0,400}") {
        let _ = probes::parse(&text, "fuzz.toml");
    }

    #[test]
    fn probe_entries_with_any_values_never_panic(
        layer in "[a-z]{0,8}|posix|hdf5|block|vfs",
        key in "syscall|library|kernel|kfunc|symbol",
        target in "[a-z_:/.0-9]{0,20}",
        op in "[a-z]{0,6}|read|write|meta",
        args in prop::collection::vec("[a-z_0-9]{0,10}|fd|kfile|kpos|dims|rank|size", 0..9),
        attach in prop::collection::vec("[a-z_]{0,10}:[a-z_/]{0,20}", 0..3),
        ret in "[a-z_]{0,8}|bytes|status",
    ) {
        let quoted = |v: &[String]| v.iter().map(|a| format!("{a:?}")).collect::<Vec<_>>().join(",");
        let text = format!(
            "[[probe]]\nlayer = {layer:?}\n{key} = {target:?}\nop = {op:?}\nargs = [{}]\nattach = [{}]\nret = {ret:?}\n",
            quoted(&args),
            quoted(&attach),
        );
        if let Err(e) = probes::parse(&text, "fuzz.toml") {
            // Errors point into the file.
            prop_assert!(e.line >= 1 && e.line <= 8, "{e}");
        }
    }

    #[test]
    fn io_uring_request_fields_never_panic(
        (args, fields) in (0usize..7).prop_flat_map(|n| (
            prop::collection::vec("fd|dirfd|path|str|kfile|slot|offset|size|int|[a-z]{0,5}", n),
            prop::collection::vec(
                "[a-z_]{1,8}(\\.[a-z_]{1,8}){1,3}(->[a-z_]{1,8}){0,2}|io_kiocb\\.(file|cqe\\.fd|opcode)|io_open\\.filename->name|[ -~]{0,20}",
                n,
            ),
        )),
    ) {
        let quoted = |v: &[String]| v.iter().map(|a| format!("{a:?}")).collect::<Vec<_>>().join(",");
        let text = format!(
            "[[probe]]\nlayer = \"uring\"\nrequest = \"IORING_OP_X\"\nopcode = 7\nop = \"meta\"\n\
             args = [{}]\nfields = [{}]\nret = \"status\"\n",
            quoted(&args),
            quoted(&fields),
        );
        match probes::parse(&text, "fuzz.toml") {
            Ok(p) => {
                let probes::Target::Request { fields: parsed, .. } = &p[0].target else {
                    panic!("not a request: {:?}", p[0].target);
                };
                prop_assert_eq!(parsed.len(), p[0].args.len());
                // Each path reads back as written, and resolves (or not) without a panic.
                for (f, text) in parsed.iter().zip(&fields) {
                    prop_assert_eq!(&f.to_string(), text);
                }
                if let Some(btf) = &*KERNEL_BTF {
                    let _ = strata::uring::uring_op(btf, &p[0], parsed);
                }
            }
            Err(e) => prop_assert!(e.line >= 1 && e.line <= 8, "{e}"),
        }
    }

    #[test]
    fn only_tables_with_any_entries_never_panic(
        kind in "[a-z_]{0,8}|cmd|fd|flags",
        entries in prop::collection::vec(("[A-Za-z_]{1,8}", any::<i64>()), 0..6),
        string_value in any::<bool>(),
    ) {
        let mut text = format!(
            "[[probe]]\nlayer = \"posix\"\nsyscall = \"ioctl\"\nop = \"meta\"\n\
             args = [\"fd\", \"cmd\", \"ptr\"]\nret = \"status\"\n[probe.only.{kind}]\n"
        );
        for (name, v) in &entries {
            match string_value {
                true => text.push_str(&format!("{name} = \"{v}\"\n")),
                false => text.push_str(&format!("{name} = {v}\n")),
            }
        }
        match probes::parse(&text, "fuzz.toml") {
            Ok(p) => {
                // Kept only when every value fits the kernel's 32 bits, and named back.
                let only = p[0].only.as_ref().expect("an `only` table parsed");
                for (name, v) in &only.values {
                    prop_assert_eq!(only.name_of(u64::from(*v)), Some(name.as_str()));
                }
                prop_assert!(entries.iter().all(|(_, v)| u32::try_from(*v).is_ok()));
            }
            Err(e) => prop_assert!(e.line >= 1 && e.line <= 7 + entries.len(), "{e}"),
        }
    }

    #[test]
    fn tracepoint_formats_never_panic(text in mangled(FORMAT)) {
        let _ = tracefs::parse_format(&text);
    }

    #[test]
    fn arbitrary_tracepoint_formats_never_panic(text in "\\PC{0,300}") {
        let _ = tracefs::parse_format(&text);
    }

    #[test]
    fn mountinfo_lines_never_panic(
        line in "\\PC{0,200}",
        cut in 0usize..100,
        junk in "[ -~]{0,12}",
    ) {
        let _ = procfs::process::MountInfo::from_line(&line);
        let mut real = MOUNTINFO.to_string();
        real.truncate(cut.min(real.len()));
        real.push_str(&junk);
        let _ = procfs::process::MountInfo::from_line(&real);
    }

    #[test]
    fn lustre_layouts_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let _ = lustre::parse(&bytes);
    }

    #[test]
    fn lustre_magics_with_garbage_never_panic(
        magic in prop::sample::select(vec![0x0BD1_0BD0u32, 0x0BD3_0BD0, 0x0BD6_0BD0]),
        rest in prop::collection::vec(any::<u8>(), 0..400),
    ) {
        let mut b = magic.to_le_bytes().to_vec();
        b.extend(rest);
        let _ = lustre::parse(&b);
    }

    #[test]
    fn elf_symbol_tables_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..2048),
        elf_header in any::<bool>(),
    ) {
        let mut b = bytes;
        if elf_header && b.len() >= 4 {
            b[..4].copy_from_slice(b"\x7fELF");
        }
        let _ = SymbolTable::parse(&b);
    }

    #[test]
    fn records_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..700), kind in 0u32..11) {
        let mut b = bytes;
        if b.len() >= 4 {
            b[..4].copy_from_slice(&kind.to_ne_bytes());
        }
        let _ = events::decode(&b);
    }
}

/// libc, read once for the corruption cases.
static LIBC: std::sync::LazyLock<Vec<u8>> =
    std::sync::LazyLock::new(|| std::fs::read("/lib/x86_64-linux-gnu/libc.so.6").expect("libc"));

proptest! {
    // Each case parses a whole library: fewer cases than the small parsers get.
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// A real library with bytes overwritten where its tables are (headers, dynamic symbols
    /// and strings, versions, dynamic relocations: the first 160 KiB; section headers and
    /// the dynamic section at the end).
    #[test]
    fn corrupted_elf_tables_never_panic(
        writes in prop::collection::vec((any::<prop::sample::Index>(), any::<bool>(), any::<u8>()), 1..48),
    ) {
        let mut b = LIBC.clone();
        let (head, tail) = (160 << 10, 256 << 10);
        for (at, front, v) in writes {
            let i = if front { at.index(head) } else { b.len() - tail + at.index(tail) };
            b[i] = v;
        }
        let _ = SymbolTable::parse(&b);
        let _ = libraries::read_dynamic(&b);
    }
}

/// This machine's loader cache, read once for the corruption cases.
static LD_CACHE: std::sync::LazyLock<Vec<u8>> =
    std::sync::LazyLock::new(|| std::fs::read(ldcache::PATH).expect("the loader's cache"));

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any bytes after either layout's magic.
    #[test]
    fn loader_caches_never_panic(
        magic in 0usize..3,
        bytes in prop::collection::vec(any::<u8>(), 0..400),
    ) {
        let mut b = [b"glibc-ld.so.cache1.1".as_slice(), b"ld.so-1.7.0\0", b""][magic].to_vec();
        b.extend(bytes);
        let _ = ldcache::entries(&b);
    }

    /// The real cache with bytes overwritten, in its header and entries or anywhere, and cut.
    #[test]
    fn corrupted_loader_caches_never_panic(
        writes in prop::collection::vec((any::<prop::sample::Index>(), any::<bool>(), any::<u8>()), 1..24),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut b = LD_CACHE.clone();
        for (at, front, v) in writes {
            let i = at.index(if front { 64.min(b.len()) } else { b.len() });
            b[i] = v;
        }
        b.truncate(cut.index(b.len() + 1));
        let _ = ldcache::entries(&b);
    }
}

/// A real library cut at many points: an error or a table, never a panic.
#[test]
fn truncated_elf_files_never_panic() {
    let libc = std::fs::read("/lib/x86_64-linux-gnu/libc.so.6").expect("libc");
    for len in (0..libc.len()).step_by(libc.len() / 97 + 1) {
        let _ = SymbolTable::parse(&libc[..len]);
        let _ = libraries::read_dynamic(&libc[..len]);
    }
    let whole = libraries::read_dynamic(&libc).expect("libc's dynamic section");
    assert_eq!(whole.needed, ["ld-linux-x86-64.so.2"]);
}

/// A library whose section headers claim a symbol table larger than the file (a crafted or
/// damaged `.so` a traced process loads) is refused: the table is sized by that claim, so it
/// must not get that far.
#[test]
fn symbol_table_sizes_past_the_file_are_not_believed() {
    let mut b = LIBC.clone();
    let u16_at = |b: &[u8], at: usize| usize::from(u16::from_le_bytes([b[at], b[at + 1]]));
    let shoff = u64::from_le_bytes(b[0x28..0x30].try_into().unwrap()) as usize;
    let (shentsize, shnum) = (u16_at(&b, 0x3a), u16_at(&b, 0x3c));
    const SHT_DYNSYM: u32 = 11;
    let dynsym = (0..shnum)
        .map(|i| shoff + i * shentsize)
        .find(|h| u32::from_le_bytes(b[h + 4..h + 8].try_into().unwrap()) == SHT_DYNSYM)
        .expect("libc's .dynsym");
    for size in [1u64 << 60, u64::MAX, b.len() as u64 * 24] {
        b[dynsym + 32..dynsym + 40].copy_from_slice(&size.to_le_bytes());
        assert!(SymbolTable::parse(&b).is_err(), ".dynsym of {size} bytes");
    }
}
