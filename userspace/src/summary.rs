//! The short report printed at the end of `strata record`: per layer, what was called and how
//! many bytes moved, counted as rows are produced (no second pass over the dataset).
use std::fmt::Write as _;

use crate::{
    fast::{HashMap, Recent},
    probes::{Layer, Op},
    schema::{BlockRow, CallRow},
};

#[derive(Debug, Default, Clone)]
pub struct LayerStats {
    pub calls: u64,
    pub reads: u64,
    pub writes: u64,
    pub bytes_read: i64,
    pub bytes_written: i64,
    pub errors: u64,
    /// Time inside calls of this layer that have no parent in the same layer.
    pub time_ns: i64,
}

#[derive(Debug, Default)]
pub struct Summary {
    /// Per layer, by `Layer as usize` (a call's layer and op come as the probe's, not as
    /// the row's names: comparing strings took half of this module's work per call).
    layers: [LayerStats; Layer::COUNT],
    /// POSIX-layer traffic per file id, in a slab that `index` finds by id. `recent` holds
    /// the files of the last calls and their slots: calls come in runs on one file, or
    /// alternate between a few (a process reading one file and writing another, ranks'
    /// calls interleaved), and each looked its file up again (5% of a record's work).
    files: Vec<(i64, LayerStats)>,
    index: HashMap<i64, usize>,
    recent: Recent<i64, usize, RECENT_FILES>,
    pub processes: u64,
}

/// Files found without a lookup.
const RECENT_FILES: usize = 4;

/// Files listed in the summary, most bytes first.
const TOP_FILES: usize = 5;

/// Per-file counts kept: past this, only the busiest `KEEP_FILES` stay (a node traced for
/// days sees millions of files; the summary lists five).
const MAX_FILES: usize = 100_000;
const KEEP_FILES: usize = 10_000;

impl Summary {
    /// A block request counts as a call of layer `block` (time: queue to completion).
    pub fn add_block(&mut self, row: &BlockRow) {
        let s = &mut self.layers[Layer::Block as usize];
        s.calls += 1;
        match &*row.op {
            "read" => {
                s.reads += 1;
                s.bytes_read = s.bytes_read.saturating_add(row.bytes);
            }
            "write" => {
                s.writes += 1;
                s.bytes_written = s.bytes_written.saturating_add(row.bytes);
            }
            _ => {}
        }
        if row.error.is_some() {
            s.errors += 1;
        }
        s.time_ns = s.time_ns.saturating_add(
            row.ts_complete_ns
                .unwrap_or(row.ts_queue_ns)
                .saturating_sub(row.ts_queue_ns),
        );
    }

    /// Keeps the `KEEP_FILES` files with the most bytes; the slots move, so none is
    /// remembered after.
    fn prune_files(&mut self) {
        self.files.sort_unstable_by_key(|(id, s)| {
            (
                std::cmp::Reverse(s.bytes_read.saturating_add(s.bytes_written)),
                *id,
            )
        });
        self.files.truncate(KEEP_FILES);
        self.index = (self.files.iter().enumerate())
            .map(|(slot, (id, _))| (*id, slot))
            .collect();
        self.recent.clear();
    }

    /// What a layer's calls did.
    pub fn layer(&self, layer: Layer) -> &LayerStats {
        &self.layers[layer as usize]
    }

    /// A call of `layer` doing `op` (its probe's), written as `row`.
    pub fn add_call(&mut self, layer: Layer, op: Op, row: &CallRow) {
        self.layers[layer as usize].add(op, row);
        // The bytes that reached each file: syscalls' and io_uring and AIO requests' (no
        // syscall of the process moves a request's bytes, so none is counted twice).
        if matches!(layer, Layer::Posix | Layer::Uring | Layer::Aio) {
            let bytes = row.bytes_result.unwrap_or(0);
            // A copy reads its first file and writes its second.
            if op == Op::Copy {
                if let Some(f) = row.file_id {
                    self.file(f).read(bytes);
                }
                if let Some(f) = row.file2_id {
                    self.file(f).written(bytes);
                }
            } else if let Some(f) = row.file_id {
                self.file(f).add(op, row);
            }
        }
    }

    /// The counts of file `id`, remembered among the recent ones.
    #[inline(always)]
    fn file(&mut self, id: i64) -> &mut LayerStats {
        let slot = match self.recent.get(id) {
            Some(slot) => slot,
            None => self.switch_file(id),
        };
        &mut self.files[slot].1
    }

    fn switch_file(&mut self, id: i64) -> usize {
        if self.files.len() >= MAX_FILES && !self.index.contains_key(&id) {
            self.prune_files();
        }
        let files = &mut self.files;
        let slot = *self.index.entry(id).or_insert_with(|| {
            files.push((id, LayerStats::default()));
            files.len() - 1
        });
        self.recent.put(id, slot);
        slot
    }

    /// Every file's counts.
    fn files(&self) -> impl Iterator<Item = (&i64, &LayerStats)> {
        self.files.iter().map(|(id, s)| (id, s))
    }

    /// The summary table; `path_of` names files by id, `mount_of` gives the file system
    /// (type, mount point) a file is on.
    pub fn render(
        &self,
        path_of: impl Fn(i64) -> Option<String>,
        mount_of: impl Fn(i64) -> Option<(String, String)>,
    ) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<8} {:>10} {:>9} {:>12} {:>9} {:>12} {:>7} {:>10}",
            "layer", "calls", "reads", "bytes read", "writes", "bytes written", "errors", "time s"
        );
        // Layers in name order, those with calls.
        let mut layers: Vec<(&str, &LayerStats)> = (Layer::ALL.iter().copied())
            .zip(&self.layers)
            .filter(|(_, s)| s.calls > 0)
            .collect();
        layers.sort_by_key(|(name, _)| *name);
        for (name, s) in layers {
            let _ = writeln!(
                out,
                "{:<8} {:>10} {:>9} {:>12} {:>9} {:>12} {:>7} {:>10.3}",
                name,
                s.calls,
                s.reads,
                human(s.bytes_read),
                s.writes,
                human(s.bytes_written),
                s.errors,
                s.time_ns as f64 / 1e9
            );
        }
        let mut files: Vec<_> = self
            .files()
            .filter(|(_, s)| s.bytes_read.saturating_add(s.bytes_written) > 0)
            .collect();
        files.sort_by_key(|(id, s)| {
            (
                std::cmp::Reverse(s.bytes_read.saturating_add(s.bytes_written)),
                **id,
            )
        });
        if !files.is_empty() {
            let _ = writeln!(out, "\nfiles with the most POSIX traffic:");
            let _ = writeln!(
                out,
                "{:>9} {:>12} {:>9} {:>12}  path",
                "reads", "bytes read", "writes", "bytes written"
            );
        }
        for (id, s) in files.iter().take(TOP_FILES) {
            let _ = writeln!(
                out,
                "{:>9} {:>12} {:>9} {:>12}  {}",
                s.reads,
                human(s.bytes_read),
                s.writes,
                human(s.bytes_written),
                path_of(**id).unwrap_or_else(|| format!("file {id}"))
            );
        }
        by_file_system(&mut out, &files, mount_of);
        out
    }
}

/// The POSIX traffic of the files per file system (type and mount point), most bytes first:
/// which of the node's file systems a job's I/O went to. Pipes, sockets and files whose mount
/// strata could not read are left out; nothing is printed when no file's mount is known.
fn by_file_system(
    out: &mut String,
    files: &[(&i64, &LayerStats)],
    mount_of: impl Fn(i64) -> Option<(String, String)>,
) {
    let mut per: HashMap<(String, String), (LayerStats, u64)> = HashMap::default();
    for (id, s) in files {
        let Some(m) = mount_of(**id) else { continue };
        let e = per.entry(m).or_default();
        e.0.reads += s.reads;
        e.0.writes += s.writes;
        e.0.bytes_read = e.0.bytes_read.saturating_add(s.bytes_read);
        e.0.bytes_written = e.0.bytes_written.saturating_add(s.bytes_written);
        e.1 += 1;
    }
    let mut per: Vec<_> = per.into_iter().collect();
    per.sort_by(|(ka, (a, _)), (kb, (b, _))| {
        let bytes =
            |s: &LayerStats| std::cmp::Reverse(s.bytes_read.saturating_add(s.bytes_written));
        (bytes(a), ka).cmp(&(bytes(b), kb))
    });
    if per.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nPOSIX traffic per file system:");
    let _ = writeln!(
        out,
        "{:>9} {:>12} {:>9} {:>12} {:>7}  type and mount point",
        "reads", "bytes read", "writes", "bytes written", "files"
    );
    for ((fs_type, point), (s, n)) in per.into_iter().take(TOP_FILES) {
        let _ = writeln!(
            out,
            "{:>9} {:>12} {:>9} {:>12} {:>7}  {fs_type} {point}",
            s.reads,
            human(s.bytes_read),
            s.writes,
            human(s.bytes_written),
            n,
        );
    }
}

impl LayerStats {
    fn add(&mut self, op: Op, row: &CallRow) {
        let s = self;
        s.calls += 1;
        let bytes = row.bytes_result.unwrap_or(0);
        match op {
            Op::Read => s.read(bytes),
            Op::Write => s.written(bytes),
            Op::Copy => {
                s.read(bytes);
                s.written(bytes);
            }
            _ => {}
        }
        if row.errno.is_some() {
            s.errors += 1;
        }
        s.time_ns = s
            .time_ns
            .saturating_add(row.ts_end_ns.saturating_sub(row.ts_begin_ns));
    }

    fn read(&mut self, bytes: i64) {
        self.reads += 1;
        self.bytes_read = self.bytes_read.saturating_add(bytes);
    }

    fn written(&mut self, bytes: i64) {
        self.writes += 1;
        self.bytes_written = self.bytes_written.saturating_add(bytes);
    }
}

/// Bytes with a binary unit.
pub fn human(b: i64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v.abs() >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_renders() {
        let mut s = Summary::default();
        let row = |bytes| CallRow {
            file_id: Some(1),
            bytes_result: Some(bytes),
            ts_begin_ns: 10,
            ts_end_ns: 20,
            ..CallRow::default()
        };
        s.add_call(Layer::Posix, Op::Write, &row(4096));
        s.add_call(Layer::Posix, Op::Write, &row(1024));
        s.add_call(Layer::Posix, Op::Read, &row(10));
        s.add_call(Layer::Hdf5, Op::Write, &row(5120));
        let p = s.layer(Layer::Posix);
        assert_eq!(
            (p.calls, p.writes, p.bytes_written, p.bytes_read),
            (3, 2, 5120, 10)
        );
        let text = s.render(|id| Some(format!("/f{id}")), |_| None);
        assert!(text.contains("5.0 KiB"), "{text}");
        assert!(text.contains("/f1"), "{text}");
        // Layers in name order, those without calls left out.
        let names: Vec<&str> = text
            .lines()
            .skip(1)
            .take_while(|l| !l.is_empty())
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        assert_eq!(names, ["hdf5", "posix"], "{text}");
        assert_eq!(human(1023), "1023 B");
    }

    #[test]
    fn calls_alternating_between_files_count_on_each() {
        let mut s = Summary::default();
        // Files 1, 2, 1, 3, 1, 2: 1 gets 1+4+16, 2 gets 2+32, 3 gets 8.
        for (i, f) in [1, 2, 1, 3, 1, 2].into_iter().enumerate() {
            let row = CallRow {
                file_id: Some(f),
                bytes_result: Some(1 << i),
                ..CallRow::default()
            };
            s.add_call(Layer::Posix, Op::Write, &row);
        }
        let mut files: Vec<(i64, u64, i64)> = s
            .files()
            .map(|(id, st)| (*id, st.writes, st.bytes_written))
            .collect();
        files.sort();
        assert_eq!(files, [(1, 3, 21), (2, 2, 34), (3, 1, 8)]);
        let text = s.render(|id| Some(format!("/f{id}")), |_| None);
        let order: Vec<&str> = (text.lines())
            .filter_map(|l| l.split_whitespace().last())
            .filter(|w| w.starts_with("/f"))
            .collect();
        assert_eq!(order, ["/f2", "/f1", "/f3"], "most bytes first: {text}");
    }

    /// Files on one file system add up on its line; file systems come most bytes first;
    /// files of no known mount (a pipe) are left out; no known mount at all, no section.
    #[test]
    fn traffic_adds_up_per_file_system() {
        let mut s = Summary::default();
        // (file, op, bytes): 1 and 2 on ext4 /, 3 on lustre, 4 a pipe.
        for (f, op, bytes) in [
            (1, Op::Write, 100),
            (2, Op::Read, 50),
            (2, Op::Read, 0),
            (3, Op::Write, 1000),
            (4, Op::Write, 7),
        ] {
            let row = CallRow {
                file_id: Some(f),
                bytes_result: Some(bytes),
                ..CallRow::default()
            };
            s.add_call(Layer::Posix, op, &row);
        }
        let mount = |id: i64| match id {
            1 | 2 => Some(("ext4".to_string(), "/".to_string())),
            3 => Some(("lustre".to_string(), "/lustre/scratch".to_string())),
            _ => None,
        };
        let text = s.render(|id| Some(format!("/f{id}")), mount);
        let section: Vec<Vec<&str>> = text
            .split("POSIX traffic per file system:\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{text}"))
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(
            section,
            [
                vec![
                    "0",
                    "0",
                    "B",
                    "1",
                    "1000",
                    "B",
                    "1",
                    "lustre",
                    "/lustre/scratch"
                ],
                vec!["2", "50", "B", "1", "100", "B", "2", "ext4", "/"],
            ],
            "{text}"
        );
        let none = s.render(|id| Some(format!("/f{id}")), |_| None);
        assert!(!none.contains("per file system"), "{none}");
    }

    /// Past `MAX_FILES` files, the busiest `KEEP_FILES` stay, and calls on them and on new
    /// files count where they should after.
    #[test]
    fn the_busiest_files_are_kept_when_there_are_too_many() {
        let mut s = Summary::default();
        let write = |s: &mut Summary, f: i64, bytes: i64| {
            let row = CallRow {
                file_id: Some(f),
                bytes_result: Some(bytes),
                ..CallRow::default()
            };
            s.add_call(Layer::Posix, Op::Write, &row);
        };
        for f in 0..MAX_FILES as i64 {
            write(&mut s, f, f);
        }
        write(&mut s, -1, 1);
        assert_eq!(s.files().count(), KEEP_FILES + 1);
        let lowest_kept = (MAX_FILES - KEEP_FILES) as i64;
        assert!(s.files().all(|(id, _)| *id == -1 || *id >= lowest_kept));
        // A kept file, a new one and the one made before the pruning.
        write(&mut s, lowest_kept, 5);
        write(&mut s, -2, 7);
        write(&mut s, -1, 2);
        let bytes = |id: i64| {
            s.files()
                .find(|(f, _)| **f == id)
                .map(|(_, st)| st.bytes_written)
        };
        assert_eq!(bytes(lowest_kept), Some(lowest_kept + 5));
        assert_eq!(bytes(-2), Some(7));
        assert_eq!(bytes(-1), Some(3));
        assert_eq!(bytes(0), None, "pruned");
    }

    #[test]
    fn a_copy_reads_its_first_file_and_writes_its_second() {
        let mut s = Summary::default();
        s.add_call(
            Layer::Posix,
            Op::Copy,
            &CallRow {
                file_id: Some(2),
                file2_id: Some(3),
                bytes_result: Some(700),
                ..CallRow::default()
            },
        );
        let p = s.layer(Layer::Posix);
        assert_eq!(
            (p.calls, p.reads, p.bytes_read, p.writes, p.bytes_written),
            (1, 1, 700, 1, 700)
        );
        let file = |id| s.files().find(|(f, _)| **f == id).unwrap().1;
        assert_eq!((file(2).bytes_read, file(2).bytes_written), (700, 0));
        assert_eq!((file(3).bytes_read, file(3).bytes_written), (0, 700));
    }
}
