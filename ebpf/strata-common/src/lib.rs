//! Types shared by strata's eBPF programs and its user space: map and program names, the
//! configuration and probe-spec layouts user space writes into maps, and the records the
//! kernel side emits through the ring buffer.
//!
//! Every struct is `#[repr(C)]` with explicit padding fields, so both sides agree on the
//! layout without relying on compiler-inserted holes (the verifier rejects reads of
//! uninitialised padding, and user space would decode garbage).
#![no_std]

/// Arguments captured per call (the x86-64 integer argument registers).
pub const MAX_ARGS: usize = 6;
/// Nesting depth kept per thread; deeper calls are counted in [`Counter::StackOverflow`].
pub const MAX_DEPTH: usize = 16;
/// Bytes of a piece of a counted array or of a text whose length is measured, including the
/// NUL of a text's piece.
pub const STR_CAP: usize = 512;
/// Bytes of a string argument (a path, a mode, an HDF5 object's name) copied whole,
/// including the NUL: the kernel's `PATH_MAX`, so that every name the kernel accepts arrives
/// whole (a deep workflow directory passes 512 bytes). Only what a string uses is sent.
pub const PATH_CAP: usize = 4096;
/// Entries of the uprobe spec map, indexed by the attach cookie (function id).
pub const MAX_FUNCS: u32 = 4096;
/// Function ids from here on are probes (id minus this) attached to an MPI whose datatypes and
/// requests are 32-bit integers (the MPICH ABI): their spec reads no datatype object and
/// requests as 4 bytes. User space decodes them as the probe's own id with
/// [`CALL_INT_HANDLES`].
pub const FUNC_INT_HANDLES: u32 = MAX_FUNCS / 2;
/// Entries of the syscall spec map, indexed by syscall number.
pub const MAX_SYSCALLS: u32 = 1024;
/// tgids per element of [`maps::TRACED_MARKS`], a byte each.
pub const TRACED_BLOCK: usize = 64;
/// Elements of [`maps::TRACED_MARKS`]: a byte for each tgid below the kernel's largest
/// `pid_max` (2^22), 4 MiB.
pub const TRACED_BLOCKS: u32 = (1 << 22) / TRACED_BLOCK as u32;
/// `CLONE_THREAD` from `<linux/sched.h>`: a new task that shares its creator's tgid.
pub const CLONE_THREAD: u64 = 0x0001_0000;

/// Map names, used by the programs' `#[map(name = ...)]` and by the loader.
pub mod maps {
    pub const CONFIG: &str = "STRATA_CONFIG";
    pub const TRACED: &str = "STRATA_TRACED";
    /// A byte per tgid, in blocks of [`super::TRACED_BLOCK`]: set for every process in
    /// [`TRACED`].
    pub const TRACED_MARKS: &str = "STRATA_TRACED_MARKS";
    /// Per-thread stacks in task-local storage (kernels with BTF).
    pub const TASK_STACKS: &str = "STRATA_TASK_STACKS";
    /// Per-thread stacks by tid (kernels without BTF).
    pub const STACKS: &str = "STRATA_STACKS";
    pub const ZERO_STACK: &str = "STRATA_ZERO_STACK";
    pub const FUNC_SPECS: &str = "STRATA_FUNC_SPECS";
    pub const SYSCALL_SPECS: &str = "STRATA_SYSCALL_SPECS";
    pub const COUNTERS: &str = "STRATA_COUNTERS";
    pub const EVENTS: &str = "STRATA_EVENTS";
    pub const STR_SCRATCH: &str = "STRATA_STR_SCRATCH";
    pub const KERNEL_FIELDS: &str = "STRATA_KERNEL_FIELDS";
    /// Per CPU: the start of the kernel tracepoint record being read.
    pub const KERNEL_WINDOW: &str = "STRATA_KERNEL_WINDOW";
    pub const WATCHED_INODES: &str = "STRATA_WATCHED_INODES";
    pub const WRITEBACK_THREADS: &str = "STRATA_WRITEBACK_THREADS";
    pub const PENDING_BIOS: &str = "STRATA_PENDING_BIOS";
    pub const URING_OPS: &str = "STRATA_URING_OPS";
    pub const URING_RINGS: &str = "STRATA_URING_RINGS";
    pub const AIO_WAITS: &str = "STRATA_AIO_WAITS";
    pub const KFUNC_IDS: &str = "STRATA_KFUNC_IDS";
    pub const CGROUPS: &str = "STRATA_CGROUPS";
    /// Cgroup mode: each cgroup's verdict, as the syscall entry last worked it out.
    pub const CGROUP_VERDICTS: &str = "STRATA_CGROUP_VERDICTS";
    pub const USERS: &str = "STRATA_USERS";
    pub const LAST_WAKE: &str = "STRATA_LAST_WAKE";
    /// `u64`, one: the data waiting below which the kernel wakes the ring's reader for no
    /// crossing of [`super::WAKEUP_BYTES`] (and forces no wakeup for a library call);
    /// [`super::QUIET_NEVER`] while it waits for them.
    pub const QUIET_BELOW: &str = "STRATA_QUIET_BELOW";
    pub const TYPE_TABLES: &str = "STRATA_TYPE_TABLES";
    /// Processes whose predefined type ids were sent (tgid -> type table index).
    pub const TYPES_SENT: &str = "STRATA_TYPES_SENT";
    pub const IMAGE_SCRATCH: &str = "STRATA_IMAGE_SCRATCH";
    /// Where the benchmark's stamp programs build their records.
    pub const STAMP_SCRATCH: &str = "STRATA_STAMP_SCRATCH";
    /// The values a probe's `only_arg` may have ([`super::OnlyKey`] -> unused `u8`).
    pub const ONLY_VALUES: &str = "STRATA_ONLY_VALUES";
}

/// Read-only globals of the programs, set by the loader.
pub mod globals {
    /// `u8`: 1 to keep thread stacks in task-local storage (needs the kernel's BTF).
    pub const USE_TASK_STORAGE: &str = "STRATA_USE_TASK_STORAGE";
    /// `u8`: 1 (the default) for the benchmark's floor programs to send their records
    /// through the ring buffer; 0 to build each in per-CPU memory only (the stamp baseline).
    pub const FLOOR_RING: &str = "STRATA_FLOOR_RING";
    /// [`super::PageOffsets`]: where the page-cache and writeback programs read.
    pub const PAGE_OFFSETS: &str = "STRATA_PAGE_OFFSETS";
    /// [`super::BlockOffsets`]: where the bio and request programs read.
    pub const BLOCK_OFFSETS: &str = "STRATA_BLOCK_OFFSETS";
    /// [`super::TaskOffsets`]: where the programs read the current thread's ids.
    pub const TASK_OFFSETS: &str = "STRATA_TASK_OFFSETS";
}

/// Program names (the eBPF function names).
pub mod programs {
    pub const SYS_ENTER: &str = "strata_sys_enter";
    pub const SYS_EXIT: &str = "strata_sys_exit";
    /// The entry program of `--syscall-mode per-syscall` (exits share `SYS_EXIT`).
    pub const SYS_ENTER_ONE: &str = "strata_sys_enter_one";
    pub const BTF_SYS_ENTER: &str = "strata_btf_sys_enter";
    pub const BTF_SYS_EXIT: &str = "strata_btf_sys_exit";
    pub const UPROBE_ENTRY: &str = "strata_uprobe_entry";
    pub const UPROBE_RETURN: &str = "strata_uprobe_return";
    /// Entry and return in one program, on a multi-uprobe session link (Linux 6.13+).
    pub const UPROBE_SESSION: &str = "strata_uprobe_session";
    pub const TASK_NEWTASK: &str = "strata_task_newtask";
    pub const PROCESS_EXEC: &str = "strata_process_exec";
    pub const PROCESS_EXIT: &str = "strata_process_exit";
    /// The task iterator run once as strata stops with traced processes left: it sends the
    /// calls in progress on their threads' stacks.
    pub const ITER_STACKS: &str = "strata_iter_stacks";
    /// The lifecycle programs on BTF raw tracepoints (the default where the kernel has BTF):
    /// (tracepoint, its arguments, program); sched_process_exit has one for each of its
    /// prototypes (it gained `group_dead` in Linux 6.9).
    pub const LIFECYCLE_BTF: [(&str, usize, &str); 4] = [
        ("task_newtask", 2, "strata_kb_task_newtask"),
        ("sched_process_exec", 3, "strata_kb_process_exec"),
        ("sched_process_exit", 1, "strata_kb_process_exit"),
        ("sched_process_exit", 2, "strata_kb_process_exit_group"),
    ];
    pub const KPROBE_ENTRY: &str = "strata_kprobe_entry";
    pub const KPROBE_RETURN: &str = "strata_kprobe_return";
    /// Programs that return at once, for the benchmark's empty-probe baseline.
    pub const EMPTY_TRACEPOINT: &str = "strata_empty_tracepoint";
    pub const EMPTY_BTF_SYS_ENTER: &str = "strata_empty_btf_sys_enter";
    pub const EMPTY_BTF_SYS_EXIT: &str = "strata_empty_btf_sys_exit";
    pub const EMPTY_UPROBE: &str = "strata_empty_uprobe";
    pub const EMPTY_URETPROBE: &str = "strata_empty_uretprobe";
    pub const EMPTY_UPROBE_SESSION: &str = "strata_empty_uprobe_session";
    /// The least a tracer keeping each call as one record does, for the benchmark.
    pub const FLOOR_BTF_SYS_ENTER: &str = "strata_floor_sys_enter";
    pub const FLOOR_BTF_SYS_EXIT: &str = "strata_floor_sys_exit";
    pub const FLOOR_UPROBE: &str = "strata_floor_uprobe";
    pub const FLOOR_URETPROBE: &str = "strata_floor_uretprobe";
    pub const FLOOR_UPROBE_SESSION: &str = "strata_floor_uprobe_session";
    /// Kernel events that also have a program on a BTF raw tracepoint: (event, tracepoint,
    /// its arguments, program), a program for each prototype the tracepoint has had. The
    /// kernel skips a trace-event program whenever any such program is running on the CPU, a
    /// raw-tracepoint program only when that same program is: a completion interrupt that
    /// lands inside a probe of the issuing process is not lost. And a trace event's detach
    /// waits for RCU grace periods under the kernel's trace-event lock, one after another.
    pub const KERNEL_BTF: [(super::KernelEvent, &str, usize, &str); 15] = [
        (
            super::KernelEvent::CacheAdd,
            "mm_filemap_add_to_page_cache",
            1,
            "strata_kb_cache_add",
        ),
        (
            super::KernelEvent::CacheDelete,
            "mm_filemap_delete_from_page_cache",
            1,
            "strata_kb_cache_delete",
        ),
        (
            super::KernelEvent::PageDirty,
            "writeback_dirty_folio",
            2,
            "strata_kb_page_dirty",
        ),
        (
            super::KernelEvent::WritebackStart,
            "writeback_single_inode_start",
            3,
            "strata_kb_writeback_start",
        ),
        (
            super::KernelEvent::WritebackEnd,
            "writeback_single_inode",
            3,
            "strata_kb_writeback_end",
        ),
        (
            super::KernelEvent::BioQueue,
            "block_bio_queue",
            1,
            "strata_kb_bio_queue",
        ),
        (
            super::KernelEvent::BioSplit,
            "block_split",
            2,
            "strata_kb_bio_split",
        ),
        (
            super::KernelEvent::BioRemap,
            "block_bio_remap",
            3,
            "strata_kb_bio_remap",
        ),
        (
            super::KernelEvent::RqIssue,
            "block_rq_issue",
            1,
            "strata_kb_rq_issue",
        ),
        (
            super::KernelEvent::RqComplete,
            "block_rq_complete",
            3,
            "strata_kb_rq_complete",
        ),
        (
            super::KernelEvent::UringSubmit,
            "io_uring_submit_req",
            1,
            "strata_kb_uring_submit",
        ),
        (
            super::KernelEvent::UringSubmit,
            "io_uring_submit_sqe",
            2,
            "strata_kb_uring_submit",
        ),
        (
            super::KernelEvent::UringComplete,
            "io_uring_complete",
            3,
            "strata_kb_uring_complete",
        ),
        (
            super::KernelEvent::UringComplete,
            "io_uring_complete",
            7,
            "strata_kb_uring_complete_res",
        ),
        (
            super::KernelEvent::UringFailed,
            "io_uring_req_failed",
            3,
            "strata_kb_uring_failed",
        ),
    ];
    /// The tracepoint program of kernel event `e` is `KERNEL_TRACEPOINT[e as usize]`.
    pub const KERNEL_TRACEPOINT: [&str; super::KERNEL_EVENTS] = [
        "strata_k_bio_queue",
        "strata_k_bio_remap",
        "strata_k_rq_issue",
        "strata_k_rq_complete",
        "strata_k_writeback_start",
        "strata_k_writeback_end",
        "strata_k_page_dirty",
        "strata_k_cache_add",
        "strata_k_cache_delete",
        "strata_k_bio_split",
        "strata_k_uring_submit",
        "strata_k_uring_complete",
        "strata_k_uring_failed",
        "strata_k_aio_submit",
        "strata_k_aio_wait",
        "strata_k_aio_reaped",
        "strata_k_aio_pwait",
        "strata_k_aio_preaped",
    ];
}

/// Kernel events strata follows below the syscall layer. The names (`KernelEvent::NAMES`) are
/// the `kernel` keys of probes.toml.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelEvent {
    /// A bio submitted (in the submitter's context: the caller, or a writeback worker).
    BioQueue = 0,
    /// A bio moved from a partition to its disk (new dev and sector).
    BioRemap = 1,
    /// A request handed to the device driver.
    RqIssue = 2,
    /// A request completed by the device.
    RqComplete = 3,
    /// A writeback worker starts writing one inode.
    WritebackStart = 4,
    /// ... and is done with it.
    WritebackEnd = 5,
    /// A page of a file dirtied (a buffered write).
    PageDirty = 6,
    /// A page inserted into the page cache (a miss: read or readahead, or a new page).
    CacheAdd = 7,
    /// A page removed from the page cache (reclaim, truncate, invalidation).
    CacheDelete = 8,
    /// A bio split to fit the device's limits: the remainder starts at a new sector.
    BioSplit = 9,
    /// An io_uring request submitted (prepared: its arguments are in the request). Not a
    /// [`KernelRecord`]: the request becomes a [`CallRecord`] at its completion.
    UringSubmit = 10,
    /// An io_uring request completed (its CQE filled).
    UringComplete = 11,
    /// An io_uring request the kernel refused while preparing it (no submission event; its
    /// completion carries the error).
    UringFailed = 12,
    /// Linux AIO requests handed to the kernel (`io_submit`'s entry): each `iocb` becomes a
    /// [`RequestBegin`].
    AioSubmit = 13,
    /// A thread waits for Linux AIO events (`io_getevents`' entry): where they will be written.
    AioWait = 14,
    /// ... and has them (its return): each event becomes a [`RequestEnd`].
    AioReaped = 15,
    /// As [`Self::AioWait`], through `io_pgetevents` (the same members, and a signal mask).
    AioPwait = 16,
    /// As [`Self::AioReaped`], at `io_pgetevents`' return.
    AioPreaped = 17,
}

pub const KERNEL_EVENTS: usize = 18;

impl KernelEvent {
    pub const ALL: [KernelEvent; KERNEL_EVENTS] = [
        Self::BioQueue,
        Self::BioRemap,
        Self::RqIssue,
        Self::RqComplete,
        Self::WritebackStart,
        Self::WritebackEnd,
        Self::PageDirty,
        Self::CacheAdd,
        Self::CacheDelete,
        Self::BioSplit,
        Self::UringSubmit,
        Self::UringComplete,
        Self::UringFailed,
        Self::AioSubmit,
        Self::AioWait,
        Self::AioReaped,
        Self::AioPwait,
        Self::AioPreaped,
    ];
    pub const NAMES: [&str; KERNEL_EVENTS] = [
        "bio_queue",
        "bio_remap",
        "rq_issue",
        "rq_complete",
        "writeback_start",
        "writeback_end",
        "page_dirty",
        "cache_add",
        "cache_delete",
        "bio_split",
        "uring_submit",
        "uring_complete",
        "uring_failed",
        "aio_submit",
        "aio_wait",
        "aio_reaped",
        "aio_pwait",
        "aio_preaped",
    ];
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
    /// The events that record io_uring requests (layer `uring`; their own programs, whose
    /// records are calls, not [`KernelRecord`]s).
    pub const fn is_uring(self) -> bool {
        matches!(
            self,
            Self::UringSubmit | Self::UringComplete | Self::UringFailed
        )
    }
    /// The events that record Linux AIO requests (layer `aio`; records as the io_uring ones).
    pub const fn is_aio(self) -> bool {
        matches!(
            self,
            Self::AioSubmit | Self::AioWait | Self::AioReaped | Self::AioPwait | Self::AioPreaped
        )
    }
    /// An AIO event's syscall, and the flag that has the syscall programs do the event's
    /// work at it ([`SPEC_AIO_SUBMIT`]); the work is at the return for [`SPEC_AIO_REAP`].
    pub const fn aio_syscall(self) -> Option<(&'static str, u16)> {
        match self {
            Self::AioSubmit => Some(("io_submit", SPEC_AIO_SUBMIT)),
            Self::AioWait => Some(("io_getevents", SPEC_AIO_WAIT)),
            Self::AioReaped => Some(("io_getevents", SPEC_AIO_REAP)),
            Self::AioPwait => Some(("io_pgetevents", SPEC_AIO_WAIT)),
            Self::AioPreaped => Some(("io_pgetevents", SPEC_AIO_REAP)),
            _ => None,
        }
    }
    /// The page-cache and writeback events (layer `pagecache`).
    pub const fn is_page(self) -> bool {
        matches!(
            self,
            Self::PageDirty
                | Self::CacheAdd
                | Self::CacheDelete
                | Self::WritebackStart
                | Self::WritebackEnd
        )
    }
    pub fn from_u32(v: u32) -> Option<Self> {
        Self::ALL.get(v as usize).copied()
    }
}

/// Bytes at the start of a kernel tracepoint's record a program copies, in one read, before it
/// takes fields from them: every field strata reads lies in the first 96 on the kernels tested
/// (6.1, 6.12, 6.18); user space refuses a mechanism whose fields lie beyond.
pub const KERNEL_WINDOW: usize = 128;

/// Where a kernel tracepoint's record keeps each field strata reads: byte offsets from the
/// running kernel's `format` file, [`FIELD_NONE`] where the tracepoint has no such field.
/// Every field lies inside the first `len` bytes, at an offset aligned for its type.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct KernelFields {
    /// Bytes of the record to copy (at most [`KERNEL_WINDOW`]): where the last field ends.
    pub len: u32,
    /// `dev_t` (u32): `dev`, or `s_dev` of the page-cache events.
    pub dev: u32,
    /// u64: `sector`.
    pub sector: u32,
    /// u32: `nr_sector`.
    pub nr_sector: u32,
    /// i32: `error`.
    pub error: u32,
    /// char[]: `rwbs` (block), `name` (the backing device of writeback events).
    pub tag: u32,
    /// u64: `ino` or `i_ino`.
    pub ino: u32,
    /// u64: `index` (page) or `writeback_index`.
    pub index: u32,
    /// u8: `order` (the folio is 2^order pages).
    pub order: u32,
    /// dev_t (u32): `old_dev` of bio_remap.
    pub old_dev: u32,
    /// u64: `old_sector` of bio_remap.
    pub old_sector: u32,
    /// u64: `wrote` (pages written by a writeback pass).
    pub wrote: u32,
    /// u64: `new_sector` of bio_split.
    pub new_sector: u32,
    /// u64: `req` (the io_uring request, `struct io_kiocb *`).
    pub req: u32,
    /// u8: `opcode` of an io_uring request.
    pub opcode: u32,
    /// u32: `flags` of an io_uring request (the low half of a u64 since Linux 6.4).
    pub req_flags: u32,
    /// i32: `res`, an io_uring request's result.
    pub res: u32,
    /// u64: `ctx` (the io_uring ring, `struct io_ring_ctx *`).
    pub ctx: u32,
    /// u64: a Linux AIO syscall's user array: `iocbpp` (io_submit), `events` (io_getevents).
    pub aio_array: u32,
    /// i64: `nr`, the iocbs io_submit is handed.
    pub aio_nr: u32,
    /// i64: `ret`, a syscall's return.
    pub ret: u32,
}

pub const FIELD_NONE: u32 = u32::MAX;

impl Default for KernelFields {
    fn default() -> Self {
        Self {
            len: 0,
            dev: FIELD_NONE,
            sector: FIELD_NONE,
            nr_sector: FIELD_NONE,
            error: FIELD_NONE,
            tag: FIELD_NONE,
            ino: FIELD_NONE,
            index: FIELD_NONE,
            order: FIELD_NONE,
            old_dev: FIELD_NONE,
            old_sector: FIELD_NONE,
            wrote: FIELD_NONE,
            new_sector: FIELD_NONE,
            req: FIELD_NONE,
            opcode: FIELD_NONE,
            req_flags: FIELD_NONE,
            res: FIELD_NONE,
            ctx: FIELD_NONE,
            aio_array: FIELD_NONE,
            aio_nr: FIELD_NONE,
            ret: FIELD_NONE,
        }
    }
}

/// Key of [`maps::PENDING_BIOS`]: a bio of interest, until its request completes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct BioKey {
    pub dev: u32,
    pub _pad: u32,
    pub sector: u64,
}

/// One kernel event, in the context it happened in.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct KernelRecord {
    pub kind: u32,
    /// [`KernelEvent`] as u32.
    pub event: u32,
    /// CLOCK_MONOTONIC nanoseconds.
    pub ts: u64,
    /// The traced call in progress on this thread (top of its stack), 0 if none.
    pub call_id: u64,
    pub pid: u32,
    pub tid: u32,
    /// Kernel dev_t (major << 20 | minor).
    pub dev: u32,
    /// Sectors (block events), pages (page-cache events, writeback_end's pages written).
    pub nr: u32,
    /// Inode number (page-cache and writeback events; block events of writeback workers).
    pub ino: u64,
    /// Sector (block events) or page index (page-cache events: of the range's first page).
    pub pos: u64,
    /// bio_remap: the bio's dev before remapping.
    pub old_dev: u32,
    /// rq_complete: the request's error (negative errno).
    pub error: i32,
    /// bio_remap: the bio's sector before remapping; bio_split: the remainder's sector;
    /// page-cache events: the index of the range's last page (page_dirty, which does not
    /// say how large a folio is: of its last folio's first page).
    pub old_pos: u64,
    /// Page-cache events: when the range's last event happened (`ts`: its first). A call's
    /// events on consecutive pages come as one record (see [`ThreadStack::runs`]).
    pub ts_end: u64,
    /// Block: the `rwbs` flags (R, W, F, D, S, M...); writeback and page_dirty: the first 8
    /// bytes of the backing device's name ("major:minor" for block devices).
    pub tag: [u8; 8],
}

/// Global settings written once by user space before any program is attached.
///
/// The `*_off` fields are byte offsets into tracepoint records, read by user space from the
/// running kernel's tracepoint `format` files so the programs do not hard-code them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Config {
    /// strata's own tgid: never traced, whatever the mode.
    pub self_tgid: u32,
    /// Non-zero: trace every process (`--all`); zero: only tgids in the traced set.
    pub trace_all: u32,
    pub newtask_pid_off: u32,
    pub newtask_flags_off: u32,
    pub exec_old_pid_off: u32,
    pub exit_group_dead_off: u32,
    /// `__data_loc char[] filename` of sched_process_exec.
    pub exec_filename_off: u32,
    /// Where an MPI datatype object keeps its size (probes.toml `mpi_datatype_size_offset`).
    pub datatype_size_off: u32,
    /// Non-zero once user space is shutting down: [`STOP_NEW`] or [`STOP_FROZEN`].
    pub stopped: u32,
    /// From the running kernel's BTF: `struct file.f_inode`, `struct inode.i_ino`,
    /// `struct inode.i_sb`, `struct super_block.s_dev` (for `kfile` arguments).
    pub file_inode_off: u32,
    pub inode_ino_off: u32,
    pub inode_sb_off: u32,
    pub sb_dev_off: u32,
    /// Non-zero: trace exactly the processes inside the cgroups v2 of [`maps::CGROUPS`]
    /// (whenever they joined), none while the map is empty.
    pub cgroup_mode: u32,
    /// The depths of those cgroups below the cgroup v2 root, each once, deepest first (a task
    /// of nested ones is the innermost's), [`NO_CGROUP_LEVEL`] after the last.
    pub cgroup_levels: [u8; MAX_CGROUP_DEPTHS],
    /// Changed with every change of [`maps::CGROUPS`] and `cgroup_levels`, after it: a
    /// verdict worked out before (in [`maps::CGROUP_VERDICTS`]) is not used after.
    pub cgroup_epoch: u32,
    /// Non-zero: only processes whose real uid is in [`maps::USERS`] are traced.
    pub user_filter: u32,
    /// From the running kernel's BTF, for a new program image's arguments and environment:
    /// `struct task_struct.mm`, `struct mm_struct.arg_start`, `.arg_end`, `.env_start`,
    /// `.env_end`; `task_mm_off` 0 when unknown (then /proc is the only source).
    pub task_mm_off: u32,
    pub mm_arg_start_off: u32,
    pub mm_arg_end_off: u32,
    pub mm_env_start_off: u32,
    pub mm_env_end_off: u32,
    /// From the kernel's BTF: `struct io_kiocb.opcode` (u8), read when a request completes;
    /// 0 when unknown (then the completion event is not attached).
    pub uring_opcode_off: u32,
    /// Where a C stream keeps its fd (probes.toml `stdio_fileno_offset`: glibc's `_fileno`).
    pub stdio_fileno_off: u32,
    /// The bit of a C stream's first int that says it has an fd (probes.toml
    /// `stdio_fd_flag`: glibc's `_IO_IS_FILEBUF` in `_flags`); 0: every stream has.
    pub stdio_fd_flag: u32,
    /// Where a C stream keeps its read position in its buffer, followed by the end of what
    /// the buffer holds (probes.toml `stdio_read_offset`: glibc's `_IO_read_ptr` and
    /// `_IO_read_end`).
    pub stdio_read_off: u32,
    /// From the kernel's BTF: `struct task_struct.files`, `struct files_struct.fdt`,
    /// `struct fdtable.max_fds`, `.fd`, to find the file behind a descriptor a call made
    /// ([`FuncSpec::fd_file_arg`]); `task_files_off` 0 when unknown.
    pub task_files_off: u32,
    pub files_fdt_off: u32,
    pub fdt_max_fds_off: u32,
    pub fdt_fd_off: u32,
    /// From the kernel's BTF: `struct inode.i_mode` (u16), read with a descriptor's file.
    pub inode_mode_off: u32,
    /// From the kernel's BTF, for the lifecycle programs on BTF raw tracepoints:
    /// `struct task_struct.pid` (the new task's) and `struct linux_binprm.interp` (the
    /// program the kernel runs: a script's interpreter, as its `#!` line names it).
    pub task_pid_off: u32,
    pub bprm_interp_off: u32,
    /// From the kernel's BTF, for the io_uring programs on BTF raw tracepoints:
    /// `struct io_kiocb.ctx` and `.flags`, `struct io_uring_cqe.res`.
    pub uring_ctx_off: u32,
    pub uring_flags_off: u32,
    pub cqe_res_off: u32,
    /// From the kernel's BTF, for the root a process sees its files from ([`ProcRecord::root`]):
    /// `struct task_struct.fs`, where `struct fs_struct.root` keeps its dentry, `struct
    /// dentry.d_inode` and `.d_sb`, `struct task_struct.nsproxy`, `struct nsproxy.mnt_ns`,
    /// where `struct mnt_namespace` keeps its inode number; `task_fs_off` 0 when unknown.
    pub task_fs_off: u32,
    pub fs_root_dentry_off: u32,
    pub dentry_inode_off: u32,
    pub dentry_sb_off: u32,
    pub task_nsproxy_off: u32,
    pub nsproxy_mnt_ns_off: u32,
    pub mnt_ns_inum_off: u32,
    /// Where Open MPI's MPI_Status keeps the bytes the call moved (probes.toml
    /// `mpi_status_count_offset`: its `size_t _ucount`), for [`OUT_MPI_STATUS`].
    pub status_count_off: u32,
    /// From the kernel's BTF: where `struct mm_struct` keeps its uprobes area (`.uprobes_state
    /// .xol_area`) and `struct xol_area.vaddr`, the area's address in the process, where the
    /// kernel's return trampoline is; `mm_xol_area_off` 0 when unknown.
    pub mm_xol_area_off: u32,
    pub xol_vaddr_off: u32,
    /// Non-zero where `inode_ino_off`, `inode_sb_off` and `inode_mode_off` all lie within
    /// this many words from `inode_words_off` on (at most [`INODE_WORDS`]): a descriptor's
    /// file is then known by one helper read of its inode, not three.
    pub inode_words: u32,
    pub inode_words_off: u32,
    /// CLOCK_MONOTONIC nanoseconds of a [`STOP_FROZEN`] stop, written before `stopped`: when
    /// the calls then in progress end.
    pub stopped_ns: u64,
}

/// How many 8-byte words of an inode [`Config::inode_words`] reads at once.
pub const INODE_WORDS: usize = 16;

/// [`Config::inode_words_off`] and [`Config::inode_words`] for an inode's number,
/// superblock and mode at these offsets (naturally aligned, as the kernel lays them out), if
/// they fit in [`INODE_WORDS`] words.
pub fn inode_words(ino: u32, sb: u32, mode: u32) -> Option<(u32, u32)> {
    let aligned = ino.is_multiple_of(8) && sb.is_multiple_of(8) && mode.is_multiple_of(2);
    let lo = ino.min(sb).min(mode) / 8 * 8;
    let words = (ino + 8).max(sb + 8).max(mode + 2).div_ceil(8) - lo / 8;
    (aligned && words <= INODE_WORDS as u32).then_some((lo, words))
}

/// [`Config::stopped`]: no new call, process or kernel event is recorded; the calls in
/// progress still are as they return.
pub const STOP_NEW: u32 = 1;
/// [`Config::stopped`]: as [`STOP_NEW`], and no return is recorded either: the threads'
/// stacks stay as they are for the task iterator ([`programs::ITER_STACKS`]), which sends
/// every call then in progress as unfinished, ending at [`Config::stopped_ns`]. With returns
/// still popping frames, it could not read the stack of a thread on a CPU.
pub const STOP_FROZEN: u32 = 2;

/// Where the page-cache and writeback programs on BTF raw tracepoints find what they read
/// in the kernel's objects (byte offsets from the kernel's BTF; `pg_head` a bit number). A
/// read-only global set at load ([`globals::PAGE_OFFSETS`]): the verifier knows the values,
/// so the programs load the fields directly (checked against the kernel's BTF) instead of
/// through a helper call each (some 35 ns per read here).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct PageOffsets {
    /// `struct folio.flags`, `.mapping`, `.index`; where a large folio keeps its order (the
    /// low byte of `._flags_1`, or `._folio_order` before Linux 6.6); PG_head's bit.
    pub folio_flags: u32,
    pub folio_mapping: u32,
    pub folio_index: u32,
    pub folio_order: u32,
    pub pg_head: u32,
    /// `struct address_space.host`, `.writeback_index`.
    pub mapping_host: u32,
    pub mapping_wb_index: u32,
    /// `struct inode.i_mapping`, `.i_ino`, `.i_sb`, `.i_mode`.
    pub inode_mapping: u32,
    pub inode_ino: u32,
    pub inode_sb: u32,
    pub inode_mode: u32,
    /// `struct super_block.s_dev`, `.s_bdi`.
    pub sb_dev: u32,
    pub sb_bdi: u32,
    /// `struct backing_dev_info.dev`, `.dev_name`.
    pub bdi_dev: u32,
    pub bdi_name: u32,
    /// `struct writeback_control.nr_to_write`.
    pub wbc_nr_to_write: u32,
    /// `struct bdev_inode.vfs_inode`, `struct block_device.bd_disk`, `struct gendisk.bdi`: a
    /// block device's own inode's backing device.
    pub bdev_vfs_inode: u32,
    pub bdev_disk: u32,
    pub disk_bdi: u32,
}

impl PageOffsets {
    pub const NONE: Self = Self {
        folio_flags: 0,
        folio_mapping: 0,
        folio_index: 0,
        folio_order: 0,
        pg_head: 0,
        mapping_host: 0,
        mapping_wb_index: 0,
        inode_mapping: 0,
        inode_ino: 0,
        inode_sb: 0,
        inode_mode: 0,
        sb_dev: 0,
        sb_bdi: 0,
        bdi_dev: 0,
        bdi_name: 0,
        wbc_nr_to_write: 0,
        bdev_vfs_inode: 0,
        bdev_disk: 0,
        disk_bdi: 0,
    };
}

/// Where the bio and request programs on BTF raw tracepoints read (byte offsets from the
/// kernel's BTF): like [`PageOffsets`], a read-only global set at load
/// ([`globals::BLOCK_OFFSETS`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct BlockOffsets {
    /// `struct bio.bi_bdev`, `.bi_iter.bi_sector`, `.bi_iter.bi_size`, `.bi_opf`.
    pub bio_bdev: u32,
    pub bio_sector: u32,
    pub bio_size: u32,
    pub bio_opf: u32,
    /// `struct block_device.bd_disk`; `struct gendisk.major`, `.first_minor`.
    pub bdev_disk: u32,
    pub disk_major: u32,
    pub disk_minor: u32,
    /// `struct request.q`, `.__sector`, `.__data_len`, `.cmd_flags`; `struct
    /// request_queue.disk`.
    pub rq_q: u32,
    pub rq_sector: u32,
    pub rq_len: u32,
    pub rq_flags: u32,
    pub q_disk: u32,
    /// The bit numbers of the request flags the trace events' `rwbs` shows, in
    /// [`RWBS_FLAGS`] order (enum req_flag_bits; [`NO_FLAG_BIT`] where the kernel has none).
    pub req_flag_bits: [u8; 8],
}

impl BlockOffsets {
    pub const NONE: Self = Self {
        bio_bdev: 0,
        bio_sector: 0,
        bio_size: 0,
        bio_opf: 0,
        bdev_disk: 0,
        disk_major: 0,
        disk_minor: 0,
        rq_q: 0,
        rq_sector: 0,
        rq_len: 0,
        rq_flags: 0,
        q_disk: 0,
        req_flag_bits: [NO_FLAG_BIT; 8],
    };
}

/// Where the programs read the current thread's ids from its `struct task_struct` (`.pid`,
/// `.tgid`: byte offsets from the kernel's BTF), where thread stacks are task-local
/// ([`globals::TASK_OFFSETS`]): the task is at hand for the stack, and two loads cost less
/// than the helper call that gives the ids.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskOffsets {
    pub pid: u32,
    pub tgid: u32,
    /// `.bpf_storage`, the task's local storage (null where it has none: a thread strata
    /// does not trace, on most nodes); 0 where the kernel's BTF lacks it.
    pub bpf_storage: u32,
    /// The id of the task's cgroup v2, where cgroup mode reads it: `task_struct.cgroups`,
    /// `css_set.dfl_cgrp`, `cgroup.kn`, `kernfs_node.id` (`cgroups` 0 where unknown: the
    /// helper call then).
    pub cgroups: u32,
    pub css_dfl_cgrp: u32,
    pub cgroup_kn: u32,
    pub kn_id: u32,
    /// The task's descriptor table, where the return of a call that made a descriptor finds
    /// its file: `task_struct.files`, `files_struct.fdt`, `fdtable.max_fds`, `.fd` (`files`
    /// 0 where unknown: helper reads with [`Config::task_files_off`] and the rest then).
    pub files: u32,
    pub files_fdt: u32,
    pub fdt_max_fds: u32,
    pub fdt_fd: u32,
    pub _pad: u32,
}

/// The request flags of `rwbs` strata spells (letter, `enum req_flag_bits` name), in
/// [`BlockOffsets::req_flag_bits`] order: preflush comes before the operation, the rest
/// after it.
pub const RWBS_FLAGS: [(u8, &str); 5] = [
    (b'F', "__REQ_PREFLUSH"),
    (b'F', "__REQ_FUA"),
    (b'A', "__REQ_RAHEAD"),
    (b'S', "__REQ_SYNC"),
    (b'M', "__REQ_META"),
];

/// A flag of [`RWBS_FLAGS`] this kernel does not have.
pub const NO_FLAG_BIT: u8 = 0xff;

/// Entries of [`maps::URING_OPS`]: one per io_uring opcode (a `u8`).
pub const URING_OPS: u32 = 256;

/// Where one argument of an io_uring request is read, from the request (`struct io_kiocb`)
/// at its submission: `size` bytes at `off`, or with [`URING_FIELD_DEREF`] behind the
/// pointer at `off`, at `deref` past it. Offsets come from the kernel's BTF (probes.toml's
/// `fields`). `size` 0: not read at submission.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct UringField {
    pub off: u16,
    pub deref: u16,
    pub size: u8,
    pub flags: u8,
    pub _pad: [u8; 2],
}

/// The field is a signed integer: sign-extended to 64 bits.
pub const URING_FIELD_SIGNED: u8 = 1;
/// The field is a pointer; the argument lies behind it (0 when it is null).
pub const URING_FIELD_DEREF: u8 = 2;

/// One recorded io_uring opcode (an entry of [`maps::URING_OPS`]): the probe recording it,
/// plus one (0: not recorded), and where each of its arguments is read. The arguments that
/// need more than a read are named by index ([`NO_ARG`]: none), so that the kernel side's
/// loop over the fields stays a plain read (older verifiers walk every path through it):
/// the SQE's descriptor (-1 when the request names a registered file), the request's file
/// (read at completion at `file_off`: its inode, and its device in the argument after it),
/// and up to two kernel strings (sent as [`RecordKind::Str`] records; the argument itself
/// recorded as 0, no kernel address leaves the kernel).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct UringOp {
    pub probe: u32,
    pub file_off: u16,
    pub fd_arg: u8,
    pub file_arg: u8,
    pub str_args: [u8; 2],
    /// Bytes of the request from its start that hold every field (at most
    /// [`URING_SPAN`]): copied in one read, the fields taken from the copy.
    pub span: u16,
    pub _pad: [u8; 4],
    pub fields: [UringField; MAX_ARGS],
}

/// At most this many bytes of an io_uring request are copied at its submission.
pub const URING_SPAN: usize = 256;

/// An io_uring request submitted: its call record so far (no end, no result; `kind` is
/// [`RecordKind::RequestBegin`]) and the request's address, which its [`RequestEnd`] names.
/// User space joins the two: no kernel map holds a request in flight.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RequestBegin {
    pub rec: CallRecord,
    pub req: u64,
}

/// An io_uring request completed: its result, and the inode and device of the file it ran
/// on (0 when its probe has no `kfile`). `pid`: the process that submitted on the ring.
/// A Linux AIO request's event reaped ([`REQUEST_AIO`] in `flags`): `req` is its `iocb`'s
/// address in `pid`, `ret` the event's `res`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct RequestEnd {
    pub kind: u32,
    pub pid: u32,
    pub req: u64,
    pub ts_end: u64,
    pub ret: i64,
    pub ino: u64,
    pub dev: u32,
    pub flags: u32,
}
/// [`RequestEnd::flags`]: a Linux AIO request, whose `req` is a user address (only unique
/// within its process).
pub const REQUEST_AIO: u32 = 1;

/// Linux AIO opcodes (`IOCB_CMD_*`) strata can map to a probe: 0 to this, exclusive.
pub const AIO_OPS: u32 = 16;
/// The `func_id` of a [`RequestBegin`] of layer `aio`: user space finds the probe by the
/// opcode in its `args`. A non-zero `flags` is the error of reading the `iocb`.
pub const FUNC_AIO: u32 = u32::MAX;
/// The most `iocb`s of one io_submit, and events of one io_getevents, a program reads (a
/// `bpf_loop`, which bounds the time inside one syscall). Beyond: counted
/// ([`Counter::AioUnread`]), not recorded.
pub const AIO_BATCH: u32 = 1024;
/// The bytes of an `iocb` a [`RequestBegin`] of layer `aio` carries in its `args`, from
/// offset 8 (after `aio_data`): `aio_key`|`aio_rw_flags`, `aio_lio_opcode`|`aio_reqprio`|
/// `aio_fildes`, `aio_buf`, `aio_nbytes`, `aio_offset`, `aio_reserved2`. User space takes
/// each argument of the request's probe from them.
pub const AIO_IOCB_OFF: u64 = 8;
/// `flags` of an io_uring request: the SQE's `fd` is an index into the ring's registered
/// files (`IOSQE_FIXED_FILE`, `REQ_F_FIXED_FILE`), not a descriptor.
pub const URING_FIXED_FILE: u32 = 1;

/// Depths of traced cgroups the kernel filter looks at (see [`Config::cgroup_levels`]).
pub const MAX_CGROUP_LEVEL: u32 = 32;
/// Different depths the traced cgroups may be at, at once: a node's Slurm jobs share one.
/// The kernel filter looks at each depth in use (a list, where a bit per level of
/// [`MAX_CGROUP_LEVEL`] had the verifier walk 32 steps in every program: three quarters of
/// a kernel-event program's work, and more than half of a syscall entry's).
pub const MAX_CGROUP_DEPTHS: usize = 4;
/// The end of [`Config::cgroup_levels`].
pub const NO_CGROUP_LEVEL: u8 = u8::MAX;
/// Elements of [`maps::CGROUP_VERDICTS`], by cgroup id modulo this (16 bytes each): a node's
/// cgroups number in the hundreds or thousands, and two that share an element only redo
/// the lookups when they take turns.
pub const CGROUP_VERDICT_SLOTS: u32 = 1 << 14;

/// How the kernel side captures one probed function or syscall.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct FuncSpec {
    /// Index of the probe in probes.toml order; user space decodes with it.
    pub func_id: u32,
    /// Number of arguments to capture (at most [`MAX_ARGS`]).
    pub nargs: u8,
    /// Bit i set: argument i is a pointer to a NUL-terminated user string, copied at entry.
    pub str_mask: u8,
    /// Index of an out-pointer argument read at return, or [`NO_ARG`].
    pub out_arg: u8,
    /// Width in bytes (4 or 8) of the value behind `out_arg`; [`OUT_TEXT`]: its length as a
    /// NUL-terminated string; [`OUT_BUFFERED`]: what the stream it points to has buffered.
    pub out_size: u8,
    /// [`SPEC_ENABLED`], [`SPEC_EMIT_AT_ENTRY`].
    pub flags: u16,
    /// Bit i set: argument i points to a handle the call may overwrite (`MPI_File *`,
    /// `MPI_Request *`); the 8-byte value behind it is captured at entry instead,
    /// [`DEREF_FAILED`] when the pointer was null or unreadable.
    pub deref_mask: u8,
    /// Index of an MPI datatype argument, or [`NO_ARG`]: it is replaced at entry by the
    /// datatype's size, read at `Config::datatype_size_off` inside the datatype object.
    pub datatype_arg: u8,
    /// Bit i set: argument i points to an array of up to [`BLOB_WORDS`] 64-bit integers
    /// (HDF5 dimensions, counts), copied at entry. (A counted array is `array_arg`.)
    pub blob_mask: u8,
    /// Index of a kernel `struct file *` argument, or [`NO_ARG`]: replaced at entry by the
    /// file's inode number; its file system's dev_t goes to the slot after the last argument.
    pub kfile_arg: u8,
    /// Bit i set: argument i is a kernel pointer to a 64-bit value (`loff_t *pos`), read at
    /// entry.
    pub kderef_mask: u8,
    /// Bit i set: argument i points to a 64-bit offset the call uses and advances by what it
    /// moves (copy_file_range's `loff_t *`); the value behind it is captured at return,
    /// [`DEREF_FAILED`] when the pointer was null or unreadable.
    pub ret_deref_mask: u8,
    /// Index of the argument whose low 32 bits must be one of the probe's values in
    /// [`maps::ONLY_VALUES`] for the call to be recorded, or [`NO_ARG`] (probes.toml `only`:
    /// ioctl's commands). The others are dropped at entry, before any work.
    pub only_arg: u8,
    /// Index of an fd argument that must be a descriptor (not negative as a C `int`) for the
    /// call to be recorded, or [`NO_ARG`] (probes.toml `only_files`: mmap's anonymous
    /// mappings pass -1). The others are dropped at entry.
    pub files_arg: u8,
    /// Index of a C stream (`FILE *`) argument, or [`NO_ARG`]: the stream's fd, read at
    /// entry at `Config::stdio_fileno_off` inside it, goes to the slot after the last
    /// argument (`u64::MAX` when unreadable), so that a stream strata did not see opened is
    /// still named by its fd.
    pub stream_arg: u8,
    /// Index of an argument pointing to a C `int` array the call fills (MPI_Waitsome's
    /// indices), or [`NO_ARG`]: its first `array_len_arg` elements are copied at return, as
    /// [`RecordKind::Blob`] records sent before the call's own.
    pub ret_blob_arg: u8,
    /// Index of an argument pointing to an array of as many elements as argument
    /// `array_len_arg` says (MPI_Waitall's requests), or [`NO_ARG`]: copied at entry, up to
    /// [`ARRAY_MAX_BYTES`], in [`RecordKind::Blob`] records of up to [`STR_CAP`] bytes each,
    /// in order.
    pub array_arg: u8,
    /// Index of the argument counting the elements of `array_arg` and `ret_blob_arg`.
    pub array_len_arg: u8,
    /// log2 of the width in bytes of an element of `array_arg` (3: pointers; 2: C ints).
    pub array_elem_shift: u8,
    /// Index of an argument whose low 32 bits at return are a descriptor the call made
    /// (pipe2's pair, read at return), [`FD_FROM_RET`] for the descriptor it returns, or
    /// [`NO_ARG`]: the inode number of the descriptor's file goes to the slot after the last
    /// argument, its file system's device to the next, in its low 32 bits, with the inode's
    /// mode (`i_mode`: the file's type) above them (0s when unknown). A file with no path (a
    /// pipe, a memfd), or one removed before user space could look, is then known after its
    /// process is gone.
    pub fd_file_arg: u8,
    /// Index of a user `struct msghdr *` argument of a syscall (sendmsg, recvmsg), or
    /// [`NO_ARG`]: at return, replaced by the first descriptor an `SCM_RIGHTS` control message
    /// in it carries (low 32 bits; -1 when none) and how many it carries (high 32 bits). With
    /// `fd_file_arg` naming the same argument, that descriptor's inode and device follow the
    /// arguments, and its kernel `struct file *` (the open file description, the same in the
    /// sender and the receiver) is in the last slot (user space keeps the probe's arguments
    /// three short of it).
    pub rights_arg: u8,
    pub _pad: [u8; 3],
}

/// [`FuncSpec::fd_file_arg`] of a call that returns the descriptor.
pub const FD_FROM_RET: u8 = 0xfe;

/// Bytes of a counted array copied at most ([`FuncSpec::array_arg`]): 512 Open MPI requests
/// (pointers), 1,024 MPICH ones (ints).
pub const ARRAY_MAX_BYTES: usize = ARRAY_PIECES * STR_CAP;
/// Records a counted array is sent in, at most.
pub const ARRAY_PIECES: usize = 8;

/// Key of [`maps::ONLY_VALUES`]: a probe's function id and one value its `only_arg` may have.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct OnlyKey {
    pub func_id: u32,
    pub value: u32,
}

/// Values of `only` arguments, all probes together.
pub const MAX_ONLY_VALUES: u32 = 1024;

/// 64-bit words copied per array argument.
pub const BLOB_WORDS: usize = 8;

pub const NO_ARG: u8 = 0xff;

/// [`FuncSpec::out_size`] of text a library call moves (fputs's string, fgets's line): the
/// record's `out` is its length when the call returns, if shorter than [`TEXT_MAX`], with
/// [`TEXT_UNENDED`] set when its last byte is not a newline.
pub const OUT_TEXT: u8 = 1;
/// Set in an [`OUT_TEXT`] length whose text is empty or does not end with a newline: an
/// fgets that stopped short of its size without one met the end of its file, or a NUL byte
/// that hides the rest of what it read.
pub const TEXT_UNENDED: u64 = 1 << 62;
/// Pieces of [`STR_CAP`] - 1 bytes a text's length is read in, at most: a long fgets line
/// costs a read per piece, a short one a single read.
pub const TEXT_PIECES: usize = 16;
/// Text at least this long has no length in the record (`out` not valid).
pub const TEXT_MAX: usize = TEXT_PIECES * (STR_CAP - 1);
/// [`FuncSpec::out_size`] of a call that reads its stream (`out_arg`) by an amount it does
/// not say (fscanf): the record's `out` is the bytes buffered to read in the stream when
/// the call returns, and the bytes buffered when it began go to the slot after the stream's
/// fd (`u64::MAX` when unreadable). Read at `Config::stdio_read_off` inside the stream.
pub const OUT_BUFFERED: u8 = 2;
/// [`FuncSpec::out_size`] of an Open MPI `MPI_Status *` (`out_arg`): the record's `out` is
/// the 8 bytes at `Config::status_count_off` inside it when the call returns, the bytes the
/// call moved. (The MPICH ABI's status begins with its count: a plain 8-byte `out`.)
pub const OUT_MPI_STATUS: u8 = 3;

/// What a `deref_mask` or `ret_deref_mask` argument holds when its pointer was null or could
/// not be read: not a valid handle, and not an offset (the kernel refuses negative ones).
pub const DEREF_FAILED: u64 = u64::MAX;
/// The spec slot is in use (maps are zero-filled, and 0 is a valid function id).
pub const SPEC_ENABLED: u16 = 1;
/// The call does not return (exit_group): emit its record at entry, push no frame.
pub const SPEC_EMIT_AT_ENTRY: u16 = 2;
/// A kernel function (kprobe): its return finds it by the top frame of the thread's stack.
pub const SPEC_KERNEL: u16 = 4;
/// [`FuncSpec::flags`]: the call closes or reopens its stream (fclose, freopen).
pub const SPEC_STREAM_END: u16 = 8;
/// [`FuncSpec::flags`]: the stream argument is not passed: the call works on the program's
/// `stdout` or `stdin` (printf, puts, getchar), a libc variable the cookie finds
/// ([`stream_var_cookie`]). Without that, the argument is 0 (no stream).
pub const SPEC_IMPLICIT_STREAM: u16 = 16;
/// [`FuncSpec::flags`]: the call's record wakes user space at once, whenever the last wakeup
/// was: the loader's report, after which strata probes the libraries just loaded while the
/// process runs on (a wakeup held back there left them unprobed until the reader's next
/// look, up to 100 ms).
pub const SPEC_WAKE: u16 = 32;
/// [`FuncSpec::flags`]: the call is recorded only while the 32-bit integer at a variable of
/// its library, which the cookie finds ([`stream_var_cookie`], direct), reads 0 (the loader's
/// `_r_debug.r_state`: `RT_CONSISTENT` once a change of the loaded libraries is complete).
/// Unreadable, it is recorded.
pub const SPEC_IF_ZERO: u16 = 64;
/// [`FuncSpec::flags`] of a syscall's slot: the syscall programs on the BTF raw tracepoints
/// (`sys_enter`, `sys_exit`) do the `aio` layer's work of this syscall too, whether or not
/// the syscall is itself probed ([`SPEC_ENABLED`]): at io_submit's entry, its iocbs.
/// ([`KernelEvent::aio_syscall`]: which syscall and flag each AIO event is.) Trace events of
/// their own would each cost an RCU grace period to detach, under the kernel's event lock.
pub const SPEC_AIO_SUBMIT: u16 = 128;
/// As [`SPEC_AIO_SUBMIT`]: at io_getevents' (io_pgetevents') entry, where its events go.
pub const SPEC_AIO_WAIT: u16 = 256;
/// As [`SPEC_AIO_SUBMIT`]: at io_getevents' (io_pgetevents') return, the events written.
pub const SPEC_AIO_REAP: u16 = 512;

/// The attach cookie of a uprobe: the function id in the low 32 bits, and above this shift
/// the index of the attachment's [`TypeTable`] (0: none).
pub const COOKIE_TABLE_SHIFT: u32 = 32;
/// Cookie bit of a uprobe on a call of the function rather than in it (probes.toml
/// `calls_in`): the function's body is one load, so the call's result is the 64-bit value at
/// its first argument plus the offset in bits 32-62, read and recorded at the call, with no
/// return probe.
pub const COOKIE_LOAD_AT_CALL: u64 = 1 << 63;
/// Cookie bit of a uprobe whose call reads a variable of its library: the C stream variable
/// its call works on (`stdout`, [`SPEC_IMPLICIT_STREAM`]), or the one its recording depends on
/// ([`SPEC_IF_ZERO`]). The variable's address, or with [`COOKIE_STREAM_INDIRECT`] the address
/// of the library's GOT slot for it, is the probed address plus the signed 29-bit delta in
/// bits 32-60.
pub const COOKIE_STREAM_VAR: u64 = 1 << 62;
pub const COOKIE_STREAM_INDIRECT: u64 = 1 << 61;
const STREAM_DELTA_BITS: u32 = 29;

/// The cookie of probe `func_id` on a call of the stream variable `delta` bytes from the
/// probed address (through a GOT slot there when `indirect`); None when too far for the
/// cookie.
pub fn stream_var_cookie(func_id: u32, delta: i64, indirect: bool) -> Option<u64> {
    let limit = 1i64 << (STREAM_DELTA_BITS - 1);
    if !(-limit..limit).contains(&delta) {
        return None;
    }
    let field = (delta as u64) & ((1 << STREAM_DELTA_BITS) - 1);
    Some(
        u64::from(func_id)
            | field << COOKIE_TABLE_SHIFT
            | COOKIE_STREAM_VAR
            | if indirect { COOKIE_STREAM_INDIRECT } else { 0 },
    )
}

/// The delta a [`stream_var_cookie`] holds.
#[inline(always)]
pub fn stream_var_delta(cookie: u64) -> i64 {
    // Bit 60 to the sign bit, then back down with the sign.
    ((cookie << (64 - COOKIE_TABLE_SHIFT - STREAM_DELTA_BITS)) as i64) >> (64 - STREAM_DELTA_BITS)
}

/// Entries of [`maps::TYPE_TABLES`]; index 0 is never used.
pub const MAX_TYPE_TABLES: u32 = 256;
/// Predefined types per [`TypeTable`].
pub const MAX_TYPE_REFS: usize = 40;

/// Where one of a library's predefined datatype ids lives (HDF5's `H5T_NATIVE_DOUBLE_g`),
/// relative to the probed function's address: at `ip + delta`, or, when `indirect`, at the
/// address stored there (the library's GOT slot for the variable, which finds the copy an
/// executable made of it).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct TypeRef {
    pub delta: i64,
    /// Size in bytes of the type.
    pub size: u32,
    pub indirect: u32,
}

/// The predefined types one probed function of one file can name. At the first call of a
/// process through such a function, the kernel side reads their ids and sends them
/// ([`TypeIdsRecord`]): they are set by H5open and reset by H5close, and a process gone
/// before user space looks has no memory left to read.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TypeTable {
    pub count: u32,
    pub _pad: u32,
    pub refs: [TypeRef; MAX_TYPE_REFS],
}

/// A predefined type's id in one process, and its size.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct TypeId {
    pub id: u64,
    pub size: u64,
}

/// The ids of a process's predefined types (`count` entries of `types`; an id the kernel
/// could not read is 0).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TypeIdsRecord {
    pub kind: u32,
    pub pid: u32,
    pub count: u32,
    pub _pad: u32,
    pub types: [TypeId; MAX_TYPE_REFS],
}

/// One traced call in progress on a thread.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Frame {
    pub call_id: u64,
    pub ts_begin: u64,
    pub args: [u64; MAX_ARGS],
    pub func_id: u32,
    /// Low 8 bits: string arguments that could not be read at entry, retried at return;
    /// [`FRAME_KERNEL`]; [`CALL_EMPTY_STRS`].
    pub flags: u32,
    /// Library calls: the user stack pointer at entry (it points at the return address).
    /// Every call made while this one is in progress enters below it.
    pub sp: u64,
}

/// [`Frame::flags`]: string arguments to retry at return.
pub const FRAME_STR_RETRY: u32 = 0xff;
/// [`Frame::flags`]: a syscall's or kernel function's frame. None can still be in progress
/// when the thread enters a new syscall: such frames on top of its stack then lost their
/// return (the exit program attached after the entry program, or a detach in between).
pub const FRAME_KERNEL: u32 = 1 << 8;

/// The per-thread call stack (in [`maps::TASK_STACKS`], or keyed by tid in [`maps::STACKS`]).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ThreadStack {
    /// Number of calls in progress; may exceed [`MAX_DEPTH`] (frames above it are not kept).
    /// With `runs_pending`, the first 8 bytes: a thread's exit and the task iterator at a
    /// stop, which may reach one stack at once, each take both in one atomic exchange.
    pub depth: u32,
    /// Bit `i`: `runs[i]` holds a range not sent yet.
    pub runs_pending: u32,
    pub frames: [Frame; MAX_DEPTH],
    /// The syscall in progress's page-cache events, one range per event (added, dirtied,
    /// deleted; [`PAGE_RUN_EVENTS`]), grown while each event follows the range (same call
    /// and file; the next page, or for dirtied pages a later one), and sent when one does not
    /// or a call returns: a 4 MiB write in 4 KiB pages sends two records, not 2,048.
    pub runs: [KernelRecord; PAGE_RUN_EVENTS.len()],
    /// The C stream of this thread's last stdio call with one, and its fd (see
    /// [`FuncSpec::stream_arg`]); 0 after a call that closes or reopens it.
    pub last_stream: u64,
    pub last_stream_fd: u64,
    /// The library GOT slot of the stream variable (`stdout`) of this thread's last call on
    /// one ([`SPEC_IMPLICIT_STREAM`]), and the variable's address it holds: fixed once the
    /// process is loaded.
    pub stream_slot: u64,
    pub stream_var: u64,
    /// In cgroup mode, `1 << 32 | Config::cgroup_epoch` as of the thread's last
    /// [`JobRecord`]; 0 before the first.
    pub job_epoch: u64,
    /// A library call a longjmp left, found at a library function's entry, where sending it
    /// cost the verifier too much: sent at the thread's next syscall's return, its exit, or
    /// the stop, unless `left.call_id` is 0 (a second one found before replaces it). Its
    /// parent, its depth, and when it was found.
    pub left: Frame,
    pub left_parent: u64,
    pub left_end: u64,
    pub left_depth: u32,
    pub _pad: u32,
}

/// The page-cache events merged per thread, in [`ThreadStack::runs`] order.
pub const PAGE_RUN_EVENTS: [KernelEvent; 3] = [
    KernelEvent::CacheAdd,
    KernelEvent::PageDirty,
    KernelEvent::CacheDelete,
];

/// Drop and bookkeeping counters, one slot each in the per-CPU [`maps::COUNTERS`] array.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    /// A record could not be reserved in the ring buffer (it was full): the event is lost.
    RingbufFull = 0,
    /// A call nested deeper than [`MAX_DEPTH`]: it is not recorded.
    StackOverflow = 1,
    /// A return found frames above its own (a missed return, e.g. longjmp), or a syscall's
    /// entry found kernel frames on top ([`FRAME_KERNEL`]): those are dropped.
    StackMismatch = 2,
    /// A user string could not be read (page not resident, bad pointer).
    StrReadFailed = 3,
    /// A thread could get no call stack (no memory for its task storage, or the hash map
    /// of kernels without BTF was full): its call is not recorded.
    StackAllocFailed = 4,
    /// Records the benchmark's stamp programs built without sending them (strata's own
    /// records are counted where they arrive, in user space, not with a map update each).
    Stamped = 5,
    /// Per-CPU call id sequence (not a drop counter).
    CallSeq = 6,
    /// Linux AIO requests past [`AIO_BATCH`] in one io_submit, or events past it in one
    /// io_getevents: not read, so not recorded (or not ended).
    AioUnread = 7,
}

pub const COUNTER_SLOTS: u32 = 8;

/// The first field of every ring-buffer record.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordKind {
    Call = 1,
    Str = 2,
    Proc = 3,
    /// A [`StrHeader`] followed by `len` bytes of an array argument.
    Blob = 4,
    /// A [`KernelRecord`].
    Kernel = 5,
    /// A [`TypeIdsRecord`].
    TypeIds = 6,
    /// An [`ImageHeader`] followed by `len` bytes of a new program image's arguments or
    /// environment.
    Image = 7,
    /// A [`RequestBegin`].
    RequestBegin = 8,
    /// A [`RequestEnd`].
    RequestEnd = 9,
    /// A [`JobRecord`].
    Job = 10,
}

/// A completed call (library function or syscall), emitted when it returns.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CallRecord {
    pub kind: u32,
    pub func_id: u32,
    /// Unique per host and run, never 0: `(per-CPU sequence << 10) | cpu`.
    pub call_id: u64,
    /// The call below this one on the same thread's stack; 0 at the top.
    pub parent_id: u64,
    /// CLOCK_MONOTONIC nanoseconds.
    pub ts_begin: u64,
    pub ts_end: u64,
    pub pid: u32,
    pub tid: u32,
    pub depth: u32,
    /// [`CALL_OUT_VALID`], [`CALL_INT_HANDLES`], [`CALL_NO_RETURN`], [`CALL_UNFINISHED`].
    pub flags: u32,
    pub ret: i64,
    /// The value read through the out-pointer argument at return.
    pub out: u64,
    pub args: [u64; MAX_ARGS],
}

/// `CallRecord::out` holds a value read at return.
pub const CALL_OUT_VALID: u32 = 1;
/// Set by user space on decoding a [`FUNC_INT_HANDLES`] function id.
pub const CALL_INT_HANDLES: u32 = 2;
/// Recorded at its entry, its return declined (on a session link): a stdio call on a stream
/// without an fd, whose functions may be the program's own (fopencookie) and throw a C++
/// exception, which cannot unwind through the kernel's return trampoline. `ret`, `out` and
/// `ts_end` mean nothing.
pub const CALL_NO_RETURN: u32 = 4;
/// Sent as its thread exited, or as strata stopped, the call still in progress (a thread
/// cancelled or killed inside it, a process killed by a signal, a rank waiting in a
/// collective), or as the thread's next library call showed a longjmp left it: `ret` and
/// `out` mean nothing; `ts_end` is the exit, the stop, or that call's entry.
pub const CALL_UNFINISHED: u32 = 8;
/// A syscall's string arguments that were empty at its entry, one bit per argument from bit
/// 16 on (`fstat` is `newfstatat(fd, "", ..., AT_EMPTY_PATH)` in glibc): sent as this bit,
/// not as a [`StrHeader`] record (a ring-buffer record less, some 40 ns at the syscall and the
/// record's decoding in user space). The same bits in [`Frame::flags`] until the return.
pub const CALL_EMPTY_STRS: u32 = 0xff << CALL_EMPTY_STRS_SHIFT;
pub const CALL_EMPTY_STRS_SHIFT: u32 = 16;

/// A user string argument of a call, emitted at the call's entry (before its [`CallRecord`]).
/// Only the header and the string's own bytes travel: `StrHeader` + `len` bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct StrHeader {
    pub kind: u32,
    pub arg: u32,
    pub call_id: u64,
    /// Bytes of the string without the NUL; [`STR_FAILED`] when the read failed.
    pub len: u32,
    /// tgid of the calling process (routes the record before its call's record arrives).
    pub pid: u32,
}

/// Kernel-side scratch space in which a [`StrHeader`] and its string are assembled.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct StrRecord {
    pub hdr: StrHeader,
    pub data: [u8; PATH_CAP],
}

pub const STR_FAILED: u32 = u32::MAX;

/// The kernel side wakes user space each time this much more data is waiting (or user space
/// wakes at its poll timeout): a wakeup per record would cost more than the record. A power
/// of two. While the reader looks at the ring on a timer of its own, it says so in
/// [`maps::QUIET_BELOW`], and these wakeups wait until that much data is waiting: each costs
/// the traced CPU an interrupt, some microseconds on a virtual machine.
pub const WAKEUP_BYTES: u64 = 256 << 10;

/// The value of [`maps::QUIET_BELOW`] while the reader waits for the kernel's wakeups: every
/// [`WAKEUP_BYTES`] wakes it.
pub const QUIET_NEVER: u64 = 0;

/// Bytes of a new program image's arguments ([`IMAGE_ARGS`]) or environment
/// ([`IMAGE_ENV`]), sent at exec in [`IMAGE_PART`]-byte parts: the process's identity (command
/// line, MPI rank, job ids) does not depend on user space reading /proc before it ends.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ImageHeader {
    pub kind: u32,
    pub pid: u32,
    /// [`IMAGE_ARGS`] or [`IMAGE_ENV`].
    pub what: u32,
    /// Where this part starts in the area.
    pub offset: u32,
    pub len: u32,
    /// Bytes of the whole area (more than are sent past the caps).
    pub total: u32,
}

/// Kernel-side scratch space in which an [`ImageHeader`] and its bytes are assembled.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ImageRecord {
    pub hdr: ImageHeader,
    pub data: [u8; IMAGE_PART],
}

pub const IMAGE_ARGS: u32 = 0;
pub const IMAGE_ENV: u32 = 1;
/// Bytes per part: few parts keep the verifier's walk of the loop short (it follows every
/// iteration); a per-CPU scratch value may not exceed 32 KiB.
pub const IMAGE_PART: usize = 16384;
/// Parts sent of the arguments (16 KiB) and of the environment (128 KiB: launchers append a
/// rank's variables to an environment that module systems make tens of KiB long, and shells
/// in between reorder it, so all of it is sent; only what is there is copied).
pub const IMAGE_ARGS_PARTS: usize = 1;
pub const IMAGE_ENV_PARTS: usize = 8;

/// A process lifecycle event.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ProcRecord {
    pub kind: u32,
    /// [`ProcEvent`] as u32.
    pub event: u32,
    pub ts: u64,
    /// tgid of the current task (the creator for `NewTask`).
    pub pid: u32,
    pub tid: u32,
    /// `NewTask`: the new task's id. `Exec`: the old tid. `Exit`: the exiting tid.
    pub other: u32,
    /// `NewTask`: low 32 bits of clone flags. `Exit`: 1 when the whole group is dead.
    pub flags: u32,
    pub comm: [u8; 16],
    /// `Exec`: the executed file as passed to execve (NUL-terminated, maybe truncated).
    pub filename: [u8; FILENAME_CAP],
    /// `NewTask` and `Exec`: the root the process sees its files from, as the creator had it
    /// at the fork and as the new image has it at the exec; all 0 when unknown.
    pub root: RootId,
    /// In cgroup mode, the traced cgroup the process is in (see [`JobRecord`]); 0 else.
    pub job: u64,
}

/// In cgroup mode, the traced cgroup a thread is in, sent before its first traced call's
/// records and again after each change of the traced cgroups (a new
/// [`Config::cgroup_epoch`]): the daemon routes a process's records to the job of that
/// cgroup even when the process is gone before it gets to them, where `/proc` would no longer
/// say. The deepest where traced cgroups nest.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct JobRecord {
    pub kind: u32,
    pub pid: u32,
    pub tid: u32,
    pub _pad: u32,
    /// The cgroup's id (0: in none any more).
    pub job: u64,
}

/// A root directory as a process sees it: its mount namespace, the device (the kernel's
/// `dev_t`: major << 20 | minor) and inode of its directory.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RootId {
    pub ino: u64,
    pub dev: u32,
    pub mnt_ns: u32,
}

pub const FILENAME_CAP: usize = 256;

#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcEvent {
    NewTask = 1,
    Exec = 2,
    Exit = 3,
}

#[cfg(feature = "user")]
mod pod {
    // SAFETY: all are repr(C), Copy, and have no implicit padding.
    unsafe impl aya::Pod for super::Config {}
    unsafe impl aya::Pod for super::FuncSpec {}
    unsafe impl aya::Pod for super::OnlyKey {}
    unsafe impl aya::Pod for super::TypeTable {}
    unsafe impl aya::Pod for super::ThreadStack {}
    unsafe impl aya::Pod for super::KernelFields {}
    unsafe impl aya::Pod for super::BioKey {}
    unsafe impl aya::Pod for super::UringOp {}
    unsafe impl aya::Pod for super::PageOffsets {}
    unsafe impl aya::Pod for super::BlockOffsets {}
    unsafe impl aya::Pod for super::TaskOffsets {}
}

const _: () = {
    assert!(core::mem::size_of::<Config>() == 200);
    assert!(core::mem::offset_of!(ThreadStack, depth) == 0);
    assert!(core::mem::offset_of!(ThreadStack, runs_pending) == 4);
    assert!(core::mem::align_of::<ThreadStack>() == 8);
    assert!(core::mem::size_of::<BlockOffsets>() == 56);
    assert!(core::mem::size_of::<TaskOffsets>() == 48);
    assert!(core::mem::size_of::<ImageHeader>() == 24);
    assert!(core::mem::size_of::<FuncSpec>() == 28);
    assert!(core::mem::size_of::<OnlyKey>() == 8);
    assert!(core::mem::size_of::<TypeTable>() == 8 + 16 * MAX_TYPE_REFS);
    assert!(core::mem::size_of::<TypeIdsRecord>() == 16 + 16 * MAX_TYPE_REFS);
    assert!(core::mem::size_of::<Frame>() == 80);
    assert!(core::mem::size_of::<CallRecord>() == 120);
    assert!(core::mem::size_of::<StrHeader>() == 24);
    assert!(core::mem::size_of::<StrRecord>() == 24 + PATH_CAP);
    assert!(core::mem::size_of::<ProcRecord>() == 48 + FILENAME_CAP + 16 + 8);
    assert!(core::mem::size_of::<JobRecord>() == 24);
    assert!(core::mem::size_of::<KernelFields>() == 84);
    assert!(core::mem::size_of::<BioKey>() == 16);
    assert!(core::mem::size_of::<KernelRecord>() == 88);
    assert!(core::mem::size_of::<UringField>() == 8);
    assert!(core::mem::size_of::<UringOp>() == 16 + 8 * MAX_ARGS);
    assert!(core::mem::size_of::<RequestBegin>() == 128);
    assert!(core::mem::size_of::<RequestEnd>() == 48);
};
