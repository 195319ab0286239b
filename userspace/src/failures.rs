//! Why a library call failed. A library function reports failure by its return (-1, NULL, a
//! negative HDF5 status, an MPI error code); the reason is usually a syscall beneath it that
//! failed (an `fopen` of a missing file fails because its `openat` did, with ENOENT, which is
//! what glibc leaves in `errno`). strata cannot read the traced program's `errno`; it gives a
//! failed library call the errno of the last failed call beneath it, following failed calls
//! only: a failure a successful call absorbed (a probe for a file that is not there) is not
//! the reason for a later one.

use std::collections::HashMap;

use crate::probes::{Layer, Op, Probe, RetKind};

/// What a library call's return says of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Succeeded,
    Failed,
    /// The return that means both the end of the input and a failure (fgetc's EOF, fgets's
    /// NULL, getline's -1, fscanf's EOF, fread's short count). C tells them apart with
    /// `ferror`; strata by whether a call beneath failed.
    EndOrFailed,
}

/// Whether a call of probe `p` that returned `ret` failed, as its return kind says (what
/// it made, moved or changed is then not there).
pub fn failed(p: &Probe, ret: i64, is_syscall: bool) -> bool {
    match p.ret {
        // NetCDF's system errors are positive.
        RetKind::Status if p.layer == Layer::Netcdf => ret != 0,
        RetKind::Fd | RetKind::Bytes | RetKind::Status | RetKind::Position | RetKind::Count => {
            ret < 0
        }
        // A syscall's pointer (mmap's address) or its negative errno.
        RetKind::Handle | RetKind::Ptr => ret == 0 || (is_syscall && ret < 0),
        RetKind::Char => ret == -1,
        RetKind::MpiStatus => ret != 0,
        RetKind::Hid | RetKind::Refs => ret < 0,
        // EOF from fscanf may still have consumed input (the white space before the end).
        RetKind::Scanned | RetKind::None => false,
    }
}

/// How a library call of probe `p` that returned `ret` ended, given whether it [`failed`];
/// `items` is the count it was asked for and `item_size` the size of one (fread, fwrite),
/// where it has them.
pub fn outcome(
    p: &Probe,
    failed: bool,
    ret: i64,
    items: Option<i64>,
    item_size: Option<i64>,
) -> Outcome {
    let reads_stream = p.layer == Layer::Stdio && p.op == Op::Read;
    let failed = match p.ret {
        // A short count: fwrite's only on failure, fread's at the end of the input too.
        RetKind::Count => items.is_some_and(|n| ret < n) && item_size.is_some_and(|s| s > 0),
        // fscanf's EOF: the end of the input, or a failure.
        RetKind::Scanned => ret == -1,
        _ => failed,
    };
    match failed {
        false => Outcome::Succeeded,
        true if reads_stream => Outcome::EndOrFailed,
        true => Outcome::Failed,
    }
}

/// The errno a library call that ended as `outcome` is given, from what failed beneath it
/// (`beneath`): 0 for a failure with none (the library refused on its own: a closed HDF5
/// id, a write to a stream opened for reading), none for the end of the input.
pub fn errno(outcome: Outcome, beneath: Option<i32>) -> Option<i32> {
    match outcome {
        Outcome::Succeeded => None,
        Outcome::Failed => Some(beneath.unwrap_or(0)),
        Outcome::EndOrFailed => beneath,
    }
}

/// Library calls in flight with a failure noted beneath them, at most: a call that never
/// returns (its process killed) leaves its entry until the table is cleared.
const MAX_IN_FLIGHT: usize = 4096;

/// The last failure beneath each library call in flight.
#[derive(Default)]
pub struct FailuresBeneath {
    last: HashMap<u64, i32>,
}

impl FailuresBeneath {
    /// A call inside library call `parent` (0: none) failed with `errno` (0: none known).
    pub fn note(&mut self, parent: u64, errno: i32) {
        if parent == 0 || errno == 0 {
            return;
        }
        if self.last.len() >= MAX_IN_FLIGHT {
            self.last.clear();
        }
        // Calls beneath one call end in order: the last noted is the last to fail.
        self.last.insert(parent, errno);
    }

    /// The last failure beneath library call `call_id`, forgotten here (called for every
    /// library call's row, so nothing outlives the calls in flight).
    pub fn take(&mut self, call_id: u64) -> Option<i32> {
        if self.last.is_empty() {
            return None;
        }
        self.last.remove(&call_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(toml: &str) -> Probe {
        crate::probes::parse(toml, "test.toml").unwrap().remove(0)
    }

    fn library(layer: &str, symbol: &str, op: &str, args: &str, ret: &str) -> Probe {
        probe(&format!(
            "[[probe]]\nlayer = \"{layer}\"\nlibrary = \"libx.so\"\nsymbol = \"{symbol}\"\n\
             op = \"{op}\"\nargs = [{args}]\nret = \"{ret}\"\n"
        ))
    }

    fn outcome(p: &Probe, ret: i64, items: Option<i64>, item_size: Option<i64>) -> Outcome {
        super::outcome(p, failed(p, ret, false), ret, items, item_size)
    }

    #[test]
    fn each_kind_of_return_says_whether_its_call_failed() {
        use Outcome::*;
        let fopen = library("stdio", "fopen", "open", "\"path\", \"modestr\"", "handle");
        assert_eq!(outcome(&fopen, 0, None, None), Failed);
        assert_eq!(outcome(&fopen, 0x5555_0000, None, None), Succeeded);
        let fclose = library("stdio", "fclose", "close", "\"handle\"", "status");
        assert_eq!(outcome(&fclose, -1, None, None), Failed);
        assert_eq!(outcome(&fclose, 0, None, None), Succeeded);
        // The end of a stream's input and its failure look alike.
        let fgets = library(
            "stdio",
            "fgets",
            "read",
            "\"ptr\", \"int\", \"handle\"",
            "ptr",
        );
        assert_eq!(outcome(&fgets, 0, None, None), EndOrFailed);
        let fgetc = library("stdio", "fgetc", "read", "\"handle\"", "char");
        assert_eq!(outcome(&fgetc, -1, None, None), EndOrFailed);
        assert_eq!(outcome(&fgetc, 255, None, None), Succeeded);
        let fputc = library("stdio", "fputc", "write", "\"int\", \"handle\"", "char");
        assert_eq!(outcome(&fputc, -1, None, None), Failed);
        let fread = library(
            "stdio",
            "fread",
            "read",
            "\"ptr\", \"size\", \"count\", \"handle\"",
            "count",
        );
        assert_eq!(outcome(&fread, 3, Some(4), Some(8)), EndOrFailed);
        assert_eq!(outcome(&fread, 4, Some(4), Some(8)), Succeeded);
        assert_eq!(outcome(&fread, 0, Some(4), Some(0)), Succeeded);
        let fwrite = library(
            "stdio",
            "fwrite",
            "write",
            "\"ptr\", \"size\", \"count\", \"handle\"",
            "count",
        );
        assert_eq!(outcome(&fwrite, 3, Some(4), Some(8)), Failed);
        // HDF5: negative; MPI: any error code; NetCDF: any non-zero status, a system
        // errno (positive) as much as an NC_E* code (negative).
        let h5close = library("hdf5", "H5Dclose", "close", "\"handle\"", "status");
        assert_eq!(outcome(&h5close, -1, None, None), Failed);
        let h5exists = library("hdf5", "H5Lexists", "meta", "\"handle\"", "status");
        assert_eq!(outcome(&h5exists, 1, None, None), Succeeded);
        let mpi = library(
            "mpiio",
            "MPI_File_close",
            "close",
            "\"handle_ref\"",
            "mpi_status",
        );
        assert_eq!(outcome(&mpi, 30, None, None), Failed);
        let nc = library("netcdf", "nc_open", "open", "\"path\"", "status");
        assert_eq!(outcome(&nc, 2, None, None), Failed);
        assert_eq!(outcome(&nc, -51, None, None), Failed);
        assert_eq!(outcome(&nc, 0, None, None), Succeeded);
    }

    #[test]
    fn a_failed_call_takes_the_last_failure_beneath_it_or_none() {
        use Outcome::*;
        let mut f = FailuresBeneath::default();
        f.note(7, 2);
        f.note(7, 21);
        f.note(0, 13);
        f.note(8, 0);
        assert_eq!(errno(Failed, f.take(7)), Some(21));
        assert_eq!(errno(Failed, f.take(7)), Some(0), "taken once");
        assert_eq!(errno(Failed, f.take(8)), Some(0), "a failure of its own");
        f.note(9, 5);
        assert_eq!(errno(EndOrFailed, f.take(9)), Some(5));
        assert_eq!(errno(EndOrFailed, f.take(9)), None, "the end of the input");
        f.note(10, 2);
        assert_eq!(errno(Succeeded, f.take(10)), None);
        assert!(f.last.is_empty());
    }
}
