//! `strata compact` merges a finished dataset's files without changing a row, and an
//! interrupted compaction is finished by the next one. Ground truth: `dd bs=1` makes exactly
//! `WRITES` one-byte writes to its output file; every table's rows (DuckDB), the report and
//! Spark's reading are compared before and after.
mod common;

use std::{
    fs,
    os::fd::AsRawFd as _,
    path::{Path, PathBuf},
};

use common::{duckdb, recording, require_root, run, scratch, strata};

/// One-byte writes of the traced `dd`: with its one-byte reads, enough rows for several full
/// flushes (100,000 rows each), so several calls files.
const WRITES: u64 = 150_000;

/// Visible Parquet files of a table, and in-progress ones.
fn files(out: &Path, table: &str) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let (mut visible, mut hidden) = (Vec::new(), Vec::new());
    for host in fs::read_dir(out.join(table)).unwrap() {
        for f in fs::read_dir(host.unwrap().path()).unwrap() {
            let f = f.unwrap().path();
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with('.') {
                hidden.push(f);
            } else if name.ends_with(".parquet") {
                visible.push(f);
            }
        }
    }
    visible.sort();
    (visible, hidden)
}

/// Per table: its rows, and the sum of a hash of each whole row (every column's value), as
/// DuckDB reads the table's files. Equal sums over equal counts: the same rows.
fn fingerprint(out: &Path) -> Vec<String> {
    let mut tables: Vec<String> = (fs::read_dir(out).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|t| !t.starts_with('.') && !files(out, t).0.is_empty())
        .collect();
    tables.sort();
    (tables.iter())
        .map(|t| {
            let glob = out.join(t).join("**/*.parquet");
            let r = duckdb(&format!(
                "SELECT count(*), sum(hash(t)::HUGEINT) FROM read_parquet('{}', \
                 hive_partitioning = true) t",
                glob.display()
            ));
            format!("{t}: {}", r.join(" "))
        })
        .collect()
}

/// `strata report --format json`: the summaries and findings, as the product shows them.
fn report(out: &Path) -> String {
    let res = run(strata().args(["report", "--format", "json"]).arg(out));
    assert!(res.status.success(), "strata report: {:?}", res.status);
    String::from_utf8(res.stdout).unwrap()
}

/// Spark's count of calls rows and sum of their bytes (its reader, not DuckDB's or Arrow's).
fn spark_calls(out: &Path) -> String {
    let script = format!(
        "from pyspark.sql import SparkSession\n\
         s = SparkSession.builder.master('local[1]').getOrCreate()\n\
         df = s.read.parquet('{}')\n\
         r = df.agg({{'bytes_result': 'sum', '*': 'count'}}).collect()[0]\n\
         print(r['count(1)'], r['sum(bytes_result)'])\n",
        out.join("calls").display()
    );
    let res = std::process::Command::new("python3")
        .args(["-c", &script])
        .output()
        .expect("python3 runs");
    assert!(
        res.status.success(),
        "Spark failed (is pyspark installed? `cargo xtask setup`): {}",
        String::from_utf8_lossy(&res.stderr)
    );
    String::from_utf8(res.stdout).unwrap().trim().to_string()
}

/// The name a flush writes `file` under before renaming it into place.
fn hidden_tmp(file: &Path) -> PathBuf {
    let name = file.file_name().unwrap().to_string_lossy();
    file.with_file_name(format!(".{name}.tmp"))
}

/// Sets a file's modification time two minutes back: older than an in-progress file can be
/// (`strata::inprogress::STALE_AFTER`).
fn two_minutes_old(file: &Path) {
    let then = std::time::SystemTime::now() - 2 * strata::inprogress::STALE_AFTER;
    let f = fs::OpenOptions::new().write(true).open(file).unwrap();
    f.set_modified(then).unwrap();
}

fn compact(out: &Path, extra: &[&str]) -> (bool, String) {
    let res = run(strata().arg("compact").args(extra).arg(out));
    let stdout = String::from_utf8_lossy(&res.stdout).into_owned();
    eprintln!("--- strata compact stdout ---\n{stdout}");
    (res.status.success(), stdout)
}

fn writes_to(out: &Path, file: &Path) -> String {
    let glob = out.join("calls/**/*.parquet");
    let files = out.join("files/**/*.parquet");
    duckdb(&format!(
        "SELECT count(*), sum(c.bytes_result), count(DISTINCT c.call_id) \
         FROM read_parquet('{}') c JOIN read_parquet('{}') f USING (file_id) \
         WHERE c.function = 'write' AND f.path = '{}'",
        glob.display(),
        files.display(),
        file.display()
    ))
    .join(" ")
}

#[test]
fn a_runs_files_merge_into_one_with_every_row_and_an_interrupted_merge_is_finished() {
    require_root();
    let dir = scratch("compact");
    let (out, target) = (dir.join("out"), dir.join("dd.out"));
    let res = run(recording("posix", &out)
        .args(["dd", "if=/dev/zero", "bs=1", "status=none"])
        .arg(format!("of={}", target.display()))
        .arg(format!("count={WRITES}")));
    assert!(res.status.success(), "strata record: {:?}", res.status);
    let (before, _) = files(&out, "calls");
    assert!(
        before.len() >= 3,
        "the run should have written several calls files (full flushes), not {}",
        before.len()
    );
    let expected = format!("{WRITES}\t{WRITES}\t{WRITES}");
    assert_eq!(writes_to(&out, &target), expected, "before compaction");
    let rows_before = fingerprint(&out);
    let report_before = report(&out);
    let spark_before = spark_calls(&out);
    let spark_rows: u64 = spark_before.split(' ').next().unwrap().parse().unwrap();
    assert!(spark_rows > 2 * WRITES, "Spark read {spark_before}");

    // A dry run changes nothing.
    let (ok, said) = compact(&out, &["--dry-run"]);
    assert!(ok && said.contains("dry run"), "{said}");
    assert_eq!(files(&out, "calls").0, before);

    // A file in progress keeps its partition as it is, and says why (exit status 1): one
    // just modified, and one however old whose writer holds its lock.
    let busy = before[0].with_file_name(".part-1-2-000003.parquet.tmp");
    fs::write(&busy, b"").unwrap();
    let (ok, said) = compact(&out, &[]);
    assert!(
        !ok && said.contains("left alone") && said.contains("s ago"),
        "{said}"
    );
    assert_eq!(files(&out, "calls").0, before);
    let held = fs::File::open(&busy).unwrap();
    two_minutes_old(&busy);
    // SAFETY: flock on a descriptor the test owns.
    assert_eq!(unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX) }, 0);
    let (ok, said) = compact(&out, &[]);
    assert!(!ok && said.contains("holds its lock"), "{said}");
    assert_eq!(files(&out, "calls").0, before);
    drop(held);
    fs::remove_file(&busy).unwrap();

    // What a strata killed while writing leaves: its last file complete but not renamed
    // into place (its rows are in no visible file), and a file cut short.
    let last = before.last().unwrap();
    let unrenamed = hidden_tmp(last);
    fs::rename(last, &unrenamed).unwrap();
    two_minutes_old(&unrenamed);
    let cut = before[0].with_file_name(".part-1-2-000001.parquet.tmp");
    let bytes = fs::read(&before[0]).unwrap();
    fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    two_minutes_old(&cut);
    assert_ne!(
        fingerprint(&out),
        rows_before,
        "the unrenamed file's rows are missing"
    );
    let (ok, said) = compact(&out, &["--dry-run"]);
    assert!(ok, "{said}");
    assert!(
        said.contains(
            "1 file that a killed strata had written but not renamed would be put in place"
        ),
        "{said}"
    );
    assert!(
        said.contains("1 file that a killed strata left incomplete would be removed"),
        "{said}"
    );
    assert!(unrenamed.exists() && cut.exists());

    // Keep a source aside, to put it back later as if its removal had been interrupted.
    let aside = dir.join("aside.parquet");
    fs::hard_link(&before[1], &aside).unwrap();

    let (ok, said) = compact(&out, &[]);
    assert!(ok, "{said}");
    for done in [
        "1 file that a killed strata had written but not renamed was put in place",
        "1 file that a killed strata left incomplete was removed",
    ] {
        assert!(said.contains(done), "{said}");
    }
    let (after, hidden) = files(&out, "calls");
    assert_eq!(after, [before[0].clone()], "one file, named as the first");
    assert!(hidden.is_empty(), "left in progress: {hidden:?}");
    assert_eq!(fingerprint(&out), rows_before, "every table's rows, after");
    assert_eq!(writes_to(&out, &target), expected, "after compaction");
    assert_eq!(report(&out), report_before, "strata report, after");
    assert_eq!(spark_calls(&out), spark_before, "Spark, after");

    // Again: nothing left to merge.
    let (ok, _) = compact(&out, &[]);
    assert!(ok);
    assert_eq!(files(&out, "calls").0, after);

    // The merged file's source back in place: its rows are there twice, until the next
    // compaction removes it.
    fs::rename(&aside, &before[1]).unwrap();
    assert_ne!(
        fingerprint(&out),
        rows_before,
        "the leftover's rows count twice"
    );
    let (ok, said) = compact(&out, &[]);
    assert!(
        ok && said.contains("already merged by an interrupted compaction"),
        "{said}"
    );
    assert_eq!(files(&out, "calls").0, after);
    assert_eq!(
        fingerprint(&out),
        rows_before,
        "after the leftover's removal"
    );
}

#[test]
fn limits_keep_merged_files_small_and_bad_input_is_named() {
    require_root();
    let dir = scratch("compact-limits");
    let out = dir.join("out");
    let res = run(recording("posix", &out).args([
        "dd",
        "if=/dev/zero",
        "of=/dev/null",
        "bs=1",
        "count=150000",
        "status=none",
    ]));
    assert!(res.status.success(), "strata record: {:?}", res.status);
    let (before, _) = files(&out, "calls");
    assert!(before.len() >= 3, "calls files: {}", before.len());
    let rows_before = fingerprint(&out);
    // Another node's partitions only: none here.
    let res = run(strata().args(["compact", "--host", "elsewhere"]).arg(&out));
    assert!(!res.status.success());
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(err.contains("in a host=elsewhere partition"), "{err}");
    assert_eq!(files(&out, "calls").0, before);
    // Another run's files only: none of these.
    let (ok, said) = compact(&out, &["--run", "1-2"]);
    assert!(ok, "{said}");
    assert_eq!(files(&out, "calls").0, before);
    // This node's, with one row group per file written: at most two in a merged file.
    let host = before[0]
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy();
    let host = host.strip_prefix("host=").unwrap().to_string();
    let (ok, said) = compact(&out, &["--max-row-groups", "2", "--host", &host]);
    assert!(ok, "{said}");
    let (after, _) = files(&out, "calls");
    assert_eq!(after.len(), before.len().div_ceil(2), "{said}");
    assert_eq!(fingerprint(&out), rows_before);

    let res = run(strata().arg("compact").arg(dir.join("missing")));
    assert!(!res.status.success());
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(err.contains("is not a directory"), "{err}");
    let empty = dir.join("empty");
    fs::create_dir_all(&empty).unwrap();
    let res = run(strata().arg("compact").arg(&empty));
    assert!(!res.status.success());
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(err.contains("no Parquet files"), "{err}");
}

/// Visible Parquet files of every table.
fn visible_files(out: &Path) -> usize {
    (fs::read_dir(out).unwrap())
        .map(|t| t.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|t| !t.starts_with('.'))
        .map(|t| files(out, &t).0.len())
        .sum()
}

/// The highest sequence number among a table's visible files: the files the run wrote.
fn last_seq(files: &[PathBuf]) -> u64 {
    (files.iter())
        .filter_map(|f| {
            let name = f.file_name()?.to_str()?.strip_suffix(".parquet")?;
            name.rsplit_once('-')?.1.parse().ok()
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn a_run_merges_its_files_while_it_records_and_leaves_its_newest_alone() {
    require_root();
    let dir = scratch("compact-recording");
    let (out, target) = (dir.join("out"), dir.join("dd.out"));
    // A merge each time two more files were written, at flushes ten times a second: merges
    // run beside the writer through most of the run.
    let res = run(strata()
        .args([
            "record",
            "-q",
            "--layers",
            "posix",
            "--flush-interval",
            "100ms",
        ])
        .args(["--compact-every", "2", "-o"])
        .arg(&out)
        .args(["--", "dd", "if=/dev/zero", "bs=1", "status=none"])
        .arg(format!("of={}", target.display()))
        .arg(format!("count={}", 2 * WRITES)));
    assert!(res.status.success(), "strata record: {:?}", res.status);
    let expected = format!("{0}\t{0}\t{0}", 2 * WRITES);
    assert_eq!(writes_to(&out, &target), expected, "every write once");
    let (calls, hidden) = files(&out, "calls");
    assert!(hidden.is_empty(), "left in progress: {hidden:?}");
    let written = last_seq(&calls);
    assert!(
        (calls.len() as u64) < written,
        "{written} calls files written, {} left: none merged while recording",
        calls.len()
    );

    // `strata compact --recording` leaves the newest file alone, and a file the run is
    // writing does not keep the others from being merged.
    let rows_before = fingerprint(&out);
    let newest = calls.last().unwrap().clone();
    let newest_bytes = fs::read(&newest).unwrap();
    let name = newest.file_name().unwrap().to_string_lossy();
    let (run_id, _) = name
        .strip_suffix(".parquet")
        .unwrap()
        .rsplit_once('-')
        .unwrap();
    let in_progress = newest.with_file_name(format!(".{run_id}-{:06}.parquet.tmp", written + 1));
    fs::write(&in_progress, b"").unwrap();
    let visible_before = visible_files(&out);
    let (ok, said) = compact(&out, &["--recording"]);
    assert!(ok, "{said}");
    // The totals it gives are the files there were and are.
    let totals = said.lines().last().unwrap();
    let visible_after = visible_files(&out);
    assert!(
        totals.starts_with(&format!("{visible_before} files in "))
            && totals.ends_with(&format!(" -> {visible_after}")),
        "{said}"
    );
    let (after, _) = files(&out, "calls");
    assert_eq!(after.len(), calls.len().min(2), "{said}");
    assert_eq!(after.last(), Some(&newest));
    assert_eq!(
        fs::read(&newest).unwrap(),
        newest_bytes,
        "the newest file unchanged"
    );
    assert!(in_progress.exists(), "the file in progress left as it is");
    fs::remove_file(&in_progress).unwrap();
    assert_eq!(fingerprint(&out), rows_before);
    assert_eq!(writes_to(&out, &target), expected);
}
