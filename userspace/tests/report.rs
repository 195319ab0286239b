//! `strata report` against workloads that have a pattern and near-identical ones that do not
//! (tests/workloads/patterns.c, 4 MPI ranks, the same bytes to the same file), and one
//! detector's shipped SQL run in DuckDB directly on the dataset, compared with the report.
mod common;

use std::path::{Path, PathBuf};

use common::{RowExt as _, build_c, duckdb_with, require_root, run, scratch, strata};
use serde_json::Value;

const RANKS: i64 = 4;

/// Traces `patterns MODE FILE` on 4 ranks (POSIX layer) and returns (dataset, file).
fn trace(mode: &str) -> (PathBuf, String) {
    trace_in(mode, &format!("report_{mode}"))
}

/// As `trace`, in a scratch directory of its own (tests run in parallel).
fn trace_in(mode: &str, scratch_name: &str) -> (PathBuf, String) {
    trace_with(mode, scratch_name, "posix", &[])
}

/// As `trace_in`, with these layers and environment for the MPI job.
fn trace_with(
    mode: &str,
    scratch_name: &str,
    layers: &str,
    env: &[(&str, &str)],
) -> (PathBuf, String) {
    require_root();
    let dir = scratch(scratch_name);
    let exe = build_c("mpicc", "patterns.c", &dir.join("patterns"), &[]);
    let file = dir.join(format!("{mode}.dat"));
    let out = dir.join("out");
    common::record_mpi(
        &["--layers", layers],
        &out,
        RANKS as u32,
        &exe,
        &[mode.as_ref(), file.as_os_str()],
        env,
    );
    (out, file.display().to_string())
}

fn report(dataset: &Path) -> Value {
    let res = run(strata().args(["report", "--format", "json"]).arg(dataset));
    assert!(res.status.success(), "{:?}", res.status);
    let r: Value = serde_json::from_slice(&res.stdout).expect("report JSON");
    // Every finding says when: the time window of the calls it is about.
    for f in r["findings"].as_array().unwrap() {
        if f["detector"] == "clock_skew" {
            continue;
        }
        let (first, last) = (
            f["where"]["first_ns"].as_i64(),
            f["where"]["last_ns"].as_i64(),
        );
        assert!(
            first.is_some_and(|a| last.is_some_and(|b| a <= b && a > 1_000_000_000_000_000_000)),
            "finding without a time window: {f}"
        );
    }
    r
}

/// One finding of `detector` on `path` per rank, in rank order.
fn per_rank(r: &Value, detector: &str, path: &str) -> Vec<Value> {
    let mut found = findings(r, detector, path);
    found.sort_by_key(|f| f["rank"].as_i64());
    assert_eq!(found.len(), RANKS as usize, "{found:#?}");
    for (rank, f) in found.iter().enumerate() {
        assert_eq!(f["rank"], rank as i64, "{f}");
    }
    found
}

/// Findings of `detector` on `path`, as their `where` objects.
fn findings(r: &Value, detector: &str, path: &str) -> Vec<Value> {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| {
            f["detector"] == detector && f["where"]["path"].as_str().is_none_or(|p| p == path)
        })
        .map(|f| f["where"].clone())
        .collect()
}

#[test]
fn small_operations_are_found_on_small_writes_and_not_on_large_ones() {
    let (out, file) = trace("small");
    let r = report(&out);
    for f in per_rank(&r, "small_operations", &file) {
        // 256 KiB per rank in 256-byte pwrites, all of them small.
        assert_eq!(f["small_calls"], 1024);
        assert_eq!(f["data_calls"], 1024);
        assert_eq!(f["small_bytes"], 256 * 1024);
        assert_eq!(f["small_below"], 4096);
    }
    // The summaries see the same bytes.
    let posix = r["summaries"]["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["layer"] == "posix")
        .expect("posix layer row")
        .clone();
    assert!(posix["bytes_written"].as_i64().unwrap() >= RANKS * 256 * 1024);

    // The same bytes in one pwrite per rank: no finding.
    let (out, file) = trace("large");
    let r = report(&out);
    assert_eq!(findings(&r, "small_operations", &file), Vec::<Value>::new());
    let files = r["summaries"]["files"].as_array().unwrap();
    let posix_file = files
        .iter()
        .find(|f| f["path"] == file.as_str() && f["layer"] == "posix")
        .expect("files summary row");
    assert_eq!(posix_file["bytes_written"], RANKS * 256 * 1024);
    assert_eq!(posix_file["calls"], RANKS);
}

/// The same small writes as io_uring requests (32 per io_uring_enter): found on the uring
/// layer's rows alone, the posix layer holding no data call on the file.
#[test]
fn small_operations_are_found_on_small_io_uring_writes() {
    let (out, file) = trace_with("small_uring", "report_small_uring", "posix,uring", &[]);
    let r = report(&out);
    for f in per_rank(&r, "small_operations", &file) {
        assert_eq!(f["small_calls"], 1024, "{f}");
        assert_eq!(f["data_calls"], 1024, "{f}");
        assert_eq!(f["small_bytes"], 256 * 1024, "{f}");
    }
    let files = r["summaries"]["files"].as_array().unwrap();
    let on = |layer: &str| {
        files
            .iter()
            .find(|f| f["path"] == file.as_str() && f["layer"] == layer)
            .map(|f| f["bytes_written"].clone())
    };
    assert_eq!(on("uring"), Some(Value::from(RANKS * 256 * 1024)));
    assert_eq!(on("posix").unwrap_or(Value::from(0)), Value::from(0));
}

#[test]
fn a_single_writer_is_found_and_spread_writes_are_not() {
    let (out, _) = trace("single");
    let r = report(&out);
    let found = findings(&r, "single_writer", "");
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = &found[0];
    assert_eq!(f["rank"], 0);
    assert_eq!(f["bytes_written"], RANKS * 1024 * 1024);
    assert_eq!(f["job_bytes_written"], RANKS * 1024 * 1024);
    assert_eq!(f["share"], 1.0);
    assert_eq!(f["ranks"], RANKS);
    // The job view holds the 4 ranks and their bytes; the slowest calls come slowest first,
    // and rank 0's 1 MiB pwrites are among them with nothing traced beneath.
    let jobs = r["summaries"]["jobs"].as_array().unwrap();
    let job = jobs
        .iter()
        .find(|j| j["ranks"] == RANKS)
        .expect("a row with the 4 ranks");
    assert!(job["posix_bytes_written"].as_i64().unwrap() >= RANKS * 1024 * 1024);
    let slow = r["summaries"]["slow_calls"].as_array().unwrap();
    assert!(!slow.is_empty());
    let secs: Vec<f64> = slow
        .iter()
        .map(|c| c["seconds"].as_f64().unwrap())
        .collect();
    assert!(secs.windows(2).all(|w| w[0] >= w[1]), "{secs:?}");

    let (out, _) = trace("spread");
    let r = report(&out);
    assert_eq!(findings(&r, "single_writer", ""), Vec::<Value>::new());
    let detectors = r["detectors"].as_array().unwrap();
    assert!(
        detectors
            .iter()
            .any(|d| d["detector"] == "single_writer" && d["found"] == false)
    );
}

/// The shipped SQL gives DuckDB itself the same answer as `strata report`.
#[test]
fn the_shipped_sql_runs_in_duckdb_with_the_same_answer() {
    let (out, file) = trace_in("small", "report_small_duckdb");
    let (views, _) = strata::report::view_sql(&out);
    let sql =
        std::fs::read_to_string(common::repo_root().join("report/small_operations.sql")).unwrap();
    // The views, then the detector; rank, small_calls and small_bytes of each finding.
    let query = format!(
        "SELECT rank, small_calls, small_bytes FROM ({}) ORDER BY rank",
        sql.lines()
            .filter(|l| !l.trim_start().starts_with("--"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let setup: Vec<&str> = views.lines().collect();
    let direct = duckdb_with(&setup, &query);
    let r = report(&out);
    let mut via_report: Vec<String> = findings(&r, "small_operations", &file)
        .iter()
        .map(|f| format!("{}\t{}\t{}", f["rank"], f["small_calls"], f["small_bytes"]))
        .collect();
    via_report.sort();
    assert_eq!(direct, via_report);
    assert_eq!(direct.len(), RANKS as usize);
}

/// The one metadata_storm finding of `patterns MODE` on the file, by all ranks.
fn one_storm(mode: &str) -> Value {
    let (out, file) = trace(mode);
    let r = report(&out);
    let found = findings(&r, "metadata_storm", &file);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0]["processes"], RANKS);
    found[0].clone()
}

#[test]
fn a_metadata_storm_is_found_on_reopening_ranks_and_not_on_ones_that_open_once() {
    let f = &one_storm("reopen");
    // Per rank: the open of the whole run (O_CREAT by rank 0 aside) and its close, plus 100
    // open/close pairs; 100 pwrites.
    let rank0_create = 2;
    assert_eq!(f["metadata_calls"], RANKS * (2 + 200) + rank0_create);
    assert_eq!(f["data_calls"], RANKS * 100);
    assert!(f["max_open_seconds"].as_f64().unwrap() >= f["min_open_seconds"].as_f64().unwrap());

    let (out, file) = trace("once");
    let r = report(&out);
    assert_eq!(findings(&r, "metadata_storm", &file), Vec::<Value>::new());
}

/// Ranks that stat a shared file by its path over and over: the stat calls name the file
/// strata knows at that path (each rank opened it), so they count as its metadata calls.
#[test]
fn a_metadata_storm_of_stats_by_path_is_found() {
    let f = &one_storm("restat");
    // Per rank: its open and close and 100 stats (O_CREAT by rank 0 aside); 10 pwrites.
    let rank0_create = 2;
    assert_eq!(f["metadata_calls"], RANKS * (2 + 100) + rank0_create, "{f}");
    assert_eq!(f["data_calls"], RANKS * 10, "{f}");
}

/// Ranks that ask a shared file for an extended attribute by its path over and over (as each
/// probing a Lustre layout would): those are its metadata calls too.
#[test]
fn a_metadata_storm_of_xattr_queries_is_found() {
    let f = &one_storm("rexattr");
    // Per rank: its open and close and 100 getxattrs (O_CREAT by rank 0 aside); 10 pwrites.
    let rank0_create = 2;
    assert_eq!(f["metadata_calls"], RANKS * (2 + 100) + rank0_create, "{f}");
    assert_eq!(f["data_calls"], RANKS * 10, "{f}");
}

/// Ranks that list the job's directory over and over (one getdents64 after each rewind): the
/// listings are metadata calls on the directory, which no data call touches.
#[test]
fn a_metadata_storm_of_directory_listings_is_found() {
    let (out, file) = trace("relist");
    let dir = Path::new(&file)
        .parent()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let r = report(&out);
    let found = findings(&r, "metadata_storm", &dir);
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = &found[0];
    assert_eq!(f["processes"], RANKS);
    // Per rank: the directory's open and close and 100 listings.
    assert_eq!(f["metadata_calls"], RANKS * (2 + 100), "{f}");
    assert_eq!(f["data_calls"], 0, "{f}");
}

/// Ranks that each create, rename and remove their own files in one shared directory: one
/// shared_directory finding on it, with every entry counted once, whether the call named it by
/// an absolute path or by a relative one after a chdir. The same entries in a directory per
/// rank: none; nor ranks that only make and remove subdirectories there (as MPI runtimes do in
/// their session directory, a directory per rank).
#[test]
fn a_shared_directory_is_found_where_ranks_make_their_files_and_not_in_directories_of_their_own() {
    let (out, file) = trace("dir_shared");
    let dir = Path::new(&file).parent().unwrap().to_str().unwrap();
    let r = report(&out);
    let found = findings(&r, "shared_directory", dir);
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = &found[0];
    assert_eq!(f["processes"], RANKS, "{f}");
    // Per rank: 30 files made (3 by creat) and 5 directories; 5 of the files renamed; the 5
    // directories and the 30 files removed (25 by relative names). Rank 0's O_CREAT of FILE.
    assert_eq!(f["creates"], RANKS * (30 + 5) + 1, "{f}");
    assert_eq!(f["renames"], RANKS * 5, "{f}");
    assert_eq!(f["removes"], RANKS * (5 + 30), "{f}");
    assert_eq!(f["entry_calls"], RANKS * 75 + 1, "{f}");
    assert_eq!(f["directory_calls"], RANKS * (5 + 5), "{f}");
    assert_eq!(f["failed"], 0, "{f}");
    let peak = f["peak_per_second"].as_i64().unwrap();
    assert!(peak > 0 && peak <= RANKS * 75 + 1, "{f}");
    // The file system the directory is on, as util-linux finds it.
    assert_eq!(f["fs_type"], findmnt(Path::new(dir), "FSTYPE"), "{f}");
    assert_eq!(f["mount_point"], findmnt(Path::new(dir), "TARGET"), "{f}");
    // No other directory has one: the entries are all in the file's.
    let all = of_detector(&r, "shared_directory");
    assert_eq!(all.len(), 1, "{all:#?}");

    for mode in ["dir_own", "subdirs_shared"] {
        let (out, _) = trace(mode);
        let r = report(&out);
        let none = of_detector(&r, "shared_directory");
        assert!(none.is_empty(), "{mode}: {none:#?}");
    }
}

/// Every finding of `detector`, wherever it is.
fn of_detector<'a>(r: &'a Value, detector: &str) -> Vec<&'a Value> {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["detector"] == detector)
        .collect()
}

/// Text written through a stream with fputs: the stdio layer's bytes are the lines' own, so
/// the POSIX writes beneath are no amplification; lines too long for strata to read their
/// length leave their calls out of the comparison rather than counting them as nothing.
#[test]
fn text_written_with_fputs_is_not_amplified() {
    for mode in ["lines", "long_lines"] {
        let (out, file) = trace_with(mode, &format!("report_{mode}"), "posix,stdio", &[]);
        let r = report(&out);
        assert_eq!(
            findings(&r, "layer_amplification", &file),
            Vec::<Value>::new(),
            "{mode}"
        );
        // The stdio layer's bytes on the file: every line when strata can read its length.
        let stdio = r["summaries"]["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == file.as_str() && f["layer"] == "stdio")
            .unwrap_or_else(|| panic!("{mode}: no stdio row for the file"))
            .clone();
        let want = if mode == "lines" {
            RANKS * 512 * 1024
        } else {
            0
        };
        assert_eq!(stdio["bytes_written"], want, "{mode}");
    }
}

/// The thesis' BT-IO case: 1000 interleaved 640-byte records per rank written one
/// independent MPI_File_write_at at a time ("simple") are many small POSIX writes; the same
/// records in one collective MPI_File_write_all through a strided view ("full") are
/// aggregated by OMPIO's two-phase I/O into large writes of a few ranks. With two-phase
/// turned off (`fcoll=individual`) every rank writes its own records again.
#[test]
fn bt_io_small_independent_writes_versus_collective_buffering() {
    const RECORD: i64 = 640;
    const RECORDS: i64 = 1000;
    let (out, file) = trace_with("mpi_small", "report_mpi_small", "posix,mpiio", &[]);
    let r = report(&out);
    let small = findings(&r, "small_operations", &file);
    assert_eq!(small.len(), RANKS as usize, "{small:?}");
    for f in &small {
        assert_eq!(f["small_calls"], RECORDS);
        assert_eq!(f["small_bytes"], RECORDS * RECORD);
    }
    assert!(
        findings(&r, "collective_buffering", &file).is_empty(),
        "not collective"
    );
    // The handle tree of the file: each rank's MPI_File with the fd it opened beneath, and
    // the program's own fds (rank 0's create, then every rank's open).
    let mut tree: Vec<(String, i64, i64)> = r["summaries"]["handles"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["path"] == file.as_str())
        .map(|h| {
            (
                h["chain"].as_str().unwrap().to_string(),
                h["handles"].as_i64().unwrap(),
                h["processes"].as_i64().unwrap(),
            )
        })
        .collect();
    tree.sort();
    assert_eq!(
        tree,
        vec![
            ("mpiio:mpi_file".to_string(), RANKS, RANKS),
            ("mpiio:mpi_file > posix:fd".to_string(), RANKS, RANKS),
            ("posix:fd".to_string(), RANKS + 1, RANKS),
        ]
    );

    let (out, file) = trace_with("mpi_coll", "report_mpi_coll", "posix,mpiio", &[]);
    let r = report(&out);
    assert!(findings(&r, "small_operations", &file).is_empty());
    let coll = findings(&r, "collective_buffering", &file);
    assert_eq!(coll.len(), 1, "{coll:?}");
    let f = &coll[0];
    assert_eq!(f["function"], "MPI_File_write_all");
    assert_eq!(f["participants"], RANKS);
    assert_eq!(f["mpi_calls"], RANKS);
    let total = RANKS * RECORDS * RECORD;
    assert_eq!(f["mpi_bytes"], total);
    assert_eq!(
        f["posix_bytes"], total,
        "the aggregators wrote every rank's records"
    );
    let aggregators = f["aggregators"].as_i64().unwrap();
    assert!((1..RANKS).contains(&aggregators), "{f}");
    assert_eq!(
        f["aggregator_share"].as_f64().unwrap(),
        aggregators as f64 / RANKS as f64
    );
    assert!(
        f["posix_calls"].as_i64().unwrap() < RANKS * RECORDS / 10,
        "large writes: {f}"
    );
    assert!(findings(&r, "layer_amplification", &file).is_empty(), "{r}");

    let (out, file) = trace_with(
        "mpi_coll",
        "report_mpi_coll_individual",
        "posix,mpiio",
        &[("OMPI_MCA_fcoll", "individual")],
    );
    let r = report(&out);
    assert!(
        findings(&r, "collective_buffering", &file).is_empty(),
        "every rank writes its own records"
    );
    assert_eq!(
        findings(&r, "small_operations", &file).len(),
        RANKS as usize
    );
    // Each collective call became one POSIX write per record.
    let amp = findings(&r, "layer_amplification", &file);
    assert_eq!(amp.len(), 1, "{amp:?}");
    assert_eq!(amp[0]["layer"], "mpiio");
    assert_eq!(amp[0]["layer_calls"], RANKS);
    assert_eq!(amp[0]["posix_calls"], RANKS * RECORDS);
    assert_eq!(amp[0]["calls_ratio"].as_f64(), Some(RECORDS as f64));
    assert_eq!(amp[0]["posix_bytes"], total);
}

/// ROMIO with collective buffering turned off (`romio_cb_write disable`) writes each rank's
/// strided records by data sieving: it reads the covering extent, fills the records in and
/// writes the extent back. The same program under ROMIO's defaults aggregates instead.
#[test]
fn data_sieving_under_romio_without_collective_buffering() {
    const TOTAL: i64 = RANKS * 1000 * 640;
    let dir = scratch("report_hints");
    let hints = dir.join("romio-hints");
    std::fs::write(&hints, "romio_cb_write disable\n").unwrap();
    let hints = hints.display().to_string();
    let (out, file) = trace_with(
        "mpi_coll",
        "report_sieving",
        "posix,mpiio",
        &[("OMPI_MCA_io", "romio321"), ("ROMIO_HINTS", hints.as_str())],
    );
    let r = report(&out);
    let ds = findings(&r, "data_sieving", &file);
    assert_eq!(ds.len(), 1, "{ds:?}");
    let f = &ds[0];
    assert_eq!(f["function"], "MPI_File_write_all");
    assert_eq!(f["processes"], RANKS);
    assert_eq!(f["mpi_calls"], RANKS);
    assert_eq!(f["mpi_bytes"], TOTAL);
    assert!(f["sieving_processes"].as_i64().unwrap() >= 1, "{f}");
    assert!(f["posix_read_bytes"].as_i64().unwrap() >= 1 << 20, "{f}");
    assert!(f["posix_written_bytes"].as_i64().unwrap() >= TOTAL, "{f}");
    let amp = findings(&r, "layer_amplification", &file);
    assert_eq!(amp.len(), 1, "{amp:?}");
    assert!(amp[0]["bytes_ratio"].as_f64().unwrap() >= 1.5, "{amp:?}");

    let (out, file) = trace_with(
        "mpi_coll",
        "report_romio_cb",
        "posix,mpiio",
        &[("OMPI_MCA_io", "romio321")],
    );
    let r = report(&out);
    assert!(findings(&r, "data_sieving", &file).is_empty(), "{r}");
    assert!(findings(&r, "layer_amplification", &file).is_empty(), "{r}");
    assert_eq!(findings(&r, "collective_buffering", &file).len(), 1);
}

/// Open MPI's MPI_File_open probes whether fcntl locks work by creating, locking and removing
/// `<file>.locktest.<rank>` beside the data file (its sharedfp/lockedfile component): files the
/// program never named. The same bytes written with POSIX calls touch no such file.
#[test]
fn hidden_files_of_the_mpi_io_library_are_found() {
    let (out, file) = trace_with("mpi_coll", "report_hidden", "posix,mpiio", &[]);
    let r = report(&out);
    let all: Vec<Value> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["detector"] == "hidden_files")
        .map(|f| f["where"].clone())
        .collect();
    for rank in 0..RANKS {
        let lock = format!("{file}.locktest.{rank}");
        let f = all
            .iter()
            .find(|f| f["path"] == lock.as_str())
            .unwrap_or_else(|| panic!("no finding for {lock}: {all:?}"));
        assert_eq!(f["by_function"], "MPI_File_open");
        assert_eq!(f["processes"], 1, "each rank tests its own lock file");
        assert_eq!(f["data_calls"], 0);
    }
    assert!(
        all.iter().all(|f| f["path"] != file.as_str()),
        "the data file itself is not hidden"
    );
    let (out, _) = trace_with("large", "report_hidden_posix", "posix,mpiio", &[]);
    let r = report(&out);
    assert!(
        r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["detector"] != "hidden_files"),
        "POSIX writes make no hidden files"
    );
}

/// Lustre's stripe alignment, on the layout strata would record from a Lustre file (this
/// machine has none, so the file's row gets a 1 MiB x 4 layout): 1 MiB writes at 1 MiB
/// boundaries touch one stripe each; the same writes half a MiB further each touch two.
#[test]
fn stripe_crossing_requests_are_found_and_aligned_ones_are_not() {
    let striped = |mode: &str| {
        let (out, file) = trace_in(mode, &format!("report_stripes_{mode}"));
        let to = out.with_file_name("striped");
        std::fs::create_dir_all(&to).unwrap();
        let src = |t: &str| {
            format!(
                "read_parquet('{}/{t}/**/*.parquet', hive_partitioning = true)",
                out.display()
            )
        };
        let copies = [
            format!(
                "COPY (SELECT * FROM {}) TO '{}/calls' (FORMAT parquet, PARTITION_BY (host))",
                src("calls"),
                to.display()
            ),
            format!(
                "COPY (SELECT * FROM {}) TO '{}/processes' (FORMAT parquet, PARTITION_BY (host))",
                src("processes"),
                to.display()
            ),
            format!(
                "COPY (SELECT * REPLACE ( \
                   CASE WHEN path = '{file}' THEN 1048576 END AS lustre_stripe_size, \
                   CASE WHEN path = '{file}' THEN 4 END AS lustre_stripe_count) \
                 FROM {}) TO '{}/files' (FORMAT parquet, PARTITION_BY (host))",
                src("files"),
                to.display()
            ),
        ];
        let setup: Vec<&str> = copies.iter().map(String::as_str).collect();
        duckdb_with(&setup, "SELECT 1");
        (report(&to), file)
    };
    let (r, file) = striped("shifted");
    let found = findings(&r, "stripe_alignment", &file);
    assert_eq!(found.len(), RANKS as usize, "one per rank: {found:?}");
    for f in &found {
        assert_eq!(f["data_calls"], 1);
        assert_eq!(f["crossing_calls"], 1);
        assert_eq!(f["crossing_bytes"], 1 << 20);
        assert_eq!(
            (f["stripe_size"].as_i64(), f["stripe_count"].as_i64()),
            (Some(1 << 20), Some(4))
        );
    }
    let (r, file) = striped("spread");
    assert!(
        findings(&r, "stripe_alignment", &file).is_empty(),
        "aligned writes"
    );
}

/// `sh -c 'dd ... | cat > OUT'`: dd's 64 writes of 4 KiB go through a pipe that cat reads
/// and copies to OUT; the finding names both programs, the bytes on each side and cat's
/// output. dd writing OUT itself joins no processes by a pipe, and 15 writes (60 KiB, less
/// than the pipe's buffer) through the same pipeline are not a stage.
#[test]
fn processes_joined_by_a_pipe_are_found_and_a_direct_write_is_not() {
    require_root();
    let dir = std::fs::canonicalize(scratch("report_pipe_stages")).unwrap();
    let target = dir.join("out.bin");
    let record = |name: &str, script: String, blocks: u64| {
        let out = dir.join(name);
        let res = run(common::recording("posix", &out)
            .args(["sh", "-c"])
            .arg(script));
        assert!(res.status.success(), "{name}: {:?}", res.status);
        assert_eq!(std::fs::metadata(&target).unwrap().len(), blocks * 4096);
        report(&out)
    };
    let dd = |blocks: u64| format!("dd if=/dev/zero bs=4096 count={blocks} status=none");
    let r = record(
        "piped",
        format!("{} | cat > {}", dd(64), target.display()),
        64,
    );
    let found: Vec<&Value> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["detector"] == "pipe_stages")
        .map(|f| &f["where"])
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    let f = found[0];
    assert!(f["path"].as_str().unwrap().starts_with("pipe:["), "{f}");
    assert_eq!(f["writer_exe"], "/usr/bin/dd");
    assert_eq!(
        (f["writes"].as_i64(), f["bytes_written"].as_i64()),
        (Some(64), Some(262_144))
    );
    assert_eq!(f["reader_exe"], "/usr/bin/cat");
    assert_eq!(f["bytes_read"].as_i64(), Some(262_144));
    assert_eq!(f["reader_output"], target.to_str().unwrap());
    assert_eq!(f["reader_output_bytes"].as_i64(), Some(262_144));

    for (name, script, blocks) in [
        ("direct", format!("{} of={}", dd(64), target.display()), 64),
        (
            "piped_small",
            format!("{} | cat > {}", dd(15), target.display()),
            15,
        ),
    ] {
        let r = record(name, script, blocks);
        assert!(
            r["findings"]
                .as_array()
                .unwrap()
                .iter()
                .all(|f| f["detector"] != "pipe_stages"),
            "{name}: {r}"
        );
    }
}

/// search_path.c's directories and rounds.
const SEARCH_DIRS: i64 = 20;
const SEARCH_ROUNDS: i64 = 10;

/// `search_path MODE DIR 20 10` under `strata record` (posix layer), without cargo's
/// LD_LIBRARY_PATH, whose entries the loader would search too: the report and the workload's
/// pid.
fn search(mode: &str) -> (Value, i64, PathBuf) {
    let (exe, work, out) = search_setup(&format!("report_search_{mode}"));
    let res = run(common::recording("posix", &out)
        .arg(&exe)
        .arg(mode)
        .arg(&work)
        .arg(SEARCH_DIRS.to_string())
        .arg(SEARCH_ROUNDS.to_string())
        .env_remove("LD_LIBRARY_PATH"));
    assert!(res.status.success(), "{:?}", res.status);
    (report(&out), common::workload_pid(&out, &exe), work)
}

/// search_path built in a scratch directory, its (canonical) work directory, the dataset's.
fn search_setup(name: &str) -> (PathBuf, PathBuf, PathBuf) {
    require_root();
    let dir = scratch(name);
    let exe = build_c("cc", "search_path.c", &dir.join("search_path"), &[]);
    let work = dir.join("work");
    std::fs::create_dir(&work).unwrap();
    (exe, work.canonicalize().unwrap(), dir.join("out"))
}

/// `sh -c SCRIPT` in a mount namespace of its own under `strata record` (posix layer) into
/// `out`, as [`search`] runs the walk; the script must succeed.
fn search_in_namespace(out: &Path, script: &str) {
    let res = run(common::recording("posix", out)
        .args(common::PRIVATE_NAMESPACE_SH)
        .arg(script)
        .env_remove("LD_LIBRARY_PATH")
        // chroot(1) looks for locale files before it execs the walk, as the same process.
        .env("LC_ALL", "C"));
    assert!(res.status.success(), "{:?}", res.status);
}

/// What findmnt (util-linux) says of the mount holding `path` in strata's namespace.
fn findmnt(path: &Path, column: &str) -> String {
    let out = std::process::Command::new("findmnt")
        .args(["-n", "-o", column, "--target"])
        .arg(path)
        .output()
        .expect("findmnt runs (util-linux)");
    assert!(out.status.success(), "findmnt {}", path.display());
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A library looked for in 20 directories 10 times over is found: 200 failed opens by the
/// process, the name in 20 directories, the first directory (by name, of those with the
/// most) with its 10. The same opens of a library each directory holds are not.
#[test]
fn a_search_path_walked_for_a_missing_library_is_found_and_one_that_finds_it_is_not() {
    let (r, pid, work) = search("missing");
    let found = findings(&r, "failed_lookups", "");
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = &found[0];
    assert_eq!(f["pid"], pid);
    let failed = f["failed_lookups"].as_i64().unwrap();
    // The loader's own few (/etc/ld.so.preload) besides the workload's.
    assert!(
        (SEARCH_DIRS * SEARCH_ROUNDS..SEARCH_DIRS * SEARCH_ROUNDS + 10).contains(&failed),
        "{f}"
    );
    assert_eq!(f["most_searched_name"], "libmissing.so.1");
    assert_eq!(f["name_directories"], SEARCH_DIRS);
    assert_eq!(f["top_directory"], work.join("d0").to_str().unwrap());
    assert_eq!(f["top_directory_failures"], SEARCH_ROUNDS);
    assert!(f["directories"].as_i64().unwrap() >= SEARCH_DIRS);
    // The file system the walk was on, as util-linux finds it.
    assert_eq!(f["top_directory_fs_type"], findmnt(&work, "FSTYPE"), "{f}");
    assert_eq!(
        f["top_directory_mount_point"],
        findmnt(&work, "TARGET"),
        "{f}"
    );

    let (r, _, _) = search("present");
    assert_eq!(findings(&r, "failed_lookups", ""), Vec::<Value>::new());
    assert!(
        r["detectors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["detector"] == "failed_lookups" && d["found"] == false)
    );
}

/// The same walk by a program in a chroot, in a mount namespace of its own, on a tmpfs mounted
/// under the chroot: the finding gives the top directory as the program named it, and the
/// tmpfs with its mount point named from the namespace's root (the chroot's directory before
/// it, as the program's `processes.root_dir` gives it). Without the root, the program's names
/// were matched against the namespace's mount points as they are, and the tmpfs was missed.
/// The chroot's shell waits a second before it execs the walk, so that strata sees the
/// chroot live (the root of a program gone before strata read it is not known by name).
#[test]
fn failed_lookups_in_a_chroot_name_the_file_system_under_it() {
    let (exe, _, out) = search_setup("report_search_chroot");
    let root = out.parent().unwrap().canonicalize().unwrap().join("root");
    common::chroot_tree(&root, &[Path::new("work")]);
    std::fs::copy(&exe, root.join("job/search_path")).unwrap();
    let script = format!(
        "mount --rbind /usr {r}/usr && mount -t tmpfs strata-search-chroot {r}/work \
         && chroot {r} sh -c 'sleep 1 && exec /job/search_path missing /work {n} {rounds}' \
         && sleep 1",
        r = root.display(),
        n = SEARCH_DIRS,
        rounds = SEARCH_ROUNDS,
    );
    search_in_namespace(&out, &script);

    let r = report(&out);
    let found = findings(&r, "failed_lookups", "");
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = &found[0];
    assert_eq!(f["top_directory"], "/work/d0", "{f}");
    assert_eq!(f["top_directory_fs_type"], "tmpfs", "{f}");
    let point = root.join("work");
    assert_eq!(
        f["top_directory_mount_point"],
        point.to_str().unwrap(),
        "{f}"
    );
    assert_eq!(
        f["top_directory_mount_source"], "strata-search-chroot",
        "{f}"
    );
    let procs = common::rows(&out, "processes");
    let row = procs
        .iter()
        .find(|p| Some(p.i("pid").unwrap()) == f["pid"].as_i64())
        .unwrap();
    assert_eq!(row.s("root_dir"), root.to_str(), "{row:?}");
    // The shell that made the chroot, at its namespace's root.
    assert!(
        procs
            .iter()
            .any(|p| p.s("comm") == Some("sh") && p.s("root_dir") == Some("/")),
        "{procs:?}"
    );
}

/// The same walk in a mount namespace of the workload's own, on a tmpfs mounted there half a
/// second after the namespace began, so after strata first read its table:
/// - the finding names tmpfs and its mount point, which strata's own namespace does not have;
/// - the `mounts` table holds the namespace's mounts as the workload's own
///   /proc/self/mountinfo lists them, row for row, the tmpfs read when the namespace said it
///   changed, after the others;
/// - the workload's process row names the namespace, as its /proc/self/ns/mnt does.
///
/// The shell waits a second at the end: a namespace is read while a process is in it, and
/// one that ended before strata got to its first process is not in the table.
#[test]
fn failed_lookups_name_the_file_system_in_the_process_own_mount_namespace() {
    let (exe, work, out) = search_setup("report_search_ns");
    let dir = out.parent().unwrap();
    let script = format!(
        "sleep 0.5 && mount -t tmpfs strata-search {w} && cat /proc/self/mountinfo > {d}/mountinfo \
         && readlink /proc/self/ns/mnt > {d}/ns && {exe} missing {w} {n} {r} && sleep 1",
        w = work.display(),
        d = dir.display(),
        exe = exe.display(),
        n = SEARCH_DIRS,
        r = SEARCH_ROUNDS,
    );
    search_in_namespace(&out, &script);
    assert_ne!(
        findmnt(&work, "FSTYPE"),
        "tmpfs",
        "the node's own view of {work:?}"
    );

    let r = report(&out);
    let found = findings(&r, "failed_lookups", "");
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = &found[0];
    assert_eq!(f["top_directory"], work.join("d0").to_str().unwrap());
    assert_eq!(f["top_directory_fs_type"], "tmpfs", "{f}");
    assert_eq!(
        f["top_directory_mount_point"],
        work.to_str().unwrap(),
        "{f}"
    );
    assert_eq!(f["top_directory_mount_source"], "strata-search", "{f}");

    let ns_link = std::fs::read_to_string(dir.join("ns")).unwrap();
    let ns: i64 = ns_link
        .trim()
        .strip_prefix("mnt:[")
        .and_then(|s| s.strip_suffix(']'))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{ns_link:?}"));
    let pid = common::workload_pid(&out, &exe);
    let procs = common::rows(&out, "processes");
    let row = procs.iter().find(|p| p.i("pid") == Some(pid)).unwrap();
    assert_eq!(row.i("mnt_ns"), Some(ns));

    let mounts: Vec<common::Row> = common::rows(&out, "mounts")
        .into_iter()
        .filter(|m| m.i("mnt_ns") == Some(ns))
        .collect();
    let mut got = common::mount_lines(&mounts);
    let mut want =
        common::mountinfo_lines(&std::fs::read_to_string(dir.join("mountinfo")).unwrap());
    got.sort();
    want.sort();
    assert_eq!(got, want);
    // Read again once it changed: the tmpfs came after the namespace's other mounts.
    let seen = |point: &str| {
        mounts
            .iter()
            .filter(|m| m.s("mount_point") == Some(point))
            .map(|m| m.i("seen_ns").unwrap())
            .max()
            .unwrap()
    };
    assert!(
        seen(work.to_str().unwrap()) > seen("/"),
        "the tmpfs was read with the namespace's first table: strata got to the namespace's \
         first process only after its tmpfs was mounted, half a second later"
    );
}
