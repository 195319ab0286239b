//! Per-thread call stacks. Where the kernel has BTF they live in task-local storage: the task
//! holds a pointer to its own, so finding it costs no hashing (two hash lookups per traced
//! call fewer), and the kernel frees it with the task. Elsewhere they live in a hash map
//! keyed by tid, removed at thread exit.
use aya_ebpf::{
    bindings::{BPF_F_NO_PREALLOC, BPF_LOCAL_STORAGE_GET_F_CREATE, bpf_map_type},
    helpers::generated::{bpf_get_current_task_btf, bpf_task_storage_get},
    macros::{btf_map, map},
    maps::{Array, HashMap},
};
use strata_common::{Counter, Frame, MAX_DEPTH, ThreadStack};

use crate::{Res, count, slot};

/// Set by user space at load time when the kernel has BTF. It lives in read-only data, so
/// the verifier knows its value and skips the branch not taken: a kernel without BTF never
/// checks the task-storage calls, which it could not verify.
#[unsafe(no_mangle)]
static STRATA_USE_TASK_STORAGE: u8 = 0;

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

    /// The current task's value; with `create`, a zeroed one is made if it has none.
    #[inline(always)]
    fn current(&self, create: bool) -> *mut T {
        let flags = if create {
            u64::from(BPF_LOCAL_STORAGE_GET_F_CREATE)
        } else {
            0
        };
        // SAFETY: the helpers take the map definition and the current task's BTF pointer.
        unsafe {
            bpf_task_storage_get(
                core::ptr::from_ref(self).cast_mut().cast(),
                bpf_get_current_task_btf(),
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

/// The current thread's stack (`tid`: the current thread's id), if it has one.
#[inline(always)]
pub fn stack(tid: u32) -> Option<*mut ThreadStack> {
    let p = if task_storage() {
        STRATA_TASK_STACKS.current(false)
    } else {
        STRATA_STACKS.get_ptr_mut(tid)?
    };
    (!p.is_null()).then_some(p)
}

/// The current thread's stack, made empty on its first traced call.
#[inline(always)]
pub fn stack_or_new(tid: u32) -> Res<*mut ThreadStack> {
    if task_storage() {
        let p = STRATA_TASK_STACKS.current(true);
        if p.is_null() {
            count(Counter::StackAllocFailed);
            return Err(-1);
        }
        return Ok(p);
    }
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
pub fn forget(tid: u32) {
    if !task_storage() {
        let _ = STRATA_STACKS.remove(tid);
    }
}

/// The current thread's stack and the frame of the traced call in progress on it (the
/// deepest kept, past [`MAX_DEPTH`]), if any.
#[inline(always)]
pub fn current_frame(tid: u32) -> Option<(*mut ThreadStack, *const Frame)> {
    let st = stack(tid)?;
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

/// The traced call in progress on the current thread, 0 if none.
#[inline(always)]
pub fn current_call(tid: u32) -> u64 {
    // SAFETY: as in `current_frame`.
    current_frame(tid).map_or(0, |(_, f)| unsafe { (*f).call_id })
}
