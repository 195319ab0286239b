//! Offsets of kernel struct fields, from the running kernel's BTF (/sys/kernel/btf/vmlinux),
//! for programs that read kernel structures (the `kfile` argument of VFS probes).
use btf_rs::{Btf, Type};

#[derive(Debug, thiserror::Error)]
pub enum BtfError {
    #[error(
        "cannot read the kernel's BTF ({0}); the probes that read kernel structures need CONFIG_DEBUG_INFO_BTF"
    )]
    Read(String),
    #[error("struct {0} has no field {1} in this kernel's BTF")]
    Missing(String, String),
}

/// Byte offset of `field` in `struct strukt`, looking into anonymous unions and structs.
pub fn member_offset(btf: &Btf, strukt: &str, field: &str) -> Result<u32, BtfError> {
    let missing = || BtfError::Missing(strukt.into(), field.into());
    let types = btf.resolve_types_by_name(strukt).map_err(|_| missing())?;
    types
        .iter()
        .find_map(|t| match t {
            Type::Struct(s) if !s.members.is_empty() => find(btf, s, field, 0),
            _ => None,
        })
        .ok_or_else(missing)
}

fn find(btf: &Btf, s: &btf_rs::Struct, field: &str, base: u32) -> Option<u32> {
    for m in &s.members {
        let at = base + m.bit_offset() / 8;
        let name = btf.resolve_name(m).unwrap_or_default();
        if name == field {
            return Some(at);
        }
        if name.is_empty() {
            if let Ok(Type::Struct(inner) | Type::Union(inner)) = btf.resolve_chained_type(m) {
                if let Some(off) = find(btf, &inner, field, at) {
                    return Some(off);
                }
            }
        }
    }
    None
}

/// The running kernel's BTF. Read whole first: btf-rs's file reader seeks once per type
/// through a `BufReader`, which drops its buffer each time (130,000 lseek and 4 KiB reads for
/// a 5 MiB vmlinux BTF).
pub fn kernel() -> Result<Btf, BtfError> {
    let bytes =
        std::fs::read("/sys/kernel/btf/vmlinux").map_err(|e| BtfError::Read(e.to_string()))?;
    Btf::from_bytes(&bytes).map_err(|e| BtfError::Read(e.to_string()))
}

/// Offsets `of` the kernel's BTF, or why there are none (for a probe's `reason`).
pub fn offsets<const N: usize>(
    btf: &Result<Btf, String>,
    of: fn(&Btf) -> Result<[u32; N], BtfError>,
) -> Result<[u32; N], String> {
    of(btf.as_ref()?).map_err(|e| e.to_string())
}

/// (file.f_inode, inode.i_ino, inode.i_sb, super_block.s_dev).
pub fn file_offsets(btf: &Btf) -> Result<[u32; 4], BtfError> {
    Ok([
        member_offset(btf, "file", "f_inode")?,
        member_offset(btf, "inode", "i_ino")?,
        member_offset(btf, "inode", "i_sb")?,
        member_offset(btf, "super_block", "s_dev")?,
    ])
}

/// (request.q, request_queue.disk, gendisk.major, gendisk.first_minor, request.__sector,
/// request.cmd_flags). Linux 5.15 and later: before, the disk hung off the request itself.
pub fn request_offsets(btf: &Btf) -> Result<[u32; 6], BtfError> {
    Ok([
        member_offset(btf, "request", "q")?,
        member_offset(btf, "request_queue", "disk")?,
        member_offset(btf, "gendisk", "major")?,
        member_offset(btf, "gendisk", "first_minor")?,
        member_offset(btf, "request", "__sector")?,
        member_offset(btf, "request", "cmd_flags")?,
    ])
}

/// Where an io_uring request (`struct io_kiocb`) keeps its file, the SQE's descriptor
/// (`cqe.fd`), and for reads and writes (`struct io_rw`, overlaying the request's start) the
/// offset (`kiocb.ki_pos`) and length (`len`). Tested on Linux 6.1, 6.12 and 6.18.
pub fn uring_offsets(btf: &Btf) -> Result<[u32; 4], BtfError> {
    Ok([
        member_offset(btf, "io_kiocb", "file")?,
        member_offset(btf, "io_kiocb", "cqe")? + member_offset(btf, "io_cqe", "fd")?,
        member_offset(btf, "io_rw", "kiocb")? + member_offset(btf, "kiocb", "ki_pos")?,
        member_offset(btf, "io_rw", "len")?,
    ])
}

/// (task_struct.mm, mm_struct.arg_start, .arg_end, .env_start, .env_end): where a process's
/// arguments and environment are.
pub fn image_offsets(btf: &Btf) -> Result<[u32; 5], BtfError> {
    Ok([
        member_offset(btf, "task_struct", "mm")?,
        member_offset(btf, "mm_struct", "arg_start")?,
        member_offset(btf, "mm_struct", "arg_end")?,
        member_offset(btf, "mm_struct", "env_start")?,
        member_offset(btf, "mm_struct", "env_end")?,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against the development kernel's own BTF: the fields exist and lie in order.
    #[test]
    fn finds_file_and_inode_fields() {
        let btf = kernel().expect("this kernel has BTF");
        let [f_inode, i_ino, i_sb, s_dev] = file_offsets(&btf).unwrap();
        assert!(f_inode > 0 && f_inode % 8 == 0);
        assert!(i_sb < i_ino, "i_sb precedes i_ino in struct inode");
        assert_eq!(s_dev % 4, 0);
        assert!(matches!(
            member_offset(&btf, "inode", "no_such_field"),
            Err(BtfError::Missing(..))
        ));
    }

    /// struct request keeps its queue pointer first and the sector after the flags;
    /// gendisk's major and first minor are adjacent ints.
    #[test]
    fn finds_request_fields() {
        let btf = kernel().expect("this kernel has BTF");
        let [q, disk, major, minor, sector, flags] = request_offsets(&btf).unwrap();
        assert_eq!(q, 0, "request.q");
        assert_eq!(disk % 8, 0);
        assert_eq!(minor, major + 4);
        assert!(flags < sector && sector % 8 == 0);
    }

    /// The request's file comes first (it is also `io_rw`'s `kiocb.ki_filp`); the CQE's fd
    /// follows its user data and result; `io_rw`'s length lies past its kiocb.
    #[test]
    fn finds_uring_fields() {
        let btf = kernel().expect("this kernel has BTF");
        let [file, fd, pos, len] = uring_offsets(&btf).unwrap();
        let cqe = member_offset(&btf, "io_kiocb", "cqe").unwrap();
        assert_eq!(file, 0, "io_kiocb.file");
        assert_eq!(fd, cqe + 12, "io_cqe: user_data, res, then the fd");
        assert_eq!(pos, 8, "kiocb: ki_filp, then ki_pos");
        assert!(len > pos && len % 4 == 0);
    }

    /// mm_struct keeps the four bounds of the arguments and environment adjacent, in order.
    #[test]
    fn finds_image_fields() {
        let btf = kernel().expect("this kernel has BTF");
        let [mm, arg_start, arg_end, env_start, env_end] = image_offsets(&btf).unwrap();
        assert!(mm > 0 && mm % 8 == 0);
        assert_eq!(
            [arg_end, env_start, env_end],
            [arg_start + 8, arg_start + 16, arg_start + 24]
        );
    }
}
