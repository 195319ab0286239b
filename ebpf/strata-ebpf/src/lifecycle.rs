//! Process lifecycle: new tasks, exec and exit, which keep the traced set and tell user space
//! about processes. Each event has a program on its BTF raw tracepoint (the default: its
//! detach does not wait on the kernel's trace-event lock, and it reads only what it uses)
//! and one on its trace event (kernels without BTF), sharing one body.
use aya_ebpf::{
    EbpfContext as _,
    bindings::BPF_RB_FORCE_WAKEUP,
    helpers::{
        bpf_get_current_comm, bpf_get_current_pid_tgid, bpf_get_current_task, bpf_ktime_get_ns,
        bpf_probe_read_kernel, bpf_probe_read_kernel_str_bytes, bpf_probe_read_user_buf,
    },
    macros::{btf_tracepoint, map, tracepoint},
    maps::PerCpuArray,
    programs::{BtfTracePointContext, TracePointContext},
};
use strata_common::{
    CLONE_THREAD, Config, Counter, IMAGE_ARGS, IMAGE_ARGS_PARTS, IMAGE_ENV, IMAGE_ENV_PARTS,
    IMAGE_PART, ImageHeader, ImageRecord, ProcEvent, ProcRecord, RecordKind, RootId, STOP_FROZEN,
};

use crate::{
    Res, STRATA_EVENTS, STRATA_TRACED, STRATA_TYPES_SENT, bounded, config, count,
    kfunc::kread_at as kread, mark_traced, masked, output_prefix, target_job, thread, user_traced,
};

/// Where a part of a new image's arguments or environment is assembled.
#[map]
static STRATA_IMAGE_SCRATCH: PerCpuArray<ImageRecord> = PerCpuArray::with_max_entries(1, 0);

/// The root the current task sees its files from: a `chroot`, `pivot_root`, `unshare` or
/// `setns` changes it. User space compares it at each fork and exec, so that a process it
/// only gets to after its end is not taken to see its parent's files.
#[inline(always)]
fn root_id(cfg: &Config) -> RootId {
    if cfg.task_fs_off == 0 {
        return RootId::default();
    }
    let read = || -> Res<RootId> {
        // SAFETY: the current task, always valid.
        let task = unsafe { bpf_get_current_task() };
        let fs: u64 = kread(task, cfg.task_fs_off)?;
        let dentry: u64 = kread(fs, cfg.fs_root_dentry_off)?;
        let inode: u64 = kread(dentry, cfg.dentry_inode_off)?;
        let sb: u64 = kread(dentry, cfg.dentry_sb_off)?;
        let ns: u64 = kread(task, cfg.task_nsproxy_off)?;
        let mnt_ns: u64 = kread(ns, cfg.nsproxy_mnt_ns_off)?;
        Ok(RootId {
            ino: kread(inode, cfg.inode_ino_off)?,
            dev: kread(sb, cfg.sb_dev_off)?,
            mnt_ns: kread(mnt_ns, cfg.mnt_ns_inum_off)?,
        })
    };
    read().unwrap_or_default()
}

/// Sends a lifecycle record; `filename` points to a kernel string (exec's path).
#[inline(always)]
fn emit_proc(
    event: ProcEvent,
    pid: u32,
    tid: u32,
    other: u32,
    flags: u32,
    filename: Option<*const u8>,
    root: RootId,
    job: u64,
) {
    let Some(mut entry) = STRATA_EVENTS.reserve::<ProcRecord>(0) else {
        count(Counter::RingbufFull);
        return;
    };
    let rec = entry.as_mut_ptr();
    // SAFETY: reserved ring-buffer memory of the right size; every field is written.
    unsafe {
        (*rec).kind = RecordKind::Proc as u32;
        (*rec).event = event as u32;
        (*rec).ts = bpf_ktime_get_ns();
        (*rec).pid = pid;
        (*rec).tid = tid;
        (*rec).other = other;
        (*rec).flags = flags;
        (*rec).comm = bpf_get_current_comm().unwrap_or([0; 16]);
        (*rec).root = root;
        (*rec).job = job;
        (*rec).filename[0] = 0;
        if let Some(src) = filename {
            let _ = bpf_probe_read_kernel_str_bytes(src, &mut (*rec).filename);
        }
    }
    // User space reads /proc at an exec while the process still exists: woken at once.
    // A fork or an exit needs no /proc, and a forced wakeup costs this CPU an interrupt and
    // strata a pass of its loop: a shell loop's short processes paid two more per process.
    let flags = if matches!(event, ProcEvent::Exec) {
        u64::from(BPF_RB_FORCE_WAKEUP)
    } else {
        crate::wakeup(core::mem::size_of::<ProcRecord>(), true)
    };
    entry.submit(flags);
}

// ---- task_newtask ----

#[btf_tracepoint(function = "task_newtask")]
pub fn strata_kb_task_newtask(ctx: BtfTracePointContext) -> i32 {
    // TP_PROTO(struct task_struct *task, u64 clone_flags)
    let (task, clone_flags): (u64, u64) = (ctx.arg(0), ctx.arg(1));
    let _ = config().and_then(|cfg| {
        let child: i32 = kread(task, cfg.task_pid_off)?;
        on_newtask(cfg, child, clone_flags)
    });
    0
}

#[tracepoint]
pub fn strata_task_newtask(ctx: TracePointContext) -> u32 {
    let _ = config().and_then(|cfg| {
        // SAFETY: offsets come from this kernel's task_newtask format file.
        let child: i32 = unsafe { ctx.read_at(cfg.newtask_pid_off as usize) }.map_err(i64::from)?;
        let flags: u64 =
            unsafe { ctx.read_at(cfg.newtask_flags_off as usize) }.map_err(i64::from)?;
        on_newtask(cfg, child, flags)
    });
    0
}

#[inline(always)]
fn on_newtask(cfg: &Config, child: i32, clone_flags: u64) -> Res<()> {
    let pid_tgid = bpf_get_current_pid_tgid();
    let tgid = (pid_tgid >> 32) as u32;
    // Children of a target are targets whatever their user (a root launcher starts a
    // user's ranks); only traced processes' events are recorded.
    let Some(job) = target_job(cfg, tgid) else {
        return Ok(());
    };
    // A new process (not a thread) of a traced process is traced from its first instruction.
    // (In cgroup mode the child is in its parent's cgroup: the filter already sees it.)
    if clone_flags & CLONE_THREAD == 0 && cfg.trace_all == 0 && cfg.cgroup_mode == 0 {
        mark_traced(child as u32);
        let _ = STRATA_TRACED.insert(child as u32, 1, 0);
    }
    if !user_traced(cfg) {
        return Ok(());
    }
    emit_proc(
        ProcEvent::NewTask,
        tgid,
        pid_tgid as u32,
        child as u32,
        clone_flags as u32,
        None,
        // A thread shares its process's root: user space looks only at new processes'.
        if clone_flags & CLONE_THREAD == 0 {
            root_id(cfg)
        } else {
            RootId::default()
        },
        job,
    );
    Ok(())
}

// ---- sched_process_exec ----

#[btf_tracepoint(function = "sched_process_exec")]
pub fn strata_kb_process_exec(ctx: BtfTracePointContext) -> i32 {
    // TP_PROTO(struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
    let (old, bprm): (u64, u64) = (ctx.arg(1), ctx.arg(2));
    let _ = config().and_then(|cfg| {
        // The interpreter of a script, as /proc/<pid>/exe names it; else the name given.
        let filename: u64 = kread(bprm, cfg.bprm_interp_off)?;
        on_exec(cfg, old as i32, Some(filename as *const u8))
    });
    0
}

#[tracepoint]
pub fn strata_process_exec(ctx: TracePointContext) -> u32 {
    let _ = config().and_then(|cfg| {
        // SAFETY: offsets from this kernel's sched_process_exec format file.
        let old: i32 = unsafe { ctx.read_at(cfg.exec_old_pid_off as usize) }.unwrap_or(0);
        let loc: u32 = unsafe { ctx.read_at(cfg.exec_filename_off as usize) }.unwrap_or(0);
        // __data_loc: offset of the string in the record (low 16 bits), length (high 16).
        let filename = (loc != 0).then(|| {
            // SAFETY: an address inside the record; the helper checks what it reads.
            unsafe { ctx.as_ptr().cast::<u8>().add((loc & 0xffff) as usize) }.cast_const()
        });
        on_exec(cfg, old, filename)
    });
    0
}

#[inline(always)]
fn on_exec(cfg: &Config, old: i32, filename: Option<*const u8>) -> Res<()> {
    let me = thread::me();
    let tgid = me.tgid();
    // A new image: its predefined types are to be sent again.
    let _ = STRATA_TYPES_SENT.remove(tgid);
    let Some(job) = target_job(cfg, tgid).filter(|_| user_traced(cfg)) else {
        return Ok(());
    };
    // ... and the streams and GOT slots the thread remembers are the old image's.
    if let Some(st) = me.stack() {
        // SAFETY: this thread's stack.
        unsafe {
            (*st).last_stream = 0;
            (*st).stream_slot = 0;
        }
    }
    let root = root_id(cfg);
    emit_proc(
        ProcEvent::Exec,
        tgid,
        me.tid(),
        old as u32,
        0,
        filename,
        root,
        job,
    );
    if cfg.task_mm_off != 0 {
        send_image(cfg, tgid);
    }
    Ok(())
}

/// Sends the new image's arguments and environment, which exec has just copied to the top
/// of its stack (resident), in parts of at most `IMAGE_PART` bytes.
#[inline(always)]
fn send_image(cfg: &Config, tgid: u32) {
    // SAFETY: kernel reads through the helper, at offsets from this kernel's BTF.
    let mm = unsafe {
        let task = bpf_get_current_task();
        bpf_probe_read_kernel((task + u64::from(cfg.task_mm_off)) as *const u64)
    };
    let Ok(mm) = mm else {
        return;
    };
    let field = |off: u32| kread::<u64>(mm, off).unwrap_or(0);
    let (args, args_end) = (field(cfg.mm_arg_start_off), field(cfg.mm_arg_end_off));
    send_area(tgid, IMAGE_ARGS, args, args_end, IMAGE_ARGS_PARTS);
    let (env, env_end) = (field(cfg.mm_env_start_off), field(cfg.mm_env_end_off));
    send_area(tgid, IMAGE_ENV, env, env_end, IMAGE_ENV_PARTS);
}

#[inline(always)]
fn send_area(tgid: u32, what: u32, start: u64, end: u64, parts: usize) {
    let total = end.saturating_sub(start).min(u64::from(u32::MAX));
    // What is sent, bounded for the verifier.
    let sent = bounded(total as usize, IMAGE_ENV_PARTS * IMAGE_PART) as u64;
    for part in 0..IMAGE_ENV_PARTS {
        let offset = (part * IMAGE_PART) as u64;
        if part >= parts || offset >= sent {
            break;
        }
        let Some(rec) = STRATA_IMAGE_SCRATCH.get_ptr_mut(0) else {
            return;
        };
        let len = masked((sent - offset).min(IMAGE_PART as u64) as usize, IMAGE_PART);
        // SAFETY: per-CPU scratch, used only for the duration of this program; the helper
        // tolerates bad user pointers.
        let len = unsafe {
            let data = &mut (*rec).data;
            let dst = &mut data[..len];
            if bpf_probe_read_user_buf((start + offset) as *const u8, dst).is_err() {
                return;
            }
            (*rec).hdr = ImageHeader {
                kind: RecordKind::Image as u32,
                pid: tgid,
                what,
                offset: offset as u32,
                len: len as u32,
                total: total as u32,
            };
            len
        };
        let used = core::mem::size_of::<ImageHeader>() + bounded(len, IMAGE_PART);
        // SAFETY: `used` <= size_of::<ImageRecord>().
        if !unsafe { output_prefix(rec, used) } {
            return;
        }
    }
}

// ---- the stacks left as strata stops ----

/// `struct bpf_iter__task`: the task iterator's context (`task` null after the last).
#[repr(C)]
struct TaskIter {
    meta: *mut core::ffi::c_void,
    task: *mut aya_ebpf::bindings::task_struct,
}

/// Run once by user space as strata stops ([`STOP_FROZEN`]): the calls each thread still has
/// in progress (a rank waiting in a collective or polling in one, an fgets blocked on a pipe),
/// and the syscall it is in, are sent as unfinished, ending at the stop, and the stack is
/// emptied. No program changes a stack after that stop, so the threads on a CPU are read as
/// safely as the others.
#[unsafe(no_mangle)]
#[unsafe(link_section = "iter/task")]
pub fn strata_iter_stacks(ctx: *mut core::ffi::c_void) -> i32 {
    // SAFETY: the iterator's context.
    let task = unsafe { (*ctx.cast::<TaskIter>()).task };
    let Ok(cfg) = config() else {
        return 0;
    };
    if cfg.stopped != STOP_FROZEN {
        return 0;
    }
    if let Some((me, st)) = thread::task_stack(task) {
        // SAFETY: a thread's stack, which only its exit may reach meanwhile.
        unsafe { crate::send_left(st, me.pid_tgid, true, cfg.stopped_ns) };
    }
    0
}

// ---- sched_process_exit ----

/// Linux 6.9 and later: TP_PROTO(struct task_struct *p, bool group_dead).
#[btf_tracepoint(function = "sched_process_exit")]
pub fn strata_kb_process_exit_group(ctx: BtfTracePointContext) -> i32 {
    let group_dead: u64 = ctx.arg(1);
    let _ = on_exit(Some(group_dead & 0xff != 0));
    0
}

/// Before Linux 6.9: TP_PROTO(struct task_struct *p); the leader's exit stands for the
/// group's.
#[btf_tracepoint(function = "sched_process_exit")]
pub fn strata_kb_process_exit(_ctx: BtfTracePointContext) -> i32 {
    let _ = on_exit(None);
    0
}

#[tracepoint]
pub fn strata_process_exit(ctx: TracePointContext) -> u32 {
    let group_dead = config().ok().and_then(|cfg| {
        // Absent before Linux 6.9 (offset 0).
        (cfg.exit_group_dead_off != 0).then(|| {
            // SAFETY: offset from this kernel's sched_process_exit format file.
            unsafe { ctx.read_at::<u8>(cfg.exit_group_dead_off as usize) }.unwrap_or(0) != 0
        })
    });
    let _ = on_exit(group_dead);
    0
}

/// `group_dead`: whether the process's last thread is exiting, where the kernel says.
#[inline(always)]
fn on_exit(group_dead: Option<bool>) -> Res<()> {
    let cfg = config()?;
    let me = thread::me();
    let (tgid, tid) = (me.tgid(), me.tid());
    if let Some(st) = me.stack() {
        // Page events in its exit (files closed) or in a call whose return never came, then
        // that call. After a frozen stop, what the stack holds was in progress at the stop,
        // the syscall at the top as well: no return has been taken off it since.
        let (syscall, ts_end) = if cfg.stopped == STOP_FROZEN {
            (true, cfg.stopped_ns)
        } else {
            // SAFETY: a helper without arguments.
            (false, unsafe { bpf_ktime_get_ns() })
        };
        // SAFETY: the current thread's stack, which only the task iterator may reach
        // meanwhile.
        unsafe { crate::send_left(st, me.pid_tgid, syscall, ts_end) };
    }
    // Unconditionally: the thread may have been traced before its cgroup stopped being.
    me.forget();
    let Some(job) = target_job(cfg, tgid) else {
        return Ok(());
    };
    if group_dead.unwrap_or(tid == tgid) {
        let _ = STRATA_TRACED.remove(tgid);
        let _ = STRATA_TYPES_SENT.remove(tgid);
        if !user_traced(cfg) {
            return Ok(());
        }
        emit_proc(
            ProcEvent::Exit,
            tgid,
            tid,
            tid,
            1,
            None,
            RootId::default(),
            job,
        );
    }
    Ok(())
}
