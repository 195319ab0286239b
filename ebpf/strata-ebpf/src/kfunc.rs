//! Kernel functions (the VFS layer) through kprobes, on kernels that have them. They share
//! the call machinery of uprobes and syscalls: a frame on the thread's stack at entry, one
//! record at return, nested under the syscall that called them.
//!
//! aya attaches kprobes without a cookie, so the entry finds its function id by address
//! (`bpf_get_func_ip`); the return takes the function of the top frame.
use aya_ebpf::{
    EbpfContext as _,
    helpers::{
        bpf_get_current_task, bpf_get_func_ip, bpf_probe_read_kernel, bpf_probe_read_kernel_buf,
    },
    macros::{kprobe, kretprobe, map},
    maps::HashMap,
    programs::{ProbeContext, RetProbeContext},
};
use strata_common::{
    Config, Counter, FuncSpec, INODE_WORDS, MAX_ARGS, MAX_DEPTH, NO_ARG, SPEC_ENABLED, SPEC_KERNEL,
};

use crate::{
    NO_SITE, Res, STRATA_FUNC_SPECS, config, count, load_args, on_entry, on_return, slot, thread,
};

/// Kernel function address -> probe id.
#[map]
static STRATA_KFUNC_IDS: HashMap<u64, u32> = HashMap::with_max_entries(1024, 0);

#[kprobe]
pub fn strata_kprobe_entry(ctx: ProbeContext) -> u32 {
    match try_kprobe_entry(&ctx) {
        Ok(()) | Err(_) => 0,
    }
}

#[inline(always)]
pub(crate) fn kread<T>(addr: u64) -> Res<T> {
    // SAFETY: the helper checks the kernel address and fails cleanly.
    unsafe { bpf_probe_read_kernel(addr as *const T) }.map_err(|e| e as i64)
}

/// A kernel value at `base + off` (a field of a kernel object, at an offset from BTF).
#[inline(always)]
pub(crate) fn kread_at<T>(base: u64, off: u32) -> Res<T> {
    kread(base + u64::from(off))
}

fn try_kprobe_entry(ctx: &ProbeContext) -> Res<()> {
    // SAFETY: the helper reads the probed address of the current kprobe.
    let ip = unsafe { bpf_get_func_ip(ctx.as_ptr()) };
    // SAFETY: read-only lookup of a plain value.
    let id = *unsafe { STRATA_KFUNC_IDS.get(ip) }.ok_or(-1)?;
    let spec: &FuncSpec = STRATA_FUNC_SPECS.get(id).ok_or(-1)?;
    if spec.flags & SPEC_ENABLED == 0 {
        return Err(-1);
    }
    // A kernel call at the depth limit is not pushed (on_entry would only count it), so
    // the return, which goes by the top frame, never pops someone else's.
    // SAFETY: read-only lookup; the stack belongs to the current thread.
    if thread::me()
        .stack()
        .is_some_and(|st| unsafe { (*st).depth } as usize >= MAX_DEPTH)
    {
        count(Counter::StackOverflow);
        return Ok(());
    }
    let cfg = config()?;
    let mut args = load_args(spec.nargs, |i| ctx.arg(i).unwrap_or(0));
    for (i, a) in args.iter_mut().enumerate() {
        if spec.kderef_mask & (1 << i) != 0 {
            *a = if *a == 0 {
                0
            } else {
                kread::<u64>(*a).unwrap_or(0)
            };
        }
    }
    let k = spec.kfile_arg as usize;
    if spec.kfile_arg != NO_ARG && k < MAX_ARGS {
        let (ino, dev) = file_ids(cfg, args[k]);
        args[k] = ino;
        let d = spec.nargs as usize;
        if d < MAX_ARGS {
            args[d] = u64::from(dev);
        }
    }
    // Kernel functions' arguments are kernel values: no user-space captures.
    on_entry::<0>(spec, &mut args, NO_SITE).map(drop)
}

/// The inode number of a kernel `struct file *` and its file system's device (0s where a
/// pointer is null or unreadable): a `kfile` argument.
#[inline(always)]
pub(crate) fn file_ids(cfg: &Config, file: u64) -> (u64, u32) {
    inode_ids(cfg, file_inode(cfg, file))
}

/// The `struct inode *` of a kernel `struct file *` (0 when null or unreadable).
#[inline(always)]
fn file_inode(cfg: &Config, file: u64) -> u64 {
    if file == 0 {
        return 0;
    }
    kread(file + u64::from(cfg.file_inode_off)).unwrap_or(0)
}

/// The inode number of a `struct inode *` and its file system's device (0s where unknown).
#[inline(always)]
fn inode_ids(cfg: &Config, inode: u64) -> (u64, u32) {
    if inode == 0 {
        return (0, 0);
    }
    let sb: u64 = kread(inode + u64::from(cfg.inode_sb_off)).unwrap_or(0);
    let dev: u32 = if sb == 0 {
        0
    } else {
        kread(sb + u64::from(cfg.sb_dev_off)).unwrap_or(0)
    };
    (
        kread(inode + u64::from(cfg.inode_ino_off)).unwrap_or(0),
        dev,
    )
}

/// The kernel `struct file *` behind descriptor `fd` of the current task `me` (0 when
/// unknown): its files table, that table's current array, the entry.
#[inline(always)]
pub(crate) fn fd_file(cfg: &Config, me: &thread::Me, fd: i64) -> u64 {
    if cfg.task_files_off == 0
        || cfg.file_inode_off == 0
        || !(0..=i64::from(i32::MAX)).contains(&fd)
    {
        return 0;
    }
    let table = || -> Res<(u64, u32)> {
        if let Some(table) = me.fd_array() {
            return Ok(table);
        }
        // SAFETY: the helper returns the current task; reads below go through kread.
        let task = unsafe { bpf_get_current_task() };
        let files: u64 = kread(task + u64::from(cfg.task_files_off))?;
        let fdt: u64 = kread(files + u64::from(cfg.files_fdt_off))?;
        let max: u32 = kread(fdt + u64::from(cfg.fdt_max_fds_off))?;
        Ok((kread(fdt + u64::from(cfg.fdt_fd_off))?, max))
    };
    match table() {
        Ok((array, max)) if array != 0 && (fd as u64) < u64::from(max) => {
            kread(array + 8 * fd as u64).unwrap_or(0)
        }
        _ => 0,
    }
}

/// The inode number of the file behind descriptor `fd`, its file system's device with the
/// inode's mode above it (see `FuncSpec::fd_file_arg`), and the `struct file *`; 0s when
/// unknown.
#[inline(always)]
pub(crate) fn fd_identity(cfg: &Config, me: &thread::Me, fd: i64) -> (u64, u64, u64) {
    let file = fd_file(cfg, me, fd);
    let inode = file_inode(cfg, file);
    if inode == 0 {
        return (0, 0, 0);
    }
    let (ino, sb, mode) = inode_fields(cfg, inode);
    if ino == 0 {
        return (0, 0, 0);
    }
    let dev: u32 = if sb == 0 {
        0
    } else {
        kread(sb + u64::from(cfg.sb_dev_off)).unwrap_or(0)
    };
    (ino, u64::from(dev) | (u64::from(mode) << 32), file)
}

/// An inode's number, superblock and mode (0s where unreadable): with one helper read of
/// the words they lie in where user space found them close ([`Config::inode_words`]).
#[inline(always)]
fn inode_fields(cfg: &Config, inode: u64) -> (u64, u64, u16) {
    if cfg.inode_words == 0 {
        return (
            kread(inode + u64::from(cfg.inode_ino_off)).unwrap_or(0),
            kread(inode + u64::from(cfg.inode_sb_off)).unwrap_or(0),
            kread(inode + u64::from(cfg.inode_mode_off)).unwrap_or(0),
        );
    }
    let lo = cfg.inode_words_off;
    // Zeroed in full, the words past the read too: the verifier lets a program read its
    // stack at a variable offset only where every byte it may reach was written.
    let mut words = core::mem::MaybeUninit::uninit();
    let words = crate::zero_words::<INODE_WORDS>(&mut words);
    // Up to the last of the three: a helper read costs more the more it copies.
    let n = crate::bounded(cfg.inode_words as usize, INODE_WORDS);
    // SAFETY: a byte view of a local array; the helper checks the kernel address.
    let read = unsafe {
        let dst = core::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), 8 * n);
        bpf_probe_read_kernel_buf((inode + u64::from(lo)) as *const u8, dst)
    };
    if read.is_err() {
        return (0, 0, 0);
    }
    // The field at byte `off`, in the low bits (little-endian; user space checked that each
    // lies within one word).
    let field = |off: u32| {
        let rel = off.wrapping_sub(lo);
        words[(rel / 8) as usize % INODE_WORDS] >> ((rel % 8) * 8)
    };
    (
        field(cfg.inode_ino_off),
        field(cfg.inode_sb_off),
        field(cfg.inode_mode_off) as u16,
    )
}

#[kretprobe]
pub fn strata_kprobe_return(ctx: RetProbeContext) -> u32 {
    match try_kprobe_return(&ctx) {
        Ok(()) | Err(_) => 0,
    }
}

fn try_kprobe_return(ctx: &RetProbeContext) -> Res<()> {
    // SAFETY: read-only lookup; the stack belongs to the current thread.
    let st = unsafe { &*thread::me().stack().ok_or(0)? };
    let depth = st.depth as usize;
    if depth == 0 || depth > MAX_DEPTH {
        return Ok(());
    }
    let func_id = st.frames[slot(depth - 1)].func_id;
    let spec: &FuncSpec = STRATA_FUNC_SPECS.get(func_id).ok_or(-1)?;
    // The top frame is a kernel function's (a skipped entry leaves the caller's on top).
    if spec.flags & SPEC_KERNEL == 0 {
        return Ok(());
    }
    on_return(spec, ctx.ret(), false)
}
