//! How a table's rows become a Parquet file: each column's encoding, and a row group written
//! column by column, most columns encoded in `sink/` (names, integers, raw arguments, strings
//! and booleans without statistics), the others (strings and booleans with statistics, lists
//! of strings) by Arrow's writer unless they hold no value (`absent.rs`).
use std::{io::Write, iter::repeat_n};

use arrow::{
    array::{
        Array as _, ArrayRef, ArrowPrimitiveType, AsArray as _, DictionaryArray, ListArray,
        PrimitiveArray, RecordBatch,
    },
    datatypes::{DataType, Int32Type, Int64Type, SchemaRef, UInt32Type},
};
use parquet::{
    arrow::{
        ArrowWriter,
        arrow_writer::{ArrowColumnWriter, compute_leaves},
    },
    basic::{Compression, Encoding, Type as PhysicalType, ZstdLevel},
    column::writer::ColumnWriterImpl,
    data_type::Int64Type as ParquetInt64,
    errors::Result,
    file::properties::{EnabledStatistics, WriterProperties, WriterVersion},
    schema::types::{ColumnDescriptor, ColumnPath},
};

use super::{
    absent,
    chunk::{Chunk, Zstd},
    flat::Flat,
    ints,
};

/// Columns whose values mostly grow from row to row (times, ids, positions), or stay the same
/// for long runs of a thread's rows (its handle and file ids): stored as differences
/// (DELTA_BINARY_PACKED) instead of through a dictionary. A dictionary of near-unique 8-byte
/// values costs as much as the values and an index each; their deltas take a few bits. For
/// the others the two take about as many bytes, but a dictionary looks every value up in a
/// hash table: twice the instructions.
/// DuckDB and Spark read the encoding natively.
const DELTA_COLUMNS: &[&str] = &[
    "handle_id",
    "file_id",
    "call_id",
    "parent_id",
    "ts_begin_ns",
    "ts_end_ns",
    "offset",
    "offset2",
    "ts_queue_ns",
    "ts_issue_ns",
    "ts_complete_ns",
    "sector",
    "first_page",
    "last_page",
];

/// Columns that keep one value for long runs of rows, or step between a few small numbers: a
/// calls file holds each thread's rows together, so its process and thread id, and a call's
/// depth. Stored plain, which zstd shrinks as well as deltas would: the same bytes, and
/// 120-150 fewer instructions per call written (measured on the benchmark's workloads).
const PLAIN_COLUMNS: &[&str] = &["pid", "tid", "depth"];

/// Rows per data page, at most (pages also end at 1 MiB). Parquet's default of 20,000 cuts
/// a file's column into pages of a header, levels and a zstd frame each; one page for
/// what a flush buffers writes 2.3-4.0% fewer bytes per call on the benchmark's regular
/// workloads, for no more instructions.
const PAGE_ROWS: usize = crate::dataset::Dataset::MAX_BUFFERED_ROWS;

/// Columns of sizes and results: a few distinct values in regular I/O, which a dictionary
/// stores in a few bits a row; as many as the calls in irregular I/O (random sizes), where
/// once the dictionary outgrows `SMALL_DICTIONARY` the rest of the column chunk is stored
/// as differences instead.
const DICTIONARY_THEN_DELTA_COLUMNS: &[&str] = &["ret", "bytes_result", "bytes_requested"];

/// Bytes of dictionary (of 8-byte values) after which those columns fall back to deltas.
const SMALL_DICTIONARY: usize = 4096;

/// Columns written without min/max statistics: values no query narrows row groups by (a
/// thread's calls mix sizes, returns, flags, paths, layers and functions of every kind, so
/// the range of a row group's names spans nearly all of them), whose statistics are worked
/// out value by value, strings byte by byte (sizes and paths: 2.5% of the pipeline's
/// instructions per call; a call's layer, function and op: 4.3%). Ids, times, offsets and
/// `errno` (its null count finds the groups with failed calls) keep theirs.
const NO_STATISTICS_COLUMNS: &[&str] = &[
    "layer",
    "function",
    "op",
    "depth",
    "offset2",
    "handle2_id",
    "file2_id",
    "bytes_requested",
    "bytes_result",
    "ret",
    "flags",
    "collective",
    "path",
    "path2",
];
const NO_STATISTICS_LISTS: &[&str] = &["args", "strs", "dims"];

pub(super) fn list_item(name: &str) -> ColumnPath {
    ColumnPath::from(vec![name.into(), "list".into(), "item".into()])
}

pub(super) fn props() -> WriterProperties {
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(3).expect("valid zstd level"),
        ))
        .set_created_by(format!("strata {}", env!("CARGO_PKG_VERSION")))
        // Min/max per column chunk (what DuckDB and Spark prune row groups with), not per
        // page as well.
        .set_statistics_enabled(EnabledStatistics::Chunk);
    b = b.set_data_page_row_count_limit(PAGE_ROWS);
    for name in PLAIN_COLUMNS {
        let col = ColumnPath::from(*name);
        b = b
            .set_column_dictionary_enabled(col.clone(), false)
            .set_column_encoding(col, Encoding::PLAIN);
    }
    for name in DELTA_COLUMNS {
        let col = ColumnPath::from(*name);
        b = b
            .set_column_dictionary_enabled(col.clone(), false)
            .set_column_encoding(col, Encoding::DELTA_BINARY_PACKED);
    }
    for name in DICTIONARY_THEN_DELTA_COLUMNS {
        let col = ColumnPath::from(*name);
        b = b
            .set_column_dictionary_page_size_limit(col.clone(), SMALL_DICTIONARY)
            .set_column_encoding(col, Encoding::DELTA_BINARY_PACKED);
    }
    // The calls' raw arguments: within a thread's rows a call's arguments repeat with a
    // fixed stride but for the one that moves (an offset, a buffer), which zstd finds in
    // plain values; a dictionary would store each new offset whole and an index besides
    // (measured, steady-state MPI-IO collective writes: 10.2 -> 8.8 bytes per call).
    let args = list_item("args");
    b = b
        .set_column_dictionary_enabled(args.clone(), false)
        .set_column_encoding(args, Encoding::PLAIN);
    for col in NO_STATISTICS_COLUMNS {
        b = b.set_column_statistics_enabled(ColumnPath::from(*col), EnabledStatistics::None);
    }
    for col in NO_STATISTICS_LISTS {
        b = b.set_column_statistics_enabled(list_item(col), EnabledStatistics::None);
    }
    b.build()
}

/// Writes `batches` in order as one Parquet file into `w`, and gives `w` back.
///
/// Arrow's writer goes value by value, through several calls each. Most columns are
/// encoded here instead: names gathered as a dictionary (`names.rs`); flat integer columns,
/// through a dictionary, PLAIN or as differences (`ints.rs`), and the calls' raw arguments
/// (`lists.rs`), both the very bytes Arrow's writer makes (tested). Other lists of integers
/// without nulls (a selection's dimensions, Lustre OST lists) go to Parquet's column writer
/// with levels made in one pass over their offsets, also the same bytes. A column without a
/// value in the file is levels alone (`absent.rs`); strings and booleans without statistics
/// are encoded from their values and validity (`flat.rs`). Every other column (with
/// statistics, lists of strings, lists with nulls) takes Arrow's path.
pub(super) fn write<W: Write + Send>(
    w: W,
    schema: SchemaRef,
    batches: &[RecordBatch],
) -> Result<W> {
    write_with(w, schema, batches, props())
}

/// [`write`] with other properties than strata's.
fn write_with<W: Write + Send>(
    w: W,
    schema: SchemaRef,
    batches: &[RecordBatch],
    props: WriterProperties,
) -> Result<W> {
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let row_group_limit = props.max_row_group_row_count().unwrap_or(usize::MAX);
    let arrow = ArrowWriter::try_new(w, schema.clone(), Some(props))?;
    // One row group, as Arrow's writer makes of a file's rows (a file holds at most a
    // flush interval's, far below its limit of a row group); past it, or without rows, it
    // writes the file itself, names as strings.
    if rows == 0 || rows > row_group_limit {
        let mut arrow = arrow;
        for b in batches {
            let cols = (schema.fields().iter().zip(b.columns()))
                .map(|(f, a)| arrow::compute::cast(a, f.data_type()))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            arrow.write(&RecordBatch::try_new(schema.clone(), cols)?)?;
        }
        return arrow.into_inner();
    }
    let (mut file, factory) = arrow.into_serialized_writer()?;
    let descrs = file.schema_descr().columns().to_vec();
    let props = file.properties().clone();
    let compression = props.compression(descrs[0].path());
    let mut zstd = Zstd::new(compression)?;
    let mut group = file.next_row_group()?;
    // A field of these tables is one column: no structs.
    // Arrow's column writers, made when a column first needs one: each makes a zstd
    // context of its own, and a calls file usually needs none.
    let mut writers: Option<Vec<Option<ArrowColumnWriter>>> = None;
    for (i, field) in schema.fields().iter().enumerate() {
        let arrays: Vec<&ArrayRef> = batches.iter().map(|b| b.column(i)).collect();
        if let Some(names) = dictionaries(&arrays) {
            let chunk = Chunk::new(descrs[i].clone(), compression, &mut zstd);
            super::names::write(&mut group, chunk, &names)?;
            continue;
        }
        if let Some(how) = flat_ints(&props, &descrs[i]) {
            let chunk = |zstd| Chunk::new(descrs[i].clone(), compression, zstd);
            let done = match descrs[i].physical_type() {
                PhysicalType::INT64 if ints::handles::<i64>(how.1) => {
                    primitives::<Int64Type>(&arrays)
                        .map(|a| ints::write(&mut group, chunk(&mut zstd), &props, how, &a))
                }
                PhysicalType::INT32 if ints::handles::<i32>(how.1) => {
                    primitives::<Int32Type>(&arrays)
                        .map(|a| ints::write(&mut group, chunk(&mut zstd), &props, how, &a))
                }
                _ => None,
            };
            if let Some(done) = done {
                done?;
                continue;
            }
        }
        let lists = int_lists(&arrays);
        if let Some(lists) = lists.as_ref().filter(|_| plain_list(&props, &descrs[i])) {
            let chunk = Chunk::new(descrs[i].clone(), compression, &mut zstd);
            super::lists::write(&mut group, chunk, &props, lists)?;
            continue;
        }
        match lists {
            Some(lists) => {
                let mut column = group.next_column()?.expect("a column for every field");
                write_int_lists(column.typed::<ParquetInt64>(), &lists)?;
                column.close()?;
            }
            // Strings, booleans and lists of strings: levels alone when there is no value.
            None => match absent::rows(&props, &descrs[i], &arrays) {
                Some(rows) => {
                    let chunk = Chunk::new(descrs[i].clone(), compression, &mut zstd);
                    absent::write(&mut group, chunk, rows)?;
                }
                None if let Some(flat) = Flat::of(&props, &descrs[i], &arrays) => {
                    let chunk = Chunk::new(descrs[i].clone(), compression, &mut zstd);
                    flat.write(&mut group, chunk, &props)?;
                }
                None => {
                    let writers = match &mut writers {
                        Some(w) => w,
                        None => writers.insert(
                            (factory.create_column_writers(0)?.into_iter())
                                .map(Some)
                                .collect(),
                        ),
                    };
                    let mut writer = writers[i].take().expect("one writer per column");
                    for array in arrays {
                        for leaf in compute_leaves(field, array)? {
                            writer.write(&leaf)?;
                        }
                    }
                    writer.close()?.append_to_row_group(&mut group)?;
                }
            },
        }
    }
    group.close()?;
    file.into_inner()
}

/// Whether a column of a version 1 file keeps no statistics and no bloom filter: nothing
/// beside its pages that the encoders of `absent.rs` and `flat.rs` would have to make.
pub(super) fn bare(props: &WriterProperties, descr: &ColumnDescriptor) -> bool {
    let path = descr.path();
    props.writer_version() == WriterVersion::PARQUET_1_0
        && props.statistics_enabled(path) == EnabledStatistics::None
        && props.bloom_filter_properties(path).is_none()
}

/// The arrays as names gathered with a dictionary ([`super::Name`]), if they are.
fn dictionaries<'a>(arrays: &[&'a ArrayRef]) -> Option<Vec<&'a DictionaryArray<UInt32Type>>> {
    arrays
        .iter()
        .map(|a| {
            let d = a.as_dictionary_opt::<UInt32Type>()?;
            let plain = d.nulls().is_none() && d.values().data_type() == &DataType::Utf8;
            plain.then_some(d)
        })
        .collect()
}

/// How a flat column is stored, if `ints.rs` writes it as integers: through a dictionary or
/// not, and the values' own encoding (without a dictionary, or once it is full).
fn flat_ints(props: &WriterProperties, descr: &ColumnDescriptor) -> Option<(bool, Encoding)> {
    let path = descr.path();
    let flat = descr.max_rep_level() == 0
        && props.writer_version() == WriterVersion::PARQUET_1_0
        && props.statistics_enabled(path) != EnabledStatistics::Page
        && props.bloom_filter_properties(path).is_none();
    // Parquet's own choice for integers of version 1 files, unless the column names one.
    let encoding = props.encoding(path).unwrap_or(Encoding::PLAIN);
    flat.then(|| (props.dictionary_enabled(path), encoding))
}

/// The arrays as integers of `P`, if they are.
fn primitives<'a, P: ArrowPrimitiveType>(
    arrays: &[&'a ArrayRef],
) -> Option<Vec<&'a PrimitiveArray<P>>> {
    arrays.iter().map(|a| a.as_primitive_opt::<P>()).collect()
}

/// Whether a list column of 64-bit integers is stored PLAIN without a dictionary or
/// statistics (as `lists.rs` writes it).
fn plain_list(props: &WriterProperties, descr: &ColumnDescriptor) -> bool {
    let path = descr.path();
    props.encoding(path) == Some(Encoding::PLAIN)
        && !props.dictionary_enabled(path)
        && props.statistics_enabled(path) == EnabledStatistics::None
        && descr.physical_type() == PhysicalType::INT64
        && descr.max_rep_level() == 1
}

/// The arrays as lists of 64-bit integers, if they are and hold no nulls.
fn int_lists<'a>(arrays: &[&'a ArrayRef]) -> Option<Vec<&'a ListArray>> {
    arrays
        .iter()
        .map(|a| {
            let list = a.as_list_opt::<i32>()?;
            let plain = list.nulls().is_none()
                && list.values().data_type() == &DataType::Int64
                && list.values().nulls().is_none();
            plain.then_some(list)
        })
        .collect()
}

/// Writes lists without nulls: their items as values; for each item a definition level of
/// "present" and a repetition level of "first of its list" or "same list", and for an
/// empty list one level of each saying so.
fn write_int_lists(w: &mut ColumnWriterImpl<'_, ParquetInt64>, lists: &[&ListArray]) -> Result<()> {
    let present = w.get_descriptor().max_def_level();
    let empty = super::lists::empty_list_level(w.get_descriptor());
    let (mut def, mut rep) = (Vec::new(), Vec::new());
    for list in lists {
        let offsets = list.value_offsets();
        let (first, last) = (offsets[0] as usize, offsets[offsets.len() - 1] as usize);
        let items = &list.values().as_primitive::<Int64Type>().values()[first..last];
        def.clear();
        rep.clear();
        def.reserve(items.len() + list.len());
        rep.reserve(items.len() + list.len());
        for ends in offsets.windows(2) {
            match (ends[1] - ends[0]) as usize {
                0 => {
                    def.push(empty);
                    rep.push(0);
                }
                n => {
                    def.extend(repeat_n(present, n));
                    rep.push(0);
                    rep.extend(repeat_n(1, n - 1));
                }
            }
        }
        w.write_batch(items, Some(&def), Some(&rep))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::{
        array::{BooleanArray, Int32Array, Int64Array, ListBuilder, StringArray},
        buffer::OffsetBuffer,
        datatypes::{Field, Schema},
    };

    use super::*;

    fn item(dt: DataType) -> Arc<Field> {
        Arc::new(Field::new("item", dt, true))
    }

    /// Rows `from..to`: a thread id, a list of 0 to 7 integers (an eighth empty) or, one
    /// row in 1,000, of 20; a list always empty, and a name or a null.
    fn batch(schema: &SchemaRef, from: i64, to: i64) -> RecordBatch {
        let len = |r: i64| {
            if r % 1000 == 999 {
                20
            } else {
                (r * 7 % 8) as usize
            }
        };
        let mut ends = vec![0i32];
        let mut items = Vec::new();
        for r in from..to {
            items.extend((0..len(r) as i64).map(|i| r * 1000 + i * (r % 5) - 3));
            ends.push(items.len() as i32);
        }
        let list = ListArray::new(
            item(DataType::Int64),
            OffsetBuffer::new(ends.into()),
            Arc::new(Int64Array::from(items)),
            None,
        );
        let empty = ListArray::new(
            item(DataType::Int64),
            OffsetBuffer::new(vec![0i32; (to - from + 1) as usize].into()),
            Arc::new(Int64Array::from(Vec::<i64>::new())),
            None,
        );
        let names: StringArray = (from..to)
            .map(|r| (r % 3 != 0).then(|| format!("name{}", r % 7)))
            .collect();
        let tids: Int32Array = (from..to).map(|r| (r / 100) as i32).collect();
        RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(tids),
                Arc::new(list),
                Arc::new(empty),
                Arc::new(names),
            ],
        )
        .unwrap()
    }

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("tid", DataType::Int32, false),
            Field::new("args", DataType::List(item(DataType::Int64)), false),
            Field::new("dims", DataType::List(item(DataType::Int64)), false),
            // With statistics: Arrow's path (strings without are `flat.rs`'s).
            Field::new("comm", DataType::Utf8, true),
        ]))
    }

    /// What Arrow's own writer makes of the batches.
    fn arrow_writes(schema: &SchemaRef, batches: &[RecordBatch]) -> Vec<u8> {
        arrow_writes_with(schema, batches, props())
    }

    fn arrow_writes_with(
        schema: &SchemaRef,
        batches: &[RecordBatch],
        props: WriterProperties,
    ) -> Vec<u8> {
        let mut w = ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props)).unwrap();
        for b in batches {
            w.write(b).unwrap();
        }
        w.into_inner().unwrap()
    }

    /// With small pages, and a small batch of levels Parquet's writer takes at a time.
    fn small_pages() -> WriterProperties {
        let b = props().into_builder().set_data_page_size_limit(16 << 10);
        b.set_write_batch_size(1000).build()
    }

    /// Lists written here give the very bytes Arrow's writer gives: the same pages,
    /// statistics and footer, whatever the lists' lengths and the batches'. The arguments
    /// (`args`: PLAIN, no statistics) are encoded in `lists.rs`, the others (`dims`: a
    /// dictionary) with levels made here; pages are cut by rows (over 100,000), and with
    /// small pages by size.
    #[test]
    fn lists_written_here_are_the_bytes_arrow_writes() {
        let schema = schema();
        // Several batches (a file holds one per thread), one of them sliced as a reader
        // might hand it, and enough rows for several pages of levels.
        let batches = vec![
            batch(&schema, 0, 5),
            batch(&schema, 5, 70_005),
            batch(&schema, 0, 300).slice(17, 200),
            batch(&schema, 9, 10),
            batch(&schema, 70_005, 110_000),
        ];
        let arrays = [batches[0].column(1)];
        assert!(int_lists(&arrays).is_some());
        let columns = parquet::arrow::ArrowSchemaConverter::new()
            .convert(&schema)
            .unwrap();
        let (args, dims) = (columns.column(1), columns.column(2));
        assert!(plain_list(&props(), &args) && !plain_list(&props(), &dims));
        let ours = write(Vec::new(), schema.clone(), &batches).unwrap();
        assert!(ours == arrow_writes(&schema, &batches), "bytes differ");
        let small = write_with(Vec::new(), schema.clone(), &batches, small_pages()).unwrap();
        assert!(small == arrow_writes_with(&schema, &batches, small_pages()));
        // Empty lists only: no values, so the page is cut by rows.
        let b = batch(&schema, 0, 120_000);
        let (tids, empty, names) = (b.column(0), b.column(2), b.column(3));
        let cols = vec![tids.clone(), empty.clone(), empty.clone(), names.clone()];
        let empties = [RecordBatch::try_new(schema.clone(), cols).unwrap()];
        let none = write(Vec::new(), schema.clone(), &empties).unwrap();
        assert!(
            none == arrow_writes(&schema, &empties),
            "bytes differ, empty lists"
        );
        // And they read back as written.
        let file = std::env::temp_dir().join(format!("strata-encode-{}", std::process::id()));
        std::fs::write(&file, &ours).unwrap();
        let back: Vec<RecordBatch> =
            parquet::arrow::arrow_reader::ParquetRecordBatchReader::try_new(
                std::fs::File::open(&file).unwrap(),
                1 << 20,
            )
            .unwrap()
            .map(|b| b.unwrap())
            .collect();
        std::fs::remove_file(&file).unwrap();
        let back = arrow::compute::concat_batches(&schema, &back).unwrap();
        let want = arrow::compute::concat_batches(&schema, &batches).unwrap();
        assert_eq!(back, want);
    }

    /// Rows `from..to` of columns stored as differences: a growing id; times that mostly
    /// grow by a little but jump back and to the ends of the range (differences of every
    /// width up to 64 bits); a nullable id in runs, some of them null; an offset null
    /// in one row of `every`, else random 64-bit numbers or constant; and a column with
    /// no statistics, mostly null.
    fn delta_batch(schema: &SchemaRef, from: u64, to: u64, every: u64) -> RecordBatch {
        let mix = |r: u64| {
            let x = r.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (r >> 7);
            x.wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ (x >> 31)
        };
        let ids: Int64Array = (from..to).map(|r| r as i64 * 3).collect();
        let times: Int64Array = (from..to)
            .map(|r| match mix(r) % 97 {
                0 => i64::MIN,
                1 => i64::MAX,
                2 => -(r as i64),
                k => (r * 1000 + k) as i64,
            })
            .collect();
        let handles: Int64Array = (from..to)
            .map(|r| (r / 300 % 4 != 1).then_some((r / 300) as i64))
            .collect();
        let offsets: Int64Array = (from..to)
            .map(|r| match r % every {
                0 => None,
                _ if r / 5_000 % 2 == 0 => Some(mix(r) as i64),
                _ => Some(4096),
            })
            .collect();
        let sparse: Int64Array = (from..to)
            .map(|r| (mix(r) % 50 == 0).then_some(r as i64))
            .collect();
        RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(ids),
                Arc::new(times),
                Arc::new(handles),
                Arc::new(offsets),
                Arc::new(sparse),
            ],
        )
        .unwrap()
    }

    /// Columns stored as differences, encoded in `ints.rs` and `deltas.rs`, are the very
    /// bytes Arrow's writer makes of them: values, definition levels, pages, statistics and
    /// footer; with nulls in runs and alone, arrays with and without nulls, sliced arrays,
    /// and a batch of nulls only. Pages are cut by rows (more than 100,000), and, with a
    /// page size limit of 16 KiB (strata's 1 MiB is out of reach of 100,000 8-byte values),
    /// by size.
    #[test]
    fn deltas_written_here_are_the_bytes_arrow_writes() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("call_id", DataType::Int64, false),
            Field::new("ts_begin_ns", DataType::Int64, false),
            Field::new("handle_id", DataType::Int64, true),
            Field::new("offset", DataType::Int64, true),
            Field::new("offset2", DataType::Int64, true),
        ]));
        let nulls_only = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(vec![5, 6, 7])),
                Arc::new(Int64Array::from(vec![1, 1, 1])),
                Arc::new(Int64Array::from(vec![None::<i64>; 3])),
                Arc::new(Int64Array::from(vec![None::<i64>; 3])),
                Arc::new(Int64Array::from(vec![None::<i64>; 3])),
            ],
        )
        .unwrap();
        let cases = vec![
            // One row; rows that leave a block part full.
            vec![delta_batch(&schema, 0, 1, 3)],
            vec![delta_batch(&schema, 10, 700, 1_000_000)],
            // Several groups of rows, one sliced, one of nulls only: more rows than a
            // page holds (100,000), and random offsets over 1 MiB a page.
            vec![
                delta_batch(&schema, 0, 1_500, 7),
                delta_batch(&schema, 1_500, 81_000, 2),
                nulls_only.clone(),
                delta_batch(&schema, 0, 5_000, 11).slice(1_234, 3_000),
                delta_batch(&schema, 81_000, 230_000, 1_000_000),
            ],
            // Nulls only.
            vec![nulls_only],
        ];
        for batches in cases {
            let ours = write(Vec::new(), schema.clone(), &batches).unwrap();
            assert!(ours == arrow_writes(&schema, &batches), "bytes differ");
            let ours = write_with(Vec::new(), schema.clone(), &batches, small_pages()).unwrap();
            let want = arrow_writes_with(&schema, &batches, small_pages());
            assert!(ours == want, "bytes differ with small pages");
        }
    }

    /// Rows `from..to` of integer columns not stored as differences from the start: process
    /// and thread ids and depths (PLAIN); an errno, null but in one row of 13 (a
    /// dictionary of a few values, with statistics); flags (a dictionary) and a handle
    /// mostly null (a dictionary); sizes and returns through a dictionary until it is
    /// full, then as differences. Rows from `wild` on have random sizes and returns and
    /// flags of many values, which fill their dictionaries.
    fn int_batch(schema: &SchemaRef, from: u64, to: u64, wild: u64) -> RecordBatch {
        let mix = |r: u64| {
            let x = r.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (r >> 7);
            x.wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ (x >> 31)
        };
        let int32 = |f: &dyn Fn(u64) -> Option<i32>| -> ArrayRef {
            Arc::new((from..to).map(f).collect::<Int32Array>())
        };
        let int64 = |f: &dyn Fn(u64) -> Option<i64>| -> ArrayRef {
            Arc::new((from..to).map(f).collect::<Int64Array>())
        };
        let size = |r: u64| match r >= wild {
            true => (mix(r) >> (mix(r) % 32)) as i64,
            false => [4096, 65536, 1][(r % 3) as usize],
        };
        RecordBatch::try_new(
            schema.clone(),
            vec![
                int32(&|r| Some((r / 5_000) as i32 + 1000)),
                int32(&|r| Some((mix(r) % 3) as i32)),
                int32(&|r| match r % 13 {
                    0 => Some([2, 5, i32::MIN, i32::MAX][(r / 13 % 4) as usize]),
                    _ => None,
                }),
                int64(&|r| match r >= wild {
                    true => (r % 4 != 0).then(|| mix(r) as i64 % 3_000),
                    false => Some(0o2101),
                }),
                int64(&|r| (mix(r) % 40 == 0).then_some(r as i64 / 100)),
                int64(&|r| (r % 5 != 0).then(|| size(r))),
                int64(&|r| Some(size(r) - 1)),
            ],
        )
        .unwrap()
    }

    /// Integer columns through a dictionary or PLAIN, encoded in `ints.rs`, are the very
    /// bytes Arrow's writer makes: dictionary pages, indices of every bit width to 11,
    /// the fall back to differences (sizes) or PLAIN (flags, with a small dictionary
    /// limit) where the dictionary fills, in the middle of a page or of a group of rows;
    /// a dictionary with no value; statistics of 32-bit values to their ends; pages cut
    /// by rows and, with small pages, by size.
    #[test]
    fn ints_written_here_are_the_bytes_arrow_writes() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("pid", DataType::Int32, false),
            Field::new("depth", DataType::Int32, false),
            Field::new("errno", DataType::Int32, true),
            Field::new("flags", DataType::Int64, true),
            Field::new("handle2_id", DataType::Int64, true),
            Field::new("bytes_requested", DataType::Int64, true),
            Field::new("ret", DataType::Int64, false),
        ]));
        let nulls_only = {
            let b = int_batch(&schema, 1, 3, 0);
            let null32: ArrayRef = Arc::new(Int32Array::from(vec![None::<i32>; 2]));
            let null64: ArrayRef = Arc::new(Int64Array::from(vec![None::<i64>; 2]));
            let mut cols = b.columns().to_vec();
            cols[2] = null32;
            cols[3] = null64.clone();
            cols[4] = null64.clone();
            cols[5] = null64;
            RecordBatch::try_new(schema.clone(), cols).unwrap()
        };
        let cases = vec![
            vec![int_batch(&schema, 0, 1, u64::MAX)],
            vec![nulls_only.clone()],
            // Regular rows over more than a page (100,000 rows), then random ones.
            vec![
                nulls_only,
                int_batch(&schema, 0, 120_000, u64::MAX),
                int_batch(&schema, 0, 5_000, 3_000).slice(1_000, 3_100),
                int_batch(&schema, 120_000, 180_000, 150_000),
            ],
            // The returns' dictionary reaches its limit (512 values) just as a batch of
            // rows ends.
            vec![
                int_batch(&schema, 0, 512, 0),
                int_batch(&schema, 512, 3_000, 0),
            ],
            // The dictionaries fill in the first group of rows.
            vec![
                int_batch(&schema, 0, 20_000, 700),
                int_batch(&schema, 20_000, 25_000, 0),
            ],
        ];
        let tiny_dictionary = || {
            small_pages()
                .into_builder()
                .set_dictionary_page_size_limit(512)
        };
        for batches in cases {
            let ours = write(Vec::new(), schema.clone(), &batches).unwrap();
            assert!(ours == arrow_writes(&schema, &batches), "bytes differ");
            for props in [small_pages(), tiny_dictionary().build()] {
                let ours = write_with(Vec::new(), schema.clone(), &batches, props.clone());
                let want = arrow_writes_with(&schema, &batches, props);
                assert!(ours.unwrap() == want, "bytes differ with small pages");
            }
        }
    }

    /// A list holding a null item, or a null list, is left to Arrow's writer.
    #[test]
    fn lists_with_nulls_take_arrows_path() {
        let schema = Arc::new(Schema::new(vec![Field::new(
            "args",
            DataType::List(item(DataType::Int64)),
            true,
        )]));
        let mut b = ListBuilder::new(arrow::array::Int64Builder::new());
        b.values().append_value(1);
        b.values().append_null();
        b.append(true);
        b.append(false);
        b.append(true);
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(b.finish())]).unwrap();
        let arrays = [batch.column(0)];
        assert!(int_lists(&arrays).is_none());
        let ours = write(Vec::new(), schema.clone(), std::slice::from_ref(&batch)).unwrap();
        assert_eq!(ours, arrow_writes(&schema, &[batch]));
    }

    /// Columns without a value (a second path null in every row, no string arguments, a
    /// boolean null throughout) are levels alone, and read back as written: nulls, empty lists, and
    /// beside them a file's other batch with values, which takes Arrow's path.
    #[test]
    fn columns_without_values_read_back_as_written() {
        let strs = DataType::List(item(DataType::Utf8));
        let schema = Arc::new(Schema::new(vec![
            Field::new("path2", DataType::Utf8, true),
            Field::new("strs", strs, false),
            Field::new("collective", DataType::Boolean, true),
        ]));
        let no_values = |rows: usize| {
            let ends = OffsetBuffer::new(vec![0i32; rows + 1].into());
            let empty = ListArray::new(
                item(DataType::Utf8),
                ends,
                Arc::new(StringArray::from(Vec::<String>::new())),
                None,
            );
            RecordBatch::try_new(
                schema.clone(),
                vec![
                    arrow::array::new_null_array(&DataType::Utf8, rows),
                    Arc::new(empty),
                    arrow::array::new_null_array(&DataType::Boolean, rows),
                ],
            )
            .unwrap()
        };
        let columns = parquet::arrow::ArrowSchemaConverter::new()
            .convert(&schema)
            .unwrap();
        let props = props();
        let read_back = |file: &[u8]| {
            let bytes = bytes::Bytes::copy_from_slice(file);
            let reader =
                parquet::arrow::arrow_reader::ParquetRecordBatchReader::try_new(bytes, 1 << 20)
                    .unwrap();
            let back: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
            arrow::compute::concat_batches(&schema, &back).unwrap()
        };
        // Two batches (a file's threads, one sliced), 140,000 rows: more than a page of
        // Arrow's.
        let batches = [no_values(100_000), no_values(50_000).slice(7, 40_000)];
        for i in 0..schema.fields().len() {
            let arrays: Vec<&ArrayRef> = batches.iter().map(|b| b.column(i)).collect();
            assert_eq!(
                absent::rows(&props, &columns.column(i), &arrays),
                Some(140_000)
            );
        }
        let ours = write_with(Vec::new(), schema.clone(), &batches, props.clone()).unwrap();
        let want = arrow::compute::concat_batches(&schema, &batches).unwrap();
        assert_eq!(read_back(&ours), want);
        // A value in one batch: that column is written with its values (`flat.rs`, for a
        // list of strings Arrow's writer), the others stay levels alone.
        let mut path = arrow::array::StringBuilder::new();
        path.append_null();
        path.append_value("/scratch/a");
        let mut strs = ListBuilder::new(arrow::array::StringBuilder::new());
        strs.values().append_value("r");
        strs.append(true);
        strs.append(true);
        let some = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(path.finish()),
                Arc::new(strs.finish()),
                arrow::array::new_null_array(&DataType::Boolean, 2),
            ],
        )
        .unwrap();
        let batches = [no_values(1000), some];
        let arrays: Vec<&ArrayRef> = batches.iter().map(|b| b.column(0)).collect();
        assert_eq!(absent::rows(&props, &columns.column(0), &arrays), None);
        let ours = write_with(Vec::new(), schema.clone(), &batches, props).unwrap();
        let want = arrow::compute::concat_batches(&schema, &batches).unwrap();
        assert_eq!(read_back(&ours), want);
    }

    /// Rows `from..to` of boolean columns: one without nulls (true in runs and alone), one
    /// nullable (nulls in runs and alone).
    fn bool_batch(schema: &SchemaRef, from: u64, to: u64) -> RecordBatch {
        let flags: BooleanArray = (from..to)
            .map(|r| Some(r / 700 % 2 == 0 || r % 13 == 0))
            .collect();
        let maybe: BooleanArray = (from..to)
            .map(|r| (r / 3_000 % 3 != 1 && r % 17 != 0).then_some(r % 5 < 2))
            .collect();
        RecordBatch::try_new(schema.clone(), vec![Arc::new(flags), Arc::new(maybe)]).unwrap()
    }

    /// Boolean columns without statistics, encoded in `flat.rs`, are the very bytes Arrow's
    /// writer makes: bit-packed values and definition levels, pages cut by rows (more than
    /// 100,000) and, with a page size limit of 1 KiB, by size; several groups of rows, one
    /// sliced at an odd bit, one of nulls only in the nullable column.
    #[test]
    fn bools_written_here_are_the_bytes_arrow_writes() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("collective", DataType::Boolean, false),
            Field::new("maybe", DataType::Boolean, true),
        ]));
        let no_stats = |p: WriterProperties| {
            let b = p.into_builder();
            b.set_column_statistics_enabled(ColumnPath::from("maybe"), EnabledStatistics::None)
                .build()
        };
        let nulls_only = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(BooleanArray::from(vec![true, false, true])),
                Arc::new(BooleanArray::from(vec![None; 3])),
            ],
        )
        .unwrap();
        let columns = parquet::arrow::ArrowSchemaConverter::new()
            .convert(&schema)
            .unwrap();
        let b = bool_batch(&schema, 0, 10);
        for i in 0..2 {
            let arrays = [b.column(i)];
            let flat = Flat::of(&no_stats(props()), &columns.column(i), &arrays);
            assert!(matches!(flat, Some(Flat::Bools(_))));
        }
        let cases = vec![
            vec![bool_batch(&schema, 0, 1)],
            vec![nulls_only.clone()],
            vec![
                bool_batch(&schema, 0, 70_001),
                nulls_only,
                bool_batch(&schema, 0, 9_000).slice(1_235, 5_000),
                bool_batch(&schema, 70_001, 150_000),
            ],
        ];
        let tiny_pages = || {
            let b = props().into_builder().set_data_page_size_limit(1 << 10);
            no_stats(b.set_write_batch_size(1000).build())
        };
        for batches in cases {
            for props in [no_stats(props()), tiny_pages()] {
                let ours = write_with(Vec::new(), schema.clone(), &batches, props.clone());
                let want = arrow_writes_with(&schema, &batches, props);
                assert!(ours.unwrap() == want, "bytes differ");
            }
        }
    }

    /// Rows `from..to` of string columns: a path, null in most rows and repeating a few
    /// values (or, from `wild` on, a new one each row), and a name in every row.
    fn string_batch(schema: &SchemaRef, from: u64, to: u64, wild: u64) -> RecordBatch {
        let paths: StringArray = (from..to)
            .map(|r| match r % 9 {
                0 | 4 if r >= wild => Some(format!("/scratch/run/out.{r:08}")),
                0 | 4 => Some(format!("/scratch/run/file{}", r % 5)),
                _ if r / 2_000 % 2 == 1 => Some(String::new()),
                _ => None,
            })
            .collect();
        let names: StringArray = (from..to).map(|r| Some(format!("n{}", r % 300))).collect();
        RecordBatch::try_new(schema.clone(), vec![Arc::new(paths), Arc::new(names)]).unwrap()
    }

    /// String columns without statistics, encoded in `flat.rs`, read back as written:
    /// through a dictionary while the chunk's strings fit its limit, else PLAIN (a tiny
    /// limit), nullable or not, with empty strings, groups of rows one sliced and one of
    /// nulls only, pages cut by rows and (small pages) by size.
    #[test]
    fn strings_written_here_read_back_as_written() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("path", DataType::Utf8, true),
            Field::new("layer", DataType::Utf8, false),
        ]));
        let nulls_only = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from(vec![None::<&str>; 4])),
                Arc::new(StringArray::from(vec!["a", "b", "a", ""])),
            ],
        )
        .unwrap();
        let columns = parquet::arrow::ArrowSchemaConverter::new()
            .convert(&schema)
            .unwrap();
        let read_back = |file: Vec<u8>| {
            let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
                bytes::Bytes::from(file),
            )
            .unwrap();
            let encodings: Vec<Vec<Encoding>> = (reader.metadata().row_groups().iter())
                .flat_map(|g| g.columns().iter().map(|c| c.encodings().collect()))
                .collect();
            let back: Vec<RecordBatch> = reader.build().unwrap().map(|b| b.unwrap()).collect();
            (
                arrow::compute::concat_batches(&schema, &back).unwrap(),
                encodings,
            )
        };
        let cases = vec![
            vec![string_batch(&schema, 0, 1, u64::MAX)],
            vec![nulls_only.clone()],
            vec![
                string_batch(&schema, 0, 70_001, u64::MAX),
                nulls_only,
                string_batch(&schema, 0, 9_000, 0).slice(1_235, 5_000),
                string_batch(&schema, 70_001, 150_000, 120_000),
            ],
        ];
        let tiny_dictionary = || {
            let b = small_pages().into_builder();
            b.set_dictionary_page_size_limit(1 << 10).build()
        };
        for batches in cases {
            let arrays: Vec<&ArrayRef> = batches.iter().map(|b| b.column(0)).collect();
            let flat = Flat::of(&props(), &columns.column(0), &arrays);
            assert!(matches!(flat, Some(Flat::Strings(_))));
            // Paths of nulls only are levels alone (`absent.rs`), without a dictionary.
            let some = arrays.iter().any(|a| a.null_count() < a.len());
            let want = arrow::compute::concat_batches(&schema, &batches).unwrap();
            for props in [props(), small_pages()] {
                let ours = write_with(Vec::new(), schema.clone(), &batches, props).unwrap();
                let (back, encodings) = read_back(ours);
                assert_eq!(back, want);
                let dictionary = encodings[0].contains(&Encoding::RLE_DICTIONARY);
                assert_eq!(dictionary, some, "{encodings:?}");
            }
            let ours = write_with(Vec::new(), schema.clone(), &batches, tiny_dictionary());
            let (back, encodings) = read_back(ours.unwrap());
            assert_eq!(back, want);
            // Over 1 KiB of distinct paths in the large case: PLAIN throughout.
            let over = batches.len() > 2;
            let dictionary = encodings[0].contains(&Encoding::RLE_DICTIONARY);
            assert_eq!(dictionary, some && !over, "{encodings:?}");
        }
    }

    /// No rows: a file with no row group, as Arrow's writer makes it.
    #[test]
    fn no_rows_make_a_file_without_row_groups() {
        let schema = schema();
        let ours = write(Vec::new(), schema.clone(), &[]).unwrap();
        assert_eq!(ours, arrow_writes(&schema, &[]));
    }
}
