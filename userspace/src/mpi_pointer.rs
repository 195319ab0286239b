//! MPI-IO's individual file pointer: where a read or write that gives no offset
//! (MPI_File_write, MPI_File_read_all, MPI_File_iwrite, a split collective's begin) took
//! place, in etypes of the file's view, as explicit offsets are given. Each process has its
//! own per MPI_File: 0 at the open and after MPI_File_set_view, moved by MPI_File_seek and by
//! each such call past the etypes it moved. Under MPI_MODE_APPEND it starts at the end of the
//! file, which strata does not know. The shared file pointer (the `_shared` and `_ordered`
//! calls) belongs to all ranks of the file's communicator, each moving it: it is not
//! followed, and those calls leave the individual pointer where it is. Their offset is where
//! the rank's own transfer beneath began on the file, in etypes of the default view or of one
//! whose filetype is its etype (known under the MPICH ABI, whose datatype handles strata
//! compares).

/// MPI_MODE_APPEND: the same in Open MPI and the MPICH ABI.
const MODE_APPEND: i64 = 128;

/// MPI_SEEK_SET, MPI_SEEK_CUR, MPI_SEEK_END (600, 602, 604 in Open MPI and the MPICH ABI) as
/// lseek's.
pub fn whence(mpi: u64) -> Option<u64> {
    match mpi {
        600 => Some(libc::SEEK_SET as u64),
        602 => Some(libc::SEEK_CUR as u64),
        604 => Some(libc::SEEK_END as u64),
        _ => None,
    }
}

/// Where an MPI_File opened with `amode` starts: 0, or unknown under MPI_MODE_APPEND.
pub fn start(amode: Option<i64>) -> Option<i64> {
    amode.is_none_or(|m| m & MODE_APPEND == 0).then_some(0)
}

/// Calls on the shared file pointer.
pub fn shared(function: &str) -> bool {
    function.contains("_shared") || function.contains("_ordered")
}

/// The call that sets a file's view, and with it its etype, and puts both pointers at 0.
pub fn sets_view(function: &str) -> bool {
    function == "MPI_File_set_view"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whence_and_append_are_mpis_values() {
        assert_eq!(whence(600), Some(0));
        assert_eq!(whence(602), Some(1));
        assert_eq!(whence(604), Some(2));
        assert_eq!(whence(0), None, "lseek's SEEK_SET is not MPI's");
        // MPI_MODE_CREATE | MPI_MODE_WRONLY, then with MPI_MODE_APPEND.
        assert_eq!(start(Some(1 | 4)), Some(0));
        assert_eq!(start(Some(1 | 4 | 128)), None);
    }

    #[test]
    fn shared_pointer_calls_are_told_from_individual_ones() {
        for f in [
            "MPI_File_write_shared",
            "MPI_File_iread_shared",
            "MPI_File_seek_shared",
            "MPI_File_write_ordered",
            "MPI_File_read_ordered_begin",
        ] {
            assert!(shared(f), "{f}");
        }
        for f in ["MPI_File_write", "MPI_File_read_all_begin", "MPI_File_seek"] {
            assert!(!shared(f), "{f}");
        }
    }
}
