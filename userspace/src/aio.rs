//! Transfers done for a non-blocking library call by a helper thread. Open MPI's OMPIO hands
//! MPI_File_iwrite/iread to POSIX AIO, and glibc's AIO helper thread issues the pwrite64 or
//! pread64 at depth 0 on its own stack: nothing nests it under the call that queued it. It is
//! linked by process, file, offset and size to that call, as its parent.
//!
//! The helper may finish before the queuing call returns (its record then comes first), so
//! depth-0 positional transfers of secondary threads are held back until the next tick
//! (one flush interval) in case their request shows up.
use crate::{fast::HashMap, schema::CallRow};

/// (pid, file id, offset, bytes).
type Key = (i32, i64, i64, i64);

/// Ticks a request waits for its transfer.
const REQUEST_TICKS: u32 = 10;

#[derive(Default)]
pub struct Helpers {
    /// Non-blocking transfers whose helper transfer has not been seen: call id, tid, tick.
    requests: HashMap<Key, (i64, i32, u32)>,
    /// Transfers held back this tick, waiting for a request.
    held: HashMap<Key, Vec<CallRow>>,
    tick: u32,
}

fn key(row: &CallRow, bytes: Option<i64>) -> Option<Key> {
    Some((row.pid, row.file_id?, row.offset?, bytes?))
}

impl Helpers {
    /// A non-blocking library transfer (it returns a request). Returns held transfers it
    /// queued, now linked to it.
    pub fn request(&mut self, row: &CallRow) -> Vec<CallRow> {
        let Some(k) = key(row, row.bytes_requested) else {
            return Vec::new();
        };
        if let Some(list) = self.held.get_mut(&k) {
            if let Some(i) = list.iter().position(|h| h.tid != row.tid) {
                let mut t = list.swap_remove(i);
                if list.is_empty() {
                    self.held.remove(&k);
                }
                t.parent_id = Some(row.call_id);
                return vec![t];
            }
        }
        self.requests.insert(k, (row.call_id, row.tid, self.tick));
        Vec::new()
    }

    /// A POSIX transfer. Returns it (linked if a request matches), or holds it back when it
    /// may belong to a request not yet seen.
    pub fn transfer(&mut self, mut row: CallRow) -> Option<CallRow> {
        let candidate = row.depth == 0 && row.parent_id.is_none() && row.tid != row.pid;
        let Some(k) = key(&row, row.bytes_requested).filter(|_| candidate) else {
            return Some(row);
        };
        match self.requests.get(&k) {
            Some((id, tid, _)) if *tid != row.tid => {
                row.parent_id = Some(*id);
                self.requests.remove(&k);
                Some(row)
            }
            _ => {
                self.held.entry(k).or_default().push(row);
                None
            }
        }
    }

    /// Once per flush interval: held transfers go out as they are; old requests are dropped.
    pub fn tick(&mut self) -> Vec<CallRow> {
        self.tick += 1;
        let now = self.tick;
        self.requests
            .retain(|_, (_, _, t)| now - *t < REQUEST_TICKS);
        self.held.drain().flat_map(|(_, v)| v).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(call_id: i64, pid: i32, tid: i32, offset: i64, bytes: i64) -> CallRow {
        CallRow {
            call_id,
            pid,
            tid,
            file_id: Some(7),
            offset: Some(offset),
            bytes_requested: Some(bytes),
            ..CallRow::default()
        }
    }

    #[test]
    fn links_in_either_order_and_lets_the_rest_through() {
        let mut h = Helpers::default();
        // Request first, then the helper's pwrite on another thread.
        assert!(h.request(&row(1, 10, 10, 4096, 1000)).is_empty());
        let t = h.transfer(row(2, 10, 11, 4096, 1000)).unwrap();
        assert_eq!(t.parent_id, Some(1));
        // The helper first: held, then linked when the request comes.
        assert!(h.transfer(row(3, 10, 11, 8192, 500)).is_none());
        let linked = h.request(&row(4, 10, 10, 8192, 500));
        assert_eq!(linked.len(), 1);
        assert_eq!((linked[0].call_id, linked[0].parent_id), (3, Some(4)));
        // The main thread's own pwrite is never held; an unmatched helper one goes out at tick.
        assert!(h.transfer(row(5, 10, 10, 0, 1)).is_some());
        assert!(h.transfer(row(6, 10, 12, 0, 1)).is_none());
        let out = h.tick();
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].call_id, out[0].parent_id), (6, None));
    }
}
