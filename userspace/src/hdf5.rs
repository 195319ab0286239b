//! What an HDF5 transfer moved: the number of elements selected in its dataspaces times the
//! size of its memory datatype.
//!
//! Dataspaces are followed through the calls that make and select them (H5Screate_simple,
//! H5Sselect_hyperslab, ...), whose dimension arrays the kernel side copies (`dims` arguments
//! in probes.toml). The memory type of a transfer is one of HDF5's predefined types, whose ids
//! live in global variables of the library (`H5T_NATIVE_DOUBLE_g`), set by H5open and reset
//! by H5close: the kernel side reads them at a process's first call with an `h5type`
//! argument, from where [`type_table`] says they are, and sends them, so that nothing depends
//! on the process still existing when strata handles its calls. Types the program builds
//! (H5Tcreate, H5Tset_size, H5Tarray_create2) and copies (H5Tcopy) are sized from those
//! calls. A selection strata could not follow (an operation it does not model, a dataset
//! opened rather than created) gives no count, unless the library's own count was seen
//! (`internal`).
use std::collections::HashMap;

use strata_common::{MAX_TYPE_REFS, TypeRef, TypeTable};

use crate::symbols::SymbolTable;

/// `H5S_ALL`: the whole extent of the dataset.
const H5S_ALL: u64 = 0;
const H5S_SELECT_SET: u64 = 0;
const H5S_SELECT_OR: u64 = 1;
/// `H5T_VARIABLE`: a variable-length string's size.
const H5T_VARIABLE: u64 = u64::MAX;
/// Predefined types and their sizes in bytes (global variable name without `H5T_` and `_g`).
const TYPES: &[(&str, u32)] = &[
    ("NATIVE_DOUBLE", 8),
    ("NATIVE_FLOAT", 4),
    ("NATIVE_INT", 4),
    ("NATIVE_LLONG", 8),
    ("NATIVE_LONG", 8),
    ("NATIVE_SCHAR", 1),
    ("NATIVE_UCHAR", 1),
    ("NATIVE_SHORT", 2),
    ("NATIVE_USHORT", 2),
    ("NATIVE_UINT", 4),
    ("NATIVE_ULONG", 8),
    ("NATIVE_ULLONG", 8),
    ("NATIVE_LDOUBLE", 16),
    ("NATIVE_INT8", 1),
    ("NATIVE_UINT8", 1),
    ("NATIVE_INT16", 2),
    ("NATIVE_UINT16", 2),
    ("NATIVE_INT32", 4),
    ("NATIVE_UINT32", 4),
    ("NATIVE_INT64", 8),
    ("NATIVE_UINT64", 8),
    ("NATIVE_HSIZE", 8),
    ("NATIVE_HSSIZE", 8),
    ("NATIVE_HERR", 4),
    ("NATIVE_HBOOL", 1),
    ("IEEE_F32LE", 4),
    ("IEEE_F32BE", 4),
    ("IEEE_F64LE", 8),
    ("IEEE_F64BE", 8),
    ("STD_I8LE", 1),
    ("STD_I16LE", 2),
    ("STD_I32LE", 4),
    ("STD_I64LE", 8),
    ("STD_U8LE", 1),
    ("STD_U16LE", 2),
    ("STD_U32LE", 4),
    ("STD_U64LE", 8),
    // Fixed strings are copies of it with a size set (H5Tset_size).
    ("C_S1", 1),
];

const _: () = assert!(TYPES.len() <= MAX_TYPE_REFS);

/// Where the predefined types are as seen from `function`'s address in the file `symbols`
/// was read from (a libhdf5, or an executable HDF5 is linked into), for the kernel side;
/// `None` when the file defines none of them.
pub fn type_table(symbols: &SymbolTable, function: &str) -> Option<TypeTable> {
    let at = symbols.address(function)?;
    let mut table = TypeTable {
        count: 0,
        _pad: 0,
        refs: [TypeRef::default(); MAX_TYPE_REFS],
    };
    for (name, size) in TYPES {
        let Some(var) = symbols.variable(&format!("H5T_{name}_g")) else {
            continue;
        };
        // A library reaches its exported variables through its GOT (they may have moved to
        // the executable); a static build has only its own copy.
        let (target, indirect) = match var.got {
            Some(slot) => (slot, 1),
            None => (var.address, 0),
        };
        table.refs[table.count as usize] = TypeRef {
            delta: target.wrapping_sub(at) as i64,
            size: *size,
            indirect,
        };
        table.count += 1;
    }
    (table.count > 0).then_some(table)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Selection {
    All,
    Points(u64),
    Unknown,
}

/// The product of `factors`; None past u64 (no selection or type is that large: a record
/// of a failed or misread call).
pub fn product(factors: impl IntoIterator<Item = u64>) -> Option<u64> {
    factors.into_iter().try_fold(1u64, u64::checked_mul)
}

#[derive(Debug, Clone)]
struct Space {
    dims: Vec<u64>,
    sel: Selection,
}

impl Space {
    fn selected(&self) -> Option<u64> {
        match self.sel {
            Selection::All => product(self.dims.iter().copied()),
            Selection::Points(n) => Some(n),
            Selection::Unknown => None,
        }
    }
}

#[derive(Default)]
pub struct Dataspaces {
    spaces: HashMap<(i32, u64), Space>,
    datasets: HashMap<(i32, u64), Vec<u64>>,
    /// Per process: type id -> size, for the predefined types and copies of them (H5Tcopy).
    types: HashMap<i32, HashMap<u64, u64>>,
    /// Types the application built with H5Tcreate (compounds, ...), and copies of them: their
    /// native types may be laid out otherwise.
    built: std::collections::HashSet<(i32, u64)>,
    /// Elements selected, as the library itself counted them inside a call (by call id).
    counted: HashMap<u64, u64>,
    /// Elements of an attribute's dataspace, as the library counted them inside H5Aread or
    /// H5Awrite (by call id).
    extents: HashMap<u64, u64>,
    /// Bytes the transfers made inside a call moved (by the caller's call id); None once one
    /// of them is not known.
    beneath: HashMap<u64, Option<i64>>,
}

/// Bound on `counted` and `extents`: entries whose caller was not a transfer are never taken.
const MAX_COUNTED: usize = 4096;

impl Dataspaces {
    /// Follows one HDF5 call; returns the bytes a transfer (H5Dwrite, H5Dread, H5Awrite,
    /// H5Aread) moves when its selection and type are known. `arr(i)` is the array argument
    /// `i` copied at entry.
    pub fn observe<'a>(
        &mut self,
        function: &str,
        pid: i32,
        call_id: u64,
        args: &[u64],
        ret: i64,
        arr: impl Fn(usize) -> Option<&'a [u64]>,
    ) -> Option<i64> {
        let a = |i: usize| args.get(i).copied().unwrap_or(0);
        let id = ret as u64;
        match function {
            "H5Screate_simple" if ret >= 0 => {
                // C ints (`int rank`, `unsigned ndims`): the register's upper half is not theirs.
                let rank = a(0) as u32 as usize;
                let dims = arr(1).filter(|d| d.len() >= rank)?;
                let space = Space {
                    dims: dims[..rank].to_vec(),
                    sel: Selection::All,
                };
                self.spaces.insert((pid, id), space);
            }
            "H5Scopy" if ret >= 0 => {
                let s = self.spaces.get(&(pid, a(0)))?.clone();
                self.spaces.insert((pid, id), s);
            }
            "H5Sclose" => {
                self.spaces.remove(&(pid, a(0)));
            }
            "H5Sselect_all" => self.set(pid, a(0), Selection::All),
            "H5Sselect_none" => self.set(pid, a(0), Selection::Points(0)),
            "H5Sselect_elements" if a(1) == H5S_SELECT_SET => {
                self.set(pid, a(0), Selection::Points(a(2)));
            }
            "H5Sselect_hyperslab" => {
                let space = self.spaces.get(&(pid, a(0)))?;
                let rank = space.dims.len();
                let points = arr(4).filter(|c| c.len() >= rank).and_then(|count| {
                    let block = |i: usize| arr(5).and_then(|b| b.get(i).copied()).unwrap_or(1);
                    (0..rank).try_fold(1u64, |n, i| n.checked_mul(count[i].checked_mul(block(i))?))
                });
                let sel = match (a(1), points, &space.sel) {
                    (H5S_SELECT_SET, Some(n), _) => Selection::Points(n),
                    // Added to an earlier selection; overlaps are counted twice.
                    (H5S_SELECT_OR, Some(n), Selection::Points(m)) => m
                        .checked_add(n)
                        .map_or(Selection::Unknown, Selection::Points),
                    _ => Selection::Unknown,
                };
                self.set(pid, a(0), sel);
            }
            // Copies of predefined types (NetCDF makes its own) keep their size.
            "H5Tcopy" if ret >= 0 => {
                if self.built.contains(&(pid, a(0))) {
                    self.built.insert((pid, id));
                }
                let size = self.type_size(pid, a(0))?;
                self.types.entry(pid).or_default().insert(id, size);
            }
            "H5Tclose" if ret >= 0 => {
                if let Some(types) = self.types.get_mut(&pid) {
                    types.remove(&a(0));
                }
                self.built.remove(&(pid, a(0)));
            }
            "H5Tequal" if ret > 0 => {
                let types = self.types.entry(pid).or_default();
                match (types.get(&a(0)).copied(), types.get(&a(1)).copied()) {
                    (Some(size), None) => types.insert(a(1), size),
                    (None, Some(size)) => types.insert(a(0), size),
                    _ => None,
                };
            }
            "H5Tget_native_type" if ret >= 0 && !self.built.contains(&(pid, a(0))) => {
                let size = self.type_size(pid, a(0))?;
                self.types.entry(pid).or_default().insert(id, size);
            }
            // The library's word on a type's size (size_t; 0: failure) holds for that id.
            "H5Tget_size" if ret > 0 => {
                self.types.entry(pid).or_default().insert(a(0), ret as u64);
            }
            // Types built by the application: a compound's size is given at creation, a
            // fixed string's set after copying H5T_C_S1 (H5T_VARIABLE: no fixed size).
            "H5Tcreate" if ret >= 0 => {
                self.types.entry(pid).or_default().insert(id, a(1));
                self.built.insert((pid, id));
            }
            "H5Tset_size" if ret >= 0 => {
                let types = self.types.entry(pid).or_default();
                if a(1) == H5T_VARIABLE {
                    types.remove(&a(0));
                } else {
                    types.insert(a(0), a(1));
                }
            }
            "H5Tarray_create2" if ret >= 0 => {
                let rank = a(1) as u32 as usize;
                let dims = arr(2).filter(|d| d.len() >= rank)?;
                let n = product(dims[..rank].iter().copied())?;
                let size = self.type_size(pid, a(0))?.checked_mul(n)?;
                self.types.entry(pid).or_default().insert(id, size);
            }
            // H5Dcreate1 (the 1.6 API) takes the same first four arguments.
            "H5Dcreate2" | "H5Dcreate1" if ret >= 0 => {
                let dims = self.spaces.get(&(pid, a(3)))?.dims.clone();
                self.datasets.insert((pid, id), dims);
            }
            "H5Dget_space" if ret >= 0 => {
                let dims = self.datasets.get(&(pid, a(0)))?.clone();
                self.spaces.insert(
                    (pid, id),
                    Space {
                        dims,
                        sel: Selection::All,
                    },
                );
            }
            "H5Dset_extent" => {
                let rank = self.datasets.get(&(pid, a(0)))?.len();
                let size = arr(1).filter(|s| s.len() >= rank)?[..rank].to_vec();
                self.datasets.insert((pid, a(0)), size);
            }
            "H5Dclose" | "H5Oclose" => {
                self.datasets.remove(&(pid, a(0)));
            }
            "H5Dwrite" | "H5Dread" => {
                let (dset, mem_space, file_space) = (a(0), a(2), a(3));
                // The library's own count first: it knows extents of opened datasets and
                // every kind of selection.
                let counted = self.counted.remove(&call_id);
                let points = counted.or_else(|| match (mem_space, file_space) {
                    (H5S_ALL, H5S_ALL) => product(self.datasets.get(&(pid, dset))?.iter().copied()),
                    (H5S_ALL, f) => self.spaces.get(&(pid, f))?.selected(),
                    (m, _) => self.spaces.get(&(pid, m))?.selected(),
                })?;
                let size = self.type_size(pid, a(1))?;
                return i64::try_from(points.checked_mul(size)?).ok();
            }
            // An attribute moves whole: its extent's elements, as the library counted them.
            "H5Awrite" | "H5Aread" => {
                let points = self.extents.remove(&call_id)?;
                let size = self.type_size(pid, a(1))?;
                return i64::try_from(points.checked_mul(size)?).ok();
            }
            _ => {}
        }
        None
    }

    /// The number of dimensions of dataset `dset` of process `pid`, where strata saw it made.
    pub fn rank(&self, pid: i32, dset: u64) -> Option<usize> {
        self.datasets.get(&(pid, dset)).map(Vec::len)
    }

    /// A library-internal call inside `parent`: `H5S_get_select_npoints` returns the elements
    /// of a selection; the first inside a transfer is the memory selection, which H5Dwrite
    /// and H5Dread check against the file selection before moving anything.
    /// `H5S_get_simple_extent_npoints` returns the elements of a dataspace's extent; inside
    /// H5Aread and H5Awrite, the attribute's.
    pub fn internal(&mut self, function: &str, parent: u64, ret: i64) {
        let counts = match function {
            "H5S_get_select_npoints" => &mut self.counted,
            "H5S_get_simple_extent_npoints" => &mut self.extents,
            _ => return,
        };
        if parent != 0 && ret >= 0 {
            if counts.len() >= MAX_COUNTED {
                counts.clear();
            }
            counts.entry(parent).or_insert(ret as u64);
        }
    }

    /// A transfer made inside call `parent` moved `bytes`.
    pub fn note_beneath(&mut self, parent: u64, bytes: Option<i64>) {
        if self.beneath.len() >= MAX_COUNTED {
            self.beneath.clear();
        }
        let sum = self.beneath.entry(parent).or_insert(Some(0));
        *sum = sum.zip(bytes).map(|(s, b)| s.saturating_add(b));
    }

    /// What the transfers made inside call `call_id` moved, when all are known.
    pub fn take_beneath(&mut self, call_id: u64) -> Option<i64> {
        self.beneath.remove(&call_id).flatten()
    }

    fn set(&mut self, pid: i32, space: u64, sel: Selection) {
        if let Some(s) = self.spaces.get_mut(&(pid, space)) {
            s.sel = sel;
        }
    }

    pub fn forget(&mut self, pid: i32) {
        self.spaces.retain(|(p, _), _| *p != pid);
        self.datasets.retain(|(p, _), _| *p != pid);
        self.types.remove(&pid);
        self.built.retain(|(p, _)| *p != pid);
    }

    /// The ids of a process's predefined types, as the kernel side read them (once per probed
    /// function that names types; a new program image's come after [`Self::forget`]).
    pub fn types(&mut self, pid: i32, types: Vec<(u64, u64)>) {
        log::debug!(
            "HDF5 predefined types of process {pid}: {} ids",
            types.len()
        );
        self.types.entry(pid).or_default().extend(types);
    }

    fn type_size(&self, pid: i32, type_id: u64) -> Option<u64> {
        self.types.get(&pid)?.get(&type_id).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_spaces_and_selections() {
        let mut d = Dataspaces::default();
        let none = |_: usize| None;
        // The predefined types as the kernel side read them: id 77 is a double.
        d.types(1, vec![(77, 8), (79, 4)]);
        let dims = [64u64, 1024];
        // `int rank`: what the caller left in the register's upper half is not the rank's.
        d.observe(
            "H5Screate_simple",
            1,
            0,
            &[2 | (0xdead << 32), 0, 0],
            10,
            |i| (i == 1).then_some(&dims[..]),
        );
        d.observe("H5Dcreate2", 1, 0, &[5, 0, 0, 10], 20, none);
        // H5S_ALL on both sides: the whole dataset.
        assert_eq!(
            d.observe("H5Dwrite", 1, 0, &[20, 77, 0, 0], 0, none),
            Some(64 * 1024 * 8)
        );
        // A hyperslab of 16 rows in the file, a 16x1024 memory space.
        let mem = [16u64, 1024];
        d.observe("H5Screate_simple", 1, 0, &[2, 0, 0], 11, |i| {
            (i == 1).then_some(&mem[..])
        });
        d.observe("H5Dget_space", 1, 0, &[20], 12, none);
        let count = [16u64, 1024];
        d.observe("H5Sselect_hyperslab", 1, 0, &[12, 0, 0, 0, 0, 0], 0, |i| {
            (i == 4).then_some(&count[..])
        });
        assert_eq!(
            d.observe("H5Dwrite", 1, 0, &[20, 77, 11, 12], 0, none),
            Some(16 * 1024 * 8)
        );
        assert_eq!(
            d.observe("H5Dread", 1, 0, &[20, 77, 0, 12], 0, none),
            Some(16 * 1024 * 8)
        );
        // Blocks multiply counts; an unknown operation makes the count unknown.
        let block = [2u64, 1];
        d.observe(
            "H5Sselect_hyperslab",
            1,
            0,
            &[12, 0, 0, 0, 0, 0],
            0,
            |i| match i {
                4 => Some(&count[..]),
                5 => Some(&block[..]),
                _ => None,
            },
        );
        assert_eq!(
            d.observe("H5Dwrite", 1, 0, &[20, 77, 0, 12], 0, none),
            Some(32 * 1024 * 8)
        );
        d.observe("H5Sselect_hyperslab", 1, 0, &[12, 3, 0, 0, 0, 0], 0, |i| {
            (i == 4).then_some(&count[..])
        });
        assert_eq!(d.observe("H5Dwrite", 1, 0, &[20, 77, 0, 12], 0, none), None);
        // A copy of a known type has its size.
        d.observe("H5Tcopy", 1, 0, &[77], 78, none);
        assert_eq!(
            d.observe("H5Dwrite", 1, 0, &[20, 78, 11, 12], 0, none),
            Some(16 * 1024 * 8)
        );
        // The ids sent again (by another probed function) keep the copies.
        d.types(1, vec![(77, 8), (79, 4)]);
        assert_eq!(
            d.observe("H5Dwrite", 1, 0, &[20, 78, 11, 12], 0, none),
            Some(16 * 1024 * 8)
        );
        // Types the application builds: a compound of 16 bytes, a fixed string of 32 made
        // from H5T_C_S1 (id 60), then variable-length (no size), an array of three ints.
        let elems = 16 * 1024;
        d.observe("H5Tcreate", 1, 0, &[6, 16], 90, none);
        assert_eq!(
            d.observe("H5Dwrite", 1, 0, &[20, 90, 11, 12], 0, none),
            Some(elems * 16)
        );
        d.types(1, vec![(60, 1)]);
        d.observe("H5Tcopy", 1, 0, &[60], 91, none);
        d.observe("H5Tset_size", 1, 0, &[91, 32], 0, none);
        assert_eq!(
            d.observe("H5Dwrite", 1, 0, &[20, 91, 11, 12], 0, none),
            Some(elems * 32)
        );
        d.observe("H5Tset_size", 1, 0, &[91, u64::MAX], 0, none);
        assert_eq!(
            d.observe("H5Dwrite", 1, 0, &[20, 91, 11, 12], 0, none),
            None
        );
        // The native type of a copy of a predefined type has its size (NetCDF's memory
        // types); a built compound's native type may be laid out otherwise.
        d.observe("H5Tget_native_type", 1, 0, &[78, 0], 93, none);
        assert_eq!(
            d.observe("H5Dwrite", 1, 0, &[20, 93, 11, 12], 0, none),
            Some(elems * 8)
        );
        d.observe("H5Tcopy", 1, 0, &[90], 94, none);
        d.observe("H5Tget_native_type", 1, 0, &[94, 0], 95, none);
        assert_eq!(
            d.observe("H5Dwrite", 1, 0, &[20, 95, 11, 12], 0, none),
            None
        );
        // A type found equal to a known one (NetCDF identifies an opened file's types so).
        d.observe("H5Tequal", 1, 0, &[96, 77], 0, none);
        assert_eq!(
            d.observe("H5Dwrite", 1, 0, &[20, 96, 11, 12], 0, none),
            None
        );
        d.observe("H5Tequal", 1, 0, &[96, 77], 1, none);
        assert_eq!(
            d.observe("H5Dwrite", 1, 0, &[20, 96, 11, 12], 0, none),
            Some(elems * 8)
        );
        // The library's own word on a type's size, even a built compound's native type.
        d.observe("H5Tget_size", 1, 0, &[95], 24, none);
        assert_eq!(
            d.observe("H5Dwrite", 1, 0, &[20, 95, 11, 12], 0, none),
            Some(elems * 24)
        );
        d.observe("H5Tget_size", 1, 0, &[97], 0, none);
        assert_eq!(
            d.observe("H5Dwrite", 1, 0, &[20, 97, 11, 12], 0, none),
            None,
            "0: H5Tget_size failed"
        );
        // What the transfers inside a call moved: known only when all of theirs is.
        d.note_beneath(7, Some(100));
        d.note_beneath(7, Some(20));
        assert_eq!(d.take_beneath(7), Some(120));
        assert_eq!(d.take_beneath(7), None);
        d.note_beneath(8, Some(100));
        d.note_beneath(8, None);
        assert_eq!(d.take_beneath(8), None);
        // Closed: forgotten (HDF5 never gives its id again).
        let known = d.types.get(&1).map(HashMap::len);
        d.observe("H5Tclose", 1, 0, &[93], 0, none);
        d.observe("H5Tclose", 1, 0, &[94], 0, none);
        assert_eq!(
            d.observe("H5Dwrite", 1, 0, &[20, 93, 11, 12], 0, none),
            None
        );
        assert_eq!(d.types.get(&1).map(HashMap::len), known.map(|n| n - 2));
        assert!(!d.built.contains(&(1, 94)));
        let three = [3u64];
        d.observe("H5Tarray_create2", 1, 0, &[79, 1, 0], 92, |i| {
            (i == 2).then_some(&three[..])
        });
        assert_eq!(
            d.observe("H5Dwrite", 1, 0, &[20, 92, 11, 12], 0, none),
            Some(elems * 12)
        );
        // An unknown type, another process's before its types arrive, or its copy: no count.
        assert_eq!(d.observe("H5Dwrite", 1, 0, &[20, 99, 0, 0], 0, none), None);
        d.observe("H5Screate_simple", 2, 0, &[2, 0, 0], 10, |i| {
            (i == 1).then_some(&dims[..])
        });
        d.observe("H5Dcreate2", 2, 0, &[5, 0, 0, 10], 20, none);
        assert_eq!(d.observe("H5Dwrite", 2, 0, &[20, 77, 0, 0], 0, none), None);
        d.types(2, vec![(77, 4)]);
        assert_eq!(d.observe("H5Dwrite", 2, 0, &[20, 78, 0, 0], 0, none), None);
        assert_eq!(
            d.observe("H5Dwrite", 2, 0, &[20, 77, 0, 0], 0, none),
            Some(64 * 1024 * 4)
        );
        // The library's own count inside the call wins, even where the selection is unknown;
        // only the first count inside a call is its memory selection.
        d.internal("H5S_get_select_npoints", 500, 100);
        d.internal("H5S_get_select_npoints", 500, 7);
        assert_eq!(
            d.observe("H5Dwrite", 1, 500, &[20, 77, 0, 12], 0, none),
            Some(100 * 8)
        );
        assert!(d.counted.is_empty());

        // An attribute moves whole: the extent the library counted inside H5Aread or
        // H5Awrite, times the memory type's size; a selection counted there is not it.
        d.internal("H5S_get_simple_extent_npoints", 600, 3);
        assert_eq!(
            d.observe("H5Aread", 1, 600, &[30, 77, 0], 0, none),
            Some(3 * 8)
        );
        d.internal("H5S_get_select_npoints", 601, 3);
        assert_eq!(d.observe("H5Awrite", 1, 601, &[30, 77, 0], 0, none), None);
        // Nor is an extent counted inside H5Dwrite its selection.
        d.internal("H5S_get_simple_extent_npoints", 602, 5);
        d.internal("H5S_get_select_npoints", 602, 2);
        assert_eq!(
            d.observe("H5Dwrite", 1, 602, &[20, 77, 0, 12], 0, none),
            Some(2 * 8)
        );
    }
}
