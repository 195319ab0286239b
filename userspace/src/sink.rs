//! Parquet output: one directory per table, Hive-partitioned by host, written in closed files
//! as the run goes so that a killed tracer loses at most the rows of the last interval.
//!
//! Each flush writes a complete Parquet file under a hidden temporary name and renames it into
//! place: readers (DuckDB, Spark) never see a partial file, and every visible file is valid.
use std::{
    fs,
    os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _},
    path::{Path, PathBuf},
    sync::Arc,
};

use anyhow::Context as _;
use arrow::{
    array::{ArrayBuilder, BooleanBuilder, Int32Builder, Int64Builder, ListBuilder, StringBuilder},
    datatypes::{DataType, Field, SchemaRef},
    record_batch::RecordBatch,
};
use parquet::{
    arrow::ArrowWriter,
    basic::{Compression, Encoding, ZstdLevel},
    file::properties::WriterProperties,
    schema::types::ColumnPath,
};

/// A column type: how a Rust value is appended and what Arrow type it becomes.
pub trait Col {
    type Value;
    type Builder: ArrayBuilder + Default;
    const NULLABLE: bool;
    fn data_type() -> DataType;
    fn append(b: &mut Self::Builder, v: Self::Value);
}

macro_rules! scalar_col {
    ($name:ident, $opt:ident, $t:ty, $builder:ty, $dt:expr) => {
        pub struct $name;
        impl Col for $name {
            type Value = $t;
            type Builder = $builder;
            const NULLABLE: bool = false;
            fn data_type() -> DataType {
                $dt
            }
            fn append(b: &mut $builder, v: $t) {
                b.append_value(v);
            }
        }
        pub struct $opt;
        impl Col for $opt {
            type Value = Option<$t>;
            type Builder = $builder;
            const NULLABLE: bool = true;
            fn data_type() -> DataType {
                $dt
            }
            fn append(b: &mut $builder, v: Option<$t>) {
                b.append_option(v);
            }
        }
    };
}

scalar_col!(I64, OptI64, i64, Int64Builder, DataType::Int64);
scalar_col!(I32, OptI32, i32, Int32Builder, DataType::Int32);
scalar_col!(Bool, OptBool, bool, BooleanBuilder, DataType::Boolean);
scalar_col!(Str, OptStr, String, StringBuilder, DataType::Utf8);
// Names shared by many rows (a call's layer, function, op): one allocation per probe, not
// per row.
scalar_col!(
    Name,
    OptName,
    std::rc::Rc<str>,
    StringBuilder,
    DataType::Utf8
);

pub struct ListI64;
impl Col for ListI64 {
    type Value = Vec<i64>;
    type Builder = ListBuilder<Int64Builder>;
    const NULLABLE: bool = false;
    fn data_type() -> DataType {
        DataType::List(Arc::new(Field::new("item", DataType::Int64, true)))
    }
    fn append(b: &mut Self::Builder, v: Vec<i64>) {
        b.values().append_slice(&v);
        b.append(true);
    }
}

pub struct ListStr;
impl Col for ListStr {
    type Value = Vec<String>;
    type Builder = ListBuilder<StringBuilder>;
    const NULLABLE: bool = false;
    fn data_type() -> DataType {
        DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)))
    }
    fn append(b: &mut Self::Builder, v: Vec<String>) {
        for s in v {
            b.values().append_value(s);
        }
        b.append(true);
    }
}

/// Rows buffered for one table.
pub trait Table: Default {
    type Row;
    const NAME: &'static str;
    fn schema() -> SchemaRef;
    fn push(&mut self, row: Self::Row);
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn finish(&mut self) -> RecordBatch;
    /// An Int32 column whose equal values are brought together in each file, the rows of
    /// each value in the order they came (none: every row as it came).
    const GROUP_BY: Option<&'static str> = None;
}

/// Declares a table: a row struct with typed fields and a builder that buffers rows.
macro_rules! table {
    ($table:ident, $row:ident, $name:literal, { $($col:ident : $kind:ident),+ $(,)? }) => {
        $crate::sink::table!($table, $row, $name, grouped_by [], { $($col : $kind),+ });
    };
    ($table:ident, $row:ident, $name:literal, grouped_by [$($key:ident)?],
     { $($col:ident : $kind:ident),+ $(,)? }) => {
        #[derive(Debug, Clone, Default)]
        pub struct $row {
            $(pub $col: <$crate::sink::$kind as $crate::sink::Col>::Value),+
        }
        #[derive(Default)]
        pub struct $table {
            rows: usize,
            $($col: <$crate::sink::$kind as $crate::sink::Col>::Builder),+
        }
        impl $crate::sink::Table for $table {
            type Row = $row;
            const NAME: &'static str = $name;
            const GROUP_BY: Option<&'static str> = [$(stringify!($key))?].first().copied();
            fn schema() -> arrow::datatypes::SchemaRef {
                std::sync::Arc::new(arrow::datatypes::Schema::new(vec![$(
                    arrow::datatypes::Field::new(
                        stringify!($col),
                        <$crate::sink::$kind as $crate::sink::Col>::data_type(),
                        <$crate::sink::$kind as $crate::sink::Col>::NULLABLE,
                    )
                ),+]))
            }
            fn push(&mut self, row: $row) {
                $(<$crate::sink::$kind as $crate::sink::Col>::append(&mut self.$col, row.$col);)+
                self.rows += 1;
            }
            fn len(&self) -> usize {
                self.rows
            }
            fn finish(&mut self) -> arrow::record_batch::RecordBatch {
                self.rows = 0;
                let cols: Vec<arrow::array::ArrayRef> =
                    vec![$(arrow::array::ArrayBuilder::finish(&mut self.$col)),+];
                arrow::record_batch::RecordBatch::try_new(Self::schema(), cols)
                    .expect("builders match the schema they were declared with")
            }
        }
    };
}
pub(crate) use table;

/// Writes one table's batches as numbered Parquet files.
pub struct TableWriter<T: Table> {
    pub rows: T,
    dir: PathBuf,
    prefix: String,
    seq: u32,
    mode: u32,
    pub rows_written: u64,
    pub bytes_written: u64,
}

impl<T: Table> TableWriter<T> {
    /// Files go to `root/<table>/host=<host>/part-<run_id>-*.parquet` with permissions `mode`.
    pub fn new((root, host, run_id, mode): (&Path, &str, &str, u32)) -> anyhow::Result<Self> {
        let dir = root.join(T::NAME).join(format!("host={host}"));
        create_dirs(&dir, mode)?;
        Ok(Self {
            rows: T::default(),
            dir,
            prefix: format!("part-{run_id}"),
            seq: 0,
            mode,
            rows_written: 0,
            bytes_written: 0,
        })
    }

    pub fn push(&mut self, row: T::Row) {
        self.rows.push(row);
    }

    /// Writes the buffered rows as a new file (nothing when empty).
    pub fn flush(&mut self) -> anyhow::Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        self.seq += 1;
        let name = format!("{}-{:06}.parquet", self.prefix, self.seq);
        self.write_named(&name)
    }

    /// Writes the buffered rows as `name`, replacing a file of that name atomically.
    pub fn write_named(&mut self, name: &str) -> anyhow::Result<()> {
        let n = self.rows.len() as u64;
        let batch = match T::GROUP_BY {
            Some(key) => grouped(self.rows.finish(), key)?,
            None => self.rows.finish(),
        };
        let bytes = write_file(&self.dir, name, &batch, self.mode)?;
        self.rows_written += n;
        self.bytes_written += bytes;
        Ok(())
    }
}

/// `batch` with the rows of equal `key` (an Int32 column) together, each group's rows in
/// their order; as it is when they already are.
fn grouped(batch: RecordBatch, key: &str) -> anyhow::Result<RecordBatch> {
    use arrow::array::AsArray as _;
    let keys = batch
        .column_by_name(key)
        .with_context(|| format!("no column {key} to group by"))?
        .as_primitive_opt::<arrow::datatypes::Int32Type>()
        .with_context(|| format!("column {key} is not Int32"))?
        .values();
    // A key seen again after another one: the rows are not grouped yet.
    let mut seen = std::collections::HashSet::new();
    let together = keys
        .iter()
        .enumerate()
        .all(|(i, k)| (i > 0 && keys[i - 1] == *k) || seen.insert(*k));
    if together {
        return Ok(batch);
    }
    let mut order: Vec<u32> = (0..batch.num_rows() as u32).collect();
    // Stable: a thread's rows keep their order.
    order.sort_by_key(|i| keys[*i as usize]);
    Ok(arrow::compute::take_record_batch(
        &batch,
        &arrow::array::UInt32Array::from(order),
    )?)
}

/// Creates `dir` and its missing parents with the search bits matching the files' `mode`
/// (0640 gives 0750); existing directories keep theirs.
pub fn create_dirs(dir: &Path, mode: u32) -> anyhow::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(mode | (mode & 0o444) >> 2)
        .create(dir)
        .with_context(|| format!("cannot create output directory {}", dir.display()))
}

/// Columns whose values mostly grow from row to row (times, ids, positions): stored as
/// differences (DELTA_BINARY_PACKED) instead of through a dictionary. A dictionary of
/// near-unique 8-byte values costs as much as the values and an index each; their deltas
/// take a few bits. DuckDB and Spark read the encoding natively.
const DELTA_COLUMNS: &[&str] = &[
    "call_id",
    "parent_id",
    "ts_begin_ns",
    "ts_end_ns",
    "offset",
    "ts_queue_ns",
    "ts_issue_ns",
    "ts_complete_ns",
    "sector",
    "first_page",
    "last_page",
];

fn props() -> WriterProperties {
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(3).expect("valid zstd level"),
        ))
        .set_created_by(format!("strata {}", env!("CARGO_PKG_VERSION")))
        // Min/max per column chunk (what DuckDB and Spark prune row groups with), not per
        // page as well.
        .set_statistics_enabled(parquet::file::properties::EnabledStatistics::Chunk);
    for name in DELTA_COLUMNS {
        let col = ColumnPath::from(*name);
        b = b
            .set_column_dictionary_enabled(col.clone(), false)
            .set_column_encoding(col, Encoding::DELTA_BINARY_PACKED);
    }
    // The calls' raw arguments: within a thread's rows a call's arguments repeat with a
    // fixed stride but for the one that moves (an offset, a buffer), which zstd finds in
    // plain values; a dictionary would store each new offset whole and an index besides
    // (measured, steady-state MPI-IO collective writes: 10.2 -> 8.8 bytes per call).
    let args = ColumnPath::from(vec!["args".into(), "list".into(), "item".into()]);
    b.set_column_dictionary_enabled(args.clone(), false)
        .set_column_encoding(args, Encoding::PLAIN)
        .build()
}

fn write_file(dir: &Path, name: &str, batch: &RecordBatch, mode: u32) -> anyhow::Result<u64> {
    let tmp = dir.join(format!(".{name}.tmp"));
    let path = dir.join(name);
    let file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)
        .with_context(|| format!("cannot create {}", tmp.display()))?;
    let written = ArrowWriter::try_new(file, batch.schema(), Some(props())).and_then(|mut w| {
        w.write(batch)?;
        w.close().map(|_| ())
    });
    if let Err(e) = written {
        // A full disk leaves no half-written file behind taking what space is left.
        let _ = fs::remove_file(&tmp);
        anyhow::bail!("cannot write {}: {}", tmp.display(), root_cause(&e));
    }
    let bytes = fs::metadata(&tmp).map(|m| m.len()).unwrap_or(0);
    fs::rename(&tmp, &path)
        .with_context(|| format!("cannot rename {} to {}", tmp.display(), path.display()))?;
    Ok(bytes)
}

/// The innermost error (the OS error behind a Parquet one), said once.
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut e = e;
    while let Some(next) = e.source() {
        e = next;
    }
    e.to_string()
}

/// Reads every row of a table back (tests and `strata` summaries).
pub fn read_table(root: &Path, table: &str) -> anyhow::Result<Vec<RecordBatch>> {
    let mut batches = Vec::new();
    let dir = root.join(table);
    let mut files = Vec::new();
    for host in fs::read_dir(&dir).with_context(|| format!("no table at {}", dir.display()))? {
        let host = host?.path();
        for f in fs::read_dir(&host)? {
            let f = f?.path();
            if f.extension().is_some_and(|e| e == "parquet")
                && !f
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            {
                files.push(f);
            }
        }
    }
    files.sort();
    for f in files {
        let file = fs::File::open(&f)?;
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .with_context(|| format!("cannot read {}", f.display()))?
            .build()?;
        for b in reader {
            batches.push(b?);
        }
    }
    Ok(batches)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::{
        array::{AsArray as _, Int32Array, StringArray},
        datatypes::{DataType, Field, Int32Type, Schema},
    };

    use super::*;

    fn batch(tids: &[i32], names: &[&str]) -> RecordBatch {
        let schema = Schema::new(vec![
            Field::new("tid", DataType::Int32, false),
            Field::new("name", DataType::Utf8, false),
        ]);
        RecordBatch::try_new(
            Arc::new(schema),
            vec![
                Arc::new(Int32Array::from(tids.to_vec())),
                Arc::new(StringArray::from(names.to_vec())),
            ],
        )
        .unwrap()
    }

    fn rows(b: &RecordBatch) -> Vec<(i32, String)> {
        let tids = b.column(0).as_primitive::<Int32Type>();
        let names = b.column(1).as_string::<i32>();
        (0..b.num_rows())
            .map(|i| (tids.value(i), names.value(i).to_string()))
            .collect()
    }

    #[test]
    fn rows_of_a_thread_come_together_in_their_order() {
        let b = batch(&[7, 3, 7, 9, 3, 7], &["a", "b", "c", "d", "e", "f"]);
        let g = grouped(b, "tid").unwrap();
        let want = [(3, "b"), (3, "e"), (7, "a"), (7, "c"), (7, "f"), (9, "d")];
        let want: Vec<_> = want.iter().map(|(t, n)| (*t, n.to_string())).collect();
        assert_eq!(rows(&g), want);
    }

    #[test]
    fn grouped_rows_stay_as_they_are() {
        // Together already (not in key order): nothing moves.
        let b = batch(&[9, 9, 3, 5, 5], &["a", "b", "c", "d", "e"]);
        assert_eq!(rows(&grouped(b.clone(), "tid").unwrap()), rows(&b));
        assert!(grouped(b, "name").is_err(), "not an Int32 column");
    }
}
