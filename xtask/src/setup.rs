//! The bootstrap: installs what building and testing strata needs, only when it is missing.
//! Quiet when everything is present; says what it installs otherwise.
use std::{fs, path::Path, process::Command};

use anyhow::{Context as _, bail};

use crate::util::{exec, output, root, succeeds, target_dir};

/// Debian packages: the C toolchain for workloads, the HPC libraries the example and the
/// MPI/HDF5/NetCDF tests use, and the tools tests call (setpriv, pkill).
const PACKAGES: &[&str] = &[
    "build-essential",
    "libopenmpi-dev",
    "openmpi-bin",
    // the MPICH ABI's test (Open MPI stays the default mpicc: its alternative ranks higher)
    "libmpich-dev",
    "libhdf5-openmpi-dev",
    // HDF5's MPICH build, runtime only: the test compiles against the Open MPI build's headers
    // (the -dev package would also re-register the mpicc alternative)
    "libhdf5-mpich-103-1",
    "hdf5-tools",
    "libnetcdf-mpi-dev",
    "netcdf-bin",
    // the Fortran job's test (mpif90, h5pfc)
    "gfortran",
    "util-linux",
    "procps",
    // cargo xtask vm-test
    "qemu-system-x86",
    "busybox-static",
    "cpio",
    "e2fsprogs",
    "file",
    // Spark (pyspark) for the multi-node dataset tests
    "openjdk-17-jre-headless",
    // headless Chromium renders the HTML report in its test
    "chromium",
    // cargo xtask bench: strata's instructions per event, counted by callgrind
    "valgrind",
];

pub fn run() -> anyhow::Result<()> {
    debian_packages()?;
    nightly_rust_src()?;
    bpf_linker()?;
    python_packages()?;
    duckdb_library()?;
    Ok(())
}

/// DuckDB's official shared library (1.5.6), which `strata report` links. Building DuckDB from
/// source takes about an hour on these machines; the npm registry serves the released build
/// (package @duckdb/node-bindings-linux-x64, checked against the registry's sha512).
pub const DUCKDB_DIR: &str = ".cache/duckdb-1.5.6";
const DUCKDB_NPM: &str = "@duckdb/node-bindings-linux-x64@1.5.6-r.1";

fn duckdb_library() -> anyhow::Result<()> {
    let dir = crate::util::root().join(DUCKDB_DIR);
    if dir.join("libduckdb.so").exists() {
        return Ok(());
    }
    eprintln!("setup: fetching libduckdb.so ({DUCKDB_NPM} from the npm registry)");
    let tmp = dir.with_extension("download");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)?;
    exec(
        Command::new("npm")
            .args(["pack", "--silent", DUCKDB_NPM, "--pack-destination"])
            .arg(&tmp)
            .stdout(std::process::Stdio::null()),
    )
    .context("npm could not fetch DuckDB's library (is npm installed?)")?;
    exec(Command::new("sh").current_dir(&tmp).arg("-c").arg(
        "tar xzf *.tgz package/libduckdb.so package/LICENSE && mv package/libduckdb.so package/LICENSE .",
    ))?;
    std::fs::create_dir_all(&dir)?;
    std::fs::rename(tmp.join("LICENSE"), dir.join("LICENSE"))?;
    std::fs::rename(tmp.join("libduckdb.so"), dir.join("libduckdb.so"))?;
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(())
}

fn debian_packages() -> anyhow::Result<()> {
    let missing: Vec<&str> = PACKAGES
        .iter()
        .copied()
        .filter(|p| {
            !output(Command::new("dpkg-query").args(["-W", "-f=${Status}", p]))
                .is_ok_and(|s| s.contains("install ok installed"))
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    if !crate::util::is_root() {
        bail!(
            "Debian packages missing: {}; run as root or install them with apt-get",
            missing.join(" ")
        );
    }
    eprintln!("setup: installing Debian packages: {}", missing.join(" "));
    // Wait for another apt (unattended upgrades, a parallel setup) instead of failing.
    const LOCK_WAIT: &str = "DPkg::Lock::Timeout=600";
    exec(Command::new("apt-get").args(["-o", LOCK_WAIT, "update", "-qq"]))?;
    exec(
        Command::new("apt-get")
            .env("DEBIAN_FRONTEND", "noninteractive")
            .args(["-o", LOCK_WAIT, "install", "-y", "-qq"])
            .arg("--no-install-recommends")
            .args(&missing),
    )
    .context("apt-get install failed")
}

fn nightly_rust_src() -> anyhow::Result<()> {
    let toolchains = output(Command::new("rustup").args(["toolchain", "list"]))?;
    if !toolchains.lines().any(|l| l.starts_with("nightly")) {
        eprintln!("setup: installing the nightly toolchain (eBPF programs need it)");
        exec(Command::new("rustup").args([
            "toolchain",
            "install",
            "nightly",
            "--profile",
            "minimal",
        ]))?;
    }
    let installed = output(Command::new("rustup").args([
        "component",
        "list",
        "--toolchain",
        "nightly",
        "--installed",
    ]))?;
    if !installed.lines().any(|l| l.starts_with("rust-src")) {
        eprintln!("setup: installing rust-src for nightly (to build core for the BPF target)");
        exec(Command::new("rustup").args([
            "component",
            "add",
            "rust-src",
            "--toolchain",
            "nightly",
        ]))?;
    }
    Ok(())
}

/// bpf-linker must use the same LLVM as the nightly rustc: it is built against the nightly
/// toolchain's own libLLVM (no system LLVM of that version exists on Debian 12), which it
/// finds at run time through the library path rustup sets for the toolchain.
fn bpf_linker() -> anyhow::Result<()> {
    let works =
        || succeeds(Command::new("rustup").args(["run", "nightly", "bpf-linker", "--version"]));
    if works() {
        return Ok(());
    }
    let sysroot = output(Command::new("rustc").args(["+nightly", "--print", "sysroot"]))?;
    let lib = Path::new(sysroot.trim()).join("lib");
    let llvm = fs::read_dir(&lib)
        .with_context(|| format!("cannot read {}", lib.display()))?
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with("libLLVM.so.") || (n.starts_with("libLLVM-") && n.ends_with(".so")))
        .context("the nightly toolchain ships no libLLVM")?;
    let major: String = llvm
        .trim_start_matches("libLLVM.so.")
        .trim_start_matches("libLLVM-")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    if major.is_empty() {
        bail!("cannot tell the LLVM version of {llvm}");
    }
    let prefix = target_dir().join("llvm-prefix");
    fs::create_dir_all(prefix.join("lib"))?;
    let link = prefix.join("lib/libLLVM.so");
    let _ = fs::remove_file(&link);
    std::os::unix::fs::symlink(lib.join(&llvm), &link)
        .with_context(|| format!("cannot link {}", link.display()))?;
    eprintln!("setup: building bpf-linker against the nightly toolchain's LLVM {major}");
    exec(
        Command::new("cargo")
            .current_dir(root())
            .env("LLVM_PREFIX", &prefix)
            .args([
                "install",
                "--force",
                "--locked",
                "bpf-linker",
                "--no-default-features",
                "--features",
            ])
            .arg(format!("llvm-{major}")),
    )
    .context("cargo install bpf-linker failed")?;
    if !works() {
        bail!("bpf-linker was installed but does not run; is ~/.cargo/bin on PATH?");
    }
    Ok(())
}

/// The Python packages the tests read datasets with: DuckDB, and Spark for multi-node
/// datasets (pyspark runs on the machine's Java 17); and h5py, a workload whose wheel brings
/// its own HDF5 (pinned: the test knows which calls it makes).
fn python_packages() -> anyhow::Result<()> {
    for (module, package, why) in [
        ("duckdb", "duckdb", "tests query the output with it"),
        (
            "pyspark",
            "pyspark",
            "tests run the report queries in Spark",
        ),
        (
            "h5py",
            "h5py==3.16.0",
            "a test traces h5py and the HDF5 its wheel brings",
        ),
    ] {
        if succeeds(Command::new("python3").args(["-c", &format!("import {module}")])) {
            continue;
        }
        eprintln!("setup: installing the {package} Python package ({why})");
        exec(Command::new("python3").args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--root-user-action=ignore",
            package,
        ]))?;
    }
    Ok(())
}
