//! strata: a multi-layer I/O tracer for HPC nodes.
use std::{collections::HashMap, path::PathBuf, process::ExitCode, time::Duration};

use clap::{Parser, Subcommand};
use strata::{attach, probes, record, symbols::SymbolTable};

/// strata's mark (`peers::MARK_SECTION`): a run tracing every process knows another strata
/// by it, whatever its build or path, and leaves it out.
#[used]
#[unsafe(link_section = ".strata")]
static MARK: [u8; 8] = *b"strata\0\0";

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
strata probes                                   list what would be probed\n  \
strata compact out/                             merge a finished run's files into fewer\n\n\
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

/// Options of `record` and `daemon`; each defaults to the configuration file's key of the
/// same name, then to the built-in default.
#[derive(clap::Args)]
struct TraceOpts {
    /// Configuration file [default: /etc/strata/strata.toml if it exists].
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Probe list to use instead of the built-in one (see docs/probes.md).
    #[arg(long, value_name = "FILE")]
    probes: Option<PathBuf>,
    /// Trace exactly these layers (comma-separated: posix, stdio, libc, mpiio, hdf5,
    /// netcdf, uring, aio, vfs, block, pagecache; or all), including probes marked
    /// `enabled = false`.
    /// Default: the probes enabled in the file: all but libc's, and MPI's request waits
    /// (MPI_Wait, MPI_Test, ...), which trap on every communication request too.
    #[arg(long, value_delimiter = ',')]
    layers: Option<Vec<String>>,
    /// Leave these layers out of what is traced otherwise (the probes enabled in the file, or
    /// --layers). `--skip-layers stdio` spares every process on the node, traced or not, the
    /// breakpoints strata's stdio probes write into its libc (see docs/admin.md).
    #[arg(long, value_delimiter = ',', value_name = "LAYERS")]
    skip_layers: Option<Vec<String>>,
    /// Ring buffer size in MiB (rounded up to a power of two). strata copies records out of it
    /// into its own memory, up to 8 times this much, while it catches up with a burst; events
    /// are lost only when both are full. Raise it if events are lost. [default: 16]
    #[arg(long, value_name = "MIB")]
    ring_buffer_mib: Option<u32>,
    /// The most memory, in MiB, that records copied out of the ring buffer may take while
    /// strata catches up (at least 1). A larger backlog rides out longer bursts; a smaller
    /// one bounds strata's memory more tightly under a sustained overload, and more events
    /// are lost there. [default: 8 times --ring-buffer-mib]
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u32).range(1..))]
    backlog_mib: Option<u32>,
    /// How syscall probes attach: `btf` (two BTF raw tracepoints, the cheapest per call;
    /// fast start and stop; `raw` where the kernel has no BTF), `raw` (the two
    /// raw_syscalls trace events) or `per-syscall` (one tracepoint pair per probed syscall;
    /// no cost on other syscalls, but seconds to detach). [default: btf]
    #[arg(long, value_enum)]
    syscall_mode: Option<attach::SyscallMode>,
    /// How often buffered rows are written out as Parquet files. [default: 1s]
    #[arg(long, value_parser = parse_duration)]
    flush_interval: Option<Duration>,
    /// Node name of the dataset's `host=` partitions. [default: the hostname]
    #[arg(long)]
    host: Option<String>,
    /// Permissions of the Parquet files, octal. [default: 0640]
    #[arg(long, value_name = "MODE")]
    file_mode: Option<String>,
    /// Trace only processes of these users (comma-separated names or uids), filtered in
    /// the kernel.
    #[arg(long, value_delimiter = ',', value_name = "USERS")]
    users: Option<Vec<String>>,
    /// Write only rows about files under these directories (comma-separated); calls that
    /// name no file are kept.
    #[arg(long, value_delimiter = ',', value_name = "DIRS")]
    paths: Option<Vec<String>>,
    /// Whether strata turns on /sys/kernel/rcu_expedited while it attaches probes to a
    /// library a traced process loaded during the run (a dlopen, a container's libc), and
    /// while it detaches at the end, and back off at once. The kernel's uprobe registration
    /// waits for an RCU grace period: 6-21 ms at the normal pace, during which the library's
    /// calls go unrecorded; microseconds expedited, at the price of one interrupt to each busy
    /// CPU. Left alone where the knob is already on or /sys/kernel/rcu_normal is set.
    /// [default: true]
    #[arg(long, value_name = "BOOL")]
    expedite_grace_periods: Option<bool>,
    /// Merge the run's files into fewer while it records (as `strata compact` does after
    /// it), each time it has written FILES more: a busy table writes a file at every flush,
    /// some 7,000 an hour. Each table's newest file, which the run may still write again, is
    /// left alone; the merge runs in a thread of its own, at a lower priority. 0: never.
    /// [default: 600]
    #[arg(long, value_name = "FILES")]
    compact_every: Option<u32>,
}

/// `TraceOpts` merged with the configuration file.
struct Settings {
    probes: Option<PathBuf>,
    layers: Option<Vec<probes::Layer>>,
    skip_layers: Vec<probes::Layer>,
    ring_buffer_mib: u32,
    backlog_mib: Option<u32>,
    syscall_mode: attach::SyscallMode,
    flush_interval: Duration,
    host: String,
    file_mode: u32,
    users: Vec<u32>,
    paths: Option<Vec<String>>,
    expedite: bool,
    compact_every: u32,
    daemon: strata::config::DaemonConfig,
}

impl TraceOpts {
    fn settings(self) -> anyhow::Result<Settings> {
        use clap::ValueEnum as _;
        let cfg = strata::config::load(self.config.as_deref())?;
        let layers = self
            .layers
            .or(cfg.layers)
            .map(|ls| probes::Layer::parse_list(&ls))
            .transpose()
            .map_err(anyhow::Error::msg)?;
        let skip_layers = self
            .skip_layers
            .or(cfg.skip_layers)
            .map(|ls| probes::Layer::parse_list(&ls))
            .transpose()
            .map_err(|e| anyhow::anyhow!("--skip-layers: {e}"))?
            .unwrap_or_default();
        if let Some(both) = (layers.iter().flatten()).find(|l| skip_layers.contains(l)) {
            anyhow::bail!("layer {both} is in both --layers and --skip-layers");
        }
        let syscall_mode = match (self.syscall_mode, cfg.syscall_mode) {
            (Some(m), _) => m,
            (None, Some(m)) => {
                attach::SyscallMode::from_str(&m, false).map_err(anyhow::Error::msg)?
            }
            (None, None) => attach::SyscallMode::Btf,
        };
        let flush_interval = match (self.flush_interval, cfg.flush_interval) {
            (Some(d), _) => d,
            (None, Some(d)) => parse_duration(&d).map_err(anyhow::Error::msg)?,
            (None, None) => Duration::from_secs(1),
        };
        let file_mode = match self.file_mode.or(cfg.file_mode) {
            Some(m) => {
                strata::config::file_mode(&m).map_err(|e| anyhow::anyhow!("--file-mode: {e}"))?
            }
            None => strata::dataset::DEFAULT_FILE_MODE,
        };
        let users = match self.users.or(cfg.users) {
            Some(u) => strata::config::uids(&u)?,
            None => Vec::new(),
        };
        let paths = self.paths.or(cfg.paths);
        if let Some(p) = paths.iter().flatten().find(|p| !p.starts_with('/')) {
            anyhow::bail!("--paths: {p:?} is not an absolute directory");
        }
        let host = self
            .host
            .or(cfg.host)
            .unwrap_or_else(strata::node::hostname);
        anyhow::ensure!(
            !host.is_empty() && !host.contains(['/', '=']),
            "host name {host:?} cannot name a partition (no '/' or '=')"
        );
        Ok(Settings {
            probes: self.probes.or(cfg.probes),
            layers,
            skip_layers,
            ring_buffer_mib: self.ring_buffer_mib.or(cfg.ring_buffer_mib).unwrap_or(16),
            backlog_mib: self.backlog_mib.or(cfg.backlog_mib),
            syscall_mode,
            flush_interval,
            host,
            file_mode,
            users,
            paths,
            expedite: self
                .expedite_grace_periods
                .or(cfg.expedite_grace_periods)
                .unwrap_or(true),
            compact_every: (self.compact_every.or(cfg.compact_every))
                .unwrap_or(strata::compact::EVERY_FILES),
            daemon: cfg.daemon,
        })
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// Trace a command, a running process tree, or the whole node into a Parquet dataset.
    ///
    /// Tracing stops when the command exits (its exit code becomes strata's; with
    /// --until-all-exit, when all it started have), on SIGINT/SIGTERM/SIGHUP, or after
    /// --duration. Rows are written as the run goes: a killed tracer loses at most the last
    /// --flush-interval.
    #[command(arg_required_else_help = true)]
    Record {
        /// Output directory; tables go to OUT/<table>/host=<hostname>/*.parquet.
        #[arg(short, long, value_name = "OUT")]
        output: PathBuf,
        /// Trace this running process and its descendants (existing and future), until
        /// they have all exited.
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
        /// With a command: stop when every process it started has exited, not when the
        /// command exits (a job script that leaves work running in the background; without
        /// it, strata names such processes as it stops).
        #[arg(long)]
        until_all_exit: bool,
        #[command(flatten)]
        opts: TraceOpts,
        /// No status line and no summary.
        #[arg(short, long)]
        quiet: bool,
        /// The command to trace, after `--`.
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Run as the node's tracing service: load the probes once, then trace the jobs that
    /// `strata ctl` (or a Slurm prolog) names, each into OUTPUT_ROOT/<job>/.
    ///
    /// A job is a cgroup v2 (or a Slurm job's cgroup, waited for if it does not exist yet);
    /// its dataset closes on `strata ctl stop`, when its cgroup is removed (the job ended),
    /// or when the daemon stops (SIGTERM). See docs/admin.md for systemd and Slurm.
    Daemon {
        /// Where job datasets go: OUTPUT_ROOT/<job>/<table>/host=<node>/.
        /// [default: the configuration's daemon.output_root]
        #[arg(short, long, value_name = "OUTPUT_ROOT")]
        output_root: Option<PathBuf>,
        /// The control socket. [default: /run/strata/strata.sock]
        #[arg(long, value_name = "PATH")]
        socket: Option<PathBuf>,
        /// Whether a closed job's files on this node are merged into fewer (as `strata
        /// compact --host NODE --run RUN` would), in the background. [default: true, or the
        /// configuration's daemon.compact]
        #[arg(long, value_name = "BOOL")]
        compact: Option<bool>,
        #[command(flatten)]
        opts: TraceOpts,
    },
    /// Tell the daemon to start or stop tracing a job, or ask what it traces.
    #[command(arg_required_else_help = true)]
    Ctl {
        /// The daemon's control socket.
        #[arg(long, value_name = "PATH", env = "STRATA_SOCKET", default_value = strata::control::DEFAULT_SOCKET, global = true)]
        socket: PathBuf,
        #[command(subcommand)]
        cmd: CtlCmd,
    },
    /// Summarise a dataset and look for known I/O patterns (small operations, a single
    /// writer, ...). The queries are the SQL files shipped in report/, run by an embedded
    /// DuckDB; docs/report.md defines each and shows how to run them in DuckDB or Spark.
    #[command(arg_required_else_help = true)]
    Report {
        /// A dataset written by `strata record -o`.
        #[arg(value_name = "DATASET")]
        dataset: PathBuf,
        /// `text` for people, `json` for scripts, `html` for a page with plots
        /// (`strata report out/ --format html > report.html`).
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// Merge a finished dataset's files into fewer, larger ones (run it once no strata
    /// writes there any more, or with --recording).
    ///
    /// While it records, strata writes a busy table's rows as a new file at each flush (once
    /// a second, and whenever 100,000 rows wait), so that a killed tracer loses at most the
    /// last interval: an hour of a busy job leaves thousands of files per table, less what
    /// `--compact-every` merged during the run. This merges
    /// each run's files, in the order they were written, into files of at most --max-mib and
    /// --max-row-groups, copying their encoded row groups as they are (nothing is decoded or
    /// compressed again). Each merged file takes the name of the first it holds; the others
    /// are removed once it is in place. Partitions with a file still being written
    /// (`.*.tmp`, locked by its writer or modified in the last minute) are left alone, but a
    /// run still recording may be between two flushes: compact only what no strata writes
    /// any more (with --host, one node's partitions). A file a killed strata left unrenamed
    /// is put in place if complete and removed if not. Queries over the dataset give the
    /// same rows before and after.
    #[command(arg_required_else_help = true)]
    Compact {
        /// A dataset written by `strata record -o`, a daemon's job directory, or one table's
        /// directory in either.
        #[arg(value_name = "DATASET")]
        dataset: PathBuf,
        /// Size of a merged file, at most, in MiB.
        #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..))]
        max_mib: u64,
        /// Row groups of a merged file, at most (each adds to the footer every query reads).
        #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..))]
        max_row_groups: u64,
        /// Only this node's partitions (`host=HOST`): a node's files can be compacted while
        /// other nodes still write theirs into the same dataset.
        #[arg(long)]
        host: Option<String>,
        /// Only this run's files (`part-<RUN>-*.parquet`, the run table's `run_id`): a run
        /// that has ended can be compacted while others still write beside it.
        #[arg(long, value_name = "RUN")]
        run: Option<String>,
        /// The runs may still be recording: leave each run's newest file of each table, and
        /// the files it is writing, alone, and merge the others (a run never writes an older
        /// file again). What `--compact-every` does during a run.
        #[arg(long)]
        recording: bool,
        /// Only say what would be merged.
        #[arg(long)]
        dry_run: bool,
    },
    /// List the probes of a probes file (default: the built-in one) and check it.
    ///
    /// The `entry` column tells how each uprobe will be hit in the library found on this
    /// machine: `emulated` costs one trap per call (`+N`: probed N bytes past the entry, past an
    /// instruction the kernel would single-step), `stepped` two (the kernel single-steps the
    /// function's first instruction out of line), `N calls` one per call where the function
    /// is probed at its N calls instead (`calls_in`), `missing` means the library lacks the
    /// symbol (`absent` where the probe says which later version added it: `since`) and
    /// `no library` that none was found under the name. Other builds of a library that
    /// `strata record` also probes (other names, other paths) are not listed here.
    ///
    /// For io_uring requests it tells whether the request fields probes.toml names are in this
    /// kernel's BTF: `fields ok`; `absent` when the opcode is newer than the kernel (its
    /// command struct is missing); `bad field`, with a warning naming it, otherwise.
    Probes {
        /// Probe list to check instead of the built-in one.
        #[arg(long, value_name = "FILE")]
        probes: Option<PathBuf>,
    },
    /// Run a command under empty probes (the benchmark's baseline; used by `cargo xtask bench`).
    #[command(hide = true)]
    BenchEmpty {
        #[arg(long, value_enum)]
        mechanism: strata::empty_probe::Mechanism,
        /// With a uprobe mechanism: empty programs on the syscall tracepoints too, as a trace
        /// of a library layer and the posix layer has both (since Linux 6.11 every uretprobe
        /// return is a syscall, which passes them).
        #[arg(long)]
        with_syscalls: bool,
        /// For uprobes: the library (default: libc) and function.
        #[arg(long)]
        library: Option<PathBuf>,
        #[arg(long, default_value = "fwrite")]
        function: String,
        #[arg(last = true)]
        command: Vec<String>,
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

#[derive(Subcommand)]
enum CtlCmd {
    /// Start tracing a job into OUTPUT_ROOT/JOB/.
    #[command(arg_required_else_help = true)]
    Start {
        /// The job's name: its dataset's directory (letters, digits, '.', '_', '-').
        job: String,
        /// The job's cgroup v2 directory (waited for if it does not exist yet).
        #[arg(long, value_name = "DIR", required_unless_present = "slurm_job")]
        cgroup: Option<PathBuf>,
        /// The Slurm job whose cgroup on this node is traced.
        #[arg(long, value_name = "JOBID", conflicts_with = "cgroup")]
        slurm_job: Option<String>,
        /// With --slurm-job: only this step.
        #[arg(long, value_name = "STEP", requires = "slurm_job")]
        slurm_step: Option<String>,
    },
    /// Stop tracing a job and close its dataset.
    #[command(arg_required_else_help = true)]
    Stop { job: String },
    /// List the jobs being traced (JSON).
    Status,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ReportFormat {
    Text,
    Json,
    /// A self-contained page with the tables and plots (timeline, offsets, sizes, bytes).
    Html,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    strata::config::parse_duration(s)
}

/// Keeps the memory of freed large buffers for reuse. Every flush interval frees a table's
/// column arrays and Parquet pages and allocates them again; by default glibc returns such
/// blocks to the kernel (served by mmap, or trimmed off the heap's top), so each interval
/// faults their pages in anew: 29,000 to 89,000 page faults in 8 s of tracing 200,000
/// writes/s, against 18,000 with blocks under 32 MiB from the heap and up to 64 MiB of free
/// heap kept. Peak memory is the same (105 MiB): it is reused, not added to.
fn keep_freed_memory() {
    #[cfg(target_env = "gnu")]
    // SAFETY: tuning calls of the C allocator, made before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
    }
}

/// Panic messages printed in full; later ones are only counted (see `Correlator::guarded`:
/// one bug could otherwise print a message per record, millions a second).
const PANICS_SHOWN: u64 = 5;

/// Prints the first `PANICS_SHOWN` panics as usual and then says that the rest are counted.
fn quiet_repeated_panics() {
    static SEEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let shown = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        match SEEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed) {
            n if n < PANICS_SHOWN => shown(info),
            PANICS_SHOWN => eprintln!("strata: more internal errors: counted, not shown"),
            _ => {}
        }
    }));
}

fn main() -> ExitCode {
    keep_freed_memory();
    quiet_repeated_panics();
    let cli = Cli::parse();
    let level = match cli.verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    // Times to the millisecond at -vv, where the lines say what a start spends its time on.
    let stamp = (cli.verbose >= 2).then_some(env_logger::TimestampPrecision::Millis);
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(level))
        .format_timestamp(stamp)
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
            until_all_exit,
            opts,
            quiet,
            command,
        } => {
            anyhow::ensure!(
                !until_all_exit || !command.is_empty(),
                "--until-all-exit is for a command (`strata record -o OUT --until-all-exit -- \
                 CMD`); --pid already waits for every traced process"
            );
            let set = opts.settings()?;
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
                probes_file: set.probes,
                layers: set.layers,
                skip_layers: set.skip_layers,
                ring_buffer_mib: set.ring_buffer_mib,
                backlog_mib: set.backlog_mib,
                syscall_mode: set.syscall_mode,
                flush_interval: set.flush_interval,
                host: set.host,
                file_mode: set.file_mode,
                users: set.users,
                paths: set.paths,
                expedite: set.expedite,
                compact_every: set.compact_every,
                until_all_exit,
                quiet,
            })?;
            Ok(outcome.exit_code)
        }
        Cmd::Daemon {
            output_root,
            socket,
            compact,
            opts,
        } => {
            let set = opts.settings()?;
            let output_root = output_root.or(set.daemon.output_root).ok_or_else(|| {
                anyhow::anyhow!(
                    "give the output root: --output-root DIR, or daemon.output_root in the configuration file"
                )
            })?;
            strata::daemon::run(strata::daemon::DaemonArgs {
                output_root,
                socket: socket
                    .or(set.daemon.socket)
                    .unwrap_or_else(|| strata::control::DEFAULT_SOCKET.into()),
                host: set.host,
                probes_file: set.probes,
                layers: set.layers,
                skip_layers: set.skip_layers,
                ring_buffer_mib: set.ring_buffer_mib,
                backlog_mib: set.backlog_mib,
                syscall_mode: set.syscall_mode,
                flush_interval: set.flush_interval,
                file_mode: set.file_mode,
                users: set.users,
                paths: set.paths,
                expedite: set.expedite,
                compact: compact.or(set.daemon.compact).unwrap_or(true),
                compact_every: set.compact_every,
            })?;
            Ok(0)
        }
        Cmd::Ctl { socket, cmd } => {
            use strata::control::Request;
            let req = match cmd {
                CtlCmd::Start {
                    job,
                    cgroup,
                    slurm_job,
                    slurm_step,
                } => {
                    strata::control::check_job_name(&job)?;
                    Request::Start {
                        job,
                        cgroup,
                        slurm_job,
                        slurm_step,
                    }
                }
                CtlCmd::Stop { job } => Request::Stop { job },
                CtlCmd::Status => Request::Status,
            };
            let answer = strata::control::send(&socket, &req)?;
            println!("{}", serde_json::to_string_pretty(&answer)?);
            match answer.error {
                Some(e) => anyhow::bail!("the daemon refused: {e}"),
                None => Ok(0),
            }
        }
        Cmd::BenchEmpty {
            mechanism,
            with_syscalls,
            library,
            function,
            command,
        } => {
            let library = match library {
                Some(l) => l,
                None => strata::symbols::find_library("libc.so.6")?,
            };
            strata::empty_probe::run(mechanism, with_syscalls, &library, &function, &command)
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
                ReportFormat::Html => print!("{}", strata::html::render(&dataset, &answers)?),
            }
            Ok(0)
        }
        Cmd::Compact {
            dataset,
            max_mib,
            max_row_groups,
            host,
            run,
            recording,
            dry_run,
        } => {
            let limits = strata::compact::Limits {
                bytes: max_mib << 20,
                row_groups: max_row_groups as usize,
            };
            let parts = strata::compact::run(
                &dataset,
                strata::compact::Only {
                    host: host.as_deref(),
                    run: run.as_deref(),
                    recording,
                },
                limits,
                dry_run,
            )?;
            print!("{}", strata::compact::describe(&dataset, &parts, dry_run));
            Ok(if parts.iter().any(|p| p.skipped.is_some()) {
                1
            } else {
                0
            })
        }
        Cmd::Probes { probes } => {
            let list = probes::load(probes.as_deref())?;
            let width = |f: &dyn Fn(&probes::Probe) -> usize| list.iter().map(f).max().unwrap_or(0);
            let fw = width(&|p| p.function().len());
            let ow = width(&|p| p.op.to_string().len());
            let rw = width(&|p| p.ret.to_string().len());
            println!(
                "{:<4} {:<9} {:<3} {:<ow$} {:<fw$} {:<rw$} {:<12} target",
                "id", "layer", "on", "op", "function", "ret", "entry"
            );
            // Each named library read once: how its probes will be hit on this machine.
            let mut tables: HashMap<String, Option<(PathBuf, SymbolTable)>> = HashMap::new();
            // io_uring requests: whether this kernel has each field they read.
            let mut btf = None;
            // Per library, the file offsets its probes that are on write a breakpoint at.
            let mut written: std::collections::BTreeMap<String, std::collections::BTreeSet<u64>> =
                Default::default();
            for p in &list {
                let entry = match &p.target {
                    probes::Target::Uprobe { library, symbol } => {
                        let lib = tables.entry(library.clone()).or_insert_with(|| {
                            let path = strata::symbols::find_library(library).ok()?;
                            SymbolTable::read(&path).ok().map(|t| (path, t))
                        });
                        // Probed at its calls instead (`calls_in`) where they are found.
                        let calls = lib.as_ref().and_then(|(_, table)| {
                            strata::attach::at_calls(p, table, symbol).map(|c| match c {
                                strata::attach::AtCalls::Load(_, s)
                                | strata::attach::AtCalls::Report(s) => s,
                            })
                        });
                        if let (true, Some((_, table))) = (p.enabled, lib.as_ref()) {
                            let at = calls
                                .clone()
                                .or_else(|| table.offset(symbol).map(|o| vec![o]));
                            written
                                .entry(library.clone())
                                .or_default()
                                .extend(at.into_iter().flatten());
                        }
                        match calls {
                            Some(sites) => format!("{} calls", sites.len()),
                            None => match strata::symbols::describe_entry(
                                lib.as_ref().map(|(_, t)| t),
                                symbol,
                            ) {
                                // A symbol newer than this build of the library.
                                m if m == "missing" && p.since.is_some() => "absent".into(),
                                e => e,
                            },
                        }
                    }
                    probes::Target::Request { fields, .. } if p.layer == probes::Layer::Uring => {
                        let btf = btf.get_or_insert_with(|| strata::btf::kernel().ok());
                        match btf.as_ref().map(|b| strata::uring::uring_op(b, p, fields)) {
                            None => "no BTF".into(),
                            Some(Ok(_)) => "fields ok".into(),
                            Some(Err(e)) if e.is_absent() => "absent".into(),
                            Some(Err(e)) => {
                                log::warn!("probe {}: {e}", p.function());
                                "bad field".into()
                            }
                        }
                    }
                    _ => "-".into(),
                };
                let target = match &p.target {
                    probes::Target::Syscall(s) => match &p.only {
                        // What the kernel program keeps; it drops every other call.
                        Some(only) => format!(
                            "syscalls/sys_{{enter,exit}}_{s}, only {} {}",
                            p.args[only.arg],
                            only.values
                                .iter()
                                .map(|(n, _)| n.as_str())
                                .collect::<Vec<_>>()
                                .join(" ")
                        ),
                        None if p.only_files => {
                            format!("syscalls/sys_{{enter,exit}}_{s}, only files (fd >= 0)")
                        }
                        None => format!("syscalls/sys_{{enter,exit}}_{s}"),
                    },
                    probes::Target::Uprobe { library, .. } if !p.other_names.is_empty() => {
                        format!("uprobe {library} (also {})", p.other_names.join(", "))
                    }
                    probes::Target::Uprobe { library, .. } => format!("uprobe {library}"),
                    probes::Target::Kernel { attach, .. }
                    | probes::Target::Kfunc { attach, .. } => attach
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(" | "),
                    probes::Target::Request { opcode, .. } if p.layer == probes::Layer::Aio => {
                        format!("AIO opcode {opcode}, by aio_submit + aio_[p]wait + aio_[p]reaped")
                    }
                    probes::Target::Request { opcode, .. } => {
                        format!("io_uring opcode {opcode}, by uring_submit + uring_complete")
                    }
                };
                println!(
                    "{:<4} {:<9} {:<3} {:<ow$} {:<fw$} {:<rw$} {entry:<12} {target}",
                    p.id,
                    // Strings: the types' Display ignores the column widths.
                    p.layer.to_string(),
                    if p.enabled { "yes" } else { "no" },
                    p.op.to_string(),
                    p.function(),
                    p.ret.to_string()
                );
            }
            if !written.is_empty() {
                // The kernel writes them into every process that maps the library, traced or
                // not, as it maps it: each page that holds one is copied for the process.
                println!(
                    "\nbreakpoints of the probes that are on: the kernel writes them into every process on the node that maps the library, traced or not, as it maps it, copying each page that holds one for the process:"
                );
                for (library, at) in &written {
                    let pages: std::collections::BTreeSet<u64> =
                        at.iter().map(|o| o / 4096).collect();
                    let path = tables.get(library).and_then(|t| t.as_ref()).map(|(p, _)| p);
                    println!(
                        "  {library} ({}): {} on {} pages",
                        path.map_or("-".into(), |p| p.display().to_string()),
                        at.len(),
                        pages.len()
                    );
                }
            }
            Ok(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory as _;
        Cli::command().debug_assert();
    }
}
