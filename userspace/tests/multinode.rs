//! A dataset of two nodes (two runs with different `--host` names into one job directory)
//! read as one: DuckDB and Spark (report/spark_report.py, pyspark) see both `host=`
//! partitions and give the same answers to every shipped report query.
mod common;

use std::{collections::HashMap, path::Path, process::Command};

use common::{RowExt as _, build_c, duckdb, require_root, rows, run, scratch, strata};
use serde_json::Value;

/// Traces `patterns MODE` on 4 ranks as node `host`, into `job`.
fn trace_as(host: &str, mode: &str, job: &Path, dir: &Path, exe: &Path) {
    let file = dir.join(format!("{mode}.dat"));
    common::record_mpi(
        &["--layers", "posix", "--host", host],
        job,
        4,
        exe,
        &[mode.as_ref(), file.as_os_str()],
        &[],
    );
}

/// Rows as sorted canonical strings (floats to 6 decimals: engines sum in other orders).
fn canon(rows: &[Value]) -> Vec<String> {
    let mut v: Vec<String> = rows
        .iter()
        .map(|r| {
            let obj = r.as_object().expect("row object");
            let mut fields: Vec<String> = obj
                .iter()
                .map(|(k, v)| match v.as_f64() {
                    Some(f) if !v.is_i64() && !v.is_u64() => format!("{k}={f:.6}"),
                    _ => format!("{k}={v}"),
                })
                .collect();
            fields.sort();
            fields.join(",")
        })
        .collect();
    v.sort();
    v
}

fn findings(report: &Value) -> Vec<Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let mut w = f["where"].clone();
            w["detector"] = f["detector"].clone();
            w
        })
        .collect()
}

#[test]
fn a_two_node_dataset_reads_as_one_in_duckdb_and_spark() {
    require_root();
    let dir = scratch("multinode");
    let exe = build_c("mpicc", "patterns.c", &dir.join("patterns"), &[]);
    let job = dir.join("root").join("job-7");
    // Node 1 makes many small writes, node 2 reopens its file for every record.
    trace_as("node-1", "small", &job, &dir, &exe);
    trace_as("node-2", "reopen", &job, &dir, &exe);

    for table in ["calls", "files", "processes", "run", "probes"] {
        for host in ["node-1", "node-2"] {
            assert!(
                job.join(table).join(format!("host={host}")).is_dir(),
                "{table}/host={host}"
            );
        }
    }
    // Ground truth per node: each run's own count of the calls it wrote.
    let written: HashMap<String, i64> = rows(&job, "run")
        .iter()
        .map(|r| {
            (
                r.s("host").unwrap().to_string(),
                r.i("calls_written").unwrap(),
            )
        })
        .collect();
    assert_eq!(written.len(), 2);
    let glob = job.join("calls/**/*.parquet");
    let per_host = duckdb(&format!(
        "SELECT host, count(*) FROM read_parquet('{}', hive_partitioning = true) GROUP BY host ORDER BY host",
        glob.display()
    ));
    let expected: Vec<String> = ["node-1", "node-2"]
        .iter()
        .map(|h| format!("{h}\t{}", written[*h]))
        .collect();
    assert_eq!(per_host, expected, "DuckDB reads both nodes' calls");

    // Every shipped query: DuckDB (strata report) and Spark agree.
    let res = run(strata().args(["report", "--format", "json"]).arg(&job));
    assert!(res.status.success());
    let duck: Value = serde_json::from_slice(&res.stdout).unwrap();
    let out = Command::new("python3")
        .arg(common::repo_root().join("report/spark_report.py"))
        .arg(&job)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "Spark failed (is pyspark installed? `cargo xtask setup`): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let spark: Value = serde_json::from_slice(&out.stdout).expect("Spark report JSON");
    assert_eq!(spark["skipped"], serde_json::json!({}));
    let summaries = duck["summaries"].as_object().unwrap();
    assert!(summaries.len() >= 5);
    for (name, rows) in summaries {
        let d = canon(rows.as_array().unwrap());
        let s = canon(spark["summaries"][name].as_array().unwrap_or(&Vec::new()));
        assert!(!d.is_empty(), "summary {name} is empty");
        assert_eq!(d, s, "summary {name}: DuckDB vs Spark");
    }
    let (d, s) = (canon(&findings(&duck)), canon(&findings(&spark)));
    assert_eq!(d, s, "findings: DuckDB vs Spark");
    // Each node's pattern is found on that node.
    let found = findings(&duck);
    let on = |detector: &str, host: &str| {
        found
            .iter()
            .filter(|f| f["detector"] == detector && f["host"] == host)
            .count()
    };
    assert_eq!(on("metadata_storm", "node-2"), 1);
    assert_eq!(on("metadata_storm", "node-1"), 0);
    // Both nodes' ranks write small: 1024 x 256 B on node 1, 100 x 1 KiB on node 2.
    let mut small: Vec<(String, i64)> = found
        .iter()
        .filter(|f| f["detector"] == "small_operations")
        .map(|f| {
            (
                f["host"].as_str().unwrap().to_string(),
                f["small_calls"].as_i64().unwrap(),
            )
        })
        .collect();
    small.sort();
    let expected: Vec<(String, i64)> = [("node-1", 1024), ("node-2", 100)]
        .iter()
        .flat_map(|(h, n)| std::iter::repeat_n((h.to_string(), *n), 4))
        .collect();
    assert_eq!(small, expected);
    // The layers summary counts both nodes' calls.
    let posix_calls: i64 = summaries["layers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["layer"] == "posix")
        .map(|r| r["calls"].as_i64().unwrap())
        .sum();
    assert_eq!(posix_calls, written["node-1"] + written["node-2"]);
}

/// A real 4-rank MPI-IO trace split into two hosts by rank (ranks 0-1 on node-1, 2-3 on
/// node-2), once as recorded and once with node-2's clock 200 ms ahead: the collective opens
/// and closes prove the skew on the second and nothing on the first.
#[test]
fn clock_skew_between_nodes_is_bounded_from_collective_calls() {
    require_root();
    let dir = scratch("clock_skew");
    let exe = build_c("mpicc", "mpiio.c", &dir.join("mpiio"), &[]);
    let out = dir.join("out");
    let file = dir.join("shared.dat");
    common::record_mpi(
        &["--layers", "posix,mpiio"],
        &out,
        4,
        &exe,
        &[file.as_os_str()],
        &[],
    );

    const SHIFT_NS: i64 = 200_000_000;
    let split = |name: &str, shift: i64| {
        let to = dir.join(name);
        std::fs::create_dir_all(&to).unwrap();
        let src = |t: &str| {
            format!(
                "read_parquet('{}/{t}/**/*.parquet', hive_partitioning = true)",
                out.display()
            )
        };
        let node = "CASE WHEN p.rank < 2 THEN 'node-1' ELSE 'node-2' END";
        let copies = [
            format!(
                "COPY (SELECT c.* EXCLUDE (host, ts_begin_ns, ts_end_ns), {node} AS host, \
                 c.ts_begin_ns + CASE WHEN p.rank < 2 THEN 0 ELSE {shift} END AS ts_begin_ns, \
                 c.ts_end_ns + CASE WHEN p.rank < 2 THEN 0 ELSE {shift} END AS ts_end_ns \
                 FROM {} c JOIN {} p ON p.pid = c.pid WHERE p.rank IS NOT NULL) \
                 TO '{}/calls' (FORMAT parquet, PARTITION_BY (host))",
                src("calls"),
                src("processes"),
                to.display()
            ),
            format!(
                "COPY (SELECT f.* EXCLUDE (host), h.host FROM {} f, \
                 (VALUES ('node-1'), ('node-2')) h(host)) TO '{}/files' (FORMAT parquet, PARTITION_BY (host))",
                src("files"),
                to.display()
            ),
            format!(
                "COPY (SELECT p.* EXCLUDE (host, start_ns, end_ns), {node} AS host, \
                 p.start_ns + CASE WHEN p.rank < 2 THEN 0 ELSE {shift} END AS start_ns, \
                 p.end_ns + CASE WHEN p.rank < 2 THEN 0 ELSE {shift} END AS end_ns \
                 FROM {} p WHERE p.rank IS NOT NULL) \
                 TO '{}/processes' (FORMAT parquet, PARTITION_BY (host))",
                src("processes"),
                to.display()
            ),
        ];
        let setup: Vec<&str> = copies.iter().map(String::as_str).collect();
        common::duckdb_with(&setup, "SELECT 1");
        let res = run(strata().args(["report", "--format", "json"]).arg(&to));
        assert!(res.status.success());
        let r: Value = serde_json::from_slice(&res.stdout).unwrap();
        (
            to,
            r.clone(),
            findings(&r)
                .into_iter()
                .filter(|f| f["detector"] == "clock_skew")
                .collect::<Vec<_>>(),
        )
    };
    let (_, same_clock, none) = split("aligned", 0);
    assert_eq!(none, Vec::<Value>::new(), "same clock: no skew");
    assert!(
        same_clock["summaries"]["alignment"].is_null(),
        "nothing to align"
    );
    let (skewed, report, found) = split("skewed", SHIFT_NS);
    assert_eq!(found.len(), 1, "{found:?}");
    let f = &found[0];
    assert_eq!(
        (f["host"].as_str(), f["reference"].as_str()),
        (Some("node-2"), Some("node-1"))
    );
    // An open and a close on the shared file.
    assert_eq!(f["matched_calls"], 2);
    let shift = SHIFT_NS as f64 / 1e9;
    let (low, high) = (
        f["ahead_at_least_seconds"].as_f64().unwrap(),
        f["ahead_at_most_seconds"].as_f64().unwrap(),
    );
    assert!(low <= shift && shift <= high, "{low} <= {shift} <= {high}");
    assert!(low > shift / 2.0, "the bound is tight: {low}");
    // The other queries see node-2's times moved back by the middle of the bounds: the jobs
    // summary's start of node-2 is where it was before the skew, to within the bounds' width.
    let alignment = report["summaries"]["alignment"]
        .as_array()
        .expect("an alignment");
    assert_eq!(alignment.len(), 1);
    assert_eq!(alignment[0]["host"], "node-2");
    let moved = alignment[0]["shift_seconds"].as_f64().unwrap();
    assert!(-high <= moved && moved <= -low, "{moved}");
    let start = |r: &Value| {
        r["summaries"]["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["host"] == "node-2")
            .and_then(|j| j["start_ns"].as_i64())
            .unwrap()
    };
    let error_ns = (start(&report) - start(&same_clock)).abs();
    assert!(
        error_ns as f64 <= (high - low) * 1e9 / 2.0 + 1.0,
        "off by {error_ns} ns"
    );
    // Spark finds the same.
    let out = Command::new("python3")
        .arg(common::repo_root().join("report/spark_report.py"))
        .arg(&skewed)
        .args(["--query", "clock_skew"])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let spark: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(canon(&findings(&spark)), canon(&found));
}
