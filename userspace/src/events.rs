//! Decoding ring-buffer records into owned events.
use std::{mem::size_of, ptr};

use strata_common::{
    CALL_INT_HANDLES, CallRecord, FUNC_INT_HANDLES, ImageHeader, JobRecord, KernelEvent,
    KernelRecord, MAX_TYPE_REFS, ProcEvent, ProcRecord, RecordKind, RequestBegin, RequestEnd,
    STR_FAILED, StrHeader, TypeIdsRecord,
};

#[derive(Debug)]
pub enum Event {
    Call(CallRecord),
    /// An io_uring request submitted (its record has no end yet), by request address.
    RequestBegin {
        req: u64,
        rec: CallRecord,
    },
    /// That request completed.
    RequestEnd(RequestEnd),
    /// String argument `arg` of `call_id`; `None` when the kernel could not read it.
    Str {
        pid: u32,
        call_id: u64,
        arg: u32,
        text: Option<String>,
    },
    /// Boxed: rare, and its file name would make every event as big (each is moved a few
    /// times on its way through the recorder).
    Proc {
        event: ProcEvent,
        rec: Box<ProcRecord>,
    },
    /// Array argument `arg` of `call_id` (the words the kernel could read).
    Blob {
        pid: u32,
        call_id: u64,
        arg: u32,
        words: Vec<u64>,
    },
    Kernel {
        event: KernelEvent,
        rec: KernelRecord,
    },
    /// The ids of a process's predefined datatypes: (id, size in bytes).
    TypeIds {
        pid: u32,
        types: Vec<(u64, u64)>,
    },
    /// A part of a new image's arguments or environment (see [`ImageHeader`]).
    Image {
        pid: u32,
        what: u32,
        offset: u32,
        total: u32,
        data: Vec<u8>,
    },
    /// In cgroup mode, the traced cgroup a process's thread is in (see [`JobRecord`]).
    Job {
        pid: u32,
        job: u64,
    },
}

impl Event {
    /// The process (tgid) the record was made in: for kernel events, whatever task was
    /// running (a writeback worker, an interrupted one).
    pub fn pid(&self) -> u32 {
        match self {
            Self::Call(r) | Self::RequestBegin { rec: r, .. } => r.pid,
            Self::RequestEnd(e) => e.pid,
            Self::Str { pid, .. }
            | Self::Blob { pid, .. }
            | Self::TypeIds { pid, .. }
            | Self::Image { pid, .. }
            | Self::Job { pid, .. } => *pid,
            Self::Proc { rec, .. } => rec.pid,
            Self::Kernel { rec, .. } => rec.pid,
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecodeError {
    #[error("record of {0} bytes is too short")]
    Short(usize),
    #[error("unknown record kind {0}")]
    Kind(u32),
    #[error("unknown process event {0}")]
    ProcEvent(u32),
    #[error("unknown kernel event {0}")]
    KernelEvent(u32),
}

fn read<T: Copy>(bytes: &[u8]) -> Result<T, DecodeError> {
    if bytes.len() < size_of::<T>() {
        return Err(DecodeError::Short(bytes.len()));
    }
    // SAFETY: length checked; T is a plain repr(C) record valid for any bit pattern.
    Ok(unsafe { ptr::read_unaligned(bytes.as_ptr().cast::<T>()) })
}

pub fn decode(bytes: &[u8]) -> Result<Event, DecodeError> {
    let kind: u32 = read(bytes)?;
    match kind {
        k if k == RecordKind::Call as u32 => {
            let mut rec: CallRecord = read(bytes)?;
            if rec.func_id >= FUNC_INT_HANDLES {
                rec.func_id -= FUNC_INT_HANDLES;
                rec.flags |= CALL_INT_HANDLES;
            }
            Ok(Event::Call(rec))
        }
        k if k == RecordKind::RequestBegin as u32 => {
            let RequestBegin { mut rec, req } = read(bytes)?;
            rec.kind = RecordKind::Call as u32;
            Ok(Event::RequestBegin { req, rec })
        }
        k if k == RecordKind::RequestEnd as u32 => Ok(Event::RequestEnd(read(bytes)?)),
        k if k == RecordKind::Str as u32 => {
            let hdr: StrHeader = read(bytes)?;
            let data = &bytes[size_of::<StrHeader>()..];
            let text = (hdr.len != STR_FAILED).then(|| {
                let s = &data[..(hdr.len as usize).min(data.len())];
                let s = s.split(|b| *b == 0).next().unwrap_or(s);
                crate::files::text(s)
            });
            Ok(Event::Str {
                pid: hdr.pid,
                call_id: hdr.call_id,
                arg: hdr.arg,
                text,
            })
        }
        k if k == RecordKind::Blob as u32 => {
            let hdr: StrHeader = read(bytes)?;
            let data = &bytes[size_of::<StrHeader>()..];
            let data = &data[..(hdr.len as usize).min(data.len())];
            // An array of an odd number of C ints ends in half a word: zero-filled.
            let words = data
                .chunks(8)
                .map(|c| {
                    let mut w = [0u8; 8];
                    w[..c.len()].copy_from_slice(c);
                    u64::from_ne_bytes(w)
                })
                .collect();
            Ok(Event::Blob {
                pid: hdr.pid,
                call_id: hdr.call_id,
                arg: hdr.arg,
                words,
            })
        }
        k if k == RecordKind::Proc as u32 => {
            let rec: ProcRecord = read(bytes)?;
            let event = match rec.event {
                e if e == ProcEvent::NewTask as u32 => ProcEvent::NewTask,
                e if e == ProcEvent::Exec as u32 => ProcEvent::Exec,
                e if e == ProcEvent::Exit as u32 => ProcEvent::Exit,
                e => return Err(DecodeError::ProcEvent(e)),
            };
            Ok(Event::Proc {
                event,
                rec: Box::new(rec),
            })
        }
        k if k == RecordKind::Kernel as u32 => {
            let rec: KernelRecord = read(bytes)?;
            let event =
                KernelEvent::from_u32(rec.event).ok_or(DecodeError::KernelEvent(rec.event))?;
            Ok(Event::Kernel { event, rec })
        }
        k if k == RecordKind::TypeIds as u32 => {
            let rec: TypeIdsRecord = read(bytes)?;
            let n = (rec.count as usize).min(MAX_TYPE_REFS);
            Ok(Event::TypeIds {
                pid: rec.pid,
                // 0: not read (no id is 0).
                types: rec.types[..n]
                    .iter()
                    .filter(|t| t.id != 0)
                    .map(|t| (t.id, t.size))
                    .collect(),
            })
        }
        k if k == RecordKind::Image as u32 => {
            let hdr: ImageHeader = read(bytes)?;
            let data = &bytes[size_of::<ImageHeader>()..];
            Ok(Event::Image {
                pid: hdr.pid,
                what: hdr.what,
                offset: hdr.offset,
                total: hdr.total,
                data: data[..(hdr.len as usize).min(data.len())].to_vec(),
            })
        }
        k if k == RecordKind::Job as u32 => {
            let rec: JobRecord = read(bytes)?;
            Ok(Event::Job {
                pid: rec.pid,
                job: rec.job,
            })
        }
        k => Err(DecodeError::Kind(k)),
    }
}

/// The command name in a process record.
pub fn comm(rec: &ProcRecord) -> String {
    c_str(&rec.comm)
}

/// The executed file of an exec record.
pub fn filename(rec: &ProcRecord) -> Option<String> {
    Some(c_str(&rec.filename)).filter(|s| !s.is_empty())
}

fn c_str(b: &[u8]) -> String {
    let end = b.iter().position(|b| *b == 0).unwrap_or(b.len());
    crate::files::text(&b[..end])
}

#[cfg(test)]
mod tests {
    use strata_common::{PATH_CAP, StrRecord};

    use super::*;

    fn bytes<T>(v: &T) -> Vec<u8> {
        // SAFETY: reading the bytes of a plain record.
        unsafe { std::slice::from_raw_parts((v as *const T).cast::<u8>(), size_of::<T>()) }.to_vec()
    }

    #[test]
    fn an_event_is_small_to_move() {
        // A process record (320 bytes: a file name of 256) made every event bigger still,
        // and each is moved a few times on its way through the recorder.
        assert!(size_of::<Event>() <= 144, "{} bytes", size_of::<Event>());
    }

    #[test]
    fn decodes_each_kind() {
        let mut s = StrRecord {
            hdr: StrHeader {
                kind: RecordKind::Str as u32,
                arg: 1,
                call_id: 42,
                len: 4,
                pid: 0,
            },
            data: [0; PATH_CAP],
        };
        s.data[..5].copy_from_slice(b"/tmp\0");
        // Only the header and the string travel.
        let short = &bytes(&s)[..size_of::<StrHeader>() + 4];
        match decode(short).unwrap() {
            Event::Str {
                call_id, arg, text, ..
            } => {
                assert_eq!((call_id, arg, text.as_deref()), (42, 1, Some("/tmp")))
            }
            e => panic!("{e:?}"),
        }
        s.hdr.len = STR_FAILED;
        assert!(matches!(
            decode(&bytes(&s)).unwrap(),
            Event::Str { text: None, .. }
        ));
        let p = ProcRecord {
            kind: RecordKind::Proc as u32,
            event: 9,
            ts: 0,
            pid: 1,
            tid: 1,
            other: 0,
            flags: 0,
            comm: *b"bash\0\0\0\0\0\0\0\0\0\0\0\0",
            filename: [0; strata_common::FILENAME_CAP],
            root: Default::default(),
            job: 0,
        };
        assert_eq!(decode(&bytes(&p)).unwrap_err(), DecodeError::ProcEvent(9));
        assert_eq!(comm(&p), "bash");
        assert_eq!(decode(&[1, 0]).unwrap_err(), DecodeError::Short(2));
        assert_eq!(decode(&[99, 0, 0, 0]).unwrap_err(), DecodeError::Kind(99));
        // An io_uring request's two records: the submission decodes to a call record.
        let begin = RequestBegin {
            rec: CallRecord {
                kind: RecordKind::RequestBegin as u32,
                func_id: 3,
                call_id: 8,
                parent_id: 0,
                ts_begin: 1,
                ts_end: 0,
                pid: 4,
                tid: 4,
                depth: 0,
                flags: 0,
                ret: 0,
                out: 0,
                args: [0; 6],
            },
            req: 0xfeed,
        };
        match decode(&bytes(&begin)).unwrap() {
            ev @ Event::RequestBegin { req: 0xfeed, rec } => {
                assert_eq!(
                    (rec.kind, rec.call_id, ev.pid()),
                    (RecordKind::Call as u32, 8, 4)
                );
            }
            e => panic!("{e:?}"),
        }
        let end = RequestEnd {
            kind: RecordKind::RequestEnd as u32,
            pid: 4,
            req: 0xfeed,
            ret: -9,
            ..Default::default()
        };
        match decode(&bytes(&end)).unwrap() {
            ev @ Event::RequestEnd(e) => assert_eq!((e.req, e.ret, ev.pid()), (0xfeed, -9, 4)),
            e => panic!("{e:?}"),
        }
        let mut t = TypeIdsRecord {
            kind: RecordKind::TypeIds as u32,
            pid: 5,
            count: 3,
            _pad: 0,
            types: [strata_common::TypeId::default(); MAX_TYPE_REFS],
        };
        t.types[0] = strata_common::TypeId { id: 77, size: 8 };
        t.types[2] = strata_common::TypeId { id: 79, size: 4 };
        t.types[3] = strata_common::TypeId { id: 80, size: 2 };
        match decode(&bytes(&t)).unwrap() {
            Event::TypeIds { pid, types } => {
                // Unread ids (0) and entries past `count` are left out.
                assert_eq!((pid, types), (5, vec![(77, 8), (79, 4)]));
            }
            e => panic!("{e:?}"),
        }
        assert_eq!(decode(&[1, 0, 0, 0, 0]).unwrap_err(), DecodeError::Short(5));
    }
}
