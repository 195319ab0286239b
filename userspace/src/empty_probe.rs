//! Empty probes, the baseline of `cargo xtask bench`: strata's attachments (the two raw
//! syscall tracepoints, or a uprobe and uretprobe on a library function) with programs
//! that return at once. A command run under them pays the machine's cost of a probe hit and
//! nothing of strata's own work, which the benchmark then separates.
use std::{path::Path, process::Command};

use anyhow::Context as _;
use aya::programs::{
    BtfTracePoint, TracePoint, UProbe,
    uprobe::{UProbeAttachLocation, UProbeAttachPoint, UProbeScope},
};
use strata_common::programs;

use crate::attach::{load_object, program};

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Mechanism {
    /// BTF raw tracepoints sys_enter and sys_exit, as strata's syscall layer attaches by
    /// default (`--syscall-mode btf`).
    Tracepoint,
    /// The trace events raw_syscalls/sys_enter and sys_exit (`--syscall-mode raw`).
    RawSyscalls,
    /// A uprobe and a uretprobe on one function of a library.
    Uprobe,
}

/// Runs `command` under empty probes; returns its exit code.
pub fn run(
    mechanism: Mechanism,
    library: &Path,
    function: &str,
    command: &[String],
) -> anyhow::Result<i32> {
    let (exe, args) = command
        .split_first()
        .context("give the command to run after --")?;
    let mut ebpf = load_object(None, false)?;
    match mechanism {
        Mechanism::RawSyscalls => {
            let tp = program::<TracePoint>(&mut ebpf, programs::EMPTY_TRACEPOINT)?;
            tp.load()?;
            for event in ["sys_enter", "sys_exit"] {
                tp.attach("raw_syscalls", event)
                    .with_context(|| format!("attaching to raw_syscalls/{event}"))?;
            }
        }
        Mechanism::Tracepoint => {
            let btf = aya::Btf::from_sys_fs().context("this kernel has no BTF")?;
            for (prog, event) in [
                (programs::EMPTY_BTF_SYS_ENTER, "sys_enter"),
                (programs::EMPTY_BTF_SYS_EXIT, "sys_exit"),
            ] {
                let p = program::<BtfTracePoint>(&mut ebpf, prog)?;
                p.load(event, &btf)?;
                p.attach()
                    .with_context(|| format!("attaching to BTF raw tracepoint {event}"))?;
            }
        }
        Mechanism::Uprobe => {
            let table = crate::symbols::SymbolTable::read(library)?;
            let offset = table
                .offset(function)
                .with_context(|| format!("no {function} in {}", library.display()))?;
            for prog in [programs::EMPTY_UPROBE, programs::EMPTY_URETPROBE] {
                let p = program::<UProbe>(&mut ebpf, prog)?;
                p.load()?;
                let point = UProbeAttachPoint {
                    location: UProbeAttachLocation::AbsoluteOffset(offset),
                    cookie: None,
                };
                p.attach(point, library, UProbeScope::AllProcesses)
                    .with_context(|| format!("uprobe on {function} in {}", library.display()))?;
            }
        }
    }
    let status = Command::new(exe)
        .args(args)
        .status()
        .with_context(|| format!("cannot run {exe}"))?;
    // With kernel BPF statistics on, what the empty programs cost themselves (the benchmark
    // subtracts it from strata's programs: the statistics add their own clock reads).
    if let Some((ns, runs)) = crate::attach::program_stats(&ebpf, &[]) {
        eprintln!("bpf_run_ns {ns} bpf_runs {runs}");
    }
    Ok(status.code().unwrap_or(1))
}
