//! io_uring requests as calls: a request a traced thread submits becomes a [`CallRecord`]
//! of its own, from its submission to its completion, nested under the call that submitted
//! it (`io_uring_enter`; none for the kernel's submission-queue polling thread).
//!
//! Which opcodes are recorded, and as which probe, comes from user space (probes.toml
//! `request`); the arguments are read from the prepared request through offsets of the
//! kernel's BTF, the results from the completion's trace event.
use aya_ebpf::{
    helpers::{bpf_get_current_pid_tgid, bpf_ktime_get_ns},
    macros::{map, tracepoint},
    maps::{Array, LruHashMap},
    programs::TracePointContext,
};
use strata_common::{
    CallRecord, Counter, KernelEvent, MAX_ARGS, MAX_DEPTH, NO_ARG, RecordKind, SPEC_ENABLED,
    URING_FIXED_FILE, URING_OPS,
};

use crate::{
    Res, STRATA_EVENTS, STRATA_FUNC_SPECS, bounded, config, count,
    kernel::{STRATA_KERNEL_FIELDS, field, window},
    kfunc::{file_ids, kread},
    next_call_id, thread, traced, wakeup,
};

/// io_uring opcode -> the probe id recording it, plus one (0: not recorded).
#[map]
static STRATA_URING_OPS: Array<u32> = Array::with_max_entries(URING_OPS, 0);

/// Requests submitted and not completed yet, by request address: their record so far. LRU:
/// a request whose completion was never seen (its ring torn down, a lost event) must not
/// hold its slot for ever.
#[map]
static STRATA_URING_REQS: LruHashMap<u64, CallRecord> = LruHashMap::with_max_entries(16384, 0);

#[tracepoint]
pub fn strata_k_uring_submit(ctx: TracePointContext) -> u32 {
    match try_submit(&ctx) {
        Ok(()) | Err(_) => 0,
    }
}

#[tracepoint]
pub fn strata_k_uring_complete(ctx: TracePointContext) -> u32 {
    match try_complete(&ctx) {
        Ok(()) | Err(_) => 0,
    }
}

fn try_submit(ctx: &TracePointContext) -> Res<()> {
    let cfg = config()?;
    let pid_tgid = bpf_get_current_pid_tgid();
    let (tgid, tid) = ((pid_tgid >> 32) as u32, pid_tgid as u32);
    if !traced(cfg, tgid) {
        return Ok(());
    }
    let f = STRATA_KERNEL_FIELDS
        .get(KernelEvent::UringSubmit as u32)
        .ok_or(-1)?;
    let w = window(ctx, f)?;
    let opcode: u8 = field(w, f.opcode);
    let id = *STRATA_URING_OPS.get(u32::from(opcode)).ok_or(-1)?;
    if id == 0 {
        return Ok(());
    }
    let spec = STRATA_FUNC_SPECS.get(id - 1).ok_or(-1)?;
    if spec.flags & SPEC_ENABLED == 0 {
        return Ok(());
    }
    let req: u64 = field(w, f.req);
    let flags: u32 = field(w, f.req_flags);
    // The layout user space validated: the descriptor first; for reads and writes the
    // offset and length next; the file (read at completion, when the request has one) last.
    let mut args = [0u64; MAX_ARGS];
    args[0] = if flags & URING_FIXED_FILE != 0 {
        // An index into the ring's registered files: no descriptor of the process.
        u64::MAX
    } else {
        kread::<i32>(req + u64::from(cfg.uring_fd_off))? as i64 as u64
    };
    if spec.kfile_arg != NO_ARG && spec.kfile_arg >= 3 {
        args[1] = kread(req + u64::from(cfg.uring_pos_off))?;
        args[2] = u64::from(kread::<u32>(req + u64::from(cfg.uring_len_off))?);
    }
    let (parent_id, depth) = match thread::current_frame(tid) {
        // SAFETY: the current thread's own stack.
        Some((st, frame)) => unsafe { ((*frame).call_id, (*st).depth.min(MAX_DEPTH as u32)) },
        None => (0, 0),
    };
    let rec = CallRecord {
        kind: RecordKind::Call as u32,
        func_id: id - 1,
        call_id: next_call_id(),
        parent_id,
        ts_begin: unsafe { bpf_ktime_get_ns() },
        ts_end: 0,
        pid: tgid,
        tid,
        depth,
        flags: 0,
        ret: 0,
        out: 0,
        args,
    };
    STRATA_URING_REQS.insert(req, rec, 0).map_err(i64::from)
}

fn try_complete(ctx: &TracePointContext) -> Res<()> {
    let cfg = config()?;
    let f = STRATA_KERNEL_FIELDS
        .get(KernelEvent::UringComplete as u32)
        .ok_or(-1)?;
    let w = window(ctx, f)?;
    let req: u64 = field(w, f.req);
    let rec = STRATA_URING_REQS.get_ptr_mut(req).ok_or(0)?;
    if cfg.stopped == 0 {
        // SAFETY: the map's value for `req`; a second completion of the same request (a
        // multishot one) on another CPU at this instant would at worst send it twice.
        unsafe {
            (*rec).ts_end = bpf_ktime_get_ns();
            (*rec).ret = i64::from(field::<i32>(w, f.res));
            let k = STRATA_FUNC_SPECS.get((*rec).func_id).ok_or(-1)?.kfile_arg as usize;
            // The file, and its device in the slot after the last argument (user space
            // validated that the file is the last argument, with a slot after it).
            if k < MAX_ARGS - 1 {
                // The request's file is assigned when it is issued: a registered file's too.
                let file: u64 = kread(req + u64::from(cfg.uring_file_off)).unwrap_or(0);
                let (ino, dev) = file_ids(cfg, file);
                let k = bounded(k, MAX_ARGS - 2);
                (*rec).args[k] = ino;
                (*rec).args[k + 1] = u64::from(dev);
            }
            if STRATA_EVENTS
                .output::<CallRecord>(&*rec, wakeup(core::mem::size_of::<CallRecord>(), false))
                .is_err()
            {
                count(Counter::RingbufFull);
            }
        }
    }
    let _ = STRATA_URING_REQS.remove(req);
    Ok(())
}
