//! `strata report --format html`: one self-contained page (no network, no external script)
//! with the report's tables and four plots drawn as SVG in the browser: bytes per layer,
//! request sizes per layer, a per-rank timeline coloured by layer, and offset against time
//! for the busiest files. The plot data are small SQL queries over the same views; large
//! runs are sampled to a bounded number of marks.
use std::path::Path;

use serde_json::{Map, Value as Json, json};

use crate::report::{Answer, Kind, open, select};

/// At most this many calls on the timeline (the longest ones) and points per file.
const MAX_MARKS: usize = 20_000;
const MAX_POINTS_PER_FILE: usize = 5_000;
/// Files shown in the offset plot (those with the most POSIX bytes).
const OFFSET_FILES: usize = 4;

const TEMPLATE: &str = include_str!("../../report/report.html");

/// Regular files the job used (not devices, kernel or system files).
const JOB_FILES: &str = "f.path LIKE '/%' AND f.path NOT LIKE '/dev/%' AND f.path NOT LIKE \
     '/proc/%' AND f.path NOT LIKE '/sys/%' AND f.path NOT LIKE '/etc/%' AND f.path NOT LIKE '/usr/%'";

fn objects(conn: &duckdb::Connection, sql: &str) -> anyhow::Result<Vec<Json>> {
    let (cols, rows) = select(conn, sql)?;
    Ok(rows
        .into_iter()
        .map(|r| Json::Object(cols.iter().cloned().zip(r).collect::<Map<_, _>>()))
        .collect())
}

/// The plot data of the dataset at `dir` (node clocks aligned as the report's answers say).
pub fn plot_data(dir: &Path, answers: &[Answer]) -> anyhow::Result<Json> {
    let (conn, present) = open(dir)?;
    crate::report::apply_alignment(&conn, dir, &present, answers)?;
    if !present.contains(&"calls") {
        return Ok(json!({}));
    }
    let has = |t: &str| present.contains(&t);
    let t0 = select(&conn, "SELECT min(ts_begin_ns) FROM calls")?
        .1
        .first()
        .and_then(|r| r[0].as_i64())
        .unwrap_or(0);
    let sizes = objects(
        &conn,
        "SELECT layer, op, CAST(floor(log2(bytes_result)) AS INTEGER) AS bucket, count(*) AS calls \
         FROM calls WHERE op IN ('read', 'write') AND bytes_result > 0 \
         GROUP BY layer, op, bucket ORDER BY layer, op, bucket",
    )?;
    let rank = if has("processes") {
        "(SELECT max(p.rank) FROM processes p WHERE p.host = c.host AND p.pid = c.pid)"
    } else {
        "NULL"
    };
    let timeline = objects(
        &conn,
        &format!(
            "SELECT c.host, c.pid, {rank} AS rank, c.layer, c.function, \
             (c.ts_begin_ns - {t0}) / 1e9 AS t, (c.ts_end_ns - c.ts_begin_ns) / 1e9 AS d \
             FROM calls c WHERE c.ts_end_ns IS NOT NULL \
             ORDER BY c.ts_end_ns - c.ts_begin_ns DESC, c.host, c.call_id LIMIT {MAX_MARKS}"
        ),
    )?;
    let offsets = if has("files") {
        objects(
            &conn,
            &format!(
                "WITH busy AS ( \
                   SELECT f.host, f.file_id, f.path, sum(c.bytes_result) AS bytes \
                   FROM calls c JOIN files f ON f.host = c.host AND f.file_id = c.file_id \
                   WHERE c.layer = 'posix' AND c.op IN ('read', 'write') AND c.offset IS NOT NULL \
                     AND {JOB_FILES} \
                   GROUP BY f.host, f.file_id, f.path ORDER BY bytes DESC, f.path LIMIT {OFFSET_FILES}), \
                 pts AS ( \
                   SELECT b.path, b.bytes AS file_bytes, c.op, c.pid, {rank} AS rank, (c.ts_begin_ns - {t0}) / 1e9 AS t, \
                          c.offset, c.bytes_result AS bytes, \
                          row_number() OVER (PARTITION BY b.host, b.file_id ORDER BY c.ts_begin_ns) AS n, \
                          count(*) OVER (PARTITION BY b.host, b.file_id) AS total \
                   FROM calls c JOIN busy b ON b.host = c.host AND b.file_id = c.file_id \
                   WHERE c.layer = 'posix' AND c.op IN ('read', 'write') AND c.offset IS NOT NULL) \
                 SELECT path, op, pid, rank, t, \"offset\", bytes FROM pts \
                 WHERE (n - 1) % greatest(1, CAST(ceil(total / {MAX_POINTS_PER_FILE}.0) AS BIGINT)) = 0 \
                 ORDER BY file_bytes DESC, path, t"
            ),
        )?
    } else {
        Vec::new()
    };
    Ok(json!({ "sizes": sizes, "timeline": timeline, "offsets": offsets }))
}

/// The whole page: the report's answers as tables, and the plots.
pub fn render(dir: &Path, answers: &[Answer]) -> anyhow::Result<String> {
    let mut plots = plot_data(dir, answers)?;
    let layers = answers
        .iter()
        .find(|a| a.query.name == "layers")
        .map(Answer::objects)
        .unwrap_or_default();
    plots["layers"] = Json::Array(layers);
    let sections: Vec<Json> = answers
        .iter()
        .map(|a| {
            json!({
                "name": a.query.name,
                "title": a.query.title,
                "detector": a.query.kind == Kind::Detector,
                "about": a.query.about,
                "skipped": a.skipped,
                "columns": a.columns,
                "rows": a.rows,
            })
        })
        .collect();
    let data = json!({
        "dataset": dir.display().to_string(),
        "plots": plots,
        "sections": sections,
    });
    // Inside <script>: a "</" in a path or argument must not end the element.
    let text = serde_json::to_string(&data)?.replace("</", "<\\/");
    Ok(TEMPLATE.replacen("/*STRATA_DATA*/null", &text, 1))
}
