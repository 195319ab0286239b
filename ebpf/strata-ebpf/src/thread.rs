//! Per-thread call stacks. Where the kernel has BTF they live in task-local storage: the task
//! holds a pointer to its own, so finding it costs no hashing (two hash lookups per traced
//! call fewer), and the kernel frees it with the task. Elsewhere they live in a hash map
//! keyed by tid, removed at thread exit.
use aya_ebpf::{
    bindings::{BPF_F_NO_PREALLOC, BPF_LOCAL_STORAGE_GET_F_CREATE, bpf_map_type, task_struct},
    helpers::{
        bpf_get_current_cgroup_id, bpf_get_current_pid_tgid,
        generated::{bpf_get_current_task_btf, bpf_task_storage_get},
    },
    macros::{btf_map, map},
    maps::{Array, HashMap},
};
use strata_common::{Counter, Frame, MAX_DEPTH, TaskOffsets, ThreadStack};

use crate::{Res, at, count, slot};

/// Set by user space at load time when the kernel has BTF. It lives in read-only data, so
/// the verifier knows its value and skips the branch not taken: a kernel without BTF never
/// checks the task-storage calls, which it could not verify.
#[unsafe(no_mangle)]
static STRATA_USE_TASK_STORAGE: u8 = 0;

/// Set at load with task storage (read-only data: constants to the verifier).
#[unsafe(no_mangle)]
static STRATA_TASK_OFFSETS: TaskOffsets = TaskOffsets {
    pid: 0,
    tgid: 0,
    bpf_storage: 0,
    cgroups: 0,
    css_dfl_cgrp: 0,
    cgroup_kn: 0,
    kn_id: 0,
    files: 0,
    files_fdt: 0,
    fdt_max_fds: 0,
    fdt_fd: 0,
    _pad: 0,
};

/// A task-local storage map definition in the BTF layout loaders read (aya-ebpf has the
/// socket, inode and cgroup kinds, not this one).
#[repr(C)]
pub struct TaskStorage<T> {
    r#type: *const [i32; bpf_map_type::BPF_MAP_TYPE_TASK_STORAGE as usize],
    key: *const i32,
    value: *const T,
    max_entries: *const [i32; 0],
    map_flags: *const [i32; BPF_F_NO_PREALLOC as usize],
}

// SAFETY: placeholder pointers the loader replaces; never dereferenced.
unsafe impl<T> Sync for TaskStorage<T> {}

impl<T> TaskStorage<T> {
    const fn new() -> Self {
        Self {
            r#type: core::ptr::null(),
            key: core::ptr::null(),
            value: core::ptr::null(),
            max_entries: core::ptr::null(),
            map_flags: core::ptr::null(),
        }
    }

    /// `task`'s value; with `create`, a zeroed one is made if it has none.
    #[inline(always)]
    fn get(&self, task: *mut task_struct, create: bool) -> *mut T {
        let flags = if create {
            u64::from(BPF_LOCAL_STORAGE_GET_F_CREATE)
        } else {
            0
        };
        // SAFETY: the helper takes the map definition and a task's BTF pointer.
        unsafe {
            bpf_task_storage_get(
                core::ptr::from_ref(self).cast_mut().cast(),
                task,
                core::ptr::null_mut(),
                flags,
            )
        }
        .cast()
    }
}

#[btf_map]
static STRATA_TASK_STACKS: TaskStorage<ThreadStack> = TaskStorage::new();

/// The stacks where the kernel has no BTF.
#[map]
static STRATA_STACKS: HashMap<u32, ThreadStack> =
    HashMap::with_max_entries(65536, BPF_F_NO_PREALLOC);

/// Never written: the zeroed value a new hash-map stack is created from (too big for the
/// program stack).
#[map]
static STRATA_ZERO_STACK: Array<ThreadStack> = Array::with_max_entries(1, 0);

#[inline(always)]
fn task_storage() -> bool {
    // SAFETY: a read of a plain global (volatile: its value is set at load time).
    unsafe { core::ptr::read_volatile(&STRATA_USE_TASK_STORAGE) != 0 }
}

/// The current thread: its task where stacks are task-local, and its ids.
#[derive(Clone, Copy)]
pub struct Me {
    task: *mut task_struct,
    /// The process (thread group) id in the high 32 bits and the thread's in the low, as
    /// `bpf_get_current_pid_tgid` gives them.
    pub pid_tgid: u64,
}

/// The current thread. Where stacks are task-local its ids are two loads from the task the
/// stack is found by, in place of a helper call (some 10 ns a program run here, more than a
/// third of what a program run on a call of an untraced process costs).
#[inline(always)]
pub fn me() -> Me {
    if task_storage() {
        // SAFETY: the current task, valid for the duration of the program.
        let task = unsafe { bpf_get_current_task_btf() };
        let t = task.cast_const().cast::<u8>();
        let tid: u32 = at(t, set_at_load!(STRATA_TASK_OFFSETS.pid));
        let tgid: u32 = at(t, set_at_load!(STRATA_TASK_OFFSETS.tgid));
        Me {
            task,
            pid_tgid: (u64::from(tgid) << 32) | u64::from(tid),
        }
    } else {
        Me {
            task: core::ptr::null_mut(),
            pid_tgid: bpf_get_current_pid_tgid(),
        }
    }
}

/// `task`'s stack, if it has one, as the task iterator finds the task (task-local stacks
/// only), with the task's ids.
#[inline(always)]
pub fn task_stack(task: *mut task_struct) -> Option<(Me, *mut ThreadStack)> {
    if !task_storage() || task.is_null() {
        return None;
    }
    let t = task.cast_const().cast::<u8>();
    let tid: u32 = at(t, set_at_load!(STRATA_TASK_OFFSETS.pid));
    let tgid: u32 = at(t, set_at_load!(STRATA_TASK_OFFSETS.tgid));
    let me = Me {
        task,
        pid_tgid: (u64::from(tgid) << 32) | u64::from(tid),
    };
    Some((me, me.stack()?))
}

impl Me {
    #[inline(always)]
    pub fn tid(&self) -> u32 {
        self.pid_tgid as u32
    }

    #[inline(always)]
    pub fn tgid(&self) -> u32 {
        (self.pid_tgid >> 32) as u32
    }

    /// The id of the thread's cgroup v2: four loads from its task where the kernel has BTF,
    /// in place of a helper call (which cost some 40 ns a syscall here, in cgroup mode).
    #[inline(always)]
    pub fn cgroup_id(&self) -> u64 {
        let cgroups = set_at_load!(STRATA_TASK_OFFSETS.cgroups);
        if !task_storage() || cgroups == 0 {
            // SAFETY: the helper only reads the current task's cgroup.
            return unsafe { bpf_get_current_cgroup_id() };
        }
        // The verifier knows each pointer's type from the one before (a faulting load reads
        // 0): css_set, cgroup, kernfs_node.
        let set: u64 = at(self.task.cast_const().cast(), cgroups);
        let cgroup: u64 = at(
            set as *const u8,
            set_at_load!(STRATA_TASK_OFFSETS.css_dfl_cgrp),
        );
        let kn: u64 = at(
            cgroup as *const u8,
            set_at_load!(STRATA_TASK_OFFSETS.cgroup_kn),
        );
        at(kn as *const u8, set_at_load!(STRATA_TASK_OFFSETS.kn_id))
    }

    /// The thread's descriptor array (`struct file **`, as a number: the verifier types no
    /// pointer to a pointer) and its length: four loads from its task, in place of four
    /// helper calls (some 35 ns each here, a quarter of what a call that opens a file cost
    /// strata's programs). `None` where the task or the offsets are unknown.
    #[inline(always)]
    pub fn fd_array(&self) -> Option<(u64, u32)> {
        let files = set_at_load!(STRATA_TASK_OFFSETS.files);
        if !task_storage() || files == 0 {
            return None;
        }
        // Each pointer's type from the one before, as in `cgroup_id`.
        let files: u64 = at(self.task.cast_const().cast(), files);
        let fdt: u64 = at(
            files as *const u8,
            set_at_load!(STRATA_TASK_OFFSETS.files_fdt),
        );
        let max: u32 = at(
            fdt as *const u8,
            set_at_load!(STRATA_TASK_OFFSETS.fdt_max_fds),
        );
        let array: u64 = at(fdt as *const u8, set_at_load!(STRATA_TASK_OFFSETS.fdt_fd));
        Some((array, max))
    }

    /// The thread's stack, if it has one.
    #[inline(always)]
    pub fn stack(&self) -> Option<*mut ThreadStack> {
        let p = if task_storage() {
            // A task without local storage of any map (a thread strata does not trace, on
            // most nodes) has none of strata's: known without the helper call.
            let storage = set_at_load!(STRATA_TASK_OFFSETS.bpf_storage);
            if storage != 0 && at::<u64>(self.task.cast_const().cast(), storage) == 0 {
                return None;
            }
            STRATA_TASK_STACKS.get(self.task, false)
        } else {
            STRATA_STACKS.get_ptr_mut(self.tid())?
        };
        (!p.is_null()).then_some(p)
    }

    /// The thread's stack for a call's entry, made empty on its first traced call, or None
    /// when the thread is not traced (`traced` decides, asked only where needed). Where the
    /// filter cannot change its verdict on a running thread (`filter_fixed`), having a stack
    /// means being traced; a thread with no task storage at all has none, known without the
    /// helper. A traced call costs one storage lookup (a helper call), with or without
    /// creation, where deciding and then getting or creating took two.
    #[inline(always)]
    pub fn entry_stack(
        &self,
        filter_fixed: bool,
        traced: impl Fn() -> bool,
    ) -> Res<Option<*mut ThreadStack>> {
        if !task_storage() {
            let known = filter_fixed && self.stack().is_some();
            if !known && !traced() {
                return Ok(None);
            }
            return self.stack_or_new().map(Some);
        }
        let storage = set_at_load!(STRATA_TASK_OFFSETS.bpf_storage);
        let none_yet = storage != 0 && at::<u64>(self.task.cast_const().cast(), storage) == 0;
        let mut p = core::ptr::null_mut();
        if filter_fixed && !none_yet {
            p = STRATA_TASK_STACKS.get(self.task, false);
        }
        // One filter and one creation below, not one per case above: each copy would have
        // the verifier walk the rest of the entry once more.
        if p.is_null() {
            if !traced() {
                return Ok(None);
            }
            p = STRATA_TASK_STACKS.get(self.task, true);
            if p.is_null() {
                count(Counter::StackAllocFailed);
                return Err(-1);
            }
        }
        Ok(Some(p))
    }

    /// The thread's stack, made empty on its first traced call.
    #[inline(always)]
    pub fn stack_or_new(&self) -> Res<*mut ThreadStack> {
        if task_storage() {
            let p = STRATA_TASK_STACKS.get(self.task, true);
            if p.is_null() {
                count(Counter::StackAllocFailed);
                return Err(-1);
            }
            return Ok(p);
        }
        let tid = self.tid();
        if let Some(p) = STRATA_STACKS.get_ptr_mut(tid) {
            return Ok(p);
        }
        let zero = STRATA_ZERO_STACK.get(0).ok_or(-1)?;
        if STRATA_STACKS.insert(tid, zero, 0).is_err() {
            count(Counter::StackAllocFailed);
            return Err(-1);
        }
        STRATA_STACKS.get_ptr_mut(tid).ok_or(-1)
    }

    /// At thread exit (task storage goes with the task by itself).
    #[inline(always)]
    pub fn forget(&self) {
        if !task_storage() {
            let _ = STRATA_STACKS.remove(self.tid());
        }
    }

    /// The thread's stack and the frame of the traced call in progress on it (the deepest
    /// kept, past [`MAX_DEPTH`]), if any.
    #[inline(always)]
    pub fn current_frame(&self) -> Option<(*mut ThreadStack, *const Frame)> {
        current_frame_of(self.stack()?)
    }

    /// The traced call in progress on the thread, 0 if none.
    #[inline(always)]
    pub fn current_call(&self) -> u64 {
        // SAFETY: as in `current_frame_of`.
        self.current_frame()
            .map_or(0, |(_, f)| unsafe { (*f).call_id })
    }
}

/// The frame of the traced call in progress on stack `st`, if any.
#[inline(always)]
fn current_frame_of(st: *mut ThreadStack) -> Option<(*mut ThreadStack, *const Frame)> {
    // SAFETY: the current thread's own stack; programs run with migration disabled.
    unsafe {
        let depth = (*st).depth as usize;
        if depth == 0 {
            return None;
        }
        let d = if depth > MAX_DEPTH { MAX_DEPTH } else { depth };
        Some((st, &raw const (*st).frames[slot(d - 1)]))
    }
}
