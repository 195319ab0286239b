//! strata: a multi-layer I/O tracer for HPC nodes.
use std::{path::PathBuf, process::ExitCode, time::Duration};

use clap::{Parser, Subcommand};
use strata::{attach, probes, record};

#[derive(Parser)]
#[command(
    name = "strata",
    version,
    about = "Trace what parallel I/O really does, on every layer at once",
    long_about = "strata traces the I/O of unmodified programs with eBPF: library calls \
(stdio; MPI-IO, HDF5 and NetCDF as probes.toml declares them) through uprobes, and POSIX \
I/O through syscall tracepoints. Every call is linked to the call that made it, every fd and \
FILE* to the handle it came from, and every handle to its file and file system. The result is \
a Parquet dataset that DuckDB or Spark query directly.\n\nRun as root.",
    after_help = "Examples:\n  \
strata record -o out/ -- mpirun -np 4 ./app     trace a command and all it starts\n  \
strata record -o out/ --pid 1234                attach to a running process tree\n  \
strata record -o out/ --all --duration 60s      every process on the node for a minute\n  \
strata record -o out/ --slurm-job 4242          a Slurm job's processes on this node\n  \
strata probes                                   list what would be probed\n\n\
Query the result:\n  \
duckdb -c \"SELECT layer, function, count(*), sum(bytes_result) FROM read_parquet('out/calls/**/*.parquet', hive_partitioning=true) GROUP BY ALL\""
)]
struct Cli {
    /// More log output (-v: info, -vv: debug). RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Trace a command, a running process tree, or the whole node into a Parquet dataset.
    ///
    /// Tracing stops when the command exits (its exit code becomes strata's), on
    /// SIGINT/SIGTERM/SIGHUP, or after --duration. Rows are written as the run goes: a killed
    /// tracer loses at most the last --flush-interval.
    #[command(arg_required_else_help = true)]
    Record {
        /// Output directory; tables go to OUT/<table>/host=<hostname>/*.parquet.
        #[arg(short, long, value_name = "OUT")]
        output: PathBuf,
        /// Trace this running process and its descendants (existing and future).
        #[arg(long, conflicts_with_all = ["all", "command"])]
        pid: Option<i32>,
        /// Trace every process on the node except strata itself.
        #[arg(long, conflicts_with = "command")]
        all: bool,
        /// Trace every process in this cgroup v2 directory and its descendants, including
        /// processes that join it later (filtered in the kernel by cgroup id).
        #[arg(long, value_name = "DIR", conflicts_with_all = ["all", "command", "pid"])]
        cgroup: Option<PathBuf>,
        /// Trace the Slurm job's cgroup on this node (cgroup/v2 plugin; see docs/admin.md).
        #[arg(long, value_name = "JOBID", conflicts_with_all = ["all", "command", "pid", "cgroup"])]
        slurm_job: Option<String>,
        /// With --slurm-job: only this step (a number, `batch` or `extern`).
        #[arg(long, value_name = "STEP", requires = "slurm_job")]
        slurm_step: Option<String>,
        /// Stop after this long (e.g. 30s, 5m, 2h).
        #[arg(long, value_parser = parse_duration)]
        duration: Option<Duration>,
        /// Probe list to use instead of the built-in one (see docs/probes.md).
        #[arg(long, value_name = "FILE")]
        probes: Option<PathBuf>,
        /// Trace exactly these layers (comma-separated: posix, stdio, libc, mpiio, hdf5,
        /// netcdf, vfs, block, pagecache), including probes marked `enabled = false`.
        /// Default: the probes enabled in the file (all but libc).
        #[arg(long, value_delimiter = ',')]
        layers: Option<Vec<String>>,
        /// Ring buffer size in MiB (rounded up to a power of two). Raise it if events are lost.
        #[arg(long, default_value_t = 16, value_name = "MIB")]
        ring_buffer_mib: u32,
        /// How syscall probes attach: `raw` (two raw_syscalls tracepoints; fast start and
        /// stop) or `per-syscall` (one tracepoint pair per probed syscall; no cost on other
        /// syscalls, but seconds to detach).
        #[arg(long, value_enum, default_value_t = attach::SyscallMode::Raw)]
        syscall_mode: attach::SyscallMode,
        /// How often buffered rows are written out as Parquet files.
        #[arg(long, default_value = "1s", value_parser = parse_duration)]
        flush_interval: Duration,
        /// No status line and no summary.
        #[arg(short, long)]
        quiet: bool,
        /// The command to trace, after `--`.
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Summarise a dataset and look for known I/O patterns (small operations, a single
    /// writer, ...). The queries are the SQL files shipped in report/, run by an embedded
    /// DuckDB; docs/report.md defines each and shows how to run them in DuckDB or Spark.
    #[command(arg_required_else_help = true)]
    Report {
        /// A dataset written by `strata record -o`.
        #[arg(value_name = "DATASET")]
        dataset: PathBuf,
        /// `text` for people, `json` for scripts.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// List the probes of a probes file (default: the built-in one) and check it.
    Probes {
        /// Probe list to check instead of the built-in one.
        #[arg(long, value_name = "FILE")]
        probes: Option<PathBuf>,
    },
    /// Measure the user-space pipeline alone on a synthetic stream (used by `cargo xtask bench`).
    #[command(hide = true)]
    BenchPipeline {
        #[arg(long, default_value_t = 1_000_000)]
        events: u64,
        /// Scratch directory for the Parquet output.
        #[arg(long)]
        dir: PathBuf,
    },
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ReportFormat {
    Text,
    Json,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, unit) = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .map_or((s, "s"), |i| s.split_at(i));
    let v: f64 = num
        .parse()
        .map_err(|_| format!("bad duration {s:?} (try 30s, 5m, 2h)"))?;
    let secs = match unit {
        "ms" => v / 1000.0,
        "s" | "" => v,
        "m" => v * 60.0,
        "h" => v * 3600.0,
        _ => return Err(format!("bad duration unit in {s:?} (ms, s, m or h)")),
    };
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!("duration {s:?} must be positive"));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let level = match cli.verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(level))
        .format_timestamp(None)
        .init();
    match run(cli.cmd) {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("strata: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cmd: Cmd) -> anyhow::Result<i32> {
    match cmd {
        Cmd::Record {
            output,
            pid,
            all,
            cgroup,
            slurm_job,
            slurm_step,
            duration,
            probes,
            layers,
            ring_buffer_mib,
            syscall_mode,
            flush_interval,
            quiet,
            command,
        } => {
            let layers = layers
                .map(|ls| {
                    ls.iter()
                        .map(|l| l.parse::<probes::Layer>())
                        .collect::<Result<Vec<_>, _>>()
                })
                .transpose()
                .map_err(anyhow::Error::msg)?;
            let outcome = record::run(record::RecordArgs {
                output,
                command,
                pid,
                all,
                cgroup: match (cgroup, slurm_job) {
                    (Some(dir), _) => Some(dir),
                    (None, Some(job)) => Some(strata::cgroup::slurm(&job, slurm_step.as_deref())?),
                    (None, None) => None,
                },
                duration,
                probes_file: probes,
                layers,
                ring_buffer_mib,
                syscall_mode,
                flush_interval,
                quiet,
            })?;
            Ok(outcome.exit_code)
        }
        Cmd::BenchPipeline { events, dir } => {
            std::fs::create_dir_all(&dir)?;
            let r = strata::pipeline_bench::run(events, &dir)?;
            println!(
                "events {} seconds {:.3} events_per_s {:.0} calls {} parquet_bytes {}",
                r.events,
                r.seconds,
                r.events as f64 / r.seconds,
                r.calls_written,
                r.parquet_bytes
            );
            Ok(0)
        }
        Cmd::Report { dataset, format } => {
            let answers = strata::report::run(&dataset)?;
            match format {
                ReportFormat::Text => print!("{}", strata::report::to_text(&answers)),
                ReportFormat::Json => println!(
                    "{}",
                    serde_json::to_string_pretty(&strata::report::to_json_report(&answers))?
                ),
            }
            Ok(0)
        }
        Cmd::Probes { probes } => {
            let list = probes::load(probes.as_deref())?;
            println!(
                "{:<4} {:<7} {:<8} {:<10} {:<14} {:<8} target",
                "id", "layer", "on", "op", "function", "ret"
            );
            for p in &list {
                let target = match &p.target {
                    probes::Target::Syscall(s) => format!("syscalls/sys_{{enter,exit}}_{s}"),
                    probes::Target::Uprobe { library, .. } => format!("uprobe {library}"),
                    probes::Target::Kernel { attach, .. }
                    | probes::Target::Kfunc { attach, .. } => attach
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(" | "),
                };
                println!(
                    "{:<4} {:<7} {:<8} {:<10} {:<14} {:<8} {target}",
                    p.id,
                    p.layer,
                    if p.enabled { "yes" } else { "no" },
                    p.op,
                    p.function(),
                    p.ret
                );
            }
            Ok(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("3 weeks").is_err());
    }

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory as _;
        Cli::command().debug_assert();
    }
}
