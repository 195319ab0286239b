//! Linux AIO requests (layer `aio`): each `iocb` handed to io_submit is a call of its own,
//! from the submission to the reaping of its event, beneath the io_submit that took it.
//!
//! The kernel side sends the `iocb`'s words at io_submit's entry and each event's `iocb`
//! address and result at io_getevents' return, joined here by process and address. Its entry
//! program may run before the syscall layer's, so the io_submit call each request belongs to
//! is set here, from the thread's next io_submit record; that record's return also says how
//! many the kernel took: the ones after are no requests, and are dropped.
use strata_common::{AIO_OPS, CallRecord, MAX_ARGS, RequestEnd};

use crate::{
    fast::HashMap,
    probes::{ArgKind, Layer, Probe, Target},
};

/// Requests waiting for their event, at most: past that, the ones waiting longest are
/// dropped (their event was lost, or the context destroyed with them in flight).
const MAX_PENDING: usize = 65536;
/// Flushes a request waits for its event.
const MAX_AGE: u32 = 600;
/// Flushes a thread's requests wait for its io_submit's record (lost when the ring buffer
/// was full) before they are taken as submitted, beneath what the kernel saw them in.
const SUBMIT_WAIT: u32 = 2;

/// (process, `iocb` address).
type Key = (u32, u64);

struct Pending {
    rec: CallRecord,
    age: u32,
    /// Its io_submit's record was seen (the parent is set, the kernel took it).
    submitted: bool,
    /// Its event, when it came before the io_submit's record.
    end: Option<(u64, i64)>,
}

#[derive(Default)]
pub struct LinuxAio {
    /// By (process, `iocb` address).
    pending: HashMap<Key, Pending>,
    /// Per thread, its io_submit in progress's requests, in the order given (with each
    /// one's call id), and the flushes they have waited for its record.
    submitting: HashMap<u32, (u32, Vec<(Key, u64)>)>,
    /// The io_submit syscall's probe, when it is traced.
    submit_probe: Option<u32>,
    /// By opcode (`IOCB_CMD_*`): the enabled probe that records it, and its arguments.
    ops: Vec<Option<(u32, Vec<ArgKind>)>>,
    /// Requests that never had their event (counted in `run.requests_unfinished`).
    pub unfinished: u64,
}

/// Argument `k` of a Linux AIO request, from the `iocb`'s words after `aio_data` (see
/// [`strata_common::AIO_IOCB_OFF`]); probes.toml allows only these kinds.
fn iocb_member(w: &[u64; MAX_ARGS], k: ArgKind) -> u64 {
    match k {
        // aio_fildes, a u32 holding an int.
        ArgKind::Fd => i64::from((w[1] >> 32) as i32) as u64,
        ArgKind::Buf | ArgKind::Iov => w[2],
        ArgKind::Size | ArgKind::IovCnt => w[3],
        ArgKind::Offset => w[4],
        // aio_rw_flags (RWF_*).
        ArgKind::Flags => w[0] >> 32,
        _ => 0,
    }
}

impl LinuxAio {
    pub fn new(probes: &[Probe]) -> Self {
        let mut ops = vec![None; AIO_OPS as usize];
        for p in probes.iter().filter(|p| p.enabled && p.layer == Layer::Aio) {
            if let Target::Request { opcode, .. } = p.target {
                ops[usize::from(opcode)] = Some((p.id, p.args.clone()));
            }
        }
        let submit = Target::Syscall("io_submit".into());
        Self {
            submit_probe: probes
                .iter()
                .find(|p| p.enabled && p.target == submit)
                .map(|p| p.id),
            ops,
            ..Self::default()
        }
    }

    /// A request submitted: `rec` with the `iocb`'s words as its arguments (see
    /// [`strata_common::FUNC_AIO`]), made a call of its opcode's probe; dropped when no
    /// probe records that opcode, or the `iocb` could not be read (the kernel refuses it too).
    /// Returns a request of the same `iocb` whose event came while its io_submit's record
    /// did not, ended.
    pub fn begin(&mut self, mut rec: CallRecord, iocb: u64) -> Option<CallRecord> {
        let words = rec.args;
        let opcode = (words[1] & 0xffff) as usize;
        let Some(Some((id, args))) = self.ops.get(opcode).filter(|_| rec.flags == 0) else {
            return None;
        };
        rec.func_id = *id;
        rec.args = [0; MAX_ARGS];
        for (a, k) in rec.args.iter_mut().zip(args) {
            *a = iocb_member(&words, *k);
        }
        if self.pending.len() >= MAX_PENDING {
            let before = self.pending.len();
            self.pending.retain(|_, r| r.age == 0);
            self.unfinished += (before - self.pending.len()) as u64;
        }
        let key = (rec.pid, iocb);
        let submitted = self.submit_probe.is_none();
        if !submitted {
            let list = &mut self.submitting.entry(rec.tid).or_default().1;
            list.push((key, rec.call_id));
        }
        let new = Pending {
            rec,
            age: 0,
            submitted,
            end: None,
        };
        // The same iocb again: the one before had its event, or never will.
        match self.pending.insert(key, new) {
            Some(old) if old.end.is_some() => Some(finish(old)),
            Some(_) => {
                self.unfinished += 1;
                None
            }
            None => None,
        }
    }

    /// Whether `rec` is an io_submit's record with requests waiting for it.
    #[inline]
    pub fn is_submit(&self, rec: &CallRecord) -> bool {
        !self.submitting.is_empty() && Some(rec.func_id) == self.submit_probe
    }

    /// The io_submit `call` returned: its thread's requests are beneath it, the first `ret`
    /// taken, the others dropped. Returns the ones whose event already came, ended.
    pub fn submitted(&mut self, call: &CallRecord) -> Vec<CallRecord> {
        let Some((_, keys)) = self.submitting.remove(&call.tid) else {
            return Vec::new();
        };
        let mut done = Vec::new();
        for (i, (key, id)) in keys.into_iter().enumerate() {
            // Gone, or the iocb given again since.
            let Some(r) = self.pending.get_mut(&key).filter(|r| r.rec.call_id == id) else {
                continue;
            };
            if (i as i64) >= call.ret {
                self.pending.remove(&key);
                continue;
            }
            r.submitted = true;
            // Read at the same syscall entry as the call's own start, by a program that may
            // have run just before the syscall layer's.
            r.rec.ts_begin = r.rec.ts_begin.max(call.ts_begin);
            r.rec.parent_id = call.call_id;
            r.rec.depth = call.depth + 1;
            if r.end.is_some() {
                done.extend(self.pending.remove(&key).map(finish));
            }
        }
        done
    }

    /// An event reaped: its request, ended, unless its io_submit's record is still to come.
    pub fn end(&mut self, end: &RequestEnd) -> Option<CallRecord> {
        let key = (end.pid, end.req);
        let r = self.pending.get_mut(&key)?;
        r.end = Some((end.ts_end, end.ret));
        if !r.submitted {
            return None;
        }
        self.pending.remove(&key).map(finish)
    }

    /// Once per flush: ages the requests; returns those whose event came and whose
    /// io_submit's record never will (lost), ended beneath the call the kernel saw them in.
    pub fn tick(&mut self) -> Vec<CallRecord> {
        let mut done = Vec::new();
        let pending = &mut self.pending;
        self.submitting.retain(|_, (age, keys)| {
            *age += 1;
            if *age < SUBMIT_WAIT {
                return true;
            }
            for (key, id) in keys.drain(..) {
                match pending.get_mut(&key).filter(|r| r.rec.call_id == id) {
                    Some(r) if r.end.is_some() => done.extend(pending.remove(&key).map(finish)),
                    Some(r) => r.submitted = true,
                    None => {}
                }
            }
            false
        });
        let before = self.pending.len();
        self.pending.retain(|_, r| {
            r.age += 1;
            r.age < MAX_AGE
        });
        self.unfinished += (before - self.pending.len()) as u64;
        done
    }

    /// End of the run: the requests whose event came, ended; the others counted.
    pub fn finish(&mut self) -> Vec<CallRecord> {
        let mut done = Vec::new();
        for (_, r) in self.pending.drain() {
            match r.end {
                Some(_) => done.push(finish(r)),
                None => self.unfinished += 1,
            }
        }
        self.submitting.clear();
        done
    }
}

fn finish(r: Pending) -> CallRecord {
    let mut rec = r.rec;
    if let Some((ts, ret)) = r.end {
        rec.ts_end = ts;
        rec.ret = ret;
    }
    rec
}

#[cfg(test)]
mod tests {
    use super::*;

    /// io_submit (probe 0) and IOCB_CMD_PWRITE (probe 1).
    fn aio() -> LinuxAio {
        let text = "[[probe]]\nlayer = \"posix\"\nsyscall = \"io_submit\"\nop = \"meta\"\n\
                    ret = \"count\"\n\n\
                    [[probe]]\nlayer = \"aio\"\nrequest = \"IOCB_CMD_PWRITE\"\nopcode = 1\n\
                    op = \"write\"\nargs = [\"fd\", \"offset\", \"size\", \"flags\"]\n\
                    ret = \"bytes\"\n";
        LinuxAio::new(&crate::probes::parse(text, "t.toml").unwrap())
    }

    /// A request of thread 7 of process 5, begun at `ts`, with fd 3, offset 8192 and 4096
    /// bytes in its iocb (RWF_SYNC in its flags).
    fn begin(aio: &mut LinuxAio, iocb: u64, ts: u64) {
        let mut rec: CallRecord = unsafe { std::mem::zeroed() };
        (rec.pid, rec.tid, rec.ts_begin, rec.call_id) = (5, 7, ts, iocb);
        rec.func_id = strata_common::FUNC_AIO;
        rec.args = [4 << 32, (3 << 32) | 1, 0xdead, 4096, 8192, 0];
        assert!(aio.begin(rec, iocb).is_none());
    }

    fn submit(ret: i64) -> CallRecord {
        let mut rec: CallRecord = unsafe { std::mem::zeroed() };
        (rec.pid, rec.tid, rec.func_id, rec.call_id) = (5, 7, 0, 99);
        (rec.ts_begin, rec.ts_end, rec.depth, rec.ret) = (10, 20, 1, ret);
        rec
    }

    fn end(iocb: u64, ret: i64) -> RequestEnd {
        RequestEnd {
            pid: 5,
            req: iocb,
            ts_end: 30,
            ret,
            ..Default::default()
        }
    }

    #[test]
    fn requests_go_beneath_their_io_submit_and_only_the_ones_taken() {
        let mut aio = aio();
        for iocb in [0x100, 0x200, 0x300] {
            begin(&mut aio, iocb, 15);
        }
        assert!(aio.is_submit(&submit(2)));
        // The kernel took 2 of the 3.
        assert!(aio.submitted(&submit(2)).is_empty());
        assert!(aio.end(&end(0x300, 1)).is_none(), "not taken: no request");
        let r = aio.end(&end(0x200, 4096)).unwrap();
        assert_eq!((r.func_id, r.parent_id, r.depth), (1, 99, 2));
        assert_eq!((r.ret, r.ts_end), (4096, 30));
        assert_eq!(&r.args[..4], &[3, 8192, 4096, 4]);
        assert_eq!(aio.finish().len(), 0);
        assert_eq!(aio.unfinished, 1, "0x100 never had its event");
    }

    #[test]
    fn an_event_before_its_io_submit_record_waits_for_it() {
        let mut aio = aio();
        begin(&mut aio, 0x100, 15);
        assert!(aio.end(&end(0x100, -14)).is_none());
        let r = aio.submitted(&submit(1));
        assert_eq!((r.len(), r[0].parent_id, r[0].ret), (1, 99, -14));
        // Without an io_submit record, it is ended after a while beneath what the kernel saw.
        begin(&mut aio, 0x200, 25);
        assert!(aio.end(&end(0x200, 7)).is_none());
        assert!(aio.tick().is_empty());
        let r = aio.tick();
        assert_eq!((r.len(), r[0].parent_id, r[0].ret), (1, 0, 7));
        assert!(!aio.is_submit(&submit(1)), "nothing left waiting");
    }

    #[test]
    fn opcodes_no_probe_records_and_unreadable_iocbs_are_no_requests() {
        let mut aio = aio();
        let mut rec: CallRecord = unsafe { std::mem::zeroed() };
        (rec.pid, rec.tid, rec.func_id) = (5, 7, strata_common::FUNC_AIO);
        // IOCB_CMD_NOOP (6).
        rec.args[1] = (3 << 32) | 6;
        assert!(aio.begin(rec, 0x100).is_none());
        // A PWRITE whose iocb could not be read (-EFAULT).
        (rec.args[1], rec.flags) = ((3 << 32) | 1, -14i32 as u32);
        assert!(aio.begin(rec, 0x200).is_none());
        assert!(!aio.is_submit(&submit(2)));
        assert!(aio.end(&end(0x100, 0)).is_none() && aio.end(&end(0x200, 0)).is_none());
    }
}
