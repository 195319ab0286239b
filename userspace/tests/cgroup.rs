//! Who and what is traced. `--cgroup`: exactly the processes of a cgroup v2 and its
//! descendants are traced, filtered in the kernel, including processes that join after the
//! start and their children; a process outside is not. `--users`: only those users'
//! processes. `--paths`: only rows about files under those directories.
mod common;

use std::{
    io::{BufRead as _, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
};

use common::{RowExt as _, require_root, rows, run, scratch, strata};

/// A fresh cgroup under the cgroup v2 root, removed on drop.
struct Group(PathBuf);

impl Drop for Group {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// `sh -c SCRIPT`, waiting a moment first so it can be moved into a cgroup before it works.
fn later(script: &str) -> Child {
    Command::new("sh")
        .arg("-c")
        .arg(format!("sleep 1; {script}"))
        .spawn()
        .unwrap()
}

fn join(group: &Path, child: &Child) {
    std::fs::write(group.join("cgroup.procs"), child.id().to_string()).unwrap();
}

#[test]
fn only_processes_of_the_cgroup_and_its_children_are_traced() {
    require_root();
    let root = strata::cgroup::v2_root().expect("cgroup v2 is mounted on the CI machines");
    let group = Group(root.join(format!("strata-test-{}", std::process::id())));
    let _ = std::fs::remove_dir(&group.0);
    std::fs::create_dir(&group.0).unwrap();
    // A nested cgroup: its processes are traced too.
    let nested = group.0.join("inner");
    std::fs::create_dir(&nested).unwrap();
    let _nested_guard = Group(nested.clone());

    let dir = scratch("cgroup");
    let d = dir.display();
    let out = dir.join("out");
    let mut strata_run = strata()
        .args(["record", "--layers", "posix", "--duration", "6s", "-o"])
        .arg(&out)
        .arg("--cgroup")
        .arg(&group.0)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The workloads start once strata has attached, and join their cgroups while they sleep.
    let stderr = BufReader::new(strata_run.stderr.take().unwrap());
    let mut lines = stderr.lines();
    for line in lines.by_ref() {
        let line = line.unwrap();
        eprintln!("{line}");
        if line.contains("probes attached") {
            break;
        }
    }
    std::thread::spawn(move || lines.for_each(|l| eprintln!("{}", l.unwrap_or_default())));
    let mut first = later(&format!(
        "echo 1 > {d}/in_first; sh -c 'echo 2 > {d}/in_child'"
    ));
    let mut second = later(&format!("echo 3 > {d}/in_nested"));
    let mut outside = later(&format!("echo 4 > {d}/outside"));
    join(&group.0, &first);
    join(&nested, &second);
    for c in [&mut first, &mut second, &mut outside] {
        assert!(c.wait().unwrap().success());
    }
    let res = strata_run.wait().unwrap();
    assert!(res.success(), "strata: {res:?}");

    let calls = rows(&out, "calls");
    let opened = |name: &str| {
        let path = format!("{d}/{name}");
        calls
            .iter()
            .filter(|c| c.s("function") == Some("openat") && c.s("path") == Some(path.as_str()))
            .count()
    };
    assert_eq!(opened("in_first"), 1, "process moved into the cgroup");
    assert_eq!(opened("in_child"), 1, "its child, forked later");
    assert_eq!(opened("in_nested"), 1, "a process of a nested cgroup");
    assert_eq!(opened("outside"), 0, "a process outside the cgroup");
    let runs = rows(&out, "run");
    assert!(runs[0].s("command").unwrap().starts_with("--cgroup "));
}

#[test]
fn cgroup_targets_that_cannot_work_are_refused_clearly() {
    require_root();
    let out = scratch("cgroup_bad").join("out");
    let res = run(strata()
        .args(["record", "-q", "-o"])
        .arg(&out)
        .args(["--cgroup", "/tmp"]));
    assert_eq!(res.status.code(), Some(2));
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(err.contains("not a cgroup v2 directory"), "{err}");
    let res = run(strata()
        .args(["record", "-q", "-o"])
        .arg(&out)
        .args(["--slurm-job", "999999999"]));
    assert_eq!(res.status.code(), Some(2));
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(err.contains("no cgroup of Slurm job 999999999"), "{err}");
}

#[test]
fn only_processes_of_the_given_users_are_traced() {
    require_root();
    use std::os::unix::fs::PermissionsExt as _;
    let dir = scratch("users");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let d = dir.display();
    let out = dir.join("out");
    // Root writes one file, then a child running as `nobody` writes another.
    let res = run(strata()
        .args(["record", "-q", "--layers", "posix", "--users", "nobody", "-o"])
        .arg(&out)
        .args([
            "--",
            "sh",
            "-c",
            &format!(
                "echo root > {d}/by_root; setpriv --reuid=nobody --regid=nogroup --clear-groups sh -c 'echo x > {d}/by_nobody'"
            ),
        ]));
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let calls = rows(&out, "calls");
    let opened = |name: &str| {
        let path = format!("{d}/{name}");
        calls
            .iter()
            .filter(|c| c.s("function") == Some("openat") && c.s("path") == Some(path.as_str()))
            .count()
    };
    assert_eq!(opened("by_nobody"), 1, "a process of a listed user");
    assert_eq!(opened("by_root"), 0, "root is not listed");
    let res = run(strata()
        .args(["record", "-q", "--users", "no-such-user-strata", "-o"])
        .arg(&out)
        .args(["--", "true"]));
    assert_eq!(res.status.code(), Some(2));
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(err.contains("no user \"no-such-user-strata\""), "{err}");
}

#[test]
fn only_rows_about_files_under_the_given_paths_are_written() {
    require_root();
    let dir = scratch("paths");
    let d = dir.display();
    std::fs::create_dir_all(dir.join("keep")).unwrap();
    std::fs::create_dir_all(dir.join("other")).unwrap();
    let out = dir.join("out");
    let res = run(strata()
        .args(["record", "-q", "--layers", "posix", "--paths"])
        .arg(dir.join("keep"))
        .arg("-o")
        .arg(&out)
        .args([
            "--",
            "sh",
            "-c",
            &format!(
                "echo a > {d}/keep/x; echo bb > {d}/other/y; cat /etc/hostname > /dev/null; \
                 cp {d}/other/y {d}/keep/z; cp {d}/keep/x {d}/other/w; cp /etc/os-release {d}/other/v"
            ),
        ]));
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let files = rows(&out, "files");
    let keep = format!("{d}/keep/");
    assert!(!files.is_empty());
    // Under the paths, or the other file of a copy kept (y copied in, w copied out).
    let mut outside: Vec<&str> = files
        .iter()
        .map(|f| f.s("path").unwrap())
        .filter(|p| !p.starts_with(&keep))
        .collect();
    outside.sort_unstable();
    assert_eq!(outside, [format!("{d}/other/w"), format!("{d}/other/y")]);
    let x = files
        .iter()
        .find(|f| f.s("path") == Some(format!("{keep}x").as_str()))
        .expect("the kept file");
    let calls = rows(&out, "calls");
    let writes: Vec<i64> = calls
        .iter()
        .filter(|c| c.s("function") == Some("write") && c.i("file_id") == x.i("file_id"))
        .map(|c| c.i("bytes_result").unwrap())
        .collect();
    assert_eq!(writes, vec![2], "echo's write to the kept file");
    // A copy is about both its files: kept when either is under the paths (y to z: 3 bytes;
    // x to w: 2), not otherwise (os-release to v).
    let mut copied: Vec<i64> = calls
        .iter()
        .filter(|c| c.s("op") == Some("copy"))
        .filter_map(|c| c.i("bytes_result").filter(|b| *b > 0))
        .collect();
    copied.sort_unstable();
    assert_eq!(
        copied,
        vec![2, 3],
        "the copies into and out of the kept directory"
    );
    // Every file a written call names has its row.
    let ids: std::collections::HashSet<i64> = files.iter().filter_map(|f| f.i("file_id")).collect();
    for c in &calls {
        for id in [c.i("file_id"), c.i("file2_id")].into_iter().flatten() {
            assert!(ids.contains(&id), "{c:?}");
        }
    }
    // Named paths are under the directory (cp's fstatat(fd, "") names none).
    for c in &calls {
        if let Some(p) = c.s("path").filter(|p| !p.is_empty()) {
            assert!(p.starts_with(&keep), "{c:?}");
        }
    }
    let res = run(strata()
        .args(["record", "-q", "--paths", "relative/dir", "-o"])
        .arg(&out)
        .args(["--", "true"]));
    assert_eq!(res.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&res.stderr).contains("not an absolute directory"));
}
