//! `strata report --format html`, rendered by headless Chromium: the page's scripts draw the
//! four plots from the embedded data, and the marks they drew (read back from the DOM) match
//! the workload: 4 ranks writing 1000 interleaved 640-byte records each through
//! MPI_File_write_at (tests/workloads/patterns.c, mode mpi_small).
mod common;

use std::{collections::HashMap, path::Path, process::Command};

use common::{build_c, require_root, rows, run, scratch, strata};

/// The DOM after the page's scripts ran, from headless Chromium.
fn render(page: &Path, profile: &Path) -> String {
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs (Debian package chromium, installed by `cargo xtask setup`)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The markup of the element with this id, up to its closing tag.
fn element<'a>(dom: &'a str, id: &str, close: &str) -> &'a str {
    let start = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no element {id}"));
    let start = dom[..start].rfind('<').unwrap();
    let end = dom[start..].find(close).unwrap() + start;
    &dom[start..end]
}

/// Attributes of every `<tag ...>` in `markup`.
fn tags(markup: &str, tag: &str) -> Vec<HashMap<String, String>> {
    let open = format!("<{tag} ");
    markup
        .match_indices(&open)
        .map(|(i, _)| {
            let body = &markup[i + open.len()..];
            let body = &body[..body.find('>').unwrap()];
            let mut attrs = HashMap::new();
            let mut rest = body;
            while let Some(eq) = rest.find("=\"") {
                let name = rest[..eq].trim().to_string();
                let after = &rest[eq + 2..];
                let close = after.find('"').unwrap();
                attrs.insert(name, after[..close].to_string());
                rest = &after[close + 1..];
            }
            attrs
        })
        .collect()
}

fn attr(markup: &str, name: &str) -> Option<String> {
    let first = &markup[..markup.find('>').unwrap()];
    tags(&format!("{first}>"), first[1..].split(' ').next().unwrap())
        .first()
        .and_then(|a| a.get(name).cloned())
}

#[test]
fn the_html_report_draws_its_plots_from_the_trace() {
    require_root();
    let dir = scratch("html");
    let exe = build_c("mpicc", "patterns.c", &dir.join("patterns"), &[]);
    let file = dir.join("bt.dat");
    let out = dir.join("out");
    common::record_mpi(
        &["--layers", "posix,mpiio"],
        &out,
        4,
        &exe,
        &["mpi_small".as_ref(), file.as_os_str()],
        &[],
    );
    let res = run(strata().args(["report", "--format", "html"]).arg(&out));
    assert!(res.status.success());
    let page = dir.join("report.html");
    std::fs::write(&page, &res.stdout).unwrap();
    let html = String::from_utf8_lossy(&res.stdout);
    assert!(
        !html.contains("src=\"http") && !html.contains("href=\"http"),
        "self-contained"
    );

    let dom = render(&page, &dir.join("chrome-profile"));
    assert!(
        dom.contains("data-rendered=\"yes\""),
        "the page's script ran to the end"
    );

    // Bytes per layer: MPI-IO wrote 4 x 1000 x 640 bytes.
    let bytes = element(&dom, "plot-bytes", "</svg>");
    let mpi_write = tags(bytes, "rect")
        .into_iter()
        .find(|r| {
            r.get("data-layer").map(String::as_str) == Some("mpiio")
                && r.get("data-op").map(String::as_str) == Some("write")
        })
        .expect("an MPI-IO write bar");
    assert_eq!(mpi_write["data-bytes"], "2560000");

    // Request sizes: 4000 MPI-IO writes of 640 B in the 512-1023 bucket (2^9).
    let sizes = element(&dom, "plot-sizes", "</svg>");
    let bars = tags(sizes, "rect");
    let mpi: Vec<_> = bars
        .iter()
        .filter(|r| r.get("data-layer").map(String::as_str) == Some("mpiio"))
        .collect();
    assert_eq!(mpi.len(), 1, "{mpi:?}");
    assert_eq!(
        (
            mpi[0]["data-bucket"].as_str(),
            mpi[0]["data-calls"].as_str()
        ),
        ("9", "4000")
    );
    let posix_640 = bars
        .iter()
        .find(|r| {
            r.get("data-layer").map(String::as_str) == Some("posix")
                && r.get("data-bucket").map(String::as_str) == Some("9")
        })
        .expect("POSIX writes of 640 B");
    assert!(posix_640["data-calls"].parse::<i64>().unwrap() >= 4000);

    // Timeline: one bar per finished call, one lane per process with the 4 ranks named.
    let calls = rows(&out, "calls");
    let finished = calls
        .iter()
        .filter(|c| matches!(c.get("ts_end_ns"), Some(common::Val::I(_))))
        .count();
    let timeline = element(&dom, "plot-timeline", "</svg>");
    assert_eq!(
        attr(timeline, "data-marks"),
        Some(finished.min(20_000).to_string())
    );
    assert_eq!(
        tags(timeline, "rect")
            .iter()
            .filter(|r| r.contains_key("data-lane"))
            .count(),
        finished.min(20_000)
    );
    for r in 0..4 {
        assert!(
            timeline.contains(&format!(">rank {r}<")),
            "lane of rank {r}"
        );
    }

    // Offsets: the data file first (the most bytes), a mark per POSIX write, the last record
    // of rank 3 at (999 * 4 + 3) * 640.
    let first = element(&dom, "plot-offsets-0", "</svg>");
    assert_eq!(attr(first, "data-path").as_deref(), file.to_str());
    let marks = tags(first, "rect");
    let offsets: Vec<i64> = marks
        .iter()
        .filter_map(|m| m.get("data-offset").map(|o| o.parse().unwrap()))
        .collect();
    assert_eq!(offsets.len(), 4000);
    assert_eq!(offsets.iter().max(), Some(&((999 * 4 + 3) * 640)));
    assert!(offsets.iter().all(|o| o % 640 == 0));

    // The report's tables are on the page too.
    assert!(dom.contains("id=\"table-small_operations\""));
    assert!(dom.contains("id=\"table-layers\""));
}
