//! Syscall numbers by tracepoint name.
//!
//! A BPF program on a syscall tracepoint cannot use the record's `common_type` to tell events
//! apart (the kernel stores a pt_regs pointer over the common header before running it), so
//! the programs key their spec map by the syscall number at offset 8, and user space needs the
//! number for each name. The names are the tracepoint names (`newstat` is `stat`).

/// The number of syscall `name` on this architecture.
pub fn number(name: &str) -> Option<u32> {
    use libc::*;
    let nr = match name {
        "openat" => SYS_openat,
        "openat2" => SYS_openat2,
        "close" => SYS_close,
        "close_range" => SYS_close_range,
        "read" => SYS_read,
        "write" => SYS_write,
        "pread64" => SYS_pread64,
        "pwrite64" => SYS_pwrite64,
        "readv" => SYS_readv,
        "writev" => SYS_writev,
        "preadv" => SYS_preadv,
        "pwritev" => SYS_pwritev,
        "preadv2" => SYS_preadv2,
        "pwritev2" => SYS_pwritev2,
        "lseek" => SYS_lseek,
        "fsync" => SYS_fsync,
        "sync" => SYS_sync,
        "syncfs" => SYS_syncfs,
        "fdatasync" => SYS_fdatasync,
        "sync_file_range" => SYS_sync_file_range,
        "dup" => SYS_dup,
        "dup3" => SYS_dup3,
        "pipe" => SYS_pipe,
        "pipe2" => SYS_pipe2,
        "memfd_create" => SYS_memfd_create,
        "socket" => SYS_socket,
        "accept" => SYS_accept,
        "accept4" => SYS_accept4,
        "sendmsg" => SYS_sendmsg,
        "recvmsg" => SYS_recvmsg,
        "eventfd2" => SYS_eventfd2,
        "epoll_create1" => SYS_epoll_create1,
        "fcntl" => SYS_fcntl,
        "ioctl" => SYS_ioctl,
        "ftruncate" => SYS_ftruncate,
        "truncate" => SYS_truncate,
        "fallocate" => SYS_fallocate,
        "unlinkat" => SYS_unlinkat,
        "renameat" => SYS_renameat,
        "renameat2" => SYS_renameat2,
        "mkdirat" => SYS_mkdirat,
        "newfstatat" => SYS_newfstatat,
        "newfstat" => SYS_fstat,
        "statx" => SYS_statx,
        "faccessat" => SYS_faccessat,
        "faccessat2" => SYS_faccessat2,
        "exit_group" => SYS_exit_group,
        "copy_file_range" => SYS_copy_file_range,
        "sendfile64" => SYS_sendfile,
        "mmap" => SYS_mmap,
        "msync" => SYS_msync,
        "munmap" => SYS_munmap,
        "io_uring_setup" => SYS_io_uring_setup,
        "io_uring_enter" => SYS_io_uring_enter,
        "io_uring_register" => SYS_io_uring_register,
        "io_setup" => SYS_io_setup,
        "io_submit" => SYS_io_submit,
        "io_destroy" => SYS_io_destroy,
        "io_getevents" => SYS_io_getevents,
        // Not in the libc crate's tables.
        #[cfg(target_arch = "x86_64")]
        "io_pgetevents" => 333,
        #[cfg(target_arch = "aarch64")]
        "io_pgetevents" => 292,
        "getdents64" => SYS_getdents64,
        "chdir" => SYS_chdir,
        "fchdir" => SYS_fchdir,
        "linkat" => SYS_linkat,
        "symlinkat" => SYS_symlinkat,
        "readlinkat" => SYS_readlinkat,
        "fchmod" => SYS_fchmod,
        "fchmodat" => SYS_fchmodat,
        "fchmodat2" => SYS_fchmodat2,
        "fchown" => SYS_fchown,
        "fchownat" => SYS_fchownat,
        "utimensat" => SYS_utimensat,
        "statfs" => SYS_statfs,
        "fstatfs" => SYS_fstatfs,
        "setxattr" => SYS_setxattr,
        "lsetxattr" => SYS_lsetxattr,
        "fsetxattr" => SYS_fsetxattr,
        "getxattr" => SYS_getxattr,
        "lgetxattr" => SYS_lgetxattr,
        "fgetxattr" => SYS_fgetxattr,
        "listxattr" => SYS_listxattr,
        "llistxattr" => SYS_llistxattr,
        "flistxattr" => SYS_flistxattr,
        "removexattr" => SYS_removexattr,
        "lremovexattr" => SYS_lremovexattr,
        "fremovexattr" => SYS_fremovexattr,
        "fadvise64" => SYS_fadvise64,
        "readahead" => SYS_readahead,
        "flock" => SYS_flock,
        "splice" => SYS_splice,
        "tee" => SYS_tee,
        "vmsplice" => SYS_vmsplice,
        "mknodat" => SYS_mknodat,
        "name_to_handle_at" => SYS_name_to_handle_at,
        "open_by_handle_at" => SYS_open_by_handle_at,
        // Newer than the libc crate's tables: since Linux 5.1 every architecture numbers new
        // syscalls alike (424 on).
        "cachestat" => 451,
        "setxattrat" => 463,
        "getxattrat" => 464,
        "listxattrat" => 465,
        "removexattrat" => 466,
        "file_getattr" => 468,
        "file_setattr" => 469,
        _ => return legacy(name),
    };
    u32::try_from(nr).ok()
}

/// Syscalls that only the older architectures (x86-64) have.
#[cfg(target_arch = "x86_64")]
fn legacy(name: &str) -> Option<u32> {
    use libc::*;
    let nr = match name {
        "open" => SYS_open,
        "creat" => SYS_creat,
        "dup2" => SYS_dup2,
        "unlink" => SYS_unlink,
        "rename" => SYS_rename,
        "mkdir" => SYS_mkdir,
        "rmdir" => SYS_rmdir,
        "newstat" => SYS_stat,
        "newlstat" => SYS_lstat,
        "access" => SYS_access,
        "link" => SYS_link,
        "symlink" => SYS_symlink,
        "readlink" => SYS_readlink,
        "chmod" => SYS_chmod,
        "chown" => SYS_chown,
        "lchown" => SYS_lchown,
        "mknod" => SYS_mknod,
        "getdents" => SYS_getdents,
        "utime" => SYS_utime,
        "utimes" => SYS_utimes,
        "futimesat" => SYS_futimesat,
        _ => return None,
    };
    u32::try_from(nr).ok()
}

#[cfg(not(target_arch = "x86_64"))]
fn legacy(_name: &str) -> Option<u32> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(number("write"), Some(libc::SYS_write as u32));
        assert_eq!(number("newstat"), Some(libc::SYS_stat as u32));
        assert_eq!(number("no_such_syscall"), None);
        // Every syscall in the built-in probes has a number here.
        for p in crate::probes::parse(crate::probes::BUILTIN, "p").unwrap() {
            if let crate::probes::Target::Syscall(s) = &p.target {
                assert!(number(s).is_some(), "no number for syscall {s}");
            }
        }
    }
}
