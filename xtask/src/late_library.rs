//! A figure of `cargo xtask bench`: a library loaded at run time (Python's extension modules,
//! a container's own libraries) has its probes attached only once strata sees it loaded, so
//! its first calls go unrecorded. How long that takes, and how many calls it costs.
use std::{fs, path::Path, process::Command};

use anyhow::Context as _;
use serde_json::{Value, json};

use crate::util::{exec, output, root};

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
    let exe = dir.join("bench_late");
    exec(
        Command::new("cc")
            .args(["-O2", "-o"])
            .arg(&exe)
            .arg(root().join("tests/workloads/bench_late.c")),
    )?;
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
    let mut runs = Vec::new();
    for _ in 0..RUNS {
        let out = dir.join("out-late");
        let _ = fs::remove_dir_all(&out);
        output(
            Command::new(strata)
                .args(["record", "-q", "--probes"])
                .arg(&probes)
                .arg("-o")
                .arg(&out)
                .arg("--")
                .arg(&exe)
                .arg(dir)
                .args([CALLS.to_string(), PERIOD_US.to_string()]),
        )?;
        runs.push(first_call(&out)?);
    }
    runs.sort_by(|a, b| a.ms.total_cmp(&b.ms));
    let (median, worst) = (&runs[RUNS / 2], &runs[RUNS - 1]);
    let missed = |r: &Run| CALLS - r.recorded;
    println!(
        "a library loaded at run time (dlopen), called every {PERIOD_US} us: its first call recorded {:.1} ms after its open (median of {RUNS}; worst {:.1} ms), {} of {CALLS} calls missed (worst {})",
        median.ms,
        worst.ms,
        missed(median),
        missed(worst)
    );
    Ok(json!({
        "workload": "library loaded at run time (dlopen)",
        "runs": RUNS,
        "calls": CALLS,
        "period_us": PERIOD_US,
        "first_call_ms_median": median.ms,
        "first_call_ms_worst": worst.ms,
        "calls_missed_median": missed(median),
        "calls_missed_worst": missed(worst),
    }))
}

fn first_call(out: &Path) -> anyhow::Result<Run> {
    let q = format!(
        "import duckdb\n\
         c = \"read_parquet('{}/calls/**/*.parquet')\"\n\
         r = duckdb.sql(f\"SELECT (SELECT min(ts_begin_ns) FROM {{c}} WHERE function = 'stt_write') - (SELECT min(ts_end_ns) FROM {{c}} WHERE function = 'openat' AND path LIKE '%/libstratatest.so.1'), (SELECT count(*) FROM {{c}} WHERE function = 'stt_write')\").fetchall()[0]\n\
         print(*r)",
        out.display()
    );
    let text = output(Command::new("python3").args(["-c", &q]))?;
    let mut it = text.split_whitespace();
    let ns: f64 = it.next().and_then(|v| v.parse().ok()).with_context(|| {
        format!(
            "no recorded call of the library in {}: {text:?}",
            out.display()
        )
    })?;
    let recorded = it.next().context("no call count")?.parse()?;
    Ok(Run {
        ms: ns / 1e6,
        recorded,
    })
}
