//! A table's newest file while later flushes add their rows to it. Each such flush writes the
//! file again whole (one row group, renamed over itself), so that a quiet job does not leave a
//! file, and a footer larger than its rows, per table and flush interval: at 1 s flushes that
//! would be 86,400 files of each table a day (inodes and directory listings on a parallel file
//! system, a footer read per file by every query).
//!
//! Writing again re-encodes the rows already written. Three bounds keep that small: the file
//! takes rows until it holds [`ROWS`], until it is [`AGE`] old, and while a table has
//! re-encoded fewer than [`ROWS`] rows a second (a budget that refills at that rate and holds
//! two seconds' worth: flushes forced by full buffers come many times a second under load).
use std::time::{Duration, Instant};

use arrow::record_batch::RecordBatch;

/// Rows after which the file takes no more: what a rewrite costs at most, some 3 ms of CPU
/// here and the file's bytes (a few hundred KiB of calls), and what its rows kept in memory
/// take (about 6 MiB of calls). A flush of this many rows or more writes a file alone.
pub const ROWS: usize = 32_768;

/// Age after which the file takes no more: a quiet table (a row a second) would otherwise have
/// its file, grown over hours, written again at every flush. A quiet table makes at most 144
/// files a day, and a flush writes again at most ten minutes of its rows.
pub const AGE: Duration = Duration::from_secs(600);

/// The newest file's rows and what decides whether it takes more.
pub struct Segment {
    /// Each flush's arrays by group, groups in key order, each group's in the order written.
    batches: Vec<(i32, RecordBatch)>,
    rows: usize,
    /// The file's size, which its next rewrite replaces.
    pub bytes: u64,
    since: Instant,
    /// Rows a rewrite may still re-encode, as of `budget_at`.
    budget: f64,
    budget_at: Instant,
    /// [`ROWS`], [`AGE`], and the budget's rate in rows a second ([`ROWS`]); lower in tests.
    pub limit: usize,
    pub age: Duration,
    pub rate: f64,
}

impl Default for Segment {
    fn default() -> Self {
        let now = Instant::now();
        Self {
            batches: Vec::new(),
            rows: 0,
            bytes: 0,
            since: now,
            budget: 2.0 * ROWS as f64,
            budget_at: now,
            limit: ROWS,
            age: AGE,
            rate: ROWS as f64,
        }
    }
}

impl Segment {
    /// Whether a flush with rows writes them into this file, rewriting it; else the file
    /// takes no more, and its rows are let go.
    pub fn takes_more(&mut self) -> bool {
        self.expire();
        if self.rows == 0 {
            return false;
        }
        let now = Instant::now();
        // Two seconds' worth at most: the flush at the end of a run, soon after the last
        // timer's, still finds room for a file's rewrite.
        let refill = now.duration_since(self.budget_at).as_secs_f64() * self.rate;
        self.budget = (self.budget + refill).min(2.0 * self.rate);
        self.budget_at = now;
        if self.budget < self.rows as f64 {
            self.close();
            return false;
        }
        self.budget -= self.rows as f64;
        true
    }

    /// At a flush without rows: a file that has grown old takes no more, and its rows are
    /// let go now.
    pub fn expire(&mut self) {
        if self.rows > 0 && self.since.elapsed() >= self.age {
            self.close();
        }
    }

    /// The file was written, `bytes` long; once full it takes no more.
    pub fn written(&mut self, bytes: u64) {
        self.bytes = bytes;
        if self.rows >= self.limit {
            self.close();
        }
    }

    /// Adds a flush's arrays; returns all of the file's, in the order it is written.
    pub fn add(&mut self, batches: Vec<(i32, RecordBatch)>) -> Vec<RecordBatch> {
        if self.rows == 0 {
            self.since = Instant::now();
        }
        self.rows += batches.iter().map(|(_, b)| b.num_rows()).sum::<usize>();
        self.batches.extend(batches);
        // Stable: a group's arrays stay in the order they came.
        self.batches.sort_by_key(|(k, _)| *k);
        self.batches.iter().map(|(_, b)| b.clone()).collect()
    }

    /// Takes no more rows: the next flush starts a file.
    fn close(&mut self) {
        self.batches = Vec::new();
        self.rows = 0;
        self.bytes = 0;
    }

    /// Rows the file holds.
    #[cfg(test)]
    pub fn rows(&self) -> usize {
        self.rows
    }
}
