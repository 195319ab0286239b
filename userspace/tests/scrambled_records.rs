//! Records as the kernel side could deliver them on a bad day: out of order, with some lost
//! (a full ring buffer), duplicated ids, arguments and results of any value, process events
//! for processes never seen, requests that never end and ends of requests never begun. The
//! correlator must take any such stream without a panic, and what it writes must read back:
//! one malformed record may not cost the node's other jobs their trace.
//!
//! The streams are built from values that real records carry (descriptors, offsets, errnos,
//! the run's own pid, ids that name each other's calls) rather than plain noise, so that they
//! reach the paths behind the first checks: handle tables, HDF5 dataspaces, MPI datatypes,
//! io_uring and Linux AIO requests, page-cache runs and block requests.
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use strata::{
    correlate::{Clock, Correlator},
    dataset::{DEFAULT_FILE_MODE, Dataset},
    events::Event,
    probes,
};
use strata_common::{
    CALL_INT_HANDLES, CALL_OUT_VALID, CallRecord, DEREF_FAILED, FUNC_AIO, KernelEvent,
    KernelRecord, ProcEvent, ProcRecord, REQUEST_AIO, RecordKind, RequestEnd, RootId,
};

/// A process that does not exist (below Linux's largest pid, 2^22).
const GONE: u32 = 4_190_001;

fn pids() -> impl Strategy<Value = u32> {
    prop_oneof![
        4 => Just(std::process::id()),
        2 => Just(GONE),
        1 => Just(GONE + 1),
        1 => Just(u32::MAX),
    ]
}

/// Argument words: descriptors, sizes, offsets, pointers, flags and the markers the kernel
/// side writes (an unreadable pointer), or anything.
fn words() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => 0u64..8,
        1 => Just(4096u64),
        1 => Just(1u64 << 40),
        1 => Just(u64::MAX - 99), // AT_FDCWD
        1 => Just(DEREF_FAILED),
        1 => Just(0x7fff_0000_1000u64),
        1 => Just((8u64 << 20) | 1),
        2 => any::<u64>(),
    ]
}

fn rets() -> impl Strategy<Value = i64> {
    prop_oneof![
        2 => -20i64..8,
        1 => Just(4096i64),
        1 => Just(i64::MAX),
        1 => Just(i64::MIN),
        1 => any::<i64>(),
    ]
}

/// Call ids that name each other: parents, strings and requests find their calls.
fn ids() -> impl Strategy<Value = u64> {
    prop_oneof![8 => (1u64..24).prop_map(|i| i << 10), 1 => Just(0u64), 1 => any::<u64>()]
}

fn call(funcs: u32) -> impl Strategy<Value = CallRecord> {
    (
        (0..funcs + 3, ids(), ids(), pids(), 0u32..3),
        (any::<u32>(), 0u64..1_000_000, 0u32..4),
        (0u32..4, rets(), words()),
        [words(), words(), words(), words(), words(), words()],
    )
        .prop_map(
            |(
                (func_id, call_id, parent_id, pid, tid),
                (ts, dur, depth),
                (flags, ret, out),
                args,
            )| {
                let ts_begin = 1_000_000_000 + u64::from(ts);
                CallRecord {
                    kind: RecordKind::Call as u32,
                    func_id,
                    call_id,
                    parent_id,
                    ts_begin,
                    ts_end: ts_begin + dur,
                    pid,
                    tid: pid.wrapping_add(tid),
                    depth,
                    flags: [0, CALL_OUT_VALID, CALL_INT_HANDLES, 3][flags as usize],
                    ret,
                    out,
                    args,
                }
            },
        )
}

fn text() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        4 => prop::sample::select(vec![
            "/tmp/strata-scrambled/a.h5",
            "/tmp/strata-scrambled/../b",
            "",
            "relative/c.dat",
            "/proc/self/fd/3",
            "/dev/null",
            "/",
            "dataset",
            "w+",
        ])
        .prop_map(|s| Some(s.to_string())),
        1 => Just(None),
        1 => "\\PC{0,40}".prop_map(Some),
    ]
}

fn kernel() -> impl Strategy<Value = Event> {
    (
        (
            0..strata_common::KERNEL_EVENTS as u32,
            0u64..1_000_000,
            ids(),
            pids(),
        ),
        (
            prop::sample::select(vec![0u32, (8 << 20) | 1, (259 << 20) | 2, 7]),
            0u32..64,
        ),
        (words(), words(), words(), any::<i32>(), words()),
        any::<[u8; 8]>(),
    )
        .prop_map(
            |((event, ts, call_id, pid), (dev, nr), (ino, pos, old_pos, error, end), tag)| {
                let rec = KernelRecord {
                    kind: RecordKind::Kernel as u32,
                    event,
                    ts: 1_000_000_000 + ts,
                    call_id,
                    pid,
                    tid: pid,
                    dev,
                    nr,
                    ino,
                    pos,
                    old_dev: dev,
                    error,
                    old_pos,
                    ts_end: 1_000_000_000 + ts + end % 1000,
                    tag,
                };
                Event::Kernel {
                    event: KernelEvent::from_u32(event).expect("in range"),
                    rec,
                }
            },
        )
}

fn proc() -> impl Strategy<Value = Event> {
    (
        (1u32..4, pids(), pids(), any::<bool>()),
        prop::sample::select(vec!["bash", "mpirun", "strata", "a.out", ""]),
        text(),
    )
        .prop_map(|((event, pid, other, flag), comm, file)| {
            let mut rec = ProcRecord {
                kind: RecordKind::Proc as u32,
                event,
                ts: 1_000_000_000,
                pid,
                tid: pid,
                other,
                // A thread's creation; a whole group's exit.
                flags: if flag {
                    strata_common::CLONE_THREAD as u32 | 1
                } else {
                    0
                },
                comm: [0; 16],
                filename: [0; strata_common::FILENAME_CAP],
                root: RootId::default(),
                job: 0,
            };
            rec.comm[..comm.len()].copy_from_slice(comm.as_bytes());
            let f = file.unwrap_or_default();
            let n = f.len().min(strata_common::FILENAME_CAP - 1);
            rec.filename[..n].copy_from_slice(&f.as_bytes()[..n]);
            let event = match event {
                1 => ProcEvent::NewTask,
                2 => ProcEvent::Exec,
                _ => ProcEvent::Exit,
            };
            Event::Proc {
                event,
                rec: Box::new(rec),
            }
        })
}

/// A Linux AIO request: its `iocb`'s words after `aio_data`, with the opcode and descriptor
/// where the kernel side puts them.
fn aio_begin(rec: CallRecord, req: u64, op: u64, fd: u64) -> Event {
    let mut rec = rec;
    rec.func_id = FUNC_AIO;
    rec.args[1] = op | (fd << 32);
    Event::RequestBegin { req, rec }
}

/// One step of a stream: a record, or the recorder's once-a-second tick.
#[derive(Debug)]
enum Step {
    Record(Box<Event>),
    Tick,
}

fn record(ev: Event) -> Step {
    Step::Record(Box::new(ev))
}

fn step(funcs: u32) -> impl Strategy<Value = Step> {
    let req = prop_oneof![(1u64..6).prop_map(|r| r << 6), any::<u64>()];
    let ends = (req.clone(), pids(), rets(), words(), any::<bool>()).prop_map(
        |(req, pid, ret, ino, aio)| {
            record(Event::RequestEnd(RequestEnd {
                kind: RecordKind::RequestEnd as u32,
                pid,
                req,
                ts_end: 1_000_500_000,
                ret,
                ino,
                dev: (8 << 20) | 1,
                flags: if aio { REQUEST_AIO } else { 0 },
            }))
        },
    );
    prop_oneof![
        12 => call(funcs).prop_map(|r| record(Event::Call(r))),
        3 => (ids(), pids(), 0u32..7, text()).prop_map(|(call_id, pid, arg, text)| {
            record(Event::Str { pid, call_id, arg, text })
        }),
        1 => (ids(), pids(), 0u32..7, prop::collection::vec(words(), 0..8)).prop_map(
            |(call_id, pid, arg, words)| record(Event::Blob { pid, call_id, arg, words })
        ),
        2 => (call(funcs), req.clone()).prop_map(|(rec, req)| record(
            Event::RequestBegin { req, rec }
        )),
        2 => (call(funcs), req, 0u64..10, 0u64..6).prop_map(|(rec, req, op, fd)| {
            record(aio_begin(rec, req, op, fd))
        }),
        2 => ends,
        3 => kernel().prop_map(record),
        2 => proc().prop_map(record),
        1 => (pids(), prop::collection::vec((words(), 0u64..64), 0..6))
            .prop_map(|(pid, types)| record(Event::TypeIds { pid, types })),
        1 => (pids(), 0u32..3, prop::sample::select(vec![0u32, 5, 16384]), any::<u32>(), "\\PC{0,30}")
            .prop_map(|(pid, what, offset, total, data)| record(Event::Image {
                pid,
                what,
                offset,
                total,
                data: data.into_bytes(),
            })),
        1 => Just(()).prop_map(|()| Step::Tick),
    ]
}

fn scratch(case: u64) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("strata-scrambled-{}-{case}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Rows of a table, reading every column of every file (an unreadable file fails).
fn rows(out: &Path, table: &str) -> usize {
    strata::sink::read_table(out, table)
        .unwrap_or_else(|e| panic!("table {table}: {e:#}"))
        .iter()
        .map(|b| b.num_rows())
        .sum()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn any_stream_of_records_is_taken_and_written(
        steps in prop::collection::vec(step(probes::load(None).unwrap().len() as u32), 1..160),
        case in any::<u64>(),
    ) {
        let out = scratch(case);
        let mut dataset = Dataset::create(&out, "node", "run", DEFAULT_FILE_MODE).unwrap();
        let mut corr = Correlator::new(probes::load(None).unwrap(), Clock::now());
        // What may become a row of `calls`: each call record, and each request's beginning.
        let mut sources = 0;
        for s in steps {
            match s {
                Step::Record(ev) => {
                    sources += usize::from(matches!(*ev, Event::Call(_) | Event::RequestBegin { .. }));
                    corr.handle(*ev, &mut dataset);
                }
                Step::Tick => {
                    corr.tick(&mut dataset);
                    dataset.flush().unwrap();
                }
            }
        }
        corr.finish(&mut dataset);
        dataset.flush().unwrap();
        let calls = rows(&out, "calls");
        for table in ["handles", "files", "processes", "mounts", "block", "pagecache"] {
            rows(&out, table);
        }
        prop_assert!(calls <= sources, "{calls} call rows from {sources} records");
        let _ = std::fs::remove_dir_all(&out);
    }
}
