//! Figures of `cargo xtask bench`: a library loaded at run time (Python's extension modules,
//! a container's own libraries) has its probes attached only once strata sees it loaded, so
//! its first calls go unrecorded. How long that takes, and how many calls it costs: for a
//! library opened with dlopen, and for a job's own libc, mapped by its loader.
use std::{fs, path::Path, process::Command};

use anyhow::Context as _;
use serde_json::{Value, json};

use crate::util::{build_workload, exec, output, root};

/// Runs of the workload: the median and the worst are reported.
const RUNS: usize = 10;
/// Calls the workload makes from its dlopen on, and how far apart (microseconds).
const CALLS: u64 = 1000;
const PERIOD_US: u64 = 200;

/// One run: from the library's open to its first recorded call, and the calls recorded.
struct Run {
    ms: f64,
    recorded: u64,
}

/// Builds the library and its workload in `dir`, traces it `RUNS` times with the default
/// probes plus one on the library's function, prints the figure and returns its JSON.
pub fn measure(strata: &Path, dir: &Path) -> anyhow::Result<Value> {
    let lib = dir.join("libstratatest.so.1");
    exec(
        Command::new("cc")
            .args([
                "-shared",
                "-fPIC",
                "-O2",
                "-Wl,-soname,libstratatest.so.1",
                "-o",
            ])
            .arg(&lib)
            .arg(root().join("tests/workloads/dlopen_lib.c")),
    )?;
    let exe = build_workload(dir, "bench_late")?;
    let probes = dir.join("late-probes.toml");
    let builtin = fs::read_to_string(root().join("probes.toml"))?;
    fs::write(
        &probes,
        format!(
            "{builtin}\n[[probe]]\nlayer = \"libc\"\nlibrary = \"libstratatest.so.1\"\n\
             symbol = \"stt_write\"\nop = \"write\"\nargs = [\"fd\", \"buf\", \"size\"]\n\
             ret = \"bytes\"\n"
        ),
    )?;
    let since = "(SELECT min(ts_end_ns) FROM {c} WHERE function = 'openat' AND path LIKE \
                 '%/libstratatest.so.1')";
    let runs = traced_runs(
        |out| {
            let mut cmd = Command::new(strata);
            cmd.args(["record", "-q", "--probes"])
                .arg(&probes)
                .arg("-o")
                .arg(out)
                .arg("--")
                .arg(&exe)
                .arg(dir)
                .args([CALLS.to_string(), PERIOD_US.to_string()]);
            cmd
        },
        &dir.join("out-late"),
        "stt_write",
        since,
    )?;
    Ok(report(
        "library loaded at run time (dlopen)",
        &format!(
            "a library loaded at run time (dlopen), called every {PERIOD_US} us: its first call recorded"
        ),
        "after its open",
        runs,
    ))
}

/// A job in a container with its own libc: a copy of the node's, bind-mounted over its path
/// in a private mount namespace (another inode under the same path, as Apptainer or Podman
/// give a job), calling fwrite from its start. From its first write(2) to its first recorded
/// fwrite: strata reads the copy's symbols and links its probes meanwhile.
pub fn measure_own_libc(strata: &Path, dir: &Path) -> anyhow::Result<Value> {
    let exe = build_workload(dir, "bench_own_libc")?;
    let libc = fs::read_to_string("/proc/self/maps")?
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.ends_with("/libc.so.6"))
        .context("no libc.so.6 among xtask's mappings")?
        .to_string();
    let copy = dir.join("libc-copy.so.6");
    fs::copy(&libc, &copy)?;
    let since = "(SELECT min(ts_begin_ns) FROM {c} WHERE function = 'write' AND \
                 bytes_requested = 0)";
    let runs = traced_runs(
        |out| {
            let mut cmd = Command::new(strata);
            cmd.args(["record", "-q", "--layers", "posix,stdio", "-o"])
                .arg(out)
                .args([
                    "--",
                    "unshare",
                    "--mount",
                    "--propagation",
                    "private",
                    "sh",
                    "-c",
                ])
                .arg(format!(
                    r#"mount --bind "$OWN_LIBC" "$NODE_LIBC" && exec "$JOB" {CALLS} {PERIOD_US}"#
                ))
                // Not arguments: strata probes the executables a command's arguments name
                // before it runs, and a libc is one (it runs, and prints its version).
                .env("OWN_LIBC", &copy)
                .env("NODE_LIBC", &libc)
                .env("JOB", &exe);
            cmd
        },
        &dir.join("out-own-libc"),
        "fwrite",
        since,
    )?;
    Ok(report(
        "a container's own libc",
        &format!(
            "a job with its own libc (a container's), calling fwrite every {PERIOD_US} us: its first fwrite recorded"
        ),
        "after its first write(2)",
        runs,
    ))
}

/// `RUNS` traced runs, each by `record(out)`: the first recorded call of `function` after
/// the time stamp `since` gives (SQL over the calls table `{c}`), and the calls recorded.
fn traced_runs(
    record: impl Fn(&Path) -> Command,
    out: &Path,
    function: &str,
    since: &str,
) -> anyhow::Result<Vec<Run>> {
    let mut runs = Vec::new();
    for _ in 0..RUNS {
        let _ = fs::remove_dir_all(out);
        output(&mut record(out))?;
        runs.push(first_call(out, function, since)?);
    }
    runs.sort_by(|a, b| a.ms.total_cmp(&b.ms));
    Ok(runs)
}

/// Prints the medians and worsts of `runs` (sorted by their first call) and returns them as
/// JSON: of the first call's delay, and of the calls missed, each on its own.
fn report(workload: &str, what: &str, after: &str, runs: Vec<Run>) -> Value {
    let (median, worst) = (runs[RUNS / 2].ms, runs[RUNS - 1].ms);
    let mut missed: Vec<u64> = runs.iter().map(|r| CALLS - r.recorded).collect();
    missed.sort_unstable();
    let (missed_median, missed_worst) = (missed[RUNS / 2], missed[RUNS - 1]);
    println!(
        "{what} {median:.1} ms {after} (median of {RUNS}; worst {worst:.1} ms), {missed_median} of {CALLS} calls missed (worst {missed_worst})"
    );
    json!({
        "workload": workload,
        "runs": RUNS,
        "calls": CALLS,
        "period_us": PERIOD_US,
        "first_call_ms_median": median,
        "first_call_ms_worst": worst,
        "calls_missed_median": missed_median,
        "calls_missed_worst": missed_worst,
    })
}

fn first_call(out: &Path, function: &str, since: &str) -> anyhow::Result<Run> {
    let q = format!(
        "import duckdb\n\
         c = \"read_parquet('{}/calls/**/*.parquet')\"\n\
         r = duckdb.sql(f\"SELECT (SELECT min(ts_begin_ns) FROM {{c}} WHERE function = '{function}') - {since}, (SELECT count(*) FROM {{c}} WHERE function = '{function}')\").fetchall()[0]\n\
         print(*r)",
        out.display()
    );
    let text = output(Command::new("python3").args(["-c", &q]))?;
    let mut it = text.split_whitespace();
    let ns: f64 = it.next().and_then(|v| v.parse().ok()).with_context(|| {
        format!(
            "no recorded call of {function} in {}: {text:?}",
            out.display()
        )
    })?;
    let recorded = it.next().context("no call count")?.parse()?;
    Ok(Run {
        ms: ns / 1e6,
        recorded,
    })
}
