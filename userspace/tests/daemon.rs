//! `strata daemon` and `strata ctl`: one daemon, jobs (cgroups) started and stopped through
//! the control socket one after the other, each into its own complete dataset; a job whose
//! cgroup disappears closes by itself; stopping a job while it writes leaves a valid dataset.
mod common;

use std::{
    collections::HashMap,
    io::{BufRead as _, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use common::{RowExt as _, Val, build_c, require_root, rows, run, scratch, strata};

/// A fresh cgroup under the cgroup v2 root, removed on drop.
struct Group(PathBuf);

impl Group {
    fn new(name: &str) -> Self {
        let root = strata::cgroup::v2_root().expect("cgroup v2 is mounted on the CI machines");
        let dir = root.join(format!("strata-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir(&dir);
        Self(dir)
    }
    fn create(&self) {
        std::fs::create_dir(&self.0).unwrap();
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Runs `script` under `sh` inside `group` (it moves itself in before doing anything).
fn inside(group: &Group, script: &str) -> Child {
    let procs = group.0.join("cgroup.procs");
    Command::new("sh")
        .arg("-c")
        .arg(format!("echo $$ > {}; {script}", procs.display()))
        .spawn()
        .unwrap()
}

fn ctl(socket: &Path, args: &[&str]) -> serde_json::Value {
    let out = run(strata().arg("ctl").arg("--socket").arg(socket).args(args));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "strata ctl {args:?}: {text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&text).unwrap()
}

/// The daemon's status of `job`, if it has one.
fn job_status(socket: &Path, job: &str) -> Option<serde_json::Value> {
    let status = ctl(socket, &["status"]);
    status["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["job"] == job)
        .cloned()
}

fn state(socket: &Path, job: &str) -> Option<String> {
    job_status(socket, job).map(|j| j["state"].as_str().unwrap().to_string())
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// (calls, bytes) of `function` per file name (the last path component) in a job's dataset.
fn per_file(dataset: &Path, function: &str) -> HashMap<String, (i64, i64)> {
    let paths: HashMap<i64, String> = rows(dataset, "files")
        .iter()
        .map(|f| {
            let p = f.s("path").unwrap();
            (
                f.i("file_id").unwrap(),
                p.rsplit('/').next().unwrap().to_string(),
            )
        })
        .collect();
    let mut m: HashMap<String, (i64, i64)> = HashMap::new();
    for c in rows(dataset, "calls") {
        if c.s("function") != Some(function) {
            continue;
        }
        if let Some(name) = c.i("file_id").and_then(|id| paths.get(&id)) {
            let e = m.entry(name.clone()).or_default();
            e.0 += 1;
            e.1 += c.i("bytes_result").unwrap_or(0);
        }
    }
    m
}

/// Attachments a process holds open: each tracepoint or uprobe is a BPF link (or, on kernels
/// without perf links, a perf event).
fn attachments(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|t| {
            let t = t.to_string_lossy();
            t == "anon_inode:bpf_link" || t == "anon_inode:[perf_event]"
        })
        .count()
}

/// A process of the test (the daemon, a bystander); killed if a failed assertion leaves it
/// running.
struct Owned(Child);

impl Owned {
    /// SIGTERM, and a clean exit.
    fn terminate(&mut self) {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.0.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        assert!(self.0.wait().unwrap().success());
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Starts `strata daemon` (these layers, 200 ms flushes) and waits until its probes are
/// attached; its later log lines are collected by the returned thread.
fn start_daemon(
    root: &Path,
    socket: &Path,
    layers: &str,
    extra: &[&str],
) -> (Owned, std::thread::JoinHandle<Vec<String>>) {
    let mut daemon = strata()
        .args(["daemon", "--layers", layers, "--flush-interval", "200ms"])
        .arg("--output-root")
        .arg(root)
        .arg("--socket")
        .arg(socket)
        .args(extra)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(daemon.stderr.take().unwrap());
    let mut lines = stderr.lines();
    for line in lines.by_ref() {
        let line = line.unwrap();
        eprintln!("{line}");
        assert!(!line.contains("error"), "{line}");
        if line.contains("probes attached") {
            break;
        }
    }
    let log = std::thread::spawn(move || {
        lines
            .map(|l| l.unwrap_or_default())
            .inspect(|l| eprintln!("{l}"))
            .collect::<Vec<_>>()
    });
    (Owned(daemon), log)
}

#[test]
fn daemon_traces_jobs_into_separate_datasets_and_keeps_running() {
    require_root();
    let dir = scratch("daemon");
    let d = dir.display();
    let root = dir.join("root");
    let socket = dir.join("ctl.sock");
    let (mut daemon, log) = start_daemon(&root, &socket, "posix", &["--host", "node-a"]);
    // Idle, the daemon keeps no syscall tracepoint attached.
    let idle = attachments(daemon.0.id());

    // Job A: a process inside writes 3 x 1000 bytes and opens 2 unreadable paths; one
    // outside writes too.
    let bad_path = build_c("cc", "bad_path.c", &dir.join("bad_path"), &[]);
    let a = Group::new("job-a");
    a.create();
    let started = ctl(
        &socket,
        &["start", "job-a", "--cgroup", a.0.to_str().unwrap()],
    );
    assert_eq!(started["jobs"][0]["state"], "tracing");
    assert_eq!(
        attachments(daemon.0.id()),
        idle + 2,
        "the sys_enter and sys_exit tracepoints attached for the job"
    );
    let mut w = inside(
        &a,
        &format!(
            "dd if=/dev/zero of={d}/a1 bs=1000 count=3 status=none && {} 2",
            bad_path.display()
        ),
    );
    let mut outside = Command::new("dd")
        .args(["if=/dev/zero", "bs=500", "count=1", "status=none"])
        .arg(format!("of={d}/outside"))
        .spawn()
        .unwrap();
    assert!(w.wait().unwrap().success() && outside.wait().unwrap().success());
    // A refused request changes nothing.
    let out = run(strata().arg("ctl").arg("--socket").arg(&socket).args([
        "start",
        "job-a",
        "--cgroup",
        a.0.to_str().unwrap(),
    ]));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("already being traced"));
    std::thread::sleep(Duration::from_millis(500));
    ctl(&socket, &["stop", "job-a"]);
    assert_eq!(state(&socket, "job-a"), None);
    assert_eq!(
        attachments(daemon.0.id()),
        idle,
        "detached again with no job"
    );

    // Job B, while job A's cgroup lives on untraced: B writes 2 x 2000 bytes, then keeps
    // writing until the job is stopped under it.
    let b = Group::new("job-b");
    b.create();
    ctl(
        &socket,
        &["start", "job-b", "--cgroup", b.0.to_str().unwrap()],
    );
    let mut after = inside(
        &a,
        &format!("dd if=/dev/zero of={d}/a_after bs=700 count=1 status=none"),
    );
    let mut w = inside(
        &b,
        &format!(
            "dd if=/dev/zero of={d}/b1 bs=2000 count=2 status=none; \
             while :; do dd if=/dev/zero of={d}/b_loop bs=4096 count=1 status=none; done"
        ),
    );
    assert!(after.wait().unwrap().success());
    std::thread::sleep(Duration::from_millis(1500));
    ctl(&socket, &["stop", "job-b"]);
    w.kill().unwrap();
    w.wait().unwrap();

    // Job C names a cgroup that does not exist yet; it closes by itself when the cgroup goes.
    let c = Group::new("job-c");
    let waiting = ctl(
        &socket,
        &["start", "job-c", "--cgroup", c.0.to_str().unwrap()],
    );
    assert_eq!(waiting["jobs"][0]["state"], "waiting");
    c.create();
    wait_for("job-c to find its cgroup", || {
        state(&socket, "job-c").as_deref() == Some("tracing")
    });
    let mut w = inside(
        &c,
        &format!("dd if=/dev/zero of={d}/c1 bs=300 count=5 status=none"),
    );
    assert!(w.wait().unwrap().success());
    std::thread::sleep(Duration::from_millis(500));
    drop(c);
    wait_for("job-c to close", || state(&socket, "job-c").is_none());

    // The same daemon served all three; it stops cleanly.
    assert_eq!(
        daemon.0.try_wait().unwrap(),
        None,
        "the daemon exited early"
    );
    daemon.terminate();
    let log = log.join().unwrap();
    assert!(
        log.iter().any(|l| l.contains("job job-c closed")),
        "{log:?}"
    );
    assert!(!socket.exists(), "the socket is removed at exit");

    let ja = per_file(&root.join("job-a"), "write");
    assert_eq!(ja.get("a1"), Some(&(3, 3000)), "job A: {ja:?}");
    assert_eq!(ja.get("outside"), None, "not in the cgroup: {ja:?}");
    assert_eq!(ja.get("a_after"), None, "after job A stopped: {ja:?}");
    let jb = per_file(&root.join("job-b"), "write");
    assert_eq!(jb.get("b1"), Some(&(2, 4000)), "job B: {jb:?}");
    assert!(
        jb.get("b_loop")
            .is_some_and(|(n, bytes)| *n > 0 && *bytes == *n * 4096),
        "job B writing as it stopped: {jb:?}"
    );
    assert_eq!(
        jb.get("a_after"),
        None,
        "job A's cgroup is not job B's: {jb:?}"
    );
    assert_eq!(jb.get("a1"), None, "{jb:?}");
    let jc = per_file(&root.join("job-c"), "write");
    assert_eq!(jc.get("c1"), Some(&(5, 1500)), "job C: {jc:?}");

    for job in ["job-a", "job-b", "job-c"] {
        let dataset = root.join(job);
        assert!(
            dataset.join("calls/host=node-a").is_dir(),
            "{job}: one host= partition per node"
        );
        let runs = rows(&dataset, "run");
        assert_eq!(runs.len(), 1, "{job}");
        let r = &runs[0];
        assert_eq!(r.s("job"), Some(job));
        assert_eq!(r.s("host"), Some("node-a"));
        assert!(r.i("end_ns").is_some(), "{job}: the run row is final");
        assert_eq!(r.get("complete"), Some(&Val::B(true)), "{job}");
        assert!(r.s("clock_source").is_some_and(|s| !s.is_empty()));
        // The kernel's counters are the node's; each job has those of its own lifetime.
        let unreadable = if job == "job-a" { 2 } else { 0 };
        assert_eq!(r.i("str_read_failed"), Some(unreadable), "{job}");
        assert_eq!(r.i("stack_unavailable"), Some(0), "{job}");
        // Every process of the job, nothing else.
        let procs = rows(&dataset, "processes");
        assert!(!procs.is_empty(), "{job}");
    }
}

/// The kernel side keeps each cgroup's verdict (traced or not) until the traced cgroups
/// change. A job started over processes that already ran in its cgroup, untraced while
/// another job was traced, has their next calls: their cgroup's verdict is worked out anew.
#[test]
fn a_job_started_over_running_processes_has_their_next_calls() {
    require_root();
    let dir = scratch("daemon-running");
    let d = dir.display();
    let root = dir.join("root");
    let socket = dir.join("ctl.sock");
    let (mut daemon, log) = start_daemon(&root, &socket, "posix", &[]);
    let x = Group::new("job-x");
    x.create();
    ctl(
        &socket,
        &["start", "job-x", "--cgroup", x.0.to_str().unwrap()],
    );
    // Syscalls in cgroup Y, which is no job's yet, until `go` exists; then one write more.
    let y = Group::new("job-y");
    y.create();
    let go = dir.join("go");
    let mut w = inside(
        &y,
        &format!(
            "while [ ! -e {go} ]; do dd if=/dev/zero of={d}/y_before bs=1 count=1 status=none; \
             done; dd if=/dev/zero of={d}/y_after bs=123 count=1 status=none",
            go = go.display()
        ),
    );
    std::thread::sleep(Duration::from_millis(500));
    ctl(
        &socket,
        &["start", "job-y", "--cgroup", y.0.to_str().unwrap()],
    );
    std::fs::write(&go, "").unwrap();
    assert!(w.wait().unwrap().success());
    std::thread::sleep(Duration::from_millis(500));
    ctl(&socket, &["stop", "job-y"]);
    ctl(&socket, &["stop", "job-x"]);
    daemon.terminate();
    log.join().unwrap();

    let jy = per_file(&root.join("job-y"), "write");
    assert_eq!(jy.get("y_after"), Some(&(1, 123)), "job Y: {jy:?}");
    let jx = per_file(&root.join("job-x"), "write");
    assert!(
        jx.keys().all(|f| !f.starts_with("y_")),
        "cgroup Y is not job X's: {jx:?}"
    );
}

/// The kernel filter looks at the depths the traced cgroups are at, up to four different
/// ones at once: jobs at four depths are each traced (the deepest too), one at a fifth is
/// refused with the reason until a depth is free again. A job that waited for its cgroup
/// and found it at a fifth depth waits on: the reason is said once (not at each flush) and
/// shown by `strata ctl status`, and it is traced once a depth is free.
#[test]
fn jobs_at_four_depths_are_traced_and_a_fifth_is_refused_until_one_is_free() {
    require_root();
    let dir = scratch("daemon-depths");
    let d = dir.display();
    let root = dir.join("root");
    let socket = dir.join("ctl.sock");
    let (mut daemon, log) = start_daemon(&root, &socket, "posix", &[]);
    // Chains of cgroups under the root, 1 to 5 deep: job `depth-n` is the last of chain n.
    let chains: Vec<Vec<Group>> = (1..=5)
        .map(|n| {
            let top = Group::new(&format!("depth-{n}"));
            top.create();
            let mut chain = vec![top];
            for k in 1..n {
                let g = Group(chain[k - 1].0.join(format!("d{k}")));
                g.create();
                chain.push(g);
            }
            chain
        })
        .collect();
    let start = |n: usize| {
        run(strata().arg("ctl").arg("--socket").arg(&socket).args([
            "start",
            &format!("depth-{n}"),
            "--cgroup",
            chains[n - 1].last().unwrap().0.to_str().unwrap(),
        ]))
    };
    for n in 1..=4 {
        assert!(start(n).status.success(), "depth {n}");
    }
    let refused = start(5);
    let text = String::from_utf8_lossy(&refused.stdout).into_owned()
        + &String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{text}");
    assert!(text.contains("already at 4 different depths"), "{text}");
    assert!(
        !root.join("depth-5").exists(),
        "a refused start leaves no dataset"
    );
    // Job `late` waits for a cgroup five deep that does not exist yet.
    let late_top = Group::new("late");
    late_top.create();
    let mut late = vec![late_top];
    for k in 1..5 {
        let g = Group(late[k - 1].0.join(format!("l{k}")));
        if k < 4 {
            g.create();
        }
        late.push(g);
    }
    let late_dir = late[4].0.to_str().unwrap().to_string();
    ctl(&socket, &["start", "late", "--cgroup", &late_dir]);
    assert_eq!(state(&socket, "late").as_deref(), Some("waiting"));
    late[4].create();
    let late_status = || job_status(&socket, "late").unwrap();
    wait_for("the late job's refusal", || {
        late_status()["reason"].as_str().is_some()
    });
    let status = late_status();
    assert_eq!(status["state"], "waiting", "{status}");
    let reason = status["reason"].as_str().unwrap();
    assert!(reason.contains("already at 4 different depths"), "{status}");
    // Several flushes (200 ms apart) on, still waiting.
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(state(&socket, "late").as_deref(), Some("waiting"));
    let mut w = inside(
        chains[3].last().unwrap(),
        &format!("dd if=/dev/zero of={d}/deep4 bs=444 count=1 status=none"),
    );
    assert!(w.wait().unwrap().success());
    std::thread::sleep(Duration::from_millis(500));
    ctl(&socket, &["stop", "depth-2"]);
    wait_for("the late job's cgroup traced", || {
        state(&socket, "late").as_deref() == Some("tracing")
    });
    assert!(late_status().get("reason").is_none(), "{}", late_status());
    let mut w = inside(
        &late[4],
        &format!("dd if=/dev/zero of={d}/late5 bs=567 count=1 status=none"),
    );
    assert!(w.wait().unwrap().success());
    assert!(start(5).status.success(), "depth 5 once depth 2 is free");
    let mut w = inside(
        chains[4].last().unwrap(),
        &format!("dd if=/dev/zero of={d}/deep5 bs=555 count=1 status=none"),
    );
    assert!(w.wait().unwrap().success());
    std::thread::sleep(Duration::from_millis(500));
    daemon.terminate();
    let log = log.join().unwrap();
    // Children first: a cgroup with children cannot be removed.
    for chain in chains.into_iter().chain([late]) {
        for g in chain.into_iter().rev() {
            drop(g);
        }
    }

    let said: Vec<_> = log
        .iter()
        .filter(|l| l.contains("job late") && l.contains("already at 4 different depths"))
        .collect();
    assert_eq!(said.len(), 1, "the refusal said once: {log:#?}");
    assert!(
        log.iter()
            .any(|l| l.contains("job late: tracing cgroup") && l.contains(&late_dir)),
        "{log:#?}"
    );
    let jl = per_file(&root.join("late"), "write");
    assert_eq!(jl.get("late5"), Some(&(1, 567)), "{jl:?}");
    let j4 = per_file(&root.join("depth-4"), "write");
    assert_eq!(j4.get("deep4"), Some(&(1, 444)), "{j4:?}");
    let j5 = per_file(&root.join("depth-5"), "write");
    assert_eq!(j5.get("deep5"), Some(&(1, 555)), "{j5:?}");
    assert_eq!(j4.get("deep5"), None, "{j4:?}");
}

/// With several jobs, a process gone before the daemon reads its records is still routed to
/// its job, the innermost where jobs nest: the kernel names the traced cgroup each process
/// is in. The daemon is held stopped while the processes run and end, so that `/proc` can no
/// longer say.
#[test]
fn processes_gone_before_the_daemon_reads_them_are_in_their_jobs() {
    require_root();
    let dir = scratch("daemon-gone");
    let d = dir.display();
    let root = dir.join("root");
    let socket = dir.join("ctl.sock");
    let (mut daemon, log) = start_daemon(&root, &socket, "posix", &[]);
    let outer = Group::new("gone-outer");
    outer.create();
    let inner = Group(outer.0.join("inner"));
    inner.create();
    let other = Group::new("gone-other");
    other.create();
    for (job, g) in [("outer", &outer), ("inner", &inner), ("other", &other)] {
        ctl(&socket, &["start", job, "--cgroup", g.0.to_str().unwrap()]);
    }
    let signal =
        |s| nix::sys::signal::kill(nix::unistd::Pid::from_raw(daemon.0.id() as i32), s).unwrap();
    signal(nix::sys::signal::Signal::SIGSTOP);
    // Each shell becomes its dd: the process's first records are its exec's.
    let mut writers: Vec<Child> = [(&outer, "o", 111), (&inner, "i", 222), (&other, "x", 333)]
        .into_iter()
        .map(|(g, name, n)| {
            inside(
                g,
                &format!("exec dd if=/dev/zero of={d}/gone_{name} bs={n} count=1 status=none"),
            )
        })
        .collect();
    for w in &mut writers {
        assert!(w.wait().unwrap().success());
    }
    signal(nix::sys::signal::Signal::SIGCONT);
    std::thread::sleep(Duration::from_millis(500));
    for job in ["outer", "inner", "other"] {
        ctl(&socket, &["stop", job]);
    }
    daemon.terminate();
    let lines = log.join().unwrap();
    drop(inner);

    assert!(
        !lines.iter().any(|l| l.contains("were dropped")),
        "{lines:?}"
    );
    for (job, name, n) in [
        ("outer", "o", 111),
        ("inner", "i", 222),
        ("other", "x", 333),
    ] {
        let writes = per_file(&root.join(job), "write");
        let mine = format!("gone_{name}");
        assert_eq!(writes.get(&mine), Some(&(1, n)), "job {job}: {writes:?}");
        assert!(
            writes.keys().all(|f| !f.starts_with("gone_") || *f == mine),
            "job {job} has another job's process: {writes:?}"
        );
    }
}

/// Bytes of process `pid`'s libc code that differ from the file's (None when it maps no
/// libc): each attached uprobe is an `int3` (0xcc) the kernel wrote into the process's copy
/// of the page. Panics on a byte that differs otherwise.
fn breakpoints(pid: u32) -> Option<usize> {
    use std::os::unix::fs::FileExt as _;
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    let mem = std::fs::File::open(format!("/proc/{pid}/mem")).ok()?;
    let mut found = None;
    for line in maps.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 6 || f[1] != "r-xp" || !f[5].ends_with("/libc.so.6") {
            continue;
        }
        let (start, end) = f[0].split_once('-').unwrap();
        let start = u64::from_str_radix(start, 16).unwrap();
        let len = (u64::from_str_radix(end, 16).unwrap() - start) as usize;
        let offset = u64::from_str_radix(f[2], 16).unwrap();
        let (mut on_disk, mut mapped) = (vec![0u8; len], vec![0u8; len]);
        std::fs::File::open(format!("/proc/{pid}/root{}", f[5]))
            .unwrap()
            .read_exact_at(&mut on_disk, offset)
            .unwrap();
        mem.read_exact_at(&mut mapped, start).ok()?;
        let differ: Vec<usize> = (0..len).filter(|&i| on_disk[i] != mapped[i]).collect();
        for &i in &differ {
            assert_eq!(
                mapped[i],
                0xcc,
                "libc+{:#x} of pid {pid}",
                offset as usize + i
            );
        }
        *found.get_or_insert(0) += differ.len();
    }
    found
}

/// An idle daemon leaves the node's processes alone: attached, each library uprobe is a
/// breakpoint in every process that maps the library (written into its copy of the page at
/// its start) and a trap at every call of the function, traced or not. A process in no job,
/// started before the daemon, has no breakpoint in its libc while no job runs, has them
/// while one does, and none again after; each of two jobs in turn has its stdio calls.
#[test]
fn an_idle_daemon_leaves_no_breakpoint_in_the_nodes_processes() {
    require_root();
    let dir = scratch("daemon_idle");
    let d = dir.display();
    let exe = build_c("cc", "stdout_lines.c", &dir.join("stdout_lines"), &["-O0"]);
    let bystander = Owned(Command::new("sleep").arg("600").spawn().unwrap());
    let pid = bystander.0.id();
    wait_for("sleep to map libc", || breakpoints(pid).is_some());
    assert_eq!(
        breakpoints(pid),
        Some(0),
        "a breakpoint before the daemon started"
    );
    let root = dir.join("root");
    let socket = dir.join("ctl.sock");
    let (mut daemon, _log) = start_daemon(&root, &socket, "posix,stdio", &[]);
    wait_for("the idle daemon to release its uprobes", || {
        breakpoints(pid) == Some(0)
    });
    let jobs = ["job-1", "job-2"];
    for job in jobs {
        let g = Group::new(job);
        g.create();
        ctl(&socket, &["start", job, "--cgroup", g.0.to_str().unwrap()]);
        // Uprobes are per file: the bystander has them too while the job runs. probes.toml
        // has 69 stdio functions in libc (aliases share a breakpoint).
        let n = breakpoints(pid).unwrap();
        assert!(n >= 40, "{job}: {n} breakpoints in a process's libc");
        let mut w = inside(&g, &format!("{} > {d}/{job}.log", exe.display()));
        assert!(w.wait().unwrap().success(), "{job}");
        std::thread::sleep(Duration::from_millis(500));
        ctl(&socket, &["stop", job]);
        wait_for("the daemon to release its uprobes after the job", || {
            breakpoints(pid) == Some(0)
        });
    }
    daemon.terminate();
    drop(bystander);
    for job in jobs {
        let log = format!("{job}.log");
        let printf = per_file(&root.join(job), "printf");
        assert_eq!(printf.get(&log), Some(&(3, 14)), "{job}: {printf:?}");
        let fflush = per_file(&root.join(job), "fflush");
        assert_eq!(fflush.get(&log).map(|f| f.0), Some(1), "{job}: {fflush:?}");
    }
}

/// A job running a program linked against a build of HDF5 that probes.toml does not name
/// (Debian's serial one, in the loader's cache), started by a shell: the daemon probed that
/// build when it started and links it again for each job after releasing it while idle, so
/// each job has every HDF5 call of the program from its first. Ground truth:
/// tests/workloads/hdf5_iterate.c.
#[test]
fn each_job_has_the_calls_of_an_installed_hdf5_build_from_the_first() {
    require_root();
    let dir = scratch("daemon_serial_hdf5");
    let exe = build_c(
        "mpicc",
        "hdf5_iterate.c",
        &dir.join("hdf5_iterate_serial"),
        &[
            "-I/usr/include/hdf5/openmpi",
            "/usr/lib/x86_64-linux-gnu/libhdf5_serial.so.103",
        ],
    );
    let root = dir.join("root");
    let socket = dir.join("ctl.sock");
    let (mut daemon, _log) = start_daemon(&root, &socket, "hdf5", &[]);
    let jobs = ["job-1", "job-2"];
    for job in jobs {
        let g = Group::new(job);
        g.create();
        ctl(&socket, &["start", job, "--cgroup", g.0.to_str().unwrap()]);
        let file = dir.join(format!("{job}.h5"));
        let mut w = inside(&g, &format!("{} {} 100", exe.display(), file.display()));
        assert!(w.wait().unwrap().success(), "{job}");
        std::thread::sleep(Duration::from_millis(500));
        ctl(&socket, &["stop", job]);
    }
    daemon.terminate();
    for job in jobs {
        let mut calls = rows(&root.join(job), "calls");
        calls.sort_by_key(|c| c.i("ts_begin_ns"));
        let functions: Vec<&str> = calls.iter().filter_map(|c| c.s("function")).collect();
        assert_eq!(
            functions.first(),
            Some(&"H5Fcreate"),
            "{job}: {functions:?}"
        );
        let count = |f: &str| functions.iter().filter(|g| **g == f).count();
        assert_eq!(
            [
                "H5Fcreate",
                "H5Dwrite",
                "H5Fopen",
                "H5Dopen2",
                "H5Dread",
                "H5Dclose",
                "H5Fclose"
            ]
            .map(count),
            [1, 2, 1, 4, 4, 6, 2],
            "{job}"
        );
    }
}

#[test]
fn ctl_without_a_daemon_and_bad_requests_say_what_is_wrong() {
    let dir = scratch("daemon_ctl");
    let socket = dir.join("none.sock");
    let out = run(strata()
        .arg("ctl")
        .arg("--socket")
        .arg(&socket)
        .arg("status"));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot reach the strata daemon"), "{err}");
    let out = run(strata()
        .arg("ctl")
        .arg("--socket")
        .arg(&socket)
        .args(["start", "../etc", "--cgroup", "/x"]));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("job name"), "{err}");
    let out = run(strata().args(["daemon", "--config", "/nonexistent/strata.toml"]));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/strata.toml"), "{err}");
}

/// The shipped Slurm prolog and epilog, run as slurmd would (as root, with SLURM_JOB_ID),
/// against Slurm's cgroup v2 layout made by hand: the prolog starts the job before its
/// cgroup exists, the epilog closes its dataset.
#[test]
fn slurm_prolog_and_epilog_drive_the_daemon() {
    require_root();
    let dir = scratch("daemon_slurm");
    let d = dir.display();
    let root = dir.join("root");
    let socket = dir.join("ctl.sock");
    let (mut daemon, _log) = start_daemon(&root, &socket, "posix", &[]);

    let job = format!("9{}", std::process::id());
    let v2 = strata::cgroup::v2_root().unwrap();
    let scope = v2.join("slurmstepd.scope");
    let made_scope = !scope.exists();
    let job_dir = Group(scope.join(format!("job_{job}")));
    let step = Group(job_dir.0.join("step_0"));
    let script = |name: &str| {
        let out = Command::new("sh")
            .arg(common::repo_root().join("dist/slurm").join(name))
            .env("SLURM_JOB_ID", &job)
            .env("STRATA", env!("CARGO_BIN_EXE_strata"))
            .env("STRATA_SOCKET", &socket)
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {out:?}");
    };
    script("prolog.sh");
    assert_eq!(state(&socket, &job).as_deref(), Some("waiting"));
    // slurmstepd creates the job's cgroup and a step below it.
    std::fs::create_dir_all(&step.0).unwrap();
    wait_for("the job's cgroup", || {
        state(&socket, &job).as_deref() == Some("tracing")
    });
    let mut w = inside(
        &step,
        &format!("dd if=/dev/zero of={d}/step_file bs=1234 count=2 status=none"),
    );
    assert!(w.wait().unwrap().success());
    std::thread::sleep(Duration::from_millis(500));
    script("epilog.sh");
    assert_eq!(state(&socket, &job), None);
    drop(step);
    drop(job_dir);
    if made_scope {
        let _ = std::fs::remove_dir(&scope);
    }
    // Without a daemon the scripts still succeed: a job is never held up by tracing.
    daemon.terminate();
    script("prolog.sh");

    let files = per_file(&root.join(&job), "write");
    assert_eq!(files.get("step_file"), Some(&(2, 2468)), "{files:?}");
    let runs = rows(&root.join(&job), "run");
    assert_eq!(
        runs[0].s("command"),
        Some(format!("--slurm-job {job}").as_str())
    );
}

/// A job's visible calls files on this node, and the highest sequence number among them (the
/// files it wrote).
fn calls_files(job: &Path) -> (u64, u64) {
    let host = std::fs::read_dir(job.join("calls"))
        .unwrap()
        .next()
        .unwrap();
    let names: Vec<String> = (std::fs::read_dir(host.unwrap().path()).unwrap())
        .map(|f| f.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".parquet") && !n.starts_with('.'))
        .collect();
    let seq = (names.iter())
        .filter_map(|n| n.strip_suffix(".parquet")?.rsplit_once('-')?.1.parse().ok())
        .max()
        .unwrap_or(0);
    (names.len() as u64, seq)
}

/// With `--compact-every 2` at 200 ms flushes, a busy job's files are merged while it runs
/// (fewer files than it wrote, before it closes), beside its writer, and into one at its end,
/// with every write once.
#[test]
fn a_running_jobs_files_are_merged_while_it_runs() {
    require_root();
    let dir = scratch("daemon-compact-every");
    let (root, socket) = (dir.join("out"), dir.join("strata.sock"));
    let (mut daemon, log) = start_daemon(&root, &socket, "posix", &["--compact-every", "2"]);
    let g = Group::new("compact-every");
    g.create();
    ctl(
        &socket,
        &["start", "long", "--cgroup", g.0.to_str().unwrap()],
    );
    let d = dir.display();
    let mut w = inside(
        &g,
        &format!("dd if=/dev/zero of={d}/long bs=1 count=400000 status=none"),
    );
    assert!(w.wait().unwrap().success());
    std::thread::sleep(Duration::from_millis(1000));
    let job = root.join("long");
    let (left, written) = calls_files(&job);
    assert!(
        written >= 3 && left < written,
        "{written} calls files written, {left} left before the job closed"
    );
    ctl(&socket, &["stop", "long"]);
    wait_for("the job's run row to get its end", || {
        rows(&job, "run").iter().any(|r| r.i("end_ns").is_some())
    });
    assert_eq!(calls_files(&job).0, 1, "merged into one at its end");
    let writes = per_file(&job, "write");
    assert_eq!(writes.get("long"), Some(&(400_000, 400_000)), "{writes:?}");
    daemon.terminate();
    let log = log.join().unwrap();
    assert!(!log.iter().any(|l| l.contains("failed")), "{log:?}");
}

/// A closed job's files on the node are merged (`strata compact`) before its run row gets its
/// end: a reader that waits for `run.end_ns` reads the merged dataset, with every row. Ground
/// truth: `dd bs=1` makes exactly 150,000 one-byte writes, enough rows for several files.
#[test]
fn a_closed_jobs_files_are_merged_before_its_dataset_is_complete() {
    require_root();
    let dir = scratch("daemon-compact");
    let (root, socket) = (dir.join("out"), dir.join("strata.sock"));
    let (mut daemon, log) = start_daemon(&root, &socket, "posix", &[]);
    let g = Group::new("compact");
    g.create();
    ctl(
        &socket,
        &["start", "busy", "--cgroup", g.0.to_str().unwrap()],
    );
    let d = dir.display();
    let mut w = inside(
        &g,
        &format!("dd if=/dev/zero of={d}/busy bs=1 count=150000 status=none"),
    );
    assert!(w.wait().unwrap().success());
    std::thread::sleep(Duration::from_millis(500));
    let job = root.join("busy");
    let written = calls_files(&job).0;
    assert!(
        written >= 3,
        "the job should have written several calls files, not {written}"
    );
    ctl(&socket, &["stop", "busy"]);
    wait_for("the job's run row to get its end", || {
        rows(&job, "run").iter().any(|r| r.i("end_ns").is_some())
    });
    assert_eq!(calls_files(&job).0, 1, "merged before the run row's end");
    let writes = per_file(&job, "write");
    assert_eq!(writes.get("busy"), Some(&(150_000, 150_000)), "{writes:?}");
    daemon.terminate();
    let log = log.join().unwrap();
    assert!(
        log.iter()
            .any(|l| l.contains("job busy: its") && l.contains("merged into")),
        "{log:?}"
    );
}
