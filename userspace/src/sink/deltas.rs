//! 64-bit integer columns stored as differences (DELTA_BINARY_PACKED), encoded here straight
//! from the rows' values: the column chunk Parquet's column writer makes of them, byte for
//! byte (tested), without its per-value calls, copies and bit-by-bit packing.
//!
//! Pages end where that writer ends them: it looks after every `write_batch_size` rows of
//! each array it is handed whether the page has reached its row limit or its size limit (in
//! bytes of whole blocks encoded).
use arrow::array::{Array as _, Int64Array};
use parquet::{
    basic::Encoding,
    errors::Result,
    file::{
        metadata::LevelHistogram,
        properties::{EnabledStatistics, WriterProperties},
        statistics::{Statistics, ValueStatistics},
        writer::SerializedRowGroupWriter,
    },
};

use super::{
    chunk::{Chunk, uleb128},
    rle::Rle,
};

/// Values per block, and miniblocks per block, as Parquet's encoder has them for INT64.
const BLOCK: usize = 256;
const MINIBLOCKS: usize = 4;
const MINIBLOCK: usize = BLOCK / MINIBLOCKS;

/// Writes `arrays` (one per group of rows, in order) as the chunk's column.
pub(super) fn write<W: std::io::Write + Send>(
    group: &mut SerializedRowGroupWriter<'_, W>,
    mut chunk: Chunk<'_>,
    props: &WriterProperties,
    arrays: &[&Int64Array],
) -> Result<()> {
    let descr = chunk.descr().clone();
    let path = descr.path();
    let optional = descr.max_def_level() > 0;
    let stats = props.statistics_enabled(path) != EnabledStatistics::None;
    let (batch, row_limit) = (props.write_batch_size(), props.data_page_row_count_limit());
    let size_limit = props.column_data_page_size_limit(path);

    let mut page = Page::new(optional);
    // The least and greatest value present, kept whether or not statistics are: a
    // comparison each on values at hand costs less than a branch to skip it.
    let mut range = (i64::MAX, i64::MIN);
    let (mut nulls, mut present) = (0u64, 0u64);
    for array in arrays {
        let values = array.values();
        let mut from = 0;
        while from < array.len() {
            let to = array.len().min(from + batch);
            let rows = &values[from..to];
            let n = match array.nulls().filter(|n| n.null_count() > 0) {
                None => {
                    if optional {
                        page.levels.put_n(1, rows.len());
                    }
                    page.values.put_all(rows, &mut range);
                    rows.len()
                }
                Some(valid) => {
                    let (mut n, mut at) = (0, 0);
                    for (start, end) in valid.slice(from, rows.len()).valid_slices() {
                        page.levels.put_n(0, start - at);
                        page.levels.put_n(1, end - start);
                        page.values.put_all(&rows[start..end], &mut range);
                        n += end - start;
                        at = end;
                    }
                    page.levels.put_n(0, rows.len() - at);
                    n
                }
            };
            present += n as u64;
            nulls += (rows.len() - n) as u64;
            page.rows += to - from;
            if page.rows >= row_limit || page.values.out.len() >= size_limit {
                page.write(&mut chunk)?;
            }
            from = to;
        }
    }
    if page.rows > 0 {
        page.write(&mut chunk)?;
    }
    let statistics = stats.then(|| {
        let (min, max) = (present > 0).then_some(range).unzip();
        Statistics::from(
            ValueStatistics::new(min, max, None, Some(nulls), false)
                .with_backwards_compatible_min_max(true),
        )
    });
    let levels = optional.then(|| LevelHistogram::from(vec![nulls as i64, present as i64]));
    chunk.finish(group, statistics, levels)
}

/// A data page being gathered: its definition levels (of a nullable column) and values.
struct Page {
    levels: Rle,
    optional: bool,
    values: Deltas,
    rows: usize,
}

impl Page {
    fn new(optional: bool) -> Self {
        Self {
            levels: Rle::new(1),
            optional,
            values: Deltas::new(),
            rows: 0,
        }
    }

    /// Writes the page and leaves this empty for the next.
    fn write(&mut self, chunk: &mut Chunk<'_>) -> Result<()> {
        let mut raw = Vec::new();
        if self.optional {
            let levels = self.levels.finish();
            raw.extend_from_slice(&(levels.len() as u32).to_le_bytes());
            raw.extend_from_slice(&levels);
        }
        self.values.finish(&mut raw);
        chunk.data_page(&raw, Encoding::DELTA_BINARY_PACKED, self.rows, self.rows)?;
        self.rows = 0;
        Ok(())
    }
}

/// Values in DELTA_BINARY_PACKED: the first value, then blocks of the differences between
/// neighbours, each block stored as its least difference and, per miniblock, the others'
/// excess over it in as few bits as the largest needs.
struct Deltas {
    first: i64,
    last: i64,
    count: usize,
    block: [i64; BLOCK],
    in_block: usize,
    /// Blocks encoded so far.
    out: Vec<u8>,
}

impl Deltas {
    fn new() -> Self {
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
    fn put_all(&mut self, values: &[i64], range: &mut (i64, i64)) {
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

    /// Appends the page's values (header and blocks) to `raw`; leaves this empty.
    fn finish(&mut self, raw: &mut Vec<u8>) {
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
