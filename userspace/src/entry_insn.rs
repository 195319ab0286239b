//! Does a uprobe hit cost one trap or two? On x86-64, Linux emulates a few instructions at a
//! probed address itself (`push` of a register, relative `jmp`, `call` and conditional jumps,
//! `nop`); any other one it executes out of line with the trap flag set, which is a second
//! trap per hit (12-15 µs instead of ~1 µs per call with its return probe on the
//! nested-virtualised development machines). The probes table shows which probes pay it:
//! which functions a job calls on its hot path is for the user to judge.
/// Whether the kernel single-steps the instruction at the start of `code` (x86-64 rules of
/// `arch/x86/kernel/uprobes.c`: `push_setup_xol_ops` and `branch_setup_xol_ops`).
pub fn single_stepped(code: &[u8]) -> bool {
    // Legacy prefixes, which only a `nop` may carry.
    let prefixes = code
        .iter()
        .take_while(|b| matches!(b, 0x66 | 0x67 | 0xf2 | 0xf3 | 0x2e | 0x36 | 0x3e | 0x26))
        .count();
    let rest = &code[prefixes..];
    match rest {
        [0x90, ..] => false,
        _ if prefixes > 0 => true,
        // push %reg, push %r8..%r15 (REX.B alone).
        [0x50..=0x57, ..] | [0x41, 0x50..=0x57, ..] => false,
        // jmp rel8/rel32, call rel32, jcc rel8, jcc rel32.
        [0xeb | 0xe9 | 0xe8 | 0x70..=0x7f, ..] | [0x0f, 0x80..=0x8f, ..] => false,
        _ => true,
    }
}

/// Bytes of a function's first instruction a probe can be placed after, so that it lands on
/// an emulated `push`, `jmp` or conditional jump instead of a single-stepped instruction
/// (0: none).
///
/// Only an instruction that leaves the stack pointer, the stack and memory alone and writes
/// either the flags alone (a `test` or `cmp` of registers, constants or a global) or one
/// register without reading it (a register `mov`, a `mov` of an immediate, a `%rip`-relative
/// load or `lea`, the `xor` that zeroes a register) is passed over. The function overwrites
/// that register before anything reads it, so it carries none of the call's arguments: at the
/// next instruction every register that does is as at entry, and so is the stack pointer,
/// where a return probe takes the return address. That instruction is the `push` that opens
/// the prologue, the `jmp` of a wrapper that sets one argument of the function it tail-calls
/// (NetCDF's typed functions: `mov $6,%r9d; jmp NC_get_vara`), or the branch on the test
/// (glibc's fflush: `test %rdi,%rdi; je`), which the kernel takes on the flags the test set.
/// No jump inside the function comes back to it (a loop comes back to the test). The caller
/// checks that no other function starts there.
pub fn prologue_skip(code: &[u8]) -> usize {
    // An optional REX prefix (0x40-0x4f): W widens, R extends ModRM.reg, B extends ModRM.rm.
    let (rex, rest) = match code {
        [r @ 0x40..=0x4f, rest @ ..] => (*r, rest),
        _ => (0, code),
    };
    let ext = |bit: u8| if rex & bit != 0 { 8 } else { 0 };
    let rm = |m: u8| (m & 7) + ext(1);
    let reg = |m: u8| ((m >> 3) & 7) + ext(4);
    // ModRM of a register operand, or of a `%rip`-relative one (4 bytes of displacement).
    let register = |m: u8| m >> 6 == 3;
    let global = |m: u8| m >> 6 == 0 && m & 7 == 5;
    // `cmp` is /7 of the immediate group (the others write their operand).
    let cmp = |m: u8| (m >> 3) & 7 == 7;
    // (length without REX, register written and register read, if any).
    let (len, write) = match *rest {
        // mov reg, reg: into ModRM.rm (0x89) or ModRM.reg (0x8b).
        [0x89, m, ..] if register(m) => (2, Some((rm(m), Some(reg(m))))),
        [0x8b, m, ..] if register(m) => (2, Some((reg(m), Some(rm(m))))),
        // mov disp32(%rip), reg (a load of a global), lea disp32(%rip), reg.
        [0x8b | 0x8d, m, ..] if global(m) => (6, Some((reg(m), None))),
        // mov $imm, reg: 4 bytes of immediate, 8 with REX.W.
        [op @ 0xb8..=0xbf, ..] => (
            if rex & 8 != 0 { 9 } else { 5 },
            Some(((op - 0xb8) + ext(1), None)),
        ),
        // mov $imm32, reg (sign-extended with REX.W).
        [0xc7, m, ..] if register(m) && (m >> 3) & 7 == 0 => (6, Some((rm(m), None))),
        // xor of a register with itself: zero, whatever it held.
        [0x31 | 0x33, m, ..] if register(m) && rm(m) == reg(m) => (2, Some((rm(m), None))),
        // test reg, reg; cmp reg, reg: the flags only.
        [0x85 | 0x39 | 0x3b, m, ..] if register(m) => (2, None),
        // cmp $imm8, reg; cmp $imm32, reg (0x80: of a byte register).
        [0x80 | 0x83, m, ..] if register(m) && cmp(m) => (3, None),
        [0x81, m, ..] if register(m) && cmp(m) => (6, None),
        // cmp $imm, disp32(%rip): a global compared.
        [0x80 | 0x83, m, ..] if global(m) && cmp(m) => (7, None),
        [0x81, m, ..] if global(m) && cmp(m) => (10, None),
        _ => return 0,
    };
    const RSP: u8 = 4;
    if matches!(write, Some((dst, src)) if dst == RSP || src == Some(dst)) {
        return 0;
    }
    let len = len + usize::from(rex != 0);
    // `push %reg`, `jmp rel8/rel32`, `jcc rel8/rel32`, which the kernel emulates.
    match code.get(len..) {
        Some(
            [0x50..=0x57 | 0xeb | 0xe9 | 0x70..=0x7f, ..]
            | [0x41, 0x50..=0x57, ..]
            | [0x0f, 0x80..=0x8f, ..],
        ) => len,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{prologue_skip, single_stepped};

    proptest! {
        /// Whatever the bytes, a probe moves only within them, and onto an emulated
        /// instruction.
        #[test]
        fn a_moved_probe_lands_on_an_emulated_instruction(
            rex in prop::sample::select(vec![None, Some(0x41u8), Some(0x44), Some(0x45), Some(0x48), Some(0x4c)]),
            op in prop::sample::select(vec![
                0x89u8, 0x8b, 0x8d, 0xb9, 0xbc, 0xc7, 0x31, 0x33, 0x85, 0x39, 0x80, 0x81, 0x83, 0x55,
            ]),
            tail in prop::collection::vec(
                prop_oneof![any::<u8>(), prop::sample::select(vec![0x55u8, 0x41, 0x50, 0xe9, 0xeb, 0x74, 0x0f, 0x84, 0xc3])],
                0..14,
            ),
        ) {
            let code: Vec<u8> = rex.into_iter().chain([op]).chain(tail).collect();
            let skip = prologue_skip(&code);
            if skip > 0 {
                prop_assert!(skip < code.len());
                prop_assert!(!single_stepped(&code[skip..]));
                prop_assert!(single_stepped(&code));
            }
        }
    }

    /// First instructions of MPICH's, Open MPI's, NetCDF's and glibc's functions and made-up
    /// ones, and where a probe goes.
    #[test]
    fn a_probe_passes_over_a_dead_register_write_or_a_test_to_an_emulated_instruction() {
        for (code, skip, what) in [
            (
                &[0x89, 0xf8, 0x41, 0x54][..],
                2,
                "mov %edi,%eax; push %r12 (MPICH's MPI_Type_size_x)",
            ),
            (
                &[0x48, 0x8d, 0x05, 1, 2, 3, 4, 0x53][..],
                7,
                "lea (%rip),%rax; push %rbx (MPICH's MPI_File_iwrite)",
            ),
            (
                &[0x48, 0x8b, 0x05, 1, 0xa0, 8, 0, 0x41, 0x54][..],
                7,
                "mov (%rip),%rax; push %r12 (Open MPI's MPI_Test)",
            ),
            (
                &[0x48, 0x8b, 0x3d, 1, 0xa0, 8, 0, 0x41, 0x54][..],
                7,
                "mov (%rip),%rdi; push %r12: %rdi carried no argument",
            ),
            (&[0x4c, 0x89, 0xd8, 0x55], 3, "mov %r11,%rax; push %rbp"),
            (&[0x49, 0x89, 0xfa, 0x55], 3, "mov %rdi,%r10; push %rbp"),
            (
                &[0x89, 0xfe, 0x55],
                2,
                "mov %edi,%esi; push %rbp: %rsi carried no argument",
            ),
            (
                &[0x89, 0xff, 0x55],
                0,
                "mov %edi,%edi: reads what it writes",
            ),
            (&[0x44, 0x89, 0xc8, 0x55], 3, "mov %r9d,%eax; push %rbp"),
            (
                &[0x45, 0x89, 0xc9, 0x55],
                0,
                "mov %r9d,%r9d: reads what it writes",
            ),
            (
                &[0x41, 0xb9, 6, 0, 0, 0, 0xe9, 1, 2, 3, 4][..],
                6,
                "mov $6,%r9d; jmp (NetCDF's nc_get_vara_double)",
            ),
            (
                &[0xb9, 6, 0, 0, 0, 0xe9, 1, 2, 3, 4][..],
                5,
                "mov $6,%ecx; jmp (NetCDF's nc_put_var_double)",
            ),
            (&[0x31, 0xc9, 0xe9, 1, 2, 3, 4], 2, "xor %ecx,%ecx; jmp"),
            (&[0x45, 0x31, 0xc9, 0x55], 3, "xor %r9d,%r9d; push %rbp"),
            (&[0x31, 0xc8, 0x55], 0, "xor %ecx,%eax: reads %eax"),
            (&[0x44, 0x31, 0xc9, 0x55], 0, "xor %r9d,%ecx: reads %ecx"),
            (
                &[0x48, 0xc7, 0xc0, 0xff, 0xff, 0xff, 0xff, 0x53][..],
                7,
                "mov $-1,%rax; push %rbx",
            ),
            (
                &[0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8, 0xeb, 0x10][..],
                10,
                "movabs $imm64,%rax; jmp rel8",
            ),
            (&[0xbc, 0, 0x10, 0, 0, 0x55], 0, "mov $0x1000,%esp"),
            (&[0xb8, 1, 0, 0, 0, 0xc3], 0, "mov $1,%eax; ret: stepped"),
            (
                &[0xba, 1, 0, 0, 0, 0xe8, 1, 2, 3, 4][..],
                0,
                "mov $1,%edx; call: the call pushes",
            ),
            (
                &[0x48, 0x89, 0xd0, 0x48, 0x8b, 0x15, 1, 2, 3, 4][..],
                0,
                "mov %rdx,%rax; mov (%rip),%rdx: a second write",
            ),
            (&[0x48, 0x89, 0xe0, 0x55], 3, "mov %rsp,%rax; push %rbp"),
            (
                &[0x48, 0x89, 0xc4, 0x55],
                0,
                "mov %rax,%rsp: the stack pointer",
            ),
            (&[0x89, 0x07, 0x55], 0, "mov %eax,(%rdi): memory"),
            (&[0x8b, 0x07, 0x55], 0, "mov (%rdi),%eax: a load, then"),
            (
                &[0x89, 0xf8, 0x48, 0x83, 0xec, 8],
                0,
                "mov %edi,%eax; sub $8,%rsp",
            ),
            (
                &[0x89, 0xf8],
                0,
                "mov %edi,%eax at the end of the code read",
            ),
            (
                &[0x48, 0x83, 0xec, 8],
                0,
                "sub $8,%rsp (MPICH's MPI_File_write_at)",
            ),
            (&[0x41, 0x57], 0, "push %r15: nothing to pass over"),
            (
                &[0x48, 0x8d, 0x3d, 1, 2, 3, 4, 0x53],
                7,
                "lea (%rip),%rdi; push %rbx: %rdi carried no argument",
            ),
            (
                &[0x48, 0x8d, 0x25, 1, 2, 3, 4, 0x53],
                0,
                "lea (%rip),%rsp: the stack pointer",
            ),
            (
                &[0x48, 0x85, 0xff, 0x74, 0x10][..],
                3,
                "test %rdi,%rdi; je (glibc's fflush)",
            ),
            (
                &[0x83, 0xff, 0xff, 0x0f, 0x84, 1, 2, 3, 4][..],
                3,
                "cmp $-1,%edi; je rel32 (glibc's ungetc)",
            ),
            (
                &[0x80, 0x3d, 1, 2, 3, 4, 0, 0x74, 0x10][..],
                7,
                "cmpb $0,(%rip); je (glibc's write)",
            ),
            (
                &[0x81, 0x3d, 1, 2, 3, 4, 0, 1, 0, 0, 0x75, 0x10][..],
                10,
                "cmpl $0x100,(%rip); jne",
            ),
            (&[0x39, 0xf7, 0x7f, 0x10], 2, "cmp %esi,%edi; jg"),
            (
                &[0x48, 0x83, 0xec, 0x08, 0x74, 0x10][..],
                0,
                "sub $8,%rsp: /5 of the group writes",
            ),
            (
                &[0x83, 0xe7, 0x0f, 0x74, 0x10][..],
                0,
                "and $15,%edi: /4 writes an argument",
            ),
            (
                &[0x80, 0x05, 1, 2, 3, 4, 1, 0x55][..],
                0,
                "addb $1,(%rip): writes memory",
            ),
            (
                &[0x85, 0x07, 0x74, 0x10],
                0,
                "test %eax,(%rdi): reads memory through an argument",
            ),
            (
                &[0x48, 0x85, 0xff, 0x48, 0x89, 0xf8][..],
                0,
                "test %rdi,%rdi; mov: not emulated",
            ),
        ] {
            assert_eq!(prologue_skip(code), skip, "{what}");
        }
    }

    /// First instructions of functions strata probes, as objdump shows them in Debian's
    /// libraries, and the kernel's verdict on each.
    #[test]
    fn emulated_and_stepped_instructions() {
        for (code, stepped, what) in [
            (
                &[0x41, 0x57][..],
                false,
                "push %r15 (fwrite, H5Dwrite, MPI_File_write_at_all)",
            ),
            (&[0x55], false, "push %rbp"),
            (&[0x53], false, "push %rbx"),
            (
                &[0x48, 0x8b, 0x87, 0x60, 0x01],
                true,
                "mov 0x160(%rdi),%rax (H5S_get_select_npoints)",
            ),
            (
                &[0x80, 0x3d, 0x91, 0x32, 0x0e],
                true,
                "cmpb $0,(%rip) (libc write)",
            ),
            (
                &[0x48, 0x8b, 0x05, 0x01, 0xa0],
                true,
                "mov (%rip),%rax (MPI_Test)",
            ),
            (
                &[0x41, 0xb9, 0x06, 0, 0],
                true,
                "mov $6,%r9d (nc_get_vara_double)",
            ),
            (
                &[0x48, 0x83, 0xec, 0x28],
                true,
                "sub $0x28,%rsp (nc_create_par)",
            ),
            (&[0x48, 0x85, 0xff], true, "test %rdi,%rdi (fflush)"),
            (&[0xe9, 0, 0, 0, 0], false, "jmp rel32"),
            (&[0xeb, 0x10], false, "jmp rel8"),
            (&[0xe8, 0, 0, 0, 0], false, "call rel32"),
            (&[0x74, 0x05], false, "je rel8"),
            (&[0x0f, 0x84, 0, 0, 0, 0], false, "je rel32"),
            (&[0x66, 0xe8, 0, 0], true, "callw (16-bit override)"),
            (&[0x90], false, "nop"),
            (&[0x66, 0x90], false, "xchg %ax,%ax"),
            (&[0xf3, 0x90], false, "pause"),
            (&[0x48, 0x50], true, "push %rax with REX.W"),
            (&[0xff, 0x25, 0, 0, 0, 0], true, "jmp *(%rip) (a PLT entry)"),
            (&[0xf3, 0x0f, 0x1e, 0xfa], true, "endbr64"),
            (&[], true, "nothing read"),
        ] {
            assert_eq!(single_stepped(code), stepped, "{what}");
        }
    }
}
