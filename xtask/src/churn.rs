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
/// Mappings of each library (libc, the loader) per round of the breakpoint figure.
const MAPPINGS: u64 = 2_000;

/// A shell loop running `cat` on a small file, untraced, traced with the default layers, and
/// untraced beside a `strata record` of another command: a process strata does not trace
/// still has a breakpoint written into its copy of each probed page of the libraries it
/// maps, and traps at each call of a probed function (cat's libc reads the locale aliases
/// with `fgets`, 83 calls); and beside one with `--skip-layers stdio`, which writes none
/// into libc.
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
    let (mut untraced, mut traced, mut cpu, mut beside, mut beside_no_stdio) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..PAIRS {
        let (u_short, _) = run(SHORT, false)?;
        let (u_long, _) = run(LONG, false)?;
        let (t_short, c_short) = run(SHORT, true)?;
        let (t_long, c_long) = run(LONG, true)?;
        let beside_run = |args: &[&str]| {
            crate::bench::beside_strata(strata, &dir.join("out-churn-beside"), args, || {
                Ok((run(SHORT, false)?.0, run(LONG, false)?.0))
            })
        };
        let (b_short, b_long) = beside_run(&[])?;
        let (n_short, n_long) = beside_run(&["--skip-layers", "stdio"])?;
        untraced.push((u_long - u_short) / per);
        traced.push((t_long - t_short) / per);
        cpu.push(c_long.saturating_sub(c_short) as f64 / per);
        beside.push((b_long - b_short) / per);
        beside_no_stdio.push((n_long - n_short) / per);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (untraced, traced, cpu, beside, beside_no_stdio) = (
        median(&mut untraced),
        median(&mut traced),
        median(&mut cpu),
        median(&mut beside),
        median(&mut beside_no_stdio),
    );
    println!(
        "short processes (a shell loop running cat, median of {PAIRS}): {:.0} µs each untraced, {:.0} µs traced ({:.2}x); strata's CPU {:.0} µs per process; untraced beside a strata record of another command {:.0} µs ({:.2}x), beside one with --skip-layers stdio {:.0} µs ({:.2}x)",
        untraced / 1e3,
        traced / 1e3,
        traced / untraced,
        cpu / 1e3,
        beside / 1e3,
        beside / untraced,
        beside_no_stdio / 1e3,
        beside_no_stdio / untraced,
    );
    Ok(json!({
        "workload": "short processes (shell loop running cat)",
        "untraced_us_per_process": untraced / 1e3,
        "traced_us_per_process": traced / 1e3,
        "overhead_ratio": traced / untraced,
        "strata_cpu_us_per_process": cpu / 1e3,
        "untraced_beside_us_per_process": beside / 1e3,
        "beside_ratio": beside / untraced,
        "untraced_beside_no_stdio_us_per_process": beside_no_stdio / 1e3,
        "beside_no_stdio_ratio": beside_no_stdio / untraced,
        "pairs": PAIRS,
    }))
}

/// What a process strata does not trace pays at its start for the library probes: the kernel
/// maps its loader and the loader maps libc, and the kernel writes each probed address's
/// breakpoint into that mapping's own copy of the page (copied from the file's on the first),
/// whether the process ever calls the function or not. `bench_io maplibc` (`mapld`) maps the
/// file as the loader maps a library's text and unmaps it, alone, beside a `strata record`
/// of another command, and beside one with `--skip-layers stdio`, which probes nothing in
/// libc; median of three rounds.
pub fn measure_breakpoints(strata: &Path, exe: &Path, dir: &Path) -> anyhow::Result<Value> {
    let maps = |mode: &str| -> anyhow::Result<f64> {
        let text = output(
            Command::new(exe)
                .args([mode, &MAPPINGS.to_string()])
                .arg(dir),
        )?;
        let ns: f64 = text
            .trim()
            .parse()
            .with_context(|| format!("bench_io {mode} printed {text:?}"))?;
        Ok(ns / MAPPINGS as f64)
    };
    let both = || Ok((maps("maplibc")?, maps("mapld")?));
    let out = dir.join("out-breakpoints");
    let (mut alone, mut beside, mut no_stdio) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..PAIRS {
        alone.push(both()?);
        beside.push(crate::bench::beside_strata(strata, &out, &[], both)?);
        no_stdio.push(crate::bench::beside_strata(
            strata,
            &out,
            &["--skip-layers", "stdio"],
            both,
        )?);
    }
    // Medians in µs, libc's and the loader's apart.
    let median = |v: &[(f64, f64)]| {
        let mid = |mut x: Vec<f64>| {
            x.sort_by(f64::total_cmp);
            x[x.len() / 2] / 1e3
        };
        (
            mid(v.iter().map(|p| p.0).collect()),
            mid(v.iter().map(|p| p.1).collect()),
        )
    };
    let (alone, beside, no_stdio) = (median(&alone), median(&beside), median(&no_stdio));
    println!(
        "a process strata does not trace, at its start (its libc and its loader mapped, median of {PAIRS}): libc {:.1} µs alone, {:.1} µs beside a strata record of another command ({:+.1}: the stdio probes' breakpoints written into its copy of their pages), {:.1} µs beside one with --skip-layers stdio ({:+.1}); the loader {:.1} µs alone, {:.1} beside ({:+.1}: the probe of its library reports), {:.1} with --skip-layers stdio",
        alone.0,
        beside.0,
        beside.0 - alone.0,
        no_stdio.0,
        no_stdio.0 - alone.0,
        alone.1,
        beside.1,
        beside.1 - alone.1,
        no_stdio.1,
    );
    Ok(json!({
        "workload": "libc and the loader mapped beside a strata record (their breakpoints written)",
        "libc_alone_us": alone.0,
        "libc_beside_us": beside.0,
        "libc_beside_no_stdio_us": no_stdio.0,
        "loader_alone_us": alone.1,
        "loader_beside_us": beside.1,
        "loader_beside_no_stdio_us": no_stdio.1,
        "rounds": PAIRS,
    }))
}
