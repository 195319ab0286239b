//! Linux AIO requests as calls, as the io_uring ones ([`crate::uring`]): each `iocb` a traced
//! thread hands to io_submit becomes a [`RequestBegin`], each event io_getevents or
//! io_pgetevents gives back a [`RequestEnd`]; user space joins them by the `iocb`'s address in
//! the process.
//!
//! The kernel has no tracepoint inside AIO, so the work is done at the syscalls: by the
//! syscall programs on the BTF raw tracepoints where those are in use (the syscall's slot says
//! so: [`SPEC_AIO_SUBMIT`] and the like), else by the programs here on the syscalls' own trace
//! events. Either reads the process's arrays: at io_submit's entry the `iocb` pointers and the
//! `iocb`s, at io_getevents' return the events written (where to, the entry said). Which
//! probe a request is (by its opcode) and its arguments, user space takes from the `iocb`'s
//! words ([`AIO_IOCB_OFF`]); which io_submit call it belongs to, and whether the kernel took
//! it, from that call's record: this entry program may run before or after the syscall
//! layer's.
use core::ptr::{addr_of_mut, write_volatile};

use aya_ebpf::{
    cty::c_void,
    helpers::{bpf_get_current_pid_tgid, bpf_ktime_get_ns, bpf_probe_read_user, generated},
    macros::{map, tracepoint},
    maps::LruHashMap,
    programs::TracePointContext,
};
use strata_common::{
    AIO_BATCH, AIO_IOCB_OFF, Counter, FUNC_AIO, KERNEL_WINDOW, KernelEvent, KernelFields, MAX_ARGS,
    MAX_DEPTH, REQUEST_AIO, RecordKind, RequestBegin, RequestEnd, SPEC_AIO_SUBMIT,
};

use crate::{
    Res, STRATA_EVENTS, config, count, count_n,
    kernel::{STRATA_KERNEL_FIELDS, field, window},
    next_call_id, thread,
    uring::{end_request, traced_thread},
    wakeup,
};

type Window = [u64; KERNEL_WINDOW / 8];

/// Thread -> the events array its io_getevents in progress fills. LRU: a thread that ended
/// inside the call leaves its slot.
#[map]
static STRATA_AIO_WAITS: LruHashMap<u32, u64> = LruHashMap::with_max_entries(16384, 0);

/// sys_enter_io_submit(ctx_id, nr, iocbpp).
#[tracepoint]
pub fn strata_k_aio_submit(ctx: TracePointContext) -> u32 {
    let _ = try_submit(&ctx);
    0
}

/// sys_enter_io_getevents(ctx_id, min_nr, nr, events, timeout).
#[tracepoint]
pub fn strata_k_aio_wait(ctx: TracePointContext) -> u32 {
    let _ = try_wait(&ctx, KernelEvent::AioWait);
    0
}

/// sys_exit_io_getevents: `ret` events written.
#[tracepoint]
pub fn strata_k_aio_reaped(ctx: TracePointContext) -> u32 {
    let _ = try_reaped(&ctx, KernelEvent::AioReaped);
    0
}

/// sys_enter_io_pgetevents(ctx_id, min_nr, nr, events, timeout, usig).
#[tracepoint]
pub fn strata_k_aio_pwait(ctx: TracePointContext) -> u32 {
    let _ = try_wait(&ctx, KernelEvent::AioPwait);
    0
}

/// sys_exit_io_pgetevents: `ret` events written.
#[tracepoint]
pub fn strata_k_aio_preaped(ctx: TracePointContext) -> u32 {
    let _ = try_reaped(&ctx, KernelEvent::AioPreaped);
    0
}

/// The syscall trace event's record, copied, and where `event`'s fields lie in it.
#[inline(always)]
fn fields_of(
    ctx: &TracePointContext,
    event: KernelEvent,
) -> Res<(&'static Window, &'static KernelFields)> {
    let f = STRATA_KERNEL_FIELDS.get(event as u32).ok_or(-1)?;
    Ok((window(ctx, f)?, f))
}

#[inline(always)]
fn try_submit(ctx: &TracePointContext) -> Res<()> {
    let (tgid, tid) = traced_thread()?;
    let (w, f) = fields_of(ctx, KernelEvent::AioSubmit)?;
    submit(tgid, tid, field(w, f.aio_nr), field(w, f.aio_array))
}

/// The `aio` layer's work at the entry of a syscall whose slot has [`SPEC_AIO_SUBMIT`] or
/// [`SPEC_AIO_WAIT`] (`flags`), from the syscall program on `sys_enter`; `arg(i)` is the
/// syscall's argument `i`.
#[inline(always)]
pub(crate) fn syscall_entered(flags: u16, arg: impl Fn(usize) -> u64) -> Res<()> {
    let (tgid, tid) = traced_thread()?;
    if flags & SPEC_AIO_SUBMIT != 0 {
        // io_submit(ctx_id, nr, iocbpp)
        submit(tgid, tid, arg(1) as i64, arg(2))
    } else {
        // io_getevents / io_pgetevents(ctx_id, min_nr, nr, events, ...)
        wait(tid, arg(3))
    }
}

/// The `aio` layer's work at the return of a syscall whose slot has [`SPEC_AIO_REAP`], from
/// the syscall program on `sys_exit`.
#[inline(always)]
pub(crate) fn syscall_returned(ret: i64) -> Res<()> {
    reaped(|| Ok(ret))
}

/// io_submit's `nr` iocbs at `iocbpp`, each a [`RequestBegin`].
#[inline(always)]
fn submit(tgid: u32, tid: u32, nr: i64, iocbpp: u64) -> Res<()> {
    if nr <= 0 || iocbpp == 0 {
        return Ok(());
    }
    if nr > i64::from(AIO_BATCH) {
        count_n(Counter::AioUnread, (nr - i64::from(AIO_BATCH)) as u64);
    }
    let (parent_id, depth) = match thread::me().current_frame() {
        // SAFETY: the current thread's own stack.
        Some((st, frame)) => unsafe { ((*frame).call_id, (*st).depth.min(MAX_DEPTH as u32)) },
        None => (0, 0),
    };
    let mut c = Submit {
        iocbpp,
        parent_id,
        // SAFETY: a plain helper call.
        ts: unsafe { bpf_ktime_get_ns() },
        tgid,
        tid,
        depth,
        _pad: 0,
    };
    let n = nr.min(i64::from(AIO_BATCH)) as u32;
    // SAFETY: the callback is a static function of this object; `c` outlives the loop.
    unsafe {
        generated::bpf_loop(
            n,
            submit_one as *mut c_void,
            (&raw mut c).cast::<c_void>(),
            0,
        )
    };
    Ok(())
}

/// What each iteration of io_submit's loop needs.
#[repr(C)]
struct Submit {
    iocbpp: u64,
    parent_id: u64,
    ts: u64,
    tgid: u32,
    tid: u32,
    depth: u32,
    _pad: u32,
}

/// `bpf_loop`'s callback for the `i`th iocb: the verifier checks it once, whatever the count
/// (an unrolled loop of 64 took it 25,643 instructions and 19 ms). Returns 1 to stop.
#[inline(never)]
extern "C" fn submit_one(i: u64, c: *mut c_void) -> i64 {
    // SAFETY: `c` is the caller's `Submit`, on its stack.
    let c = unsafe { &*c.cast::<Submit>() };
    // SAFETY: the helper checks the user address.
    let Ok(iocb) = (unsafe { bpf_probe_read_user((c.iocbpp + 8 * i) as *const u64) }) else {
        return 1;
    };
    // A full ring buffer is counted; the next record may fit.
    let Some(mut entry) = STRATA_EVENTS.reserve::<RequestBegin>(0) else {
        count(Counter::RingbufFull);
        return 0;
    };
    let b = entry.as_mut_ptr();
    // SAFETY: reserved ring-buffer memory of the record's size: the iocb's words go straight
    // into the arguments (zeroed by the helper if unreadable, which `flags` says), then
    // every other field is written.
    unsafe {
        let r = addr_of_mut!((*b).rec);
        let src = (iocb + AIO_IOCB_OFF) as *const c_void;
        let n = (MAX_ARGS * 8) as u32;
        let failed = generated::bpf_probe_read_user(addr_of_mut!((*r).args).cast(), n, src);
        (*r).kind = RecordKind::RequestBegin as u32;
        (*r).func_id = FUNC_AIO;
        (*r).call_id = next_call_id();
        (*r).parent_id = c.parent_id;
        (*r).ts_begin = c.ts;
        (*r).pid = c.tgid;
        (*r).tid = c.tid;
        (*r).depth = c.depth;
        (*r).flags = failed as u32;
        // Volatile: the compiler would merge adjacent zero stores into a `memset` call.
        write_volatile(addr_of_mut!((*r).ts_end), 0);
        write_volatile(addr_of_mut!((*r).ret), 0);
        write_volatile(addr_of_mut!((*r).out), 0);
        (*b).req = iocb;
    }
    entry.submit(wakeup(core::mem::size_of::<RequestBegin>(), true));
    0
}

#[inline(always)]
fn try_wait(ctx: &TracePointContext, event: KernelEvent) -> Res<()> {
    let (_, tid) = traced_thread()?;
    let (w, f) = fields_of(ctx, event)?;
    wait(tid, field(w, f.aio_array))
}

/// Thread `tid` waits for events, to be written at `events`.
#[inline(always)]
fn wait(tid: u32, events: u64) -> Res<()> {
    if events != 0 {
        STRATA_AIO_WAITS.insert(&tid, &events, 0)?;
    }
    Ok(())
}

#[inline(always)]
fn try_reaped(ctx: &TracePointContext, event: KernelEvent) -> Res<()> {
    reaped(|| {
        let (w, f) = fields_of(ctx, event)?;
        Ok(field(w, f.ret))
    })
}

/// The current thread's wait returned `ret()` events: each ends its request.
#[inline(always)]
fn reaped(ret: impl FnOnce() -> Res<i64>) -> Res<()> {
    let pid_tgid = bpf_get_current_pid_tgid();
    let (tgid, tid) = ((pid_tgid >> 32) as u32, pid_tgid as u32);
    // Only threads whose entry was seen (traced then): no filter lookup here.
    // SAFETY: read-only lookup of a plain value.
    let events = *unsafe { STRATA_AIO_WAITS.get(&tid) }.ok_or(0)?;
    let _ = STRATA_AIO_WAITS.remove(&tid);
    if config()?.stopped != 0 {
        return Ok(());
    }
    let ret = ret()?;
    if ret <= 0 {
        return Ok(());
    }
    if ret > i64::from(AIO_BATCH) {
        count_n(Counter::AioUnread, (ret - i64::from(AIO_BATCH)) as u64);
    }
    let mut c = Reaped {
        events,
        // SAFETY: a plain helper call.
        ts: unsafe { bpf_ktime_get_ns() },
        tgid,
        _pad: 0,
    };
    let n = ret.min(i64::from(AIO_BATCH)) as u32;
    // SAFETY: the callback is a static function of this object; `c` outlives the loop.
    unsafe { generated::bpf_loop(n, reaped_one as *mut c_void, (&raw mut c).cast(), 0) };
    Ok(())
}

/// What each iteration of io_getevents' loop needs.
#[repr(C)]
struct Reaped {
    events: u64,
    ts: u64,
    tgid: u32,
    _pad: u32,
}

/// `bpf_loop`'s callback for the `i`th event. Returns 1 to stop.
#[inline(never)]
extern "C" fn reaped_one(i: u64, c: *mut c_void) -> i64 {
    // SAFETY: `c` is the caller's `Reaped`, on its stack.
    let c = unsafe { &*c.cast::<Reaped>() };
    // struct io_event { u64 data; u64 obj; s64 res; s64 res2; }: obj and res.
    // SAFETY: the helper checks the user address.
    let Ok(ev) = (unsafe { bpf_probe_read_user((c.events + 32 * i + 8) as *const [u64; 2]) })
    else {
        return 1;
    };
    // A full ring buffer is counted there; the next event may fit.
    let _ = end_request(&RequestEnd {
        kind: RecordKind::RequestEnd as u32,
        pid: c.tgid,
        req: ev[0],
        ts_end: c.ts,
        ret: ev[1] as i64,
        ino: 0,
        dev: 0,
        flags: REQUEST_AIO,
    });
    0
}
