//! The README's first command: trace the bundled MPI + HDF5 example and print the summary.
use std::{fs, process::Command};

use anyhow::{Context as _, bail};

use crate::util::{build_strata, exec, is_root, mpi_env, root, target_dir};

pub fn run(np: u32) -> anyhow::Result<()> {
    if !is_root() {
        bail!("the example loads eBPF programs: run `cargo xtask example` as root");
    }
    let strata = build_strata()?;
    let dir = target_dir().join("example");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("work"))?;
    let exe = dir.join("hdf5_parallel");
    exec(
        // -shlib: link HDF5 dynamically, so its calls go through the library strata probes.
        Command::new("h5pcc")
            .current_dir(&dir)
            .args(["-shlib", "-o"])
            .arg(&exe)
            .arg(root().join("tests/workloads/hdf5_parallel.c")),
    )
    .context("cannot build the example with h5pcc (libhdf5-openmpi-dev)")?;
    let out = dir.join("out");
    eprintln!(
        "example: strata record -o {} -- mpirun -np {np} {} {}",
        out.display(),
        exe.display(),
        dir.join("work/example.h5").display()
    );
    exec(
        mpi_env(&mut Command::new(&strata))
            .arg("record")
            .arg("-o")
            .arg(&out)
            .args(["--", "mpirun", "--oversubscribe", "-np", &np.to_string()])
            .arg(&exe)
            .arg(dir.join("work/example.h5")),
    )?;
    eprintln!("\nexample: strata report {}", out.display());
    exec(Command::new(&strata).arg("report").arg(&out))?;
    let page = dir.join("report.html");
    let html = crate::util::output(
        Command::new(&strata)
            .args(["report", "--format", "html"])
            .arg(&out),
    )?;
    std::fs::write(&page, html)?;
    eprintln!(
        "\nexample: the same report with plots (timeline, offsets, request sizes): {}",
        page.display()
    );
    eprintln!(
        "\nexample: query it, e.g. with DuckDB:\n  SELECT layer, function, count(*) AS calls, sum(bytes_result) AS bytes\n  FROM read_parquet('{}/calls/**/*.parquet', hive_partitioning = true)\n  GROUP BY ALL ORDER BY bytes DESC NULLS LAST;",
        out.display()
    );
    Ok(())
}
