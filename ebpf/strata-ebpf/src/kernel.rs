//! Kernel layers below the syscall: block requests, page cache and writeback, from
//! tracepoints whose field offsets user space reads from the running kernel's format files.
//!
//! What is kept: events in the context of a traced process (linked to the call on top of its
//! stack), and events of writeback workers and reclaim on inodes user space watches (the
//! files traced processes opened). Block requests are emitted from issue to completion when
//! a kept bio may be in them: user space matches bios to requests by device and sector range.
use aya_ebpf::{
    helpers::{bpf_get_current_pid_tgid, bpf_ktime_get_ns},
    macros::{map, tracepoint},
    maps::{Array, HashMap, LruHashMap},
    programs::TracePointContext,
};
use strata_common::{
    BioKey, Counter, FIELD_NONE, KERNEL_EVENTS, KernelEvent, KernelFields, KernelRecord, MAX_DEPTH,
    RecordKind,
};

use crate::{Res, STRATA_EVENTS, STRATA_STACKS, config, count, slot, traced, wakeup};

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

/// The traced call in progress on `tid`, 0 if none.
#[inline(always)]
fn current_call(tid: u32) -> u64 {
    // SAFETY: read-only lookup; the stack belongs to the current thread.
    match unsafe { STRATA_STACKS.get(&tid) } {
        Some(st) if st.depth > 0 => {
            let d = if st.depth as usize > MAX_DEPTH {
                MAX_DEPTH
            } else {
                st.depth as usize
            };
            st.frames[slot(d - 1)].call_id
        }
        _ => 0,
    }
}

#[inline(always)]
fn watched(ino: u64) -> bool {
    // SAFETY: read-only lookup of a plain value.
    unsafe { STRATA_WATCHED_INODES.get(&ino) }.is_some()
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
            } else if let Some(i) = unsafe { STRATA_WRITEBACK_THREADS.get(&tid) } {
                ino = *i;
            } else {
                return Ok(());
            }
            let _ = STRATA_PENDING_BIOS.insert(&key, &1, 0);
            let _ = STRATA_BUSY_DEVS.insert(&dev, &unsafe { bpf_ktime_get_ns() }, 0);
        }
        KernelEvent::BioRemap => {
            let old = BioKey {
                dev: field(ctx, f.old_dev),
                _pad: 0,
                sector: field(ctx, f.old_sector),
            };
            unsafe { STRATA_PENDING_BIOS.get(&old) }.ok_or(0)?;
            let _ = STRATA_PENDING_BIOS.remove(&old);
            let _ = STRATA_PENDING_BIOS.insert(&key, &1, 0);
            let _ = STRATA_BUSY_DEVS.insert(&dev, &unsafe { bpf_ktime_get_ns() }, 0);
        }
        KernelEvent::BioSplit => {
            unsafe { STRATA_PENDING_BIOS.get(&key) }.ok_or(0)?;
            let rest = BioKey {
                dev,
                _pad: 0,
                sector: field(ctx, f.new_sector),
            };
            let _ = STRATA_PENDING_BIOS.insert(&rest, &1, 0);
        }
        KernelEvent::RqIssue | KernelEvent::RqComplete => {
            // SAFETY: read-only lookup of a plain value.
            let last = *unsafe { STRATA_BUSY_DEVS.get(&dev) }.ok_or(0)?;
            // Saturating: `last` may come from another CPU a few ns ahead of this one.
            if unsafe { bpf_ktime_get_ns() }.saturating_sub(last) > BUSY_NS {
                return Ok(());
            }
        }
        KernelEvent::WritebackStart => {
            if cfg.trace_all == 0 && !watched(ino) {
                return Ok(());
            }
            let _ = STRATA_WRITEBACK_THREADS.insert(&tid, &ino, 0);
        }
        KernelEvent::WritebackEnd => {
            let _ = STRATA_WRITEBACK_THREADS.remove(&tid);
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
                    let _ = STRATA_WATCHED_INODES.insert(&ino, &1, 0);
                }
            } else if !watched(ino) {
                return Ok(());
            }
        }
    }

    let Some(mut entry) = STRATA_EVENTS.reserve::<KernelRecord>(0) else {
        count(Counter::RingbufFull);
        return Ok(());
    };
    let order: u8 = field(ctx, f.order);
    let nr = match event {
        KernelEvent::WritebackEnd => field::<u64>(ctx, f.wrote) as u32,
        KernelEvent::PageDirty | KernelEvent::CacheAdd | KernelEvent::CacheDelete => {
            1u32 << (order & 31)
        }
        _ => field(ctx, f.nr_sector),
    };
    let pos = if f.index != FIELD_NONE {
        field(ctx, f.index)
    } else {
        sector
    };
    let rec = entry.as_mut_ptr();
    // SAFETY: reserved ring-buffer memory of the right size; every field is written.
    unsafe {
        (*rec).kind = RecordKind::Kernel as u32;
        (*rec).event = event as u32;
        (*rec).ts = bpf_ktime_get_ns();
        (*rec).call_id = call_id;
        (*rec).pid = tgid;
        (*rec).tid = tid;
        (*rec).dev = dev;
        (*rec).nr = nr;
        (*rec).ino = ino;
        (*rec).pos = pos;
        (*rec).old_dev = field(ctx, f.old_dev);
        (*rec).error = field(ctx, f.error);
        (*rec).old_pos = if event == KernelEvent::BioSplit {
            field(ctx, f.new_sector)
        } else {
            field(ctx, f.old_sector)
        };
        (*rec)._pad = 0;
        (*rec).tag = field(ctx, f.tag);
    }
    entry.submit(wakeup(core::mem::size_of::<KernelRecord>(), true));
    count(Counter::Emitted);
    Ok(())
}
