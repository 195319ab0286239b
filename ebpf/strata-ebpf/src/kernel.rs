//! Kernel layers below the syscall: block requests, page cache and writeback, from
//! tracepoints whose field offsets user space reads from the running kernel's format files.
//!
//! What is kept: events in the context of a traced process (linked to the call on top of its
//! stack), and events of writeback workers and reclaim on inodes user space watches (the
//! files traced processes opened). Block requests are emitted from issue to completion when
//! a kept bio may be in them: user space matches bios to requests by device and sector range.
use aya_ebpf::{
    EbpfContext as _,
    helpers::{bpf_get_current_pid_tgid, bpf_ktime_get_ns, generated},
    macros::{btf_tracepoint, map, tracepoint},
    maps::{Array, HashMap, LruHashMap, PerCpuArray},
    programs::{BtfTracePointContext, TracePointContext},
};
use strata_common::{
    BioKey, BlockOffsets, Config, Counter, FIELD_NONE, FRAME_KERNEL, KERNEL_EVENTS, KERNEL_WINDOW,
    KernelEvent, KernelFields, KernelRecord, PAGE_RUN_EVENTS, PageOffsets, RWBS_FLAGS, RecordKind,
    ThreadStack,
};

use crate::{
    Res, STRATA_EVENTS, at, bounded, config, count, kfunc::kread_at as kread, masked, store_words,
    thread, traced, wakeup,
};

#[map]
pub(crate) static STRATA_KERNEL_FIELDS: Array<KernelFields> =
    Array::with_max_entries(KERNEL_EVENTS as u32, 0);

/// Inode numbers of files traced processes opened (filled by user space) or dirtied or read.
/// LRU: a node daemon or an `--all` run meets more files over days than any table holds, and
/// the files used longest ago are the ones to forget.
#[map]
static STRATA_WATCHED_INODES: LruHashMap<u64, u8> = LruHashMap::with_max_entries(65536, 0);

/// Writeback worker tid -> the watched inode it is writing.
#[map]
static STRATA_WRITEBACK_THREADS: HashMap<u32, u64> = HashMap::with_max_entries(4096, 0);

/// Bios kept at submission, so that their split-off parts and remappings are kept too. LRU:
/// entries are never removed one by one.
#[map]
static STRATA_PENDING_BIOS: LruHashMap<BioKey, u8> = LruHashMap::with_max_entries(65536, 0);

/// Devices with kept bios -> when the last was submitted. Requests of these devices are
/// emitted for a while: a kept bio may be merged into a request another bio started, so user
/// space matches bios to requests by sector range.
#[map]
static STRATA_BUSY_DEVS: HashMap<u32, u64> = HashMap::with_max_entries(1024, 0);

/// How long after a kept bio its device's requests are emitted.
const BUSY_NS: u64 = 30_000_000_000;

macro_rules! kernel_tracepoint {
    ($name:ident, $event:expr) => {
        #[tracepoint]
        pub fn $name(ctx: TracePointContext) -> u32 {
            match try_kernel_event(&ctx, $event) {
                Ok(()) | Err(_) => 0,
            }
        }
    };
}

kernel_tracepoint!(strata_k_bio_queue, KernelEvent::BioQueue);
kernel_tracepoint!(strata_k_bio_remap, KernelEvent::BioRemap);
kernel_tracepoint!(strata_k_rq_issue, KernelEvent::RqIssue);
kernel_tracepoint!(strata_k_rq_complete, KernelEvent::RqComplete);
kernel_tracepoint!(strata_k_writeback_start, KernelEvent::WritebackStart);
kernel_tracepoint!(strata_k_writeback_end, KernelEvent::WritebackEnd);
kernel_tracepoint!(strata_k_page_dirty, KernelEvent::PageDirty);
kernel_tracepoint!(strata_k_cache_add, KernelEvent::CacheAdd);
kernel_tracepoint!(strata_k_cache_delete, KernelEvent::CacheDelete);
kernel_tracepoint!(strata_k_bio_split, KernelEvent::BioSplit);

/// Per CPU: the first bytes of the record being read (8-aligned, as the record is). One copy
/// takes the place of a helper call per field, which cost some 100 ns per page-cache event.
#[map]
static STRATA_KERNEL_WINDOW: PerCpuArray<[u64; KERNEL_WINDOW / 8]> =
    PerCpuArray::with_max_entries(1, 0);

/// The first `f.len` bytes of the tracepoint's record, copied into this CPU's window.
#[inline(always)]
pub(crate) fn window(
    ctx: &TracePointContext,
    f: &KernelFields,
) -> Res<&'static [u64; KERNEL_WINDOW / 8]> {
    let w = STRATA_KERNEL_WINDOW.get_ptr_mut(0).ok_or(-1)?;
    let len = masked(f.len as usize, KERNEL_WINDOW);
    // SAFETY: `len` is at most the window's size; the record is as long as its format says.
    let r = unsafe { generated::bpf_probe_read_kernel(w.cast(), len as u32, ctx.as_ptr()) };
    if r != 0 {
        return Err(r);
    }
    // SAFETY: per-CPU memory; trace-event programs do not nest on a CPU.
    Ok(unsafe { &*w })
}

/// The `T` at byte `off` of the window (user space checked that it is inside and aligned for
/// `T`); the default when the tracepoint has no such field.
#[inline(always)]
pub(crate) fn field<T: Copy + Default>(w: &[u64; KERNEL_WINDOW / 8], off: u32) -> T {
    if off == FIELD_NONE {
        return T::default();
    }
    let align = core::mem::align_of::<T>();
    // The mask keeps the read aligned whatever the map holds; the bound keeps it inside.
    let off = bounded(
        off as usize & !(align - 1),
        KERNEL_WINDOW - core::mem::size_of::<T>(),
    );
    // SAFETY: inside the window and aligned for `T`; every byte was written by the copy or
    // is a stale byte of an earlier record (plain integers either way).
    unsafe { core::ptr::read(w.as_ptr().cast::<u8>().add(off).cast::<T>()) }
}

#[inline(always)]
fn watched(ino: u64) -> bool {
    // SAFETY: read-only lookup of a plain value.
    unsafe { STRATA_WATCHED_INODES.get(ino) }.is_some()
}

/// What a kernel event says, from its trace event's record or read by its BTF raw
/// tracepoint's program; fields the event lacks are 0.
#[derive(Default)]
pub(crate) struct Values {
    pub dev: u32,
    pub sector: u64,
    pub nr_sector: u32,
    pub ino: u64,
    /// The page index (page events) or `writeback_index`, where the event has one.
    pub index: Option<u64>,
    pub order: u8,
    pub old_dev: u32,
    pub old_sector: u64,
    pub new_sector: u64,
    pub wrote: u64,
    pub error: i32,
    pub tag: [u8; 8],
}

impl Values {
    #[inline(always)]
    fn from_record(w: &[u64; KERNEL_WINDOW / 8], f: &KernelFields) -> Self {
        Self {
            dev: field(w, f.dev),
            sector: field(w, f.sector),
            nr_sector: field(w, f.nr_sector),
            ino: field(w, f.ino),
            index: (f.index != FIELD_NONE).then(|| field(w, f.index)),
            order: field(w, f.order),
            old_dev: field(w, f.old_dev),
            old_sector: field(w, f.old_sector),
            new_sector: field(w, f.new_sector),
            wrote: field(w, f.wrote),
            error: field(w, f.error),
            tag: field(w, f.tag),
        }
    }
}

fn try_kernel_event(ctx: &TracePointContext, event: KernelEvent) -> Res<()> {
    let cfg = config()?;
    if cfg.stopped != 0 {
        return Ok(());
    }
    let f = STRATA_KERNEL_FIELDS.get(event as u32).ok_or(-1)?;
    let w = window(ctx, f)?;
    let mine = traced(cfg, (bpf_get_current_pid_tgid() >> 32) as u32);
    on_kernel_event(cfg, event, &Values::from_record(w, f), mine)
}

/// Keeps or drops kernel event `event`, and sends or merges its record; `mine`: whether the
/// current process is traced.
#[inline(always)]
fn on_kernel_event(cfg: &Config, event: KernelEvent, v: &Values, mine: bool) -> Res<()> {
    let me = thread::me();
    let (tgid, tid) = (me.tgid(), me.tid());
    let (dev, sector) = (v.dev, v.sector);
    let mut ino = v.ino;
    let key = BioKey {
        dev,
        _pad: 0,
        sector,
    };
    let mut call_id = 0;
    // A traced thread's page event inside a syscall: merged into the thread's run.
    let mut run = None;
    match event {
        KernelEvent::BioQueue => {
            if mine {
                call_id = me.current_call();
            } else if let Some(i) = unsafe { STRATA_WRITEBACK_THREADS.get(tid) } {
                ino = *i;
            } else {
                return Ok(());
            }
            let _ = STRATA_PENDING_BIOS.insert(key, 1, 0);
            mark_busy(dev);
        }
        KernelEvent::BioRemap => {
            let old = BioKey {
                dev: v.old_dev,
                _pad: 0,
                sector: v.old_sector,
            };
            unsafe { STRATA_PENDING_BIOS.get(old) }.ok_or(0)?;
            let _ = STRATA_PENDING_BIOS.remove(old);
            let _ = STRATA_PENDING_BIOS.insert(key, 1, 0);
            mark_busy(dev);
        }
        KernelEvent::BioSplit => {
            unsafe { STRATA_PENDING_BIOS.get(key) }.ok_or(0)?;
            let rest = BioKey {
                dev,
                _pad: 0,
                sector: v.new_sector,
            };
            let _ = STRATA_PENDING_BIOS.insert(rest, 1, 0);
        }
        KernelEvent::RqIssue | KernelEvent::RqComplete => busy(dev)?,
        KernelEvent::WritebackStart => {
            if cfg.trace_all == 0 && !watched(ino) {
                return Ok(());
            }
            let _ = STRATA_WRITEBACK_THREADS.insert(tid, ino, 0);
        }
        KernelEvent::WritebackEnd => {
            let _ = STRATA_WRITEBACK_THREADS.remove(tid);
            if cfg.trace_all == 0 && !watched(ino) {
                return Ok(());
            }
        }
        // Their own programs (`uring`, `aio`).
        KernelEvent::UringSubmit
        | KernelEvent::UringComplete
        | KernelEvent::UringFailed
        | KernelEvent::AioSubmit
        | KernelEvent::AioWait
        | KernelEvent::AioReaped
        | KernelEvent::AioPwait
        | KernelEvent::AioPreaped => {
            return Ok(());
        }
        KernelEvent::PageDirty | KernelEvent::CacheAdd | KernelEvent::CacheDelete => {
            if mine {
                if let Some((st, frame)) = me.current_frame() {
                    // SAFETY: the current thread's top frame.
                    let frame = unsafe { &*frame };
                    call_id = frame.call_id;
                    if frame.flags & FRAME_KERNEL != 0 {
                        run = run_index(event).map(|k| (st, k));
                    }
                }
                // A file a traced process dirtied or read is watched from now on: its
                // writeback by a worker, seconds later, is kept. User space also watches the
                // files traced processes open, but only once it has read their events.
                if event != KernelEvent::CacheDelete && !watched(ino) {
                    let _ = STRATA_WATCHED_INODES.insert(ino, 1, 0);
                }
            } else if !watched(ino) {
                return Ok(());
            }
        }
    }

    let nr = match event {
        KernelEvent::WritebackEnd => v.wrote as u32,
        KernelEvent::PageDirty | KernelEvent::CacheAdd | KernelEvent::CacheDelete => {
            1u32 << (v.order & 31)
        }
        _ => v.nr_sector,
    };
    let pos = v.index.unwrap_or(sector);
    let rec = KernelRecord {
        kind: RecordKind::Kernel as u32,
        event: event as u32,
        ts: 0,
        call_id,
        pid: tgid,
        tid,
        dev,
        nr,
        ino,
        pos,
        old_dev: v.old_dev,
        error: v.error,
        old_pos: match event {
            KernelEvent::BioSplit => v.new_sector,
            KernelEvent::CacheAdd | KernelEvent::CacheDelete => pos + u64::from(nr) - 1,
            KernelEvent::PageDirty => pos,
            _ => v.old_sector,
        },
        ts_end: 0,
        tag: v.tag,
    };
    match run {
        // SAFETY: the current thread's stack.
        Some((st, k)) => unsafe { grow_run(st, k, &rec) },
        None => submit(rec),
    }
    Ok(())
}

/// Where `event` is merged in [`ThreadStack::runs`], if it is.
#[inline(always)]
fn run_index(event: KernelEvent) -> Option<usize> {
    PAGE_RUN_EVENTS.iter().position(|e| *e == event)
}

/// Adds a page event of the syscall in progress to the thread's range of that event: the
/// range grows when the event follows it (same call, file and device; the next page, or for
/// dirtied pages, whose events do not say how many a folio has, a later one: the rule user
/// space merges records by), else the range is sent and the event starts a new one.
///
/// # Safety
/// `st` points to the current thread's stack.
#[inline(always)]
unsafe fn grow_run(st: *mut ThreadStack, k: usize, rec: &KernelRecord) {
    let now = unsafe { bpf_ktime_get_ns() };
    let k = bounded(k, PAGE_RUN_EVENTS.len() - 1);
    let bit = 1u32 << k;
    // SAFETY: the caller's; `k` is inside the runs.
    unsafe {
        let run = &mut (*st).runs[k];
        if (*st).runs_pending & bit != 0 {
            let follows = if rec.event == KernelEvent::PageDirty as u32 {
                rec.pos > run.old_pos
            } else {
                run.pos.wrapping_add(u64::from(run.nr)) == rec.pos
            };
            if follows
                && run.call_id == rec.call_id
                && run.ino == rec.ino
                && run.dev == rec.dev
                && u64::from_ne_bytes(run.tag) == u64::from_ne_bytes(rec.tag)
            {
                run.nr = run.nr.saturating_add(rec.nr);
                run.old_pos = rec.old_pos;
                run.ts_end = now;
                return;
            }
            send_run(run);
        }
        *run = *rec;
        run.ts = now;
        run.ts_end = now;
        (*st).runs_pending |= bit;
    }
}

/// Sends the current thread's unsent page ranges: when a call of it returns (they belong to
/// the syscall on top, or to one whose return was missed), and when it exits.
///
/// # Safety
/// `st` points to the current thread's stack.
#[inline(always)]
pub unsafe fn flush_runs(st: *mut ThreadStack) {
    // SAFETY: the caller's.
    unsafe {
        let pending = (*st).runs_pending;
        if pending == 0 {
            return;
        }
        send_runs(st, pending);
        (*st).runs_pending = 0;
    }
}

/// Sends the runs of `st` that `pending` ([`ThreadStack::runs_pending`]) names.
///
/// # Safety
/// `st` points to a thread's stack.
#[inline(always)]
pub unsafe fn send_runs(st: *const ThreadStack, pending: u32) {
    for k in 0..PAGE_RUN_EVENTS.len() {
        if pending & (1 << k) != 0 {
            // SAFETY: the caller's.
            send_run(unsafe { &(*st).runs[k] });
        }
    }
}

#[inline(always)]
fn send_run(run: &KernelRecord) {
    if STRATA_EVENTS
        .output::<KernelRecord>(run, wakeup(core::mem::size_of::<KernelRecord>(), false))
        .is_err()
    {
        count(Counter::RingbufFull);
    }
}

/// Notes that a kept bio was submitted to `dev` now (see [`busy`]).
#[inline(always)]
fn mark_busy(dev: u32) {
    let now = unsafe { bpf_ktime_get_ns() };
    match STRATA_BUSY_DEVS.get_ptr_mut(dev) {
        // In place: a device's entry is written for every kept bio, and an update through
        // the map costs a lookup, a new element and the old one's release each time.
        // SAFETY: a plain u64 of the map; a racing writer writes a time just as recent.
        Some(last) => unsafe { *last = now },
        None => {
            let _ = STRATA_BUSY_DEVS.insert(dev, now, 0);
        }
    }
}

/// Requests are emitted while their device has had kept bios lately: within `BUSY_NS`.
#[inline(always)]
fn busy(dev: u32) -> Res<()> {
    // SAFETY: read-only lookup of a plain value.
    let last = *unsafe { STRATA_BUSY_DEVS.get(dev) }.ok_or(0)?;
    // Saturating: `last` may come from another CPU a few ns ahead of this one.
    if unsafe { bpf_ktime_get_ns() }.saturating_sub(last) > BUSY_NS {
        return Err(0);
    }
    Ok(())
}

/// Puts `rec` in the ring buffer, stamped with the time now.
#[inline(always)]
fn submit(mut rec: KernelRecord) {
    let Some(mut entry) = STRATA_EVENTS.reserve::<KernelRecord>(0) else {
        count(Counter::RingbufFull);
        return;
    };
    rec.ts = unsafe { bpf_ktime_get_ns() };
    rec.ts_end = rec.ts;
    // SAFETY: reserved ring-buffer memory of the record's size, 8-byte aligned.
    unsafe { store_words(entry.as_mut_ptr(), &rec) };
    entry.submit(wakeup(core::mem::size_of::<KernelRecord>(), true));
}

// ---- the block events on their BTF raw tracepoints (see `programs::KERNEL_BTF`): the same
// records as the trace events', loaded directly from the bio or request at offsets the
// verifier knows (`STRATA_BLOCK_OFFSETS`) ----

/// Set at load from the kernel's BTF (read-only data: constants to the verifier).
#[unsafe(no_mangle)]
static STRATA_BLOCK_OFFSETS: BlockOffsets = BlockOffsets::NONE;

/// Offset `$f` of [`STRATA_BLOCK_OFFSETS`].
macro_rules! block_off {
    ($f:ident) => {
        set_at_load!(STRATA_BLOCK_OFFSETS.$f)
    };
}

/// Runs `event`'s common part on what `values` reads (told whether the current process is
/// traced), unless recording has stopped.
#[inline(always)]
fn btf_event(event: KernelEvent, values: impl FnOnce(&Config, bool) -> Res<Values>) -> i32 {
    let _ = config().and_then(|cfg| {
        if cfg.stopped != 0 {
            return Ok(());
        }
        let mine = traced(cfg, (bpf_get_current_pid_tgid() >> 32) as u32);
        on_kernel_event(cfg, event, &values(cfg, mine)?, mine)
    });
    0
}

/// What the bio trace events say of a bio: its disk, first sector, size and flags.
#[inline(always)]
fn bio_values(bio: *const u8) -> Values {
    let bdev: *const u8 = at(bio, block_off!(bio_bdev));
    let size: u32 = at(bio, block_off!(bio_size));
    Values {
        // `bio_dev`: the whole disk's, also for a bio on a partition.
        dev: disk_dev(at(bdev, block_off!(bdev_disk))),
        sector: at(bio, block_off!(bio_sector)),
        nr_sector: size >> 9,
        tag: rwbs(at(bio, block_off!(bio_opf))),
        ..Values::default()
    }
}

/// block_bio_queue(struct bio *bio)
#[btf_tracepoint(function = "block_bio_queue")]
pub fn strata_kb_bio_queue(ctx: BtfTracePointContext) -> i32 {
    let bio: *const u8 = ctx.arg(0);
    btf_event(KernelEvent::BioQueue, |_, mine| {
        // Most bios on a node are neither a traced process's nor a watched writeback's:
        // decided before any read.
        let tid = bpf_get_current_pid_tgid() as u32;
        // SAFETY: read-only lookup of a plain value.
        if !mine && unsafe { STRATA_WRITEBACK_THREADS.get(tid) }.is_none() {
            return Err(0);
        }
        Ok(bio_values(bio))
    })
}

/// block_split(struct bio *bio, unsigned int new_sector)
#[btf_tracepoint(function = "block_split")]
pub fn strata_kb_bio_split(ctx: BtfTracePointContext) -> i32 {
    let (bio, new_sector): (*const u8, u64) = (ctx.arg(0), ctx.arg(1));
    btf_event(KernelEvent::BioSplit, |_, _| {
        Ok(Values {
            new_sector: u64::from(new_sector as u32),
            ..bio_values(bio)
        })
    })
}

/// block_bio_remap(struct bio *bio, dev_t dev, sector_t from)
#[btf_tracepoint(function = "block_bio_remap")]
pub fn strata_kb_bio_remap(ctx: BtfTracePointContext) -> i32 {
    let (bio, dev, from): (*const u8, u64, u64) = (ctx.arg(0), ctx.arg(1), ctx.arg(2));
    btf_event(KernelEvent::BioRemap, |_, _| {
        Ok(Values {
            old_dev: dev as u32,
            old_sector: from,
            ..bio_values(bio)
        })
    })
}

/// block_rq_issue(struct request *rq)
#[btf_tracepoint(function = "block_rq_issue")]
pub fn strata_kb_rq_issue(ctx: BtfTracePointContext) -> i32 {
    let rq: *const u8 = ctx.arg(0);
    btf_event(KernelEvent::RqIssue, |_, _| {
        // Requests of devices without kept bios are dropped before any other read.
        let dev = rq_dev(rq);
        busy(dev)?;
        let flags: u32 = at(rq, block_off!(rq_flags));
        // A passthrough command (REQ_OP_DRV_IN, _OUT) has no sectors in the trace event.
        let passthrough = matches!(flags & 0xff, 34 | 35);
        let (sector, len): (u64, u32) = if passthrough {
            (0, 0)
        } else {
            (at(rq, block_off!(rq_sector)), at(rq, block_off!(rq_len)))
        };
        Ok(Values {
            dev,
            sector,
            nr_sector: len >> 9,
            tag: rwbs(flags),
            ..Values::default()
        })
    })
}

/// block_rq_complete(struct request *rq, blk_status_t error, unsigned int nr_bytes)
#[btf_tracepoint(function = "block_rq_complete")]
pub fn strata_kb_rq_complete(ctx: BtfTracePointContext) -> i32 {
    let (rq, status, nr_bytes): (*const u8, u64, u64) = (ctx.arg(0), ctx.arg(1), ctx.arg(2));
    btf_event(KernelEvent::RqComplete, |_, _| {
        let dev = rq_dev(rq);
        busy(dev)?;
        Ok(Values {
            dev,
            sector: at(rq, block_off!(rq_sector)),
            nr_sector: (nr_bytes >> 9) as u32,
            error: errno_of(status as u8),
            tag: rwbs(at(rq, block_off!(rq_flags))),
            ..Values::default()
        })
    })
}

/// The dev_t of a request's disk, as the trace events give it (0 for a queue without one).
#[inline(always)]
fn rq_dev(rq: *const u8) -> u32 {
    let q: *const u8 = at(rq, block_off!(rq_q));
    disk_dev(at(q, block_off!(q_disk)))
}

/// `disk_devt`: the kernel's dev_t of a disk (major << 20 | first minor); 0 for none (a
/// load through a null pointer reads 0).
#[inline(always)]
fn disk_dev(disk: *const u8) -> u32 {
    let major: u32 = at(disk, block_off!(disk_major));
    let minor: u32 = at(disk, block_off!(disk_minor));
    (major << 20) | minor
}

// ---- page cache and writeback: the fields are loaded directly from the objects the
// tracepoints hand over, at offsets the verifier knows (`STRATA_PAGE_OFFSETS`) ----

/// Set at load from the kernel's BTF (read-only data: constants to the verifier).
#[unsafe(no_mangle)]
static STRATA_PAGE_OFFSETS: PageOffsets = PageOffsets::NONE;

/// Offset `$f` of [`STRATA_PAGE_OFFSETS`].
macro_rules! page_off {
    ($f:ident) => {
        set_at_load!(STRATA_PAGE_OFFSETS.$f)
    };
}

/// What the page-cache trace events say of a folio: its file's inode and device, its index
/// and its order.
#[inline(always)]
fn folio_values(mine: bool, folio: *const u8) -> Res<Values> {
    let mapping: *const u8 = at(folio, page_off!(folio_mapping));
    let host: *const u8 = at(mapping, page_off!(mapping_host));
    let ino: u64 = at(host, page_off!(inode_ino));
    kept_page(mine, ino)?;
    let flags: u64 = at(folio, page_off!(folio_flags));
    // `folio_order`: 0 unless the folio is large (its first page a head page).
    let order: u8 = if (flags >> (page_off!(pg_head) & 63)) & 1 != 0 {
        at(folio, page_off!(folio_order))
    } else {
        0
    };
    // The superblock's device (every inode in a page cache has a superblock; the trace
    // event's fallback to `i_rdev` is for none).
    let sb: *const u8 = at(host, page_off!(inode_sb));
    let dev: u32 = at(sb, page_off!(sb_dev));
    Ok(Values {
        dev,
        ino,
        index: Some(at(folio, page_off!(folio_index))),
        order,
        ..Values::default()
    })
}

/// Whether a page event on inode `ino` may be kept (`on_kernel_event` decides): in a traced
/// process (`mine`), or on a watched file. Most page events on a node are neither: they are
/// dropped before the rest is read.
#[inline(always)]
fn kept_page(mine: bool, ino: u64) -> Res<()> {
    if mine || watched(ino) { Ok(()) } else { Err(0) }
}

/// The first 8 bytes of the name of an inode's backing device ("major:minor", as the
/// writeback events' `name`; none where the device has no name). `inode_to_bdi`: a block
/// device's own inode (its page cache: metadata buffers) is backed by its disk, others by
/// their file system's device.
#[inline(always)]
fn bdi_name(inode: *const u8) -> Res<[u8; 8]> {
    const S_IFMT: u16 = 0o170000;
    const S_IFBLK: u16 = 0o060000;
    if at::<u16>(inode, page_off!(inode_mode)) & S_IFMT == S_IFBLK {
        return bdev_bdi_name(inode);
    }
    let sb: *const u8 = at(inode, page_off!(inode_sb));
    let bdi: *const u8 = at(sb, page_off!(sb_bdi));
    if at::<u64>(bdi, page_off!(bdi_dev)) == 0 {
        return Ok([0; 8]);
    }
    Ok(at::<u64>(bdi, page_off!(bdi_name)).to_le_bytes())
}

/// [`bdi_name`] of a block device's own inode (`I_BDEV`: the block device contains the
/// inode, `struct bdev_inode`). The verifier does not let a pointer move below its object:
/// the address is taken as a number, and the rest read through the helper.
#[inline(always)]
fn bdev_bdi_name(inode: *const u8) -> Res<[u8; 8]> {
    let addr: u64 = kread((&raw const inode) as u64, 0)?;
    let bdev = addr.wrapping_sub(u64::from(page_off!(bdev_vfs_inode)));
    let disk: u64 = kread(bdev, page_off!(bdev_disk))?;
    let bdi: u64 = kread(disk, page_off!(disk_bdi))?;
    if kread::<u64>(bdi, page_off!(bdi_dev))? == 0 {
        return Ok([0; 8]);
    }
    kread(bdi, page_off!(bdi_name))
}

/// What the writeback events say of an inode: its number, where its writeback resumes, its
/// backing device.
#[inline(always)]
fn inode_values(inode: *const u8) -> Res<Values> {
    let mapping: *const u8 = at(inode, page_off!(inode_mapping));
    Ok(Values {
        ino: at(inode, page_off!(inode_ino)),
        index: Some(at(mapping, page_off!(mapping_wb_index))),
        tag: bdi_name(inode)?,
        ..Values::default()
    })
}

/// mm_filemap_add_to_page_cache(struct folio *folio)
#[btf_tracepoint(function = "mm_filemap_add_to_page_cache")]
pub fn strata_kb_cache_add(ctx: BtfTracePointContext) -> i32 {
    let folio: *const u8 = ctx.arg(0);
    btf_event(KernelEvent::CacheAdd, |_, mine| folio_values(mine, folio))
}

/// mm_filemap_delete_from_page_cache(struct folio *folio)
#[btf_tracepoint(function = "mm_filemap_delete_from_page_cache")]
pub fn strata_kb_cache_delete(ctx: BtfTracePointContext) -> i32 {
    let folio: *const u8 = ctx.arg(0);
    btf_event(KernelEvent::CacheDelete, |_, mine| {
        folio_values(mine, folio)
    })
}

/// writeback_dirty_folio(struct folio *folio, struct address_space *mapping)
#[btf_tracepoint(function = "writeback_dirty_folio")]
pub fn strata_kb_page_dirty(ctx: BtfTracePointContext) -> i32 {
    let (folio, mapping): (*const u8, *const u8) = (ctx.arg(0), ctx.arg(1));
    btf_event(KernelEvent::PageDirty, |_, mine| {
        let host: *const u8 = if mapping.is_null() {
            core::ptr::null()
        } else {
            at(mapping, page_off!(mapping_host))
        };
        let ino: u64 = if host.is_null() {
            0
        } else {
            at(host, page_off!(inode_ino))
        };
        kept_page(mine, ino)?;
        let tag = if host.is_null() {
            [0; 8]
        } else {
            bdi_name(host)?
        };
        Ok(Values {
            ino,
            index: Some(at(folio, page_off!(folio_index))),
            tag,
            ..Values::default()
        })
    })
}

/// writeback_single_inode_start(struct inode *inode, struct writeback_control *wbc,
/// unsigned long nr_to_write)
#[btf_tracepoint(function = "writeback_single_inode_start")]
pub fn strata_kb_writeback_start(ctx: BtfTracePointContext) -> i32 {
    let inode: *const u8 = ctx.arg(0);
    btf_event(KernelEvent::WritebackStart, |_, _| inode_values(inode))
}

/// writeback_single_inode(struct inode *inode, struct writeback_control *wbc,
/// unsigned long nr_to_write): `wrote` is what the pass took off `nr_to_write`.
#[btf_tracepoint(function = "writeback_single_inode")]
pub fn strata_kb_writeback_end(ctx: BtfTracePointContext) -> i32 {
    let (inode, wbc, nr_to_write): (*const u8, *const u8, u64) =
        (ctx.arg(0), ctx.arg(1), ctx.arg(2));
    btf_event(KernelEvent::WritebackEnd, |_, _| {
        let left: u64 = at(wbc, page_off!(wbc_nr_to_write));
        Ok(Values {
            wrote: nr_to_write.wrapping_sub(left),
            ..inode_values(inode)?
        })
    })
}

/// The negative errno the trace event reports for a block status (`blk_status_to_errno`;
/// statuses 1-13 have kept their numbers since Linux 4.13, later ones are reported as EIO).
#[inline(always)]
fn errno_of(status: u8) -> i32 {
    -match status {
        0 => 0,
        1 => 95,  // NOTSUPP: EOPNOTSUPP
        2 => 110, // TIMEOUT: ETIMEDOUT
        3 => 28,  // NOSPC: ENOSPC
        4 => 67,  // TRANSPORT: ENOLINK
        5 => 121, // TARGET: EREMOTEIO
        6 => 52,  // NEXUS, RESV_CONFLICT: EBADE
        7 => 61,  // MEDIUM: ENODATA
        8 => 84,  // PROTECTION: EILSEQ
        9 => 12,  // RESOURCE: ENOMEM
        11 => 78, // DM_REQUEUE: EREMCHG
        12 => 11, // AGAIN: EAGAIN
        13 => 16, // DEV_RESOURCE: EBUSY
        _ => 5,   // IOERR and the rest: EIO
    }
}

/// The trace events' `rwbs` for request flags `opf` (`blk_fill_rwbs`): F for a preflush,
/// the operation (REQ_OP_* in the low byte), then F (FUA), A (readahead), S (sync),
/// M (metadata). In arithmetic, not branches: a branch per letter multiplies the paths the
/// verifier walks through the rest of the program (6.1's walked half a million
/// instructions for `bio_queue` so).
#[inline(always)]
fn rwbs(opf: u32) -> [u8; 8] {
    // The operation's letters, by REQ_OP_*: READ, WRITE, FLUSH, DISCARD, (none: N),
    // SECURE_ERASE (DE); others N.
    const FIRST: u64 = u64::from_le_bytes(*b"RWFDND\0\0");
    const SECOND: u64 = u64::from_le_bytes(*b"\0\0\0\0\0E\0\0");
    let op = opf & 0xff;
    let idx = u64::from(if op > 5 { 4 } else { op });
    let first = (FIRST >> (8 * idx)) & 0xff;
    let second = (SECOND >> (8 * idx)) & 0xff;
    // Whether flag `k` is set: 0 or 1 (bits past 31 are the kernel's lack of it).
    let set = |k: usize| {
        let bit = u32::from(block_off!(req_flag_bits)[k]);
        u64::from((opf >> (bit & 31)) & ((bit >> 5) ^ 1) & 1)
    };
    let preflush = set(0);
    let mut acc = u64::from(RWBS_FLAGS[0].0) * preflush;
    let mut n = preflush;
    acc |= (first | (second << 8)) << (8 * n);
    // One letter, or two when the second is there ('E' has bit 6 set).
    n += 1 + ((second >> 6) & 1);
    for (k, (letter, _)) in RWBS_FLAGS.iter().enumerate().skip(1) {
        let on = set(k);
        acc |= (u64::from(*letter) * on) << (8 * (n & 7));
        n += on;
    }
    acc.to_le_bytes()
}
