//! `strata report`: the SQL shipped in report/ (summaries and pattern detectors), run by an
//! embedded DuckDB over a dataset, printed for people or as JSON for scripts.
//!
//! Each query reads views named like the tables (`calls`, `files`, ...), so the same files run
//! in the DuckDB CLI or Spark SQL once those views exist (docs/report.md). A query's header
//! comment says what it is (`-- summary:` or `-- detector:`), its title, the tables it needs,
//! and for detectors the definition, threshold and rationale.
use std::{fmt::Write as _, path::Path};

use anyhow::Context as _;
use duckdb::{Connection, types::Value};
use serde_json::{Map, Value as Json, json};

/// The shipped queries, in report order.
pub const QUERIES: &[(&str, &str)] = &[
    ("layers", include_str!("../../report/layers.sql")),
    ("processes", include_str!("../../report/ranks.sql")),
    ("files", include_str!("../../report/files.sql")),
    ("handles", include_str!("../../report/handles.sql")),
    ("jobs", include_str!("../../report/jobs.sql")),
    ("slow_calls", include_str!("../../report/slow_calls.sql")),
    (
        "failed_calls",
        include_str!("../../report/failed_calls.sql"),
    ),
    (
        "small_operations",
        include_str!("../../report/small_operations.sql"),
    ),
    (
        "single_writer",
        include_str!("../../report/single_writer.sql"),
    ),
    (
        "metadata_storm",
        include_str!("../../report/metadata_storm.sql"),
    ),
    (
        "shared_directory",
        include_str!("../../report/shared_directory.sql"),
    ),
    (
        "collective_buffering",
        include_str!("../../report/collective_buffering.sql"),
    ),
    (
        "hidden_files",
        include_str!("../../report/hidden_files.sql"),
    ),
    (
        "failed_lookups",
        include_str!("../../report/failed_lookups.sql"),
    ),
    ("pipe_stages", include_str!("../../report/pipe_stages.sql")),
    (
        "layer_amplification",
        include_str!("../../report/layer_amplification.sql"),
    ),
    (
        "data_sieving",
        include_str!("../../report/data_sieving.sql"),
    ),
    (
        "stripe_alignment",
        include_str!("../../report/stripe_alignment.sql"),
    ),
    ("clock_skew", include_str!("../../report/clock_skew.sql")),
];

/// Tables a dataset may hold (docs/schema.md).
pub const TABLES: &[&str] = &[
    "calls",
    "handles",
    "files",
    "processes",
    "mounts",
    "run",
    "probes",
    "block",
    "pagecache",
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Summary,
    Detector,
}

/// A query and what its header says about it.
#[derive(Debug, Clone)]
pub struct Query {
    pub name: &'static str,
    pub kind: Kind,
    pub title: String,
    pub needs: Vec<String>,
    /// Definition, threshold and rationale (detectors), as written in the header.
    pub about: String,
    pub sql: &'static str,
}

impl Query {
    pub fn parse(name: &'static str, sql: &'static str) -> Query {
        let header: Vec<&str> = sql
            .lines()
            .take_while(|l| l.starts_with("--"))
            .map(|l| l.trim_start_matches("--").trim())
            .collect();
        let field = |key: &str| {
            header
                .iter()
                .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_string()))
        };
        let kind = if field("detector:").is_some() {
            Kind::Detector
        } else {
            Kind::Summary
        };
        let about = header
            .iter()
            .skip_while(|l| !l.starts_with("definition:"))
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
        Query {
            name,
            kind,
            title: field("title:").unwrap_or_else(|| name.to_string()),
            needs: field("needs:")
                .unwrap_or_default()
                .split(',')
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .collect(),
            about,
            sql,
        }
    }
}

pub fn queries() -> Vec<Query> {
    QUERIES.iter().map(|(n, s)| Query::parse(n, s)).collect()
}

/// One query's answer: column names and rows as JSON values.
#[derive(Debug, Clone)]
pub struct Answer {
    pub query: Query,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Json>>,
    /// Set when the query could not run (a table it needs is absent).
    pub skipped: Option<String>,
}

impl Answer {
    /// The rows as JSON objects keyed by column name.
    pub fn objects(&self) -> Vec<Json> {
        self.rows
            .iter()
            .map(|r| {
                Json::Object(
                    self.columns
                        .iter()
                        .cloned()
                        .zip(r.iter().cloned())
                        .collect::<Map<_, _>>(),
                )
            })
            .collect()
    }
}

fn has_parquet(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.filter_map(Result::ok).any(|e| {
        let p = e.path();
        if p.is_dir() {
            has_parquet(&p)
        } else {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.ends_with(".parquet") && !name.starts_with('.')
        }
    })
}

/// SQL that defines one view per table present under `dir` (as the queries expect them).
pub fn view_sql(dir: &Path) -> (String, Vec<&'static str>) {
    let mut sql = String::new();
    let mut present = Vec::new();
    for t in TABLES {
        if has_parquet(&dir.join(t)) {
            let glob = dir.join(t).join("**").join("*.parquet");
            let _ = writeln!(
                sql,
                "CREATE OR REPLACE VIEW {t} AS SELECT * FROM read_parquet('{}', hive_partitioning = true, union_by_name = true);",
                glob.display().to_string().replace('\'', "''")
            );
            present.push(*t);
        }
    }
    (sql, present)
}

fn to_json(v: Value) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Boolean(b) => json!(b),
        Value::TinyInt(i) => json!(i),
        Value::SmallInt(i) => json!(i),
        Value::Int(i) => json!(i),
        Value::BigInt(i) => json!(i),
        Value::HugeInt(i) => i64::try_from(i).map_or_else(|_| json!(i as f64), |i| json!(i)),
        Value::UTinyInt(i) => json!(i),
        Value::USmallInt(i) => json!(i),
        Value::UInt(i) => json!(i),
        Value::UBigInt(i) => json!(i),
        Value::Float(f) => json!(f),
        Value::Double(f) => json!(f),
        Value::Decimal(d) => d
            .to_string()
            .parse::<f64>()
            .map_or_else(|_| json!(d.to_string()), |f| json!(f)),
        Value::Text(s) => json!(s),
        other => json!(format!("{other:?}")),
    }
}

/// Runs one query: its column names and rows as JSON values.
pub fn select(conn: &Connection, sql: &str) -> anyhow::Result<(Vec<String>, Vec<Vec<Json>>)> {
    let mut stmt = conn.prepare(sql)?;
    let mut rows = Vec::new();
    {
        let mut rs = stmt.query([])?;
        while let Some(row) = rs.next()? {
            let n = row.as_ref().column_count();
            rows.push(
                (0..n)
                    .map(|i| row.get::<_, Value>(i).map(to_json))
                    .collect::<Result<Vec<_>, _>>()?,
            );
        }
    }
    Ok((stmt.column_names(), rows))
}

/// A DuckDB connection with one view per table of the dataset at `dir`, and those tables.
pub fn open(dir: &Path) -> anyhow::Result<(Connection, Vec<&'static str>)> {
    anyhow::ensure!(
        dir.join("calls").is_dir() || dir.join("run").is_dir(),
        "{} is not a strata dataset (no calls/ or run/ table in it)",
        dir.display()
    );
    let conn = Connection::open_in_memory().context("cannot start DuckDB")?;
    let (views, present) = view_sql(dir);
    conn.execute_batch(&views)
        .with_context(|| format!("cannot read the dataset at {}", dir.display()))?;
    Ok((conn, present))
}

/// Runs every shipped query over the dataset at `dir`.
///
/// Node clocks first: when `clock_skew` bounds a host's offset against the reference host
/// (the first by name), the other queries see that host's times shifted by the middle of
/// the bounds, and an `alignment` summary says so.
pub fn run(dir: &Path) -> anyhow::Result<Vec<Answer>> {
    let (conn, present) = open(dir)?;
    let mut out = Vec::new();
    let mut queries = queries();
    // clock_skew runs on the recorded times, before any alignment.
    queries.sort_by_key(|q| q.name != "clock_skew");
    let mut shifts = Vec::new();
    for q in queries {
        if let Some(missing) = q.needs.iter().find(|t| !present.contains(&t.as_str())) {
            out.push(Answer {
                skipped: Some(format!("no {missing} table in the dataset")),
                columns: Vec::new(),
                rows: Vec::new(),
                query: q,
            });
            continue;
        }
        let (columns, rows) =
            select(&conn, q.sql).with_context(|| format!("report query {}", q.name))?;
        let answer = Answer {
            query: q,
            columns,
            rows,
            skipped: None,
        };
        if answer.query.name == "clock_skew" {
            let reference = select(&conn, "SELECT min(host) FROM calls")?
                .1
                .first()
                .and_then(|r| r[0].as_str().map(str::to_string));
            shifts = alignment(&answer, reference.as_deref());
            if !shifts.is_empty() {
                conn.execute_batch(&aligned_views(dir, &present, &shifts))
                    .context("aligning node clocks")?;
            }
        }
        out.push(answer);
    }
    // The report's order: clock_skew back among the detectors, the alignment after it.
    let skew = out.remove(0);
    out.push(skew);
    if !shifts.is_empty() {
        out.push(Answer {
            query: Query::parse("alignment", ALIGNMENT_HEADER),
            columns: [
                "host",
                "reference",
                "shift_seconds",
                "ahead_at_least_seconds",
                "ahead_at_most_seconds",
            ]
            .map(String::from)
            .to_vec(),
            rows: shifts
                .iter()
                .map(|s| {
                    vec![
                        json!(s.host),
                        json!(s.reference),
                        json!(-s.ahead),
                        json!(s.low),
                        json!(s.high),
                    ]
                })
                .collect(),
            skipped: None,
        });
    }
    Ok(out)
}

const ALIGNMENT_HEADER: &str = "-- summary: alignment
-- title: Node clocks aligned for the other queries (from clock_skew)
-- needs: calls, files
";

/// A host's clock offset against the reference host, as clock_skew bounds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Shift {
    pub host: String,
    pub reference: String,
    /// Seconds the host's clock is ahead of the reference's (the middle of the bounds).
    pub ahead: f64,
    pub low: f64,
    pub high: f64,
}

/// Offsets of hosts against `reference` from clock_skew's findings (consistent bounds only).
fn alignment(skew: &Answer, reference: Option<&str>) -> Vec<Shift> {
    let Some(reference) = reference else {
        return Vec::new();
    };
    let col = |name: &str| skew.columns.iter().position(|c| c == name);
    let (Some(h), Some(r), Some(lo), Some(hi)) = (
        col("host"),
        col("reference"),
        col("ahead_at_least_seconds"),
        col("ahead_at_most_seconds"),
    ) else {
        return Vec::new();
    };
    let mut shifts: Vec<Shift> = Vec::new();
    for row in &skew.rows {
        let (Some(host), Some(refh), Some(low), Some(high)) = (
            row[h].as_str(),
            row[r].as_str(),
            row[lo].as_f64(),
            row[hi].as_f64(),
        ) else {
            continue;
        };
        if low > high {
            continue; // the clocks drifted during the run: no single offset fits
        }
        let mid = (low + high) / 2.0;
        // B ahead of the reference, or the reference ahead of A (A behind).
        let shift = if refh == reference {
            Some((host, mid, low, high))
        } else if host == reference {
            Some((refh, -mid, -high, -low))
        } else {
            None
        };
        if let Some((host, ahead, low, high)) = shift {
            if !shifts.iter().any(|s| s.host == host) {
                shifts.push(Shift {
                    host: host.to_string(),
                    reference: reference.to_string(),
                    ahead,
                    low,
                    high,
                });
            }
        }
    }
    shifts
}

/// Applies the alignment a report made (its `alignment` summary) to another connection's
/// views of the same dataset (the HTML plots).
pub fn apply_alignment(
    conn: &Connection,
    dir: &Path,
    present: &[&str],
    answers: &[Answer],
) -> anyhow::Result<()> {
    let Some(a) = answers.iter().find(|a| a.query.name == "alignment") else {
        return Ok(());
    };
    let shifts: Vec<Shift> = a
        .rows
        .iter()
        .filter_map(|r| {
            Some(Shift {
                host: r.first()?.as_str()?.to_string(),
                reference: r.get(1)?.as_str()?.to_string(),
                ahead: -r.get(2)?.as_f64()?,
                low: r.get(3)?.as_f64()?,
                high: r.get(4)?.as_f64()?,
            })
        })
        .collect();
    if !shifts.is_empty() {
        conn.execute_batch(&aligned_views(dir, present, &shifts))?;
    }
    Ok(())
}

/// Time columns of each table, shifted per host by the alignment.
const TIME_COLUMNS: &[(&str, &[&str])] = &[
    ("calls", &["ts_begin_ns", "ts_end_ns"]),
    ("handles", &["ts_created_ns", "ts_destroyed_ns"]),
    ("processes", &["start_ns", "end_ns"]),
    ("block", &["ts_queue_ns", "ts_issue_ns", "ts_complete_ns"]),
    ("pagecache", &["ts_begin_ns", "ts_end_ns"]),
];

fn aligned_views(dir: &Path, present: &[&str], shifts: &[Shift]) -> String {
    let offset = {
        let mut case = String::from("(CASE host");
        for s in shifts {
            let _ = write!(
                case,
                " WHEN '{}' THEN {}",
                s.host.replace('\'', "''"),
                (s.ahead * 1e9).round() as i64
            );
        }
        case.push_str(" ELSE 0 END)");
        case
    };
    let mut sql = String::new();
    for (table, cols) in TIME_COLUMNS {
        if !present.contains(table) {
            continue;
        }
        let replace = cols
            .iter()
            .map(|c| format!("{c} - {offset} AS {c}"))
            .collect::<Vec<_>>()
            .join(", ");
        let glob = dir.join(table).join("**").join("*.parquet");
        let _ = writeln!(
            sql,
            "CREATE OR REPLACE VIEW {table} AS SELECT * REPLACE ({replace}) FROM read_parquet('{}', hive_partitioning = true, union_by_name = true);",
            glob.display().to_string().replace('\'', "''")
        );
    }
    sql
}

/// `--format json`: `{"summaries": {name: [row objects]}, "findings": [{detector, ...}]}`.
pub fn to_json_report(answers: &[Answer]) -> Json {
    let mut summaries = Map::new();
    let mut findings = Vec::new();
    let mut detectors = Vec::new();
    for a in answers {
        let objects = a.objects();
        match a.query.kind {
            Kind::Summary => {
                summaries.insert(a.query.name.into(), Json::Array(objects));
            }
            Kind::Detector => {
                detectors.push(json!({
                    "detector": a.query.name,
                    "title": a.query.title,
                    "about": a.query.about,
                    "skipped": a.skipped,
                    "found": !objects.is_empty(),
                }));
                for o in objects {
                    findings.push(json!({ "detector": a.query.name, "where": o }));
                }
            }
        }
    }
    json!({ "summaries": summaries, "detectors": detectors, "findings": findings })
}

fn cell(v: &Json) -> String {
    match v {
        Json::Null => "-".into(),
        Json::String(s) => s.clone(),
        Json::Number(n) if n.is_f64() => format!("{:.6}", n.as_f64().unwrap_or(0.0)),
        other => other.to_string(),
    }
}

/// Nanoseconds since the epoch from this on (2001-09-09): no duration in a report comes near.
const EPOCH_NS_MIN: i64 = 1_000_000_000_000_000_000;

/// Whether column `i` holds times of day, to be shown as such on a terminal: named `*_ns`,
/// and each value shown a time since the epoch (or null).
fn time_column(name: &str, rows: &[Vec<Json>], i: usize) -> bool {
    name.ends_with("_ns")
        && rows.iter().any(|r| !r[i].is_null())
        && rows.iter().all(|r| match &r[i] {
            Json::Null => true,
            v => v.as_i64().is_some_and(|ns| ns >= EPOCH_NS_MIN),
        })
}

/// `ns` since the epoch as UTC, to the microsecond.
fn utc(ns: i64) -> String {
    chrono::DateTime::from_timestamp_nanos(ns)
        .format("%Y-%m-%d %H:%M:%S%.6f")
        .to_string()
}

/// Words of `text` in lines of at most `width` characters.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let line = lines.last_mut().expect("one line at least");
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(word.to_string());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines
}

/// A detector's `about` as its definition, threshold and rationale, each a paragraph of its
/// own (the header joins them into one line).
fn paragraphs(about: &str) -> Vec<&str> {
    let mut cuts: Vec<usize> = ["threshold:", "rationale:"]
        .iter()
        .filter_map(|key| about.find(&format!(" {key}")))
        .collect();
    cuts.sort_unstable();
    let mut parts = Vec::new();
    let mut start = 0;
    for cut in cuts {
        parts.push(about[start..cut].trim());
        start = cut;
    }
    parts.push(about[start..].trim());
    parts
}

/// Rows of each query shown on a terminal.
const TEXT_ROWS: usize = 20;

/// The terminal report: each summary as a table, then each detector's findings or "none".
pub fn to_text(answers: &[Answer]) -> String {
    let mut out = String::new();
    for a in answers {
        let tag = match a.query.kind {
            Kind::Summary => "",
            Kind::Detector => "pattern: ",
        };
        let _ = writeln!(out, "== {tag}{} ({})", a.query.title, a.query.name);
        if let Some(why) = &a.skipped {
            let _ = writeln!(out, "   skipped: {why}\n");
            continue;
        }
        if a.rows.is_empty() {
            let _ = writeln!(
                out,
                "   {}\n",
                if a.query.kind == Kind::Detector {
                    "not found"
                } else {
                    "no rows"
                }
            );
            continue;
        }
        if a.query.kind == Kind::Detector {
            for part in paragraphs(&a.query.about) {
                for l in wrap(part, 96) {
                    let _ = writeln!(out, "   {l}");
                }
            }
        }
        let rows = &a.rows[..a.rows.len().min(TEXT_ROWS)];
        let times: Vec<bool> = (0..a.columns.len())
            .map(|i| time_column(&a.columns[i], rows, i))
            .collect();
        let cells: Vec<Vec<String>> = rows
            .iter()
            .map(|r| {
                r.iter()
                    .zip(&times)
                    .map(|(v, &time)| match v.as_i64() {
                        Some(ns) if time => utc(ns),
                        _ => cell(v),
                    })
                    .collect()
            })
            .collect();
        let columns: Vec<String> = a
            .columns
            .iter()
            .zip(&times)
            .map(|(c, &time)| match c.strip_suffix("_ns") {
                Some(stem) if time => format!("{stem}_utc"),
                _ => c.clone(),
            })
            .collect();
        let widths: Vec<usize> = columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                cells
                    .iter()
                    .map(|r| r[i].chars().count())
                    .chain([c.len()])
                    .max()
                    .unwrap_or(0)
                    .min(60)
            })
            .collect();
        let line = |vals: &[String]| {
            vals.iter()
                .zip(&widths)
                .map(|(v, w)| format!("{v:<w$}"))
                .collect::<Vec<_>>()
                .join("  ")
        };
        let _ = writeln!(out, "   {}", line(&columns));
        for r in &cells {
            let _ = writeln!(out, "   {}", line(r));
        }
        if a.rows.len() > TEXT_ROWS {
            let _ = writeln!(
                out,
                "   ... {} more rows (--format json has them all)",
                a.rows.len() - TEXT_ROWS
            );
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_since_the_epoch_show_as_utc_and_durations_stay_numbers() {
        let answer = Answer {
            query: Query {
                name: "t",
                kind: Kind::Summary,
                title: "t".into(),
                needs: vec![],
                about: String::new(),
                sql: "",
            },
            columns: vec!["first_ns".into(), "wait_ns".into(), "last_ns".into()],
            rows: vec![
                vec![
                    Json::from(1_795_876_442_785_558_751_i64),
                    Json::from(1_500_i64),
                    Json::Null,
                ],
                vec![
                    Json::from(1_795_876_442_810_286_167_i64),
                    Json::from(2_000_000_000_000_000_000_i64),
                    Json::from(1_795_876_442_811_000_000_i64),
                ],
            ],
            skipped: None,
        };
        let text = to_text(&[answer]);
        let lines: Vec<&str> = text.lines().collect();
        let words = |l: &str| l.split_whitespace().map(String::from).collect::<Vec<_>>();
        assert_eq!(words(lines[1]), ["first_utc", "wait_ns", "last_utc"]);
        assert_eq!(
            words(lines[2]),
            ["2026-11-28", "14:34:02.785558", "1500", "-"]
        );
        assert_eq!(
            words(lines[3]),
            [
                "2026-11-28",
                "14:34:02.810286",
                "2000000000000000000",
                "2026-11-28",
                "14:34:02.811000"
            ]
        );
    }

    #[test]
    fn a_detectors_definition_threshold_and_rationale_are_paragraphs_of_their_own() {
        let about = "definition: calls on one file threshold: at least 2 rationale: it costs";
        assert_eq!(
            paragraphs(about),
            [
                "definition: calls on one file",
                "threshold: at least 2",
                "rationale: it costs"
            ]
        );
        for q in queries().iter().filter(|q| q.kind == Kind::Detector) {
            let parts = paragraphs(&q.about);
            assert_eq!(parts.len(), 3, "{}: {parts:?}", q.name);
            for (part, key) in parts
                .iter()
                .zip(["definition:", "threshold:", "rationale:"])
            {
                assert!(part.starts_with(key), "{}: {part}", q.name);
            }
        }
    }

    #[test]
    fn every_shipped_query_says_what_it_is() {
        for q in queries() {
            assert!(!q.needs.is_empty(), "{}: no `needs:`", q.name);
            assert!(
                q.needs.iter().all(|t| TABLES.contains(&t.as_str())),
                "{}",
                q.name
            );
            if q.kind == Kind::Detector {
                for part in ["definition:", "threshold:", "rationale:"] {
                    assert!(q.about.contains(part), "{}: no {part}", q.name);
                }
            }
        }
    }
}
