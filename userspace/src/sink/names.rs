//! A column of names (a call's layer, function, op) written as its dictionary and an index
//! per row, straight from the indices the rows were gathered as: the column chunk Parquet's
//! dictionary encoding makes, without looking each row's name up again.
//!
//! The chunk: a dictionary page of the names (PLAIN), then one data page of the indices in
//! the RLE / bit-packing hybrid, both compressed as the file's other columns; its metadata
//! and offset index as Parquet's column writer gives them (no statistics: names are in
//! `NO_STATISTICS_COLUMNS`).
use arrow::{
    array::{Array as _, AsArray as _, DictionaryArray},
    datatypes::UInt32Type,
};
use parquet::{
    basic::{Compression, Encoding, EncodingMask, PageType},
    column::{
        page::{CompressedPage, Page, PageWriter as _},
        writer::ColumnCloseResult,
    },
    errors::{ParquetError, Result},
    file::{
        metadata::{ColumnChunkMetaData, OffsetIndexBuilder, PageEncodingStats},
        writer::{SerializedPageWriter, SerializedRowGroupWriter, TrackedWrite},
    },
    schema::types::ColumnDescPtr,
};

use crate::fast::HashMap;

/// Writes the names of `arrays` (one per group of rows, in order) as the row group's next
/// column, `descr`, compressed with `compression` (zstd, as the file's other columns).
pub(super) fn write<W: std::io::Write + Send>(
    group: &mut SerializedRowGroupWriter<'_, W>,
    descr: ColumnDescPtr,
    compression: Compression,
    arrays: &[&DictionaryArray<UInt32Type>],
) -> Result<()> {
    let level = match compression {
        Compression::ZSTD(l) => l.compression_level(),
        other => return Err(ParquetError::General(format!("names: {other} unsupported"))),
    };
    let (names, keys) = merge(arrays);
    let rows = keys.len();

    // The dictionary page: each name's length (4 bytes) and bytes.
    let mut dict = Vec::with_capacity(names.iter().map(|n| n.len() + 4).sum());
    for n in &names {
        dict.extend_from_slice(&(n.len() as u32).to_le_bytes());
        dict.extend_from_slice(n.as_bytes());
    }
    // The data page: the indices' bit width, then the indices.
    let width = bits(names.len().saturating_sub(1) as u32);
    let mut data = vec![width];
    hybrid(&keys, width, &mut data);

    let mut sink = TrackedWrite::new(Vec::new());
    let mut pages = SerializedPageWriter::new(&mut sink);
    let zstd = |buf: &[u8]| zstd::bulk::compress(buf, level).map_err(ParquetError::from);
    let dict_page = pages.write_page(CompressedPage::new(
        Page::DictionaryPage {
            buf: zstd(&dict)?.into(),
            num_values: names.len() as u32,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        },
        dict.len(),
    ))?;
    let data_page = pages.write_page(CompressedPage::new(
        Page::DataPage {
            buf: zstd(&data)?.into(),
            num_values: rows as u32,
            encoding: Encoding::RLE_DICTIONARY,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        },
        data.len(),
    ))?;
    pages.close()?;
    let bytes: bytes::Bytes = sink.into_inner()?.into();

    let page_stats = |page_type, encoding| PageEncodingStats {
        page_type,
        encoding,
        count: 1,
    };
    let encodings = [Encoding::PLAIN, Encoding::RLE, Encoding::RLE_DICTIONARY];
    let specs = [&dict_page, &data_page];
    let metadata = ColumnChunkMetaData::builder(descr)
        .set_compression(compression)
        .set_encodings_mask(EncodingMask::new_from_encodings(encodings.iter()))
        .set_page_encoding_stats(vec![
            page_stats(PageType::DICTIONARY_PAGE, Encoding::PLAIN),
            page_stats(PageType::DATA_PAGE, Encoding::RLE_DICTIONARY),
        ])
        .set_total_compressed_size(specs.iter().map(|s| s.compressed_size as i64).sum())
        .set_total_uncompressed_size(specs.iter().map(|s| s.uncompressed_size as i64).sum())
        .set_num_values(rows as i64)
        .set_dictionary_page_offset(Some(dict_page.offset as i64))
        .set_data_page_offset(data_page.offset as i64)
        .build()?;
    let mut offsets = OffsetIndexBuilder::new();
    offsets.append_row_count(rows as i64);
    offsets.append_offset_and_size(data_page.offset as i64, data_page.compressed_size as i32);
    let close = ColumnCloseResult {
        bytes_written: bytes.len() as u64,
        rows_written: rows as u64,
        metadata,
        bloom_filter: None,
        column_index: None,
        offset_index: Some(offsets.build()),
    };
    group.append_column(&bytes, close)
}

/// One dictionary for the arrays' names, in the order first seen (each array's are in the
/// order first seen in it), and every row's index into it.
fn merge<'a>(arrays: &[&'a DictionaryArray<UInt32Type>]) -> (Vec<&'a str>, Vec<u32>) {
    let mut names: Vec<&str> = Vec::new();
    let mut at: HashMap<&str, u32> = HashMap::default();
    let mut keys = Vec::with_capacity(arrays.iter().map(|a| a.len()).sum());
    for a in arrays {
        let local: Vec<u32> = (a.values().as_string::<i32>().iter())
            .map(|name| {
                let name = name.unwrap_or_default();
                *at.entry(name).or_insert_with(|| {
                    names.push(name);
                    names.len() as u32 - 1
                })
            })
            .collect();
        keys.extend(a.keys().values().iter().map(|k| local[*k as usize]));
    }
    (names, keys)
}

/// Bits needed for values up to `max`.
fn bits(max: u32) -> u8 {
    (u32::BITS - max.leading_zeros()) as u8
}

/// Runs at least this long are stored as a value and a count, not bit-packed.
const MIN_RUN: usize = 8;

/// `values` of `width` bits in Parquet's RLE / bit-packing hybrid: a run of at least
/// [`MIN_RUN`] equal values as one value and its count, the others bit-packed in groups of
/// 8 (a run starts where the values packed before it fill whole groups; the last group is
/// padded with zeros, which the page's value count tells a reader to ignore).
fn hybrid(values: &[u32], width: u8, out: &mut Vec<u8>) {
    let mut packed_from = 0;
    let mut i = 0;
    while i < values.len() {
        let v = values[i];
        let end = i + values[i..].iter().take_while(|x| **x == v).count();
        // The run's first values complete the last group of those packed before it.
        let start = i + (8 - (i - packed_from) % 8) % 8;
        if end >= start + MIN_RUN {
            pack(&values[packed_from..start], width, out);
            uleb128(((end - start) as u64) << 1, out);
            out.extend_from_slice(&v.to_le_bytes()[..usize::from(width).div_ceil(8)]);
            packed_from = end;
        }
        i = end;
    }
    pack(&values[packed_from..], width, out);
}

/// Values bit-packed, lowest bits first, in groups of 8 (the last padded with zeros).
fn pack(values: &[u32], width: u8, out: &mut Vec<u8>) {
    if values.is_empty() {
        return;
    }
    let groups = values.len().div_ceil(8);
    uleb128(((groups as u64) << 1) | 1, out);
    let (mut acc, mut n) = (0u64, 0u32);
    for v in values
        .iter()
        .chain(std::iter::repeat_n(&0, groups * 8 - values.len()))
    {
        acc |= u64::from(*v) << n;
        n += u32::from(width);
        while n >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            n -= 8;
        }
    }
}

/// An unsigned integer in LEB128, as the hybrid's run headers are.
fn uleb128(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::{
        array::{ArrayRef, RecordBatch, StringArray, UInt32Array},
        datatypes::{DataType, Field, Schema},
    };

    use super::*;

    /// A group's rows: `len` names drawn from `names`, in runs of 1 to `longest`.
    fn rows(names: &[String], len: usize, longest: usize, seed: u64) -> Vec<String> {
        let mut x = seed;
        let mut next = move |n: usize| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) as usize % n
        };
        let mut out = Vec::with_capacity(len);
        while out.len() < len {
            let name = &names[next(names.len())];
            let run = 1 + next(longest);
            out.extend(std::iter::repeat_n(name.clone(), run.min(len - out.len())));
        }
        out
    }

    /// Rows as the sink gathers them: an index each into the names in the order first seen.
    fn gathered(rows: &[String]) -> ArrayRef {
        let mut names: Vec<&str> = Vec::new();
        let keys: Vec<u32> = rows
            .iter()
            .map(|r| match names.iter().position(|n| n == r) {
                Some(i) => i as u32,
                None => {
                    names.push(r);
                    names.len() as u32 - 1
                }
            })
            .collect();
        Arc::new(DictionaryArray::<UInt32Type>::new(
            UInt32Array::from(keys),
            Arc::new(StringArray::from(names)),
        ))
    }

    /// What a reader gets back of groups of names written as one file.
    fn round_trip(groups: &[Vec<String>]) -> Vec<String> {
        let file_schema = Arc::new(Schema::new(vec![Field::new("op", DataType::Utf8, false)]));
        let batch_schema = Arc::new(Schema::new(vec![Field::new(
            "op",
            DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8)),
            false,
        )]));
        let batches: Vec<RecordBatch> = groups
            .iter()
            .map(|g| RecordBatch::try_new(batch_schema.clone(), vec![gathered(g)]).unwrap())
            .collect();
        let bytes = super::super::encode::write(Vec::new(), file_schema, &batches).unwrap();
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReader::try_new(
            bytes::Bytes::from(bytes),
            1 << 20,
        )
        .unwrap();
        reader
            .flat_map(|b| {
                let b = b.unwrap();
                let col = b.column(0).as_string::<i32>().clone();
                (0..col.len())
                    .map(|i| col.value(i).to_string())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Every name comes back in its row, whatever the runs (shorter and longer than a
    /// run stored as a count, starting anywhere in a group of 8), the number of names
    /// (1 name: 0 bits an index; 300: indices wider than a byte) and the groups of rows,
    /// each with its own first-seen order.
    #[test]
    fn names_read_back_row_for_row() {
        let names = |n: usize| (0..n).map(|i| format!("name{i}")).collect::<Vec<_>>();
        let cases: Vec<Vec<Vec<String>>> = vec![
            vec![rows(&names(1), 5, 1, 1)],
            vec![rows(&names(1), 1000, 30, 2), rows(&names(3), 17, 2, 3)],
            vec![rows(&names(5), 10_000, 3, 4)],
            vec![rows(&names(5), 10_000, 20, 5), rows(&names(40), 999, 9, 6)],
            vec![rows(&names(300), 50_000, 12, 7), rows(&names(2), 7, 100, 8)],
            vec![rows(&names(257), 100_000, 1, 9)],
            // No rows: a file Arrow's writer makes, the names given to it as strings.
            vec![Vec::new()],
        ];
        for groups in cases {
            let want: Vec<String> = groups.concat();
            assert_eq!(round_trip(&groups), want);
        }
    }

    /// Runs of 8 and more equal indices are stored as a count: a long run costs a few bytes.
    #[test]
    fn long_runs_are_counted_not_packed() {
        let mut out = Vec::new();
        hybrid(&[3; 100_000], 2, &mut out);
        // A header of 100,000 << 1 in LEB128 (3 bytes) and the value in a byte.
        assert_eq!(out, [0xc0, 0x9a, 0x0c, 3]);
        // Three values packed, the run's first five fill their group, and the rest
        // counted.
        let mut v = vec![1, 2, 1];
        v.extend([0; 13]);
        out.clear();
        hybrid(&v, 2, &mut out);
        assert_eq!(out, [0b11, 0b01_10_01, 0, 8 << 1, 0]);
    }
}
