#!/usr/bin/env python3
"""Run strata's report queries in Apache Spark over a dataset of one or many nodes.

    spark-submit report/spark_report.py /shared/strata/4242          # or: python3 ...
    python3 report/spark_report.py DATASET --query small_operations

Each table directory (calls/, files/, ...) holds one host=<node> partition per node; Spark
reads them all as one table with a `host` column, as DuckDB does in `strata report`. The
output is JSON shaped like `strata report --format json`: {"summaries": {name: [rows]},
"findings": [{"detector": name, "where": row}]}.
"""
import argparse
import decimal
import glob
import json
import os
import sys

TABLES = ["calls", "handles", "files", "processes", "mounts", "run", "probes", "block", "pagecache"]


def queries(report_dir):
    """(kind, name, needs, sql) of each shipped query, from its header."""
    out = []
    for path in sorted(glob.glob(os.path.join(report_dir, "*.sql"))):
        with open(path) as f:
            sql = f.read()
        header = {}
        for line in sql.splitlines():
            if not line.startswith("--"):
                break
            key, _, value = line[2:].strip().partition(":")
            header.setdefault(key.strip(), value.strip())
        kind = "detector" if "detector" in header else "summary"
        needs = [t.strip() for t in header.get("needs", "").split(",") if t.strip()]
        out.append((kind, header.get(kind, os.path.basename(path)[:-4]), needs, sql))
    return out


def plain(v):
    if isinstance(v, decimal.Decimal):
        return float(v)
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset", help="a dataset directory (its tables are subdirectories)")
    ap.add_argument("--query", action="append", help="run only these queries (by name)")
    ap.add_argument(
        "--report-dir",
        default=os.path.dirname(os.path.abspath(__file__)),
        help="where the .sql files are (default: next to this script)",
    )
    args = ap.parse_args()

    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.appName("strata-report")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    present = []
    for t in TABLES:
        d = os.path.join(args.dataset, t)
        if glob.glob(os.path.join(d, "**", "*.parquet"), recursive=True):
            spark.read.option("mergeSchema", "true").parquet(d).createOrReplaceTempView(t)
            present.append(t)
    if "calls" not in present and "run" not in present:
        sys.exit(f"{args.dataset} is not a strata dataset (no calls/ or run/ table in it)")

    report = {"summaries": {}, "findings": [], "skipped": {}}
    for kind, name, needs, sql in queries(args.report_dir):
        if args.query and name not in args.query:
            continue
        missing = [t for t in needs if t not in present]
        if missing:
            report["skipped"][name] = f"no {missing[0]} table in the dataset"
            continue
        rows = [{k: plain(v) for k, v in r.asDict().items()} for r in spark.sql(sql).collect()]
        if kind == "summary":
            report["summaries"][name] = rows
        else:
            report["findings"].extend({"detector": name, "where": r} for r in rows)
    json.dump(report, sys.stdout, indent=1, default=str)
    print()
    spark.stop()


if __name__ == "__main__":
    main()
