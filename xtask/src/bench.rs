//! `cargo xtask bench`: overhead ratios and trace size, every figure measured side by side in
//! one run. Each workload prints its own loop time, so tracer start-up and teardown are not
//! counted; the tracer's cost appears as the ratio of traced to untraced loop time.
use std::{ffi::OsString, fs, path::Path, process::Command};

use anyhow::Context as _;
use serde_json::json;

use crate::util::{build_strata, build_workload, exec, is_root, mpi_env, output, root, target_dir};

struct Case {
    name: &'static str,
    /// bench_io's mode, or bench_mpi's (`mpiio`, `hdf5`; `mpich`: its `mpiio` built with
    /// MPICH) when `mpi_size` is set.
    mode: &'static str,
    /// Bytes per collective write of each of 4 ranks (tests/workloads/bench_mpi.c).
    mpi_size: Option<u64>,
    /// `--layers`; empty: strata's default probes.
    layers: &'static str,
    /// Traced calls per loop iteration (for the per-call cost).
    calls_per_iter: u64,
    /// The workload runs `calls / divisor` iterations (slow calls get fewer).
    divisor: u64,
    /// An empty probe of the same kind, to separate the machine's trap cost from strata's
    /// own work; the stamp (the floor's time stamps and record, not sent); and the floor of
    /// the same kind (the least a per-call recorder does): `strata bench-empty` arguments of
    /// each.
    empty: Option<[&'static [&'static str]; 3]>,
}

/// The empty probe, the stamp and the floor on the syscall tracepoints strata attaches by
/// default.
const SYSCALL_BASELINES: [&[&str]; 3] = [
    &["--mechanism", "tracepoint"],
    &["--mechanism", "stamp-tracepoint"],
    &["--mechanism", "floor-tracepoint"],
];

const CASES: &[Case] = &[
    Case {
        name: "syscall write(1 B)",
        mode: "syscall",
        mpi_size: None,
        layers: "posix",
        calls_per_iter: 1,
        divisor: 1,
        empty: Some(SYSCALL_BASELINES),
    },
    // A call the kernel program drops at entry: an ioctl command probes.toml does not name.
    // What strata adds here beyond the empty probe is its filter alone.
    Case {
        name: "ioctl, not named",
        mode: "ioctl",
        mpi_size: None,
        layers: "posix",
        calls_per_iter: 1,
        divisor: 1,
        empty: Some(SYSCALL_BASELINES),
    },
    Case {
        name: "stdio fwrite(16 B)",
        mode: "stdio",
        mpi_size: None,
        layers: "posix,stdio",
        calls_per_iter: 1,
        divisor: 1,
        // With the syscall tracepoints beside the uprobes, as this case's layers have them:
        // since Linux 6.11 each uretprobe returns through a syscall, which passes them.
        empty: Some([
            &[
                "--mechanism",
                "uprobe",
                "--with-syscalls",
                "--function",
                "fwrite",
            ],
            &[
                "--mechanism",
                "stamp-uprobe",
                "--with-syscalls",
                "--function",
                "fwrite",
            ],
            &[
                "--mechanism",
                "floor-uprobe",
                "--with-syscalls",
                "--function",
                "fwrite",
            ],
        ]),
    },
    Case {
        name: "open+fstat+close",
        mode: "meta",
        mpi_size: None,
        layers: "posix",
        calls_per_iter: 3,
        divisor: 4,
        empty: None,
    },
    // Buffered 4 KiB writes to a file, then fsync: the same loop with and without the kernel
    // layers, so their own cost (page-cache and block events) shows as the difference.
    Case {
        name: "4K writes+fsync",
        mode: "pagewrite",
        mpi_size: None,
        layers: "posix",
        calls_per_iter: 1,
        divisor: 20,
        empty: None,
    },
    Case {
        name: "  + block,pagecache",
        mode: "pagewrite",
        mpi_size: None,
        layers: "posix,block,pagecache",
        calls_per_iter: 1,
        divisor: 20,
        empty: None,
    },
    // Buffered 4 KiB writes through an io_uring, 8 per io_uring_enter: with the posix layer
    // strata sees the entries only; with uring each request is a row too. The loop runs on
    // one CPU (see bench_io.c): unpinned, it waited on another CPU's wakeup, and read 4-7x
    // faster traced than untraced while strata's reader kept that CPU awake.
    Case {
        name: "io_uring 4K writes",
        mode: "uring",
        mpi_size: None,
        layers: "posix",
        calls_per_iter: 1,
        divisor: 8,
        empty: None,
    },
    Case {
        name: "  + uring requests",
        mode: "uring",
        mpi_size: None,
        layers: "posix,uring",
        calls_per_iter: 1,
        divisor: 8,
        empty: None,
    },
    // Collective writes of 4 ranks to one shared file, every layer down to POSIX traced.
    Case {
        name: "MPI-IO 64K x4",
        mode: "mpiio",
        mpi_size: Some(64 << 10),
        layers: "posix,mpiio",
        calls_per_iter: 1,
        divisor: 400,
        empty: None,
    },
    Case {
        name: "MPI-IO 4M x4",
        mode: "mpiio",
        mpi_size: Some(4 << 20),
        layers: "posix,mpiio",
        calls_per_iter: 1,
        divisor: 4_000,
        empty: None,
    },
    // The same under MPICH's ABI: each transfer also has ROMIO's MPI_Type_size_x probed. On 2
    // ranks: MPICH's ranks poll without yielding, and 4 of them on 2 cores took some 400 times
    // as long (5.2 s for 500 writes, 13 ms on 2 ranks).
    Case {
        name: "MPICH MPI-IO 64K x2",
        mode: "mpich",
        mpi_size: Some(64 << 10),
        layers: "posix,mpiio",
        calls_per_iter: 1,
        divisor: 400,
        empty: None,
    },
    Case {
        name: "HDF5 64K x4",
        mode: "hdf5",
        mpi_size: Some(64 << 10),
        layers: "posix,mpiio,hdf5",
        calls_per_iter: 1,
        divisor: 400,
        empty: None,
    },
    Case {
        name: "HDF5 4M x4",
        mode: "hdf5",
        mpi_size: Some(4 << 20),
        layers: "posix,mpiio,hdf5",
        calls_per_iter: 1,
        divisor: 4_000,
        empty: None,
    },
    // Communication, no I/O: 4 ranks exchanging 64 B in pairs (MPI_Irecv, MPI_Isend,
    // MPI_Waitall). By default strata leaves MPI's request waits unprobed, since they also fire
    // for every communication request; naming the mpiio layer probes them.
    Case {
        name: "MPI halo 64B x4",
        mode: "halo",
        mpi_size: Some(64),
        layers: "",
        calls_per_iter: 1,
        divisor: 2,
        empty: None,
    },
    Case {
        name: "  + mpiio (waits)",
        mode: "halo",
        mpi_size: Some(64),
        layers: "posix,mpiio",
        calls_per_iter: 1,
        divisor: 2,
        empty: None,
    },
];

/// A workload of the steady-state trace-size measurement.
struct SizeCase {
    name: &'static str,
    mode: &'static str,
    mpi_size: Option<u64>,
    layers: &'static str,
    /// Iterations of the shorter run (the longer one has three times as many).
    iterations: u64,
    /// `--flush-interval`: a day cuts files by row count alone.
    flush: &'static str,
}

/// A sustained rate at which strata must lose nothing, and at which its own CPU time per
/// event is measured.
const PACED_RATE: u64 = 200_000;

/// Pairs of short and long paced runs that strata's CPU time per event is the median of.
const PACED_PAIRS: usize = 5;

/// The paced rate of the runs under callgrind (which runs strata some 50 times slower: at
/// this rate the ring and the backlog hold what it falls behind, and none is lost), and the
/// events of the shorter run (the longer has five times as many).
const COUNTED_RATE: u64 = 100_000;
const COUNTED_EVENTS: u64 = 50_000;

const SIZE_CASES: &[SizeCase] = &[
    SizeCase {
        name: "regular: MPI-IO 64K x4",
        mode: "mpiio",
        mpi_size: Some(64 << 10),
        layers: "posix,mpiio",
        iterations: 1_000,
        flush: "24h",
    },
    SizeCase {
        name: "regular: HDF5 64K x4",
        mode: "hdf5",
        mpi_size: Some(64 << 10),
        layers: "posix,mpiio,hdf5",
        iterations: 1_000,
        flush: "24h",
    },
    SizeCase {
        name: "regular: write(1 B) loop",
        mode: "syscall",
        mpi_size: None,
        layers: "posix",
        iterations: 100_000,
        flush: "24h",
    },
    SizeCase {
        name: "irregular: random pread/pwrite",
        mode: "random",
        mpi_size: None,
        layers: "posix",
        iterations: 20_000,
        flush: "24h",
    },
    // A quiet job at the default flush interval: a few rows a flush, which the table's newest
    // file takes until it is full, not a file (and a footer) each.
    SizeCase {
        name: "regular: write(1 B), 1000/s",
        mode: "rate:1000",
        mpi_size: None,
        layers: "posix",
        iterations: 4_000,
        flush: "1s",
    },
];

/// Bytes of every table of a dataset but the run's own (`run`, `probes`).
fn dataset_bytes(out: &Path) -> anyhow::Result<u64> {
    let mut total = 0;
    for table in fs::read_dir(out)? {
        let table = table?;
        if matches!(table.file_name().to_str(), Some("run" | "probes")) {
            continue;
        }
        for host in fs::read_dir(table.path())? {
            for f in fs::read_dir(host?.path())? {
                total += f?.metadata()?.len();
            }
        }
    }
    Ok(total)
}

/// The workload command of a case (its `mode` and `mpi_size`): bench_io, or bench_mpi on 4
/// ranks under mpirun (its MPICH build on 2 under MPICH's mpiexec).
fn workload(
    (mode, mpi_size): (&str, Option<u64>),
    n: u64,
    io: &Path,
    mpi: &Path,
    dir: &Path,
) -> Vec<OsString> {
    let mut v: Vec<OsString> = Vec::new();
    match mpi_size {
        None => {
            v.push(io.into());
            v.push(mode.into());
        }
        Some(size) if mode == "mpich" => {
            for a in ["mpiexec.mpich", "-n", "2"] {
                v.push(a.into());
            }
            v.push(mpi.with_file_name("bench_mpich").into());
            v.push("mpiio".into());
            v.push(size.to_string().into());
        }
        Some(size) => {
            for a in ["mpirun", "--oversubscribe", "-np", "4"] {
                v.push(a.into());
            }
            v.push(mpi.into());
            v.push(mode.into());
            v.push(size.to_string().into());
        }
    }
    v.push(n.to_string().into());
    v.push(dir.into());
    v
}

pub fn run(calls: u64, only: Option<&str>, json_path: &Path) -> anyhow::Result<()> {
    anyhow::ensure!(
        is_root(),
        "the benchmark loads eBPF programs: run it as root"
    );
    let cases: Vec<&Case> = CASES
        .iter()
        .filter(|c| only.is_none_or(|o| o.split('|').any(|o| c.name.contains(o))))
        .collect();
    if cases.is_empty() {
        anyhow::bail!(
            "no workload's name contains {:?}; the workloads: {}",
            only.unwrap_or_default(),
            CASES
                .iter()
                .map(|c| c.name.trim())
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    let strata = build_strata()?;
    let dir = target_dir().join("bench");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir)?;
    let exe = build_workload(&dir, "bench_io")?;
    // Shared HDF5 (-shlib), so that its functions are probed in libhdf5.
    let mpi_exe = dir.join("bench_mpi");
    exec(
        Command::new("h5pcc")
            .current_dir(&dir)
            .args(["-shlib", "-O2", "-o"])
            .arg(&mpi_exe)
            .arg(root().join("tests/workloads/bench_mpi.c")),
    )?;
    exec(
        Command::new("mpicc.mpich")
            .args(["-DBENCH_NO_HDF5", "-O2", "-o"])
            .arg(dir.join("bench_mpich"))
            .arg(root().join("tests/workloads/bench_mpi.c")),
    )?;

    // The MPI workloads write hundreds of MiB per run. On a disk, writeback of one run's data
    // slows the next by a varying amount (several-fold here), which buries the tracer's cost;
    // in tmpfs the loop times repeat within a few percent. A real file system only makes the
    // ratio closer to 1.
    let scratch = Scratch::new(&dir)?;
    // Statistics left on (by an admin, or an interrupted run) would add their cost to every
    // probe hit of the timed runs, strata's and the baselines' alike.
    let stats_off = BpfStats::set(false)?;
    if stats_off.was_on() {
        println!(
            "the kernel's BPF statistics were on (kernel.bpf_stats_enabled): off for the timed \
             runs, on again at the end"
        );
    }
    let cpus = Cpus::split();
    let empty_run_ns = empty_program_ns(&strata, &exe, &dir, cpus.as_ref())?;
    println!(
        "with the kernel's BPF statistics on, an empty program run takes {empty_run_ns:.0} ns; \
         strata's programs are reported beyond that"
    );
    match &cpus {
        Some(c) => println!(
            "the workloads held to the floor run on CPU {} and the tracers on CPU {}",
            c.traced,
            c.tracer_list()
        ),
        None => println!("one CPU: the workloads held to the floor share it with the tracers"),
    }
    let mut results = Vec::new();
    // The write(1 B) case's kernel programs and empty probe, per call, for the own-work sum.
    let mut write_kernel = None;
    // What the targets are checked against, gathered as the run goes.
    let mut seen = Seen::default();
    println!(
        "{:<20} {:>12} {:>12} {:>8} {:>12} {:>10} {:>8} {:>6} {:>8}",
        "workload",
        "untraced ns",
        "traced ns",
        "ratio",
        "+ns/call",
        "events/s",
        "B/event",
        "lost",
        "RSS MiB"
    );
    for case in cases {
        let n = calls / case.divisor;
        // The workload's command, the same for every run of the case.
        let argv_of = |n| {
            workload(
                (case.mode, case.mpi_size),
                n,
                &exe,
                &mpi_exe,
                scratch.dir(case.mpi_size),
            )
        };
        let argv = argv_of(n);
        // `strata record` of the case's layers into `out_dir`, before the command's `--`.
        let record_args = |out_dir: &Path| {
            let mut args: Vec<OsString> = ["record", "-q", "-o"].map(OsString::from).into();
            args.push(out_dir.into());
            if !case.layers.is_empty() {
                args.extend(["--layers", case.layers].map(OsString::from));
            }
            args
        };
        let loop_ns_of = |traced: bool,
                          argv: &[OsString],
                          pin: Option<&Cpus>|
         -> anyhow::Result<(f64, Option<Stats>)> {
            let out_dir = dir.join(format!("out-{}", case.mode));
            let _ = fs::remove_dir_all(&out_dir);
            let mut cmd = if traced {
                let mut c = Command::new(&strata);
                c.args(record_args(&out_dir)).arg("--").args(argv);
                c
            } else {
                let mut c = Command::new(&argv[0]);
                c.args(&argv[1..]);
                c
            };
            cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
            if let Some(cpus) = pin {
                cpus.pin(&mut cmd);
            }
            let text = output(&mut cmd)?;
            let ns: f64 = text
                .trim()
                .parse()
                .with_context(|| format!("bench_io printed {text:?}"))?;
            Ok((ns, traced.then(|| stats(&out_dir)).transpose()?))
        };
        let loop_ns = |traced: bool| loop_ns_of(traced, &argv, None);
        // Where the case has baselines, its timed runs keep the loop on one CPU and the
        // tracer's threads on the others (see `Cpus`).
        let pin = case.empty.and(cpus.as_ref());
        // The same loop under empty probes of the same kind and under the floor's: one run.
        // `strata bench-empty` of a baseline over `argv`, held to the CPUs as the timed runs.
        let baseline = |args: &[&str], argv: &[OsString]| {
            let mut cmd = Command::new(&strata);
            cmd.arg("bench-empty").args(args).arg("--").args(argv);
            if let Some(cpus) = pin {
                cpus.pin(&mut cmd);
            }
            cmd
        };
        let under = |args: &[&str]| -> anyhow::Result<f64> {
            let text = output(&mut baseline(args, &argv))?;
            text.trim()
                .parse()
                .with_context(|| format!("bench_io printed {text:?}"))
        };
        // Untraced, traced and under each baseline in turn; the best of each. In turn, so
        // that a slow spell of a shared machine weighs on all of them alike, not on strata's
        // runs or the floor's alone. Fifteen rounds where strata is held to the floor, with
        // the loop pinned apart from the tracers: unpinned, a traced loop's time is bimodal
        // here (with a tracer's reader on the loop's CPU or not), and strata's reader, which
        // does more per record than the floor's, lands there more. The reader's cost is
        // measured apart (its CPU time per event, below). Each round also runs the loop
        // untraced and traced unpinned, for what a job whose CPUs strata shares sees. Five
        // for the others: the ratio of their best runs moved by a third between runs of a
        // busy machine (4 ranks sharing 2 CPUs), and the ratios of the rounds show how far
        // one run can say it.
        let rounds = if case.empty.is_some() { 15 } else { 5 };
        // Per round: untraced, traced, then each baseline's loop time.
        let mut timed: Vec<[f64; 5]> = Vec::new();
        let mut traced = f64::MAX;
        let mut st = None;
        let mut shared = pin.map(|_| (f64::MAX, f64::MAX));
        // The irq-work interrupts of each traced run, on the loop's CPU where it is pinned,
        // else on all (the ranks move): a ring-buffer record that wakes the reader raises one
        // on the CPU that made it.
        let iwi_cpu = pin.map(|c| c.traced);
        let mut interrupts = Vec::new();
        for _ in 0..rounds {
            let mut round = [f64::MAX; 5];
            round[0] = loop_ns_of(false, &argv, pin)?.0;
            let before = irq_work_interrupts(iwi_cpu);
            let (t, s) = loop_ns_of(true, &argv, pin)?;
            if let (Some(b), Some(a)) = (before, irq_work_interrupts(iwi_cpu)) {
                interrupts.push(a.saturating_sub(b));
            }
            round[1] = t;
            if t < traced {
                traced = t;
                st = s;
            }
            for (slot, args) in round[2..].iter_mut().zip(case.empty.iter().flatten()) {
                *slot = under(args)?;
            }
            timed.push(round);
            if let Some((b, t)) = shared.as_mut() {
                *b = b.min(loop_ns(false)?.0);
                *t = t.min(loop_ns(true)?.0);
            }
        }
        let st = st.context("no traced run")?;
        let best = best_of(timed.iter());
        let (base, baselines) = (best[0], [best[2], best[3], best[4]]);
        let calls_made = (n * case.calls_per_iter) as f64;
        let per_call = (traced - base) / calls_made;
        let [empty_per_call, stamp_per_call, floor_per_call] =
            baselines.map(|b| case.empty.map(|_| (b - base) / calls_made));
        // Per call the loop made or strata recorded, whichever more: a loop of calls the
        // kernel drops (the ioctl case) records next to none.
        let loop_calls = n * case.calls_per_iter;
        let dropped = st.calls < loop_calls / 2;
        let floor = case.empty.filter(|_| !dropped).map(|[_, _, floor]| floor);
        // How far the ratio to the floor moves within this run: the same ratio from each
        // third of the rounds (every third round, so that each spans the run).
        let thirds = floor_per_call.filter(|_| !dropped).map(|_| {
            [0, 1, 2].map(|g| {
                let b = best_of(timed.iter().skip(g).step_by(3));
                (b[1] - b[0]) / (b[4] - b[0]).max(1.0)
            })
        });
        let spread = thirds.map(|r| {
            let lo = r.iter().copied().fold(f64::MAX, f64::min);
            let hi = r.iter().copied().fold(f64::MIN, f64::max);
            (lo, hi)
        });
        // strata's kernel programs, from more traced runs with BPF statistics on: what they
        // do beyond the least a recorder does, without the trap cost both pay, and steadier
        // than the loop times (the programs time themselves). Where the case has a floor, the
        // floor's programs run alone on the same loop, held to its CPU as in the timed runs,
        // in turn with strata (each first in half of six rounds): the ratio of each round's
        // pair, and the pair with the median ratio. Not both on the same calls in one run:
        // there the statistics charge the programs that run first on a call 55-100 ns more
        // than the same programs run second (here strata's 340 against 240 ns per call, the
        // floor's 305 against 250), so that the ratio split by order (0.8x and 1.37x) and the
        // median took one side, where alone, as each runs in the timed runs, strata's were
        // 1.00-1.11x the floor's, as the loop times and a sampled profile also had them.
        // Each figure is the difference of runs of n and 3n iterations: the statistics count
        // every run of the programs, also on the syscalls of the tracers' own start and stop
        // and of the workload's (filtered out at once, but counted), which the difference
        // cancels.
        let argv3 = argv_of(3 * n);
        // The floor alone under the statistics: its programs' time, their runs and the
        // records they sent.
        let floor_alone = |argv: &[OsString], floor: &[&str]| {
            let out = baseline(floor, argv)
                .output()
                .context("cannot run strata bench-empty")?;
            let err = String::from_utf8_lossy(&out.stderr);
            anyhow::ensure!(out.status.success(), "the floor's run failed: {err}");
            bench_empty_figures(&err)
        };
        // strata's programs per call it recorded.
        let strata_prog = |short: &Stats, long: &Stats| {
            let calls = long.calls.saturating_sub(short.calls);
            ProgramTime::per_call(
                long.bpf_run_ns as f64 - short.bpf_run_ns as f64,
                long.bpf_runs.saturating_sub(short.bpf_runs) as f64,
                calls.max(2 * loop_calls).max(1) as f64,
                empty_run_ns,
            )
        };
        let mut progs = Vec::new();
        match floor {
            None => {
                let _on = BpfStats::on()?;
                let short = loop_ns(true)?.1.context("no traced run")?;
                let long = loop_ns_of(true, &argv3, None)?.1.context("no traced run")?;
                progs.push((strata_prog(&short, &long), None));
            }
            Some(floor) => {
                for round in 0..6 {
                    let _on = BpfStats::on()?;
                    let strata_runs = || -> anyhow::Result<ProgramTime> {
                        let short = loop_ns_of(true, &argv, pin)?.1.context("no traced run")?;
                        let long = loop_ns_of(true, &argv3, pin)?.1.context("no traced run")?;
                        Ok(strata_prog(&short, &long))
                    };
                    let floor_runs = || -> anyhow::Result<ProgramTime> {
                        let (ns, runs, records) = floor_alone(&argv, floor)?;
                        let (ns3, runs3, records3) = floor_alone(&argv3, floor)?;
                        // Per record, as strata's per call it recorded: the floor also keeps
                        // the calls of processes beside the loop (a shell's, the system's).
                        Ok(ProgramTime::per_call(
                            ns3 - ns,
                            runs3 - runs,
                            (records3 - records).max(2.0 * loop_calls as f64).max(1.0),
                            empty_run_ns,
                        ))
                    };
                    let (s, f) = if round % 2 == 0 {
                        let s = strata_runs()?;
                        (s, floor_runs()?)
                    } else {
                        let f = floor_runs()?;
                        (strata_runs()?, f)
                    };
                    progs.push((s, Some(f)));
                }
            }
        }
        // The pair with the median ratio.
        let ratio =
            |(s, f): &(ProgramTime, Option<ProgramTime>)| s.ns / f.map_or(1.0, |f| f.ns.max(1.0));
        progs.sort_by(|a, b| ratio(a).total_cmp(&ratio(b)));
        let (prog, floor_prog) = progs[progs.len() / 2];
        // Every round's pair with the empty programs' cost, as the programs were timed.
        let program_rounds: Vec<_> = progs
            .iter()
            .map(|(s, f)| [Some(s.with_empty), f.map(|f| f.with_empty)])
            .collect();
        let ratios_with_empty = progs
            .iter()
            .filter_map(|(s, f)| f.map(|f| s.with_empty / f.with_empty.max(1.0)));
        let (lo, hi) =
            ratios_with_empty.fold((f64::MAX, f64::MIN), |(lo, hi), r| (lo.min(r), hi.max(r)));
        let events_per_s = st.calls as f64 / (traced / 1e9);
        let bytes_per_event = st.parquet_bytes as f64 / st.calls.max(1) as f64;
        println!(
            "{:<20} {:>12.0} {:>12.0} {:>8.2} {:>12.0} {:>10.0} {:>8.1} {:>6} {:>8.1}",
            case.name,
            base,
            traced,
            traced / base,
            per_call,
            events_per_s,
            bytes_per_event,
            st.lost,
            st.peak_rss_kib as f64 / 1024.0
        );
        let iwi = median(&mut interrupts);
        results.push(json!({
            "workload": case.name,
            "iterations": n,
            "untraced_loop_ns": base,
            "traced_loop_ns": traced,
            "overhead_ratio": traced / base,
            "added_ns_per_call": per_call,
            "calls_recorded": st.calls,
            "events_per_second": events_per_s,
            "parquet_bytes_per_call": bytes_per_event,
            "events_lost": st.lost,
            "peak_rss_kib": st.peak_rss_kib,
            "empty_probe_ns_per_call": empty_per_call,
            "strata_own_ns_per_call": empty_per_call.map(|e| per_call - e),
            "stamp_ns_per_call": stamp_per_call,
            "floor_ns_per_call": floor_per_call,
            "strata_above_floor_ns_per_call": floor_per_call.map(|f| per_call - f),
            "above_floor_ratio_by_thirds": thirds,
            "kernel_program_ns_per_call": prog.ns,
            "kernel_program_runs_per_call": prog.runs,
            "kernel_program_ns_per_call_with_empty": prog.with_empty,
            "floor_program_ns_per_call": floor_prog.map(|f| f.ns),
            "floor_program_runs_per_call": floor_prog.map(|f| f.runs),
            "floor_program_ns_per_call_with_empty": floor_prog.map(|f| f.with_empty),
            "program_rounds_ns_per_call_with_empty": program_rounds,
            "pinned": pin.is_some(),
            "loop_cpu_irq_work_per_traced_run": iwi.filter(|_| pin.is_some()),
            "irq_work_per_traced_run_all_cpus": iwi.filter(|_| pin.is_none()),
            // Every round's loop times, for telling a slow spell from a steady cost.
            "untraced_rounds_ns": timed.iter().map(|r| r[0]).collect::<Vec<_>>(),
            "traced_rounds_ns": timed.iter().map(|r| r[1]).collect::<Vec<_>>(),
            "unpinned_untraced_loop_ns": shared.map(|s| s.0),
            "unpinned_traced_loop_ns": shared.map(|s| s.1),
            "unpinned_added_ns_per_call": shared.map(|(b, t)| (t - b) / calls_made),
        }));
        if traced < 0.9 * base {
            // No tracer speeds a job up: a slow spell hit the untraced runs.
            let ms = |i: usize| {
                timed
                    .iter()
                    .map(|r| format!("{:.0}", r[i] / 1e6))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            println!(
                "{:<20} traced faster than untraced: noise, not a figure (untraced rounds {} ms; traced {} ms)",
                "",
                ms(0),
                ms(1)
            );
        }
        if case.empty.is_none() {
            let mut r: Vec<f64> = timed.iter().map(|r| r[1] / r[0]).collect();
            r.sort_by(f64::total_cmp);
            println!(
                "{:<20} traced/untraced in each of {} rounds: {:.2}-{:.2}x, median {:.2}x",
                "",
                r.len(),
                r[0],
                r[r.len() - 1],
                r[r.len() / 2]
            );
        }
        if let Some((b, t)) = shared {
            println!(
                "{:<20} unpinned (strata's threads free to share the loop's CPU): {:.2}x, +{:.0} ns per call",
                "",
                t / b,
                (t - b) / calls_made
            );
        }
        match floor_prog {
            // Both with and without what an empty program costs under the statistics: that
            // cost, measured once per run and taken twice per call from both, moves the
            // smaller figure, the floor's, more, and with it the first ratio.
            Some(f) => println!(
                "{:<20} strata's kernel programs: {:.0} ns per call ({:.1} runs); the floor's on the same loop {:.0} ns ({:.1} runs): {:.2}x ({:.0} against {:.0} ns, {:.2}x, with the empty programs' cost; {:.2}-{:.2}x over the rounds)",
                "",
                prog.ns,
                prog.runs,
                f.ns,
                f.runs,
                prog.ns / f.ns.max(1.0),
                prog.with_empty,
                f.with_empty,
                prog.with_empty / f.with_empty.max(1.0),
                lo,
                hi
            ),
            None => println!(
                "{:<20} strata's kernel programs: {:.0} ns per call ({:.1} runs)",
                "", prog.ns, prog.runs
            ),
        }
        if let Some(m) = iwi {
            println!(
                "{:<20} irq-work interrupts on {} (the reader's wakeups): {m} per traced run of {} calls (median of {})",
                "",
                if pin.is_some() {
                    "the loop's CPU"
                } else {
                    "all CPUs"
                },
                calls_made,
                interrupts.len()
            );
        }
        if case.mode == "syscall" {
            write_kernel = empty_per_call.map(|e| (prog.ns, e));
        }
        if let (Some(f), false) = (floor_per_call, dropped) {
            seen.above_floor.push(AboveFloor {
                case: case.name,
                ratio: per_call / f.max(1.0),
                thirds: spread,
            });
        }
        if let (Some(e), true) = (empty_per_call, dropped) {
            println!(
                "{:<20} not recorded: an empty probe adds {e:.0} ns per call, strata {per_call:.0} ns ({:.1}x the empty probe): its filter is {:.0} ns",
                "",
                per_call / e.max(1.0),
                per_call - e,
            );
        } else if let (Some(e), Some(s), Some(f)) = (empty_per_call, stamp_per_call, floor_per_call)
        {
            println!(
                "{:<20} an empty probe adds {e:.0} ns per call, strata {per_call:.0} ns ({:.1}x the empty probe): its own work is {:.0} ns",
                "",
                per_call / e.max(1.0),
                per_call - e,
            );
            println!(
                "{:<20} the floor (the least a per-call recorder does) adds {f:.0} ns ({:.1}x the empty probe); strata is {:.2}x the floor{}, {:.0} ns above it",
                "",
                f / e.max(1.0),
                per_call / f.max(1.0),
                spread.map_or(String::new(), |(lo, hi)| format!(
                    " ({lo:.2}-{hi:.2}x in thirds of the rounds)"
                )),
                per_call - f,
            );
            println!(
                "{:<20} of the floor: time stamps and the record built, unsent, {s:.0} ns ({:.1}x the empty probe); sending it through the ring buffer {:.0} ns",
                "",
                s / e.max(1.0),
                f - s,
            );
        }
    }
    if only.is_some() {
        return write_results(json_path, results);
    }
    // What the processes strata does not trace pay beside it: a run of a command (its
    // process tree, by pid), and one of a cgroup (as the daemon traces jobs).
    let (alone, beside, empty, beside_cgroup) = untraced_beside(&strata, &exe, &dir, calls)?;
    println!(
        "\na process strata does not trace, beside it: +{:.0} ns per write(1 B) (an empty probe adds {:.0} ns): strata's filter is {:.0} ns",
        beside - alone,
        empty - alone,
        beside - empty
    );
    results.push(json!({
        "workload": "untraced write(1 B) beside strata",
        "added_ns_per_call": beside - alone,
        "empty_probe_ns_per_call": empty - alone,
    }));
    if let Some(b) = beside_cgroup {
        println!(
            "beside a run that traces a cgroup (--cgroup, as the daemon does jobs): +{:.0} ns per write(1 B): strata's filter is {:.0} ns",
            b - alone,
            b - empty
        );
        results.push(json!({
            "workload": "untraced write(1 B) beside strata --cgroup",
            "added_ns_per_call": b - alone,
            "empty_probe_ns_per_call": empty - alone,
        }));
    }

    // Sustained event rates: a paced workload for about two seconds at each rate, with the
    // default ring buffer. What is lost, and what strata's memory does as the rate grows.
    println!(
        "\n{:<20} {:>12} {:>12} {:>10} {:>8}",
        "sustained rate", "achieved/s", "recorded", "lost", "RSS MiB"
    );
    // A paced run of bench_io's write loop: its achieved rate and strata's figures.
    let paced = |rate: u64, n: u64| -> anyhow::Result<(f64, Stats)> {
        let out_dir = dir.join("out-rate");
        let _ = fs::remove_dir_all(&out_dir);
        let text = output(
            Command::new(&strata)
                .args(["record", "-q", "--layers", "posix", "-o"])
                .arg(&out_dir)
                .arg("--")
                .arg(&exe)
                .args([&format!("rate:{rate}"), &n.to_string()])
                .arg(&dir),
        )?;
        let ns: f64 = text
            .trim()
            .parse()
            .with_context(|| format!("bench_io printed {text:?}"))?;
        Ok((n as f64 / (ns / 1e9), stats(&out_dir)?))
    };
    for rate in [50_000u64, 100_000, PACED_RATE, 400_000, 800_000] {
        let (achieved, st) = paced(rate, rate * 2)?;
        if rate == PACED_RATE {
            seen.lost_at_paced_rate = Some(st.lost);
        }
        seen.rss_by_rate.push((rate, st.peak_rss_kib));
        println!(
            "{:<20} {:>12.0} {:>12} {:>10} {:>8.1}",
            format!("{rate} writes/s"),
            achieved,
            st.calls,
            st.lost,
            st.peak_rss_kib as f64 / 1024.0
        );
        results.push(json!({
            "workload": format!("sustained {rate} writes/s"),
            "target_rate": rate,
            "achieved_rate": achieved,
            "calls_recorded": st.calls,
            "events_lost": st.lost,
            "peak_rss_kib": st.peak_rss_kib,
        }));
    }
    // strata's CPU time per event while it keeps up with a job: runs of 0.5 and 3 s at the
    // same rate differ by 2.5 s of events, start-up (reading BTF, loading programs)
    // cancelled; the median of five pairs (single pairs ranged over 0.7-1.4x their median
    // here, on a shared machine). A loop at full speed would not do: strata is
    // busy for as long as records come faster than it waits for them, whatever its work.
    // At a rate and four times that: the cost per event should not grow with the rate.
    let mut paced_cpu = None;
    for rate in [PACED_RATE, 4 * PACED_RATE] {
        let mut cpu = Vec::new();
        for _ in 0..PACED_PAIRS {
            let (_, short) = paced(rate, rate / 2)?;
            let (_, long) = paced(rate, rate * 3)?;
            let events = long.calls.saturating_sub(short.calls).max(1);
            cpu.push(long.cpu_ns.saturating_sub(short.cpu_ns) as f64 / events as f64);
        }
        cpu.sort_by(f64::total_cmp);
        let (median, min, max) = (cpu[cpu.len() / 2], cpu[0], cpu[cpu.len() - 1]);
        if rate == PACED_RATE {
            paced_cpu = Some(median);
        }
        println!(
            "strata's CPU time per event at {rate} writes/s: {median:.0} ns (range {min:.0}-{max:.0}), {:.1}% of a core",
            median * rate as f64 / 1e7
        );
        results.push(json!({
            "workload": format!("strata CPU per event at {rate} writes/s"),
            "cpu_ns_per_event": median,
            "cpu_ns_per_event_min": min,
            "cpu_ns_per_event_max": max,
        }));
    }
    // The same work counted rather than timed, which a shared machine cannot disturb.
    let counted = counted_instructions(&strata, &exe, &dir)?;
    let (median, min, max) = (counted[1], counted[0], counted[2]);
    println!(
        "strata's user-space instructions per event at {COUNTED_RATE} writes/s (callgrind, counted, not timed): {median:.0} (range {min:.0}-{max:.0})"
    );
    results.push(json!({
        "workload": format!("strata instructions per event at {COUNTED_RATE} writes/s"),
        "instructions_per_event": median,
        "instructions_per_event_min": min,
        "instructions_per_event_max": max,
    }));

    // Trace size in steady state. A traced job's start-up (an MPI job opens ~2,000 files of
    // its component libraries) weighs on the bytes per event of short runs; two runs of n and
    // 3n iterations differ by 2n iterations' events and bytes, start-up cancelled. Files are
    // cut by row count only (no flush timer), but the time stamps' deltas still make the size
    // of the same calls vary from run to run (by a third for the write loop): the median of
    // three pairs, and their range. The quiet job runs at 1 s flushes, as strata does by
    // default; its line says how many files its calls table had after the longer run.
    println!(
        "\n{:<32} {:>10} {:>10} {:>8} {:>15}",
        "trace size, steady state", "events", "bytes", "B/event", "range"
    );
    for sc in SIZE_CASES {
        let mut pairs = Vec::new();
        let mut calls_files = 0;
        for _ in 0..3 {
            let mut runs = Vec::new();
            for n in [sc.iterations, 3 * sc.iterations] {
                let out_dir = dir.join(format!("out-size-{}", sc.mode));
                let _ = fs::remove_dir_all(&out_dir);
                let mut cmd = Command::new(&strata);
                cmd.args([
                    "record",
                    "-q",
                    "--flush-interval",
                    sc.flush,
                    "--layers",
                    sc.layers,
                ])
                .arg("-o")
                .arg(&out_dir)
                .arg("--")
                .args(workload(
                    (sc.mode, sc.mpi_size),
                    n,
                    &exe,
                    &mpi_exe,
                    scratch.dir(sc.mpi_size),
                ));
                output(mpi_env(&mut cmd))?;
                let st = stats(&out_dir)?;
                anyhow::ensure!(st.lost == 0, "{}: {} events lost", sc.name, st.lost);
                runs.push((st.calls, dataset_bytes(&out_dir)?));
                calls_files = fs::read_dir(out_dir.join("calls"))?
                    .map(|host| Ok(fs::read_dir(host?.path())?.count()))
                    .sum::<std::io::Result<usize>>()?;
            }
            let events = runs[1].0.saturating_sub(runs[0].0);
            let bytes = runs[1].1.saturating_sub(runs[0].1);
            pairs.push((bytes as f64 / events.max(1) as f64, events, bytes));
        }
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (per_event, events, bytes) = pairs[1];
        let range = format!("{:.2}-{:.2}", pairs[0].0, pairs[2].0);
        if sc.name.starts_with("regular") {
            seen.regular_bytes.push((sc.name, per_event));
        }
        println!(
            "{:<32} {:>10} {:>10} {:>8.2} {:>15}",
            sc.name, events, bytes, per_event, range
        );
        if sc.flush != "24h" {
            println!(
                "{:<32} calls files of its longer run ({} flushes): {calls_files}",
                "", sc.flush
            );
        }
        results.push(json!({
            "workload": format!("trace size, steady state: {}", sc.name),
            "events": events,
            "dataset_bytes": bytes,
            "dataset_bytes_per_event": per_event,
            "dataset_bytes_per_event_min": pairs[0].0,
            "dataset_bytes_per_event_max": pairs[2].0,
            "flush_interval": sc.flush,
            "calls_files_of_the_longer_run": calls_files,
        }));
    }

    // The target's measure: strata's own work per event, kernel programs and user space
    // together, against an empty probe. User space runs beside the job (another core here),
    // so the loop's wall time above hides it; on a node whose cores all run ranks it is
    // taken from them.
    if let (Some((kernel, empty)), Some(user)) = (write_kernel, paced_cpu) {
        let own = kernel + user;
        seen.own_and_empty = Some((own, empty));
        println!(
            "\nstrata's own work per write(1 B) event: kernel programs {kernel:.0} ns + user space {user:.0} ns CPU (at {PACED_RATE} writes/s) = {own:.0} ns, {:.1}x the {empty:.0} ns an empty probe adds",
            own / empty.max(1.0)
        );
        results.push(json!({
            "workload": "own work per event: write(1 B)",
            "kernel_program_ns_per_event": kernel,
            "user_space_cpu_ns_per_event": user,
            "own_ns_per_event": own,
            "empty_probe_ns_per_call": empty,
        }));
    }

    // strata's own user-space work, fed from a synthetic stream (no kernel, no workload).
    // Three runs: on a shared machine a neighbour only ever slows a run down, so the best
    // run is strata's own rate and the spread says how noisy the machine was.
    let mut rates = Vec::new();
    let mut bytes = 0.0;
    for run in 0..3 {
        let text = output(
            Command::new(&strata)
                .args(["bench-pipeline", "--events", "2000000", "--dir"])
                .arg(dir.join(format!("pipeline-{run}"))),
        )?;
        let get = |name| field(&text, name);
        rates.push(get("events_per_s").context("bench-pipeline printed no rate")?);
        bytes = get("parquet_bytes").unwrap_or(0.0) / get("calls").unwrap_or(1.0).max(1.0);
    }
    rates.sort_by(f64::total_cmp);
    let (best, median) = (rates[2], rates[1]);
    seen.pipeline = Some(best);
    println!(
        "user-space pipeline (decode, correlate, Parquet; one core): {best:.0} events/s best of 3 (median {median:.0}), {bytes:.2} Parquet bytes per call"
    );
    results.push(json!({
        "workload": "user-space pipeline (synthetic stream)",
        "events_per_second": best,
        "events_per_second_median": median,
        "parquet_bytes_per_call": bytes,
    }));
    // A run's fixed cost, with the default layers: from strata's start to the command's
    // (loading, verifying and attaching), and from the command's exit to strata's (draining,
    // writing the last files, detaching). The command prints the time it starts at.
    let mut fixed = Vec::new();
    for _ in 0..3 {
        let out_dir = dir.join("out-fixed");
        let _ = fs::remove_dir_all(&out_dir);
        let t0 = monotonic_ns();
        let text = output(
            Command::new(&strata)
                .args(["record", "-q", "-o"])
                .arg(&out_dir)
                .arg("--")
                .arg(&exe)
                .args(["clock", "0"])
                .arg(scratch.dir(None)),
        )?;
        let t2 = monotonic_ns();
        let t1: f64 = text
            .trim()
            .parse()
            .with_context(|| format!("bench_io clock printed {text:?}"))?;
        fixed.push(((t1 - t0) / 1e6, (t2 - t1) / 1e6));
    }
    fixed.sort_by(|a, b| (a.0 + a.1).total_cmp(&(b.0 + b.1)));
    let (start_ms, stop_ms) = fixed[1];
    println!(
        "a run's fixed cost (default layers, median of 3): {start_ms:.0} ms before the command runs, {stop_ms:.0} ms after it exits"
    );
    results.push(json!({
        "workload": "fixed cost of a run (default layers)",
        "start_ms": start_ms,
        "stop_ms": stop_ms,
    }));
    results.push(crate::late_library::measure(&strata, &dir)?);
    results.push(crate::late_library::measure_own_libc(&strata, &dir)?);
    results.push(crate::churn::measure(&strata, &dir)?);
    results.push(crate::churn::measure_breakpoints(&strata, &exe, &dir)?);
    let (idle_kib, peak_kib) = idle_memory(&strata, &dir.join("out-idle"))?;
    println!(
        "strata's resident memory while its command runs and makes no events (default layers): {:.1} MiB; its start's peak {:.1} MiB",
        idle_kib as f64 / 1024.0,
        peak_kib as f64 / 1024.0
    );
    results.push(json!({
        "workload": "resident memory of an idle run (default layers)",
        "idle_rss_kib": idle_kib,
        "peak_rss_kib": peak_kib,
    }));
    seen.user_share = paced_cpu.map(|ns| ns * PACED_RATE as f64 / 1e9);
    let targets = targets(&seen);
    println!("\ntargets");
    for t in &targets {
        let verdict = match t.met {
            Some(true) => "met",
            Some(false) => "NOT MET",
            None => "-",
        };
        println!("  {:<8} {}: {}", verdict, t.target, t.measured);
    }
    results.push(json!({
        "workload": "targets",
        "targets": targets
            .iter()
            .map(|t| json!({ "target": t.target, "measured": t.measured, "met": t.met }))
            .collect::<Vec<_>>(),
    }));
    write_results(json_path, results)
}

fn write_results(json_path: &Path, results: Vec<serde_json::Value>) -> anyhow::Result<()> {
    if let Some(parent) = json_path.parent() {
        fs::create_dir_all(parent)?;
    }
    fs::write(
        json_path,
        serde_json::to_string_pretty(&json!({ "results": results }))?,
    )?;
    println!("results written to {}", json_path.display());
    Ok(())
}

/// The figures of a run that the performance targets are checked against.
#[derive(Default)]
struct Seen {
    /// strata's own work per write(1 B) event (kernel programs and user space) and the time
    /// an empty probe adds, ns.
    own_and_empty: Option<(f64, f64)>,
    /// Per case with a floor: strata's added time per call over the floor's.
    above_floor: Vec<AboveFloor>,
    /// Share of a core strata's user space takes at `PACED_RATE` events per second.
    user_share: Option<f64>,
    /// Best pipeline rate, events per second.
    pipeline: Option<f64>,
    /// Steady-state dataset bytes per event of the regular workloads.
    regular_bytes: Vec<(&'static str, f64)>,
    lost_at_paced_rate: Option<u64>,
    /// Peak resident KiB at each sustained rate.
    rss_by_rate: Vec<(u64, u64)>,
}

/// strata's added time per call over the floor's in one case.
struct AboveFloor {
    case: &'static str,
    ratio: f64,
    /// The least and greatest of the ratio in thirds of the rounds.
    thirds: Option<(f64, f64)>,
}

/// A target, what this run measured of it, and whether that meets it (None: this run
/// cannot tell).
struct Target {
    target: String,
    measured: String,
    met: Option<bool>,
}

/// The targets of the performance work, each beside this run's figure. The first is
/// stated per event against an empty probe; the two after it are the measures proposed
/// for it, against the floor (the least a per-call recorder does) and per core.
fn targets(seen: &Seen) -> Vec<Target> {
    let mut t = Vec::new();
    let mut add = |target: String, measured: String, met: Option<bool>| {
        t.push(Target {
            target,
            measured,
            met,
        })
    };
    if let Some((own, empty)) = seen.own_and_empty {
        add(
            "strata's own work per event (kernel programs and user space) at most 10% above \
             an empty probe's"
                .into(),
            format!(
                "write(1 B): {own:.0} ns against {empty:.0} ns, {:.0}% above",
                own / empty.max(1.0) * 100.0
            ),
            Some(own <= 0.10 * empty),
        );
    }
    if !seen.above_floor.is_empty() {
        let (each, met) = each_within(
            &seen.above_floor,
            1.15,
            |a| a.ratio,
            |a| match a.thirds {
                Some((lo, hi)) => {
                    format!("{} {:.2}x ({lo:.2}-{hi:.2}x in thirds)", a.case, a.ratio)
                }
                None => format!("{} {:.2}x", a.case, a.ratio),
            },
        );
        add(
            "(proposed) strata's added time per call at most 1.15x the floor's, on the traced loop's CPU".into(),
            each,
            met,
        );
    }
    if let Some(share) = seen.user_share {
        add(
            format!("(proposed) user space at most 10% of a core at {PACED_RATE} events/s"),
            format!("{:.1}%", share * 100.0),
            Some(share <= 0.10),
        );
    }
    if let Some(rate) = seen.pipeline {
        add(
            "pipeline at least 1,000,000 events/s on one core".into(),
            format!("{rate:.0} events/s"),
            Some(rate >= 1e6),
        );
    }
    if !seen.regular_bytes.is_empty() {
        let (each, met) = each_within(
            &seen.regular_bytes,
            8.0,
            |(_, b)| *b,
            |(n, b)| format!("{} {b:.2}", n.trim_start_matches("regular: ")),
        );
        add(
            "at most 8 bytes per event on regular workloads".into(),
            each,
            met,
        );
    }
    if let Some(lost) = seen.lost_at_paced_rate {
        add(
            format!("no events lost at {PACED_RATE} events/s sustained"),
            format!("{lost} lost"),
            Some(lost == 0),
        );
    }
    if let (Some(first), Some(last)) = (seen.rss_by_rate.first(), seen.rss_by_rate.last()) {
        add(
            "memory bounded regardless of run length or event rate".into(),
            format!(
                "peak {:.0} MiB at {} and {:.0} MiB at {} events/s; over hours: cargo xtask soak",
                first.1 as f64 / 1024.0,
                first.0,
                last.1 as f64 / 1024.0,
                last.0
            ),
            None,
        );
    }
    t
}

/// Each case as `show` writes it, and whether the largest `value` is at most `bound`.
fn each_within<T>(
    cases: &[T],
    bound: f64,
    value: impl Fn(&T) -> f64,
    show: impl Fn(&T) -> String,
) -> (String, Option<bool>) {
    let worst = cases.iter().map(value).fold(0.0, f64::max);
    let each: Vec<_> = cases.iter().map(show).collect();
    (each.join(", "), Some(worst <= bound))
}

/// strata's resident memory (VmRSS, VmHWM in KiB) while the command it started waits: what
/// it holds for a run once started, and what starting took.
fn idle_memory(strata: &Path, out_dir: &Path) -> anyhow::Result<(u64, u64)> {
    use std::io::BufRead as _;
    let _ = fs::remove_dir_all(out_dir);
    let mut child = Command::new(strata)
        .args(["record", "-q", "-o"])
        .arg(out_dir)
        .args(["--", "sh", "-c", "echo started; exec sleep 2"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .context("cannot run strata record")?;
    let stdout = child.stdout.take().context("no stdout")?;
    let mut line = String::new();
    std::io::BufReader::new(stdout).read_line(&mut line)?;
    anyhow::ensure!(line.trim() == "started", "the command printed {line:?}");
    let status = fs::read_to_string(format!("/proc/{}/status", child.id()))?;
    let kib = |key: &str| -> anyhow::Result<u64> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key)?.split_whitespace().next()?.parse().ok())
            .with_context(|| format!("no {key} in strata's /proc status"))
    };
    let memory = (kib("VmRSS:")?, kib("VmHWM:")?);
    anyhow::ensure!(child.wait()?.success(), "strata record failed");
    Ok(memory)
}

/// CLOCK_MONOTONIC in ns, the clock bench_io prints.
fn monotonic_ns() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as f64 * 1e9 + t.tv_nsec as f64
}

/// CPU `cpu`'s count of irq-work interrupts (`IWI` in /proc/interrupts; x86), or all CPUs'
/// (None); None where the kernel shows none.
fn irq_work_interrupts(cpu: Option<usize>) -> Option<u64> {
    irq_work_of(&fs::read_to_string("/proc/interrupts").ok()?, cpu)
}

/// CPU `cpu`'s `IWI` count in the text of /proc/interrupts, or the sum of all CPUs' (None).
fn irq_work_of(text: &str, cpu: Option<usize>) -> Option<u64> {
    let mut lines = text.lines();
    // The header names the online CPUs, one column each.
    let header: Vec<&str> = lines.next()?.split_whitespace().collect();
    let iwi = lines.find(|l| l.trim_start().starts_with("IWI:"))?;
    let mut counts = iwi
        .split_whitespace()
        .skip(1)
        .map(|c| c.parse::<u64>().ok());
    match cpu {
        Some(cpu) => {
            let column = header.iter().position(|c| *c == format!("CPU{cpu}"))?;
            counts.nth(column)?
        }
        None => counts.take(header.len()).sum(),
    }
}

/// The median of `v` (sorted in place), None when empty.
fn median(v: &mut [u64]) -> Option<u64> {
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}

/// The CPUs of the pinned runs: the traced loop on one (the last this process may use), the
/// tracer's threads on the others, as an HPC job's ranks are bound to cores and a tracer can
/// be kept on others. The loop pins itself (bench_io's `BENCH_IO_CPU`), as strata starts it.
struct Cpus {
    traced: usize,
    tracer: Vec<usize>,
}

impl Cpus {
    /// None where this process may use a single CPU.
    fn split() -> Option<Self> {
        // SAFETY: a zeroed cpu_set_t is an empty set; the call fills it.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: the size is the set's own.
        if unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) } != 0 {
            return None;
        }
        let mut all: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
            // SAFETY: the index is below CPU_SETSIZE.
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect();
        let traced = all.pop()?;
        (!all.is_empty()).then_some(Self {
            traced,
            tracer: all,
        })
    }

    fn tracer_list(&self) -> String {
        let each: Vec<_> = self.tracer.iter().map(usize::to_string).collect();
        each.join(",")
    }

    /// `cmd` (a tracer, or the loop itself) on the tracer's CPUs, the loop it starts on its own.
    fn pin(&self, cmd: &mut Command) {
        use std::os::unix::process::CommandExt as _;
        // SAFETY: a zeroed cpu_set_t is an empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in &self.tracer {
            // SAFETY: the CPUs come from sched_getaffinity, below CPU_SETSIZE.
            unsafe { libc::CPU_SET(c, &mut set) };
        }
        cmd.env("BENCH_IO_CPU", self.traced.to_string());
        // SAFETY: sched_setaffinity is a system call, safe between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
    }
}

/// Each figure's best (least) over `rounds`.
fn best_of<'a>(rounds: impl Iterator<Item = &'a [f64; 5]>) -> [f64; 5] {
    rounds.fold([f64::MAX; 5], |best, r| {
        std::array::from_fn(|i| best[i].min(r[i]))
    })
}

/// Time in kernel programs per recorded call.
#[derive(Clone, Copy)]
struct ProgramTime {
    /// Less what an empty program costs under the statistics, each run.
    ns: f64,
    /// Program runs.
    runs: f64,
    /// With it.
    with_empty: f64,
}

impl ProgramTime {
    /// `ns` in `runs` program runs over `calls` recorded calls; `empty_run_ns` what an empty
    /// program run costs under the statistics.
    fn per_call(ns: f64, runs: f64, calls: f64, empty_run_ns: f64) -> Self {
        Self {
            ns: (ns - empty_run_ns * runs) / calls,
            runs: runs / calls,
            with_empty: ns / calls,
        }
    }
}

/// The number after the word `name` in `name value` text printed by strata's bench commands.
fn field(text: &str, name: &str) -> Option<f64> {
    let mut it = text.split_whitespace();
    it.find(|w| *w == name)?;
    it.next()?.parse().ok()
}

/// What one run of an empty tracepoint program costs with the kernel's BPF statistics on:
/// their own clock reads, to be taken off strata's programs' times. Held to the CPUs of the
/// runs it is taken from.
fn empty_program_ns(
    strata: &Path,
    exe: &Path,
    dir: &Path,
    pin: Option<&Cpus>,
) -> anyhow::Result<f64> {
    let _on = BpfStats::on()?;
    let mut cmd = Command::new(strata);
    cmd.args(["bench-empty", "--mechanism", "tracepoint", "--"])
        .arg(exe)
        .args(["syscall", "100000"])
        .arg(dir);
    if let Some(cpus) = pin {
        cpus.pin(&mut cmd);
    }
    let out = cmd.output().context("cannot run strata bench-empty")?;
    let err = String::from_utf8_lossy(&out.stderr);
    anyhow::ensure!(out.status.success(), "strata bench-empty failed: {err}");
    let (ns, runs, _) = bench_empty_figures(&err)?;
    Ok(ns / runs)
}

/// What `strata bench-empty` printed of its programs: their time, their runs (with BPF
/// statistics on) and the records they sent (the floor's; 0 for empty programs).
fn bench_empty_figures(err: &str) -> anyhow::Result<(f64, f64, f64)> {
    match (field(err, "bpf_run_ns"), field(err, "bpf_runs")) {
        (Some(ns), Some(runs)) if runs > 0.0 => {
            Ok((ns, runs, field(err, "records").unwrap_or(0.0)))
        }
        _ => anyhow::bail!("the kernel kept no BPF statistics (needs Linux 5.1 or later): {err}"),
    }
}

/// Per write(1 B) of `n` in a loop, best of three each: the loop alone, beside a `strata
/// record` of another command (its syscall probes fire for every process on the node, and
/// its filter drops the calls of the others), and under an empty probe.
fn untraced_beside(
    strata: &Path,
    exe: &Path,
    dir: &Path,
    n: u64,
) -> anyhow::Result<(f64, f64, f64, Option<f64>)> {
    let best = |cmd: &dyn Fn() -> Command| -> anyhow::Result<f64> {
        let mut best = f64::MAX;
        for _ in 0..3 {
            let text = output(&mut cmd())?;
            let ns: f64 = text
                .trim()
                .parse()
                .with_context(|| format!("bench_io printed {text:?}"))?;
            best = best.min(ns / n as f64);
        }
        Ok(best)
    };
    let alone = || {
        let mut c = Command::new(exe);
        c.args(["syscall", &n.to_string()]).arg(dir);
        c
    };
    let empty = best(&|| {
        let mut c = Command::new(strata);
        c.args(["bench-empty", "--mechanism", "tracepoint", "--"])
            .arg(exe)
            .args(["syscall", &n.to_string()])
            .arg(dir);
        c
    })?;
    let base = best(&alone)?;
    let beside = beside_strata(
        strata,
        &dir.join("out-beside"),
        &["--layers", "posix"],
        || best(&alone),
    )?;
    let beside_cgroup = match Cgroup::new()? {
        Some(cg) => {
            let path = cg.0.to_string_lossy().into_owned();
            Some(beside_strata(
                strata,
                &dir.join("out-beside-cgroup"),
                &["--layers", "posix", "--cgroup", &path],
                || best(&alone),
            )?)
        }
        None => {
            println!("(no cgroup v2 mount: the filter of cgroup mode is not measured)");
            None
        }
    };
    Ok((base, beside, empty, beside_cgroup))
}

/// An empty cgroup v2 for a run to trace, removed on drop (None without a cgroup v2 mount).
struct Cgroup(std::path::PathBuf);

impl Cgroup {
    fn new() -> anyhow::Result<Option<Self>> {
        let Some(root) = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
            .into_iter()
            .map(Path::new)
            .find(|p| p.join("cgroup.controllers").exists())
        else {
            return Ok(None);
        };
        let dir = root.join(format!("strata-bench-{}", std::process::id()));
        let _ = fs::remove_dir(&dir);
        fs::create_dir(&dir).with_context(|| format!("cannot create cgroup {}", dir.display()))?;
        Ok(Some(Self(dir)))
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = fs::remove_dir(&self.0);
    }
}

/// Runs `f` while `strata record` (with `args`) traces another command, or a cgroup where
/// `args` name one, and returns what it returned: what the processes strata does not trace
/// pay beside it.
pub(crate) fn beside_strata<T>(
    strata: &Path,
    out_dir: &Path,
    args: &[&str],
    f: impl FnOnce() -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    use std::{
        io::{BufRead as _, BufReader},
        process::Stdio,
    };
    // The command strata records waits on its input: closed, it exits, and strata with it.
    // A run of a cgroup has no command: it stops at SIGINT.
    let cgroup = args.contains(&"--cgroup");
    let _ = fs::remove_dir_all(out_dir);
    let mut cmd = Command::new(strata);
    cmd.arg("record").args(args).arg("-o").arg(out_dir);
    if !cgroup {
        cmd.args(["--", "cat"]);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run strata record")?;
    let stderr = child.stderr.take().context("no stderr")?;
    let mut lines = BufReader::new(stderr).lines();
    let attached = lines.find_map(|l| l.ok().filter(|l| l.contains("probes attached")));
    let got = attached.map(|_| f());
    drop(child.stdin.take());
    if cgroup {
        // SAFETY: a signal to the child, which has not been waited for yet.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    }
    let status = child.wait()?;
    let got = got.context("strata record ended before its probes were attached")??;
    // 128 + SIGINT: the exit status of a run stopped by it.
    anyhow::ensure!(
        status.success() || (cgroup && status.code() == Some(130)),
        "strata record failed ({status})"
    );
    Ok(got)
}

/// Where a case's workload writes: tmpfs for the MPI cases when there is one, else `dir`.
struct Scratch {
    dir: std::path::PathBuf,
    tmpfs: Option<std::path::PathBuf>,
}

impl Scratch {
    fn new(dir: &Path) -> anyhow::Result<Self> {
        let shm = Path::new("/dev/shm");
        let tmpfs = if shm.is_dir() {
            let d = shm.join(format!("strata-bench-{}", std::process::id()));
            fs::create_dir_all(&d).with_context(|| format!("cannot create {}", d.display()))?;
            Some(d)
        } else {
            None
        };
        Ok(Self {
            dir: dir.to_path_buf(),
            tmpfs,
        })
    }

    /// Where a workload writes: tmpfs for the MPI ones (`mpi_size` set).
    fn dir(&self, mpi_size: Option<u64>) -> &Path {
        match (&self.tmpfs, mpi_size) {
            (Some(t), Some(_)) => t,
            _ => &self.dir,
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Some(t) = &self.tmpfs {
            let _ = fs::remove_dir_all(t);
        }
    }
}

pub(crate) struct Stats {
    calls: u64,
    lost: u64,
    parquet_bytes: u64,
    peak_rss_kib: u64,
    /// Time in strata's kernel programs and their runs (0 unless BPF statistics were on).
    bpf_run_ns: u64,
    bpf_runs: u64,
    /// strata's own CPU time (user and system, all its threads).
    pub(crate) cpu_ns: u64,
}

/// strata's user-space instructions per event (all its threads) under callgrind, for the
/// paced write loop: three pairs of runs of `COUNTED_EVENTS` and five times as many, start-up
/// cancelled, sorted. Pairs of one build differed by up to 6% (how many passes and flushes
/// strata makes still depends on timing), where its CPU time per event moves by a third.
/// The figure leaves out the kernel's work for strata (its reads of the ring and /proc, its
/// writes) and the cost of a cache miss; and valgrind counts each byte a `rep movsb` copies
/// as an instruction, so that large copies weigh more here than on the CPU.
fn counted_instructions(strata: &Path, exe: &Path, dir: &Path) -> anyhow::Result<[f64; 3]> {
    let out_dir = dir.join("out-counted");
    let run = |n: u64| -> anyhow::Result<(u64, u64)> {
        let _ = fs::remove_dir_all(&out_dir);
        let res = Command::new("valgrind")
            .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
            .arg(strata)
            .args(["record", "-q", "--layers", "posix", "-o"])
            .arg(&out_dir)
            .arg("--")
            .arg(exe)
            .args([format!("rate:{COUNTED_RATE}"), n.to_string()])
            .arg(dir)
            .stdout(std::process::Stdio::null())
            .output()
            .context("running strata under valgrind (setup installs it: cargo xtask setup)")?;
        let stderr = String::from_utf8_lossy(&res.stderr);
        anyhow::ensure!(
            res.status.success(),
            "strata under callgrind failed: {stderr}"
        );
        let collected = stderr
            .lines()
            .find_map(|l| l.split("Collected : ").nth(1))
            .and_then(|v| v.trim().parse().ok())
            .with_context(|| format!("callgrind gave no instruction count: {stderr}"))?;
        let st = stats(&out_dir)?;
        anyhow::ensure!(
            st.lost == 0,
            "strata under callgrind lost {} events",
            st.lost
        );
        Ok((collected, st.calls))
    };
    let mut per_event = Vec::new();
    for _ in 0..3 {
        let (short, short_calls) = run(COUNTED_EVENTS)?;
        let (long, long_calls) = run(5 * COUNTED_EVENTS)?;
        let events = long_calls.saturating_sub(short_calls).max(1);
        per_event.push(long.saturating_sub(short) as f64 / events as f64);
    }
    per_event.sort_by(f64::total_cmp);
    Ok([per_event[0], per_event[1], per_event[2]])
}

/// The kernel's BPF run-time statistics, on (or off) while this lives, then as they were.
/// They cost a clock read or two per program run, so the timed runs go without.
struct BpfStats {
    before: String,
}

const BPF_STATS: &str = "/proc/sys/kernel/bpf_stats_enabled";

impl BpfStats {
    fn on() -> anyhow::Result<Self> {
        Self::set(true)
    }

    fn set(on: bool) -> anyhow::Result<Self> {
        let before =
            fs::read_to_string(BPF_STATS).with_context(|| format!("cannot read {BPF_STATS}"))?;
        fs::write(BPF_STATS, if on { "1" } else { "0" })
            .with_context(|| format!("cannot write {BPF_STATS}"))?;
        Ok(Self { before })
    }

    fn was_on(&self) -> bool {
        self.before.trim() != "0"
    }
}

impl Drop for BpfStats {
    fn drop(&mut self) {
        let _ = fs::write(BPF_STATS, self.before.trim());
    }
}

/// Calls recorded, events lost and Parquet bytes of the calls table, from the dataset itself.
pub(crate) fn stats(out: &Path) -> anyhow::Result<Stats> {
    let q = format!(
        "import duckdb\nr = duckdb.sql(\"SELECT calls_written, events_lost, peak_rss_kib, coalesce(bpf_run_ns, 0), coalesce(bpf_runs, 0), coalesce(cpu_ns, 0) FROM read_parquet('{0}/run/**/*.parquet')\").fetchall()[0]\nprint(*r)",
        out.display()
    );
    let text = output(Command::new("python3").args(["-c", &q]))?;
    let mut it = text.split_whitespace().map(str::parse::<u64>);
    let calls = it.next().context("no calls_written")??;
    let lost = it.next().context("no events_lost")??;
    let peak_rss_kib = it.next().context("no peak_rss_kib")??;
    let bpf_run_ns = it.next().context("no bpf_run_ns")??;
    let bpf_runs = it.next().context("no bpf_runs")??;
    let cpu_ns = it.next().context("no cpu_ns")??;
    let mut parquet_bytes = 0;
    for host in fs::read_dir(out.join("calls"))? {
        for f in fs::read_dir(host?.path())? {
            parquet_bytes += f?.metadata()?.len();
        }
    }
    Ok(Stats {
        calls,
        lost,
        parquet_bytes,
        peak_rss_kib,
        bpf_run_ns,
        bpf_runs,
        cpu_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The count is the named CPU's column, also where the header skips an offline CPU; all
    /// CPUs' is the sum of the columns.
    #[test]
    fn irq_work_is_read_from_the_cpus_own_column() {
        let text = "           CPU0       CPU2       CPU3\n\
                    \x20 0:         44          0          0   IO-APIC    2-edge      timer\n\
                    \x20IWI:    1884836       5121    2323471   IRQ work interrupts\n\
                    \x20RTR:          0          0          0   APIC ICR read retries\n";
        assert_eq!(irq_work_of(text, Some(0)), Some(1_884_836));
        assert_eq!(irq_work_of(text, Some(2)), Some(5121));
        assert_eq!(irq_work_of(text, Some(3)), Some(2_323_471));
        assert_eq!(
            irq_work_of(text, Some(1)),
            None,
            "an offline CPU has no column"
        );
        assert_eq!(
            irq_work_of(text, None),
            Some(1_884_836 + 5121 + 2_323_471),
            "all CPUs: the counts' columns only, not the legend's words"
        );
        assert_eq!(
            irq_work_of("           CPU0\n  0: 1 IO-APIC\n", Some(0)),
            None
        );
        assert_eq!(irq_work_of("           CPU0\n  0: 1 IO-APIC\n", None), None);
        assert_eq!(median(&mut [9, 7, 45, 8, 8]), Some(8));
        assert_eq!(median(&mut []), None);
    }

    fn verdicts(seen: &Seen) -> Vec<Option<bool>> {
        targets(seen).iter().map(|t| t.met).collect()
    }

    /// Each target against its own threshold, on either side of it.
    #[test]
    fn targets_are_met_up_to_their_thresholds_and_not_beyond() {
        let mut seen = Seen {
            own_and_empty: Some((12.0, 124.0)),
            above_floor: vec![
                AboveFloor {
                    case: "write",
                    ratio: 1.14,
                    thirds: Some((1.1, 1.18)),
                },
                AboveFloor {
                    case: "fwrite",
                    ratio: 1.03,
                    thirds: None,
                },
            ],
            user_share: Some(0.07),
            pipeline: Some(1.2e6),
            regular_bytes: vec![("regular: MPI-IO", 6.6), ("regular: HDF5", 8.0)],
            lost_at_paced_rate: Some(0),
            rss_by_rate: vec![(50_000, 65_000), (800_000, 105_000)],
        };
        let met = vec![Some(true); 6];
        assert_eq!(verdicts(&seen), [met, vec![None]].concat());
        let floor = &targets(&seen)[1].measured;
        assert_eq!(floor, "write 1.14x (1.10-1.18x in thirds), fwrite 1.03x");
        seen.own_and_empty = Some((556.0, 124.0));
        seen.above_floor[1].ratio = 1.16;
        seen.user_share = Some(0.11);
        seen.pipeline = Some(0.9e6);
        seen.regular_bytes[0].1 = 8.1;
        seen.lost_at_paced_rate = Some(1);
        let not_met = vec![Some(false); 6];
        assert_eq!(verdicts(&seen), [not_met, vec![None]].concat());
        let own = &targets(&seen)[0].measured;
        assert!(own.contains("448% above"), "{own}");
    }

    /// A run that measured nothing of a target says nothing about it.
    #[test]
    fn targets_without_figures_are_left_out() {
        assert!(targets(&Seen::default()).is_empty());
    }
}
