//! `cargo xtask soak`: strata traces the whole node (`--all`) while processes come and go
//! as fast as a shell can start them, each opening, writing and closing files, and a
//! long-lived process keeps opening new files. strata's resident memory and open files are
//! sampled every second; a tracer whose tables grow with exited processes or closed handles
//! shows it as a rising line. Compressed time: a minute of this is days of a normal node's
//! process churn. On a small node the churn also makes records faster than strata writes
//! them, so its backlog fills: the peak is checked against what its design allows. The
//! backlog is given the ring's size, not its default of 8 rings: filling and emptying as the
//! churn's pace changes, a default backlog moves strata's memory by 128 MiB, which would
//! hide a leak or be taken for one.
use std::{
    fs,
    io::IsTerminal as _,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::Context as _;
use serde_json::json;

use crate::util::{build_strata, is_root, target_dir};

/// The ring buffer the soak gives strata, in MiB.
const RING_MIB: u64 = 16;

/// The most records copied out of the ring may take, in MiB.
const BACKLOG_MIB: u64 = 16;

/// The most strata may hold, in MiB: its ring buffer, a full backlog, and room for the rows
/// waiting for a file and its tables. Measured under a sustained overload with this backlog:
/// 150 MiB at 1 minute, 187 at 18 and 189 at 30, level once the files table holds its two
/// generations (with the default backlog, 128 MiB more; a fragmented heap once took it past
/// 700).
const PEAK_MIB: u64 = RING_MIB + BACKLOG_MIB + 224;

struct Sample {
    secs: f64,
    rss_kib: u64,
    fds: usize,
}

fn sample(pid: u32, start: Instant) -> Option<Sample> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss_kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())?;
    let fds = fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count();
    Some(Sample {
        secs: start.elapsed().as_secs_f64(),
        rss_kib,
        fds,
    })
}

fn churn(dir: &std::path::Path) -> anyhow::Result<Vec<Child>> {
    let d = dir.display();
    let scripts = [
        // Short-lived processes: each opens, writes and removes its own file.
        format!(
            "while :; do sh -c 'echo $$ > {d}/p.$$; cat {d}/p.$$ > /dev/null; rm -f {d}/p.$$'; done"
        ),
        // One long-lived process opening a new file every time (its handle table turns over).
        format!("i=0; while :; do i=$((i+1)); echo $i > {d}/long.$((i % 1000)); done"),
    ];
    scripts
        .iter()
        .map(|s| {
            Command::new("sh")
                .arg("-c")
                .arg(s)
                .stdout(Stdio::null())
                .spawn()
                .context("cannot start the churn workload")
        })
        .collect()
}

pub fn run(duration: Duration, json_path: &std::path::Path) -> anyhow::Result<()> {
    anyhow::ensure!(
        is_root(),
        "the soak test loads eBPF programs: run it as root"
    );
    let strata = build_strata()?;
    let dir = target_dir().join("soak");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("work"))?;
    let mut workers = churn(&dir.join("work"))?;
    let start = Instant::now();
    let mut tracer = Command::new(&strata)
        .args(["record", "-q", "--all", "--layers", "posix", "--duration"])
        .arg(format!("{}s", duration.as_secs()))
        .args(["--ring-buffer-mib", &RING_MIB.to_string()])
        .args(["--backlog-mib", &BACKLOG_MIB.to_string()])
        .arg("-o")
        .arg(dir.join("out"))
        .spawn()?;
    let mut samples = Vec::new();
    let quiet = !std::io::stdout().is_terminal();
    while tracer.try_wait()?.is_none() {
        std::thread::sleep(Duration::from_secs(1));
        if let Some(s) = sample(tracer.id(), start) {
            // Every second at a terminal, every 10 s in a log (CI's).
            if quiet && samples.len() % 10 != 9 {
                samples.push(s);
                continue;
            }
            println!(
                "{:>6.0}s  RSS {:>7.1} MiB  open files {:>4}",
                s.secs,
                s.rss_kib as f64 / 1024.0,
                s.fds
            );
            samples.push(s);
        }
    }
    for w in &mut workers {
        let _ = w.kill();
        let _ = w.wait();
    }
    let status = tracer.wait()?;
    anyhow::ensure!(status.success(), "strata failed: {status}");
    anyhow::ensure!(samples.len() >= 8, "too few samples ({})", samples.len());

    // Second quarter (warmed up) against the last quarter.
    let q = samples.len() / 4;
    let mean = |s: &[Sample], f: fn(&Sample) -> f64| s.iter().map(f).sum::<f64>() / s.len() as f64;
    let (early, late) = (&samples[q..2 * q], &samples[samples.len() - q..]);
    let rss = (
        mean(early, |s| s.rss_kib as f64),
        mean(late, |s| s.rss_kib as f64),
    );
    let fds = (mean(early, |s| s.fds as f64), mean(late, |s| s.fds as f64));
    let flat = rss.1 <= rss.0 * 1.2 + 8192.0 && fds.1 <= fds.0 + 4.0;
    println!(
        "RSS {:.1} -> {:.1} MiB, open files {:.0} -> {:.0} (second quarter -> last quarter): {}",
        rss.0 / 1024.0,
        rss.1 / 1024.0,
        fds.0,
        fds.1,
        if flat { "flat" } else { "GROWING" }
    );
    let peak_mib = samples.iter().map(|s| s.rss_kib).max().unwrap_or(0) / 1024;
    let bounded = peak_mib <= PEAK_MIB;
    println!(
        "RSS at most {peak_mib} MiB (bound: {PEAK_MIB} MiB, a {RING_MIB} MiB ring buffer and a {BACKLOG_MIB} MiB backlog): {}",
        if bounded { "within" } else { "OVER" }
    );
    if let Some(parent) = json_path.parent() {
        fs::create_dir_all(parent)?;
    }
    fs::write(
        json_path,
        serde_json::to_string_pretty(&json!({
            "duration_s": duration.as_secs(),
            "rss_kib": samples.iter().map(|s| s.rss_kib).collect::<Vec<_>>(),
            "open_files": samples.iter().map(|s| s.fds).collect::<Vec<_>>(),
            "flat": flat,
            "peak_rss_mib": peak_mib,
            "bounded": bounded,
        }))?,
    )?;
    anyhow::ensure!(flat, "strata's memory or open files grew during the soak");
    anyhow::ensure!(
        bounded,
        "strata's memory went past what its buffers allow ({peak_mib} MiB > {PEAK_MIB} MiB)"
    );
    Ok(())
}
