//! A column chunk whose pages are encoded here rather than by Parquet's column writer
//! (`names.rs`, `ints.rs`, `lists.rs`): each page compressed as the file's other columns
//! are, written by Parquet's own page writer, and the chunk's metadata and offset index
//! built as its column writer builds them.
use parquet::{
    basic::{Compression, Encoding, EncodingMask},
    column::{
        page::{CompressedPage, Page, PageWriteSpec, PageWriter as _},
        writer::ColumnCloseResult,
    },
    errors::{ParquetError, Result},
    file::{
        metadata::{ColumnChunkMetaData, LevelHistogram, OffsetIndexBuilder, PageEncodingStats},
        statistics::Statistics,
        writer::{SerializedPageWriter, SerializedRowGroupWriter, TrackedWrite},
    },
    schema::types::ColumnDescPtr,
};

/// Compresses pages as Parquet's zstd codec does (one frame each, at the file's level), so
/// that they are the bytes its column writer would write.
pub(super) struct Zstd(zstd::bulk::Compressor<'static>);

impl Zstd {
    pub(super) fn new(compression: Compression) -> Result<Self> {
        match compression {
            Compression::ZSTD(level) => Ok(Self(zstd::bulk::Compressor::new(
                level.compression_level(),
            )?)),
            other => Err(ParquetError::General(format!(
                "pages encoded by strata are zstd-compressed; the file asks for {other}"
            ))),
        }
    }

    fn compress(&mut self, raw: &[u8]) -> Result<Vec<u8>> {
        Ok(self.0.compress(raw)?)
    }
}

/// The pages of one column chunk, as they are written.
pub(super) struct Chunk<'z> {
    descr: ColumnDescPtr,
    zstd: &'z mut Zstd,
    compression: Compression,
    sink: TrackedWrite<Vec<u8>>,
    offsets: OffsetIndexBuilder,
    encodings: Vec<Encoding>,
    page_stats: Vec<PageEncodingStats>,
    dictionary_at: Option<u64>,
    data_at: Option<u64>,
    values: u64,
    rows: u64,
    compressed: u64,
    uncompressed: u64,
}

impl<'z> Chunk<'z> {
    pub(super) fn new(descr: ColumnDescPtr, compression: Compression, zstd: &'z mut Zstd) -> Self {
        Self {
            descr,
            zstd,
            compression,
            sink: TrackedWrite::new(Vec::new()),
            offsets: OffsetIndexBuilder::new(),
            // Levels are RLE whether a page has any or not, as Parquet's writer lists them.
            encodings: vec![Encoding::RLE],
            page_stats: Vec::new(),
            dictionary_at: None,
            data_at: None,
            values: 0,
            rows: 0,
            compressed: 0,
            uncompressed: 0,
        }
    }

    pub(super) fn descr(&self) -> &ColumnDescPtr {
        &self.descr
    }

    /// Writes the dictionary page of `entries` values, `raw` before compression.
    pub(super) fn dictionary_page(&mut self, raw: &[u8], entries: usize) -> Result<()> {
        let page = Page::DictionaryPage {
            buf: self.zstd.compress(raw)?.into(),
            num_values: entries as u32,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        };
        let spec = self.write(CompressedPage::new(page, raw.len()))?;
        self.dictionary_at = Some(spec.offset);
        Ok(())
    }

    /// Writes a data page (version 1) of `rows` rows and `levels` levels (as many as the
    /// rows for a flat column; one per item or empty list for a list column); `raw`: its
    /// levels and values before compression.
    pub(super) fn data_page(
        &mut self,
        raw: &[u8],
        encoding: Encoding,
        rows: usize,
        levels: usize,
    ) -> Result<()> {
        let page = Page::DataPage {
            buf: self.zstd.compress(raw)?.into(),
            num_values: levels as u32,
            encoding,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        };
        let spec = self.write(CompressedPage::new(page, raw.len()))?;
        self.data_at.get_or_insert(spec.offset);
        self.values += u64::from(spec.num_values);
        self.rows += rows as u64;
        self.offsets.append_row_count(rows as i64);
        self.offsets.append_unencoded_byte_array_data_bytes(None);
        self.offsets
            .append_offset_and_size(spec.offset as i64, spec.compressed_size as i32);
        Ok(())
    }

    fn write(&mut self, page: CompressedPage) -> Result<PageWriteSpec> {
        let (page_type, encoding) = (page.page_type(), page.encoding());
        if !self.encodings.contains(&encoding) {
            self.encodings.push(encoding);
        }
        match self.page_stats.last_mut() {
            Some(s) if s.page_type == page_type && s.encoding == encoding => s.count += 1,
            _ => self.page_stats.push(PageEncodingStats {
                page_type,
                encoding,
                count: 1,
            }),
        }
        let spec = SerializedPageWriter::new(&mut self.sink).write_page(page)?;
        self.compressed += spec.compressed_size as u64;
        self.uncompressed += spec.uncompressed_size as u64;
        Ok(spec)
    }

    /// Appends the chunk to `group`, with the chunk's `statistics` and, when they are kept,
    /// how many of its rows are null and how many not (`levels`).
    pub(super) fn finish<W: std::io::Write + Send>(
        self,
        group: &mut SerializedRowGroupWriter<'_, W>,
        statistics: Option<Statistics>,
        levels: Option<LevelHistogram>,
    ) -> Result<()> {
        let mut metadata = ColumnChunkMetaData::builder(self.descr)
            .set_compression(self.compression)
            .set_encodings_mask(EncodingMask::new_from_encodings(self.encodings.iter()))
            .set_page_encoding_stats(self.page_stats)
            .set_total_compressed_size(self.compressed as i64)
            .set_total_uncompressed_size(self.uncompressed as i64)
            .set_num_values(self.values as i64)
            .set_data_page_offset(self.data_at.unwrap_or(0) as i64)
            .set_dictionary_page_offset(self.dictionary_at.map(|o| o as i64));
        if let Some(s) = statistics {
            metadata = metadata
                .set_statistics(s)
                .set_definition_level_histogram(levels);
        }
        let bytes: bytes::Bytes = self.sink.into_inner()?.into();
        let close = ColumnCloseResult {
            bytes_written: bytes.len() as u64,
            rows_written: self.rows,
            metadata: metadata.build()?,
            bloom_filter: None,
            column_index: None,
            offset_index: Some(self.offsets.build()),
        };
        group.append_column(&bytes, close)
    }
}

/// `bytes` after their length in 4 bytes (little-endian): how Parquet frames a version 1
/// page's levels and a PLAIN string.
pub(super) fn sized(bytes: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// An unsigned integer in LEB128 (Parquet's ULEB128 / VLQ), as run headers and the
/// DELTA_BINARY_PACKED header are.
pub(super) fn uleb128(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}
