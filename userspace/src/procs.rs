//! Traced processes: identity from /proc (read when first seen and after exec), lifetime from
//! the kernel's lifecycle events, MPI rank and job ids from the environment, and the working
//! directory that relative names are resolved against.
use std::{collections::hash_map::Entry, ffi::OsString, path::Path};

use procfs::process::Process;
use strata_common::{IMAGE_ARGS, IMAGE_ARGS_PARTS, IMAGE_ENV, IMAGE_ENV_PARTS, IMAGE_PART};

use crate::{fast::HashMap, schema::ProcessRow};

/// The text after `key:` in a /proc fdinfo (`pos`, `flags`, a BPF program's
/// `run_time_ns`), trimmed.
pub fn fdinfo_value<'a>(info: &'a str, key: &str) -> Option<&'a str> {
    info.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim())
    })
}

/// Environment variables that carry the MPI rank, first match wins.
const RANK_VARS: &[&str] = &[
    "OMPI_COMM_WORLD_RANK",
    "PMIX_RANK",
    "PMI_RANK",
    "MPI_RANKID",
    // MVAPICH's mpirun_rsh, Cray's PALS and ALPS launchers.
    "MV2_COMM_WORLD_RANK",
    "PALS_RANKID",
    "ALPS_APP_PE",
    "SLURM_PROCID",
];
/// Environment variables that carry the number of MPI ranks.
const SIZE_VARS: &[&str] = &[
    "OMPI_COMM_WORLD_SIZE",
    "PMIX_SIZE",
    "PMI_SIZE",
    "MPI_NRANKS",
    "MV2_COMM_WORLD_SIZE",
    "SLURM_NTASKS",
];
const JOB_VARS: &[&str] = &["SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "FLUX_JOB_ID"];
const STEP_VARS: &[&str] = &["SLURM_STEP_ID", "SLURM_STEPID"];

#[derive(Default)]
pub struct Procs {
    live: HashMap<i32, ProcessRow>,
    /// A new image's arguments or environment as the kernel sends it, by (pid, what).
    images: HashMap<(i32, u32), Vec<u8>>,
    done: Vec<ProcessRow>,
    /// The command strata started: its row stays until `waitpid` told how it ended, which
    /// may come after its exit event.
    awaited: Option<i32>,
    /// Working directories: read from /proc when a process is first seen, inherited at fork,
    /// then followed through chdir and fchdir, so that a name opened relative to it is
    /// resolved against the directory it had at the call, even when strata handles the call
    /// late (the process changed directory since, or is gone).
    cwds: HashMap<i32, String>,
    /// Live processes found gone from /proc at the last sweep: see `sweep_gone`.
    gone: HashMap<i32, u32>,
    /// The process `ensure` found live last, while it stays live: calls come in runs of
    /// one process, and each would look it up again.
    last_ensured: Option<i32>,
    /// Whether the kernel side sends each new image's arguments and environment (kernels
    /// with BTF): /proc is then read for them only where the kernel's did not come.
    images_from_kernel: bool,
    /// New images whose arguments or environment (by (pid, what)) the kernel side is still
    /// to send, or whose parts did not all come: see [`Procs::read_awaited`].
    awaiting: std::collections::HashSet<(i32, u32), foldhash::fast::RandomState>,
}

/// Sweeps a process must be found gone at before it is taken for exited.
const GONE_SWEEPS: u32 = 2;

impl Procs {
    /// Makes sure `pid` is known, reading /proc for a process that started before tracing;
    /// true when it did.
    pub fn ensure(&mut self, pid: i32, to_epoch: impl Fn(u64) -> i64) -> bool {
        if self.last_ensured == Some(pid) {
            return false;
        }
        if self.live.contains_key(&pid) {
            self.last_ensured = Some(pid);
            return false;
        }
        let mut row = ProcessRow {
            pid,
            ..ProcessRow::default()
        };
        if let Ok(p) = Process::new(pid) {
            if let Ok(stat) = p.stat() {
                row.ppid = Some(stat.ppid);
                row.comm = Some(stat.comm.clone());
                // starttime is in clock ticks since boot, the monotonic clock's origin.
                let tps = procfs::ticks_per_second().max(1);
                row.start_ns = Some(to_epoch(stat.starttime * (1_000_000_000 / tps)));
            }
        }
        let _ = refresh_identity(&mut row);
        self.live.insert(pid, row);
        // Read now, the nearest strata gets to the process's later calls.
        let _ = self.cwd(pid);
        true
    }

    /// A new process (not a thread) created by `parent`.
    pub fn fork(&mut self, parent: i32, child: i32, ts: i64, comm: String) {
        let mut row = self.live.get(&parent).cloned().unwrap_or_default();
        row.pid = child;
        row.ppid = Some(parent);
        row.comm = Some(comm);
        row.start_ns = Some(ts);
        row.end_ns = None;
        row.exit_code = None;
        row.exit_signal = None;
        self.live.insert(child, row);
        if let Some(dir) = self.cwds.get(&parent).cloned() {
            self.cwds.insert(child, dir);
        }
    }

    /// The working directory of `pid` at the event being handled: as followed, else (a
    /// process first seen now) as /proc says now.
    pub fn cwd(&mut self, pid: i32) -> Option<&str> {
        match self.cwds.entry(pid) {
            Entry::Occupied(e) => Some(e.into_mut().as_str()),
            Entry::Vacant(e) => Some(e.insert(crate::views::cwd(pid)?).as_str()),
        }
    }

    /// The mount namespace `pid` started or last exec'd in (None: not known).
    pub fn set_mnt_ns(&mut self, pid: i32, ns: Option<u64>) {
        if let Some(row) = self.live.get_mut(&pid) {
            row.mnt_ns = ns.map(|n| n as i64);
        }
    }

    /// The root directory `pid` started or last exec'd with, as strata names it (None: not
    /// known).
    pub fn set_root_dir(&mut self, pid: i32, dir: Option<String>) {
        if let Some(row) = self.live.get_mut(&pid) {
            row.root_dir = dir;
        }
    }

    /// A successful chdir or fchdir to the absolute directory `dir` (None: not known).
    pub fn set_cwd(&mut self, pid: i32, dir: Option<String>) {
        match dir {
            Some(dir) => self.cwds.insert(pid, dir),
            None => self.cwds.remove(&pid),
        };
    }

    /// The kernel side sends each new image's arguments and environment (see
    /// [`Procs::image`]).
    pub fn set_images_from_kernel(&mut self, on: bool) {
        self.images_from_kernel = on;
    }

    /// After exec: the new image, from /proc while the process lives, else from the
    /// kernel's record of the executed file, which `filename` gives only then (the command
    /// line is then unknown). Its command line and environment are read from /proc only
    /// where the kernel side does not send them, and then the new image's `LD_LIBRARY_PATH`
    /// is given.
    pub fn exec(
        &mut self,
        pid: i32,
        comm: String,
        filename: impl FnOnce() -> Option<String>,
    ) -> Option<String> {
        let row = self.live.get_mut(&pid)?;
        row.comm = Some(comm);
        let (old_exe, old_cmdline) = (row.exe.take(), row.cmdline.take());
        match (read_exe(row), self.images_from_kernel) {
            (true, true) => {
                for what in [IMAGE_ARGS, IMAGE_ENV] {
                    self.awaiting.insert((pid, what));
                }
                None
            }
            (true, false) => read_args_env(row, true, true),
            (false, from_kernel) => {
                // Gone already: keep what strata knew if it is the same program (the
                // kernel side's copy of the arguments, where it sends one, comes next).
                let filename = filename();
                let same = !from_kernel
                    && filename.as_deref().is_some_and(|f| {
                        old_exe.as_deref() == Some(f)
                            || crate::files::look_up(f, |p| std::fs::canonicalize(p))
                                .is_ok_and(|c| old_exe == Some(crate::files::os_text(c)))
                    });
                row.exe = filename;
                if same {
                    row.cmdline = old_cmdline;
                }
                None
            }
        }
    }

    /// Whether the kernel side's copy of `pid`'s new arguments or environment has not (all)
    /// come.
    pub fn awaits_image(&self, pid: i32) -> bool {
        [IMAGE_ARGS, IMAGE_ENV]
            .iter()
            .any(|&what| self.awaiting.contains(&(pid, what)))
    }

    /// Reads from /proc what the kernel side did not send of `pid`'s new image (its record
    /// lost to a full ring buffer, or still to be handled); gives its `LD_LIBRARY_PATH` where
    /// the environment was read.
    pub fn read_awaited(&mut self, pid: i32) -> Option<Option<String>> {
        let args = self.awaiting.remove(&(pid, IMAGE_ARGS));
        let env = self.awaiting.remove(&(pid, IMAGE_ENV));
        let row = self.live.get_mut(&pid)?;
        let ld_library_path = read_args_env(row, args, env);
        env.then_some(ld_library_path)
    }

    /// A part of a new image's arguments or environment, sent by the kernel side at exec:
    /// once whole (or cut at the kernel's cap), it gives the command line, or the rank and
    /// job ids, whether or not /proc could still be read.
    pub fn image(
        &mut self,
        pid: i32,
        what: u32,
        offset: u32,
        total: u32,
        data: &[u8],
    ) -> Option<Option<String>> {
        let cap = match what {
            IMAGE_ARGS => IMAGE_ARGS_PARTS * IMAGE_PART,
            IMAGE_ENV => IMAGE_ENV_PARTS * IMAGE_PART,
            _ => return None,
        };
        let buf = self.images.entry((pid, what)).or_default();
        if offset == 0 {
            buf.clear();
        }
        // A part lost (full ring buffer): /proc's reading stands, or is made at the next
        // pass (`read_awaited`).
        if offset as usize != buf.len() {
            self.images.remove(&(pid, what));
            return None;
        }
        buf.extend_from_slice(data);
        if buf.len() < cap.min(total as usize) {
            return None;
        }
        let buf = self.images.remove(&(pid, what))?;
        self.awaiting.remove(&(pid, what));
        let row = self.live.get_mut(&pid)?;
        if what == IMAGE_ARGS {
            set_cmdline(row, &buf);
            None
        } else {
            apply_env(row, &id_vars(&buf));
            Some(crate::libraries::ld_library_path(&buf))
        }
    }

    /// Identity known to strata itself (the command it started), before any event. Its row
    /// is held back until [`Procs::set_wait_status`].
    pub fn preset(&mut self, pid: i32, exe: String, cmdline: String, start_ns: i64) {
        self.awaited = Some(pid);
        self.live.insert(
            pid,
            ProcessRow {
                pid,
                ppid: Some(std::process::id() as i32),
                exe: Some(exe),
                cmdline: Some(cmdline),
                start_ns: Some(start_ns),
                ..ProcessRow::default()
            },
        );
        // Gated before exec: its directory is the one it will start in.
        let _ = self.cwd(pid);
    }

    pub fn set_exit_code(&mut self, pid: i32, code: i32) {
        if let Some(row) = self.live.get_mut(&pid) {
            row.exit_code = Some(code);
        }
    }

    /// Sets what `waitpid` told about a child strata started itself.
    pub fn set_wait_status(&mut self, pid: i32, code: Option<i32>, signal: Option<i32>) {
        let row = self
            .live
            .get_mut(&pid)
            .or_else(|| self.done.iter_mut().find(|r| r.pid == pid));
        if let Some(row) = row {
            if code.is_some() {
                row.exit_code = code;
            }
            row.exit_signal = signal;
        }
        if self.awaited == Some(pid) {
            self.awaited = None;
        }
    }

    /// Rows of processes that ended, except one still waiting for its wait status.
    /// Whether rows of ended processes wait for [`Self::take_done`].
    pub fn has_done(&self) -> bool {
        !self.done.is_empty()
    }

    pub fn take_done(&mut self) -> Vec<ProcessRow> {
        if self.done.is_empty() {
            return Vec::new();
        }
        let awaited = self.awaited;
        let (held, done) = std::mem::take(&mut self.done)
            .into_iter()
            .partition(|r| Some(r.pid) == awaited);
        self.done = held;
        done
    }

    /// `pid` exited at `ts` (None: when is not known).
    pub fn exit(&mut self, pid: i32, ts: Option<i64>) {
        self.images.retain(|(p, _), _| *p != pid);
        self.awaiting.retain(|(p, _)| *p != pid);
        self.cwds.remove(&pid);
        self.gone.remove(&pid);
        if self.last_ensured == Some(pid) {
            self.last_ensured = None;
        }
        if let Some(mut row) = self.live.remove(&pid) {
            row.end_ns = ts;
            self.done.push(row);
        }
    }

    /// Drops the row of `pid`, which ended (`exit`), unwritten.
    pub fn discard(&mut self, pid: i32) {
        self.done.retain(|r| r.pid != pid);
    }

    /// Live processes that have exited without strata seeing it (their exit record was lost
    /// to a full ring buffer): gone from /proc at `GONE_SWEEPS` sweeps in a row. Sweeps are
    /// far enough apart that records of theirs still waiting to be handled are handled
    /// first. Without this, a node traced under a sustained overload kept every such
    /// process, and its handles, to the end (1,200 after 4 minutes, and growing).
    pub fn sweep_gone(&mut self) -> Vec<i32> {
        let awaited = self.awaited;
        let mut gone = HashMap::default();
        let mut exited = Vec::new();
        for &pid in self.live.keys() {
            if Some(pid) == awaited || Path::new(&format!("/proc/{pid}")).exists() {
                continue;
            }
            let sweeps = self.gone.get(&pid).copied().unwrap_or(0) + 1;
            if sweeps >= GONE_SWEEPS {
                exited.push(pid);
            } else {
                gone.insert(pid, sweeps);
            }
        }
        self.gone = gone;
        exited
    }

    /// End of the run: every row is final.
    pub fn drain_all(&mut self) {
        self.awaited = None;
        self.last_ensured = None;
        self.done.extend(self.live.drain().map(|(_, r)| r));
        self.cwds.clear();
    }

    pub fn contains(&self, pid: i32) -> bool {
        self.live.contains_key(&pid)
    }
}

/// Reads exe, cmdline and environment from /proc; None when the process is gone, else the
/// environment's `LD_LIBRARY_PATH` (where the loader will look for its libraries).
fn refresh_identity(row: &mut ProcessRow) -> Option<Option<String>> {
    read_exe(row).then(|| read_args_env(row, true, true))
}

/// Reads the program's link from /proc; false when the process is gone.
fn read_exe(row: &mut ProcessRow) -> bool {
    let Ok(exe) = std::fs::read_link(format!("/proc/{}/exe", row.pid)) else {
        return false;
    };
    row.exe = Some(crate::files::os_text(exe));
    true
}

/// Reads the command line (`args`) and the environment (`env`) from /proc; gives the
/// environment's `LD_LIBRARY_PATH` where it was read.
fn read_args_env(row: &mut ProcessRow, args: bool, env: bool) -> Option<String> {
    if args {
        if let Some(args) = read_small(&format!("/proc/{}/cmdline", row.pid)) {
            set_cmdline(row, &args);
        }
    }
    if !env {
        return None;
    }
    let env = read_small(&format!("/proc/{}/environ", row.pid))?;
    apply_env(row, &id_vars(&env));
    crate::libraries::ld_library_path(&env)
}

/// The command line from its arguments as the kernel keeps them (NUL after each), where
/// there are any.
fn set_cmdline(row: &mut ProcessRow, args: &[u8]) {
    let args: Vec<String> = (args.split(|b| *b == 0))
        .filter(|s| !s.is_empty())
        .map(crate::files::text)
        .collect();
    if !args.is_empty() {
        row.cmdline = Some(args.join(" "));
    }
}

/// A /proc file read whole, into room for a typical one from the start: a growing buffer
/// reads it in small pieces, each a system call (and for a seq_file such as maps, each a
/// new search for where the last one stopped). Read until the end without asking the file's
/// size first, as `read_to_end` does with a `statx` and an `lseek` that /proc answers with 0:
/// two of the dozen system calls of a new process's /proc reads.
pub(crate) fn read_small(path: &str) -> Option<Vec<u8>> {
    read_whole(&mut std::fs::File::open(path).ok()?)
}

/// An open /proc file read whole, as [`read_small`] reads one.
pub(crate) fn read_whole(file: &mut std::fs::File) -> Option<Vec<u8>> {
    use std::io::Read as _;
    let mut buf = vec![0; 16 << 10];
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(2 * len, 0);
        }
        match file.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    buf.truncate(len);
    Some(buf)
}

/// The variables strata reads in an environment (`name=value`, NUL after each): an
/// environment has hundreds, and a process's start is no time to copy them all.
fn id_vars(env: &[u8]) -> std::collections::HashMap<OsString, OsString> {
    use std::os::unix::ffi::OsStringExt as _;
    env.split(|b| *b == 0)
        .filter_map(|kv| {
            let eq = kv.iter().position(|&b| b == b'=')?;
            let name = std::str::from_utf8(&kv[..eq]).ok()?;
            is_id_var(name).then(|| (name.into(), OsString::from_vec(kv[eq + 1..].to_vec())))
        })
        .collect()
}

/// Whether strata reads environment variable `name`.
fn is_id_var(name: &str) -> bool {
    [RANK_VARS, SIZE_VARS, JOB_VARS, STEP_VARS]
        .iter()
        .any(|vars| vars.contains(&name))
}

/// Rank and job ids from an environment; a process keeps those it inherited where its own
/// environment has none.
fn apply_env<S: std::hash::BuildHasher>(
    row: &mut ProcessRow,
    env: &std::collections::HashMap<OsString, OsString, S>,
) {
    let ids = JobIds::from_env(env);
    row.rank = ids.rank.or(row.rank);
    row.world_size = ids.world_size.or(row.world_size);
    row.job_id = ids.job_id.or(row.job_id.take());
    row.step_id = ids.step_id.or(row.step_id.take());
}

/// Rank and job ids found in one environment.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct JobIds {
    pub rank: Option<i32>,
    pub world_size: Option<i32>,
    pub job_id: Option<String>,
    pub step_id: Option<String>,
}

impl JobIds {
    pub fn from_env<S: std::hash::BuildHasher>(
        env: &std::collections::HashMap<OsString, OsString, S>,
    ) -> Self {
        let first = |names: &[&str]| {
            names.iter().find_map(|n| {
                env.get(&OsString::from(n))
                    .map(|v| v.to_string_lossy().into_owned())
            })
        };
        Self {
            rank: first(RANK_VARS).and_then(|v| v.parse().ok()),
            world_size: first(SIZE_VARS).and_then(|v| v.parse().ok()),
            job_id: first(JOB_VARS),
            step_id: first(STEP_VARS),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process seen again after its exit (its pid reused, or calls handled after the
    /// exit) gets a row of its own again, however often it was seen before.
    #[test]
    fn a_process_seen_after_its_exit_gets_a_new_row() {
        let pid = std::process::id() as i32;
        let mut p = Procs::default();
        for _ in 0..3 {
            p.ensure(pid, |t| t as i64);
        }
        p.exit(pid, Some(5));
        p.ensure(pid, |t| t as i64);
        assert!(p.contains(pid));
        p.exit(pid, Some(9));
        let ends: Vec<Option<i64>> = p.take_done().iter().map(|r| r.end_ns).collect();
        assert_eq!(ends, [Some(5), Some(9)]);
    }

    /// A process whose exit strata never saw is taken for exited once it has been gone from
    /// /proc at two sweeps, and written with no end time; a live one, and the command strata
    /// waits for, stay.
    #[test]
    fn processes_gone_unseen_are_let_go_at_the_second_sweep() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id() as i32;
        child.wait().unwrap();
        let mut waited = std::process::Command::new("true").spawn().unwrap();
        let awaited = waited.id() as i32;
        waited.wait().unwrap();
        let me = std::process::id() as i32;
        let mut procs = Procs::default();
        for pid in [dead, awaited, me] {
            procs.ensure(pid, |t| t as i64);
        }
        procs.awaited = Some(awaited);
        assert_eq!(
            procs.sweep_gone(),
            Vec::<i32>::new(),
            "not at the first sweep"
        );
        assert_eq!(procs.sweep_gone(), vec![dead]);
        procs.exit(dead, None);
        assert!(!procs.contains(dead));
        assert!(procs.contains(me) && procs.contains(awaited));
        let rows = procs.take_done();
        let row = rows.iter().find(|r| r.pid == dead).unwrap();
        assert_eq!(row.end_ns, None, "when it ended is not known");
        assert_eq!(procs.sweep_gone(), Vec::<i32>::new(), "let go once");
    }

    /// A live process's ids come from its environment in /proc, among many other variables,
    /// a value with `=` in it kept whole.
    #[test]
    fn a_live_process_has_the_ids_of_its_environment() {
        let mut cmd = std::process::Command::new("sleep");
        cmd.arg("10").env_clear();
        for i in 0..300 {
            cmd.env(format!("FILLER_{i}"), "x".repeat(i));
        }
        cmd.env("PMIX_RANK", "5")
            .env("SLURM_NTASKS", "12")
            .env("SLURM_JOB_ID", "98=7");
        let mut child = cmd.spawn().unwrap();
        let pid = child.id() as i32;
        let mut procs = Procs::default();
        procs.ensure(pid, |t| t as i64);
        let _ = child.kill();
        let _ = child.wait();
        let row = &procs.live[&pid];
        assert_eq!(
            (
                row.rank,
                row.world_size,
                row.job_id.as_deref(),
                row.step_id.as_deref()
            ),
            (Some(5), Some(12), Some("98=7"), None)
        );
        assert_eq!(row.cmdline.as_deref(), Some("sleep 10"));
    }

    #[test]
    fn job_ids_from_environment() {
        let env: HashMap<OsString, OsString> = [
            ("SLURM_PROCID", "7"),
            ("OMPI_COMM_WORLD_RANK", "3"),
            ("OMPI_COMM_WORLD_SIZE", "8"),
            ("SLURM_JOB_ID", "12345"),
            ("SLURM_STEP_ID", "0"),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
        let ids = JobIds::from_env(&env);
        assert_eq!(ids.rank, Some(3), "the MPI library's own rank wins");
        assert_eq!(ids.world_size, Some(8));
        assert_eq!(ids.job_id.as_deref(), Some("12345"));
        assert_eq!(ids.step_id.as_deref(), Some("0"));
        assert_eq!(JobIds::from_env(&HashMap::default()), JobIds::default());
    }

    #[test]
    fn lifecycle() {
        let mut p = Procs::default();
        p.ensure(std::process::id() as i32, |t| t as i64);
        let me = std::process::id() as i32;
        assert!(p.contains(me));
        p.fork(me, 999_999, 5, "child".into());
        p.set_exit_code(999_999, 3);
        p.exit(999_999, Some(9));
        let row = p.done.iter().find(|r| r.pid == 999_999).unwrap();
        assert_eq!(
            (row.ppid, row.exit_code, row.end_ns),
            (Some(me), Some(3), Some(9))
        );
        assert!(row.exe.is_some(), "inherits the creator's image until exec");
    }

    /// A child starts in its parent's directory; its chdir moves only itself; its entry goes
    /// with it.
    #[test]
    fn working_directories() {
        let mut p = Procs::default();
        let me = std::process::id() as i32;
        p.ensure(me, |t| t as i64);
        let here = std::env::current_dir().unwrap();
        assert_eq!(p.cwd(me), here.to_str());
        p.set_cwd(me, Some("/a".into()));
        p.fork(me, 999_998, 5, "child".into());
        assert_eq!(p.cwd(999_998), Some("/a"));
        p.set_cwd(999_998, Some("/b".into()));
        assert_eq!(p.cwd(999_998), Some("/b"));
        assert_eq!(p.cwd(me), Some("/a"));
        p.exit(999_998, Some(9));
        assert!(!p.cwds.contains_key(&999_998));
        assert_eq!(p.cwd(999_998), None, "no such process to ask");
        // Not known after a chdir: asked again.
        p.set_cwd(me, None);
        assert_eq!(p.cwd(me), here.to_str());
    }

    /// Arguments and environment as the kernel side sends them: parts of a NUL-separated
    /// area, complete at its size or at the cap; a missing part leaves the row as it was.
    #[test]
    fn identity_from_the_image_parts() {
        let mut p = Procs::default();
        p.preset(50, "/bin/app".into(), "app".into(), 1);
        let args = b"/bin/app\0-n\0four\0";
        p.image(50, IMAGE_ARGS, 0, args.len() as u32, &args[..5]);
        assert_eq!(p.live[&50].cmdline.as_deref(), Some("app"), "not whole yet");
        p.image(50, IMAGE_ARGS, 5, args.len() as u32, &args[5..]);
        assert_eq!(p.live[&50].cmdline.as_deref(), Some("/bin/app -n four"));

        // An environment larger than the cap: whole once the cap is reached.
        let mut env = b"A=1\0OMPI_COMM_WORLD_RANK=3\0OMPI_COMM_WORLD_SIZE=8\0".to_vec();
        let cap = IMAGE_ENV_PARTS * IMAGE_PART;
        env.resize(cap, b'x');
        let total = (cap + 100) as u32;
        for (i, part) in env.chunks(IMAGE_PART).enumerate() {
            p.image(50, IMAGE_ENV, (i * IMAGE_PART) as u32, total, part);
        }
        assert_eq!(
            (p.live[&50].rank, p.live[&50].world_size),
            (Some(3), Some(8))
        );

        // A lost part: nothing is applied.
        p.preset(51, "/bin/app".into(), "app".into(), 1);
        let env = b"SLURM_PROCID=5\0";
        p.image(51, IMAGE_ENV, 512, 600, &env[..]);
        p.image(51, IMAGE_ENV, 0, env.len() as u32, &env[..]);
        assert_eq!(p.live[&51].rank, Some(5), "a new area starts at offset 0");
        p.image(51, IMAGE_ENV, 0, 9000, b"SLURM_PROCID=6\0");
        p.image(51, IMAGE_ENV, 7000, 9000, b"y\0");
        assert_eq!(p.live[&51].rank, Some(5));
        p.image(51, IMAGE_ARGS, 0, 1000, b"/bin/x\0");
        assert_eq!(p.live[&51].cmdline.as_deref(), Some("app"));
    }

    /// At an exec, a kernel that sends the new image's arguments and environment leaves
    /// /proc unread for them: the kernel's copy gives the command line, the ids and the
    /// environment's `LD_LIBRARY_PATH`. What did not come whole is read from /proc at the
    /// next pass; without the kernel's copy, /proc is read at the exec.
    #[test]
    fn an_exec_reads_from_proc_only_what_the_kernel_did_not_send() {
        let mut child = std::process::Command::new("sleep")
            .arg("10")
            .env_clear()
            .env("PMIX_RANK", "5")
            .env("LD_LIBRARY_PATH", "/opt/proc/lib")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let mut p = Procs::default();
        p.set_images_from_kernel(true);
        p.ensure(pid, |t| t as i64);
        p.live.get_mut(&pid).unwrap().rank = None;

        assert_eq!(p.exec(pid, "sleep".into(), || None), None);
        let row = &p.live[&pid];
        assert!(row.exe.as_deref().is_some_and(|e| e.ends_with("/sleep")));
        assert_eq!(
            (row.cmdline.as_deref(), row.rank),
            (None, None),
            "/proc unread"
        );
        assert!(p.awaits_image(pid));
        let args = b"sleep\0ten\0";
        assert_eq!(p.image(pid, IMAGE_ARGS, 0, 10, args), None);
        let env = b"PMIX_RANK=6\0LD_LIBRARY_PATH=/opt/kernel/lib\0";
        assert_eq!(
            p.image(pid, IMAGE_ENV, 0, env.len() as u32, env),
            Some(Some("/opt/kernel/lib".into()))
        );
        assert!(!p.awaits_image(pid));
        let row = &p.live[&pid];
        assert_eq!(
            (row.cmdline.as_deref(), row.rank),
            (Some("sleep ten"), Some(6))
        );
        assert_eq!(p.read_awaited(pid), None, "nothing left to read");

        // The environment's second part lost: /proc's, read at the next pass.
        p.exec(pid, "sleep".into(), || None);
        p.image(pid, IMAGE_ARGS, 0, 10, args);
        assert_eq!(p.image(pid, IMAGE_ENV, 0, 40_000, &env[..]), None);
        assert_eq!(p.image(pid, IMAGE_ENV, 32_768, 40_000, b"X=1\0"), None);
        assert!(p.awaits_image(pid));
        assert_eq!(p.read_awaited(pid), Some(Some("/opt/proc/lib".into())));
        let row = &p.live[&pid];
        assert_eq!(
            (row.cmdline.as_deref(), row.rank),
            (Some("sleep ten"), Some(5))
        );
        assert!(!p.awaits_image(pid));

        // No copy from the kernel: /proc at the exec.
        p.set_images_from_kernel(false);
        assert_eq!(
            p.exec(pid, "sleep".into(), || None),
            Some("/opt/proc/lib".into())
        );
        assert_eq!(p.live[&pid].cmdline.as_deref(), Some("sleep 10"));
        assert!(!p.awaits_image(pid));
        let _ = child.kill();
        let _ = child.wait();
    }

    #[test]
    fn the_started_command_waits_for_its_wait_status() {
        let mut p = Procs::default();
        p.preset(41, "/bin/job".into(), "job".into(), 1);
        p.fork(41, 42, 2, "job".into());
        p.exit(42, Some(3));
        p.exit(41, Some(4));
        let first: Vec<i32> = p.take_done().iter().map(|r| r.pid).collect();
        assert_eq!(first, [42], "the command's row is held");
        p.set_wait_status(41, None, Some(9));
        let rows = p.take_done();
        assert_eq!(rows.len(), 1);
        assert_eq!(
            (rows[0].pid, rows[0].exit_signal, rows[0].end_ns),
            (41, Some(9), Some(4))
        );
    }
}
