//! Lists of 64-bit integers without nulls stored PLAIN, without dictionary or statistics (a
//! call's raw arguments), encoded here straight from the lists' offsets and items: the column
//! chunk Parquet's column writer makes of them, byte for byte (tested), without building a
//! level per item first and encoding it through per-value calls.
//!
//! Each item has a repetition level (0 first in its list, 1 after) and a definition level
//! ("present"); an empty list has one of each, saying so. Pages end where Parquet's writer
//! ends them: it takes each array's levels in batches of `write_batch_size`, each stretched
//! to the end of the list it stops in, and after each looks whether the page has reached its
//! row limit or its size limit (in bytes of values).
use arrow::{
    array::{AsArray as _, ListArray},
    datatypes::Int64Type,
};
use parquet::{
    basic::Encoding,
    errors::Result,
    file::{properties::WriterProperties, writer::SerializedRowGroupWriter},
    schema::types::ColumnDescriptor,
};

use super::{
    chunk::{Chunk, sized},
    rle::Rle,
};

/// The definition level of an empty list: it stops above its items, at the list's level
/// and the item's if nullable.
pub(super) fn empty_list_level(descr: &ColumnDescriptor) -> i16 {
    descr.max_def_level() - 1 - i16::from(descr.self_type().is_optional())
}

/// The bits a level up to `max` takes in its RLE runs.
pub(super) fn level_width(max: i16) -> u8 {
    (u16::BITS - (max as u16).leading_zeros()) as u8
}

/// Writes `lists` (one array per group of rows, in order) as the chunk's column.
pub(super) fn write<W: std::io::Write + Send>(
    group: &mut SerializedRowGroupWriter<'_, W>,
    mut chunk: Chunk<'_>,
    props: &WriterProperties,
    lists: &[&ListArray],
) -> Result<()> {
    let descr = chunk.descr().clone();
    let present = descr.max_def_level();
    let empty = empty_list_level(&descr);
    let width = level_width(present);
    let (batch, row_limit) = (props.write_batch_size(), props.data_page_row_count_limit());
    let size_limit = props.column_data_page_size_limit(descr.path());

    // A batch's repetition levels, encoded a batch at a time (groups of 8 at once).
    let mut rep = Vec::new();
    let mut page = Page {
        rep: Rle::new(1),
        def: Rle::new(width),
        values: Vec::new(),
        rows: 0,
        levels: 0,
    };
    for list in lists {
        let offsets = list.value_offsets();
        let items = list.values().as_primitive::<Int64Type>().values();
        let mut from = offsets[0] as usize;
        let (mut rows, mut levels) = (0, 0);
        for (i, ends) in offsets.windows(2).enumerate() {
            let n = (ends[1] - ends[0]) as usize;
            if n == 0 {
                rep.push(0u8);
                page.def.put_n(empty as u64, 1);
            } else {
                put_first_and_more(&mut rep, n);
                page.def.put_n(present as u64, n);
            }
            rows += 1;
            levels += n.max(1);
            if levels >= batch || i + 2 == offsets.len() {
                // A batch ends: its levels and items, then the page if full.
                page.rep.put_all(&rep);
                rep.clear();
                let to = ends[1] as usize;
                page.values.reserve(8 * (to - from));
                for v in &items[from..to] {
                    page.values.extend_from_slice(&v.to_le_bytes());
                }
                page.rows += rows;
                page.levels += levels;
                (from, rows, levels) = (to, 0, 0);
                if page.rows >= row_limit || page.values.len() >= size_limit {
                    page.write(&mut chunk)?;
                }
            }
        }
    }
    if page.levels > 0 {
        page.write(&mut chunk)?;
    }
    chunk.finish(group, None, None)
}

/// Appends the repetition levels of a list of `n` items: 0 for the first, 1 for each other.
/// A call's arguments are a few: their levels are one 8-byte store, cut to length, where a
/// run of ones of any length was a call of `memset` for each row.
#[inline]
fn put_first_and_more(rep: &mut Vec<u8>, n: usize) {
    const SHORT: [u8; 8] = [0, 1, 1, 1, 1, 1, 1, 1];
    if n <= SHORT.len() {
        let at = rep.len();
        rep.extend_from_slice(&SHORT);
        rep.truncate(at + n);
    } else {
        rep.push(0);
        rep.extend(std::iter::repeat_n(1, n - 1));
    }
}

/// A data page being gathered: its repetition and definition levels, and its values.
struct Page {
    rep: Rle,
    def: Rle,
    values: Vec<u8>,
    rows: usize,
    levels: usize,
}

impl Page {
    /// Writes the page and leaves this empty for the next.
    fn write(&mut self, chunk: &mut Chunk<'_>) -> Result<()> {
        let mut raw = Vec::with_capacity(self.values.len() + self.levels / 2);
        for levels in [self.rep.finish(), self.def.finish()] {
            sized(&levels, &mut raw);
        }
        raw.append(&mut self.values);
        chunk.data_page(&raw, Encoding::PLAIN, self.rows, self.levels)?;
        (self.rows, self.levels) = (0, 0);
        Ok(())
    }
}
