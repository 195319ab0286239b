//! `strata record`: load, attach, trace until the command ends (or a signal, or the
//! duration), draining the ring buffer and writing Parquet as it goes.
use std::{
    io::IsTerminal as _,
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use strata_common::Counter;

use crate::{
    attach::{self, counter_total},
    correlate::{Clock, Correlator},
    dataset::Dataset,
    events,
    probes::{self, Layer},
    schema::ProbeRow,
    summary::human,
    target::{self, Spawned},
};

/// Files written by a run past which its summary suggests `strata compact`: a busy table
/// writes one per flush.
const COMPACT_HINT_FILES: usize = 100;

pub struct RecordArgs {
    pub output: PathBuf,
    pub command: Vec<String>,
    pub pid: Option<i32>,
    pub all: bool,
    /// A cgroup v2 directory (given, or a Slurm job's).
    pub cgroup: Option<PathBuf>,
    pub duration: Option<Duration>,
    pub probes_file: Option<PathBuf>,
    pub layers: Option<Vec<Layer>>,
    /// Layers left out of what is traced otherwise (`--skip-layers`).
    pub skip_layers: Vec<Layer>,
    pub ring_buffer_mib: u32,
    /// The backlog's cap in MiB (None: 8 ring buffers).
    pub backlog_mib: Option<u32>,
    pub syscall_mode: attach::SyscallMode,
    pub flush_interval: Duration,
    /// The node name of the `host=` partitions.
    pub host: String,
    pub file_mode: u32,
    /// Only processes of these uids (empty: all).
    pub users: Vec<u32>,
    /// Only rows about files under these directories.
    pub paths: Option<Vec<String>>,
    /// Expedited RCU grace periods around attaches during the run and the detach.
    pub expedite: bool,
    /// Merge the run's files while it records, each time it has written this many more
    /// (0: never).
    pub compact_every: u32,
    /// With a command: the run ends when every traced process has exited, not with the
    /// command.
    pub until_all_exit: bool,
    pub quiet: bool,
}

/// The output while start-up can still fail: the directories strata made for it (the
/// output directory and its missing parents, the tables') are removed again if start-up
/// fails, where they are still empty, so that a failed start leaves nothing behind.
struct Unstarted {
    /// Made by strata, the deepest first.
    made: Vec<PathBuf>,
    /// The tables' directories, each `host=` one before its table's.
    tables: Vec<PathBuf>,
}

impl Unstarted {
    fn new(output: &std::path::Path) -> Self {
        let made = output
            .ancestors()
            .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
            .map(PathBuf::from)
            .collect();
        Self {
            made,
            tables: Vec::new(),
        }
    }

    /// The run row is written: the output is the run's.
    fn started(&mut self) {
        self.made.clear();
        self.tables.clear();
    }
}

impl Drop for Unstarted {
    fn drop(&mut self) {
        // `remove_dir` takes only an empty directory: another run's files stay.
        for dir in self.tables.iter().chain(&self.made) {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// How the run ended, for the exit code.
pub struct Outcome {
    pub exit_code: i32,
}

pub fn run(args: RecordArgs) -> anyhow::Result<Outcome> {
    let started = std::time::Instant::now();
    // Signals, first: from here on one asks for a clean stop, at any moment of start-up too,
    // and never kills strata mid-write.
    let stop = Arc::new(AtomicBool::new(false));
    let last_signal = Arc::new(AtomicUsize::new(0));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
        signal_hook::flag::register_usize(sig, Arc::clone(&last_signal), sig as usize)?;
    }
    let mut unstarted = Unstarted::new(&args.output);
    preflight(&args)?;
    let mut probes = probes::load(args.probes_file.as_deref())?;
    probes::select_layers(&mut probes, args.layers.as_deref(), &args.skip_layers);
    if !probes.iter().any(|p| p.enabled) {
        bail!(
            "no probe is enabled (check --layers, --skip-layers and the `enabled` fields of the probes file)"
        );
    }

    // Refuse a bad target before loading anything.
    let tree = args.pid.map(target::process_tree).transpose()?;
    let cgroup = args
        .cgroup
        .as_deref()
        .map(crate::cgroup::resolve)
        .transpose()?;
    let exe = match args.command.first() {
        Some(c) => Some(target::resolve_command(c)?),
        None => None,
    };

    let host = args.host.clone();
    let clock = Clock::now();
    let start_ns = clock.epoch(monotonic_ns());
    let run_id = format!("{}-{}", start_ns / 1_000_000, std::process::id());
    let mut out = Dataset::create(&args.output, &host, &run_id, args.file_mode)?;
    unstarted.tables = out.dirs().into_iter().map(PathBuf::from).collect();

    let mut spawned: Option<Spawned> = match &exe {
        Some(exe) => Some(target::spawn_gated(exe, &args.command)?),
        None => None,
    };

    let mut loaded = attach::load(
        &probes,
        &attach::Options {
            trace_all: args.all,
            cgroup_mode: cgroup.is_some(),
            users: args.users.clone(),
            ..attach::Options::new(
                &probes,
                args.ring_buffer_mib,
                args.backlog_mib,
                args.syscall_mode,
            )
        },
    )?;
    loaded.expedite = args.expedite;
    if let (Some(c), Some(dir)) = (cgroup, args.cgroup.as_deref()) {
        loaded
            .add_cgroup(c)
            .with_context(|| format!("cannot trace cgroup {}", dir.display()))?;
    }
    for s in &loaded.statuses {
        out.probes
            .push(probe_row(&run_id, &probes[s.probe_id as usize], s));
    }
    let mut stepped: Vec<&str> = loaded
        .statuses
        .iter()
        .filter(|s| s.single_step == Some(true))
        .map(|s| probes[s.probe_id as usize].function())
        .collect();
    stepped.sort_unstable();
    stepped.dedup();
    if !stepped.is_empty() {
        log::info!(
            "the kernel single-steps the first instruction of {} probed functions, two traps \
             per call (probes table, single_step): {}",
            stepped.len(),
            stepped.join(", ")
        );
    }
    let attached = loaded
        .statuses
        .iter()
        .filter(|s| s.status == "attached")
        .count();
    let failed = loaded
        .statuses
        .iter()
        .filter(|s| s.status == "failed")
        .count();
    if attached == 0 {
        bail!("no probe could be attached; see the warnings above");
    }
    // A layer asked for by name that this kernel cannot record at all is said once, whatever
    // its probes' statuses (`absent` ones are not warned about one by one).
    for layer in args.layers.iter().flatten() {
        let mine: Vec<_> = loaded
            .statuses
            .iter()
            .filter(|s| probes[s.probe_id as usize].layer == *layer && s.status != "disabled")
            .collect();
        if !mine.is_empty() && mine.iter().all(|s| s.status != "attached") {
            let why = mine.iter().find_map(|s| s.reason.as_deref()).unwrap_or("");
            log::warn!("layer {layer}: nothing attached on this kernel ({why})");
        }
    }

    let command = if let Some(sp) = &spawned {
        loaded.trace(&[sp.pid.as_raw() as u32])?;
        args.command.join(" ")
    } else if let Some(tree) = &tree {
        let tgids: Vec<u32> = tree.iter().map(|pid| *pid as u32).collect();
        loaded.trace(&tgids)?;
        format!("--pid {}", args.pid.unwrap_or_default())
    } else if let Some(dir) = &args.cgroup {
        format!("--cgroup {}", dir.display())
    } else {
        "--all".to_string()
    };
    let mut corr = Correlator::new(probes.clone(), clock);
    corr.path_filter = args.paths.as_deref().map(crate::filter::PathFilter::new);
    corr.procs
        .set_images_from_kernel(loaded.images_from_kernel());
    // Every process of a running tree is a traced process, whether or not it makes a
    // traced call.
    for pid in tree.iter().flatten() {
        if procfs::process::Process::new(*pid).is_ok() {
            corr.ensure_process(*pid);
        }
    }
    // Processes already running among the traced (a tree, a cgroup's, the node's) may use
    // probed libraries from places the start-up search did not see: a running container's
    // own copies, a module tree's. Probed before the run begins.
    let running: Vec<i32> = match (&tree, &args.cgroup) {
        (Some(tree), _) => tree.clone(),
        (None, Some(dir)) => crate::cgroup::processes(dir),
        (None, None) if args.all => procfs::process::all_processes()
            .map(|all| all.flatten().map(|p| p.pid).collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    if args.all {
        corr.leave_out_peers(crate::peers::among(&running));
    }
    let me = std::process::id() as i32;
    queue_mapped(&mut corr, running.into_iter().filter(|p| *p != me));
    let (mut attached, mut failed) = (attached, failed);
    let tally = |s: &attach::ProbeStatus, attached: &mut usize, failed: &mut usize| match s.status {
        "attached" => *attached += 1,
        "failed" => *failed += 1,
        _ => {}
    };
    for s in attach_opened_libraries(&mut loaded, &mut corr, &probes, &mut out, &run_id) {
        tally(&s, &mut attached, &mut failed);
    }
    for s in loaded.attach_installed_builds(&probes) {
        tally(&s, &mut attached, &mut failed);
        out.probes
            .push(probe_row(&run_id, &probes[s.probe_id as usize], &s));
    }
    // Programs linked statically against probed libraries: the command, and executables
    // named among its arguments (`mpirun -np 64 ./app`), before anything runs.
    if let Some(exe) = &exe {
        let named = args.command.iter().skip(1).map(std::path::PathBuf::from);
        let programs: Vec<_> = std::iter::once(exe.clone())
            .chain(named)
            .filter(|f| is_executable(f))
            .map(|f| std::fs::canonicalize(&f).unwrap_or(f))
            .collect();
        for file in &programs {
            let Ok(meta) = std::fs::metadata(file) else {
                continue;
            };
            let key = attach::file_key(&meta);
            for s in loaded.attach_executable(&probes, file, &file.display().to_string(), key) {
                tally(&s, &mut attached, &mut failed);
                out.probes
                    .push(probe_row(&run_id, &probes[s.probe_id as usize], &s));
            }
        }
        // The libraries they load at start, found as the loader will find them (a module
        // tree's HDF5 through LD_LIBRARY_PATH or a RUNPATH): probed from the first call.
        let ld_library_path = std::env::var("LD_LIBRARY_PATH").ok();
        let cache = loaded.ld_cache.clone();
        let loader = crate::libraries::Loader {
            ld_library_path: ld_library_path.as_deref(),
            cache: &cache,
            root: None,
        };
        for file in &programs {
            for lib in loader.closure(&file.display().to_string()) {
                for s in loaded.attach_library(&probes, std::path::Path::new(&lib), &lib) {
                    tally(&s, &mut attached, &mut failed);
                    out.probes
                        .push(probe_row(&run_id, &probes[s.probe_id as usize], &s));
                }
            }
        }
    }
    // Written, and said, once every probe of the start is on: a running tree's own libraries
    // (a container's) included, so that a run row on disk means the tree is traced.
    let mut run_row = crate::node::run_row(&run_id, &host, command, start_ns, clock, None);
    run_row.cpu_start_ns = crate::node::cpu_ns();
    out.write_run(run_row.clone())?;
    unstarted.started();
    out.flush()?;
    if !args.quiet {
        eprintln!(
            "strata: {attached} probes attached in {:.2} s{}, writing to {}",
            started.elapsed().as_secs_f64(),
            if failed > 0 {
                format!(", {failed} failed (see the probes table)")
            } else {
                String::new()
            },
            args.output.display()
        );
    }
    let mut root_status = None;
    if stop.load(Ordering::Relaxed) {
        // Stopped during start-up: the command never runs (untraced) behind strata, and its
        // gated fork, which exits at once, is no traced process.
        if let Some(sp) = spawned.take() {
            loaded.untrace(sp.pid.as_raw() as u32);
        }
    }
    if let (Some(sp), Some(exe)) = (spawned.as_mut(), &exe) {
        let exe = std::fs::canonicalize(exe).unwrap_or_else(|_| exe.clone());
        let now = clock.epoch(monotonic_ns());
        corr.procs.preset(
            sp.pid.as_raw(),
            exe.display().to_string(),
            args.command.join(" "),
            now,
        );
        corr.inherited_fds(sp.pid.as_raw());
        sp.release()?;
    }

    let mut merging =
        crate::compact::WhileRecording::new(&args.output, &host, &run_id, args.compact_every);
    let started = Instant::now();
    let mut last_flush = Instant::now();
    let progress = (!args.quiet && std::io::stderr().is_terminal()).then(progress_bar);
    let mut recorded: u64 = 0;
    let mut last_status = (Instant::now(), 0u64);
    let mut write_error = None;
    let mut last_alive_check = Instant::now();
    let mut tree_ended = false;
    let mut left_running = Vec::new();
    // Records were left for the next pass: no waiting for more.
    let mut pending = false;
    loop {
        if !pending {
            loaded.events.wait(Duration::from_millis(100));
        }
        pending = false;
        let mut handled = 0;
        while let Some(item) = loaded.events.next_record() {
            recorded += 1;
            match events::decode(item) {
                Ok(ev) => corr.guarded(|c| c.handle(ev, &mut out)),
                Err(e) => log::warn!("undecodable record: {e}"),
            }
            handled += 1;
            if handled == crate::ring::RECORDS_PER_PASS {
                pending = true;
                break;
            }
        }
        attach_opened_libraries(&mut loaded, &mut corr, &probes, &mut out, &run_id);
        for ino in std::mem::take(&mut corr.files.new_inodes) {
            loaded.watch_inode(ino);
        }
        if last_flush.elapsed() >= args.flush_interval {
            corr.guarded(|c| c.tick(&mut out));
            if let Err(e) = out.flush() {
                write_error = Some(e);
                break;
            }
            last_flush = Instant::now();
            if let Some(e) = merging.as_mut().and_then(|m| m.poll(out.files_written())) {
                eprintln!("strata: warning: {e:#}");
            }
        }
        if let Err(e) = out.flush_if_full() {
            write_error = Some(e);
            break;
        }
        if let Some(pb) = &progress {
            if last_status.0.elapsed() >= Duration::from_secs(1) {
                let rate =
                    (recorded - last_status.1) as f64 / last_status.0.elapsed().as_secs_f64();
                last_status = (Instant::now(), recorded);
                // Records copied out of the ring and waiting: a burst strata is catching up on.
                let backlog = match loaded.events.backlog_bytes() {
                    0 => String::new(),
                    b => format!(", {} waiting", human(b as i64)),
                };
                pb.set_message(format!(
                    "{recorded} events ({rate:.0}/s){backlog}, lost {}, {} rows in {} written",
                    counter_total(&loaded.counters, Counter::RingbufFull),
                    out.rows_written(),
                    human(out.bytes_written() as i64),
                ));
            }
        }
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if let Some(sp) = spawned.as_ref().filter(|_| root_status.is_none()) {
            if let Some(st) = sp.try_wait()? {
                root_status = Some(st);
                if !args.until_all_exit {
                    // Processes the command left running: named after the summary.
                    left_running = still_running(loaded.traced(), sp.pid.as_raw() as u32);
                    break;
                }
            }
        }
        if args.duration.is_some_and(|d| started.elapsed() >= d) {
            break;
        }
        // --pid, and a command with --until-all-exit once it exited: the run ends with the
        // traced tree (the kernel forgets exited processes; one that exited during attach is
        // caught here).
        if (tree.is_some() || root_status.is_some()) && last_alive_check.elapsed() >= ALIVE_CHECK {
            last_alive_check = Instant::now();
            if !any_alive(loaded.traced()) {
                tree_ended = true;
                break;
            }
        }
    }

    // Stop recording, then take what is still in the ring buffer.
    attach::stop(&mut loaded)?;
    loaded.events.finish();
    if let Some(pb) = &progress {
        // A full backlog takes seconds to write.
        let waiting = loaded.events.backlog_bytes();
        if waiting > 0 {
            pb.set_message(format!(
                "stopping: writing the {} of records waiting",
                human(waiting as i64)
            ));
        }
    }
    // Files are written as the buffers fill, as during the run: what waits can be a full
    // backlog, some 2M records (left to the end, their rows took some 150 MiB more).
    while let Some(item) = loaded.events.next_record() {
        recorded += 1;
        if let Ok(ev) = events::decode(item) {
            corr.guarded(|c| c.handle(ev, &mut out));
        }
        if write_error.is_none() {
            if let Err(e) = out.flush_if_full() {
                write_error = Some(e);
            }
        }
    }
    if let (Some(sp), Some((code, sig))) = (&spawned, root_status) {
        corr.procs.set_wait_status(sp.pid.as_raw(), code, sig);
    }
    corr.guarded(|c| c.finish(&mut out));
    if let Some(pb) = progress {
        pb.finish_and_clear();
    }

    let drops = attach::Drops::now(&loaded);
    let (lost, skipped) = (drops.lost, drops.skipped);
    run_row.end_ns = Some(clock.epoch(monotonic_ns()));
    run_row.events_recorded = recorded as i64;
    drops.record(&mut run_row);
    let detach_later = loaded;
    run_row.calls_written = (out.calls.rows_written + out.calls.buffered() as u64) as i64;
    run_row.requests_unfinished = corr.requests_unfinished as i64;
    run_row.internal_errors = corr.internal_errors as i64;
    run_row.complete = write_error.is_none();
    run_row.peak_rss_kib = crate::node::peak_rss_kib();
    run_row.cpu_ns = crate::node::cpu_ns();
    if let Some((ns, runs)) = detach_later.program_stats() {
        (run_row.bpf_run_ns, run_row.bpf_runs) = (Some(ns as i64), Some(runs as i64));
    }
    let final_write = out.flush().and_then(|()| out.write_run(run_row.clone()));
    // A merge in progress ends before strata does (else its file in progress is left).
    if let Some(e) = merging.as_mut().and_then(|m| m.wait()) {
        eprintln!("strata: warning: {e:#}");
    }
    let files_now =
        (out.files_written() as usize).saturating_sub(merging.as_ref().map_or(0, |m| m.removed()));
    if let Some(e) = write_error {
        return Err(e.context(format!(
            "writing to {} failed; recording stopped (files written before are valid)",
            args.output.display()
        )));
    }
    final_write.with_context(|| format!("writing the last rows to {}", args.output.display()))?;

    if !args.quiet {
        eprintln!(
            "strata: {} events, {} calls, {} processes, {} lost; {} in {}",
            recorded,
            run_row.calls_written,
            corr.summary.processes,
            lost,
            human(out.bytes_written() as i64),
            args.output.display()
        );
        let (files, summary) = (&corr.files, &corr.summary);
        eprint!(
            "{}",
            summary.render(|id| files.path(id), |id| files.mount(id))
        );
        eprintln!("{}", cost_line(&run_row));
        if files_now >= COMPACT_HINT_FILES {
            eprintln!(
                "strata: {files_now} Parquet files; `strata compact {}` merges them into a few \
                 (same rows, faster queries)",
                args.output.display()
            );
        }
    }
    if tree_ended && !args.quiet {
        eprintln!("strata: every traced process has exited");
    }
    if !left_running.is_empty() {
        let n = left_running.len();
        let named: Vec<String> = left_running
            .iter()
            .take(3)
            .map(|(pid, comm)| format!("{pid} {comm}"))
            .collect();
        eprintln!(
            "strata: warning: {n} process{} the command started {} still running when it \
             exited ({}{}): {} calls from then on are not recorded; --until-all-exit waits \
             for them",
            if n == 1 { "" } else { "es" },
            if n == 1 { "was" } else { "were" },
            named.join(", "),
            if n > 3 { ", ..." } else { "" },
            if n == 1 { "its" } else { "their" },
        );
    }
    if lost > 0 {
        // A backlog set below its default may be what lost them.
        let backlog = args
            .backlog_mib
            .map(|m| format!(" or --backlog-mib (given: {m})"))
            .unwrap_or_default();
        eprintln!(
            "strata: warning: {lost} events were lost because the ring buffer was full; \
             raise --ring-buffer-mib{backlog} or trace fewer layers"
        );
    }
    if skipped > 0 {
        eprintln!(
            "strata: warning: the kernel skipped {skipped} probe hits because a BPF program was \
             already running on that CPU (an interrupt inside a probe); their events are missing"
        );
    }
    if run_row.requests_unfinished > 0 && !args.quiet {
        eprintln!(
            "strata: {} io_uring or AIO requests have no row: still in flight when recording \
             stopped, or their completion was not seen (run.requests_unfinished)",
            run_row.requests_unfinished
        );
    }
    if corr.internal_errors > 0 {
        eprintln!(
            "strata: warning: {} records were skipped after an internal error, a bug in strata \
             (the first messages above say where; please report them; run.internal_errors)",
            corr.internal_errors
        );
    }
    if run_row.requests_unread > 0 {
        eprintln!(
            "strata: warning: {} Linux AIO requests or events were not read: more than {} in \
             one io_submit or io_getevents (run.requests_unread)",
            run_row.requests_unread,
            strata_common::AIO_BATCH
        );
    }
    if !args.quiet && std::io::stderr().is_terminal() && detach_later.uprobe_links() > 50 {
        eprintln!(
            "strata: detaching {} uprobes (the kernel releases them one by one; Linux 6.6+ does it at once)",
            detach_later.uprobe_links()
        );
    }
    attach::detach(detach_later);
    let exit_code = match root_status {
        Some((Some(code), _)) => code,
        Some((None, Some(sig))) => 128 + sig,
        _ => match last_signal.load(Ordering::Relaxed) {
            0 => 0,
            s => 128 + s as i32,
        },
    };
    Ok(Outcome { exit_code })
}

/// Below this many events, strata's CPU time after start is mostly its polling and its
/// last files, and a figure per event would mislead.
const PER_EVENT_MIN: i64 = 10_000;

/// strata's own cost: its CPU time (what starting took apart) and, when the kernel keeps BPF
/// statistics, the time its programs ran in the traced processes.
fn cost_line(run: &crate::schema::RunRow) -> String {
    let per_event = |ns: i64| ns as f64 / run.events_recorded.max(1) as f64;
    let mut line = match run.cpu_ns {
        Some(ns) => {
            let start = run.cpu_start_ns.unwrap_or(0).clamp(0, ns);
            let mut line = format!(
                "strata: own CPU time {:.2} s ({:.2} s of it starting",
                ns as f64 / 1e9,
                start as f64 / 1e9
            );
            if run.events_recorded >= PER_EVENT_MIN {
                line.push_str(&format!(", then {:.0} ns per event", per_event(ns - start)));
            }
            line.push(')');
            line
        }
        None => "strata: own CPU time unknown".to_string(),
    };
    match (run.bpf_run_ns, run.bpf_runs) {
        (Some(ns), Some(runs)) => line.push_str(&format!(
            "; its kernel programs ran {runs} times for {:.3} s ({:.0} ns per event, {:.0} ns per run)",
            ns as f64 / 1e9,
            per_event(ns),
            ns as f64 / runs.max(1) as f64
        )),
        _ => line.push_str(
            "; `sysctl kernel.bpf_stats_enabled=1` adds the time of its kernel programs",
        ),
    }
    line
}

/// How often `--pid` runs look for a traced process still alive.
const ALIVE_CHECK: Duration = Duration::from_millis(250);

/// The command name of traced process `pid` while it runs (a pid that died before it was
/// added stays in the traced map: /proc decides, and a zombie waiting for its parent counts
/// as ended).
fn running(pid: u32) -> Option<String> {
    let stat = procfs::process::Process::new(pid as i32)
        .ok()?
        .stat()
        .ok()?;
    (stat.state != 'Z').then_some(stat.comm)
}

/// The traced processes but `root` that still run, with their command names.
fn still_running(traced: impl Iterator<Item = u32>, root: u32) -> Vec<(u32, String)> {
    let mut left: Vec<(u32, String)> = traced
        .filter(|&pid| pid != root)
        .filter_map(|pid| Some((pid, running(pid)?)))
        .collect();
    left.sort();
    left
}

/// Whether a process of the traced set still runs.
fn any_alive(mut traced: impl Iterator<Item = u32>) -> bool {
    traced.any(|pid| running(pid).is_some())
}

/// Attaches probes to probed libraries that traced processes opened since the last call;
/// returns what became of each (also rows of the probes table).
pub(crate) fn attach_opened_libraries(
    loaded: &mut attach::Loaded,
    corr: &mut Correlator,
    probes: &[probes::Probe],
    out: &mut Dataset,
    run_id: &str,
) -> Vec<attach::ProbeStatus> {
    let mut statuses = Vec::new();
    // A program a traced process executed may have probed libraries linked in. Read through
    // /proc/<pid>/exe while the process lives (it also works inside containers).
    let execs = std::mem::take(&mut corr.execs);
    // What a process maps when its loader reports new libraries, and at an exec: the loader
    // itself is mapped by the kernel, never opened (a container's has its own inode).
    let mut mapped: Vec<i32> = std::mem::take(&mut corr.loader_reports);
    // None under `--layers posix`: then neither look would find anything to probe. Looked
    // for only where a program started or a loader reported: this runs at each pass of the
    // event loop.
    let library_probes = !(execs.is_empty() && mapped.is_empty())
        && probes
            .iter()
            .any(|p| p.enabled && matches!(p.target, probes::Target::Uprobe { .. }));
    if library_probes {
        mapped.sort_unstable();
        mapped.dedup();
        queue_mapped(corr, mapped.iter().copied());
    }
    for exec in execs {
        let pid = exec.pid;
        // What the kernel side did not send of the new image (lost, or still in the ring):
        // read from /proc while the process lives.
        let ld_library_path = match corr.procs.awaits_image(pid) {
            true => corr.procs.read_awaited(pid).unwrap_or(exec.ld_library_path),
            false => exec.ld_library_path,
        };
        let Some(image) = crate::libraries::NewImage::read(pid, exec.own_view, ld_library_path)
        else {
            continue;
        };
        let file = std::path::PathBuf::from(format!("/proc/{pid}/exe"));
        statuses.extend(loaded.attach_executable(
            probes,
            &file,
            &image.exe.display().to_string(),
            attach::file_key(&image.meta),
        ));
        if !library_probes {
            continue;
        }
        // Before the loader has mapped them: its report comes once it has, and reaches strata
        // as the program runs.
        let start = loaded.start_libraries.of(&image, &loaded.ld_cache);
        // The kernel mapped the program and its loader; where the search knows that loader,
        // there is nothing to look for in the process's maps before the loader reports (half
        // of the /proc looks of a loop of short processes).
        if !(start.own_view && start.loader) && mapped.binary_search(&pid).is_err() {
            let before = corr.library_opens.len();
            queue_mapped(corr, [pid]);
            // What a process maps once it has executed yet another program (`chroot` runs
            // the job) is left to that exec's own look, which finds the libraries as the new
            // program's loader names them before its maps do.
            if execed_since(pid, &image.meta) {
                corr.library_opens.truncate(before);
            }
        }
        for lib in start.libraries {
            if start.own_view {
                statuses.extend(loaded.attach_library(probes, std::path::Path::new(&lib), &lib));
            } else if !crate::libraries::named(probes, lib.rsplit('/').next().unwrap_or_default())
                .is_empty()
            {
                // A container's: through its root, opened only if a probe names it.
                statuses.extend(attach_seen_by(loaded, probes, pid, &lib, None));
            }
        }
    }
    let late_loaders = attach_queued(loaded, corr, probes, &mut statuses);
    // A loader probed only now (a container's own) reported what it loaded while its probe
    // was being attached, which takes the kernel a grace period: its process's libc, mapped
    // meanwhile, is looked for again now rather than when strata next wakes (once up to
    // 100 ms on, the process's calls unrecorded till then: 2 of 51 such starts lost all 400
    // fwrites).
    if !late_loaders.is_empty() {
        queue_mapped(corr, late_loaders);
        attach_queued(loaded, corr, probes, &mut statuses);
    }
    for s in &statuses {
        out.probes
            .push(probe_row(run_id, &probes[s.probe_id as usize], s));
    }
    statuses
}

/// Whether process `pid` runs another program than `meta`'s file now (false where it is gone).
fn execed_since(pid: i32, meta: &std::fs::Metadata) -> bool {
    std::fs::metadata(format!("/proc/{pid}/exe"))
        .is_ok_and(|now| attach::file_key(&now) != attach::file_key(meta))
}

fn is_executable(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Attaches probes to the queued libraries (`corr.library_opens`), adding what became of
/// each to `statuses`; returns the processes whose loader was among them.
fn attach_queued(
    loaded: &mut attach::Loaded,
    corr: &mut Correlator,
    probes: &[probes::Probe],
    statuses: &mut Vec<attach::ProbeStatus>,
) -> Vec<i32> {
    let mut loaders = Vec::new();
    // A path names one file in one mount namespace: looked at once per namespace.
    let mut seen = std::collections::HashSet::new();
    let mut namespaces = std::collections::HashMap::new();
    let mut roots = std::collections::HashMap::new();
    for crate::correlate::LibraryOpen {
        pid,
        path,
        file,
        from_node,
    } in std::mem::take(&mut corr.library_opens)
    {
        // A file already looked at (every new process maps libc) costs no look through /proc.
        if file.is_some_and(|f| loaded.looked_at(f)) || !corr.is_probed_library(&path) {
            continue;
        }
        let (path, node_path) = match from_node {
            true => mapped_in_view(pid, path, roots.entry(pid).or_default()),
            false => (path, None),
        };
        let ns = namespaces
            .entry(pid)
            .or_insert_with(|| std::fs::read_link(format!("/proc/{pid}/ns/mnt")).ok())
            .clone();
        if !seen.insert((ns, path.clone())) {
            continue;
        }
        let done = attach_seen_by(loaded, probes, pid, &path, node_path.as_deref());
        let loader = done
            .iter()
            .any(|s| s.status == "attached" && probes[s.probe_id as usize].op == probes::Op::Load);
        if loader {
            loaders.push(pid);
        }
        statuses.extend(done);
    }
    loaders
}

/// Attaches the probes of library `path`, as process `pid` sees it, through the process's
/// root: the library may live in its container. Held open while its probes attach, and named
/// by strata's own descriptor: that path goes when the process does (a container's
/// short-lived `sleep` may be the first to map it), and the library, already marked as
/// probed, would then stay unprobed for the rest. `node_path`: the same file from strata's
/// root, where known and another, opened when the process is gone.
fn attach_seen_by(
    loaded: &mut attach::Loaded,
    probes: &[probes::Probe],
    pid: i32,
    path: &str,
    node_path: Option<&str>,
) -> Vec<attach::ProbeStatus> {
    use std::os::fd::AsRawFd as _;
    let held = crate::views::Root::of(pid)
        .and_then(|root| root.open(path))
        .ok();
    let file = match &held {
        Some(f) => format!("/proc/self/fd/{}", f.as_raw_fd()).into(),
        None => std::path::PathBuf::from(node_path.unwrap_or(path)),
    };
    loaded.attach_library(probes, &file, path)
}

/// Queues the shared objects `pids` map for [`attach_opened_libraries`].
pub(crate) fn queue_mapped(corr: &mut Correlator, pids: impl IntoIterator<Item = i32>) {
    for pid in pids {
        for (path, file) in crate::maps::shared_objects(pid) {
            corr.library_opens.push(crate::correlate::LibraryOpen {
                pid,
                path,
                file: Some(file),
                from_node: true,
            });
        }
    }
}

/// A mapped library's `path` (as /proc names it from strata's root) as process `pid` names
/// it, its chroot's directory taken off (a probe row would otherwise name a container's
/// library by a path of the node), and strata's path where that is another. `root`: the
/// process's root link, read once per process (unreadable: the process is gone, and
/// strata's path opens the same file).
fn mapped_in_view(
    pid: i32,
    path: String,
    root: &mut Option<std::io::Result<std::path::PathBuf>>,
) -> (String, Option<String>) {
    let root = root.get_or_insert_with(|| std::fs::read_link(format!("/proc/{pid}/root")));
    let Ok(root) = root else {
        return (path, None);
    };
    match crate::files::os_text(crate::views::inside(root, std::path::Path::new(&path))) {
        inside if inside == path => (path, None),
        inside => (inside, Some(path)),
    }
}

pub(crate) fn probe_row(run_id: &str, p: &probes::Probe, s: &attach::ProbeStatus) -> ProbeRow {
    ProbeRow {
        run_id: run_id.to_string(),
        function: p.function().to_string(),
        layer: p.layer.to_string(),
        op: p.op.to_string(),
        mechanism: s.mechanism.to_string(),
        target: s.target.clone(),
        status: s.status.to_string(),
        reason: s.reason.clone(),
        probes_line: p.line as i32,
        single_step: s.single_step,
    }
}

fn preflight(args: &RecordArgs) -> anyhow::Result<()> {
    if !nix::unistd::geteuid().is_root() {
        bail!(
            "strata record must run as root (it loads eBPF programs and attaches uprobes); run it with sudo"
        );
    }
    let targets = usize::from(!args.command.is_empty())
        + usize::from(args.pid.is_some())
        + usize::from(args.all)
        + usize::from(args.cgroup.is_some());
    if targets != 1 {
        bail!(
            "give exactly one target: `-- <command>`, `--pid <pid>`, `--cgroup <dir>`, `--slurm-job <id>` or `--all`"
        );
    }
    if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        log::warn!(
            "this kernel has no BTF (/sys/kernel/btf/vmlinux); tracepoints and uprobes work without it, later kernel-struct probes will not"
        );
    }
    crate::sink::create_dirs(&args.output, args.file_mode)?;
    let probe = args
        .output
        .join(format!(".strata-write-test-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .with_context(|| format!("output directory {} is not writable", args.output.display()))?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

pub(crate) fn progress_bar() -> indicatif::ProgressBar {
    let pb = indicatif::ProgressBar::new_spinner();
    pb.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {elapsed} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    pb.enable_steady_tick(Duration::from_millis(250));
    pb
}

pub fn monotonic_ns() -> u64 {
    crate::correlate::clock_ns(nix::time::ClockId::CLOCK_MONOTONIC) as u64
}
