//! strata's kernel side: one generic pair of programs for syscalls (on BTF raw tracepoints,
//! or on trace events where the kernel lacks BTF), one for uprobes, and three for process
//! lifecycle. What each probed function captures comes from
//! the spec maps that user space fills from probes.toml, so adding a function is a line of
//! TOML, not new code here.
//!
//! Static names equal the constants in `strata_common::{maps, programs}` (a user-space test
//! checks the object against them).
#![no_std]
#![no_main]
// The one atomic exchange of `send_left`: the target has no compare-and-swap, so core's
// atomic types lack `swap`, which the kernel has (BPF_XCHG, Linux 5.12+).
#![feature(core_intrinsics)]
#![allow(internal_features)]

/// Field `$f` of the read-only global `$global`, set at load time (a constant to the
/// verifier: kernel-struct offsets from BTF).
macro_rules! set_at_load {
    ($global:ident . $f:ident) => {
        // SAFETY: a read of a plain global (volatile: not the value the object was built with).
        unsafe { core::ptr::read_volatile(&raw const $global.$f) }
    };
}

mod aio;
mod kernel;
mod kfunc;
mod lifecycle;
mod thread;
mod uring;

use aya_ebpf::{
    EbpfContext as _,
    bindings::{BPF_RB_AVAIL_DATA, BPF_RB_FORCE_WAKEUP, BPF_RB_NO_WAKEUP, pt_regs},
    helpers::{
        bpf_get_attach_cookie, bpf_get_current_ancestor_cgroup_id, bpf_get_current_pid_tgid,
        bpf_get_current_task, bpf_get_current_uid_gid, bpf_get_func_ip, bpf_get_smp_processor_id,
        bpf_ktime_get_ns, bpf_probe_read_kernel_buf, bpf_probe_read_kernel_str_bytes,
        bpf_probe_read_user, bpf_probe_read_user_buf, bpf_probe_read_user_str_bytes,
    },
    macros::{btf_tracepoint, map, tracepoint, uprobe, uretprobe},
    maps::{Array, HashMap, LruHashMap, PerCpuArray, RingBuf},
    programs::{BtfTracePointContext, ProbeContext, RetProbeContext, TracePointContext},
};
use strata_common::{
    ARRAY_MAX_BYTES, ARRAY_PIECES, BLOB_WORDS, CALL_EMPTY_STRS, CALL_EMPTY_STRS_SHIFT,
    CALL_NO_RETURN, CALL_OUT_VALID, CALL_UNFINISHED, CGROUP_VERDICT_SLOTS, COOKIE_LOAD_AT_CALL,
    COOKIE_STREAM_INDIRECT, COOKIE_STREAM_VAR, COOKIE_TABLE_SHIFT, COUNTER_SLOTS, CallRecord,
    Config, Counter, DEREF_FAILED, FD_FROM_RET, FRAME_KERNEL, FRAME_STR_RETRY, Frame, FuncSpec,
    JobRecord, MAX_ARGS, MAX_CGROUP_DEPTHS, MAX_DEPTH, MAX_FUNCS, MAX_ONLY_VALUES, MAX_SYSCALLS,
    MAX_TYPE_REFS, MAX_TYPE_TABLES, NO_ARG, NO_CGROUP_LEVEL, OUT_BUFFERED, OUT_MPI_STATUS,
    OUT_TEXT, OnlyKey, PATH_CAP, QUIET_NEVER, RecordKind, SPEC_AIO_REAP, SPEC_AIO_SUBMIT,
    SPEC_AIO_WAIT, SPEC_EMIT_AT_ENTRY, SPEC_ENABLED, SPEC_IF_ZERO, SPEC_IMPLICIT_STREAM,
    SPEC_STREAM_END, SPEC_WAKE, STOP_FROZEN, STR_CAP, STR_FAILED, StrHeader, StrRecord,
    TEXT_PIECES, TEXT_UNENDED, TRACED_BLOCK, TRACED_BLOCKS, ThreadStack, TypeId, TypeIdsRecord,
    TypeTable, WAKEUP_BYTES, stream_var_delta,
};

#[map]
static STRATA_CONFIG: Array<Config> = Array::with_max_entries(1, 0);

/// tgids being traced (unless `trace_all`).
#[map]
static STRATA_TRACED: HashMap<u32, u32> = HashMap::with_max_entries(65536, 0);

/// A byte per tgid, set before the process's entry in `STRATA_TRACED` is made and never
/// cleared: a clear one says a process is not traced without the hash lookup, a helper
/// call at every syscall of every other process on the node, where the kernel reads an
/// array inline (measured: strata's filter of such a syscall went from 70 to 33 ns). A stale
/// one (a pid used again) costs the lookup only.
/// Bytes, not bits: consecutive forks make neighbouring pids, and a byte is set by a store
/// of its own where a bit would need an atomic update of its word.
#[map]
static STRATA_TRACED_MARKS: Array<[u8; TRACED_BLOCK]> = Array::with_max_entries(TRACED_BLOCKS, 0);

/// Whether `tgid` may be in `STRATA_TRACED` (its mark is set).
#[inline(always)]
fn may_be_traced(tgid: u32) -> bool {
    STRATA_TRACED_MARKS
        .get(tgid / TRACED_BLOCK as u32)
        .is_none_or(|b| b[tgid as usize % TRACED_BLOCK] != 0)
}

/// [`traced`] at a syscall, which every process on the node makes: most are not traced, and
/// their marks, or their cgroup's cached verdict, say so first. (Library and kernel-function
/// entries trap at a cost that dwarfs the lookups, and the kernel-function entry is near its
/// verifier budget on 6.12.)
#[inline(always)]
fn traced_at_syscall(cfg: &Config, me: &thread::Me) -> bool {
    let tgid = me.tgid();
    if cfg.cgroup_mode != 0 {
        return not_self(cfg, tgid) && in_traced_cgroup_cached(cfg, me) && user_traced(cfg);
    }
    if cfg.trace_all == 0 && !may_be_traced(tgid) {
        return false;
    }
    traced(cfg, tgid)
}

/// Sets `tgid`'s mark, before its entry in `STRATA_TRACED` is made.
#[inline(always)]
fn mark_traced(tgid: u32) {
    if let Some(b) = STRATA_TRACED_MARKS.get_ptr_mut(tgid / TRACED_BLOCK as u32) {
        // SAFETY: an element of the array map, valid for the program's run.
        unsafe { (*b)[tgid as usize % TRACED_BLOCK] = 1 };
    }
}

/// Traced cgroups v2 by id (the value is unused), when `Config::cgroup_levels` is set.
#[map]
static STRATA_CGROUPS: HashMap<u64, u32> = HashMap::with_max_entries(4096, 0);

/// A cgroup's verdict in cgroup mode, as worked out in some `Config::cgroup_epoch`.
#[repr(C)]
struct CgroupVerdict {
    id: u64,
    /// The id's low 32 bits above the epoch (31 bits) above the verdict (the lowest bit).
    /// Two CPUs that store verdicts of different cgroups into one element at once may leave
    /// one's id with the other's tag: the id's bits in the tag tell.
    tag: u64,
}

/// Verdicts by cgroup id modulo the size. Every syscall of every process on the node asks
/// whether its cgroup is traced: the ancestor lookups and the hash lookup of each level in
/// use cost some 100 ns here, the cgroup's id and a read of this array (inline: no helper
/// call) a fraction. A cgroup's verdict holds until the traced cgroups change, as its
/// ancestors never do (cgroup v2 moves no cgroup to another parent) and ids are not reused.
#[map]
static STRATA_CGROUP_VERDICTS: Array<CgroupVerdict> =
    Array::with_max_entries(CGROUP_VERDICT_SLOTS, 0);

/// [`in_traced_cgroup`] by the current task's cgroup's cached verdict, worked out and kept
/// where there is none of this epoch.
#[inline(always)]
fn in_traced_cgroup_cached(cfg: &Config, me: &thread::Me) -> bool {
    // Read before the traced cgroups: user space changes the epoch after them, so a verdict
    // from cgroups older than the epoch it is kept with is never used.
    // SAFETY: a field of the config map's value.
    let epoch = unsafe { core::ptr::read_volatile(&raw const cfg.cgroup_epoch) };
    let id = me.cgroup_id();
    if id == 0 {
        // Unreadable (no task is without a cgroup): no verdict to keep.
        return in_traced_cgroup(cfg.cgroup_levels);
    }
    let tag = (id << 32) | (u64::from(epoch & 0x7fff_ffff) << 1);
    let slot = STRATA_CGROUP_VERDICTS.get_ptr_mut((id % u64::from(CGROUP_VERDICT_SLOTS)) as u32);
    if let Some(v) = slot {
        // SAFETY: an element of the array map; a concurrent store is told by the tag.
        let (kept_id, kept_tag) = unsafe { ((*v).id, (*v).tag) };
        if kept_id == id && kept_tag & !1 == tag {
            return kept_tag & 1 != 0;
        }
    }
    // SAFETY: as above (after the epoch: user space writes the levels first).
    let levels = unsafe { core::ptr::read_volatile(&raw const cfg.cgroup_levels) };
    let verdict = in_traced_cgroup(levels);
    if let Some(v) = slot {
        // SAFETY: as above.
        unsafe {
            (*v).id = id;
            (*v).tag = tag | u64::from(verdict);
        }
    }
    verdict
}

/// The uids traced when `Config::user_filter` is set (the value is unused).
#[map]
static STRATA_USERS: HashMap<u32, u8> = HashMap::with_max_entries(1024, 0);

/// The values a probe's `only_arg` may have (the value is unused).
#[map]
static STRATA_ONLY_VALUES: HashMap<OnlyKey, u8> = HashMap::with_max_entries(MAX_ONLY_VALUES, 0);

#[map]
static STRATA_FUNC_SPECS: Array<FuncSpec> = Array::with_max_entries(MAX_FUNCS, 0);

/// Indexed by syscall number. (The record's `common_type` cannot tell syscall events apart:
/// for BPF programs the kernel overwrites the common header with a pt_regs pointer.)
#[map]
static STRATA_SYSCALL_SPECS: Array<FuncSpec> = Array::with_max_entries(MAX_SYSCALLS, 0);

#[map]
static STRATA_COUNTERS: PerCpuArray<u64> = PerCpuArray::with_max_entries(COUNTER_SLOTS, 0);

/// Sized by user space at load time (`--ring-buffer-mib`).
#[map]
static STRATA_EVENTS: RingBuf = RingBuf::with_byte_size(16 << 20, 0);

/// Predefined datatype tables of probed functions, indexed by the high half of the cookie.
#[map]
static STRATA_TYPE_TABLES: Array<TypeTable> = Array::with_max_entries(MAX_TYPE_TABLES, 0);

/// Processes whose predefined type ids were sent: tgid -> type table (forgotten at exec and
/// exit; least recently used first out, so that a full map costs a resend, not a miss).
#[map]
static STRATA_TYPES_SENT: LruHashMap<u32, u32> = LruHashMap::with_max_entries(16384, 0);

/// Where a string record is assembled before its used part is copied out.
#[map]
static STRATA_STR_SCRATCH: PerCpuArray<StrRecord> = PerCpuArray::with_max_entries(1, 0);

/// Set by the ring's reader: while it looks at the ring on a timer of its own, the data
/// waiting below which a crossing of `WAKEUP_BYTES` wakes no one, nor a library call
/// (0 else).
#[map]
static STRATA_QUIET_BELOW: Array<u64> = Array::with_max_entries(1, 0);

/// Submit flags for a record of `len` bytes: wake the reader when the record carries the data
/// waiting across a multiple of `WAKEUP_BYTES`, else not at all. Once a reader lags (it is
/// awake and busy then), forcing a wakeup for every record past the threshold would cost an
/// interrupt per record (a VM exit, microseconds, on virtual machines); crossings keep it to
/// one per `WAKEUP_BYTES`, and a crossing missed under concurrent producers is caught at the
/// next one. `reserved`: the record is already counted in the available data.
#[inline(always)]
fn wakeup(len: usize, reserved: bool) -> u64 {
    let (crossed, _) = crossing(len, reserved);
    if crossed {
        u64::from(BPF_RB_FORCE_WAKEUP)
    } else {
        u64::from(BPF_RB_NO_WAKEUP)
    }
}

/// As `wakeup` for a reserved record, but not even at a crossing while the reader says it
/// looks anyway (`STRATA_QUIET_BELOW`), until that much is waiting. Only for the records of
/// syscalls and kernel functions, the ones made by the million: each site costs the verifier
/// paths, and the library entry program is near 6.1's budget.
#[inline(always)]
fn quiet_wakeup(len: usize) -> u64 {
    let (crossed, after) = crossing(len, true);
    // The reader's word only at a crossing: one load per `WAKEUP_BYTES`, not per record.
    if crossed
        && STRATA_QUIET_BELOW
            .get(0)
            .is_none_or(|quiet| after >= *quiet)
    {
        u64::from(BPF_RB_FORCE_WAKEUP)
    } else {
        u64::from(BPF_RB_NO_WAKEUP)
    }
}

/// Whether a record of `len` bytes carries the data waiting across a multiple of
/// `WAKEUP_BYTES`, and the data waiting with it.
#[inline(always)]
fn crossing(len: usize, reserved: bool) -> (bool, u64) {
    const _: () = assert!(WAKEUP_BYTES.is_power_of_two());
    // The kernel's record header and rounding, so that `after` is where the record ends.
    let size = (len as u64 + 8 + 7) & !7;
    let avail = STRATA_EVENTS.query(u64::from(BPF_RB_AVAIL_DATA));
    let (before, after) = if reserved {
        (avail.saturating_sub(size), avail)
    } else {
        (avail, avail + size)
    };
    (before / WAKEUP_BYTES != after / WAKEUP_BYTES, after)
}

/// Last forced wakeup of `prompt_wakeup`, on any CPU.
#[map]
static STRATA_LAST_WAKE: Array<u64> = Array::with_max_entries(1, 0);

/// Forced wakeups of `prompt_wakeup` are at least this far apart on the node.
const PROMPT_WAKE_NS: u64 = 1_000_000;

/// Submit flags for records user space should see soon: a forced wakeup unless one was
/// forced less than `PROMPT_WAKE_NS` ago on any CPU (then the usual threshold applies), or
/// the reader looks at the ring on its own timer (`STRATA_QUIET_BELOW`), as it does while
/// records come: it takes them within two of its ticks then (the copier's), and the
/// wakeups bought nothing but interrupts, an exit to the host on a virtual machine and a
/// pass of the reader each (4 ranks of collective HDF5 writes on 2 CPUs: some 1,000 a
/// second, a fifth of strata's CPU time). `now`: the record's own time stamp (a clock read
/// costs tens of ns here).
///
/// Node-wide, not per CPU: a job's ranks making library calls on every core forced up to
/// one wakeup per millisecond each, an interrupt on the rank's CPU and a pass of strata's
/// reader apiece (on 2 CPUs, 4 ranks of collective HDF5 writes raised 1,800 a second, and
/// the reader's wakeups took a quarter to a third of strata's CPU time per event); the
/// reader woken once reads what every CPU wrote. Two CPUs that both find the last one old
/// both force one: harmless. The slot is written at most once a millisecond, so its cache
/// line stays shared between the CPUs that read it.
#[inline(always)]
fn prompt_wakeup(len: usize, now: u64) -> u64 {
    if STRATA_QUIET_BELOW
        .get(0)
        .is_some_and(|quiet| *quiet != QUIET_NEVER)
    {
        return quiet_wakeup(len);
    }
    if let Some(last) = STRATA_LAST_WAKE.get_ptr_mut(0) {
        // SAFETY: an aligned 8-byte slot of a map value: each load and store is whole.
        unsafe {
            // Saturating: a CPU whose stamp precedes another's newer write forces none.
            if now.saturating_sub(core::ptr::read_volatile(last)) >= PROMPT_WAKE_NS {
                core::ptr::write_volatile(last, now);
                return u64::from(BPF_RB_FORCE_WAKEUP);
            }
        }
    }
    wakeup(len, true)
}

type Res<T> = Result<T, i64>;

/// The `T` at byte `off` of kernel object `base`: a direct load, which the verifier checks
/// against the kernel's BTF and which reads 0 where `base` is no mapped object.
#[inline(always)]
fn at<T: Copy>(base: *const u8, off: u32) -> T {
    // SAFETY: for the verifier to allow (a field of the object's BTF type); the kernel
    // handles a fault of such a load.
    unsafe { core::ptr::read_volatile(base.wrapping_add(off as usize).cast::<T>()) }
}

#[inline(always)]
fn count(c: Counter) {
    count_n(c, 1);
}

#[inline(always)]
fn count_n(c: Counter, n: u64) {
    if let Some(p) = STRATA_COUNTERS.get_ptr_mut(c as u32) {
        // SAFETY: per-CPU slot, no concurrent writer on this CPU.
        unsafe { *p += n };
    }
}

#[inline(always)]
fn config() -> Res<&'static Config> {
    STRATA_CONFIG.get(0).ok_or(-1)
}

/// The kernel-side filter: is the current process traced? (A target, of a traced user.)
#[inline(always)]
fn traced(cfg: &Config, tgid: u32) -> bool {
    in_target(cfg, tgid) && user_traced(cfg)
}

#[inline(always)]
fn user_traced(cfg: &Config) -> bool {
    if cfg.user_filter == 0 {
        return true;
    }
    let uid = bpf_get_current_uid_gid() as u32;
    // SAFETY: read-only lookup of a plain integer value.
    unsafe { STRATA_USERS.get(uid) }.is_some()
}

/// Is the current process one strata was asked to trace (whatever its user)?
#[inline(always)]
fn in_target(cfg: &Config, tgid: u32) -> bool {
    target_job(cfg, tgid).is_some()
}

/// [`in_target`], with the traced cgroup the process is in, in cgroup mode (0 else).
#[inline(always)]
fn target_job(cfg: &Config, tgid: u32) -> Option<u64> {
    if !not_self(cfg, tgid) {
        return None;
    }
    if cfg.cgroup_mode != 0 {
        let job = traced_cgroup(cfg.cgroup_levels);
        return (job != 0).then_some(job);
    }
    // SAFETY: read-only lookup of a plain integer value.
    (cfg.trace_all != 0 || unsafe { STRATA_TRACED.get(tgid) }.is_some()).then_some(0)
}

/// Neither strata itself nor a process of a stopped run.
#[inline(always)]
fn not_self(cfg: &Config, tgid: u32) -> bool {
    tgid != cfg.self_tgid && cfg.stopped == 0
}

/// Is the current task inside one of the traced cgroups?
#[inline(always)]
fn in_traced_cgroup(levels: [u8; MAX_CGROUP_DEPTHS]) -> bool {
    traced_cgroup(levels) != 0
}

/// The traced cgroup the current task is inside, the deepest where they nest (the daemon
/// gives a process to the innermost job), or 0. One ancestor lookup per level in use
/// (usually one: a node's Slurm jobs all sit at the same depth), deepest first.
#[inline(always)]
fn traced_cgroup(levels: [u8; MAX_CGROUP_DEPTHS]) -> u64 {
    for level in levels {
        if level == NO_CGROUP_LEVEL {
            break;
        }
        // SAFETY: the helper only reads the current task's cgroup.
        let id = unsafe { bpf_get_current_ancestor_cgroup_id(i32::from(level)) };
        // SAFETY: read-only lookup of a plain integer value.
        if unsafe { STRATA_CGROUPS.get(id) }.is_some() {
            return id;
        }
    }
    0
}

/// In cgroup mode, tells user space which traced cgroup the thread of stack `st` is in, once
/// per change of the traced cgroups (see [`JobRecord`]). Before the call's own records.
#[inline(always)]
fn announce_job(cfg: &Config, st: *mut ThreadStack, pid_tgid: u64) {
    // SAFETY: a field of the config map's value.
    let epoch = unsafe { core::ptr::read_volatile(&raw const cfg.cgroup_epoch) };
    let mark = (1 << 32) | u64::from(epoch);
    // SAFETY: this thread's stack.
    if unsafe { (*st).job_epoch } == mark {
        return;
    }
    // SAFETY: as above (user space writes the levels before the epoch).
    let levels = unsafe { core::ptr::read_volatile(&raw const cfg.cgroup_levels) };
    let job = traced_cgroup(levels);
    let Some(mut entry) = STRATA_EVENTS.reserve::<JobRecord>(0) else {
        // Sent at the thread's next call.
        count(Counter::RingbufFull);
        return;
    };
    entry.write(JobRecord {
        kind: RecordKind::Job as u32,
        pid: (pid_tgid >> 32) as u32,
        tid: pid_tgid as u32,
        _pad: 0,
        job,
    });
    entry.submit(wakeup(core::mem::size_of::<JobRecord>(), true));
    // SAFETY: as above.
    unsafe { (*st).job_epoch = mark };
}

#[inline(always)]
fn next_call_id() -> u64 {
    let cpu = u64::from(unsafe { bpf_get_smp_processor_id() });
    let seq = match STRATA_COUNTERS.get_ptr_mut(Counter::CallSeq as u32) {
        // SAFETY: per-CPU slot, no concurrent writer on this CPU.
        Some(p) => unsafe {
            *p += 1;
            *p
        },
        None => 0,
    };
    (seq << 10) | (cpu & 0x3ff)
}

/// A frame index the verifier can bound: the volatile read keeps the optimiser from folding
/// the mask into pointer arithmetic it cannot follow. MAX_DEPTH is a power of two.
#[inline(always)]
fn slot(i: usize) -> usize {
    // SAFETY: a read of a local.
    unsafe { core::ptr::read_volatile(&i) & (MAX_DEPTH - 1) }
}

const _: () = assert!(MAX_DEPTH.is_power_of_two());

/// `n`, at most `max`, in a form the verifier can bound (see `slot`).
#[inline(always)]
fn bounded(n: usize, max: usize) -> usize {
    // SAFETY: a read of a local.
    let n = unsafe { core::ptr::read_volatile(&n) };
    if n > max { max } else { n }
}

/// `n`, at most `max`, for a helper's size argument: as `bounded`, with a mask first, which
/// gives 6.1's verifier a range it can use where its own went wrong (a difference of two
/// unknowns it had bounded on other registers).
#[inline(always)]
fn masked(n: usize, max: usize) -> usize {
    // SAFETY: a read of a local.
    let n = unsafe { core::ptr::read_volatile(&n) } & (2 * max.next_power_of_two() - 1);
    if n > max { max } else { n }
}

/// Sends the first `used` bytes of a scratch record (its header and the used part of its
/// data); false when the ring buffer was full (counted).
///
/// # Safety
/// `used` must not exceed the size of `*rec`.
#[inline(always)]
unsafe fn output_prefix<T>(rec: *const T, used: usize) -> bool {
    let flags = wakeup(used, false);
    // Bounded again after the helper call above: the compiler may keep `used` on the stack
    // across it from before the caller's bound, and 6.1's verifier does not carry a bound
    // over to a spilled copy.
    let used = bounded(used, core::mem::size_of::<T>());
    // SAFETY: `used` is at most the record's size.
    let bytes = unsafe { core::slice::from_raw_parts(rec.cast::<u8>(), used) };
    let sent = STRATA_EVENTS.output::<[u8]>(bytes, flags).is_ok();
    if !sent {
        count(Counter::RingbufFull);
    }
    sent
}

/// Copies the string arguments in `mask` into ring-buffer records. A string whose page is
/// not resident yet (a literal the program never touched) cannot be read here; with `retry`,
/// it is left out and its bit returned, to be read at return, when the callee has used it.
/// With `skip_empty` (syscalls), an empty string is not sent: its bit is returned in
/// [`CALL_EMPTY_STRS`]. Not in the library programs: the mask's values per path, one more
/// branch an argument, took 6.1's verifier over 300,000 instructions on their entry.
#[inline(always)]
#[expect(
    clippy::needless_range_loop,
    reason = "`i` is also the argument's bit in `mask`"
)]
fn emit_strings(
    mask: u8,
    call_id: u64,
    args: &[u64; MAX_ARGS],
    retry: bool,
    skip_empty: bool,
) -> u32 {
    // Most calls pass no string (write, read): no walk over their six arguments, nor past
    // the last string.
    if mask == 0 {
        return 0;
    }
    let mut failed = 0u32;
    for i in 0..MAX_ARGS {
        if mask >> i == 0 {
            break;
        }
        if mask & (1 << i) == 0 {
            continue;
        }
        let Some(rec) = STRATA_STR_SCRATCH.get_ptr_mut(0) else {
            return failed;
        };
        // SAFETY: per-CPU scratch, used only for the duration of this program.
        unsafe {
            let len = match bpf_probe_read_user_str_bytes(args[i] as *const u8, &mut (*rec).data) {
                Ok([]) if skip_empty => {
                    failed |= 1 << (i as u32 + CALL_EMPTY_STRS_SHIFT);
                    continue;
                }
                Ok(s) => s.len() as u32,
                Err(_) if retry => {
                    failed |= 1 << i;
                    continue;
                }
                Err(_) => {
                    count(Counter::StrReadFailed);
                    STR_FAILED
                }
            };
            send_str(rec, i, call_id, len);
        }
    }
    failed
}

/// Sends the string the scratch record holds (`len` bytes, or [`STR_FAILED`]) as argument
/// `arg` of `call_id`.
///
/// # Safety
/// `rec` is this CPU's [`STRATA_STR_SCRATCH`] entry.
#[inline(always)]
unsafe fn send_str(rec: *mut StrRecord, arg: usize, call_id: u64, len: u32) {
    // SAFETY: the caller's scratch, used only for the duration of this program.
    unsafe {
        (*rec).hdr = StrHeader {
            kind: RecordKind::Str as u32,
            arg: arg as u32,
            call_id,
            len,
            pid: (bpf_get_current_pid_tgid() >> 32) as u32,
        };
    }
    let n = if len == STR_FAILED { 0 } else { len as usize };
    let used = core::mem::size_of::<StrHeader>() + bounded(n, PATH_CAP);
    // SAFETY: `used` <= size_of::<StrRecord>(), so the slice stays inside the scratch.
    unsafe { output_prefix(rec, used) };
}

/// Sends a string of kernel memory (an io_uring request's path) as argument `arg` of
/// `call_id`.
#[inline(always)]
fn emit_kernel_string(arg: usize, call_id: u64, src: u64) {
    let Some(rec) = STRATA_STR_SCRATCH.get_ptr_mut(0) else {
        return;
    };
    // SAFETY: per-CPU scratch, used only for the duration of this program.
    unsafe {
        let len = match bpf_probe_read_kernel_str_bytes(src as *const u8, &mut (*rec).data) {
            Ok(s) => s.len() as u32,
            Err(_) => {
                count(Counter::StrReadFailed);
                STR_FAILED
            }
        };
        send_str(rec, arg, call_id, len);
    }
}

/// Copies the arrays (up to `BLOB_WORDS` words) that the arguments in `mask` point to. An
/// array shorter than that may end at an unmapped page: then words are read one at a time.
#[inline(always)]
#[expect(
    clippy::needless_range_loop,
    reason = "`i` is also the argument's bit in `mask`"
)]
fn emit_blobs(mask: u8, call_id: u64, args: &[u64; MAX_ARGS]) {
    for i in 0..MAX_ARGS {
        if mask & (1 << i) == 0 || args[i] == 0 {
            continue;
        }
        let Some(rec) = STRATA_STR_SCRATCH.get_ptr_mut(0) else {
            return;
        };
        const BYTES: usize = BLOB_WORDS * 8;
        // SAFETY: per-CPU scratch, used only for the duration of this program.
        let len = unsafe {
            let data = &mut (*rec).data;
            let dst = &mut data[..BYTES];
            if bpf_probe_read_user_buf(args[i] as *const u8, dst).is_ok() {
                BYTES
            } else {
                let mut n = 0;
                for w in 0..BLOB_WORDS {
                    let src = (args[i] + (w * 8) as u64) as *const u64;
                    match bpf_probe_read_user(src) {
                        Ok(v) => {
                            if let Some(d) = data.get_mut(w * 8..w * 8 + 8) {
                                d.copy_from_slice(&u64::to_ne_bytes(v));
                            }
                            n += 8;
                        }
                        Err(_) => break,
                    }
                }
                n
            }
        };
        // SAFETY: as in `emit_strings`.
        unsafe {
            (*rec).hdr = StrHeader {
                kind: RecordKind::Blob as u32,
                arg: i as u32,
                call_id,
                len: len as u32,
                pid: (bpf_get_current_pid_tgid() >> 32) as u32,
            };
        }
        let used = core::mem::size_of::<StrHeader>() + bounded(len, STR_CAP);
        // SAFETY: `used` <= size_of::<StrRecord>().
        unsafe { output_prefix(rec, used) };
    }
}

/// Bytes of the counted array of `spec` whose elements are `1 << shift` bytes wide, at most
/// [`ARRAY_MAX_BYTES`].
#[inline(always)]
fn array_bytes(spec: &FuncSpec, args: &[u64; MAX_ARGS], shift: u8) -> usize {
    let n = (arg_at(args, spec.array_len_arg) as u32 as i32).max(0) as usize;
    (n << (shift & 3)).min(ARRAY_MAX_BYTES)
}

/// Sets argument slot `i` (none past the last), by stores at constant offsets (see
/// `arg_at`).
#[inline(always)]
fn set_arg(args: &mut [u64; MAX_ARGS], i: u8, v: u64) {
    for (k, a) in args.iter_mut().enumerate() {
        if k == usize::from(i) {
            *a = v;
        }
    }
}

/// The first descriptor an `SCM_RIGHTS` control message of the user `struct msghdr` at
/// `msg` carries (low 32 bits, -1 when none) and their number (high 32 bits): see
/// `FuncSpec::rights_arg`. Of the first two control messages, since a receiver that asked
/// for its peer's credentials gets them first.
#[inline(always)]
fn passed_fd(msg: u64) -> u64 {
    const NONE: u64 = u32::MAX as u64;
    // struct msghdr (x86-64): msg_control at byte 32, msg_controllen (the length received,
    // at a recvmsg's return) at 40; struct cmsghdr: cmsg_len, cmsg_level, cmsg_type, data.
    // SAFETY: the helper tolerates null and bad user pointers.
    let (Ok(ctl), Ok(len)) = (
        unsafe { bpf_probe_read_user((msg + 32) as *const u64) },
        unsafe { bpf_probe_read_user((msg + 40) as *const u64) },
    ) else {
        return NONE;
    };
    let mut off = 0u64;
    for _ in 0..2 {
        if off + 20 > len {
            break;
        }
        // SAFETY: as above.
        let Ok(hdr) = (unsafe { bpf_probe_read_user((ctl + off) as *const [u64; 2]) }) else {
            break;
        };
        // SOL_SOCKET (1), SCM_RIGHTS (1).
        if hdr[1] == 1 | (1 << 32) {
            // SAFETY: as above.
            return match unsafe { bpf_probe_read_user((ctl + off + 16) as *const u32) } {
                Ok(fd) => u64::from(fd) | ((hdr[0].saturating_sub(16) / 4) << 32),
                Err(_) => NONE,
            };
        }
        if hdr[0] < 16 {
            break;
        }
        off += (hdr[0] + 7) & !7;
    }
    NONE
}

/// Argument `i` (0 past the last): loads at constant offsets. An index checked and then
/// reloaded from the stack loses its bound on 6.1's verifier.
#[inline(always)]
fn arg_at(args: &[u64; MAX_ARGS], i: u8) -> u64 {
    let mut v = 0;
    for (k, a) in args.iter().enumerate() {
        if k == usize::from(i) {
            v = *a;
        }
    }
    v
}

/// Copies the `bytes` bytes of the counted array at `ptr` (argument `arg`) in records of up
/// to `STR_CAP` bytes, in order. It stops at the first piece it cannot read or send: user
/// space takes the elements it has and knows how many there were.
#[inline(always)]
fn emit_array(arg: u8, call_id: u64, ptr: u64, bytes: usize) {
    if ptr == 0 {
        return;
    }
    let Some(rec) = STRATA_STR_SCRATCH.get_ptr_mut(0) else {
        return;
    };
    let pid = (bpf_get_current_pid_tgid() >> 32) as u32;
    for piece in 0..ARRAY_PIECES {
        let at = piece * STR_CAP;
        if at >= bytes {
            break;
        }
        let len = masked((bytes - at).min(STR_CAP), STR_CAP);
        let src = ptr.wrapping_add(at as u64) as *const u8;
        // SAFETY: per-CPU scratch, used only for the duration of this program; `len` is
        // bounded by its data's size.
        unsafe {
            let Some(dst) = (*rec).data.get_mut(..len) else {
                return;
            };
            if bpf_probe_read_user_buf(src, dst).is_err() {
                return;
            }
            (*rec).hdr = StrHeader {
                kind: RecordKind::Blob as u32,
                arg: u32::from(arg),
                call_id,
                len: len as u32,
                pid,
            };
            if !output_prefix(rec, core::mem::size_of::<StrHeader>() + len) {
                return;
            }
        }
    }
}

/// Where a uprobe hit: the probed address, the user stack pointer, and the index of its
/// attachment's type table (0: none; and for every other kind of probe). `loaded`: on a call
/// of a function that is one load (`COOKIE_LOAD_AT_CALL`), the call's result, recorded at once.
/// `session`: the probe is on a session link, whose entry may decline the return.
#[derive(Clone, Copy)]
struct Site {
    ip: u64,
    sp: u64,
    /// The attach cookie where it finds a stream variable ([`COOKIE_STREAM_VAR`]), else 0.
    stream_var: u64,
    table: u32,
    at_call: bool,
    session: bool,
    loaded: i64,
}

const NO_SITE: Site = Site {
    ip: 0,
    sp: 0,
    stream_var: 0,
    table: 0,
    at_call: false,
    session: false,
    loaded: 0,
};

/// Sends the ids of the predefined datatypes of the attachment's table, once per process
/// (and table): read in place while the process runs, so that user space can size its
/// transfers even when it handles them after the process is gone. A process's first call
/// through such a function comes after H5open has set them (HDF5's type macros call it).
#[inline(always)]
fn send_type_ids(site: Site, tgid: u32) {
    // SAFETY: read-only lookup of a plain integer value.
    if unsafe { STRATA_TYPES_SENT.get(tgid) } == Some(&site.table) {
        return;
    }
    let Some(table) = STRATA_TYPE_TABLES.get(site.table) else {
        return;
    };
    let Some(mut entry) = STRATA_EVENTS.reserve::<TypeIdsRecord>(0) else {
        count(Counter::RingbufFull);
        return;
    };
    let rec = entry.as_mut_ptr();
    let n = bounded(table.count as usize, MAX_TYPE_REFS);
    // SAFETY: reserved ring-buffer memory of the right size; the header and the first `n`
    // entries are written (user space reads no more).
    unsafe {
        (*rec).kind = RecordKind::TypeIds as u32;
        (*rec).pid = tgid;
        (*rec).count = n as u32;
        (*rec)._pad = 0;
        for i in 0..MAX_TYPE_REFS {
            if i >= n {
                break;
            }
            // An index the verifier can bound (6.1 loses an iterator's).
            let k = bounded(i, MAX_TYPE_REFS - 1);
            let r = &table.refs[k];
            let mut at = site.ip.wrapping_add(r.delta as u64);
            if r.indirect != 0 {
                at = bpf_probe_read_user(at as *const u64).unwrap_or(0);
            }
            (*rec).types[k] = TypeId {
                id: bpf_probe_read_user(at as *const u64).unwrap_or(0),
                size: u64::from(r.size),
            };
        }
    }
    entry.submit(wakeup(core::mem::size_of::<TypeIdsRecord>(), true));
    let _ = STRATA_TYPES_SENT.insert(tgid, site.table, 0);
}

/// Emits the record of a finished call; with `QUIET`, by `quiet_wakeup` where not `wake`.
/// `call_flags`: [`CALL_NO_RETURN`] for a call recorded at its entry without a return.
#[inline(always)]
#[expect(
    clippy::too_many_arguments,
    reason = "the record's fields, inlined into each program"
)]
fn emit_call<const QUIET: bool>(
    pid_tgid: u64,
    wake: bool,
    spec: &FuncSpec,
    frame_call_id: u64,
    parent_id: u64,
    ts_begin: u64,
    args: &[u64; MAX_ARGS],
    depth: u32,
    ret: i64,
    call_flags: u32,
) {
    let Some(mut entry) = STRATA_EVENTS.reserve::<CallRecord>(0) else {
        count(Counter::RingbufFull);
        return;
    };
    let mut out = 0u64;
    let mut flags = call_flags;
    // What a stream has left to read matters whatever the call returned (fscanf at the end
    // of its input returns EOF, having consumed what came before). Nothing was written yet
    // where the return is not seen.
    if spec.out_arg != NO_ARG
        && call_flags & CALL_NO_RETURN == 0
        && (ret >= 0 || spec.out_size == OUT_BUFFERED)
    {
        if let Some(ptr) = args.get(spec.out_arg as usize) {
            // SAFETY: reads user memory through the helper, which tolerates bad pointers.
            let read = unsafe {
                if spec.out_size == OUT_BUFFERED {
                    // Library calls only, as for text.
                    match (wake, config()) {
                        (true, Ok(cfg)) => stream_buffered(cfg, *ptr).ok_or(-1),
                        _ => Err(-1),
                    }
                } else if spec.out_size == OUT_TEXT {
                    // Library calls only (`wake`): the syscall programs carry no such code.
                    if wake {
                        text_len(*ptr).ok_or(-1)
                    } else {
                        Err(-1)
                    }
                } else if spec.out_size == OUT_MPI_STATUS {
                    match config() {
                        Ok(cfg) => bpf_probe_read_user(
                            (*ptr).wrapping_add(u64::from(cfg.status_count_off)) as *const u64,
                        ),
                        Err(_) => Err(-1),
                    }
                } else if spec.out_size == 4 {
                    bpf_probe_read_user(*ptr as *const u32).map(u64::from)
                } else {
                    bpf_probe_read_user(*ptr as *const u64)
                }
            };
            if let Ok(v) = read {
                out = v;
                flags |= CALL_OUT_VALID;
            }
        }
    }
    let rec = entry.as_mut_ptr();
    let ts_end = unsafe { bpf_ktime_get_ns() };
    // SAFETY: reserved ring-buffer memory of the right size; every field is written.
    unsafe {
        (*rec).kind = RecordKind::Call as u32;
        (*rec).func_id = spec.func_id;
        (*rec).call_id = frame_call_id;
        (*rec).parent_id = parent_id;
        (*rec).ts_begin = ts_begin;
        (*rec).ts_end = ts_end;
        (*rec).pid = (pid_tgid >> 32) as u32;
        (*rec).tid = pid_tgid as u32;
        (*rec).depth = depth;
        (*rec).flags = flags;
        (*rec).ret = ret;
        (*rec).out = out;
        store_words(&raw mut (*rec).args, args);
    }
    // Library calls: deliver them promptly, so user space still finds the process alive
    // when it reads /proc; but a wakeup costs ~3 us, more than a tight fwrite loop's whole
    // call, so at most one per millisecond on the node, and none while the reader looks on
    // its own timer; the loader's report always (`SPEC_WAKE`: one held back left the
    // libraries it reports unprobed for up to 100 ms).
    const LEN: usize = core::mem::size_of::<CallRecord>();
    entry.submit(if wake && spec.flags & SPEC_WAKE != 0 {
        u64::from(BPF_RB_FORCE_WAKEUP)
    } else if wake {
        prompt_wakeup(LEN, ts_end)
    } else if QUIET {
        quiet_wakeup(LEN)
    } else {
        wakeup(LEN, true)
    });
}

/// Sends what thread `st` has left: its page-cache runs not sent yet, then the calls still in
/// progress, deepest first, as their returns would have come ([`CALL_UNFINISHED`], ending at
/// `ts_end`): a job killed at its time limit inside a collective write keeps that write, and
/// the calls beneath it their parent. Library calls only, but for a syscall at the top with
/// `syscall` (one in progress as strata stopped): a kernel frame left on an exiting thread's
/// stack otherwise lost its return long before (see [`FRAME_KERNEL`]). The stack is left
/// empty.
///
/// # Safety
/// `st` is a thread's stack that only its exit and the task iterator may reach meanwhile.
#[inline(always)]
pub(crate) unsafe fn send_left(st: *mut ThreadStack, pid_tgid: u64, syscall: bool, ts_end: u64) {
    // Depth and pending runs in one exchange: of the thread's exit and the iterator at a stop,
    // which may reach the stack at once, only one finds anything to send.
    // SAFETY: `depth` and `runs_pending` are the stack's first 8 bytes, 8-aligned (asserted
    // in strata-common), and are only accessed atomically while both may run.
    let word = unsafe {
        core::intrinsics::atomic_xchg::<u64, { core::intrinsics::AtomicOrdering::SeqCst }>(
            st.cast::<u64>(),
            0,
        )
    };
    // SAFETY: as above.
    unsafe { kernel::send_runs(st, (word >> 32) as u32) };
    // SAFETY: as above.
    unsafe { send_jumped_over::<true>(st, pid_tgid) };
    let depth = (word as u32).min(MAX_DEPTH as u32) as usize;
    for k in 1..=MAX_DEPTH {
        let Some(i) = depth.checked_sub(k) else {
            break;
        };
        // SAFETY: the caller's; `slot` bounds the index for the verifier.
        let f = unsafe { &(*st).frames[slot(i)] };
        if f.flags & FRAME_KERNEL != 0 && !(syscall && k == 1) {
            continue;
        }
        let parent_id = match i.checked_sub(1) {
            // SAFETY: as above.
            Some(p) => unsafe { (*st).frames[slot(p)].call_id },
            None => 0,
        };
        if !send_unfinished(f, f.call_id, parent_id, i as u32, pid_tgid, ts_end) {
            return;
        }
    }
}

/// Sends the library call a longjmp left on thread `st` ([`ThreadStack::left`]), if any;
/// `ATOMIC` where the thread's exit and the task iterator may both reach it.
///
/// # Safety
/// `st` is a thread's stack.
#[inline(always)]
pub(crate) unsafe fn send_jumped_over<const ATOMIC: bool>(st: *mut ThreadStack, pid_tgid: u64) {
    // SAFETY: the caller's; `call_id` is 8-aligned.
    let id = unsafe {
        let at = &raw mut (*st).left.call_id;
        if ATOMIC {
            core::intrinsics::atomic_xchg::<u64, { core::intrinsics::AtomicOrdering::SeqCst }>(
                at, 0,
            )
        } else {
            let id = *at;
            *at = 0;
            id
        }
    };
    if id != 0 {
        // SAFETY: as above.
        unsafe {
            send_unfinished(
                &(*st).left,
                id,
                (*st).left_parent,
                (*st).left_depth,
                pid_tgid,
                (*st).left_end,
            );
        }
    }
}

/// Sends frame `f`, call `call_id` (its own, or taken from it), of the call `parent_id` at
/// `depth`, as a call without its return ([`CALL_UNFINISHED`]), ending at `ts_end`; false
/// when the ring buffer is full (counted).
#[inline(always)]
fn send_unfinished(
    f: &Frame,
    call_id: u64,
    parent_id: u64,
    depth: u32,
    pid_tgid: u64,
    ts_end: u64,
) -> bool {
    let Some(mut entry) = STRATA_EVENTS.reserve::<CallRecord>(0) else {
        count(Counter::RingbufFull);
        return false;
    };
    let rec = entry.as_mut_ptr();
    // SAFETY: reserved ring-buffer memory of the right size; every field is written.
    unsafe {
        (*rec).kind = RecordKind::Call as u32;
        (*rec).func_id = f.func_id;
        (*rec).call_id = call_id;
        (*rec).parent_id = parent_id;
        (*rec).ts_begin = f.ts_begin;
        (*rec).ts_end = ts_end;
        (*rec).pid = (pid_tgid >> 32) as u32;
        (*rec).tid = pid_tgid as u32;
        (*rec).depth = depth;
        (*rec).flags = CALL_UNFINISHED | (f.flags & CALL_EMPTY_STRS);
        // Volatile: as plain stores next to the others they became a memset, a byte loop.
        core::ptr::write_volatile(&raw mut (*rec).ret, 0);
        core::ptr::write_volatile(&raw mut (*rec).out, 0);
        store_words(&raw mut (*rec).args, &f.args);
    }
    entry.submit(u64::from(BPF_RB_FORCE_WAKEUP));
    true
}

/// The length of the NUL-terminated text at `ptr`, read piece by piece into this CPU's
/// string scratch, with [`TEXT_UNENDED`] set unless its last byte is a newline; None when
/// unreadable, or [`TEXT_MAX`] bytes or longer.
#[inline(always)]
fn text_len(ptr: u64) -> Option<u64> {
    let rec = STRATA_STR_SCRATCH.get_ptr_mut(0)?;
    let mut len = 0u64;
    let mut last = 0u8;
    for _ in 0..TEXT_PIECES {
        // SAFETY: per-CPU scratch, used only for the duration of this program; the helper
        // tolerates bad user pointers.
        let s = unsafe {
            bpf_probe_read_user_str_bytes(
                ptr.wrapping_add(len) as *const u8,
                &mut (&mut (*rec).data)[..STR_CAP],
            )
        };
        // A piece that filled the scratch may go on; a NUL right after it reads as empty.
        let s = s.ok()?;
        if let Some(b) = s.last() {
            last = *b;
        }
        len += s.len() as u64;
        if s.len() < STR_CAP - 1 {
            return Some(if last == b'\n' {
                len
            } else {
                len | TEXT_UNENDED
            });
        }
    }
    None
}

/// Copies `*src` to `dst` a word at a time, one store each. Left to the compiler, a copy
/// may become a call of the BPF `memmove`, `memcpy` or `memset` functions, byte loops: a
/// frame's six arguments took 48 rounds, some 25 ns at each syscall entry here, nearly half
/// of what strata's programs added to a call beyond the floor's. The object test
/// `no_program_per_call_runs_a_byte_loop` keeps them out.
///
/// # Safety
/// `dst` points to writable memory of a `T`, aligned to 8 bytes.
#[inline(always)]
pub(crate) unsafe fn store_words<T: Copy>(dst: *mut T, src: &T) {
    const {
        assert!(core::mem::size_of::<T>() % 8 == 0 && core::mem::align_of::<T>() == 8);
    }
    let (d, s) = (dst.cast::<u64>(), core::ptr::from_ref(src).cast::<u64>());
    for i in 0..core::mem::size_of::<T>() / 8 {
        // SAFETY: the caller's; `i` is a word inside both.
        unsafe { core::ptr::write_volatile(d.add(i), core::ptr::read_volatile(s.add(i))) };
    }
}

/// Zero words (arguments) in place, stored one by one (see [`store_words`]; a zeroed array
/// returned by value is copied into place with the byte loop, and one zeroed where it lies
/// is filled by it).
#[inline(always)]
pub(crate) fn zero_words<const N: usize>(
    args: &mut core::mem::MaybeUninit<[u64; N]>,
) -> &mut [u64; N] {
    let p = args.as_mut_ptr();
    for i in 0..N {
        // SAFETY: an element of the caller's array.
        unsafe { core::ptr::write_volatile(core::ptr::addr_of_mut!((*p)[i]), 0) };
    }
    // SAFETY: every element was written above.
    unsafe { args.assume_init_mut() }
}

/// The first `nargs` arguments from `arg`, the rest 0. Built element by element: an array
/// zeroed first and filled in a loop compiled to a memset call per probe hit (see
/// [`store_words`]).
#[inline(always)]
fn load_args(nargs: u8, arg: impl Fn(usize) -> u64) -> [u64; MAX_ARGS] {
    let n = nargs as usize;
    let a = |i: usize| if i < n { arg(i) } else { 0 };
    [a(0), a(1), a(2), a(3), a(4), a(5)]
}

/// `on_entry` captures: user-space strings (syscalls and library functions).
const CAPTURE_STRINGS: u8 = 1;
/// `on_entry` captures: what only library functions declare (handles behind pointers, MPI
/// datatype sizes, arrays, HDF5 type ids); user space refuses such arguments elsewhere.
const CAPTURE_LIBRARY: u8 = 2;
/// `on_entry` of a syscall: stale kernel frames are dropped first (see [`FRAME_KERNEL`]).
const AT_SYSCALL: u8 = 4;

/// Drops the frames on top of a thread's stack that a new call's entry proves stale: calls of
/// syscalls and kernel functions whose return was never seen (none is in progress when the
/// thread enters a syscall or a library function). Without this a thread that ran more than
/// `MAX_DEPTH` syscalls between the attachment of the entry and the exit programs would
/// overflow its stack, and lose every call, for the rest of the run.
///
/// At a library function's entry (`sp` its stack pointer, else 0), also the library calls a
/// longjmp left (an alarm's handler jumping out of a blocked fgets), the outermost of which is
/// kept to be sent as unfinished, ending now ([`ThreadStack::left`]): a call in progress has
/// every call it makes below it, so those that entered deeper returned unseen (the kernel
/// drops its own return probes of such calls by the same rule), and so did one that entered
/// at this very stack pointer unless this is a tail call from it (getline to getdelim), which
/// finds the return address the kernel replaced at its entry, its trampoline, still in place.
///
/// # Safety
/// `st` points to the current thread's stack.
#[inline(always)]
unsafe fn drop_stale_frames(cfg: &Config, st: *mut ThreadStack, sp: u64) {
    unsafe {
        // Deeper than kept: no traced library nests that deep, the count is stale.
        let mut depth = (*st).depth.min(MAX_DEPTH as u32);
        let old = depth;
        let left_here = sp != 0
            && depth > 0
            && (*st).frames[slot(depth as usize - 1)].sp == sp
            && !tail_call(cfg, sp);
        // Frames that entered above `limit` are kept: one comparison in the loop, not two.
        let limit = sp.wrapping_sub(u64::from(!left_here));
        for _ in 0..MAX_DEPTH {
            let Some(top) = depth.checked_sub(1) else {
                break;
            };
            let f = &(*st).frames[slot(top as usize)];
            if f.flags & FRAME_KERNEL == 0 {
                if sp == 0 || f.sp == 0 || f.sp > limit {
                    break;
                }
            }
            count(Counter::StackMismatch);
            depth = top;
        }
        // A library call left, kept to be sent later (see `ThreadStack::left`); of several
        // left by one jump, the outermost, whose parent has its row. Kernel frames lie above
        // library frames only, so it is the last one dropped.
        let f = &(*st).frames[slot(depth as usize)];
        if depth < old && f.flags & FRAME_KERNEL == 0 {
            (*st).left = *f;
            (*st).left_parent = match depth.checked_sub(1) {
                Some(p) => (*st).frames[slot(p as usize)].call_id,
                None => 0,
            };
            (*st).left_depth = depth;
            (*st).left_end = bpf_ktime_get_ns();
        }
        (*st).depth = depth;
    }
}

/// Whether the library function entering at user stack pointer `sp` was reached by a tail
/// call from the call in progress that entered there: its return address, which the kernel
/// replaced with its return trampoline (the first slot of the process's uprobes area), is
/// still there. Also true where that cannot be told (no offsets from BTF, an unreadable
/// address), which keeps the call's frame, as before a longjmp was looked for.
#[inline(always)]
fn tail_call(cfg: &Config, sp: u64) -> bool {
    // Every read made, each failure a 0: few paths for the verifier, in the library entry
    // programs near its budget on 6.1.
    // SAFETY: a helper without arguments.
    let task = unsafe { bpf_get_current_task() };
    let mm: u64 = kfunc::kread_at(task, cfg.task_mm_off).unwrap_or(0);
    let area: u64 = kfunc::kread_at(mm, cfg.mm_xol_area_off).unwrap_or(0);
    let trampoline: u64 = kfunc::kread_at(area, cfg.xol_vaddr_off).unwrap_or(0);
    // SAFETY: the helper tolerates bad user pointers.
    let ret = unsafe { bpf_probe_read_user(sp as *const u64) }.unwrap_or(0);
    cfg.mm_xol_area_off == 0 || trampoline == 0 || ret == trampoline
}

/// Whether the spec's `only_arg` holds one of the values its probe records (ioctl commands:
/// a terminal's or a GPU driver's thousands per second cost this one lookup).
#[inline(always)]
fn only_value(spec: &FuncSpec, args: &[u64; MAX_ARGS]) -> bool {
    let Some(v) = args.get(spec.only_arg as usize) else {
        return false;
    };
    let key = OnlyKey {
        func_id: spec.func_id,
        value: *v as u32,
    };
    // SAFETY: a plain lookup; the value is not read.
    unsafe { STRATA_ONLY_VALUES.get(key) }.is_some()
}

/// The fd of C stream `stream` (`u64::MAX` where unreadable, or where the stream has none:
/// `Config::stdio_fd_flag` clear in its first int), read at `Config::stdio_fileno_off` inside
/// it. The thread keeps the last stream's: a read costs ~100 ns here, and a loop of stdio
/// calls names one stream over and over. `ends`: the call closes or reopens the stream, whose
/// address may then be another stream's.
#[inline(always)]
fn stream_fd(cfg: &Config, st: &mut ThreadStack, stream: u64, ends: bool) -> u64 {
    let fd = if stream != 0 && st.last_stream == stream {
        st.last_stream_fd
    } else {
        let at = stream.wrapping_add(u64::from(cfg.stdio_fileno_off));
        // SAFETY: the helper tolerates null and bad user pointers.
        let has_fd = cfg.stdio_fd_flag == 0
            || unsafe { bpf_probe_read_user(stream as *const u32) }
                .is_ok_and(|flags| flags & cfg.stdio_fd_flag != 0);
        let fd = if has_fd {
            // SAFETY: as above.
            unsafe { bpf_probe_read_user(at as *const i32) }.map_or(u64::MAX, |fd| fd as u64)
        } else {
            u64::MAX
        };
        st.last_stream = stream;
        st.last_stream_fd = fd;
        fd
    };
    if ends {
        st.last_stream = 0;
    }
    fd
}

/// The bytes C stream `stream` holds buffered to read, the distance from its read position
/// to the end of its read buffer (None where unreadable). A stream that is writing holds
/// none (glibc keeps the two pointers equal then).
#[inline(always)]
fn stream_buffered(cfg: &Config, stream: u64) -> Option<u64> {
    let at = stream.wrapping_add(u64::from(cfg.stdio_read_off));
    // SAFETY: the helper tolerates null and bad user pointers.
    let [pos, end] = unsafe { bpf_probe_read_user(at as *const [u64; 2]) }.ok()?;
    end.checked_sub(pos)
}

/// The stream a call on the program's `stdout` or `stdin` works on: the variable's value now
/// (a program may assign it), found from the probed address through the cookie (0: none).
/// The library's GOT slot for the variable does not change in a process: the thread keeps
/// what its last one held, as each read costs ~90 ns here.
#[inline(always)]
unsafe fn implicit_stream(st: *mut ThreadStack, site: Site) -> u64 {
    if site.stream_var == 0 {
        return 0;
    }
    let mut at = site
        .ip
        .wrapping_add(stream_var_delta(site.stream_var) as u64);
    if site.stream_var & COOKIE_STREAM_INDIRECT != 0 {
        let slot = at;
        // SAFETY (all): this thread's stack; the helper tolerates bad user pointers.
        unsafe {
            if (*st).stream_slot == slot {
                at = (*st).stream_var;
            } else {
                at = bpf_probe_read_user(slot as *const u64).unwrap_or(0);
                (*st).stream_slot = slot;
                (*st).stream_var = at;
            }
        }
    }
    // SAFETY: as above.
    unsafe { bpf_probe_read_user(at as *const u64) }.unwrap_or(0)
}

/// Entry half shared by syscalls, uprobes and kernel functions: filter, push a frame, copy
/// what the spec asks for among `CAPTURE`. Each program is built with only the captures its
/// probes can use: older kernels' verifiers walk every loop of every capture on every path,
/// and the budget of a million instructions was nearly spent on 6.1. True when the call
/// left a frame (or was counted past the depth limit): only then has its return work to do.
#[inline(always)]
fn on_entry<const CAPTURE: u8>(
    spec: &FuncSpec,
    args: &mut [u64; MAX_ARGS],
    site: Site,
) -> Res<bool> {
    let cfg = config()?;
    if cfg.stopped != 0 {
        return Ok(false);
    }
    // The spec's own filters first: they cost one lookup at most, less than the thread's,
    // and a terminal's or a driver's unnamed ioctls are thousands a second in any process.
    if spec.only_arg != NO_ARG && !only_value(spec, args) {
        return Ok(false);
    }
    if spec.files_arg != NO_ARG
        && args
            .get(spec.files_arg as usize)
            .is_none_or(|fd| (*fd as i32) < 0)
    {
        return Ok(false);
    }
    let me = thread::me();
    let pid_tgid = me.pid_tgid;
    // A thread gets its stack on its first traced call. Where the filter cannot change its
    // verdict on a running thread (targets by pid, or all), having one means being traced:
    // no filter lookup. A cgroup or a uid can change under a running thread.
    let fixed = cfg.cgroup_mode == 0 && cfg.user_filter == 0;
    let tgid = (pid_tgid >> 32) as u32;
    let st = if CAPTURE & AT_SYSCALL != 0 {
        // One storage lookup where there are two below: a helper call fewer per syscall.
        let Some(st) = me.entry_stack(fixed, || traced_at_syscall(cfg, &me))? else {
            return Ok(false);
        };
        Some(st)
    } else {
        // Two lookups: the stack found by one is not kept for the other, so that one
        // pointer from one call site keeps the verifier's paths few enough for 6.1 on the
        // library and kernel-function entries, which are near its budget (one lookup here
        // took 6.1 over a quarter of it).
        if !(fixed && me.stack().is_some()) && !traced(cfg, tgid) {
            return Ok(false);
        }
        None
    };
    if CAPTURE & CAPTURE_LIBRARY != 0 && spec.deref_mask != 0 {
        for (i, a) in args.iter_mut().enumerate() {
            if spec.deref_mask & (1 << i) != 0 {
                // SAFETY: the helper tolerates null and bad user pointers.
                *a = unsafe { bpf_probe_read_user(*a as *const u64) }.unwrap_or(DEREF_FAILED);
            }
        }
    }
    if CAPTURE & CAPTURE_LIBRARY != 0 && spec.datatype_arg != NO_ARG {
        if let Some(a) = args.get_mut(spec.datatype_arg as usize) {
            let at = a.wrapping_add(u64::from(cfg.datatype_size_off));
            // SAFETY: the helper tolerates bad user pointers (the size stays 0: unknown).
            *a = unsafe { bpf_probe_read_user(at as *const u64) }.unwrap_or(0);
        }
    }
    let st = match st {
        Some(st) => st,
        None => me.stack_or_new()?,
    };
    let mut no_return = false;
    if cfg.cgroup_mode != 0 {
        announce_job(cfg, st, pid_tgid);
    }
    if CAPTURE & CAPTURE_LIBRARY != 0 && spec.stream_arg != NO_ARG {
        let stream = if spec.flags & SPEC_IMPLICIT_STREAM != 0 {
            // SAFETY: this thread's stack.
            unsafe { implicit_stream(st, site) }
        } else {
            args.get(spec.stream_arg as usize).copied().unwrap_or(0)
        };
        // Stored back either way: both paths leave the stack alike for the verifier, which
        // then walks what follows once, not twice.
        if let Some(a) = args.get_mut(spec.stream_arg as usize) {
            *a = stream;
        }
        // SAFETY: this thread's stack.
        let fd = unsafe { stream_fd(cfg, &mut *st, stream, spec.flags & SPEC_STREAM_END != 0) };
        if let Some(slot) = args.get_mut(spec.nargs as usize) {
            *slot = fd;
        }
        // A stream without an fd (none read, or a negative one: fopencookie's and fmemopen's
        // -2) may run the program's own functions, which may throw a C++ exception through
        // this call: unwinding cannot pass the kernel's return trampoline, and the program
        // would be aborted. Where the entry may decline the return, the call is recorded
        // here, without one.
        no_return = site.session && (fd as i64) < 0;
        if spec.out_size == OUT_BUFFERED {
            if let Some(slot) = args.get_mut(spec.nargs as usize + 1) {
                *slot = stream_buffered(cfg, stream).unwrap_or(u64::MAX);
            }
        }
    }
    let args = &*args;
    if CAPTURE & (AT_SYSCALL | CAPTURE_LIBRARY) != 0 {
        // SAFETY: this thread's stack.
        unsafe { drop_stale_frames(cfg, st, site.sp) };
    }
    let call_id = next_call_id();
    let ts = unsafe { bpf_ktime_get_ns() };
    // SAFETY: `st` points into the stack map's value for this thread; only this thread
    // touches it (programs run with preemption disabled for the duration).
    let depth = unsafe { (*st).depth };
    let at_entry = spec.flags & SPEC_EMIT_AT_ENTRY != 0 || site.at_call || no_return;
    let str_retry = if CAPTURE & CAPTURE_STRINGS != 0 {
        emit_strings(
            spec.str_mask,
            call_id,
            args,
            !at_entry,
            CAPTURE & AT_SYSCALL != 0,
        )
    } else {
        0
    };
    if CAPTURE & CAPTURE_LIBRARY != 0 && spec.blob_mask != 0 {
        emit_blobs(spec.blob_mask, call_id, args);
    }
    if CAPTURE & CAPTURE_LIBRARY != 0 && spec.array_arg != NO_ARG {
        let ptr = arg_at(args, spec.array_arg);
        let bytes = array_bytes(spec, args, spec.array_elem_shift);
        emit_array(spec.array_arg, call_id, ptr, bytes);
    }
    if CAPTURE & CAPTURE_LIBRARY != 0 && site.table != 0 {
        send_type_ids(site, (pid_tgid >> 32) as u32);
    }
    if at_entry {
        // Only here: a call kept in a frame finds its parent at return.
        let parent_id = match depth.checked_sub(1) {
            // SAFETY: as above.
            Some(p) if (p as usize) < MAX_DEPTH => unsafe {
                (*st).frames[slot(p as usize)].call_id
            },
            _ => 0,
        };
        emit_call::<false>(
            pid_tgid,
            spec.flags & SPEC_WAKE != 0,
            spec,
            call_id,
            parent_id,
            ts,
            args,
            depth,
            site.loaded,
            (str_retry & CALL_EMPTY_STRS) | if no_return { CALL_NO_RETURN } else { 0 },
        );
        return Ok(false);
    }
    let i = depth as usize;
    unsafe {
        if i >= MAX_DEPTH {
            count(Counter::StackOverflow);
            // Keep counting depth so the matching returns stay balanced.
            (*st).depth = depth.saturating_add(1);
            return Ok(true);
        }
        let f = &mut (*st).frames[slot(i)];
        f.call_id = call_id;
        f.ts_begin = ts;
        store_words(&raw mut f.args, args);
        f.func_id = spec.func_id;
        f.sp = site.sp;
        f.flags = str_retry
            | if CAPTURE & CAPTURE_LIBRARY == 0 {
                FRAME_KERNEL
            } else {
                0
            };
        (*st).depth = depth + 1;
    }
    Ok(true)
}

/// Return half: pop this function's frame and emit the call.
#[inline(always)]
fn on_return(spec: &FuncSpec, ret: i64, wake: bool) -> Res<()> {
    // The frame stays for the task iterator, which sends the call as unfinished at the stop.
    if config()?.stopped == STOP_FROZEN {
        return Ok(());
    }
    let me = thread::me();
    let pid_tgid = me.pid_tgid;
    let Some(st) = me.stack() else {
        return Ok(());
    };
    // SAFETY: as in `on_entry`.
    unsafe {
        // Not in the library programs, which the verifier walks near its budget on 6.1.
        if !wake && (*st).left.call_id != 0 {
            send_jumped_over::<false>(st, pid_tgid);
        }
        // Before the call's own record, as the events happened.
        kernel::flush_runs(st);
        let depth = (*st).depth;
        if depth == 0 {
            return Ok(());
        }
        if depth as usize > MAX_DEPTH {
            (*st).depth = depth - 1;
            return Ok(());
        }
        // Find this function's frame from the top; frames above it lost their return.
        let mut found = None;
        for k in 1..=MAX_DEPTH {
            if k > depth as usize {
                break;
            }
            let top = depth as usize - k;
            if (*st).frames[slot(top)].func_id == spec.func_id {
                found = Some(top);
                break;
            }
        }
        let Some(i) = found else {
            return Ok(());
        };
        if i + 1 != depth as usize {
            count(Counter::StackMismatch);
        }
        (*st).depth = i as u32;
        let f = &mut (*st).frames[slot(i)];
        // Offsets the call advanced (copy_file_range): read now, in the frame. At entry, in
        // syscall programs, the extra loop cost 6.1's verifier its whole budget.
        if spec.ret_deref_mask != 0 {
            for (k, a) in f.args.iter_mut().enumerate() {
                if spec.ret_deref_mask & (1 << k) != 0 {
                    // SAFETY: the helper tolerates null and bad user pointers.
                    *a = bpf_probe_read_user(*a as *const u64).unwrap_or(DEREF_FAILED);
                }
            }
        }
        // The descriptor a message passed (sendmsg, recvmsg): syscalls only, the library
        // programs carry no such code.
        let rights = !wake && spec.rights_arg != NO_ARG && ret >= 0;
        if rights {
            let msg = arg_at(&f.args, spec.rights_arg);
            set_arg(&mut f.args, spec.rights_arg, passed_fd(msg));
        }
        // The file of a descriptor the call made, while the descriptor is surely its.
        if spec.fd_file_arg != NO_ARG && ret >= 0 {
            let fd = match spec.fd_file_arg {
                FD_FROM_RET => ret,
                k => i64::from(arg_at(&f.args, k) as i32),
            };
            if let Ok(cfg) = config() {
                let (ino, dev_mode, file) = kfunc::fd_identity(cfg, &me, fd);
                set_arg(&mut f.args, spec.nargs, ino);
                set_arg(&mut f.args, spec.nargs.wrapping_add(1), dev_mode);
                // The last slot, a constant offset: a slot counted from `nargs` here took
                // 6.1's verifier off the frame's bounds.
                if rights {
                    f.args[MAX_ARGS - 1] = file;
                }
            }
        }
        let f = &*f;
        let parent_id = match i.checked_sub(1) {
            Some(p) => (*st).frames[slot(p)].call_id,
            None => 0,
        };
        // Straight from the frame into the record, no copy on the 512-byte stack between.
        let args = &f.args;
        // Strings retried here are sent even when empty (this program also returns library
        // calls).
        if f.flags & FRAME_STR_RETRY != 0 {
            let retry = (f.flags & FRAME_STR_RETRY) as u8;
            emit_strings(retry, f.call_id, args, false, false);
        }
        let flags = f.flags & CALL_EMPTY_STRS;
        // Library calls only (`wake`): the syscall programs carry no such code.
        if wake && spec.ret_blob_arg != NO_ARG {
            let ptr = arg_at(args, spec.ret_blob_arg);
            // C ints.
            emit_array(
                spec.ret_blob_arg,
                f.call_id,
                ptr,
                array_bytes(spec, args, 2),
            );
        }
        // Quiet: the records of syscalls and kernel functions (library returns always wake).
        emit_call::<true>(
            pid_tgid, wake, spec, f.call_id, parent_id, f.ts_begin, args, i as u32, ret, flags,
        );
    }
    Ok(())
}

// ---- syscall tracepoints (syscalls/sys_enter_* and sys_exit_*) ----

const SYSCALL_NR_OFF: usize = 8;
const SYSCALL_ARGS_OFF: usize = 16;

/// A direct load from the tracepoint record: tracepoint programs may read their context
/// without a helper call, which costs noticeably more per field.
///
/// # Safety
/// `off` must be a constant offset of a field of type `T` inside the record.
#[inline(always)]
unsafe fn ctx_load<T: Copy>(ctx: &TracePointContext, off: usize) -> T {
    unsafe { core::ptr::read(ctx.as_ptr().cast::<u8>().add(off).cast::<T>()) }
}

#[inline(always)]
fn syscall_spec(ctx: &TracePointContext) -> Res<&'static FuncSpec> {
    // SAFETY: syscall tracepoint records carry `int __syscall_nr` at offset 8.
    let nr: i32 = unsafe { ctx_load(ctx, SYSCALL_NR_OFF) };
    spec_of_syscall(nr as u32)
}

#[inline(always)]
fn spec_of_syscall(nr: u32) -> Res<&'static FuncSpec> {
    let spec = STRATA_SYSCALL_SPECS.get(nr).ok_or(-1)?;
    if spec.flags & SPEC_ENABLED == 0 {
        return Err(-1);
    }
    Ok(spec)
}

#[tracepoint]
pub fn strata_sys_enter(ctx: TracePointContext) -> u32 {
    match try_sys_enter(&ctx) {
        Ok(()) | Err(_) => 0,
    }
}

fn try_sys_enter(ctx: &TracePointContext) -> Res<()> {
    let spec = syscall_spec(ctx)?;
    // SAFETY: arguments are 8-byte fields after the nr; `nargs` comes from the format.
    let mut args = load_args(spec.nargs, |i| unsafe {
        ctx_load::<u64>(ctx, SYSCALL_ARGS_OFF + 8 * i)
    });
    on_entry::<{ CAPTURE_STRINGS | AT_SYSCALL }>(spec, &mut args, NO_SITE).map(drop)
}

/// The entry program of `--syscall-mode per-syscall`. A syscall's own event record ends
/// after its last argument, and the kernel refuses to attach a program whose direct context
/// loads could reach past the record (EACCES), as `strata_sys_enter`'s six could: this one
/// copies exactly the declared arguments with one helper call (probes.toml declares at most
/// as many as the event's format has; user space checks).
#[tracepoint]
pub fn strata_sys_enter_one(ctx: TracePointContext) -> u32 {
    match try_sys_enter_one(&ctx) {
        Ok(()) | Err(_) => 0,
    }
}

fn try_sys_enter_one(ctx: &TracePointContext) -> Res<()> {
    let spec = syscall_spec(ctx)?;
    let mut args = core::mem::MaybeUninit::uninit();
    let args = zero_words(&mut args);
    let n = bounded(spec.nargs as usize, MAX_ARGS);
    // SAFETY: a byte view of a local array; the helper checks the kernel address.
    unsafe {
        let dst = core::slice::from_raw_parts_mut(args.as_mut_ptr().cast::<u8>(), n * 8);
        let src = ctx.as_ptr().cast::<u8>().add(SYSCALL_ARGS_OFF);
        bpf_probe_read_kernel_buf(src, dst).map_err(|e| e as i64)?;
    }
    on_entry::<{ CAPTURE_STRINGS | AT_SYSCALL }>(spec, args, NO_SITE).map(drop)
}

#[tracepoint]
pub fn strata_sys_exit(ctx: TracePointContext) -> u32 {
    match try_sys_exit(&ctx) {
        Ok(()) | Err(_) => 0,
    }
}

fn try_sys_exit(ctx: &TracePointContext) -> Res<()> {
    let spec = syscall_spec(ctx)?;
    // SAFETY: sys_exit_* records carry `long ret` right after the nr.
    let ret: i64 = unsafe { ctx_load(ctx, SYSCALL_ARGS_OFF) };
    on_return(spec, ret, false)
}

// ---- the same on BTF raw tracepoints sys_enter/sys_exit (the default where the kernel has
// BTF): the kernel passes the saved user registers instead of building a trace record
// first, which makes a hit about a third cheaper ----

/// The saved user registers of the syscall (the tracepoints' first argument).
#[inline(always)]
fn syscall_regs(ctx: &BtfTracePointContext) -> *const pt_regs {
    ctx.arg(0)
}

/// Syscall argument `i` (x86-64 syscall convention: rdi, rsi, rdx, r10, r8, r9). A direct
/// load: the verifier knows the pointer's BTF type and checks each field's offset.
#[inline(always)]
fn syscall_arg(regs: *const pt_regs, i: usize) -> u64 {
    // SAFETY: `regs` is the tracepoint's `struct pt_regs *` argument.
    unsafe {
        match i {
            0 => (*regs).rdi,
            1 => (*regs).rsi,
            2 => (*regs).rdx,
            3 => (*regs).r10,
            4 => (*regs).r8,
            _ => (*regs).r9,
        }
    }
}

#[btf_tracepoint(function = "sys_enter")]
pub fn strata_btf_sys_enter(ctx: BtfTracePointContext) -> i32 {
    match try_btf_sys_enter(&ctx) {
        Ok(()) | Err(_) => 0,
    }
}

fn try_btf_sys_enter(ctx: &BtfTracePointContext) -> Res<()> {
    // TP_PROTO(struct pt_regs *regs, long id)
    let spec = STRATA_SYSCALL_SPECS
        .get(ctx.arg::<u64>(1) as u32)
        .ok_or(-1)?;
    let regs = syscall_regs(ctx);
    // The `aio` layer's work at this syscall, whether or not it is probed.
    if spec.flags & (SPEC_AIO_SUBMIT | SPEC_AIO_WAIT) != 0 {
        let _ = aio::syscall_entered(spec.flags, |i| syscall_arg(regs, i));
    }
    if spec.flags & SPEC_ENABLED == 0 {
        return Err(-1);
    }
    let mut args = load_args(spec.nargs, |i| syscall_arg(regs, i));
    on_entry::<{ CAPTURE_STRINGS | AT_SYSCALL }>(spec, &mut args, NO_SITE).map(drop)
}

#[btf_tracepoint(function = "sys_exit")]
pub fn strata_btf_sys_exit(ctx: BtfTracePointContext) -> i32 {
    match try_btf_sys_exit(&ctx) {
        Ok(()) | Err(_) => 0,
    }
}

fn try_btf_sys_exit(ctx: &BtfTracePointContext) -> Res<()> {
    // TP_PROTO(struct pt_regs *regs, long ret); the number is in orig_rax, as the kernel's
    // own syscall_get_nr reads it.
    let regs = syscall_regs(ctx);
    // SAFETY: as in `syscall_arg`.
    let spec = STRATA_SYSCALL_SPECS
        .get(unsafe { (*regs).orig_rax } as u32)
        .ok_or(-1)?;
    let ret = ctx.arg::<i64>(1);
    if spec.flags & SPEC_AIO_REAP != 0 {
        let _ = aio::syscall_returned(ret);
    }
    if spec.flags & SPEC_ENABLED == 0 {
        return Err(-1);
    }
    on_return(spec, ret, false)
}

// ---- uprobes: the attach cookie is the function id ----

#[inline(always)]
fn func_spec(ctx: &impl aya_ebpf::EbpfContext) -> Res<&'static FuncSpec> {
    // SAFETY: the helper only reads the cookie of the current attachment.
    let cookie = unsafe { bpf_get_attach_cookie(ctx.as_ptr()) };
    spec_of_func(cookie as u32)
}

#[inline(always)]
fn spec_of_func(id: u32) -> Res<&'static FuncSpec> {
    let spec = STRATA_FUNC_SPECS.get(id).ok_or(-1)?;
    if spec.flags & SPEC_ENABLED == 0 {
        return Err(-1);
    }
    Ok(spec)
}

#[uprobe]
pub fn strata_uprobe_entry(ctx: ProbeContext) -> u32 {
    match try_uprobe_entry::<false>(&ctx) {
        Ok(_) | Err(_) => 0,
    }
}

/// The entry half of a library call; true when its return has work to do. `SESSION`: on a
/// session link, where the entry decides whether the kernel prepares the return.
fn try_uprobe_entry<const SESSION: bool>(ctx: &ProbeContext) -> Res<bool> {
    // SAFETY: the helper only reads the cookie of the current attachment.
    let cookie = unsafe { bpf_get_attach_cookie(ctx.as_ptr()) };
    let spec = spec_of_func(cookie as u32)?;
    let mut args = load_args(spec.nargs, |i| ctx.arg(i).unwrap_or(0));
    let mut site = Site {
        // The kernel points the saved ip at the probed instruction while handlers run.
        // SAFETY: the program's context is the user registers.
        ip: unsafe { (*ctx.regs).rip },
        // SAFETY: as above.
        sp: unsafe { (*ctx.regs).rsp },
        stream_var: 0,
        table: (cookie >> COOKIE_TABLE_SHIFT) as u32,
        at_call: false,
        session: SESSION,
        loaded: 0,
    };
    // The cookie's upper half is a type table, a load at a call, or a stream variable.
    if cookie & (COOKIE_LOAD_AT_CALL | COOKIE_STREAM_VAR) == COOKIE_STREAM_VAR {
        site.stream_var = cookie;
        site.table = 0;
        // The loader reports twice per change of its libraries, as it begins and once it is
        // done: only the second finds new mappings, and each costs a wakeup and a look.
        if spec.flags & SPEC_IF_ZERO != 0 {
            let at = site.ip.wrapping_add(stream_var_delta(cookie) as u64);
            // SAFETY: the helper tolerates bad user pointers.
            if unsafe { bpf_probe_read_user(at as *const i32) }.is_ok_and(|v| v != 0) {
                return Ok(false);
            }
        }
    }
    if cookie & COOKIE_LOAD_AT_CALL != 0 {
        // On the call: the callee would load its result from its first argument plus the
        // offset; the same load here, on the same thread, reads the same value.
        let base: u64 = ctx.arg(0).unwrap_or(0);
        let at = base.wrapping_add((cookie & !COOKIE_LOAD_AT_CALL) >> COOKIE_TABLE_SHIFT);
        // SAFETY: the helper tolerates bad user pointers (-1: not a count).
        site.loaded = unsafe { bpf_probe_read_user(at as *const i64) }.unwrap_or(-1);
        site.at_call = true;
        site.table = 0;
    }
    on_entry::<{ CAPTURE_STRINGS | CAPTURE_LIBRARY }>(spec, &mut args, site)
}

#[uretprobe]
pub fn strata_uprobe_return(ctx: RetProbeContext) -> u32 {
    match try_uprobe_return(&ctx) {
        Ok(()) | Err(_) => 0,
    }
}

fn try_uprobe_return(ctx: &RetProbeContext) -> Res<()> {
    let spec = func_spec(ctx)?;
    on_return(spec, ctx.ret(), true)
}

/// Whether a session program runs at the return: the kernel has then put the return address
/// in the saved ip, which at the entry is the probed address, the function's.
#[inline(always)]
fn session_return(ctx: &ProbeContext) -> bool {
    // SAFETY: the helper reads the probed address of the current multi-uprobe link; the
    // context is the user registers.
    unsafe { (*ctx.regs).rip != bpf_get_func_ip(ctx.as_ptr()) }
}

/// Entry and return of a library call in one program, on a session link (Linux 6.13+): the
/// kernel prepares the return only when the entry returns 0. A call strata does not keep (a
/// process it does not trace, above all) then costs one trap, not two, and its process no
/// return trampoline. It serves the probes without a return as well (at calls, the loader's
/// report): their calls are recorded at the entry, which then asks for none. Not
/// `#[uprobe]`: its wrapper returns 0 whatever the program returns.
#[unsafe(no_mangle)]
#[unsafe(link_section = "uprobe")]
pub fn strata_uprobe_session(ctx: *mut core::ffi::c_void) -> u32 {
    let ctx = ProbeContext::new(ctx);
    if session_return(&ctx) {
        // SAFETY: as above.
        let ret = unsafe { (*ctx.regs).rax } as i64;
        let _ = func_spec(&ctx).and_then(|spec| on_return(spec, ret, true));
        return 0;
    }
    match try_uprobe_entry::<true>(&ctx) {
        Ok(true) => 0,
        Ok(false) | Err(_) => 1,
    }
}

// ---- empty programs: the baseline of `cargo xtask bench` (the machine's cost of a probe hit,
// without strata's work) ----

#[tracepoint]
pub fn strata_empty_tracepoint(_ctx: TracePointContext) -> u32 {
    0
}

#[btf_tracepoint(function = "sys_enter")]
pub fn strata_empty_btf_sys_enter(_ctx: BtfTracePointContext) -> i32 {
    0
}

#[btf_tracepoint(function = "sys_exit")]
pub fn strata_empty_btf_sys_exit(_ctx: BtfTracePointContext) -> i32 {
    0
}

#[uprobe]
pub fn strata_empty_uprobe(_ctx: ProbeContext) -> u32 {
    0
}

#[uretprobe]
pub fn strata_empty_uretprobe(_ctx: RetProbeContext) -> u32 {
    0
}

/// On a session link: 0 at the entry runs it at the return too.
#[unsafe(no_mangle)]
#[unsafe(link_section = "uprobe")]
pub fn strata_empty_uprobe_session(_ctx: *mut core::ffi::c_void) -> u32 {
    0
}

// ---- the floor: what any tracer must do to keep each call of every process but its own as
// one record (the arguments and a clock read at entry, into the thread's frame; a clock read
// and a record of strata's size at return), on syscalls or on a uprobe pair. The benchmark
// puts strata's programs beside it, to separate what recording costs on this machine from
// what strata adds. Loaded with `STRATA_FLOOR_RING` 0, the same programs build the record in
// per-CPU memory instead of the ring buffer (the stamp), which splits the floor into time
// stamps and transport ----

/// Set by user space at load time (read-only data: the verifier drops the branch not taken).
#[unsafe(no_mangle)]
static STRATA_FLOOR_RING: u8 = 1;

/// Where the stamp builds its records.
#[map]
static STRATA_STAMP_SCRATCH: PerCpuArray<CallRecord> = PerCpuArray::with_max_entries(1, 0);

#[inline(always)]
fn floor_entry(args: [u64; MAX_ARGS]) -> Res<()> {
    let me = thread::me();
    if me.tgid() == config()?.self_tgid {
        return Ok(());
    }
    let st = me.stack_or_new()?;
    // SAFETY: the current thread's own stack, as in `on_entry`.
    unsafe {
        let f = &mut (*st).frames[0];
        f.ts_begin = bpf_ktime_get_ns();
        store_words(&raw mut f.args, &args);
        (*st).depth = 1;
    }
    Ok(())
}

#[inline(always)]
fn floor_return(func_id: u32, ret: i64) -> Res<()> {
    let me = thread::me();
    let pid_tgid = me.pid_tgid;
    let st = me.stack().ok_or(0)?;
    // SAFETY: as in `floor_entry`.
    unsafe {
        if (*st).depth == 0 {
            return Ok(());
        }
        (*st).depth = 0;
    }
    // SAFETY: a read of a plain global (volatile: its value is set at load time).
    if unsafe { core::ptr::read_volatile(&STRATA_FLOOR_RING) } == 0 {
        let rec = STRATA_STAMP_SCRATCH.get_ptr_mut(0).ok_or(0)?;
        // SAFETY: per-CPU scratch of the record's type; `st` as in `floor_entry`.
        unsafe { floor_record(rec, &(*st).frames[0], pid_tgid, func_id, ret) };
        count(Counter::Stamped);
        return Ok(());
    }
    let Some(mut entry) = STRATA_EVENTS.reserve::<CallRecord>(0) else {
        count(Counter::RingbufFull);
        return Ok(());
    };
    // SAFETY: reserved ring-buffer memory of the right size; `st` as in `floor_entry`.
    unsafe { floor_record(entry.as_mut_ptr(), &(*st).frames[0], pid_tgid, func_id, ret) };
    entry.submit(wakeup(core::mem::size_of::<CallRecord>(), true));
    Ok(())
}

/// Writes every field of the floor's record of the call in frame `f`, each with a store of
/// its own as strata's programs do: left to the compiler, the zeroed ids and the copied
/// arguments become calls of the BPF `memset` and `memmove` functions (see [`store_words`]).
///
/// # Safety
/// `rec` points to writable memory of a `CallRecord`.
#[inline(always)]
unsafe fn floor_record(rec: *mut CallRecord, f: &Frame, pid_tgid: u64, func_id: u32, ret: i64) {
    use core::ptr::{addr_of_mut, write_volatile};
    unsafe {
        (*rec).kind = RecordKind::Call as u32;
        (*rec).func_id = func_id;
        write_volatile(addr_of_mut!((*rec).call_id), 0);
        write_volatile(addr_of_mut!((*rec).parent_id), 0);
        (*rec).ts_begin = f.ts_begin;
        (*rec).ts_end = bpf_ktime_get_ns();
        (*rec).pid = (pid_tgid >> 32) as u32;
        (*rec).tid = pid_tgid as u32;
        (*rec).depth = 0;
        (*rec).flags = 0;
        (*rec).ret = ret;
        (*rec).out = 0;
        store_words(addr_of_mut!((*rec).args), &f.args);
    }
}

#[btf_tracepoint(function = "sys_enter")]
pub fn strata_floor_sys_enter(ctx: BtfTracePointContext) -> i32 {
    let regs = syscall_regs(&ctx);
    match floor_entry(load_args(MAX_ARGS as u8, |i| syscall_arg(regs, i))) {
        Ok(()) | Err(_) => 0,
    }
}

#[btf_tracepoint(function = "sys_exit")]
pub fn strata_floor_sys_exit(ctx: BtfTracePointContext) -> i32 {
    // SAFETY: as in `syscall_arg`.
    let nr = unsafe { (*syscall_regs(&ctx)).orig_rax } as u32;
    match floor_return(nr, ctx.arg::<i64>(1)) {
        Ok(()) | Err(_) => 0,
    }
}

#[uprobe]
pub fn strata_floor_uprobe(ctx: ProbeContext) -> u32 {
    match floor_entry(load_args(MAX_ARGS as u8, |i| ctx.arg(i).unwrap_or(0))) {
        Ok(()) | Err(_) => 0,
    }
}

#[uretprobe]
pub fn strata_floor_uretprobe(ctx: RetProbeContext) -> u32 {
    match floor_return(0, ctx.ret()) {
        Ok(()) | Err(_) => 0,
    }
}

/// The floor on a session link: it keeps every call, so every entry asks for the return.
#[unsafe(no_mangle)]
#[unsafe(link_section = "uprobe")]
pub fn strata_floor_uprobe_session(ctx: *mut core::ffi::c_void) -> u32 {
    let ctx = ProbeContext::new(ctx);
    if session_return(&ctx) {
        // SAFETY: the context is the user registers.
        let _ = floor_return(0, unsafe { (*ctx.regs).rax } as i64);
    } else {
        let _ = floor_entry(load_args(MAX_ARGS as u8, |i| ctx.arg(i).unwrap_or(0)));
    }
    0
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 4] = *b"GPL\0";
