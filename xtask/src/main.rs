//! `cargo xtask`: bootstrap, example, tests and benchmarks of strata.
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench;
mod churn;
mod example;
mod late_library;
mod setup;
mod soak;
mod test;
mod util;
mod vm;

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
    /// Run every test suite (unit, root-only integration tests, then the kernel-layer tests
    /// inside Debian kernels under qemu). Needs root.
    Test {
        /// Leave out the tests under qemu (`cargo xtask vm-test` runs them alone).
        #[arg(long)]
        no_vm: bool,
        /// Extra arguments for `cargo test` (e.g. a test name filter), after `--`.
        #[arg(last = true)]
        cargo_args: Vec<String>,
    },
    /// Boot Debian kernels under qemu (KVM when it works, else TCG) and run the kernel-layer
    /// tests inside each, on an emulated NVMe disk. Kernels are downloaded from Debian's
    /// registry once and cached in target/vm.
    VmTest {
        /// Debian kernel packages (or metapackages) to boot; `PKG:lockdown=MODE` boots one
        /// locked down (integrity: the kernel-layer tests; confidentiality: the test that
        /// strata says it cannot trace there).
        #[arg(long = "kernel", default_values_t = vm::DEFAULT_KERNELS.iter().map(ToString::to_string))]
        kernels: Vec<String>,
    },
    /// Measure overhead, throughput and trace size; prints a table and writes JSON.
    Bench {
        /// Calls per workload run.
        #[arg(long, default_value_t = 200_000)]
        calls: u64,
        /// Where to write the JSON results.
        #[arg(long, default_value = "target/bench.json")]
        json: std::path::PathBuf,
        /// Run only the overhead workloads whose name contains this text (e.g. `io_uring`,
        /// `HDF5`, or several: `write|HDF5 4M`), in their usual order, and nothing else: no
        /// rates, sizes, pipeline or targets.
        #[arg(long, value_name = "TEXT")]
        only: Option<String>,
    },
    /// Trace the whole node under heavy process and file churn and check that strata's
    /// memory and open files stay flat (compressed-time soak).
    Soak {
        /// How long to trace, in seconds.
        #[arg(long, default_value_t = 60)]
        seconds: u64,
        /// Where to write the samples as JSON.
        #[arg(long, default_value = "target/soak.json")]
        json: std::path::PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let res = match cli.cmd {
        Cmd::Setup => setup::run(),
        Cmd::Example { np } => setup::run().and_then(|()| example::run(np)),
        Cmd::Test { no_vm, cargo_args } => {
            setup::run().and_then(|()| test::run(&cargo_args, !no_vm))
        }
        Cmd::VmTest { kernels } => setup::run().and_then(|()| {
            let t = vm::run(&kernels)?;
            println!("tests: {} passed, {} failed", t.passed, t.failed);
            Ok(())
        }),
        Cmd::Bench { calls, json, only } => {
            setup::run().and_then(|()| bench::run(calls, only.as_deref(), &json))
        }
        Cmd::Soak { seconds, json } => {
            setup::run().and_then(|()| soak::run(std::time::Duration::from_secs(seconds), &json))
        }
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
