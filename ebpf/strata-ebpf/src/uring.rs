//! io_uring requests as calls: a request a traced thread submits becomes a [`CallRecord`]
//! of its own, from its submission to its completion, nested under the call that submitted
//! it (`io_uring_enter`; none for the kernel's submission-queue polling thread).
//!
//! Which opcodes are recorded, as which probe, and where each argument lies in the prepared
//! request come from user space (probes.toml `request` and `fields`, resolved through the
//! kernel's BTF); the results from the completion's trace event.
use aya_ebpf::{
    cty::c_void,
    helpers::{bpf_get_current_pid_tgid, bpf_ktime_get_ns, generated::bpf_probe_read_kernel},
    macros::{map, tracepoint},
    maps::{Array, LruHashMap},
    programs::TracePointContext,
};
use strata_common::{
    CallRecord, Counter, KernelEvent, MAX_ARGS, MAX_DEPTH, RecordKind, SPEC_ENABLED,
    URING_FIELD_DEREF, URING_FIELD_SIGNED, URING_FIXED_FILE, URING_OPS, UringField, UringOp,
    UringPending,
};

use crate::{
    Res, STRATA_EVENTS, STRATA_FUNC_SPECS, bounded, config, count, emit_kernel_string,
    kernel::{STRATA_KERNEL_FIELDS, field, window},
    kfunc::{file_ids, kread},
    next_call_id, thread, traced, wakeup,
};

/// io_uring opcode -> how it is recorded (probe 0: not recorded).
#[map]
static STRATA_URING_OPS: Array<UringOp> = Array::with_max_entries(URING_OPS, 0);

/// Requests submitted and not completed yet, by request address: their record so far. LRU:
/// a request whose completion was never seen (its ring torn down, a lost event) must not
/// hold its slot for ever.
#[map]
static STRATA_URING_REQS: LruHashMap<u64, UringPending> = LruHashMap::with_max_entries(16384, 0);

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

/// One argument from the request at `req`: an integer of `f.size` bytes (1 to 8),
/// sign-extended when signed; 0 behind a null pointer. Without a branch per size: the
/// submission program reads up to six of these, and older verifiers walk every path.
#[inline(always)]
fn read_field(req: u64, f: &UringField) -> Res<u64> {
    let mut at = req + u64::from(f.off);
    if f.flags & URING_FIELD_DEREF != 0 {
        let base: u64 = kread(at)?;
        if base == 0 {
            return Ok(0);
        }
        at = base + u64::from(f.deref);
    }
    let n = bounded(usize::from(f.size), 8);
    let mut buf = 0u64;
    // SAFETY: `n` <= 8 bytes into `buf`; the helper checks the kernel address.
    let r = unsafe {
        bpf_probe_read_kernel(
            (&raw mut buf).cast::<c_void>(),
            n as u32,
            at as *const c_void,
        )
    };
    if r != 0 {
        return Err(r);
    }
    // The value's top bit to bit 63, then back: zero- or sign-extended.
    let shift = (64 - 8 * n as u32) & 63;
    let up = buf << shift;
    Ok(if f.flags & URING_FIELD_SIGNED != 0 {
        ((up as i64) >> shift) as u64
    } else {
        up >> shift
    })
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
    let op = STRATA_URING_OPS.get(u32::from(opcode)).ok_or(-1)?;
    if op.probe == 0 {
        return Ok(());
    }
    let spec = STRATA_FUNC_SPECS.get(op.probe - 1).ok_or(-1)?;
    if spec.flags & SPEC_ENABLED == 0 {
        return Ok(());
    }
    let req: u64 = field(w, f.req);
    let req_flags: u32 = field(w, f.req_flags);
    let call_id = next_call_id();
    let mut args = [0u64; MAX_ARGS];
    for (a, fl) in args.iter_mut().zip(op.fields.iter()) {
        if fl.size != 0 {
            *a = read_field(req, fl)?;
        }
    }
    if req_flags & URING_FIXED_FILE != 0 && usize::from(op.fd_arg) < MAX_ARGS {
        // An index into the ring's registered files: no descriptor of the process.
        args[bounded(usize::from(op.fd_arg), MAX_ARGS - 1)] = u64::MAX;
    }
    for k in op.str_args {
        if usize::from(k) < MAX_ARGS {
            let k = bounded(usize::from(k), MAX_ARGS - 1);
            if args[k] != 0 {
                emit_kernel_string(k, call_id, args[k]);
            }
            args[k] = 0;
        }
    }
    let (parent_id, depth) = match thread::current_frame(tid) {
        // SAFETY: the current thread's own stack.
        Some((st, frame)) => unsafe { ((*frame).call_id, (*st).depth.min(MAX_DEPTH as u32)) },
        None => (0, 0),
    };
    let pending = UringPending {
        rec: CallRecord {
            kind: RecordKind::Call as u32,
            func_id: op.probe - 1,
            call_id,
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
        },
        file_off: u32::from(op.file_off),
        file_arg: u32::from(op.file_arg),
    };
    STRATA_URING_REQS.insert(req, pending, 0).map_err(i64::from)
}

fn try_complete(ctx: &TracePointContext) -> Res<()> {
    let cfg = config()?;
    let f = STRATA_KERNEL_FIELDS
        .get(KernelEvent::UringComplete as u32)
        .ok_or(-1)?;
    let w = window(ctx, f)?;
    let req: u64 = field(w, f.req);
    let p = STRATA_URING_REQS.get_ptr_mut(req).ok_or(0)?;
    if cfg.stopped == 0 {
        // SAFETY: the map's value for `req`; a second completion of the same request (a
        // multishot one) on another CPU at this instant would at worst send it twice.
        unsafe {
            let rec = &mut (*p).rec;
            rec.ts_end = bpf_ktime_get_ns();
            rec.ret = i64::from(field::<i32>(w, f.res));
            // The file, and its device in the slot after it (user space validated that the
            // file is the last argument, with a slot after it).
            let k = (*p).file_arg as usize;
            if k < MAX_ARGS - 1 {
                let file: u64 = kread(req + u64::from((*p).file_off)).unwrap_or(0);
                let (ino, dev) = file_ids(cfg, file);
                let k = bounded(k, MAX_ARGS - 2);
                rec.args[k] = ino;
                rec.args[k + 1] = u64::from(dev);
            }
            if STRATA_EVENTS
                .output::<CallRecord>(rec, wakeup(core::mem::size_of::<CallRecord>(), false))
                .is_err()
            {
                count(Counter::RingbufFull);
            }
        }
    }
    let _ = STRATA_URING_REQS.remove(req);
    Ok(())
}
