//! A job in a container: its own mount namespace with its own copy of the libraries, as
//! Apptainer, Podman or Charliecloud give it. Its library probes must go on the container's
//! files (other inodes than the node's), found through /proc/<pid>/root, and the names it
//! gives are its own files, resolved in its root.
mod common;

use std::{
    ffi::OsStr,
    fs,
    io::Write as _,
    os::unix::fs::MetadataExt as _,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    thread::sleep,
    time::{Duration, Instant},
};

use common::{RowExt as _, build_c, require_root, rows, scratch, strata};

/// The libc this test runs on, as its path in /proc/self/maps.
fn own_libc() -> String {
    fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.ends_with("/libc.so.6"))
        .expect("libc.so.6 among this process's mappings")
        .to_string()
}

/// Whether `pid` maps `path` from inode `ino` (/proc/<pid>/maps: the fifth field).
fn maps_inode(pid: u32, path: &str, ino: u64) -> bool {
    fs::read_to_string(format!("/proc/{pid}/maps")).is_ok_and(|maps| {
        maps.lines().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() == 6 && f[5] == path && f[4] == ino.to_string()
        })
    })
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(t.elapsed() < Duration::from_secs(60), "{what}: not in 60 s");
        sleep(Duration::from_millis(10));
    }
}

/// A job waiting in its container: its libc is a copy bind-mounted over the node's path in
/// a private mount namespace (another inode under the same path). It runs
/// tests/workloads/posix_stdio.c (100 fwrites of 16 bytes, then an fclose that writes them
/// in one write(2)) once `go` is called.
struct Job {
    child: Child,
    pid: u32,
    libc: String,
    data: PathBuf,
    fifo: PathBuf,
}

impl Job {
    fn start(dir: &Path) -> Job {
        let exe = build_c("cc", "posix_stdio.c", &dir.join("posix_stdio"), &[]);
        let data = dir.join("data");
        fs::create_dir(&data).unwrap();
        let libc = own_libc();
        let copy = dir.join("libc.so.6");
        fs::copy(&libc, &copy).unwrap();
        let copy_ino = fs::metadata(&copy).unwrap().ino();
        assert_ne!(copy_ino, fs::metadata(&libc).unwrap().ino());
        let fifo = dir.join("go");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        // The outer shell mounts the copy; the inner one, exec'd after, maps it, waits for
        // the go, and execs the workload in the same process.
        let script = r#"mount --bind "$1" "$2" && exec sh -c 'read x < "$1" && exec "$2" "$3"' inner "$3" "$4" "$5""#;
        let child = Command::new("unshare")
            .args([
                "--mount",
                "--propagation",
                "private",
                "sh",
                "-c",
                script,
                "outer",
            ])
            .args([&copy, Path::new(&libc), &fifo, &exe, &data])
            .spawn()
            .unwrap();
        let pid = child.id();
        wait_for("the job maps its container's libc", || {
            maps_inode(pid, &libc, copy_ino)
        });
        Job {
            child,
            pid,
            libc,
            data,
            fifo,
        }
    }

    /// The same job in a chroot, as Apptainer gives one: the node's /usr is bind-mounted into
    /// its tree, whose loader cache (made by `ldconfig -r`) names a copy of libc in /opt/lib,
    /// a path only the job's root has. /proc names that copy from strata's root, through the
    /// chroot's directory.
    fn start_chrooted(dir: &Path) -> Job {
        let root = dir.join("root");
        let dirs = ["etc", "opt/lib", "data"].map(Path::new);
        common::chroot_tree(&root, &dirs);
        build_c("cc", "posix_stdio.c", &root.join("job/posix_stdio"), &[]);
        let copy = root.join("opt/lib/libc.so.6");
        fs::copy(own_libc(), &copy).unwrap();
        let copy_ino = fs::metadata(&copy).unwrap().ino();
        fs::write(
            root.join("etc/ld.so.conf"),
            "/opt/lib\n/usr/lib/x86_64-linux-gnu\n",
        )
        .unwrap();
        let fifo = root.join("go");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let mount_usr = format!("mount --rbind /usr {}/usr", root.display());
        let cached = Command::new(common::PRIVATE_NAMESPACE_SH[0])
            .args(&common::PRIVATE_NAMESPACE_SH[1..])
            .arg(format!("{mount_usr} && ldconfig -r {}", root.display()))
            .status()
            .unwrap();
        assert!(cached.success(), "ldconfig -r: {cached:?}");
        // The shell in the chroot maps the copy and waits for the go.
        let child = Command::new(common::PRIVATE_NAMESPACE_SH[0])
            .args(&common::PRIVATE_NAMESPACE_SH[1..])
            .arg(format!(
                "{mount_usr} && exec chroot {} /bin/sh -c 'read x < /go && exec /job/posix_stdio /data'",
                root.display()
            ))
            .spawn()
            .unwrap();
        let pid = child.id();
        wait_for("the job maps its own libc", || {
            maps_inode(pid, copy.to_str().unwrap(), copy_ino)
        });
        Job {
            child,
            pid,
            libc: "/opt/lib/libc.so.6".into(),
            data: root.join("data"),
            fifo,
        }
    }

    /// Lets the workload run, and waits for it.
    fn go(&mut self) {
        fs::OpenOptions::new()
            .write(true)
            .open(&self.fifo)
            .unwrap()
            .write_all(b"go\n")
            .unwrap();
        assert!(self.child.wait().unwrap().success(), "the workload failed");
    }

    /// The job's stdio calls are rows, nested as they ran, its stdio file is named as the
    /// node names it, and both files were probed for fwrite: the node's libc at start and the
    /// job's copy, under the path the job maps it by.
    fn check(&self, out: &Path) {
        let pid = i64::from(self.pid);
        let calls: Vec<_> = rows(out, "calls")
            .into_iter()
            .filter(|c| c.i("pid") == Some(pid))
            .collect();
        let fwrites: Vec<_> = calls
            .iter()
            .filter(|c| c.s("function") == Some("fwrite"))
            .collect();
        assert_eq!(fwrites.len(), 100, "the job's fwrites");
        for (i, w) in fwrites.iter().enumerate() {
            assert_eq!(
                (w.i("offset"), w.i("bytes_result"), w.s("layer")),
                (Some(16 * i as i64), Some(16), Some("stdio"))
            );
        }
        let fclose = calls
            .iter()
            .find(|c| c.s("function") == Some("fclose"))
            .expect("the job's fclose");
        assert_eq!(fclose.i("file_id"), fwrites[0].i("file_id"));
        let flush = calls
            .iter()
            .find(|c| c.s("function") == Some("write") && c.i("parent_id") == fclose.i("call_id"))
            .expect("write(2) beneath the fclose");
        assert_eq!(
            (flush.i("bytes_result"), flush.i("offset"), flush.i("depth")),
            (Some(1600), Some(0), Some(1))
        );
        let files = rows(out, "files");
        let path = files
            .iter()
            .find(|f| f.i("file_id") == fclose.i("file_id"))
            .and_then(|f| f.s("path"));
        assert_eq!(path, self.data.join("stdio.txt").to_str());
        let probes = rows(out, "probes");
        let targets: Vec<&str> = probes
            .iter()
            .filter(|p| p.s("function") == Some("fwrite") && p.s("status") == Some("attached"))
            .filter_map(|p| p.s("target"))
            .collect();
        assert_eq!(targets.len(), 2, "{targets:?}");
        assert!(targets.contains(&self.libc.as_str()), "{targets:?}");
    }
}

/// strata records with `--host test`; attached once its run row is written.
fn wait_attached(out: &Path) {
    wait_for("strata attached", || {
        out.join("run/host=test").read_dir().is_ok_and(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().ends_with(".parquet"))
        })
    });
}

fn recording(out: &Path, target: &[&OsStr]) -> Child {
    strata()
        .args([
            "record",
            "-q",
            "--layers",
            "posix,stdio",
            "--host",
            "test",
            "-o",
        ])
        .arg(out)
        .args(target)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for strata; `code`: its exit code (130 when stopped by SIGINT).
fn finished(st: Child, code: i32) {
    let res = st.wait_with_output().unwrap();
    eprintln!("{}", String::from_utf8_lossy(&res.stderr));
    assert_eq!(res.status.code(), Some(code), "{:?}", res.status);
}

/// Records `job` by `--pid` into `out`, lets it run, and waits for the run to end by itself
/// with the job's tree.
fn record_by_pid(job: &mut Job, out: &Path) {
    let pid = job.pid.to_string();
    let st = recording(out, &["--pid".as_ref(), pid.as_ref()]);
    wait_attached(out);
    job.go();
    finished(st, 0);
}

/// `--pid` on a running job in a container: its libraries are found among its mappings and
/// probed through /proc/<pid>/root before the run begins.
#[test]
fn a_running_job_in_a_container_is_traced_through_its_own_libc() {
    require_root();
    let dir = fs::canonicalize(scratch("container_pid")).unwrap();
    let mut job = Job::start(&dir);
    record_by_pid(&mut job, &dir.join("out"));
    job.check(&dir.join("out"));
}

/// `--pid` on a running job in a chroot: its own libc is found among its mappings, probed
/// through /proc/<pid>/root, and named by its path in the job's root, not by the node's path
/// through the chroot's directory. Its stdio file, renamed before the job ends (often before
/// strata looks), is named as the node names it.
#[test]
fn a_running_job_in_a_chroot_is_traced_through_its_own_libc() {
    require_root();
    let dir = fs::canonicalize(scratch("chroot_pid")).unwrap();
    let mut job = Job::start_chrooted(&dir);
    record_by_pid(&mut job, &dir.join("out"));
    job.check(&dir.join("out"));
}

/// A cgroup removed on drop.
struct Group(PathBuf);

impl Group {
    /// A fresh cgroup under the cgroup v2 root, holding process `pid`.
    fn holding(name: &str, pid: u32) -> Group {
        let root = strata::cgroup::v2_root().expect("cgroup v2 is mounted on the CI machines");
        let group = Group(root.join(format!("strata-{name}-{}", std::process::id())));
        let _ = fs::remove_dir(&group.0);
        fs::create_dir(&group.0).unwrap();
        fs::write(group.0.join("cgroup.procs"), pid.to_string()).unwrap();
        group
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        let _ = fs::remove_dir(&self.0);
    }
}

/// `--cgroup` (as `--slurm-job`) on a cgroup whose job already runs in a container: the same,
/// for the processes found in the cgroup at start.
#[test]
fn a_running_job_in_a_container_is_traced_by_its_cgroup() {
    require_root();
    let dir = fs::canonicalize(scratch("container_cgroup")).unwrap();
    let mut job = Job::start(&dir);
    let group = Group::holding("container", job.pid);
    let out = dir.join("out");
    let st = recording(&out, &["--cgroup".as_ref(), group.0.as_os_str()]);
    wait_attached(&out);
    job.go();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(st.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    finished(st, 130);
    job.check(&out);
}

/// `strata daemon`, told to trace a cgroup whose job already runs in a container: the job's
/// own libraries are probed before `strata ctl start` answers.
#[test]
fn the_daemon_traces_a_running_job_in_a_container() {
    require_root();
    let dir = fs::canonicalize(scratch("container_daemon")).unwrap();
    let mut job = Job::start(&dir);
    let group = Group::holding("container-d", job.pid);

    let socket = dir.join("ctl.sock");
    let log = dir.join("daemon.log");
    let daemon = strata()
        .args([
            "daemon",
            "--layers",
            "posix,stdio",
            "--flush-interval",
            "200ms",
        ])
        .arg("--output-root")
        .arg(dir.join("root"))
        .arg("--socket")
        .arg(&socket)
        .stderr(fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    wait_for("the daemon attached", || {
        fs::read_to_string(&log).is_ok_and(|l| l.contains("probes attached"))
    });
    let ctl = |args: &[&OsStr]| {
        let res = strata()
            .arg("ctl")
            .arg("--socket")
            .arg(&socket)
            .args(args)
            .output()
            .unwrap();
        assert!(res.status.success(), "strata ctl {args:?}: {res:?}");
    };
    ctl(&[
        "start".as_ref(),
        "job".as_ref(),
        "--cgroup".as_ref(),
        group.0.as_os_str(),
    ]);
    job.go();
    ctl(&["stop".as_ref(), "job".as_ref()]);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    finished(daemon, 0);
    eprintln!("{}", fs::read_to_string(&log).unwrap());
    job.check(&dir.join("root/job"));
}

/// Records the POSIX calls of `sh -c SCRIPT ARGS...` (`script` its first) run in a private
/// mount namespace, into `out`; the script must succeed.
fn record_in_namespace(out: &Path, script: &[&str]) {
    let res = common::run(
        strata()
            .args(["record", "-q", "--layers", "posix", "-o"])
            .arg(out)
            .arg("--")
            .args(common::PRIVATE_NAMESPACE_SH)
            .args(script),
    );
    assert!(res.status.success(), "{:?}", res.status);
}

/// A job in a chroot in a private mount namespace, whose calls strata handles only after it is
/// gone (it stops strata for as long as its programs run): the names it gave, absolute or
/// relative to the directory it had, through an absolute link inside the chroot (/data ->
/// /scratch), are files named as the node sees them, found in the root strata held from the
/// job's exec. Ground truth: tests/workloads/chdir.c and short_lived.c.
#[test]
fn a_gone_jobs_names_in_a_chroot_are_its_files() {
    require_root();
    let dir = fs::canonicalize(scratch("container_names")).unwrap();
    let root = dir.join("root");
    common::chroot_tree(&root, &[Path::new("home"), Path::new("scratch")]);
    std::os::unix::fs::symlink("/scratch", root.join("data")).unwrap();
    build_c("cc", "chdir.c", &root.join("job/chdir"), &["-pthread"]);
    build_c("cc", "short_lived.c", &root.join("job/short_lived"), &[]);
    // The outer shell, in the new namespace, checks that its parent is strata; the shell in
    // the chroot (the same process, exec'd) lets strata see its exec, then stops it until
    // its programs have ended.
    let inner = "cd /home && sleep 1 && kill -STOP $PPID || exit 98; \
                 /job/chdir /data/top; s=$?; \
                 for i in 1 2 3; do /job/short_lived /data/s$i || s=1; done; \
                 kill -CONT $PPID; exit $s";
    let outer = format!(
        "read -r c < /proc/$PPID/comm; [ \"$c\" = strata ] || exit 97; \
         mount --rbind /usr {r}/usr && exec chroot {r} sh -c '{inner}'",
        r = root.display()
    );
    let out = dir.join("out");
    record_in_namespace(&out, &[&outer]);

    let calls = rows(&out, "calls");
    let files = rows(&out, "files");
    let file_of = |id: Option<i64>, what: &str| {
        files
            .iter()
            .find(|f| f.i("file_id") == id)
            .unwrap_or_else(|| panic!("no file of {what}"))
    };
    let assert_is = |file: &common::Row, path: &Path, what: &str| {
        assert_eq!(file.s("path"), path.to_str(), "{what}");
        let ino = fs::metadata(path).unwrap().ino() as i64;
        assert_eq!(file.i("ino"), Some(ino), "{what}");
    };
    // The short programs' opens, by the names they gave: each its own file.
    let scratch = root.join("scratch");
    let mut short_lived = Vec::new();
    for i in 1..=3 {
        let name = format!("/data/s{i}");
        let open = calls
            .iter()
            .find(|c| c.s("function") == Some("openat") && c.s("path") == Some(&name))
            .unwrap_or_else(|| panic!("the open of {name}"));
        short_lived.push(open.i("pid"));
        let file = file_of(open.i("file_id"), &name);
        assert_is(file, &scratch.join(format!("s{i}")), &name);
    }
    let top = scratch.join("top");
    let expected = [
        (1, root.join("home/start")),
        (2, top.join("a/f")),
        (3, top.join("b/f")),
        (4, top.join("b/g")),
        (5, top.join("a/g")),
        (6, top.join("b/h")),
        (7, top.join("a/h")),
        (8, top.join("i")),
        (9, top.join("b/k")),
    ];
    for (n, path) in &expected {
        let w: Vec<_> = calls
            .iter()
            .filter(|c| c.s("function") == Some("write") && c.i("bytes_result") == Some(*n))
            .filter(|c| !short_lived.contains(&c.i("pid")))
            .collect();
        assert_eq!(w.len(), 1, "one write of {n} bytes");
        let what = format!("the write of {n} bytes");
        assert_is(file_of(w[0].i("file_id"), &what), path, &what);
    }
}

/// A chroot taken just before the exec of a program that is gone when strata gets to it
/// (strata is stopped while it runs): the program's names are not resolved in the root it
/// was forked with (the node's, where a decoy lies under the same name). The kernel reads
/// the root at the exec; where another process of that chroot has its root held, the names
/// are resolved there, and where none has, the file is the one the kernel opened (its
/// inode), named as the program named it. The same for a chroot without an exec, seen at
/// the fork of a child that opens a file, and for a chroot into an overlay mount (a
/// container's image and its writable layer) still mounted when strata gets to the program.
/// Ground truth: tests/workloads/short_lived.c, and a Python process that chroots,
/// forks, and has its child create a file.
#[test]
fn a_chroot_just_before_a_gone_programs_exec_is_its_root() {
    require_root();
    let dir = fs::canonicalize(scratch("container_chroot_exec")).unwrap();
    // Three chroots, one an overlay the job mounts (`image` under `layer`, in `merged`); the
    // job's names, under `dir`, are decoys on the node.
    let (held, bare, image) = (dir.join("held"), dir.join("bare"), dir.join("image"));
    let (layer, work, merged) = (dir.join("layer"), dir.join("work"), dir.join("merged"));
    let inside = dir.strip_prefix("/").unwrap();
    for root in [&held, &bare, &image] {
        common::chroot_tree(root, &[inside]);
        build_c("cc", "short_lived.c", &root.join("job/short_lived"), &[]);
    }
    for d in [&layer, &work, &merged] {
        fs::create_dir_all(d).unwrap();
    }
    let (x, y, z, w) = (dir.join("x"), dir.join("y"), dir.join("z"), dir.join("w"));
    for decoy in [&x, &y, &z, &w] {
        fs::write(decoy, "decoy").unwrap();
    }
    // The shell, in a private mount namespace, checks that its parent is strata, starts a
    // process in the first chroot and one in the overlay, and lets strata see their execs;
    // then it stops strata until a program in each chroot has run, and a process has
    // chrooted and forked. The overlay stays mounted (its namespace alive) for 3 s after, as
    // a container runs on while strata handles its short program.
    let fork = "import os, sys\n\
                os.chroot(sys.argv[1])\n\
                pid = os.fork()\n\
                if pid == 0:\n\
                \x20   fd = os.open(sys.argv[2], os.O_CREAT | os.O_WRONLY)\n\
                \x20   os._exit(0 if os.write(fd, b'z') == 1 else 1)\n\
                sys.exit(os.waitpid(pid, 0)[1])";
    let job = format!(
        "read -r c < /proc/$PPID/comm; [ \"$c\" = strata ] || exit 97; \
         mount --rbind /usr {h}/usr && mount --rbind /usr {b}/usr || exit 96; \
         mount -t overlay overlay -o lowerdir={i},upperdir={l},workdir={wd} {m} || exit 95; \
         mount --rbind /usr {m}/usr || exit 96; \
         chroot {h} sleep 60 & sib=$!; chroot {m} sleep 60 & sib2=$!; \
         sleep 1; kill -STOP $PPID || exit 98; \
         chroot {h} /job/short_lived {x}; s=$?; \
         chroot {b} /job/short_lived {y} || s=1; \
         python3 -c \"$0\" {h} {z} || s=1; \
         chroot {m} /job/short_lived {w} || s=1; \
         kill $sib; kill -CONT $PPID; sleep 3; kill $sib2; exit $s",
        h = held.display(),
        b = bare.display(),
        i = image.display(),
        l = layer.display(),
        wd = work.display(),
        m = merged.display(),
        w = w.display(),
        x = x.display(),
        y = y.display(),
        z = z.display(),
    );
    let out = dir.join("out");
    record_in_namespace(&out, &[&job, fork]);

    let calls = rows(&out, "calls");
    let files = rows(&out, "files");
    let file_of_open = |name: &Path| {
        let open = calls
            .iter()
            .find(|c| c.s("function") == Some("openat") && c.s("path") == name.to_str())
            .unwrap_or_else(|| panic!("the open of {}", name.display()));
        files
            .iter()
            .find(|f| f.i("file_id") == open.i("file_id"))
            .unwrap_or_else(|| panic!("no file of the open of {}", name.display()))
    };
    let ino = |p: &Path| fs::metadata(p).unwrap().ino() as i64;
    let decoy_inos = [ino(&x), ino(&y), ino(&z), ino(&w)];
    // In the chroot whose root strata held: named as the node sees it.
    for (name, what) in [
        (&x, "the chroot's program"),
        (&z, "the chrooted parent's child"),
    ] {
        let in_held = held.join(inside).join(name.file_name().unwrap());
        let f = file_of_open(name);
        assert_eq!(f.s("path"), in_held.to_str(), "the file {what} opened");
        assert_eq!(f.i("ino"), Some(ino(&in_held)), "the file {what} opened");
    }
    // In the chroot nothing held: the file the kernel opened, not the node's of that name.
    let in_bare = bare.join(inside).join("y");
    let f = file_of_open(&y);
    assert_eq!(
        f.i("ino"),
        Some(ino(&in_bare)),
        "the file the bare chroot's program opened"
    );
    assert!(!decoy_inos.contains(&f.i("ino").unwrap()));
    // In the overlay, held: named as the node sees it while mounted in the job's namespace
    // (with no root held it would be the job's own name); the file itself is in the writable
    // layer (overlayfs gives its inode).
    let f = file_of_open(&w);
    let name = merged.join(inside).join("w");
    assert_eq!(
        f.s("path"),
        name.to_str(),
        "the file the overlay's program opened"
    );
    let in_layer = layer.join(inside).join("w");
    assert_eq!(
        f.i("ino"),
        Some(ino(&in_layer)),
        "the file the overlay's program opened"
    );
}

/// The mount namespace a job wrote as `readlink /proc/self/ns/mnt` does (`mnt:[N]`) to `at`.
fn job_namespace(at: &Path) -> i64 {
    let text = fs::read_to_string(at).unwrap();
    text.trim()
        .strip_prefix("mnt:[")
        .and_then(|n| n.strip_suffix(']'))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{text:?}"))
}

/// The `files` row of `path`, on a tmpfs mounted at `point` from `source`: it names them.
fn assert_on_tmpfs(out: &Path, path: &Path, point: &Path, source: &str) {
    let files = rows(out, "files");
    let f = files
        .iter()
        .find(|f| f.s("path") == path.to_str())
        .unwrap_or_else(|| panic!("the row of {}: {files:?}", path.display()));
    assert_eq!(
        (f.s("fs_type"), f.s("mount_point"), f.s("mount_source")),
        (Some("tmpfs"), point.to_str(), Some(source))
    );
}

/// The `mounts` rows of namespace `ns`.
fn mounts_of(out: &Path, ns: i64) -> Vec<common::Row> {
    rows(out, "mounts")
        .into_iter()
        .filter(|m| m.i("mnt_ns") == Some(ns))
        .collect()
}

/// A container whose namespace strata first sees through a process already in its chroot
/// (`unshare --mount --root`, as a runtime that chroots before it execs the job): the kernel
/// shows that process only the mounts under its root, named from there. Ground truth: the
/// namespace's mountinfo as the job saw it in its chroot, and as a process that joined the
/// namespace later (nsenter, at the namespace's root) saw it.
/// - The job's file, on a tmpfs mounted under the chroot, has that tmpfs's row in `files`
///   (it had none: the chroot's `/fs` is not a prefix of the file's name as the node sees it).
/// - The `mounts` table names each mount from the namespace's root: the chroot's table with
///   the chroot's directory before each mount point, and, once the process at the root was
///   seen, the whole namespace, row for row as that process saw it, each mount once.
/// - `processes.mnt_ns` of the job is the namespace the job named from inside.
#[test]
fn a_namespace_first_seen_from_a_chroot_names_its_mounts_from_its_root() {
    require_root();
    let dir = fs::canonicalize(scratch("container_chroot_mounts")).unwrap();
    let root = dir.join("root");
    common::chroot_tree(&root, &[Path::new("fs"), Path::new("proc")]);
    let inner = "readlink /proc/self/ns/mnt > /job/ns && cat /proc/self/mountinfo > /job/chroot \
                 && dd if=/job/chroot of=/fs/f && sleep 2";
    let outer = format!(
        "mount --rbind /usr {r}/usr && mount -t tmpfs strata-chroot {r}/fs \
         && mount -t proc proc {r}/proc || exit 96; \
         unshare --mount --propagation private --root={r} sh -c '{inner}' & j=$!; \
         sleep 1; nsenter --mount --target $j sh -c 'cat /proc/self/mountinfo > {d}/whole \
         && sleep 1' || exit 95; wait $j",
        r = root.display(),
        d = dir.display()
    );
    let out = dir.join("out");
    record_in_namespace(&out, &[&outer]);

    let ns = job_namespace(&root.join("job/ns"));
    let processes = rows(&out, "processes");
    let dd = processes
        .iter()
        .find(|p| p.s("comm") == Some("dd"))
        .expect("dd's row");
    assert_eq!(dd.i("mnt_ns"), Some(ns), "dd's namespace");

    let point = root.join("fs");
    assert_on_tmpfs(&out, &point.join("f"), &point, "strata-chroot");

    let mounts = mounts_of(&out, ns);
    let mut got = common::mount_lines(&mounts);
    got.sort();
    // Each mount once, as the process at the namespace's root named it.
    let mut whole = common::mountinfo_lines(&fs::read_to_string(dir.join("whole")).unwrap());
    whole.sort();
    assert_eq!(got, whole);
    // The chroot's mounts are among them, under its directory; its tmpfs among those.
    let chroot = common::mountinfo_lines(&fs::read_to_string(root.join("job/chroot")).unwrap());
    assert!(chroot.iter().any(|m| m.4 == "/fs" && m.5 == "tmpfs"));
    for m in chroot {
        let from_root = match m.4.as_str() {
            "/" => root.display().to_string(),
            p => format!("{}{p}", root.display()),
        };
        let row = mounts
            .iter()
            .find(|r| r.i("mount_id") == Some(m.0))
            .unwrap_or_else(|| panic!("the chroot's mount {m:?}"));
        assert_eq!(row.s("mount_point"), Some(from_root.as_str()), "{m:?}");
    }
    // The chroot's table was written first: its mounts were read before the others.
    let seen = |r: &common::Row| r.i("seen_ns").unwrap();
    let tmpfs = mounts
        .iter()
        .find(|r| r.s("mount_point") == point.to_str())
        .unwrap();
    let slash = mounts
        .iter()
        .find(|r| r.s("mount_point") == Some("/"))
        .unwrap();
    assert!(
        seen(tmpfs) < seen(slash),
        "strata saw the namespace first from the chroot"
    );
}

/// A container runtime's `pivot_root`: strata first reads the namespace's table from the
/// shell that makes the container, at the node's root; the shell then moves the namespace's
/// root to the container's tmpfs and unmounts the old one (as runc, crun and Apptainer do),
/// after which that first table shows nothing of the namespace, and execs the job. Ground
/// truth: the namespace's mountinfo as the job saw it.
/// - The job's file, on a tmpfs in the container, has that tmpfs's row in `files` (it had
///   none: the table strata held was the old root's).
/// - The `mounts` table holds every mount as the job saw it, and the rows read before the
///   move, named from the old root (the container's tmpfs where the shell mounted it).
#[test]
fn a_namespace_whose_root_moved_is_read_from_its_new_root() {
    require_root();
    let dir = fs::canonicalize(scratch("container_pivot_root")).unwrap();
    let new_root = dir.join("new_root");
    let out_dir = dir.join("job");
    fs::create_dir_all(&new_root).unwrap();
    fs::create_dir_all(&out_dir).unwrap();
    let job = "umount -l /old && readlink /proc/self/ns/mnt > /out/ns \
               && cat /proc/self/mountinfo > /out/mountinfo && dd if=/out/ns of=/fs/f && sleep 1";
    let outer = format!(
        "sleep 0.5; n={n}; mount -t tmpfs strata-pivot $n \
         && mkdir $n/usr $n/proc $n/fs $n/old $n/out && ln -s usr/bin $n/bin \
         && ln -s usr/lib $n/lib && ln -s usr/lib64 $n/lib64 && mount --rbind /usr $n/usr \
         && mount -t proc proc $n/proc && mount -t tmpfs strata-fs $n/fs \
         && mount --bind {o} $n/out || exit 96; \
         cd $n && pivot_root . old && cd / && exec /usr/bin/sh -c '{job}'",
        n = new_root.display(),
        o = out_dir.display()
    );
    let out = dir.join("out");
    record_in_namespace(&out, &[&outer]);

    let ns = job_namespace(&out_dir.join("ns"));
    assert_on_tmpfs(&out, Path::new("/fs/f"), Path::new("/fs"), "strata-fs");

    let got = common::mount_lines(&mounts_of(&out, ns));
    let job = common::mountinfo_lines(&fs::read_to_string(out_dir.join("mountinfo")).unwrap());
    for m in &job {
        assert!(got.contains(m), "the job's mount {m:?} among {got:#?}");
    }
    // Read first from the node's root: the container's tmpfs where the shell mounted it.
    let root = job.iter().find(|m| m.4 == "/").unwrap();
    assert_eq!(root.5, "tmpfs");
    assert!(
        got.iter()
            .any(|m| m.0 == root.0 && Some(m.4.as_str()) == new_root.to_str()),
        "the container's tmpfs named from the node's root: {got:#?}"
    );
}
