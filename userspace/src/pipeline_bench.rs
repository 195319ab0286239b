//! Throughput of strata's own user-space pipeline (decode, correlation, Parquet), fed with a
//! synthetic record stream so that it measures strata and not a workload or the kernel.
//!
//! The stream imitates a POSIX-heavy process: for every file, an openat with its path, then
//! 98 writes at increasing positions, then a close, the writes made by 4 threads in turn (so
//! that writing the calls table regroups its rows by thread, as for a threaded job). The
//! records name strata's own process, so process and file lookups in /proc succeed as they
//! would for a live job, and each open carries its file's inode and device as the kernel
//! side reads them (`fd_inode`), so that strata confirms a reopened file without a stat.
use std::{mem::size_of, path::Path, time::Instant};

use strata_common::{CallRecord, MAX_ARGS, RecordKind, STR_CAP, StrHeader};

use crate::{
    correlate::{Clock, Correlator},
    dataset::Dataset,
    events, probes,
};

pub struct Result {
    pub events: u64,
    pub seconds: f64,
    pub parquet_bytes: u64,
    pub calls_written: u64,
}

/// Records end to end, and where each is.
#[derive(Default)]
struct Stream {
    bytes: Vec<u8>,
    spans: Vec<std::ops::Range<usize>>,
}

impl Stream {
    fn push(&mut self, record: Vec<u8>) {
        let at = self.bytes.len();
        self.spans.push(at..at + record.len());
        self.bytes.extend_from_slice(&record);
        self.bytes.resize(self.bytes.len().next_multiple_of(8), 0);
    }
}

/// Threads whose writes the stream interleaves.
const THREADS: u32 = 4;

fn call(
    func_id: u32,
    call_id: u64,
    (pid, tid): (u32, u32),
    args: [u64; MAX_ARGS],
    ret: i64,
    ts: u64,
) -> Vec<u8> {
    let rec = CallRecord {
        kind: RecordKind::Call as u32,
        func_id,
        call_id,
        parent_id: 0,
        ts_begin: ts,
        ts_end: ts + 500,
        pid,
        tid,
        depth: 0,
        flags: 0,
        ret,
        out: 0,
        args,
    };
    // SAFETY: the bytes of a plain repr(C) record, as the ring buffer carries them.
    unsafe {
        std::slice::from_raw_parts(
            (&rec as *const CallRecord).cast::<u8>(),
            size_of::<CallRecord>(),
        )
    }
    .to_vec()
}

fn string(call_id: u64, arg: u32, s: &str) -> Vec<u8> {
    let len = s.len().min(STR_CAP - 1);
    let hdr = StrHeader {
        kind: RecordKind::Str as u32,
        arg,
        call_id,
        len: len as u32,
        pid: 0,
    };
    // SAFETY: as above.
    let mut v = unsafe {
        std::slice::from_raw_parts(
            (&hdr as *const StrHeader).cast::<u8>(),
            size_of::<StrHeader>(),
        )
    }
    .to_vec();
    v.extend_from_slice(&s.as_bytes()[..len]);
    v
}

/// Runs `events` synthetic records through the pipeline, writing Parquet under `out`.
pub fn run(events: u64, out: &Path) -> anyhow::Result<Result> {
    let probes = probes::load(None)?;
    let id = |name: &str| {
        probes
            .iter()
            .find(|p| p.function() == name && matches!(p.target, probes::Target::Syscall(_)))
            .map(|p| p.id)
            .ok_or_else(|| anyhow::anyhow!("no {name} probe"))
    };
    let (openat, write, close) = (id("openat")?, id("write")?, id("close")?);
    let pid = std::process::id();
    // A real file of strata's own, so that file resolution does its real work.
    let target = out.join("pipeline-target.dat");
    std::fs::write(&target, b"")?;
    let file = std::fs::File::open(&target)?;
    let fd = std::os::fd::AsRawFd::as_raw_fd(&file) as u64;
    let path = target.display().to_string();
    // What an open's record carries beyond its arguments (`fd_inode`): the inode, then the
    // kernel's device number with the mode above it, as the kernel side reads them.
    let (ino, dev_mode) = {
        use std::os::unix::fs::MetadataExt as _;
        let m = file.metadata()?;
        let kdev = (libc::major(m.dev()) << 20) | libc::minor(m.dev());
        (
            m.ino(),
            u64::from(kdev) | u64::from(m.mode() & 0xffff) << 32,
        )
    };

    // Build the stream first: only the pipeline is timed. Its records lie end to end,
    // 8-byte aligned, as in the ring buffer (and in the backlog strata copies them to).
    let mut stream = Stream::default();
    let mut call_id = 0u64;
    let mut ts = 1_000_000u64;
    while (stream.spans.len() as u64) < events {
        call_id += 1024;
        ts += 1000;
        stream.push(string(call_id, 1, &path));
        stream.push(call(
            openat,
            call_id,
            (pid, pid),
            [u64::MAX - 99, 0, 0o1101, 0o644, ino, dev_mode],
            fd as i64,
            ts,
        ));
        for i in 0..98u64 {
            call_id += 1024;
            ts += 1000;
            stream.push(call(
                write,
                call_id,
                (pid, pid + i as u32 % THREADS),
                [fd, 0, 4096, 0, 0, 0],
                4096,
                ts + i,
            ));
        }
        call_id += 1024;
        stream.push(call(close, call_id, (pid, pid), [fd, 0, 0, 0, 0, 0], 0, ts));
    }
    stream.spans.truncate(events as usize);
    let Stream { bytes, spans } = stream;

    let mut dataset = Dataset::create(out, "bench", "pipeline", crate::dataset::DEFAULT_FILE_MODE)?;
    let mut corr = Correlator::new(probes, Clock::now());
    let start = Instant::now();
    for (i, span) in spans.into_iter().enumerate() {
        let ev = events::decode(&bytes[span])?;
        corr.guarded(|c| c.handle(ev, &mut dataset));
        // As the recorder does: a file whenever the buffers fill, and a tick and flush about
        // once a second at this rate.
        if i % 1_000_000 == 999_999 {
            corr.guarded(|c| c.tick(&mut dataset));
            dataset.flush()?;
        } else if i % 4096 == 0 {
            dataset.flush_if_full()?;
        }
    }
    corr.guarded(|c| c.finish(&mut dataset));
    dataset.flush()?;
    let seconds = start.elapsed().as_secs_f64();
    Ok(Result {
        events,
        seconds,
        parquet_bytes: dataset.calls.bytes_written,
        calls_written: dataset.calls.rows_written,
    })
}
