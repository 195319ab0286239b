//! The output dataset of one run: a writer per table under `OUT/<table>/host=<host>/`.
//!
//! Files are readable by their owner (root) and group only by default: they hold the paths
//! and arguments of other users' jobs.
use std::path::Path;

use crate::{
    schema::{Block, Calls, Files, Handles, Mounts, Pagecache, Probes, Processes, Run, RunRow},
    sink::TableWriter,
};

/// Default permissions of the Parquet files (`file_mode` in the configuration).
pub const DEFAULT_FILE_MODE: u32 = 0o640;

pub struct Dataset {
    pub run_id: String,
    pub calls: TableWriter<Calls>,
    pub handles: TableWriter<Handles>,
    pub files: TableWriter<Files>,
    pub processes: TableWriter<Processes>,
    pub mounts: TableWriter<Mounts>,
    pub probes: TableWriter<Probes>,
    pub block: TableWriter<Block>,
    pub pagecache: TableWriter<Pagecache>,
    run: TableWriter<Run>,
}

impl Dataset {
    /// `mode`: permissions of the files (directories get the matching search bits).
    pub fn create(root: &Path, host: &str, run_id: &str, mode: u32) -> anyhow::Result<Self> {
        let at = (root, host, run_id, mode);
        Ok(Self {
            run_id: run_id.to_string(),
            calls: TableWriter::new(at)?,
            handles: TableWriter::new(at)?,
            files: TableWriter::new(at)?,
            processes: TableWriter::new(at)?,
            mounts: TableWriter::new(at)?,
            probes: TableWriter::new(at)?,
            block: TableWriter::new(at)?,
            pagecache: TableWriter::new(at)?,
            run: TableWriter::new(at)?,
        })
    }

    /// The tables' directories, each `host=` one before its table's.
    pub fn dirs(&self) -> Vec<&Path> {
        [
            self.calls.dir(),
            self.handles.dir(),
            self.files.dir(),
            self.processes.dir(),
            self.mounts.dir(),
            self.probes.dir(),
            self.block.dir(),
            self.pagecache.dir(),
            self.run.dir(),
        ]
        .into_iter()
        .flat_map(|d| [d].into_iter().chain(d.parent()))
        .collect()
    }

    /// Writes everything buffered. Files first: a reader joining calls to files finds them.
    pub fn flush(&mut self) -> anyhow::Result<()> {
        self.files.flush()?;
        self.processes.flush()?;
        self.mounts.flush()?;
        self.handles.flush()?;
        self.calls.flush()?;
        self.block.flush()?;
        self.pagecache.flush()?;
        self.probes.flush()
    }

    /// (Re)writes the run's single row; called at start and at the end, same file name.
    pub fn write_run(&mut self, row: RunRow) -> anyhow::Result<()> {
        self.run.push(row);
        let name = format!("part-{}.parquet", self.run_id);
        self.run.write_named(&name)
    }

    /// Rows waiting to be written (the memory the next flush frees).
    pub fn buffered_rows(&self) -> usize {
        self.calls.buffered()
            + self.handles.buffered()
            + self.files.buffered()
            + self.processes.buffered()
            + self.mounts.buffered()
            + self.block.buffered()
            + self.pagecache.buffered()
    }

    /// Writes out early when this many rows wait, so memory stays bounded whatever the
    /// event rate (at 1 s flushes, rows would otherwise grow with the rate).
    pub const MAX_BUFFERED_ROWS: usize = 100_000;

    /// Flushes if the buffers are full.
    pub fn flush_if_full(&mut self) -> anyhow::Result<()> {
        if self.buffered_rows() >= Self::MAX_BUFFERED_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    pub fn rows_written(&self) -> u64 {
        self.calls.rows_written
            + self.handles.rows_written
            + self.files.rows_written
            + self.processes.rows_written
            + self.mounts.rows_written
            + self.block.rows_written
            + self.pagecache.rows_written
    }

    /// Files written so far, all tables.
    pub fn files_written(&self) -> u32 {
        self.calls.files_written()
            + self.handles.files_written()
            + self.files.files_written()
            + self.processes.files_written()
            + self.mounts.files_written()
            + self.probes.files_written()
            + self.block.files_written()
            + self.pagecache.files_written()
    }

    pub fn bytes_written(&self) -> u64 {
        self.calls.bytes_written
            + self.handles.bytes_written
            + self.files.bytes_written
            + self.processes.bytes_written
            + self.mounts.bytes_written
            + self.probes.bytes_written
            + self.block.bytes_written
            + self.pagecache.bytes_written
    }
}
