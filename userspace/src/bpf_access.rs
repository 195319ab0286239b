//! Whether the kernel lets strata use BPF at all. A seccomp filter (container runtimes' default
//! profiles), a security module or a kernel built without the bpf() system call refuses every
//! call, and aya's error then names whatever it tried first: a map "not permitted", or, where
//! only program loads are refused, a relocation of a section its feature probes left out.
//! Asked after a failure: the smallest program there is, loaded by hand.
use std::io;

/// `BPF_PROG_LOAD`, and the program type that needs nothing of the kernel but BPF itself.
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_PROG_TYPE_SOCKET_FILTER: u32 = 1;
/// `r0 = 0; exit`.
const INSNS: [u64; 2] = [0xb7, 0x95];
const LICENSE: &[u8] = b"GPL\0";

/// The head of `union bpf_attr` for `BPF_PROG_LOAD`; the rest of the size given must be zero.
#[repr(C)]
struct ProgLoad {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    rest: [u64; 12],
}

/// Why the kernel refuses BPF outright, if it does.
pub fn refusal() -> Option<String> {
    let attr = ProgLoad {
        prog_type: BPF_PROG_TYPE_SOCKET_FILTER,
        insn_cnt: INSNS.len() as u32,
        insns: INSNS.as_ptr() as u64,
        license: LICENSE.as_ptr() as u64,
        rest: [0; 12],
    };
    // SAFETY: the attribute points at the instructions and license above, which outlive the
    // call; the size is the struct's own.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_PROG_LOAD,
            &attr as *const ProgLoad,
            std::mem::size_of::<ProgLoad>(),
        )
    };
    if fd >= 0 {
        // SAFETY: the descriptor was just returned to this process and is closed once.
        unsafe { libc::close(fd as i32) };
        return None;
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::ENOSYS) => Some(
            "this kernel has no bpf() system call (built without CONFIG_BPF_SYSCALL); strata \
             needs one"
                .into(),
        ),
        Some(libc::EPERM | libc::EACCES) => Some(format!(
            "the kernel refused to load even the smallest BPF program ({err}), as root: a \
             seccomp filter forbids bpf() (container runtimes' default profiles do; run strata \
             on the host, or in a privileged container), or a security module (SELinux, \
             AppArmor, the BPF LSM) denies it"
        )),
        _ => None,
    }
}
