//! A figure of `cargo xtask bench`: what a short process costs under strata. Job scripts run
//! many small programs, and a node traced with `--all` sees every one. Each new process
//! brings an exec, the libraries its loader maps and the files its libc opens (locales), which
//! strata looks at once per process; the write loops of the other figures never do that.
use std::{path::Path, process::Command, time::Instant};

use anyhow::Context as _;
use serde_json::{Value, json};

use crate::{bench::stats, util::output};

/// Processes in the short and the long run; their difference is measured (start-up and
/// shut-down cancel).
const SHORT: u64 = 100;
const LONG: u64 = 400;
/// Pairs of runs; the median is reported.
const PAIRS: usize = 3;

/// A shell loop running `cat` on a small file, untraced and traced with the default layers.
pub fn measure(strata: &Path, dir: &Path) -> anyhow::Result<Value> {
    let file = dir.join("churn-input");
    std::fs::write(&file, b"strata\n")?;
    let out = dir.join("out-churn");
    // The job's wall time, and strata's CPU time when traced.
    let run = |n: u64, traced: bool| -> anyhow::Result<(f64, u64)> {
        let mut cmd = Command::new(if traced { strata } else { Path::new("sh") });
        if traced {
            let _ = std::fs::remove_dir_all(&out);
            cmd.args(["record", "-q", "-o"])
                .arg(&out)
                .args(["--", "sh"]);
        }
        cmd.args([
            "-c",
            r#"i=0; while [ "$i" -lt "$1" ]; do cat "$2" > /dev/null; i=$((i + 1)); done"#,
            "sh",
            &n.to_string(),
        ])
        .arg(&file);
        let t = Instant::now();
        output(&mut cmd).with_context(|| format!("the churn loop of {n} processes failed"))?;
        let wall = t.elapsed().as_secs_f64() * 1e9;
        let cpu = if traced { stats(&out)?.cpu_ns } else { 0 };
        Ok((wall, cpu))
    };
    let per = (LONG - SHORT) as f64;
    let (mut untraced, mut traced, mut cpu) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..PAIRS {
        let (u_short, _) = run(SHORT, false)?;
        let (u_long, _) = run(LONG, false)?;
        let (t_short, c_short) = run(SHORT, true)?;
        let (t_long, c_long) = run(LONG, true)?;
        untraced.push((u_long - u_short) / per);
        traced.push((t_long - t_short) / per);
        cpu.push(c_long.saturating_sub(c_short) as f64 / per);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (untraced, traced, cpu) = (median(&mut untraced), median(&mut traced), median(&mut cpu));
    println!(
        "short processes (a shell loop running cat, median of {PAIRS}): {:.0} µs each untraced, {:.0} µs traced ({:.2}x); strata's CPU {:.0} µs per process",
        untraced / 1e3,
        traced / 1e3,
        traced / untraced,
        cpu / 1e3
    );
    Ok(json!({
        "workload": "short processes (shell loop running cat)",
        "untraced_us_per_process": untraced / 1e3,
        "traced_us_per_process": traced / 1e3,
        "overhead_ratio": traced / untraced,
        "strata_cpu_us_per_process": cpu / 1e3,
        "pairs": PAIRS,
    }))
}
