//! Whether the kernel lets strata use BPF at all. A seccomp filter (container runtimes' default
//! profiles), a security module or a kernel built without the bpf() system call refuses every
//! call, and aya's error then names whatever it tried first: a map "not permitted", or, where
//! only program loads are refused, a relocation of a section its feature probes left out.
//! Asked after a failure: the smallest program there is, loaded by hand.

/// The program type that needs nothing of the kernel but BPF itself.
const BPF_PROG_TYPE_SOCKET_FILTER: u32 = 1;

/// Why the kernel refuses BPF outright, if it does.
pub fn refusal() -> Option<String> {
    let smallest = crate::verifier::smallest();
    let prog = crate::verifier::ByHand {
        prog_type: BPF_PROG_TYPE_SOCKET_FILTER,
        expected_attach_type: 0,
        name: "strata_probe",
        insns: &smallest,
        license: c"GPL",
    };
    let err = match crate::verifier::load(&prog, aya::VerifierLogLevel::STATS) {
        Ok(_) => return None,
        Err(r) => r.error,
    };
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
