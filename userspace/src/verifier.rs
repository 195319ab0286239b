//! The verifier's verdict on a program the kernel rejects, said in one line.
//!
//! At the level strata asks for by default the kernel's log of a rejection holds the
//! verifier's reason, then its statistics; with `-vv` the walk of every instruction comes
//! first. aya prints that log whole after its own sentence, and a program loaded by hand
//! gets no log unless it asks for one: a rejection of the uprobe programs then said only
//! "Permission denied". Verifiers differ between kernel releases, so this is what an admin
//! on a kernel strata was not tested on sees, and what a report of it needs.
use std::{
    ffi::CStr,
    fmt, io,
    os::fd::{FromRawFd as _, OwnedFd, RawFd},
};

use aya::{VerifierLogLevel, programs::ProgramError};
use aya_obj::generated::{bpf_cmd, bpf_insn};

/// What the verifier logs about a program it rejects: its reason and statistics (how many
/// instructions it processed, against its limit), and with `-vv` every instruction it
/// walked as well. aya loads a rejected program again with a log ten times larger each time
/// the last one filled, up to 16 MiB; a program too complex for this kernel's verifier
/// fills each with its million instructions, so that strata would report it only after
/// minutes.
pub fn log_level() -> VerifierLogLevel {
    if log::log_enabled!(log::Level::Debug) {
        VerifierLogLevel::DEBUG | VerifierLogLevel::STATS
    } else {
        VerifierLogLevel::STATS
    }
}

/// A program the kernel refused to load, with the verifier's log of it.
#[derive(Debug)]
pub struct Rejection {
    pub program: String,
    pub error: io::Error,
    pub log: String,
}

impl Rejection {
    /// aya's load error, where it is the kernel's refusal (not a missing BTF type, say).
    pub fn from_aya(program: &str, e: &ProgramError) -> Option<Self> {
        match e {
            ProgramError::LoadError {
                io_error,
                verifier_log,
            } => Some(Self {
                program: program.to_owned(),
                error: io_error.raw_os_error().map_or_else(
                    || io::Error::other(io_error.to_string()),
                    io::Error::from_raw_os_error,
                ),
                log: verifier_log.to_string(),
            }),
            _ => None,
        }
    }

    /// The verifier's own words: the lines after the last instruction it walked, its
    /// statistics left out. Empty where the kernel refused before verifying (an unknown
    /// attach type, say) or gave no log.
    pub fn reason(&self) -> Vec<&str> {
        let lines: Vec<&str> = (self.log.lines().map(str::trim_end))
            .filter(|l| !l.is_empty() && !is_statistic(l))
            .collect();
        let after_walk = lines.iter().rposition(|l| is_walk(l)).map_or(0, |i| i + 1);
        lines[after_walk..].to_vec()
    }

    /// How many instructions the verifier processed, from its statistics.
    pub fn processed(&self) -> Option<u64> {
        let line = self.log.lines().find(|l| l.starts_with("processed "))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }
}

/// A line of the verifier's statistics (`BPF_LOG_STATS`).
fn is_statistic(line: &str) -> bool {
    ["processed ", "verification time ", "stack depth "]
        .iter()
        .any(|p| line.starts_with(p))
}

/// A line of the verifier's walk (`-vv`): an instruction or the registers at one
/// (`12: (79) r1 = ...`, `12: R1=ctx()`), a source line (`; ...`), a branch taken
/// (`from 4 to 9: ...`), a subprogram (`func#0 @0`), precision tracking (`mark_precise:`).
fn is_walk(line: &str) -> bool {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    (digits > 0 && line[digits..].starts_with(": "))
        || [
            "; ",
            "from ",
            "func#",
            "mark_precise:",
            "last_idx ",
            "regs=",
        ]
        .iter()
        .any(|p| line.starts_with(p))
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the kernel rejected {} ({})", self.program, self.error)?;
        let reason = self.reason();
        if reason.is_empty() {
            return write!(f, ", its verifier gave no reason");
        }
        write!(f, "; its verifier said: {}", reason.join(" / "))?;
        if let Some(n) = self.processed().filter(|n| *n > 0) {
            write!(f, " (after {n} instructions)")?;
        }
        Ok(())
    }
}

impl std::error::Error for Rejection {}

/// A program loaded by hand, for what aya cannot load (multi-uprobe programs, which need
/// their attach type at load time) and for tests of the reporting above.
pub struct ByHand<'a> {
    pub prog_type: u32,
    pub expected_attach_type: u32,
    pub name: &'a str,
    pub insns: &'a [bpf_insn],
    pub license: &'a CStr,
}

/// An instruction without offset or immediate (`r0 = 0` is `insn(0xb7, 0, 0)`).
pub fn insn(code: u8, dst: u8, src: u8) -> bpf_insn {
    bpf_insn {
        code,
        _bitfield_align_1: [],
        _bitfield_1: bpf_insn::new_bitfield_1(dst, src),
        off: 0,
        imm: 0,
    }
}

/// The smallest program there is: `r0 = 0; exit`.
pub fn smallest() -> [bpf_insn; 2] {
    [insn(0xb7, 0, 0), insn(0x95, 0, 0)]
}

/// The head of `union bpf_attr` for BPF_PROG_LOAD (the kernel zero-fills the rest; this
/// head has no padding).
#[repr(C)]
#[derive(Clone, Copy)]
struct ProgLoadAttr {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
}

/// Log buffer for a rejection loaded again: the reason and statistics take a few hundred
/// bytes; the walk of `-vv` is larger, and kernels since 6.4 keep its end (where the
/// reason is) when it does not fit.
fn log_bytes(level: VerifierLogLevel) -> usize {
    if level.contains(VerifierLogLevel::DEBUG) {
        16 << 20
    } else {
        64 << 10
    }
}

/// Loads `prog`; a rejected program is loaded once more with a log at `level`, for the
/// verifier's reason.
pub fn load(prog: &ByHand, level: VerifierLogLevel) -> Result<OwnedFd, Rejection> {
    let mut prog_name = [0u8; 16];
    for (d, s) in prog_name.iter_mut().zip(prog.name.bytes().take(15)) {
        *d = s;
    }
    let mut attr = ProgLoadAttr {
        prog_type: prog.prog_type,
        insn_cnt: prog.insns.len() as u32,
        insns: prog.insns.as_ptr() as u64,
        license: prog.license.as_ptr() as u64,
        log_level: 0,
        log_size: 0,
        log_buf: 0,
        kern_version: 0,
        prog_flags: 0,
        prog_name,
        prog_ifindex: 0,
        expected_attach_type: prog.expected_attach_type,
    };
    let error = match prog_load(&attr) {
        Ok(fd) => return Ok(fd),
        Err(e) => e,
    };
    let mut buf = vec![0u8; log_bytes(level)];
    attr.log_level = level.bits();
    attr.log_size = buf.len() as u32;
    attr.log_buf = buf.as_mut_ptr() as u64;
    // Loaded after all (a verdict that changed with the log on): the reason is not known.
    if let Ok(fd) = prog_load(&attr) {
        return Ok(fd);
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    Err(Rejection {
        program: prog.name.to_owned(),
        error,
        log: String::from_utf8_lossy(&buf[..end]).into_owned(),
    })
}

/// One BPF_PROG_LOAD. The verifier gives up with EAGAIN when a signal interrupts it: tried
/// again, as libbpf does.
fn prog_load(attr: &ProgLoadAttr) -> io::Result<OwnedFd> {
    let mut tries = 5;
    loop {
        // SAFETY: `attr` is the head of `union bpf_attr` for BPF_PROG_LOAD, valid for the
        // call, and every pointer in it (instructions, license, log) outlives the call.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_bpf,
                bpf_cmd::BPF_PROG_LOAD as libc::c_long,
                std::ptr::from_ref(attr),
                size_of::<ProgLoadAttr>() as u32,
            )
        };
        if fd >= 0 {
            // SAFETY: the bpf call returned a new descriptor we own.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) });
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EAGAIN) || tries == 1 {
            return Err(e);
        }
        tries -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rejection(log: &str) -> Rejection {
        Rejection {
            program: "strata_x".into(),
            error: io::Error::from_raw_os_error(libc::EACCES),
            log: log.into(),
        }
    }

    #[test]
    fn the_reason_is_what_follows_the_walk_without_the_statistics() {
        // Logs as this kernel (6.18) wrote them, at the default level and with `-vv`.
        let stats = "R1 invalid mem access 'scalar'\nverification time 23 usec\nstack depth 0\n\
                     processed 3 insns (limit 1000000) max_states_per_insn 0 total_states 0 \
                     peak_states 0 mark_read 0\n";
        let walk = "func#0 @0\n0: R1=ctx() R10=fp0\n0: (b7) r0 = 0                        ; R0=0\n\
                    1: (b7) r1 = 0                        ; R1=0\n; let x = *p; @ lib.rs:12\n\
                    2: (79) r0 = *(u64 *)(r1 +0)\nR1 invalid mem access 'scalar'\n\
                    verification time 20 usec\nstack depth 0\n\
                    processed 3 insns (limit 1000000) max_states_per_insn 0 total_states 0 \
                    peak_states 0 mark_read 0\n";
        for log in [stats, walk] {
            let r = rejection(log);
            assert_eq!(r.reason(), ["R1 invalid mem access 'scalar'"], "{log}");
            assert_eq!(r.processed(), Some(3));
            assert_eq!(
                r.to_string(),
                "the kernel rejected strata_x (Permission denied (os error 13)); its verifier \
                 said: R1 invalid mem access 'scalar' (after 3 instructions)"
            );
        }
        // A reason on two lines is kept whole.
        let two = rejection(
            "5: (61) r2 = *(u32 *)(r0 +8)\ninvalid access to map value, value_size=8 off=8 \
             size=4\nR0 min value is outside of the allowed memory range\nprocessed 6 insns",
        );
        assert_eq!(
            two.reason(),
            [
                "invalid access to map value, value_size=8 off=8 size=4",
                "R0 min value is outside of the allowed memory range"
            ]
        );
        // Refused before any verification, or without a log.
        let none = rejection("");
        assert!(none.reason().is_empty());
        assert_eq!(
            none.to_string(),
            "the kernel rejected strata_x (Permission denied (os error 13)), its verifier gave \
             no reason"
        );
    }

    /// The kernel refuses attrs with stray bytes: the struct must have no padding.
    #[test]
    fn the_attr_has_no_padding() {
        assert_eq!(size_of::<ProgLoadAttr>(), 72);
    }

    #[test]
    fn aya_load_errors_keep_the_log_and_others_are_not_rejections() {
        let e = ProgramError::LoadError {
            io_error: io::Error::from_raw_os_error(libc::EINVAL),
            verifier_log: aya_obj::VerifierLog::new("R0 !read_ok\nprocessed 1 insns".into()),
        };
        let r = Rejection::from_aya("strata_y", &e).expect("a load error");
        assert_eq!(r.reason(), ["R0 !read_ok"]);
        assert_eq!(r.error.raw_os_error(), Some(libc::EINVAL));
        assert!(Rejection::from_aya("strata_y", &ProgramError::NotLoaded).is_none());
    }
}
