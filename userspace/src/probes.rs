//! probes.toml: the declarative list of probed functions and syscalls, parsed and validated
//! once, then used both to attach (kernel specs) and to decode (user space).
use std::{collections::HashSet, fmt, ops::Range, path::Path, str::FromStr, sync::Arc};

use serde::Deserialize;
use strata_common::{
    FUNC_INT_HANDLES, FuncSpec, KernelEvent, MAX_ARGS, MAX_ONLY_VALUES, NO_ARG, SPEC_EMIT_AT_ENTRY,
    SPEC_ENABLED, SPEC_IF_ZERO, SPEC_IMPLICIT_STREAM, SPEC_KERNEL, SPEC_STREAM_END, SPEC_WAKE,
};

/// The probes shipped with strata (the repository's probes.toml).
pub const BUILTIN: &str = include_str!("../../probes.toml");

#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {reason}")]
pub struct ProbeError {
    pub file: String,
    pub line: usize,
    pub reason: String,
}

/// Where a probe attaches.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    /// syscalls/sys_enter_<name> and sys_exit_<name>.
    Syscall(String),
    /// uprobe + uretprobe on `symbol` in `library` (soname or path).
    Uprobe { library: String, symbol: String },
    /// A kernel event, attached through the first mechanism of `attach` the running kernel
    /// offers.
    Kernel {
        event: KernelEvent,
        attach: Vec<Mechanism>,
    },
    /// A kernel function, called like a library function (the VFS layer).
    Kfunc {
        function: String,
        attach: Vec<Mechanism>,
    },
    /// An io_uring request of one opcode (`IORING_OP_*`), recorded from its submission to
    /// its completion through the `uring_submit` and `uring_complete` kernel events; each
    /// argument read from the request's field of `fields`.
    Request {
        name: String,
        opcode: u8,
        fields: Vec<FieldPath>,
    },
}

/// Where an io_uring request keeps one argument (probes.toml `fields`):
/// `STRUCT.MEMBER[.MEMBER...][->MEMBER[.MEMBER...]]`. `STRUCT` is the request
/// (`io_kiocb`) or the opcode's command, which the kernel keeps in the request's `cmd`;
/// `->` reads the pointer before it and goes on in what it points to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldPath {
    pub root: String,
    /// Members from `root`, then (after `->`) from the struct pointed to.
    pub path: Vec<String>,
    pub behind: Vec<String>,
}

impl std::str::FromStr for FieldPath {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "field {s:?}: expected STRUCT.MEMBER[.MEMBER...][->MEMBER[.MEMBER...]] \
                 (`io_open.filename->name`)"
            )
        };
        let ident = |w: &str| {
            let mut c = w.chars();
            c.next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && c.all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        let (before, after) = match s.split_once("->") {
            Some((b, a)) => (b, Some(a)),
            None => (s, None),
        };
        let mut words = before.split('.');
        let root = words.next().unwrap_or_default().to_string();
        let path: Vec<String> = words.map(String::from).collect();
        let behind: Vec<String> = after
            .map(|a| a.split('.').map(String::from).collect())
            .unwrap_or_default();
        let all_idents = std::iter::once(&root)
            .chain(&path)
            .chain(&behind)
            .all(|w| ident(w));
        if !all_idents || path.is_empty() || (after.is_some() && behind.is_empty()) {
            return Err(bad());
        }
        Ok(Self { root, path, behind })
    }
}

impl std::fmt::Display for FieldPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.root, self.path.join("."))?;
        if !self.behind.is_empty() {
            write!(f, "->{}", self.behind.join("."))?;
        }
        Ok(())
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Syscall(name) => write!(f, "syscall {name:?}"),
            Target::Uprobe { library, symbol } => {
                write!(f, "symbol {symbol:?} of library {library:?}")
            }
            Target::Kernel { event, .. } => write!(f, "kernel event {:?}", event.name()),
            Target::Kfunc { function, .. } => write!(f, "kernel function {function:?}"),
            Target::Request { name, opcode, .. } => write!(f, "request {name} (opcode {opcode})"),
        }
    }
}

/// One way to attach a kernel event, in probes.toml's `attach` list.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Mechanism {
    /// `tracepoint:CATEGORY/NAME`
    Tracepoint { category: String, name: String },
    /// `kprobe:FUNCTION` (with a kretprobe for the return)
    Kprobe { function: String },
    /// `tp_btf:NAME`: the BTF raw tracepoint, for the kernel events strata has a program
    /// for there (`strata_common::programs::KERNEL_BTF`).
    BtfTracepoint { name: String },
}

/// strata's program for kernel event `event` on the BTF raw tracepoint `name`, for the
/// tracepoint's prototype of `args` arguments (any, when checking probes.toml).
pub fn kernel_btf_program(
    event: KernelEvent,
    name: &str,
    args: Option<usize>,
) -> anyhow::Result<&'static str> {
    // AIO events: the work is done by the syscall programs (`SPEC_AIO_SUBMIT`).
    if let Some((syscall, flag)) = event.aio_syscall() {
        let (want, prog) = if flag == strata_common::SPEC_AIO_REAP {
            ("sys_exit", strata_common::programs::BTF_SYS_EXIT)
        } else {
            ("sys_enter", strata_common::programs::BTF_SYS_ENTER)
        };
        anyhow::ensure!(
            name == want,
            "{} is done by strata's syscall program on tp_btf:{want} (at {syscall}), not on {name}",
            event.name()
        );
        return Ok(prog);
    }
    let known = strata_common::programs::KERNEL_BTF;
    let for_event = |(e, tp, _, _): &&(KernelEvent, &str, usize, &str)| *e == event && *tp == name;
    if let Some((_, _, _, prog)) = known
        .iter()
        .filter(for_event)
        .find(|(_, _, n, _)| args.is_none_or(|a| a == *n))
    {
        return Ok(prog);
    }
    if let Some(args) = args {
        if known.iter().any(|k| for_event(&k)) {
            anyhow::bail!("strata has no program for {name} with {args} arguments (this kernel's)");
        }
    }
    let have: Vec<String> = known
        .iter()
        .map(|(e, tp, _, _)| format!("{} on tp_btf:{tp}", e.name()))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    anyhow::bail!(
        "no tp_btf program for {} on {name} (strata has: {})",
        event.name(),
        have.join(", ")
    )
}

impl FromStr for Mechanism {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.split_once(':') {
            Some(("tracepoint", tp)) => match tp.split_once('/') {
                Some((c, n)) if !c.is_empty() && !n.is_empty() && !n.contains('/') => {
                    Ok(Self::Tracepoint {
                        category: c.into(),
                        name: n.into(),
                    })
                }
                _ => Err(format!("{s:?}: expected tracepoint:CATEGORY/NAME")),
            },
            Some(("kprobe", f)) if !f.is_empty() => Ok(Self::Kprobe { function: f.into() }),
            Some(("tp_btf", n)) if !n.is_empty() && !n.contains('/') => {
                Ok(Self::BtfTracepoint { name: n.into() })
            }
            Some(("fentry", _)) => Err(format!(
                "{s:?}: fentry programs are not built into this strata; use kprobe:FUNCTION"
            )),
            _ => Err(format!(
                "{s:?}: expected MECHANISM:TARGET (tracepoint:CATEGORY/NAME, tp_btf:NAME or \
                 kprobe:FUNCTION)"
            )),
        }
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tracepoint { category, name } => write!(f, "tracepoint:{category}/{name}"),
            Self::Kprobe { function } => write!(f, "kprobe:{function}"),
            Self::BtfTracepoint { name } => write!(f, "tp_btf:{name}"),
        }
    }
}

macro_rules! kinds {
    ($(#[$m:meta])* $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($variant),+ }
        impl $name {
            pub const ALL: &[&str] = &[$($text),+];
            pub const COUNT: usize = Self::ALL.len();
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text),+ }
            }
        }
        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($text => Ok(Self::$variant),)+
                    _ => Err(format!(
                        "unknown {} {s:?} (expected one of: {})",
                        stringify!($name).to_lowercase(),
                        Self::ALL.join(", ")
                    )),
                }
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.as_str()) }
        }
    };
}

kinds!(
    /// The I/O layer a probe belongs to (the `layer` column).
    Layer {
        Hdf5 = "hdf5",
        Netcdf = "netcdf",
        Mpiio = "mpiio",
        Stdio = "stdio",
        Libc = "libc",
        Posix = "posix",
        Uring = "uring",
        Aio = "aio",
        Vfs = "vfs",
        Pagecache = "pagecache",
        Block = "block",
    }
);

impl Layer {
    /// `--layers`'s names: `all` is every layer.
    pub fn parse_list(names: &[String]) -> Result<Vec<Layer>, String> {
        if names.iter().any(|n| n == "all") {
            return Ok(Self::ALL.iter().filter_map(|n| n.parse().ok()).collect());
        }
        names.iter().map(|n| n.parse()).collect()
    }
}

kinds!(
    /// What a call does to its handle or file (the `op` column).
    Op {
        Open = "open",
        Close = "close",
        Read = "read",
        Write = "write",
        Seek = "seek",
        Tell = "tell",
        Sync = "sync",
        Flush = "flush",
        Dup = "dup",
        Fcntl = "fcntl",
        Reopen = "reopen",
        Truncate = "truncate",
        Unlink = "unlink",
        Rename = "rename",
        Mkdir = "mkdir",
        Rmdir = "rmdir",
        Stat = "stat",
        Access = "access",
        Chdir = "chdir",
        Link = "link",
        Readdir = "readdir",
        Setattr = "setattr",
        Xattr = "xattr",
        Advise = "advise",
        Lock = "lock",
        Copy = "copy",
        Map = "map",
        Unmap = "unmap",
        Exit = "exit",
        Pipe = "pipe",
        Wait = "wait",
        Meta = "meta",
        Load = "load",
    }
);

kinds!(
    /// How one argument is read and what it means.
    ArgKind {
        Int = "int",
        Fd = "fd",
        Fd2 = "fd2",
        FdLast = "fd_last",
        Dirfd = "dirfd",
        Newfd = "newfd",
        Handle = "handle",
        HandleRef = "handle_ref",
        Path = "path",
        Name = "name",
        Str = "str",
        ModeStr = "modestr",
        Buf = "buf",
        Ptr = "ptr",
        Iov = "iov",
        IovCnt = "iovcnt",
        Size = "size",
        Count = "count",
        Offset = "offset",
        OffsetRef = "offset_ref",
        Offset2Ref = "offset2_ref",
        FdPair = "fd_pair",
        Rights = "rights",
        Whence = "whence",
        Flags = "flags",
        Mode = "mode",
        Cmd = "cmd",
        OutHandle32 = "out_handle32",
        OutHandle64 = "out_handle64",
        OutRequest = "out_request",
        OutInt32 = "out_int32",
        OutInt64 = "out_int64",
        Text = "text",
        Line = "line",
        Stdout = "stdout",
        Stdin = "stdin",
        RequestRef = "request_ref",
        RequestArray = "request_array",
        IndexArray = "index_array",
        Datatype = "datatype",
        Status = "status",
        H5Type = "h5type",
        Plist = "plist",
        Varid = "varid",
        Dims = "dims",
        IntArray = "int_array",
        Rank = "rank",
        KFile = "kfile",
        KPos = "kpos",
        Slot = "slot",
        Addr = "addr",
        XferMode = "xfer_mode",
    }
);

kinds!(
    /// What the return value means.
    RetKind {
        Fd = "fd",
        Handle = "handle",
        Bytes = "bytes",
        Count = "count",
        Status = "status",
        Scanned = "scanned",
        Position = "position",
        Char = "char",
        Ptr = "ptr",
        MpiStatus = "mpi_status",
        Hid = "hid",
        Refs = "refs",
        None = "none",
    }
);

impl ArgKind {
    fn is_string(self) -> bool {
        matches!(self, Self::Path | Self::ModeStr | Self::Name | Self::Str)
    }
    fn out_size(self) -> Option<u8> {
        match self {
            Self::OutHandle32 | Self::OutInt32 => Some(4),
            Self::OutHandle64 | Self::OutRequest | Self::OutInt64 | Self::Status => Some(8),
            Self::Text | Self::Line => Some(strata_common::OUT_TEXT),
            _ => None,
        }
    }
    /// Pointers to arrays copied at entry.
    pub fn is_array(self) -> bool {
        matches!(self, Self::Dims | Self::IntArray | Self::RequestArray)
    }
    /// Pointers to handles, read at entry (the call may overwrite them).
    fn is_deref(self) -> bool {
        matches!(self, Self::HandleRef | Self::RequestRef)
    }
    /// Pointers to offsets the call advances, read at return.
    pub fn is_ret_deref(self) -> bool {
        matches!(self, Self::OffsetRef | Self::Offset2Ref | Self::FdPair)
    }
    /// Read for library functions (uprobes) only: at entry, or `text` at return.
    fn library_only(self) -> bool {
        self.is_array()
            || self.is_deref()
            || self.stream_var().is_some()
            || matches!(
                self,
                Self::Datatype
                    | Self::Status
                    | Self::H5Type
                    | Self::Text
                    | Self::Line
                    | Self::IndexArray
            )
    }
    /// The libc variable holding the stream a call works on without naming it (printf's
    /// `stdout`): read at entry into this argument's slot, which is not passed.
    pub fn stream_var(self) -> Option<&'static str> {
        match self {
            Self::Stdout => Some("stdout"),
            Self::Stdin => Some("stdin"),
            _ => None,
        }
    }
    /// Text the call moves, its length read at return: with a newline after it (`line`).
    pub fn text_extra(self) -> Option<i64> {
        match self {
            Self::Text => Some(0),
            Self::Line => Some(1),
            _ => None,
        }
    }
    /// Read from user memory at entry for syscalls and library functions, not for kernel
    /// functions.
    fn user_memory(self) -> bool {
        self.is_string() || self.is_ret_deref()
    }
}

/// One validated probe. `id` is its index in the file: the function id of the kernel side.
#[derive(Debug, Clone)]
pub struct Probe {
    pub id: u32,
    pub layer: Layer,
    pub target: Target,
    pub op: Op,
    pub args: Vec<ArgKind>,
    pub ret: RetKind,
    /// The return value is a C `int`: sign-extend its low 32 bits (the upper half of the
    /// register is not defined).
    pub ret_int: bool,
    /// MPI collective, whatever the arguments say.
    pub collective: bool,
    pub enabled: bool,
    /// A library-internal function: not a row of its own; its result informs the enclosing
    /// call (the elements an H5Dwrite selected, for example).
    pub internal: bool,
    /// From `calls_in`: where the function's body is one load from its first argument
    /// (`mov disp(%rdi),%rax; ret`, which the kernel would single-step), its calls in these
    /// functions are probed instead (a `call` is emulated) and the value loaded there.
    pub calls_in: Vec<String>,
    /// From `only_if_zero = "VARIABLE+OFFSET"`: the call is recorded only while the 32-bit
    /// integer at the library's variable plus the byte offset reads 0 (see `SPEC_IF_ZERO`).
    pub only_if_zero: Option<(String, u64)>,
    /// From `names_handle`: the call's `name` argument names its handle, made with none
    /// (HDF5's H5Olink of an object made by H5Dcreate_anon).
    pub names_handle: bool,
    pub line: usize,
    /// From the file's `mpi_datatype_size_offset`: where an MPI datatype handle keeps its size.
    pub datatype_size_offset: Option<u64>,
    /// From the file's `mpi_status_count_offset`: where an MPI_Status handle-object MPI keeps
    /// the bytes a call moved.
    pub status_count_offset: Option<u64>,
    /// From the file's `stdio_fileno_offset`, for stdio probes with a stream argument: where
    /// a C stream keeps its fd (read at entry into the slot after the last argument).
    pub stdio_fileno_offset: Option<u64>,
    /// From the file's `stdio_fd_flag`, with `stdio_fileno_offset`: the bit of a C stream's
    /// first int set where the stream has an fd (glibc's `_IO_IS_FILEBUF`).
    pub stdio_fd_flag: Option<u32>,
    /// From the file's `stdio_read_offset`, for `scanned` probes: where a C stream keeps its
    /// read position in its buffer, followed by the end of what the buffer holds.
    pub stdio_read_offset: Option<u64>,
    /// From the file's `mpi_objects_symbol`: a library defining this variable passes MPI
    /// handles as pointers to objects (Open MPI); one that does not, as 32-bit integers (the
    /// MPICH ABI). None: always objects.
    pub mpi_objects_symbol: Option<Arc<str>>,
    /// From the file's `[library_names]`: other base names of this probe's library.
    pub other_names: Arc<[String]>,
    /// From `only`: the call is recorded only when this argument has one of these values.
    pub only: Option<Only>,
    /// From `only_files`: the call is recorded only when its `fd` argument is a descriptor.
    pub only_files: bool,
    /// From `fd_inode`: the kernel side reads the inode and device of the descriptor the call
    /// returns or fills (`fd_pair`) into the two slots after the arguments.
    pub fd_inode: bool,
    /// From `fd_name`: the file the descriptor the call returns is on, named as /proc names
    /// it, for descriptors of a kind that all share the kernel's one anonymous inode
    /// (`anon_inode:[eventfd]`).
    pub fd_name: Option<String>,
    /// From `since`: the library version that added the symbol. An older build without it
    /// leaves the probe `absent`, not `failed`.
    pub since: Option<String>,
    /// From `only_in`: the builds of the library that have the symbol ("parallel builds").
    /// Another build without it leaves the probe `absent`, not `failed`.
    pub only_in: Option<String>,
    /// The index of each kind's first argument (`NO_ARG`: none), for [`Self::arg`], which
    /// correlation asks some twenty times per call.
    first_arg: [u8; ArgKind::COUNT],
}

/// probes.toml `only`: one argument and the named values it must have for the call to be
/// recorded (ioctl's commands). The kernel compares the argument's low 32 bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Only {
    pub arg: usize,
    /// Names and values, by name.
    pub values: Vec<(String, u32)>,
}

impl Only {
    /// The name the probes file gives the value `v` (its low 32 bits).
    pub fn name_of(&self, v: u64) -> Option<&str> {
        self.values
            .iter()
            .find(|(_, x)| *x == v as u32)
            .map(|(n, _)| n.as_str())
    }
}

impl Probe {
    /// The function name as recorded (`function` column).
    pub fn function(&self) -> &str {
        match &self.target {
            Target::Syscall(s) => s,
            Target::Uprobe { symbol, .. } => symbol,
            Target::Kernel { event, .. } => event.name(),
            Target::Kfunc { function, .. } => function,
            Target::Request { name, .. } => name,
        }
    }

    /// The libc variable (`stdout`, `stdin`) of the stream the call works on without naming it.
    pub fn stream_var(&self) -> Option<&'static str> {
        self.args.iter().find_map(|k| k.stream_var())
    }

    /// What a call moves beyond the text its `text` or `line` argument measures.
    pub fn text_extra(&self) -> Option<i64> {
        self.args.iter().find_map(|k| k.text_extra())
    }

    /// Index of the first argument of `kind`.
    #[inline]
    pub fn arg(&self, kind: ArgKind) -> Option<usize> {
        match self.first_arg[kind as usize] {
            NO_ARG => None,
            i => Some(usize::from(i)),
        }
    }

    /// Whether the probe reads MPI datatypes or requests, whose width and meaning depend on
    /// the MPI's ABI (see [`Self::int_handles_spec`]).
    pub fn has_mpi_handles(&self) -> bool {
        self.args.iter().any(|k| {
            matches!(
                k,
                ArgKind::Datatype
                    | ArgKind::Status
                    | ArgKind::OutRequest
                    | ArgKind::RequestRef
                    | ArgKind::RequestArray
            )
        })
    }

    /// Whether this probe, attached to a library with these symbols, meets the MPICH ABI's
    /// integer handles.
    pub fn int_handles_in(&self, symbols: &crate::symbols::SymbolTable) -> bool {
        self.has_mpi_handles()
            && self
                .mpi_objects_symbol
                .as_deref()
                .is_some_and(|s| symbols.variable(s).is_none())
    }

    /// The capture spec for an MPI whose handles are integers, under function id
    /// `id + FUNC_INT_HANDLES`: the datatype is kept as the handle it is (its size comes from
    /// the MPI_Type_size_x beneath the call), an `out_request` is 4 bytes, and a `status`
    /// begins with its count.
    pub fn int_handles_spec(&self) -> FuncSpec {
        let mut spec = self.spec();
        spec.func_id = self.id + FUNC_INT_HANDLES;
        spec.datatype_arg = NO_ARG;
        if self.arg(ArgKind::OutRequest).is_some() {
            spec.out_size = 4;
        }
        if let Some(i) = self.arg(ArgKind::Status) {
            (spec.out_arg, spec.out_size) = (i as u8, 8);
        }
        spec.array_elem_shift = 2;
        spec
    }

    /// The kernel-side capture spec.
    pub fn spec(&self) -> FuncSpec {
        let mut str_mask = 0u8;
        let mut deref_mask = 0u8;
        let mut blob_mask = 0u8;
        let (mut out_arg, mut out_size) = (NO_ARG, 0u8);
        for (i, k) in self.args.iter().enumerate() {
            if k.is_string() {
                str_mask |= 1 << i;
            }
            if k.is_deref() {
                deref_mask |= 1 << i;
            }
            if k.is_array() && *k != ArgKind::RequestArray {
                blob_mask |= 1 << i;
            }
            if let Some(sz) = k.out_size() {
                out_arg = i as u8;
                out_size = sz;
            }
        }
        // Open MPI's status keeps its count inside: read there, or not at all.
        if let Some(i) = self.arg(ArgKind::Status) {
            (out_arg, out_size) = match self.status_count_offset {
                Some(_) => (i as u8, strata_common::OUT_MPI_STATUS),
                None => (NO_ARG, 0),
            };
        }
        // What the stream has buffered, at entry and at return.
        if self.ret == RetKind::Scanned && self.stdio_read_offset.is_some() {
            if let Some(i) = self.arg(ArgKind::Handle) {
                (out_arg, out_size) = (i as u8, strata_common::OUT_BUFFERED);
            }
        }
        let mut flags = SPEC_ENABLED;
        if self.op == Op::Exit {
            flags |= SPEC_EMIT_AT_ENTRY;
        }
        if matches!(self.target, Target::Kfunc { .. }) {
            flags |= SPEC_KERNEL;
        }
        if matches!(self.op, Op::Close | Op::Reopen) {
            flags |= SPEC_STREAM_END;
        }
        if self.stream_var().is_some() {
            flags |= SPEC_IMPLICIT_STREAM;
        }
        if self.op == Op::Load {
            // The loader's report: a call with nothing to return, recorded at entry (its
            // probe has no return probe) and delivered at once.
            flags |= SPEC_WAKE | SPEC_EMIT_AT_ENTRY;
        }
        if self.only_if_zero.is_some() {
            flags |= SPEC_IF_ZERO;
        }
        let kderef_mask = self
            .args
            .iter()
            .enumerate()
            .filter(|(_, k)| **k == ArgKind::KPos)
            .fold(0u8, |m, (i, _)| m | (1 << i));
        FuncSpec {
            func_id: self.id,
            nargs: self.args.len() as u8,
            str_mask,
            out_arg,
            out_size,
            flags,
            deref_mask,
            datatype_arg: self
                .arg(ArgKind::Datatype)
                .filter(|_| self.datatype_size_offset.is_some())
                .map_or(NO_ARG, |i| i as u8),
            blob_mask,
            kfile_arg: self.arg(ArgKind::KFile).map_or(NO_ARG, |i| i as u8),
            kderef_mask,
            ret_deref_mask: self
                .args
                .iter()
                .enumerate()
                .filter(|(_, k)| k.is_ret_deref())
                .fold(0u8, |m, (i, _)| m | (1 << i)),
            only_arg: self.only.as_ref().map_or(NO_ARG, |o| o.arg as u8),
            files_arg: self
                .arg(ArgKind::Fd)
                .filter(|_| self.only_files)
                .map_or(NO_ARG, |i| i as u8),
            stream_arg: self
                .arg(ArgKind::Handle)
                .filter(|_| self.stdio_fileno_offset.is_some() && self.args.len() < MAX_ARGS)
                .map_or(NO_ARG, |i| i as u8),
            ret_blob_arg: self.arg(ArgKind::IndexArray).map_or(NO_ARG, |i| i as u8),
            fd_file_arg: match (
                self.fd_inode,
                self.arg(ArgKind::FdPair).or(self.arg(ArgKind::Rights)),
            ) {
                (false, _) => NO_ARG,
                (true, Some(i)) => i as u8,
                (true, None) => strata_common::FD_FROM_RET,
            },
            rights_arg: self.arg(ArgKind::Rights).map_or(NO_ARG, |i| i as u8),
            _pad: [0; 3],
            array_arg: self.arg(ArgKind::RequestArray).map_or(NO_ARG, |i| i as u8),
            // probes.toml checked that a request array comes with its count.
            array_len_arg: self
                .arg(ArgKind::RequestArray)
                .and(self.arg(ArgKind::Rank))
                .map_or(NO_ARG, |i| i as u8),
            // MPI_Request: a pointer (Open MPI); see `int_handles_spec`.
            array_elem_shift: 3,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRaw {
    mpi_datatype_size_offset: Option<u64>,
    mpi_status_count_offset: Option<u64>,
    stdio_fileno_offset: Option<u64>,
    stdio_fd_flag: Option<u32>,
    stdio_read_offset: Option<u64>,
    mpi_objects_symbol: Option<String>,
    #[serde(default)]
    library_names: std::collections::HashMap<String, Vec<String>>,
    #[serde(default)]
    probe: Vec<toml::Spanned<ProbeRaw>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProbeRaw {
    layer: String,
    syscall: Option<String>,
    library: Option<String>,
    symbol: Option<String>,
    kernel: Option<String>,
    kfunc: Option<String>,
    request: Option<String>,
    opcode: Option<u8>,
    #[serde(default)]
    fields: Vec<String>,
    #[serde(default)]
    attach: Vec<String>,
    op: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    ret: Option<String>,
    ret_type: Option<String>,
    #[serde(default)]
    collective: bool,
    #[serde(default = "yes")]
    enabled: bool,
    #[serde(default)]
    internal: bool,
    #[serde(default)]
    calls_in: Vec<String>,
    only_if_zero: Option<String>,
    #[serde(default)]
    names_handle: bool,
    /// `only.<argument kind> = { NAME = value, ... }`
    #[serde(default)]
    only: std::collections::BTreeMap<String, toml::Table>,
    #[serde(default)]
    only_files: bool,
    #[serde(default)]
    fd_inode: bool,
    fd_name: Option<String>,
    since: Option<String>,
    only_in: Option<String>,
}

fn yes() -> bool {
    true
}

/// `VARIABLE` or `VARIABLE+OFFSET` (decimal bytes).
fn variable_at(s: &str) -> Option<(String, u64)> {
    let (name, offset) = match s.split_once('+') {
        Some((name, off)) => (name.trim(), off.trim().parse().ok()?),
        None => (s.trim(), 0),
    };
    let symbol = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '@';
    (!name.is_empty() && name.chars().all(symbol)).then(|| (name.to_string(), offset))
}

fn line_of(text: &str, offset: usize) -> usize {
    Lines::new(text).at(offset)
}

/// Line numbers of byte offsets asked in increasing order (each probe's table follows the
/// last): the file is read once, where counting from its start for each probe cost 40
/// million instructions at every start.
struct Lines<'a> {
    text: &'a [u8],
    pos: usize,
    line: usize,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text: text.as_bytes(),
            pos: 0,
            line: 1,
        }
    }

    fn at(&mut self, offset: usize) -> usize {
        let offset = offset.min(self.text.len());
        if offset < self.pos {
            (self.pos, self.line) = (0, 1);
        }
        self.line += self.text[self.pos..offset]
            .iter()
            .filter(|b| **b == b'\n')
            .count();
        self.pos = offset;
        self.line
    }
}

/// Parses and validates a probes file; `file` names it in errors.
pub fn parse(text: &str, file: &str) -> Result<Vec<Probe>, ProbeError> {
    let err = |span: Range<usize>, reason: String| ProbeError {
        file: file.to_string(),
        line: line_of(text, span.start),
        reason,
    };
    let raw: FileRaw = toml::from_str(text)
        .map_err(|e| err(e.span().unwrap_or(0..0), e.message().trim_end().to_string()))?;
    let mut seen = HashSet::new();
    let mut lines = Lines::new(text);
    let mut probes = Vec::with_capacity(raw.probe.len());
    let mpi_objects: Option<Arc<str>> = raw.mpi_objects_symbol.as_deref().map(Into::into);
    let no_names: Arc<[String]> = Vec::new().into();
    if let Some((base, _)) = raw
        .library_names
        .iter()
        .find(|(b, names)| b.contains(['/', '.']) || names.iter().any(|n| n.contains(['/', '.'])))
    {
        return Err(err(
            0..0,
            format!(
                "[library_names] {base:?}: base names only (`libmpi = [\"libmpich\"]`), no \
                 directories or versions"
            ),
        ));
    }
    if raw.stdio_fd_flag.is_some_and(|f| !f.is_power_of_two())
        || raw.stdio_fd_flag.is_some() && raw.stdio_fileno_offset.is_none()
    {
        return Err(err(
            0..0,
            "`stdio_fd_flag` is one bit (glibc's `_IO_IS_FILEBUF`, 0x2000), beside \
             `stdio_fileno_offset`"
                .into(),
        ));
    }
    for (id, spanned) in raw.probe.iter().enumerate() {
        let span = spanned.span();
        let p = spanned.get_ref();
        let bad = |reason: String| err(span.clone(), reason);
        let layer: Layer = p.layer.parse().map_err(bad)?;
        let is_kernel = p.kernel.is_some();
        let is_kfunc = p.kfunc.is_some();
        let required = |v: &Option<String>, what: &str, default: &str| match v {
            Some(v) => Ok(v.clone()),
            None if is_kernel => Ok(default.to_string()),
            None if is_kfunc && what == "ret" => Err(bad("missing field `ret`".into())),
            None => Err(bad(format!("missing field `{what}`"))),
        };
        let op: Op = required(&p.op, "op", "meta")?.parse().map_err(bad)?;
        let ret: RetKind = required(&p.ret, "ret", "none")?.parse().map_err(bad)?;
        let args = p
            .args
            .iter()
            .map(|a| a.parse::<ArgKind>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(bad)?;
        if args.len() > MAX_ARGS {
            return Err(bad(format!(
                "{} arguments declared; at most {MAX_ARGS} are captured",
                args.len()
            )));
        }
        if args.iter().filter(|a| a.out_size().is_some()).count() > 1 {
            return Err(bad(
                "at most one argument read at return (out_*, text) per probe".into(),
            ));
        }
        let mechanisms = || {
            if p.attach.is_empty() {
                return Err(bad(
                    "kernel probes need `attach`, a list of mechanisms to try in order".into(),
                ));
            }
            p.attach
                .iter()
                .map(|m| m.parse())
                .collect::<Result<Vec<Mechanism>, _>>()
                .map_err(bad)
        };
        let target = match (p.request.clone(), p.opcode) {
            (Some(name), Some(opcode))
                if p.syscall.is_none()
                    && p.library.is_none()
                    && p.symbol.is_none()
                    && p.kernel.is_none()
                    && p.kfunc.is_none() =>
            {
                let fields = match layer {
                    Layer::Uring => request_fields(&args, &p.fields).map_err(bad)?,
                    Layer::Aio => aio_request_args(&args, &p.fields, opcode).map_err(bad)?,
                    _ => {
                        return Err(bad(format!(
                            "requests belong to layer uring (io_uring) or aio (Linux AIO), \
                             not {layer}"
                        )));
                    }
                };
                Some(Target::Request {
                    name,
                    opcode,
                    fields,
                })
            }
            (None, None) => None,
            (Some(_), None) => return Err(bad("a `request` needs its `opcode`".into())),
            (None, Some(_)) => return Err(bad("`opcode` is for requests".into())),
            (Some(_), Some(_)) => {
                return Err(bad(
                    "a probe names one of: `syscall`, both `library` and `symbol`, `kernel` \
                     (an event), `kfunc` (a kernel function), `request` (an io_uring or AIO opcode)"
                        .into(),
                ));
            }
        };
        let target = match target {
            Some(t) => t,
            None => match (
                p.syscall.clone(),
                p.library.clone(),
                p.symbol.clone(),
                p.kernel.as_deref(),
                p.kfunc.clone(),
            ) {
                (Some(s), None, None, None, None) if !s.is_empty() => Target::Syscall(s),
                (None, Some(library), Some(symbol), None, None)
                    if !library.is_empty() && !symbol.is_empty() =>
                {
                    Target::Uprobe { library, symbol }
                }
                (None, None, None, None, Some(function)) if !function.is_empty() => {
                    let attach = mechanisms()?;
                    if let Some(m) = attach
                        .iter()
                        .find(|m| !matches!(m, Mechanism::Kprobe { .. }))
                    {
                        return Err(bad(format!(
                            "{m}: kernel functions attach through kprobe:FUNCTION"
                        )));
                    }
                    if args.contains(&ArgKind::KFile) && args.len() >= MAX_ARGS {
                        return Err(bad(format!(
                            "a `kfile` argument needs a free slot: at most {} arguments",
                            MAX_ARGS - 1
                        )));
                    }
                    Target::Kfunc { function, attach }
                }
                (None, None, None, Some(k), None) => {
                    let event = KernelEvent::ALL
                        .into_iter()
                        .find(|e| e.name() == k)
                        .ok_or_else(|| {
                            bad(format!(
                                "unknown kernel event {k:?} (expected one of: {})",
                                KernelEvent::NAMES.join(", ")
                            ))
                        })?;
                    let own = if event.is_uring() {
                        Some(Layer::Uring)
                    } else if event.is_aio() {
                        Some(Layer::Aio)
                    } else {
                        None
                    };
                    if let Some(own) = own.filter(|l| *l != layer) {
                        return Err(bad(format!(
                            "kernel event {k} belongs to layer {own}, not {layer}"
                        )));
                    }
                    if own.is_none() && !matches!(layer, Layer::Block | Layer::Pagecache) {
                        return Err(bad(format!(
                            "kernel events belong to layer block or pagecache, not {layer}"
                        )));
                    }
                    let attach = mechanisms()?;
                    for m in &attach {
                        match m {
                            Mechanism::Tracepoint { .. } => {}
                            Mechanism::BtfTracepoint { name } => {
                                kernel_btf_program(event, name, None)
                                    .map_err(|e| bad(e.to_string()))?;
                            }
                            Mechanism::Kprobe { .. } => {
                                return Err(bad(format!(
                                    "{m}: kernel events attach through tracepoint:CATEGORY/NAME \
                                 or tp_btf:NAME"
                                )));
                            }
                        }
                    }
                    Target::Kernel { event, attach }
                }
                _ => {
                    return Err(bad(
                        "a probe names one of: `syscall`, both `library` and `symbol`, `kernel` \
                     (an event), `kfunc` (a kernel function), `request` (an io_uring or AIO opcode)"
                            .into(),
                    ));
                }
            },
        };
        if !is_kernel && !is_kfunc && !p.attach.is_empty() {
            return Err(bad("`attach` is for kernel events and functions".into()));
        }
        if matches!(target, Target::Syscall(_)) && ret == RetKind::Handle {
            return Err(bad(
                "ret = \"handle\" is for library calls; a syscall returns an fd".into(),
            ));
        }
        if p.internal && !matches!(target, Target::Uprobe { .. }) {
            return Err(bad("`internal` is for library functions".into()));
        }
        if !p.calls_in.is_empty() && !p.internal {
            return Err(bad(
                "`calls_in` is for internal library functions (`internal = true`)".into(),
            ));
        }
        let only_if_zero = match &p.only_if_zero {
            None => None,
            Some(_) if op != Op::Load => {
                return Err(bad(
                    "`only_if_zero` is for the loader's report (op = \"load\")".into(),
                ));
            }
            Some(v) => Some(variable_at(v).ok_or_else(|| {
                bad(format!(
                    "only_if_zero = \"{v}\": expected VARIABLE or VARIABLE+OFFSET, a symbol of \
                     the library and a byte offset"
                ))
            })?),
        };
        if p.names_handle
            && (op != Op::Meta
                || !args.contains(&ArgKind::Handle)
                || !args.contains(&ArgKind::Name))
        {
            return Err(bad(
                "`names_handle` is for a call (op = \"meta\") whose `name` argument names its \
                 `handle` argument"
                    .into(),
            ));
        }
        if op == Op::Load && !p.internal {
            return Err(bad(
                "op = \"load\" (the loader's report of loaded libraries) is not a row: \
                 give it `internal = true`"
                    .into(),
            ));
        }
        // The kernel programs read these only where they can occur (see `on_entry`).
        let not_read = match target {
            Target::Uprobe { .. } | Target::Kernel { .. } | Target::Request { .. } => {
                args.iter().find(|a| **a == ArgKind::Rights)
            }
            Target::Syscall(_) => args.iter().find(|a| a.library_only()),
            Target::Kfunc { .. } => args.iter().find(|a| a.library_only() || a.user_memory()),
        };
        if let Some(a) = not_read {
            return Err(bad(format!(
                "`{a}` arguments are read from user memory for {}; declare it as `ptr` here",
                if *a == ArgKind::Rights {
                    "syscalls only"
                } else if a.user_memory() {
                    "syscalls and library functions"
                } else {
                    "library functions only"
                }
            )));
        }
        // One probe per thing probed, whatever mechanisms it lists.
        if !seen.insert(target.to_string()) {
            return Err(bad(format!("{target} is declared twice")));
        }
        let is_syscall = matches!(target, Target::Syscall(_));
        let ret_int = match p.ret_type.as_deref() {
            Some("int") => true,
            Some("long") => false,
            // Syscalls return a long; C library functions of these kinds an int.
            None => {
                !is_syscall
                    && matches!(
                        ret,
                        RetKind::Status
                            | RetKind::Scanned
                            | RetKind::Char
                            | RetKind::MpiStatus
                            | RetKind::Fd
                            | RetKind::Refs
                    )
            }
            Some(t) => return Err(bad(format!("unknown ret_type {t:?} (int or long)"))),
        };
        let only = parse_only(&p.only, &args).map_err(bad)?;
        // A return finds its call by the thread's frames: a library function's unrecorded
        // call nested in a recorded one of the same function would end the outer call.
        // Syscalls do not nest.
        if only.is_some() && !is_syscall {
            return Err(bad("`only` is for syscalls".into()));
        }
        if p.only_files && !is_syscall {
            return Err(bad("`only_files` is for syscalls".into()));
        }
        if (p.since.is_some() || p.only_in.is_some()) && !matches!(target, Target::Uprobe { .. }) {
            return Err(bad(
                "`since` and `only_in` (the library versions or builds that have the symbol) \
                 are for library functions"
                    .into(),
            ));
        }
        // A reference count is the count of the handle the call names, which it keeps open
        // (`meta`) or may close (`close`).
        if ret == RetKind::Refs
            && (!matches!(op, Op::Meta | Op::Close) || !args.contains(&ArgKind::Handle))
        {
            return Err(bad(
                "ret = \"refs\" is for calls on a `handle` argument with op = \"meta\" (they \
                 add a reference) or \"close\" (they drop one)"
                    .into(),
            ));
        }
        // The inode of a descriptor the call makes: from the calling task's descriptor table
        // when the call returns, into the two slots after the arguments.
        if p.fd_inode
            && (!is_syscall
                || !((matches!(op, Op::Open | Op::Dup) && ret == RetKind::Fd)
                    || args.contains(&ArgKind::FdPair)
                    || args.contains(&ArgKind::Rights))
                || args.len() + 2 > MAX_ARGS)
        {
            return Err(bad(format!(
                "`fd_inode` is for syscalls that return a descriptor (op = \"open\" or \"dup\", ret = \"fd\") \
                 or fill a pair (`fd_pair`), or pass one in a message (`rights`), with at most \
                 {} arguments",
                MAX_ARGS - 2
            )));
        }
        // A passed descriptor's file in the two slots after the arguments, its open file
        // description in the last.
        if args.contains(&ArgKind::Rights)
            && (!p.fd_inode
                || !matches!(op, Op::Read | Op::Write)
                || ret != RetKind::Bytes
                || args.len() + 3 > MAX_ARGS
                || args.iter().filter(|k| **k == ArgKind::Rights).count() > 1
                || args.contains(&ArgKind::FdPair))
        {
            return Err(bad(format!(
                "a `rights` argument (a message that may pass descriptors: sendmsg, recvmsg) is \
                 one per probe, of op = \"read\" or \"write\" with ret = \"bytes\", \
                 `fd_inode = true` and at most {} arguments",
                MAX_ARGS - 3
            )));
        }
        // A name for the descriptor's file: its inode says nothing (the one anonymous inode),
        // and a path or a name argument would name it otherwise.
        if p.fd_name.is_some()
            && (op != Op::Open
                || ret != RetKind::Fd
                || p.fd_inode
                || args.contains(&ArgKind::Path)
                || args.contains(&ArgKind::Name)
                || p.fd_name.as_deref().is_some_and(str::is_empty))
        {
            return Err(bad(
                "`fd_name` names the file of the descriptor an open returns (op = \"open\", \
                 ret = \"fd\") with no `path` or `name` argument and no `fd_inode`, and is \
                 not empty"
                    .into(),
            ));
        }
        if (op == Op::Pipe) != (args.iter().filter(|k| **k == ArgKind::FdPair).count() == 1)
            || args.iter().filter(|k| **k == ArgKind::FdPair).count() > 1
        {
            return Err(bad(
                "op = \"pipe\" makes the two descriptors of its one `fd_pair` argument, which \
                 only it has"
                    .into(),
            ));
        }
        if p.only_files && !args.contains(&ArgKind::Fd) {
            return Err(bad(
                "`only_files` keeps calls whose `fd` argument is a descriptor: declare one".into(),
            ));
        }
        let other_names = match &target {
            Target::Uprobe { library, .. } => raw
                .library_names
                .get(crate::libraries::base_name(library))
                .map_or_else(|| no_names.clone(), |n| n.as_slice().into()),
            _ => no_names.clone(),
        };
        let streams = args
            .iter()
            .filter(|k| **k == ArgKind::Handle || k.stream_var().is_some())
            .count();
        if args.iter().any(|k| k.stream_var().is_some()) {
            if layer != Layer::Stdio || raw.stdio_fileno_offset.is_none() {
                return Err(bad(
                    "`stdout` and `stdin` are for stdio probes, with the file's \
                     `stdio_fileno_offset`"
                        .into(),
                ));
            }
            if streams > 1 || args.len() >= MAX_ARGS {
                return Err(bad(format!(
                    "`stdout` or `stdin` stands for the call's one stream, in one of the \
                     first {} argument slots (the fd goes in the next)",
                    MAX_ARGS - 1
                )));
            }
        }
        // The stream's fd goes in the slot after the arguments, what it had buffered at entry
        // in the next.
        if ret == RetKind::Scanned
            && (layer != Layer::Stdio
                || raw.stdio_fileno_offset.is_none()
                || raw.stdio_read_offset.is_none()
                || streams != 1
                || args.len() + 2 > MAX_ARGS
                || args.iter().any(|k| k.out_size().is_some()))
        {
            return Err(bad(format!(
                "ret = \"scanned\" is for stdio probes with one stream (`handle`, `stdin`), \
                 no other value read at return and at most {} arguments, with the file's \
                 `stdio_fileno_offset` and `stdio_read_offset`",
                MAX_ARGS - 2
            )));
        }
        if args.contains(&ArgKind::RequestArray)
            && (!args.contains(&ArgKind::Rank)
                || args.iter().filter(|k| **k == ArgKind::RequestArray).count() > 1)
        {
            return Err(bad(
                "a `request_array` comes once, with a `rank` argument: how many requests it \
                 holds"
                    .into(),
            ));
        }
        if args.contains(&ArgKind::IndexArray)
            && (args.iter().filter(|k| **k == ArgKind::IndexArray).count() > 1
                || !args.contains(&ArgKind::RequestArray)
                || !args.contains(&ArgKind::OutInt32))
        {
            return Err(bad(
                "an `index_array` (indices into the call's `request_array`, filled by the call) \
                 comes once, with the `request_array` and an `out_int32`: how many it holds"
                    .into(),
            ));
        }
        let mut first_arg = [NO_ARG; ArgKind::COUNT];
        for (i, k) in args.iter().enumerate().rev() {
            first_arg[*k as usize] = i as u8;
            // The stream a call works on, named or not.
            if k.stream_var().is_some() {
                first_arg[ArgKind::Handle as usize] = i as u8;
            }
        }
        probes.push(Probe {
            id: id as u32,
            layer,
            target,
            op,
            args,
            ret,
            ret_int,
            collective: p.collective,
            enabled: p.enabled,
            internal: p.internal,
            calls_in: p.calls_in.clone(),
            only_if_zero,
            names_handle: p.names_handle,
            line: lines.at(span.start),
            datatype_size_offset: raw.mpi_datatype_size_offset,
            status_count_offset: raw.mpi_status_count_offset,
            stdio_fileno_offset: raw.stdio_fileno_offset.filter(|_| layer == Layer::Stdio),
            stdio_fd_flag: raw
                .stdio_fd_flag
                .filter(|_| layer == Layer::Stdio && raw.stdio_fileno_offset.is_some()),
            stdio_read_offset: raw.stdio_read_offset.filter(|_| ret == RetKind::Scanned),
            mpi_objects_symbol: mpi_objects.clone(),
            other_names,
            only,
            only_files: p.only_files,
            fd_inode: p.fd_inode,
            fd_name: p.fd_name.clone(),
            since: p.since.clone(),
            only_in: p.only_in.clone(),
            first_arg,
        });
    }
    if probes.len() > FUNC_INT_HANDLES as usize {
        return Err(err(0..0, format!("more than {FUNC_INT_HANDLES} probes")));
    }
    let values: usize = probes
        .iter()
        .filter_map(|p| p.only.as_ref())
        .map(|o| o.values.len())
        .sum();
    if values > MAX_ONLY_VALUES as usize {
        return Err(err(
            0..0,
            format!("{values} `only` values in all; at most {MAX_ONLY_VALUES}"),
        ));
    }
    Ok(probes)
}

/// The arguments of an io_uring request and where each is read (`fields`, one per
/// argument). Kernel strings (`path`, `str`), integers and the request's file (`kfile`,
/// last, read at completion; its device goes in the slot after it).
fn request_fields(args: &[ArgKind], fields: &[String]) -> Result<Vec<FieldPath>, String> {
    use ArgKind::*;
    if fields.len() != args.len() {
        return Err(format!(
            "io_uring requests name the request's field of each argument: {} `args`, {} `fields`",
            args.len(),
            fields.len()
        ));
    }
    for (i, a) in args.iter().enumerate() {
        let ok = matches!(
            a,
            Fd | Dirfd | Path | Str | Flags | Mode | Offset | Size | IovCnt | Slot | Int | KFile
        );
        if !ok {
            return Err(format!(
                "argument {a:?} cannot be read from an io_uring request (fd, dirfd, path, str, \
                 flags, mode, offset, size, iovcnt, slot, int, kfile)",
                a = a.as_str()
            ));
        }
        if *a == KFile && (i + 1 != args.len() || args.len() >= MAX_ARGS) {
            return Err(format!(
                "`kfile` is the last argument, with a free slot after it: at most {} arguments",
                MAX_ARGS - 1
            ));
        }
    }
    for one in [Fd, KFile, Slot] {
        if args.iter().filter(|a| **a == one).count() > 1 {
            return Err(format!("at most one `{}` argument", one.as_str()));
        }
    }
    if args.iter().filter(|a| matches!(a, Path | Str)).count() > 2 {
        return Err("at most two strings (`path`, `str`) per io_uring request".into());
    }
    fields.iter().map(|f| f.parse()).collect()
}

/// A Linux AIO request's arguments are taken from its `iocb` by kind (see
/// `linux_aio::iocb_member`): no `fields`, and each kind at most once.
fn aio_request_args(
    args: &[ArgKind],
    fields: &[String],
    opcode: u8,
) -> Result<Vec<FieldPath>, String> {
    use ArgKind::*;
    if u32::from(opcode) >= strata_common::AIO_OPS {
        return Err(format!(
            "Linux AIO opcode {opcode}: strata maps opcodes below {}",
            strata_common::AIO_OPS
        ));
    }
    if !fields.is_empty() {
        return Err(
            "Linux AIO requests have no `fields`: each argument is the iocb's \
                    member of its kind"
                .into(),
        );
    }
    for (i, a) in args.iter().enumerate() {
        if !matches!(a, Fd | Offset | Size | IovCnt | Buf | Iov | Flags) {
            return Err(format!(
                "argument {a:?} is no member of a Linux AIO iocb (fd, offset, size, iovcnt, \
                 buf, iov, flags)",
                a = a.as_str()
            ));
        }
        let same = |b: &ArgKind| {
            b == a
                || (matches!(a, Size | IovCnt) && matches!(b, Size | IovCnt))
                || (matches!(a, Buf | Iov) && matches!(b, Buf | Iov))
        };
        if args[..i].iter().any(same) {
            return Err(format!(
                "the iocb's member of `{}` is named twice",
                a.as_str()
            ));
        }
    }
    Ok(Vec::new())
}

/// Validates a probe's `only` table: one argument it declares, each value named once and
/// within 32 bits.
fn parse_only(
    raw: &std::collections::BTreeMap<String, toml::Table>,
    args: &[ArgKind],
) -> Result<Option<Only>, String> {
    let mut entries = raw.iter();
    let Some((kind, table)) = entries.next() else {
        return Ok(None);
    };
    if entries.next().is_some() {
        return Err("`only` names one argument (`only.cmd = { ... }`)".into());
    }
    let k: ArgKind = kind.parse()?;
    let arg = args
        .iter()
        .position(|a| *a == k)
        .ok_or_else(|| format!("`only.{kind}`: the probe declares no `{kind}` argument"))?;
    if table.is_empty() {
        return Err(format!(
            "`only.{kind}` is empty: name the values to record (`NAME = 0x...`), or remove it"
        ));
    }
    let mut values: Vec<(String, u32)> = Vec::with_capacity(table.len());
    for (name, v) in table {
        let v = v
            .as_integer()
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| {
                format!("`only.{kind}.{name}` = {v}: expected an integer from 0 to 0xffffffff")
            })?;
        if let Some((other, _)) = values.iter().find(|(_, x)| *x == v) {
            return Err(format!(
                "`only.{kind}`: {name} and {other} are the same value {v:#x}"
            ));
        }
        values.push((name.clone(), v));
    }
    Ok(Some(Only { arg, values }))
}

/// Reads probes from `path`, or the built-in list when `None`.
pub fn load(path: Option<&Path>) -> anyhow::Result<Vec<Probe>> {
    use anyhow::Context as _;
    match path {
        None => Ok(parse(BUILTIN, "probes.toml (built in)")?),
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("cannot read probes file {}", p.display()))?;
            Ok(parse(&text, &p.display().to_string())?)
        }
    }
}

/// Applies `--layers` and `--skip-layers`: when `layers` is given, exactly those layers are
/// on, else the probes the file enables; those of `skip` are then off; and the loader's
/// report of loaded libraries (op `load`) is on whenever a library probe is.
pub fn select_layers(probes: &mut [Probe], layers: Option<&[Layer]>, skip: &[Layer]) {
    for p in probes.iter_mut().filter(|p| p.op != Op::Load) {
        p.enabled = layers.map_or(p.enabled, |l| l.contains(&p.layer)) && !skip.contains(&p.layer);
    }
    let libraries = probes
        .iter()
        .any(|p| p.enabled && p.op != Op::Load && matches!(p.target, Target::Uprobe { .. }));
    for p in probes.iter_mut().filter(|p| p.op == Op::Load) {
        // The file's own choice stands where no layer was named.
        p.enabled = libraries && (layers.is_some() || p.enabled);
    }
    // fscanf's bytes need the read(2)s that refilled its stream: without them, the kernel
    // side does not read what the stream has buffered (two user reads a call).
    let reads = probes
        .iter()
        .any(|p| p.enabled && matches!(&p.target, Target::Syscall(n) if n == "read"));
    if !reads {
        for p in probes.iter_mut() {
            p.stdio_read_offset = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_parses() {
        let probes = parse(BUILTIN, "probes.toml").unwrap();
        assert!(probes.len() > 60);
        let fwrite = probes.iter().find(|p| p.function() == "fwrite").unwrap();
        assert_eq!(fwrite.layer, Layer::Stdio);
        assert_eq!(fwrite.arg(ArgKind::Handle), Some(3));
        let open = probes.iter().find(|p| p.function() == "openat").unwrap();
        assert_eq!(open.spec().str_mask, 0b10);
        let exit = probes
            .iter()
            .find(|p| p.function() == "exit_group")
            .unwrap();
        assert_ne!(exit.spec().flags & SPEC_EMIT_AT_ENTRY, 0);
        assert!(
            probes
                .iter()
                .filter(|p| p.layer == Layer::Libc && p.op != Op::Load)
                .all(|p| !p.enabled),
            "the libc wrappers are off by default"
        );
        for (i, p) in probes.iter().enumerate() {
            assert_eq!(p.id as usize, i);
        }
    }

    /// Each probe's line is where its table opens in the file (the `probes` table's
    /// `probes_line`, the line an error about it names).
    #[test]
    fn probes_know_their_line() {
        let probes = parse(BUILTIN, "probes.toml").unwrap();
        let lines: Vec<&str> = BUILTIN.lines().collect();
        let tables: Vec<usize> = (0..lines.len())
            .filter(|i| lines[*i].trim() == "[[probe]]")
            .map(|i| i + 1)
            .collect();
        assert_eq!(probes.len(), tables.len());
        for (p, line) in probes.iter().zip(&tables) {
            assert_eq!(p.line, *line, "{}", p.function());
        }
    }

    /// The MPICH ABI's spec of a probe differs only where the ABIs do.
    #[test]
    fn integer_handles_have_their_own_spec() {
        let probes = parse(BUILTIN, "probes.toml").unwrap();
        let find = |f: &str| probes.iter().find(|p| p.function() == f).unwrap();
        let iwrite = find("MPI_File_iwrite_at");
        let (objects, ints) = (iwrite.spec(), iwrite.int_handles_spec());
        assert_eq!(objects.func_id, iwrite.id);
        assert_eq!(ints.func_id, iwrite.id + FUNC_INT_HANDLES);
        assert_eq!((objects.datatype_arg, objects.out_size), (4, 8));
        assert_eq!((ints.datatype_arg, ints.out_size), (NO_ARG, 4));
        assert_eq!(ints.deref_mask, objects.deref_mask);
        // A blocking transfer's status: its count read inside Open MPI's, at the start of
        // the MPICH ABI's.
        let read = find("MPI_File_read_all");
        assert_eq!(
            (read.spec().out_arg, read.spec().out_size),
            (4, strata_common::OUT_MPI_STATUS)
        );
        assert_eq!(
            (
                read.int_handles_spec().out_arg,
                read.int_handles_spec().out_size
            ),
            (4, 8)
        );
        assert!(iwrite.has_mpi_handles() && find("MPI_Wait").has_mpi_handles());
        assert!(!find("MPI_File_open").has_mpi_handles());
        assert_eq!(&*iwrite.other_names, ["libmpich".to_string()]);
        assert!(find("H5Dwrite").other_names.is_empty());
        let bad = "[library_names]\nlibmpi = [\"libmpich.so.12\"]\n";
        let e = parse(bad, "p.toml").unwrap_err().to_string();
        assert!(e.contains("base names only"), "{e}");
    }

    /// The loader's report is on with any library layer, and only then.
    #[test]
    fn the_loader_follows_the_library_layers() {
        let loader_on = |layers: &[Layer]| {
            let mut probes = parse(BUILTIN, "probes.toml").unwrap();
            select_layers(&mut probes, Some(layers), &[]);
            let load: Vec<bool> = probes
                .iter()
                .filter(|p| p.op == Op::Load)
                .map(|p| p.enabled)
                .collect();
            assert_eq!(load.len(), 1);
            load[0]
        };
        assert!(loader_on(&[Layer::Hdf5]));
        assert!(loader_on(&[Layer::Posix, Layer::Stdio]));
        assert!(!loader_on(&[Layer::Posix, Layer::Block]));
        let e = parse_err(
            "[[probe]]\nlayer = \"libc\"\nlibrary = \"ld-linux-x86-64.so.2\"\nsymbol = \"_dl_debug_state\"\nop = \"load\"\nargs = []\nret = \"none\"\n",
        );
        assert!(e.to_string().contains("internal = true"), "{e}");
    }

    const IOCTL: &str = "[[probe]]\nlayer = \"posix\"\nsyscall = \"ioctl\"\nop = \"meta\"\nargs = [\"fd\", \"cmd\", \"ptr\"]\nret = \"status\"\n";

    #[test]
    fn only_keeps_named_values_of_one_declared_argument() {
        let p = &parse(
            &format!("{IOCTL}[probe.only.cmd]\nFICLONE = 0x40049409\nGETSTRIPE_NEW = 0x8020669b\n"),
            "t.toml",
        )
        .unwrap()[0];
        let only = p.only.as_ref().unwrap();
        assert_eq!(only.arg, 1);
        assert_eq!(p.spec().only_arg, 1);
        // The kernel compares the low 32 bits: a sign-extended command keeps its name.
        assert_eq!(only.name_of(0xffff_ffff_8020_669b), Some("GETSTRIPE_NEW"));
        assert_eq!(only.name_of(0x4004_9409), Some("FICLONE"));
        assert_eq!(only.name_of(0x5401), None);
        // Without `only`, every call is recorded.
        assert_eq!(parse(IOCTL, "t.toml").unwrap()[0].spec().only_arg, NO_ARG);
        let builtin = parse(BUILTIN, "probes.toml").unwrap();
        let ioctl = builtin.iter().find(|p| p.function() == "ioctl").unwrap();
        assert_eq!(ioctl.spec().only_arg, 1);
    }

    /// `text` is read at return, for library functions only: fgets's line, fputs's string.
    #[test]
    fn text_is_read_at_return_of_library_functions() {
        let builtin = parse(BUILTIN, "probes.toml").unwrap();
        for (f, arg) in [("fgets", 0), ("fputs", 0), ("__fgets_chk", 0)] {
            let p = builtin.iter().find(|p| p.function() == f).unwrap();
            let spec = p.spec();
            assert_eq!(
                (spec.out_arg, spec.out_size),
                (arg, strata_common::OUT_TEXT),
                "{f}"
            );
        }
        let e = parse(
            "[[probe]]\nlayer = \"posix\"\nsyscall = \"write\"\nop = \"write\"\nargs = [\"fd\", \"text\", \"size\"]\nret = \"bytes\"\n",
            "t.toml",
        )
        .unwrap_err();
        assert!(e.to_string().contains("library functions only"), "{e}");
    }

    /// A stdio call's stream argument has its fd read at entry, into the slot after the last
    /// argument, where there is one; other layers' handles are not streams.
    #[test]
    fn streams_have_their_fd_read_where_a_slot_is_free() {
        let builtin = parse(BUILTIN, "probes.toml").unwrap();
        let spec = |f: &str| builtin.iter().find(|p| p.function() == f).unwrap().spec();
        assert_eq!(
            spec("fwrite").stream_arg,
            3,
            "fwrite(buf, size, count, stream)"
        );
        assert_eq!(spec("__fread_chk").stream_arg, 4);
        assert_eq!(spec("fopen").stream_arg, NO_ARG, "no stream argument");
        assert_eq!(spec("H5Dwrite").stream_arg, NO_ARG, "not a stream");
        // The thread's remembered stream is forgotten where a call ends it.
        for f in ["fclose", "freopen"] {
            assert_ne!(spec(f).flags & SPEC_STREAM_END, 0, "{f}");
        }
        assert_eq!(spec("fwrite").flags & SPEC_STREAM_END, 0);
        let six = "stdio_fileno_offset = 112\n[[probe]]\nlayer = \"stdio\"\nlibrary = \"libc.so.6\"\nsymbol = \"f\"\nop = \"write\"\nargs = [\"int\", \"int\", \"int\", \"int\", \"int\", \"handle\"]\nret = \"status\"\n";
        let p = parse(six, "t.toml").unwrap();
        assert_eq!(
            p[0].spec().stream_arg,
            NO_ARG,
            "no slot after six arguments"
        );
    }

    /// printf's stream is libc's `stdout`, in a slot printf does not pass: read at entry
    /// (`SPEC_IMPLICIT_STREAM`) and decoded as a `handle` argument, its fd after it.
    #[test]
    fn only_streams_with_the_fd_flag_are_read_for_their_fd() {
        let builtin = parse(BUILTIN, "probes.toml").unwrap();
        let of = |f: &str| builtin.iter().find(|p| p.function() == f).unwrap();
        assert_eq!(of("fwrite").stdio_fd_flag, Some(0x2000));
        assert_eq!(of("write").stdio_fd_flag, None, "not a stdio probe");
        let probe = "[[probe]]\nlayer = \"stdio\"\nlibrary = \"libc.so.6\"\nsymbol = \"f\"\nop = \"write\"\nargs = [\"handle\"]\nret = \"status\"\n";
        for top in [
            "stdio_fd_flag = 0x2000\n",
            "stdio_fileno_offset = 112\nstdio_fd_flag = 0x2001\n",
            "stdio_fileno_offset = 112\nstdio_fd_flag = 0\n",
        ] {
            let e = parse(&format!("{top}{probe}"), "t.toml").unwrap_err();
            assert!(
                e.to_string().contains("`stdio_fd_flag` is one bit"),
                "{top}: {e}"
            );
        }
        let ok = parse(
            &format!("stdio_fileno_offset = 112\nstdio_fd_flag = 0x2000\n{probe}"),
            "t.toml",
        )
        .unwrap();
        assert_eq!(ok[0].stdio_fd_flag, Some(0x2000));
    }

    #[test]
    fn calls_on_stdout_and_stdin_name_their_stream() {
        let builtin = parse(BUILTIN, "probes.toml").unwrap();
        let probe = |f: &str| builtin.iter().find(|p| p.function() == f).unwrap();
        for (f, var, at) in [
            ("printf", "stdout", 1),
            ("__vprintf_chk", "stdout", 3),
            ("puts", "stdout", 1),
            ("getchar", "stdin", 0),
            ("__isoc99_scanf", "stdin", 1),
            ("__isoc99_vscanf", "stdin", 2),
            ("putchar_unlocked", "stdout", 1),
        ] {
            let p = probe(f);
            let spec = p.spec();
            assert_eq!(p.stream_var(), Some(var), "{f}");
            assert_eq!(p.arg(ArgKind::Handle), Some(at), "{f}");
            assert_eq!(
                (spec.stream_arg, spec.nargs),
                (at as u8, at as u8 + 1),
                "{f}"
            );
            assert_ne!(spec.flags & SPEC_IMPLICIT_STREAM, 0, "{f}");
        }
        assert_eq!(probe("fwrite").spec().flags & SPEC_IMPLICIT_STREAM, 0);
        // puts writes a newline after its string; fputs does not.
        assert_eq!(probe("puts").text_extra(), Some(1));
        assert_eq!(probe("fputs").text_extra(), Some(0));

        let with = |fileno: &str, layer: &str, args: &str| {
            parse(
                &format!(
                    "{fileno}[[probe]]\nlayer = \"{layer}\"\nlibrary = \"libc.so.6\"\nsymbol = \"f\"\nop = \"write\"\nargs = {args}\nret = \"status\"\n"
                ),
                "t.toml",
            )
        };
        let fileno = "stdio_fileno_offset = 112\n";
        assert!(with(fileno, "stdio", "[\"buf\", \"stdout\"]").is_ok());
        for (f, layer, args, why) in [
            ("", "stdio", "[\"stdout\"]", "stdio_fileno_offset"),
            (fileno, "mpiio", "[\"stdout\"]", "stdio_fileno_offset"),
            (fileno, "stdio", "[\"handle\", \"stdout\"]", "one stream"),
            (fileno, "stdio", "[\"stdin\", \"stdout\"]", "one stream"),
            (
                fileno,
                "stdio",
                "[\"int\", \"int\", \"int\", \"int\", \"int\", \"stdout\"]",
                "first 5",
            ),
        ] {
            let e = with(f, layer, args).unwrap_err().to_string();
            assert!(e.contains(why), "{layer} {args}: {e}");
        }
    }

    /// fscanf's stream is read at entry and at return for what it has buffered: the stream
    /// is `out_arg`, its fd and what it had buffered go in the two slots after the arguments.
    #[test]
    fn scanned_calls_read_their_streams_buffer() {
        let builtin = parse(BUILTIN, "probes.toml").unwrap();
        let probe = |f: &str| builtin.iter().find(|p| p.function() == f).unwrap();
        for (f, stream, nargs) in [
            ("__isoc99_fscanf", 0, 2),
            ("__isoc99_vfscanf", 0, 3),
            ("__isoc99_scanf", 1, 2),
            ("vscanf", 2, 3),
        ] {
            let spec = probe(f).spec();
            assert_eq!(
                (spec.out_arg, spec.out_size, spec.stream_arg, spec.nargs),
                (stream, strata_common::OUT_BUFFERED, stream, nargs),
                "{f}"
            );
            assert_eq!(probe(f).stdio_read_offset, Some(8), "{f}");
        }
        assert_eq!(
            probe("fgets").stdio_read_offset,
            None,
            "its line says its bytes"
        );
        // Without the read(2)s beneath, the buffer is not read.
        let spec = |layers: &[Layer]| {
            let mut probes = builtin.clone();
            select_layers(&mut probes, Some(layers), &[]);
            let p = probes.iter().find(|p| p.function() == "__isoc99_fscanf");
            p.unwrap().spec()
        };
        let stdio_only = spec(&[Layer::Stdio]);
        assert_eq!((stdio_only.out_arg, stdio_only.out_size), (NO_ARG, 0));
        assert_eq!(
            spec(&[Layer::Stdio, Layer::Posix]).out_size,
            strata_common::OUT_BUFFERED
        );

        let with = |offsets: &str, layer: &str, args: &str| {
            parse(
                &format!(
                    "{offsets}[[probe]]\nlayer = \"{layer}\"\nlibrary = \"libc.so.6\"\nsymbol = \"f\"\nop = \"read\"\nargs = {args}\nret = \"scanned\"\n"
                ),
                "t.toml",
            )
        };
        let both = "stdio_fileno_offset = 112\nstdio_read_offset = 8\n";
        assert!(with(both, "stdio", "[\"handle\", \"buf\", \"ptr\", \"int\"]").is_ok());
        for (offsets, layer, args) in [
            ("stdio_fileno_offset = 112\n", "stdio", "[\"handle\"]"),
            ("stdio_read_offset = 8\n", "stdio", "[\"handle\"]"),
            (both, "mpiio", "[\"handle\"]"),
            (both, "stdio", "[\"buf\"]"),
            (both, "stdio", "[\"handle\", \"text\"]"),
            (
                both,
                "stdio",
                "[\"handle\", \"int\", \"int\", \"int\", \"int\"]",
            ),
        ] {
            let e = with(offsets, layer, args).unwrap_err().to_string();
            assert!(
                e.contains("ret = \"scanned\""),
                "{offsets} {layer} {args}: {e}"
            );
        }
    }

    /// `fd_inode`: the kernel side reads the file of the descriptor a syscall returns or
    /// fills; refused elsewhere. `op = "pipe"` and `fd_pair` come together.
    #[test]
    fn fd_inode_names_the_descriptor_a_syscall_makes() {
        let builtin = parse(BUILTIN, "probes.toml").unwrap();
        let spec = |f: &str| builtin.iter().find(|p| p.function() == f).unwrap().spec();
        assert_eq!(spec("pipe2").fd_file_arg, 0, "the pair");
        assert_eq!(spec("pipe2").ret_deref_mask, 1, "read at return");
        assert_eq!(spec("memfd_create").fd_file_arg, strata_common::FD_FROM_RET);
        assert_eq!(
            spec("openat").fd_file_arg,
            strata_common::FD_FROM_RET,
            "a file removed before strata looks keeps its inode"
        );
        for dup in ["dup", "dup2", "dup3"] {
            assert_eq!(
                spec(dup).fd_file_arg,
                strata_common::FD_FROM_RET,
                "{dup}: a copy of a descriptor strata never saw made is known by its inode"
            );
        }
        let with = |target: &str, op: &str, args: &str, ret: &str, extra: &str| {
            parse(
                &format!(
                    "[[probe]]\nlayer = \"posix\"\n{target}\nop = \"{op}\"\nargs = {args}\nret = \"{ret}\"\n{extra}"
                ),
                "t.toml",
            )
        };
        let sys = "syscall = \"pipe2\"";
        assert!(
            with(
                sys,
                "pipe",
                "[\"fd_pair\", \"flags\"]",
                "status",
                "fd_inode = true\n"
            )
            .is_ok()
        );
        assert!(with(sys, "pipe", "[\"fd_pair\", \"flags\"]", "status", "").is_ok());
        // A copy's descriptor too (dup2 of one strata never saw made); fcntl returns one only
        // for some commands.
        let dup2 = "syscall = \"dup2\"";
        let fd_newfd = "[\"fd\", \"newfd\"]";
        assert!(with(dup2, "dup", fd_newfd, "fd", "fd_inode = true\n").is_ok());
        let fcntl = with(dup2, "fcntl", fd_newfd, "fd", "fd_inode = true\n");
        assert!(fcntl.unwrap_err().to_string().contains("`fd_inode`"));
        for (target, op, args, ret, extra, says) in [
            (
                "library = \"libc.so.6\"\nsymbol = \"memfd_create\"",
                "open",
                "[\"name\", \"flags\"]",
                "fd",
                "fd_inode = true\n",
                "`fd_inode`",
            ),
            (
                sys,
                "meta",
                "[\"ptr\", \"flags\"]",
                "status",
                "fd_inode = true\n",
                "`fd_inode`",
            ),
            (
                sys,
                "pipe",
                "[\"ptr\", \"flags\"]",
                "status",
                "",
                "`fd_pair`",
            ),
            (
                sys,
                "meta",
                "[\"fd_pair\", \"flags\"]",
                "status",
                "",
                "`fd_pair`",
            ),
            (
                sys,
                "pipe",
                "[\"fd_pair\", \"fd_pair\"]",
                "status",
                "",
                "`fd_pair`",
            ),
        ] {
            let e = with(target, op, args, ret, extra).unwrap_err().to_string();
            assert!(e.contains(says), "{op} {args} {extra}: {e}");
        }
    }

    /// `rights`: the message's first passed descriptor replaces the pointer at return, and
    /// is the one whose file the kernel side reads; refused without `fd_inode`, off a
    /// transfer, twice, for library functions, and where its three slots do not fit.
    #[test]
    fn rights_name_the_descriptor_a_message_passes() {
        let builtin = parse(BUILTIN, "probes.toml").unwrap();
        for f in ["sendmsg", "recvmsg"] {
            let spec = builtin.iter().find(|p| p.function() == f).unwrap().spec();
            assert_eq!((spec.rights_arg, spec.fd_file_arg), (1, 1), "{f}");
        }
        let spec = builtin
            .iter()
            .find(|p| p.function() == "openat")
            .unwrap()
            .spec();
        assert_eq!(spec.rights_arg, NO_ARG);
        let with = |target: &str, op: &str, args: &str, extra: &str| {
            parse(
                &format!(
                    "[[probe]]\nlayer = \"posix\"\n{target}\nop = \"{op}\"\nargs = {args}\nret = \"bytes\"\n{extra}"
                ),
                "t.toml",
            )
        };
        let sys = "syscall = \"recvmsg\"";
        let msg = "[\"fd\", \"rights\", \"int\"]";
        assert!(with(sys, "read", msg, "fd_inode = true\n").is_ok());
        for (target, op, args, extra, says) in [
            (sys, "read", msg, "", "`rights`"),
            (sys, "meta", msg, "fd_inode = true\n", "`rights`"),
            (
                sys,
                "read",
                "[\"fd\", \"rights\", \"rights\"]",
                "fd_inode = true\n",
                "`rights`",
            ),
            (
                sys,
                "read",
                "[\"fd\", \"rights\", \"int\", \"int\"]",
                "fd_inode = true\n",
                "`rights`",
            ),
            (
                "library = \"libc.so.6\"\nsymbol = \"recvmsg\"",
                "read",
                msg,
                "",
                "syscalls only",
            ),
        ] {
            let e = with(target, op, args, extra).unwrap_err().to_string();
            assert!(e.contains(says), "{op} {args} {extra}: {e}");
        }
    }

    /// `fd_name`: the built-in event descriptors are named so; refused on what is not an open
    /// returning a descriptor, beside a path or a name, beside `fd_inode`, and empty.
    #[test]
    fn fd_name_is_for_opens_of_no_file() {
        let builtin = parse(BUILTIN, "probes.toml").unwrap();
        let name = |f: &str| {
            builtin
                .iter()
                .find(|p| p.function() == f)
                .unwrap()
                .fd_name
                .clone()
        };
        assert_eq!(name("eventfd2").as_deref(), Some("anon_inode:[eventfd]"));
        assert_eq!(
            name("epoll_create1").as_deref(),
            Some("anon_inode:[eventpoll]")
        );
        assert_eq!(name("socket"), None, "a socket has an inode of its own");
        let with = |op: &str, args: &str, ret: &str, extra: &str| {
            parse(
                &format!(
                    "[[probe]]\nlayer = \"posix\"\nsyscall = \"eventfd2\"\nop = \"{op}\"\nargs = {args}\nret = \"{ret}\"\n{extra}"
                ),
                "t.toml",
            )
        };
        let named = "fd_name = \"anon_inode:[eventfd]\"\n";
        assert!(with("open", "[\"int\", \"int\"]", "fd", named).is_ok());
        for (op, args, ret, extra) in [
            ("meta", "[\"int\", \"int\"]", "fd", named.to_string()),
            ("open", "[\"int\", \"int\"]", "status", named.to_string()),
            ("open", "[\"path\", \"int\"]", "fd", named.to_string()),
            ("open", "[\"name\", \"int\"]", "fd", named.to_string()),
            (
                "open",
                "[\"int\", \"int\"]",
                "fd",
                format!("{named}fd_inode = true\n"),
            ),
            (
                "open",
                "[\"int\", \"int\"]",
                "fd",
                "fd_name = \"\"\n".to_string(),
            ),
        ] {
            let e = with(op, args, ret, &extra).unwrap_err().to_string();
            assert!(e.contains("`fd_name`"), "{op} {args} {ret} {extra}: {e}");
        }
    }

    /// A request array is only as long as the call says: without its `rank`, or twice,
    /// refused; the kernel side copies that many requests of the MPI's width. An index array
    /// (MPI_Waitsome's) is copied at return, and needs its requests and count.
    #[test]
    fn a_request_array_needs_its_count() {
        for args in [
            "[\"int\", \"request_array\", \"ptr\"]",
            "[\"rank\", \"request_array\", \"request_array\"]",
        ] {
            let e = parse_err(&format!(
                "[[probe]]\nlayer = \"mpiio\"\nlibrary = \"libmpi.so.40\"\nsymbol = \"MPI_Waitall\"\nop = \"wait\"\nargs = {args}\nret = \"mpi_status\"\n",
            ));
            assert!(e.to_string().contains("with a `rank`"), "{args}: {e}");
        }

        let builtin = parse(BUILTIN, "probes.toml").unwrap();
        let some = builtin
            .iter()
            .find(|p| p.function() == "MPI_Waitsome")
            .unwrap();
        let spec = some.spec();
        assert_eq!(
            (spec.ret_blob_arg, spec.blob_mask),
            (3, 0),
            "indices at return, not a fixed-size array"
        );
        assert_eq!(
            (spec.array_arg, spec.array_len_arg, spec.array_elem_shift),
            (1, 0, 3),
            "requests at entry, as many as the first argument says, pointers"
        );
        assert_eq!(some.int_handles_spec().array_elem_shift, 2, "MPICH: ints");
        assert_eq!((spec.out_arg, spec.out_size), (2, 4), "their count");
        let waitall = builtin
            .iter()
            .find(|p| p.function() == "MPI_Waitall")
            .unwrap()
            .spec();
        assert_eq!((waitall.ret_blob_arg, waitall.array_arg), (NO_ARG, 1));
        let h5 = builtin
            .iter()
            .find(|p| p.function() == "H5Sselect_hyperslab")
            .unwrap()
            .spec();
        assert_eq!(h5.array_arg, NO_ARG, "dimensions are fixed-size arrays");
        assert_ne!(h5.blob_mask, 0);
        let with = |args: &str| {
            parse(
                &format!(
                    "[[probe]]\nlayer = \"mpiio\"\nlibrary = \"libmpi.so.40\"\nsymbol = \"MPI_Waitsome\"\nop = \"wait\"\nargs = {args}\nret = \"mpi_status\"\n"
                ),
                "t.toml",
            )
        };
        assert!(with("[\"rank\", \"request_array\", \"out_int32\", \"index_array\"]").is_ok());
        for args in [
            "[\"rank\", \"ptr\", \"out_int32\", \"index_array\"]",
            "[\"rank\", \"request_array\", \"ptr\", \"index_array\"]",
            "[\"rank\", \"request_array\", \"out_int32\", \"index_array\", \"index_array\"]",
        ] {
            let e = with(args).unwrap_err().to_string();
            assert!(e.contains("`index_array`"), "{args}: {e}");
        }
    }

    /// The cookie keeps a stream variable's signed distance from the probed address.
    #[test]
    fn stream_variable_cookies_keep_their_delta() {
        use strata_common::{
            COOKIE_STREAM_INDIRECT, COOKIE_STREAM_VAR, stream_var_cookie, stream_var_delta,
        };
        for delta in [0, 1, -1, 0x1d2e08 - 0x60770, -(1 << 28), (1 << 28) - 1] {
            for indirect in [false, true] {
                let c = stream_var_cookie(77, delta, indirect).unwrap();
                assert_eq!(c as u32, 77);
                assert_eq!(stream_var_delta(c), delta);
                assert_ne!(c & COOKIE_STREAM_VAR, 0);
                assert_eq!(c & COOKIE_STREAM_INDIRECT != 0, indirect);
                assert_eq!(c & strata_common::COOKIE_LOAD_AT_CALL, 0);
            }
        }
        assert_eq!(stream_var_cookie(1, 1 << 28, false), None);
        assert_eq!(stream_var_cookie(1, -(1 << 28) - 1, true), None);
    }

    /// A reference count (`refs`) is returned about the handle a call keeps or closes: an
    /// int, failed when negative; elsewhere the file is refused.
    #[test]
    fn reference_counts_are_for_calls_that_keep_or_close_a_handle() {
        let builtin = parse(BUILTIN, "probes.toml").unwrap();
        for (f, op) in [("H5Iinc_ref", Op::Meta), ("H5Idec_ref", Op::Close)] {
            let p = builtin.iter().find(|p| p.function() == f).unwrap();
            assert_eq!((p.ret, p.op), (RetKind::Refs, op), "{f}");
        }
        let probe = |op: &str, args: &str| {
            parse(
                &format!(
                    "[[probe]]\nlayer = \"hdf5\"\nlibrary = \"libhdf5.so\"\nsymbol = \"f\"\nop = \"{op}\"\nargs = [{args}]\nret = \"refs\"\n"
                ),
                "t.toml",
            )
        };
        assert!(probe("close", "\"handle\"").is_ok());
        for (op, args) in [("open", "\"handle\""), ("meta", "\"int\"")] {
            let e = probe(op, args).unwrap_err();
            assert!(e.to_string().contains("ret = \"refs\""), "{e}");
        }
    }

    /// `since` names the library version that added a symbol, `only_in` the builds that
    /// have it: library functions only.
    #[test]
    fn since_and_only_in_are_for_library_functions() {
        let builtin = parse(BUILTIN, "probes.toml").unwrap();
        let probe = |f: &str| builtin.iter().find(|p| p.function() == f).unwrap();
        assert_eq!(
            probe("__isoc23_fscanf").since.as_deref(),
            Some("glibc 2.38")
        );
        assert_eq!(
            probe("H5Pset_fapl_mpio").only_in.as_deref(),
            Some("parallel builds")
        );
        assert_eq!(probe("H5Dwrite").only_in, None);
        for key in ["since = \"Linux 6.6\"", "only_in = \"x86\""] {
            let e = parse(
                &format!("[[probe]]\nlayer = \"posix\"\nsyscall = \"fchmodat2\"\nop = \"setattr\"\nargs = [\"dirfd\", \"path\", \"mode\", \"flags\"]\nret = \"status\"\n{key}\n"),
                "t.toml",
            )
            .unwrap_err();
            assert!(e.to_string().contains("`only_in`"), "{e}");
            assert!(e.to_string().contains("t.toml:1"), "{e}");
        }
    }

    #[test]
    fn only_files_names_the_fd_argument_of_a_syscall() {
        let builtin = parse(BUILTIN, "probes.toml").unwrap();
        let mmap = builtin.iter().find(|p| p.function() == "mmap").unwrap();
        assert_eq!(
            mmap.spec().files_arg,
            4,
            "mmap(addr, len, prot, flags, fd, off)"
        );
        // Without it, every call is recorded.
        assert_eq!(parse(IOCTL, "t.toml").unwrap()[0].spec().files_arg, NO_ARG);
        for (probe, needle) in [
            (
                "[[probe]]\nlayer = \"posix\"\nsyscall = \"msync\"\nop = \"sync\"\nargs = [\"addr\", \"size\", \"flags\"]\nret = \"status\"\nonly_files = true\n",
                "declare one",
            ),
            (
                "[[probe]]\nlayer = \"stdio\"\nlibrary = \"libc.so.6\"\nsymbol = \"fdopen\"\nop = \"open\"\nargs = [\"fd\", \"modestr\"]\nret = \"handle\"\nonly_files = true\n",
                "`only_files` is for syscalls",
            ),
        ] {
            let e = parse_err(probe);
            assert!(e.to_string().contains(needle), "{probe}: {e}");
            assert_eq!(e.line, 1, "{probe}: {e}");
        }
    }

    #[test]
    fn only_tables_that_cannot_be_meant_are_refused() {
        for (table, needle) in [
            ("[probe.only.cmd]\nA = -1\n", "from 0 to 0xffffffff"),
            (
                "[probe.only.cmd]\nA = 0x100000000\n",
                "from 0 to 0xffffffff",
            ),
            (
                "[probe.only.cmd]\nA = \"FICLONE\"\n",
                "from 0 to 0xffffffff",
            ),
            (
                "[probe.only.cmd]\nA = 1\nB = 1\n",
                "B and A are the same value 0x1",
            ),
            ("[probe.only.cmd]\n", "`only.cmd` is empty"),
            (
                "[probe.only.flags]\nA = 1\n",
                "declares no `flags` argument",
            ),
            ("[probe.only.bogus]\nA = 1\n", "unknown argkind \"bogus\""),
            (
                "[probe.only.cmd]\nA = 1\n[probe.only.fd]\nB = 1\n",
                "`only` names one argument",
            ),
        ] {
            let e = parse_err(&format!("{IOCTL}{table}"));
            assert!(e.to_string().contains(needle), "{table}: {e}");
            assert_eq!(e.line, 1, "{table}: {e}");
        }
        let e = parse_err(
            "[[probe]]\nlayer = \"stdio\"\nlibrary = \"libc.so.6\"\nsymbol = \"fputc\"\nop = \"write\"\nargs = [\"int\", \"handle\"]\nret = \"char\"\n[probe.only.int]\nA = 1\n",
        );
        assert!(e.to_string().contains("`only` is for syscalls"), "{e}");
        // More values than the kernel map holds, over all probes.
        let many: String = (0..=MAX_ONLY_VALUES)
            .map(|i| format!("V{i} = {i}\n"))
            .collect();
        let e = parse_err(&format!("{IOCTL}[probe.only.cmd]\n{many}"));
        assert!(e.to_string().contains("at most 1024"), "{e}");
    }

    /// `names_handle` is for a meta call with the handle it names and the name; the built-in
    /// H5Olink has it.
    #[test]
    fn names_handle_is_for_a_call_that_names_its_handle() {
        let probe = |op: &str, args: &str| {
            format!(
                "[[probe]]\nlayer = \"hdf5\"\nlibrary = \"libhdf5.so\"\nsymbol = \"H5Olink\"\nop = \"{op}\"\nargs = [{args}]\nret = \"status\"\nnames_handle = true\n"
            )
        };
        for (op, args) in [
            ("open", r#""handle", "name""#),
            ("meta", r#""handle", "int""#),
            ("meta", r#""int", "name""#),
        ] {
            let e = parse_err(&probe(op, args));
            assert!(
                e.to_string().contains("`names_handle` is for a call"),
                "{op} {args}: {e}"
            );
        }
        let p = parse(&probe("meta", r#""handle", "int", "name""#), "t.toml").unwrap();
        assert!(p[0].names_handle);
        let builtin = parse(BUILTIN, "probes.toml").unwrap();
        let named: Vec<&str> = builtin
            .iter()
            .filter(|p| p.names_handle)
            .map(|p| p.function())
            .collect();
        assert_eq!(named, ["H5Olink"]);
    }

    /// `only_if_zero` names a variable, with or without a byte offset, of the loader's
    /// report alone; the built-in loader probe reads `_r_debug.r_state` and sets the flag.
    #[test]
    fn only_if_zero_names_a_variable_of_the_loaders_report() {
        let loader = |v: &str, op: &str| {
            format!(
                "[[probe]]\nlayer = \"libc\"\nlibrary = \"ld-linux-x86-64.so.2\"\nsymbol = \"_dl_debug_state\"\nop = \"{op}\"\nargs = []\nret = \"none\"\ninternal = true\nonly_if_zero = \"{v}\"\n"
            )
        };
        for bad in [
            "",
            "+24",
            "_r_debug+",
            "_r_debug+-1",
            "_r debug",
            "_r_debug+0x18",
        ] {
            let e = parse_err(&loader(bad, "load"));
            assert!(
                e.to_string()
                    .contains("expected VARIABLE or VARIABLE+OFFSET"),
                "{bad}: {e}"
            );
        }
        let e = parse_err(&loader("_r_debug", "meta"));
        assert!(
            e.to_string().contains("`only_if_zero` is for the loader"),
            "{e}"
        );
        let p = parse(&loader("state", "load"), "t.toml").unwrap();
        assert_eq!(p[0].only_if_zero, Some(("state".to_string(), 0)));
        let builtin = parse(BUILTIN, "probes.toml").unwrap();
        let report = builtin
            .iter()
            .find(|p| p.function() == "_dl_debug_state")
            .unwrap();
        assert_eq!(report.only_if_zero, Some(("_r_debug".to_string(), 24)));
        assert_ne!(report.spec().flags & SPEC_IF_ZERO, 0);
    }

    /// `calls_in` is read for internal library functions only; the built-in file uses it for
    /// HDF5's element count.
    #[test]
    fn calls_in_is_for_internal_library_functions() {
        let e = parse_err(
            "[[probe]]\nlayer = \"hdf5\"\nlibrary = \"libhdf5.so\"\nsymbol = \"H5S_get_select_npoints\"\nop = \"meta\"\nargs = []\nret = \"count\"\ncalls_in = [\"H5D__write\"]\n",
        );
        assert!(e.to_string().contains("`calls_in` is for internal"), "{e}");
        let builtin = parse(BUILTIN, "probes.toml").unwrap();
        let npoints = builtin
            .iter()
            .find(|p| p.function() == "H5S_get_select_npoints")
            .unwrap();
        assert_eq!(npoints.calls_in, ["H5D__write", "H5D__read"]);
    }

    fn parse_err(text: &str) -> ProbeError {
        parse(text, "t.toml").unwrap_err()
    }

    #[test]
    fn io_uring_requests_name_the_field_of_each_argument() {
        let events = "[[probe]]\nlayer = \"uring\"\nkernel = \"uring_submit\"\nattach = [\"tracepoint:io_uring/io_uring_submit_req\"]\n\n";
        let with = |layer: &str, args: &str, fields: &str| {
            format!(
                "{events}[[probe]]\nlayer = \"{layer}\"\nrequest = \"IORING_OP_WRITE\"\nopcode = 23\nop = \"write\"\nargs = {args}\nfields = {fields}\nret = \"bytes\"\n"
            )
        };
        let request =
            |layer: &str, args: &str| with(layer, args, r#"["io_kiocb.cqe.fd", "io_kiocb.file"]"#);
        let p = parse(
            &with(
                "uring",
                r#"["fd", "offset", "size", "kfile"]"#,
                r#"["io_kiocb.cqe.fd", "io_rw.kiocb.ki_pos", "io_rw.len", "io_kiocb.file"]"#,
            ),
            "t.toml",
        )
        .unwrap();
        assert_eq!(p[1].function(), "IORING_OP_WRITE");
        let Target::Request {
            name,
            opcode,
            fields,
        } = &p[1].target
        else {
            panic!("{:?}", p[1].target);
        };
        assert_eq!((name.as_str(), *opcode), ("IORING_OP_WRITE", 23));
        let shown: Vec<String> = fields.iter().map(|f| f.to_string()).collect();
        assert_eq!(
            shown,
            [
                "io_kiocb.cqe.fd",
                "io_rw.kiocb.ki_pos",
                "io_rw.len",
                "io_kiocb.file"
            ]
        );
        assert_eq!(
            fields[1],
            FieldPath {
                root: "io_rw".into(),
                path: vec!["kiocb".into(), "ki_pos".into()],
                behind: vec![],
            }
        );
        let open = with(
            "uring",
            r#"["dirfd", "path", "slot"]"#,
            r#"["io_open.dfd", "io_open.filename->name", "io_open.file_slot"]"#,
        );
        let p = parse(&open, "t.toml").unwrap();
        let Target::Request { fields, .. } = &p[1].target else {
            panic!()
        };
        assert_eq!(
            (fields[1].path.clone(), fields[1].behind.clone()),
            (vec!["filename".to_string()], vec!["name".to_string()])
        );
        for (args, fields, why) in [
            (
                r#"["fd", "kfile"]"#,
                r#"["io_kiocb.cqe.fd"]"#,
                "2 `args`, 1 `fields`",
            ),
            (
                r#"["kfile", "fd"]"#,
                r#"["a.b", "a.c"]"#,
                "`kfile` is the last argument",
            ),
            (
                r#"["fd", "fd"]"#,
                r#"["a.b", "a.c"]"#,
                "at most one `fd` argument",
            ),
            (
                r#"["handle"]"#,
                r#"["a.b"]"#,
                "cannot be read from an io_uring request",
            ),
            (
                r#"["path", "str", "path"]"#,
                r#"["a.b", "a.c", "a.d"]"#,
                "at most two strings",
            ),
            (r#"["fd"]"#, r#"["io_kiocb"]"#, "expected STRUCT.MEMBER"),
            (r#"["fd"]"#, r#"["a.b->"]"#, "expected STRUCT.MEMBER"),
            (r#"["fd"]"#, r#"["a.b c"]"#, "expected STRUCT.MEMBER"),
            (r#"["fd"]"#, r#"["a.b->c->d"]"#, "expected STRUCT.MEMBER"),
        ] {
            let e = parse_err(&with("uring", args, fields));
            assert!(e.reason.contains(why), "{args} {fields}: {e}");
        }
        let e = parse_err(&request("posix", r#"["fd", "kfile"]"#));
        assert!(
            e.reason
                .contains("belong to layer uring (io_uring) or aio (Linux AIO), not posix"),
            "{e}"
        );
        let twice = format!(
            "{}\n{}",
            request("uring", r#"["fd", "kfile"]"#),
            request("uring", r#"["fd", "kfile"]"#).replace(events, "")
        );
        let e = parse_err(&twice);
        assert!(
            e.reason
                .contains("request IORING_OP_WRITE (opcode 23) is declared twice"),
            "{e}"
        );
        let e = parse_err(
            "[[probe]]\nlayer = \"uring\"\nrequest = \"IORING_OP_NOP\"\nop = \"meta\"\nret = \"status\"\n",
        );
        assert!(e.reason.contains("needs its `opcode`"), "{e}");
        let e = parse_err(
            "[[probe]]\nlayer = \"posix\"\nsyscall = \"read\"\nopcode = 0\nop = \"read\"\nret = \"bytes\"\n",
        );
        assert!(e.reason.contains("`opcode` is for requests"), "{e}");
        // The kernel events of requests are the uring layer's, and only theirs.
        let e = parse_err(&events.replace("layer = \"uring\"", "layer = \"block\""));
        assert!(
            e.reason.contains("uring_submit belongs to layer uring"),
            "{e}"
        );
        let e = parse_err(
            "[[probe]]\nlayer = \"uring\"\nkernel = \"bio_queue\"\nattach = [\"tracepoint:block/block_bio_queue\"]\n",
        );
        assert!(e.reason.contains("block or pagecache, not uring"), "{e}");
    }

    /// Linux AIO requests: layer aio, no `fields`, arguments the iocb has, each once; and
    /// their kernel events are that layer's.
    #[test]
    fn aio_requests_take_their_arguments_from_the_iocb() {
        let aio = |args: &str, extra: &str| {
            format!(
                "[[probe]]\nlayer = \"aio\"\nrequest = \"IOCB_CMD_PWRITE\"\nopcode = 1\n\
                 op = \"write\"\nargs = {args}\n{extra}ret = \"bytes\"\n"
            )
        };
        let p = crate::probes::parse(&aio(r#"["fd", "offset", "size"]"#, ""), "t.toml").unwrap();
        assert!(
            matches!(&p[0].target, Target::Request { name, opcode: 1, fields }
                if name == "IOCB_CMD_PWRITE" && fields.is_empty()),
            "{:?}",
            p[0].target
        );
        assert_eq!(p[0].layer, Layer::Aio);
        for (args, extra, why) in [
            (
                r#"["fd"]"#,
                "fields = [\"iocb.aio_fildes\"]\n",
                "have no `fields`",
            ),
            (
                r#"["path"]"#,
                "",
                "\"path\" is no member of a Linux AIO iocb",
            ),
            (
                r#"["fd", "size", "iovcnt"]"#,
                "",
                "member of `iovcnt` is named twice",
            ),
        ] {
            let e = parse_err(&aio(args, extra));
            assert!(e.reason.contains(why), "{args}: {e}");
        }
        let e = parse_err(
            "[[probe]]\nlayer = \"uring\"\nkernel = \"aio_submit\"\n\
             attach = [\"tracepoint:syscalls/sys_enter_io_submit\"]\n",
        );
        assert!(
            e.reason
                .contains("aio_submit belongs to layer aio, not uring"),
            "{e}"
        );
    }

    #[test]
    fn rejects_with_line_and_reason() {
        let e = parse_err(
            "[[probe]]\nlayer = \"posix\"\nsyscall = \"read\"\nop = \"read\"\nargs = [\"fd\"]\nret = \"bytes\"\n\n[[probe]]\nlayer = \"posx\"\nsyscall = \"write\"\nop = \"write\"\nret = \"bytes\"\n",
        );
        assert_eq!(e.line, 8, "{e}");
        assert!(e.reason.contains("unknown layer \"posx\""), "{e}");
        assert!(e.to_string().starts_with("t.toml:8: "));
    }

    #[test]
    fn kernel_probes_name_their_mechanisms() {
        let ok = "[[probe]]\nlayer = \"block\"\nkernel = \"bio_queue\"\nattach = [\"tracepoint:block/block_bio_queue\"]\n\n[[probe]]\nlayer = \"vfs\"\nkfunc = \"vfs_read\"\nattach = [\"kprobe:vfs_read\"]\nop = \"read\"\nargs = [\"kfile\", \"buf\", \"size\", \"kpos\"]\nret = \"bytes\"\n";
        let p = parse(ok, "t.toml").unwrap();
        assert_eq!(p[0].function(), "bio_queue");
        assert_eq!(p[1].function(), "vfs_read");
        let spec = p[1].spec();
        assert_eq!((spec.kfile_arg, spec.kderef_mask), (0, 1 << 3));
        assert_ne!(spec.flags & SPEC_KERNEL, 0);
        let kernel = "[[probe]]\nlayer = \"block\"\nkernel = \"bio_queue\"\n";
        let e = parse_err(kernel);
        assert!(e.reason.contains("need `attach`"), "{e}");
        let e = parse_err(&format!("{kernel}attach = [\"kprobe:submit_bio\"]\n"));
        assert!(e.reason.contains("attach through tracepoint"), "{e}");
        let e = parse_err(&format!("{kernel}attach = [\"fentry:submit_bio\"]\n"));
        assert!(e.reason.contains("not built into this strata"), "{e}");
        let e = parse_err(&format!("{kernel}attach = [\"tracepoint:block\"]\n"));
        assert!(e.reason.contains("CATEGORY/NAME"), "{e}");
        // tp_btf only where strata has a program written for that tracepoint's arguments.
        let e = parse_err(&format!("{kernel}attach = [\"tp_btf:block_rq_issue\"]\n"));
        assert!(
            e.reason
                .contains("no tp_btf program for bio_queue on block_rq_issue")
                && e.reason.contains("bio_queue on tp_btf:block_bio_queue")
                && e.reason.contains("rq_complete on tp_btf:block_rq_complete"),
            "{e}"
        );
        // AIO events: strata's syscall programs, the entry's or the return's.
        let aio = "[[probe]]\nlayer = \"aio\"\nkernel = \"aio_reaped\"\n";
        let p = parse(&format!("{aio}attach = [\"tp_btf:sys_exit\"]\n"), "t.toml").unwrap();
        assert_eq!(p[0].function(), "aio_reaped");
        let e = parse_err(&format!("{aio}attach = [\"tp_btf:sys_enter\"]\n"));
        assert!(
            e.reason.contains(
                "aio_reaped is done by strata's syscall program on tp_btf:sys_exit (at \
                 io_getevents), not on sys_enter"
            ),
            "{e}"
        );
        assert_eq!(
            kernel_btf_program(KernelEvent::AioPwait, "sys_enter", Some(2)).unwrap(),
            "strata_btf_sys_enter"
        );
        // One program per prototype a tracepoint has had; another count has none.
        let complete = KernelEvent::UringComplete;
        assert_eq!(
            kernel_btf_program(complete, "io_uring_complete", Some(3)).unwrap(),
            "strata_kb_uring_complete"
        );
        assert_eq!(
            kernel_btf_program(complete, "io_uring_complete", Some(7)).unwrap(),
            "strata_kb_uring_complete_res"
        );
        let e = kernel_btf_program(complete, "io_uring_complete", Some(4)).unwrap_err();
        assert!(e.to_string().contains("with 4 arguments"), "{e}");
        let complete = "[[probe]]\nlayer = \"block\"\nkernel = \"rq_complete\"\n";
        let e = parse_err(&format!("{complete}attach = [\"tp_btf:block_rq_issue\"]\n"));
        assert!(e.reason.contains("no tp_btf program"), "{e}");
        let p = parse(
            &format!("{complete}attach = [\"tp_btf:block_rq_complete\", \"tracepoint:b/c\"]\n"),
            "t.toml",
        )
        .unwrap();
        let Target::Kernel { attach, .. } = &p[0].target else {
            panic!("{:?}", p[0].target)
        };
        assert_eq!(
            attach.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["tp_btf:block_rq_complete", "tracepoint:b/c"]
        );
        let e = parse_err(
            "[[probe]]\nlayer = \"block\"\nkernel = \"bio_teleport\"\nattach = [\"tracepoint:a/b\"]\n",
        );
        assert!(e.reason.contains("unknown kernel event"), "{e}");
        let e = parse_err(
            "[[probe]]\nlayer = \"vfs\"\nkfunc = \"vfs_read\"\nattach = [\"tracepoint:a/b\"]\nop = \"read\"\nret = \"bytes\"\n",
        );
        assert!(e.reason.contains("through kprobe"), "{e}");
        let e = parse_err(
            "[[probe]]\nlayer = \"posix\"\nsyscall = \"read\"\nattach = [\"kprobe:x\"]\nop = \"read\"\nret = \"bytes\"\n",
        );
        assert!(e.reason.contains("`attach` is for kernel"), "{e}");
    }

    #[test]
    fn rejects_bad_shapes() {
        let base = "[[probe]]\nlayer = \"stdio\"\nop = \"read\"\nret = \"bytes\"\n";
        let e = parse_err(&format!("{base}library = \"libc.so.6\"\n"));
        assert!(e.reason.contains("one of: `syscall`"), "{e}");
        let e = parse_err(&format!("{base}syscall = \"read\"\nsymbol = \"read\"\n"));
        assert!(e.reason.contains("one of: `syscall`"), "{e}");
        let e = parse_err(&format!(
            "{base}syscall = \"read\"\nargs = [\"fd\", \"bogus\"]\n"
        ));
        assert!(e.reason.contains("unknown argkind \"bogus\""), "{e}");
        let e = parse_err(&format!("{base}syscall = \"read\"\ncolour = 1\n"));
        assert!(e.reason.contains("unknown field `colour`"), "{e}");
        assert_eq!(e.line, 6, "{e}");
        let e = parse_err(&format!(
            "{base}syscall = \"read\"\nargs = [\"int\",\"int\",\"int\",\"int\",\"int\",\"int\",\"int\"]\n"
        ));
        assert!(e.reason.contains("7 arguments"), "{e}");
        let e = parse_err(&format!(
            "{base}syscall = \"read\"\n{base}syscall = \"read\"\n"
        ));
        assert_eq!(e.reason, "syscall \"read\" is declared twice", "{e}");
        assert_eq!(e.line, 6, "{e}");
        // Arguments read from user memory only where the kernel programs read them.
        let e = parse_err(&format!(
            "{base}syscall = \"read\"\nargs = [\"fd\", \"dims\"]\n"
        ));
        assert!(e.reason.contains("`dims` arguments are read"), "{e}");
        assert!(e.reason.contains("library functions only"), "{e}");
        let e = parse_err(
            "[[probe]]\nlayer = \"vfs\"\nkfunc = \"vfs_open\"\nattach = [\"kprobe:vfs_open\"]\nop = \"open\"\nret = \"status\"\nargs = [\"path\"]\n",
        );
        assert!(e.reason.contains("`path` arguments are read"), "{e}");
        let e = parse_err(
            "[[probe]]\nlayer = \"vfs\"\nkfunc = \"vfs_copy_file_range\"\nattach = [\"kprobe:vfs_copy_file_range\"]\nop = \"copy\"\nret = \"bytes\"\nargs = [\"kfile\", \"offset_ref\"]\n",
        );
        assert!(e.reason.contains("`offset_ref` arguments are read"), "{e}");
        assert!(e.reason.contains("syscalls and library functions"), "{e}");
        let e = parse_err("[[probe]]\nlayer = 3\n");
        assert_eq!(e.line, 2, "{e}");
        let e = parse_err("[[probe]\n");
        assert_eq!(e.line, 1, "{e}");
    }

    /// Offsets behind pointers are read at return (by then advanced by what the call moved),
    /// handles behind pointers at entry.
    #[test]
    fn pointer_arguments_are_read_at_entry_or_return() {
        let probes = parse(BUILTIN, "p").unwrap();
        let spec = |name: &str| {
            probes
                .iter()
                .find(|p| p.function() == name)
                .unwrap_or_else(|| panic!("{name} is built in"))
                .spec()
        };
        let masks = |name: &str| (spec(name).deref_mask, spec(name).ret_deref_mask);
        assert_eq!(masks("copy_file_range"), (0, 0b1010));
        assert_eq!(masks("sendfile64"), (0, 0b100));
        assert_eq!(masks("close_range"), (0, 0));
        assert_eq!(masks("MPI_File_close"), (1, 0));
    }

    #[test]
    fn layers_select() {
        let mut probes = parse(BUILTIN, "p").unwrap();
        select_layers(&mut probes, Some(&[Layer::Libc]), &[]);
        assert!(probes.iter().all(|p| p.enabled == (p.layer == Layer::Libc)));
    }

    /// `--skip-layers` takes layers out of the file's own choice (MPI's request waits stay
    /// off), and the loader's report goes with the last library layer.
    #[test]
    fn skipped_layers_leave_the_files_choice_of_the_others() {
        let builtin = parse(BUILTIN, "p").unwrap();
        let chosen = |skip: &[Layer]| {
            let mut probes = builtin.clone();
            select_layers(&mut probes, None, skip);
            probes
        };
        let no_stdio = chosen(&[Layer::Stdio]);
        for (p, file) in no_stdio.iter().zip(&builtin) {
            let expected = file.enabled && p.layer != Layer::Stdio;
            assert_eq!(p.enabled, expected, "{}", p.function());
        }
        assert!(no_stdio.iter().any(|p| p.layer == Layer::Stdio));
        assert!(
            builtin
                .iter()
                .any(|p| p.layer == Layer::Mpiio && !p.enabled)
        );
        let libraries = [Layer::Stdio, Layer::Mpiio, Layer::Hdf5, Layer::Netcdf];
        let kernel_only = chosen(&libraries);
        let load = |probes: &[Probe]| probes.iter().find(|p| p.op == Op::Load).unwrap().enabled;
        assert!(load(&builtin) && load(&no_stdio) && !load(&kernel_only));
        let uprobe = |p: &Probe| matches!(p.target, Target::Uprobe { .. });
        assert!(kernel_only.iter().all(|p| !p.enabled || !uprobe(p)));
    }

    #[test]
    fn all_names_every_layer_and_a_misspelt_one_is_refused() {
        let names = |s: &[&str]| s.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let all = Layer::parse_list(&names(&["all"])).unwrap();
        assert_eq!(all.len(), Layer::COUNT);
        assert!(all.contains(&Layer::Uring) && all.contains(&Layer::Libc));
        assert_eq!(
            Layer::parse_list(&names(&["posix", "block"])).unwrap(),
            [Layer::Posix, Layer::Block]
        );
        let e = Layer::parse_list(&names(&["posix", "blok"])).unwrap_err();
        assert!(
            e.contains("unknown layer \"blok\"") && e.contains("uring"),
            "{e}"
        );
    }
}
