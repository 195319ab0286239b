//! The reader of strata's ring buffer. It copies records out in batches into a backlog in
//! strata's memory and hands their space back to the kernel once per batch:
//! - aya's `RingBuf` stores the consumer position after every record, so a reader busy behind
//!   the traced calls pulls that cache line to its CPU once per record, and the next
//!   reservation on a traced CPU pulls it back. Measured with BPF statistics over 300,000
//!   writes of 1 byte: strata's syscall exit program took 143-153 ns per run with aya's
//!   reader, 89-97 ns with batches; the traced write, 202 and 153 ns more than untraced.
//! - A burst faster than strata writes Parquet (open+fstat+close at some 3M records/s, against
//!   ~1.4M/s handled) waits in the backlog instead of overflowing the ring: 500,000 such
//!   records through the default 16 MiB ring lost 187,000 read in place, none with the backlog.
//!   The reading loop copies them itself between records; a copier thread steps in once the
//!   ring is an eighth full, so that it is emptied also while the loop writes a file or waits
//!   for a CPU (copied only between records, 11,000 were lost that way on a busy machine).
//! - While records come, the copier looks at the ring every few milliseconds anyway, and says
//!   so to the kernel ([`maps::QUIET_BELOW`]): the kernel's wakeups per 256 KiB wait until the
//!   ring is as full as the copier copies at. Each is an interrupt on the traced CPU: 45-49 per
//!   200,000 write(1 B) calls before, 7 now.
use std::{
    collections::VecDeque,
    num::NonZeroUsize,
    os::fd::{AsFd, AsRawFd as _, RawFd},
    ptr::NonNull,
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering},
    },
    thread::JoinHandle,
    time::Duration,
};

use aya::maps::{Array, Map, MapData};
use nix::sys::{
    epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout},
    eventfd::{EfdFlags, EventFd},
    mman::{MapFlags, ProtFlags, mmap, mmap_anonymous, munmap},
};
use strata_common::{QUIET_NEVER, maps};

/// The kernel's record header (`BPF_RINGBUF_HDR_SZ`): the length with two flag bits, and the
/// page offset the kernel uses to find the ring from a record.
const HDR: usize = 8;
const BUSY: u32 = 1 << 31;
const DISCARD: u32 = 1 << 30;

#[derive(Debug, thiserror::Error)]
pub enum RingError {
    #[error("map {0} is not a ring buffer")]
    NotRingBuf(&'static str),
    #[error("reading the ring buffer's size: {0}")]
    Info(#[from] aya::maps::MapError),
    #[error("ring buffer size {0} is not a power of two")]
    Size(u32),
    #[error("mapping the ring buffer: {0}")]
    Mmap(#[from] nix::Error),
    #[error("setting up the wait on the ring buffer: {0}")]
    Epoll(nix::Error),
    #[error("opening map {}, the reader's word to the kernel: {}", maps::QUIET_BELOW, .0)]
    Quiet(aya::maps::MapError),
    #[error("starting the ring buffer's copier thread: {0}")]
    Thread(#[from] std::io::Error),
}

/// One mapping (of the ring buffer's pages, or a backlog chunk's memory), unmapped on drop.
struct Mapping {
    ptr: NonNull<core::ffi::c_void>,
    len: NonZeroUsize,
}

impl Mapping {
    fn new(fd: impl AsFd, len: usize, prot: ProtFlags, offset: usize) -> Result<Self, RingError> {
        let len = NonZeroUsize::new(len).ok_or(nix::Error::EINVAL)?;
        // SAFETY: a fresh shared mapping of the map's pages; nothing else aliases it in Rust.
        let ptr = unsafe { mmap(None, len, prot, MapFlags::MAP_SHARED, fd, offset as i64)? };
        Ok(Self { ptr, len })
    }

    /// Private memory of its own (a backlog chunk), given back to the system on drop.
    fn anonymous(len: usize) -> Result<Self, RingError> {
        let len = NonZeroUsize::new(len).ok_or(nix::Error::EINVAL)?;
        let prot = ProtFlags::PROT_READ | ProtFlags::PROT_WRITE;
        let flags = MapFlags::MAP_PRIVATE | MapFlags::MAP_ANONYMOUS;
        // SAFETY: a fresh private mapping; nothing else aliases it.
        let ptr = unsafe { mmap_anonymous(None, len, prot, flags)? };
        Ok(Self { ptr, len })
    }
}

/// A block of records copied out of the ring as it holds them (each: the kernel's header,
/// its length with the flag bits, then its bytes padded to 8; discarded ones too). Chunks
/// have one size and are mapped on their own, not taken from the heap: batches as large as
/// what the ring held, up to its size, left the heap in pieces no later request fit, and
/// under a sustained overload it grew by some 7 MiB/s with no more in use (from 170 to
/// 530 MiB in 45 s, two thirds of it free).
struct Chunk {
    mem: Mapping,
    len: usize,
}

impl Chunk {
    fn new(size: usize) -> Result<Self, RingError> {
        Ok(Self {
            mem: Mapping::anonymous(size)?,
            len: 0,
        })
    }

    fn size(&self) -> usize {
        self.mem.len.get()
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: the first `len` bytes of the mapping are written (`append`), and it lives
        // as long as `self`.
        unsafe { std::slice::from_raw_parts(self.mem.ptr.cast::<u8>().as_ptr(), self.len) }
    }

    /// Appends ring entries whole, given in two parts where they wrap around the ring's end;
    /// the caller checked that they fit.
    fn extend(&mut self, head: &[u8], tail: &[u8]) {
        let n = head.len() + tail.len();
        assert!(self.len + n <= self.size(), "backlog chunk overflow");
        // SAFETY: the bytes fit (asserted) in the mapping, which nothing else references.
        unsafe {
            let at = self.mem.ptr.cast::<u8>().as_ptr().add(self.len);
            std::ptr::copy_nonoverlapping(head.as_ptr(), at, head.len());
            if !tail.is_empty() {
                std::ptr::copy_nonoverlapping(tail.as_ptr(), at.add(head.len()), tail.len());
            }
        }
        self.len += n;
    }
}

/// The bytes a record of `len` bytes takes in the ring, and in a chunk.
fn entry_len(len: usize) -> usize {
    (HDR + len).next_multiple_of(8)
}

// SAFETY: the mapping is plain shared memory; its owner decides who touches it (the ring's
// state sits behind a mutex).
unsafe impl Send for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, no longer referenced.
        let _ = unsafe { munmap(self.ptr, self.len.get()) };
    }
}

/// The ring's pages and how far they are read: used under the [`Shared`] mutex.
struct Ring {
    /// The consumer page (read-write): the consumer position at offset 0.
    consumer: Mapping,
    /// The producer page (the producer position at offset 0), then the data pages. The kernel
    /// offers them twice in a row, so that a record wrapping around the end reads as one
    /// slice; the reader copies records anyway, maps them once and copies a wrapped one in
    /// two parts (each mapping counts in strata's resident memory: a 16 MiB ring counted 32).
    producer: Mapping,
    page: usize,
    mask: usize,
    /// Where the next record in the ring starts (the ones before it are copied out).
    pos: usize,
}

/// The ring and the records copied out of it, shared by the copier thread and the reader.
struct Shared {
    ring: Ring,
    /// Records copied out and not yet taken, oldest first; the last chunk takes the next
    /// records while it has room.
    backlog: VecDeque<Chunk>,
    /// The memory the backlog's chunks hold (their size, not what they hold yet).
    backlog_bytes: usize,
    /// The most the backlog may hold; beyond it records stay in the ring (and once that is
    /// full, the kernel drops and counts them).
    backlog_cap: usize,
    /// The size of a chunk.
    chunk: usize,
    /// Chunks read to the end, kept for the next copies: fresh memory would cost a page
    /// fault per 4 KiB copied.
    spare: Vec<Chunk>,
    /// A chunk could not be mapped (said once).
    map_failed: bool,
}

/// At most this many read chunks are kept for reuse.
const SPARE_CHUNKS: usize = 4;

/// The size of a backlog chunk (or the ring's, if smaller): a record is at most a few KiB,
/// and a chunk is taken and given back whole, between records.
const CHUNK_BYTES: usize = 1 << 20;

/// strata's event ring buffer, read record by record; see the module doc.
pub struct EventRing {
    /// Keeps the map's descriptor open for the copier's poll (it is joined before this drops)
    /// and the reading loop's wait.
    _map: MapData,
    shared: Arc<Mutex<Shared>>,
    /// The chunk being read, taken whole from the backlog, and where its next record starts.
    current: Option<Chunk>,
    front: usize,
    /// Records taken since the last refill.
    since_refill: u32,
    /// Signalled by the copier when it adds records.
    ready: Arc<EventFd>,
    /// What a reading loop waits on (see [`Self::wait`]).
    epoll: Epoll,
    stop: Arc<AtomicBool>,
    copier: Option<JoinHandle<()>>,
}

/// The backlog holds at most this many times the ring's size, unless told otherwise.
const BACKLOG_RINGS: usize = 8;

/// Records a reading loop handles in one pass before it looks at its other work (signals,
/// flushes, the end of the run): about 50 ms' worth. While a traced job makes records faster
/// than strata handles them, the backlog never runs empty, and a loop that waited for that
/// would never stop.
pub const RECORDS_PER_PASS: usize = 65_536;

/// How long the copier waits for the kernel's wakeup (which comes per 256 KiB of records, or
/// at once for library calls) before it looks anyway.
const COPIER_WAIT: Duration = Duration::from_millis(20);

/// How often the copier looks at the ring while records come.
const COPIER_TICK: Duration = Duration::from_millis(5);

/// The copier copies only once the ring is this full (a fraction of its size): until then
/// the reading loop takes the records itself, between records it handles, on its own CPU. A
/// second thread copying right behind the traced calls would take CPU time from them on a
/// node whose cores are all busy, and pull their cache lines to its own CPU.
const COPIER_FILL: usize = 8;

/// How often the reading loop moves the ring's records into the backlog, in records it
/// takes: often enough that a burst far faster than the pipeline fills the backlog, not the
/// ring (at ~1.4M records/s, every ~0.2 ms).
const REFILL_EVERY: u32 = 256;

/// What a refill found.
#[derive(PartialEq)]
enum Refill {
    Copied,
    /// The ring is empty.
    Empty,
    /// The ring's next record is still being written, or the backlog is full.
    Blocked,
}

/// Why a copy into a chunk stopped.
enum Stop {
    /// The ring is empty.
    Empty,
    /// The ring's next record is still being written.
    Busy,
    /// The chunk has no room for the next record, which takes this many bytes.
    Full(usize),
}

impl Ring {
    fn consumer_pos(&self) -> &AtomicUsize {
        // SAFETY: the consumer page starts with the kernel's `unsigned long consumer_pos`.
        unsafe { self.consumer.ptr.cast::<AtomicUsize>().as_ref() }
    }

    /// Written by the kernel with release order after the record headers before it.
    fn load_producer_pos(&self) -> usize {
        // SAFETY: the producer page starts with the kernel's `unsigned long producer_pos`.
        unsafe { self.producer.ptr.cast::<AtomicUsize>().as_ref() }.load(Ordering::Acquire)
    }

    /// Copies the committed records that fit into `chunk` and hands their space back to the
    /// kernel at once. Their headers are read first, then the bytes go in one copy (two where
    /// they wrap around the ring's end), headers and all: copied one by one, with a length of
    /// the chunk's own, they took 2.5 calls of memcpy per record.
    fn copy_out(&mut self, chunk: &mut Chunk) -> Stop {
        let producer_pos = self.load_producer_pos();
        let room = chunk.size() - chunk.len;
        let mut end = self.pos;
        let mut stop = Stop::Empty;
        while end != producer_pos {
            // SAFETY: the offset is inside the data pages, and a header is 8-byte aligned (so
            // it never wraps); the kernel commits it with a fully ordered exchange.
            let header = unsafe {
                self.producer
                    .ptr
                    .cast::<u8>()
                    .add(self.page + (end & self.mask))
                    .cast::<AtomicU32>()
                    .as_ref()
            }
            .load(Ordering::Acquire);
            if header & BUSY != 0 {
                // Reserved, not yet submitted: what follows waits for it.
                stop = Stop::Busy;
                break;
            }
            let entry = entry_len((header & !(BUSY | DISCARD)) as usize);
            if end - self.pos + entry > room {
                stop = Stop::Full(entry);
                break;
            }
            end += entry;
        }
        if end != self.pos {
            let start = self.pos & self.mask;
            let len = end - self.pos;
            let first = len.min(self.mask + 1 - start);
            let data = self.producer.ptr.cast::<u8>();
            // SAFETY: both parts lie inside the data pages (at most the ring's size in all);
            // committed records are not written until they are handed back.
            let (head, tail) = unsafe {
                (
                    std::slice::from_raw_parts(data.add(self.page + start).as_ptr(), first),
                    std::slice::from_raw_parts(data.add(self.page).as_ptr(), len - first),
                )
            };
            chunk.extend(head, tail);
            self.pos = end;
        }
        if self.consumer_pos().load(Ordering::Relaxed) != self.pos {
            self.consumer_pos().store(self.pos, Ordering::Release);
        }
        stop
    }
}

impl Shared {
    /// Moves what the ring holds into the backlog, as far as its cap allows.
    fn refill(&mut self) -> Refill {
        if self.ring.pos == self.ring.load_producer_pos() {
            return Refill::Empty;
        }
        let mut copied = false;
        loop {
            let stop = match self.backlog.back_mut() {
                Some(chunk) => {
                    let before = chunk.len;
                    let stop = self.ring.copy_out(chunk);
                    copied |= chunk.len != before;
                    stop
                }
                None => Stop::Full(0),
            };
            let Stop::Full(need) = stop else { break };
            let size = self.chunk.max(need);
            if self.backlog_bytes + size > self.backlog_cap {
                break;
            }
            let spare = if size == self.chunk {
                self.spare.pop()
            } else {
                None
            };
            let chunk = match spare {
                Some(chunk) => chunk,
                None => match Chunk::new(size) {
                    Ok(chunk) => chunk,
                    Err(e) => {
                        // Out of memory: the records wait in the ring.
                        if !std::mem::replace(&mut self.map_failed, true) {
                            log::warn!("cannot map {size} bytes for copied records: {e}");
                        }
                        break;
                    }
                },
            };
            self.backlog_bytes += chunk.size();
            self.backlog.push_back(chunk);
        }
        if copied {
            Refill::Copied
        } else {
            Refill::Blocked
        }
    }

    /// Keeps a chunk read to the end for the next copies, or lets it go.
    fn give_back(&mut self, mut chunk: Chunk) {
        if chunk.size() == self.chunk && self.spare.len() < SPARE_CHUNKS {
            chunk.len = 0;
            self.spare.push(chunk);
        }
    }
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    // A panic elsewhere cannot leave the ring half-read: positions change after each copy.
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

impl EventRing {
    /// The reader of ring-buffer map `name`, taken from the loaded object; starts its copier.
    /// The backlog holds at most `backlog_cap` bytes (None: 8 rings' worth), and at least a
    /// chunk. `quiet`: the programs' [`maps::QUIET_BELOW`], where the copier says when it
    /// looks on its own (None: the kernel wakes the reader per 256 KiB whatever it does).
    pub fn new(
        map: Map,
        name: &'static str,
        backlog_cap: Option<usize>,
        quiet: Option<Map>,
    ) -> Result<Self, RingError> {
        let quiet = quiet.map(Quiet::new).transpose()?;
        let Map::RingBuf(map) = map else {
            return Err(RingError::NotRingBuf(name));
        };
        let size = map.info()?.max_entries();
        if !size.is_power_of_two() {
            return Err(RingError::Size(size));
        }
        let size = size as usize;
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let fd = map.fd().as_fd();
        let consumer = Mapping::new(fd, page, ProtFlags::PROT_READ | ProtFlags::PROT_WRITE, 0)?;
        let producer = Mapping::new(fd, page + size, ProtFlags::PROT_READ, page)?;
        let mut ring = Ring {
            consumer,
            producer,
            page,
            mask: size - 1,
            pos: 0,
        };
        ring.pos = ring.consumer_pos().load(Ordering::Acquire);
        let shared = Arc::new(Mutex::new(Shared {
            ring,
            backlog: VecDeque::new(),
            backlog_bytes: 0,
            backlog_cap: backlog_cap
                .unwrap_or(BACKLOG_RINGS * size)
                .max(CHUNK_BYTES.min(size)),
            chunk: CHUNK_BYTES.min(size),
            spare: Vec::new(),
            map_failed: false,
        }));
        let ready = Arc::new(EventFd::from_value_and_flags(
            0,
            EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC,
        )?);
        // The ring edge-triggered: its descriptor is readable while it holds a record, so a
        // level-triggered wait returns at once whenever one came during the last pass, and a
        // reader that keeps up takes records a few at a time (at 800,000 writes/s, a poll per
        // 10 records and strata's CPU time per record tripled). Edge-triggered, the loop
        // wakes when the kernel signals (per 256 KiB of records while the copier waits too,
        // at once for library calls and process starts) or the copier does.
        let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC).map_err(RingError::Epoll)?;
        epoll
            .add(
                fd,
                EpollEvent::new(EpollFlags::EPOLLIN | EpollFlags::EPOLLET, 0),
            )
            .map_err(RingError::Epoll)?;
        epoll
            .add(&*ready, EpollEvent::new(EpollFlags::EPOLLIN, 0))
            .map_err(RingError::Epoll)?;
        let stop = Arc::new(AtomicBool::new(false));
        let ring_fd = fd.as_raw_fd();
        let copier = {
            let (shared, ready, stop) = (shared.clone(), ready.clone(), stop.clone());
            std::thread::Builder::new()
                .name("strata-ring".into())
                .spawn(move || {
                    let mut quiet = quiet;
                    copy_loop(ring_fd, &shared, &ready, &stop, |below| {
                        if let Some(q) = quiet.as_mut() {
                            q.set(below);
                        }
                    });
                })?
        };
        Ok(Self {
            _map: map,
            shared,
            current: None,
            front: 0,
            since_refill: 0,
            ready,
            epoll,
            stop,
            copier: Some(copier),
        })
    }

    /// Bytes waiting in the backlog (copied out of the ring, not yet taken).
    pub fn backlog_bytes(&self) -> usize {
        lock(&self.shared).backlog_bytes
    }

    /// Copies what the ring holds into the backlog now, not at the copier's next turn (a job
    /// about to close wants the records made before its stop).
    pub fn catch_up(&mut self) {
        lock(&self.shared).refill();
    }

    /// Stops the copier (the reading loop's last pass, after the programs stopped, takes the
    /// rest).
    pub fn finish(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(copier) = self.copier.take() {
            let _ = copier.join();
        }
    }

    /// Waits, after `next_record` had nothing, for the kernel's next wakeup, records from the
    /// copier, a descriptor given to [`Self::watch`], or `timeout`.
    pub fn wait(&self, timeout: Duration) {
        // The copier's signal is cleared here, before a last look, rather than each time a
        // chunk runs out: a reader keeping up with a fast producer empties a chunk every few
        // records, and its failed read of the eventfd each time was 200,000 syscalls a
        // second beside a write(1 B) loop (each also running the syscall programs). A chunk
        // added after this signals again.
        let _ = self.ready.read();
        if !lock(&self.shared).backlog.is_empty() {
            return;
        }
        let ms = u16::try_from(timeout.as_millis()).unwrap_or(u16::MAX);
        let mut events = [EpollEvent::empty(); 4];
        // EINTR (a signal) just returns early.
        let _ = self.epoll.wait(&mut events, EpollTimeout::from(ms));
    }

    /// Makes [`Self::wait`] also return while `fd` is readable (the daemon's socket).
    pub fn watch(&self, fd: impl AsFd) -> Result<(), RingError> {
        self.epoll
            .add(fd, EpollEvent::new(EpollFlags::EPOLLIN, 0))
            .map_err(RingError::Epoll)
    }

    /// The next record, or None when none is ready (the backlog and the ring are empty, or
    /// the ring's next record is still being written). A record stays valid until the next
    /// call.
    pub fn next_record(&mut self) -> Option<&[u8]> {
        let data = loop {
            self.since_refill += 1;
            let unread = (self.current.as_ref()).is_some_and(|chunk| self.front < chunk.len);
            if self.since_refill >= REFILL_EVERY && unread {
                self.since_refill = 0;
                lock(&self.shared).refill();
            }
            if !unread {
                let mut shared = lock(&self.shared);
                if shared.backlog.is_empty() {
                    shared.refill();
                    self.since_refill = 0;
                }
                let chunk = shared.backlog.pop_front()?;
                shared.backlog_bytes -= chunk.size();
                if let Some(done) = self.current.replace(chunk) {
                    shared.give_back(done);
                }
                drop(shared);
                self.front = 0;
            }
            let (data, next) = entry_at(self.current.as_ref()?.bytes(), self.front)?;
            self.front = next;
            if let Some(data) = data {
                break data;
            }
        };
        self.current.as_ref()?.bytes().get(data)
    }
}

/// Where the record of the chunk's `bytes` at `at` lies (`None` for one the kernel
/// discarded), and where the next starts.
fn entry_at(bytes: &[u8], at: usize) -> Option<(Option<std::ops::Range<usize>>, usize)> {
    let header = u32::from_ne_bytes(bytes.get(at..at + 4)?.try_into().ok()?);
    let len = (header & !(BUSY | DISCARD)) as usize;
    let next = at + entry_len(len);
    if next > bytes.len() {
        return None;
    }
    let data = (header & DISCARD == 0).then(|| at + HDR..at + HDR + len);
    Some((data, next))
}

/// The copier: moves records from the ring to the backlog while the reading loop does not
/// (it writes a file, or waits for a CPU) and the ring fills. It also wakes the reading loop
/// for records the kernel left unannounced: syscall records wake it only per `WAKEUP_BYTES`,
/// library calls at most once a millisecond on the node, and neither while the copier looks
/// (below), so a few of them could wait for the loop's own timeout (100 ms). A process that
/// exits meanwhile takes with it what strata reads from /proc for them (the file behind an fd
/// opened before tracing): held back 100 ms, both writes of a process that ended 60 ms after
/// them had no file; now they wait at most `COPIER_WAIT` plus a tick.
///
/// While records come, it looks every `COPIER_TICK` even when the loop has taken them all,
/// and tells the kernel so (`say`, the word for [`maps::QUIET_BELOW`]), which then wakes no
/// one until the ring is as full as the copier copies at. A producer that read the old word
/// just as the copier goes to wait costs its records at most `COPIER_WAIT`: the copier's wait
/// returns at once for records reserved before it.
fn copy_loop(
    ring_fd: RawFd,
    shared: &Mutex<Shared>,
    ready: &EventFd,
    stop: &AtomicBool,
    mut say: impl FnMut(u64),
) {
    // Where the ring was read up to at the last look: still there at the next one, with
    // records waiting, means that no one took them meanwhile.
    let mut unread_at = None;
    // Where the kernel had written up to at the last look.
    let mut produced_at = None;
    while !stop.load(Ordering::Relaxed) {
        let (produced, size, pos) = {
            let s = lock(shared);
            (s.ring.load_producer_pos(), s.ring.mask + 1, s.ring.pos)
        };
        let waiting = produced - pos;
        // Where the copier copies anyway; the kernel need wake no one below it while it looks.
        let quiet = (size / COPIER_FILL) as u64;
        let came = produced_at
            .replace(produced)
            .is_some_and(|at| at != produced);
        if waiting == 0 && !came {
            say(QUIET_NEVER);
            // Records that come now without a wakeup are found at the next look, up to
            // `COPIER_WAIT` on. (Also when the kernel woke both: the loop has not taken them
            // yet then, and its wait clears the needless signal.)
            poll_any(&[ring_fd], COPIER_WAIT);
            unread_at = Some(pos);
            continue;
        }
        say(quiet);
        if waiting == 0 {
            // Taken already by the loop, which keeps up: more are likely to come.
            unread_at = None;
            std::thread::sleep(COPIER_TICK);
        } else if waiting >= size / COPIER_FILL {
            unread_at = None;
            if lock(shared).refill() == Refill::Copied {
                let _ = ready.write(1);
            } else {
                std::thread::sleep(COPIER_TICK);
            }
        } else {
            if unread_at == Some(pos) {
                let _ = ready.write(1);
            }
            unread_at = Some(pos);
            std::thread::sleep(COPIER_TICK);
        }
    }
    say(QUIET_NEVER);
}

/// The copier's word to the kernel in [`maps::QUIET_BELOW`], written when it changes.
struct Quiet {
    map: Array<MapData, u64>,
    below: u64,
    /// A write failed (said once; the kernel keeps the word it had).
    failed: bool,
}

impl Quiet {
    fn new(map: Map) -> Result<Self, RingError> {
        Ok(Self {
            map: Array::try_from(map).map_err(RingError::Quiet)?,
            below: QUIET_NEVER,
            failed: false,
        })
    }

    fn set(&mut self, below: u64) {
        if below == self.below || self.failed {
            return;
        }
        match self.map.set(0, below, 0) {
            Ok(()) => self.below = below,
            Err(e) => {
                self.failed = true;
                log::warn!(
                    "cannot write {}: {e}; the kernel may wake strata for its records less \
                     promptly or more often",
                    maps::QUIET_BELOW
                );
            }
        }
    }
}

/// Waits until one of `fds` is readable, or `timeout`.
pub(crate) fn poll_any(fds: &[i32], timeout: Duration) {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: valid pollfds, as many as passed; EINTR (a signal) just returns early.
    unsafe {
        libc::poll(
            pfds.as_mut_ptr(),
            pfds.len() as _,
            timeout.as_millis() as i32,
        )
    };
}

impl Drop for EventRing {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: usize = 4096;

    /// A ring in private memory laid out as the kernel's: the consumer page, then the
    /// producer page and the data pages.
    fn shared(size: usize, chunk: usize, backlog_cap: usize) -> Shared {
        let ring = Ring {
            consumer: Mapping::anonymous(PAGE).unwrap(),
            producer: Mapping::anonymous(PAGE + size).unwrap(),
            page: PAGE,
            mask: size - 1,
            pos: 0,
        };
        Shared {
            ring,
            backlog: VecDeque::new(),
            backlog_bytes: 0,
            backlog_cap,
            chunk,
            spare: Vec::new(),
            map_failed: false,
        }
    }

    /// Commits a record as the kernel does: header (length and flags), then the bytes,
    /// wrapping around the end of the data pages; false if the ring has no room.
    fn produce(ring: &Ring, data: &[u8], flags: u32) -> bool {
        let producer_pos = ring.load_producer_pos();
        let taken = (HDR + data.len()).next_multiple_of(8);
        let consumer_pos = ring.consumer_pos().load(Ordering::Acquire);
        if producer_pos + taken - consumer_pos > ring.mask + 1 {
            return false;
        }
        let base = ring.producer.ptr.cast::<u8>().as_ptr();
        // SAFETY: every offset is masked into the data pages of the test's mapping.
        unsafe {
            let header = base
                .add(ring.page + (producer_pos & ring.mask))
                .cast::<u32>();
            header.write(data.len() as u32 | flags);
            for (i, b) in data.iter().enumerate() {
                *base.add(ring.page + ((producer_pos + HDR + i) & ring.mask)) = *b;
            }
        }
        // SAFETY: the producer page starts with the producer position.
        unsafe { ring.producer.ptr.cast::<AtomicUsize>().as_ref() }
            .store(producer_pos + taken, Ordering::Release);
        true
    }

    /// Record `n`: its number, then `n % 50` bytes of `n as u8` (lengths not multiples of 8).
    fn record(n: u32) -> Vec<u8> {
        let mut r = n.to_ne_bytes().to_vec();
        r.resize(4 + (n % 50) as usize, n as u8);
        r
    }

    /// Takes every record of the backlog's chunks, oldest first, as the reader does.
    fn take_all(s: &mut Shared) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while let Some(chunk) = s.backlog.pop_front() {
            s.backlog_bytes -= chunk.size();
            let mut at = 0;
            while let Some((data, next)) = entry_at(chunk.bytes(), at) {
                out.extend(data.map(|d| chunk.bytes()[d].to_vec()));
                at = next;
            }
            assert_eq!(at, chunk.len, "a chunk's records end where it ends");
            s.give_back(chunk);
        }
        out
    }

    #[test]
    fn backlog_memory_stays_within_its_cap_and_records_wait_in_the_ring() {
        // A 4 KiB ring, 1 KiB chunks, at most 8 of them.
        let mut s = shared(4096, 1024, 8 * 1024);
        let mut next = 0u32;
        loop {
            while produce(&s.ring, &record(next), 0) {
                next += 1;
            }
            let r = s.refill();
            assert!(s.backlog_bytes <= s.backlog_cap, "{} held", s.backlog_bytes);
            let chunks: usize = s.backlog.iter().map(Chunk::size).sum();
            assert_eq!(
                s.backlog_bytes, chunks,
                "the cap counts chunks, not records"
            );
            if r == Refill::Blocked {
                break;
            }
        }
        assert_eq!(s.backlog.len(), 8);
        // Full: the ring still holds records, which the next refill leaves there.
        assert!(s.ring.pos < s.ring.load_producer_pos());
        assert!(s.refill() == Refill::Blocked);
        // Every record comes out once, in order, whole, across chunks and the ring's end.
        let mut got = take_all(&mut s);
        assert_eq!(s.backlog_bytes, 0);
        assert_eq!(
            s.spare.len(),
            SPARE_CHUNKS,
            "read chunks kept for reuse, no more"
        );
        while s.refill() == Refill::Copied {
            got.extend(take_all(&mut s));
        }
        assert_eq!(s.ring.pos, s.ring.load_producer_pos());
        assert_eq!(got.len(), next as usize);
        for (n, rec) in got.iter().enumerate() {
            assert_eq!(*rec, record(n as u32), "record {n}");
        }
    }

    #[test]
    fn a_record_being_written_stops_the_copy_and_discarded_ones_are_skipped() {
        let mut s = shared(4096, 1024, 8 * 1024);
        assert!(produce(&s.ring, &record(1), 0));
        assert!(produce(&s.ring, &record(2), DISCARD));
        assert!(produce(&s.ring, &record(3), 0));
        assert!(produce(&s.ring, &record(4), BUSY));
        assert!(produce(&s.ring, &record(5), 0));
        assert!(s.refill() == Refill::Copied);
        assert_eq!(take_all(&mut s), vec![record(1), record(3)]);
        // Still reserved: nothing moves, and its space is not handed back.
        assert!(s.refill() == Refill::Blocked);
        let busy_at = s.ring.pos;
        assert_eq!(s.ring.consumer_pos().load(Ordering::Relaxed), busy_at);
        // Submitted: it and what follows come out.
        let base = s.ring.producer.ptr.cast::<u8>().as_ptr();
        // SAFETY: the busy record's header, inside the test's mapping.
        unsafe {
            let header = base
                .add(s.ring.page + (busy_at & s.ring.mask))
                .cast::<u32>();
            header.write(header.read() & !BUSY);
        }
        assert!(s.refill() == Refill::Copied);
        assert_eq!(take_all(&mut s), vec![record(4), record(5)]);
        assert!(s.refill() == Refill::Empty);
    }

    #[test]
    fn a_record_larger_than_a_chunk_gets_a_chunk_of_its_own() {
        let mut s = shared(4096, 64, 8 * 1024);
        let big = vec![7u8; 300];
        assert!(produce(&s.ring, &record(1), 0));
        assert!(produce(&s.ring, &big, 0));
        assert!(produce(&s.ring, &record(2), 0));
        assert!(s.refill() == Refill::Copied);
        let sizes: Vec<usize> = s.backlog.iter().map(Chunk::size).collect();
        assert_eq!(sizes, vec![64, entry_len(300), 64]);
        assert_eq!(take_all(&mut s), vec![record(1), big, record(2)]);
        assert_eq!(s.spare.len(), 2, "only chunks of the usual size are kept");
    }

    /// The copier beside a reading loop that keeps up: while records come it tells the kernel
    /// to hold its wakeups (the word is the ring's eighth), and once none came for a tick it
    /// asks for them again; a record that waits untaken meanwhile gets the loop signalled
    /// with no wakeup from the kernel at all. (Bounds are loose: a busy machine may stall a
    /// thread for a few ticks.)
    #[test]
    fn the_copier_holds_the_kernels_wakeups_only_while_records_come() {
        let size = 64 * 1024;
        let shared = Arc::new(Mutex::new(shared(size, 4096, 64 * 4096)));
        let ready = Arc::new(
            EventFd::from_value_and_flags(0, EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC)
                .unwrap(),
        );
        let stop = Arc::new(AtomicBool::new(false));
        let words = Arc::new(Mutex::new(Vec::new()));
        // The ring's descriptor stands in as a pipe no one writes: only timeouts end a wait.
        let (never, _writer) = nix::unistd::pipe().unwrap();
        let copier = {
            let (shared, ready, stop, words) =
                (shared.clone(), ready.clone(), stop.clone(), words.clone());
            let fd = never.as_raw_fd();
            std::thread::spawn(move || {
                copy_loop(fd, &shared, &ready, &stop, |w| {
                    words.lock().unwrap().push(w)
                });
            })
        };
        let last = || words.lock().unwrap().last().copied();
        let until = |what: &str, done: &dyn Fn() -> bool| {
            let t = std::time::Instant::now();
            while !done() {
                assert!(
                    t.elapsed() < Duration::from_secs(2),
                    "{what}: {:?}",
                    words.lock()
                );
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        let quiet = (size / COPIER_FILL) as u64;
        // Nothing comes: the copier waits for the kernel.
        until("quiet with nothing to read", &|| {
            last() == Some(QUIET_NEVER)
        });
        // A record a millisecond, each taken at once by the reading loop.
        let producing = Arc::new(AtomicBool::new(true));
        let producer = {
            let (shared, producing) = (shared.clone(), producing.clone());
            std::thread::spawn(move || {
                let mut n = 0;
                while producing.load(Ordering::Relaxed) {
                    let mut s = lock(&shared);
                    assert!(produce(&s.ring, &record(n), 0));
                    n += 1;
                    s.refill();
                    assert_eq!(take_all(&mut s).len(), 1);
                    drop(s);
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
        };
        until("held while records come", &|| last() == Some(quiet));
        producing.store(false, Ordering::Relaxed);
        producer.join().unwrap();
        // A record no one takes: the copier signals the loop.
        let _ = ready.read();
        assert!(produce(&lock(&shared).ring, &record(0), 0));
        until("the loop signalled", &|| ready.read().is_ok());
        // Taken, and nothing more: the copier asks for the kernel's wakeups again.
        let mut s = lock(&shared);
        s.refill();
        assert_eq!(take_all(&mut s).len(), 1);
        drop(s);
        until("wakeups asked for again", &|| last() == Some(QUIET_NEVER));
        stop.store(true, Ordering::Relaxed);
        copier.join().unwrap();
        assert_eq!(last(), Some(QUIET_NEVER), "the copier's last word");
    }
}
