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
use parquet::{basic::Encoding, errors::Result, file::writer::SerializedRowGroupWriter};

use super::{
    chunk::{Chunk, sized},
    rle::Rle,
};
use crate::fast::HashMap;

/// Writes the names of `arrays` (one per group of rows, in order) as the chunk's column.
pub(super) fn write<W: std::io::Write + Send>(
    group: &mut SerializedRowGroupWriter<'_, W>,
    mut chunk: Chunk<'_>,
    arrays: &[&DictionaryArray<UInt32Type>],
) -> Result<()> {
    let (names, keys) = merge(arrays);

    // The dictionary page: each name's length (4 bytes) and bytes.
    let mut dict = Vec::with_capacity(names.iter().map(|n| n.len() + 4).sum());
    for n in &names {
        sized(n.as_bytes(), &mut dict);
    }
    chunk.dictionary_page(&dict, names.len())?;
    // The data page: the indices' bit width, then the indices.
    let width = bits(names.len().saturating_sub(1) as u32);
    let mut rle = Rle::new(width);
    rle.put_all(&keys);
    let mut data = vec![width];
    data.extend_from_slice(&rle.finish());
    chunk.data_page(&data, Encoding::RLE_DICTIONARY, keys.len(), keys.len())?;
    chunk.finish(group, None, None)
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
}
