//! Empty probes, the baseline of `cargo xtask bench`: strata's attachments (the two raw
//! syscall tracepoints, or a uprobe and uretprobe on a library function) with programs
//! that return at once. A command run under them pays the machine's cost of a probe hit and
//! nothing of strata's own work, which the benchmark then separates.
//!
//! The floor: the same attachments with programs that do the least any tracer keeping every
//! call must do. Between the empty probe and strata, it tells how much of strata's cost is
//! recording itself on this machine and how much is strata's own.
use std::{
    path::Path,
    process::Command,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use anyhow::Context as _;
use aya::{
    maps::{Array, PerCpuArray},
    programs::{
        BtfTracePoint, TracePoint, UProbe,
        uprobe::{UProbeAttachLocation, UProbeAttachPoint, UProbeScope},
    },
};
use strata_common::{Config, maps, programs};

use crate::{
    attach::{EBPF, load_object, program},
    ring::EventRing,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mechanism {
    /// BTF raw tracepoints sys_enter and sys_exit, as strata's syscall layer attaches by
    /// default (`--syscall-mode btf`).
    Tracepoint,
    /// The trace events raw_syscalls/sys_enter and sys_exit (`--syscall-mode raw`).
    RawSyscalls,
    /// A uprobe and a uretprobe on one function of a library, linked as strata links its
    /// library probes: by one multi-uprobe session link where the kernel has them (Linux
    /// 6.13+), by a multi-uprobe link each (6.6+), else by a perf event each. stderr says
    /// which.
    Uprobe,
    /// Not empty: on the BTF raw tracepoints, the least any tracer does to keep each
    /// syscall of every other process as one record of strata's size (arguments and a clock
    /// read at entry; a clock read and a ring-buffer record at exit). Records are read and
    /// discarded.
    FloorTracepoint,
    /// Not empty: the same least work on a uprobe and a uretprobe.
    FloorUprobe,
    /// The floor's programs on the BTF raw tracepoints without the ring buffer: each record
    /// is built in per-CPU memory and not sent. What it adds to the empty probe is time
    /// stamps and frames; what the floor adds to it, the transport.
    StampTracepoint,
    /// The same on a uprobe and a uretprobe.
    StampUprobe,
}

/// Runs `command` under empty probes (or the floor's); returns its exit code.
///
/// `with_syscalls` adds empty programs on the BTF raw syscall tracepoints to a uprobe
/// mechanism: the machine's cost of tracing syscalls beside the function. Since Linux 6.11
/// a uretprobe returns through a syscall (`uretprobe`), so on a trace of both layers every
/// traced function's return passes the syscall tracepoints too.
pub fn run(
    mechanism: Mechanism,
    with_syscalls: bool,
    library: &Path,
    function: &str,
    command: &[String],
) -> anyhow::Result<i32> {
    use Mechanism::*;
    let (exe, args) = command
        .split_first()
        .context("give the command to run after --")?;
    if with_syscalls && !matches!(mechanism, Uprobe | FloorUprobe | StampUprobe) {
        anyhow::bail!("--with-syscalls adds syscall tracepoints to a uprobe mechanism only");
    }
    let floor = matches!(
        mechanism,
        FloorTracepoint | FloorUprobe | StampTracepoint | StampUprobe
    );
    let stamp = matches!(mechanism, StampTracepoint | StampUprobe);
    // The floor keeps its frames as strata does: task-local, the ids read from the task.
    let task = if floor {
        let btf = crate::btf::kernel().context("the floor needs the kernel's BTF")?;
        Some(crate::btf::task_offsets(&btf)?)
    } else {
        None
    };
    let mut ebpf = load_object(
        None,
        task.as_ref(),
        !stamp,
        &strata_common::PageOffsets::NONE,
        &strata_common::BlockOffsets::NONE,
    )?;
    let uprobe_programs = match mechanism {
        Uprobe => Some([
            programs::EMPTY_UPROBE,
            programs::EMPTY_URETPROBE,
            programs::EMPTY_UPROBE_SESSION,
        ]),
        FloorUprobe | StampUprobe => Some([
            programs::FLOOR_UPROBE,
            programs::FLOOR_URETPROBE,
            programs::FLOOR_UPROBE_SESSION,
        ]),
        _ => None,
    };
    let uprobe_pair = uprobe_programs.map(|[entry, ret, _]| [entry, ret]);
    // Uprobes are linked as strata links its library probes: by a multi-uprobe link where
    // the kernel has them, else by a perf event each. The two reach the programs through
    // kernel paths of different cost, which is the trap's, not the programs'. Loading starts
    // before the ring buffer is taken out of `ebpf`: the programs get the maps from it.
    let loading = uprobe_programs.map(|[entry, ret, session]| {
        let names = crate::uprobe_multi::Names {
            entry,
            ret,
            session,
        };
        crate::uprobe_multi::Programs::load(&ebpf, EBPF, names)
    });
    let drain = if floor {
        // Borrowed, not taken: a map taken out and dropped would close its descriptor
        // before the programs that use it are loaded.
        let mut cfg: Array<_, Config> =
            Array::try_from(ebpf.map_mut(maps::CONFIG).context("no config map")?)?;
        let config = Config {
            self_tgid: std::process::id(),
            ..Config::default()
        };
        cfg.set(0, config, 0)?;
        let events = ebpf.take_map(maps::EVENTS).context("no ring buffer")?;
        Some(Drain::start(EventRing::new(
            events,
            maps::EVENTS,
            None,
            None,
        )?))
    } else {
        None
    };
    // The multi-uprobe programs and their links, kept while the command runs.
    let mut multi_links = None;
    match mechanism {
        RawSyscalls => {
            let tp = program::<TracePoint>(&mut ebpf, programs::EMPTY_TRACEPOINT)?;
            tp.load()?;
            for event in ["sys_enter", "sys_exit"] {
                tp.attach("raw_syscalls", event)
                    .with_context(|| format!("attaching to raw_syscalls/{event}"))?;
            }
        }
        Tracepoint | FloorTracepoint | StampTracepoint => {
            let pair = if floor {
                [programs::FLOOR_BTF_SYS_ENTER, programs::FLOOR_BTF_SYS_EXIT]
            } else {
                [programs::EMPTY_BTF_SYS_ENTER, programs::EMPTY_BTF_SYS_EXIT]
            };
            attach_syscalls(&mut ebpf, pair)?;
        }
        Uprobe | FloorUprobe | StampUprobe => {
            if with_syscalls {
                attach_syscalls(
                    &mut ebpf,
                    [programs::EMPTY_BTF_SYS_ENTER, programs::EMPTY_BTF_SYS_EXIT],
                )?;
            }
            let (Some(pair), Some(loading)) = (uprobe_pair, loading) else {
                unreachable!("a uprobe mechanism has its programs")
            };
            let table = crate::symbols::SymbolTable::read(library)?;
            let offset = table
                .offset(function)
                .with_context(|| format!("no {function} in {}", library.display()))?;
            let multi = loading.and_then(|l| l.wait()).and_then(|m| {
                let links = m.attach(library, &[offset], &[0]).with_context(|| {
                    format!("multi-uprobe link on {function} in {}", library.display())
                })?;
                Ok((m, links))
            });
            match multi {
                Ok(m) => {
                    match m.0.session() {
                        true => eprintln!("uprobes by multi link (session)"),
                        false => eprintln!("uprobes by multi link"),
                    }
                    multi_links = Some(m);
                }
                Err(e) => {
                    eprintln!("uprobes by perf event ({e:#})");
                    for prog in pair {
                        let p = program::<UProbe>(&mut ebpf, prog)?;
                        p.load()?;
                        let point = UProbeAttachPoint {
                            location: UProbeAttachLocation::AbsoluteOffset(offset),
                            cookie: None,
                        };
                        p.attach(point, library, UProbeScope::AllProcesses)
                            .with_context(|| {
                                format!("uprobe on {function} in {}", library.display())
                            })?;
                    }
                }
            }
        }
    }
    let status = Command::new(exe)
        .args(args)
        .status()
        .with_context(|| format!("cannot run {exe}"))?;
    if let Some(d) = drain {
        let sent = d.stop();
        if stamp {
            let counters: PerCpuArray<_, u64> =
                PerCpuArray::try_from(ebpf.map(maps::COUNTERS).context("no counters map")?)?;
            eprintln!(
                "records {}",
                crate::attach::counter_total(&counters, strata_common::Counter::Stamped)
            );
        } else {
            eprintln!("records {sent}");
        }
    }
    // With kernel BPF statistics on, what the empty programs cost themselves (the benchmark
    // subtracts it from strata's programs: the statistics add their own clock reads).
    let multi_fds: Vec<_> = multi_links.iter().flat_map(|(m, _)| m.fds()).collect();
    if let Some((ns, runs)) = crate::attach::program_stats(&ebpf, &multi_fds) {
        eprintln!("bpf_run_ns {ns} bpf_runs {runs}");
    }
    Ok(status.code().unwrap_or(1))
}

/// Attaches the programs `pair` to the BTF raw tracepoints sys_enter and sys_exit.
fn attach_syscalls(ebpf: &mut aya::Ebpf, pair: [&str; 2]) -> anyhow::Result<()> {
    let btf = aya::Btf::from_sys_fs().context("this kernel has no BTF")?;
    for (prog, event) in pair.into_iter().zip(["sys_enter", "sys_exit"]) {
        let p = program::<BtfTracePoint>(ebpf, prog)?;
        p.load(event, &btf)?;
        p.attach()
            .with_context(|| format!("attaching to BTF raw tracepoint {event}"))?;
    }
    Ok(())
}

/// Reads and discards the floor's records on a thread of its own, as strata's reader would
/// take them (without decoding).
struct Drain {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<u64>,
}

impl Drain {
    fn start(mut ring: EventRing) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut n = 0u64;
            loop {
                let done = flag.load(Ordering::Relaxed);
                if done {
                    ring.finish();
                }
                while ring.next_record().is_some() {
                    n += 1;
                }
                if done {
                    return n;
                }
                std::thread::sleep(std::time::Duration::from_micros(500));
            }
        });
        Self { stop, thread }
    }

    /// Records read.
    fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or(0)
    }
}
