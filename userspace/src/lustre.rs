//! Lustre file layouts, parsed from the `lustre.lov` extended attribute of an open file.
//!
//! The attribute holds a `lov_user_md` in little-endian: a plain layout (V1, or V3 with a
//! pool name), or a composite layout (PFL, FLR) whose components each point at a plain layout
//! blob inside the same buffer. The byte layouts are those of Lustre's `lustre_user.h`:
//!
//! ```text
//! lov_user_md_v1   magic u32 | pattern u32 | oi [16] | stripe_size u32 | stripe_count u16 |
//!                  layout_gen u16 | objects[]                      (32 bytes + 24 per object)
//! lov_user_md_v3   as v1, then pool_name [16] before objects[]      (48 bytes + 24 per object)
//! object           oi [16] | ost_gen u32 | ost_idx u32                                (24)
//! lov_comp_md_v1   magic u32 | size u32 | layout_gen u32 | flags u16 | entry_count u16 |
//!                  mirror_count u16 | ec_count u8 | pad [13]        (32 bytes + 48 per entry)
//! entry            id u32 | flags u32 | extent start u64, end u64 | offset u32 | size u32 |
//!                  layout_gen u32 | timestamp u64 | pad [4]                            (48)
//! ```
//!
//! Input is untrusted: every read is bounds-checked and a bad blob is an error, never a panic.
use serde::Serialize;

pub const XATTR: &str = "lustre.lov";

pub const MAGIC_V1: u32 = 0x0BD1_0BD0;
pub const MAGIC_V3: u32 = 0x0BD3_0BD0;
pub const MAGIC_SPECIFIC: u32 = 0x0BD5_0BD0;
pub const MAGIC_COMP_V1: u32 = 0x0BD6_0BD0;
pub const MAGIC_FOREIGN: u32 = 0x0BD7_0BD0;
/// Component flag: objects are allocated (instantiated).
pub const LCME_FL_INIT: u32 = 0x10;

const V1_HEADER: usize = 32;
const V3_HEADER: usize = 48;
const OBJECT: usize = 24;
const COMP_HEADER: usize = 32;
const COMP_ENTRY: usize = 48;
/// More components than any real layout has: a corrupt count.
const MAX_COMPONENTS: usize = 1024;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LayoutError {
    #[error("layout truncated: {what} needs {need} bytes at offset {at}, blob has {len}")]
    Truncated {
        what: &'static str,
        at: usize,
        need: usize,
        len: usize,
    },
    #[error("unknown layout magic {0:#010x}")]
    Magic(u32),
    #[error("foreign layout (not striped over OSTs)")]
    Foreign,
    #[error("corrupt layout: {0}")]
    Corrupt(String),
}

/// One striped extent of a file; a plain layout is a single component covering everything.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Component {
    pub id: u32,
    pub flags: u32,
    pub start: u64,
    /// Exclusive; `u64::MAX` is end of file.
    pub end: u64,
    pub pattern: u32,
    pub stripe_size: u32,
    pub stripe_count: u16,
    pub pool: Option<String>,
    /// OST indices in stripe order; empty for components not instantiated yet.
    pub osts: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Layout {
    /// Composite (PFL/FLR) rather than plain.
    pub composite: bool,
    pub mirror_count: u16,
    pub components: Vec<Component>,
}

impl Layout {
    /// The component holding offset 0: what "the" stripe size and count of a file are.
    pub fn first(&self) -> Option<&Component> {
        self.components
            .iter()
            .find(|c| c.start == 0)
            .or(self.components.first())
    }

    /// Every OST the file has objects on, in first-seen order.
    pub fn osts(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for c in &self.components {
            for o in &c.osts {
                if !out.contains(o) {
                    out.push(*o);
                }
            }
        }
        out
    }
}

struct Reader<'a> {
    buf: &'a [u8],
}

impl Reader<'_> {
    fn bytes<const N: usize>(&self, at: usize, what: &'static str) -> Result<[u8; N], LayoutError> {
        let end = at
            .checked_add(N)
            .ok_or_else(|| LayoutError::Corrupt(format!("{what} offset overflows")))?;
        self.buf
            .get(at..end)
            .and_then(|s| s.try_into().ok())
            .ok_or(LayoutError::Truncated {
                what,
                at,
                need: N,
                len: self.buf.len(),
            })
    }
    fn u16(&self, at: usize, what: &'static str) -> Result<u16, LayoutError> {
        Ok(u16::from_le_bytes(self.bytes(at, what)?))
    }
    fn u32(&self, at: usize, what: &'static str) -> Result<u32, LayoutError> {
        Ok(u32::from_le_bytes(self.bytes(at, what)?))
    }
    fn u64(&self, at: usize, what: &'static str) -> Result<u64, LayoutError> {
        Ok(u64::from_le_bytes(self.bytes(at, what)?))
    }
}

/// Parses the value of the `lustre.lov` attribute.
pub fn parse(buf: &[u8]) -> Result<Layout, LayoutError> {
    let r = Reader { buf };
    match r.u32(0, "magic")? {
        MAGIC_COMP_V1 => parse_composite(&r),
        MAGIC_FOREIGN => Err(LayoutError::Foreign),
        _ => Ok(Layout {
            composite: false,
            mirror_count: 1,
            components: vec![parse_plain(buf, 0, u64::MAX, 0, LCME_FL_INIT)?],
        }),
    }
}

fn parse_plain(
    buf: &[u8],
    id: u32,
    end: u64,
    start: u64,
    flags: u32,
) -> Result<Component, LayoutError> {
    let r = Reader { buf };
    let magic = r.u32(0, "magic")?;
    let header = match magic {
        MAGIC_V1 => V1_HEADER,
        MAGIC_V3 | MAGIC_SPECIFIC => V3_HEADER,
        m => return Err(LayoutError::Magic(m)),
    };
    let pattern = r.u32(4, "pattern")?;
    let stripe_size = r.u32(24, "stripe size")?;
    let stripe_count = r.u16(28, "stripe count")?;
    let pool = if header == V3_HEADER {
        let raw: [u8; 16] = r.bytes(32, "pool name")?;
        let end = raw.iter().position(|b| *b == 0).unwrap_or(raw.len());
        Some(String::from_utf8_lossy(&raw[..end]).into_owned()).filter(|p| !p.is_empty())
    } else {
        None
    };
    let mut osts = Vec::new();
    // Components not instantiated yet carry a header only.
    if flags & LCME_FL_INIT != 0 {
        for i in 0..usize::from(stripe_count) {
            osts.push(r.u32(header + i * OBJECT + 20, "OST object")?);
        }
    }
    Ok(Component {
        id,
        flags,
        start,
        end,
        pattern,
        stripe_size,
        stripe_count,
        pool,
        osts,
    })
}

fn parse_composite(r: &Reader<'_>) -> Result<Layout, LayoutError> {
    let size = r.u32(4, "composite size")? as usize;
    if size > r.buf.len() {
        return Err(LayoutError::Truncated {
            what: "composite layout",
            at: 0,
            need: size,
            len: r.buf.len(),
        });
    }
    let count = usize::from(r.u16(14, "entry count")?);
    let mirror_count = r.u16(16, "mirror count")?.saturating_add(1);
    if count > MAX_COMPONENTS {
        return Err(LayoutError::Corrupt(format!("{count} components")));
    }
    let mut components = Vec::with_capacity(count);
    for i in 0..count {
        let e = COMP_HEADER + i * COMP_ENTRY;
        let id = r.u32(e, "component entry")?;
        let flags = r.u32(e + 4, "component flags")?;
        let start = r.u64(e + 8, "component extent")?;
        let end = r.u64(e + 16, "component extent")?;
        let off = r.u32(e + 24, "component offset")? as usize;
        let len = r.u32(e + 28, "component size")? as usize;
        if start > end {
            return Err(LayoutError::Corrupt(format!(
                "component {id} extent [{start}, {end}) is reversed"
            )));
        }
        let blob = off
            .checked_add(len)
            .and_then(|stop| r.buf.get(off..stop))
            .ok_or(LayoutError::Truncated {
                what: "component blob",
                at: off,
                need: len,
                len: r.buf.len(),
            })?;
        components.push(parse_plain(blob, id, end, start, flags)?);
    }
    Ok(Layout {
        composite: true,
        mirror_count,
        components,
    })
}

/// Reads and parses the layout of an open file (through `/proc/<pid>/fd/<n>`).
pub fn read(path: &std::path::Path) -> Option<Result<Layout, LayoutError>> {
    use std::os::unix::ffi::OsStrExt as _;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let name = std::ffi::CString::new(XATTR).ok()?;
    let mut buf = vec![0u8; 64 << 10];
    // SAFETY: valid NUL-terminated strings and a buffer of the given length.
    let n = unsafe {
        libc::getxattr(
            c_path.as_ptr(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if n < 0 {
        return None;
    }
    buf.truncate(n as usize);
    Some(parse(&buf))
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// Builds a plain layout blob byte by byte from the struct definitions.
    pub fn plain(magic: u32, stripe_size: u32, osts: &[u32], pool: Option<&str>) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(magic.to_le_bytes());
        b.extend(1u32.to_le_bytes()); // LOV_PATTERN_RAID0
        b.extend([0xAB; 16]); // lmm_oi
        b.extend(stripe_size.to_le_bytes());
        b.extend((osts.len() as u16).to_le_bytes());
        b.extend(7u16.to_le_bytes()); // layout gen
        if magic != MAGIC_V1 {
            let mut name = [0u8; 16];
            let p = pool.unwrap_or("").as_bytes();
            name[..p.len()].copy_from_slice(p);
            b.extend(name);
        }
        for (i, o) in osts.iter().enumerate() {
            b.extend([i as u8; 16]); // object id
            b.extend(0u32.to_le_bytes()); // generation
            b.extend(o.to_le_bytes());
        }
        b
    }

    fn composite(comps: &[(u32, u64, u64, Vec<u8>)]) -> Vec<u8> {
        let mut blobs: Vec<u8> = Vec::new();
        let mut entries: Vec<u8> = Vec::new();
        let mut off = COMP_HEADER + comps.len() * COMP_ENTRY;
        for (flags, start, end, blob) in comps {
            let mut e = Vec::new();
            e.extend((entries.len() as u32 / COMP_ENTRY as u32 + 1).to_le_bytes());
            e.extend(flags.to_le_bytes());
            e.extend(start.to_le_bytes());
            e.extend(end.to_le_bytes());
            e.extend((off as u32).to_le_bytes());
            e.extend((blob.len() as u32).to_le_bytes());
            e.extend(3u32.to_le_bytes()); // layout gen
            e.extend(0u64.to_le_bytes()); // timestamp
            e.extend(0u32.to_le_bytes()); // padding
            assert_eq!(e.len(), COMP_ENTRY);
            entries.extend(e);
            blobs.extend(blob);
            off += blob.len();
        }
        let mut b = Vec::new();
        b.extend(MAGIC_COMP_V1.to_le_bytes());
        b.extend((off as u32).to_le_bytes());
        b.extend(9u32.to_le_bytes()); // layout gen
        b.extend(0u16.to_le_bytes()); // flags
        b.extend((comps.len() as u16).to_le_bytes());
        b.extend(0u16.to_le_bytes()); // mirror count - 1
        b.extend([0u8; 14]);
        assert_eq!(b.len(), COMP_HEADER);
        b.extend(entries);
        b.extend(blobs);
        b
    }

    #[test]
    fn plain_v1_and_v3() {
        let l = parse(&plain(MAGIC_V1, 1 << 20, &[4, 5, 6, 7], None)).unwrap();
        assert!(!l.composite);
        let c = l.first().unwrap();
        assert_eq!((c.stripe_size, c.stripe_count), (1 << 20, 4));
        assert_eq!(c.osts, vec![4, 5, 6, 7]);
        assert_eq!((c.start, c.end, c.pool.as_deref()), (0, u64::MAX, None));
        let l = parse(&plain(MAGIC_V3, 4 << 20, &[12, 3], Some("flash"))).unwrap();
        assert_eq!(l.first().unwrap().pool.as_deref(), Some("flash"));
        assert_eq!(l.osts(), vec![12, 3]);
    }

    #[test]
    fn pfl_with_an_uninstantiated_component() {
        let first = plain(MAGIC_V3, 1 << 20, &[0], Some("ssd"));
        let second = plain(MAGIC_V3, 4 << 20, &[1, 2, 3, 0], None);
        // The third component exists only as a header: no objects yet.
        let mut third = plain(MAGIC_V1, 16 << 20, &[], None);
        third[28..30].copy_from_slice(&8u16.to_le_bytes());
        let blob = composite(&[
            (LCME_FL_INIT, 0, 1 << 20, first),
            (LCME_FL_INIT, 1 << 20, 1 << 30, second),
            (0, 1 << 30, u64::MAX, third),
        ]);
        let l = parse(&blob).unwrap();
        assert!(l.composite);
        assert_eq!(l.components.len(), 3);
        assert_eq!(l.first().unwrap().stripe_size, 1 << 20);
        assert_eq!(l.components[1].osts, vec![1, 2, 3, 0]);
        assert_eq!(
            (l.components[2].stripe_count, l.components[2].osts.len()),
            (8, 0)
        );
        assert_eq!(l.components[2].end, u64::MAX);
        assert_eq!(l.osts(), vec![0, 1, 2, 3]);
    }

    #[test]
    fn bad_blobs_are_errors_not_panics() {
        let good = plain(MAGIC_V1, 1 << 20, &[1, 2], None);
        for cut in 0..good.len() {
            assert!(parse(&good[..cut]).is_err(), "cut at {cut}");
        }
        assert_eq!(
            parse(&[1, 2, 3, 4]).unwrap_err(),
            LayoutError::Magic(0x0403_0201)
        );
        assert_eq!(
            parse(&MAGIC_FOREIGN.to_le_bytes()).unwrap_err(),
            LayoutError::Foreign
        );
        let comp = composite(&[(LCME_FL_INIT, 0, u64::MAX, good.clone())]);
        for cut in 0..comp.len() {
            assert!(parse(&comp[..cut]).is_err(), "composite cut at {cut}");
        }
        // A component pointing outside the buffer, a reversed extent, a huge count.
        let mut bad = comp.clone();
        bad[COMP_HEADER + 24..COMP_HEADER + 28].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(parse(&bad), Err(LayoutError::Truncated { .. })));
        let mut bad = comp.clone();
        bad[COMP_HEADER + 8..COMP_HEADER + 16].copy_from_slice(&5u64.to_le_bytes());
        bad[COMP_HEADER + 16..COMP_HEADER + 24].copy_from_slice(&1u64.to_le_bytes());
        assert!(matches!(parse(&bad), Err(LayoutError::Corrupt(_))));
        let mut bad = comp;
        bad[14..16].copy_from_slice(&u16::MAX.to_le_bytes());
        assert!(parse(&bad).is_err());
        // Fuzz-like: every single-byte corruption of a valid blob parses or errors.
        let comp = composite(&[(LCME_FL_INIT, 0, u64::MAX, good)]);
        for i in 0..comp.len() {
            for v in [0u8, 0x7f, 0xff] {
                let mut b = comp.clone();
                b[i] = v;
                let _ = parse(&b);
            }
        }
    }
}
