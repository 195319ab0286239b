//! 64-bit integers stored as differences (DELTA_BINARY_PACKED), encoded straight from the
//! rows' values: the values of the pages Parquet's column writer makes of them, byte for
//! byte (tested), without its per-value calls, copies and bit-by-bit packing. `ints.rs`
//! gathers the pages.
use super::chunk::uleb128;

/// Values per block, and miniblocks per block, as Parquet's encoder has them for INT64.
const BLOCK: usize = 256;
const MINIBLOCKS: usize = 4;
const MINIBLOCK: usize = BLOCK / MINIBLOCKS;

/// Values in DELTA_BINARY_PACKED: the first value, then blocks of the differences between
/// neighbours, each block stored as its least difference and, per miniblock, the others'
/// excess over it in as few bits as the largest needs.
pub(super) struct Deltas {
    first: i64,
    last: i64,
    count: usize,
    block: [i64; BLOCK],
    in_block: usize,
    /// Blocks encoded so far.
    out: Vec<u8>,
}

impl Deltas {
    pub(super) fn new() -> Self {
        Self {
            first: 0,
            last: 0,
            count: 0,
            block: [0; BLOCK],
            in_block: 0,
            out: Vec::new(),
        }
    }

    /// Appends `values`, widening `range` (least, greatest) to take them in.
    #[inline]
    pub(super) fn put_all(&mut self, values: &[i64], range: &mut (i64, i64)) {
        let Some((&first, mut rest)) = values.split_first() else {
            return;
        };
        if self.count == 0 {
            (self.first, self.last, self.count) = (first, first, 1);
            *range = (range.0.min(first), range.1.max(first));
        } else {
            rest = values;
        }
        let (mut lo, mut hi) = *range;
        while !rest.is_empty() {
            let n = rest.len().min(BLOCK - self.in_block);
            let (now, later) = rest.split_at(n);
            let mut last = self.last;
            for (d, &v) in self.block[self.in_block..].iter_mut().zip(now) {
                *d = v.wrapping_sub(last);
                last = v;
                lo = lo.min(v);
                hi = hi.max(v);
            }
            self.last = last;
            self.in_block += n;
            self.count += n;
            if self.in_block == BLOCK {
                self.flush_block();
            }
            rest = later;
        }
        *range = (lo, hi);
    }

    fn flush_block(&mut self) {
        let deltas = &self.block[..self.in_block];
        let min = deltas.iter().fold(i64::MAX, |m, &d| m.min(d));
        uleb128(zigzag(min), &mut self.out);
        let widths_at = self.out.len();
        self.out.extend_from_slice(&[0; MINIBLOCKS]);
        for (i, mini) in deltas.chunks(MINIBLOCK).enumerate() {
            // Each difference's excess over the least; a last miniblock is padded with
            // zeros to its full length. The largest excess has the highest bit of them all.
            let mut excess = [0u64; MINIBLOCK];
            let mut any = 0;
            for (e, &d) in excess.iter_mut().zip(mini) {
                *e = d.wrapping_sub(min) as u64;
                any |= *e;
            }
            let width = u64::BITS - any.leading_zeros();
            self.out[widths_at + i] = width as u8;
            pack_words(&excess, width, &mut self.out);
        }
        self.in_block = 0;
    }

    /// Bytes of the blocks encoded so far: what Parquet's writer weighs against a page's
    /// size limit.
    pub(super) fn encoded(&self) -> usize {
        self.out.len()
    }

    /// Appends the page's values (header and blocks) to `raw`; leaves this empty.
    pub(super) fn finish(&mut self, raw: &mut Vec<u8>) {
        if self.in_block > 0 {
            self.flush_block();
        }
        uleb128(BLOCK as u64, raw);
        uleb128(MINIBLOCKS as u64, raw);
        uleb128(self.count as u64, raw);
        uleb128(zigzag(self.first), raw);
        raw.append(&mut self.out);
        (self.first, self.last, self.count) = (0, 0, 0);
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// 64 values of `width` bits, lowest bits first, as `width` little-endian words.
fn pack_words(values: &[u64; MINIBLOCK], width: u32, out: &mut Vec<u8>) {
    if width == 0 {
        return;
    }
    let (mut word, mut used) = (0u64, 0u32);
    for &v in values {
        word |= v << used;
        used += width;
        if used >= 64 {
            out.extend_from_slice(&word.to_le_bytes());
            used -= 64;
            // The bits of `v` that did not fit (none when it ended the word exactly).
            word = if used > 0 { v >> (width - used) } else { 0 };
        }
    }
}
