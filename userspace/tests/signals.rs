//! Signals at any moment leave a valid dataset with every event strata had received; the
//! traced job is never killed by strata. Ground truth: tests/workloads/signals.c.
mod common;

use std::{
    path::{Path, PathBuf},
    process::{Child, Stdio},
    thread::sleep,
    time::{Duration, Instant},
};

use common::{RowExt as _, Val, build_c, require_root, rows, scratch, strata};
use nix::{
    sys::signal::{Signal, kill},
    unistd::Pid,
};

/// Writes the workload makes before it reports ready.
const WRITES: i64 = 20_000;

struct Traced {
    strata: Child,
    out: PathBuf,
    file: PathBuf,
    ready: PathBuf,
    log: PathBuf,
}

/// `strata record -- signals FILE WRITES READY` in `dir/name`, with a short flush interval.
fn start(exe: &Path, dir: &Path, name: &str) -> Traced {
    start_with(exe, dir, name, &[], &[])
}

/// `start` with more `strata record` options and more workload arguments; the workload
/// writes to `/dev/null` when `workload` has any (to make many writes without their bytes).
fn start_with(exe: &Path, dir: &Path, name: &str, options: &[&str], workload: &[&str]) -> Traced {
    let out = dir.join(format!("out-{name}"));
    let file = if workload.is_empty() {
        dir.join(format!("{name}.dat"))
    } else {
        PathBuf::from("/dev/null")
    };
    let ready = dir.join(format!("{name}.ready"));
    let log = dir.join(format!("{name}.stderr"));
    // A short flush interval, unless the test gives its own.
    let flush: &[&str] = if options.contains(&"--flush-interval") {
        &[]
    } else {
        &["--flush-interval", "200ms"]
    };
    let strata = strata()
        .args(["record", "-q", "--layers", "posix"])
        .args(flush)
        .args(options)
        .arg("-o")
        .arg(&out)
        .arg("--")
        .arg(exe)
        .arg(&file)
        .arg(WRITES.to_string())
        .arg(&ready)
        .args(workload)
        .stdout(Stdio::null())
        // A file, not a pipe: the workload inherits it and outlives strata.
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    Traced {
        strata,
        out,
        file,
        ready,
        log,
    }
}

impl Traced {
    /// The workload's pid, once every write of it has returned.
    fn wait_ready(&self) -> i32 {
        let t = Instant::now();
        loop {
            if let Ok(s) = std::fs::read_to_string(&self.ready) {
                return s.trim().parse().unwrap();
            }
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "the workload never got ready"
            );
            sleep(Duration::from_millis(5));
        }
    }

    /// strata's exit code; it must end within 30 s (else it is killed and the test fails).
    fn wait(mut self) -> (Option<i32>, PathBuf, PathBuf) {
        let t = Instant::now();
        let status = loop {
            if let Some(s) = self.strata.try_wait().unwrap() {
                break Some(s);
            }
            if t.elapsed() > Duration::from_secs(30) {
                let _ = self.strata.kill();
                let _ = self.strata.wait();
                break None;
            }
            sleep(Duration::from_millis(10));
        };
        eprintln!(
            "--- strata stderr ---\n{}",
            std::fs::read_to_string(&self.log).unwrap_or_default()
        );
        let status = status.expect("strata did not end within 30 s");
        (status.code(), self.out, self.file)
    }
}

/// Exactly the workload's open and its WRITES pwrites, at their offsets and sizes.
fn assert_every_write(out: &Path, file: &Path, pid: i32) {
    let calls = rows(out, "calls");
    let path = file.to_str().unwrap();
    let open = calls
        .iter()
        .find(|c| c.s("path") == Some(path))
        .expect("the open of the data file");
    let file_id = open.i("file_id");
    let mut writes: Vec<_> = calls
        .iter()
        .filter(|c| c.i("pid") == Some(i64::from(pid)) && c.s("function") == Some("pwrite64"))
        .collect();
    writes.sort_by_key(|c| c.i("ts_begin_ns"));
    assert_eq!(writes.len() as i64, WRITES, "pwrite64 rows");
    let mut offset = 0;
    for (i, w) in writes.iter().enumerate() {
        let len = i as i64 % 4096 + 1;
        assert_eq!(
            (w.i("offset"), w.i("bytes_result"), w.i("file_id")),
            (Some(offset), Some(len), file_id),
            "write {i}"
        );
        offset += len;
    }
}

/// pwrite64 rows of `pid` in the files strata has flushed so far.
fn written(out: &Path, pid: i32) -> i64 {
    if !out.join("calls").exists() {
        return 0;
    }
    rows(out, "calls")
        .iter()
        .filter(|c| c.i("pid") == Some(i64::from(pid)) && c.s("function") == Some("pwrite64"))
        .count() as i64
}

fn stop_workload(pid: i32) {
    let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
}

#[test]
fn a_stop_signal_drains_every_event_already_made() {
    require_root();
    let dir = scratch("signals_stop");
    let exe = build_c("cc", "signals.c", &dir.join("signals"), &[]);
    for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        let t = start(&exe, &dir, sig.as_str());
        let pid = t.wait_ready();
        // At once: strata may not have read the records yet.
        kill(Pid::from_raw(t.strata.id() as i32), sig).unwrap();
        let (code, out, file) = t.wait();
        // strata never kills the job: the workload is still waiting for its signal.
        let alive = kill(Pid::from_raw(pid), None).is_ok();
        stop_workload(pid);
        assert_eq!(code, Some(128 + sig as i32), "{sig}: strata's exit code");
        assert!(alive, "{sig}: the traced workload did not survive strata");
        let run = rows(&out, "run");
        assert_eq!(run[0].get("complete"), Some(&Val::B(true)), "{sig}");
        assert_eq!(run[0].i("events_lost"), Some(0), "{sig}");
        assert_every_write(&out, &file, pid);
    }
}

/// The calls the traced process has in progress as strata stops have their rows, without a
/// return, ending at the stop: the fgets one thread is blocked in and the read(2) beneath it,
/// and the fscanf another thread runs on a CPU (scanning /dev/zero for a newline); every
/// parent a row names is a row. Ground truth: tests/workloads/blocked_at_stop.c.
#[test]
fn a_stop_keeps_the_calls_in_progress() {
    require_root();
    let dir = scratch("signals_in_progress");
    let exe = build_c(
        "cc",
        "blocked_at_stop.c",
        &dir.join("blocked_at_stop"),
        &["-pthread"],
    );
    let out = dir.join("out");
    let ready = dir.join("ready");
    let log = dir.join("stderr");
    let strata = strata()
        .args(["record", "-q", "--layers", "posix,stdio", "-o"])
        .arg(&out)
        .arg("--")
        .arg(&exe)
        .arg(&ready)
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let t = Traced {
        strata,
        out,
        file: PathBuf::new(),
        ready,
        log,
    };
    let pid = t.wait_ready();
    let since = Instant::now();
    while !std::fs::read_to_string(format!("/proc/{pid}/syscall"))
        .is_ok_and(|s| s.starts_with("0 "))
    {
        assert!(
            since.elapsed() < Duration::from_secs(30),
            "never in read(2)"
        );
        sleep(Duration::from_millis(5));
    }
    let scanner: i64 = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .find(|&tid| tid != i64::from(pid))
        .expect("the scanning thread");
    // Runnable, never asleep: it only reads /dev/zero and scans what it read.
    let state = std::fs::read_to_string(format!("/proc/{pid}/task/{scanner}/stat")).unwrap();
    let state = state.rsplit_once(") ").unwrap().1.chars().next();
    assert_eq!(state, Some('R'), "the scanning thread's state");
    let before_stop = std::time::SystemTime::now();
    kill(Pid::from_raw(t.strata.id() as i32), Signal::SIGINT).unwrap();
    let (code, out, _) = t.wait();
    stop_workload(pid);
    assert_eq!(code, Some(130), "strata's exit code");
    let calls = rows(&out, "calls");
    let ids: std::collections::HashSet<i64> = calls.iter().filter_map(|c| c.i("call_id")).collect();
    for c in &calls {
        if let Some(parent) = c.i("parent_id") {
            assert!(ids.contains(&parent), "no parent row for {c:?}");
        }
    }
    let stop = before_stop
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    let unfinished = |c: &common::Row| {
        assert_eq!(
            (c.i("bytes_result"), c.i("ret"), c.i("errno"), c.i("depth")),
            (None, None, None, Some(0)),
            "{c:?}"
        );
        assert!(c.i("ts_end_ns").unwrap() >= stop, "ends at the stop: {c:?}");
    };
    let fgets = calls
        .iter()
        .find(|c| c.i("pid") == Some(i64::from(pid)) && c.s("function") == Some("fgets"))
        .expect("the fgets in progress");
    unfinished(fgets);
    assert_eq!(fgets.i("bytes_requested"), Some(64), "{fgets:?}");
    let read = calls
        .iter()
        .find(|c| c.i("parent_id") == fgets.i("call_id") && c.s("function") == Some("read"))
        .expect("the read(2) in progress beneath the fgets");
    assert_eq!(
        (
            read.i("bytes_requested"),
            read.i("ret"),
            read.i("ts_end_ns")
        ),
        (Some(4096), None, fgets.i("ts_end_ns")),
        "{read:?}"
    );
    // The thread on a CPU: its fscanf, and the reads of 1 MiB it made, all beneath it.
    let scans: Vec<_> = calls
        .iter()
        .filter(|c| {
            c.i("tid") == Some(scanner) && c.s("function").is_some_and(|f| f.ends_with("fscanf"))
        })
        .collect();
    assert_eq!(scans.len(), 1, "the scanning thread's fscanf: {scans:?}");
    let scan = scans[0];
    unfinished(scan);
    assert_eq!(
        scan.i("ts_end_ns"),
        fgets.i("ts_end_ns"),
        "one stop: {scan:?}"
    );
    let reads: Vec<_> = calls
        .iter()
        .filter(|c| c.i("tid") == Some(scanner) && c.s("function") == Some("read"))
        .collect();
    assert!(!reads.is_empty(), "the scanning thread's reads");
    for r in &reads {
        assert_eq!(
            (r.i("parent_id"), r.i("bytes_requested")),
            (scan.i("call_id"), Some(1 << 20)),
            "{r:?}"
        );
        assert!(r.i("ts_end_ns") <= scan.i("ts_end_ns"), "{r:?}");
    }
}

#[test]
fn a_killed_command_keeps_every_event_it_made() {
    require_root();
    let dir = scratch("signals_command");
    let exe = build_c("cc", "signals.c", &dir.join("signals"), &[]);
    let t = start(&exe, &dir, "killed");
    let pid = t.wait_ready();
    stop_workload(pid);
    let (code, out, file) = t.wait();
    assert_eq!(code, Some(128 + 9), "strata passes on the command's signal");
    let procs = rows(&out, "processes");
    let p = procs
        .iter()
        .find(|p| p.i("pid") == Some(i64::from(pid)))
        .expect("the workload's process row");
    assert_eq!(p.i("exit_signal"), Some(9));
    assert_every_write(&out, &file, pid);
}

#[test]
fn a_killed_strata_leaves_every_row_flushed_before() {
    require_root();
    let dir = scratch("signals_strata");
    let exe = build_c("cc", "signals.c", &dir.join("signals"), &[]);
    let t = start(&exe, &dir, "strata");
    let pid = t.wait_ready();
    // Once every write is in flushed files (read back while strata runs: files appear
    // whole), kill strata: they must all still be there and readable.
    let since = Instant::now();
    while written(&t.out, pid) < WRITES {
        assert!(
            since.elapsed() < Duration::from_secs(30),
            "the writes were never flushed"
        );
        sleep(Duration::from_millis(100));
    }
    kill(Pid::from_raw(t.strata.id() as i32), Signal::SIGKILL).unwrap();
    let (code, out, file) = t.wait();
    let alive = kill(Pid::from_raw(pid), None).is_ok();
    stop_workload(pid);
    assert_eq!(code, None, "killed by a signal");
    assert!(alive, "the traced workload did not survive strata");
    let run = rows(&out, "run");
    assert_eq!(run[0].i("end_ns"), None, "the run never ended");
    assert_every_write(&out, &file, pid);
    // Nothing half-written is visible: in-progress files start with a dot.
    let mut hidden = Vec::new();
    for entry in walk(&out) {
        let name = entry.file_name().unwrap().to_str().unwrap();
        assert!(
            name.ends_with(".parquet") || name.starts_with('.'),
            "unexpected file {}",
            entry.display()
        );
        if name.starts_with('.') {
            hidden.push(entry);
        }
    }
    // The killed run's dataset compacts, once what strata was writing when killed is older
    // than a file in progress can be: with every write still there once, and no hidden file
    // left.
    let then = std::time::SystemTime::now() - 2 * strata::inprogress::STALE_AFTER;
    for f in &hidden {
        let f = std::fs::OpenOptions::new().write(true).open(f).unwrap();
        f.set_modified(then).unwrap();
    }
    let res = strata().arg("compact").arg(&out).output().unwrap();
    let said = String::from_utf8_lossy(&res.stdout);
    assert!(res.status.success(), "strata compact: {said}");
    assert_every_write(&out, &file, pid);
    let left: Vec<_> = (walk(&out).into_iter())
        .filter(|f| f.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    assert!(left.is_empty(), "hidden files left: {left:?}\n{said}");
}

/// A quiet run: the few rows of each flush go into the table's newest file, written again
/// whole and renamed over itself, not into a file each. Read back while strata runs, each
/// table is at most one file whose writes only grow; at the end the calls table is one file
/// of one row group with every write once.
#[test]
fn a_quiet_run_grows_one_file_per_table_not_one_per_flush() {
    require_root();
    let dir = scratch("signals_quiet");
    let exe = build_c("cc", "signals.c", &dir.join("signals"), &[]);
    // 300 us or more after each write: some 7 s of writes, a flush of a few thousand each
    // second (whose rewrites stay within the budget of 32,768 rows a second).
    let t = start_with(
        &exe,
        &dir,
        "quiet",
        &["--flush-interval", "1s"],
        &["pace", "300"],
    );
    let out = t.out.clone();
    let parquet = |table: &str| -> Vec<PathBuf> {
        let dir = out.join(table);
        if !dir.exists() {
            return Vec::new();
        }
        (walk(&dir).into_iter())
            .filter(|p| !p.file_name().unwrap().to_str().unwrap().starts_with('.'))
            .collect()
    };
    let tables = ["calls", "handles", "files", "processes", "probes"];
    let at_most_one_file_each = || {
        for table in tables {
            let files = parquet(table);
            assert!(files.len() <= 1, "{table}: {files:?}");
        }
    };
    let (mut seen, mut looks) = (0, 0);
    let since = Instant::now();
    while !t.ready.exists() {
        assert!(since.elapsed() < Duration::from_secs(60), "never ready");
        at_most_one_file_each();
        if !parquet("calls").is_empty() {
            let n = rows(&out, "calls")
                .iter()
                .filter(|c| c.s("function") == Some("pwrite64"))
                .count() as i64;
            assert!(n >= seen, "the calls file went from {seen} writes to {n}");
            if n > seen && n < WRITES {
                looks += 1;
            }
            seen = n;
        }
        sleep(Duration::from_millis(20));
    }
    let pid = t.wait_ready();
    stop_workload(pid);
    let (code, _, file) = t.wait();
    assert_eq!(code, Some(128 + 9), "strata passes on the command's signal");
    assert!(
        looks >= 3,
        "the calls file was seen growing only {looks} times"
    );
    at_most_one_file_each();
    let calls = parquet("calls");
    let f = std::fs::File::open(&calls[0]).unwrap();
    let reader = parquet::file::reader::SerializedFileReader::new(f).unwrap();
    use parquet::file::reader::FileReader as _;
    assert_eq!(
        reader.metadata().num_row_groups(),
        1,
        "{}",
        calls[0].display()
    );
    assert_every_write(&out, &file, pid);
}

/// A signal while strata loads and attaches (from the moment its output exists, i.e. its
/// handlers are installed): a valid dataset and the exit code for the signal.
#[test]
fn a_signal_during_start_up_leaves_a_valid_dataset() {
    require_root();
    let dir = scratch("signals_start");
    let exe = build_c("cc", "signals.c", &dir.join("signals"), &[]);
    for delay_ms in [0, 10, 30, 100, 300] {
        let t = start(&exe, &dir, &format!("start{delay_ms}"));
        let since = Instant::now();
        while !t.out.exists() {
            assert!(since.elapsed() < Duration::from_secs(30), "no output dir");
            sleep(Duration::from_millis(1));
        }
        sleep(Duration::from_millis(delay_ms));
        kill(Pid::from_raw(t.strata.id() as i32), Signal::SIGTERM).unwrap();
        let (code, out, file) = t.wait();
        let left = running_with_arg(&file);
        for pid in &left {
            stop_workload(*pid);
        }
        assert_eq!(code, Some(128 + 15), "after {delay_ms} ms");
        let run = rows(&out, "run");
        assert_eq!(run.len(), 1, "after {delay_ms} ms");
        assert_eq!(run[0].get("complete"), Some(&Val::B(true)));
        for table in ["calls", "files", "handles", "probes"] {
            // Every visible file of every table parses.
            let _ = rows(&out, table);
        }
        // A command that never ran has no process row.
        let procs = rows(&out, "processes");
        if left.is_empty() {
            assert!(procs.is_empty(), "after {delay_ms} ms: {procs:?}");
        } else {
            assert!(procs.iter().any(|p| p.i("pid") == Some(i64::from(left[0]))));
        }
    }
}

/// A strata that cannot keep up (here: stopped while the workload writes into a 1 MiB ring
/// buffer) loses events and counts every one: the run's `events_lost` is exactly the number
/// of writes missing from the calls table, the writes it has are true ones, and the summary
/// says how to avoid the loss.
#[test]
fn every_lost_event_is_counted() {
    require_root();
    let dir = scratch("signals_lost");
    let exe = build_c("cc", "signals.c", &dir.join("signals"), &[]);
    let t = start_with(&exe, &dir, "lost", &["--ring-buffer-mib", "1"], &["gated"]);
    // The workload has opened its file and waits for SIGUSR1; after its writes it stops
    // itself, without any other traced call in between.
    let pid = t.wait_ready();
    let strata_pid = Pid::from_raw(t.strata.id() as i32);
    kill(strata_pid, Signal::SIGSTOP).unwrap();
    kill(Pid::from_raw(pid), Signal::SIGUSR1).unwrap();
    let since = Instant::now();
    while !stopped(pid) {
        if since.elapsed() > Duration::from_secs(60) {
            kill(strata_pid, Signal::SIGCONT).unwrap();
            stop_workload(pid);
            panic!("the workload never finished its writes");
        }
        sleep(Duration::from_millis(10));
    }
    kill(strata_pid, Signal::SIGCONT).unwrap();
    kill(strata_pid, Signal::SIGTERM).unwrap();
    let log = t.log.clone();
    let (code, out, _) = t.wait();
    stop_workload(pid);
    assert_eq!(code, Some(128 + 15));
    let run = rows(&out, "run");
    let lost = run[0].i("events_lost").unwrap();
    let mut writes: Vec<_> = rows(&out, "calls")
        .into_iter()
        .filter(|c| c.i("pid") == Some(i64::from(pid)) && c.s("function") == Some("pwrite64"))
        .map(|c| (c.i("offset").unwrap(), c.i("bytes_result").unwrap()))
        .collect();
    assert!(lost > 0, "a 1 MiB ring buffer held {WRITES} writes");
    assert_eq!(writes.len() as i64 + lost, WRITES, "{lost} lost");
    // Each recorded write is one of the workload's, once: write i has (i % 4096) + 1 bytes
    // and starts where write i - 1 ended.
    let mut truth = std::collections::HashMap::new();
    let mut offset = 0;
    for i in 0..WRITES {
        truth.insert(offset, i % 4096 + 1);
        offset += i % 4096 + 1;
    }
    writes.sort();
    writes.dedup();
    assert_eq!(writes.len() as i64 + lost, WRITES, "duplicate rows");
    for (offset, len) in writes {
        assert_eq!(truth.get(&offset), Some(&len), "write at {offset}");
    }
    let err = std::fs::read_to_string(log).unwrap();
    assert!(
        err.contains(&format!(
            "{lost} events were lost because the ring buffer was full"
        )),
        "{err}"
    );
}

/// Is `pid` stopped (state T)?
fn stopped(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The state follows the parenthesised command name.
    stat.rsplit_once(") ")
        .is_some_and(|(_, rest)| rest.starts_with('T'))
}

/// Processes with `arg` among their arguments (the workloads a stopped strata left running).
fn running_with_arg(arg: &Path) -> Vec<i32> {
    let arg = arg.as_os_str().as_encoded_bytes();
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        if let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) {
            if cmdline.split(|b| *b == 0).any(|a| a == arg) {
                pids.push(pid);
            }
        }
    }
    pids
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files.extend(walk(&p));
        } else {
            files.push(p);
        }
    }
    files
}
