//! `strata compact`: merges a finished dataset's files into fewer, larger ones.
//!
//! While it records, strata writes a busy table's rows as a new file at each flush (once a
//! second, and whenever 100,000 rows wait), so that every visible file is complete and a
//! killed tracer loses at most the last interval. A long busy run so leaves thousands of files
//! per table: inodes and directory listings on a parallel file system, and a footer read per
//! file by every query. Merging them while strata writes could not be made atomic (no rename
//! replaces several files at once), so it is a step of its own, run on a dataset no strata is
//! writing any more.
//!
//! A run's consecutive files are merged in name order (the order they were written) by
//! copying their encoded row groups as they are: nothing is decoded or compressed again, and
//! each file's row groups, statistics and page indexes are kept. The merged file is written
//! beside them under a hidden name, synced, renamed over the first of them, and then the others
//! are removed. Its metadata names them (`strata.compacted_from`): if compaction is stopped
//! between the rename and the removals, the next `strata compact` removes those that are left
//! before anything else, so a dataset never keeps rows twice for longer than that.
use std::{
    collections::BTreeMap,
    fs,
    os::unix::fs::PermissionsExt as _,
    path::{Path, PathBuf},
    sync::Arc,
};

use anyhow::Context as _;
use parquet::{
    bloom_filter::Sbbf,
    column::writer::ColumnCloseResult,
    file::{
        metadata::{KeyValue, PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader},
        properties::WriterProperties,
        writer::SerializedFileWriter,
    },
};

use crate::inprogress::{self, State};

/// The metadata key that lists the files a merged file replaced (comma-separated names).
pub const COMPACTED_FROM: &str = "strata.compacted_from";

/// How large merged files may grow.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Bytes of a merged file, at most (a file already larger is left alone).
    pub bytes: u64,
    /// Row groups of a merged file, at most: each is a footer entry per column, which every
    /// query reads (1.6 KiB a row group of calls, measured: a footer of 1.6 MiB at 1,024).
    pub row_groups: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            bytes: 256 << 20,
            row_groups: 1024,
        }
    }
}

/// Which files a compaction may merge.
#[derive(Clone, Copy, Debug, Default)]
pub struct Only<'a> {
    /// This node's partitions (`host=<host>`), which a node may compact while the other
    /// nodes still write theirs.
    pub host: Option<&'a str>,
    /// This run's files (`part-<run>-*`), which may be compacted once the run has closed
    /// its dataset while other runs write beside them (the daemon, at a job's end).
    pub run: Option<&'a str>,
    /// The runs may still be recording: each run's newest file of a partition, and the
    /// files it is writing, are left alone. A run only ever writes its newest file of a
    /// table (a new file at each flush, or the newest written again whole), never an older
    /// one, so the others can be merged while it goes on.
    pub recording: bool,
}

/// What a compaction did, per partition directory.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Partition {
    pub dir: PathBuf,
    pub files_before: usize,
    pub files_after: usize,
    pub bytes_before: u64,
    pub bytes_after: u64,
    /// Files an earlier, interrupted compaction had merged but not yet removed, and their
    /// bytes (counted in `files_before` and `bytes_before`).
    pub leftovers_removed: usize,
    pub leftover_bytes: u64,
    /// Temporary files a killed strata left: complete ones renamed into place, and
    /// incomplete ones removed.
    pub put_in_place: usize,
    pub incomplete_removed: usize,
    /// Why the directory was left alone, if it was.
    pub skipped: Option<String>,
}

/// Compacts every partition directory (a directory holding `.parquet` files) under `root`:
/// a dataset of `strata record`, a daemon's job directory, or a single table, within `only`.
/// `dry_run` plans without writing or removing anything.
pub fn run(
    root: &Path,
    only: Only<'_>,
    limits: Limits,
    dry_run: bool,
) -> anyhow::Result<Vec<Partition>> {
    anyhow::ensure!(
        root.is_dir(),
        "{} is not a directory: give the output directory of a strata run",
        root.display()
    );
    let mut dirs = Vec::new();
    partition_dirs(root, &mut dirs)?;
    if let Some(host) = only.host {
        let part = std::ffi::OsString::from(format!("host={host}"));
        dirs.retain(|d| d.iter().any(|c| c == part));
    }
    anyhow::ensure!(
        !dirs.is_empty(),
        "no Parquet files under {}{}: is it a strata dataset?",
        root.display(),
        only.host
            .map(|h| format!(" in a host={h} partition"))
            .unwrap_or_default()
    );
    dirs.iter()
        .map(|d| compact_dir(d, only, limits, dry_run))
        .collect()
}

/// Directories under `dir` (itself included) that hold visible `.parquet` files, sorted.
fn partition_dirs(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let mut has_files = false;
    let mut subdirs = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let entry = entry?;
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let kind = entry.file_type()?;
        if kind.is_dir() {
            subdirs.push(entry.path());
        } else if kind.is_file() && visible_parquet(&name.to_string_lossy()) {
            has_files = true;
        }
    }
    if has_files {
        out.push(dir.to_path_buf());
    }
    subdirs.sort();
    for d in subdirs {
        partition_dirs(&d, out)?;
    }
    Ok(())
}

fn visible_parquet(name: &str) -> bool {
    name.ends_with(".parquet") && !name.starts_with('.')
}

/// A file's run and sequence number, from `part-<run>-<seq>.parquet` where the run is
/// `<ms>-<pid>` (as `record` and the daemon name files); other names are never merged.
fn run_and_seq(name: &str) -> Option<(&str, u64)> {
    let stem = name.strip_prefix("part-")?.strip_suffix(".parquet")?;
    let (run, seq) = stem.rsplit_once('-')?;
    let (ms, pid) = run.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !(digits(ms) && digits(pid) && digits(seq)) {
        return None;
    }
    Some((run, seq.parse().ok()?))
}

/// A visible file of a partition, with what merging needs of it.
struct Source {
    name: String,
    bytes: u64,
    meta: ParquetMetaData,
}

fn read_meta(path: &Path) -> anyhow::Result<ParquetMetaData> {
    let file = fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    ParquetMetaDataReader::new()
        .with_page_index_policy(PageIndexPolicy::Optional)
        .parse_and_finish(&file)
        .with_context(|| format!("cannot read the Parquet footer of {}", path.display()))
}

fn compacted_from(meta: &ParquetMetaData) -> Vec<String> {
    (meta
        .file_metadata()
        .key_value_metadata()
        .into_iter()
        .flatten())
    .filter(|kv| kv.key == COMPACTED_FROM)
    .filter_map(|kv| kv.value.as_deref())
    .flat_map(|v| v.split(','))
    .filter(|n| !n.is_empty())
    .map(str::to_string)
    .collect()
}

fn compact_dir(
    dir: &Path,
    only: Only<'_>,
    limits: Limits,
    dry_run: bool,
) -> anyhow::Result<Partition> {
    let ours = |name: &str| {
        only.run
            .is_none_or(|run| name.contains(&format!("part-{run}-")))
    };
    let mut part = Partition {
        dir: dir.to_path_buf(),
        ..Default::default()
    };
    let mut names = Vec::new();
    let mut tmps = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') && name.ends_with(".tmp") && ours(&name) {
            // While the runs record, their own files in progress are theirs to finish; a
            // compaction's still keeps another away.
            if !only.recording || name.ends_with(".compact.tmp") {
                tmps.push(entry.path());
            }
        } else if ours(&name) && entry.file_type()?.is_file() && visible_parquet(&name) {
            // Another run's files are not even read: they may still be written.
            names.push(name);
        }
    }
    left_behind(&mut part, tmps, &mut names, dry_run)?;
    names.sort();
    let mut sources = Vec::with_capacity(names.len());
    for name in names {
        let path = dir.join(&name);
        let bytes = fs::metadata(&path)?.len();
        sources.push(Source {
            meta: read_meta(&path)?,
            name,
            bytes,
        });
    }
    part.files_before = sources.len();
    part.bytes_before = sources.iter().map(|s| s.bytes).sum();
    if part.skipped.is_some() {
        (part.files_after, part.bytes_after) = (part.files_before, part.bytes_before);
        return Ok(part);
    }
    // First what an interrupted compaction left: files that a merged file already holds.
    let merged: Vec<String> = (sources.iter())
        .flat_map(|s| compacted_from(&s.meta).into_iter().filter(|n| *n != s.name))
        .collect();
    let (leftovers, mut sources): (Vec<Source>, Vec<Source>) =
        sources.into_iter().partition(|s| merged.contains(&s.name));
    part.leftovers_removed = leftovers.len();
    part.leftover_bytes = leftovers.iter().map(|s| s.bytes).sum();
    if !dry_run {
        for s in &leftovers {
            remove(&dir.join(&s.name))?;
        }
    }
    // Then runs of files of one strata run and one schema, in the order they were written.
    let mut groups: Vec<Vec<Source>> = Vec::new();
    let mut by_run: BTreeMap<String, Vec<Source>> = BTreeMap::new();
    let mut alone = Vec::new();
    for s in sources.drain(..) {
        match run_and_seq(&s.name) {
            Some((run, _)) => by_run.entry(run.to_string()).or_default().push(s),
            _ => alone.push(s),
        }
    }
    for (_, mut files) in by_run {
        files.sort_by_key(|s| run_and_seq(&s.name).map(|(_, seq)| seq));
        if only.recording {
            // The file the run may still write again.
            alone.extend(files.pop());
        }
        let mut group: Vec<Source> = Vec::new();
        let (mut bytes, mut row_groups) = (0, 0);
        for s in files {
            let rgs = s.meta.num_row_groups();
            let fits = group.first().is_some_and(|first| {
                same_schema(&first.meta, &s.meta)
                    && bytes + s.bytes <= limits.bytes
                    && row_groups + rgs <= limits.row_groups
            });
            if !fits && !group.is_empty() {
                groups.push(std::mem::take(&mut group));
                (bytes, row_groups) = (0, 0);
            }
            bytes += s.bytes;
            row_groups += rgs;
            group.push(s);
        }
        if !group.is_empty() {
            groups.push(group);
        }
    }
    part.files_after = alone.len();
    part.bytes_after = alone.iter().map(|s| s.bytes).sum();
    for group in groups {
        part.files_after += 1;
        if group.len() < 2 {
            part.bytes_after += group.iter().map(|s| s.bytes).sum::<u64>();
            continue;
        }
        part.bytes_after += if dry_run {
            group.iter().map(|s| s.bytes).sum()
        } else {
            merge(dir, &group)?
        };
    }
    Ok(part)
}

/// Deals with a partition's temporary files before anything else. One still being written (or
/// of which that cannot be told) keeps the partition as it is. One a killed strata left is put
/// in place if it is complete (its writer was killed between finishing and renaming it: its
/// rows are nowhere else), and removed if not (its rows never reached a visible file).
fn left_behind(
    part: &mut Partition,
    tmps: Vec<PathBuf>,
    names: &mut Vec<String>,
    dry_run: bool,
) -> anyhow::Result<()> {
    let now = std::time::SystemTime::now();
    let mut left = Vec::new();
    for tmp in tmps {
        match inprogress::state(&tmp, now)
            .with_context(|| format!("cannot tell whether {} is being written", tmp.display()))?
        {
            State::Gone => {}
            State::Left => left.push(tmp),
            State::Written(why) => {
                part.skipped = Some(format!("{} is being written: {why}", tmp.display()));
                return Ok(());
            }
            State::Unknown(why) => {
                part.skipped = Some(format!("{} may be being written: {why}", tmp.display()));
                return Ok(());
            }
        }
    }
    for tmp in left {
        match inprogress::target(&tmp).filter(|_| read_meta(&tmp).is_ok()) {
            Some(target) => {
                part.put_in_place += 1;
                if dry_run {
                    continue;
                }
                fs::rename(&tmp, &target).with_context(|| {
                    format!("cannot rename {} to {}", tmp.display(), target.display())
                })?;
                let name = target.file_name().unwrap_or_default().to_string_lossy();
                if !names.iter().any(|n| *n == name) {
                    names.push(name.into_owned());
                }
            }
            None => {
                part.incomplete_removed += 1;
                if !dry_run {
                    remove(&tmp)?;
                }
            }
        }
    }
    Ok(())
}

fn same_schema(a: &ParquetMetaData, b: &ParquetMetaData) -> bool {
    let kv = |m: &ParquetMetaData, key: &str| {
        (m.file_metadata().key_value_metadata().into_iter().flatten())
            .find(|kv| kv.key == key)
            .and_then(|kv| kv.value.clone())
    };
    a.file_metadata().schema() == b.file_metadata().schema()
        && kv(a, "ARROW:schema") == kv(b, "ARROW:schema")
}

fn remove(path: &Path) -> anyhow::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("cannot remove {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// Writes `group`'s row groups, in order, as one file named as its first; removes the others.
/// Returns the merged file's size.
fn merge(dir: &Path, group: &[Source]) -> anyhow::Result<u64> {
    let first = &group[0];
    let target = dir.join(&first.name);
    let tmp = dir.join(format!(".{}.compact.tmp", first.name));
    let mode = fs::metadata(&target)?.permissions().mode() & 0o7777;
    let out = inprogress::create(&tmp, mode)
        .with_context(|| format!("cannot create {}", tmp.display()))?;
    let written = copy_row_groups(dir, group, out.try_clone()?)
        .and_then(|()| out.sync_all().context("cannot sync"));
    if let Err(e) = written {
        // A full disk leaves no half-written file behind.
        let _ = fs::remove_file(&tmp);
        return Err(e.context(format!("cannot write {}", tmp.display())));
    }
    let bytes = fs::metadata(&tmp)?.len();
    fs::rename(&tmp, &target)
        .with_context(|| format!("cannot rename {} to {}", tmp.display(), target.display()))?;
    for s in &group[1..] {
        remove(&dir.join(&s.name))?;
    }
    Ok(bytes)
}

fn copy_row_groups(dir: &Path, group: &[Source], out: fs::File) -> anyhow::Result<()> {
    let first = &group[0].meta;
    // The first file's metadata (the Arrow schema readers restore types from), and the names
    // of the files this one replaces (not those an earlier compaction listed: they are gone).
    let mut kvs: Vec<KeyValue> = (first.file_metadata().key_value_metadata().into_iter())
        .flatten()
        .filter(|kv| kv.key != COMPACTED_FROM)
        .cloned()
        .collect();
    let from: Vec<&str> = group[1..].iter().map(|s| s.name.as_str()).collect();
    kvs.push(KeyValue::new(COMPACTED_FROM.to_string(), from.join(",")));
    let mut props = WriterProperties::builder().set_key_value_metadata(Some(kvs));
    if let Some(by) = first.file_metadata().created_by() {
        props = props.set_created_by(by.to_string());
    }
    let schema = first.file_metadata().schema_descr().root_schema_ptr();
    let mut writer = SerializedFileWriter::new(out, schema, Arc::new(props.build()))?;
    for s in group {
        let input = fs::File::open(dir.join(&s.name))
            .with_context(|| format!("cannot open {}", dir.join(&s.name).display()))?;
        let (column_index, offset_index) = (s.meta.column_index(), s.meta.offset_index());
        for (i, rg) in s.meta.row_groups().iter().enumerate() {
            let mut rg_out = writer.next_row_group()?;
            for (c, column) in rg.columns().iter().enumerate() {
                let result = ColumnCloseResult {
                    bytes_written: column.compressed_size() as u64,
                    rows_written: rg.num_rows() as u64,
                    metadata: column.clone(),
                    bloom_filter: Sbbf::read_from_column_chunk(column, &input)?,
                    column_index: column_index.and_then(|x| x.get(i)?.get(c)).cloned(),
                    offset_index: offset_index.and_then(|x| x.get(i)?.get(c)).cloned(),
                };
                rg_out.append_column(&input, result)?;
            }
            rg_out.close()?;
        }
    }
    writer.close()?;
    Ok(())
}

/// Files a run writes, by default, between two merges while it records
/// ([`WhileRecording`]): some five minutes of a busy run, which writes a calls file at
/// every flush (once a second, and whenever 100,000 rows wait).
pub const EVERY_FILES: u32 = 600;

/// Merges a run's files in a thread of its own while the run records, each time it has
/// written a given number more: a day of a busy job would otherwise leave some 170,000
/// files until its end. Each table's newest file is left alone (see [`Only::recording`]).
pub struct WhileRecording {
    dir: PathBuf,
    host: String,
    run: String,
    every: u32,
    /// Files the run had written when the last merge started.
    started_at: u32,
    merging: Option<std::thread::JoinHandle<anyhow::Result<usize>>>,
    /// Files the merges removed, in all.
    removed: usize,
}

impl WhileRecording {
    /// Merges of the files run `run` writes under `dir` into `host=<host>` partitions, one
    /// each time it has written `every` more (0: none).
    pub fn new(dir: &Path, host: &str, run: &str, every: u32) -> Option<Self> {
        (every > 0).then(|| Self {
            dir: dir.to_path_buf(),
            host: host.to_string(),
            run: run.to_string(),
            every,
            started_at: 0,
            merging: None,
            removed: 0,
        })
    }

    /// After a flush, with the files the run has written so far: starts a merge when it is
    /// due and none is running. Returns the error of a merge that failed, to be said (the
    /// run goes on: its files are only left as they were).
    pub fn poll(&mut self, files_written: u32) -> Option<anyhow::Error> {
        let failed = match &self.merging {
            Some(m) if !m.is_finished() => return None,
            Some(_) => self.wait(),
            None => None,
        };
        if files_written >= self.started_at + self.every {
            self.started_at = files_written;
            let (dir, host, run) = (self.dir.clone(), self.host.clone(), self.run.clone());
            self.merging = Some(std::thread::spawn(move || {
                // Signals are for the event loop; and what the merge costs should not come
                // before the records it reads (a lower priority, as `nice`).
                use nix::sys::signal::{SigSet, SigmaskHow, pthread_sigmask};
                let _ = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&SigSet::all()), None);
                // SAFETY: sets this thread's own nice value.
                unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as u32, 10) };
                let only = Only {
                    host: Some(&host),
                    run: Some(&run),
                    recording: true,
                };
                let parts = self::run(&dir, only, Limits::default(), false)?;
                Ok(parts.iter().map(|p| p.files_before - p.files_after).sum())
            }));
        }
        failed
    }

    /// Waits for the merge in progress, if any; returns its error.
    pub fn wait(&mut self) -> Option<anyhow::Error> {
        let result = self
            .merging
            .take()?
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the merging thread panicked")));
        match result {
            Ok(removed) => {
                self.removed += removed;
                None
            }
            Err(e) => Some(e.context(format!(
                "merging the files of run {} while it records",
                self.run
            ))),
        }
    }

    /// Whether a merge is running.
    pub fn busy(&self) -> bool {
        self.merging.as_ref().is_some_and(|m| !m.is_finished())
    }

    /// Files the merges so far removed (the run's files now: those written less these).
    pub fn removed(&self) -> usize {
        self.removed
    }
}

impl Drop for WhileRecording {
    /// A merge in progress ends before its run does, even one that stops on an error:
    /// else the process's exit would cut its file in progress short.
    fn drop(&mut self) {
        let _ = self.wait();
    }
}

/// A line per partition that changed or was left alone, and the totals.
pub fn describe(root: &Path, parts: &[Partition], dry_run: bool) -> String {
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    let files = |n: usize| format!("{n} file{}", if n == 1 { "" } else { "s" });
    let mut s = String::new();
    for p in parts {
        let dir = p.dir.strip_prefix(root).unwrap_or(&p.dir).display();
        if p.leftovers_removed > 0 {
            s += &format!(
                "{dir}: {} already merged by an interrupted compaction {}\n",
                files(p.leftovers_removed),
                if dry_run {
                    "would be removed"
                } else {
                    "removed"
                },
            );
        }
        let done = |n: usize| match (dry_run, n) {
            (true, _) => "would be",
            (false, 1) => "was",
            (false, _) => "were",
        };
        if p.put_in_place > 0 {
            s += &format!(
                "{dir}: {} that a killed strata had written but not renamed {} put in place\n",
                files(p.put_in_place),
                done(p.put_in_place),
            );
        }
        if p.incomplete_removed > 0 {
            s += &format!(
                "{dir}: {} that a killed strata left incomplete {} removed\n",
                files(p.incomplete_removed),
                done(p.incomplete_removed),
            );
        }
        let sources = p.files_before - p.leftovers_removed;
        if let Some(why) = &p.skipped {
            s += &format!("{dir}: left alone: {why}\n");
        } else if p.files_after < sources {
            s += &format!(
                "{dir}: {} ({:.1} MiB) -> {} ({:.1} MiB)\n",
                files(sources),
                mib(p.bytes_before - p.leftover_bytes),
                p.files_after,
                mib(p.bytes_after),
            );
        }
    }
    let before: usize = parts.iter().map(|p| p.files_before).sum();
    let after: usize = parts.iter().map(|p| p.files_after).sum();
    s += &format!(
        "{}{} in {} partitions -> {after}\n",
        if dry_run { "dry run: " } else { "" },
        files(before),
        parts.len()
    );
    s
}

#[cfg(test)]
mod tests {
    use super::run_and_seq;

    #[test]
    fn only_a_runs_numbered_files_are_merged() {
        assert_eq!(
            run_and_seq("part-1796394126516-9901-000012.parquet"),
            Some(("1796394126516-9901", 12))
        );
        // A run table's file (no sequence number), other names, in-progress files.
        for name in [
            "part-1796394126516-9901.parquet",
            "part-x-9901-000001.parquet",
            "part-1-2-3-000001.parquet",
            "data.parquet",
            ".part-1-2-000001.parquet.tmp",
            "part-1-2-.parquet",
        ] {
            assert_eq!(run_and_seq(name), None, "{name}");
        }
    }
}
