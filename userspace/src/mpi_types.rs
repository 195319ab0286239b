//! MPI datatype sizes where a datatype is an integer handle (the MPICH ABI of MPICH, Intel
//! MPI, MVAPICH and Cray MPICH), with no object in the process to read a size from.
//!
//! ROMIO, the MPI-IO of all of them, asks `MPI_Type_size_x` for the size of a transfer's
//! datatype before it moves anything; that call, probed as internal, is made beneath the
//! transfer, so the transfer's record (which comes after its children's) finds the size of
//! its own datatype among the sizes asked beneath it. Where none was asked (an MPI-IO that
//! sizes types without that call), a predefined type's handle still tells its size.
use std::collections::HashMap;

/// The bytes an MPI call moved, from the count of its `MPI_Status` as the kernel side read it:
/// Open MPI's `size_t _ucount`; under the MPICH ABI the first 8 bytes, `int count_lo` and
/// `int count_hi_and_cancelled` (the high bits above the cancelled flag).
pub fn status_bytes(raw: u64, int_handles: bool) -> i64 {
    let count = if int_handles {
        (raw & 0xffff_ffff) | ((raw >> 33) << 32)
    } else {
        raw
    };
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// The size the MPICH ABI encodes in a predefined datatype's handle (`MPI_DOUBLE` is
/// `0x4c00080b`): kind "builtin" in bits 30-31, object class "datatype" in bits 26-29, the
/// size in bytes in bits 8-15. None for built types, whose handles index MPICH's own tables.
pub fn predefined_size(datatype: u64) -> Option<i64> {
    let h = datatype as u32;
    let size = i64::from((h >> 8) & 0xff);
    (h >> 30 == 1 && (h >> 26) & 0xf == 3 && size > 0).then_some(size)
}

/// Bound on the calls in flight with sizes noted (their records never came: the process was
/// killed); beyond it they are dropped together.
const MAX_CALLS: usize = 4096;

#[derive(Debug, Default)]
pub struct TypeSizes {
    /// Call id -> (datatype handle, size in bytes) asked beneath it.
    beneath: HashMap<u64, Vec<(u32, i64)>>,
}

impl TypeSizes {
    /// `MPI_Type_size_x(datatype, &size)` returned `size`, inside call `parent`.
    pub fn note(&mut self, parent: u64, datatype: u64, size: Option<u64>) {
        let (Some(size), true) = (size, parent != 0) else {
            return;
        };
        if self.beneath.len() >= MAX_CALLS {
            self.beneath.clear();
        }
        let sizes = self.beneath.entry(parent).or_default();
        if sizes.len() < 16 {
            sizes.push((datatype as u32, i64::try_from(size).unwrap_or(i64::MAX)));
        }
    }

    /// The size of `datatype` as asked beneath call `call_id`; forgets what was asked there
    /// (called for every call's record, so that nothing outlives the calls in flight).
    pub fn take(&mut self, call_id: u64, datatype: Option<u64>) -> Option<i64> {
        if self.beneath.is_empty() {
            return None;
        }
        let sizes = self.beneath.remove(&call_id)?;
        let datatype = datatype? as u32;
        sizes.iter().find(|(t, _)| *t == datatype).map(|(_, s)| *s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Handles from MPICH's mpi.h; the mpiio tests size real ones.
    #[test]
    fn only_predefined_handles_carry_a_size() {
        assert_eq!(
            predefined_size(0xdead_0000_4c00_080b),
            Some(8),
            "MPI_DOUBLE"
        );
        assert_eq!(predefined_size(0x4c00_010d), Some(1), "MPI_BYTE");
        assert_eq!(predefined_size(0x0c00_0000), None, "MPI_DATATYPE_NULL");
        assert_eq!(predefined_size(0x4c00_0010), None, "MPI_LB: no size");
        assert_eq!(predefined_size(0x8c00_0005), None, "a built type");
        assert_eq!(
            predefined_size(0x4400_0000),
            None,
            "MPI_COMM_WORLD: not a datatype"
        );
    }

    #[test]
    fn a_status_count_is_read_in_each_abis_layout() {
        assert_eq!(status_bytes(4096, false), 4096);
        // MPICH: 40 bytes, cancelled.
        assert_eq!(status_bytes(40 | (1 << 32), true), 40);
        // MPICH: 5 GiB, the high part 1 above the flag.
        assert_eq!(
            status_bytes((1 << 30) | (2 << 32), true),
            (1 << 30) | (1 << 32)
        );
    }

    #[test]
    fn a_transfer_takes_the_size_of_its_own_datatype() {
        let mut t = TypeSizes::default();
        // The upper half of an `int` register is not defined.
        t.note(7, 0xdead_0000_8c00_0005, Some(24));
        t.note(7, 0x4c00_080b, Some(8));
        t.note(0, 0x4c00_080b, Some(8));
        t.note(8, 0x4c00_080b, None);
        assert_eq!(t.take(7, Some(0x8c00_0005)), Some(24));
        assert_eq!(t.take(7, Some(0x4c00_080b)), None, "taken once");
        assert_eq!(t.take(8, Some(0x4c00_080b)), None);
        t.note(9, 0x4c00_080b, Some(8));
        assert_eq!(t.take(9, Some(0x4c00_010d)), None);
        assert!(t.beneath.is_empty());
        for call in 1..=MAX_CALLS as u64 + 1 {
            t.note(call, 1, Some(1));
        }
        assert!(t.beneath.len() <= MAX_CALLS);
    }
}
