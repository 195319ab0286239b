//! Kernel layers below the syscall: block requests, page cache and writeback, from
//! tracepoints whose field offsets user space reads from the running kernel's format files.
//!
//! What is kept: events in the context of a traced process (linked to the call on top of its
//! stack), and events of writeback workers and reclaim on inodes user space watches (the
//! files traced processes opened). Block requests are emitted from issue to completion when
//! a kept bio may be in them: user space matches bios to requests by device and sector range.
use aya_ebpf::{
    helpers::{bpf_get_current_pid_tgid, bpf_ktime_get_ns, bpf_probe_read_kernel},
    macros::{btf_tracepoint, map, tracepoint},
    maps::{Array, HashMap, LruHashMap},
    programs::{BtfTracePointContext, TracePointContext},
};
use strata_common::{
    BioKey, Counter, FIELD_NONE, KERNEL_EVENTS, KernelEvent, KernelFields, KernelRecord, RecordKind,
};

use crate::{Res, STRATA_EVENTS, config, count, thread::current_call, traced, wakeup};

#[map]
static STRATA_KERNEL_FIELDS: Array<KernelFields> = Array::with_max_entries(KERNEL_EVENTS as u32, 0);

/// Inode numbers of files traced processes opened (filled by user space).
#[map]
static STRATA_WATCHED_INODES: HashMap<u64, u8> = HashMap::with_max_entries(65536, 0);

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

#[inline(always)]
fn field<T: Copy + Default>(ctx: &TracePointContext, off: u32) -> T {
    if off == FIELD_NONE {
        return T::default();
    }
    // SAFETY: the offset comes from this kernel's format file for this tracepoint.
    unsafe { ctx.read_at::<T>(off as usize) }.unwrap_or_default()
}

#[inline(always)]
fn watched(ino: u64) -> bool {
    // SAFETY: read-only lookup of a plain value.
    unsafe { STRATA_WATCHED_INODES.get(ino) }.is_some()
}

fn try_kernel_event(ctx: &TracePointContext, event: KernelEvent) -> Res<()> {
    let cfg = config()?;
    if cfg.stopped != 0 {
        return Ok(());
    }
    let f = STRATA_KERNEL_FIELDS.get(event as u32).ok_or(-1)?;
    let pid_tgid = bpf_get_current_pid_tgid();
    let (tgid, tid) = ((pid_tgid >> 32) as u32, pid_tgid as u32);
    let mine = traced(cfg, tgid);
    let dev: u32 = field(ctx, f.dev);
    let sector: u64 = field(ctx, f.sector);
    let mut ino: u64 = field(ctx, f.ino);
    let key = BioKey {
        dev,
        _pad: 0,
        sector,
    };
    let mut call_id = 0;
    match event {
        KernelEvent::BioQueue => {
            if mine {
                call_id = current_call(tid);
            } else if let Some(i) = unsafe { STRATA_WRITEBACK_THREADS.get(tid) } {
                ino = *i;
            } else {
                return Ok(());
            }
            let _ = STRATA_PENDING_BIOS.insert(key, 1, 0);
            let _ = STRATA_BUSY_DEVS.insert(dev, unsafe { bpf_ktime_get_ns() }, 0);
        }
        KernelEvent::BioRemap => {
            let old = BioKey {
                dev: field(ctx, f.old_dev),
                _pad: 0,
                sector: field(ctx, f.old_sector),
            };
            unsafe { STRATA_PENDING_BIOS.get(old) }.ok_or(0)?;
            let _ = STRATA_PENDING_BIOS.remove(old);
            let _ = STRATA_PENDING_BIOS.insert(key, 1, 0);
            let _ = STRATA_BUSY_DEVS.insert(dev, unsafe { bpf_ktime_get_ns() }, 0);
        }
        KernelEvent::BioSplit => {
            unsafe { STRATA_PENDING_BIOS.get(key) }.ok_or(0)?;
            let rest = BioKey {
                dev,
                _pad: 0,
                sector: field(ctx, f.new_sector),
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
        KernelEvent::PageDirty | KernelEvent::CacheAdd | KernelEvent::CacheDelete => {
            if mine {
                call_id = current_call(tid);
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

    let order: u8 = field(ctx, f.order);
    let nr = match event {
        KernelEvent::WritebackEnd => field::<u64>(ctx, f.wrote) as u32,
        KernelEvent::PageDirty | KernelEvent::CacheAdd | KernelEvent::CacheDelete => {
            1u32 << (order & 31)
        }
        _ => field(ctx, f.nr_sector),
    };
    submit(KernelRecord {
        kind: RecordKind::Kernel as u32,
        event: event as u32,
        ts: 0,
        call_id,
        pid: tgid,
        tid,
        dev,
        nr,
        ino,
        pos: if f.index != FIELD_NONE {
            field(ctx, f.index)
        } else {
            sector
        },
        old_dev: field(ctx, f.old_dev),
        error: field(ctx, f.error),
        old_pos: if event == KernelEvent::BioSplit {
            field(ctx, f.new_sector)
        } else {
            field(ctx, f.old_sector)
        },
        _pad: 0,
        tag: field(ctx, f.tag),
    });
    Ok(())
}

/// Requests are emitted while their device has had kept bios lately.
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
    entry.write(rec);
    entry.submit(wakeup(core::mem::size_of::<KernelRecord>(), true));
}

/// block_rq_complete on its BTF raw tracepoint (see `programs::KERNEL_BTF`); the same record
/// as the trace event's, read from the request through offsets of the kernel's BTF.
#[btf_tracepoint(function = "block_rq_complete")]
pub fn strata_kb_rq_complete(ctx: BtfTracePointContext) -> i32 {
    match try_btf_rq_complete(&ctx) {
        Ok(()) | Err(_) => 0,
    }
}

/// A kernel value at `base + off`.
#[inline(always)]
fn kread<T: Copy>(base: u64, off: u32) -> Res<T> {
    // SAFETY: a checked read of kernel memory; a bad address is an error, not a fault.
    unsafe { bpf_probe_read_kernel((base + u64::from(off)) as *const T) }.map_err(|e| e as i64)
}

fn try_btf_rq_complete(ctx: &BtfTracePointContext) -> Res<()> {
    let cfg = config()?;
    if cfg.stopped != 0 {
        return Ok(());
    }
    // TP_PROTO(struct request *rq, blk_status_t error, unsigned int nr_bytes)
    let rq: u64 = ctx.arg(0);
    let status: u64 = ctx.arg(1);
    let nr_bytes: u64 = ctx.arg(2);
    let q: u64 = kread(rq, cfg.rq_q_off)?;
    let disk: u64 = kread(q, cfg.q_disk_off)?;
    // As the trace event: dev 0 for a queue without a disk.
    let dev = if disk == 0 {
        0
    } else {
        let major: u32 = kread(disk, cfg.disk_major_off)?;
        let minor: u32 = kread(disk, cfg.disk_minor_off)?;
        (major << 20) | minor
    };
    busy(dev)?;
    let flags: u32 = kread(rq, cfg.rq_flags_off)?;
    let pid_tgid = bpf_get_current_pid_tgid();
    submit(KernelRecord {
        kind: RecordKind::Kernel as u32,
        event: KernelEvent::RqComplete as u32,
        ts: 0,
        call_id: 0,
        pid: (pid_tgid >> 32) as u32,
        tid: pid_tgid as u32,
        dev,
        nr: (nr_bytes >> 9) as u32,
        ino: 0,
        pos: kread(rq, cfg.rq_sector_off)?,
        old_dev: 0,
        error: errno_of(status as u8),
        old_pos: 0,
        _pad: 0,
        tag: op_tag(flags),
    });
    Ok(())
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

/// The operation letters of the trace event's `rwbs` for `cmd_flags` (REQ_OP_* in the low
/// byte; the flag letters that follow it are left out).
#[inline(always)]
fn op_tag(flags: u32) -> [u8; 8] {
    let mut tag = [0u8; 8];
    match flags & 0xff {
        0 => tag[0] = b'R',
        1 => tag[0] = b'W',
        2 => tag[0] = b'F',
        3 => tag[0] = b'D',
        5 => tag[..2].copy_from_slice(b"DE"),
        _ => tag[0] = b'N',
    }
    tag
}
