//! `strata daemon`: loads the probes once, attaches them while jobs run, and traces the jobs
//! it is told to (cgroups v2, filtered in the kernel), each into its own dataset
//! `<root>/<job>/`, until told to stop or until the job's cgroup disappears. Events are
//! routed to a job by process; each job has its own correlator, so handles, files and
//! processes never mix between jobs.
use std::{
    collections::HashMap,
    io::{BufRead as _, BufReader, Write as _},
    os::unix::{fs::PermissionsExt as _, net::UnixListener},
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use strata_common::{KernelEvent, ProcEvent};

use crate::{
    attach,
    cgroup::Cgroup,
    control::{self, JobStatus, Request, Response},
    correlate::{Clock, Correlator},
    dataset::Dataset,
    events::{self, Event},
    probes::{self, Layer},
    record::{attach_opened_libraries, monotonic_ns, probe_row, queue_mapped},
    schema::RunRow,
};

pub struct DaemonArgs {
    pub output_root: PathBuf,
    pub socket: PathBuf,
    pub host: String,
    pub probes_file: Option<PathBuf>,
    pub layers: Option<Vec<Layer>>,
    /// Layers left out of what is traced otherwise (`--skip-layers`).
    pub skip_layers: Vec<Layer>,
    pub ring_buffer_mib: u32,
    /// The backlog's cap in MiB (None: 8 ring buffers).
    pub backlog_mib: Option<u32>,
    pub syscall_mode: attach::SyscallMode,
    pub flush_interval: Duration,
    pub file_mode: u32,
    /// Only processes of these uids (empty: all).
    pub users: Vec<u32>,
    /// Only rows about files under these directories.
    pub paths: Option<Vec<String>>,
    /// Expedited RCU grace periods around attaches while jobs run, and the detach.
    pub expedite: bool,
    /// Merge each closed job's files on this node (`strata compact`), in a thread of its own.
    pub compact: bool,
    /// Merge a job's files while it runs, each time it has written this many more (0: never).
    pub compact_every: u32,
}

/// Where a job's processes are: a cgroup directory, or a Slurm job's (found when it appears).
#[derive(Debug, Clone)]
enum Where {
    Dir(PathBuf),
    Slurm { job: String, step: Option<String> },
}

impl Where {
    fn find(&self) -> Option<PathBuf> {
        match self {
            Self::Dir(d) => d.is_dir().then(|| d.clone()),
            Self::Slurm { job, step } => crate::cgroup::slurm(job, step.as_deref()).ok(),
        }
    }
}

struct Job {
    name: String,
    place: Where,
    /// The cgroup once it exists: its directory, its path inside the hierarchy (as
    /// /proc/<pid>/cgroup shows it) and its id.
    cgroup: Option<(PathBuf, String, Cgroup)>,
    corr: Correlator,
    out: Dataset,
    run: RunRow,
    events: u64,
    /// The node-wide drop counters when the job started: its run row has the difference.
    drops_at_start: crate::attach::Drops,
    write_error: Option<anyhow::Error>,
    /// Why the job's cgroup, once it appeared, could not be traced yet (a fifth depth of
    /// traced cgroups): said once per reason, and by `strata ctl status`.
    refused: Option<String>,
    /// Merges of its files while it runs (`--compact-every`).
    merging: Option<crate::compact::WhileRecording>,
}

impl Job {
    /// What processes are routed by: the id of the job's cgroup, once it exists.
    fn key(&self) -> Option<u64> {
        self.cgroup.as_ref().map(|c| c.2.id)
    }

    fn status(&self, root: &Path) -> JobStatus {
        JobStatus {
            job: self.name.clone(),
            state: if self.cgroup.is_some() {
                "tracing"
            } else {
                "waiting"
            }
            .into(),
            cgroup: self.cgroup.as_ref().map(|c| c.0.clone()),
            reason: self.refused.clone().filter(|_| self.cgroup.is_none()),
            dataset: root.join(&self.name),
            events: self.events,
            rows: self.out.rows_written(),
            bytes: self.out.bytes_written(),
        }
    }
}

struct Daemon {
    args: DaemonArgs,
    probes: Vec<probes::Probe>,
    loaded: attach::Loaded,
    jobs: Vec<Job>,
    /// Which job each traced process belongs to, by the job's cgroup id (every process is
    /// routed to a job through its cgroup; ids, unlike names, cost nothing to copy per event).
    owner: HashMap<u32, u64>,
    /// Records no job could be found for (a process with no word from the kernel that left
    /// before it was looked up).
    unrouted: u64,
    v2_root: PathBuf,
    /// Compactions of closed jobs' files still running (waited for at the end).
    compactions: Vec<std::thread::JoinHandle<()>>,
}

pub fn run(args: DaemonArgs) -> anyhow::Result<()> {
    if !nix::unistd::geteuid().is_root() {
        bail!("strata daemon must run as root (it loads eBPF programs and attaches uprobes)");
    }
    let v2_root = crate::cgroup::v2_root().context(
        "no cgroup v2 hierarchy is mounted (at /sys/fs/cgroup or /sys/fs/cgroup/unified); the daemon traces jobs by cgroup v2",
    )?;
    std::fs::create_dir_all(&args.output_root).with_context(|| {
        format!(
            "cannot create the output root {}",
            args.output_root.display()
        )
    })?;
    let mut probes = probes::load(args.probes_file.as_deref())?;
    probes::select_layers(&mut probes, args.layers.as_deref(), &args.skip_layers);
    let listener = bind(&args.socket)?;

    let stop = Arc::new(AtomicBool::new(false));
    // Any of these closes every job's dataset and exits (none may kill it mid-write).
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    let mut loaded = attach::load(
        &probes,
        &attach::Options {
            cgroup_mode: true,
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
    // Kept with the rest: each job's probes table lists them, and they are linked again for
    // each job.
    let builds = loaded.attach_installed_builds(&probes);
    loaded.statuses.extend(builds);
    let attached = loaded
        .statuses
        .iter()
        .filter(|s| s.status == "attached")
        .count();
    if attached == 0 {
        bail!("no probe could be attached; see the warnings above");
    }
    // No job yet: the node's syscalls and library calls should not pay for the daemon.
    loaded.pause_syscalls()?;
    let kept = loaded.pause_uprobes();
    let kept = match kept {
        0 => String::new(),
        n => format!(
            " ({n} library uprobes stay attached while idle: without multi-uprobe links, Linux 6.6+, each takes tens of ms to release)"
        ),
    };
    eprintln!(
        "strata daemon: {attached} probes attached while a job runs{kept}; jobs go to {}/<job>; control socket {}",
        args.output_root.display(),
        args.socket.display()
    );
    let mut d = Daemon {
        args,
        probes,
        loaded,
        jobs: Vec::new(),
        owner: HashMap::new(),
        unrouted: 0,
        v2_root,
        compactions: Vec::new(),
    };
    let result = d.serve(&listener, &stop);
    // Whatever happened, close every dataset.
    for job in std::mem::take(&mut d.jobs) {
        d.close(job);
    }
    let _ = std::fs::remove_file(&d.args.socket);
    attach::detach(d.loaded);
    // An interrupted compaction loses nothing (the next one finishes it), but one that ends
    // leaves no file in progress behind.
    for c in d.compactions {
        let _ = c.join();
    }
    result
}

/// Binds the control socket, readable and writable by root only.
fn bind(socket: &Path) -> anyhow::Result<UnixListener> {
    if let Some(dir) = socket.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    if std::os::unix::net::UnixStream::connect(socket).is_ok() {
        bail!(
            "another strata daemon is listening on {}; stop it first",
            socket.display()
        );
    }
    let _ = std::fs::remove_file(socket);
    let listener = UnixListener::bind(socket)
        .with_context(|| format!("cannot listen on {}", socket.display()))?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}

impl Daemon {
    fn serve(&mut self, listener: &UnixListener, stop: &AtomicBool) -> anyhow::Result<()> {
        self.loaded
            .events
            .watch(listener)
            .context("cannot wait on the control socket")?;
        let mut last_tick = Instant::now();
        let mut pending = false;
        while !stop.load(Ordering::Relaxed) {
            if !pending {
                self.loaded.events.wait(Duration::from_millis(100));
            }
            // Requests first: a stopped job's last events are drained below before it closes.
            let mut closing = Vec::new();
            while let Ok((stream, _)) = listener.accept() {
                if let Some(job) = self.request(stream) {
                    closing.push(job);
                }
            }
            if !closing.is_empty() {
                self.loaded.events.catch_up();
            }
            pending = self.drain();
            // A job closes once the records queued before its stop are handled (bounded: the
            // ring and a full backlog are some 20 passes, and other jobs keep adding to them).
            let mut passes = 0;
            while pending && !closing.is_empty() && passes < 128 {
                pending = self.drain();
                passes += 1;
            }
            if last_tick.elapsed() >= self.args.flush_interval {
                last_tick = Instant::now();
                closing.extend(self.tick());
            }
            for name in closing {
                if let Some(i) = self.jobs.iter().position(|j| j.name == name) {
                    let job = self.jobs.remove(i);
                    self.close(job);
                }
            }
            if self.jobs.is_empty() {
                self.loaded.pause_syscalls()?;
                self.loaded.pause_uprobes();
            }
        }
        eprintln!("strata daemon: stopping; closing {} jobs", self.jobs.len());
        if self.unrouted > 0 {
            eprintln!(
                "strata daemon: {} records of processes that left before their job was known were dropped",
                self.unrouted
            );
        }
        attach::stop(&mut self.loaded)?;
        self.loaded.events.finish();
        while self.drain() {}
        Ok(())
    }

    /// Answers one control request; returns the name of a job to close.
    fn request(&mut self, stream: std::os::unix::net::UnixStream) -> Option<String> {
        let _ = stream.set_nonblocking(false);
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        let mut line = String::new();
        if BufReader::new(&stream).read_line(&mut line).is_err() {
            return None;
        }
        let mut to_close = None;
        let response = match serde_json::from_str::<Request>(&line) {
            Err(e) => Response::error(format!("bad request {:?}: {e}", line.trim())),
            Ok(Request::Status) => Response {
                ok: true,
                error: None,
                jobs: self.statuses(),
            },
            Ok(Request::Start {
                job,
                cgroup,
                slurm_job,
                slurm_step,
            }) => match self.start(&job, cgroup, slurm_job, slurm_step) {
                Ok(()) => Response {
                    ok: true,
                    error: None,
                    jobs: self
                        .statuses()
                        .into_iter()
                        .filter(|s| s.job == job)
                        .collect(),
                },
                Err(e) => Response::error(format!("{e:#}")),
            },
            Ok(Request::Stop { job }) => match self.jobs.iter().position(|j| j.name == job) {
                None => Response::error(format!("no job {job:?} is being traced")),
                Some(i) => {
                    let mut status = self.jobs[i].status(&self.args.output_root);
                    if let Some((_, _, c)) = self.jobs[i].cgroup {
                        let _ = self.loaded.remove_cgroup(c.id);
                    }
                    status.state = "stopped".into();
                    to_close = Some(job);
                    Response {
                        ok: true,
                        error: None,
                        jobs: vec![status],
                    }
                }
            },
        };
        let mut answer = serde_json::to_string(&response).unwrap_or_default();
        answer.push('\n');
        let _ = (&stream).write_all(answer.as_bytes());
        to_close
    }

    fn statuses(&self) -> Vec<JobStatus> {
        self.jobs
            .iter()
            .map(|j| j.status(&self.args.output_root))
            .collect()
    }

    fn start(
        &mut self,
        name: &str,
        cgroup: Option<PathBuf>,
        slurm_job: Option<String>,
        slurm_step: Option<String>,
    ) -> anyhow::Result<()> {
        control::check_job_name(name)?;
        if self.jobs.iter().any(|j| j.name == name) {
            bail!("job {name:?} is already being traced");
        }
        let place = match (cgroup, slurm_job) {
            (Some(dir), None) => {
                // Refuse what can never work now rather than wait for it.
                if dir.exists() {
                    crate::cgroup::resolve(&dir)?;
                }
                Where::Dir(dir)
            }
            (None, Some(job)) => Where::Slurm {
                job,
                step: slurm_step,
            },
            _ => bail!("give exactly one of a cgroup directory and a Slurm job id"),
        };
        // Before the job's dataset is made: a refused start leaves none behind.
        if let Some(dir) = place.find() {
            self.loaded
                .check_cgroup(&crate::cgroup::resolve(&dir)?)
                .with_context(|| format!("cannot trace cgroup {}", dir.display()))?;
        }
        let clock = Clock::now();
        let start_ns = clock.epoch(monotonic_ns());
        let run_id = format!("{}-{}", start_ns / 1_000_000, std::process::id());
        let dir = self.args.output_root.join(name);
        let mut out = Dataset::create(&dir, &self.args.host, &run_id, self.args.file_mode)?;
        for s in &self.loaded.statuses {
            out.probes
                .push(probe_row(&run_id, &self.probes[s.probe_id as usize], s));
        }
        let command = match &place {
            Where::Dir(d) => format!("--cgroup {}", d.display()),
            Where::Slurm { job, step: None } => format!("--slurm-job {job}"),
            Where::Slurm { job, step: Some(s) } => format!("--slurm-job {job} --slurm-step {s}"),
        };
        let run = crate::node::run_row(
            &run_id,
            &self.args.host,
            command,
            start_ns,
            clock,
            Some(name.to_string()),
        );
        out.write_run(run.clone())?;
        out.flush()?;
        let mut corr = Correlator::new(self.probes.clone(), clock);
        corr.procs
            .set_images_from_kernel(self.loaded.images_from_kernel());
        corr.path_filter = self
            .args
            .paths
            .as_deref()
            .map(crate::filter::PathFilter::new);
        let mut job = Job {
            name: name.to_string(),
            place,
            cgroup: None,
            corr,
            out,
            run,
            events: 0,
            drops_at_start: crate::attach::Drops::now(&self.loaded),
            write_error: None,
            refused: None,
            merging: crate::compact::WhileRecording::new(
                &dir,
                &self.args.host,
                &run_id,
                self.args.compact_every,
            ),
        };
        self.find_cgroup(&mut job)?;
        self.loaded.resume_syscalls()?;
        self.loaded.resume_uprobes();
        eprintln!(
            "strata daemon: job {name}: {} -> {}",
            match &job.cgroup {
                Some((d, _, _)) => format!("tracing cgroup {}", d.display()),
                None => "waiting for its cgroup".into(),
            },
            dir.display()
        );
        self.jobs.push(job);
        Ok(())
    }

    /// Adds the job's cgroup to the kernel filter once it exists.
    fn find_cgroup(&mut self, job: &mut Job) -> anyhow::Result<()> {
        if job.cgroup.is_some() {
            return Ok(());
        }
        let Some(dir) = job.place.find() else {
            return Ok(());
        };
        let c = crate::cgroup::resolve(&dir)?;
        let canonical = std::fs::canonicalize(&dir)?;
        let inner = canonical
            .strip_prefix(&self.v2_root)
            .map(|p| format!("/{}", p.display()))
            .unwrap_or_else(|_| "/".into());
        self.loaded
            .add_cgroup(c)
            .with_context(|| format!("cannot trace cgroup {}", dir.display()))?;
        // Its processes already running may use libraries of their own (a container's):
        // probed now, before `start` answers.
        queue_mapped(&mut job.corr, crate::cgroup::processes(&dir));
        self.attach_libraries(job);
        job.cgroup = Some((dir, inner, c));
        Ok(())
    }

    /// Probes the libraries the job's processes opened or mapped since the last time.
    fn attach_libraries(&mut self, job: &mut Job) {
        attach_opened_libraries(
            &mut self.loaded,
            &mut job.corr,
            &self.probes,
            &mut job.out,
            &job.run.run_id,
        );
    }

    /// Decodes and routes what the ring buffer holds, up to one pass
    /// ([`crate::ring::RECORDS_PER_PASS`]); true if records were left for the next.
    fn drain(&mut self) -> bool {
        let mut handled = 0;
        while let Some(item) = self.loaded.events.next_record() {
            match events::decode(item) {
                Ok(ev) => self.route(ev),
                Err(e) => log::warn!("undecodable record: {e}"),
            }
            handled += 1;
            if handled == crate::ring::RECORDS_PER_PASS {
                return true;
            }
        }
        false
    }

    fn route(&mut self, ev: Event) {
        let pid = ev.pid();
        // The kernel names the traced cgroup a process is in: before its first records, and
        // in its lifecycle records. Its word holds where /proc would come too late (a process
        // gone before it was looked up).
        let told = match &ev {
            Event::Job { job, .. } => Some(*job),
            Event::Proc { rec, .. } => Some(rec.job),
            _ => None,
        };
        if let Some(key) = told.filter(|&k| k != 0 && self.jobs.iter().any(|j| j.key() == Some(k)))
        {
            self.owner.insert(pid, key);
        }
        if matches!(ev, Event::Job { .. }) {
            return;
        }
        let owner = match self.owner.get(&pid) {
            Some(j) => Some(*j),
            // Kernel events of other tasks than the jobs' (workers, interrupts).
            None if matches!(&ev, Event::Kernel { rec, .. } if rec.call_id == 0) => None,
            None => self.lookup(pid),
        };
        match (owner, &ev) {
            (Some(key), _) => {
                if let Event::Proc { event, rec } = &ev {
                    match event {
                        ProcEvent::NewTask
                            if u64::from(rec.flags) & strata_common::CLONE_THREAD == 0 =>
                        {
                            self.owner.insert(rec.other, key);
                        }
                        ProcEvent::Exit => {
                            self.owner.remove(&pid);
                        }
                        _ => {}
                    }
                }
                if let Some(job) = self.jobs.iter_mut().find(|j| j.key() == Some(key)) {
                    job.events += 1;
                    let out = &mut job.out;
                    job.corr.guarded(|c| c.handle(ev, out));
                    // A write error is taken up at the next tick.
                    if job.write_error.is_none() {
                        if let Err(e) = job.out.flush_if_full() {
                            job.write_error = Some(e);
                        }
                    }
                }
            }
            // A kernel event outside the jobs' processes (a writeback worker, a request
            // completing): to the jobs that know its file, or, without a file, to every job
            // (each keeps only requests made of bios it saw).
            (None, Event::Kernel { event, rec }) => {
                let ino = rec.ino;
                let by_file = ino != 0 && !matches!(event, KernelEvent::BioRemap);
                let targets: Vec<usize> = (0..self.jobs.len())
                    .filter(|&i| !by_file || self.jobs[i].corr.files.by_inode(None, ino).is_some())
                    .collect();
                for i in targets {
                    let job = &mut self.jobs[i];
                    job.events += 1;
                    let (ev, out) = (
                        Event::Kernel {
                            event: *event,
                            rec: *rec,
                        },
                        &mut job.out,
                    );
                    job.corr.guarded(|c| c.handle(ev, out));
                }
            }
            (None, _) => self.unrouted += 1,
        }
    }

    /// The job of a process the kernel named none for (its record of that was lost to a full
    /// ring, or a call in progress when the jobs changed returned first), from its cgroup.
    fn lookup(&mut self, pid: u32) -> Option<u64> {
        let line = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok();
        let inner = line
            .as_deref()
            .and_then(|s| s.lines().find_map(|l| l.strip_prefix("0::")))
            .map(str::to_string);
        let key = match inner {
            Some(inner) => self
                .jobs
                .iter()
                .filter_map(|j| j.cgroup.as_ref().map(|c| (j, &c.1)))
                .filter(|(_, dir)| {
                    inner == **dir || dir.as_str() == "/" || inner.starts_with(&format!("{dir}/"))
                })
                .max_by_key(|(_, dir)| dir.len())
                .and_then(|(j, _)| j.key()),
            // Gone already: with a single job there is no doubt.
            None => {
                let mut tracing = self.jobs.iter().filter(|j| j.cgroup.is_some());
                match (tracing.next(), tracing.next()) {
                    (Some(j), None) => j.key(),
                    _ => None,
                }
            }
        }?;
        self.owner.insert(pid, key);
        Some(key)
    }

    /// Once per flush interval: flush each job, attach newly opened libraries, look for
    /// cgroups that appeared, and return the jobs whose cgroup is gone (the job ended).
    fn tick(&mut self) -> Vec<String> {
        let mut ended = Vec::new();
        let mut jobs = std::mem::take(&mut self.jobs);
        for job in &mut jobs {
            let waiting = job.cgroup.is_none();
            match self.find_cgroup(job) {
                Ok(()) => {
                    if let Some((dir, _, _)) = job.cgroup.as_ref().filter(|_| waiting) {
                        eprintln!(
                            "strata daemon: job {}: tracing cgroup {}",
                            job.name,
                            dir.display()
                        );
                    }
                }
                // Tried again at each flush: a job stuck behind a fifth depth would say the
                // same every second (the default interval) until a depth is free.
                Err(e) => {
                    let why = format!("{e:#}");
                    if job.refused.as_ref() != Some(&why) {
                        log::warn!(
                            "job {}: {why}; it waits, and is tried again at each flush",
                            job.name
                        );
                    }
                    job.refused = Some(why);
                }
            }
            self.attach_libraries(job);
            for ino in std::mem::take(&mut job.corr.files.new_inodes) {
                self.loaded.watch_inode(ino);
            }
            let out = &mut job.out;
            job.corr.guarded(|c| c.tick(out));
            if job.write_error.is_none() {
                if let Err(e) = job.out.flush() {
                    job.write_error = Some(e);
                }
            }
            let written = job.out.files_written();
            if let Some(e) = job.merging.as_mut().and_then(|m| m.poll(written)) {
                eprintln!("strata daemon: job {}: {e:#}", job.name);
            }
            if let Some(e) = &job.write_error {
                // Stop this job only: its dataset stays valid up to here.
                eprintln!(
                    "strata daemon: job {}: writing failed, job stopped: {e:#}",
                    job.name
                );
                ended.push(job.name.clone());
            } else if job.cgroup.as_ref().is_some_and(|(dir, _, _)| !dir.exists()) {
                ended.push(job.name.clone());
            }
        }
        self.jobs = jobs;
        for name in &ended {
            if let Some(c) = self
                .jobs
                .iter()
                .find(|j| &j.name == name)
                .and_then(|j| j.cgroup.as_ref().map(|c| c.2.id))
            {
                let _ = self.loaded.remove_cgroup(c);
            }
        }
        ended
    }

    /// Finishes a job's dataset: open handles and live processes as they stand, the run row.
    fn close(&mut self, mut job: Job) {
        if let Some((_, _, c)) = job.cgroup {
            let _ = self.loaded.remove_cgroup(c.id);
        }
        if let Some(key) = job.key() {
            self.owner.retain(|_, j| *j != key);
        }
        let out = &mut job.out;
        job.corr.guarded(|c| c.finish(out));
        let clock = Clock::now();
        job.run.end_ns = Some(clock.epoch(monotonic_ns()));
        job.run.events_recorded = job.events as i64;
        crate::attach::Drops::now(&self.loaded)
            .since(job.drops_at_start)
            .record(&mut job.run);
        job.run.calls_written =
            (job.out.calls.rows_written + job.out.calls.buffered() as u64) as i64;
        job.run.requests_unfinished = job.corr.requests_unfinished as i64;
        job.run.internal_errors = job.corr.internal_errors as i64;
        job.run.complete = job.write_error.is_none();
        // The daemon's, shared by its jobs.
        job.run.peak_rss_kib = crate::node::peak_rss_kib();
        if job.corr.internal_errors > 0 {
            eprintln!(
                "strata daemon: job {}: {} records were skipped after an internal error, a bug \
                 in strata (the first messages before say where; please report them; \
                 run.internal_errors)",
                job.name, job.corr.internal_errors
            );
        }
        // The run row last: once it has its end, the dataset is complete (and compacted).
        let flushed = job.out.flush();
        let compact = self.args.compact && flushed.is_ok();
        let (dir, host) = (
            self.args.output_root.join(&job.name),
            self.args.host.clone(),
        );
        let (name, events, run, run_id) = (job.name, job.events, job.run, job.out.run_id.clone());
        let mode = self.args.file_mode;
        let mut merging = job.merging;
        let merging_now = merging.as_ref().is_some_and(|m| m.busy());
        let finish = move || {
            // The merge of the running job's files first: the last one must not find its
            // merged file in progress.
            if let Some(e) = merging.as_mut().and_then(|m| m.wait()) {
                eprintln!("strata daemon: job {name}: {e:#}");
            }
            if compact {
                compact_job(&name, &dir, &host, &run_id);
            }
            let (calls, lost) = (run.calls_written, run.events_lost);
            // A writer of its own: the job's holds what a thread cannot share.
            let written = flushed
                .and_then(|()| Dataset::create(&dir, &host, &run_id, mode))
                .and_then(|mut out| out.write_run(run));
            match written {
                Ok(()) => eprintln!(
                    "strata daemon: job {name} closed: {events} events, {calls} calls, {lost} lost"
                ),
                Err(e) => eprintln!("strata daemon: job {name}: closing its dataset failed: {e:#}"),
            }
        };
        if compact || merging_now {
            // Off the event loop: the other jobs' records keep coming meanwhile.
            self.compactions.retain(|c| !c.is_finished());
            self.compactions.push(std::thread::spawn(finish));
        } else {
            finish();
        }
    }
}

/// Merges a closed job's files on this node (`strata compact --host HOST --run RUN`): nothing
/// writes them any more, while the job's other runs and other nodes may still write beside
/// them.
fn compact_job(name: &str, dir: &Path, host: &str, run: &str) {
    let only = crate::compact::Only {
        host: Some(host),
        run: Some(run),
        recording: false,
    };
    match crate::compact::run(dir, only, crate::compact::Limits::default(), false) {
        Ok(parts) => {
            let before: usize = parts.iter().map(|p| p.files_before).sum();
            let after: usize = parts.iter().map(|p| p.files_after).sum();
            if after < before {
                eprintln!("strata daemon: job {name}: its {before} files here merged into {after}");
            }
        }
        Err(e) => eprintln!("strata daemon: job {name}: compacting its files failed: {e:#}"),
    }
}
