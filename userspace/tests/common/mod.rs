//! Helpers for the tests that run strata for real: root check, workload builds, and reading
//! the Parquet output back as plain rows.
#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::{
    cell::RefCell,
    collections::HashMap,
    path::{Path, PathBuf},
    process::{Command, Output},
    sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard},
};

use arrow::{
    array::{Array as _, AsArray as _},
    datatypes::{DataType, Int32Type, Int64Type},
};

/// Privileged tests fail loudly instead of skipping: CI runs as root and must run them. The
/// test then shares the node with the other tests of its binary, which run beside it.
pub fn require_root() {
    assert_root();
    hold(|| Held::Shared(NODE.read().unwrap_or_else(PoisonError::into_inner)));
}

/// [`require_root`] for a test whose ground truth is the node's own state, which any other
/// strata changes (uprobes go by file: a breakpoint in libc is in every process's copy): it
/// waits for the tests beside it to end, and none starts until it has.
pub fn require_root_alone() {
    assert_root();
    hold(|| Held::Alone(NODE.write().unwrap_or_else(PoisonError::into_inner)));
}

fn assert_root() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test loads eBPF programs and must run as root (CI does); run `cargo xtask test` as root"
    );
}

/// The node's tracing, shared by the tests of one binary or held by one alone.
static NODE: RwLock<()> = RwLock::new(());

/// A test's hold on [`NODE`], kept by its thread (libtest runs each test on a thread of its
/// own) and let go when the thread ends, passed or failed.
enum Held {
    Shared(#[allow(dead_code, reason = "held, not read")] RwLockReadGuard<'static, ()>),
    Alone(#[allow(dead_code, reason = "held, not read")] RwLockWriteGuard<'static, ()>),
}

thread_local! {
    static HELD: RefCell<Option<Held>> = const { RefCell::new(None) };
}

/// Takes the hold `take` gives, unless the thread has one (a helper's second call).
fn hold(take: impl FnOnce() -> Held) {
    HELD.with(|h| {
        if h.borrow().is_none() {
            let held = take();
            *h.borrow_mut() = Some(held);
        }
    });
}

/// Whether the running kernel's release is `major.minor` or later.
pub fn kernel_at_least(major: u32, minor: u32) -> bool {
    let release = nix::sys::utsname::uname().unwrap();
    let release = release.release().to_string_lossy().into_owned();
    let mut parts = release
        .split(['.', '-'])
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (a, b) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (a, b) >= (major, minor)
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

/// A fresh directory under the target dir, removed first if it exists.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Compiles a workload from tests/workloads with `compiler` (`cc`, `mpicc`, `h5pcc`; for
/// Fortran `mpif90`, `h5pfc`). Where no compiler is (the kernel tests under qemu),
/// `STRATA_WORKLOADS_DIR` holds them prebuilt under the output's file name.
pub fn build_c(compiler: &str, src: &str, out: &Path, extra: &[&str]) -> PathBuf {
    if let Some(dir) = std::env::var_os("STRATA_WORKLOADS_DIR") {
        let prebuilt = Path::new(&dir).join(out.file_name().expect("output file name"));
        assert!(
            prebuilt.exists(),
            "{} is not prebuilt in STRATA_WORKLOADS_DIR",
            prebuilt.display()
        );
        return prebuilt;
    }
    let src = repo_root().join("tests/workloads").join(src);
    // In the output's directory: h5pcc leaves object files where it runs.
    let st = Command::new(compiler)
        .current_dir(out.parent().expect("output file has a directory"))
        .arg("-O1")
        .arg("-o")
        .arg(out)
        .arg(&src)
        .args(extra)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {compiler} (run `cargo xtask setup`): {e}"));
    assert!(st.success(), "{compiler} failed on {}", src.display());
    out.to_owned()
}

pub fn strata() -> Command {
    Command::new(env!("CARGO_BIN_EXE_strata"))
}

/// The pid of the process that ran `exe` in the dataset at `out`.
pub fn workload_pid(out: &Path, exe: &Path) -> i64 {
    rows(out, "processes")
        .iter()
        .find(|p| p.s("exe") == exe.to_str())
        .and_then(|p| p.i("pid"))
        .unwrap_or_else(|| panic!("no process row for {}", exe.display()))
}

/// The file_id of the file at `path` in the dataset at `out`.
pub fn file_id_of(out: &Path, path: &Path) -> i64 {
    rows(out, "files")
        .iter()
        .find(|f| f.s("path") == path.to_str())
        .and_then(|f| f.i("file_id"))
        .unwrap_or_else(|| panic!("no file row for {}", path.display()))
}

/// The built-in probes.toml without the probe of `symbol`.
pub fn without_probe(symbol: &str) -> String {
    let text = strata::probes::BUILTIN;
    let at = text
        .find(&format!("symbol = \"{symbol}\""))
        .expect("probes.toml probes it");
    let start = text[..at].rfind("[[probe]]").unwrap();
    let end = at + text[at..].find("[[probe]]").unwrap();
    format!("{}{}", &text[..start], &text[end..])
}

/// A shell in a mount namespace of its own, whose mounts the node does not see: the script
/// follows.
pub const PRIVATE_NAMESPACE_SH: [&str; 6] =
    ["unshare", "--mount", "--propagation", "private", "sh", "-c"];

/// One mount of a mountinfo text: (mount id, parent id, device, root, mount point, type,
/// source, options, fs options), names unescaped and options sorted, as the `mounts`
/// table's columns hold them.
pub type MountLine = (
    i64,
    i64,
    String,
    String,
    String,
    String,
    Option<String>,
    String,
    String,
);

pub fn mountinfo_lines(text: &str) -> Vec<MountLine> {
    let unescape = |s: &str| {
        let mut out = s.to_string();
        for (code, c) in [
            ("\\040", " "),
            ("\\011", "\t"),
            ("\\012", "\n"),
            ("\\134", "\\"),
        ] {
            out = out.replace(code, c);
        }
        out
    };
    let sorted = |s: &str| {
        let mut v: Vec<&str> = s.split(',').collect();
        v.sort();
        v.dedup();
        v.join(",")
    };
    text.lines()
        .map(|l| {
            let (mine, fs) = l.split_once(" - ").expect("mountinfo's separator");
            let m: Vec<&str> = mine.split(' ').collect();
            let f: Vec<&str> = fs.split(' ').collect();
            (
                m[0].parse().unwrap(),
                m[1].parse().unwrap(),
                m[2].to_string(),
                unescape(m[3]),
                unescape(m[4]),
                f[0].to_string(),
                (f[1] != "none").then(|| unescape(f[1])),
                sorted(m[5]),
                sorted(f[2]),
            )
        })
        .collect()
}

/// The rows of a `mounts` table as [`MountLine`]s.
pub fn mount_lines(mounts: &[Row]) -> Vec<MountLine> {
    mounts
        .iter()
        .map(|m| {
            (
                m.i("mount_id").unwrap(),
                m.i("parent_id").unwrap(),
                m.s("dev").unwrap().to_string(),
                m.s("root").unwrap().to_string(),
                m.s("mount_point").unwrap().to_string(),
                m.s("fs_type").unwrap().to_string(),
                m.s("mount_source").map(str::to_string),
                m.s("options").unwrap().to_string(),
                m.s("fs_options").unwrap().to_string(),
            )
        })
        .collect()
}

/// A chroot's tree: `usr` (the job's shell bind-mounts the node's there), `job`, `dirs`, and
/// the node's links into `usr`.
pub fn chroot_tree(root: &Path, dirs: &[&Path]) {
    for d in [Path::new("usr"), Path::new("job")].iter().chain(dirs) {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    for (link, to) in [
        ("lib", "usr/lib"),
        ("lib64", "usr/lib64"),
        ("bin", "usr/bin"),
    ] {
        std::os::unix::fs::symlink(to, root.join(link)).unwrap();
    }
}

/// `strata record -q --layers LAYERS -o OUT --`: the traced command and its arguments follow.
pub fn recording(layers: &str, out: &Path) -> Command {
    let mut cmd = strata();
    cmd.args(["record", "-q", "--layers", layers, "-o"])
        .arg(out)
        .arg("--");
    cmd
}

pub fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("strata runs");
    eprintln!(
        "--- strata stderr ---\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Null,
    I(i64),
    S(String),
    B(bool),
    L(Vec<i64>),
    SL(Vec<String>),
}

pub type Row = HashMap<String, Val>;

pub trait RowExt {
    fn i(&self, col: &str) -> Option<i64>;
    fn s(&self, col: &str) -> Option<&str>;
    fn b(&self, col: &str) -> Option<bool>;
    fn list_i(&self, col: &str) -> Vec<i64>;
    fn list_s(&self, col: &str) -> Vec<String>;
}

impl RowExt for Row {
    fn i(&self, col: &str) -> Option<i64> {
        match self.get(col).unwrap_or_else(|| panic!("no column {col}")) {
            Val::I(v) => Some(*v),
            Val::Null => None,
            v => panic!("column {col} is {v:?}, not an integer"),
        }
    }
    fn s(&self, col: &str) -> Option<&str> {
        match self.get(col).unwrap_or_else(|| panic!("no column {col}")) {
            Val::S(v) => Some(v),
            Val::Null => None,
            v => panic!("column {col} is {v:?}, not a string"),
        }
    }
    fn b(&self, col: &str) -> Option<bool> {
        match self.get(col).unwrap_or_else(|| panic!("no column {col}")) {
            Val::B(v) => Some(*v),
            Val::Null => None,
            v => panic!("column {col} is {v:?}, not a boolean"),
        }
    }
    fn list_i(&self, col: &str) -> Vec<i64> {
        match self.get(col).unwrap_or_else(|| panic!("no column {col}")) {
            Val::L(v) => v.clone(),
            v => panic!("column {col} is {v:?}, not a list of integers"),
        }
    }
    fn list_s(&self, col: &str) -> Vec<String> {
        match self.get(col).unwrap_or_else(|| panic!("no column {col}")) {
            Val::SL(v) => v.clone(),
            v => panic!("column {col} is {v:?}, not a list of strings"),
        }
    }
}

/// `strata record -q OPTS -o OUT -- mpirun --oversubscribe -np NP PROGRAM ARGS` (as root, with
/// `env` for the job); fails the test if it fails.
pub fn record_mpi(
    opts: &[&str],
    out: &Path,
    np: u32,
    program: &Path,
    args: &[&std::ffi::OsStr],
    env: &[(&str, &str)],
) {
    let res = run(strata()
        .args(["record", "-q"])
        .args(opts)
        .arg("-o")
        .arg(out)
        .args(["--", "mpirun", "--oversubscribe", "-np", &np.to_string()])
        .arg(program)
        .args(args)
        .envs(env.iter().copied())
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"));
    assert!(res.status.success(), "strata record: {:?}", res.status);
}

/// Every row of a table of the dataset at `out`.
/// Whether a run in `out` probed stdio's `fwrite` on a session link (Linux 6.13+), where a
/// stdio call on a stream without an fd is recorded at its entry, without its return.
pub fn stdio_sessions(out: &Path) -> bool {
    let probes = rows(out, "probes");
    let fwrite = (probes.iter())
        .find(|p| p.s("layer") == Some("stdio") && p.s("function") == Some("fwrite"))
        .expect("the probes table has fwrite's probe");
    fwrite.s("mechanism") == Some("uprobe_session")
}

/// A seeded workload's two runs (`exe SEED N ARGS.. [LOG]`): untraced with `log`, its ground
/// truth, then traced at `layers` into `out` without it, each from what `fresh` makes. The
/// log, and the traced run's calls in the order they began.
pub fn seeded_runs(
    exe: &Path,
    layers: &str,
    args: &[&std::ffi::OsStr],
    (log, out): (&Path, &Path),
    fresh: &dyn Fn(),
) -> (String, Vec<Row>) {
    fresh();
    let res = run(Command::new(exe).args(args).arg(log));
    assert!(res.status.success(), "{args:?}: {:?}", res.status);
    let text = std::fs::read_to_string(log).unwrap();
    fresh();
    let res = run(strata()
        .args(["record", "-q", "--layers", layers, "-o"])
        .arg(out)
        .arg("--")
        .arg(exe)
        .args(args));
    assert!(res.status.success(), "{args:?}: {:?}", res.status);
    let mut calls = rows(out, "calls");
    calls.sort_by_key(|c| c.i("ts_begin_ns"));
    (text, calls)
}

/// [`seeded_runs`] of `exe SEED N DIR/files [LOG]`, whose files are made afresh in
/// DIR/files for each run: seed `seed`, `n` calls, the log DIR/SEED.log, the traced run's
/// dataset DIR/out-SEED (returned after the log and the calls).
pub fn seeded_runs_on_files(
    exe: &Path,
    layers: &str,
    dir: &Path,
    (seed, n): (u32, u32),
) -> (String, Vec<Row>, PathBuf) {
    let (log, out, files) = (
        dir.join(format!("{seed}.log")),
        dir.join(format!("out-{seed}")),
        dir.join("files"),
    );
    let seed_n = [seed.to_string(), n.to_string()];
    let args = [seed_n[0].as_ref(), seed_n[1].as_ref(), files.as_os_str()];
    let fresh = || {
        let _ = std::fs::remove_dir_all(&files);
        std::fs::create_dir(&files).unwrap();
    };
    let (log, calls) = seeded_runs(exe, layers, &args, (&log, &out), &fresh);
    (log, calls, out)
}

pub fn rows(out: &Path, table: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    for batch in strata::sink::read_table(out, table).unwrap() {
        let schema = batch.schema();
        for r in 0..batch.num_rows() {
            let mut row = Row::new();
            for (i, f) in schema.fields().iter().enumerate() {
                let col = batch.column(i);
                let v = if col.is_null(r) {
                    Val::Null
                } else {
                    match f.data_type() {
                        DataType::Int64 => Val::I(col.as_primitive::<Int64Type>().value(r)),
                        DataType::Int32 => {
                            Val::I(i64::from(col.as_primitive::<Int32Type>().value(r)))
                        }
                        DataType::Utf8 => Val::S(col.as_string::<i32>().value(r).to_string()),
                        DataType::Boolean => Val::B(col.as_boolean().value(r)),
                        DataType::List(f) if f.data_type() == &DataType::Utf8 => {
                            let l = col.as_list::<i32>().value(r);
                            let l = l.as_string::<i32>();
                            Val::SL((0..l.len()).map(|i| l.value(i).to_string()).collect())
                        }
                        DataType::List(_) => {
                            let l = col.as_list::<i32>().value(r);
                            Val::L(l.as_primitive::<Int64Type>().values().to_vec())
                        }
                        t => panic!("unexpected type {t}"),
                    }
                };
                row.insert(f.name().clone(), v);
            }
            rows.push(row);
        }
    }
    rows
}

/// Runs a DuckDB query (Python `duckdb` package, installed by `cargo xtask setup`) and
/// returns its rows as tab-separated text lines.
pub fn duckdb(sql: &str) -> Vec<String> {
    duckdb_with(&[], sql)
}

/// Runs `setup` statements (views) first, then the query, in one DuckDB connection.
pub fn duckdb_with(setup: &[&str], sql: &str) -> Vec<String> {
    let script = format!(
        "import duckdb\ncon = duckdb.connect()\nfor s in {setup:?}:\n    con.execute(s)\nfor r in con.sql({sql:?}).fetchall():\n    print('\\t'.join(str(v) for v in r))\n"
    );
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "duckdb query failed (is the duckdb package installed? `cargo xtask setup`): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}
