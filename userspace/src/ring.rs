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
use std::{
    collections::VecDeque,
    num::NonZeroUsize,
    os::fd::{AsFd, AsRawFd, RawFd},
    ptr::NonNull,
    sync::atomic::{AtomicU32, AtomicUsize, Ordering},
};

use aya::maps::{Map, MapData};
use nix::sys::mman::{MapFlags, ProtFlags, mmap, munmap};

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
}

/// One mapping of the ring buffer's pages, unmapped on drop.
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
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, no longer referenced.
        let _ = unsafe { munmap(self.ptr, self.len.get()) };
    }
}

/// strata's event ring buffer, read record by record; see the module doc.
pub struct EventRing {
    map: MapData,
    /// The consumer page (read-write): the consumer position at offset 0.
    consumer: Mapping,
    /// The producer page (the producer position at offset 0), then the data pages twice, so
    /// that a record that wraps around the end reads as one slice.
    producer: Mapping,
    page: usize,
    mask: usize,
    /// Where the next record in the ring starts (the ones before it are copied out).
    pos: usize,
    /// The producer position last read: records up to it are committed or busy.
    producer_pos: usize,
    /// Records copied out of the ring and not yet returned, oldest first, in batches (each
    /// record: its length in [`BACKLOG_HDR`] bytes, then its bytes padded to 8).
    backlog: VecDeque<Vec<u8>>,
    /// Where the next record starts in the oldest batch.
    front: usize,
    backlog_bytes: usize,
    /// The most the backlog may hold; beyond it records stay in the ring (and once that is
    /// full, the kernel drops and counts them).
    backlog_cap: usize,
    /// Records returned since the ring was last emptied into the backlog.
    since_refill: u32,
}

/// How often the ring is emptied into the backlog, in records returned: often enough that a
/// burst far faster than strata's processing fills the backlog, not the ring (at the
/// pipeline's ~1.4M records/s, every ~0.2 ms), seldom enough that reading the producer
/// position, a cache line the traced CPUs write, costs nothing per record.
const REFILL_EVERY: u32 = 256;

/// Records a reading loop handles in one pass before it looks at its other work (signals,
/// flushes, the end of the run): about 50 ms' worth. While a traced job makes records faster
/// than strata handles them, the ring never runs empty, and a loop that waited for that would
/// never stop.
pub const RECORDS_PER_PASS: usize = 65_536;

/// The backlog holds at most this many times the ring's size.
pub const BACKLOG_RINGS: usize = 8;

/// A record in a backlog batch: its length, then its bytes padded to 8.
const BACKLOG_HDR: usize = 8;

impl EventRing {
    /// The reader of ring-buffer map `name`, taken from the loaded object.
    pub fn new(map: Map, name: &'static str) -> Result<Self, RingError> {
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
        let producer = Mapping::new(fd, page + 2 * size, ProtFlags::PROT_READ, page)?;
        let mut ring = Self {
            map,
            consumer,
            producer,
            page,
            mask: size - 1,
            pos: 0,
            producer_pos: 0,
            backlog: VecDeque::new(),
            front: 0,
            backlog_bytes: 0,
            backlog_cap: BACKLOG_RINGS * size,
            since_refill: 0,
        };
        ring.pos = ring.consumer_pos().load(Ordering::Acquire);
        ring.producer_pos = ring.load_producer_pos();
        Ok(ring)
    }

    fn consumer_pos(&self) -> &AtomicUsize {
        // SAFETY: the consumer page starts with the kernel's `unsigned long consumer_pos`.
        unsafe { self.consumer.ptr.cast::<AtomicUsize>().as_ref() }
    }

    /// Written by the kernel with release order after the record headers before it.
    fn load_producer_pos(&self) -> usize {
        // SAFETY: the producer page starts with the kernel's `unsigned long producer_pos`.
        unsafe { self.producer.ptr.cast::<AtomicUsize>().as_ref() }.load(Ordering::Acquire)
    }

    /// Bytes waiting in the backlog (copied out of the ring, not yet returned).
    pub fn backlog_bytes(&self) -> usize {
        self.backlog_bytes
    }

    /// Copies every committed record of the ring into a new backlog batch (as far as the
    /// backlog's cap allows) and hands their space back to the kernel at once.
    fn refill(&mut self) {
        self.producer_pos = self.load_producer_pos();
        // A backlog record takes what it took in the ring (a header of 8 bytes, padding to 8).
        let room = self.backlog_cap.saturating_sub(self.backlog_bytes);
        let mut batch = Vec::with_capacity((self.producer_pos - self.pos).min(room));
        loop {
            if self.backlog_bytes + batch.len() >= self.backlog_cap {
                break;
            }
            if self.pos == self.producer_pos {
                self.producer_pos = self.load_producer_pos();
                if self.pos == self.producer_pos {
                    break;
                }
            }
            let at = self.page + (self.pos & self.mask);
            // SAFETY: `at` is inside the first copy of the data pages, and a header is 8-byte
            // aligned; the kernel commits it with a fully ordered exchange.
            let header = unsafe {
                self.producer
                    .ptr
                    .cast::<u8>()
                    .add(at)
                    .cast::<AtomicU32>()
                    .as_ref()
            }
            .load(Ordering::Acquire);
            if header & BUSY != 0 {
                // Reserved, not yet submitted: what follows waits for it.
                break;
            }
            let len = (header & !(BUSY | DISCARD)) as usize;
            if header & DISCARD == 0 {
                // SAFETY: a record is at most the ring's size, and the data pages are mapped
                // twice, so the record lies inside the mapping even when it wraps around.
                let data = unsafe {
                    std::slice::from_raw_parts(
                        self.producer.ptr.cast::<u8>().add(at + HDR).as_ptr(),
                        len,
                    )
                };
                batch.extend_from_slice(&(len as u64).to_ne_bytes());
                batch.extend_from_slice(data);
                batch.resize(batch.len().next_multiple_of(8), 0);
            }
            self.pos += (HDR + len).next_multiple_of(8);
        }
        if self.consumer_pos().load(Ordering::Relaxed) != self.pos {
            self.consumer_pos().store(self.pos, Ordering::Release);
        }
        if !batch.is_empty() {
            self.backlog_bytes += batch.len();
            self.backlog.push_back(batch);
        }
    }

    /// The next record, or None when none is ready. A record stays valid until the next call.
    pub fn next_record(&mut self) -> Option<&[u8]> {
        while let Some(b) = self.backlog.front() {
            if self.front < b.len() {
                break;
            }
            self.backlog_bytes -= b.len();
            self.backlog.pop_front();
            self.front = 0;
        }
        if self.backlog.is_empty() || self.since_refill >= REFILL_EVERY {
            self.refill();
            self.since_refill = 0;
        }
        self.since_refill += 1;
        let batch = self.backlog.front()?;
        let at = self.front;
        let len = u64::from_ne_bytes(batch[at..at + BACKLOG_HDR].try_into().ok()?) as usize;
        let data = at + BACKLOG_HDR;
        self.front = (data + len).next_multiple_of(8);
        batch.get(data..data + len)
    }
}

impl AsRawFd for EventRing {
    fn as_raw_fd(&self) -> RawFd {
        self.map.fd().as_fd().as_raw_fd()
    }
}

// SAFETY: the mappings are owned by the reader and used only through `&mut self` (the
// consumer position is atomic); moving the reader to another thread is sound.
unsafe impl Send for EventRing {}
