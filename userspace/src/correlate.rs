//! Turning kernel records into rows: each call gets its strings, its handle, its file, its
//! offset, and the handles it created get their parents.
//!
//! Handle parents follow the per-thread call stack (the thesis' handle stack): a handle
//! created inside a call that itself creates a handle (the fd opened inside fopen, the
//! MPI_File opened inside H5Fcreate) becomes that handle's child. Children return before
//! their parents, so each created handle waits in `adoptions[parent call]` until an
//! enclosing creator returns, or the top of the stack is reached.
use std::{panic::AssertUnwindSafe, rc::Rc, sync::Arc};

use strata_common::{
    CALL_EMPTY_STRS, CALL_EMPTY_STRS_SHIFT, CALL_INT_HANDLES, CALL_NO_RETURN, CALL_OUT_VALID,
    CALL_UNFINISHED, CallRecord, DEREF_FAILED, FUNC_AIO, ProcEvent, ProcRecord, REQUEST_AIO,
    TEXT_UNENDED,
};

use crate::{
    dataset::Dataset,
    events::{Event, comm},
    fast::HashMap,
    files::{self, Files},
    handles::{HandleId, Handles, MAPPING, NewHandle, Raw},
    linux_aio::LinuxAio,
    peers,
    probes::{ArgKind, Layer, Op, Probe, RetKind, Target},
    procs::Procs,
    schema::CallRow,
    summary::Summary,
    views::Seen,
};

const AT_FDCWD: i32 = -100;
const EBADF: i64 = 9;
const F_DUPFD: u64 = 0;
const F_DUPFD_CLOEXEC: u64 = 1030;
const F_SETFD: u64 = 2;
const F_SETFL: u64 = 4;
const FD_CLOEXEC: u64 = 1;
const CLOSE_RANGE_CLOEXEC: u64 = 1 << 2;
const SEEK_SET: u64 = 0;
const SEEK_CUR: u64 = 1;
/// Strings whose call never returned are dropped after this many flushes.
const STR_MAX_AGE: u32 = 600;
/// io_uring requests submitted and not completed yet, at most: past that, the ones waiting
/// longest are dropped (their completion was lost, or their ring torn down unseen). Also
/// dropped after `STR_MAX_AGE` flushes.
const URING_MAX_PENDING: usize = 65536;
/// Handles created beneath a call wait for its return at most this many flushes, and at most
/// this many at once: an open call makes a few, over milliseconds; a call whose return was
/// missed (longjmp over it, a thread that ended inside it) would hold every handle its thread
/// created after it until the process ends.
const ADOPTION_MAX_AGE: u32 = 60;
const ADOPTION_MAX_HANDLES: usize = 4096;

/// Ticks (flushes) between two looks for processes that exited unseen
/// (`Procs::sweep_gone`): at 1 s flushes, one is taken for exited 30 to 60 s after it is
/// gone, when what it did before has long been handled.
const SWEEP_TICKS: u64 = 30;

/// Converts kernel CLOCK_MONOTONIC nanoseconds to Unix-epoch nanoseconds.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    pub offset_ns: i64,
}

impl Clock {
    pub fn now() -> Self {
        use nix::time::ClockId;
        Self {
            offset_ns: clock_ns(ClockId::CLOCK_REALTIME) - clock_ns(ClockId::CLOCK_MONOTONIC),
        }
    }

    pub fn epoch(&self, mono_ns: u64) -> i64 {
        mono_ns as i64 + self.offset_ns
    }
}

/// Reads a clock in nanoseconds.
pub fn clock_ns(id: nix::time::ClockId) -> i64 {
    nix::time::clock_gettime(id).map_or(0, |t| t.tv_sec() * 1_000_000_000 + t.tv_nsec())
}

/// Strings and arrays that arrived before their call's record.
#[derive(Default)]
struct PendingArgs {
    strs: Vec<(u32, Option<String>)>,
    blobs: Vec<(u32, Vec<u64>)>,
    age: u32,
}

/// Emptied string lists kept for reuse (calls in flight with strings at once, about).
const SPARE_STRS: usize = 64;

/// `H5FD_MPIO_COLLECTIVE` and `NC_COLLECTIVE`.
const XFER_COLLECTIVE: u64 = 1;

struct Adoption {
    pid: i32,
    handles: Vec<HandleId>,
    /// Fds opened before tracing that a call beneath closed, with their handles, kept for
    /// the stream this call may make of one (`fclose(stdout)`, see `unseen_stream`).
    closed: Vec<(i32, HandleId)>,
    /// Rows of calls on such handles that have no file yet (a dataset opened from the group
    /// id an HDF5 iteration made for its callback), written once an enclosing call gives
    /// their handle one, or as they are when none does.
    rows: Vec<CallRow>,
    age: u32,
}

/// Rows of files outside `--paths` kept back at most (see `Correlator::withheld`).
const WITHHELD_FILES: usize = 65_536;

pub struct Correlator {
    /// Shared, not cloned, per record: the hot path only bumps a count.
    probes: Vec<Rc<Probe>>,
    /// Layer, function and op names per probe, shared by the rows.
    names: Vec<(Rc<str>, Rc<str>, Rc<str>)>,
    clock: Clock,
    pending_args: HashMap<u64, PendingArgs>,
    /// Emptied string lists of calls done, for the next calls' strings: an open's path
    /// otherwise cost an allocation for its list too.
    spare_strs: Vec<Vec<(u32, Option<String>)>>,
    /// io_uring requests submitted, by request address: their record and its age in flushes.
    uring_pending: HashMap<u64, (CallRecord, u32)>,
    /// io_uring requests whose completion never came (dropped from `uring_pending`), and
    /// Linux AIO requests whose event never came.
    pub requests_unfinished: u64,
    /// Steps skipped because taking them panicked (see [`Self::guarded`]).
    pub internal_errors: u64,
    linux_aio: LinuxAio,
    /// Ticks so far (see `SWEEP_TICKS`).
    ticks: u64,
    /// Other strata processes (see `peers`), whose records are left out: usually none.
    peers: Vec<i32>,
    /// Whether processes that exec strata join `peers` (`--all`).
    peers_left_out: bool,
    adoptions: HashMap<u64, Adoption>,
    /// Rows held in adoptions, let go: written after the record at hand.
    released: Vec<CallRow>,
    pub procs: Procs,
    pub handles: Handles,
    /// Names of the libraries probes.toml probes, with their other base names (for
    /// [`Self::library_opens`]).
    libraries: Vec<(String, Arc<[String]>)>,
    /// Probed libraries that traced processes opened or mapped, for the loader to attach.
    pub library_opens: Vec<LibraryOpen>,
    /// Traced processes that executed a new program, for the loader to look at its own
    /// functions (statically linked libraries) and the libraries it will load.
    pub execs: Vec<Exec>,
    /// Processes whose dynamic loader reported libraries loaded (dlopen, or its start-up):
    /// their mappings are searched for probed libraries.
    pub loader_reports: Vec<i32>,
    /// Transfer mode per (pid, 0, HDF5 transfer property list) or (pid, ncid, varid).
    xfer_modes: HashMap<(i32, u64, u64), u64>,
    /// Open file descriptions sent in messages (sendmsg's `SCM_RIGHTS`), by the kernel's
    /// `struct file *`, for the receivers' descriptors to share.
    passed: HashMap<u64, Passed>,
    /// HDF5 dataspaces and selections, for the bytes of transfers.
    dataspaces: crate::hdf5::Dataspaces,
    /// NetCDF variable ranks, for the bytes of puts and gets.
    nc_vars: crate::netcdf::Variables,
    /// MPI datatype sizes asked beneath transfers, for MPIs with integer handles.
    type_sizes: crate::mpi_types::TypeSizes,
    /// Where the calls beneath library calls began on the handles they moved, and what
    /// they read.
    starts_beneath: crate::handles::StartsBeneath,
    /// The last failure beneath each library call in flight: why it failed, if it did.
    failures: crate::failures::FailuresBeneath,
    /// Collective opens so far per (pid, file id).
    collective_opens: HashMap<(i32, i64), u32>,
    pub files: Files,
    pub summary: Summary,
    /// Block requests, page cache and writeback.
    kernel: crate::kernel::Kernel,
    /// Transfers of AIO helper threads, linked to the calls that queued them.
    helpers: crate::aio::Helpers,
    /// Some enabled probe queues transfers (returns a request): only then can a helper
    /// thread's transfer need linking, and only then are such transfers held back.
    queues_transfers: bool,
    /// Whether read(2) is recorded: only then does an fgets that met the end of its file
    /// show it, by a read beneath it that returned 0.
    reads_recorded: bool,
    /// Only rows about files under these directories are written (`--paths`).
    pub path_filter: Option<crate::filter::PathFilter>,
    /// With `--paths`: rows of files outside the paths, kept back in case a kept copy names
    /// them (its other file); and the files such copies named before their rows came.
    withheld: HashMap<i64, crate::schema::FileRow>,
    wanted_files: std::collections::HashSet<i64>,
    /// Per probe: whether its rows take [`Self::plain_transfer`].
    plain: Vec<bool>,
}

/// A traced process that executed a new program, as strata knew it then.
pub struct Exec {
    pub pid: i32,
    /// It sees the files as strata does (no view of its own).
    pub own_view: bool,
    /// `LD_LIBRARY_PATH` in its environment, as the kernel side sent it or /proc gave it
    /// (see [`Procs::read_awaited`]).
    pub ld_library_path: Option<String>,
}

/// A library a traced process opened or mapped.
pub struct LibraryOpen {
    pub pid: i32,
    /// In the process's view.
    pub path: String,
    /// (dev, ino) as `stat` gives them, where the kernel side or the process's mappings told.
    pub file: Option<(u64, u64)>,
    /// `path` is as /proc names it from strata's root (a mapping), not as the process does:
    /// a chroot's directory is taken off before it is attached.
    pub from_node: bool,
}

impl Correlator {
    /// Whether the file at `path` may be a library probes.toml probes, by its name.
    pub fn is_probed_library(&self, path: &str) -> bool {
        use crate::libraries::{LibraryMatch, is_shared_object, match_name};
        let name = path.rsplit('/').next().unwrap_or(path);
        let shared_object = is_shared_object(name);
        (self.libraries.iter())
            .any(|(l, other)| match_name(l, other, name, shared_object) != LibraryMatch::No)
    }

    pub fn new(probes: Vec<Probe>, clock: Clock) -> Self {
        let queues_transfers = probes.iter().any(|p| {
            p.enabled
                && matches!(p.op, Op::Read | Op::Write)
                && p.arg(ArgKind::OutRequest).is_some()
        });
        let mut libraries: Vec<(String, Arc<[String]>)> = probes
            .iter()
            .filter(|p| p.enabled)
            .filter_map(|p| match &p.target {
                Target::Uprobe { library, .. } => Some((library.clone(), p.other_names.clone())),
                Target::Syscall(_)
                | Target::Kernel { .. }
                | Target::Kfunc { .. }
                | Target::Request { .. } => None,
            })
            .collect();
        libraries.sort();
        libraries.dedup();
        let names = probes
            .iter()
            .map(|p| {
                (
                    Rc::from(p.layer.to_string()),
                    Rc::from(p.function()),
                    Rc::from(p.op.to_string()),
                )
            })
            .collect();
        let linux_aio = LinuxAio::new(&probes);
        let reads_recorded = (probes.iter())
            .any(|p| p.enabled && matches!(&p.target, Target::Syscall(n) if n == "read"));
        Self {
            names,
            plain: probes.iter().map(is_plain_transfer).collect(),
            probes: probes.into_iter().map(Rc::new).collect(),
            libraries,
            library_opens: Vec::new(),
            execs: Vec::new(),
            loader_reports: Vec::new(),
            clock,
            pending_args: HashMap::default(),
            spare_strs: Vec::new(),
            uring_pending: HashMap::default(),
            requests_unfinished: 0,
            internal_errors: 0,
            linux_aio,
            ticks: 0,
            peers: Vec::new(),
            peers_left_out: false,
            adoptions: HashMap::default(),
            released: Vec::new(),
            procs: Procs::default(),
            handles: Handles::default(),
            xfer_modes: HashMap::default(),
            passed: HashMap::default(),
            collective_opens: HashMap::default(),
            dataspaces: Default::default(),
            nc_vars: Default::default(),
            type_sizes: Default::default(),
            starts_beneath: Default::default(),
            failures: Default::default(),
            files: Files::default(),
            summary: Summary::default(),
            kernel: Default::default(),
            helpers: Default::default(),
            queues_transfers,
            reads_recorded,
            path_filter: None,
            withheld: HashMap::default(),
            wanted_files: Default::default(),
        }
    }

    /// Runs one step of the recorder (`handle` a record, `tick`, `finish`) so that a panic
    /// in it, a bug in strata, costs that step and not the run: without this, the rows not
    /// yet written and everything after would be lost, and the jobs traced no longer. The
    /// step's changes up to the panic stay; the panic's own message says where it was.
    pub fn guarded(&mut self, step: impl FnOnce(&mut Self)) {
        if std::panic::catch_unwind(AssertUnwindSafe(|| step(self))).is_err() {
            self.internal_errors += 1;
        }
    }

    pub fn handle(&mut self, ev: Event, out: &mut Dataset) {
        if !self.peers.is_empty() && self.peer_record(&ev) {
            return;
        }
        match ev {
            Event::Str {
                call_id, arg, text, ..
            } => {
                let spare = &mut self.spare_strs;
                let pending = self
                    .pending_args
                    .entry(call_id)
                    .or_insert_with(|| PendingArgs {
                        strs: spare.pop().unwrap_or_default(),
                        ..PendingArgs::default()
                    });
                pending.strs.push((arg, text));
            }
            Event::Blob {
                call_id,
                arg,
                words,
                ..
            } => {
                let blobs = &mut self.pending_args.entry(call_id).or_default().blobs;
                // A counted array comes in pieces, in order.
                match blobs.iter_mut().find(|(a, _)| *a == arg) {
                    Some((_, w)) => w.extend(words),
                    None => blobs.push((arg, words)),
                }
            }
            Event::RequestBegin { req, rec } if rec.func_id == FUNC_AIO => {
                if let Some(rec) = self.linux_aio.begin(rec, req) {
                    self.handle(Event::Call(rec), out);
                    return;
                }
            }
            Event::RequestEnd(end) if end.flags & REQUEST_AIO != 0 => {
                if let Some(rec) = self.linux_aio.end(&end) {
                    self.handle(Event::Call(rec), out);
                    return;
                }
            }
            Event::RequestBegin { req, rec } => {
                if self.uring_pending.len() >= URING_MAX_PENDING {
                    let before = self.uring_pending.len();
                    self.uring_pending.retain(|_, (_, age)| *age == 0);
                    self.requests_unfinished += (before - self.uring_pending.len()) as u64;
                }
                if self.uring_pending.len() < URING_MAX_PENDING {
                    self.uring_pending.insert(req, (rec, 0));
                } else {
                    self.requests_unfinished += 1;
                }
            }
            Event::RequestEnd(end) => {
                // A second completion of a request (a multishot one) finds it gone.
                if let Some((mut rec, _)) = self.uring_pending.remove(&end.req) {
                    rec.ts_end = end.ts_end;
                    rec.ret = end.ret;
                    // The file, and its device in the slot after it (probes.toml validated
                    // that `kfile` is the last argument, with a slot after it).
                    let k =
                        (self.probes.get(rec.func_id as usize)).and_then(|p| p.arg(ArgKind::KFile));
                    if let Some(k) = k.filter(|k| k + 1 < rec.args.len()) {
                        rec.args[k] = end.ino;
                        rec.args[k + 1] = u64::from(end.dev);
                    }
                    self.handle(Event::Call(rec), out);
                    return;
                }
            }
            Event::Call(rec) => {
                if self.linux_aio.is_submit(&rec) {
                    for r in self.linux_aio.submitted(&rec) {
                        self.handle(Event::Call(r), out);
                    }
                }
                // Most calls of a trace: their row is made in place here, not moved out of
                // what `call` returns (a copy of some 400 bytes each). A syscall in progress
                // as strata stopped has no return for it to go by.
                let row = if self.plain.get(rec.func_id as usize) == Some(&true)
                    && rec.flags & CALL_UNFINISHED == 0
                {
                    let p = Rc::clone(&self.probes[rec.func_id as usize]);
                    self.plain_transfer(&p, &rec)
                } else {
                    match self.call(&rec) {
                        Some(row) => row,
                        None => return,
                    }
                };
                let p = &self.probes[rec.func_id as usize];
                self.summary.add_call(p.layer, p.op, &row);
                self.kernel.call_done(&row);
                let transfer = self.queues_transfers && matches!(p.op, Op::Read | Op::Write);
                let queues = transfer && p.arg(ArgKind::OutRequest).is_some();
                let may_be_queued =
                    transfer && p.layer == Layer::Posix && p.arg(ArgKind::Offset).is_some();
                self.write_released(out);
                if row.file_id.is_none() && self.held_for_file(&rec, &row) {
                    self.adoption(rec.parent_id, rec.pid as i32).rows.push(row);
                    self.bound_adoptions(rec.parent_id);
                } else if queues {
                    for t in self.helpers.request(&row) {
                        self.push_call(out, &t);
                    }
                    self.push_call(out, &row);
                } else if may_be_queued {
                    if let Some(row) = self.helpers.transfer(row) {
                        self.push_call(out, &row);
                    }
                } else {
                    self.push_call(out, &row);
                }
            }
            Event::Proc { event, rec } => {
                self.proc_event(event, &rec);
                self.write_released(out);
            }
            Event::TypeIds { pid, types } => self.dataspaces.types(pid as i32, types),
            Event::Image {
                pid,
                what,
                offset,
                total,
                data,
            } => {
                let pid = pid as i32;
                if let Some(ld_library_path) = self.procs.image(pid, what, offset, total, &data) {
                    // The environment of the exec just handled (records of a process come in
                    // order), for its library search.
                    if let Some(exec) = self.execs.iter_mut().rev().find(|e| e.pid == pid) {
                        exec.ld_library_path = ld_library_path;
                    }
                }
            }
            Event::Kernel { event, rec } => {
                self.kernel.event(event, &rec, &self.clock, &self.files);
            }
            // The daemon's routing; a single run has all its processes' records.
            Event::Job { .. } => {}
        }
        self.collect(out);
    }

    /// Leaves out the records of other strata processes: these (found running at the start)
    /// and those that exec strata from now on.
    pub fn leave_out_peers(&mut self, pids: impl IntoIterator<Item = i32>) {
        self.peers.extend(pids);
        self.peers_left_out = true;
    }

    /// Whether `ev` is another strata process's own record, left out. Such a process is
    /// followed through its forks (`record -- CMD` forks a strata child that then runs CMD),
    /// execs and exit. Kernel events are kept: a block completion runs in whatever task it
    /// interrupts.
    fn peer_record(&mut self, ev: &Event) -> bool {
        let pid = ev.pid() as i32;
        if matches!(ev, Event::Kernel { .. }) || !self.peers.contains(&pid) {
            return false;
        }
        if let Event::Proc { event, rec } = ev {
            match event {
                ProcEvent::NewTask if u64::from(rec.flags) & strata_common::CLONE_THREAD == 0 => {
                    self.peers.push(rec.other as i32);
                }
                ProcEvent::Exec if !peers::runs_strata(pid, &comm(rec)) => {
                    // A traced process from here on, first seen now.
                    self.peers.retain(|&p| p != pid);
                    return false;
                }
                ProcEvent::Exit => self.peers.retain(|&p| p != pid),
                ProcEvent::NewTask | ProcEvent::Exec => {}
            }
        }
        true
    }

    fn keep(&mut self, file_id: Option<i64>, path: Option<&str>) -> bool {
        match &mut self.path_filter {
            None => true,
            Some(f) => f.keep(&self.files, file_id, path),
        }
    }

    fn push_call(&mut self, out: &mut Dataset, row: &CallRow) {
        let keep = match row.file2_id {
            // A copy concerns both its files.
            Some(to) => {
                self.keep(Some(to), None) || row.file_id.is_some_and(|f| self.keep(Some(f), None))
            }
            None => self.keep(row.file_id, row.path.as_deref()),
        };
        if keep {
            if self.path_filter.is_some() && row.file2_id.is_some() {
                // The file outside the paths gets its row too.
                for id in [row.file_id, row.file2_id].into_iter().flatten() {
                    if self.keep(Some(id), None) {
                        continue;
                    }
                    match self.withheld.remove(&id) {
                        Some(r) => out.files.push(r),
                        None => {
                            if self.wanted_files.len() >= WITHHELD_FILES {
                                self.wanted_files.clear();
                            }
                            self.wanted_files.insert(id);
                        }
                    }
                }
            }
            out.calls.push(row);
        }
    }

    /// Moves finished handle, file and process rows into the dataset. Inlined: most calls
    /// finish nothing, and the checks cost less than a call (whose saving and restoring of
    /// registers was 19 instructions of an event's 2,100).
    #[inline(always)]
    fn collect(&mut self, out: &mut Dataset) {
        if !(self.files.new_rows.is_empty()
            && self.files.mounts.new_rows.is_empty()
            && self.handles.done.is_empty()
            && !self.procs.has_done()
            && self.kernel.block_rows.is_empty()
            && self.kernel.page_rows.is_empty())
        {
            self.collect_rows(out);
        }
    }

    /// The vectors are drained, not taken, so that they keep their room: taken, each next
    /// row allocated one again (a short process's handles, one by one as they close).
    #[inline(never)]
    fn collect_rows(&mut self, out: &mut Dataset) {
        let mut rows = std::mem::take(&mut self.files.new_rows);
        for r in rows.drain(..) {
            if self.keep(Some(r.file_id), None) || self.wanted_files.remove(&r.file_id) {
                out.files.push(r);
            } else if self.path_filter.is_some() {
                // Bounded like the files themselves (a node sees millions).
                if self.withheld.len() >= WITHHELD_FILES {
                    self.withheld.clear();
                }
                self.withheld.insert(r.file_id, r);
            }
        }
        self.files.new_rows = rows;
        for r in self.files.mounts.new_rows.drain(..) {
            out.mounts.push(r);
        }
        let mut done = std::mem::take(&mut self.handles.done);
        for r in done.drain(..) {
            if self.keep(r.file_id, None) {
                out.handles.push(r);
            }
        }
        self.handles.done = done;
        for r in self.procs.take_done() {
            self.summary.processes += 1;
            out.processes.push(r);
        }
        for r in std::mem::take(&mut self.kernel.block_rows) {
            if self.keep(r.file_id, None) {
                self.summary.add_block(&r);
                out.block.push(r);
            }
        }
        for r in std::mem::take(&mut self.kernel.page_rows) {
            if self.keep(r.file_id, None) {
                out.pagecache.push(r);
            }
        }
    }

    /// Called once per flush interval: ages out strings of calls that never returned.
    pub fn tick(&mut self, out: &mut Dataset) {
        self.pending_args.retain(|_, p| {
            p.age += 1;
            p.age < STR_MAX_AGE
        });
        let before = self.uring_pending.len();
        self.uring_pending.retain(|_, (_, age)| {
            *age += 1;
            *age < STR_MAX_AGE
        });
        self.requests_unfinished += (before - self.uring_pending.len()) as u64;
        for r in self.linux_aio.tick() {
            self.handle(Event::Call(r), out);
        }
        self.requests_unfinished += std::mem::take(&mut self.linux_aio.unfinished);
        self.give_up_adoptions(|a| {
            a.age += 1;
            a.age >= ADOPTION_MAX_AGE
        });
        self.write_released(out);
        self.kernel.tick(&self.files);
        self.files.mounts.tick();
        for row in self.helpers.tick() {
            self.push_call(out, &row);
        }
        self.ticks += 1;
        if self.ticks.is_multiple_of(SWEEP_TICKS) {
            for pid in self.procs.sweep_gone() {
                self.exited(pid, None);
            }
        }
        self.collect(out);
    }

    /// End of the run: every open handle and live process is written as it stands.
    pub fn finish(&mut self, out: &mut Dataset) {
        self.give_up_adoptions(|_| true);
        self.write_released(out);
        // Still in flight when recording stopped.
        self.requests_unfinished += self.uring_pending.len() as u64;
        self.uring_pending.clear();
        for r in self.linux_aio.finish() {
            self.handle(Event::Call(r), out);
        }
        self.requests_unfinished += std::mem::take(&mut self.linux_aio.unfinished);
        self.handles.drain_all();
        self.procs.drain_all();
        self.kernel.finish(&self.files);
        for row in self.helpers.tick() {
            self.push_call(out, &row);
        }
        self.collect(out);
    }

    fn proc_event(&mut self, event: ProcEvent, rec: &ProcRecord) {
        let ts = self.clock.epoch(rec.ts);
        match event {
            ProcEvent::NewTask => {
                if u64::from(rec.flags) & strata_common::CLONE_THREAD != 0 {
                    return;
                }
                let (parent, child) = (rec.pid as i32, rec.other as i32);
                // A pid taken again, by a traced process (a peer's exit record was lost).
                self.peers.retain(|&p| p != child);
                self.ensure_process(parent);
                // A parent that changed its root since strata last knew (a chroot without
                // an exec): its working directory is named from the new root.
                if self.files.views.fork(parent, child, rec.root) == Seen::Changed {
                    self.procs.set_cwd(parent, crate::views::cwd(parent));
                    self.procs
                        .set_root_dir(parent, self.files.views.root_dir(parent));
                }
                self.procs.fork(parent, child, ts, comm(rec));
                self.handles.fork(parent, child, Some(ts));
                self.files.mounts.fork(parent, child);
            }
            ProcEvent::Exec => {
                let pid = rec.pid as i32;
                self.ensure_process(pid);
                // The kernel's name of the program, for a process gone before /proc could
                // tell it.
                let cwd = self.procs.cwd(pid).map(str::to_string);
                let files = &self.files;
                let kernel_name =
                    || program_path(files, pid, cwd.as_deref(), crate::events::filename(rec)?);
                let ld_library_path = self.procs.exec(pid, comm(rec), kernel_name);
                // The kernel side's reading of the namespace (0 without BTF), else /proc's.
                let ns = match rec.root.mnt_ns {
                    0 => crate::views::mnt_ns(&pid.to_string()),
                    ns => Some(u64::from(ns)),
                };
                self.see_mnt_ns(pid, ns);
                // A chroot or a new mount namespace taken before the exec: the working
                // directory is named from the new root (not known once the process is gone).
                if self.files.views.exec(pid, rec.root) == Seen::Changed {
                    self.procs.set_cwd(pid, crate::views::cwd(pid));
                }
                self.procs.set_root_dir(pid, self.files.views.root_dir(pid));
                self.handles.exec(pid, Some(ts));
                // HDF5 ids of the old image mean nothing in the new one.
                self.dataspaces.forget(pid);
                if self.peers_left_out && peers::runs_strata(pid, &comm(rec)) {
                    // Another strata: done with as a traced process, without a row.
                    self.exited(pid, Some(ts));
                    self.procs.discard(pid);
                    self.peers.push(pid);
                    return;
                }
                self.execs.push(Exec {
                    pid,
                    own_view: self.files.views.get(pid).is_none(),
                    ld_library_path,
                });
            }
            ProcEvent::Exit => self.exited(rec.pid as i32, Some(ts)),
        }
    }

    /// `pid` exited at `ts` (None: when is not known): its rows are final, its state goes.
    fn exited(&mut self, pid: i32, ts: Option<i64>) {
        self.handles.exit(pid, ts);
        self.procs.exit(pid, ts);
        self.dataspaces.forget(pid);
        self.nc_vars.forget(pid);
        self.files.forget_process(pid);
        self.xfer_modes.retain(|k, _| k.0 != pid);
        self.collective_opens.retain(|k, _| k.0 != pid);
        self.give_up_adoptions(|a| a.pid == pid);
    }

    /// Releases the handles of the adoptions `stale` selects: they are written without the
    /// parent their enclosing call would have given them.
    fn give_up_adoptions(&mut self, mut stale: impl FnMut(&mut Adoption) -> bool) {
        let keys: Vec<u64> = self
            .adoptions
            .iter_mut()
            .filter_map(|(k, a)| stale(a).then_some(*k))
            .collect();
        for k in keys {
            if let Some(a) = self.adoptions.remove(&k) {
                for h in a
                    .handles
                    .into_iter()
                    .chain(a.closed.into_iter().map(|c| c.1))
                {
                    self.handles.set_adoption_pending(h, false);
                }
                self.released.extend(a.rows);
            }
        }
    }

    /// The path of a dirfd-relative name, made absolute; as given when the directory it is
    /// relative to is not known.
    fn abs_path(&mut self, pid: i32, dirfd: Option<i32>, path: &str) -> String {
        if path.starts_with('/') {
            return files::absolute(None, path);
        }
        let base = match dirfd {
            // A directory opened before tracing is asked of /proc, like any such fd.
            Some(fd) if fd != AT_FDCWD => self
                .fd_handle(pid, fd)
                .and_then(|h| self.handles.get(h))
                .and_then(|h| h.row.path.clone()),
            _ => self.procs.cwd(pid).map(str::to_string),
        };
        match base {
            Some(base) => files::absolute(Some(&base), path),
            None => path.to_string(),
        }
    }

    /// A successful chdir (a name) or fchdir (a directory's fd): the process's new working
    /// directory, with symbolic links resolved like the kernel does, where it still can be.
    fn chdir(&mut self, pid: i32, path: Option<&str>, dir_handle: Option<HandleId>) {
        let dir = match path {
            Some(name) => Some(self.abs_path(pid, None, name)),
            None => dir_handle
                .and_then(|h| self.handles.get(h))
                .and_then(|h| h.row.path.clone()),
        };
        // Not known (a name strata could not read): /proc is asked at the next use.
        let dir = dir
            .filter(|d| d.starts_with('/'))
            .map(|d| self.files.resolved(pid, &d).unwrap_or(d));
        self.procs.set_cwd(pid, dir);
    }

    /// Makes sure `pid` is known. A process that started before tracing (`--pid`, `--all`)
    /// has its standard fds taken as handles at once, while /proc still shows them: the
    /// children it forks inherit them, and a short child closes them (`fclose(stdout)` at
    /// its exit) before its calls on them are handled, when /proc no longer shows them.
    pub fn ensure_process(&mut self, pid: i32) {
        let clock = self.clock;
        if self.procs.ensure(pid, |t| clock.epoch(t)) {
            self.files.views.see(pid);
            self.procs.set_root_dir(pid, self.files.views.root_dir(pid));
            self.see_mnt_ns(pid, crate::views::mnt_ns(&pid.to_string()));
            for fd in 0..3 {
                self.fd_handle(pid, fd);
            }
        }
    }

    /// `pid` is in mount namespace `ns`: its row says so, and the namespace's mounts are
    /// written (those mounted since it was last looked at, for a namespace seen before).
    fn see_mnt_ns(&mut self, pid: i32, ns: Option<u64>) {
        self.procs.set_mnt_ns(pid, ns);
        if let Some(ns) = ns {
            self.files.mounts.enter(pid, ns);
        }
    }

    /// The handle of an fd, created on first use for fds opened before tracing (stdin, ...).
    fn fd_handle(&mut self, pid: i32, fd: i32) -> Option<HandleId> {
        if fd < 0 {
            return None;
        }
        if let Some(h) = self.handles.lookup(pid, Raw::Fd(fd)) {
            return Some(h);
        }
        let link = std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).ok()?;
        let path = files::os_text(link);
        let file_id = self.files.resolve(pid, Some(fd), &path);
        Some(self.handles.create(NewHandle::unopened(
            pid,
            Raw::Fd(fd),
            Layer::Posix.as_str(),
            "fd",
            Some(file_id),
            Some(path),
        )))
    }

    /// The fds a process strata started and holds before its exec will keep: the standard
    /// ones (0, 1, 2) and any other its launcher left open without close-on-exec (a batch
    /// script's `exec 3> log`, a parent's pipe), as fd handles named by their files now,
    /// which its descendants inherit. A short job is gone before its first call on them is
    /// handled, and /proc with it. Where one is a regular file (`job > out.txt`), its position
    /// and O_APPEND come from /proc too, so that the job's writes to it have their offsets.
    /// strata's own fds in the held child are all close-on-exec.
    pub fn inherited_fds(&mut self, pid: i32) {
        let mut fds: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect();
        fds.sort_unstable();
        for fd in fds {
            let info = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}"));
            let Some((pos, flags)) = info.ok().as_deref().and_then(fdinfo_pos_flags) else {
                continue;
            };
            if fd > 2 && flags & libc::O_CLOEXEC as u64 != 0 {
                continue;
            }
            let Some(h) = self.fd_handle(pid, fd) else {
                continue;
            };
            let regular = std::fs::metadata(format!("/proc/{pid}/fd/{fd}"))
                .is_ok_and(|m| m.file_type().is_file());
            if regular {
                self.handles.set_pos(h, Some(pos));
                self.handles
                    .set_append(h, flags & libc::O_APPEND as u64 != 0);
            }
        }
    }

    /// A stream strata did not see opened (stdout, stderr, stdin; any opened before `--pid`
    /// attached): a handle made at its first call, above the fd the kernel side read from
    /// it (probes.toml `stdio_fileno_offset`), and named by that fd's file.
    fn unseen_stream(
        &mut self,
        pid: i32,
        p: &Probe,
        rec: &CallRecord,
        stream: u64,
        beneath: &[crate::handles::Beneath],
    ) -> Option<HandleId> {
        if p.stdio_fileno_offset.is_none() || stream == 0 {
            return None;
        }
        // Past the last argument: the fd, or u64::MAX where the stream was unreadable.
        let fd = i32::try_from(*rec.args.get(p.args.len())?).ok()?;
        let closed = self
            .adoptions
            .get(&rec.call_id)
            .and_then(|a| a.closed.iter().rev().find(|c| c.0 == fd).map(|c| c.1));
        let below = closed.or_else(|| self.fd_handle(pid, fd));
        let (file_id, path) = below
            .and_then(|h| self.handles.get(h))
            .map(|h| (h.row.file_id, h.row.path.clone()))
            .unwrap_or_default();
        // Where strata knows the fd's position (opened while traced, or a standard fd of a
        // command it started), the stream's first call finds it there: its first I/O, since
        // a stream of a process traced from its start is seen from its first call on. That
        // is where the first call beneath this one on the fd began, if one did (its row came
        // first and moved the fd on).
        let pos = below.and_then(|h| match beneath.iter().find(|b| b.handle == h) {
            Some(b) => b.offset,
            None => self.handles.pos(h),
        });
        // Over an fd that appends, so does the stream (its writes go to the file's end).
        let appends = below.is_some_and(|h| self.handles.appends(h));
        let pos = pos.filter(|_| !appends);
        let id = self.handles.create(NewHandle {
            pos,
            ..NewHandle::unopened(
                pid,
                Raw::Lib(p.layer.as_str(), stream),
                p.layer.as_str(),
                "stream",
                file_id,
                path,
            )
        });
        if appends {
            self.handles.set_append(id, true);
        }
        // As a stream fopen made: the fd beneath it.
        if let Some(fd) = below.and_then(|h| self.handles.get_mut(h)) {
            fd.row.parent_handle_id.get_or_insert(id);
        }
        Some(id)
    }

    /// Whether the fd beneath stream handle `s`, as the kernel side read it at the call's
    /// entry, names another file than the stream was made on: another fd was dup'ed onto it
    /// since. Only for the calls that move or flush a stream: an open or close changes the fd
    /// itself (freopen's number may be reused by its new open).
    fn stream_moved(&self, pid: i32, p: &Probe, rec: &CallRecord, s: HandleId) -> bool {
        if p.stdio_fileno_offset.is_none()
            || !matches!(p.op, Op::Read | Op::Write | Op::Flush | Op::Seek | Op::Tell)
        {
            return false;
        }
        let Some(fd) = (rec.args.get(p.args.len())).and_then(|v| i32::try_from(*v).ok()) else {
            return false;
        };
        let file = |h: Option<HandleId>| h.and_then(|h| self.handles.get(h)?.row.file_id);
        match (file(Some(s)), file(self.handles.lookup(pid, Raw::Fd(fd)))) {
            (Some(stream), Some(now)) => stream != now,
            _ => false,
        }
    }

    /// The bytes a call that does not say what it read (fscanf) consumed from its stream:
    /// what the stream had buffered when it began, plus what read(2)s on the stream's fd
    /// beneath it refilled, less what it had buffered when it returned. None where any of
    /// these is unknown, and for a stream without an fd (fmemopen), refilled by no read. The
    /// probe has its `stdio_read_offset` only where the read syscall is recorded
    /// ([`crate::probes::select_layers`]): only then are all the refills seen.
    fn scanned(
        &self,
        pid: i32,
        p: &Probe,
        rec: &CallRecord,
        buffered_end: Option<u64>,
        beneath: &[crate::handles::Beneath],
    ) -> Option<i64> {
        // The kernel side's slots after the arguments: the stream's fd, then what it had
        // buffered at entry (u64::MAX: unreadable).
        let fd = i32::try_from(*rec.args.get(p.args.len())?).ok()?;
        let buffered_begin = *rec.args.get(p.args.len() + 1)?;
        if p.stdio_read_offset.is_none() || buffered_begin == u64::MAX {
            return None;
        }
        let refilled = match self.handles.lookup(pid, Raw::Fd(fd)) {
            Some(h) => beneath
                .iter()
                .find(|b| b.handle == h)
                .map_or(Some(0), |b| b.read)?,
            None => 0,
        };
        let consumed = (buffered_begin as i64)
            .checked_add(refilled)?
            .checked_sub(i64::try_from(buffered_end?).ok()?)?;
        (consumed >= 0).then_some(consumed)
    }

    /// Where a call on MPI file `h`'s shared file pointer began, in etypes of the view: the
    /// first transfer beneath it on the file, where the transfers there moved exactly the
    /// call's `bytes` (the rank wrote or read its own data, as ROMIO does in every such call;
    /// Open MPI's OMPIO has one rank write an ordered call's data for all, and neither that
    /// rank's row nor the others' has an offset), under a view whose positions map to bytes
    /// (see [`Handles::view_position`]).
    fn shared_start(
        &self,
        h: HandleId,
        beneath: &[crate::handles::Beneath],
        write: bool,
        bytes: Option<i64>,
    ) -> Option<i64> {
        let file_of = |id: HandleId| self.handles.get(id).and_then(|x| x.row.file_id);
        let file = file_of(h)?;
        let b = beneath
            .iter()
            .find(|b| b.handle != h && file_of(b.handle) == Some(file))?;
        let moved = if write { b.written } else { b.read };
        if moved.is_none() || moved != bytes {
            return None;
        }
        self.handles.view_position(h, b.offset?)
    }

    fn call(&mut self, rec: &CallRecord) -> Option<CallRow> {
        let p = Rc::clone(self.probes.get(rec.func_id as usize)?);
        if p.internal && p.op == Op::Load {
            log::debug!("process {}: its loader reports its libraries", rec.pid);
            self.loader_reports.push(rec.pid as i32);
            return None;
        }
        let out = (rec.flags & CALL_OUT_VALID != 0).then_some(rec.out);
        if p.internal && p.layer == Layer::Mpiio {
            // A datatype's size (MPI_Type_size_x): argument 0, the size behind the out-pointer.
            let size = out.filter(|_| rec.ret as i32 == 0);
            self.type_sizes.note(rec.parent_id, rec.args[0], size);
            return None;
        }
        if p.internal {
            self.dataspaces
                .internal(p.function(), rec.parent_id, rec.ret);
            return None;
        }
        let pid = rec.pid as i32;
        self.ensure_process(pid);
        let call_id = rec.call_id as i64;
        let ts_end = self.clock.epoch(match rec.flags & CALL_NO_RETURN {
            0 => rec.ts_end,
            _ => rec.ts_begin,
        });
        // The MPICH ABI's requests are `int`s: the kernel read 8 bytes behind the pointer.
        let int_handles = rec.flags & CALL_INT_HANDLES != 0;
        let arg = |k: ArgKind| {
            let v = rec.args[p.arg(k)?];
            Some(match k {
                ArgKind::RequestRef if int_handles => v & u64::from(u32::MAX),
                _ => v,
            })
        };
        let is_syscall = matches!(p.target, Target::Syscall(_));
        // Syscalls and io_uring requests fail with a negative errno and act on the process's
        // descriptors alike.
        let is_request = matches!(p.target, Target::Request { .. });
        let kernel_ret = is_syscall || is_request;
        let ret = if p.ret_int {
            i64::from(rec.ret as i32)
        } else {
            rec.ret
        };

        // Strings and arrays, in argument order.
        // Most calls have no strings or arrays: no lookup for them.
        let pending = if self.pending_args.is_empty() {
            PendingArgs::default()
        } else {
            self.pending_args.remove(&rec.call_id).unwrap_or_default()
        };
        let mut strs = pending.strs;
        // Empty strings come as bits of the call's record, not as records of their own.
        let empty = (rec.flags & CALL_EMPTY_STRS) >> CALL_EMPTY_STRS_SHIFT;
        if empty != 0 {
            if strs.capacity() == 0 {
                strs = self.spare_strs.pop().unwrap_or_default();
            }
            strs.extend(
                (0..strata_common::MAX_ARGS as u32)
                    .filter(|i| empty & (1 << i) != 0)
                    .map(|i| (i, Some(String::new()))),
            );
        }
        let blobs = pending.blobs;
        strs.sort_by_key(|(a, _)| *a);
        // Most calls (reads, writes) came with no strings: nothing to look for.
        let (path, path2, modestr, mut strs_out) = if strs.is_empty() {
            (None, None, None, Vec::new())
        } else {
            // Each string is taken, not copied: an argument has one kind.
            let mut take = |kind: ArgKind, nth: usize| -> Option<String> {
                let (i, _) = (p.args.iter().enumerate())
                    .filter(|(_, k)| **k == kind)
                    .nth(nth)?;
                let (_, s) = strs.iter_mut().find(|(a, _)| *a as usize == i)?;
                s.take()
            };
            // Object names (HDF5 datasets, NetCDF variables) are recorded like paths.
            let path = take(ArgKind::Path, 0).or_else(|| take(ArgKind::Name, 0));
            let path2 = take(ArgKind::Path, 1);
            let modestr = take(ArgKind::ModeStr, 0);
            let mut strs_out = Vec::new();
            for (i, _) in (p.args.iter().enumerate()).filter(|(_, k)| **k == ArgKind::Str) {
                if let Some((_, s)) = strs.iter_mut().find(|(a, _)| *a as usize == i) {
                    strs_out.push(s.take().unwrap_or_default());
                }
            }
            (path, path2, modestr, strs_out)
        };
        if strs.capacity() > 0 && self.spare_strs.len() < SPARE_STRS {
            strs.clear();
            self.spare_strs.push(strs);
        }
        // The name probes.toml gives the value that let the call be recorded (`FICLONE`).
        if let Some(name) = p.only.as_ref().and_then(|o| o.name_of(rec.args[o.arg])) {
            strs_out.push(name.to_string());
        }

        // A call recorded at its entry alone (a stream without an fd), or still in progress
        // as its thread ended or as strata stopped, or left by a longjmp: its return is
        // unknown, and it makes no handle and moves no position, as a failed call.
        let returned = rec.flags & (CALL_NO_RETURN | CALL_UNFINISHED) == 0;
        let failed = !returned || crate::failures::failed(&p, ret, is_syscall);

        // Calls that move bytes (reads, writes, copies between two fds).
        let moves = matches!(p.op, Op::Read | Op::Write | Op::Copy);
        let size = arg(ArgKind::Size).map(|v| v as i64);
        let count = arg(ArgKind::Count).map(|v| v as i64);
        // MPI: the kernel replaced the datatype handle by the datatype's size (0: unknown),
        // except where handles are integers: then it was asked beneath the call.
        // Sizes asked beneath any call go with its record (HDF5 asks one per H5Dwrite).
        let datatype = arg(ArgKind::Datatype);
        let asked = self.type_sizes.take(rec.call_id, datatype);
        let size = match datatype {
            _ if size.is_some() => size,
            dt if int_handles => asked.or_else(|| dt.and_then(crate::mpi_types::predefined_size)),
            Some(s) if p.datatype_size_offset.is_some() && s > 0 => Some(s as i64),
            _ => None,
        };
        let bytes_requested = match (size, count) {
            (Some(s), Some(c)) => Some(s.saturating_mul(c)),
            (Some(s), None) if moves || p.op == Op::Map || p.arg(ArgKind::Addr).is_some() => {
                Some(s)
            }
            _ if p.ret == RetKind::Char && moves => Some(1),
            _ => None,
        };
        // A syscall's or request's own errno; a failed library call's from beneath it.
        let errno = if !returned {
            None
        } else if kernel_ret {
            (ret < 0).then(|| ret.saturating_neg() as i32)
        } else {
            let outcome = crate::failures::outcome(&p, failed, ret, count, size);
            crate::failures::errno(outcome, self.failures.take(rec.call_id))
        };
        // Why the call around it failed, if it did (a request's failure is its own).
        if !is_request {
            self.failures.note(rec.parent_id, errno.unwrap_or(0));
        }
        // HDF5 and NetCDF: elements selected times the type's size, when strata can know them.
        let nargs = p.args.len().min(rec.args.len());
        let arr = |i: usize| {
            blobs
                .iter()
                .find(|(a, _)| *a as usize == i)
                .map(|(_, w)| w.as_slice())
        };
        let h5_bytes = match p.layer {
            Layer::Hdf5 => self.dataspaces.observe(
                p.function(),
                pid,
                rec.call_id,
                &rec.args[..nargs],
                ret,
                arr,
            ),
            Layer::Netcdf if !failed => {
                self.nc_vars
                    .observe(p.function(), pid, &rec.args[..nargs], out, arr)
            }
            _ => None,
        };
        // A NetCDF-4 transfer strata cannot size (an opened file's variable whose rank was
        // not asked): what the HDF5 transfers it made beneath moved, when all are known.
        let h5_bytes = match p.layer {
            Layer::Netcdf if moves && h5_bytes.is_none() => {
                self.dataspaces.take_beneath(rec.call_id)
            }
            _ => h5_bytes,
        };
        // What the calls beneath a library call did (taken for every library call, to forget
        // what was noted beneath it).
        let from_library = matches!(p.target, Target::Uprobe { .. });
        let beneath = if from_library {
            self.starts_beneath.take(rec.call_id)
        } else {
            Vec::new()
        };
        let scanned = (p.ret == RetKind::Scanned)
            .then(|| self.scanned(pid, &p, rec, out, &beneath))
            .flatten();
        // Text a stdio call moved (fputs's string, fgets's line): its length at return, and
        // puts's newline.
        let text_extra = p.text_extra().filter(|_| moves);
        let moves_text = text_extra.is_some();
        let text = out.and_then(|v| Some((v & !TEXT_UNENDED) as i64 + text_extra?));
        // fgets stops after a newline, at its size less one, or at the end of the file. A
        // shorter line without a newline where no read beneath met the end held a NUL byte,
        // which hides how much more it consumed.
        let text = text.filter(|len| {
            let unended = out.is_some_and(|v| v & TEXT_UNENDED != 0);
            let short = p.op == Op::Read && size.is_some_and(|s| *len < s - 1);
            !(unended && short && self.reads_recorded && !beneath.iter().any(|b| b.at_end))
        });
        let bytes_requested = bytes_requested.or(h5_bytes).or(text);
        let bytes_result = match p.ret {
            _ if !returned => None,
            _ if h5_bytes.is_some() => h5_bytes.map(|b| if failed { 0 } else { b }),
            RetKind::Scanned => scanned,
            _ if moves_text && failed => Some(0),
            _ if text.is_some() => text,
            _ if !moves => None,
            RetKind::Bytes => Some(ret.max(0)),
            RetKind::Count => Some(ret.max(0).saturating_mul(size.unwrap_or(1))),
            RetKind::Char => Some(i64::from(!failed)),
            // An MPI transfer moved what its MPI_Status counts (a read at the end of the file
            // less than asked), where the program passed one.
            RetKind::MpiStatus if !failed && out.is_some() && p.arg(ArgKind::Status).is_some() => {
                out.map(|v| crate::mpi_types::status_bytes(v, int_handles))
            }
            // MPI-IO without a status (MPI_STATUS_IGNORE), and a library transfer that
            // returns a status (H5Dwrite_chunk), moves all it was asked to, or fails.
            RetKind::MpiStatus | RetKind::Status => {
                bytes_requested.map(|b| if failed { 0 } else { b })
            }
            _ => None,
        };
        // Dataset transfers only: attribute reads inside a NetCDF transfer are its metadata.
        if p.layer == Layer::Hdf5 && moves && rec.parent_id != 0 && p.function().starts_with("H5D")
        {
            self.dataspaces.note_beneath(rec.parent_id, bytes_result);
        }

        // The handle operated on. An io_uring request on a registered-file slot names no
        // descriptor, and an open into one returns none.
        let in_slot = arg(ArgKind::Slot).is_some_and(|s| s != 0);
        let fd_arg = arg(ArgKind::Fd).filter(|_| !in_slot).map(|v| v as i32);
        let lib_raw = |v: u64| Raw::Lib(p.layer.as_str(), v);
        let lib_arg = arg(ArgKind::Handle)
            .or_else(|| arg(ArgKind::HandleRef))
            .or_else(|| arg(ArgKind::RequestRef));
        // close_range names a range of fds: its handles are found below.
        let range_last = arg(ArgKind::FdLast).map(|v| v as u32);
        // An address inside a file mapping (msync, munmap): the mapping and the file offset.
        let addr = arg(ArgKind::Addr);
        let mapping = addr.and_then(|a| self.handles.mapping_at(pid, a));
        let mut handle = match (fd_arg, lib_arg) {
            _ if range_last.is_some() => None,
            _ if addr.is_some() => mapping.map(|m| m.id),
            (Some(fd), _) if errno != Some(EBADF as i32) => self.fd_handle(pid, fd),
            // EBADF: not open, or not open for this (a read on a write-only fd, a copy onto
            // an O_APPEND one): the handle strata knows, and none from /proc, which would
            // name whatever has the number by now.
            (Some(fd), _) => self.handles.lookup(pid, Raw::Fd(fd)),
            (None, Some(h)) => match self.handles.lookup(pid, lib_raw(h)) {
                // Its fd names another file now (a dup2 onto stdout's, to a log): the
                // stream made on the old one ends, and one on the new file begins here.
                Some(s) if self.stream_moved(pid, &p, rec, s) => {
                    let ts = self.clock.epoch(rec.ts_begin);
                    self.handles.destroy(s, None, Some(ts));
                    self.unseen_stream(pid, &p, rec, h, &beneath)
                }
                Some(s) => Some(s),
                None => self.unseen_stream(pid, &p, rec, h, &beneath),
            },
            _ => None,
        };
        // The second fd of a copy (copy_file_range's and sendfile's destination).
        let mut handle2 = arg(ArgKind::Fd2).and_then(|fd| match errno {
            Some(e) if e == EBADF as i32 => self.handles.lookup(pid, Raw::Fd(fd as i32)),
            _ => self.fd_handle(pid, fd as i32),
        });
        // Whether a transfer is collective is set beforehand: on an HDF5 transfer property
        // list (H5Pset_dxpl_mpio), or per NetCDF variable (nc_var_par_access).
        let mut collective = p.collective;
        let scope = match (arg(ArgKind::Plist), arg(ArgKind::Varid)) {
            (Some(plist), _) => Some((pid, 0, plist)),
            (None, Some(varid)) => lib_arg.map(|ncid| (pid, ncid, varid)),
            _ => None,
        };
        if let Some(scope) = scope {
            match arg(ArgKind::XferMode) {
                Some(mode) => {
                    self.xfer_modes.insert(scope, mode);
                }
                None => collective |= self.xfer_modes.get(&scope) == Some(&XFER_COLLECTIVE),
            }
        }

        // fstatat(fd, "", AT_EMPTY_PATH) and friends operate on the dirfd itself, as does
        // utimensat with a null path (futimens).
        let null_path = is_syscall && p.op == Op::Setattr && arg(ArgKind::Path) == Some(0);
        if handle.is_none() && (path.as_deref() == Some("") || null_path) {
            if let Some(dirfd) = arg(ArgKind::Dirfd) {
                handle = self.fd_handle(pid, dirfd as i32);
            }
        }
        // Offsets given through a pointer, read at return: the offset used is that less what
        // moved. A null pointer means the fd's position.
        let moved = bytes_result.unwrap_or(0);
        let by_ref = |k: ArgKind| {
            arg(k)
                .filter(|v| *v != DEREF_FAILED)
                .map(|v| (v as i64).wrapping_sub(moved))
        };
        let mut offset = arg(ArgKind::Offset)
            // Offset -1: the file's position, followed below, for an io_uring request and
            // for a preadv2 or pwritev2 that succeeded (other syscalls refuse it).
            .filter(|v| !(*v == u64::MAX && (is_request || is_syscall && !failed)))
            .or_else(|| arg(ArgKind::KPos))
            .map(|v| v as i64)
            .or_else(|| by_ref(ArgKind::OffsetRef))
            .or_else(|| Some(mapping?.offset_of(addr?)));
        let mut offset2 = by_ref(ArgKind::Offset2Ref);
        // A kernel `struct file *`: the kernel side read its inode number, and its file
        // system's device into the slot after the last argument.
        let kfile = p.arg(ArgKind::KFile).and_then(|i| {
            let (ino, dev) = (rec.args[i], *rec.args.get(p.args.len())?);
            (ino != 0).then(|| {
                self.files
                    .by_inode(Some(crate::kernel::user_dev(dev as u32)), ino)
            })?
        });
        // Taken before the call's effect: a close still names the file it closed.
        let file_of = |handles: &Handles, h: Option<HandleId>| {
            h.and_then(|h| handles.get(h)).and_then(|h| h.row.file_id)
        };
        let mut file_before = file_of(&self.handles, handle);
        // Calls that name a path and open nothing: the file strata knows there, if any.
        if file_before.is_none()
            && matches!(
                p.op,
                Op::Stat
                    | Op::Access
                    | Op::Unlink
                    | Op::Rename
                    | Op::Truncate
                    | Op::Link
                    | Op::Setattr
                    | Op::Xattr
            )
        {
            let dirfd = arg(ArgKind::Dirfd).map(|v| v as i32);
            // A name of one of the process's own fds, or none with AT_EMPTY_PATH (a linkat
            // naming an O_TMPFILE file): that fd's file.
            let fd = match path.as_deref() {
                Some("") => dirfd.filter(|&fd| fd != AT_FDCWD),
                Some(name) => files::own_fd(name),
                None => None,
            };
            if let Some(fd) = fd {
                let h = self.fd_handle(pid, fd);
                file_before = file_of(&self.handles, h);
            } else if let Some(name) = path.as_deref().filter(|n| !n.is_empty()) {
                let abs = self.abs_path(pid, dirfd, file_name(&p, name));
                file_before = self.files.at_path(abs);
            }
        }
        let mut file2 = file_of(&self.handles, handle2);
        let mut created: Option<HandleId> = None;
        // The two ends of a pipe the call made.
        let mut pipe_ends: Option<[HandleId; 2]> = None;
        let mut explicit_parent = false;
        let ts_begin = self.clock.epoch(rec.ts_begin);
        // A library call on a handle the calls beneath it moved begins where the first of
        // them did.
        let start_beneath = beneath
            .iter()
            .find(|b| Some(b.handle) == handle)
            .map(|b| b.offset);
        // A descriptor a message passed, the row's second handle: the sender's, or the one
        // the receiver got.
        if let Some(fd) = arg(ArgKind::Rights)
            .map(|v| v as u32 as i32)
            .filter(|fd| !failed && *fd >= 0)
        {
            handle2 = self.passed_fd(&p, rec, fd, call_id, ts_begin);
            file2 = file_of(&self.handles, handle2);
        }
        match p.op {
            // The thin libc wrappers: the fd belongs to the posix call beneath.
            Op::Open | Op::Dup if p.layer == Layer::Libc && !failed => {
                handle = self.handles.lookup(pid, Raw::Fd(ret as i32));
            }
            // Into a registered-file slot: no descriptor, but the file is the path's.
            Op::Open if in_slot && !failed => {
                if let Some(name) = path.as_deref() {
                    let dirfd = arg(ArgKind::Dirfd).map(|v| v as i32);
                    let abs = self.abs_path(pid, dirfd, name);
                    file_before = Some(self.files.resolve(pid, None, &abs));
                }
            }
            Op::Open | Op::Dup if p.layer == Layer::Libc || in_slot => {}
            Op::Open | Op::Reopen | Op::Dup | Op::Fcntl if !failed => {
                if p.op == Op::Reopen {
                    if let Some(h) = handle.take() {
                        self.handles.destroy(h, Some(call_id), Some(ts_end));
                    }
                }
                let is_dup = p.op == Op::Dup
                    || (p.op == Op::Fcntl
                        && matches!(arg(ArgKind::Cmd), Some(F_DUPFD | F_DUPFD_CLOEXEC)));
                if p.op == Op::Fcntl && !is_dup {
                    // Other fcntl commands create nothing; F_SETFD sets close-on-exec,
                    // F_SETFL (among others) O_APPEND.
                    match (arg(ArgKind::Cmd), handle, arg(ArgKind::Int)) {
                        (Some(F_SETFD), Some(h), Some(v)) => {
                            self.handles.set_cloexec(h, v & FD_CLOEXEC != 0);
                        }
                        (Some(F_SETFL), Some(h), Some(v)) => {
                            self.handles.set_append(h, v & libc::O_APPEND as u64 != 0);
                        }
                        _ => {}
                    }
                } else if is_dup && arg(ArgKind::Newfd).is_some_and(|n| Some(n as i32) == fd_arg) {
                    // dup2(fd, fd) does nothing, not even clear the fd's close-on-exec flag.
                } else if is_dup {
                    // The original of a copy strata never saw made (a pseudo-terminal's peer
                    // from the TIOCGPTPEER ioctl, which mpirun makes each rank's stdout of)
                    // is named as the kernel side read the copy, the same open file: a
                    // handle of its own, so that its own calls and its close are on it.
                    let src = match (handle, fd_arg) {
                        (None, Some(old)) if p.fd_inode => {
                            let (path, file_id) = self.made_fd_file(&p, rec, ret as i32, None);
                            Some(self.handles.create(NewHandle::unopened(
                                pid,
                                Raw::Fd(old),
                                p.layer.as_str(),
                                "fd",
                                file_id,
                                path,
                            )))
                        }
                        _ => handle,
                    };
                    if let Some(newfd) = arg(ArgKind::Newfd).map(|v| v as i32) {
                        if Some(newfd) != fd_arg {
                            if let Some(old) = self.handles.lookup(pid, Raw::Fd(newfd)) {
                                self.handles.destroy(old, Some(call_id), Some(ts_end));
                            }
                        }
                    }
                    let (file_id, path, flags) = src
                        .and_then(|s| self.handles.get(s))
                        .map(|s| (s.row.file_id, s.row.path.clone(), s.row.flags))
                        .unwrap_or_default();
                    explicit_parent = src.is_some();
                    created = Some(self.handles.create(NewHandle {
                        pid,
                        raw: Raw::Fd(ret as i32),
                        layer: p.layer.as_str(),
                        kind: "fd",
                        parent: src,
                        file_id,
                        path,
                        mode: None,
                        flags: arg(ArgKind::Flags).map(|v| v as i64).or(flags),
                        call_id: Some(call_id),
                        ts: Some(ts_begin),
                        share_with: src,
                        pos: None,
                    }));
                    // The new fd is close-on-exec only if the dup says so, whatever the
                    // original's open flags.
                    let cloexec = arg(ArgKind::Cmd) == Some(F_DUPFD_CLOEXEC)
                        || arg(ArgKind::Flags).is_some_and(|f| f & libc::O_CLOEXEC as u64 != 0);
                    if let Some(c) = created {
                        self.handles.set_cloexec(c, cloexec);
                    }
                } else {
                    created = Some(self.open(&p, rec, path.as_deref(), modestr, handle, ts_begin));
                    // Opened from an object that waits for its file (an attribute of a dataset
                    // opened in an iteration's callback): waits with it.
                    explicit_parent = handle.is_some_and(|h| !self.waits_for_file(h));
                }
                handle = created.or(handle);
            }
            Op::Close if !(kernel_ret && errno == Some(EBADF as i32)) => match range_last {
                // close_range: every fd of the range strata knows (CLOSE_RANGE_CLOEXEC
                // only marks them); the row names the handle when there was one.
                Some(last) if !failed => {
                    let first = arg(ArgKind::Fd).unwrap_or(0) as u32;
                    let ids = self.handles.fds_in(pid, first, last);
                    if let [one] = ids[..] {
                        handle = Some(one);
                        file_before = file_of(&self.handles, handle);
                    }
                    let mark = arg(ArgKind::Flags).is_some_and(|f| f & CLOSE_RANGE_CLOEXEC != 0);
                    for id in ids {
                        if mark {
                            self.handles.set_cloexec(id, true);
                        } else {
                            self.handles.destroy(id, Some(call_id), Some(ts_end));
                        }
                    }
                }
                Some(_) => {}
                None => {
                    // A handle with references counted (H5Iinc_ref) outlives as many
                    // closes; a close that returns the count left (H5Idec_ref) says so itself.
                    let left = (p.ret == RetKind::Refs && !failed).then_some(ret);
                    match (handle, left) {
                        (Some(h), Some(left)) if left > 0 => self.handles.set_refs(h, left),
                        (Some(h), _) if left.is_some() || self.handles.drop_ref(h) => {
                            // Held from here: its row is written when it is let go.
                            let unopened = self
                                .handles
                                .get(h)
                                .is_some_and(|h| h.row.created_by_call_id.is_none());
                            let hold = fd_arg.filter(|_| unopened && rec.parent_id != 0);
                            if hold.is_some() {
                                self.handles.set_adoption_pending(h, true);
                            }
                            self.handles.destroy(h, Some(call_id), Some(ts_end));
                            if let Some(fd) = hold {
                                self.hold_closed(rec.parent_id, pid, vec![(fd, h)]);
                            }
                        }
                        _ => {}
                    }
                }
            },
            // A call that adds a reference returns the count (`ret = "refs"`: H5Iinc_ref), and
            // as many closes (H5Oclose, H5Dclose, H5Idec_ref, ...) as it has close the handle.
            // NetCDF keeps the datasets it opens by H5Oopen so, and closes them with H5Oclose
            // once inside nc_open.
            Op::Meta if p.ret == RetKind::Refs && !failed => {
                if let Some(h) = handle {
                    self.handles.set_refs(h, ret);
                }
            }
            // A new view: its etype (the datatype argument's size), the pointer at 0, and
            // its displacement where the filetype (the first pointer) is the etype. Only
            // the MPICH ABI's handles can be compared: Open MPI's etype argument holds the
            // size read from its object at entry.
            Op::Meta if crate::mpi_pointer::sets_view(p.function()) && !failed => {
                if let Some(h) = handle {
                    let types = datatype.zip(arg(ArgKind::Ptr));
                    let linear = int_handles && types.is_some_and(|(e, f)| e as u32 == f as u32);
                    self.handles.set_view(h, size, offset.filter(|_| linear));
                }
            }
            // H5Olink: an object made with no name is named by the link it is given.
            Op::Meta if p.names_handle && !failed => {
                if let (Some(h), Some(name)) = (handle, path.as_deref()) {
                    self.handles.name_if_unnamed(h, name);
                }
            }
            Op::Read | Op::Write | Op::Copy => {
                // A request on a registered file (IOSQE_FIXED_FILE) at the file's position
                // moved an open file description strata cannot tell from the others on the
                // file: the process's fds there lose their positions (until a seek) rather
                // than keep wrong ones.
                if is_request && fd_arg == Some(-1) && arg(ArgKind::Offset) == Some(u64::MAX) {
                    if let (Some(file), false) = (kfile, failed) {
                        self.handles.lose_positions(pid, file);
                    }
                }
                // Linux appends a pwrite to an O_APPEND fd, whatever its offset (a plain
                // write's is found below, appending or not: no lookup for it here).
                if p.op == Op::Write
                    && kernel_ret
                    && offset.is_some()
                    && handle.is_some_and(|h| self.handles.appends(h))
                {
                    offset = None;
                }
                // pwritev2's RWF_APPEND: the data goes to the file's end, and a write at the
                // file's position leaves it there, unknown.
                let rwf_append = p.op == Op::Write
                    && is_syscall
                    && arg(ArgKind::Flags).is_some_and(|f| f & libc::RWF_APPEND as u64 != 0);
                if rwf_append {
                    if let (Some(h), None, false) = (handle, offset, failed) {
                        self.handles.set_pos(h, None);
                    }
                    offset = None;
                } else if let Some(start) = start_beneath {
                    offset = offset.or(start);
                } else if p.layer == Layer::Mpiio && crate::mpi_pointer::shared(p.function()) {
                    // The shared file pointer, which all ranks move: where the rank's own
                    // transfer beneath began.
                    offset = handle.and_then(|h| {
                        self.shared_start(h, &beneath, p.op == Op::Write, bytes_result)
                    });
                } else {
                    // An MPI transfer that moved less than it asked leaves its file pointer
                    // where the MPI puts it: past what moved (ROMIO) or what was asked (OMPIO).
                    let moved = match p.layer {
                        Layer::Mpiio => bytes_result.filter(|b| Some(*b) == bytes_requested),
                        _ => bytes_result,
                    };
                    // A copy reads its first fd and writes its second; a descriptor a
                    // message passed moves nothing.
                    let writes = [p.op == Op::Write, true];
                    let copied = handle2.filter(|_| p.arg(ArgKind::Rights).is_none());
                    for ((h, at), write) in [(handle, &mut offset), (copied, &mut offset2)]
                        .into_iter()
                        .zip(writes)
                    {
                        if let (Some(h), None) = (h, *at) {
                            *at = self.handles.advance(h, moved, failed, write);
                        }
                    }
                }
                // Syscalls and library calls are beneath library calls (io_uring requests and
                // kernel functions beneath syscalls).
                if let (Some(h), true) = (handle, is_syscall || from_library) {
                    let only = |op: Op| if p.op == op { bytes_result } else { Some(0) };
                    let moved = (only(Op::Read), only(Op::Write));
                    let at_end = p.op == Op::Read && bytes_result == Some(0) && !failed;
                    self.starts_beneath
                        .note(rec.parent_id, h, offset, moved, at_end);
                }
            }
            // MPI_File_seek_shared: the shared file pointer, where SEEK_SET puts it.
            Op::Seek if p.layer == Layer::Mpiio && crate::mpi_pointer::shared(p.function()) => {
                let whence = arg(ArgKind::Whence).and_then(crate::mpi_pointer::whence);
                offset = offset.filter(|_| whence == Some(SEEK_SET) && !failed);
            }
            Op::Seek | Op::Tell => {
                if let Some(h) = handle {
                    // A seek that failed (lseek to a hole or data past the end: ENXIO; to
                    // before the start: EINVAL) left the position where it was.
                    let new = if failed {
                        self.handles.pos(h)
                    } else if p.ret == RetKind::Position {
                        Some(ret)
                    } else if p.op == Op::Tell {
                        // fgetpos: the position it wrote (its `fpos_t` begins with it); a
                        // question moves nothing.
                        let written = p.arg(ArgKind::OutInt64).and(out).map(|v| v as i64);
                        written.or_else(|| self.handles.pos(h))
                    } else if p.ret == RetKind::Char {
                        // ungetc: the character pushed back is read again, one back.
                        self.handles.pos(h).map(|p| p - 1).filter(|p| *p >= 0)
                    } else {
                        let whence = match p.layer {
                            Layer::Mpiio => {
                                arg(ArgKind::Whence).and_then(crate::mpi_pointer::whence)
                            }
                            _ => arg(ArgKind::Whence),
                        };
                        match (whence, offset) {
                            // rewind(stream): the stream is its only argument.
                            (None, None) if p.args.len() == 1 && p.ret == RetKind::None => Some(0),
                            (Some(SEEK_SET), Some(o)) => Some(o),
                            // fsetpos: to the position its `fpos_t` holds.
                            (None, Some(o)) if p.arg(ArgKind::OffsetRef).is_some() => Some(o),
                            (Some(SEEK_CUR), Some(o)) => self.handles.pos(h).map(|p| p + o),
                            _ => None,
                        }
                    };
                    // lseek on a character device succeeds and moves nothing.
                    let positioned = file_before.is_none_or(|f| self.files.has_position(f));
                    self.handles.set_pos(h, new.filter(|_| positioned));
                    // lseek's row has its result: none where it failed.
                    offset = new.filter(|_| !(failed && p.ret == RetKind::Position));
                }
            }
            Op::Map if !failed => {
                let (file_id, path) = handle
                    .and_then(|h| self.handles.get(h))
                    .map(|h| (h.row.file_id, h.row.path.clone()))
                    .unwrap_or_default();
                explicit_parent = handle.is_some();
                let id = self.handles.create(NewHandle {
                    pid,
                    raw: Raw::Lib(p.layer.as_str(), ret as u64),
                    layer: p.layer.as_str(),
                    kind: MAPPING,
                    parent: handle,
                    file_id,
                    path,
                    mode: None,
                    flags: arg(ArgKind::Flags).map(|v| v as i64),
                    call_id: Some(call_id),
                    ts: Some(ts_begin),
                    share_with: None,
                    pos: None,
                });
                let span = (ret as u64, size.unwrap_or(0) as u64, offset.unwrap_or(0));
                self.handles
                    .set_mapping(id, span, Some(call_id), Some(ts_end));
                created = Some(id);
                handle = created;
            }
            Op::Unmap if !failed => {
                if let (Some(a), Some(len)) = (addr, size) {
                    self.handles
                        .unmap(pid, a, len as u64, Some(call_id), Some(ts_end));
                }
            }
            Op::Exit => self.procs.set_exit_code(pid, rec.args[0] as i32),
            // A file renamed keeps its identity under its new name (a temporary file written,
            // then renamed into place; an exchange swaps two names, which is left alone).
            Op::Rename if !failed => {
                let exchange =
                    arg(ArgKind::Flags).is_some_and(|f| f & u64::from(libc::RENAME_EXCHANGE) != 0);
                if let (Some(id), Some(to), false) = (file_before, path2.as_deref(), exchange) {
                    let abs = self.abs_path(pid, second_dirfd(&p, rec), to);
                    self.files.renamed(id, abs);
                }
            }
            // A hard link (link, linkat; a symlink has no second path): the file under a
            // second name.
            Op::Link if !failed => {
                if let (Some(id), Some(to)) = (file_before, path2.as_deref()) {
                    let abs = self.abs_path(pid, second_dirfd(&p, rec), to);
                    self.files.linked(id, abs);
                }
            }
            // pipe(2): the row names the read end, then the write end, both on the pipe.
            Op::Pipe if !failed => {
                if let Some(pair) = arg(ArgKind::FdPair).filter(|v| *v != DEREF_FAILED) {
                    let ends = [pair as u32 as i32, (pair >> 32) as u32 as i32];
                    let file = self.made_fd_file(&p, rec, ends[0], None);
                    let flags = arg(ArgKind::Flags).unwrap_or(0) as i64;
                    let ends = [(ends[0], libc::O_RDONLY), (ends[1], libc::O_WRONLY)];
                    let [read, write] = ends.map(|(fd, access)| {
                        let id = self.handles.create(NewHandle {
                            pid,
                            raw: Raw::Fd(fd),
                            layer: p.layer.as_str(),
                            kind: "fd",
                            parent: None,
                            file_id: file.1,
                            path: file.0.clone(),
                            mode: None,
                            flags: Some(flags | i64::from(access)),
                            call_id: Some(call_id),
                            ts: Some(ts_begin),
                            share_with: None,
                            // A pipe has no position.
                            pos: None,
                        });
                        self.handles
                            .set_cloexec(id, flags & i64::from(libc::O_CLOEXEC) != 0);
                        id
                    });
                    (handle, handle2) = (Some(read), Some(write));
                    (file_before, file2) = (file.1, file.1);
                    pipe_ends = Some([read, write]);
                }
            }
            Op::Chdir if !failed => self.chdir(pid, path.as_deref(), handle),
            // MPI_Wait completes a request; MPI_Test only when its flag came back true.
            // MPI_Waitall and MPI_Testall complete each of their array's, MPI_Waitany and
            // MPI_Testany the one at the index they return (which their rows name).
            Op::Wait if !failed => {
                let done = p.arg(ArgKind::OutHandle32).is_none()
                    || (rec.flags & CALL_OUT_VALID != 0 && rec.out != 0);
                match p.arg(ArgKind::RequestArray) {
                    Some(i) => {
                        let n = arg(ArgKind::Rank).map_or(0, |n| n as u32 as usize);
                        let mut reqs = request_array(arr(i).unwrap_or_default(), int_handles);
                        reqs.truncate(n);
                        let indices = p.arg(ArgKind::IndexArray);
                        let completed: Vec<u64> = match (indices, p.arg(ArgKind::OutInt32)) {
                            // MPI_Waitsome, MPI_Testsome: how many completed (MPI_UNDEFINED,
                            // negative: none was active), and at which indices.
                            (Some(k), _) => {
                                let count = out.map_or(0, |c| (c as u32 as i32).max(0) as usize);
                                crate::netcdf::ints(arr(k).unwrap_or_default())
                                    .take(count)
                                    .filter_map(|j| reqs.get(j as u32 as usize).copied())
                                    .collect()
                            }
                            (None, Some(_)) => out
                                .and_then(|at| reqs.get(at as u32 as usize).copied())
                                .into_iter()
                                .collect(),
                            (None, None) if done => reqs,
                            (None, None) => Vec::new(),
                        };
                        // MPI_Waitany and MPI_Testany name the one they completed.
                        let names_one = indices.is_none() && p.arg(ArgKind::OutInt32).is_some();
                        for r in completed {
                            if let Some(h) = self.handles.lookup(pid, lib_raw(r)) {
                                self.handles.destroy(h, Some(call_id), Some(ts_end));
                                if names_one {
                                    handle = Some(h);
                                }
                            }
                        }
                    }
                    None => {
                        if let (true, Some(h)) = (done, handle) {
                            self.handles.destroy(h, Some(call_id), Some(ts_end));
                        }
                    }
                }
            }
            _ => {}
        }
        // A non-blocking call returns a request: a handle completed by MPI_Wait/MPI_Test.
        if p.arg(ArgKind::OutRequest).is_some() && !failed && rec.flags & CALL_OUT_VALID != 0 {
            let (file_id, path) = handle
                .and_then(|h| self.handles.get(h))
                .map(|h| (h.row.file_id, h.row.path.clone()))
                .unwrap_or_default();
            self.handles.create(NewHandle {
                pid,
                raw: Raw::Lib(p.layer.as_str(), rec.out),
                layer: p.layer.as_str(),
                kind: "request",
                parent: handle,
                file_id,
                path,
                mode: None,
                flags: None,
                call_id: Some(call_id),
                ts: Some(ts_begin),
                share_with: None,
                pos: None,
            });
        }

        self.adopt(rec, created, explicit_parent, pid, handle);
        // Both ends of a pipe made inside a library call (popen's) are that call's: the
        // stream it returns is on the pipe.
        if let Some(ends) = pipe_ends {
            self.pass_up(rec.parent_id, pid, ends.to_vec());
        }

        let file_id = created
            .and_then(|h| self.handles.get(h))
            .and_then(|h| h.row.file_id)
            .or(file_before)
            .or(kfile);
        let flags = arg(ArgKind::Flags).map(|v| v as i64);
        let nargs = p.args.len().min(rec.args.len());
        // The first array argument, when the call says how long it is (`rank`); requests are
        // not dimensions.
        let first_array = p
            .args
            .iter()
            .position(|k| k.is_array() && *k != ArgKind::RequestArray);
        let dims = match (
            arg(ArgKind::Rank),
            first_array.and_then(|i| arr(i).map(|w| (i, w))),
        ) {
            // An HDF5 chunk's offset: as many as its dataset has dimensions.
            (None, Some((_, words))) if p.layer == Layer::Hdf5 => {
                let rank = lib_arg.and_then(|d| self.dataspaces.rank(pid, d));
                rank.map_or_else(Vec::new, |r| {
                    words[..words.len().min(r)]
                        .iter()
                        .map(|v| *v as i64)
                        .collect()
                })
            }
            (Some(rank), Some((i, words))) => {
                let values: Vec<i64> = if p.args[i] == ArgKind::IntArray {
                    crate::netcdf::ints(words).map(i64::from).collect()
                } else {
                    words.iter().map(|v| *v as i64).collect()
                };
                values[..values.len().min(rank as usize)].to_vec()
            }
            _ => Vec::new(),
        };
        Some(CallRow {
            call_id,
            parent_id: (rec.parent_id != 0).then_some(rec.parent_id as i64),
            pid,
            tid: rec.tid as i32,
            depth: rec.depth as i32,
            layer: self.names[rec.func_id as usize].0.clone(),
            function: self.names[rec.func_id as usize].1.clone(),
            op: self.names[rec.func_id as usize].2.clone(),
            ts_begin_ns: ts_begin,
            ts_end_ns: ts_end,
            handle_id: handle,
            file_id,
            offset,
            handle2_id: handle2,
            file2_id: file2,
            offset2,
            bytes_requested,
            bytes_result,
            // A function that returns nothing (rewind) leaves a register's leftover.
            ret: (returned && p.ret != RetKind::None).then_some(ret),
            errno,
            flags,
            collective,
            path,
            path2,
            strs: strs_out,
            args: rec.args[..nargs]
                .iter()
                .zip(&p.args)
                .map(|(v, k)| match *v as i64 {
                    // As given: an offset, or -1 for none.
                    v if k.is_ret_deref() && *k != ArgKind::FdPair && v != -1 => {
                        v.wrapping_sub(moved)
                    }
                    // The descriptor a message passed (-1: none), not the message's address.
                    v if *k == ArgKind::Rights && returned && ret >= 0 => {
                        i64::from(v as u32 as i32)
                    }
                    v => v,
                })
                .collect(),
            dims,
        })
    }

    /// The row of a read or write syscall of a probe [`is_plain_transfer`] accepts (most of
    /// a trace's calls): what [`Self::call`] makes of it, from the fd's handle and position
    /// alone, without the checks for every other kind of call (about 600 instructions of
    /// its 1,200 per call). `plain_transfers_make_the_rows_the_general_path_makes` holds
    /// the two to the same rows.
    fn plain_transfer(&mut self, p: &Probe, rec: &CallRecord) -> CallRow {
        let pid = rec.pid as i32;
        self.ensure_process(pid);
        let arg = |k: ArgKind| Some(rec.args[p.arg(k)?]);
        let ret = if p.ret_int {
            i64::from(rec.ret as i32)
        } else {
            rec.ret
        };
        let failed = ret < 0;
        let errno = failed.then(|| ret.saturating_neg() as i32);
        if let Some(e) = errno {
            self.failures.note(rec.parent_id, e);
        }
        let bytes_result = Some(ret.max(0));
        let write = p.op == Op::Write;
        // Linux appends a pwrite to an O_APPEND fd, whatever its offset (`transfer`).
        let at = arg(ArgKind::Offset).map(|v| v as i64);
        let moved = (bytes_result, failed, write);
        let fd = arg(ArgKind::Fd).map(|fd| fd as i32).filter(|fd| *fd >= 0);
        let not_open = errno == Some(EBADF as i32);
        // An fd first used here (opened before tracing) gets its handle, then moves; with
        // EBADF only one strata knows (a read on a write-only fd), as in `call`.
        let found = fd.and_then(|fd| {
            self.handles.transfer(pid, fd, at, moved).or_else(|| {
                if not_open {
                    return None;
                }
                self.fd_handle(pid, fd)?;
                self.handles.transfer(pid, fd, at, moved)
            })
        });
        let (handle, file_id, offset) = match found {
            Some((h, file_id, offset)) => {
                let (read, written) = if write {
                    (Some(0), bytes_result)
                } else {
                    (bytes_result, Some(0))
                };
                let at_end = !write && ret == 0;
                self.starts_beneath
                    .note(rec.parent_id, h, offset, (read, written), at_end);
                (Some(h), file_id, offset)
            }
            None => (None, None, at),
        };
        if !self.adoptions.is_empty() {
            self.adopt(rec, None, false, pid, None);
        }
        let names = &self.names[rec.func_id as usize];
        let nargs = p.args.len().min(rec.args.len());
        CallRow {
            call_id: rec.call_id as i64,
            parent_id: (rec.parent_id != 0).then_some(rec.parent_id as i64),
            pid,
            tid: rec.tid as i32,
            depth: rec.depth as i32,
            layer: names.0.clone(),
            function: names.1.clone(),
            op: names.2.clone(),
            ts_begin_ns: self.clock.epoch(rec.ts_begin),
            ts_end_ns: self.clock.epoch(rec.ts_end),
            handle_id: handle,
            file_id,
            offset,
            handle2_id: None,
            file2_id: None,
            offset2: None,
            bytes_requested: arg(ArgKind::Size).map(|v| v as i64),
            bytes_result,
            ret: Some(ret),
            errno,
            flags: None,
            collective: p.collective,
            path: None,
            path2: None,
            strs: Vec::new(),
            args: rec.args[..nargs].iter().map(|v| *v as i64).collect(),
            dims: Vec::new(),
        }
    }

    /// Creates the handle returned by an open-like call.
    fn open(
        &mut self,
        p: &Probe,
        rec: &CallRecord,
        path: Option<&str>,
        modestr: Option<String>,
        src: Option<HandleId>,
        ts: i64,
    ) -> HandleId {
        let pid = rec.pid as i32;
        let arg = |k: ArgKind| p.arg(k).map(|i| rec.args[i]);
        let flags = arg(ArgKind::Flags).map(|v| v as i64);
        let (raw, kind) = match p.ret {
            RetKind::Fd => (Raw::Fd(rec.ret as i32), "fd"),
            _ => {
                let value = if rec.flags & CALL_OUT_VALID != 0 {
                    rec.out
                } else {
                    rec.ret as u64
                };
                (Raw::Lib(p.layer.as_str(), value), p.layer.handle_kind())
            }
        };
        let dirfd = arg(ArgKind::Dirfd).map(|v| v as i32);
        // Only file-system paths are resolved; object names stay as they are.
        let fs_path = path
            .filter(|_| p.arg(ArgKind::Path).is_some())
            .map(|name| file_name(p, name));
        let fd = match raw {
            Raw::Fd(fd) => Some(fd),
            Raw::Lib(..) | Raw::Map(_) => None,
        };
        // Opens of a name are remembered by the fd they returned, except names relative to
        // another directory's fd (that fd may change).
        let remembered_fd = fd.filter(|&fd| {
            fd >= 0
                && fs_path
                    .is_some_and(|n| n.starts_with('/') || dirfd.is_none_or(|d| d == AT_FDCWD))
        });
        let (abs, file_id) = match fs_path {
            Some(name) => {
                let abs = self.abs_path(pid, dirfd, name);
                let kernel = kernel_file(p, rec);
                let hit =
                    remembered_fd.and_then(|fd| self.files.recent_open(pid, fd, &abs, kernel));
                let id = match (hit, remembered_fd) {
                    (Some(id), _) => Some(id),
                    (None, Some(fd)) => Some(self.files.resolve_open(pid, fd, &abs, kernel)),
                    (None, None) => match self.file_opened_beneath(rec.call_id, &abs) {
                        Some(id) => Some(id),
                        None => self.file_of_name(rec.call_id, pid, fd, &abs, kernel),
                    },
                };
                (Some(abs), id)
            }
            // An fd of a kind probes.toml names (eventfd2: `anon_inode:[eventfd]`): one file
            // for all, as the inode they share would make them.
            None if p.fd_name.is_some() && fd.is_some_and(|fd| fd >= 0) => {
                let name = p.fd_name.clone().unwrap_or_default();
                let id = self.files.resolve(pid, None, &name);
                (Some(name), Some(id))
            }
            // An fd opened by no path (open_by_handle_at, memfd_create).
            None => {
                match fd.filter(|fd| *fd >= 0 && src.is_none() && (path.is_none() || p.fd_inode)) {
                    Some(fd) => self.made_fd_file(p, rec, fd, path),
                    None => (None, None),
                }
            }
        };
        let src_row = src.and_then(|s| self.handles.get(s)).map(|h| &h.row);
        let file_id = file_id.or_else(|| src_row.and_then(|r| r.file_id));
        // A library object opened from a handle strata never saw made takes, now, the file
        // its adopter will give it, so the calls on it beneath the same call name that file
        // too (the attributes nc_open reads of the datasets it finds).
        let unseen_src = src.is_none() && p.arg(ArgKind::Handle).is_some();
        let file_id = file_id.or_else(|| {
            (unseen_src && matches!(raw, Raw::Lib(..)))
                .then(|| self.file_found_beside(rec.parent_id))
                .flatten()
        });
        // A stream over an fd (fdopen) is named by the fd's file; an HDF5 object opened by
        // index, address or reference is not the object it was opened from.
        let abs = abs.or_else(|| path.map(str::to_string)).or_else(|| {
            src_row
                .filter(|_| kind != "hid")
                .and_then(|r| r.path.clone())
        });
        if let (Some(a), "fd") = (&abs, kind) {
            if self.is_probed_library(a) {
                let file = kernel_file(p, rec).map(|k| (k.dev, k.ino));
                self.library_opens.push(LibraryOpen {
                    pid,
                    path: a.clone(),
                    file,
                    from_node: false,
                });
            }
        }
        let mut append = flags.is_some_and(|f| f & i64::from(libc::O_APPEND) != 0)
            || modestr.as_deref().is_some_and(|m| m.starts_with('a'));
        // A stream made over an fd (fdopen) starts where the fd is, and appends where it does.
        let start = match (kind, src) {
            ("stream", Some(fd)) => {
                append |= self.handles.appends(fd);
                self.handles.pos(fd)
            }
            _ => Some(0),
        };
        let id = self.handles.create(NewHandle {
            pid,
            raw,
            layer: p.layer.as_str(),
            kind,
            parent: src,
            file_id,
            path: abs,
            mode: modestr,
            flags,
            call_id: Some(rec.call_id as i64),
            ts: Some(ts),
            share_with: None,
            // Byte positions are followed for fds and streams, an MPI file's individual file
            // pointer in etypes; other library handles have selections instead.
            pos: match kind {
                "mpi_file" => crate::mpi_pointer::start(flags),
                // An fd opened with O_APPEND is at 0 until its first write (reads start
                // there); glibc's `"a"` stream starts at the end, which strata does not know.
                _ => start.filter(|_| {
                    !(append && kind == "stream")
                        && matches!(kind, "fd" | "stream")
                        && file_id.is_none_or(|f| self.files.has_position(f))
                }),
            },
        });
        if append && kind == "stream" {
            self.handles.set_append(id, true);
        }
        // The k-th collective open of a file by each rank is the same collective open: its
        // handles share a key, so analysis can join them across processes.
        if let (true, Some(f)) = (p.collective, file_id) {
            let k = self.collective_opens.entry((pid, f)).or_insert(0);
            *k += 1;
            let key = format!("{f}:{k}");
            if let Some(h) = self.handles.get_mut(id) {
                h.row.group_key = Some(key);
            }
        }
        id
    }

    /// The file of a handle made beneath library call `call_id` under the same name `abs`:
    /// a library's open of a name (fopen, H5Fopen) is the file the open of its fd found, with
    /// no look of its own (resolving a name costs several system calls, and every new process
    /// fopens the locale aliases).
    fn file_opened_beneath(&self, call_id: u64, abs: &str) -> Option<i64> {
        let made = &self.adoptions.get(&call_id)?.handles;
        made.iter()
            .filter_map(|h| self.handles.get(*h))
            .find(|h| h.row.path.as_deref() == Some(abs))
            .and_then(|h| h.row.file_id)
    }

    /// The file of a library's open of `abs` that opened no handle of that name beneath it.
    /// A name that is no file, where the library opened files of other names (an HDF5
    /// family's `f%d.h5`, whose first member it opened; a split file's base name, its
    /// metadata and raw data files), is the one file those are on, or none: not a file of
    /// its own named by what was never a file.
    fn file_of_name(
        &mut self,
        call_id: u64,
        pid: i32,
        fd: Option<i32>,
        abs: &str,
        kernel: Option<files::KernelFile>,
    ) -> Option<i64> {
        let beneath = (self.adoptions.get(&call_id)).is_some_and(|a| {
            a.handles.iter().any(|h| {
                self.handles
                    .get(*h)
                    .is_some_and(|h| h.row.file_id.is_some())
            })
        });
        if beneath && !self.files.exists(pid, abs) {
            return self.file_found_beside(call_id);
        }
        Some(self.files.resolve_made(pid, fd, abs, kernel))
    }

    /// The one file the handles made so far beneath `call_id` are on (an HDF5 file opened
    /// inside nc_open), which its handle will take when it returns; none when they are on
    /// none or on more than one.
    fn file_found_beside(&self, call_id: u64) -> Option<i64> {
        let made = &self.adoptions.get(&call_id)?.handles;
        let mut files = made
            .iter()
            .filter_map(|h| self.handles.get(*h).and_then(|h| h.row.file_id));
        let first = files.next()?;
        files.all(|f| f == first).then_some(first)
    }

    /// The file (path, id) of descriptor `fd` that call `rec` made with no path: known by the
    /// inode the kernel side read (`fd_inode`), else while /proc has it. A file first known
    /// by that inode is named as /proc names it: `pipe:[INO]`, `/memfd:NAME (deleted)` for a
    /// call with a `name`, `socket:[INO]`, else `inode INO`.
    fn made_fd_file(
        &mut self,
        p: &Probe,
        rec: &CallRecord,
        fd: i32,
        name: Option<&str>,
    ) -> (Option<String>, Option<i64>) {
        let pid = rec.pid as i32;
        let kernel = kernel_file(p, rec);
        if let Some(id) = kernel.and_then(|k| self.files.by_inode(Some(k.dev), k.ino)) {
            return (self.files.path(id), Some(id));
        }
        // The descriptor may since have been closed and its number reused: where the kernel
        // side read the inode, /proc is trusted only if it shows that one.
        use std::os::unix::fs::MetadataExt as _;
        let at = format!("/proc/{pid}/fd/{fd}");
        if let Ok(link) = std::fs::read_link(&at) {
            let same = kernel.is_none_or(|k| {
                std::fs::metadata(&at).is_ok_and(|m| (m.dev(), m.ino()) == (k.dev, k.ino))
            });
            if same {
                // The kernel's read still stands if the fd closes before /proc is asked again.
                let abs = files::os_text(link);
                let id = self.files.resolve_made(pid, Some(fd), &abs, kernel);
                return (Some(abs), Some(id));
            }
        }
        let Some(k) = kernel else {
            return (None, None);
        };
        let named = match (p.op, name) {
            (Op::Pipe, _) => format!("pipe:[{}]", k.ino),
            (_, Some(n)) => format!("/memfd:{n} (deleted)"),
            (_, None) if k.kind() == "socket" => format!("socket:[{}]", k.ino),
            (_, None) => format!("inode {}", k.ino),
        };
        let id = self.files.by_kernel_inode(k, &named);
        (Some(named), Some(id))
    }

    /// The handle of descriptor `fd` that message call `rec` passed. At a send, the
    /// sender's, whose open file description is kept by the kernel's `struct file *` for it
    /// (the kernel side read both at return). At a receipt, a new handle on that description
    /// where a traced process sent it, so that both follow one position; else on a
    /// description of its own, at a position unknown.
    fn passed_fd(
        &mut self,
        p: &Probe,
        rec: &CallRecord,
        fd: i32,
        call_id: i64,
        ts: i64,
    ) -> Option<HandleId> {
        /// Descriptions kept for receivers at most: a sender whose messages nobody traced
        /// receives leaves them.
        const KEPT: usize = 4096;
        let pid = rec.pid as i32;
        let kernel_file = rec.args.last().copied().filter(|f| *f != 0);
        if p.op == Op::Write {
            let h = self.fd_handle(pid, fd)?;
            if let (Some(ptr), Some(held)) = (kernel_file, self.handles.get(h)) {
                let kept = Passed {
                    file_id: held.row.file_id,
                    flags: held.row.flags,
                    ofd: self.handles.hold_ofd(h)?,
                };
                if self.passed.len() >= KEPT {
                    for (_, old) in self.passed.drain() {
                        self.handles.release_ofd(old.ofd);
                    }
                }
                if let Some(old) = self.passed.insert(ptr, kept) {
                    self.handles.release_ofd(old.ofd);
                }
            }
            return Some(h);
        }
        if let Some(old) = self.handles.lookup(pid, Raw::Fd(fd)) {
            self.handles.destroy(old, Some(call_id), Some(ts));
        }
        let (path, file_id) = self.made_fd_file(p, rec, fd, None);
        // The same description, unless the kernel reused a freed one's memory for another.
        let sent = kernel_file
            .and_then(|ptr| self.passed.get(&ptr))
            .filter(|s| s.file_id == file_id);
        let h = self.handles.create(NewHandle {
            pid,
            raw: Raw::Fd(fd),
            layer: p.layer.as_str(),
            kind: "fd",
            parent: None,
            file_id,
            path,
            mode: None,
            flags: sent.and_then(|s| s.flags),
            call_id: Some(call_id),
            ts: Some(ts),
            share_with: None,
            pos: None,
        });
        if let Some(ofd) = sent.map(|s| s.ofd) {
            self.handles.join_ofd(h, ofd);
        }
        // A received descriptor is close-on-exec only if the receiver asked (MSG_CMSG_CLOEXEC).
        let flags = arg_of(p, rec, ArgKind::Int).unwrap_or(0);
        self.handles
            .set_cloexec(h, flags & libc::MSG_CMSG_CLOEXEC as u64 != 0);
        Some(h)
    }

    /// Links handles created beneath this call to the handle it created (see module docs).
    /// `about`: the handle the call is about, when it made none (a group an HDF5 iteration
    /// goes over).
    fn adopt(
        &mut self,
        rec: &CallRecord,
        created: Option<HandleId>,
        explicit: bool,
        pid: i32,
        about: Option<HandleId>,
    ) {
        let (orphans, closed, rows) = self
            .adoptions
            .remove(&rec.call_id)
            .map(|a| (a.handles, a.closed, a.rows))
            .unwrap_or_default();
        let parent_call = rec.parent_id;
        self.hold_closed(parent_call, pid, closed);
        // What goes up to the enclosing call: the handle made, or else the orphans (one
        // alone needs no vector: most opens).
        let (mut up, mut made_up): (Vec<HandleId>, Option<HandleId>) = (Vec::new(), None);
        match created {
            Some(h) => {
                let object = !orphans.is_empty() && self.is_object(h);
                for o in orphans {
                    let child = self.handles.get(o);
                    let child_file = child.and_then(|c| c.row.file_id);
                    // An object opened through an HDF5 external link lies in the file the
                    // link leads to, which the library opened beneath the open and keeps
                    // open (a filter plugin's library, opened too, is closed by then).
                    let leads_to = child
                        .filter(|c| object && c.row.kind == "fd" && !c.closed)
                        .filter(|c| c.row.path.as_deref().is_some_and(|p| p.starts_with('/')))
                        .and(child_file);
                    let mut file = None;
                    if let Some(me) = self.handles.get_mut(h) {
                        me.row.file_id = leads_to.or(me.row.file_id).or(child_file);
                        file = me.row.file_id;
                    }
                    // One without a file of its own (an HDF5 dataset NetCDF opened from the
                    // group HDF5 iterated, whose id strata never saw made) is part of what
                    // this call opened.
                    if let Some(c) = self.handles.get_mut(o) {
                        c.row.parent_handle_id.get_or_insert(h);
                        c.row.file_id = c.row.file_id.or(file);
                    }
                    self.handles.set_adoption_pending(o, false);
                }
                if !explicit {
                    made_up = Some(h);
                }
            }
            None => {
                self.on_file_of(about, &orphans, parent_call == 0);
                up = self.join_library_file(about, orphans);
            }
        }
        self.held_rows(rows, parent_call, pid);
        up.extend(made_up);
        self.pass_up(parent_call, pid, up);
    }

    /// Fds that a library call on handle `about` opened beneath it, making no handle of its
    /// own, belong to the library's file when they lie in its directory: an HDF5 family
    /// driver's members, opened as H5Dwrite's data reaches them; a ROMIO rank's deferred open
    /// at its first independent transfer. Their parent is the handle of that layer `about`
    /// descends from (the file, not the dataset). Others (a filter plugin's library, a
    /// shared memory segment) are returned, to go up as before.
    fn join_library_file(
        &mut self,
        about: Option<HandleId>,
        orphans: Vec<HandleId>,
    ) -> Vec<HandleId> {
        let Some((root, dir)) = about
            .filter(|_| !orphans.is_empty())
            .and_then(|a| self.library_file(a))
        else {
            return orphans;
        };
        let (joined, left): (Vec<HandleId>, Vec<HandleId>) = orphans.into_iter().partition(|o| {
            self.handles.get(*o).is_some_and(|h| {
                h.row.kind == "fd"
                    && h.row.parent_handle_id.is_none()
                    && h.row.path.as_deref().and_then(parent_dir) == Some(dir.as_str())
            })
        });
        for o in joined {
            if let Some(h) = self.handles.get_mut(o) {
                h.row.parent_handle_id = Some(root);
            }
            self.handles.set_adoption_pending(o, false);
        }
        left
    }

    /// Whether `h` is an object within a library file (an HDF5 dataset, group): its parent
    /// is of its layer.
    fn is_object(&self, h: HandleId) -> bool {
        let Some(row) = self.handles.get(h).map(|h| &h.row) else {
            return false;
        };
        let parent = row.parent_handle_id.and_then(|p| self.handles.get(p));
        parent.is_some_and(|p| p.row.layer == row.layer)
    }

    /// The library handle (not posix's) that `h` descends from within its layer, and the
    /// directory of its path.
    fn library_file(&self, mut h: HandleId) -> Option<(HandleId, String)> {
        let layer = self.handles.get(h)?.row.layer;
        if layer == Layer::Posix.as_str() {
            return None;
        }
        // Bounded: a parent is always an older handle, but a cycle must not hang strata.
        for _ in 0..64 {
            let row = &self.handles.get(h)?.row;
            match row.parent_handle_id.and_then(|p| self.handles.get(p)) {
                Some(parent) if parent.row.layer == layer => h = parent.row.handle_id,
                _ => {
                    let dir = row.path.as_deref().and_then(parent_dir)?;
                    return Some((h, dir.to_string()));
                }
            }
        }
        None
    }

    /// Gives `handles`, made by a call or beneath it, to the enclosing call `parent_call`,
    /// whose handle will be their parent (0: none encloses it, they are written as they are).
    fn pass_up(&mut self, parent_call: u64, pid: i32, handles: Vec<HandleId>) {
        if parent_call == 0 {
            for h in handles {
                self.handles.set_adoption_pending(h, false);
            }
        } else if !handles.is_empty() {
            for h in &handles {
                self.handles.set_adoption_pending(*h, true);
            }
            let adoption = self.adoption(parent_call, pid);
            adoption.handles.extend(handles);
            self.bound_adoptions(parent_call);
        }
    }

    /// Keeps fds opened before tracing and closed beneath a call (`closed`, held back from
    /// their close on) until `parent_call` returns, or writes them at the top of the stack: a
    /// stream strata never saw opened is made at its first call, and when that call closes it
    /// (`fclose(stdout)` at a silent command's exit) its fd's handle was ended by the
    /// close(1) beneath, whose row came first.
    fn hold_closed(&mut self, parent_call: u64, pid: i32, closed: Vec<(i32, HandleId)>) {
        if closed.is_empty() {
            return;
        }
        if parent_call == 0 {
            for (_, h) in closed {
                self.handles.set_adoption_pending(h, false);
            }
            return;
        }
        self.adoption(parent_call, pid).closed.extend(closed);
        self.bound_adoptions(parent_call);
    }

    fn adoption(&mut self, call: u64, pid: i32) -> &mut Adoption {
        self.adoptions.entry(call).or_insert(Adoption {
            pid,
            handles: Vec::new(),
            closed: Vec::new(),
            rows: Vec::new(),
            age: 0,
        })
    }

    /// Library objects without a file made beneath a call about handle `about` (H5Literate
    /// over a group, H5Ovisit from an object) are in its file, when they are of its layer:
    /// opened from the id the library made for the call's callback, which names the object
    /// the call goes over. At the top of the stack (`top`) they are its children; beneath,
    /// an enclosing call that made a handle takes them as its own (nc_open, the datasets it
    /// found).
    fn on_file_of(&mut self, about: Option<HandleId>, orphans: &[HandleId], top: bool) {
        // Most calls made none (the layer name's copy below was a third of the allocations
        // of a loop of short processes).
        if orphans.is_empty() {
            return;
        }
        let Some((about, file, layer)) = about.and_then(|a| {
            let row = &self.handles.get(a)?.row;
            Some((a, row.file_id?, row.layer))
        }) else {
            return;
        };
        for o in orphans {
            if let Some(c) = self.handles.get_mut(*o) {
                if c.row.file_id.is_none() && c.row.kind != "fd" && c.row.layer == layer {
                    c.row.file_id = Some(file);
                    if top {
                        c.row.parent_handle_id.get_or_insert(about);
                    }
                }
            }
        }
    }

    /// Whether handle `h` waits for adoption with no file.
    fn waits_for_file(&self, h: HandleId) -> bool {
        self.handles
            .get(h)
            .is_some_and(|h| h.adoption_pending && h.row.file_id.is_none())
    }

    /// Whether the row of a call beneath another (`rec`), with no file, is on a handle that
    /// waits for adoption with no file either: held until its adopter gives it one.
    fn held_for_file(&self, rec: &CallRecord, row: &CallRow) -> bool {
        rec.parent_id != 0
            && !self.adoptions.is_empty()
            && row.handle_id.is_some_and(|h| self.waits_for_file(h))
    }

    /// Rows held beneath a call that returned: on their handle's file where it has one now,
    /// else held on under `parent_call` while their handle waits there.
    fn held_rows(&mut self, rows: Vec<CallRow>, parent_call: u64, pid: i32) {
        for mut row in rows {
            let h = row.handle_id.and_then(|h| self.handles.get(h));
            row.file_id = row.file_id.or(h.and_then(|h| h.row.file_id));
            if row.file_id.is_none() && parent_call != 0 && h.is_some_and(|h| h.adoption_pending) {
                self.adoption(parent_call, pid).rows.push(row);
            } else {
                self.released.push(row);
            }
        }
    }

    /// Writes the rows let go from adoptions.
    fn write_released(&mut self, out: &mut Dataset) {
        if self.released.is_empty() {
            return;
        }
        for row in std::mem::take(&mut self.released) {
            self.push_call(out, &row);
        }
    }

    /// At most `ADOPTION_MAX_HANDLES` wait under one call.
    fn bound_adoptions(&mut self, call: u64) {
        let over =
            |a: &Adoption| a.handles.len() + a.closed.len() + a.rows.len() > ADOPTION_MAX_HANDLES;
        if self.adoptions.get(&call).is_some_and(over) {
            self.give_up_adoptions(|a| over(a));
        }
    }
}

impl Layer {
    /// The `kind` of handles a library layer returns.
    pub fn handle_kind(self) -> &'static str {
        match self {
            Layer::Stdio => "stream",
            Layer::Posix
            | Layer::Libc
            | Layer::Uring
            | Layer::Aio
            | Layer::Vfs
            | Layer::Pagecache
            | Layer::Block => "fd",
            Layer::Mpiio => "mpi_file",
            Layer::Hdf5 => "hid",
            Layer::Netcdf => "ncid",
        }
    }
}

/// The program an exec of `pid` ran, from the kernel's name for it (`name`; a script's
/// interpreter as its `#!` line names it), named as /proc/<pid>/exe would have: joined to
/// the working directory `cwd` where relative (`./a.out`), with `.`, `..` and symbolic
/// links resolved where the file can still be found (Debian's `/bin/sh` is
/// `/usr/bin/dash`), else lexically; as given where relative to a directory not known. A
/// name of a descriptor (`/dev/fd/3` of fexecve, a `/proc` path) is left as given: looked up
/// here, it would be strata's own.
fn program_path(files: &Files, pid: i32, cwd: Option<&str>, name: String) -> Option<String> {
    if name.starts_with("/dev/fd/") || name.starts_with("/proc/") {
        return Some(name);
    }
    let abs = match (name.starts_with('/'), cwd) {
        (true, _) => files::absolute(None, &name),
        (false, Some(cwd)) => files::absolute(Some(cwd), &name),
        (false, None) => return Some(name),
    };
    Some(files.resolved(pid, &abs).unwrap_or(abs))
}

/// The file a call's path argument names: for MPI-IO, without the file-system prefix ROMIO
/// takes (`lustre:/scratch/out`, `ufs:out`), which selects its driver and is not part of the
/// name it opens.
fn file_name<'a>(p: &Probe, name: &'a str) -> &'a str {
    const ROMIO_PREFIXES: [&str; 17] = [
        "ufs",
        "nfs",
        "lustre",
        "gpfs",
        "panfs",
        "pvfs2",
        "daos",
        "ime",
        "quobytefs",
        "xfs",
        "testfs",
        "bg",
        "bglockless",
        "zoidfs",
        "pvfs",
        "pfs",
        "piofs",
    ];
    match name.split_once(':') {
        Some((prefix, rest)) if p.layer == Layer::Mpiio && ROMIO_PREFIXES.contains(&prefix) => rest,
        _ => name,
    }
}

/// The directory of absolute path `path`: all before its last `/` (`/` for one at the root).
fn parent_dir(path: &str) -> Option<&str> {
    let cut = path.rfind('/').filter(|_| path.starts_with('/'))?;
    Some(if cut == 0 { "/" } else { &path[..cut] })
}

/// The second directory fd of a call that names two paths (renameat, linkat): the one its
/// second path is relative to.
fn second_dirfd(p: &Probe, rec: &CallRecord) -> Option<i32> {
    let mut dirfds = p
        .args
        .iter()
        .enumerate()
        .filter(|(_, k)| **k == ArgKind::Dirfd);
    dirfds.nth(1).map(|(i, _)| rec.args[i] as i32)
}

/// An open file description in flight in a message (see `Correlator::passed`).
struct Passed {
    /// Held for the receiver (`Handles::hold_ofd`).
    ofd: u64,
    file_id: Option<i64>,
    /// The sender's handle's open flags.
    flags: Option<i64>,
}

/// Argument `kind` of call `rec`.
fn arg_of(p: &Probe, rec: &CallRecord, kind: ArgKind) -> Option<u64> {
    Some(rec.args[p.arg(kind)?])
}

/// A syscall that reads or writes an fd's bytes and names nothing but the fd, buffer, size
/// and offset, returning the bytes moved: its rows take [`Correlator::plain_transfer`].
fn is_plain_transfer(p: &Probe) -> bool {
    matches!(p.target, Target::Syscall(_))
        && !p.internal
        && matches!(p.op, Op::Read | Op::Write)
        && p.ret == RetKind::Bytes
        && p.only.is_none()
        && p.args.iter().all(|k| {
            matches!(
                k,
                ArgKind::Fd | ArgKind::Buf | ArgKind::Size | ArgKind::Offset
            )
        })
}

/// `pos` and `flags` (octal) of a /proc/PID/fdinfo/FD.
fn fdinfo_pos_flags(info: &str) -> Option<(i64, u64)> {
    use crate::procs::fdinfo_value;
    let pos = fdinfo_value(info, "pos")?.parse().ok()?;
    let flags = u64::from_str_radix(fdinfo_value(info, "flags")?, 8).ok()?;
    Some((pos, flags))
}

/// What the kernel side read of the file of the descriptor call `rec` made (`fd_inode`).
fn kernel_file(p: &Probe, rec: &CallRecord) -> Option<files::KernelFile> {
    let n = p.args.len();
    match (p.fd_inode, rec.args.get(n), rec.args.get(n + 1)) {
        (true, Some(&ino), Some(&dev_mode)) => files::KernelFile::from_slots(ino, dev_mode),
        _ => None,
    }
}

/// The requests of an `MPI_Request` array as the kernel side copied it: 64-bit pointers
/// (Open MPI), or under the MPICH ABI 32-bit integers, two to a word.
fn request_array(words: &[u64], int_handles: bool) -> Vec<u64> {
    match int_handles {
        true => crate::netcdf::ints(words)
            .map(|v| u64::from(v as u32))
            .collect(),
        false => words.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use strata_common::RecordKind;

    use super::*;

    /// /proc/PID/fdinfo/FD: the position in decimal, the flags in octal (O_APPEND 02000).
    #[test]
    fn fdinfo_gives_position_and_flags() {
        let info = "pos:\t100\nflags:\t0102001\nmnt_id:\t29\nino:\t1234\n";
        let (pos, flags) = fdinfo_pos_flags(info).unwrap();
        assert_eq!(pos, 100);
        assert_ne!(flags & libc::O_APPEND as u64, 0);
        assert_eq!(flags & 3, libc::O_WRONLY as u64);
        assert_eq!(fdinfo_pos_flags("mnt_id:\t29\n"), None);
    }

    /// A step that panics is skipped and counted; the ones after it are taken.
    #[test]
    fn a_panic_costs_its_step_not_the_run() {
        let probes = crate::probes::load(None).unwrap();
        let write = syscall_probe(&probes, "write");
        let unknown = probes.len() as u32;
        let dir = std::env::temp_dir().join(format!("strata-guarded-{}", std::process::id()));
        let mut out = Dataset::create(&dir, "test", "guarded", 0o600).unwrap();
        let mut corr = Correlator::new(probes, Clock::now());
        // A table that says a probe beyond the probes is a plain transfer: taking its record
        // indexes past them, as a bug would.
        corr.plain.push(true);
        let rec = |func_id, call_id| CallRecord {
            ret: 1,
            args: [1, 0, 1, 0, 0, 0],
            ..top_call(func_id, call_id)
        };
        corr.guarded(|c| c.handle(Event::Call(rec(write, 1 << 10)), &mut out));
        corr.guarded(|c| c.handle(Event::Call(rec(unknown, 2 << 10)), &mut out));
        corr.guarded(|c| c.handle(Event::Call(rec(write, 3 << 10)), &mut out));
        corr.guarded(|c| c.finish(&mut out));
        out.flush().unwrap();
        assert_eq!(corr.internal_errors, 1);
        let ids: Vec<i64> = crate::sink::read_table(&dir, "calls")
            .unwrap()
            .iter()
            .flat_map(|b| {
                let col = b.column_by_name("call_id").unwrap();
                (col.as_any().downcast_ref::<arrow::array::Int64Array>())
                    .unwrap()
                    .values()
                    .to_vec()
            })
            .collect();
        assert_eq!(ids, [1 << 10, 3 << 10]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A stdio call recorded at its entry without its return (`CALL_NO_RETURN`: a stream
    /// without an fd, on a session link) has its request but no return, bytes moved, errno
    /// or duration, whatever the record's return fields hold; the same record returned has
    /// them.
    #[test]
    fn a_call_recorded_at_its_entry_alone_has_no_return() {
        let probes = crate::probes::load(None).unwrap();
        let fwrite = (probes.iter())
            .find(|p| p.layer == Layer::Stdio && p.function() == "fwrite")
            .unwrap()
            .id;
        let dir = std::env::temp_dir().join(format!("strata-no-return-{}", std::process::id()));
        let mut out = Dataset::create(&dir, "test", "no-return", 0o600).unwrap();
        let clock = Clock::now();
        let mut corr = Correlator::new(probes, clock);
        let rec = |call_id, flags| CallRecord {
            flags,
            // fwrite(buf, 1, 3, stream) on fopencookie's fd -2: 3 elements written, or
            // whatever the entry left there.
            ret: 3,
            args: [0x1000, 1, 3, 0x2000, -2i64 as u64, 0],
            ..top_call(fwrite, call_id)
        };
        corr.handle(Event::Call(rec(1 << 10, 0)), &mut out);
        corr.handle(Event::Call(rec(2 << 10, CALL_NO_RETURN)), &mut out);
        corr.finish(&mut out);
        out.flush().unwrap();
        let mut got = Vec::new();
        for b in crate::sink::read_table(&dir, "calls").unwrap() {
            let col = |name: &str| {
                (b.column_by_name(name).unwrap().as_any())
                    .downcast_ref::<arrow::array::Int64Array>()
                    .unwrap()
                    .clone()
            };
            let [ret, bytes, asked, begin, end] = [
                "ret",
                "bytes_result",
                "bytes_requested",
                "ts_begin_ns",
                "ts_end_ns",
            ]
            .map(col);
            let errno = b.column_by_name("errno").unwrap();
            for i in 0..b.num_rows() {
                let v = |c: &arrow::array::Int64Array| {
                    arrow::array::Array::is_valid(c, i).then(|| c.value(i))
                };
                got.push((
                    v(&ret),
                    v(&bytes),
                    v(&asked),
                    end.value(i) - begin.value(i),
                    errno.is_valid(i),
                ));
            }
        }
        assert_eq!(
            got,
            [
                (Some(3), Some(3), Some(3), 1_000, false),
                (None, None, Some(3), 0, false)
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A record of a call of this process's thread at the top of its stack, from 1 to 2 us,
    /// that returned 0 with no arguments.
    fn top_call(func_id: u32, call_id: u64) -> CallRecord {
        CallRecord {
            kind: RecordKind::Call as u32,
            func_id,
            call_id,
            parent_id: 0,
            ts_begin: 1_000,
            ts_end: 2_000,
            pid: std::process::id(),
            tid: std::process::id(),
            depth: 0,
            flags: 0,
            ret: 0,
            out: 0,
            args: [0; strata_common::MAX_ARGS],
        }
    }

    /// The id of the probe of syscall `name`.
    fn syscall_probe(probes: &[Probe], name: &str) -> u32 {
        (probes.iter())
            .find(|p| p.function() == name && matches!(p.target, Target::Syscall(_)))
            .unwrap()
            .id
    }

    /// A random stream of opens, reads, writes (with and without offsets, failing with
    /// EBADF and EIO, on fds strata knows and fds it does not, some beneath a library
    /// call), seeks, dups and closes gives the same calls, handles and files whether
    /// reads and writes take `plain_transfer` or the general path.
    #[test]
    fn plain_transfers_make_the_rows_the_general_path_makes() {
        let probes = crate::probes::load(None).unwrap();
        let id = |name: &str| syscall_probe(&probes, name);
        let plain = [id("read"), id("write"), id("pread64"), id("pwrite64")];
        let others = [id("openat"), id("lseek"), id("close"), id("dup")];
        // libc's read and write, whose rows begin where the syscall beneath them did.
        let libc = |name: &str| {
            (probes.iter())
                .find(|p| p.layer == Layer::Libc && p.function() == name)
                .unwrap()
                .id
        };
        let wrappers = [libc("read"), libc("write")];
        let root = std::env::temp_dir().join(format!("strata-plain-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        let paths: Vec<String> = (0..3)
            .map(|i| {
                let p = root.join(format!("f{i}"));
                std::fs::write(&p, b"").unwrap();
                p.display().to_string()
            })
            .collect();
        let pid = std::process::id();
        // Fds 899-906, which this process has not open: strata learns them from the opens.
        let make_stream = || {
            let mut x = 12345u64;
            let mut next = move |n: u64| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 33) % n
            };
            let mut stream = Vec::new();
            for c in 1..20_000u64 {
                let fd = 899 + next(8);
                let mut parent = [0, 0, 0, 7 << 30, (7 << 30) + 1][next(5) as usize];
                let mut wrapper = None;
                let (func, args, ret): (u32, [u64; 6], i64) = match next(10) {
                    0 => {
                        let path = paths[next(3) as usize].clone();
                        stream.push(Event::Str {
                            pid,
                            call_id: c,
                            arg: 1,
                            text: Some(path),
                        });
                        let flags = [0o1101, 0o2002, 0][next(3) as usize];
                        let ret = if next(8) == 0 { -2 } else { fd as i64 };
                        (others[0], [u64::MAX - 99, 0, flags, 0o644, 0, 0], ret)
                    }
                    1 => {
                        let whence = next(3);
                        let ret = [4096, -22][next(2) as usize];
                        (others[1], [fd, next(9000), whence, 0, 0, 0], ret)
                    }
                    2 => (others[2], [fd, 0, 0, 0, 0, 0], 0),
                    3 => (others[3], [fd, 0, 0, 0, 0, 0], 899 + next(8) as i64),
                    _ => {
                        let f = plain[next(4) as usize];
                        let size = 1 + next(10_000);
                        let ret = match next(10) {
                            0 => -9,
                            1 => -5,
                            2 => (size / 2) as i64,
                            _ => size as i64,
                        };
                        if next(4) == 0 && (f == plain[0] || f == plain[1]) {
                            parent = (8 << 30) + c;
                            wrapper = Some((wrappers[usize::from(f == plain[1])], ret));
                        }
                        (f, [fd, 0xdead, size, next(1 << 20), 0, 0], ret)
                    }
                };
                stream.push(Event::Call(CallRecord {
                    kind: RecordKind::Call as u32,
                    func_id: func,
                    call_id: c,
                    parent_id: parent,
                    ts_begin: 1_000 * c,
                    ts_end: 1_000 * c + 500,
                    pid,
                    tid: pid + (c % 3) as u32,
                    depth: u32::from(parent != 0),
                    flags: 0,
                    ret,
                    out: 0,
                    args,
                }));
                if let Some((func, ret)) = wrapper {
                    stream.push(Event::Call(CallRecord {
                        kind: RecordKind::Call as u32,
                        func_id: func,
                        call_id: parent,
                        parent_id: 0,
                        ts_begin: 1_000 * c - 100,
                        ts_end: 1_000 * c + 600,
                        pid,
                        tid: pid + (c % 3) as u32,
                        depth: 0,
                        flags: 0,
                        ret,
                        out: 0,
                        args,
                    }));
                }
            }
            stream
        };
        let clock = Clock::now();
        let run = |name: &str, fast: bool| {
            let dir = root.join(name);
            let mut out =
                Dataset::create(&dir, "test", name, crate::dataset::DEFAULT_FILE_MODE).unwrap();
            let mut corr = Correlator::new(probes.clone(), clock);
            assert!(plain.iter().all(|p| corr.plain[*p as usize]));
            if !fast {
                corr.plain.fill(false);
            }
            for ev in make_stream() {
                corr.handle(ev, &mut out);
            }
            corr.finish(&mut out);
            out.flush().unwrap();
            // By id (the first column): what the end of the run writes, it writes in the
            // order of hash tables seeded per run.
            ["calls", "handles", "files"].map(|t| {
                let batches = crate::sink::read_table(&dir, t).unwrap();
                let all = arrow::compute::concat_batches(&batches[0].schema(), &batches).unwrap();
                let order = arrow::compute::sort_to_indices(all.column(0), None, None).unwrap();
                arrow::compute::take_record_batch(&all, &order).unwrap()
            })
        };
        let (general, fast) = (run("general", false), run("fast", true));
        std::fs::remove_dir_all(&root).unwrap();
        assert!(general[0].num_rows() > 20_000);
        for (g, f) in general.iter().zip(&fast) {
            assert_eq!(g.num_rows(), f.num_rows());
            for (i, field) in g.schema().fields().iter().enumerate() {
                let (a, b) = (g.column(i), f.column(i));
                let row = (0..a.len()).find(|r| a.slice(*r, 1) != b.slice(*r, 1));
                assert!(
                    row.is_none(),
                    "{}: row {row:?}: {:?} against {:?} (call_id {:?})",
                    field.name(),
                    a.slice(row.unwrap(), 1),
                    b.slice(row.unwrap(), 1),
                    g.column(0).slice(row.unwrap(), 1),
                );
            }
        }
    }

    /// Handles created beneath a call whose return never comes (its record is never read)
    /// are written all the same: at most `ADOPTION_MAX_HANDLES` wait at once, none longer
    /// than `ADOPTION_MAX_AGE` flushes.
    #[test]
    fn handles_under_a_call_that_never_returns_are_written() {
        let probes = crate::probes::load(None).unwrap();
        let id = |name: &str| syscall_probe(&probes, name);
        let (openat, close) = (id("openat"), id("close"));
        let dir = std::env::temp_dir().join(format!("strata-adopt-{}", std::process::id()));
        let mut out =
            Dataset::create(&dir, "test", "adopt", crate::dataset::DEFAULT_FILE_MODE).unwrap();
        let mut corr = Correlator::new(probes, Clock::now());
        let pid = std::process::id();
        const NEVER_RETURNS: u64 = 1 << 40;
        let rec = |func_id, call_id, args, ret| CallRecord {
            kind: RecordKind::Call as u32,
            func_id,
            call_id,
            parent_id: NEVER_RETURNS,
            ts_begin: call_id,
            ts_end: call_id + 1,
            pid,
            tid: pid,
            depth: 1,
            flags: 0,
            ret,
            out: 0,
            args,
        };
        let n = ADOPTION_MAX_HANDLES + 100;
        for i in 0..n as u64 {
            let c = 2 * i + 1;
            let text = Some("/dev/null".to_string());
            let at_fdcwd = u64::MAX - 99;
            corr.handle(
                Event::Str {
                    pid,
                    call_id: c,
                    arg: 1,
                    text,
                },
                &mut out,
            );
            corr.handle(
                Event::Call(rec(openat, c, [at_fdcwd, 0, 0, 0, 0, 0], 1000)),
                &mut out,
            );
            corr.handle(
                Event::Call(rec(close, c + 1, [1000, 0, 0, 0, 0, 0], 0)),
                &mut out,
            );
        }
        let written = |out: &Dataset| out.handles.rows_written as usize + out.handles.buffered();
        assert_eq!(
            written(&out),
            ADOPTION_MAX_HANDLES + 1,
            "released past the cap"
        );
        for _ in 1..ADOPTION_MAX_AGE {
            corr.tick(&mut out);
        }
        assert_eq!(written(&out), ADOPTION_MAX_HANDLES + 1, "still waiting");
        corr.tick(&mut out);
        assert_eq!(written(&out), n, "released at the age limit");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// An fd opened before tracing and closed beneath a call is kept until that call returns
    /// (the stream it may make of the fd is named by its file): beneath a call that never
    /// returns, it is written at the age limit all the same.
    #[test]
    fn an_fd_from_before_tracing_closed_beneath_a_call_that_never_returns_is_written() {
        let probes = crate::probes::load(None).unwrap();
        let close = syscall_probe(&probes, "close");
        let dir = std::env::temp_dir().join(format!("strata-held-{}", std::process::id()));
        let mut out =
            Dataset::create(&dir, "test", "held", crate::dataset::DEFAULT_FILE_MODE).unwrap();
        let mut corr = Correlator::new(probes, Clock::now());
        let pid = std::process::id();
        // The test's own stderr, open before strata looked: its handle comes from /proc.
        let rec = CallRecord {
            kind: RecordKind::Call as u32,
            func_id: close,
            call_id: 7,
            parent_id: 1 << 40,
            ts_begin: 7,
            ts_end: 8,
            pid,
            tid: pid,
            depth: 1,
            flags: 0,
            ret: 0,
            out: 0,
            args: [2, 0, 0, 0, 0, 0],
        };
        corr.handle(Event::Call(rec), &mut out);
        let written = |out: &Dataset| out.handles.rows_written as usize + out.handles.buffered();
        for _ in 1..ADOPTION_MAX_AGE {
            corr.tick(&mut out);
        }
        assert_eq!(written(&out), 0, "kept while its call may still return");
        corr.tick(&mut out);
        assert_eq!(written(&out), 1, "written at the age limit");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// An io_uring request's submission and completion records make one call (its fields are
    /// checked against real requests in tests/kernel_layers.rs). A second completion of the same request (a
    /// multishot one), or a completion whose submission was not seen, makes none; a
    /// submission never completed is dropped at the age limit.
    #[test]
    fn io_uring_submission_and_completion_join_into_one_call() {
        let probes = crate::probes::load(None).unwrap();
        let write = probes
            .iter()
            .find(|p| p.function() == "IORING_OP_WRITE")
            .unwrap()
            .id;
        let dir = std::env::temp_dir().join(format!("strata-uring-{}", std::process::id()));
        let mut out =
            Dataset::create(&dir, "test", "uring", crate::dataset::DEFAULT_FILE_MODE).unwrap();
        let mut corr = Correlator::new(probes, Clock::now());
        let pid = std::process::id();
        let begin = |req, call_id| Event::RequestBegin {
            req,
            rec: CallRecord {
                kind: RecordKind::Call as u32,
                func_id: write,
                call_id,
                parent_id: 0,
                ts_begin: 100,
                ts_end: 0,
                pid,
                tid: pid,
                depth: 0,
                flags: 0,
                ret: 0,
                out: 0,
                args: [u64::MAX, 4096, 512, 0, 0, 0],
            },
        };
        let end = |req| {
            Event::RequestEnd(strata_common::RequestEnd {
                kind: RecordKind::RequestEnd as u32,
                pid,
                req,
                ts_end: 250,
                ret: 512,
                ino: 77,
                dev: 8 << 20 | 1,
                flags: 0,
            })
        };
        corr.handle(begin(0xa000, 1), &mut out);
        corr.handle(begin(0xb000, 2), &mut out);
        assert_eq!(out.calls.buffered(), 0, "no row before the completion");
        corr.handle(end(0xa000), &mut out);
        assert_eq!(out.calls.buffered(), 1);
        corr.handle(end(0xa000), &mut out);
        corr.handle(end(0xc000), &mut out);
        assert_eq!(
            out.calls.buffered(),
            1,
            "a second completion, one never submitted"
        );
        for _ in 0..STR_MAX_AGE {
            corr.tick(&mut out);
        }
        corr.handle(end(0xb000), &mut out);
        assert_eq!(out.calls.buffered(), 1, "aged out");
        assert_eq!(corr.requests_unfinished, 1);
        corr.handle(begin(0xd000, 3), &mut out);
        corr.finish(&mut out);
        assert_eq!(corr.requests_unfinished, 2, "in flight at the end");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
