//! io_uring requests as calls: a request a traced thread submits becomes a [`CallRecord`]
//! of its own, from its submission to its completion, nested under the call that submitted
//! it (`io_uring_enter`; none for the kernel's submission-queue polling thread).
//!
//! Which opcodes are recorded, as which probe, and where each argument lies in the prepared
//! request come from user space (probes.toml `request` and `fields`, resolved through the
//! kernel's BTF); the results from the completion event. Each event has a program on its BTF
//! raw tracepoint (the default), which reads the request through BTF offsets, and one on its
//! trace event, which reads the trace record.
//!
//! The submission and the completion are sent as two records ([`RequestBegin`],
//! [`RequestEnd`]) that user space joins by the request's address: keeping the request in a
//! kernel hash map until it completes cost more than both records (an update, a lookup and a
//! delete of a map entry on the path of every request). Completions are kept only on rings a
//! traced process submitted on.
use core::ptr::{addr_of_mut, write_volatile};

use aya_ebpf::{
    cty::c_void,
    helpers::{bpf_get_current_pid_tgid, bpf_ktime_get_ns, generated::bpf_probe_read_kernel},
    macros::{btf_tracepoint, map, tracepoint},
    maps::{Array, LruHashMap, PerCpuArray},
    programs::{BtfTracePointContext, TracePointContext},
};
use strata_common::{
    Config, Counter, KernelEvent, MAX_ARGS, MAX_DEPTH, RecordKind, RequestBegin, RequestEnd,
    SPEC_ENABLED, URING_FIELD_DEREF, URING_FIELD_SIGNED, URING_FIXED_FILE, URING_OPS, URING_SPAN,
    UringField, UringOp,
};

use crate::{
    Res, STRATA_EVENTS, STRATA_FUNC_SPECS, bounded, config, count, emit_kernel_string,
    kernel::{STRATA_KERNEL_FIELDS, field, window},
    kfunc::{file_ids, kread_at},
    next_call_id, thread, traced, wakeup,
};

/// io_uring opcode -> how it is recorded (probe 0: not recorded).
#[map]
static STRATA_URING_OPS: Array<UringOp> = Array::with_max_entries(URING_OPS, 0);

/// Per CPU: the first bytes of the request being submitted (see [`UringOp::span`]).
#[map]
static STRATA_URING_SCRATCH: PerCpuArray<[u64; URING_SPAN / 8]> =
    PerCpuArray::with_max_entries(1, 0);

/// Rings a traced process submitted requests on (`struct io_ring_ctx *`) -> that process:
/// their completions are kept, and routed to it. LRU: a ring torn down leaves its slot.
#[map]
static STRATA_URING_RINGS: LruHashMap<u64, u32> = LruHashMap::with_max_entries(4096, 0);

#[tracepoint]
pub fn strata_k_uring_submit(ctx: TracePointContext) -> u32 {
    let _ = traced_thread().and_then(|t| {
        let ev = ReqEvent::from_record(&ctx, KernelEvent::UringSubmit)?;
        on_submit(t, &ev)
    });
    0
}

/// io_uring_submit_req(struct io_kiocb *req), or before Linux 6.4
/// io_uring_submit_sqe(struct io_kiocb *req, bool force_nonblock).
#[btf_tracepoint(function = "io_uring_submit_req")]
pub fn strata_kb_uring_submit(ctx: BtfTracePointContext) -> i32 {
    let req: u64 = ctx.arg(0);
    let _ = traced_thread().and_then(|t| on_submit(t, &ReqEvent::from_request(req)?));
    0
}

#[tracepoint]
pub fn strata_k_uring_failed(ctx: TracePointContext) -> u32 {
    let _ = traced_thread().and_then(|t| {
        let ev = ReqEvent::from_record(&ctx, KernelEvent::UringFailed)?;
        on_failed(t, &ev)
    });
    0
}

/// io_uring_req_failed(const struct io_uring_sqe *sqe, struct io_kiocb *req, int error).
#[btf_tracepoint(function = "io_uring_req_failed")]
pub fn strata_kb_uring_failed(ctx: BtfTracePointContext) -> i32 {
    let req: u64 = ctx.arg(1);
    let _ = traced_thread().and_then(|t| on_failed(t, &ReqEvent::from_request(req)?));
    0
}

#[tracepoint]
pub fn strata_k_uring_complete(ctx: TracePointContext) -> u32 {
    let _ = (|| {
        let f = STRATA_KERNEL_FIELDS
            .get(KernelEvent::UringComplete as u32)
            .ok_or(-1)?;
        let w = window(&ctx, f)?;
        on_complete(field(w, f.ctx), field(w, f.req), |_| Ok(field(w, f.res)))
    })();
    0
}

/// Linux 6.3 and later: io_uring_complete(struct io_ring_ctx *ctx, void *req,
/// struct io_uring_cqe *cqe).
#[btf_tracepoint(function = "io_uring_complete")]
pub fn strata_kb_uring_complete(ctx: BtfTracePointContext) -> i32 {
    let (ring, req, cqe): (u64, u64, u64) = (ctx.arg(0), ctx.arg(1), ctx.arg(2));
    let _ = on_complete(ring, req, |cfg| kread_at(cqe, cfg.cqe_res_off));
    0
}

/// Before: io_uring_complete(void *ctx, void *req, u64 user_data, int res, unsigned cflags,
/// u64 extra1, u64 extra2).
#[btf_tracepoint(function = "io_uring_complete")]
pub fn strata_kb_uring_complete_res(ctx: BtfTracePointContext) -> i32 {
    let (ring, req, res): (u64, u64, u64) = (ctx.arg(0), ctx.arg(1), ctx.arg(3));
    let _ = on_complete(ring, req, |_| Ok(res as i32));
    0
}

/// What a request event says of its request: from the trace event's record, or read from the
/// request the BTF raw tracepoint hands over.
struct ReqEvent {
    /// The ring (`struct io_ring_ctx *`).
    ring: u64,
    /// The request (`struct io_kiocb *`).
    req: u64,
    opcode: u8,
    /// The request's flags (their low half: REQ_F_FIXED_FILE is bit 0).
    flags: u32,
}

impl ReqEvent {
    #[inline(always)]
    fn from_record(ctx: &TracePointContext, event: KernelEvent) -> Res<Self> {
        let f = STRATA_KERNEL_FIELDS.get(event as u32).ok_or(-1)?;
        let w = window(ctx, f)?;
        Ok(Self {
            ring: field(w, f.ctx),
            req: field(w, f.req),
            opcode: field(w, f.opcode),
            flags: field(w, f.req_flags),
        })
    }

    /// At offsets from the kernel's BTF.
    #[inline(always)]
    fn from_request(req: u64) -> Res<Self> {
        let cfg = config()?;
        Ok(Self {
            ring: kread_at(req, cfg.uring_ctx_off)?,
            req,
            opcode: kread_at(req, cfg.uring_opcode_off)?,
            flags: kread_at(req, cfg.uring_flags_off)?,
        })
    }
}

/// The current thread (tgid, tid), if it is traced; an error (nothing to do) if not.
#[inline(always)]
pub(crate) fn traced_thread() -> Res<(u32, u32)> {
    let pid_tgid = bpf_get_current_pid_tgid();
    let (tgid, tid) = ((pid_tgid >> 32) as u32, pid_tgid as u32);
    if traced(config()?, tgid) {
        Ok((tgid, tid))
    } else {
        Err(0)
    }
}

/// The 8 bytes at `off` of the request's copy, little-endian.
#[inline(always)]
fn word_at(copy: &[u64; URING_SPAN / 8], off: u16) -> u64 {
    let off = bounded(usize::from(off), URING_SPAN - 8);
    // SAFETY: inside the copy (bounded above); an unaligned read of plain bytes.
    unsafe { core::ptr::read_unaligned(copy.as_ptr().cast::<u8>().add(off).cast::<u64>()) }
}

/// One argument: an integer of `f.size` bytes (1 to 8), taken from the request's copy (or
/// read behind the pointer there), sign-extended when signed; 0 behind a null pointer.
/// Without a branch per size: the submission program reads up to six of these, and older
/// verifiers walk every path.
#[inline(always)]
fn read_field(copy: &[u64; URING_SPAN / 8], f: &UringField) -> Res<u64> {
    // 1 to 8 by arithmetic, not by a comparison: a compared copy is not what the compiler
    // always hands the helper, and 6.1's verifier then sees an unbounded size.
    let n = (usize::from(f.size).wrapping_sub(1) & 7) + 1;
    let buf = if f.flags & URING_FIELD_DEREF != 0 {
        let base = word_at(copy, f.off);
        if base == 0 {
            return Ok(0);
        }
        let mut buf = 0u64;
        // SAFETY: `n` <= 8 bytes into `buf`; the helper checks the kernel address.
        let r = unsafe {
            bpf_probe_read_kernel(
                (&raw mut buf).cast::<c_void>(),
                n as u32,
                (base + u64::from(f.deref)) as *const c_void,
            )
        };
        if r != 0 {
            return Err(r);
        }
        buf
    } else {
        word_at(copy, f.off)
    };
    // The value's top bit to bit 63, then back: zero- or sign-extended (the bytes past the
    // field in the word are shifted out).
    let shift = (64 - 8 * n as u32) & 63;
    let up = buf << shift;
    Ok(if f.flags & URING_FIELD_SIGNED != 0 {
        ((up as i64) >> shift) as u64
    } else {
        up >> shift
    })
}

/// A request event of a traced thread, on an opcode recorded.
struct Traced<'a> {
    tgid: u32,
    tid: u32,
    ev: &'a ReqEvent,
    op: &'static UringOp,
}

/// The event's request, if its opcode is recorded.
#[inline(always)]
fn recorded((tgid, tid): (u32, u32), ev: &ReqEvent) -> Res<Option<Traced<'_>>> {
    let op = STRATA_URING_OPS.get(u32::from(ev.opcode)).ok_or(-1)?;
    if op.probe == 0 {
        return Ok(None);
    }
    let spec = STRATA_FUNC_SPECS.get(op.probe - 1).ok_or(-1)?;
    if spec.flags & SPEC_ENABLED == 0 {
        return Ok(None);
    }
    Ok(Some(Traced { tgid, tid, ev, op }))
}

#[inline(always)]
fn on_submit(thread: (u32, u32), ev: &ReqEvent) -> Res<()> {
    let Some(t) = recorded(thread, ev)? else {
        return Ok(());
    };
    let (op, req, req_flags) = (t.op, ev.req, ev.flags);
    let call_id = next_call_id();
    // The request's fields in one read (each read of kernel memory costs some 50 ns here).
    let copy = STRATA_URING_SCRATCH.get_ptr_mut(0).ok_or(-1)?;
    let span = bounded(usize::from(op.span), URING_SPAN);
    // SAFETY: `span` <= the scratch's size; the helper checks the kernel address.
    let r = unsafe { bpf_probe_read_kernel(copy.cast(), span as u32, req as *const c_void) };
    if r != 0 {
        return Err(r);
    }
    // SAFETY: per-CPU memory; trace-event programs do not nest on a CPU.
    let copy = unsafe { &*copy };
    // An array expression: a zeroed array filled in a loop compiles to a call of the BPF
    // `memset` function, whose loop costs more than the six stores.
    let arg = |i: usize| match &op.fields[i] {
        fl if fl.size != 0 => read_field(copy, fl),
        _ => Ok(0),
    };
    let mut args: [u64; MAX_ARGS] = [arg(0)?, arg(1)?, arg(2)?, arg(3)?, arg(4)?, arg(5)?];
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
    begin_request(&t, call_id, args);
    Ok(())
}

/// A request the kernel refused while preparing it: there is no submission event, and what
/// this one carries names no descriptor. Its record begins here with no argument known (the
/// descriptor's marked as none, not 0: stdin); its completion, which carries the error, ends
/// it as any other.
#[inline(always)]
fn on_failed(thread: (u32, u32), ev: &ReqEvent) -> Res<()> {
    let Some(t) = recorded(thread, ev)? else {
        return Ok(());
    };
    let none = |i: usize| {
        if i == usize::from(t.op.fd_arg) {
            u64::MAX
        } else {
            0
        }
    };
    let args = [none(0), none(1), none(2), none(3), none(4), none(5)];
    begin_request(&t, next_call_id(), args);
    Ok(())
}

/// Sends the record that begins the event's request, beneath the current thread's call in
/// progress, and has its ring's completions kept from now on.
#[inline(always)]
fn begin_request(t: &Traced, call_id: u64, args: [u64; MAX_ARGS]) {
    let (tgid, tid, req, ring) = (t.tgid, t.tid, t.ev.req, t.ev.ring);
    let (parent_id, depth) = match thread::me().current_frame() {
        // SAFETY: the current thread's own stack.
        Some((st, frame)) => unsafe { ((*frame).call_id, (*st).depth.min(MAX_DEPTH as u32)) },
        None => (0, 0),
    };
    // One lookup; an update once per ring.
    // SAFETY: read-only lookup of a plain value.
    if unsafe { STRATA_URING_RINGS.get(ring) }.copied() != Some(tgid) {
        let _ = STRATA_URING_RINGS.insert(ring, tgid, 0);
    }
    // Written in place in the ring buffer, field by field: built on the stack and output,
    // the record is copied once more, and its zeroed fields become a `memset` call.
    let Some(mut entry) = STRATA_EVENTS.reserve::<RequestBegin>(0) else {
        count(Counter::RingbufFull);
        return;
    };
    let b = entry.as_mut_ptr();
    // SAFETY: reserved ring-buffer memory of the record's size; every field is written.
    unsafe {
        let r = addr_of_mut!((*b).rec);
        (*r).kind = RecordKind::RequestBegin as u32;
        (*r).func_id = t.op.probe - 1;
        (*r).call_id = call_id;
        (*r).parent_id = parent_id;
        (*r).ts_begin = bpf_ktime_get_ns();
        (*r).pid = tgid;
        (*r).tid = tid;
        (*r).depth = depth;
        // Volatile: the compiler would merge adjacent zero stores into a `memset` call.
        write_volatile(addr_of_mut!((*r).ts_end), 0);
        write_volatile(addr_of_mut!((*r).flags), 0);
        write_volatile(addr_of_mut!((*r).ret), 0);
        write_volatile(addr_of_mut!((*r).out), 0);
        (*r).args = args;
        (*b).req = req;
    }
    entry.submit(wakeup(core::mem::size_of::<RequestBegin>(), true));
}

/// A completion on ring `ring` of request `req`, whose result `res` reads (given the config).
#[inline(always)]
fn on_complete(ring: u64, req: u64, res: impl FnOnce(&Config) -> Res<i32>) -> Res<()> {
    let cfg = config()?;
    if cfg.stopped != 0 {
        return Ok(());
    }
    // SAFETY: read-only lookup of a plain value.
    let pid = *unsafe { STRATA_URING_RINGS.get(ring) }.ok_or(0)?;
    // Only the opcodes recorded: the ring may carry others (network requests).
    let opcode: u8 = kread_at(req, cfg.uring_opcode_off)?;
    let op = STRATA_URING_OPS.get(u32::from(opcode)).ok_or(-1)?;
    if op.probe == 0 {
        return Ok(());
    }
    // The request's file is assigned when it is issued: a registered file's too.
    let (ino, dev) = if usize::from(op.file_arg) < MAX_ARGS {
        file_ids(cfg, kread_at(req, u32::from(op.file_off)).unwrap_or(0))
    } else {
        (0, 0)
    };
    let res = res(cfg)?;
    // SAFETY: a plain helper call.
    let ts = unsafe { bpf_ktime_get_ns() };
    end_request(&RequestEnd {
        kind: RecordKind::RequestEnd as u32,
        pid,
        req,
        ts_end: ts,
        ret: i64::from(res),
        ino,
        dev,
        flags: 0,
    })
}

/// Sends `end` (an io_uring completion or a Linux AIO event); an error when the ring buffer
/// is full (counted).
#[inline(always)]
pub(crate) fn end_request(end: &RequestEnd) -> Res<()> {
    // In place, as the submission's record.
    let Some(mut entry) = STRATA_EVENTS.reserve::<RequestEnd>(0) else {
        count(Counter::RingbufFull);
        return Err(0);
    };
    let e = entry.as_mut_ptr();
    // SAFETY: reserved ring-buffer memory of the record's size; every field is written.
    unsafe {
        (*e).kind = end.kind;
        (*e).pid = end.pid;
        (*e).req = end.req;
        (*e).ts_end = end.ts_end;
        (*e).ret = end.ret;
        (*e).ino = end.ino;
        (*e).dev = end.dev;
        (*e).flags = end.flags;
    }
    entry.submit(wakeup(core::mem::size_of::<RequestEnd>(), true));
    Ok(())
}
