//! `cargo xtask`: bootstrap, example, tests and benchmarks of strata.
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench;
mod example;
mod setup;
mod test;
mod util;

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    about = "Build, bootstrap, test and benchmark strata"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Install what is missing (Debian packages, nightly rust-src, bpf-linker, duckdb for
    /// Python). Idempotent and quiet when everything is present.
    Setup,
    /// Trace the bundled MPI + HDF5 example on 4 ranks and print the summary.
    Example {
        /// MPI ranks.
        #[arg(long, default_value_t = 4)]
        np: u32,
    },
    /// Run every test suite (unit, root-only integration tests). Needs root.
    Test {
        /// Extra arguments for `cargo test` (e.g. a test name filter), after `--`.
        #[arg(last = true)]
        cargo_args: Vec<String>,
    },
    /// Measure overhead, throughput and trace size; prints a table and writes JSON.
    Bench {
        /// Calls per workload run.
        #[arg(long, default_value_t = 200_000)]
        calls: u64,
        /// Where to write the JSON results.
        #[arg(long, default_value = "target/bench.json")]
        json: std::path::PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let res = match cli.cmd {
        Cmd::Setup => setup::run(),
        Cmd::Example { np } => setup::run().and_then(|()| example::run(np)),
        Cmd::Test { cargo_args } => setup::run().and_then(|()| test::run(&cargo_args)),
        Cmd::Bench { calls, json } => setup::run().and_then(|()| bench::run(calls, &json)),
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
