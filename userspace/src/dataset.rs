//! The output dataset of one run: a writer per table under `OUT/<table>/host=<host>/`.
use std::path::Path;

use crate::{
    schema::{Block, Calls, Files, Handles, Pagecache, Probes, Processes, Run, RunRow},
    sink::TableWriter,
};

pub struct Dataset {
    pub run_id: String,
    pub calls: TableWriter<Calls>,
    pub handles: TableWriter<Handles>,
    pub files: TableWriter<Files>,
    pub processes: TableWriter<Processes>,
    pub probes: TableWriter<Probes>,
    pub block: TableWriter<Block>,
    pub pagecache: TableWriter<Pagecache>,
    run: TableWriter<Run>,
}

impl Dataset {
    pub fn create(root: &Path, host: &str, run_id: &str) -> anyhow::Result<Self> {
        Ok(Self {
            run_id: run_id.to_string(),
            calls: TableWriter::new(root, host, run_id)?,
            handles: TableWriter::new(root, host, run_id)?,
            files: TableWriter::new(root, host, run_id)?,
            processes: TableWriter::new(root, host, run_id)?,
            probes: TableWriter::new(root, host, run_id)?,
            block: TableWriter::new(root, host, run_id)?,
            pagecache: TableWriter::new(root, host, run_id)?,
            run: TableWriter::new(root, host, run_id)?,
        })
    }

    /// Writes everything buffered. Files first: a reader joining calls to files finds them.
    pub fn flush(&mut self) -> anyhow::Result<()> {
        self.files.flush()?;
        self.processes.flush()?;
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

    pub fn rows_written(&self) -> u64 {
        self.calls.rows_written
            + self.handles.rows_written
            + self.files.rows_written
            + self.processes.rows_written
            + self.block.rows_written
            + self.pagecache.rows_written
    }

    pub fn bytes_written(&self) -> u64 {
        self.calls.bytes_written
            + self.handles.bytes_written
            + self.files.bytes_written
            + self.processes.bytes_written
            + self.probes.bytes_written
            + self.block.bytes_written
            + self.pagecache.bytes_written
    }
}
