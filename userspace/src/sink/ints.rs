//! Flat 32- and 64-bit integer columns, through a dictionary or not, their values PLAIN or
//! (64-bit) as differences (`deltas.rs`). Encoded here straight from the rows' values: the
//! column chunk Parquet's column writer makes of them, byte for byte (tested), without its
//! per-value calls, copies and hashing.
//!
//! A dictionary column's data pages hold each value's index into the dictionary; they wait
//! for the dictionary page, which comes first in the chunk and is complete only at the end.
//! Parquet's writer looks after every `write_batch_size` rows of an array whether the page
//! has reached its row or size limit, then whether the dictionary has reached its size
//! limit. If it has, the page so far ends, the dictionary and the waiting pages are
//! written, and the rest of the chunk is stored in the column's own encoding (PLAIN, or
//! differences for `DICTIONARY_THEN_DELTA_COLUMNS`).
use std::hash::Hash;

use arrow::array::{Array as _, ArrowPrimitiveType, PrimitiveArray};
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
    chunk::{Chunk, sized},
    deltas::Deltas,
    rle::Rle,
};
use crate::fast::HashMap;

/// The integers written here: Parquet's INT32 and INT64.
pub(super) trait Int: Copy + Ord + Hash {
    const MIN: Self;
    const MAX: Self;
    /// Bytes of one value in PLAIN (what the dictionary's size is counted in).
    const BYTES: usize;
    /// Whether Parquet's differences of this type are the ones `deltas.rs` encodes.
    const DELTAS: bool;
    fn plain(values: &[Self], out: &mut Vec<u8>);
    /// Appends `values` to `deltas`, widening `range`; only called where `DELTAS`.
    fn deltas(values: &[Self], deltas: &mut Deltas, range: &mut (Self, Self));
    fn statistics(stats: ValueStatistics<Self>) -> Statistics;
}

impl Int for i32 {
    const MIN: Self = i32::MIN;
    const MAX: Self = i32::MAX;
    const BYTES: usize = 4;
    // Parquet's INT32 differences come in blocks of 128, not the 256 of `deltas.rs`.
    const DELTAS: bool = false;

    fn plain(values: &[Self], out: &mut Vec<u8>) {
        out.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    }

    fn deltas(_: &[Self], _: &mut Deltas, _: &mut (Self, Self)) {
        unreachable!("32-bit columns are not stored as differences here")
    }

    fn statistics(stats: ValueStatistics<Self>) -> Statistics {
        Statistics::Int32(stats)
    }
}

impl Int for i64 {
    const MIN: Self = i64::MIN;
    const MAX: Self = i64::MAX;
    const BYTES: usize = 8;
    const DELTAS: bool = true;

    fn plain(values: &[Self], out: &mut Vec<u8>) {
        out.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    }

    fn deltas(values: &[Self], deltas: &mut Deltas, range: &mut (Self, Self)) {
        deltas.put_all(values, range);
    }

    fn statistics(stats: ValueStatistics<Self>) -> Statistics {
        Statistics::Int64(stats)
    }
}

/// Whether a column of `T` whose values (without a dictionary, or once it is full) are in
/// `encoding` is written here.
pub(super) fn handles<T: Int>(encoding: Encoding) -> bool {
    match encoding {
        Encoding::PLAIN => true,
        Encoding::DELTA_BINARY_PACKED => T::DELTAS,
        _ => false,
    }
}

/// Writes `arrays` (one per group of rows, in order) as the chunk's column, through a
/// dictionary if `dictionary`, in `encoding` otherwise (one that [`handles`] takes).
pub(super) fn write<W: std::io::Write + Send, P: ArrowPrimitiveType<Native: Int>>(
    group: &mut SerializedRowGroupWriter<'_, W>,
    mut chunk: Chunk<'_>,
    props: &WriterProperties,
    (dictionary, encoding): (bool, Encoding),
    arrays: &[&PrimitiveArray<P>],
) -> Result<()> {
    let descr = chunk.descr().clone();
    let path = descr.path();
    let optional = descr.max_def_level() > 0;
    let stats = props.statistics_enabled(path) != EnabledStatistics::None;
    let (batch, row_limit) = (props.write_batch_size(), props.data_page_row_count_limit());
    let size_limit = props.column_data_page_size_limit(path);
    let dictionary_limit = props.column_dictionary_page_size_limit(path);

    let own = || match encoding {
        Encoding::DELTA_BINARY_PACKED => Values::Deltas(Box::new(Deltas::new())),
        _ => Values::Plain(Vec::new()),
    };
    let mut values = match dictionary {
        true => Values::Dictionary(Dictionary::default()),
        false => own(),
    };
    let mut page = Page {
        levels: Rle::new(1),
        optional,
        rows: 0,
    };
    // Pages of indices, waiting for the dictionary page: their bytes and rows.
    let mut waiting = Vec::new();
    // The least and greatest value present, kept whether or not statistics are: a
    // comparison each on values at hand costs less than a branch to skip it.
    let mut range = (P::Native::MAX, P::Native::MIN);
    let (mut nulls, mut present) = (0u64, 0u64);
    for array in arrays {
        let mut from = 0;
        while from < array.len() {
            let to = array.len().min(from + batch);
            let n = put_rows(array, from, to, &mut page.levels, optional, |rows| {
                values.put_all(rows, &mut range)
            });
            present += n as u64;
            nulls += (to - from - n) as u64;
            page.rows += to - from;
            if page.rows >= row_limit || values.encoded() >= size_limit {
                page.write(&mut values, &mut chunk, &mut waiting)?;
            }
            if let Values::Dictionary(d) = &values
                && d.entries.len() * P::Native::BYTES >= dictionary_limit
            {
                if page.rows > 0 {
                    page.write(&mut values, &mut chunk, &mut waiting)?;
                }
                values.end_dictionary(&mut chunk, &mut waiting)?;
                values = own();
            }
            from = to;
        }
    }
    if page.rows > 0 {
        page.write(&mut values, &mut chunk, &mut waiting)?;
    }
    values.end_dictionary(&mut chunk, &mut waiting)?;
    let statistics = stats.then(|| {
        let (min, max) = (present > 0).then_some(range).unzip();
        P::Native::statistics(
            ValueStatistics::new(min, max, None, Some(nulls), false)
                .with_backwards_compatible_min_max(true),
        )
    });
    let levels = optional.then(|| LevelHistogram::from(vec![nulls as i64, present as i64]));
    chunk.finish(group, statistics, levels)
}

/// Puts rows `from..to` of `array`: a definition level each into `levels` if the column is
/// `optional`, and each run of present values into `put`. Gives how many were present.
#[inline]
fn put_rows<P: ArrowPrimitiveType>(
    array: &PrimitiveArray<P>,
    from: usize,
    to: usize,
    levels: &mut Rle,
    optional: bool,
    mut put: impl FnMut(&[P::Native]),
) -> usize {
    let rows = &array.values()[from..to];
    match array.nulls().filter(|n| n.null_count() > 0) {
        None => {
            if optional {
                levels.put_n(1, rows.len());
            }
            put(rows);
            rows.len()
        }
        Some(valid) => {
            let (mut n, mut at) = (0, 0);
            for (start, end) in valid.slice(from, rows.len()).valid_slices() {
                levels.put_n(0, start - at);
                levels.put_n(1, end - start);
                put(&rows[start..end]);
                n += end - start;
                at = end;
            }
            levels.put_n(0, rows.len() - at);
            n
        }
    }
}

/// A data page being gathered: its definition levels (of a nullable column) and rows; its
/// values are in [`Values`].
struct Page {
    levels: Rle,
    optional: bool,
    rows: usize,
}

impl Page {
    /// Writes the page with the values gathered for it, or if they are indices into the
    /// dictionary, keeps it `waiting` for the dictionary; leaves this empty for the next.
    fn write<T: Int>(
        &mut self,
        values: &mut Values<T>,
        chunk: &mut Chunk<'_>,
        waiting: &mut Vec<(Vec<u8>, usize)>,
    ) -> Result<()> {
        let mut raw = Vec::new();
        if self.optional {
            sized(&self.levels.finish(), &mut raw);
        }
        let rows = std::mem::take(&mut self.rows);
        match values {
            Values::Dictionary(d) => {
                d.indices(&mut raw);
                waiting.push((raw, rows));
            }
            Values::Plain(out) => {
                raw.append(out);
                chunk.data_page(&raw, Encoding::PLAIN, rows, rows)?;
            }
            Values::Deltas(d) => {
                d.finish(&mut raw);
                chunk.data_page(&raw, Encoding::DELTA_BINARY_PACKED, rows, rows)?;
            }
        }
        Ok(())
    }
}

/// The values of the page being gathered, as the chunk stores them now.
enum Values<T> {
    Dictionary(Dictionary<T>),
    Plain(Vec<u8>),
    /// Boxed: its block of differences is 2 KiB.
    Deltas(Box<Deltas>),
}

impl<T: Int> Values<T> {
    /// Appends present values, widening `range` (least, greatest) to take them in.
    #[inline]
    fn put_all(&mut self, values: &[T], range: &mut (T, T)) {
        match self {
            Self::Dictionary(d) => d.put_all(values, range),
            Self::Plain(out) => {
                *range = values
                    .iter()
                    .fold(*range, |(lo, hi), &v| (lo.min(v), hi.max(v)));
                T::plain(values, out);
            }
            Self::Deltas(d) => T::deltas(values, d, range),
        }
    }

    /// What Parquet's writer weighs against a page's size limit: bytes of the values
    /// encoded, or at most the indices could take.
    fn encoded(&self) -> usize {
        match self {
            Self::Dictionary(d) => d.largest(),
            Self::Plain(out) => out.len(),
            Self::Deltas(d) => d.encoded(),
        }
    }

    /// Writes the dictionary page (PLAIN values, in the order first seen), then the pages
    /// `waiting` for it. Nothing if the values are not through a dictionary.
    fn end_dictionary(
        &self,
        chunk: &mut Chunk<'_>,
        waiting: &mut Vec<(Vec<u8>, usize)>,
    ) -> Result<()> {
        let Self::Dictionary(d) = self else {
            return Ok(());
        };
        let mut raw = Vec::with_capacity(d.entries.len() * T::BYTES);
        T::plain(&d.entries, &mut raw);
        chunk.dictionary_page(&raw, d.entries.len())?;
        for (raw, rows) in waiting.drain(..) {
            chunk.data_page(&raw, Encoding::RLE_DICTIONARY, rows, rows)?;
        }
        Ok(())
    }
}

/// The column chunk's dictionary and the current page's indices into it.
struct Dictionary<T> {
    at: HashMap<T, u32>,
    entries: Vec<T>,
    keys: Vec<u32>,
    /// The last value put and its index: regular I/O repeats sizes and results, which
    /// this finds without hashing.
    last: Option<(T, u32)>,
}

impl<T> Default for Dictionary<T> {
    fn default() -> Self {
        Self {
            at: HashMap::default(),
            entries: Vec::new(),
            keys: Vec::new(),
            last: None,
        }
    }
}

impl<T: Int> Dictionary<T> {
    #[inline]
    fn put_all(&mut self, values: &[T], range: &mut (T, T)) {
        let (mut lo, mut hi) = *range;
        self.keys.reserve(values.len());
        for &v in values {
            lo = lo.min(v);
            hi = hi.max(v);
            let key = match self.last {
                Some((last, key)) if last == v => key,
                _ => {
                    let entries = &mut self.entries;
                    let key = *self.at.entry(v).or_insert_with(|| {
                        entries.push(v);
                        entries.len() as u32 - 1
                    });
                    self.last = Some((v, key));
                    key
                }
            };
            self.keys.push(key);
        }
        *range = (lo, hi);
    }

    /// Bits of an index: as many as the greatest needs.
    fn width(&self) -> u8 {
        let max = self.entries.len().saturating_sub(1) as u32;
        (u32::BITS - max.leading_zeros()) as u8
    }

    /// The most bytes the page's indices could take, as Parquet's encoder estimates it:
    /// every group of 8 packed behind a header of its own (which is never shorter than a
    /// run of it repeated).
    fn largest(&self) -> usize {
        self.keys.len().div_ceil(8) * (1 + usize::from(self.width()))
    }

    /// Appends the page's indices (their bit width, then the RLE / bit-packing hybrid) to
    /// `raw`, and starts the next page's.
    fn indices(&mut self, raw: &mut Vec<u8>) {
        let width = self.width();
        let mut rle = Rle::new(width);
        rle.put_all(&self.keys);
        raw.push(width);
        raw.extend_from_slice(&rle.finish());
        self.keys.clear();
    }
}
