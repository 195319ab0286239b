//! Parquet output: one directory per table, Hive-partitioned by host, written in closed files
//! as the run goes so that a killed tracer loses at most the rows of the last interval.
//!
//! Each flush writes a complete Parquet file under a hidden temporary name and renames it into
//! place: readers (DuckDB, Spark) never see a partial file, and every visible file is valid.
//! A flush of few rows writes the table's newest file again with them added (`segment.rs`).
use std::{
    cell::RefCell,
    fs,
    os::unix::fs::DirBuilderExt as _,
    path::{Path, PathBuf},
    rc::Rc,
    sync::Arc,
};

use anyhow::Context as _;
use arrow::{
    array::{
        ArrayRef, BooleanArray, DictionaryArray, Int32Array, Int64Array, ListArray, StringArray,
        UInt32Array,
    },
    buffer::{BooleanBuffer, Buffer, MutableBuffer, NullBuffer, OffsetBuffer, ScalarBuffer},
    datatypes::{DataType, Field, FieldRef, SchemaRef, UInt32Type},
    record_batch::RecordBatch,
};
use strata_common::MAX_ARGS;

use self::segment::Segment;
use crate::fast::{HashMap, Recent};

mod absent;
mod chunk;
mod deltas;
mod encode;
mod flat;
mod ints;
mod lists;
mod names;
mod rle;
mod segment;

/// A column type: how a Rust value is appended and what Arrow type it becomes.
pub trait Col {
    type Value;
    type Builder;
    const NULLABLE: bool;
    fn data_type() -> DataType;
    /// A builder with room for `rows` values (strings and list items grow as they come).
    fn builder(rows: usize) -> Self::Builder;
    fn append(b: &mut Self::Builder, v: &Self::Value);
    /// The values appended since the last call, as an array.
    fn finish(b: &mut Self::Builder) -> ArrayRef;
    /// Makes room for as many values as the last [`Self::finish`] took, and an eighth more.
    fn reserve(_b: &mut Self::Builder) {}
    /// The type of the array [`Self::finish`] makes, when not the file's (names come as a
    /// dictionary, and are written as strings).
    fn batch_type() -> DataType {
        Self::data_type()
    }
}

/// A vector that remembers how long it was when last taken. A builder makes that much room
/// again when the next file's first row comes, so that a steady stream does not regrow its
/// vectors in every interval, each time copying all values so far (measured: 3.6% of the
/// pipeline's instructions). Not sooner: the last file's arrays are freed by then, and memory
/// holds one interval's rows at a time.
pub struct Buf<T> {
    v: Vec<T>,
    room: usize,
}

impl<T> Buf<T> {
    fn with_capacity(n: usize) -> Self {
        Self {
            v: Vec::with_capacity(n),
            room: 0,
        }
    }

    /// The values; leaves this empty, to make room for as many and an eighth more.
    fn take(&mut self) -> Vec<T> {
        self.room = self.v.len() + self.v.len() / 8;
        std::mem::take(&mut self.v)
    }

    fn reserve(&mut self) {
        self.v.reserve(self.room);
    }
}

impl<T> std::ops::Deref for Buf<T> {
    type Target = Vec<T>;
    fn deref(&self) -> &Vec<T> {
        &self.v
    }
}

impl<T> std::ops::DerefMut for Buf<T> {
    fn deref_mut(&mut self) -> &mut Vec<T> {
        &mut self.v
    }
}

/// Which values of a column are null. A flag per value is kept only once the column has had
/// both; a column of nulls alone (a read's second handle, its path: most of a trace's rows)
/// is a count, with no values stored until one comes.
enum Nulls {
    /// This many values, all null (none yet: 0).
    All(usize),
    /// Every value is there.
    None,
    /// Per value: whether it is there.
    Some(Vec<bool>),
}

impl Nulls {
    /// Notes whether the next value is `valid`, after the `before` values stored (room for
    /// `rows`: `at`); false when it is a null counted without a value, so not to be stored.
    /// `fill` as for [`Self::change`].
    #[inline(always)]
    fn note(&mut self, valid: bool, at: (usize, usize), fill: impl FnOnce(usize)) -> bool {
        match (valid, &mut *self) {
            (false, Self::All(n)) => {
                *n += 1;
                return false;
            }
            (true, Self::None) => {}
            (valid, Self::Some(flags)) => flags.push(valid),
            (valid, _) => self.change(valid, at, fill),
        }
        true
    }

    /// A value that does not match the column so far: a first `valid` one after nulls only,
    /// or a null after values only (`before` of them, and room for `rows`). Keeps a flag per
    /// value from now on; the caller stores the value. `fill(n)` stores a null's value for
    /// the `n` nulls counted without one.
    #[cold]
    fn change(&mut self, valid: bool, (before, rows): (usize, usize), fill: impl FnOnce(usize)) {
        let first = |n: usize, flag: bool| {
            let mut flags = Vec::with_capacity(rows.max(n + 1));
            flags.resize(n, flag);
            flags
        };
        let mut flags = match std::mem::replace(self, Self::None) {
            Self::All(0) if valid => return,
            Self::All(n) => {
                fill(n);
                first(n, false)
            }
            Self::None => first(before, true),
            Self::Some(flags) => flags,
        };
        flags.push(valid);
        *self = Self::Some(flags);
    }

    /// The null flags so far, and the nulls counted without a value (0 where the values
    /// are there); leaves this empty.
    fn take(&mut self) -> (Option<NullBuffer>, usize) {
        match std::mem::replace(self, Self::All(0)) {
            Self::All(0) | Self::None => (None, 0),
            Self::All(n) => (Some(all_null(n)), n),
            Self::Some(flags) => (Some(NullBuffer::from(flags)), 0),
        }
    }
}

thread_local! {
    /// Zeroed memory shared by the columns without a value: a file's many all-null columns
    /// (a read's second handle, its path) are slices of it, not zeroed allocations of their
    /// own of 8 bytes a row (1.9% of the pipeline's instructions, in memset).
    static ZEROS: RefCell<Buffer> = RefCell::new(Buffer::from(Vec::<u8>::new()));
}

/// `bytes` zeroed bytes, from [`ZEROS`] (grown to the next power of two when too short).
fn zeros(bytes: usize) -> Buffer {
    ZEROS.with_borrow_mut(|z| {
        if z.len() < bytes {
            *z = MutableBuffer::from_len_zeroed(bytes.next_power_of_two()).into();
        }
        z.slice_with_length(0, bytes)
    })
}

/// Validity of `n` values, none of them there.
fn all_null(n: usize) -> NullBuffer {
    let bits = BooleanBuffer::new(zeros(n.div_ceil(8)), 0, n);
    // SAFETY: every bit of the zeroed bitmap is unset: `n` nulls.
    unsafe { NullBuffer::new_unchecked(bits, n) }
}

/// Fixed-width values gathered in a plain vector and handed to Arrow without a copy when a
/// file is written. Arrow's builders check capacity and keep null state through calls per
/// value (about 55 instructions a value: a sixth of the pipeline's work per call, with the
/// calls table's 27 columns); a push here is a few.
pub struct Values<T> {
    values: Buf<T>,
    nulls: Nulls,
}

/// A fixed-width value type of a column and the Arrow array it becomes.
pub trait Native: Copy + Default {
    fn array(values: Vec<Self>, nulls: Option<NullBuffer>) -> ArrayRef;
    /// `n` nulls, their values zeroed memory shared with other columns.
    fn nulls(n: usize) -> ArrayRef;
}

impl Native for i64 {
    fn array(values: Vec<Self>, nulls: Option<NullBuffer>) -> ArrayRef {
        Arc::new(Int64Array::new(values.into(), nulls))
    }
    fn nulls(n: usize) -> ArrayRef {
        Arc::new(Int64Array::new(
            ScalarBuffer::new(zeros(n * 8), 0, n),
            Some(all_null(n)),
        ))
    }
}

impl Native for i32 {
    fn array(values: Vec<Self>, nulls: Option<NullBuffer>) -> ArrayRef {
        Arc::new(Int32Array::new(values.into(), nulls))
    }
    fn nulls(n: usize) -> ArrayRef {
        Arc::new(Int32Array::new(
            ScalarBuffer::new(zeros(n * 4), 0, n),
            Some(all_null(n)),
        ))
    }
}

impl Native for bool {
    fn array(values: Vec<Self>, nulls: Option<NullBuffer>) -> ArrayRef {
        Arc::new(BooleanArray::new(BooleanBuffer::from(values), nulls))
    }
    fn nulls(n: usize) -> ArrayRef {
        let values = BooleanBuffer::new(zeros(n.div_ceil(8)), 0, n);
        Arc::new(BooleanArray::new(values, Some(all_null(n))))
    }
}

impl<T: Native> Values<T> {
    fn with_capacity(rows: usize) -> Self {
        Self {
            values: Buf::with_capacity(rows),
            nulls: Nulls::All(0),
        }
    }

    #[inline(always)]
    fn push(&mut self, v: Option<&T>) {
        let values = &mut self.values;
        let at = (values.len(), values.capacity());
        if self
            .nulls
            .note(v.is_some(), at, |n| values.resize(n, T::default()))
        {
            values.push(v.copied().unwrap_or_default());
        }
    }

    /// The values appended so far, as an array; leaves this empty.
    fn finish(&mut self) -> ArrayRef {
        let values = self.values.take();
        match self.nulls.take() {
            (nulls, 0) => T::array(values, nulls),
            (_, n) => T::nulls(n),
        }
    }

    fn reserve(&mut self) {
        self.values.reserve();
    }
}

/// Where each value of a column ends in its items (a string's in bytes, a list's in list
/// items), after a leading 0: Arrow's offsets, gathered like [`Values`].
pub struct Ends(Buf<i32>);

impl Ends {
    fn with_capacity(rows: usize) -> Self {
        let mut ends = Buf::with_capacity(rows + 1);
        ends.push(0);
        Self(ends)
    }

    /// Values so far.
    fn len(&self) -> usize {
        self.0.len() - 1
    }

    fn capacity(&self) -> usize {
        self.0.capacity()
    }

    /// The next value ends at `end` items.
    #[inline(always)]
    fn push(&mut self, end: usize) {
        let end = i32::try_from(end).expect("under 2^31 bytes or list items a column per file");
        self.0.push(end);
    }

    /// The ends so far; leaves this with a leading 0 only.
    fn take(&mut self) -> Vec<i32> {
        let ends = self.0.take();
        self.0.push(0);
        ends
    }

    fn reserve(&mut self) {
        self.0.reserve();
    }

    /// A list column of the `items`, which these ends delimit; leaves this as [`Self::take`].
    fn list(&mut self, item: DataType, items: ArrayRef) -> ArrayRef {
        let ends = OffsetBuffer::new(self.take().into());
        Arc::new(ListArray::new(list_items(item), ends, items, None))
    }
}

/// Strings gathered like [`Values`]: their bytes end to end and where each ends.
pub struct Strings {
    bytes: Buf<u8>,
    ends: Ends,
    nulls: Nulls,
}

impl Strings {
    fn with_capacity(rows: usize) -> Self {
        Self {
            bytes: Buf::with_capacity(0),
            ends: Ends::with_capacity(rows),
            nulls: Nulls::All(0),
        }
    }

    #[inline(always)]
    fn push(&mut self, v: Option<&impl AsRef<str>>) {
        let ends = &mut self.ends;
        let at = (ends.len(), ends.capacity());
        // No bytes before a first string: the nulls before it all end at 0.
        if !self
            .nulls
            .note(v.is_some(), at, |n| (0..n).for_each(|_| ends.push(0)))
        {
            return;
        }
        if let Some(v) = v {
            self.bytes.extend_from_slice(v.as_ref().as_bytes());
        }
        self.ends.push(self.bytes.len());
    }

    /// The strings appended so far, as an array; leaves this empty.
    fn finish(&mut self) -> ArrayRef {
        let (nulls, unstored) = self.nulls.take();
        let ends: ScalarBuffer<i32> = match unstored {
            0 => self.ends.take().into(),
            // Nulls alone: no string stored, every one ends at 0.
            n => {
                self.ends.take();
                ScalarBuffer::new(zeros((n + 1) * 4), 0, n + 1)
            }
        };
        // SAFETY: the ends start at 0 and never decrease, the last is the length of the
        // bytes, and the bytes are `str`s end to end, so valid UTF-8 between any two ends.
        Arc::new(unsafe {
            StringArray::new_unchecked(
                OffsetBuffer::new_unchecked(ends),
                self.bytes.take().into(),
                nulls,
            )
        })
    }

    fn reserve(&mut self) {
        self.bytes.reserve();
        self.ends.reserve();
    }
}

/// A column of values (`$name`) and one of values or nulls (`$opt`), gathered in `$builder`.
macro_rules! col {
    ($name:ident, $opt:ident, $t:ty, $builder:ty, $dt:expr) => {
        pub struct $name;
        impl Col for $name {
            type Value = $t;
            type Builder = $builder;
            const NULLABLE: bool = false;
            fn data_type() -> DataType {
                $dt
            }
            fn builder(rows: usize) -> $builder {
                <$builder>::with_capacity(rows)
            }
            #[inline]
            fn append(b: &mut $builder, v: &$t) {
                b.push(Some(v));
            }
            fn finish(b: &mut $builder) -> ArrayRef {
                b.finish()
            }
            fn reserve(b: &mut $builder) {
                b.reserve()
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
            fn builder(rows: usize) -> $builder {
                <$builder>::with_capacity(rows)
            }
            #[inline]
            fn append(b: &mut $builder, v: &Option<$t>) {
                b.push(v.as_ref());
            }
            fn finish(b: &mut $builder) -> ArrayRef {
                b.finish()
            }
            fn reserve(b: &mut $builder) {
                b.reserve()
            }
        }
    };
}

col!(I64, OptI64, i64, Values<i64>, DataType::Int64);
col!(I32, OptI32, i32, Values<i32>, DataType::Int32);
col!(Bool, OptBool, bool, Values<bool>, DataType::Boolean);
col!(Str, OptStr, String, Strings, DataType::Utf8);
// Text from a fixed set (a handle's layer and kind), written as strings: no copy per row.
col!(Label, OptLabel, &'static str, Strings, DataType::Utf8);

/// Names shared by many rows (a call's layer, function, op), one allocation per probe: each
/// row keeps an index into the names seen since the last file, and the file's column chunk
/// is written from those indices and names (`names.rs`). Arrow's writer would look every
/// row's name up in a hash table again: with the bytes copied into the column first, about
/// 600 instructions a call for the three columns, of some 4,700.
pub struct Name;
impl Col for Name {
    type Value = Rc<str>;
    type Builder = Names;
    const NULLABLE: bool = false;
    fn data_type() -> DataType {
        DataType::Utf8
    }
    fn batch_type() -> DataType {
        DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8))
    }
    fn builder(rows: usize) -> Names {
        Names {
            keys: Buf::with_capacity(rows),
            names: Vec::new(),
            by_text: HashMap::default(),
            by_ptr: HashMap::default(),
            recent: Recent::default(),
        }
    }
    #[inline]
    fn append(b: &mut Names, v: &Rc<str>) {
        b.push(v);
    }
    fn finish(b: &mut Names) -> ArrayRef {
        b.finish()
    }
    fn reserve(b: &mut Names) {
        b.keys.reserve();
    }
}

/// The rows of a [`Name`] column: an index per row into `names`.
pub struct Names {
    keys: Buf<u32>,
    names: Vec<Rc<str>>,
    by_text: HashMap<Rc<str>, u32>,
    /// The index of a name by the address of its allocation, which is held here so that
    /// the address cannot be reused for another name before the file is written.
    by_ptr: HashMap<*const u8, (Rc<str>, u32)>,
    /// The allocations and indexes of the last few names: a thread's rows come in runs of a
    /// probe, or alternate between a few (a read of one file and a write of another, ranks'
    /// rows interleaved), and a hash lookup per row cost 5% of a record's work in the latter.
    recent: Recent<*const u8, u32, RECENT>,
}

/// Names remembered without a lookup, per column.
const RECENT: usize = 4;

impl Names {
    #[inline(always)]
    fn push(&mut self, v: &Rc<str>) {
        let ptr = Rc::as_ptr(v).cast::<u8>();
        let key = match self.recent.get(ptr) {
            Some(key) => key,
            None => self.key(v, ptr),
        };
        self.keys.push(key);
    }

    fn key(&mut self, v: &Rc<str>, ptr: *const u8) -> u32 {
        let key = match self.by_ptr.get(&ptr) {
            Some((_, key)) => *key,
            None => {
                let next = self.names.len() as u32;
                let key = *self.by_text.entry(Rc::clone(v)).or_insert(next);
                if key == next {
                    self.names.push(Rc::clone(v));
                }
                self.by_ptr.insert(ptr, (Rc::clone(v), key));
                key
            }
        };
        self.recent.put(ptr, key);
        key
    }

    /// The rows so far, as a dictionary array of the names in the order first seen;
    /// leaves this empty.
    fn finish(&mut self) -> ArrayRef {
        let keys = UInt32Array::new(self.keys.take().into(), None);
        let names = StringArray::from_iter_values(self.names.drain(..));
        self.by_text.clear();
        self.by_ptr.clear();
        self.recent.clear();
        Arc::new(DictionaryArray::<UInt32Type>::new(keys, Arc::new(names)))
    }
}

/// The items of a list column.
fn list_items(item: DataType) -> FieldRef {
    Arc::new(Field::new("item", item, true))
}

/// Lists of integers (a call's raw arguments, a selection's dimensions), values of type `V`:
/// their items and offsets in plain vectors, as for [`Values`].
pub struct IntList<V>(std::marker::PhantomData<V>);
pub type ListI64 = IntList<Vec<i64>>;
/// A call's raw arguments, which fit a row without an allocation.
pub type ArgList = IntList<Args>;

/// The integers of a list column's value.
pub trait Ints {
    /// Appends them to `items`.
    fn push_to(&self, items: &mut Vec<i64>);
}

impl Ints for Vec<i64> {
    fn push_to(&self, items: &mut Vec<i64>) {
        items.extend_from_slice(self);
    }
}

impl<V: Ints> Col for IntList<V> {
    type Value = V;
    type Builder = (Buf<i64>, Ends);
    const NULLABLE: bool = false;
    fn data_type() -> DataType {
        DataType::List(list_items(DataType::Int64))
    }
    fn builder(rows: usize) -> Self::Builder {
        (Buf::with_capacity(0), Ends::with_capacity(rows))
    }
    #[inline]
    fn append((items, ends): &mut Self::Builder, v: &V) {
        v.push_to(items);
        ends.push(items.len());
    }
    fn finish((items, ends): &mut Self::Builder) -> ArrayRef {
        let items = Int64Array::new(items.take().into(), None);
        ends.list(DataType::Int64, Arc::new(items))
    }
    fn reserve((items, ends): &mut Self::Builder) {
        items.reserve();
        ends.reserve();
    }
}

/// Up to [`MAX_ARGS`] integers, kept in place: a call's raw arguments (a vector allocated
/// and freed for every call cost some 3% of the pipeline's instructions).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Args {
    len: u8,
    values: [i64; MAX_ARGS],
}

impl AsRef<[i64]> for Args {
    fn as_ref(&self) -> &[i64] {
        &self.values[..usize::from(self.len)]
    }
}

impl Ints for Args {
    /// All [`MAX_ARGS`] slots, then cut: a copy of a constant size is a few stores, one of
    /// `len` values a call of memcpy (one per call row).
    fn push_to(&self, items: &mut Vec<i64>) {
        let end = items.len() + usize::from(self.len);
        items.extend_from_slice(&self.values);
        items.truncate(end);
    }
}

impl std::ops::Deref for Args {
    type Target = [i64];
    fn deref(&self) -> &[i64] {
        self.as_ref()
    }
}

/// The first [`MAX_ARGS`] values (a record carries no more).
impl FromIterator<i64> for Args {
    fn from_iter<I: IntoIterator<Item = i64>>(iter: I) -> Self {
        let mut a = Self::default();
        for (slot, v) in a.values.iter_mut().zip(iter) {
            *slot = v;
            a.len += 1;
        }
        a
    }
}

/// Lists of strings (a call's string arguments), gathered like [`IntList`]: mostly empty,
/// so a row costs one offset (Arrow's list builder took some 50 instructions a row).
pub struct ListStr;
impl Col for ListStr {
    type Value = Vec<String>;
    type Builder = (Strings, Ends);
    const NULLABLE: bool = false;
    fn data_type() -> DataType {
        DataType::List(list_items(DataType::Utf8))
    }
    fn builder(rows: usize) -> Self::Builder {
        (Strings::with_capacity(0), Ends::with_capacity(rows))
    }
    #[inline]
    fn append((items, ends): &mut Self::Builder, v: &Vec<String>) {
        for s in v {
            items.push(Some(s));
        }
        ends.push(items.ends.len());
    }
    fn finish((items, ends): &mut Self::Builder) -> ArrayRef {
        let items = items.finish();
        ends.list(DataType::Utf8, items)
    }
    fn reserve((items, ends): &mut Self::Builder) {
        items.reserve();
        ends.reserve();
    }
}

/// Rows buffered for one table.
pub trait Table {
    type Row;
    const NAME: &'static str;
    fn schema() -> SchemaRef;
    /// Empty, with room for `rows` rows.
    fn with_capacity(rows: usize) -> Self;
    fn push(&mut self, row: &Self::Row);
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn finish(&mut self) -> RecordBatch;
    /// Makes room in every column for as many rows as the last [`Self::finish`] took.
    fn reserve(&mut self);
    /// The group a row belongs to: each file holds a group's rows together, in the order
    /// they came, groups in key order (a table without a group key: one group, 0).
    fn group(row: &Self::Row) -> i32;
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
        pub struct $table {
            rows: usize,
            $($col: <$crate::sink::$kind as $crate::sink::Col>::Builder),+
        }
        impl $crate::sink::Table for $table {
            type Row = $row;
            const NAME: &'static str = $name;
            fn schema() -> arrow::datatypes::SchemaRef {
                std::sync::Arc::new(arrow::datatypes::Schema::new(vec![$(
                    arrow::datatypes::Field::new(
                        stringify!($col),
                        <$crate::sink::$kind as $crate::sink::Col>::data_type(),
                        <$crate::sink::$kind as $crate::sink::Col>::NULLABLE,
                    )
                ),+]))
            }
            fn with_capacity(rows: usize) -> Self {
                Self {
                    rows: 0,
                    $($col: <$crate::sink::$kind as $crate::sink::Col>::builder(rows)),+
                }
            }
            fn push(&mut self, row: &$row) {
                $(<$crate::sink::$kind as $crate::sink::Col>::append(&mut self.$col, &row.$col);)+
                self.rows += 1;
            }
            fn len(&self) -> usize {
                self.rows
            }
            fn finish(&mut self) -> arrow::record_batch::RecordBatch {
                self.rows = 0;
                let cols: Vec<arrow::array::ArrayRef> =
                    vec![$(<$crate::sink::$kind as $crate::sink::Col>::finish(&mut self.$col)),+];
                // The arrays' own types: the file's but for names, given as dictionaries.
                // Made once: a file has a batch for each thread, and a loop of short
                // processes brings hundreds, each of whose schema took 2 allocations a column.
                static BATCH_SCHEMA: std::sync::OnceLock<arrow::datatypes::SchemaRef> =
                    std::sync::OnceLock::new();
                let schema = BATCH_SCHEMA.get_or_init(|| {
                    std::sync::Arc::new(arrow::datatypes::Schema::new(vec![$(
                        arrow::datatypes::Field::new(
                            stringify!($col),
                            <$crate::sink::$kind as $crate::sink::Col>::batch_type(),
                            <$crate::sink::$kind as $crate::sink::Col>::NULLABLE,
                        )
                    ),+]))
                });
                arrow::record_batch::RecordBatch::try_new(schema.clone(), cols)
                    .expect("builders match the schema they were declared with")
            }
            fn reserve(&mut self) {
                $(<$crate::sink::$kind as $crate::sink::Col>::reserve(&mut self.$col);)+
            }
            #[allow(unused_variables)]
            fn group(row: &$row) -> i32 {
                [$(row.$key)?].first().copied().unwrap_or(0)
            }
        }
    };
}
pub(crate) use table;

/// A new group's builders start with room for as many rows as the typical (median) group
/// of the last file had, within these bounds. Short processes each bring a thread of a few
/// hundred rows: grown from 32, every column of each was copied three times (2.5% of
/// strata's instructions over a loop of `cat`s). The upper bound keeps a burst of new
/// threads after an interval of busy ones from reserving much that they never fill.
const GROUP_ROWS: (usize, usize) = (32, 256);

/// Writes one table's rows as numbered Parquet files.
pub struct TableWriter<T: Table> {
    /// Rows since the last file, one set of builders per group (a thread of the calls
    /// table): a file then writes each group's arrays as they are, with no reordering copy.
    /// A group that had rows in the last file keeps its builders, to make room for as many.
    groups: Vec<(i32, T)>,
    /// Where each group is in `groups`.
    index: HashMap<i32, usize>,
    /// The group of the last row (rows come in runs of a thread).
    last: usize,
    /// Room a new group's builders start with (see [`GROUP_ROWS`]).
    new_group_rows: usize,
    buffered: usize,
    dir: PathBuf,
    prefix: String,
    seq: u32,
    mode: u32,
    /// The newest file, while later flushes add their rows to it.
    segment: Segment,
    pub rows_written: u64,
    pub bytes_written: u64,
}

impl<T: Table> TableWriter<T> {
    /// Files go to `root/<table>/host=<host>/part-<run_id>-*.parquet` with permissions `mode`.
    pub fn new((root, host, run_id, mode): (&Path, &str, &str, u32)) -> anyhow::Result<Self> {
        let dir = root.join(T::NAME).join(format!("host={host}"));
        create_dirs(&dir, mode)?;
        Ok(Self {
            groups: Vec::new(),
            index: HashMap::default(),
            last: 0,
            new_group_rows: GROUP_ROWS.0,
            buffered: 0,
            dir,
            prefix: format!("part-{run_id}"),
            seq: 0,
            mode,
            segment: Segment::default(),
            rows_written: 0,
            bytes_written: 0,
        })
    }

    /// Appends a row, given or lent (its values are copied into the columns).
    pub fn push(&mut self, row: impl std::borrow::Borrow<T::Row>) {
        let row = row.borrow();
        let key = T::group(row);
        if self.groups.get(self.last).is_none_or(|(k, _)| *k != key) {
            self.last = match self.index.get(&key) {
                Some(i) => *i,
                None => {
                    self.groups
                        .push((key, T::with_capacity(self.new_group_rows)));
                    self.index.insert(key, self.groups.len() - 1);
                    self.groups.len() - 1
                }
            };
        }
        let group = &mut self.groups[self.last].1;
        if group.is_empty() {
            group.reserve();
        }
        group.push(row);
        self.buffered += 1;
    }

    /// The directory its files go to (`root/<table>/host=<host>`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Files written so far (a file written again counts once).
    pub fn files_written(&self) -> u32 {
        self.seq
    }

    /// Rows waiting for the next file.
    pub fn buffered(&self) -> usize {
        self.buffered
    }

    /// Writes the buffered rows (nothing when empty): into the newest file, written again,
    /// while it takes more (see `segment`), else as a new one.
    pub fn flush(&mut self) -> anyhow::Result<()> {
        if self.buffered == 0 {
            self.segment.expire();
            return Ok(());
        }
        if !self.segment.takes_more() {
            self.seq += 1;
        }
        let name = format!("{}-{:06}.parquet", self.prefix, self.seq);
        let n = self.buffered;
        let batches = self.take_batches();
        let batches = self.segment.add(batches);
        let bytes = write_file(&self.dir, &name, T::schema(), &batches, self.mode)?;
        self.rows_written += n as u64;
        self.bytes_written = self.bytes_written - self.segment.bytes + bytes;
        self.segment.written(bytes);
        Ok(())
    }

    /// Writes the buffered rows alone as `name`, replacing a file of that name atomically.
    pub fn write_named(&mut self, name: &str) -> anyhow::Result<()> {
        let n = self.buffered as u64;
        let batches: Vec<RecordBatch> = (self.take_batches().into_iter()).map(|(_, b)| b).collect();
        let bytes = write_file(&self.dir, name, T::schema(), &batches, self.mode)?;
        self.rows_written += n;
        self.bytes_written += bytes;
        Ok(())
    }

    /// The buffered rows' arrays by group, in key order; the builders start again.
    fn take_batches(&mut self) -> Vec<(i32, RecordBatch)> {
        self.buffered = 0;
        // A group without rows since the last file (a thread that has exited) is let go.
        self.groups.retain(|(_, t)| !t.is_empty());
        self.new_group_rows = typical_rows(self.groups.iter().map(|(_, t)| t.len()));
        self.groups.sort_unstable_by_key(|(k, _)| *k);
        self.index = (self.groups.iter().enumerate())
            .map(|(i, (k, _))| (*k, i))
            .collect();
        self.last = 0;
        (self.groups.iter_mut())
            .map(|(k, t)| (*k, t.finish()))
            .collect()
    }
}

/// The median of groups' `rows`, within [`GROUP_ROWS`].
fn typical_rows(rows: impl Iterator<Item = usize>) -> usize {
    let mut rows: Vec<usize> = rows.collect();
    if rows.is_empty() {
        return GROUP_ROWS.0;
    }
    let mid = rows.len() / 2;
    let (_, median, _) = rows.select_nth_unstable(mid);
    (*median).clamp(GROUP_ROWS.0, GROUP_ROWS.1)
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

/// Writes `batches` in order as one Parquet file.
fn write_file(
    dir: &Path,
    name: &str,
    schema: SchemaRef,
    batches: &[RecordBatch],
    mode: u32,
) -> anyhow::Result<u64> {
    let tmp = dir.join(format!(".{name}.tmp"));
    let path = dir.join(name);
    let file = crate::inprogress::create(&tmp, mode)
        .with_context(|| format!("cannot create {}", tmp.display()))?;
    let written = encode::write(file, schema, batches);
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
    use arrow::{
        array::{Array as _, AsArray as _},
        datatypes::{Int32Type, Int64Type},
    };
    use parquet::basic::Encoding;

    use super::*;

    table!(Threaded, ThreadedRow, "threaded", grouped_by [tid], {
        tid: I32,
        seq: I64,
        name: OptStr,
        args: ListI64,
        tags: ListStr,
    });
    table!(Plain, PlainRow, "plain", { tid: I32, seq: I64 });
    table!(Sparse, SparseRow, "sparse", {
        seq: I64,
        a: OptI64,
        b: OptI32,
        c: OptBool,
        s: OptStr,
    });

    /// A name is one entry of the dictionary however many allocations hold it, and each
    /// file's dictionary starts anew.
    #[test]
    fn names_are_kept_once_per_file_whatever_their_allocation() {
        let write: Rc<str> = Rc::from("write");
        let mut b = Name::builder(4);
        for v in [
            &write,
            &Rc::from("read"),
            &write,
            &Rc::from("write"),
            &Rc::from("read"),
        ] {
            Name::append(&mut b, v);
        }
        let dictionary = |a: ArrayRef| {
            let d = a.as_dictionary::<UInt32Type>().clone();
            let names = d.values().as_string::<i32>().clone();
            let names: Vec<String> = names.iter().map(|n| n.unwrap().to_string()).collect();
            (names, d.keys().values().to_vec())
        };
        let (names, keys) = dictionary(Name::finish(&mut b));
        assert_eq!(names, ["write", "read"]);
        assert_eq!(keys, [0, 1, 0, 0, 1]);
        Name::append(&mut b, &Rc::from("open"));
        Name::append(&mut b, &write);
        let (names, keys) = dictionary(Name::finish(&mut b));
        assert_eq!(names, ["open", "write"]);
        assert_eq!(keys, [0, 1]);
    }

    /// More names in turn than are remembered without a lookup: each still has its own key.
    #[test]
    fn names_taking_turns_keep_their_keys() {
        let names: Vec<Rc<str>> = (0..RECENT + 2).map(|i| Rc::from(format!("f{i}"))).collect();
        let mut b = Name::builder(4);
        for _ in 0..3 {
            for n in names.iter().rev() {
                Name::append(&mut b, n);
            }
        }
        let a = Name::finish(&mut b);
        let d = a.as_dictionary::<UInt32Type>();
        let text = d.values().as_string::<i32>();
        let rows: Vec<&str> = d
            .keys()
            .values()
            .iter()
            .map(|k| text.value(*k as usize))
            .collect();
        let want: Vec<&str> = (0..3)
            .flat_map(|_| names.iter().rev().map(|n| &**n))
            .collect();
        assert_eq!(rows, want);
        assert_eq!(text.len(), RECENT + 2);
    }

    /// (tid, seq) of every row, file by file in name order.
    fn read_back(root: &Path, table: &str) -> Vec<(i32, i64)> {
        let mut out = Vec::new();
        for b in read_table(root, table).unwrap() {
            let tids = b.column_by_name("tid").unwrap().as_primitive::<Int32Type>();
            let seqs = b.column_by_name("seq").unwrap().as_primitive::<Int64Type>();
            out.extend((0..b.num_rows()).map(|i| (tids.value(i), seqs.value(i))));
        }
        out
    }

    /// Arguments keep the first MAX_ARGS values given, in order.
    #[test]
    fn args_hold_what_a_record_carries() {
        let a: Args = [3, -1, 7].into_iter().collect();
        assert_eq!(&*a, &[3, -1, 7]);
        let all: Args = (0..10).collect();
        assert_eq!(all.as_ref(), (0..MAX_ARGS as i64).collect::<Vec<_>>());
        assert!(Args::default().is_empty());
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("strata-sink-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_file_holds_each_threads_rows_together_in_their_order() {
        let root = scratch("grouped");
        let mut w = TableWriter::<Threaded>::new((&root, "h", "r", 0o600)).unwrap();
        // The first interval fills a file.
        w.segment.limit = 6;
        let tids = [7, 3, 7, 9, 3, 7];
        for (seq, tid) in tids.iter().enumerate() {
            w.push(ThreadedRow {
                tid: *tid,
                seq: seq as i64,
                name: (seq % 2 == 0).then(|| format!("n{seq}")),
                args: vec![seq as i64; seq],
                ..Default::default()
            });
        }
        assert_eq!(w.buffered(), 6);
        w.flush().unwrap();
        assert_eq!(w.buffered(), 0);
        // A second interval: its own file, grouped again.
        for (seq, tid) in [(6, 9), (7, 3), (8, 9)] {
            w.push(ThreadedRow {
                tid,
                seq,
                ..Default::default()
            });
        }
        w.flush().unwrap();
        w.flush().unwrap(); // nothing buffered: no file
        assert_eq!(w.rows_written, 9);
        let want = [
            (3, 1),
            (3, 4),
            (7, 0),
            (7, 2),
            (7, 5),
            (9, 3),
            (3, 7),
            (9, 6),
            (9, 8),
        ];
        assert_eq!(read_back(&root, "threaded"), want);
        // Values other than the key move with their row.
        let batches = read_table(&root, "threaded").unwrap();
        let b = &batches[0];
        let names = b.column_by_name("name").unwrap().as_string::<i32>();
        let args = b.column_by_name("args").unwrap().as_list::<i32>();
        for (i, (_, seq)) in want.iter().take(b.num_rows()).enumerate() {
            let seq = *seq;
            let name = names.is_valid(i).then(|| names.value(i).to_string());
            assert_eq!(name, (seq % 2 == 0).then(|| format!("n{seq}")), "row {i}");
            let a = args.value(i);
            let a: Vec<i64> = a.as_primitive::<Int64Type>().values().to_vec();
            assert_eq!(a, vec![seq; seq as usize], "row {i}");
        }
        let files = fs::read_dir(root.join("threaded/host=h")).unwrap().count();
        assert_eq!(files, 2);
        fs::remove_dir_all(&root).unwrap();
    }

    /// Flushes of few rows add them to the newest file, rewritten whole, until it holds the
    /// limit; each thread's rows stay together in the order they came, across flushes.
    #[test]
    fn small_flushes_grow_the_newest_file_until_it_is_full() {
        let root = scratch("segment");
        let mut w = TableWriter::<Threaded>::new((&root, "h", "r", 0o600)).unwrap();
        w.segment.limit = 8;
        let dir = root.join("threaded/host=h");
        // (rows of the flush, visible files after it)
        let flushes: [(&[(i32, i64)], usize); 4] = [
            (&[(7, 0), (3, 1), (7, 2)], 1),
            (&[(3, 3), (9, 4), (7, 5)], 1),
            // The file reaches 10 rows: it is closed with them.
            (&[(9, 6), (3, 7), (7, 8), (3, 9)], 1),
            (&[(7, 10), (1, 11)], 2),
        ];
        for (rows, files) in flushes {
            for (tid, seq) in rows {
                w.push(ThreadedRow {
                    tid: *tid,
                    seq: *seq,
                    ..Default::default()
                });
            }
            w.flush().unwrap();
            let names: Vec<PathBuf> = fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            assert_eq!(names.len(), files, "{names:?}");
            let on_disk: u64 = names.iter().map(|p| fs::metadata(p).unwrap().len()).sum();
            assert_eq!(w.bytes_written, on_disk);
        }
        assert_eq!(w.rows_written, 12);
        let want = [
            (3, 1),
            (3, 3),
            (3, 7),
            (3, 9),
            (7, 0),
            (7, 2),
            (7, 5),
            (7, 8),
            (9, 4),
            (9, 6),
            (1, 11),
            (7, 10),
        ];
        assert_eq!(read_back(&root, "threaded"), want);
        // One row group per file: the rewrite encodes the file's rows again, as one.
        for f in fs::read_dir(&dir).unwrap() {
            let file = fs::File::open(f.unwrap().path()).unwrap();
            let meta = parquet::file::reader::SerializedFileReader::new(file).unwrap();
            use parquet::file::reader::FileReader as _;
            assert_eq!(meta.metadata().num_row_groups(), 1);
        }
        fs::remove_dir_all(&root).unwrap();
    }

    /// A file older than the age limit takes no more rows, and lets its rows go at the next
    /// flush, with rows or without.
    #[test]
    fn an_old_file_takes_no_more_rows() {
        let root = scratch("segment-age");
        let mut w = TableWriter::<Threaded>::new((&root, "h", "r", 0o600)).unwrap();
        w.segment.age = std::time::Duration::from_millis(300);
        let mut flush = |rows: &[i64]| {
            for seq in rows {
                w.push(ThreadedRow {
                    tid: 1,
                    seq: *seq,
                    ..Default::default()
                });
            }
            w.flush().unwrap();
            (w.segment.rows(), w.seq)
        };
        assert_eq!(flush(&[0, 1]), (2, 1));
        assert_eq!(flush(&[2]), (3, 1));
        std::thread::sleep(std::time::Duration::from_millis(350));
        // No rows: the old file's are let go.
        assert_eq!(flush(&[]), (0, 1));
        assert_eq!(flush(&[3]), (1, 2));
        assert_eq!(flush(&[4]), (2, 2));
        let files = fs::read_dir(root.join("threaded/host=h")).unwrap().count();
        assert_eq!(files, 2);
        let seqs: Vec<i64> = read_back(&root, "threaded").iter().map(|r| r.1).collect();
        assert_eq!(seqs, [0, 1, 2, 3, 4]);
        fs::remove_dir_all(&root).unwrap();
    }

    /// Flushes that come faster than a file's rewrites are paid for (full buffers under load)
    /// start new files; once the budget has refilled, a file takes rows again.
    #[test]
    fn rewrites_beyond_the_budget_start_a_new_file() {
        let root = scratch("segment-budget");
        let mut w = TableWriter::<Threaded>::new((&root, "h", "r", 0o600)).unwrap();
        // 10 rows a second re-encoded.
        w.segment.rate = 10.0;
        let mut seq = 0;
        let mut flush = |w: &mut TableWriter<Threaded>| {
            for _ in 0..3 {
                w.push(ThreadedRow {
                    tid: 1,
                    seq,
                    ..Default::default()
                });
                seq += 1;
            }
            w.flush().unwrap();
            (w.segment.rows(), w.seq)
        };
        assert_eq!(flush(&mut w), (3, 1));
        // Re-encodes 3 rows, then 6, then 9: 18 of the 20 two seconds give.
        assert_eq!(flush(&mut w), (6, 1));
        assert_eq!(flush(&mut w), (9, 1));
        assert_eq!(flush(&mut w), (12, 1));
        // 12 more would be over the budget.
        assert_eq!(flush(&mut w), (3, 2));
        std::thread::sleep(std::time::Duration::from_millis(1100));
        assert_eq!(flush(&mut w), (6, 2));
        let files = fs::read_dir(root.join("threaded/host=h")).unwrap().count();
        assert_eq!(files, 2);
        let seqs: Vec<i64> = read_back(&root, "threaded").iter().map(|r| r.1).collect();
        assert_eq!(seqs, (0..18).collect::<Vec<_>>());
        fs::remove_dir_all(&root).unwrap();
    }

    /// A thread's builders serve file after file (strings and lists start again at 0 in
    /// each); a thread without rows for a whole interval has them let go.
    #[test]
    fn builders_kept_from_file_to_file_start_each_file_afresh() {
        let root = scratch("kept");
        let mut w = TableWriter::<Threaded>::new((&root, "h", "r", 0o600)).unwrap();
        w.segment.limit = 1;
        let row = |tid: i32, seq: i64| ThreadedRow {
            tid,
            seq,
            name: (seq % 3 != 0).then(|| format!("name{seq}")),
            args: vec![seq; (seq % 4) as usize],
            tags: (0..seq % 3).map(|i| format!("t{seq}.{i}")).collect(),
        };
        let intervals: [&[(i32, i64)]; 3] = [
            &[(7, 0), (3, 1), (7, 2), (3, 3)],
            &[(3, 4), (3, 5), (9, 6)],
            &[(7, 7), (1, 8), (9, 9), (7, 10), (9, 11)],
        ];
        for rows in intervals {
            for (tid, seq) in rows {
                w.push(row(*tid, *seq));
            }
            w.flush().unwrap();
        }
        // Thread 3 had no rows in the last interval.
        let mut kept: Vec<i32> = w.groups.iter().map(|(k, _)| *k).collect();
        kept.sort();
        assert_eq!(kept, [1, 7, 9]);
        let mut want = Vec::new();
        for rows in intervals {
            let mut rows = rows.to_vec();
            rows.sort_by_key(|(tid, _)| *tid);
            want.extend(rows.into_iter().map(|(tid, seq)| row(tid, seq)));
        }
        let mut got = Vec::new();
        for b in read_table(&root, "threaded").unwrap() {
            let tids = b.column_by_name("tid").unwrap().as_primitive::<Int32Type>();
            let seqs = b.column_by_name("seq").unwrap().as_primitive::<Int64Type>();
            let names = b.column_by_name("name").unwrap().as_string::<i32>();
            let args = b.column_by_name("args").unwrap().as_list::<i32>();
            let tags = b.column_by_name("tags").unwrap().as_list::<i32>();
            for i in 0..b.num_rows() {
                let t = tags.value(i);
                got.push(ThreadedRow {
                    tid: tids.value(i),
                    seq: seqs.value(i),
                    name: names.is_valid(i).then(|| names.value(i).to_string()),
                    args: args.value(i).as_primitive::<Int64Type>().values().to_vec(),
                    tags: t
                        .as_string::<i32>()
                        .iter()
                        .map(|s| s.unwrap().into())
                        .collect(),
                });
            }
        }
        let show = |rows: &[ThreadedRow]| format!("{rows:?}");
        assert_eq!(show(&got), show(&want));
        fs::remove_dir_all(&root).unwrap();
    }

    /// Columns of nulls only, of values only, of nulls then values, of values then nulls
    /// and of both in turn read back as they were pushed, file after file.
    #[test]
    fn nulls_and_values_in_any_order_read_back_as_pushed() {
        let root = scratch("sparse");
        let mut w = TableWriter::<Sparse>::new((&root, "h", "r", 0o600)).unwrap();
        // Per file and column, from its pattern: whether row `i` of `n` has a value.
        let patterns: [fn(usize, usize) -> bool; 5] = [
            |_, _| false,
            |_, _| true,
            |i, n| i >= n / 2,
            |i, n| i < n / 3,
            |i, _| i % 3 == 1,
        ];
        let mut want = Vec::new();
        for file in 0..6usize {
            let n = [1, 40, 7, 2, 300, 5][file];
            for i in 0..n {
                let has = |col: usize| patterns[(file + col) % patterns.len()](i, n);
                let seq = (file * 1000 + i) as i64;
                let row = SparseRow {
                    seq,
                    a: has(0).then_some(-seq),
                    b: has(1).then_some(seq as i32 * 3),
                    c: has(2).then_some(i % 2 == 0),
                    s: has(3).then(|| format!("s{seq}").repeat(i % 3)),
                };
                w.push(&row);
                want.push(row);
            }
            w.flush().unwrap();
        }
        let mut got = Vec::new();
        for batch in read_table(&root, "sparse").unwrap() {
            let col = |name| batch.column_by_name(name).unwrap();
            let (seq, a) = (col("seq").as_primitive::<Int64Type>(), col("a"));
            let (b, c, s) = (col("b"), col("c"), col("s").as_string::<i32>());
            let (a, b) = (a.as_primitive::<Int64Type>(), b.as_primitive::<Int32Type>());
            let c = c.as_boolean();
            for i in 0..batch.num_rows() {
                got.push(SparseRow {
                    seq: seq.value(i),
                    a: a.is_valid(i).then(|| a.value(i)),
                    b: b.is_valid(i).then(|| b.value(i)),
                    c: c.is_valid(i).then(|| c.value(i)),
                    s: s.is_valid(i).then(|| s.value(i).to_string()),
                });
            }
        }
        got.sort_by_key(|r| r.seq);
        assert_eq!(format!("{got:?}"), format!("{want:?}"));
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_table_without_a_group_keeps_the_rows_as_they_came() {
        let root = scratch("plain");
        let mut w = TableWriter::<Plain>::new((&root, "h", "r", 0o600)).unwrap();
        let rows = [(7, 0), (3, 1), (7, 2), (9, 3)];
        for (tid, seq) in rows {
            w.push(PlainRow { tid, seq });
        }
        w.flush().unwrap();
        assert_eq!(read_back(&root, "plain"), rows);
        fs::remove_dir_all(&root).unwrap();
    }

    table!(Sizes, SizesRow, "sizes", { ret: I64, bytes_result: OptI64 });

    /// The encodings of the `ret` column of the one file of the `sizes` table.
    fn ret_encodings(root: &Path) -> Vec<Encoding> {
        use parquet::file::reader::{FileReader as _, SerializedFileReader};
        let file = fs::read_dir(root.join("sizes/host=h"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let reader = SerializedFileReader::new(fs::File::open(&file).unwrap()).unwrap();
        reader
            .metadata()
            .row_group(0)
            .column(0)
            .encodings()
            .collect()
    }

    /// Sizes of regular I/O stay in the dictionary; random ones outgrow it and go on as
    /// deltas, and every value reads back.
    #[test]
    fn size_columns_go_from_dictionary_to_deltas_when_their_values_scatter() {
        let root = scratch("sizes");
        let mut w = TableWriter::<Sizes>::new((&root, "h", "r", 0o600)).unwrap();
        // 5,000 rows of 3 sizes, then 15,000 of pseudo-random sizes up to 64 KiB.
        let mut x = 88_172_645_463_325_252u64;
        let want: Vec<i64> = (0..20_000)
            .map(|i| match i {
                0..5_000 => [4096, 65536, -1][i % 3],
                _ => {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    1 + (x & 0xffff) as i64
                }
            })
            .collect();
        for &v in &want {
            w.push(SizesRow {
                ret: v,
                bytes_result: (v >= 0).then_some(v),
            });
        }
        w.flush().unwrap();
        let mut got = Vec::new();
        for b in read_table(&root, "sizes").unwrap() {
            let ret = b.column_by_name("ret").unwrap().as_primitive::<Int64Type>();
            let bytes = b
                .column_by_name("bytes_result")
                .unwrap()
                .as_primitive::<Int64Type>();
            for i in 0..b.num_rows() {
                assert_eq!(bytes.is_valid(i), ret.value(i) >= 0, "row {}", got.len());
                if bytes.is_valid(i) {
                    assert_eq!(bytes.value(i), ret.value(i));
                }
                got.push(ret.value(i));
            }
        }
        assert_eq!(got, want);
        let ret = ret_encodings(&root);
        assert!(
            ret.contains(&Encoding::RLE_DICTIONARY) && ret.contains(&Encoding::DELTA_BINARY_PACKED),
            "{ret:?}"
        );
        fs::remove_dir_all(&root).unwrap();

        // Regular sizes alone never leave the dictionary.
        let mut w = TableWriter::<Sizes>::new((&root, "h", "r", 0o600)).unwrap();
        for &v in &want[..5_000] {
            w.push(SizesRow {
                ret: v,
                bytes_result: None,
            });
        }
        w.flush().unwrap();
        let ret = ret_encodings(&root);
        assert!(!ret.contains(&Encoding::DELTA_BINARY_PACKED), "{ret:?}");
        fs::remove_dir_all(&root).unwrap();
    }
}
