//! Loading the eBPF object, filling its spec maps from probes.toml, and attaching every
//! enabled probe. A probe that cannot attach is recorded with the reason, never fatal.
use std::{
    collections::HashMap,
    os::fd::{AsFd as _, AsRawFd as _, RawFd},
    path::{Path, PathBuf},
};

use anyhow::{Context as _, anyhow};
use aya::{
    Ebpf, EbpfLoader,
    maps::{Array, HashMap as BpfHashMap, MapData, PerCpuArray},
    programs::{
        BtfTracePoint, KProbe, Program, TracePoint, UProbe,
        tp_btf::BtfTracePointLinkId,
        trace_point::TracePointLinkId,
        uprobe::{UProbeAttachLocation, UProbeAttachPoint, UProbeScope},
    },
};
use strata_common::{
    COOKIE_TABLE_SHIFT, Config, FIELD_NONE, FuncSpec, KERNEL_WINDOW, KernelEvent, KernelFields,
    OnlyKey, STOP_FROZEN, STOP_NEW, TypeTable, globals, maps, programs,
};

use crate::{
    libraries,
    probes::{ArgKind, Mechanism, Probe, Target},
    symbols::{SymbolError, SymbolTable, find_library_in},
    tracefs,
};

pub(crate) static EBPF: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/strata"));

/// What happened to one probe at start, for the `probes` table and the summary.
#[derive(Debug, Clone)]
pub struct ProbeStatus {
    pub probe_id: u32,
    pub mechanism: &'static str,
    /// Tracepoint name or library path.
    pub target: String,
    /// `attached`, `failed`, `disabled` or `alias`.
    pub status: &'static str,
    pub reason: Option<String>,
    /// Uprobes: whether the kernel single-steps the probed instruction (a second trap per
    /// hit; see [`crate::entry_insn`]).
    pub single_step: Option<bool>,
}

/// The loaded programs and the maps user space keeps using.
pub struct Loaded {
    /// The syscall layer goes through the two raw syscall tracepoints (`sys_enter`,
    /// `sys_exit`), attached while `raw_links` holds their links (see
    /// [`Loaded::pause_syscalls`]); as BTF raw tracepoints when `btf_syscalls`.
    raw_syscalls: bool,
    btf_syscalls: bool,
    raw_links: Vec<RawLink>,
    /// Thread stacks are task-local: the task iterator can send the calls in progress as
    /// strata stops.
    task_stacks: bool,
    pub ebpf: Ebpf,
    /// The traced processes, by tgid: see [`Loaded::trace`].
    traced: BpfHashMap<MapData, u32, u32>,
    traced_marks: Array<MapData, [u8; strata_common::TRACED_BLOCK]>,
    pub counters: PerCpuArray<MapData, u64>,
    pub events: crate::ring::EventRing,
    pub statuses: Vec<ProbeStatus>,
    /// Inode numbers of files of interest to the kernel-layer programs.
    watched: BpfHashMap<MapData, u64, u8>,
    /// Traced cgroups (cgroup mode), and the level of each for `Config::cgroup_levels`.
    cgroups: BpfHashMap<MapData, u64, u32>,
    cgroup_levels: HashMap<u64, u32>,
    config: Array<MapData, Config>,
    config_value: Config,
    uprobes: Uprobes,
    /// (dev, inode) of every library file probes are attached to.
    lib_inodes: std::collections::HashSet<(u64, u64)>,
    /// Whether some probe may be of a library file of this name ([`libraries::named`], a
    /// pass over every probe): each new process brings its loader and libc again.
    probed_names: HashMap<String, bool>,
    /// The loader's cache as read at load (soname -> path).
    pub ld_cache: HashMap<String, PathBuf>,
    /// What new images load at start, found at their exec.
    pub start_libraries: crate::libraries::StartLibraries,
    /// Whether uprobes attached to a library and released at the end do so under expedited
    /// RCU grace periods ([`crate::grace`]).
    pub expedite: bool,
}

impl Loaded {
    /// Whether the kernel side sends each new image's arguments and environment at its exec
    /// (this kernel's BTF gave the fields it reads).
    pub fn images_from_kernel(&self) -> bool {
        self.config_value.task_mm_off != 0
    }
}

/// Stops the programs from recording (they return at once), so the ring buffer can be
/// drained to the last event while the probes are still attached, and sends the calls still
/// in progress (see [`send_calls_in_progress`]).
pub fn stop(loaded: &mut Loaded) -> anyhow::Result<()> {
    // Where no traced process is left (a command and all it started have exited) no thread
    // has a call in progress: the iterator is not even loaded (some 20 ms, most of it reading
    // the kernel's BTF).
    let cfg = loaded.config_value;
    let any_left = cfg.trace_all != 0
        || cfg.cgroup_mode != 0
        || cfg.user_filter != 0
        || loaded.traced().next().is_some();
    if !(loaded.task_stacks && any_left) {
        return set_stopped(loaded, STOP_NEW);
    }
    // The stacks are frozen first, the stop's time written before the state that reads it.
    loaded.config_value.stopped_ns = crate::record::monotonic_ns();
    loaded.config.set(0, loaded.config_value, 0)?;
    set_stopped(loaded, STOP_FROZEN)?;
    let started = std::time::Instant::now();
    match send_calls_in_progress(&mut loaded.ebpf, started) {
        Ok(()) => log::debug!(
            "stop: calls in progress sent in {} ms",
            started.elapsed().as_millis()
        ),
        Err(e) => {
            // The returns are recorded again: the calls in progress keep what comes of them.
            log::info!("the calls in progress at the stop are not recorded: {e:#}");
            set_stopped(loaded, STOP_NEW)?;
        }
    }
    Ok(())
}

/// Writes `state` ([`STOP_NEW`], [`STOP_FROZEN`]) to the programs' [`Config::stopped`].
fn set_stopped(loaded: &mut Loaded, state: u32) -> anyhow::Result<()> {
    loaded.config_value.stopped = state;
    loaded
        .config
        .set(0, loaded.config_value, 0)
        .context("telling the programs to stop recording")
}

/// The task iterator [`send_calls_in_progress`] runs.
fn stacks_iterator(ebpf: &mut Ebpf) -> anyhow::Result<&mut aya::programs::Iter> {
    Ok(ebpf
        .program_mut(programs::ITER_STACKS)
        .context(programs::ITER_STACKS)?
        .try_into()?)
}

/// Runs the task iterator that sends, as unfinished, the calls each thread still has in
/// progress at a frozen stop begun at `frozen` (a rank waiting in a collective, a read
/// blocked on a pipe): without it their rows would be missing, and the calls already
/// returned beneath them would name a parent without a row.
fn send_calls_in_progress(ebpf: &mut Ebpf, frozen: std::time::Instant) -> anyhow::Result<()> {
    let btf = aya::Btf::from_sys_fs().context("reading the kernel's BTF")?;
    let prog = stacks_iterator(ebpf)?;
    prog.load("task", &btf)
        .context("loading the task iterator")?;
    let link = prog.attach()?;
    let mut file = prog.take_link(link)?.into_file()?;
    // A program that read the state before the freeze may still be changing a stack: each
    // runs for microseconds, and the load above takes some 20 ms; this bounds it where the
    // load was quicker.
    if let Some(rest) = FREEZE_GRACE.checked_sub(frozen.elapsed()) {
        std::thread::sleep(rest);
    }
    // Each read runs the program over tasks until the output fills; it writes none.
    std::io::copy(&mut file, &mut std::io::sink()).context("running the task iterator")?;
    Ok(())
}

/// How long after freezing the stacks the task iterator reads them at the earliest.
const FREEZE_GRACE: std::time::Duration = std::time::Duration::from_millis(10);

/// Detaches every probe and unloads the programs.
///
/// Releasing an attachment waits for RCU grace periods: a perf-event uprobe one after
/// another under a kernel-wide lock (~90 ms each on a loaded VM here; 50 s for strata's 278
/// default probes), so libraries are probed through multi-uprobe links where the kernel has
/// them (Linux 6.6+), one wait per link. The links and programs are released from a thread
/// each, so that their waits overlap: measured, a default `strata record -- true` took 2.0 s
/// with them released in turn and 1.05 s so (trace events still wait in turn: the kernel
/// holds its event lock through theirs). Callers finish their output first.
pub fn detach(mut loaded: Loaded) {
    let _grace = loaded.expedite.then(crate::grace::Expedited::begin);
    let links = std::mem::take(&mut loaded.uprobes.multi_links);
    std::thread::scope(|s| {
        for link in links {
            s.spawn(move || drop(link));
        }
        // Only the programs loaded: the object holds some 60, most of them never loaded
        // in a run (other kernels' fallbacks, the benchmark's), and a thread costs more
        // than nothing to start.
        for (_, p) in loaded.ebpf.programs_mut().filter(|(_, p)| p.fd().is_ok()) {
            s.spawn(move || {
                // Programs never loaded or attached have nothing to release.
                let _ = match p {
                    Program::TracePoint(p) => p.unload(),
                    Program::BtfTracePoint(p) => p.unload(),
                    Program::UProbe(p) => p.unload(),
                    Program::KProbe(p) => p.unload(),
                    _ => Ok(()),
                };
            });
        }
    });
    drop(loaded);
}

/// Where uprobes are attached and how.
struct Uprobes {
    /// The probe at each (library file, offset).
    at: HashMap<(PathBuf, u64), u32>,
    /// Perf-event links, one per probe and program (kernels without multi uprobes).
    links: usize,
    /// The programs for multi links, where the kernel has them.
    multi: Option<crate::uprobe_multi::Programs>,
    /// Those programs while the kernel verifies them.
    loading: Option<crate::uprobe_multi::Loading>,
    /// Multi links, per library file (the entry and the return programs, or calls of a
    /// function probed in its place).
    multi_links: Vec<crate::uprobe_multi::Linked>,
    /// Probes checked and waiting for their file's multi link: (file, offset, cookie).
    pending: Vec<(PathBuf, u64, u64)>,
    /// Calls of a function probed in its place (`calls_in`), waiting: entry programs only,
    /// since a return probe there would take the caller's stack for a return address.
    pending_calls: Vec<(PathBuf, u64, u64)>,
    /// Entries of the type-table map in use (index 0 means none).
    type_tables: u32,
    /// Why the kernel refused a perf-event uprobe program, once it has: every probe that
    /// needs it fails with that reason, not after a verification of its own (up to a
    /// second each, for a program too complex for the verifier, and a run has hundreds).
    refused: HashMap<&'static str, String>,
}

impl Uprobes {
    fn new(ebpf: &Ebpf) -> Self {
        let loading = crate::uprobe_multi::Programs::load(
            ebpf,
            EBPF,
            crate::uprobe_multi::Names {
                entry: programs::UPROBE_ENTRY,
                ret: programs::UPROBE_RETURN,
                session: programs::UPROBE_SESSION,
            },
        );
        if let Err(e) = &loading {
            log::debug!("no multi-uprobe links, one perf event per uprobe: {e:#}");
        }
        Self {
            at: HashMap::new(),
            links: 0,
            multi: None,
            loading: loading.ok(),
            multi_links: Vec::new(),
            pending: Vec::new(),
            pending_calls: Vec::new(),
            type_tables: 0,
            refused: HashMap::new(),
        }
    }

    /// Waits for the multi-link programs' verification, if it is under way.
    fn loaded(&mut self) {
        if let Some(loading) = self.loading.take() {
            let waited = std::time::Instant::now();
            let loaded = loading.wait();
            log::debug!(
                "multi-uprobe programs: waited {} ms for their verification",
                waited.elapsed().as_millis()
            );
            match loaded {
                Ok(p) => self.multi = Some(p),
                // The kernel has the links (checked before) but refused the programs: the
                // perf-event uprobes instead take far longer to attach and to release.
                Err(e) => log::warn!("multi-uprobe links unused, one perf event per uprobe: {e:#}"),
            }
        }
    }

    /// Attaches the pending probes, one multi link pair per file where the kernel has them
    /// (Linux 6.6+), else one perf-event uprobe per probe. Returns the probes that could not
    /// be attached, and those attached by multi link.
    fn attach_pending(&mut self, ebpf: &mut Ebpf) -> (Vec<(u32, Failure)>, Vec<u32>) {
        self.loaded();
        let mut pending = std::mem::take(&mut self.pending);
        pending.sort();
        let (mut failed, mut multi) = (Vec::new(), Vec::new());
        for group in pending.chunk_by(|a, b| a.0 == b.0) {
            let single = self.attach_multi(group, &mut multi);
            for (path, offset, cookie) in single {
                if let Err(e) = self.attach_one(ebpf, &path, offset, cookie, true) {
                    self.at.remove(&(path.clone(), offset));
                    failed.push((probe_id(cookie), e));
                }
            }
        }
        let mut calls = std::mem::take(&mut self.pending_calls);
        calls.sort();
        for group in calls.chunk_by(|a, b| a.0 == b.0) {
            // One entry-only multi link per file where the kernel has them (released at once at
            // stop, where perf-event uprobes take tens of ms each here), else one by one.
            let linked = self.multi.as_ref().and_then(|m| {
                let offsets: Vec<u64> = group.iter().map(|g| g.1).collect();
                let cookies: Vec<u64> = group.iter().map(|g| g.2).collect();
                m.link(&group[0].0, &offsets, &cookies, false)
                    .map_err(|e| log::debug!("entry-only multi-uprobe link: {e}"))
                    .ok()
            });
            if let Some(link) = linked {
                self.multi_links.push(link);
                continue;
            }
            for (path, offset, cookie) in group.iter().cloned() {
                if let Err(e) = self.attach_one(ebpf, &path, offset, cookie, false) {
                    self.at.remove(&(path.clone(), offset));
                    failed.push((probe_id(cookie), e));
                }
            }
        }
        (failed, multi)
    }

    /// Attaches the probes of one file by multi links. Returns the probes left to attach one
    /// by one (all of them without multi links; else those the kernel refused).
    fn attach_multi(
        &mut self,
        group: &[(PathBuf, u64, u64)],
        attached: &mut Vec<u32>,
    ) -> Vec<(PathBuf, u64, u64)> {
        let Some(m) = &self.multi else {
            return group.to_vec();
        };
        let mut links = Vec::new();
        let refused = link_halving(group, |part| {
            let offsets: Vec<u64> = part.iter().map(|g| g.1).collect();
            let cookies: Vec<u64> = part.iter().map(|g| g.2).collect();
            links.push(m.link(&part[0].0, &offsets, &cookies, true)?);
            attached.extend(part.iter().map(|g| probe_id(g.2)));
            Ok::<_, anyhow::Error>(())
        });
        self.multi_links.extend(links);
        refused
            .into_iter()
            .map(|(g, e)| {
                log::debug!(
                    "multi-uprobe link at {:#x} in {}: {e}; a perf-event uprobe instead",
                    g.1,
                    g.0.display()
                );
                g
            })
            .collect()
    }

    /// One perf-event uprobe at `offset`: the return and entry programs (the return first,
    /// as for syscalls), or the entry alone (`with_return` false).
    fn attach_one(
        &mut self,
        ebpf: &mut Ebpf,
        path: &Path,
        offset: u64,
        cookie: u64,
        with_return: bool,
    ) -> Result<(), Failure> {
        let progs: &[&str] = if with_return {
            &[programs::UPROBE_RETURN, programs::UPROBE_ENTRY]
        } else {
            &[programs::UPROBE_ENTRY]
        };
        for &prog in progs {
            let point = UProbeAttachPoint {
                location: UProbeAttachLocation::AbsoluteOffset(offset),
                cookie: Some(cookie),
            };
            let program =
                program::<UProbe>(ebpf, prog).map_err(|e| Failure::Failed(format!("{e:#}")))?;
            // Loaded at first use: with multi-uprobe links (Linux 6.6+) these perf-event
            // programs serve only probes a link refused, and verifying the entry program
            // takes some 100 ms.
            if program.fd().is_err() {
                if let Some(why) = self.refused.get(prog) {
                    return Err(Failure::Refused(why.clone()));
                }
                if let Err(e) = program.load() {
                    // Said once; each probe's row keeps it.
                    let why = format!("{:#}", rejected(prog, &e));
                    log::warn!(
                        "{why}: each library probe attached without a multi-uprobe link \
                         needs it"
                    );
                    self.refused.insert(prog, why.clone());
                    return Err(Failure::Refused(why));
                }
            }
            program
                .attach(point, path, UProbeScope::AllProcesses)
                .map_err(|e| {
                    Failure::Failed(format!("uprobe at {offset:#x} in {}: {e}", path.display()))
                })?;
            self.links += 1;
        }
        Ok(())
    }

    /// The run statistics' and recursion counts' extra programs.
    fn program_fds(&self) -> Vec<RawFd> {
        self.multi.iter().flat_map(|m| m.fds()).collect()
    }
}

/// Links `items` with `link`, halving any part it refuses until each refused part is one
/// item: the kernel refuses a whole multi link for one offset it cannot probe, and names
/// none. Returns the items refused alone, with the reason. A single bad offset among n costs
/// about 2 log2(n) attempts.
fn link_halving<T: Clone, E>(
    items: &[T],
    mut link: impl FnMut(&[T]) -> Result<(), E>,
) -> Vec<(T, E)> {
    fn go<T: Clone, E>(
        items: &[T],
        link: &mut impl FnMut(&[T]) -> Result<(), E>,
        refused: &mut Vec<(T, E)>,
    ) {
        if items.is_empty() {
            return;
        }
        match link(items) {
            Ok(()) => {}
            Err(e) if items.len() == 1 => refused.push((items[0].clone(), e)),
            Err(_) => {
                let (a, b) = items.split_at(items.len() / 2);
                go(a, link, refused);
                go(b, link, refused);
            }
        }
    }
    let mut refused = Vec::new();
    go(items, &mut link, &mut refused);
    refused
}

/// Attaches what [`attach_uprobe`] left pending and records the outcome in `statuses`.
fn finish_uprobes(
    uprobes: &mut Uprobes,
    ebpf: &mut Ebpf,
    statuses: &mut [ProbeStatus],
    probes: &[Probe],
) {
    let (failed, multi) = uprobes.attach_pending(ebpf);
    let mechanism = match uprobes.multi.as_ref().is_some_and(|m| m.session()) {
        true => "uprobe_session",
        false => "uprobe_multi",
    };
    for status in statuses.iter_mut() {
        if multi.contains(&status.probe_id) {
            status.mechanism = mechanism;
        }
    }
    for (id, failure) in failed {
        if let Some(status) = statuses.iter_mut().find(|s| s.probe_id == id) {
            record_result(status, Err(failure), probes);
        }
    }
}

impl Loaded {
    /// Traces these processes (at the start, before any other is traced): their marks
    /// first, which the kernel side reads before the hash of traced processes. A mark is set
    /// here by a read and a write of its block, so that no fork of a traced process may set
    /// another in the same block meanwhile: none is traced yet.
    pub fn trace(&mut self, tgids: &[u32]) -> anyhow::Result<()> {
        const BLOCK: usize = strata_common::TRACED_BLOCK;
        for &tgid in tgids {
            let at = tgid / BLOCK as u32;
            let mut marks = self.traced_marks.get(&at, 0)?;
            marks[tgid as usize % BLOCK] = 1;
            self.traced_marks.set(at, marks, 0)?;
        }
        for &tgid in tgids {
            self.traced.insert(tgid, 1, 0)?;
        }
        Ok(())
    }

    /// Stops tracing `tgid` (its mark stays: a stale one costs a lookup only).
    pub fn untrace(&mut self, tgid: u32) {
        let _ = self.traced.remove(&tgid);
    }

    /// The traced processes.
    pub fn traced(&self) -> impl Iterator<Item = u32> + '_ {
        self.traced.keys().flatten()
    }

    /// Whether the file with this (dev, ino) was looked at for probes already.
    pub fn looked_at(&self, file: (u64, u64)) -> bool {
        self.lib_inodes.contains(&file)
    }

    /// Lets the kernel-layer programs keep events of workers (writeback, reclaim) on inode
    /// `ino`. Full map: the file's worker events are not kept (traced processes' own are).
    pub fn watch_inode(&mut self, ino: u64) {
        if let Err(e) = self.watched.insert(ino, 1, 0) {
            log::debug!("cannot watch inode {ino}: {e}");
        }
    }

    /// Detaches the raw_syscalls tracepoints: with nothing to trace (an idle daemon), every
    /// syscall on the node would still run the two programs.
    pub fn pause_syscalls(&mut self) -> anyhow::Result<()> {
        // The entry first (the reverse of attaching).
        for link in std::mem::take(&mut self.raw_links).into_iter().rev() {
            match link {
                RawLink::Classic(prog, id) => program::<TracePoint>(&mut self.ebpf, prog)?
                    .detach(id)
                    .with_context(|| format!("detaching {prog}"))?,
                RawLink::Btf(prog, id) => program::<BtfTracePoint>(&mut self.ebpf, prog)?
                    .detach(id)
                    .with_context(|| format!("detaching {prog}"))?,
            }
        }
        Ok(())
    }

    /// Releases the library uprobes (an idle daemon): while they are attached, every process
    /// on the node that maps a probed library has a breakpoint written into its own copy of
    /// each probed page at its start, and traps at every call of a probed function, traced
    /// or not (measured here: a `cat` took 34% longer beside an idle daemon that kept them).
    /// The releases, each an RCU grace period, finish on a thread of their own. Returns the
    /// uprobes that stay attached: perf-event ones (kernels before 6.6, where each takes tens
    /// of ms to release, one after another), and those of a multi link whose file could not
    /// be held open to link it again.
    pub fn pause_uprobes(&mut self) -> usize {
        let released: Vec<_> = self
            .uprobes
            .multi_links
            .iter_mut()
            .filter_map(crate::uprobe_multi::Linked::release)
            .collect();
        if !released.is_empty() {
            std::thread::spawn(move || {
                std::thread::scope(|s| {
                    for links in released {
                        s.spawn(move || drop(links));
                    }
                })
            });
        }
        self.uprobes.links
            + self
                .uprobes
                .multi_links
                .iter()
                .filter(|l| l.attached())
                .map(|l| l.probes())
                .sum::<usize>()
    }

    /// Attaches the library uprobes again after [`Loaded::pause_uprobes`]. A library that
    /// cannot be linked again is named in a warning, and its probes record nothing.
    pub fn resume_uprobes(&mut self) {
        let Some(m) = &self.uprobes.multi else {
            return;
        };
        if self.uprobes.multi_links.iter().all(|l| l.attached()) {
            return;
        }
        let _grace = self.expedite.then(crate::grace::Expedited::begin);
        for l in &mut self.uprobes.multi_links {
            if let Err(e) = m.relink(l) {
                log::warn!(
                    "{} library probes could not be attached again for the job: {e}",
                    l.probes()
                );
            }
        }
    }

    /// Attaches the raw_syscalls tracepoints again after [`Loaded::pause_syscalls`].
    pub fn resume_syscalls(&mut self) -> anyhow::Result<()> {
        if self.raw_syscalls && self.raw_links.is_empty() {
            self.raw_links = attach_raw_syscalls(&mut self.ebpf, self.btf_syscalls)?;
        }
        Ok(())
    }

    /// Starts tracing the processes of a cgroup (and its descendants) in cgroup mode.
    pub fn add_cgroup(&mut self, c: crate::cgroup::Cgroup) -> anyhow::Result<()> {
        self.check_cgroup(&c)?;
        self.cgroups
            .insert(c.id, c.level, 0)
            .with_context(|| format!("cannot add cgroup {} to the kernel filter", c.id))?;
        self.cgroup_levels.insert(c.id, c.level);
        self.update_levels()
    }

    /// Whether the kernel filter can take this cgroup beside those it holds (its depth).
    pub fn check_cgroup(&self, c: &crate::cgroup::Cgroup) -> anyhow::Result<()> {
        if c.level >= strata_common::MAX_CGROUP_LEVEL {
            anyhow::bail!(
                "it is {} levels deep; strata follows cgroups up to {} levels",
                c.level,
                strata_common::MAX_CGROUP_LEVEL - 1
            );
        }
        let depths = depths_in_use(self.cgroup_levels.values().copied());
        if !depths.contains(&c.level) && depths.len() >= strata_common::MAX_CGROUP_DEPTHS {
            anyhow::bail!(
                "it is {} levels deep, and the traced cgroups are already at {} different \
                 depths ({depths:?}), as many as strata follows at once; stop tracing those \
                 at one of them first",
                c.level,
                depths.len()
            );
        }
        Ok(())
    }

    /// Stops tracing a cgroup: its processes' next events are not recorded.
    pub fn remove_cgroup(&mut self, id: u64) -> anyhow::Result<()> {
        let _ = self.cgroups.remove(&id);
        self.cgroup_levels.remove(&id);
        self.update_levels()
    }

    /// After each change of the traced cgroups: their levels, then a new epoch, which sets
    /// aside the verdicts the kernel side cached before (a cgroup's, once worked out, holds
    /// until the traced cgroups change: its ancestors never do). Two updates: a program
    /// that reads the new epoch then finds the levels it goes with.
    fn update_levels(&mut self) -> anyhow::Result<()> {
        self.config_value.cgroup_levels = cgroup_depths(self.cgroup_levels.values().copied());
        self.config.set(0, self.config_value, 0)?;
        self.config_value.cgroup_epoch = self.config_value.cgroup_epoch.wrapping_add(1);
        self.config.set(0, self.config_value, 0)?;
        Ok(())
    }

    /// Time spent in all of strata's programs, see [`program_stats`].
    pub fn program_stats(&self) -> Option<(u64, u64)> {
        program_stats(&self.ebpf, &self.uprobes.program_fds())
    }

    /// Perf-event uprobe attachments (entry and return) that detaching will release one by
    /// one (multi links not counted).
    pub fn uprobe_links(&self) -> usize {
        self.uprobes.links
    }
}

pub struct Options {
    pub trace_all: bool,
    /// Trace the processes of the cgroups given to [`Loaded::add_cgroup`] (and their
    /// descendant cgroups), filtered in the kernel; none until one is added.
    pub cgroup_mode: bool,
    /// Only processes of these uids (none: every user).
    pub users: Vec<u32>,
    pub ring_bytes: u32,
    /// The most records copied out of the ring may take in strata's memory (None: 8 rings).
    pub backlog_bytes: Option<usize>,
    pub syscall_mode: SyscallMode,
    pub datatype_size_offset: u32,
    pub status_count_offset: u32,
    pub stdio_fileno_offset: u32,
    pub stdio_fd_flag: u32,
    pub stdio_read_offset: u32,
}

impl Options {
    /// Options for these probes: the MPI datatype layout they declare, the ring buffer
    /// rounded up to a power of two.
    pub fn new(
        probes: &[Probe],
        ring_buffer_mib: u32,
        backlog_mib: Option<u32>,
        syscall_mode: SyscallMode,
    ) -> Self {
        Self {
            trace_all: false,
            cgroup_mode: false,
            users: Vec::new(),
            ring_bytes: ring_buffer_mib.max(1).next_power_of_two() << 20,
            backlog_bytes: backlog_mib.map(|m| (m as usize) << 20),
            syscall_mode,
            datatype_size_offset: probes
                .iter()
                .find_map(|p| p.datatype_size_offset)
                .unwrap_or(0) as u32,
            status_count_offset: probes
                .iter()
                .find_map(|p| p.status_count_offset)
                .unwrap_or(0) as u32,
            stdio_fileno_offset: probes
                .iter()
                .find_map(|p| p.stdio_fileno_offset)
                .unwrap_or(0) as u32,
            stdio_fd_flag: probes.iter().find_map(|p| p.stdio_fd_flag).unwrap_or(0),
            stdio_read_offset: probes.iter().find_map(|p| p.stdio_read_offset).unwrap_or(0) as u32,
        }
    }
}

/// How the syscall probes reach the kernel. All three run the same program bodies and
/// deliver the same records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SyscallMode {
    /// BTF raw tracepoints sys_enter and sys_exit: two attachments for every syscall probe,
    /// the kernel hands over the saved registers (measured here: an empty pair costs 128 ns
    /// per syscall, against 190 for the trace events of `raw`). Every syscall on the node
    /// runs the (early-exiting) programs; start and stop are fast. Needs kernel BTF; falls
    /// back to `raw` without it, and the probes table says why.
    Btf,
    /// The trace events raw_syscalls/sys_enter and sys_exit: as `btf`, but the kernel builds
    /// a trace record for every syscall first.
    Raw,
    /// syscalls/sys_enter_<name> and sys_exit_<name>: only probed syscalls run the program,
    /// but each attachment costs ~40 ms to release on these VMs (seconds at exit).
    PerSyscall,
}

impl SyscallMode {
    /// The two-attachment modes, where every syscall runs the programs.
    fn all_syscalls(self) -> bool {
        self != Self::PerSyscall
    }
}

/// Loads strata's eBPF object (maps created, programs not yet loaded): `ring_bytes` sizes
/// the ring buffer (default: the object's), `task` keeps thread stacks in task-local
/// storage (kernels with BTF) instead of a hash map, the threads' ids read from their tasks
/// at these offsets, and `floor_ring` has the
/// benchmark's floor programs send their records through the ring buffer (else they only
/// build them: the stamp).
pub fn load_object(
    ring_bytes: Option<u32>,
    task: Option<&strata_common::TaskOffsets>,
    floor_ring: bool,
    page_offsets: &strata_common::PageOffsets,
    block_offsets: &strata_common::BlockOffsets,
) -> anyhow::Result<Ebpf> {
    let flag = u8::from(task.is_some());
    let task = task.copied().unwrap_or_default();
    let floor_ring = u8::from(floor_ring);
    let mut loader = EbpfLoader::new();
    loader.verifier_log_level(crate::verifier::log_level());
    if let Some(bytes) = ring_bytes {
        loader.map_max_entries(maps::EVENTS, bytes);
    }
    loader
        .override_global(globals::USE_TASK_STORAGE, &flag, true)
        .override_global(globals::TASK_OFFSETS, &task, true)
        .override_global(globals::FLOOR_RING, &floor_ring, true)
        .override_global(globals::PAGE_OFFSETS, page_offsets, true)
        .override_global(globals::BLOCK_OFFSETS, block_offsets, true)
        // aya has no wrapper for task storage; only the programs use it.
        .allow_unsupported_maps()
        .load(EBPF)
        .map_err(|e| {
            // aya's own error names what it tried first, which says nothing of the cause.
            if let Some(why) = crate::bpf_access::refusal() {
                log::debug!("loading the eBPF object: {e}");
                return anyhow!(why);
            }
            // The map is created either way. Asked only after a failure: the probe's map
            // takes the kernel some 25 ms to free (RCU barriers).
            if !aya::sys::is_map_supported(aya::maps::MapType::TaskStorage).unwrap_or(true) {
                anyhow!(
                    "this kernel has no task-local storage for BPF programs, which strata needs \
                     for its per-thread call stacks: Linux 5.11 or later is required"
                )
            } else {
                anyhow::Error::new(e).context("loading strata's eBPF programs failed")
            }
        })
}

pub fn load(probes: &[Probe], opts: &Options) -> anyhow::Result<Loaded> {
    let loaded = load_parsed(probes, opts);
    // What starting took (the kernel's BTF, parsed twice by aya; the libraries' symbol
    // tables) is tens of MB of heap, freed by now: given back for the rest of the run.
    // SAFETY: releases only memory the allocator holds free.
    #[cfg(target_env = "gnu")]
    unsafe {
        libc::malloc_trim(0)
    };
    loaded
}

fn load_parsed(probes: &[Probe], opts: &Options) -> anyhow::Result<Loaded> {
    // What each step of a start takes (`-vv`): most of it is the kernel verifying programs.
    let started = std::time::Instant::now();
    let step = |what: &str| log::debug!("start: {what} after {} ms", started.elapsed().as_millis());
    let root = tracefs::root()?;
    // Kernel-structure offsets for kernel-function probes; without BTF those probes fail
    // with the reason, nothing else does.
    let kernel_btf = crate::btf::kernel().map_err(|e| e.to_string());
    if let Ok(btf) = &kernel_btf {
        btf.prefetch(&btf_names(probes));
    }
    // Thread stacks in task-local storage need the kernel's BTF (the task pointer's type).
    // Where the page and block programs read: constants to the verifier, so set before
    // loading.
    let page_fields = kernel_btf
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|b| crate::btf::page_offsets(b).map_err(|e| e.to_string()));
    let block_fields = kernel_btf
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|b| crate::btf::block_offsets(b).map_err(|e| e.to_string()));
    let task_fields = kernel_btf
        .as_ref()
        .ok()
        .and_then(|b| crate::btf::task_offsets(b).ok());
    let mut ebpf = load_object(
        Some(opts.ring_bytes),
        task_fields.as_ref(),
        true,
        page_fields
            .as_ref()
            .unwrap_or(&strata_common::PageOffsets::NONE),
        block_fields
            .as_ref()
            .unwrap_or(&strata_common::BlockOffsets::NONE),
    )?;
    step("kernel BTF read, maps created");
    let task_stacks = task_fields.is_some();
    // While every map is still in `ebpf`: the multi-uprobe programs use them all.
    let mut uprobes = Uprobes::new(&ebpf);

    let file_offsets = crate::btf::offsets(&kernel_btf, crate::btf::file_offsets);
    let mut config = lifecycle_config(&root, opts)?;
    // Where a completing io_uring request keeps its opcode.
    let uring_opcode = kernel_btf.as_ref().map_err(Clone::clone).and_then(|b| {
        crate::btf::member_offset(b, "io_kiocb", "opcode").map_err(|e| e.to_string())
    });
    if let Ok(off) = uring_opcode {
        config.uring_opcode_off = off;
    }
    let uring_offsets = crate::btf::offsets(&kernel_btf, crate::btf::uring_offsets);
    if let Ok([_, ctx, flags, res]) = uring_offsets {
        config.uring_ctx_off = ctx;
        config.uring_flags_off = flags;
        config.cqe_res_off = res;
    }
    if let Ok([f_inode, i_ino, i_sb, s_dev]) = file_offsets {
        config.file_inode_off = f_inode;
        config.inode_ino_off = i_ino;
        config.inode_sb_off = i_sb;
        config.sb_dev_off = s_dev;
    }
    match crate::btf::offsets(&kernel_btf, crate::btf::image_offsets) {
        Ok([mm, arg_start, arg_end, env_start, env_end]) => {
            config.task_mm_off = mm;
            config.mm_arg_start_off = arg_start;
            config.mm_arg_end_off = arg_end;
            config.mm_env_start_off = env_start;
            config.mm_env_end_off = env_end;
        }
        Err(e) => log::info!("process identities come from /proc only: {e}"),
    }
    match crate::btf::offsets(&kernel_btf, crate::btf::trampoline_offsets) {
        Ok([xol_area, vaddr]) if config.task_mm_off != 0 => {
            config.mm_xol_area_off = xol_area;
            config.xol_vaddr_off = vaddr;
        }
        Ok(_) => {}
        Err(e) => log::info!(
            "a library call left by a longjmp back into its caller is seen only as that caller returns: {e}"
        ),
    }
    match crate::btf::offsets(&kernel_btf, crate::btf::fd_offsets) {
        Ok([files, fdt, max_fds, fd, mode]) => {
            config.task_files_off = files;
            config.files_fdt_off = fdt;
            config.fdt_max_fds_off = max_fds;
            config.fdt_fd_off = fd;
            config.inode_mode_off = mode;
            if let Some((off, words)) = (config.inode_ino_off != 0)
                .then(|| {
                    strata_common::inode_words(config.inode_ino_off, config.inode_sb_off, mode)
                })
                .flatten()
            {
                config.inode_words = words;
                config.inode_words_off = off;
            }
        }
        Err(e) => log::info!("files opened are known from /proc and their paths only: {e}"),
    }
    // The root a process sees its files from is read with a file's inode fields.
    let root_offsets = file_offsets
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|_| crate::btf::offsets(&kernel_btf, crate::btf::root_offsets));
    match root_offsets {
        Ok([fs, dentry, d_inode, d_sb, nsproxy, mnt_ns, inum]) => {
            config.task_fs_off = fs;
            config.fs_root_dentry_off = dentry;
            config.dentry_inode_off = d_inode;
            config.dentry_sb_off = d_sb;
            config.task_nsproxy_off = nsproxy;
            config.nsproxy_mnt_ns_off = mnt_ns;
            config.mnt_ns_inum_off = inum;
        }
        Err(e) => log::info!(
            "a process's root is known only from /proc while it lives (a chroot just before \
             the exec of a program gone when strata gets to it is not seen): {e}"
        ),
    }
    let lifecycle_fields = crate::btf::offsets(&kernel_btf, crate::btf::lifecycle_offsets);
    if let Ok([pid, interp]) = lifecycle_fields {
        config.task_pid_off = pid;
        config.bprm_interp_off = interp;
    }
    let block_offsets: Result<(), String> = block_fields.map(drop);
    let page_offsets: Result<(), String> = page_fields.map(drop);
    let mut cfg_map: Array<_, Config> = Array::try_from(map(&mut ebpf, maps::CONFIG)?)?;
    cfg_map.set(0, config, 0)?;
    // Before any probe attaches: a probe with `only` records nothing until its values are in.
    let mut only: BpfHashMap<_, OnlyKey, u8> =
        BpfHashMap::try_from(map(&mut ebpf, maps::ONLY_VALUES)?)?;
    for p in probes {
        for (name, value) in p.only.iter().flat_map(|o| &o.values) {
            let key = OnlyKey {
                func_id: p.id,
                value: *value,
            };
            only.insert(key, 1, 0).with_context(|| {
                format!("cannot add {name} to the values {} records", p.function())
            })?;
        }
    }

    // Raw mode prefers BTF raw tracepoints; without them, the classic raw_syscalls events
    // (same records, a third more per hit), and the probes table says why.
    // Parsed once for every BTF raw tracepoint program (the syscalls', rq_complete's).
    let aya_btf = aya::Btf::from_sys_fs().map_err(|e| format!("no kernel BTF ({e})"));
    let btf_syscalls = match opts.syscall_mode {
        SyscallMode::Btf => load_btf_syscalls(&mut ebpf, &aya_btf)
            .inspect_err(|e| log::info!("syscall probes use raw_syscalls trace events: {e}")),
        SyscallMode::Raw | SyscallMode::PerSyscall => Err("not asked for".into()),
    };
    step("syscall programs loaded");
    let mut statuses = Vec::with_capacity(probes.len());
    let mut any_syscall = false;
    let mut libs: HashMap<String, Result<(PathBuf, SymbolTable), String>> = HashMap::new();
    let ld_cache = crate::symbols::ld_cache();
    for p in probes {
        let (mechanism, target) = match &p.target {
            Target::Syscall(s) => ("tracepoint", format!("syscalls/sys_{{enter,exit}}_{s}")),
            Target::Uprobe { library, .. } => ("uprobe", library.clone()),
            Target::Kernel { attach, .. } => ("tracepoint", attach[0].to_string()),
            Target::Kfunc { function, .. } => ("kprobe", function.clone()),
            Target::Request { .. } => ("tracepoint", p.target.to_string()),
        };
        let mut status = ProbeStatus {
            probe_id: p.id,
            mechanism,
            target,
            status: "disabled",
            reason: None,
            single_step: None,
        };
        if p.enabled {
            let result = match &p.target {
                Target::Syscall(name) => {
                    let per_syscall = opts.syscall_mode == SyscallMode::PerSyscall;
                    let r = attach_syscall(&mut ebpf, &root, p, name, per_syscall);
                    any_syscall |= r.is_ok();
                    match &btf_syscalls {
                        Ok(()) => {
                            status.mechanism = "tp_btf";
                            status.target = "sys_{enter,exit}".into();
                        }
                        Err(_) if per_syscall => {}
                        Err(why) => {
                            status.target = "raw_syscalls/sys_{enter,exit}".into();
                            if opts.syscall_mode == SyscallMode::Btf {
                                status.reason = Some(format!("tp_btf: {why}"));
                            }
                        }
                    }
                    r
                }
                Target::Uprobe { library, symbol } => {
                    let lib = libs.entry(library.clone()).or_insert_with(|| {
                        let found = find_library_in(&ld_cache, library).map_err(|e| match e {
                            SymbolError::LibraryNotFound(_) => {
                                format!("{e}; its probes attach when a traced process loads it")
                            }
                            e => e.to_string(),
                        });
                        let lib = found.and_then(|path| {
                            let table = SymbolTable::read(&path).map_err(|e| e.to_string())?;
                            Ok((path, table))
                        });
                        // Said once for the library, not for each of its probes (a node
                        // without MPI would get a line for each of some 60).
                        if let Err(e) = &lib {
                            log::warn!(
                                "{} not attached at start: {e}",
                                on_library(probes, library)
                            );
                        }
                        lib
                    });
                    match lib {
                        Err(e) => Err(Failure::Refused(e.clone())),
                        Ok((path, table)) => {
                            status.target = path.display().to_string();
                            attach_uprobe_status(
                                &mut ebpf,
                                p,
                                path,
                                table,
                                symbol,
                                &mut uprobes,
                                &mut status,
                            )
                        }
                    }
                }
                Target::Kernel { event, attach } => {
                    let r = attach_kernel(
                        &mut ebpf,
                        &root,
                        *event,
                        attach,
                        &KernelStructs {
                            btf: &aya_btf,
                            btf_syscalls: &btf_syscalls,
                            block_offsets: &block_offsets,
                            page_offsets: &page_offsets,
                            uring_opcode: &uring_opcode,
                            uring_offsets: &uring_offsets,
                            kernel_btf: &kernel_btf,
                        },
                        &mut status,
                    );
                    // Done by the syscall programs, which must then be attached.
                    any_syscall |= r.is_ok() && event.is_aio() && status.mechanism == "tp_btf";
                    r
                }
                // Once the kernel events that record them are attached, below.
                Target::Request { .. } => {
                    statuses.push(status);
                    continue;
                }
                Target::Kfunc { attach, .. } => {
                    attach_kfunc(&mut ebpf, p, attach, &file_offsets, &mut status)
                }
            };
            record_result(&mut status, result, probes);
        }
        statuses.push(status);
    }
    step("probes attached but the multi-uprobe links");
    finish_uprobes(&mut uprobes, &mut ebpf, &mut statuses, probes);
    step("multi-uprobe links made");
    crate::uring::attach_requests(&mut ebpf, probes, &kernel_btf, &mut statuses)?;
    let lib_inodes = libs
        .values()
        .filter_map(|l| l.as_ref().ok())
        .filter_map(|(path, _)| inode(path))
        .collect();

    let raw_syscalls = any_syscall && opts.syscall_mode.all_syscalls();
    let btf_syscalls = btf_syscalls.is_ok();
    let raw_links = if raw_syscalls {
        attach_raw_syscalls(&mut ebpf, btf_syscalls)?
    } else {
        Vec::new()
    };
    attach_lifecycle(
        &mut ebpf,
        &aya_btf,
        &kernel_btf,
        lifecycle_fields.map(|_| ()),
    )?;
    step("process life-cycle programs attached");
    let traced = BpfHashMap::try_from(map(&mut ebpf, maps::TRACED)?)?;
    let traced_marks = Array::try_from(map(&mut ebpf, maps::TRACED_MARKS)?)?;
    let counters = PerCpuArray::try_from(map(&mut ebpf, maps::COUNTERS)?)?;
    let events = crate::ring::EventRing::new(
        map(&mut ebpf, maps::EVENTS)?,
        maps::EVENTS,
        opts.backlog_bytes,
        Some(map(&mut ebpf, maps::QUIET_BELOW)?),
    )?;
    let watched = BpfHashMap::try_from(map(&mut ebpf, maps::WATCHED_INODES)?)?;
    let cgroups = BpfHashMap::try_from(map(&mut ebpf, maps::CGROUPS)?)?;
    let mut users: BpfHashMap<_, u32, u8> = BpfHashMap::try_from(map(&mut ebpf, maps::USERS)?)?;
    for uid in &opts.users {
        users
            .insert(uid, 1, 0)
            .with_context(|| format!("cannot add uid {uid} to the user filter"))?;
    }
    if let Ok(btf) = &kernel_btf {
        log::debug!("kernel BTF: {} scans of its types", btf.scans());
    }
    // How close each program came to the verifier's budget (older kernels prune less).
    let multi_counts =
        uprobes.multi.iter().flat_map(|m| {
            let names: &[&str] = match m.session() {
                true => &[programs::UPROBE_SESSION],
                false => &[programs::UPROBE_ENTRY, programs::UPROBE_RETURN],
            };
            names.iter().copied().zip(m.fds()).filter_map(|(name, fd)| {
                Some((name, fdinfo_field(&fdinfo(fd)?, "verified_insns")?))
            })
        });
    for (name, n) in ebpf
        .programs()
        .filter_map(|(name, p)| Some((name, p.info().ok()?.verified_instruction_count()?)))
        .map(|(name, n)| (name, u64::from(n)))
        .chain(multi_counts)
    {
        log::debug!("program {name}: the verifier processed {n} instructions");
    }
    Ok(Loaded {
        raw_syscalls,
        btf_syscalls,
        raw_links,
        task_stacks,
        ebpf,
        traced,
        traced_marks,
        cgroups,
        cgroup_levels: HashMap::new(),
        counters,
        events,
        statuses,
        watched,
        config: cfg_map,
        config_value: config,
        uprobes,
        lib_inodes,
        probed_names: HashMap::new(),
        ld_cache,
        start_libraries: Default::default(),
        expedite: false,
    })
}

/// An error with its cause (aya's say which call failed, their source how).
fn cause(e: &(dyn std::error::Error + 'static)) -> String {
    match e.source() {
        Some(s) => format!("{e}: {s}"),
        None => e.to_string(),
    }
}

/// An attachment of the syscall layer in raw mode.
enum RawLink {
    Classic(&'static str, TracePointLinkId),
    Btf(&'static str, BtfTracePointLinkId),
}

/// A program the kernel would not load, as one message: where the kernel refused it, the
/// verifier's reason in one line (`-vv` logs its whole log before); else aya's error, which
/// already says what its source (anyhow's `{:#}`) would repeat after it.
fn rejected(prog: &str, e: &aya::programs::ProgramError) -> anyhow::Error {
    log::debug!("loading {prog}: {e}");
    match crate::verifier::Rejection::from_aya(prog, e) {
        Some(r) => anyhow!(r),
        None => anyhow!("the kernel rejected {prog}: {e}"),
    }
}

/// Loads the BTF raw tracepoint program `prog` for `tracepoint`; the error says why not.
fn load_btf(
    ebpf: &mut Ebpf,
    btf: &Result<aya::Btf, String>,
    prog: &str,
    tracepoint: &str,
) -> Result<(), String> {
    let started = std::time::Instant::now();
    program::<BtfTracePoint>(ebpf, prog)
        .map_err(|e| e.to_string())?
        .load(tracepoint, btf.as_ref()?)
        .map_err(|e| format!("{:#}", rejected(prog, &e)))?;
    log::debug!(
        "program {prog}: verified in {} ms",
        started.elapsed().as_millis()
    );
    Ok(())
}

/// Loads the BTF raw tracepoint programs of the syscall layer; the error says why not.
fn load_btf_syscalls(ebpf: &mut Ebpf, btf: &Result<aya::Btf, String>) -> Result<(), String> {
    load_btf(ebpf, btf, programs::BTF_SYS_ENTER, "sys_enter")?;
    load_btf(ebpf, btf, programs::BTF_SYS_EXIT, "sys_exit")
}

fn attach_raw_syscalls(ebpf: &mut Ebpf, btf: bool) -> anyhow::Result<Vec<RawLink>> {
    let mut links = Vec::new();
    // The exit first: an entry seen without its exit leaves a stale frame behind.
    for (classic, with_btf, event) in [
        (programs::SYS_EXIT, programs::BTF_SYS_EXIT, "sys_exit"),
        (programs::SYS_ENTER, programs::BTF_SYS_ENTER, "sys_enter"),
    ] {
        let link = if btf {
            let id = program::<BtfTracePoint>(ebpf, with_btf)?
                .attach()
                .with_context(|| format!("cannot attach to BTF raw tracepoint {event}"))?;
            RawLink::Btf(with_btf, id)
        } else {
            let id = syscall_tracepoint(ebpf, classic)?
                .attach("raw_syscalls", event)
                .with_context(|| format!("cannot attach to tracepoint raw_syscalls/{event}"))?;
            RawLink::Classic(classic, id)
        };
        links.push(link);
    }
    Ok(links)
}

pub(crate) fn record_result(
    status: &mut ProbeStatus,
    result: Result<(), Failure>,
    probes: &[Probe],
) {
    let p = &probes[status.probe_id as usize];
    match result {
        Ok(()) => status.status = "attached",
        Err(Failure::Alias(of)) => {
            status.status = "alias";
            status.reason = Some(format!(
                "same address as probe {} ({}), which records it",
                of,
                probes[of as usize].function()
            ));
        }
        Err(Failure::Absent(reason)) => {
            log::info!("probe {} not attached: {reason}", p.function());
            status.status = "absent";
            status.reason = Some(reason);
        }
        Err(Failure::Refused(reason)) => {
            log::debug!("probe {} not attached: {reason}", p.function());
            status.status = "failed";
            status.reason = Some(reason);
        }
        Err(Failure::Failed(reason)) => {
            let at = match status.mechanism {
                "uprobe" => format!(" to {}", status.target),
                _ => String::new(),
            };
            log::warn!(
                "probe {} ({}) not attached{at}: {reason}",
                p.function(),
                p.layer
            );
            status.status = "failed";
            status.reason = Some(reason);
        }
    }
}

fn inode(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| file_key(&m))
}

/// A file's device and inode, as the probed files are kept by.
pub fn file_key(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt as _;
    (meta.dev(), meta.ino())
}

impl Loaded {
    /// Attaches the probes of the other builds of probed libraries that the loader's cache
    /// lists (Debian's serial and MPICH builds of HDF5 beside the Open MPI one probes.toml
    /// names). A program linked against one and started by a script or a launcher has its
    /// first calls probed; a build first seen mapped is probed only once strata has seen it,
    /// after most of a short tool's calls (h5ls).
    pub fn attach_installed_builds(&mut self, probes: &[Probe]) -> Vec<ProbeStatus> {
        let mut builds: Vec<PathBuf> = self
            .ld_cache
            .iter()
            .filter(|(soname, _)| !libraries::named(probes, soname).is_empty())
            .map(|(_, path)| path.clone())
            .collect();
        builds.sort();
        builds
            .into_iter()
            .flat_map(|path| {
                let shown = path.display().to_string();
                self.attach_library(probes, &path, &shown)
            })
            .collect()
    }

    /// Attaches the probes of every library `file` is a version or build of (see
    /// [`libraries::library_match`]): a library a traced process opened or mapped from where
    /// the start-up search did not look (a module tree, a container, a dlopen'ed Python
    /// extension), or one a program loads at start. `shown` is the path as the process sees
    /// it. Each library file is attached once.
    pub fn attach_library(
        &mut self,
        probes: &[Probe],
        file: &Path,
        shown: &str,
    ) -> Vec<ProbeStatus> {
        let name = Path::new(shown)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("");
        if !self.may_be_probed(probes, name) {
            return Vec::new();
        }
        let Some(ino) = inode(file) else {
            return Vec::new();
        };
        if !self.lib_inodes.insert(ino) {
            return Vec::new();
        }
        let named = libraries::named(probes, name);
        let started = std::time::Instant::now();
        let table = match SymbolTable::read(file) {
            Ok(t) => t,
            Err(e) => {
                log::warn!("cannot read symbols of {shown}: {e}");
                return Vec::new();
            }
        };
        let wanted = libraries::confirmed(&named, &table);
        if wanted.is_empty() {
            return Vec::new();
        }
        let out = self.attach_to(probes, &wanted, file, shown, &table);
        log::info!(
            "attached {} probes to {shown} in {:.1} ms",
            out.iter().filter(|s| s.status == "attached").count(),
            started.elapsed().as_secs_f64() * 1e3
        );
        out
    }

    /// Whether some probe may be of library file `name`, remembered per name.
    fn may_be_probed(&mut self, probes: &[Probe], name: &str) -> bool {
        if let Some(&known) = self.probed_names.get(name) {
            return known;
        }
        // Bounded: a node's names of shared objects are a few thousand.
        if self.probed_names.len() >= 4_096 {
            self.probed_names.clear();
        }
        let probed = !libraries::named(probes, name).is_empty();
        self.probed_names.insert(name.to_string(), probed);
        probed
    }

    /// Attaches the library probes whose functions an executable defines itself: a program
    /// linked statically against HDF5, NetCDF, MPI or libc. Each file (`ino`: its
    /// [`file_key`]) is looked at once.
    pub fn attach_executable(
        &mut self,
        probes: &[Probe],
        file: &Path,
        shown: &str,
        ino: (u64, u64),
    ) -> Vec<ProbeStatus> {
        if !self.lib_inodes.insert(ino) {
            return Vec::new();
        }
        let Ok(table) = SymbolTable::read(file) else {
            return Vec::new();
        };
        let wanted: Vec<&Probe> = probes
            .iter()
            .filter(|p| p.enabled)
            .filter(|p| matches!(&p.target, Target::Uprobe { symbol, .. } if table.offset(symbol).is_some()))
            .collect();
        if wanted.is_empty() {
            return Vec::new();
        }
        let out = self.attach_to(probes, &wanted, file, shown, &table);
        log::info!(
            "attached {} probes to functions linked into {shown}",
            out.iter().filter(|s| s.status == "attached").count()
        );
        out
    }

    fn attach_to(
        &mut self,
        probes: &[Probe],
        wanted: &[&Probe],
        file: &Path,
        shown: &str,
        table: &SymbolTable,
    ) -> Vec<ProbeStatus> {
        let _grace = self.expedite.then(crate::grace::Expedited::begin);
        let mut out = Vec::new();
        for p in wanted {
            let Target::Uprobe { symbol, .. } = &p.target else {
                continue;
            };
            let mut status = ProbeStatus {
                probe_id: p.id,
                mechanism: "uprobe",
                target: shown.to_string(),
                status: "failed",
                reason: None,
                single_step: None,
            };
            let r = attach_uprobe_status(
                &mut self.ebpf,
                p,
                file,
                table,
                symbol,
                &mut self.uprobes,
                &mut status,
            );
            record_result(&mut status, r, probes);
            out.push(status);
        }
        finish_uprobes(&mut self.uprobes, &mut self.ebpf, &mut out, probes);
        out
    }
}

/// How many enabled probes, of which layers, are on `library`: "62 probes (mpiio)".
fn on_library(probes: &[Probe], library: &str) -> String {
    let mut layers: Vec<&str> = Vec::new();
    let mut n = 0;
    for q in probes.iter().filter(|q| q.enabled) {
        if matches!(&q.target, Target::Uprobe { library: l, .. } if l == library) {
            n += 1;
            if !layers.contains(&q.layer.as_str()) {
                layers.push(q.layer.as_str());
            }
        }
    }
    let s = if n == 1 { "" } else { "s" };
    format!("{n} probe{s} ({})", layers.join(", "))
}

pub(crate) enum Failure {
    Alias(u32),
    /// The kernel lacks what the probe needs (a syscall or request newer than it, kprobes):
    /// said in the probe's row, not warned about on every run.
    Absent(String),
    Failed(String),
    /// Failed for a reason already warned about once for every probe it fails (the kernel
    /// refused a program they share, their library is missing or unreadable).
    Refused(String),
}

fn map(ebpf: &mut Ebpf, name: &str) -> anyhow::Result<aya::maps::Map> {
    ebpf.take_map(name)
        .ok_or_else(|| anyhow!("map {name} missing from the eBPF object"))
}

/// Program `name` of the object as its kind `T` (`TracePoint`, `UProbe`, ...).
pub(crate) fn program<'a, T>(ebpf: &'a mut Ebpf, name: &str) -> anyhow::Result<&'a mut T>
where
    &'a mut T: TryFrom<&'a mut aya::programs::Program, Error = aya::programs::ProgramError>,
{
    let prog = ebpf
        .program_mut(name)
        .ok_or_else(|| anyhow!("program {name} missing from the eBPF object"))?;
    Ok(prog.try_into()?)
}

/// The trace-event syscall program `name`, loaded at its first use: a default run links the
/// BTF raw tracepoints instead and never needs it.
fn syscall_tracepoint<'a>(ebpf: &'a mut Ebpf, name: &str) -> anyhow::Result<&'a mut TracePoint> {
    let prog = program::<TracePoint>(ebpf, name)?;
    if prog.fd().is_err() {
        prog.load().map_err(|e| rejected(name, &e))?;
    }
    Ok(prog)
}

/// The depths of the traced cgroups, each once, shallowest first.
fn depths_in_use(levels: impl Iterator<Item = u32>) -> Vec<u32> {
    let mut depths: Vec<u32> = levels.collect();
    depths.sort_unstable();
    depths.dedup();
    depths
}

/// The kernel filter's list of the depths of the traced cgroups (`Config::cgroup_levels`),
/// [`depths_in_use`] deepest first: at most as many as it holds (`check_cgroup` refuses more),
/// each below `MAX_CGROUP_LEVEL`.
fn cgroup_depths(levels: impl Iterator<Item = u32>) -> [u8; strata_common::MAX_CGROUP_DEPTHS] {
    let mut list = [strata_common::NO_CGROUP_LEVEL; strata_common::MAX_CGROUP_DEPTHS];
    for (slot, d) in list.iter_mut().zip(depths_in_use(levels).into_iter().rev()) {
        *slot = u8::try_from(d).unwrap_or(strata_common::NO_CGROUP_LEVEL);
    }
    list
}

fn lifecycle_config(root: &Path, opts: &Options) -> anyhow::Result<Config> {
    let newtask = tracefs::format(root, "task", "task_newtask")?;
    let exec = tracefs::format(root, "sched", "sched_process_exec")?;
    let exit = tracefs::format(root, "sched", "sched_process_exit")?;
    let off = |f: &tracefs::Format, name: &str| {
        f.field(name)
            .map(|x| x.offset)
            .ok_or_else(|| anyhow!("tracepoint field {name} missing on this kernel"))
    };
    Ok(Config {
        self_tgid: std::process::id(),
        trace_all: u32::from(opts.trace_all),
        newtask_pid_off: off(&newtask, "pid")?,
        newtask_flags_off: off(&newtask, "clone_flags")?,
        exec_old_pid_off: off(&exec, "old_pid")?,
        // Absent before Linux 6.9: the programs fall back to the leader's exit.
        exit_group_dead_off: exit.field("group_dead").map_or(0, |f| f.offset),
        exec_filename_off: off(&exec, "filename")?,
        datatype_size_off: opts.datatype_size_offset,
        status_count_off: opts.status_count_offset,
        stdio_fileno_off: opts.stdio_fileno_offset,
        stdio_fd_flag: opts.stdio_fd_flag,
        stdio_read_off: opts.stdio_read_offset,
        stopped: 0,
        cgroup_mode: u32::from(opts.cgroup_mode),
        cgroup_levels: [strata_common::NO_CGROUP_LEVEL; strata_common::MAX_CGROUP_DEPTHS],
        user_filter: u32::from(!opts.users.is_empty()),
        // Filled from the kernel's BTF where it has them.
        ..Config::default()
    })
}

/// Attaches the process lifecycle programs: on BTF raw tracepoints where the kernel has BTF
/// (their detach does not wait on the kernel's trace-event lock: some 50 ms each here), else
/// on the trace events.
fn attach_lifecycle(
    ebpf: &mut Ebpf,
    aya_btf: &Result<aya::Btf, String>,
    kernel_btf: &Result<crate::btf::KernelBtf, String>,
    fields: Result<(), String>,
) -> anyhow::Result<()> {
    for (prog, cat, name) in LIFECYCLE {
        let on_btf = fields
            .clone()
            .and_then(|()| lifecycle_btf_program(kernel_btf, name))
            .and_then(|with_btf| {
                load_btf(ebpf, aya_btf, with_btf, name)?;
                program::<BtfTracePoint>(ebpf, with_btf)
                    .and_then(|p| Ok(p.attach()?))
                    .map(drop)
                    .map_err(|e| format!("attaching {with_btf}: {e:#}"))
            });
        match on_btf {
            Ok(()) => continue,
            Err(e) => log::info!("{name}: on its trace event ({e})"),
        }
        let tp = program::<TracePoint>(ebpf, prog)?;
        tp.load().map_err(|e| rejected(prog, &e))?;
        tp.attach(cat, name)
            .with_context(|| format!("cannot attach to tracepoint {cat}/{name}"))?;
    }
    Ok(())
}

/// The lifecycle programs on trace events: (program, category, tracepoint).
const LIFECYCLE: [(&str, &str, &str); 3] = [
    (programs::TASK_NEWTASK, "task", "task_newtask"),
    (programs::PROCESS_EXEC, "sched", "sched_process_exec"),
    (programs::PROCESS_EXIT, "sched", "sched_process_exit"),
];

/// The kernel types a run with `probes` looks up by name: those the offsets read, the
/// prototypes of its BTF raw tracepoints, and its io_uring requests' structs.
fn btf_names(probes: &[Probe]) -> Vec<String> {
    let mut names: Vec<String> = crate::btf::TYPES_READ
        .iter()
        .map(|s| s.to_string())
        .collect();
    let lifecycle = LIFECYCLE.iter().map(|(_, _, name)| *name);
    names.extend(lifecycle.map(crate::btf::trace_typedef));
    for p in probes.iter().filter(|p| p.enabled) {
        match &p.target {
            Target::Kernel { attach, .. } => {
                for m in attach {
                    if let Mechanism::BtfTracepoint { name } = m {
                        names.push(crate::btf::trace_typedef(name));
                    }
                }
            }
            Target::Request { fields, .. } => names.extend(fields.iter().map(|f| f.root.clone())),
            _ => {}
        }
    }
    names
}

/// The program for lifecycle tracepoint `name` on its BTF raw tracepoint: the one written for
/// the kernel's prototype (`programs::LIFECYCLE_BTF`).
fn lifecycle_btf_program(
    kernel_btf: &Result<crate::btf::KernelBtf, String>,
    name: &str,
) -> Result<&'static str, String> {
    let args =
        crate::btf::tracepoint_args(kernel_btf.as_ref()?, name).map_err(|e| e.to_string())?;
    programs::LIFECYCLE_BTF
        .iter()
        .find(|(tp, n, _)| *tp == name && *n == args)
        .map(|(_, _, prog)| *prog)
        .ok_or_else(|| {
            format!("strata has no program for {name} with {args} arguments (this kernel's)")
        })
}

fn attach_syscall(
    ebpf: &mut Ebpf,
    root: &Path,
    p: &Probe,
    name: &str,
    per_syscall: bool,
) -> Result<(), Failure> {
    let failed = |e: anyhow::Error| Failure::Failed(format!("{e:#}"));
    let syscalls = root.join("events/syscalls");
    if syscalls.is_dir() && !syscalls.join(format!("sys_enter_{name}")).exists() {
        return Err(Failure::Absent(format!(
            "this kernel has no syscall {name} (no tracepoint syscalls/sys_enter_{name})"
        )));
    }
    let enter = tracepoint_format(root, &format!("sys_enter_{name}")).map_err(failed)?;
    // The exit event must exist too, or every call would stay open.
    tracepoint_format(root, &format!("sys_exit_{name}")).map_err(failed)?;
    // Own fields of sys_enter_*: __syscall_nr, then one per argument.
    let kernel_args = enter.own_fields().count().saturating_sub(1);
    if p.args.len() > kernel_args {
        return Err(Failure::Failed(format!(
            "probes.toml line {} declares {} arguments; syscall {name} has {kernel_args} on this kernel",
            p.line,
            p.args.len()
        )));
    }
    let nr = crate::syscalls::number(name).ok_or_else(|| {
        Failure::Failed(format!(
            "no syscall number known for {name} on this architecture"
        ))
    })?;
    let mut specs: Array<_, FuncSpec> = ebpf
        .map_mut(maps::SYSCALL_SPECS)
        .ok_or_else(|| Failure::Failed("syscall spec map missing".into()))
        .and_then(|m| Array::try_from(m).map_err(|e| Failure::Failed(e.to_string())))?;
    // An AIO event's work at this syscall (`aio_in_syscalls`) stays.
    let mut spec = p.spec();
    spec.flags |= specs.get(&nr, 0).map_or(0, |s| s.flags & AIO_FLAGS);
    specs
        .set(nr, spec, 0)
        .map_err(|e| Failure::Failed(format!("spec map: {e}")))?;
    // Raw mode: the caller attaches the two raw_syscalls events once for all.
    if !per_syscall {
        return Ok(());
    }
    // The exit first, as in raw mode.
    for (prog, event) in [
        (programs::SYS_EXIT, format!("sys_exit_{name}")),
        (programs::SYS_ENTER_ONE, format!("sys_enter_{name}")),
    ] {
        syscall_tracepoint(ebpf, prog)
            .map_err(failed)?
            .attach("syscalls", &event)
            .map_err(|e| Failure::Failed(format!("attach to syscalls/{event}: {}", cause(&e))))?;
    }
    Ok(())
}

/// The flags of a syscall's slot that ask the syscall programs for an AIO event's work.
const AIO_FLAGS: u16 =
    strata_common::SPEC_AIO_SUBMIT | strata_common::SPEC_AIO_WAIT | strata_common::SPEC_AIO_REAP;

/// What the kernel events' programs read kernel structures with, or why they cannot.
struct KernelStructs<'a> {
    btf: &'a Result<aya::Btf, String>,
    /// Whether the syscall programs are the BTF raw tracepoint ones (the AIO events' work
    /// is done there then).
    btf_syscalls: &'a Result<(), String>,
    /// [`crate::btf::block_offsets`]: whether the block programs have them.
    block_offsets: &'a Result<(), String>,
    /// [`crate::btf::page_offsets`]: whether the page-cache and writeback programs have them.
    page_offsets: &'a Result<(), String>,
    /// `io_kiocb.opcode`, which the completion program reads.
    uring_opcode: &'a Result<u32, String>,
    /// [`crate::btf::uring_offsets`]
    uring_offsets: &'a Result<[u32; 4], String>,
    /// To count a BTF raw tracepoint's arguments.
    kernel_btf: &'a Result<crate::btf::KernelBtf, String>,
}

/// Attaches a kernel event through the first mechanism of `attach` that works here.
fn attach_kernel(
    ebpf: &mut Ebpf,
    root: &Path,
    event: KernelEvent,
    attach: &[Mechanism],
    kernel: &KernelStructs,
    status: &mut ProbeStatus,
) -> Result<(), Failure> {
    first_mechanism(attach, status, |m, status| match m {
        Mechanism::Tracepoint { category, name } => {
            status.mechanism = "tracepoint";
            status.target = format!("{category}/{name}");
            if event == KernelEvent::UringComplete {
                if let Err(e) = kernel.uring_opcode {
                    anyhow::bail!("{e}");
                }
            }
            attach_kernel_tracepoint(ebpf, root, event, category, name)
        }
        Mechanism::BtfTracepoint { name } => {
            status.mechanism = "tp_btf";
            status.target = name.clone();
            if let Some((syscall, flag)) = event.aio_syscall() {
                crate::probes::kernel_btf_program(event, name, None)?;
                if let Err(e) = kernel.btf_syscalls {
                    anyhow::bail!("strata's syscall programs are not on tp_btf:{name} ({e})");
                }
                status.target = format!("{name} ({syscall})");
                return aio_in_syscalls(ebpf, syscall, flag);
            }
            let btf = kernel.kernel_btf.as_ref().map_err(|e| anyhow!("{e}"))?;
            let args = crate::btf::tracepoint_args(btf, name)?;
            let prog = crate::probes::kernel_btf_program(event, name, Some(args))?;
            // The request's fields, through BTF offsets.
            let offsets = if event.is_uring() {
                kernel.uring_offsets.as_ref().map(drop)
            } else if event.is_page() {
                kernel.page_offsets.as_ref().map(drop)
            } else {
                kernel.block_offsets.as_ref().map(drop)
            };
            if let Err(e) = offsets {
                anyhow::bail!("{e}");
            }
            load_btf(ebpf, kernel.btf, prog, name).map_err(|e| anyhow!(e))?;
            program::<BtfTracePoint>(ebpf, prog)?.attach()?;
            Ok(())
        }
        Mechanism::Kprobe { .. } => Err(anyhow!("kernel events attach through tracepoints")),
    })
}

/// Has the syscall programs do an AIO event's work at `syscall`: `flag` in its slot, beside
/// the syscall's own probe if it has one.
fn aio_in_syscalls(ebpf: &mut Ebpf, syscall: &str, flag: u16) -> anyhow::Result<()> {
    let nr = crate::syscalls::number(syscall)
        .ok_or_else(|| anyhow!("no syscall number known for {syscall} on this architecture"))?;
    let mut specs: Array<_, FuncSpec> = Array::try_from(
        ebpf.map_mut(maps::SYSCALL_SPECS)
            .ok_or_else(|| anyhow!("map {} missing", maps::SYSCALL_SPECS))?,
    )?;
    let mut spec = specs.get(&nr, 0)?;
    spec.flags |= flag;
    specs.set(nr, spec, 0)?;
    Ok(())
}

/// Tries each mechanism in order until one attaches; the `reason` keeps why the ones before
/// failed, and the failure lists every reason.
fn first_mechanism(
    attach: &[Mechanism],
    status: &mut ProbeStatus,
    mut try_one: impl FnMut(&Mechanism, &mut ProbeStatus) -> anyhow::Result<()>,
) -> Result<(), Failure> {
    let mut reasons = Vec::new();
    for m in attach {
        match try_one(m, status) {
            Ok(()) => {
                if !reasons.is_empty() {
                    status.reason = Some(reasons.join("; "));
                }
                return Ok(());
            }
            Err(e) => reasons.push(format!("{m}: {e:#}")),
        }
    }
    Err(Failure::Failed(reasons.join("; ")))
}

/// Where the kernel lists its kprobe PMU; absent when it is built without CONFIG_KPROBES.
const KPROBE_PMU: &str = "/sys/bus/event_source/devices/kprobe";

/// Attaches a kernel function (kprobe + kretprobe) through the first mechanism that works.
fn attach_kfunc(
    ebpf: &mut Ebpf,
    p: &Probe,
    attach: &[Mechanism],
    offsets: &Result<[u32; 4], String>,
    status: &mut ProbeStatus,
) -> Result<(), Failure> {
    let no_kprobes = || {
        format!("this kernel has no kprobes (built without CONFIG_KPROBES: {KPROBE_PMU} is absent)")
    };
    // Kprobes only, and the kernel has none: nothing to try, and nothing to warn about on
    // every run of the default layers.
    if !Path::new(KPROBE_PMU).exists()
        && attach.iter().all(|m| matches!(m, Mechanism::Kprobe { .. }))
    {
        if let Some(Mechanism::Kprobe { function }) = attach.first() {
            status.mechanism = "kprobe";
            status.target = function.clone();
        }
        return Err(Failure::Absent(no_kprobes()));
    }
    first_mechanism(attach, status, |m, status| {
        let Mechanism::Kprobe { function: target } = m else {
            anyhow::bail!("not a mechanism for kernel functions");
        };
        status.mechanism = "kprobe";
        status.target = target.clone();
        if !Path::new(KPROBE_PMU).exists() {
            anyhow::bail!("{}", no_kprobes());
        }
        if p.args.contains(&crate::probes::ArgKind::KFile) {
            if let Err(e) = offsets {
                anyhow::bail!("{e}");
            }
        }
        let addr = kallsyms_address(target)?;
        let mut ids: BpfHashMap<_, u64, u32> = BpfHashMap::try_from(
            ebpf.map_mut(maps::KFUNC_IDS)
                .ok_or_else(|| anyhow!("map {} missing", maps::KFUNC_IDS))?,
        )?;
        // With indirect-branch tracking the probe sits after the function's endbr64;
        // which address the program sees depends on the kernel version: map both.
        ids.insert(addr, p.id, 0)?;
        ids.insert(addr + 4, p.id, 0)?;
        let mut specs: Array<_, FuncSpec> = Array::try_from(
            ebpf.map_mut(maps::FUNC_SPECS)
                .ok_or_else(|| anyhow!("map {} missing", maps::FUNC_SPECS))?,
        )?;
        specs.set(p.id, p.spec(), 0)?;
        for prog in [programs::KPROBE_ENTRY, programs::KPROBE_RETURN] {
            let kp = program::<KProbe>(ebpf, prog)?;
            if kp.fd().is_err() {
                kp.load().map_err(|e| rejected(prog, &e))?;
            }
            kp.attach(target, 0)?;
        }
        Ok(())
    })
}

/// The address of a kernel function, from /proc/kallsyms (root sees real addresses).
fn kallsyms_address(function: &str) -> anyhow::Result<u64> {
    let text = std::fs::read_to_string("/proc/kallsyms").context("reading /proc/kallsyms")?;
    text.lines()
        .find_map(|l| {
            let mut it = l.split_whitespace();
            let (addr, kind, name) = (it.next()?, it.next()?, it.next()?);
            (name == function && matches!(kind, "T" | "t"))
                .then(|| u64::from_str_radix(addr, 16).ok())
                .flatten()
        })
        .filter(|a| *a != 0)
        .ok_or_else(|| anyhow!("{function} is not in /proc/kallsyms (or addresses are hidden)"))
}

fn attach_kernel_tracepoint(
    ebpf: &mut Ebpf,
    root: &Path,
    event: KernelEvent,
    category: &str,
    name: &str,
) -> anyhow::Result<()> {
    let format = tracefs::format(root, category, name)?;
    let fields = kernel_fields(&format, event, &format!("{category}/{name}"))?;
    let mut table: Array<_, KernelFields> = Array::try_from(
        ebpf.map_mut(maps::KERNEL_FIELDS)
            .ok_or_else(|| anyhow!("map {} missing", maps::KERNEL_FIELDS))?,
    )?;
    table.set(event as u32, fields, 0)?;
    let prog_name = programs::KERNEL_TRACEPOINT[event as usize];
    let prog = program::<TracePoint>(ebpf, prog_name)?;
    if prog.fd().is_err() {
        prog.load().map_err(|e| rejected(prog_name, &e))?;
    }
    prog.attach(category, name)?;
    Ok(())
}

/// Where `event`'s record (`format`, of trace event `event_name`) keeps the fields its
/// program reads; an error names a required field the record lacks, or one the program could
/// not read.
fn kernel_fields(
    format: &tracefs::Format,
    event: KernelEvent,
    event_name: &str,
) -> anyhow::Result<KernelFields> {
    // The program copies the record's first `len` bytes once and takes each field from them,
    // reading `T` (the byte string `tag`: its first 8 bytes) at an offset aligned for it.
    let mut len = 0;
    let mut off = |names: &[&str], size: usize, align: usize| -> anyhow::Result<u32> {
        let Some(f) = names.iter().find_map(|n| format.field(n)) else {
            return Ok(FIELD_NONE);
        };
        let end = f.offset as usize + size;
        anyhow::ensure!(
            (f.offset as usize).is_multiple_of(align) && end <= KERNEL_WINDOW,
            "field {} of {event_name} is at offset {}: strata reads it only {align}-byte \
             aligned within the record's first {KERNEL_WINDOW} bytes",
            f.name,
            f.offset
        );
        len = len.max(end as u32);
        Ok(f.offset)
    };
    let mut fields = KernelFields {
        len: 0,
        dev: off(&["dev", "s_dev"], 4, 4)?,
        sector: off(&["sector"], 8, 8)?,
        nr_sector: off(&["nr_sector"], 4, 4)?,
        error: off(&["error"], 4, 4)?,
        tag: off(&["rwbs", "name"], 8, 1)?,
        ino: off(&["ino", "i_ino"], 8, 8)?,
        index: off(&["index", "writeback_index"], 8, 8)?,
        order: off(&["order"], 1, 1)?,
        old_dev: off(&["old_dev"], 4, 4)?,
        old_sector: off(&["old_sector"], 8, 8)?,
        wrote: off(&["wrote"], 8, 8)?,
        new_sector: off(&["new_sector"], 8, 8)?,
        ..KernelFields::default()
    };
    // Names as general as `flags` are looked up only where they mean the request's.
    if event.is_uring() {
        fields.req = off(&["req"], 8, 8)?;
        fields.opcode = off(&["opcode"], 1, 1)?;
        fields.ctx = off(&["ctx"], 8, 8)?;
        // The failure's `flags` are the SQE's (a byte), not the request's.
        if event != KernelEvent::UringFailed {
            fields.req_flags = off(&["flags"], 4, 4)?;
            fields.res = off(&["res"], 4, 4)?;
        }
    }
    // The syscalls' own trace events: the same members in every kernel.
    if event.is_aio() {
        fields.aio_array = off(&["iocbpp", "events"], 8, 8)?;
        fields.aio_nr = off(&["nr"], 8, 8)?;
        fields.ret = off(&["ret"], 8, 8)?;
    }
    fields.len = len;
    let required: &[(&str, u32)] = match event {
        KernelEvent::BioQueue => &[("dev", fields.dev), ("sector", fields.sector)],
        KernelEvent::BioSplit => &[
            ("dev", fields.dev),
            ("sector", fields.sector),
            ("new_sector", fields.new_sector),
        ],
        KernelEvent::BioRemap => &[
            ("dev", fields.dev),
            ("sector", fields.sector),
            ("old_dev", fields.old_dev),
            ("old_sector", fields.old_sector),
        ],
        KernelEvent::RqIssue | KernelEvent::RqComplete => &[
            ("dev", fields.dev),
            ("sector", fields.sector),
            ("nr_sector", fields.nr_sector),
        ],
        KernelEvent::WritebackStart | KernelEvent::WritebackEnd => &[("ino", fields.ino)],
        KernelEvent::PageDirty => &[("ino", fields.ino), ("index", fields.index)],
        KernelEvent::CacheAdd | KernelEvent::CacheDelete => &[
            ("i_ino", fields.ino),
            ("index", fields.index),
            ("s_dev", fields.dev),
        ],
        KernelEvent::UringSubmit => &[
            ("ctx", fields.ctx),
            ("req", fields.req),
            ("opcode", fields.opcode),
            ("flags", fields.req_flags),
        ],
        KernelEvent::UringComplete => &[
            ("ctx", fields.ctx),
            ("req", fields.req),
            ("res", fields.res),
        ],
        KernelEvent::AioSubmit => &[("iocbpp", fields.aio_array), ("nr", fields.aio_nr)],
        KernelEvent::AioWait | KernelEvent::AioPwait => &[("events", fields.aio_array)],
        KernelEvent::AioReaped | KernelEvent::AioPreaped => &[("ret", fields.ret)],
        KernelEvent::UringFailed => &[
            ("ctx", fields.ctx),
            ("req", fields.req),
            ("opcode", fields.opcode),
            ("error", fields.error),
        ],
    };
    if let Some((missing, _)) = required.iter().find(|(_, off)| *off == FIELD_NONE) {
        anyhow::bail!("field {missing} missing from {event_name} on this kernel");
    }
    Ok(fields)
}

fn tracepoint_format(root: &Path, event: &str) -> anyhow::Result<tracefs::Format> {
    tracefs::format(root, "syscalls", event)
}

/// The probe a uprobe's cookie stands for (its function id, either spec).
fn probe_id(cookie: u64) -> u32 {
    (cookie as u32) % strata_common::FUNC_INT_HANDLES
}

/// Attaches library probe `p` to `symbol` in `path` and fills in how in `status`: whether the
/// kernel single-steps it, and where it is probed at the calls of the function instead.
fn attach_uprobe_status(
    ebpf: &mut Ebpf,
    p: &Probe,
    path: &Path,
    table: &SymbolTable,
    symbol: &str,
    uprobes: &mut Uprobes,
    status: &mut ProbeStatus,
) -> Result<(), Failure> {
    let r = attach_uprobe(ebpf, p, path, table, symbol, uprobes);
    status.single_step = match &r {
        Ok(Some(_)) => Some(false),
        Ok(None) => table.single_stepped(symbol),
        Err(_) => None,
    };
    if let Ok(Some(calls)) = &r {
        status.mechanism = "uprobe_calls";
        status.reason = Some(match p.calls_in.iter().any(|c| c == "*") {
            true => format!("at its {calls} calls in the library"),
            false => format!(
                "at its {calls} calls in {}, its one load done there",
                p.calls_in.join(", ")
            ),
        });
    }
    r.map(|_| ())
}

/// Where a probe with `calls_in` sits instead of its function's entry (file offsets).
pub enum AtCalls {
    /// At the calls of a function whose body is one load, which the kernel side does there
    /// (the load's displacement, the calls).
    Load(u32, Vec<u64>),
    /// At the calls of a function recorded at its entry (the loader's report, a bare `ret`).
    Report(Vec<u64>),
}

/// Where probe `p` on `symbol` is probed in the library `table` when not at its entry: at
/// its calls (`calls_in`), where they are found. None: at its entry.
pub fn at_calls(p: &Probe, table: &SymbolTable, symbol: &str) -> Option<AtCalls> {
    if p.calls_in.is_empty() {
        return None;
    }
    if let Some((disp, sites)) = crate::symbols::load_calls(table, symbol, &p.calls_in) {
        return Some(AtCalls::Load(disp, sites));
    }
    (p.spec().flags & strata_common::SPEC_EMIT_AT_ENTRY != 0)
        .then(|| crate::symbols::call_sites(table, symbol, &p.calls_in))
        .flatten()
        .map(AtCalls::Report)
}

/// Attaches library probe `p` to `symbol` in `path`: at its entry (None), or at its calls in
/// the functions `calls_in` names (Some: how many), where its body is one load or its call is
/// recorded at entry.
fn attach_uprobe(
    ebpf: &mut Ebpf,
    p: &Probe,
    path: &Path,
    table: &SymbolTable,
    symbol: &str,
    uprobes: &mut Uprobes,
) -> Result<Option<usize>, Failure> {
    let offset = table
        .offset(symbol)
        .ok_or_else(|| match (&p.since, &p.only_in) {
            // Older than the symbol, or a build without it: nothing to warn about.
            (Some(since), _) => Failure::Absent(format!(
                "symbol {symbol} not in this build of the library (added in {since})"
            )),
            (None, Some(builds)) => Failure::Absent(format!(
                "symbol {symbol} not in this build of the library (only in {builds})"
            )),
            (None, None) => Failure::Failed(format!(
                "symbol {symbol} not found in this build of the library"
            )),
        })?;
    // Aliases (fopen/fopen64) share an address: a second probe there would record each call
    // twice, nested in itself.
    if let Some(first) = uprobes.at.get(&(path.to_owned(), offset)) {
        return Err(Failure::Alias(*first));
    }
    let mut specs: Array<_, FuncSpec> = ebpf
        .map_mut(maps::FUNC_SPECS)
        .ok_or_else(|| Failure::Failed("function spec map missing".into()))
        .and_then(|m| Array::try_from(m).map_err(|e| Failure::Failed(e.to_string())))?;
    // The MPICH ABI's handles are integers: the same probe under its other spec.
    let spec = match p.int_handles_in(table) {
        true => p.int_handles_spec(),
        false => p.spec(),
    };
    specs
        .set(spec.func_id, spec, 0)
        .map_err(|e| Failure::Failed(format!("spec map: {e}")))?;
    let types = match p.arg(ArgKind::H5Type) {
        Some(_) => type_table(ebpf, uprobes, path, table, symbol),
        None => 0,
    };
    let at_calls = at_calls(p, table, symbol);
    // A function that is one load, probed at its calls (each an emulated `call`) with the
    // load's displacement in the cookie, instead of at its single-stepped entry.
    if let Some(AtCalls::Load(disp, sites)) = at_calls {
        let cookie = u64::from(spec.func_id)
            | (u64::from(disp) << COOKIE_TABLE_SHIFT)
            | strata_common::COOKIE_LOAD_AT_CALL;
        for &site in &sites {
            uprobes.pending_calls.push((path.to_owned(), site, cookie));
            uprobes.at.insert((path.to_owned(), site), p.id);
        }
        return Ok(Some(sites.len()));
    }
    if spec.flags & strata_common::SPEC_EMIT_AT_ENTRY != 0 {
        // Recorded at entry (the loader's report): no return probe. A bare `ret`, which the
        // kernel single-steps (a second trap), is probed at its calls where `calls_in` finds
        // them, each an emulated `call` or `jmp`.
        let watched = watched_variable(p, table);
        let sites = match at_calls {
            Some(AtCalls::Report(sites)) => Some(sites),
            _ => None,
        };
        let at = sites.clone().unwrap_or_else(|| vec![offset]);
        for &site in &at {
            let cookie = watched
                .and_then(|var| if_zero_cookie(p.id, table.bytes(), var, site))
                .unwrap_or(u64::from(spec.func_id));
            uprobes.pending_calls.push((path.to_owned(), site, cookie));
            uprobes.at.insert((path.to_owned(), site), p.id);
        }
        return Ok(sites.map(|s| s.len()));
    }
    let cookie = match p.stream_var() {
        Some(var) => stream_cookie(path, table, symbol, var, spec.func_id),
        None => u64::from(spec.func_id) | (u64::from(types) << COOKIE_TABLE_SHIFT),
    };
    // Attached with the file's other probes by `finish_uprobes`.
    uprobes.pending.push((path.to_owned(), offset, cookie));
    uprobes.at.insert((path.to_owned(), offset), p.id);
    Ok(None)
}

/// The address of probe `p`'s `only_if_zero` value in its library (`table`); None where it
/// has none, or where the library lacks the variable (then every call is recorded).
fn watched_variable(p: &Probe, table: &SymbolTable) -> Option<u64> {
    let (name, offset) = p.only_if_zero.as_ref()?;
    let var = table.variable(name);
    if var.is_none() {
        log::warn!(
            "{}: variable {name} not in its library; each of its calls is recorded",
            p.function()
        );
    }
    Some(var?.address.wrapping_add(*offset))
}

/// The cookie of probe `func_id` at file offset `site` of library `data`, whose recording
/// depends on the value at address `var`: where the kernel finds it from the probed address
/// (None, every call recorded, where too far for the cookie).
fn if_zero_cookie(func_id: u32, data: &[u8], var: u64, site: u64) -> Option<u64> {
    let at = crate::symbols::address_of_offset(data, site)?;
    strata_common::stream_var_cookie(func_id, var.wrapping_sub(at) as i64, false)
}

/// The cookie of `symbol`'s probe, whose calls work on the stream in the library's variable
/// `var` (`stdout`): where the kernel finds the variable from the probed address. Without the
/// variable, the calls name no stream.
fn stream_cookie(path: &Path, table: &SymbolTable, symbol: &str, var: &str, func_id: u32) -> u64 {
    let found = table.address(symbol).zip(table.variable(var));
    // The library's code reaches its exported variable through its GOT (an executable may
    // have its own copy); a static build has only its own.
    let cookie = found.and_then(|(at, v)| match v.got {
        Some(slot) => strata_common::stream_var_cookie(func_id, slot.wrapping_sub(at) as i64, true),
        None => strata_common::stream_var_cookie(func_id, v.address.wrapping_sub(at) as i64, false),
    });
    cookie.unwrap_or_else(|| {
        log::warn!(
            "{symbol} in {}: variable {var} {}; its calls name no stream",
            path.display(),
            match found {
                None => "not found",
                Some(_) => "too far from it for the probe's cookie",
            }
        );
        u64::from(func_id)
    })
}

/// Stores where `symbol`'s HDF5 predefined types are (for its `h5type` argument) and returns
/// the table's index, 0 when the file has none or the map is full (the transfers then have no
/// byte counts, and the log says why).
fn type_table(
    ebpf: &mut Ebpf,
    uprobes: &mut Uprobes,
    path: &Path,
    symbols: &SymbolTable,
    symbol: &str,
) -> u32 {
    let Some(table) = crate::hdf5::type_table(symbols, symbol) else {
        log::info!(
            "{}: no HDF5 predefined types found; {symbol} gets no byte counts",
            path.display()
        );
        return 0;
    };
    let index = uprobes.type_tables + 1;
    let stored = ebpf
        .map_mut(maps::TYPE_TABLES)
        .ok_or_else(|| anyhow!("map {} missing", maps::TYPE_TABLES))
        .and_then(|m| Ok(Array::<_, TypeTable>::try_from(m)?))
        .and_then(|mut a| Ok(a.set(index, table, 0)?));
    match stored {
        Ok(()) => {
            uprobes.type_tables = index;
            index
        }
        Err(e) => {
            log::warn!(
                "{symbol} in {}: HDF5 type table {index} not stored ({e:#}); its transfers get no byte counts",
                path.display()
            );
            0
        }
    }
}

/// Reads and sums a per-CPU counter slot.
pub fn counter_total<T: std::borrow::Borrow<MapData>>(
    counters: &PerCpuArray<T, u64>,
    slot: strata_common::Counter,
) -> u64 {
    counters
        .get(&(slot as u32), 0)
        .map(|v| v.iter().sum())
        .unwrap_or(0)
}

/// What the kernel side dropped or could not do, as counted since load.
#[derive(Clone, Copy, Debug)]
pub struct Drops {
    pub lost: u64,
    pub skipped: u64,
    pub str_read_failed: u64,
    pub stack_overflow: u64,
    pub stack_mismatch: u64,
    pub stack_unavailable: u64,
    pub requests_unread: u64,
}

impl Drops {
    pub fn now(loaded: &Loaded) -> Self {
        use strata_common::Counter;
        let c = |slot| counter_total(&loaded.counters, slot);
        Self {
            lost: c(Counter::RingbufFull),
            skipped: program_misses(&loaded.ebpf, &loaded.uprobes.program_fds()),
            str_read_failed: c(Counter::StrReadFailed),
            stack_overflow: c(Counter::StackOverflow),
            stack_mismatch: c(Counter::StackMismatch),
            stack_unavailable: c(Counter::StackAllocFailed),
            requests_unread: c(Counter::AioUnread),
        }
    }

    /// The drops counted after `start` (a daemon job's share of the node-wide counters).
    pub fn since(self, start: Self) -> Self {
        Self {
            lost: self.lost.saturating_sub(start.lost),
            skipped: self.skipped.saturating_sub(start.skipped),
            str_read_failed: self.str_read_failed.saturating_sub(start.str_read_failed),
            stack_overflow: self.stack_overflow.saturating_sub(start.stack_overflow),
            stack_mismatch: self.stack_mismatch.saturating_sub(start.stack_mismatch),
            stack_unavailable: self
                .stack_unavailable
                .saturating_sub(start.stack_unavailable),
            requests_unread: self.requests_unread.saturating_sub(start.requests_unread),
        }
    }

    /// Into the run row's columns.
    pub fn record(self, run: &mut crate::schema::RunRow) {
        run.events_lost = self.lost as i64;
        run.events_skipped = self.skipped as i64;
        run.str_read_failed = self.str_read_failed as i64;
        run.stack_overflow = self.stack_overflow as i64;
        run.stack_mismatch = self.stack_mismatch as i64;
        run.stack_unavailable = self.stack_unavailable as i64;
        run.requests_unread = self.requests_unread as i64;
    }
}

/// Probe hits the kernel did not run one of strata's programs for, since load: it skips a
/// kprobe, uprobe or trace-event program when another such program (strata's or another
/// tool's) is already running on that CPU, e.g. when a disk interrupt lands in a probe. Their
/// events are missing. The kernel counts these itself (`recursion_misses` in a program's
/// fdinfo: for raw-tracepoint programs since Linux 5.12, for the others since 6.7); 0 where
/// it does not.
pub fn program_misses(ebpf: &Ebpf, extra: &[RawFd]) -> u64 {
    ebpf.programs()
        .filter_map(|(_, p)| p.fd().ok().map(|fd| fd.as_fd().as_raw_fd()))
        .chain(extra.iter().copied())
        .filter_map(|fd| fdinfo_field(&fdinfo(fd)?, "recursion_misses"))
        .sum()
}

fn fdinfo(fd: RawFd) -> Option<String> {
    std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).ok()
}

/// The number after `key:` in a /proc fdinfo text.
fn fdinfo_field(info: &str, key: &str) -> Option<u64> {
    crate::procs::fdinfo_value(info, key)?.parse().ok()
}

/// Time spent in strata's programs and how often they ran, since load, when the kernel keeps
/// BPF run statistics (`sysctl kernel.bpf_stats_enabled=1`); `None` while it does not.
pub fn program_stats(ebpf: &Ebpf, extra: &[RawFd]) -> Option<(u64, u64)> {
    let (mut ns, mut runs) = ebpf
        .programs()
        .filter_map(|(name, p)| Some((name, p.info().ok()?)))
        .fold((0u64, 0u64), |(ns, runs), (name, i)| {
            let (t, n) = (i.run_time().as_nanos() as u64, i.run_count());
            if let Some(each) = t.checked_div(n) {
                log::debug!("program {name}: {n} runs, {each} ns each");
            }
            (ns + t, runs + n)
        });
    // Programs aya did not load (multi uprobes): the kernel's figures from fdinfo.
    for info in extra.iter().filter_map(|fd| fdinfo(*fd)) {
        let t = fdinfo_field(&info, "run_time_ns").unwrap_or(0);
        let n = fdinfo_field(&info, "run_cnt").unwrap_or(0);
        if let Some(each) = t.checked_div(n) {
            let id = fdinfo_field(&info, "prog_id").unwrap_or(0);
            log::debug!("multi-uprobe program (id {id}): {n} runs, {each} ns each");
        }
        (ns, runs) = (ns + t, runs + n);
    }
    (runs > 0).then_some((ns, runs))
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use object::{Object as _, ObjectSection as _, ObjectSymbol as _, SymbolKind};
    use strata_common::{FIELD_NONE, KernelEvent, globals, maps, programs};

    use super::{EBPF, cgroup_depths, fdinfo_field, kernel_fields, link_halving};
    use crate::tracefs::parse_format;

    #[test]
    fn the_kernel_filter_lists_each_depth_once_deepest_first() {
        use strata_common::NO_CGROUP_LEVEL as END;
        assert_eq!(cgroup_depths([].into_iter()), [END; 4]);
        assert_eq!(cgroup_depths([4, 2, 4, 0].into_iter()), [4, 2, 0, END]);
        assert_eq!(cgroup_depths([7, 3, 5, 1].into_iter()), [7, 5, 3, 1]);
    }

    /// A kernel that refuses any multi link holding one of `bad`: every other offset ends up
    /// linked exactly once, the bad ones are handed back alone, and the attempts stay few.
    #[test]
    fn refused_multi_links_are_halved_down_to_the_bad_offsets() {
        for (n, bad) in [
            (1u64, vec![0u64]),
            (2, vec![1]),
            (7, vec![]),
            (9, vec![4]),
            (278, vec![0, 131, 277]),
            (64, (0..64).collect()),
        ] {
            let items: Vec<u64> = (0..n).collect();
            let (mut linked, mut attempts) = (Vec::new(), 0);
            let refused = link_halving(&items, |part: &[u64]| {
                attempts += 1;
                match part.iter().find(|o| bad.contains(o)) {
                    Some(o) => Err(format!("EINVAL at {o}")),
                    None => {
                        linked.extend_from_slice(part);
                        Ok(())
                    }
                }
            });
            let refused_items: Vec<u64> = refused.iter().map(|r| r.0).collect();
            assert_eq!(refused_items, bad, "{n} offsets");
            assert!(refused.iter().all(|(o, e)| *e == format!("EINVAL at {o}")));
            linked.sort();
            let good: Vec<u64> = items.iter().copied().filter(|o| !bad.contains(o)).collect();
            assert_eq!(linked, good, "{n} offsets, each linked once");
            // Each bad offset costs at most two attempts per halving level.
            let levels = 64 - (n.max(1) - 1).leading_zeros() as usize + 1;
            assert!(
                attempts <= 1 + 2 * levels * bad.len().max(1),
                "{n} offsets, {} bad: {attempts} attempts",
                bad.len()
            );
        }
    }

    /// A BPF program's fdinfo as Linux 6.1 prints it.
    #[test]
    fn fdinfo_fields_are_read_by_name() {
        let info = "pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1057\nprog_type:\t5\n\
                    prog_jited:\t1\nprog_tag:\t3b185187f1855c4c\nmemlock:\t4096\n\
                    prog_id:\t1417\nrun_time_ns:\t0\nrun_cnt:\t0\n\
                    recursion_misses:\t17\nverified_insns:\t96\n";
        assert_eq!(fdinfo_field(info, "recursion_misses"), Some(17));
        assert_eq!(fdinfo_field(info, "run_cnt"), Some(0));
        assert_eq!(fdinfo_field(info, "prog_tag"), None);
        assert_eq!(fdinfo_field(info, "misses"), None);
    }

    /// The eBPF object's programs (global functions outside `.text`, where the shared
    /// subprograms live), maps (symbols of the `maps` and BTF-defined `.maps` sections) and
    /// read-only globals.
    fn object_names() -> (BTreeSet<String>, BTreeSet<String>, BTreeSet<String>) {
        let obj = object::File::parse(EBPF).expect("the eBPF object parses");
        let (mut progs, mut maps, mut globals) =
            (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
        for sym in obj.symbols() {
            let Some(section) = sym
                .section_index()
                .and_then(|i| obj.section_by_index(i).ok())
            else {
                continue;
            };
            let section = section.name().unwrap_or_default();
            let name = sym.name().unwrap_or_default().to_string();
            if section == "maps" || section == ".maps" {
                maps.insert(name);
            } else if section.starts_with(".rodata") && sym.is_global() {
                globals.insert(name);
            } else if sym.kind() == SymbolKind::Text && sym.is_global() && section != ".text" {
                progs.insert(name);
            }
        }
        (progs, maps, globals)
    }

    /// The compiler's byte-loop functions, which it may call for a copy, a fill or a compare.
    const BYTE_LOOPS: [&str; 5] = ["memcpy", "memmove", "memset", "memcmp", "bcmp"];

    /// Per program of eBPF object `elf`, the functions it calls, at any depth (through the
    /// subprograms of `.text`), among them the byte-loop functions.
    fn callees_by_program(elf: &[u8]) -> BTreeMap<String, BTreeSet<String>> {
        use object::{ObjectSymbolTable as _, RelocationTarget};
        let obj = object::File::parse(elf).expect("the eBPF object parses");
        // Every function, by section and first instruction: (name, end, is a program).
        let mut funcs: BTreeMap<(usize, u64), (String, u64, bool)> = BTreeMap::new();
        for sym in obj
            .symbols()
            .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0)
        {
            let Some(section) = sym.section_index() else {
                continue;
            };
            let in_text = obj.section_by_index(section).unwrap().name().unwrap() == ".text";
            let name = sym.name().unwrap().to_string();
            let end = sym.address() + sym.size();
            funcs.insert(
                (section.0, sym.address()),
                (name, end, !in_text && sym.is_global()),
            );
        }
        let func_at = |section: usize, off: u64| {
            let (_, (name, _, _)) = funcs
                .range(..=(section, off))
                .next_back()
                .filter(|((s, start), (_, end, _))| *s == section && (*start..*end).contains(&off))
                .unwrap_or_else(|| panic!("no function at {off:#x} of section {section}"));
            name.clone()
        };
        let symbols = obj.symbol_table().expect("a symbol table");
        // Each function's callees: BPF-to-BPF calls (`call` with the pseudo-call source), by
        // relocation where the callee is elsewhere, else relative to the next instruction.
        let mut callees: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for section in obj
            .sections()
            .filter(|s| s.kind() == object::SectionKind::Text)
        {
            let Ok(code) = section.data() else { continue };
            let relocs: BTreeMap<u64, _> = section.relocations().collect();
            let mut at = 0usize;
            while at + 8 <= code.len() {
                let (op, src) = (code[at], code[at + 1] >> 4);
                let imm = i64::from(i32::from_le_bytes(code[at + 4..at + 8].try_into().unwrap()));
                let width = if op == 0x18 { 16 } else { 8 };
                if op == 0x85 && src == 1 {
                    let caller = func_at(section.index().0, at as u64);
                    let callee = match relocs.get(&(at as u64)).map(|r| r.target()) {
                        Some(RelocationTarget::Symbol(i)) => {
                            let target = symbols.symbol_by_index(i).unwrap();
                            match target.kind() {
                                // A call into another section's code, by its offset there.
                                SymbolKind::Section => func_at(
                                    target.section_index().unwrap().0,
                                    ((imm + 1) * 8) as u64,
                                ),
                                _ => target.name().unwrap().to_string(),
                            }
                        }
                        _ => func_at(section.index().0, (at as i64 + (imm + 1) * 8) as u64),
                    };
                    callees.entry(caller).or_default().insert(callee);
                }
                at += width;
            }
        }
        let mut found = BTreeMap::new();
        for (name, _, _) in funcs.values().filter(|(_, _, prog)| *prog) {
            let (mut seen, mut todo) = (BTreeSet::new(), vec![name.clone()]);
            while let Some(f) = todo.pop() {
                if seen.insert(f.clone()) {
                    todo.extend(callees.get(&f).into_iter().flatten().cloned());
                }
            }
            seen.remove(name);
            found.insert(name.clone(), seen);
        }
        found
    }

    /// A copy or fill the compiler turns into a byte-loop call costs tens of ns a run (a
    /// frame's six arguments: 48 rounds, about 25 ns a syscall): none in any program that
    /// runs per call, page or request. The process lifecycle programs run once per process
    /// or thread and may.
    #[test]
    fn no_program_per_call_runs_a_byte_loop() {
        let found: BTreeMap<String, BTreeSet<String>> = callees_by_program(EBPF)
            .into_iter()
            .map(|(p, f)| {
                (
                    p,
                    f.into_iter()
                        .filter(|f| BYTE_LOOPS.contains(&f.as_str()))
                        .collect(),
                )
            })
            .collect();
        let (all, _, _) = object_names();
        assert_eq!(found.keys().cloned().collect::<BTreeSet<_>>(), all);
        let lifecycle: BTreeSet<&str> = programs::LIFECYCLE_BTF
            .iter()
            .map(|(_, _, p)| *p)
            .chain([
                programs::TASK_NEWTASK,
                programs::PROCESS_EXEC,
                programs::PROCESS_EXIT,
                // Once per stop.
                programs::ITER_STACKS,
            ])
            .collect();
        let per_call: Vec<_> = found
            .iter()
            .filter(|(p, loops)| !loops.is_empty() && !lifecycle.contains(p.as_str()))
            .collect();
        assert!(
            per_call.is_empty(),
            "programs that run a byte loop (store the copy word by word: store_words): {per_call:?}"
        );
        // The walk sees what it looks for: the lifecycle programs' fills of names and paths.
        assert!(
            lifecycle.iter().any(|p| found[*p].contains("memset")),
            "no byte loop found anywhere: the walk is blind ({found:?})"
        );
    }

    /// The walk follows calls into the shared subprograms of `.text` (the syscall entries'
    /// filter is one, today), where a byte loop could hide as well as in a program's own code.
    #[test]
    fn the_call_walk_reaches_shared_subprograms() {
        let callees = callees_by_program(EBPF);
        let (progs, _, _) = object_names();
        let subprograms: BTreeSet<&String> = callees
            .values()
            .flatten()
            .filter(|f| !progs.contains(*f) && !BYTE_LOOPS.contains(&f.as_str()))
            .collect();
        assert!(
            !subprograms.is_empty(),
            "no program calls a subprogram: the walk does not follow calls ({callees:?})"
        );
    }

    #[test]
    fn the_object_defines_exactly_the_shared_names() {
        let (progs, object_maps, object_globals) = object_names();
        let mut named: BTreeSet<String> = [
            programs::SYS_ENTER,
            programs::SYS_EXIT,
            programs::SYS_ENTER_ONE,
            programs::BTF_SYS_ENTER,
            programs::BTF_SYS_EXIT,
            programs::UPROBE_ENTRY,
            programs::UPROBE_RETURN,
            programs::UPROBE_SESSION,
            programs::TASK_NEWTASK,
            programs::PROCESS_EXEC,
            programs::PROCESS_EXIT,
            programs::ITER_STACKS,
            programs::KPROBE_ENTRY,
            programs::KPROBE_RETURN,
            programs::EMPTY_TRACEPOINT,
            programs::EMPTY_BTF_SYS_ENTER,
            programs::EMPTY_BTF_SYS_EXIT,
            programs::EMPTY_UPROBE,
            programs::EMPTY_URETPROBE,
            programs::EMPTY_UPROBE_SESSION,
            programs::FLOOR_BTF_SYS_ENTER,
            programs::FLOOR_BTF_SYS_EXIT,
            programs::FLOOR_UPROBE,
            programs::FLOOR_URETPROBE,
            programs::FLOOR_UPROBE_SESSION,
        ]
        .into_iter()
        .map(String::from)
        .collect();
        named.extend(programs::KERNEL_TRACEPOINT.iter().map(|s| s.to_string()));
        named.extend(
            programs::LIFECYCLE_BTF
                .iter()
                .map(|(_, _, p)| p.to_string()),
        );
        named.extend(
            programs::KERNEL_BTF
                .iter()
                .map(|(_, _, _, p)| p.to_string()),
        );
        assert_eq!(
            progs, named,
            "programs of the object vs strata_common::programs"
        );
        for m in [
            maps::CONFIG,
            maps::TRACED,
            maps::TRACED_MARKS,
            maps::CGROUP_VERDICTS,
            maps::TASK_STACKS,
            maps::STACKS,
            maps::ZERO_STACK,
            maps::FUNC_SPECS,
            maps::SYSCALL_SPECS,
            maps::COUNTERS,
            maps::EVENTS,
            maps::STR_SCRATCH,
            maps::KERNEL_FIELDS,
            maps::KERNEL_WINDOW,
            maps::WATCHED_INODES,
            maps::WRITEBACK_THREADS,
            maps::PENDING_BIOS,
            maps::KFUNC_IDS,
            maps::CGROUPS,
            maps::USERS,
            maps::LAST_WAKE,
            maps::QUIET_BELOW,
            maps::ONLY_VALUES,
            maps::STAMP_SCRATCH,
        ] {
            assert!(object_maps.contains(m), "map {m} missing from the object");
        }
        assert_eq!(
            object_globals,
            BTreeSet::from([
                globals::USE_TASK_STORAGE.to_string(),
                globals::TASK_OFFSETS.to_string(),
                globals::FLOOR_RING.to_string(),
                globals::PAGE_OFFSETS.to_string(),
                globals::BLOCK_OFFSETS.to_string(),
            ]),
            "read-only globals of the object vs strata_common::globals"
        );
    }

    /// A trace event's format with `fields` (declaration, offset, size) after the common ones.
    fn format(fields: &[(&str, u32, u32)]) -> crate::tracefs::Format {
        let mut text = String::from(
            "name: e\nID: 7\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n",
        );
        for (decl, off, size) in fields {
            text += &format!("\tfield:{decl};\toffset:{off};\tsize:{size};\tsigned:0;\n");
        }
        parse_format(&text).unwrap()
    }

    /// The page-cache insertion event as Linux 6.18 lays it out: the program copies up to the
    /// end of its last field read (`order`, one byte at 36).
    #[test]
    fn kernel_fields_give_offsets_and_the_bytes_to_copy() {
        let f = format(&[
            ("unsigned long pfn", 8, 8),
            ("unsigned long i_ino", 16, 8),
            ("unsigned long index", 24, 8),
            ("dev_t s_dev", 32, 4),
            ("unsigned char order", 36, 1),
        ]);
        let k = kernel_fields(&f, KernelEvent::CacheAdd, "filemap/e").unwrap();
        assert_eq!(
            (k.ino, k.index, k.dev, k.order, k.len),
            (16, 24, 32, 36, 37)
        );
        assert_eq!(
            (k.sector, k.tag, k.wrote),
            (FIELD_NONE, FIELD_NONE, FIELD_NONE)
        );
        // `rwbs` is read as its first 8 bytes, at any offset.
        let f = format(&[
            ("dev_t dev", 8, 4),
            ("sector_t sector", 16, 8),
            ("unsigned int nr_sector", 24, 4),
            ("char rwbs[10]", 34, 10),
        ]);
        let k = kernel_fields(&f, KernelEvent::RqIssue, "block/e").unwrap();
        assert_eq!((k.tag, k.len), (34, 42));
    }

    /// io_uring's submission event: `flags` is a u32 until Linux 6.3 and a u64 after (its low
    /// half read either way); a field named `flags` elsewhere is not taken for it.
    #[test]
    fn uring_fields_are_read_from_either_layout() {
        let old = format(&[
            ("void * ctx", 8, 8),
            ("void * req", 16, 8),
            ("unsigned long long user_data", 24, 8),
            ("u8 opcode", 32, 1),
            ("u32 flags", 36, 4),
            ("bool force_nonblock", 40, 1),
        ]);
        let k = kernel_fields(&old, KernelEvent::UringSubmit, "io_uring/e").unwrap();
        assert_eq!(
            (k.ctx, k.req, k.opcode, k.req_flags, k.len),
            (8, 16, 32, 36, 40)
        );
        let new = format(&[
            ("void * ctx", 8, 8),
            ("void * req", 16, 8),
            ("u8 opcode", 32, 1),
            ("unsigned long long flags", 40, 8),
        ]);
        let k = kernel_fields(&new, KernelEvent::UringSubmit, "io_uring/e").unwrap();
        assert_eq!((k.req_flags, k.len), (40, 44));
        let complete = format(&[
            ("void * ctx", 8, 8),
            ("void * req", 16, 8),
            ("int res", 32, 4),
        ]);
        let k = kernel_fields(&complete, KernelEvent::UringComplete, "io_uring/e").unwrap();
        assert_eq!((k.ctx, k.req, k.res), (8, 16, 32));
        let e = kernel_fields(&complete, KernelEvent::UringSubmit, "io_uring/e").unwrap_err();
        assert_eq!(
            e.to_string(),
            "field opcode missing from io_uring/e on this kernel"
        );
        // A refused request: its `flags` byte (the SQE's) is not read; the error is.
        let failed = format(&[
            ("void * ctx", 8, 8),
            ("void * req", 16, 8),
            ("u8 opcode", 32, 1),
            ("u8 flags", 33, 1),
            ("u64 off", 40, 8),
            ("int error", 88, 4),
        ]);
        let k = kernel_fields(&failed, KernelEvent::UringFailed, "io_uring/e").unwrap();
        assert_eq!(
            (k.ctx, k.req, k.opcode, k.error, k.req_flags, k.len),
            (8, 16, 32, 88, FIELD_NONE, 92)
        );
        let block = format(&[
            ("dev_t dev", 8, 4),
            ("sector_t sector", 16, 8),
            ("unsigned long flags", 200, 8),
        ]);
        let k = kernel_fields(&block, KernelEvent::BioQueue, "block/e").unwrap();
        assert_eq!((k.req_flags, k.len), (FIELD_NONE, 24));
    }

    #[test]
    fn kernel_fields_the_program_cannot_read_are_refused() {
        let missing = format(&[("unsigned long i_ino", 16, 8), ("dev_t s_dev", 32, 4)]);
        let e = kernel_fields(&missing, KernelEvent::CacheAdd, "filemap/e").unwrap_err();
        assert_eq!(
            e.to_string(),
            "field index missing from filemap/e on this kernel"
        );
        let misaligned = format(&[
            ("unsigned long i_ino", 12, 8),
            ("unsigned long index", 24, 8),
            ("dev_t s_dev", 32, 4),
        ]);
        let e = kernel_fields(&misaligned, KernelEvent::CacheAdd, "filemap/e").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("field i_ino of filemap/e is at offset 12"),
            "{e}"
        );
        let far = format(&[
            ("unsigned long ino", 16, 8),
            ("unsigned long wrote", 128, 8),
        ]);
        let e = kernel_fields(&far, KernelEvent::WritebackEnd, "writeback/e").unwrap_err();
        assert!(e.to_string().contains("offset 128"), "{e}");
    }
}
