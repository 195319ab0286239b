//! The kernel layers: block requests followed from bio submission to completion, and page-cache
//! and writeback events merged into page ranges.
//!
//! Bios are kept where they were submitted: by a traced call (a direct or synchronous read or
//! write, an fsync), or by a writeback worker writing a watched inode. A request is matched to
//! the kept bios inside its sector range, whichever bio started it (bios merge into requests
//! of other processes), and gives one row per call (or inode) with bios in it. The submitting
//! call usually returns after its requests complete, so a row waits for the call's record to
//! learn the file.
use std::collections::BTreeMap;

use strata_common::{KernelEvent, KernelRecord};

use crate::{
    correlate::Clock,
    fast::HashMap,
    files::Files,
    schema::{BlockRow, CallRow, PagecacheRow},
};

/// Ticks (flush intervals) a request row waits for its call, and state lives without news.
const WAIT_TICKS: u32 = 3;
const STALE_TICKS: u32 = 60;

/// "major:minor" of a kernel dev_t (major << 20 | minor).
pub fn dev_string(kdev: u32) -> String {
    format!("{}:{}", kdev >> 20, kdev & 0xf_ffff)
}

/// A user-space dev_t from a kernel one.
pub fn user_dev(kdev: u32) -> u64 {
    libc::makedev(kdev >> 20, kdev & 0xf_ffff)
}

/// A user-space dev_t from "major:minor" (a backing device's name), if it is one.
fn parse_dev(name: &str) -> Option<u64> {
    let (ma, mi) = name.split_once(':')?;
    Some(libc::makedev(ma.parse().ok()?, mi.parse().ok()?))
}

fn tag(rec: &KernelRecord) -> String {
    let end = rec
        .tag
        .iter()
        .position(|b| *b == 0)
        .unwrap_or(rec.tag.len());
    String::from_utf8_lossy(&rec.tag[..end]).into_owned()
}

/// The operation of a request from its `rwbs` flags (F: preflush, then R/W/D/N...).
pub fn op_of(rwbs: &str) -> &'static str {
    let body = rwbs.strip_prefix('F').unwrap_or(rwbs);
    match body.chars().next() {
        Some('D') => "discard",
        Some('W') => "write",
        Some('R') => "read",
        _ if rwbs.starts_with('F') => "flush",
        _ => "other",
    }
}

#[derive(Clone)]
struct Bio {
    ts: i64,
    pid: i32,
    tid: i32,
    call_id: u64,
    ino: u64,
    /// Sectors.
    nr: u64,
    tick: u32,
}

/// A request with kept bios in it (its own first bio, or bios merged into it).
struct Request {
    bios: Vec<Bio>,
    issue: Option<i64>,
    nr: u64,
    rwbs: String,
    tick: u32,
}

struct Writeback {
    ts: i64,
    pid: i32,
    ino: u64,
    dev: Option<u64>,
    index: u64,
}

#[derive(Default)]
pub struct Kernel {
    /// Kept bios not yet in an issued request, by (dev, first sector).
    bios: BTreeMap<(u32, u64), Bio>,
    requests: HashMap<(u32, u64), Request>,
    /// Open page ranges, one per (event, thread).
    ranges: HashMap<(KernelEvent, i32), (PagecacheRow, Option<u64>, u32)>,
    writebacks: HashMap<i32, Writeback>,
    /// Request rows waiting for their call's record (by call id), with the tick they began.
    awaiting: HashMap<u64, (Vec<BlockRow>, u32)>,
    /// Calls that submitted bios, once their record is in: their file id.
    call_files: HashMap<u64, (Option<i64>, u32)>,
    calls_with_bios: HashMap<u64, u32>,
    tick: u32,
    pub block_rows: Vec<BlockRow>,
    pub page_rows: Vec<PagecacheRow>,
}

impl Kernel {
    /// Takes the kept bios that lie in the request at `start` of `nr` sectors on `dev`.
    fn bios_in(&mut self, dev: u32, start: u64, nr: u64) -> Vec<Bio> {
        let keys: Vec<(u32, u64)> = self
            .bios
            .range((dev, start)..=(dev, start.saturating_add(nr.max(1) - 1)))
            .map(|(k, _)| *k)
            .collect();
        keys.iter().filter_map(|k| self.bios.remove(k)).collect()
    }

    pub fn event(&mut self, event: KernelEvent, rec: &KernelRecord, clock: &Clock, files: &Files) {
        let ts = clock.epoch(rec.ts);
        let (pid, tid) = (rec.pid as i32, rec.tid as i32);
        let key = (rec.dev, rec.pos);
        match event {
            // Requests arrive as calls, not kernel records.
            KernelEvent::UringSubmit
            | KernelEvent::UringComplete
            | KernelEvent::UringFailed
            | KernelEvent::AioSubmit
            | KernelEvent::AioWait
            | KernelEvent::AioReaped
            | KernelEvent::AioPwait
            | KernelEvent::AioPreaped => {}
            KernelEvent::BioQueue => {
                if rec.call_id != 0 {
                    *self.calls_with_bios.entry(rec.call_id).or_default() += 1;
                }
                self.bios.insert(
                    key,
                    Bio {
                        ts,
                        pid,
                        tid,
                        call_id: rec.call_id,
                        ino: rec.ino,
                        nr: u64::from(rec.nr),
                        tick: self.tick,
                    },
                );
            }
            KernelEvent::BioSplit => {
                // The front keeps the bio's sector, the remainder starts at the new one.
                let new = rec.old_pos;
                if let Some(front) = self.bios.get_mut(&key) {
                    let head = new.saturating_sub(rec.pos).min(front.nr);
                    let mut rest = front.clone();
                    rest.nr = front.nr - head;
                    front.nr = head;
                    if rest.call_id != 0 {
                        *self.calls_with_bios.entry(rest.call_id).or_default() += 1;
                    }
                    self.bios.insert((rec.dev, new), rest);
                }
            }
            KernelEvent::BioRemap => {
                if let Some(b) = self.bios.remove(&(rec.old_dev, rec.old_pos)) {
                    self.bios.insert(key, b);
                }
            }
            KernelEvent::RqIssue => {
                let nr = u64::from(rec.nr);
                let bios = self.bios_in(rec.dev, rec.pos, nr);
                if !bios.is_empty() {
                    self.requests.insert(
                        key,
                        Request {
                            bios,
                            issue: Some(ts),
                            nr,
                            rwbs: tag(rec),
                            tick: self.tick,
                        },
                    );
                }
            }
            KernelEvent::RqComplete => {
                let req = self.requests.remove(&key).unwrap_or_else(|| {
                    // Issued before tracing began (or its issue was not seen).
                    let nr = u64::from(rec.nr);
                    Request {
                        bios: self.bios_in(rec.dev, rec.pos, nr),
                        issue: None,
                        nr,
                        rwbs: tag(rec),
                        tick: self.tick,
                    }
                });
                let error = (rec.error != 0).then_some(rec.error);
                self.request_rows(key, req, Some(ts), error, files);
            }
            KernelEvent::WritebackStart => {
                self.writebacks.insert(
                    tid,
                    Writeback {
                        ts,
                        pid,
                        ino: rec.ino,
                        dev: parse_dev(&tag(rec)),
                        index: rec.pos,
                    },
                );
            }
            KernelEvent::WritebackEnd => {
                let Some(w) = self.writebacks.remove(&tid).filter(|w| w.ino == rec.ino) else {
                    return;
                };
                self.page_rows.push(PagecacheRow {
                    event: "writeback".into(),
                    pid: w.pid,
                    tid,
                    call_id: None,
                    dev: w
                        .dev
                        .map(|d| format!("{}:{}", libc::major(d), libc::minor(d))),
                    ino: w.ino as i64,
                    file_id: file_of(files, w.dev, w.ino),
                    first_page: w.index as i64,
                    last_page: w.index as i64,
                    pages: Some(i64::from(rec.nr)),
                    ts_begin_ns: w.ts,
                    ts_end_ns: ts,
                });
            }
            KernelEvent::PageDirty | KernelEvent::CacheAdd | KernelEvent::CacheDelete => {
                let dev = if event == KernelEvent::PageDirty {
                    parse_dev(&tag(rec))
                } else {
                    Some(user_dev(rec.dev))
                };
                let call_id = (rec.call_id != 0).then_some(rec.call_id as i64);
                // The dirty event does not say how large its folio is: its range grows with
                // every later folio, and its page count stays unknown.
                let pages = (event != KernelEvent::PageDirty).then_some(i64::from(rec.nr));
                // A record is a range already: a syscall's events on consecutive pages, merged
                // in the kernel by the rule below.
                let (last, ts_end) = (rec.old_pos as i64, clock.epoch(rec.ts_end));
                let rkey = (event, tid);
                if let Some((row, rdev, _)) = self.ranges.get_mut(&rkey) {
                    let index = rec.pos as i64;
                    let follows = match (row.pages, pages) {
                        (Some(p), Some(_)) => row.first_page + p == index,
                        _ => index > row.last_page,
                    };
                    if row.ino == rec.ino as i64
                        && row.call_id == call_id
                        && *rdev == dev
                        && follows
                    {
                        row.pages = row.pages.zip(pages).map(|(a, b)| a + b);
                        row.last_page = last;
                        row.ts_end_ns = ts_end;
                        return;
                    }
                }
                let row = PagecacheRow {
                    event: match event {
                        KernelEvent::PageDirty => "dirty",
                        KernelEvent::CacheAdd => "add",
                        _ => "delete",
                    }
                    .into(),
                    pid,
                    tid,
                    call_id,
                    dev: dev.map(|d| format!("{}:{}", libc::major(d), libc::minor(d))),
                    ino: rec.ino as i64,
                    file_id: None,
                    first_page: rec.pos as i64,
                    last_page: last,
                    pages,
                    ts_begin_ns: ts,
                    ts_end_ns: ts_end,
                };
                if let Some((old, odev, _)) = self.ranges.insert(rkey, (row, dev, self.tick)) {
                    self.close_range(old, odev, files);
                }
            }
        }
    }

    /// One row per call (or worker inode, or process) with bios in the request; `complete` is
    /// None for a request still in flight when tracing ended.
    fn request_rows(
        &mut self,
        (dev, sector): (u32, u64),
        req: Request,
        complete: Option<i64>,
        error: Option<i32>,
        files: &Files,
    ) {
        let mut groups: Vec<(u64, u64, i32, i32, u64, i64)> = Vec::new();
        for b in &req.bios {
            match groups
                .iter_mut()
                .find(|g| (g.0, g.1, g.2, g.3) == (b.call_id, b.ino, b.pid, b.tid))
            {
                Some(g) => {
                    g.4 += b.nr;
                    g.5 = g.5.min(b.ts);
                }
                None => groups.push((b.call_id, b.ino, b.pid, b.tid, b.nr, b.ts)),
            }
        }
        for (call_id, ino, pid, tid, sectors, queued) in groups {
            let origin = if call_id != 0 {
                "call"
            } else if ino != 0 {
                "writeback"
            } else {
                "process"
            };
            let row = BlockRow {
                pid,
                tid,
                call_id: (call_id != 0).then_some(call_id as i64),
                origin: origin.into(),
                dev: dev_string(dev),
                sector: sector as i64,
                bytes: sectors as i64 * 512,
                request_bytes: req.nr as i64 * 512,
                op: op_of(&req.rwbs).into(),
                rwbs: req.rwbs.clone(),
                ts_queue_ns: queued,
                ts_issue_ns: req.issue,
                ts_complete_ns: complete,
                error,
                ino: (ino != 0).then_some(ino as i64),
                file_id: (ino != 0)
                    .then(|| file_of(files, Some(user_dev(dev)), ino))
                    .flatten(),
            };
            self.request_done(call_id, row);
        }
    }

    fn close_range(&mut self, mut row: PagecacheRow, dev: Option<u64>, files: &Files) {
        row.file_id = file_of(files, dev, row.ino as u64);
        self.page_rows.push(row);
    }

    fn request_done(&mut self, call_id: u64, mut row: BlockRow) {
        if call_id == 0 {
            self.block_rows.push(row);
            return;
        }
        if let Some(n) = self.calls_with_bios.get_mut(&call_id) {
            *n -= 1;
            if *n == 0 {
                self.calls_with_bios.remove(&call_id);
            }
        }
        match self.call_files.get(&call_id) {
            Some((file, _)) => {
                row.file_id = row.file_id.or(*file);
                self.block_rows.push(row);
            }
            None => {
                let tick = self.tick;
                self.awaiting
                    .entry(call_id)
                    .or_insert_with(|| (Vec::new(), tick))
                    .0
                    .push(row);
            }
        }
    }

    /// A call's record is in: requests it submitted learn its file.
    pub fn call_done(&mut self, call: &CallRow) {
        // Without the block layer (or before its first bio) there is nothing to look up.
        if self.awaiting.is_empty() && self.calls_with_bios.is_empty() {
            return;
        }
        let id = call.call_id as u64;
        if let Some((rows, _)) = self.awaiting.remove(&id) {
            for mut r in rows {
                r.file_id = r.file_id.or(call.file_id);
                self.block_rows.push(r);
            }
        }
        if self.calls_with_bios.contains_key(&id) {
            self.call_files.insert(id, (call.file_id, self.tick));
        }
    }

    /// Once per flush interval: page ranges are closed, rows that waited long enough for their
    /// call go out as they are, requests never seen completing go out without a completion
    /// time, and bios that never reached a request are dropped.
    pub fn tick(&mut self, files: &Files) {
        self.tick += 1;
        let now = self.tick;
        for (_, (row, dev, _)) in std::mem::take(&mut self.ranges) {
            self.close_range(row, dev, files);
        }
        // Requests whose completion never came (lost, or still in flight at the end) keep
        // their bytes and issue time.
        let stale: Vec<(u32, u64)> = self
            .requests
            .iter()
            .filter(|(_, r)| now - r.tick >= STALE_TICKS)
            .map(|(k, _)| *k)
            .collect();
        for key in stale {
            if let Some(req) = self.requests.remove(&key) {
                self.request_rows(key, req, None, None, files);
            }
        }
        let expired: Vec<u64> = self
            .awaiting
            .iter()
            .filter(|(_, (_, t))| now - t >= WAIT_TICKS)
            .map(|(k, _)| *k)
            .collect();
        for k in expired {
            if let Some((rows, _)) = self.awaiting.remove(&k) {
                self.block_rows.extend(rows);
            }
        }
        self.call_files.retain(|_, (_, t)| now - *t < STALE_TICKS);
        self.bios.retain(|_, b| now - b.tick < STALE_TICKS);
        if self.calls_with_bios.len() > 65536 {
            self.calls_with_bios.clear();
        }
    }

    /// End of the run: everything still open goes out.
    pub fn finish(&mut self, files: &Files) {
        self.tick = self.tick.saturating_add(STALE_TICKS);
        self.tick(files);
        for (_, (rows, _)) in self.awaiting.drain() {
            self.block_rows.extend(rows);
        }
    }
}

fn file_of(files: &Files, dev: Option<u64>, ino: u64) -> Option<i64> {
    dev.and_then(|d| files.by_inode(Some(d), ino))
        .or_else(|| files.by_inode(None, ino))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(event: KernelEvent, call_id: u64, pos: u64, nr: u32, ts: u64) -> KernelRecord {
        KernelRecord {
            event: event as u32,
            ts,
            call_id,
            pid: 10,
            tid: 10,
            dev: (8 << 20) | 1,
            nr,
            pos,
            tag: *b"WS\0\0\0\0\0\0",
            ..KernelRecord::default()
        }
    }

    /// Two calls' bios merged into one request, and a third call's bio split in two
    /// requests: each call gets its own bytes.
    #[test]
    fn bios_are_matched_to_requests_by_range() {
        use KernelEvent::*;
        let clock = Clock::now();
        let files = Files::default();
        let mut k = Kernel::default();
        let mut feed = |r: KernelRecord| {
            let ev = KernelEvent::from_u32(r.event).unwrap();
            k.event(ev, &r, &clock, &files);
        };
        // Call 1: sectors 100..108, call 2: 108..116, merged into one request at 100.
        feed(rec(BioQueue, 1, 100, 8, 1));
        feed(rec(BioQueue, 2, 108, 8, 2));
        feed(rec(RqIssue, 0, 100, 16, 3));
        feed(rec(RqComplete, 0, 100, 16, 4));
        // Call 3: sectors 200..264, split at 232 into two requests.
        feed(rec(BioQueue, 3, 200, 64, 5));
        let mut split = rec(BioSplit, 3, 200, 0, 6);
        split.old_pos = 232;
        feed(split);
        feed(rec(RqIssue, 0, 200, 32, 7));
        feed(rec(RqIssue, 0, 232, 32, 8));
        feed(rec(RqComplete, 0, 232, 32, 9));
        feed(rec(RqComplete, 0, 200, 32, 10));
        // A request of someone else's bios only: no row.
        feed(rec(RqIssue, 0, 500, 8, 11));
        feed(rec(RqComplete, 0, 500, 8, 12));
        for id in 1..=3 {
            k.call_done(&CallRow {
                call_id: id,
                file_id: Some(id * 10),
                ..CallRow::default()
            });
        }
        type Seen = (Option<i64>, i64, i64, i64, Option<i64>);
        let mut got: Vec<Seen> = k
            .block_rows
            .iter()
            .map(|r| (r.call_id, r.sector, r.bytes, r.request_bytes, r.file_id))
            .collect();
        got.sort();
        assert_eq!(
            got,
            vec![
                (Some(1), 100, 8 * 512, 16 * 512, Some(10)),
                (Some(2), 100, 8 * 512, 16 * 512, Some(20)),
                (Some(3), 200, 32 * 512, 32 * 512, Some(30)),
                (Some(3), 232, 32 * 512, 32 * 512, Some(30)),
            ]
        );
        assert!(k.bios.is_empty() && k.requests.is_empty());
    }

    /// A request still in flight when tracing ends keeps its row, without a completion time.
    #[test]
    fn requests_in_flight_at_the_end_are_kept() {
        use KernelEvent::*;
        let clock = Clock::now();
        let files = Files::default();
        let mut k = Kernel::default();
        for r in [rec(BioQueue, 7, 300, 16, 1), rec(RqIssue, 0, 300, 16, 2)] {
            k.event(KernelEvent::from_u32(r.event).unwrap(), &r, &clock, &files);
        }
        k.tick(&files);
        assert!(k.block_rows.is_empty(), "a request is not given up early");
        k.finish(&files);
        let rows: Vec<_> = k
            .block_rows
            .iter()
            .map(|r| {
                (
                    r.call_id,
                    r.sector,
                    r.bytes,
                    r.ts_issue_ns.is_some(),
                    r.ts_complete_ns,
                )
            })
            .collect();
        assert_eq!(rows, vec![(Some(7), 300, 16 * 512, true, None)]);
        assert!(k.requests.is_empty() && k.awaiting.is_empty());
    }

    #[test]
    fn rwbs_ops_and_devices() {
        assert_eq!(op_of("WS"), "write");
        assert_eq!(op_of("FWS"), "write");
        assert_eq!(op_of("RA"), "read");
        assert_eq!(op_of("FN"), "flush");
        assert_eq!(op_of("DS"), "discard");
        assert_eq!(op_of("N"), "other");
        assert_eq!(dev_string((254 << 20) | 3), "254:3");
        assert_eq!(parse_dev("254:0"), Some(libc::makedev(254, 0)));
        assert_eq!(parse_dev("btrfs-1"), None);
    }
}
