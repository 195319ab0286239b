//! Flat boolean and string columns without statistics (a call's `collective` flag, its
//! paths), encoded here from the arrays' values and validity: a definition level per row
//! written as runs of present and null rows, not made row by row and then encoded through
//! Arrow's writer, which also took each boolean through calls of its own (about 100
//! instructions a call on the synthetic pipeline).
//!
//! Booleans are PLAIN (bit-packed), the column chunk Arrow's writer makes of them, byte for
//! byte (tested): pages end where its do, after the batch of `write_batch_size` rows that
//! reaches the row or size limit. Strings go through a dictionary (PLAIN entries, then
//! pages of indices) when the chunk's distinct strings fit the dictionary's size limit, and
//! are PLAIN (each length and bytes) otherwise, decided for the whole chunk at once.
use arrow::array::{Array, ArrayRef, AsArray as _, BooleanArray, StringArray};
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
use crate::fast::HashMap;

/// A flat column's arrays, if written here.
pub(super) enum Flat<'a> {
    Bools(Vec<&'a BooleanArray>),
    Strings(Vec<&'a StringArray>),
}

impl<'a> Flat<'a> {
    /// `arrays` as booleans or strings, if the column is flat and keeps no statistics.
    pub(super) fn of(
        props: &WriterProperties,
        descr: &ColumnDescriptor,
        arrays: &[&'a ArrayRef],
    ) -> Option<Self> {
        if !super::encode::bare(props, descr) || descr.max_rep_level() > 0 {
            return None;
        }
        if let Some(b) = arrays.iter().map(|a| a.as_boolean_opt()).collect() {
            return Some(Self::Bools(b));
        }
        arrays
            .iter()
            .map(|a| a.as_string_opt::<i32>())
            .collect::<Option<_>>()
            .map(Self::Strings)
    }

    /// Writes the arrays (one per group of rows, in order) as the chunk's column.
    pub(super) fn write<W: std::io::Write + Send>(
        &self,
        group: &mut SerializedRowGroupWriter<'_, W>,
        chunk: Chunk<'_>,
        props: &WriterProperties,
    ) -> Result<()> {
        match self {
            Self::Bools(arrays) => write_bools(group, chunk, props, arrays),
            Self::Strings(arrays) => write_strings(group, chunk, props, arrays),
        }
    }
}

/// A data page being gathered: its definition levels (of a nullable column), values and
/// rows.
struct Page {
    levels: Rle,
    optional: bool,
    values: Vec<u8>,
    rows: usize,
}

impl Page {
    fn new(optional: bool) -> Self {
        Self {
            levels: Rle::new(1),
            optional,
            values: Vec::new(),
            rows: 0,
        }
    }

    /// Puts rows `from..to` of `array`: their definition levels, and each run of present
    /// rows into `put`.
    fn put_rows(
        &mut self,
        array: &dyn Array,
        from: usize,
        to: usize,
        mut put: impl FnMut(&mut Vec<u8>, usize, usize),
    ) {
        self.rows += to - from;
        match array.nulls().filter(|n| n.null_count() > 0) {
            None => {
                if self.optional {
                    self.levels.put_n(1, to - from);
                }
                put(&mut self.values, from, to);
            }
            Some(valid) => {
                let mut at = 0;
                for (start, end) in valid.slice(from, to - from).valid_slices() {
                    self.levels.put_n(0, start - at);
                    self.levels.put_n(1, end - start);
                    put(&mut self.values, from + start, from + end);
                    at = end;
                }
                self.levels.put_n(0, to - from - at);
            }
        }
    }

    /// Writes the page, its values in `encoding`, ended by what `tail` appends (booleans not
    /// yet out in whole words, or the dictionary indices gathered aside); leaves this empty
    /// for the next.
    fn write(
        &mut self,
        chunk: &mut Chunk<'_>,
        encoding: Encoding,
        tail: impl FnOnce(&mut Vec<u8>),
    ) -> Result<()> {
        let mut raw = Vec::new();
        if self.optional {
            sized(&self.levels.finish(), &mut raw);
        }
        raw.append(&mut self.values);
        tail(&mut raw);
        let rows = std::mem::take(&mut self.rows);
        chunk.data_page(&raw, encoding, rows, rows)
    }
}

/// Calls `f` with each array and the bounds of each batch of `batch` rows in it, in order:
/// the steps at which Arrow's writer looks whether a page is full.
fn each_batch<'a, A: Array>(
    arrays: &[&'a A],
    batch: usize,
    mut f: impl FnMut(&'a A, usize, usize) -> Result<()>,
) -> Result<()> {
    for array in arrays {
        for from in (0..array.len()).step_by(batch) {
            f(array, from, array.len().min(from + batch))?;
        }
    }
    Ok(())
}

/// Present booleans, bit-packed lowest bit first, as they come.
#[derive(Default)]
struct Bits {
    acc: u64,
    n: u32,
}

impl Bits {
    fn put(&mut self, out: &mut Vec<u8>, bit: bool) {
        self.acc |= u64::from(bit) << self.n;
        self.n += 1;
        if self.n == 64 {
            out.extend_from_slice(&self.acc.to_le_bytes());
            (self.acc, self.n) = (0, 0);
        }
    }

    /// The bits not yet out, in whole bytes (the last padded with zeros).
    fn flush(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.acc.to_le_bytes()[..self.n.div_ceil(8) as usize]);
        (self.acc, self.n) = (0, 0);
    }

    /// Bytes the values take so far (what Arrow's writer weighs against the page's size).
    fn bytes(&self, out: &[u8]) -> usize {
        out.len() + self.n.div_ceil(8) as usize
    }
}

fn write_bools<W: std::io::Write + Send>(
    group: &mut SerializedRowGroupWriter<'_, W>,
    mut chunk: Chunk<'_>,
    props: &WriterProperties,
    arrays: &[&BooleanArray],
) -> Result<()> {
    let descr = chunk.descr().clone();
    let (batch, row_limit) = (props.write_batch_size(), props.data_page_row_count_limit());
    let size_limit = props.column_data_page_size_limit(descr.path());
    let mut page = Page::new(descr.max_def_level() > 0);
    let mut bits = Bits::default();
    each_batch(arrays, batch, |array, from, to| {
        let values = array.values();
        page.put_rows(array, from, to, |out, a, b| {
            (a..b).for_each(|i| bits.put(out, values.value(i)));
        });
        if page.rows >= row_limit || bits.bytes(&page.values) >= size_limit {
            page.write(&mut chunk, Encoding::PLAIN, |raw| bits.flush(raw))?;
        }
        Ok(())
    })?;
    if page.rows > 0 {
        page.write(&mut chunk, Encoding::PLAIN, |raw| bits.flush(raw))?;
    }
    chunk.finish(group, None, None)
}

fn write_strings<W: std::io::Write + Send>(
    group: &mut SerializedRowGroupWriter<'_, W>,
    mut chunk: Chunk<'_>,
    props: &WriterProperties,
    arrays: &[&StringArray],
) -> Result<()> {
    let descr = chunk.descr().clone();
    let path = descr.path();
    let (batch, row_limit) = (props.write_batch_size(), props.data_page_row_count_limit());
    let size_limit = props.column_data_page_size_limit(path);
    let dictionary = if props.dictionary_enabled(path) {
        Dictionary::of(arrays, props.column_dictionary_page_size_limit(path))
    } else {
        None
    };
    let mut page = Page::new(descr.max_def_level() > 0);
    match dictionary {
        Some(mut d) => {
            chunk.dictionary_page(&d.entries, d.len)?;
            let mut next = std::mem::take(&mut d.keys).into_iter();
            each_batch(arrays, batch, |array, from, to| {
                page.put_rows(array, from, to, |_, a, b| {
                    d.page.extend(next.by_ref().take(b - a));
                });
                if page.rows >= row_limit {
                    page.write(&mut chunk, Encoding::RLE_DICTIONARY, |raw| d.indices(raw))?;
                }
                Ok(())
            })?;
            if page.rows > 0 {
                page.write(&mut chunk, Encoding::RLE_DICTIONARY, |raw| d.indices(raw))?;
            }
        }
        None => {
            each_batch(arrays, batch, |array, from, to| {
                page.put_rows(array, from, to, |out, a, b| {
                    (a..b).for_each(|i| sized(array.value(i).as_bytes(), out));
                });
                if page.rows >= row_limit || page.values.len() >= size_limit {
                    page.write(&mut chunk, Encoding::PLAIN, |_| {})?;
                }
                Ok(())
            })?;
            if page.rows > 0 {
                page.write(&mut chunk, Encoding::PLAIN, |_| {})?;
            }
        }
    }
    chunk.finish(group, None, None)
}

/// A chunk's distinct strings in the order first seen, and each present row's index.
struct Dictionary {
    /// The dictionary page: each string's length (4 bytes) and bytes.
    entries: Vec<u8>,
    len: usize,
    keys: Vec<u32>,
    /// The current page's indices.
    page: Vec<u32>,
}

impl Dictionary {
    /// The dictionary of `arrays`' present strings; None when its page would exceed `limit`
    /// bytes.
    fn of(arrays: &[&StringArray], limit: usize) -> Option<Self> {
        let mut at: HashMap<&str, u32> = HashMap::default();
        let mut d = Self {
            entries: Vec::new(),
            len: 0,
            keys: Vec::new(),
            page: Vec::new(),
        };
        // A string like the one before (the same file's calls in a row) is not looked up
        // again: a hash and a probe fewer per row (about 90 instructions).
        let mut last: Option<(&str, u32)> = None;
        for s in arrays.iter().flat_map(|a| a.iter().flatten()) {
            let key = match last {
                Some((prev, key)) if prev == s => key,
                _ => *at.entry(s).or_insert_with(|| {
                    sized(s.as_bytes(), &mut d.entries);
                    d.len += 1;
                    d.len as u32 - 1
                }),
            };
            last = Some((s, key));
            if d.entries.len() > limit {
                return None;
            }
            d.keys.push(key);
        }
        Some(d)
    }

    /// Appends the page's indices (their bit width, then the RLE / bit-packing hybrid).
    fn indices(&mut self, raw: &mut Vec<u8>) {
        let max = self.len.saturating_sub(1) as u32;
        let width = (u32::BITS - max.leading_zeros()) as u8;
        let mut rle = Rle::new(width);
        rle.put_all(&self.page);
        raw.push(width);
        raw.extend_from_slice(&rle.finish());
        self.page.clear();
    }
}
