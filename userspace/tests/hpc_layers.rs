//! A parallel HDF5 job on 4 ranks, traced on every layer: each H5Dwrite is linked to the
//! MPI-IO call it made and to the POSIX writes beneath, and the handle tree runs
//! dataset -> HDF5 file -> MPI_File -> fd. Ground truth: tests/workloads/hdf5_parallel.c.
mod common;

use std::collections::HashMap;

use common::{Row, RowExt as _, Val, build_c, duckdb, require_root, rows, run, scratch, strata};

const RANKS: i64 = 4;
const ROWS: i64 = 16;
/// One rank's block: ROWS x 1024 doubles.
const BLOCK: i64 = ROWS * 1024 * 8;

fn descendants(calls: &[Row], top: i64) -> Vec<&Row> {
    let mut children: HashMap<i64, Vec<&Row>> = HashMap::new();
    for c in calls {
        if let Some(p) = c.i("parent_id") {
            children.entry(p).or_default().push(c);
        }
    }
    let mut out = Vec::new();
    let mut todo = vec![top];
    while let Some(id) = todo.pop() {
        for c in children.get(&id).into_iter().flatten() {
            todo.push(c.i("call_id").unwrap());
            out.push(*c);
        }
    }
    out
}

/// The calls of function `f`, in the order of `calls`.
fn calls_of<'a>(calls: &'a [Row], f: &str) -> Vec<&'a Row> {
    calls
        .iter()
        .filter(|c| c.s("function") == Some(f))
        .collect()
}

/// The one call of function `f` in `calls`.
fn one_call<'a>(calls: &'a [Row], f: &str) -> &'a Row {
    let v = calls_of(calls, f);
    assert_eq!(v.len(), 1, "{f}: {v:?}");
    v[0]
}

/// The row whose `col` is `id` (a handle's, a call's).
fn by_id<'a>(rows: &'a [Row], col: &str, id: Option<i64>) -> &'a Row {
    rows.iter()
        .find(|r| r.i(col) == id && id.is_some())
        .unwrap_or_else(|| panic!("no row with {col} {id:?}"))
}

/// A serial HDF5 workload `NAME.c` built with h5pcc against the shared library (`-shlib`)
/// in a fresh scratch directory: the directory and the executable.
fn h5pcc_workload(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = scratch(name);
    let exe = build_c("h5pcc", &format!("{name}.c"), &dir.join(name), &["-shlib"]);
    (dir, exe)
}

/// Workload `name` built by h5pcc, recorded at the hdf5 layer as it writes `file` with `n`
/// elements: the calls in the order they began, the handles, the file's id, and the run's
/// output.
fn record_h5pcc(name: &str, file: &str, n: i64) -> (Vec<Row>, Vec<Row>, i64, std::process::Output) {
    record_h5pcc_at("hdf5", name, file, n)
}

/// [`record_h5pcc`] at `layers`.
fn record_h5pcc_at(
    layers: &str,
    name: &str,
    file: &str,
    n: i64,
) -> (Vec<Row>, Vec<Row>, i64, std::process::Output) {
    require_root();
    let (dir, exe) = h5pcc_workload(name);
    let out = dir.join("out");
    let file = dir.join(file);
    let res = run(common::recording(layers, &out)
        .arg(&exe)
        .arg(&file)
        .arg(n.to_string()));
    assert!(res.status.success(), "{:?}", res.status);
    let mut calls = rows(&out, "calls");
    calls.sort_by_key(|c| c.i("ts_begin_ns"));
    (
        calls,
        rows(&out, "handles"),
        common::file_id_of(&out, &file),
        res,
    )
}

/// The HDF5 workload built against the shared library that strata probes (`-shlib`), and the
/// file it is to write.
fn hdf5_workload(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    hdf5_workload_on(name, Mpi::Open)
}

/// The HDF5 workload built for one MPI: with h5pcc for Open MPI, or with MPICH's mpicc against
/// Debian's HDF5 for MPICH (`libhdf5_mpich.so.103`; its headers are the Open MPI build's but
/// for the plugin directory, so only the runtime package is needed).
fn hdf5_workload_on(name: &str, mpi: Mpi) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = scratch(name);
    let exe = match mpi {
        Mpi::Open => build_c(
            "h5pcc",
            "hdf5_parallel.c",
            &dir.join("hdf5_parallel"),
            &["-shlib"],
        ),
        Mpi::Mpich => build_c(
            "mpicc.mpich",
            "hdf5_parallel.c",
            &dir.join("hdf5_parallel_mpich"),
            &[
                "-I/usr/include/hdf5/openmpi",
                "/usr/lib/x86_64-linux-gnu/libhdf5_mpich.so.103",
            ],
        ),
    };
    (exe, dir.join("out.h5"))
}

#[test]
fn hdf5_writes_are_linked_through_mpi_io_to_posix() {
    hdf5_writes_linked(Mpi::Open);
}

/// The same job on MPICH: HDF5's calls are the same, the MPI-IO beneath them has the MPICH
/// ABI's integer handles.
#[test]
fn hdf5_writes_on_mpich_are_linked_through_mpi_io_to_posix() {
    hdf5_writes_linked(Mpi::Mpich);
}

fn hdf5_writes_linked(mpi: Mpi) {
    require_root();
    let (exe, h5) = hdf5_workload_on(&format!("mpi_hdf5_{mpi:?}"), mpi);
    let out = record_job(
        &format!("mpi_hdf5_{mpi:?}_run"),
        &[],
        mpi.launcher(),
        &exe,
        &[h5.to_str().unwrap(), &ROWS.to_string()],
    );

    // Four ranks, identified from their environment.
    let procs = rows(&out, "processes");
    let mut ranks: Vec<(i64, i64)> = procs
        .iter()
        .filter(|p| p.s("exe") == exe.to_str())
        .map(|p| (p.i("rank").expect("rank"), p.i("pid").unwrap()))
        .collect();
    ranks.sort();
    assert_eq!(
        ranks.iter().map(|r| r.0).collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
    assert!(
        procs
            .iter()
            .filter(|p| p.s("exe") == exe.to_str())
            .all(|p| p.i("world_size") == Some(RANKS))
    );

    let calls = rows(&out, "calls");
    let mut collective_posix_bytes = 0;
    for &(rank, pid) in &ranks {
        let writes: Vec<&Row> = calls
            .iter()
            .filter(|c| c.i("pid") == Some(pid) && c.s("function") == Some("H5Dwrite"))
            .collect();
        assert_eq!(
            writes.len(),
            3,
            "rank {rank}: collective, independent, collective into the chunked dataset"
        );
        for w in writes {
            assert_eq!(w.i("depth"), Some(0));
            // 16 rows x 1024 doubles: the selection times the memory type's size.
            assert_eq!(
                (w.i("bytes_requested"), w.i("bytes_result")),
                (Some(BLOCK), Some(BLOCK))
            );
            let below = descendants(&calls, w.i("call_id").unwrap());
            let posix: i64 = below
                .iter()
                .filter(|c| c.s("layer") == Some("posix") && c.s("op") == Some("write"))
                .filter_map(|c| c.i("bytes_result"))
                .sum();
            if w.get("collective") == Some(&Val::B(true)) {
                let mpi = below
                    .iter()
                    .find(|c| c.s("function") == Some("MPI_File_write_at_all"))
                    .unwrap_or_else(|| panic!("rank {rank}: no MPI_File_write_at_all"));
                assert_eq!(mpi.i("parent_id"), w.i("call_id"));
                assert_eq!(mpi.i("bytes_requested"), Some(BLOCK));
                assert_eq!(mpi.get("collective"), Some(&Val::B(true)));
                collective_posix_bytes += posix;
            } else {
                let mpi = below
                    .iter()
                    .find(|c| c.s("function") == Some("MPI_File_write_at"))
                    .unwrap_or_else(|| panic!("rank {rank}: no MPI_File_write_at"));
                assert_eq!(mpi.i("bytes_result"), Some(BLOCK));
                let pwrite = below
                    .iter()
                    .find(|c| c.i("parent_id") == mpi.i("call_id") && c.s("op") == Some("write"))
                    .unwrap_or_else(|| {
                        panic!("rank {rank}: no POSIX write under MPI_File_write_at")
                    });
                assert_eq!(pwrite.i("bytes_result"), Some(BLOCK));
                assert_eq!(pwrite.i("offset"), mpi.i("offset"));
                assert_eq!(posix, BLOCK);
            }
        }
    }
    // Two-phase I/O: whichever ranks aggregate, all ranks' blocks of both collectively
    // written datasets reach the file.
    assert_eq!(collective_posix_bytes, 2 * RANKS * BLOCK);

    // The chunked dataset: H5Pset_chunk's shape is recorded, and its property list is the
    // one H5Dcreate2 used for "/chunked".
    for &(rank, pid) in &ranks {
        let of = |f: &'static str| {
            calls
                .iter()
                .filter(move |c| c.i("pid") == Some(pid) && c.s("function") == Some(f))
        };
        let chunk = of("H5Pset_chunk").next().expect("H5Pset_chunk");
        assert_eq!(chunk.list_i("dims"), vec![ROWS, 256], "rank {rank}");
        let create = of("H5Dcreate2")
            .find(|c| c.s("path") == Some("/chunked"))
            .expect("H5Dcreate2 /chunked");
        assert_eq!(create.list_i("args")[5], chunk.list_i("args")[0]);
    }

    // Rank 0 reopens the file and reads "/data" whole (H5S_ALL on an opened dataset): the
    // byte count comes from the library's own element count.
    let read = calls
        .iter()
        .find(|c| c.s("function") == Some("H5Dread"))
        .expect("H5Dread");
    assert_eq!(read.i("pid"), Some(ranks[0].1));
    assert_eq!(read.i("bytes_result"), Some(RANKS * BLOCK));
    let preads: i64 = descendants(&calls, read.i("call_id").unwrap())
        .iter()
        .filter(|c| c.s("layer") == Some("posix") && c.s("op") == Some("read"))
        .filter_map(|c| c.i("bytes_result"))
        .sum();
    assert_eq!(preads, RANKS * BLOCK);
    // The library-internal probe that counted is not a row.
    assert!(
        calls
            .iter()
            .all(|c| c.s("function") != Some("H5S_get_select_npoints"))
    );
    // Which probes the kernel single-steps, from the first instruction of each function in
    // Debian's build (objdump): `push %r15` in H5Dwrite; syscall probes have no instruction of
    // their own. H5S_get_select_npoints is `mov 0x160(%rdi),%rax; ret`: it is probed at its
    // calls in H5D__write and H5D__read (two each, `call` is emulated), where the count above
    // was loaded.
    let probes = rows(&out, "probes");
    assert_eq!(single_step(&probes, "H5Dwrite"), Some(false));
    assert_eq!(single_step(&probes, "pwrite64"), None);
    let npoints = probes
        .iter()
        .find(|p| p.s("function") == Some("H5S_get_select_npoints"))
        .expect("H5S_get_select_npoints in the probes table");
    assert_eq!(
        (
            npoints.s("status"),
            npoints.s("mechanism"),
            npoints.b("single_step"),
            npoints.s("reason"),
        ),
        (
            Some("attached"),
            Some("uprobe_calls"),
            Some(false),
            Some("at its 4 calls in H5D__write, H5D__read, its one load done there"),
        )
    );

    // The handle tree of each rank: dataset -> HDF5 file -> MPI_File -> fd.
    let handles = rows(&out, "handles");
    let by_id: HashMap<i64, &Row> = handles
        .iter()
        .map(|h| (h.i("handle_id").unwrap(), h))
        .collect();
    let parent = |h: &Row| h.i("parent_handle_id").and_then(|p| by_id.get(&p).copied());
    for &(rank, pid) in &ranks {
        let data = handles
            .iter()
            .find(|h| h.i("pid") == Some(pid) && h.s("path") == Some("/data"))
            .unwrap_or_else(|| panic!("rank {rank}: no /data handle"));
        assert_eq!(data.s("kind"), Some("hid"));
        let file = parent(data).expect("dataset has a file");
        assert_eq!(
            (file.s("layer"), file.s("path")),
            (Some("hdf5"), h5.to_str())
        );
        let mpi_file = handles
            .iter()
            .find(|h| h.i("pid") == Some(pid) && h.s("kind") == Some("mpi_file"))
            .expect("an MPI_File handle");
        assert_eq!(mpi_file.i("parent_handle_id"), file.i("handle_id"));
        let fd = handles
            .iter()
            .find(|h| {
                h.i("parent_handle_id") == mpi_file.i("handle_id") && h.s("path") == h5.to_str()
            })
            .unwrap_or_else(|| panic!("rank {rank}: no fd of the file under the MPI_File"));
        assert_eq!(fd.s("kind"), Some("fd"));
        assert_eq!(fd.i("file_id"), file.i("file_id"));
    }

    // The same chain through DuckDB: POSIX writes beneath each top-level HDF5 write.
    let q = format!(
        "WITH RECURSIVE calls AS (SELECT * FROM read_parquet('{o}/calls/**/*.parquet', hive_partitioning=true)), \
         tree(top, call_id) AS (SELECT call_id, call_id FROM calls WHERE layer = 'hdf5' AND op = 'write' AND parent_id IS NULL \
           UNION ALL SELECT t.top, c.call_id FROM calls c JOIN tree t ON c.parent_id = t.call_id) \
         SELECT count(*), sum(c.bytes_result) FROM tree t JOIN calls c ON c.call_id = t.call_id \
         WHERE c.layer = 'posix' AND c.op = 'write'",
        o = out.display()
    );
    let got = duckdb(&q);
    let (n, bytes) = got[0].split_once('\t').unwrap();
    assert_eq!(bytes.parse::<i64>().unwrap(), 3 * RANKS * BLOCK, "{got:?}");
    assert!(n.parse::<i64>().unwrap() > RANKS);
}

/// Where the calls of H5S_get_select_npoints are not found (here: `calls_in` names a function
/// the library lacks), the function itself is probed, single-stepped, and rank 0's H5S_ALL
/// read of the reopened dataset has the same count.
#[test]
fn select_npoints_is_probed_in_the_function_where_its_calls_are_not_found() {
    require_root();
    let (exe, h5) = hdf5_workload("mpi_hdf5_npoints");
    let text = strata::probes::BUILTIN.replace(
        "calls_in = [\"H5D__write\", \"H5D__read\"]",
        "calls_in = [\"no_such_function_here\"]",
    );
    assert_ne!(text, strata::probes::BUILTIN, "probes.toml names the calls");
    let probes_toml = h5.with_file_name("probes.toml");
    std::fs::write(&probes_toml, text).unwrap();
    let out = record_job(
        "mpi_hdf5_npoints_run",
        &["--probes", probes_toml.to_str().unwrap()],
        Mpi::Open.launcher(),
        &exe,
        &[h5.to_str().unwrap(), &ROWS.to_string()],
    );
    let read = rows(&out, "calls")
        .into_iter()
        .find(|c| c.s("function") == Some("H5Dread"))
        .expect("H5Dread");
    assert_eq!(read.i("bytes_result"), Some(RANKS * BLOCK));
    let probes = rows(&out, "probes");
    assert_eq!(single_step(&probes, "H5S_get_select_npoints"), Some(true));
}

/// strata kept off the CPU for a whole job (the job stops it first and resumes it once
/// mpirun has ended): when strata reads the first event, every rank is gone with its memory
/// and its /proc entry, and the transfers still have their byte counts and the ranks their
/// identity: the kernel side read the ids of the predefined types while each rank ran, and
/// sent each new image's arguments and environment at exec. The environment is 60 KB long,
/// as module systems make them, and mpirun appends the rank's variables at its end.
#[test]
fn byte_counts_and_ranks_do_not_depend_on_the_tracer_keeping_up() {
    require_root();
    let (exe, h5) = hdf5_workload("mpi_hdf5_stopped");
    let out = scratch("mpi_hdf5_stopped_run").join("out");
    // The command's parent is strata itself (it forks the command).
    let script = format!(
        "[ \"$(cat /proc/$PPID/comm)\" = strata ] || exit 97; kill -STOP $PPID || exit 98; \
         mpirun --oversubscribe -np {RANKS} \"$0\" \"$1\" {ROWS}; s=$?; kill -CONT $PPID; exit $s"
    );
    let _one_job = ONE_JOB.lock().unwrap_or_else(|e| e.into_inner());
    let res = run(strata()
        .args(["record", "-q", "--layers", "hdf5", "-o"])
        .arg(&out)
        .args(["--", "sh", "-c", &script])
        .arg(&exe)
        .arg(&h5)
        .env("STRATA_TEST_PADDING", "x".repeat(60_000))
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"));
    assert!(res.status.success(), "{:?}", res.status);

    let calls = rows(&out, "calls");
    let mut writes: HashMap<i64, Vec<&Row>> = HashMap::new();
    for c in calls.iter().filter(|c| c.s("function") == Some("H5Dwrite")) {
        writes.entry(c.i("pid").unwrap()).or_default().push(c);
    }
    assert_eq!(writes.len(), RANKS as usize, "one H5Dwrite pid per rank");
    for (pid, w) in &writes {
        assert_eq!(w.len(), 3, "pid {pid}");
        for c in w {
            assert_eq!(
                (c.i("bytes_requested"), c.i("bytes_result")),
                (Some(BLOCK), Some(BLOCK)),
                "pid {pid}, call {:?}",
                c.i("call_id")
            );
        }
    }
    // Rank 0's read of the whole dataset: the library's own count times the type's size.
    let read = calls
        .iter()
        .find(|c| c.s("function") == Some("H5Dread"))
        .expect("H5Dread");
    assert_eq!(read.i("bytes_result"), Some(RANKS * BLOCK));

    // Who each rank was: its command line and MPI rank, from the arguments and environment
    // the kernel side sent at exec.
    let procs = rows(&out, "processes");
    let mut ranks: Vec<i64> = Vec::new();
    for pid in writes.keys() {
        let p = procs
            .iter()
            .find(|p| p.i("pid") == Some(*pid))
            .unwrap_or_else(|| panic!("no process row for {pid}"));
        assert_eq!(
            p.s("cmdline"),
            Some(format!("{} {} {ROWS}", exe.display(), h5.display()).as_str())
        );
        assert_eq!(p.i("world_size"), Some(RANKS), "pid {pid}");
        ranks.push(
            p.i("rank")
                .unwrap_or_else(|| panic!("pid {pid} has no rank")),
        );
    }
    ranks.sort();
    assert_eq!(ranks, (0..RANKS).collect::<Vec<_>>());
}

/// Datatypes the program builds (a compound, a fixed-length string, an array of ints): each
/// transfer's bytes are its elements times the size the program gave the type.
/// Ground truth: tests/workloads/hdf5_types.c.
#[test]
fn hdf5_transfers_of_built_types_have_their_sizes() {
    require_root();
    let (dir, exe) = h5pcc_workload("hdf5_types");
    let (_, calls) = record_types(&exe, &dir);
    assert_eq!(types_written(&calls), TYPES_WRITTEN);
}

/// hdf5_types.c's N.
const N_TYPES: i64 = 1000;
/// The bytes of its H5Dwrites: struct rec { double; int; } is 16 bytes with its padding;
/// "%32s"; int[3]; a double.
const TYPES_WRITTEN: [Option<i64>; 4] = [
    Some(N_TYPES * 16),
    Some(N_TYPES * 32),
    Some(N_TYPES * 12),
    Some(N_TYPES * 8),
];

/// hdf5_types (built as `exe`) under `strata record --layers hdf5`: the output directory and
/// its calls in the order they began.
fn record_types(exe: &std::path::Path, dir: &std::path::Path) -> (std::path::PathBuf, Vec<Row>) {
    let out = dir.join("out");
    let res = run(common::recording("hdf5", &out)
        .arg(exe)
        .arg(dir.join("types.h5"))
        .arg(N_TYPES.to_string()));
    assert!(res.status.success(), "{:?}", res.status);
    let mut calls = rows(&out, "calls");
    calls.sort_by_key(|c| c.i("ts_begin_ns"));
    (out, calls)
}

fn types_written(calls: &[Row]) -> Vec<Option<i64>> {
    calls
        .iter()
        .filter(|c| c.s("function") == Some("H5Dwrite"))
        .map(|c| c.i("bytes_result"))
        .collect()
}

/// One traced job at a time. Each is 4 ranks, mpirun and a tracer; four at once on a 2-CPU
/// machine can keep a tracer behind by longer than a rank lives, and what strata reads from
/// /proc (a rank's environment, which names its MPI rank) goes with the process.
static ONE_JOB: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Whether the kernel single-steps the attached probe of function `f` (the probes table).
fn single_step(probes: &[Row], f: &str) -> Option<bool> {
    let p = probes
        .iter()
        .find(|p| p.s("function") == Some(f) && p.s("status") == Some("attached"))
        .unwrap_or_else(|| panic!("{f} attached"));
    p.b("single_step")
}

/// `mpirun -np RANKS exe args...` under `strata record`, returning the output directory.
fn record_mpi(name: &str, exe: &std::path::Path, args: &[&str]) -> std::path::PathBuf {
    record_job(name, &[], Mpi::Open.launcher(), exe, args)
}

/// `launcher exe args...` under `strata record OPTS`, returning the output directory.
fn record_job(
    name: &str,
    opts: &[&str],
    launcher: &[&str],
    exe: &std::path::Path,
    args: &[&str],
) -> std::path::PathBuf {
    record_job_output(name, opts, launcher, exe, args).0
}

/// [`record_job`], with what the job printed.
fn record_job_output(
    name: &str,
    opts: &[&str],
    launcher: &[&str],
    exe: &std::path::Path,
    args: &[&str],
) -> (std::path::PathBuf, String) {
    let out = scratch(name).join("out");
    let _one_job = ONE_JOB.lock().unwrap_or_else(|e| e.into_inner());
    let res = run(strata()
        .args(["record", "-q", "--layers", "posix,mpiio,hdf5,netcdf", "-o"])
        .arg(&out)
        .args(opts)
        .arg("--")
        .args(launcher)
        .arg(exe)
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"));
    assert!(res.status.success(), "{:?}", res.status);
    (out, String::from_utf8_lossy(&res.stdout).into_owned())
}

/// A NetCDF workload (`name`.c) built against Debian's parallel NetCDF, in `dir`.
fn netcdf_workload(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    build_c(
        "mpicc",
        &format!("{name}.c"),
        &dir.join(name),
        &[
            "-I/usr/lib/x86_64-linux-gnu/netcdf/mpi/include",
            "-L/usr/lib/x86_64-linux-gnu/netcdf/mpi/lib",
            "-lnetcdf_mpi",
        ],
    )
}

#[test]
fn netcdf_puts_reach_posix_through_hdf5_and_mpi_io() {
    require_root();
    let dir = scratch("netcdf_build");
    let exe = netcdf_workload(&dir, "netcdf_parallel");
    let nc = dir.join("out.nc");
    const VALUES: i64 = 4096;
    let out = record_mpi("netcdf", &exe, &[nc.to_str().unwrap(), &VALUES.to_string()]);

    let calls = rows(&out, "calls");
    let procs = rows(&out, "processes");
    let pids: Vec<i64> = procs
        .iter()
        .filter(|p| p.s("exe") == exe.to_str())
        .filter_map(|p| p.i("pid"))
        .collect();
    assert_eq!(pids.len(), RANKS as usize);
    for &pid in &pids {
        let puts: Vec<&Row> = calls
            .iter()
            .filter(|c| c.i("pid") == Some(pid) && c.s("function") == Some("nc_put_vara_double"))
            .collect();
        assert_eq!(puts.len(), 2);
        // First the collective variable, then the independent one (nc_var_par_access).
        assert_eq!(puts[0].get("collective"), Some(&Val::B(true)));
        assert_eq!(puts[1].get("collective"), Some(&Val::B(false)));
        for (put, mpi_fn) in puts
            .iter()
            .zip(["MPI_File_write_at_all", "MPI_File_write_at"])
        {
            let below = descendants(&calls, put.i("call_id").unwrap());
            let h5 = below
                .iter()
                .find(|c| c.s("function") == Some("H5Dwrite"))
                .expect("H5Dwrite under nc_put_vara_double");
            assert_eq!(h5.i("parent_id"), put.i("call_id"));
            // count x sizeof(double), from the count array and nc_def_var's rank.
            assert_eq!(put.i("bytes_requested"), Some(VALUES * 8));
            assert_eq!(put.i("bytes_result"), Some(VALUES * 8));
            // NetCDF's own copy of H5T_NATIVE_DOUBLE (H5Tcopy) keeps its size.
            assert_eq!(h5.i("bytes_requested"), Some(VALUES * 8));
            let mpi = below
                .iter()
                .find(|c| c.s("function") == Some(mpi_fn) && c.i("parent_id") == h5.i("call_id"))
                .unwrap_or_else(|| panic!("no {mpi_fn} under H5Dwrite"));
            assert_eq!(mpi.i("bytes_requested"), Some(VALUES * 8));
            if mpi_fn == "MPI_File_write_at" {
                let posix = below
                    .iter()
                    .find(|c| c.i("parent_id") == mpi.i("call_id") && c.s("op") == Some("write"))
                    .expect("POSIX write under MPI_File_write_at");
                assert_eq!(posix.i("bytes_result"), Some(VALUES * 8));
            }
        }
    }

    // Rank 0's whole-variable put: 256 doubles, from nc_def_dim's length through nc_def_var's
    // dimension ids (recorded in `dims`), and the H5Dwrite beneath agrees.
    const WHOLE: i64 = 256;
    let whole_var = calls
        .iter()
        .find(|c| c.s("function") == Some("nc_def_var") && c.s("path") == Some("whole"))
        .expect("nc_def_var whole");
    let dim_y = calls
        .iter()
        .find(|c| {
            c.i("pid") == whole_var.i("pid")
                && c.s("function") == Some("nc_def_dim")
                && c.s("path") == Some("y")
        })
        .expect("nc_def_dim y");
    assert_eq!(dim_y.list_i("args")[2], WHOLE);
    let puts: Vec<&Row> = calls
        .iter()
        .filter(|c| c.s("function") == Some("nc_put_var_double"))
        .collect();
    assert_eq!(puts.len(), 1, "only rank 0 writes the whole variable");
    assert_eq!(puts[0].i("bytes_result"), Some(WHOLE * 8));
    assert_eq!(puts[0].get("collective"), Some(&Val::B(false)));
    let h5 = descendants(&calls, puts[0].i("call_id").unwrap())
        .into_iter()
        .find(|c| c.s("function") == Some("H5Dwrite"))
        .expect("H5Dwrite under nc_put_var_double");
    assert_eq!(h5.i("bytes_result"), Some(WHOLE * 8));
    // nc_put_var_double opens with `mov $6,%ecx; jmp`: the probe sits on the emulated jmp, and
    // the byte counts above show that the arguments and return seen there are the call's.
    assert_eq!(
        single_step(&rows(&out, "probes"), "nc_put_var_double"),
        Some(false)
    );

    // ncid -> HDF5 file -> MPI_File -> fd, and one group key for the collective open.
    let handles = rows(&out, "handles");
    let by_id: HashMap<i64, &Row> = handles
        .iter()
        .map(|h| (h.i("handle_id").unwrap(), h))
        .collect();
    let mut keys = Vec::new();
    for &pid in &pids {
        let fd = handles
            .iter()
            .find(|h| {
                h.i("pid") == Some(pid) && h.s("kind") == Some("fd") && h.s("path") == nc.to_str()
            })
            .expect("fd of the NetCDF file");
        let mut chain = vec![fd.s("kind").unwrap()];
        let mut h: &Row = fd;
        while let Some(p) = h.i("parent_handle_id").and_then(|p| by_id.get(&p).copied()) {
            chain.push(p.s("kind").unwrap());
            h = p;
        }
        assert_eq!(chain, ["fd", "mpi_file", "hid", "ncid"]);
        let mpi_file = by_id[&fd.i("parent_handle_id").unwrap()];
        keys.push(mpi_file.s("group_key").expect("group key").to_string());
    }
    keys.dedup();
    assert_eq!(
        keys.len(),
        1,
        "all ranks' MPI_File handles share one group key: {keys:?}"
    );
}

/// The two ABIs of MPI: Open MPI's handles are pointers to objects (a datatype's size is read
/// from it), the MPICH family's 32-bit integers (a datatype's size is what ROMIO asks).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mpi {
    Open,
    Mpich,
}

impl Mpi {
    /// Its launcher, for 4 ranks.
    fn launcher(self) -> &'static [&'static str] {
        match self {
            Mpi::Open => &["mpirun", "--oversubscribe", "-np", "4"],
            Mpi::Mpich => &["mpiexec.mpich", "-n", "4"],
        }
    }
}

#[test]
fn mpi_io_calls_carry_offsets_bytes_requests_and_their_posix_writes() {
    mpi_io_calls(Mpi::Open);
}

/// The same job built with Debian's MPICH (`libmpich.so.12`, which probes.toml knows by its
/// other name), run by its own launcher.
#[test]
fn mpi_io_calls_under_the_mpich_abi_have_the_same_bytes_and_requests() {
    mpi_io_calls(Mpi::Mpich);
}

/// Under the MPICH ABI without the MPI_Type_size_x probe (an MPI-IO that sizes its types
/// otherwise): a predefined datatype's size still comes from its handle, a built one's is
/// unknown, never guessed.
#[test]
fn mpich_predefined_datatypes_are_sized_from_their_handles() {
    require_root();
    let dir = scratch("mpich_handles_build");
    let exe = build_c("mpicc.mpich", "mpiio.c", &dir.join("mpich_io"), &[]);
    let probes = dir.join("probes.toml");
    std::fs::write(&probes, common::without_probe("MPI_Type_size_x")).unwrap();
    let file = dir.join("data.bin");
    let out = record_job(
        "mpich_handles",
        &["--probes", probes.to_str().unwrap()],
        Mpi::Mpich.launcher(),
        &exe,
        &[file.to_str().unwrap()],
    );
    let calls = rows(&out, "calls");
    let requested = |f: &str| -> Vec<Option<i64>> {
        let mut v: Vec<&Row> = calls
            .iter()
            .filter(|c| c.s("function") == Some(f))
            .collect();
        v.sort_by_key(|c| (c.i("offset"), c.i("pid")));
        v.iter().map(|c| c.i("bytes_requested")).collect()
    };
    // Per rank: 4096 MPI_BYTE, then 10 of the built 24-byte type.
    let mut expect = vec![Some(4096); RANKS as usize];
    expect.extend(vec![None; RANKS as usize]);
    assert_eq!(requested("MPI_File_write_at"), expect);
    assert_eq!(
        requested("MPI_File_write_at_all"),
        vec![Some(8192); RANKS as usize]
    );
    assert_eq!(
        requested("MPI_File_iread_at"),
        vec![Some(100); RANKS as usize]
    );
    assert_eq!(
        requested("MPI_File_write_all"),
        vec![Some(1024); RANKS as usize]
    );
}

/// Builds workload `src` with `mpi`'s compiler as `names` (Open MPI's, MPICH's) and records
/// it writing `data.bin`: the executable, the file and the dataset.
fn record_mpi_workload(
    mpi: Mpi,
    src: &str,
    names: (&str, &str),
) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    require_root();
    let (name, cc) = match mpi {
        Mpi::Open => (names.0, "mpicc"),
        Mpi::Mpich => (names.1, "mpicc.mpich"),
    };
    let dir = scratch(&format!("{name}_build"));
    let exe = build_c(cc, src, &dir.join(name), &[]);
    let file = dir.join("data.bin");
    let out = record_job(name, &[], mpi.launcher(), &exe, &[file.to_str().unwrap()]);
    (exe, file, out)
}

/// The (rank, pid) of each of the job's RANKS processes running `exe`, by rank.
fn ranks_of(out: &std::path::Path, exe: &std::path::Path) -> Vec<(i64, i64)> {
    let mut ranks: Vec<(i64, i64)> = rows(out, "processes")
        .iter()
        .filter(|p| p.s("exe") == exe.to_str())
        .map(|p| (p.i("rank").unwrap(), p.i("pid").unwrap()))
        .collect();
    ranks.sort();
    assert_eq!(
        ranks.iter().map(|r| r.0).collect::<Vec<_>>(),
        (0..RANKS).collect::<Vec<_>>(),
        "{ranks:?}"
    );
    ranks
}

fn mpi_io_calls(mpi: Mpi) {
    let (exe, file, out) = record_mpi_workload(mpi, "mpiio.c", ("mpiio", "mpich_io"));

    let ranks = ranks_of(&out, &exe);
    let calls = rows(&out, "calls");
    let handles = rows(&out, "handles");
    let files = rows(&out, "files");
    let file_id = files
        .iter()
        .find(|f| f.s("path") == file.to_str())
        .and_then(|f| f.i("file_id"));
    let one = |pid: i64, f: &str| -> &Row {
        let v: Vec<&Row> = calls
            .iter()
            .filter(|c| c.i("pid") == Some(pid) && c.s("function") == Some(f))
            .collect();
        assert_eq!(v.len(), 1, "pid {pid}: {f} recorded {} times", v.len());
        v[0]
    };
    let children = |c: &Row| -> Vec<&Row> {
        calls
            .iter()
            .filter(|x| x.i("parent_id") == c.i("call_id"))
            .collect()
    };
    let mut group_keys = Vec::new();
    let mut collective_posix = 0;
    for &(r, pid) in &ranks {
        // The program's own (MPICH's MPI_File_open sets its default hints the same way,
        // beneath it).
        let info: Vec<_> = calls
            .iter()
            .filter(|c| c.i("pid") == Some(pid) && c.s("function") == Some("MPI_Info_set"))
            .filter(|c| c.i("parent_id").is_none())
            .collect();
        assert_eq!(info.len(), 1, "rank {r}: {info:?}");
        match info[0].get("strs") {
            Some(Val::SL(s)) => assert_eq!(s, &["cb_buffer_size", "1048576"]),
            v => panic!("{v:?}"),
        }
        let open = one(pid, "MPI_File_open");
        let fh = handles
            .iter()
            .find(|h| h.i("handle_id") == open.i("handle_id"))
            .unwrap();
        assert_eq!((fh.s("kind"), fh.i("file_id")), (Some("mpi_file"), file_id));
        group_keys.push(fh.s("group_key").unwrap().to_string());

        // 4096 MPI_BYTE, then 10 of a built type of 24 bytes (its size read from Open MPI's
        // object, or asked beneath the call under MPICH).
        let mut writes: Vec<&Row> = calls
            .iter()
            .filter(|c| c.i("pid") == Some(pid) && c.s("function") == Some("MPI_File_write_at"))
            .collect();
        writes.sort_by_key(|c| c.i("offset"));
        assert_eq!(writes.len(), 2, "rank {r}: {writes:?}");
        for (w, at, bytes) in [
            (writes[0], r * 4096, 4096),
            (writes[1], 196608 + r * 240, 240),
        ] {
            assert_eq!(
                (w.i("offset"), w.i("bytes_requested"), w.i("bytes_result")),
                (Some(at), Some(bytes), Some(bytes))
            );
            assert_eq!(w.get("collective"), Some(&Val::B(false)));
            let px = children(w);
            let px: Vec<_> = px.iter().filter(|c| c.s("op") == Some("write")).collect();
            assert_eq!(
                px.len(),
                1,
                "rank {r}: one POSIX write under MPI_File_write_at"
            );
            assert_eq!(
                (px[0].i("offset"), px[0].i("bytes_result")),
                (Some(at), Some(bytes))
            );
        }

        // 1024 MPI_DOUBLE: 8192 bytes, the datatype's size read from the process.
        let wa = one(pid, "MPI_File_write_at_all");
        assert_eq!(
            (wa.i("offset"), wa.i("bytes_requested")),
            (Some(65536 + r * 8192), Some(8192))
        );
        assert_eq!(wa.get("collective"), Some(&Val::B(true)));
        collective_posix += children(wa)
            .iter()
            .filter(|c| c.s("op") == Some("write"))
            .filter_map(|c| c.i("bytes_result"))
            .sum::<i64>();

        // iwrite + wait: the request handle links the two calls.
        let iw = one(pid, "MPI_File_iwrite_at");
        assert_eq!(
            (iw.i("offset"), iw.i("bytes_requested")),
            (Some(131072 + r * 1000), Some(1000))
        );
        let wait = one(pid, "MPI_Wait");
        let req = handles
            .iter()
            .find(|h| h.i("handle_id") == wait.i("handle_id"))
            .expect("MPI_Wait names the request");
        assert_eq!(req.s("kind"), Some("request"));
        assert_eq!(req.i("created_by_call_id"), iw.i("call_id"));
        assert_eq!(req.i("destroyed_by_call_id"), wait.i("call_id"));
        assert_eq!(req.i("parent_handle_id"), open.i("handle_id"));
        // Open MPI hands the write to POSIX AIO, whose helper thread issues the pwrite on
        // its own stack; it is linked to the iwrite that queued it.
        let aio: Vec<&Row> = children(iw)
            .into_iter()
            .filter(|c| c.s("layer") == Some("posix") && c.s("op") == Some("write"))
            .collect();
        assert_eq!(aio.len(), 1, "rank {r}: the POSIX write of the iwrite");
        assert_eq!(
            (aio[0].i("offset"), aio[0].i("bytes_result")),
            (Some(131072 + r * 1000), Some(1000))
        );
        assert_ne!(
            aio[0].i("tid"),
            iw.i("tid"),
            "written by the AIO helper thread"
        );
        assert_eq!(aio[0].i("file_id"), file_id);

        // iread, then MPI_Test until done: every MPI_Test names the request, and the one that
        // found it done completes it.
        let ir = one(pid, "MPI_File_iread_at");
        assert_eq!(
            (ir.i("offset"), ir.i("bytes_requested")),
            (Some(r * 4096), Some(100))
        );
        let rreq = handles
            .iter()
            .find(|h| h.i("created_by_call_id") == ir.i("call_id"))
            .expect("the iread's request");
        assert_eq!(rreq.s("kind"), Some("request"));
        let mut polls: Vec<&Row> = calls
            .iter()
            .filter(|c| c.i("pid") == Some(pid) && c.s("function") == Some("MPI_Test"))
            .collect();
        polls.sort_by_key(|c| c.i("ts_begin_ns"));
        assert!(
            polls
                .iter()
                .all(|t| t.i("handle_id") == rreq.i("handle_id")),
            "rank {r}: {polls:?}"
        );
        assert_eq!(
            rreq.i("destroyed_by_call_id"),
            polls.last().and_then(|t| t.i("call_id"))
        );
        let preads: Vec<&Row> = children(ir)
            .into_iter()
            .filter(|c| c.s("layer") == Some("posix") && c.s("op") == Some("read"))
            .collect();
        assert_eq!(preads.len(), 1, "rank {r}: the POSIX read of the iread");
        assert_eq!(
            (preads[0].i("offset"), preads[0].i("bytes_result")),
            (Some(r * 4096), Some(100))
        );

        let view = one(pid, "MPI_File_set_view");
        assert_eq!(view.i("offset"), Some(262144 + r * 256));
        assert_eq!(view.get("strs"), Some(&Val::SL(vec!["native".into()])));
        let wall = one(pid, "MPI_File_write_all");
        assert_eq!(wall.i("bytes_requested"), Some(1024));
    }
    group_keys.dedup();
    assert_eq!(group_keys.len(), 1, "{group_keys:?}");
    // Functions whose first instruction the kernel would single-step (MPICH's
    // MPI_Type_size_x opens with `mov %edi,%eax`, Open MPI's MPI_Test with a load of a global
    // into %rax) are probed at the `push` after it; the sizes and requests above show that the
    // arguments and returns seen there are the call's.
    let (function, library) = match mpi {
        Mpi::Open => ("MPI_Test", "libmpi.so.40"),
        Mpi::Mpich => ("MPI_Type_size_x", "libmpich"),
    };
    let probes = rows(&out, "probes");
    let probe = probes
        .iter()
        .find(|p| {
            p.s("function") == Some(function) && p.s("target").is_some_and(|t| t.contains(library))
        })
        .unwrap_or_else(|| panic!("{function} of {library} in the probes table"));
    assert_eq!(
        (probe.s("status"), probe.b("single_step")),
        (Some("attached"), Some(false))
    );
    // Two-phase I/O: the aggregators write all ranks' 8 KiB blocks.
    assert_eq!(collective_posix, RANKS * 8192);
    // Every byte of the job reached the file through POSIX writes.
    let total: i64 = calls
        .iter()
        .filter(|c| c.s("layer") == Some("posix") && c.s("op") == Some("write"))
        .filter(|c| c.i("file_id") == file_id)
        .filter_map(|c| c.i("bytes_result"))
        .sum();
    assert_eq!(total, RANKS * (4096 + 8192 + 1000 + 240 + 1024));
}

/// Requests completed several at a time (tests/workloads/mpi_requests.c): the three
/// iwrites' requests by the first MPI_Waitall, the two ireads' by one MPI_Waitany each (whose
/// row names it), the fourth iwrite's by the MPI_Testall that found it done, the next two's
/// by the MPI_Testany that found each done; the next three by the MPI_Waitsome calls and the
/// three after by the MPI_Testsome calls that returned their indices, which the workload
/// logged; then 200 by the second MPI_Waitall, and 150 by the MPI_Waitsome calls after it.
fn mpi_requests_completed_together(mpi: Mpi) {
    let (exe, file, out) =
        record_mpi_workload(mpi, "mpi_requests.c", ("requests", "mpich_requests"));
    let calls = rows(&out, "calls");
    let handles = rows(&out, "handles");
    let ranks: Vec<(i64, i64)> = rows(&out, "processes")
        .iter()
        .filter(|p| p.s("exe") == exe.to_str())
        .filter_map(|p| Some((p.i("pid")?, p.i("rank")?)))
        .collect();
    assert_eq!(ranks.len(), RANKS as usize);
    for (pid, rank) in ranks {
        let of = |f: &str| -> Vec<&Row> {
            let mut v: Vec<&Row> = calls
                .iter()
                .filter(|c| c.i("pid") == Some(pid) && c.s("function") == Some(f))
                .collect();
            v.sort_by_key(|c| c.i("ts_begin_ns"));
            v
        };
        // The request each call created.
        let request = |c: &Row| -> &Row {
            handles
                .iter()
                .find(|h| h.i("created_by_call_id") == c.i("call_id"))
                .unwrap_or_else(|| panic!("pid {pid}: no request from {c:?}"))
        };
        let iwrites = of("MPI_File_iwrite_at");
        let ireads = of("MPI_File_iread_at");
        assert_eq!(
            (iwrites.len(), ireads.len()),
            (12 + 200 + 150, 2),
            "pid {pid}"
        );
        let waitall = of("MPI_Waitall");
        assert_eq!(waitall.len(), 2, "pid {pid}");
        // The second's 200 requests span four of the kernel side's records (two under
        // MPICH's integer handles).
        for (w, all) in iwrites[..3]
            .iter()
            .map(|w| (w, &waitall[0]))
            .chain(iwrites[12..212].iter().map(|w| (w, &waitall[1])))
        {
            let r = request(w);
            assert_eq!(r.s("kind"), Some("request"));
            assert_eq!(
                r.i("destroyed_by_call_id"),
                all.i("call_id"),
                "pid {pid}: {w:?}"
            );
        }
        assert!(
            waitall.iter().all(|w| w.i("handle_id").is_none()),
            "names no one request"
        );
        let waitany = of("MPI_Waitany");
        assert_eq!(waitany.len(), 2, "pid {pid}");
        // (request, the call that destroyed it) of each of these calls' requests.
        let destroyed = |cs: &[&Row]| {
            let mut v: Vec<(Option<i64>, Option<i64>)> = cs
                .iter()
                .map(|c| {
                    let r = request(c);
                    (r.i("handle_id"), r.i("destroyed_by_call_id"))
                })
                .collect();
            v.sort();
            v
        };
        // (the request it names, itself) of each of these calls that names one.
        let naming = |cs: &[&Row]| {
            let mut v: Vec<(Option<i64>, Option<i64>)> = cs
                .iter()
                .filter(|c| c.i("handle_id").is_some())
                .map(|c| (c.i("handle_id"), c.i("call_id")))
                .collect();
            v.sort();
            v
        };
        assert_eq!(
            destroyed(&ireads),
            naming(&waitany),
            "pid {pid}: each MPI_Waitany completes and names one iread's"
        );
        let testall = of("MPI_Testall");
        assert!(!testall.is_empty(), "pid {pid}");
        assert_eq!(
            request(iwrites[3]).i("destroyed_by_call_id"),
            testall.last().unwrap().i("call_id"),
            "pid {pid}: the last MPI_Testall found it done"
        );
        // The polls that found nothing done name nothing.
        let testany = of("MPI_Testany");
        assert_eq!(
            destroyed(&iwrites[4..6]),
            naming(&testany),
            "pid {pid}: two MPI_Testany complete and name one each"
        );
        // Each MPI_Waitsome and MPI_Testsome that completed any: the requests at the indices
        // it returned (1 to n: the array's first is inactive), by handle id; the calls that
        // completed none destroyed none. The log names the 150-request MPI_Waitsome calls
        // (whose indices span two records) apart.
        let log = std::fs::read_to_string(format!("{}.some.{rank}", file.display())).unwrap();
        let lines: Vec<(&str, Vec<usize>)> = log
            .lines()
            .map(|l| {
                let mut words = l.split_whitespace();
                let name = words.next().unwrap();
                (name, words.map(|j| j.parse().unwrap()).collect())
            })
            .collect();
        assert!(
            lines.iter().any(|(name, _)| *name == "MPI_Waitsome150"),
            "pid {pid}:\n{log}"
        );
        for f in ["MPI_Waitsome", "MPI_Testsome"] {
            let want: Vec<Vec<i64>> = lines
                .iter()
                .filter(|(name, _)| name.starts_with(f))
                .map(|(name, indices)| {
                    let started = match *name {
                        "MPI_Waitsome" => &iwrites[6..9],
                        "MPI_Testsome" => &iwrites[9..12],
                        _ => &iwrites[212..],
                    };
                    let mut ids: Vec<i64> = indices
                        .iter()
                        .map(|j| request(started[j - 1]))
                        .filter_map(|r| r.i("handle_id"))
                        .collect();
                    ids.sort();
                    ids
                })
                .collect();
            let made = of(f);
            let got: Vec<Vec<i64>> = made
                .iter()
                .map(|c| {
                    let mut ids: Vec<i64> = handles
                        .iter()
                        .filter(|h| h.i("destroyed_by_call_id") == c.i("call_id"))
                        .filter_map(|h| h.i("handle_id"))
                        .collect();
                    ids.sort();
                    ids
                })
                .filter(|ids| !ids.is_empty())
                .collect();
            assert!(!want.is_empty(), "pid {pid}: {f} logged:\n{log}");
            assert_eq!(got, want, "pid {pid}: {f}");
            assert!(
                made.iter().all(|c| c.i("handle_id").is_none()),
                "pid {pid}: {f}"
            );
        }
    }
}

#[test]
fn mpi_requests_completed_together_are_each_destroyed_by_their_call() {
    mpi_requests_completed_together(Mpi::Open);
}

#[test]
fn mpich_requests_completed_together_are_each_destroyed_by_their_call() {
    mpi_requests_completed_together(Mpi::Mpich);
}

/// HDF5 linked statically into the program (h5pcc's default): its functions are probed in
/// the executable itself, named among mpirun's arguments, and the byte counts still come out
/// (the predefined types are the executable's own globals).
#[test]
fn statically_linked_hdf5_is_probed_in_the_executable() {
    require_root();
    let dir = scratch("mpi_hdf5_static");
    let exe = build_c("h5pcc", "hdf5_parallel.c", &dir.join("hdf5_static"), &[]);
    let st = std::process::Command::new("ldd")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&st.stdout).contains("libhdf5"),
        "h5pcc without -shlib should link HDF5 statically"
    );
    let h5 = dir.join("out.h5");
    let out = record_mpi(
        "mpi_hdf5_static_run",
        &exe,
        &[h5.to_str().unwrap(), &ROWS.to_string()],
    );
    let probes = rows(&out, "probes");
    assert!(
        probes.iter().any(|p| p.s("function") == Some("H5Dwrite")
            && p.s("target") == exe.to_str()
            && p.s("status") == Some("attached")),
        "H5Dwrite attached in the executable"
    );
    let calls = rows(&out, "calls");
    let procs = rows(&out, "processes");
    let pids: Vec<i64> = procs
        .iter()
        .filter(|p| p.s("exe") == exe.to_str())
        .filter_map(|p| p.i("pid"))
        .collect();
    assert_eq!(pids.len(), RANKS as usize);
    for pid in pids {
        let writes: Vec<&Row> = calls
            .iter()
            .filter(|c| c.i("pid") == Some(pid) && c.s("function") == Some("H5Dwrite"))
            .collect();
        assert_eq!(writes.len(), 3, "pid {pid}");
        for w in writes {
            assert_eq!(w.i("bytes_result"), Some(BLOCK), "pid {pid}");
            let below = descendants(&calls, w.i("call_id").unwrap());
            assert!(below.iter().any(|c| c.s("layer") == Some("mpiio")));
        }
    }
}

/// HDF5 as jobs bring it: another build under another name (a Python wheel's
/// `libhdf5-<hash>.so`), found through the program's RUNPATH, not the system's library cache.
/// strata finds it as the loader will and probes it before the program runs, so the first call
/// is recorded too. Ground truth: tests/workloads/hdf5_types.c, built against a copy of
/// Debian's serial HDF5 under a wheel's name.
#[test]
fn other_builds_of_hdf5_are_probed_however_they_are_loaded() {
    require_root();
    let dir = scratch("hdf5_wheel");
    let libs = dir.join("libs");
    std::fs::create_dir_all(&libs).unwrap();
    // The soname is rewritten in place, so the new name has the old one's length.
    let (system, wheel) = ("libhdf5_serial.so.103", "libhdf5-0123abcd.so.1");
    let mut elf = std::fs::read(format!("/usr/lib/x86_64-linux-gnu/{system}"))
        .expect("Debian's serial HDF5 (hdf5-tools; run `cargo xtask setup`)");
    let (from, to) = (format!("{system}\0"), format!("{wheel}\0"));
    let at: Vec<usize> = elf
        .windows(from.len())
        .enumerate()
        .filter(|(_, w)| *w == from.as_bytes())
        .map(|(i, _)| i)
        .collect();
    assert!(!at.is_empty(), "the soname is in {system}");
    for i in at {
        elf[i..i + to.len()].copy_from_slice(to.as_bytes());
    }
    let lib = libs.join(wheel);
    std::fs::write(&lib, elf).unwrap();
    let exe = build_c(
        "mpicc",
        "hdf5_types.c",
        &dir.join("hdf5_types_wheel"),
        &[
            "-I/usr/include/hdf5/openmpi",
            lib.to_str().unwrap(),
            &format!("-Wl,-rpath,{}", libs.display()),
        ],
    );
    let ldd = std::process::Command::new("ldd")
        .arg(&exe)
        .output()
        .unwrap();
    let ldd = String::from_utf8_lossy(&ldd.stdout);
    assert!(
        ldd.contains(&format!("{wheel} => {}", lib.display())),
        "the program loads the copy: {ldd}"
    );

    let (out, calls) = record_types(&exe, &dir);
    let probes = rows(&out, "probes");
    let on_copy = |f: &str| {
        probes.iter().any(|p| {
            p.s("function") == Some(f)
                && p.s("target") == lib.to_str()
                && p.s("status") == Some("attached")
        })
    };
    assert!(
        on_copy("H5Fcreate") && on_copy("H5Dwrite"),
        "probed in the copy"
    );
    assert_eq!(
        calls.first().and_then(|c| c.s("function")),
        Some("H5Fcreate"),
        "the program's first HDF5 call is recorded"
    );
    let count = |f: &str| calls.iter().filter(|c| c.s("function") == Some(f)).count();
    assert_eq!((count("H5Fcreate"), count("H5Fclose")), (1, 1));
    assert_eq!(types_written(&calls), TYPES_WRITTEN);

    // The same build loaded with dlopen, as Python loads h5py's, with no POSIX layer to see
    // it opened: the loader's report finds it. Ground truth: tests/workloads/hdf5_dlopen.c.
    let exe = build_c("cc", "hdf5_dlopen.c", &dir.join("hdf5_dlopen"), &["-ldl"]);
    let out = dir.join("out_dlopen");
    let h5 = dir.join("dlopen.h5");
    let res = run(common::recording("hdf5", &out)
        .arg(&exe)
        .arg(&lib)
        .arg(&h5)
        .arg("1000"));
    assert!(res.status.success(), "{:?}", res.status);
    let calls = rows(&out, "calls");
    let seen: Vec<(&str, Option<&str>)> = calls
        .iter()
        .map(|c| (c.s("function").unwrap(), c.s("path")))
        .collect();
    assert_eq!(
        seen,
        [("H5Fcreate", h5.to_str()), ("H5Fclose", None)],
        "probed once loaded"
    );
    // The report came from the loader's calls of `_dl_debug_state` (a bare `ret`, which the
    // kernel would single-step), each an emulated `call` or `jmp`.
    let probes = rows(&out, "probes");
    let loader: Vec<_> = probes
        .iter()
        .filter(|p| p.s("function") == Some("_dl_debug_state"))
        .map(|p| (p.s("status"), p.s("mechanism"), p.get("single_step")))
        .collect();
    assert_eq!(
        loader,
        [(Some("attached"), Some("uprobe_calls"), Some(&Val::B(false)))],
        "the loader's probe"
    );
}

/// NetCDF's untyped transfers (`nc_put_vara`, as Python's netCDF4 makes them) move the
/// variable's own type: known from nc_def_var for a file created, from nc_inq_vartype and
/// nc_inq_varndims for one opened; the H5Dwrite beneath moves as much. Reads of an opened file's
/// variable whose rank nobody asked take what the H5Dread beneath moved, which is known
/// because NetCDF identifies the variable's type with H5Tequal.
/// Ground truth: tests/workloads/netcdf_untyped.c.
#[test]
fn untyped_netcdf_transfers_move_the_variables_type() {
    require_root();
    let dir = scratch("netcdf_untyped");
    let exe = netcdf_workload(&dir, "netcdf_untyped");
    let out = dir.join("out");
    let res = run(common::recording("netcdf,hdf5", &out)
        .arg(&exe)
        .arg(dir.join("untyped.nc")));
    assert!(res.status.success(), "{:?}", res.status);
    let mut calls = rows(&out, "calls");
    // In the order the calls began: a call id is unique, not ordered across CPUs.
    calls.sort_by_key(|c| c.i("ts_begin_ns"));
    let transfers: Vec<(&str, Option<i64>)> = calls
        .iter()
        .filter(|c| c.s("layer") == Some("netcdf"))
        .filter(|c| matches!(c.s("op"), Some("read" | "write")))
        .map(|c| (c.s("function").unwrap(), c.i("bytes_result")))
        .collect();
    assert_eq!(
        transfers,
        [
            ("nc_put_vara", Some(1600)),
            ("nc_put_vars", Some(400)),
            ("nc_put_var1", Some(8)),
            ("nc_put_var", Some(20)),
            // An opened file's variable whose rank was not asked yet: the H5Dread beneath.
            ("nc_get_vara_double", Some(1600)),
            ("nc_get_vara", Some(1600)),
            ("nc_get_var1_double", Some(8)),
            ("nc_get_vara", Some(20)),
            ("nc_get_vara_short", Some(20)),
        ]
    );
    // nc_get_vara_double (`mov $6,%r9d; jmp`) is probed at its emulated jmp;
    // nc_get_var1_double moves an argument register before its jmp and stays single-stepped.
    let probes = rows(&out, "probes");
    assert_eq!(single_step(&probes, "nc_get_vara_double"), Some(false));
    assert_eq!(single_step(&probes, "nc_get_var1_double"), Some(true));
    // Each moved through one HDF5 transfer of as many bytes.
    for nc in calls.iter().filter(|c| {
        c.s("layer") == Some("netcdf")
            && matches!(c.s("op"), Some("read" | "write"))
            && c.i("depth") == Some(0)
    }) {
        let below = descendants(&calls, nc.i("call_id").unwrap());
        let h5: Vec<Option<i64>> = below
            .iter()
            .filter(|c| matches!(c.s("function"), Some("H5Dwrite" | "H5Dread")))
            .map(|c| c.i("bytes_result"))
            .collect();
        assert_eq!(h5, [nc.i("bytes_result")], "{:?}", nc.s("function"));
    }
}

/// Direct chunk I/O: each H5Dwrite_chunk moves the chunk it was given, at the chunk offset
/// given (`dims`), through one pwrite of it beneath; each H5Dread_chunk reads that chunk back
/// from the same place. The fourth write is libhdf5_hl's H5DOwrite_chunk, whose
/// H5Dwrite_chunk is a row of its own. Ground truth: tests/workloads/hdf5_chunks.c.
#[test]
fn hdf5_direct_chunk_writes_and_reads_are_rows_with_their_chunks() {
    require_root();
    let dir = scratch("hdf5_chunks");
    let exe = build_c(
        "h5pcc",
        "hdf5_chunks.c",
        &dir.join("hdf5_chunks"),
        &["-shlib", "-lhdf5_hl"],
    );
    let out = dir.join("out");
    let file = dir.join("chunks.h5");
    let res = run(common::recording("posix,hdf5", &out).arg(&exe).arg(&file));
    assert!(res.status.success(), "{:?}", res.status);
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(!stderr.contains("not attached"), "{stderr}");
    let mut calls = rows(&out, "calls");
    calls.sort_by_key(|c| c.i("ts_begin_ns"));
    let dataset = calls
        .iter()
        .find(|c| c.s("function") == Some("H5Dcreate2"))
        .and_then(|c| c.i("handle_id"))
        .expect("H5Dcreate2 makes the dataset's handle");
    let (writes, reads) = (
        calls_of(&calls, "H5Dwrite_chunk"),
        calls_of(&calls, "H5Dread_chunk"),
    );
    let at = [[0, 0], [0, 16], [16, 0], [16, 16]];
    assert_eq!((writes.len(), reads.len()), (4, 4));
    for (i, (w, r)) in writes.iter().zip(&reads).enumerate() {
        for c in [w, r] {
            assert_eq!(c.i("handle_id"), Some(dataset), "{i}");
            assert_eq!(c.list_i("dims"), at[i], "{i}: the chunk's offset");
            assert_eq!(c.i("ret"), Some(0), "{i}");
        }
        assert_eq!(
            (w.s("op"), w.i("bytes_requested"), w.i("bytes_result")),
            (Some("write"), Some(256), Some(256)),
            "{i}"
        );
        assert_eq!(
            (r.s("op"), r.i("bytes_requested"), r.i("bytes_result")),
            (Some("read"), None, None),
            "{i}: a chunk read names no size"
        );
        // The chunk itself, one syscall beneath each; read back from where it was written.
        let moved = |c: &Row, f: &str| -> Vec<(i64, i64)> {
            descendants(&calls, c.i("call_id").unwrap())
                .iter()
                .filter(|d| d.s("function") == Some(f))
                .map(|d| (d.i("offset").unwrap(), d.i("bytes_result").unwrap()))
                .collect()
        };
        let (pwrite, pread) = (moved(w, "pwrite64"), moved(r, "pread64"));
        assert_eq!(pwrite.len(), 1, "{i}: {pwrite:?}");
        assert_eq!(pwrite[0].1, 256, "{i}");
        assert_eq!(pread, pwrite, "{i}");
    }
    let hl = writes[3]
        .i("parent_id")
        .and_then(|p| calls.iter().find(|c| c.i("call_id") == Some(p)));
    assert!(
        hl.is_none(),
        "libhdf5_hl is not probed: the fourth write has no parent row"
    );
}

/// A serial HDF5 (Debian's `libhdf5_serial`, which h5dump and h5perf_serial use) is probed as
/// the parallel builds are. It has no MPI-IO property functions: their probes are `absent`
/// there, with the reason, and no warning. Ground truth: h5perf_serial writing a 256 KiB
/// dataset through a 64 KiB buffer, four H5Dwrites of 64 KiB.
#[test]
fn a_serial_hdf5_is_probed_without_warnings_for_what_only_parallel_builds_have() {
    require_root();
    let dir = scratch("hdf5_serial");
    let out = dir.join("out");
    let res = run(common::recording("posix,hdf5", &out)
        .args([
            "h5perf_serial",
            "-A",
            "hdf5",
            "-w",
            "-e",
            "256K",
            "-x",
            "64K",
            "-i",
            "1",
        ])
        .current_dir(&dir));
    assert!(res.status.success(), "{:?}", res.status);
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(!stderr.contains("not attached"), "{stderr}");
    let writes: Vec<Option<i64>> = rows(&out, "calls")
        .iter()
        .filter(|c| c.s("function") == Some("H5Dwrite"))
        .map(|c| c.i("bytes_result"))
        .collect();
    assert_eq!(writes, [Some(65536); 4]);
    let serial: Vec<Row> = rows(&out, "probes")
        .into_iter()
        .filter(|p| p.s("target").is_some_and(|t| t.contains("libhdf5_serial")))
        .collect();
    let status = |f: &str| {
        serial
            .iter()
            .find(|p| p.s("function") == Some(f))
            .map(|p| {
                (
                    p.s("status").unwrap().to_string(),
                    p.s("reason").map(str::to_string),
                )
            })
            .unwrap_or_else(|| panic!("no probe row for {f} in libhdf5_serial"))
    };
    assert_eq!(status("H5Dwrite"), ("attached".into(), None));
    for f in ["H5Pset_fapl_mpio", "H5Pset_dxpl_mpio"] {
        let (st, reason) = status(f);
        assert_eq!(st, "absent", "{f}");
        assert!(
            reason
                .as_deref()
                .is_some_and(|r| r.contains("only in parallel builds")),
            "{f}: {reason:?}"
        );
    }
}

/// hdf5_links.c's N: doubles in its dataset.
const N_LINKS: i64 = 1000;

/// Links and copies made inside a file, by the 1.8 API and the 1.6 one h5py calls: each call
/// is one row on the file's handle, named by the name it acts on at that location (the new
/// link's for H5Lcreate_* and H5Glink2), its other names in `strs`. H5Ocopy reads the dataset's data back from where its write put it and writes it
/// again elsewhere in the file, beneath the H5Ocopy (h5py's `group.copy` did that with no
/// HDF5 call above it). Ground truth: tests/workloads/hdf5_links.c.
#[test]
fn hdf5_links_and_copies_are_calls_on_their_file() {
    let (calls, _, file_id, _) = record_h5pcc_at("posix,hdf5", "hdf5_links", "links.h5", N_LINKS);
    let hdf5: Vec<&str> = calls
        .iter()
        .filter(|c| c.s("layer") == Some("hdf5"))
        .filter_map(|c| c.s("function"))
        .collect();
    assert_eq!(
        hdf5,
        [
            "H5Fcreate",
            "H5Screate_simple",
            "H5Dcreate2",
            "H5Dwrite",
            "H5Dclose",
            "H5Sclose",
            "H5Ocopy",
            "H5Lcreate_soft",
            "H5Lcreate_hard",
            "H5Lcreate_external",
            "H5Lmove",
            "H5Lcopy",
            "H5Ldelete",
            "H5Glink2",
            "H5Gmove2",
            "H5Gunlink",
            "H5Ldelete_by_idx",
            "H5Fclose",
        ]
    );
    let file_handle = one_call(&calls, "H5Fcreate").i("handle_id");
    for (f, path, strs) in [
        ("H5Ocopy", "d", &["copy"][..]),
        ("H5Lcreate_soft", "soft", &["/d"]),
        ("H5Lcreate_hard", "hard", &["d"]),
        ("H5Lcreate_external", "ext", &["other.h5", "/x"]),
        ("H5Lmove", "copy", &["moved"]),
        ("H5Lcopy", "moved", &["copied"]),
        ("H5Ldelete", "hard", &[]),
        ("H5Glink2", "hard2", &["d"]),
        ("H5Gmove2", "hard2", &["hard3"]),
        ("H5Gunlink", "hard3", &[]),
        ("H5Ldelete_by_idx", ".", &[]),
    ] {
        let c = one_call(&calls, f);
        assert_eq!(
            (
                c.i("handle_id"),
                c.i("file_id"),
                c.s("path"),
                c.list_s("strs"),
                c.i("ret"),
                c.i("depth")
            ),
            (
                file_handle,
                Some(file_id),
                Some(path),
                strs.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                Some(0),
                Some(0)
            ),
            "{f}"
        );
    }
    // The first call of `f` beneath `parent` moving the dataset's bytes on the file.
    let moving = |f: &str, parent: Option<i64>| {
        calls
            .iter()
            .find(|c| {
                c.s("function") == Some(f)
                    && c.i("parent_id") == parent
                    && c.i("file_id") == Some(file_id)
                    && c.i("bytes_result") == Some(N_LINKS * 8)
            })
            .unwrap_or_else(|| panic!("{f} of the data beneath {parent:?}"))
    };
    // The data's write: beneath the H5Dclose that flushed it.
    let data = moving("pwrite64", one_call(&calls, "H5Dclose").i("call_id"));
    let copy = one_call(&calls, "H5Ocopy").i("call_id");
    let read = moving("pread64", copy);
    assert_eq!(
        read.i("offset"),
        data.i("offset"),
        "read where it was written"
    );
    let again = moving("pwrite64", copy);
    assert_ne!(again.i("offset"), data.i("offset"), "written elsewhere");
}

/// Datasets opened through an external link (tests/workloads/hdf5_external.c: FILE's link
/// "ext" leads to target.h5:/x): HDF5 opens target.h5 beneath H5Dopen2 and again beneath
/// H5Oopen. Each object is on target.h5, where its data is written and read, and is a child
/// of FILE's handle, through which it was opened; before, both were on FILE.
#[test]
fn a_dataset_opened_through_an_external_link_is_on_the_file_it_leads_to() {
    let n = 10_000;
    let (calls, handles, file_id, _) = record_h5pcc_at("posix,hdf5", "hdf5_external", "main.h5", n);
    let file_id = Some(file_id);
    let creates = calls_of(&calls, "H5Fcreate");
    let created =
        |name: &str| (creates.iter()).find(|c| c.s("path").is_some_and(|p| p.ends_with(name)));
    let main = created("/main.h5").and_then(|c| c.i("handle_id"));
    let target_id = created("/target.h5").and_then(|c| c.i("file_id"));
    assert!(
        main.is_some() && target_id.is_some() && target_id != file_id,
        "{creates:?}"
    );
    for (open, transfer, op) in [
        ("H5Dopen2", "H5Dwrite", "write"),
        ("H5Oopen", "H5Dread", "read"),
    ] {
        let object = one_call(&calls, open);
        let h = by_id(&handles, "handle_id", object.i("handle_id"));
        assert_eq!(
            (
                object.i("file_id"),
                h.i("file_id"),
                h.i("parent_handle_id"),
                h.s("path")
            ),
            (target_id, target_id, main, Some("ext")),
            "{open}"
        );
        let t = one_call(&calls, transfer);
        assert_eq!(
            (t.i("handle_id"), t.i("file_id"), t.i("bytes_result")),
            (object.i("handle_id"), target_id, Some(4 * n)),
            "{transfer}"
        );
        // The data itself moved on target.h5, beneath a call on the object (the write is
        // flushed by H5Dclose), through an fd the open made beneath it.
        let data: Vec<&Row> = (calls.iter())
            .filter(|c| c.s("layer") == Some("posix") && c.s("op") == Some(op))
            .filter(|c| c.i("bytes_result") == Some(4 * n))
            .collect();
        assert_eq!(data.len(), 1, "{op}: {data:?}");
        let above = by_id(&calls, "call_id", data[0].i("parent_id"));
        let fd = by_id(&handles, "handle_id", data[0].i("handle_id"));
        assert_eq!(
            (
                data[0].i("file_id"),
                above.i("handle_id"),
                fd.i("parent_handle_id")
            ),
            (target_id, object.i("handle_id"), object.i("handle_id")),
            "{op}"
        );
    }
}

/// hdf5_queries.c's N: datasets in its group (past 8, its links are kept in dense storage,
/// which a question about one of them reads).
const N_QUERIES: i64 = 60;

/// Questions asked of a file (h5py's `in`, `len`, the type of what it opens), named datatypes
/// and the start of SWMR writing: each a row on the handle it was asked of, named by the name
/// it asks about, with its answer (1 or 0 for the existence tests). What HDF5 reads, writes
/// and locks to answer them is beneath them: no read, write or lock of the file is outside an
/// HDF5 call. Ground truth: tests/workloads/hdf5_queries.c.
#[test]
fn hdf5_questions_named_types_and_swmr_are_calls_on_their_file() {
    let (calls, handles, file_id, _) =
        record_h5pcc_at("posix,hdf5", "hdf5_queries", "queries.h5", N_QUERIES);
    let opens = calls_of(&calls, "H5Fopen");
    assert_eq!(opens.len(), 2, "read-only, then for SWMR writing");
    let (asked_of, swmr) = (opens[0].i("handle_id"), opens[1].i("handle_id"));
    // The calls on the file read-only: the questions, in the program's order, then its close.
    let asked: Vec<&Row> = calls
        .iter()
        .filter(|c| c.s("layer") == Some("hdf5") && c.i("handle_id") == asked_of)
        .skip(1)
        .collect();
    let expected: [(&str, Option<&str>, &[&str], i64); 13] = [
        ("H5Lexists", Some("g/d3"), &[], 1),
        ("H5Lexists", Some("g/none"), &[], 0),
        ("H5Oexists_by_name", Some("g/d3"), &[], 1),
        ("H5Aexists", Some("a"), &[], 1),
        ("H5Aexists_by_name", Some("a"), &["g"], 0),
        ("H5Gget_info", None, &[], 0),
        ("H5Gget_info_by_name", Some("g"), &[], 0),
        ("H5Oget_info1", None, &[], 0),
        ("H5Oget_info2", None, &[], 0),
        ("H5Oget_info_by_name1", Some("t"), &[], 0),
        ("H5Oget_info_by_name2", Some("g/d1"), &[], 0),
        ("H5Oget_info_by_idx2", Some("g"), &[], 0),
        ("H5Fclose", None, &[], 0),
    ];
    let row = |c: &Row| {
        (
            c.s("function").map(str::to_string),
            c.s("path").map(str::to_string),
            c.list_s("strs"),
            c.i("ret"),
            c.i("file_id"),
            c.i("depth"),
        )
    };
    let want = |(f, path, strs, ret): (&str, Option<&str>, &[&str], i64)| {
        (
            Some(f.to_string()),
            path.map(str::to_string),
            strs.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            Some(ret),
            Some(file_id),
            Some(0),
        )
    };
    assert_eq!(
        asked.iter().map(|c| row(c)).collect::<Vec<_>>(),
        expected.map(want).to_vec()
    );
    // Nothing of the file cached at the first question: it reads the group's links.
    let reads_beneath = |c: &Row| {
        calls
            .iter()
            .filter(|p| p.i("parent_id") == c.i("call_id") && p.s("function") == Some("pread64"))
            .filter(|p| p.i("file_id") == Some(file_id) && p.i("bytes_result") > Some(0))
            .count()
    };
    assert!(
        reads_beneath(asked[0]) > 0,
        "the first H5Lexists reads the file"
    );

    let made_on = one_call(&calls, "H5Fcreate").i("handle_id");
    for (f, path) in [
        ("H5Tcommit2", Some("t")),
        ("H5Tcommit1", Some("t1")),
        ("H5Tcommit_anon", None),
    ] {
        let c = one_call(&calls, f);
        assert_eq!(c.i("handle_id"), made_on, "{f}");
        assert_eq!(row(c), want((f, path, &[], 0)), "{f}");
    }
    // Named datatypes opened from the read-only file: handles on it, closed by H5Tclose
    // (every other H5Tclose, of a transient type, closes no handle).
    let tcloses = calls_of(&calls, "H5Tclose");
    let closes_of: Vec<&Row> = tcloses
        .iter()
        .copied()
        .filter(|c| c.i("handle_id").is_some())
        .collect();
    assert_eq!(closes_of.len(), 2, "{tcloses:?}");
    for ((f, name), close) in [("H5Topen2", "t"), ("H5Topen1", "t1")]
        .iter()
        .zip(closes_of)
    {
        let open = one_call(&calls, f);
        let h = by_id(&handles, "handle_id", open.i("handle_id"));
        assert_eq!(h.s("kind"), Some("hid"), "{f}");
        assert_eq!(h.i("created_by_call_id"), open.i("call_id"), "{f}");
        assert_eq!(
            h.i("parent_handle_id"),
            asked_of,
            "{f}: opened from the file"
        );
        assert_eq!(
            (h.s("path"), open.s("path")),
            (Some(*name), Some(*name)),
            "{f}"
        );
        assert_eq!(h.i("file_id"), Some(file_id), "{f}");
        assert_eq!(close.i("handle_id"), h.i("handle_id"), "{f}: closed");
        assert_eq!(h.i("destroyed_by_call_id"), close.i("call_id"), "{f}");
    }

    // SWMR writing marks the superblock (at 0) and takes the file's lock again.
    let start = one_call(&calls, "H5Fstart_swmr_write");
    assert_eq!(start.i("handle_id"), swmr);
    assert_eq!(row(start), want(("H5Fstart_swmr_write", None, &[], 0)));
    let beneath: Vec<(&str, Option<i64>)> = calls
        .iter()
        .filter(|c| c.i("parent_id") == start.i("call_id") && c.i("file_id") == Some(file_id))
        .filter_map(|c| Some((c.s("function")?, c.i("offset"))))
        .collect();
    assert!(beneath.contains(&("pwrite64", Some(0))), "{beneath:?}");
    assert!(beneath.iter().any(|(f, _)| *f == "flock"), "{beneath:?}");

    let outside: Vec<&str> = calls
        .iter()
        .filter(|c| c.s("layer") == Some("posix") && c.i("file_id") == Some(file_id))
        .filter(|c| c.i("depth") == Some(0))
        .filter_map(|c| c.s("function"))
        .collect();
    assert_eq!(
        outside,
        Vec::<&str>::new(),
        "the file's calls outside HDF5's"
    );
}

/// hdf5_objects.c's N: ints in its dataset.
const N_OBJECTS: i64 = 1000;

/// Objects made and opened by the 1.6 API, by H5Oopen in its forms, attributes by name from
/// another object and by index: each call makes a `hid` handle under the handle of the object
/// it was opened from, named by the name it was given (none when opened by index or address),
/// closed by the close the program made, on the file; each transfer names the handle it went
/// through. A read into the native type of the dataset's type is sized by the program's
/// H5Tget_size; an attribute's write or read moves it whole (the elements HDF5 counts in its
/// dataspace, which strata reads at H5A__write's and H5A__read's calls of
/// H5S_get_simple_extent_npoints). An H5Idec_ref that leaves a reference closes nothing.
/// Ground truth: tests/workloads/hdf5_objects.c.
#[test]
fn hdf5_objects_opened_every_way_are_handles_their_calls_name() {
    let (calls, handles, file_id, _) = record_h5pcc("hdf5_objects", "objects.h5", N_OBJECTS);
    let handle = |c: &Row| by_id(&handles, "handle_id", c.i("handle_id"));
    // The calls of a function, in the order the program made them.
    let of = |f: &str| calls_of(&calls, f);
    let one = |f: &str| one_call(&calls, f);
    let made = |c: &Row| handle(c).i("handle_id");

    // (opener, the call that made the object it was opened from, its name, its close).
    let (fcreate, fopen) = (one("H5Fcreate"), one("H5Fopen"));
    let (gcreate, dcreate, oopen) = (one("H5Gcreate1"), one("H5Dcreate1"), one("H5Oopen"));
    let gopen = one("H5Gopen1");
    let aclose = of("H5Aclose");
    let oclose = of("H5Oclose");
    let mut expected: Vec<(&Row, &Row, Option<&str>, &Row)> = vec![
        (gcreate, fcreate, Some("g"), of("H5Gclose")[0]),
        (dcreate, gcreate, Some("d"), of("H5Dclose")[0]),
        (one("H5Acreate1"), dcreate, Some("a1"), aclose[0]),
        (one("H5Acreate_by_name"), fcreate, Some("a2"), aclose[1]),
        (oopen, fopen, Some("g/d"), oclose[0]),
        (one("H5Aopen_by_name"), fopen, Some("a2"), aclose[2]),
        (one("H5Aopen_by_idx"), oopen, None, aclose[3]),
        (one("H5Aopen_idx"), oopen, None, aclose[4]),
        (one("H5Aopen_name"), oopen, Some("a1"), aclose[5]),
        (gopen, fopen, Some("g"), of("H5Gclose")[1]),
        (one("H5Dopen1"), gopen, Some("d"), of("H5Dclose")[1]),
        (one("H5Oopen_by_idx"), fopen, None, oclose[1]),
    ];
    // HDF5 before 1.12 (this machine's 1.10) opens by address; later ones by token.
    let by_addr = of("H5Oopen_by_addr");
    if let [o] = by_addr[..] {
        expected.push((o, fopen, None, oclose[2]));
    }
    assert_eq!(oclose.len(), 2 + by_addr.len(), "{oclose:?}");
    assert_eq!(aclose.len(), 6);
    for (opener, from, name, close) in &expected {
        let f = opener.s("function").unwrap();
        let h = handle(opener);
        assert_eq!(h.s("kind"), Some("hid"), "{f}");
        assert_eq!(h.i("created_by_call_id"), opener.i("call_id"), "{f}");
        assert_eq!(h.i("parent_handle_id"), made(from), "{f}: opened from");
        assert_eq!(h.s("path"), *name, "{f}: its name");
        assert_eq!(opener.s("path"), *name, "{f}");
        assert_eq!(h.i("file_id"), Some(file_id), "{f}");
        assert_eq!(
            close.i("handle_id"),
            h.i("handle_id"),
            "{f}: closed by {close:?}"
        );
        assert_eq!(h.i("destroyed_by_call_id"), close.i("call_id"), "{f}");
    }
    // The file's id taken again (H5Iget_file_id, not a close's business) and given back by
    // H5Idec_ref, which says one reference is left: the file stays open until H5Fclose.
    let dec = one("H5Idec_ref");
    assert_eq!((dec.i("ret"), dec.i("handle_id")), (Some(1), made(fopen)));
    assert_eq!(
        handle(fopen).i("destroyed_by_call_id"),
        of("H5Fclose")[1].i("call_id")
    );
    // The object an attribute was named from is in `strs`.
    for f in ["H5Acreate_by_name", "H5Aopen_by_name"] {
        assert_eq!(one(f).list_s("strs"), ["g/d"], "{f}");
    }

    // Every transfer names the handle of the object it went through.
    let transfers = |f: &str| -> Vec<(Option<i64>, Option<i64>)> {
        of(f)
            .iter()
            .map(|c| (c.i("handle_id"), c.i("file_id")))
            .collect()
    };
    let on = |c: &Row| (made(c), Some(file_id));
    let mut dread = vec![on(oopen), on(one("H5Dopen1")), on(one("H5Oopen_by_idx"))];
    dread.extend(by_addr.iter().map(|c| on(c)));
    assert_eq!(transfers("H5Dread"), dread);
    let aread: Vec<_> = expected[5..9].iter().map(|(o, ..)| on(o)).collect();
    assert_eq!(transfers("H5Aread"), aread);
    // N ints each: through H5T_NATIVE_INT, and through the native type the program sized.
    for r in of("H5Dread") {
        assert_eq!(r.i("bytes_result"), Some(N_OBJECTS * 4), "{r:?}");
    }
    assert_eq!(one("H5Tget_size").i("ret"), Some(4));
    // "a1" is one int, "a2" one double: written in that order, read as a2, a1, a2, a1.
    let bytes = |f: &str| -> Vec<(Option<i64>, Option<i64>)> {
        of(f)
            .iter()
            .map(|c| (c.i("bytes_requested"), c.i("bytes_result")))
            .collect()
    };
    let moved = |b: &[i64]| -> Vec<_> { b.iter().map(|b| (Some(*b), Some(*b))).collect() };
    assert_eq!(bytes("H5Awrite"), moved(&[4, 8]));
    assert_eq!(bytes("H5Aread"), moved(&[8, 4, 8, 4]));
}

/// hdf5_iterate.c's N: ints in dataset "a" ("b" holds twice as many).
const N_ITERATE: i64 = 1000;

/// Datasets a callback opens from the id HDF5 made for an iteration (H5Literate over a group,
/// H5Lvisit_by_name from the file), an id no probed call returned: each is a handle on the
/// file, under the handle the iteration went over, and the calls on it (its open, read and
/// close, all inside the iteration) name the handle and the file. Ground truth:
/// tests/workloads/hdf5_iterate.c, which prints each id its callbacks were given.
#[test]
fn datasets_opened_in_an_iterations_callback_are_on_its_file() {
    let (calls, handles, file_id, res) = record_h5pcc("hdf5_iterate", "iterate.h5", N_ITERATE);
    let given: Vec<i64> = String::from_utf8_lossy(&res.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("loc ")?.parse().ok())
        .collect();
    assert_eq!(given.len(), 4, "{given:?}");
    let handle = |c: &Row| by_id(&handles, "handle_id", c.i("handle_id"));
    let of = |f: &str| calls_of(&calls, f);
    let one = |f: &str| one_call(&calls, f);
    // No probed call returned an id a callback was given.
    for c in &calls {
        assert!(!given.contains(&c.i("ret").unwrap_or(-1)), "{c:?}");
    }
    let reopen = of("H5Fopen");
    assert_eq!(reopen.len(), 1);
    let (literate, visit) = (one("H5Literate"), one("H5Lvisit_by_name"));
    let group = one("H5Gopen2");
    assert_eq!(literate.i("handle_id"), handle(group).i("handle_id"));
    assert_eq!(visit.i("handle_id"), handle(reopen[0]).i("handle_id"));
    assert_eq!(visit.s("path"), Some("/"));
    let opens: Vec<&Row> = of("H5Dopen2")
        .into_iter()
        .filter(|c| c.i("ts_begin_ns") > reopen[0].i("ts_begin_ns"))
        .collect();
    let (reads, closes) = (of("H5Dread"), of("H5Dclose"));
    assert_eq!((opens.len(), reads.len()), (4, 4), "{opens:?}");
    let closes = &closes[closes.len() - 4..];
    let expected = [
        (literate, group, "a", 1),
        (literate, group, "b", 2),
        (visit, reopen[0], "g/a", 1),
        (visit, reopen[0], "g/b", 2),
    ];
    for (i, (iteration, over, name, ints)) in expected.into_iter().enumerate() {
        let (open, read, close) = (opens[i], reads[i], closes[i]);
        assert_eq!(open.i("parent_id"), iteration.i("call_id"), "{name}");
        assert_eq!(
            open.list_i("args")[0],
            given[i],
            "{name}: from the id given"
        );
        assert_eq!(open.s("path"), Some(name));
        let h = handle(open);
        assert_eq!(h.s("kind"), Some("hid"), "{name}");
        assert_eq!(h.i("created_by_call_id"), open.i("call_id"), "{name}");
        assert_eq!(h.i("destroyed_by_call_id"), close.i("call_id"), "{name}");
        assert_eq!(h.s("path"), Some(name), "{name}");
        assert_eq!(h.i("file_id"), Some(file_id), "{name}");
        assert_eq!(
            h.i("parent_handle_id"),
            handle(over).i("handle_id"),
            "{name}: under what the iteration went over"
        );
        for c in [open, read, close] {
            assert_eq!(c.i("parent_id"), iteration.i("call_id"), "{c:?}");
            assert_eq!(c.i("handle_id"), h.i("handle_id"), "{c:?}");
            assert_eq!(c.i("file_id"), Some(file_id), "{c:?}");
        }
        assert_eq!(read.i("bytes_result"), Some(ints * N_ITERATE * 4), "{name}");
    }
}

/// A program linked against a build of HDF5 that probes.toml does not name (Debian's serial
/// one, as h5ls and h5dump are), started by a shell, so that the start-up search for what the
/// command loads does not see it: the build is in the loader's cache, probed from the start,
/// and the program's calls are all rows from its first. Ground truth:
/// tests/workloads/hdf5_iterate.c.
#[test]
fn a_build_of_hdf5_a_script_runs_is_probed_from_its_first_call() {
    require_root();
    let dir = scratch("hdf5_serial_script");
    let serial = "/usr/lib/x86_64-linux-gnu/libhdf5_serial.so.103";
    let exe = build_c(
        "mpicc",
        "hdf5_iterate.c",
        &dir.join("hdf5_iterate_serial"),
        &["-I/usr/include/hdf5/openmpi", serial],
    );
    let ldd = std::process::Command::new("ldd")
        .arg(&exe)
        .output()
        .unwrap();
    let ldd = String::from_utf8_lossy(&ldd.stdout);
    assert!(ldd.contains("libhdf5_serial.so.103"), "{ldd}");
    assert!(!ldd.contains("libhdf5_openmpi"), "{ldd}");
    let out = dir.join("out");
    let file = dir.join("serial.h5");
    let res = run(common::recording("hdf5", &out).args([
        "sh",
        "-c",
        &format!("{} {} {N_ITERATE}", exe.display(), file.display()),
    ]));
    assert!(res.status.success(), "{:?}", res.status);
    assert_iterate_calls_all_recorded(&out);
    let probes = rows(&out, "probes");
    assert!(
        probes.iter().any(|p| p.s("function") == Some("H5Fcreate")
            && p.s("target")
                .is_some_and(|t| t.ends_with("/libhdf5_serial.so.103"))
            && p.s("status") == Some("attached")),
        "probed in the serial build"
    );
}

/// The hdf5_iterate run recorded in `out` has every HDF5 call the program makes, from its
/// first (H5Fcreate).
fn assert_iterate_calls_all_recorded(out: &std::path::Path) {
    let mut calls = rows(out, "calls");
    calls.sort_by_key(|c| c.i("ts_begin_ns"));
    assert_eq!(
        calls.first().and_then(|c| c.s("function")),
        Some("H5Fcreate"),
        "the program's first HDF5 call is recorded"
    );
    let count = |f: &str| calls_of(&calls, f).len();
    let counts: Vec<usize> = [
        "H5Fcreate",
        "H5Gcreate2",
        "H5Dcreate2",
        "H5Dwrite",
        "H5Fopen",
        "H5Gopen2",
        "H5Literate",
        "H5Lvisit_by_name",
        "H5Dopen2",
        "H5Dread",
        "H5Dclose",
        "H5Gclose",
        "H5Fclose",
    ]
    .iter()
    .map(|f| count(f))
    .collect();
    assert_eq!(counts, [1, 1, 2, 2, 1, 1, 1, 1, 4, 4, 6, 2, 2]);
}

/// `strata record -q --layers hdf5 -o OUT --` with a probes.toml (written in `dir`) without
/// the loader's report: only the search at each exec can find a library a program loads at
/// start. The traced command follows.
fn hdf5_without_loader_report(
    dir: &std::path::Path,
    out: &std::path::Path,
) -> std::process::Command {
    let probes = dir.join("probes.toml");
    std::fs::write(&probes, common::without_probe("_dl_debug_state")).unwrap();
    let mut cmd = common::strata();
    cmd.args(["record", "-q", "--layers", "hdf5", "--probes"])
        .arg(&probes)
        .arg("-o")
        .arg(out)
        .arg("--");
    cmd
}

/// A build of HDF5 in a directory that a job script puts on its LD_LIBRARY_PATH (a module
/// tree), which neither ld.so.cache nor the traced command (the shell) names: found at the
/// program's exec, from the program and the environment it was started with, and probed
/// before its first call. The loader's report, which would find the build once it is mapped,
/// is left out of probes.toml here, so that nothing else can; the program waits 300 ms
/// before its first call, so that the test does not hang on how fast strata is (measured
/// without the wait: every call in 8 of 8 runs, against 0 to 31 of 32 before).
#[test]
fn a_module_trees_hdf5_on_a_scripts_library_path_is_probed_at_exec() {
    require_root();
    let dir = scratch("hdf5_module_tree");
    let lib_dir = dir.join("modules/hdf5/1.10/lib");
    std::fs::create_dir_all(&lib_dir).unwrap();
    let serial = "/usr/lib/x86_64-linux-gnu/libhdf5_serial.so.103";
    std::fs::copy(serial, lib_dir.join("libhdf5_serial.so.103")).unwrap();
    let exe = build_c(
        "mpicc",
        "hdf5_iterate.c",
        &dir.join("hdf5_iterate_module"),
        &["-I/usr/include/hdf5/openmpi", serial],
    );
    let out = dir.join("out");
    let file = dir.join("module.h5");
    let res = run(hdf5_without_loader_report(&dir, &out).args([
        "sh",
        "-c",
        &format!(
            "LD_LIBRARY_PATH={} {} {} {N_ITERATE} 300",
            lib_dir.display(),
            exe.display(),
            file.display()
        ),
    ]));
    assert!(res.status.success(), "{:?}", res.status);
    assert_iterate_calls_all_recorded(&out);
    let probes = rows(&out, "probes");
    let module_lib = lib_dir.join("libhdf5_serial.so.103");
    assert!(
        probes.iter().any(|p| p.s("function") == Some("H5Fcreate")
            && p.s("target") == module_lib.to_str()
            && p.s("status") == Some("attached")),
        "probed in the module tree's build"
    );
}

/// A job in a container started during the run, with the container's own HDF5: a chroot in a
/// private mount namespace (as Apptainer gives a job) whose loader cache, made by `ldconfig
/// -r`, names a copy of the serial HDF5 in a Spack view, /opt/view/lib, an absolute link to
/// /opt/hdf5/lib: paths the node does not have. Found at the program's exec through
/// /proc/<pid>/root, with the container's cache and the link followed inside the container,
/// and probed before its first call. As in the module tree's test, the loader's report is left out of
/// probes.toml and the program waits 300 ms before its first call (measured without the wait
/// and with the report: every call in 8 of 8 runs, against 17 to 32 of 32 before).
#[test]
fn a_containers_own_hdf5_is_probed_at_exec() {
    require_root();
    let dir = scratch("hdf5_container");
    let root = dir.join("root");
    // The node's /usr is bind-mounted into the container below.
    let dirs = ["etc", "opt/hdf5/lib", "opt/view/lib", "data"].map(std::path::Path::new);
    common::chroot_tree(&root, &dirs);
    let serial = "/usr/lib/x86_64-linux-gnu/libhdf5_serial.so.103";
    std::fs::copy(serial, root.join("opt/hdf5/lib/libhdf5_serial.so.103")).unwrap();
    std::os::unix::fs::symlink(
        "/opt/hdf5/lib/libhdf5_serial.so.103",
        root.join("opt/view/lib/libhdf5_serial.so.103"),
    )
    .unwrap();
    build_c(
        "mpicc",
        "hdf5_iterate.c",
        &root.join("job/hdf5_iterate"),
        &["-I/usr/include/hdf5/openmpi", serial],
    );
    std::fs::write(
        root.join("etc/ld.so.conf"),
        "/opt/view/lib\n/usr/lib/x86_64-linux-gnu\n",
    )
    .unwrap();
    let mount_usr = format!("mount --rbind /usr {}/usr", root.display());
    let cached = run(std::process::Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(format!("{mount_usr} && ldconfig -r {}", root.display())));
    assert!(cached.status.success(), "ldconfig -r: {cached:?}");
    let out = dir.join("out");
    let res = run(hdf5_without_loader_report(&dir, &out)
        .args(["unshare", "--mount", "--propagation", "private", "sh", "-c"])
        .arg(format!(
            "{mount_usr} && exec chroot {} /job/hdf5_iterate /data/c.h5 {N_ITERATE} 300",
            root.display()
        )));
    assert!(res.status.success(), "{:?}", res.status);
    assert_iterate_calls_all_recorded(&out);
    let calls = rows(&out, "calls");
    let create = calls_of(&calls, "H5Fcreate");
    assert_eq!(
        create[0].s("path"),
        Some("/data/c.h5"),
        "as the job names it"
    );
    let files = rows(&out, "files");
    let file = by_id(&files, "file_id", create[0].i("file_id"));
    assert_eq!(
        file.s("path"),
        root.join("data/c.h5").to_str(),
        "as the node does"
    );
    let probes = rows(&out, "probes");
    assert!(
        probes.iter().any(|p| p.s("function") == Some("H5Fcreate")
            && p.s("target") == Some("/opt/view/lib/libhdf5_serial.so.103")
            && p.s("status") == Some("attached")),
        "probed in the container's build, named as the job sees it"
    );
}

/// netcdf_read.c's N: doubles in each variable.
const N_READ: i64 = 1000;

/// A NetCDF-4 file read back: nc_open finds its variables by iterating the file's group
/// (H5Literate), opens each dataset by H5Oopen from an id HDF5 made for the iteration (strata
/// never sees it made),
/// keeps it with H5Iinc_ref and closes it once with H5Oclose. Each nc_get_vara's H5Dread still
/// names that dataset's handle, on the file, under the ncid nc_open made; the handle lives until
/// nc_close's H5Dclose; and the POSIX reads beneath are on the same file. Ground truth:
/// tests/workloads/netcdf_read.c.
#[test]
fn netcdf_reads_name_the_datasets_nc_open_found() {
    require_root();
    let dir = scratch("netcdf_read");
    let exe = netcdf_workload(&dir, "netcdf_read");
    let out = dir.join("out");
    let file = dir.join("read.nc");
    let res = run(common::recording("posix,hdf5,netcdf", &out)
        .arg(&exe)
        .arg(&file)
        .arg(N_READ.to_string())
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"));
    assert!(res.status.success(), "{:?}", res.status);
    let mut calls = rows(&out, "calls");
    calls.sort_by_key(|c| c.i("ts_begin_ns"));
    let handles = rows(&out, "handles");
    let handle = |id| by_id(&handles, "handle_id", id);
    let call = |id| by_id(&calls, "call_id", id);
    let file_id = common::file_id_of(&out, &file);
    let of = |f: &str| calls_of(&calls, f);
    let (open, close) = (of("nc_open"), of("nc_close"));
    assert_eq!((open.len(), close.len()), (1, 2));
    let ncid = open[0].i("handle_id");
    // Everything nc_open does on a handle is on the file it opens: the reads of the
    // attributes of the datasets it finds too, made before nc_open returns.
    let beneath = descendants(&calls, open[0].i("call_id").unwrap());
    let on_handles: Vec<&&Row> = beneath
        .iter()
        .filter(|c| c.i("handle_id").is_some())
        .collect();
    let attribute_reads = on_handles
        .iter()
        .filter(|c| c.s("function") == Some("H5Aread"));
    assert!(
        attribute_reads.count() > 0,
        "no attribute read beneath nc_open"
    );
    for c in on_handles {
        assert_eq!(c.i("file_id"), Some(file_id), "beneath nc_open: {c:?}");
        assert_eq!(
            handle(c.i("handle_id")).i("file_id"),
            Some(file_id),
            "{c:?}"
        );
    }
    let gets = of("nc_get_vara_double");
    assert_eq!(gets.len(), 2);
    // The first half of "v", then all of "x".
    for (get, (var, doubles)) in gets.iter().zip([("v", N_READ / 2), ("x", N_READ)]) {
        assert_eq!(get.i("bytes_result"), Some(doubles * 8), "{var}");
        let below = descendants(&calls, get.i("call_id").unwrap());
        let reads: Vec<&&Row> = below
            .iter()
            .filter(|c| c.s("function") == Some("H5Dread"))
            .collect();
        assert_eq!(reads.len(), 1, "{var}: {reads:?}");
        let read = reads[0];
        assert_eq!(read.i("bytes_result"), Some(doubles * 8), "{var}");
        assert_eq!(read.i("file_id"), Some(file_id), "{var}");
        let dataset = handle(read.i("handle_id"));
        assert_eq!(dataset.s("kind"), Some("hid"), "{var}");
        assert_eq!(dataset.s("path"), Some(var), "{var}");
        assert_eq!(dataset.i("file_id"), Some(file_id), "{var}");
        assert_eq!(
            dataset.i("parent_handle_id"),
            ncid,
            "{var}: under nc_open's ncid"
        );
        let made = call(dataset.i("created_by_call_id"));
        assert_eq!(made.s("function"), Some("H5Oopen"), "{var}");
        // In the callback of nc_open's iteration over the group.
        let iteration = call(made.i("parent_id"));
        assert_eq!(iteration.s("function"), Some("H5Literate"), "{var}");
        assert_eq!(iteration.i("parent_id"), open[0].i("call_id"), "{var}");
        let ended = call(dataset.i("destroyed_by_call_id"));
        assert_eq!(ended.s("function"), Some("H5Dclose"), "{var}");
        assert_eq!(
            ended.i("parent_id"),
            close[1].i("call_id"),
            "{var}: at nc_close"
        );
        // HDF5 reads through its sieve buffer: at least the bytes asked, from the file.
        let posix: Vec<&&Row> = below
            .iter()
            .filter(|c| c.i("parent_id") == read.i("call_id") && c.s("op") == Some("read"))
            .collect();
        assert!(!posix.is_empty(), "{var}: no POSIX read under H5Dread");
        for p in posix {
            assert_eq!(p.i("file_id"), Some(file_id), "{var}");
        }
    }
}

/// h5py_objects.py's N: int32 values in its dataset, read back in 10 slices.
const N_H5PY: i64 = 10_000;

/// h5py as installed from its wheel, which brings its own HDF5 (another build, loaded when h5py
/// is imported): its objects are handles through the reads of the file read back, opened by
/// H5Oopen and closed by the H5Idec_ref h5py closes every id with; a dataset it makes with no
/// name and links afterwards is a handle on the file from its H5Dcreate_anon, named by its
/// H5Olink. Ground truth:
/// tests/workloads/h5py_objects.py.
#[test]
fn h5py_objects_are_handles_on_the_hdf5_its_wheel_brings() {
    require_root();
    let dir = scratch("h5py_objects");
    let out = dir.join("out");
    let file = dir.join("h5py.h5");
    let script = common::repo_root().join("tests/workloads/h5py_objects.py");
    let res = run(common::recording("posix,hdf5", &out)
        .arg("python3")
        .arg(&script)
        .arg(&file)
        .arg(N_H5PY.to_string()));
    assert!(
        res.status.success(),
        "{:?} (h5py comes with `cargo xtask setup`)",
        res.status
    );
    let wheel = rows(&out, "probes")
        .iter()
        .filter(|p| p.s("function") == Some("H5Dread") && p.s("status") == Some("attached"))
        .filter_map(|p| p.s("target").map(str::to_string))
        .find(|t| t.contains("/h5py.libs/libhdf5-"));
    assert!(wheel.is_some(), "H5Dread attached in the wheel's HDF5");

    let mut calls = rows(&out, "calls");
    calls.retain(|c| c.s("layer") == Some("hdf5"));
    calls.sort_by_key(|c| c.i("ts_begin_ns"));
    let handles = rows(&out, "handles");
    let handle = |id| by_id(&handles, "handle_id", id);
    let file_id = common::file_id_of(&out, &file);
    let opens = calls_of(&calls, "H5Fopen");
    assert_eq!(opens.len(), 1, "{opens:?}");
    let reopened = opens[0].i("handle_id");
    let found: Vec<&Row> = calls_of(&calls, "H5Oopen")
        .into_iter()
        .filter(|c| c.s("path") == Some("g/d"))
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    let dataset = handle(found[0].i("handle_id"));
    assert_eq!(dataset.i("parent_handle_id"), reopened);
    assert_eq!(dataset.i("file_id"), Some(file_id));

    let reads = calls_of(&calls, "H5Dread");
    assert_eq!(reads.len(), 10);
    for r in reads {
        assert_eq!(r.i("handle_id"), dataset.i("handle_id"), "{r:?}");
        assert_eq!(r.i("file_id"), Some(file_id), "{r:?}");
        assert_eq!(r.i("bytes_result"), Some(N_H5PY / 10 * 4), "{r:?}");
    }
    let attrs: Vec<&Row> = calls_of(&calls, "H5Aopen_by_name")
        .into_iter()
        .filter(|c| c.s("path") == Some("units"))
        .collect();
    assert_eq!(attrs.len(), 1, "{attrs:?}");
    assert_eq!(
        handle(attrs[0].i("handle_id")).i("parent_handle_id"),
        dataset.i("handle_id")
    );
    assert_eq!(calls_of(&calls, "H5Aread").len(), 1);

    // `f["anon"] = array`: a dataset made with no name on the file being written, written
    // whole, then linked into it by name.
    let created = calls_of(&calls, "H5Fcreate");
    assert_eq!(created.len(), 1, "{created:?}");
    let anon = calls_of(&calls, "H5Dcreate_anon");
    assert_eq!(anon.len(), 1, "{anon:?}");
    let made = handle(anon[0].i("handle_id"));
    assert_eq!(made.s("kind"), Some("hid"));
    assert_eq!(made.s("path"), Some("anon"), "named by its link");
    assert_eq!(made.i("parent_handle_id"), created[0].i("handle_id"));
    assert_eq!(made.i("file_id"), Some(file_id));
    assert_eq!(made.i("created_by_call_id"), anon[0].i("call_id"));
    let written: Vec<&Row> = calls_of(&calls, "H5Dwrite")
        .into_iter()
        .filter(|c| c.i("handle_id") == made.i("handle_id"))
        .collect();
    assert_eq!(written.len(), 1, "{written:?}");
    assert_eq!(written[0].i("file_id"), Some(file_id));
    assert_eq!(written[0].i("bytes_result"), Some(N_H5PY * 4));
    let linked = calls_of(&calls, "H5Olink");
    assert_eq!(linked.len(), 1, "{linked:?}");
    assert_eq!(linked[0].i("handle_id"), made.i("handle_id"));
    assert_eq!(linked[0].s("path"), Some("anon"));
    assert!(linked[0].i("ts_begin_ns") > written[0].i("ts_end_ns"));

    // Every HDF5 object of the job was closed by a call of its own; the dataset read back by
    // an H5Idec_ref on it.
    for h in handles.iter().filter(|h| h.s("kind") == Some("hid")) {
        assert!(h.i("destroyed_by_call_id").is_some(), "{h:?} not closed");
    }
    let closed = by_id(&calls, "call_id", dataset.i("destroyed_by_call_id"));
    assert_eq!(closed.s("function"), Some("H5Idec_ref"));
    assert_eq!(closed.i("handle_id"), dataset.i("handle_id"));
    // h5py takes the file's id again (H5Iget_file_id) and gives it back: the file read back
    // is closed by the call that dropped its last reference, not by one that left one.
    let file_closed = by_id(
        &calls,
        "call_id",
        handle(reopened).i("destroyed_by_call_id"),
    );
    assert_eq!(file_closed.i("ret"), Some(0), "{file_closed:?}");
}

/// A failed library call has the errno of the failure beneath it: the program's own errno
/// after the call where a syscall beneath failed (an fopen's ENOENT, an fread's EISDIR, an
/// H5Fopen's ENOENT, nc_open's ENOENT, which it also returns; MPI_File_open's EBADF, from the
/// close Open MPI makes after its open failed with ENOENT), 0 where none failed (an H5Fclose
/// of a closed id, an fputc glibc refuses without a syscall). A return that also means the
/// end of the input (fread's short count, fgetc's EOF) is no failure where nothing beneath
/// failed. Ground truth: tests/workloads/failures.c, which prints what it saw.
#[test]
fn a_failed_library_call_has_the_errno_of_the_failure_beneath_it() {
    require_root();
    let dir = scratch("failures");
    let exe = build_c(
        "h5pcc",
        "failures.c",
        &dir.join("failures"),
        &[
            "-shlib",
            "-I/usr/lib/x86_64-linux-gnu/netcdf/mpi/include",
            "-L/usr/lib/x86_64-linux-gnu/netcdf/mpi/lib",
            "-lnetcdf_mpi",
        ],
    );
    let work = dir.join("work");
    std::fs::create_dir(&work).unwrap();
    let out = dir.join("out");
    let res = run(common::recording("posix,stdio,mpiio,hdf5,netcdf", &out)
        .arg(&exe)
        .arg(&work)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"));
    assert!(res.status.success(), "{:?}", res.status);
    // What the program saw: "NAME N..." per call.
    let seen: HashMap<String, Vec<i64>> = String::from_utf8_lossy(&res.stdout)
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let name = w.next()?.to_string();
            Some((name, w.map(|v| v.parse().unwrap()).collect()))
        })
        .collect();
    let saw =
        |name: &str| seen.get(name).unwrap_or_else(|| panic!("{name}: {seen:?}"))[..].to_vec();

    let pid = common::workload_pid(&out, &exe);
    let mut calls: Vec<Row> = rows(&out, "calls")
        .into_iter()
        .filter(|c| c.i("pid") == Some(pid))
        .collect();
    calls.sort_by_key(|c| c.i("ts_begin_ns"));
    // The workload's own calls: from its fopen of the missing file on, at the top.
    let first = calls
        .iter()
        .position(|c| {
            c.s("function") == Some("fopen")
                && c.s("path").is_some_and(|p| p.ends_with("/missing/f"))
        })
        .expect("the fopen of the missing file");
    let own: Vec<&Row> = calls[first..]
        .iter()
        .filter(|c| c.i("depth") == Some(0) && c.s("layer") != Some("posix"))
        .collect();
    let failed: Vec<(&str, Option<i64>)> = own
        .iter()
        .filter(|c| c.i("errno").is_some())
        .map(|c| (c.s("function").unwrap(), c.i("errno")))
        .collect();
    let mpi = saw("MPI_File_open");
    assert_eq!(
        failed,
        [
            ("fopen", Some(saw("fopen")[0])),
            ("fread", Some(saw("fread")[0])),
            ("fputc", Some(0)),
            ("H5Fopen", Some(saw("H5Fopen")[0])),
            ("H5Fclose", Some(saw("H5Fclose")[0])),
            ("MPI_File_open", Some(mpi[1])),
            ("nc_open", Some(saw("nc_open")[0])),
        ],
        "the failed library calls and their errno"
    );
    // The program's own errno where a syscall beneath failed, 0 where none did.
    assert_eq!(
        (saw("fopen"), saw("fread"), saw("H5Fopen"), saw("nc_open")),
        (vec![2], vec![21], vec![2], vec![2])
    );
    assert_eq!((saw("H5Fclose"), mpi[1]), (vec![0], 9));
    // glibc's fputc refused with EBADF, and nothing beneath failed: strata cannot know why.
    assert_eq!(saw("fputc"), [9]);
    // Each errno is that of a failed call beneath, the last to fail; the reads at the end of
    // the 2-byte file and the H5Fclose failed nothing beneath.
    let last_failure_beneath = |f: &str, nth: usize| {
        let c = *own
            .iter()
            .filter(|c| c.s("function") == Some(f))
            .nth(nth)
            .unwrap_or_else(|| panic!("{f} #{nth}"));
        let mut below = descendants(&calls, c.i("call_id").unwrap());
        below.sort_by_key(|c| c.i("ts_end_ns"));
        let failures: Vec<(Option<&str>, Option<i64>, Option<&str>)> = below
            .iter()
            .filter(|b| b.i("errno").is_some_and(|e| e != 0))
            .map(|b| (b.s("function"), b.i("errno"), b.s("path")))
            .collect();
        (c, failures)
    };
    let name = |p: &str| Some(work.join(p).to_str().unwrap().to_string());
    let (_, f) = last_failure_beneath("fopen", 0);
    assert_eq!(f, [(Some("openat"), Some(2), name("missing/f").as_deref())]);
    let (read, f) = last_failure_beneath("fread", 0);
    assert_eq!(
        (read.i("ret"), f),
        (Some(0), vec![(Some("read"), Some(21), None)])
    );
    let (end, f) = last_failure_beneath("fread", 1);
    assert_eq!((end.i("ret"), end.i("errno"), f), (Some(2), None, vec![]));
    let (getc, f) = last_failure_beneath("fgetc", 0);
    assert_eq!(
        (getc.i("ret"), getc.i("errno"), f),
        (Some(-1), None, vec![])
    );
    let (putc, f) = last_failure_beneath("fputc", 0);
    assert_eq!((putc.i("ret"), f), (Some(-1), vec![]));
    let (_, f) = last_failure_beneath("H5Fopen", 0);
    assert_eq!(
        f.last(),
        Some(&(Some("openat"), Some(2), name("missing.h5").as_deref()))
    );
    let (closed, f) = last_failure_beneath("H5Fclose", 1);
    assert_eq!((closed.i("ret"), f), (Some(-1), vec![]));
    let (open, f) = last_failure_beneath("MPI_File_open", 0);
    let class_42_or_its_code = open.i("ret").unwrap();
    assert_ne!(
        class_42_or_its_code, 0,
        "MPI_ERR_NO_SUCH_FILE is class {}",
        mpi[0]
    );
    assert!(
        f.contains(&(Some("openat"), Some(2), name("missing.dat").as_deref())),
        "{f:?}"
    );
    assert_eq!(f.last().map(|l| (l.0, l.1)), Some((Some("close"), Some(9))));
    let (nc, f) = last_failure_beneath("nc_open", 0);
    assert_eq!(nc.i("ret"), Some(2), "a system error is a positive status");
    assert_eq!(
        f.last(),
        Some(&(Some("fopen"), Some(2), name("missing.nc").as_deref()))
    );

    // `strata report` lists them: the library layers' failures are the program's alone.
    let rep = run(strata().args(["report", "--format", "json"]).arg(&out));
    assert!(rep.status.success(), "{:?}", rep.status);
    let rep: serde_json::Value = serde_json::from_slice(&rep.stdout).expect("report JSON");
    let mut listed: Vec<(String, String, i64, String, i64)> = rep["summaries"]["failed_calls"]
        .as_array()
        .expect("a failed_calls summary")
        .iter()
        .filter(|r| ["hdf5", "mpiio", "netcdf"].contains(&r["layer"].as_str().unwrap()))
        .map(|r| {
            (
                r["layer"].as_str().unwrap().to_string(),
                r["function"].as_str().unwrap().to_string(),
                r["errno"].as_i64().unwrap(),
                r["errno_name"].as_str().unwrap().to_string(),
                r["calls"].as_i64().unwrap(),
            )
        })
        .collect();
    listed.sort();
    let row = |l: &str, f: &str, e: i64, n: &str| (l.into(), f.into(), e, n.into(), 1);
    assert_eq!(
        listed,
        [
            row("hdf5", "H5Fclose", 0, ""),
            row("hdf5", "H5Fopen", 2, "ENOENT"),
            row("mpiio", "MPI_File_open", 9, "EBADF"),
            row("netcdf", "nc_open", 2, "ENOENT"),
        ]
    );
}

/// A Fortran job, on both MPI ABIs: MPI-IO through the mpi_f08 module, parallel HDF5 through
/// HDF5's Fortran module (Open MPI's build: Debian has no MPICH build of it), and the Fortran
/// runtime's unformatted writes. Nothing of Fortran's is probed: its bindings call the C
/// functions (Open MPI's through their `PMPI_` names, which are the same code), so each call
/// is the row a C program's would be. Ground truth: tests/workloads/fortran_io.F90.
#[test]
fn a_fortran_jobs_mpi_io_hdf5_and_runtime_writes_are_the_rows_of_their_c_calls() {
    fortran_io(Mpi::Open);
}

#[test]
fn a_fortran_jobs_mpi_io_under_the_mpich_abi_is_the_rows_of_its_c_calls() {
    fortran_io(Mpi::Mpich);
}

fn fortran_io(mpi: Mpi) {
    require_root();
    let (name, compiler, flags): (_, _, &[&str]) = match mpi {
        Mpi::Open => ("fortran_io", "h5pfc", &["-shlib", "-DWITH_HDF5"]),
        Mpi::Mpich => ("fortran_io_mpich", "mpif90.mpich", &[]),
    };
    let dir = scratch(&format!("{name}_build"));
    let exe = build_c(compiler, "fortran_io.F90", &dir.join(name), flags);
    let out = record_job(name, &[], mpi.launcher(), &exe, &[dir.to_str().unwrap()]);

    let ranks = ranks_of(&out, &exe);
    let calls = rows(&out, "calls");
    let dat = common::file_id_of(&out, &dir.join("mpi.dat"));
    let plain_bin = common::file_id_of(&out, &dir.join("plain.bin"));
    // The program's own call of `f` in process `pid`.
    let top = |pid: i64, f: &str| -> &Row {
        let v: Vec<&Row> = calls
            .iter()
            .filter(|c| c.i("pid") == Some(pid) && c.s("function") == Some(f))
            .filter(|c| c.i("parent_id").is_none())
            .collect();
        assert_eq!(v.len(), 1, "pid {pid}: {f}: {v:?}");
        v[0]
    };
    // The transfers of `op` on `layer` beneath call `c`.
    let below = |c: &Row, layer: &str, op: &str| -> Vec<&Row> {
        descendants(&calls, c.i("call_id").unwrap())
            .into_iter()
            .filter(|d| d.s("layer") == Some(layer) && d.s("op") == Some(op))
            .collect()
    };
    let bytes = |v: &[&Row]| v.iter().filter_map(|c| c.i("bytes_result")).sum::<i64>();
    let transfer = |c: &Row| {
        (
            c.i("offset"),
            c.i("bytes_requested"),
            c.i("bytes_result"),
            c.get("collective").cloned(),
        )
    };
    let (mut collective_writes, mut collective_reads) = (Vec::new(), Vec::new());
    for &(r, pid) in &ranks {
        let open = top(pid, "MPI_File_open");
        assert_eq!(open.s("path"), dir.join("mpi.dat").to_str());
        assert_eq!(open.get("collective"), Some(&Val::B(true)));

        // 1024 MPI_INTEGERs at its block, through the binding's conversion of the handles.
        let wa = top(pid, "MPI_File_write_at_all");
        assert_eq!(
            transfer(wa),
            (Some(r * 4096), Some(4096), Some(4096), Some(Val::B(true)))
        );
        collective_writes.extend(below(wa, "posix", "write"));

        // 512 at its block past everyone's, written by the rank itself.
        let w = top(pid, "MPI_File_write_at");
        let at = (RANKS + r) * 4096;
        assert_eq!(
            transfer(w),
            (Some(at), Some(2048), Some(2048), Some(Val::B(false)))
        );
        let px = below(w, "posix", "write");
        assert_eq!(bytes(&px), 2048, "rank {r}: {px:?}");
        assert!(px.iter().all(|c| c.i("file_id") == Some(dat)), "{px:?}");
        assert_eq!(px.iter().filter_map(|c| c.i("offset")).min(), Some(at));

        // The next rank's block, read back collectively (the program checks its values).
        let ra = top(pid, "MPI_File_read_at_all");
        assert_eq!(
            transfer(ra),
            (
                Some((r + 1) % RANKS * 4096),
                Some(4096),
                Some(4096),
                Some(Val::B(true))
            )
        );
        collective_reads.extend(below(ra, "posix", "read"));

        if mpi == Mpi::Open {
            // 100 doubles of "x": written collectively, read back independently, each
            // through the MPI-IO of the same file beneath.
            let h5 = common::file_id_of(&out, &dir.join("f.h5"));
            for (f, op, collective) in [("H5Dwrite", "write", true), ("H5Dread", "read", false)] {
                let c = top(pid, f);
                assert_eq!(
                    (
                        c.i("bytes_requested"),
                        c.i("bytes_result"),
                        c.get("collective")
                    ),
                    (Some(800), Some(800), Some(&Val::B(collective))),
                    "rank {r}: {f}"
                );
                let io = below(c, "mpiio", op);
                assert_eq!(bytes(&io), 800, "rank {r}: {f}: {io:?}");
                assert!(io.iter().all(|c| c.i("file_id") == Some(h5)), "{io:?}");
            }
        }

        // The Fortran runtime writes plain.bin itself, with no library call above: 4 records
        // of 800 bytes, on rank 0 only.
        let plain = calls
            .iter()
            .filter(|c| c.i("pid") == Some(pid) && c.s("op") == Some("write"))
            .filter(|c| c.s("layer") == Some("posix"))
            .filter(|c| c.i("file_id") == Some(plain_bin))
            .collect::<Vec<_>>();
        assert_eq!(bytes(&plain), if r == 0 { 3200 } else { 0 }, "{plain:?}");
        assert!(
            plain.iter().all(|c| c.i("parent_id").is_none()),
            "{plain:?}"
        );
    }
    // The collective calls' POSIX transfers, wherever the MPI put them: every rank's block
    // once, on the file.
    for (what, v) in [("writes", collective_writes), ("reads", collective_reads)] {
        assert_eq!(bytes(&v), RANKS * 4096, "collective {what}: {v:?}");
        assert!(v.iter().all(|c| c.i("file_id") == Some(dat)), "{v:?}");
    }
}

/// MPI-IO calls that give no offset use a file pointer. The individual one's position is each
/// call's offset, in etypes of the view, as MPI_File_get_position gives it (the workload
/// prints it before each call): from 0 at the open, moved by MPI_File_seek (SEEK_SET and
/// SEEK_CUR, MPI's 600 and 602) and by each call's bytes over the etype's size, back to 0 at
/// MPI_File_set_view, under a view of MPI_DOUBLEs and one of a built type of 12 bytes. The
/// shared pointer's calls (seek_shared, write_ordered, write_shared, read_shared) leave it;
/// seek_shared's row has its SEEK_SET's offset, and the transfers where the rank's own
/// transfer beneath began, in etypes of the default view and of one whose filetype is its
/// etype, as the workload printed them (under Open MPI, in the default view only, and not for
/// write_ordered, whose data OMPIO's rank 0 writes for all: those rows have none). After a
/// SEEK_END the individual pointer's position is unknown, and after a read that moved less
/// than it asked (the MPIs move the pointer differently then). A blocking read's bytes are those its status counts, as the workload printed them:
/// none for the read at the end of the file. Ground truth: tests/workloads/mpi_pointers.c.
#[test]
fn mpi_io_calls_on_the_file_pointers_have_their_positions_in_etypes() {
    mpi_pointers(Mpi::Open);
}

#[test]
fn mpi_io_calls_on_the_file_pointers_under_the_mpich_abi_have_their_positions() {
    mpi_pointers(Mpi::Mpich);
}

fn mpi_pointers(mpi: Mpi) {
    require_root();
    let (name, cc) = match mpi {
        Mpi::Open => ("mpi_pointers", "mpicc"),
        Mpi::Mpich => ("mpi_pointers_mpich", "mpicc.mpich"),
    };
    let dir = scratch(&format!("{name}_build"));
    let exe = build_c(cc, "mpi_pointers.c", &dir.join(name), &[]);
    let file = dir.join("data.bin");
    let (out, printed) =
        record_job_output(name, &[], mpi.launcher(), &exe, &[file.to_str().unwrap()]);
    // What each rank printed, in order: positions before calls and after views, and the bytes
    // its reads moved.
    let mut printed_by: HashMap<i64, Vec<(bool, String, i64)>> = HashMap::new();
    let mut shared_by: HashMap<i64, Vec<(String, Option<i64>)>> = HashMap::new();
    for line in printed.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (r, bytes, function, value) = match f[..] {
            [r, "shared", function, at, view] => {
                // Open MPI's datatype handles are read for their size: a view of a built
                // type is not known to map positions to bytes, and OMPIO's rank 0 writes
                // all ranks' ordered data at once.
                let sure = match mpi {
                    Mpi::Mpich => true,
                    Mpi::Open => view == "default" && function != "MPI_File_write_ordered",
                };
                let at = at.parse().unwrap();
                let at = (sure || function == "MPI_File_seek_shared").then_some(at);
                shared_by
                    .entry(r.parse().unwrap())
                    .or_default()
                    .push((function.to_string(), at));
                continue;
            }
            [r, "bytes", function, n] => (r, true, function, n),
            [r, function, pos] => (r, false, function, pos),
            _ => panic!("workload printed {line:?}"),
        };
        printed_by.entry(r.parse().unwrap()).or_default().push((
            bytes,
            function.to_string(),
            value.parse().unwrap(),
        ));
    }
    let calls = rows(&out, "calls");
    let ranks = ranks_of(&out, &exe);
    let individual = [
        "MPI_File_write",
        "MPI_File_write_all",
        "MPI_File_read",
        "MPI_File_read_all",
        "MPI_File_iwrite",
        "MPI_File_read_all_begin",
    ];
    for (r, pid) in ranks {
        let mut mine: Vec<&Row> = calls
            .iter()
            .filter(|c| c.i("pid") == Some(pid) && c.i("parent_id").is_none())
            .filter(|c| c.s("layer") == Some("mpiio"))
            .collect();
        mine.sort_by_key(|c| c.i("ts_begin_ns"));
        let offsets = |fs: &[&str]| -> Vec<(String, Option<i64>)> {
            mine.iter()
                .filter(|c| fs.contains(&c.s("function").unwrap()))
                .map(|c| (c.s("function").unwrap().to_string(), c.i("offset")))
                .collect()
        };
        let reads: Vec<&Row> = mine
            .iter()
            .filter(|c| c.s("op") == Some("read"))
            .filter(|c| !c.s("function").unwrap().ends_with("_begin"))
            .copied()
            .collect();
        // The offsets the rank's pointer gives: what it printed, but unknown after a read
        // that moved less than it asked (ROMIO moves the pointer past what moved, OMPIO past
        // what was asked) until a view puts it at 0 again; the bytes its reads printed.
        let (mut want, mut want_read, mut known) = (Vec::new(), Vec::new(), true);
        for (bytes, function, value) in printed_by.remove(&r).unwrap_or_default() {
            if bytes {
                let asked = reads
                    .get(want_read.len())
                    .unwrap_or_else(|| panic!("rank {r}: {function} not recorded: {reads:?}"))
                    .i("bytes_requested");
                known &= Some(value) == asked;
                want_read.push((function, Some(value)));
            } else if function == "MPI_File_set_view" {
                known = true;
            } else {
                want.push((function, Some(value).filter(|_| known)));
            }
        }
        // The last write and read, after seeks to the end, have none.
        want.extend([
            ("MPI_File_write".into(), None),
            ("MPI_File_read".into(), None),
        ]);
        let got_read: Vec<(String, Option<i64>)> = reads
            .iter()
            .map(|c| (c.s("function").unwrap().to_string(), c.i("bytes_result")))
            .collect();
        assert_eq!(got_read, want_read, "rank {r}");
        assert_eq!(offsets(&individual), want, "rank {r}");
        // The seeks' rows have the position they set.
        let seeks: Vec<Option<i64>> = offsets(&["MPI_File_seek"])
            .into_iter()
            .map(|(_, o)| o)
            .collect();
        assert_eq!(
            seeks,
            [Some(r * 1000), Some(r * 1000 + 310), Some(14), None, None],
            "rank {r}"
        );
        // The shared pointer's calls: seek_shared's SEEK_SET, and where the workload said
        // the transfers go.
        let shared = shared_by.remove(&r).unwrap_or_default();
        assert_eq!(
            shared.len(),
            if r == 0 { 7 } else { 4 },
            "rank {r}: {shared:?}"
        );
        assert_eq!(
            offsets(&[
                "MPI_File_seek_shared",
                "MPI_File_write_ordered",
                "MPI_File_write_shared",
                "MPI_File_read_shared"
            ]),
            shared,
            "rank {r}"
        );
        // In the default view an etype is a byte, and the rank's own write of 100 bytes is
        // at that offset in the file.
        let first = mine
            .iter()
            .find(|c| c.s("function") == Some("MPI_File_write"))
            .unwrap();
        let px: Vec<&Row> = descendants(&calls, first.i("call_id").unwrap())
            .into_iter()
            .filter(|c| c.s("layer") == Some("posix") && c.s("op") == Some("write"))
            .collect();
        assert_eq!(
            px.iter()
                .map(|c| (c.i("offset"), c.i("bytes_result")))
                .collect::<Vec<_>>(),
            [(Some(r * 1000), Some(100))],
            "rank {r}"
        );
    }
    assert!(printed_by.is_empty(), "ranks not traced: {printed_by:?}");
    assert!(shared_by.is_empty(), "ranks not traced: {shared_by:?}");
}

/// MPI 4.0's large-count calls (`MPI_File_write_at_c`, ...: MPI_Count counts), which a program
/// built against an MPI 4 library calls (IOR does): rows like their int-count twins', with
/// the offsets and bytes the workload printed (the byte offset used, the status's count), and
/// the POSIX write of the independent one beneath it. MPICH 4 has them; Open MPI 4.1 does not
/// (their probes are `absent` there). Ground truth: tests/workloads/mpi_large_count.c.
#[test]
fn mpi_4_large_count_calls_are_rows_with_their_offsets_and_bytes() {
    require_root();
    let name = "mpi_large_count";
    let dir = scratch(&format!("{name}_build"));
    let exe = build_c("mpicc.mpich", "mpi_large_count.c", &dir.join(name), &[]);
    let file = dir.join("data.bin");
    let (out, printed) = record_job_output(
        name,
        &[],
        Mpi::Mpich.launcher(),
        &exe,
        &[file.to_str().unwrap()],
    );
    // Rank -> (function, offset, bytes) in the order the rank made them.
    type Transfer = (String, Option<i64>, Option<i64>);
    let mut expected: HashMap<i64, Vec<Transfer>> = HashMap::new();
    for line in printed.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [r, function, at, bytes] = f[..] else {
            panic!("workload printed {line:?}")
        };
        expected.entry(r.parse().unwrap()).or_default().push((
            function.to_string(),
            Some(at.parse().unwrap()),
            Some(bytes.parse().unwrap()),
        ));
    }
    let calls = rows(&out, "calls");
    let file_id = common::file_id_of(&out, &file);
    let ranks = ranks_of(&out, &exe);
    for (r, pid) in ranks {
        let mut mine: Vec<&Row> = calls
            .iter()
            .filter(|c| c.i("pid") == Some(pid) && c.i("parent_id").is_none())
            .filter(|c| c.s("function").is_some_and(|f| f.ends_with("_c")))
            .collect();
        mine.sort_by_key(|c| c.i("ts_begin_ns"));
        let got: Vec<_> = mine
            .iter()
            .map(|c| {
                (
                    c.s("function").unwrap().to_string(),
                    c.i("offset"),
                    c.i("bytes_result"),
                )
            })
            .collect();
        assert_eq!(got, expected.remove(&r).unwrap_or_default(), "rank {r}");
        assert!(mine.iter().all(|c| c.i("file_id") == Some(file_id)));
        assert_eq!(
            mine.iter()
                .map(|c| c.get("collective").cloned())
                .collect::<Vec<_>>(),
            [false, true, false, false, true].map(|b| Some(Val::B(b)))
        );
        // 512 MPI_DOUBLEs: the type's size from the MPICH handle or asked beneath.
        let px: Vec<(Option<i64>, Option<i64>)> =
            descendants(&calls, mine[0].i("call_id").unwrap())
                .into_iter()
                .filter(|c| c.s("layer") == Some("posix") && c.s("op") == Some("write"))
                .map(|c| (c.i("offset"), c.i("bytes_result")))
                .collect();
        assert_eq!(px, [(Some(r * 4096), Some(4096))], "rank {r}");
    }
    assert!(expected.is_empty(), "ranks not traced: {expected:?}");
}

/// A ROMIO file-system prefix (`ufs:`, `lustre:`), which chooses ROMIO's driver, is not part
/// of the file's name: under MPICH, tests/workloads/mpiio.c opens `ufs:DATA`, and each rank's
/// MPI_File handle is on DATA, named by it, as its fds beneath are; the MPI_File_open rows keep
/// the name as passed. Before, each handle was on a file of its own, `CWD/ufs:DATA`, with no
/// inode.
#[test]
fn a_romio_file_system_prefix_is_not_part_of_the_files_name() {
    require_root();
    let dir = scratch("romio_prefix_build");
    let exe = build_c("mpicc.mpich", "mpiio.c", &dir.join("mpiio_prefix"), &[]);
    let file = dir.join("data.bin");
    let given = format!("ufs:{}", file.display());
    let out = record_job("romio_prefix", &[], Mpi::Mpich.launcher(), &exe, &[&given]);
    assert_eq!(
        std::fs::metadata(&file).map(|m| m.len() > 0).ok(),
        Some(true)
    );
    let file_id = common::file_id_of(&out, &file);
    let files = rows(&out, "files");
    let prefixed: Vec<&str> = (files.iter())
        .filter_map(|f| f.s("path"))
        .filter(|p| p.contains("ufs:"))
        .collect();
    assert_eq!(prefixed, [""; 0], "files named with the prefix");
    let handles = rows(&out, "handles");
    let mpi_files: Vec<(Option<&str>, Option<i64>)> = (handles.iter())
        .filter(|h| h.s("kind") == Some("mpi_file"))
        .map(|h| (h.s("path"), h.i("file_id")))
        .collect();
    assert_eq!(
        mpi_files,
        vec![(file.to_str(), Some(file_id)); RANKS as usize]
    );
    let opens = calls_of(&rows(&out, "calls"), "MPI_File_open")
        .iter()
        .map(|c| (c.s("path").map(str::to_string), c.i("file_id")))
        .collect::<Vec<_>>();
    assert_eq!(
        opens,
        vec![(Some(given.clone()), Some(file_id)); RANKS as usize]
    );
}

/// ROMIO's deferred open: with the hints `romio_no_indep_rw true` and `cb_nodes 1` (given by a
/// `ROMIO_HINTS` file, under MPICH), MPI_File_open opens the file only on the aggregator; the
/// other ranks open it beneath their first independent transfer (tests/workloads/mpiio.c's
/// MPI_File_write_at). Each rank's fds on the file are children of its MPI_File handle, and
/// every transfer on them is beneath a call on that handle.
#[test]
fn a_romio_ranks_deferred_open_is_beneath_its_first_transfer_on_its_mpi_file() {
    require_root();
    let dir = scratch("romio_deferred_build");
    let exe = build_c("mpicc.mpich", "mpiio.c", &dir.join("mpiio_deferred"), &[]);
    let file = dir.join("data.bin");
    let hints = dir.join("hints");
    std::fs::write(&hints, "romio_no_indep_rw true\ncb_nodes 1\n").unwrap();
    let env = format!("ROMIO_HINTS={}", hints.display());
    let launcher = [&["env", env.as_str()][..], Mpi::Mpich.launcher()].concat();
    let out = record_job(
        "romio_deferred",
        &[],
        &launcher,
        &exe,
        &[file.to_str().unwrap()],
    );
    let file_id = Some(common::file_id_of(&out, &file));
    let calls = rows(&out, "calls");
    let handles = rows(&out, "handles");
    for (rank, pid) in ranks_of(&out, &exe) {
        let mine: Vec<&Row> = (calls.iter()).filter(|c| c.i("pid") == Some(pid)).collect();
        let open = (mine.iter()).find(|c| c.s("function") == Some("MPI_File_open"));
        let mpi_file = open.and_then(|c| c.i("handle_id"));
        assert!(mpi_file.is_some(), "rank {rank}");
        // The fds on the file: the call each was opened beneath, and their parent.
        let fds: Vec<(Option<&str>, Option<i64>)> = (handles.iter())
            .filter(|h| h.i("pid") == Some(pid) && h.s("kind") == Some("fd"))
            .filter(|h| h.i("file_id") == file_id)
            .map(|h| {
                let open = by_id(&calls, "call_id", h.i("created_by_call_id"));
                let above = by_id(&calls, "call_id", open.i("parent_id"));
                (above.s("function"), h.i("parent_handle_id"))
            })
            .collect();
        let first = if rank == 0 {
            "MPI_File_open"
        } else {
            "MPI_File_write_at"
        };
        assert!(!fds.is_empty(), "rank {rank}");
        assert!(
            fds.iter().all(|fd| *fd == (Some(first), mpi_file)),
            "rank {rank}: {fds:?}"
        );
        // Every transfer on the file is beneath a call on the rank's MPI_File.
        let transfers: Vec<&&Row> = (mine.iter())
            .filter(|c| c.s("layer") == Some("posix") && c.i("file_id") == file_id)
            .filter(|c| matches!(c.s("op"), Some("read" | "write")))
            .collect();
        assert!(!transfers.is_empty(), "rank {rank}");
        for c in transfers {
            let above = by_id(&calls, "call_id", c.i("parent_id"));
            assert_eq!(above.i("handle_id"), mpi_file, "rank {rank}: {c:?}");
        }
    }
}

/// The family driver's member files (tests/workloads/hdf5_family.c), 64 KiB each: the first
/// opened in H5Fcreate, the next two beneath the H5Dwrite whose data reaches them. Each
/// member's fd is a child of the HDF5 file's handle, and the writes on them hold the data;
/// before, the two opened beneath H5Dwrite had no parent, and the HDF5 file was on a file
/// of its own named `fam%d.h5`, with no inode.
#[test]
fn an_hdf5_familys_member_files_are_children_of_its_file() {
    require_root();
    let (dir, exe) = h5pcc_workload("hdf5_family");
    let out = dir.join("out");
    // 160,000 bytes of data: it reaches the second and third members.
    let n = 40_000;
    let res = run(common::recording("posix,hdf5", &out)
        .arg(&exe)
        .arg(dir.join("fam%d.h5"))
        .arg(n.to_string()));
    assert!(res.status.success(), "{:?}", res.status);
    let mut calls = rows(&out, "calls");
    calls.sort_by_key(|c| c.i("ts_begin_ns"));
    let handles = rows(&out, "handles");
    let file_handle = one_call(&calls, "H5Fcreate").i("handle_id");
    assert!(file_handle.is_some());
    let write_call = one_call(&calls, "H5Dwrite").i("call_id");
    let dir_name = dir.display().to_string();
    // Each member's fd: its name, its parent handle, and the call its open was made beneath.
    let members: Vec<(String, Option<i64>, Option<&str>)> = (calls.iter())
        .filter(|c| c.s("function") == Some("openat") && c.i("handle_id").is_some())
        .filter_map(|c| {
            let name = c.s("path")?.strip_prefix(&dir_name)?.to_string();
            let fd = by_id(&handles, "handle_id", c.i("handle_id"));
            let above = (calls.iter()).find(|a| a.i("call_id") == c.i("parent_id"));
            Some((
                name,
                fd.i("parent_handle_id"),
                above.and_then(|a| a.s("function")),
            ))
        })
        .collect();
    assert_eq!(
        members,
        [
            ("/fam0.h5".to_string(), file_handle, Some("H5Fcreate")),
            ("/fam1.h5".to_string(), file_handle, Some("H5Dwrite")),
            ("/fam2.h5".to_string(), file_handle, Some("H5Dwrite")),
        ]
    );
    // The data went to the members, beneath H5Dwrite.
    let data: i64 = (calls.iter())
        .filter(|c| c.s("layer") == Some("posix") && c.i("parent_id") == write_call)
        .filter(|c| matches!(c.s("function"), Some("write" | "pwrite64")))
        .filter_map(|c| c.i("bytes_result"))
        .sum();
    assert_eq!(data, 4 * n);
    // The members are the files, each once; the HDF5 file is on the first, which holds its
    // superblock, not on a file named `fam%d.h5` that never was one.
    let files = rows(&out, "files");
    let mut names: Vec<(&str, Option<i64>)> = (files.iter())
        .filter_map(|f| Some((f.s("path")?.strip_prefix(&dir_name)?, f.i("file_id"))))
        .filter(|(name, _)| !name.starts_with("/out/"))
        .collect();
    names.sort();
    let only: Vec<&str> = names.iter().map(|n| n.0).collect();
    assert_eq!(only, ["/fam0.h5", "/fam1.h5", "/fam2.h5"]);
    assert_eq!(
        by_id(&handles, "handle_id", file_handle).i("file_id"),
        names[0].1
    );
}
