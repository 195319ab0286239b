//! Offsets of kernel struct fields, from the running kernel's BTF (/sys/kernel/btf/vmlinux),
//! for programs that read kernel structures (the `kfile` argument of VFS probes).
use std::{
    collections::HashMap,
    ffi::CString,
    fs::File,
    io::Write as _,
    os::fd::FromRawFd as _,
    sync::{
        Mutex,
        atomic::{AtomicUsize, Ordering},
    },
};

use btf_rs::{Backend, Btf, Type};

#[derive(Debug, thiserror::Error)]
pub enum BtfError {
    #[error(
        "cannot read the kernel's BTF ({0}); the probes that read kernel structures need CONFIG_DEBUG_INFO_BTF"
    )]
    Read(String),
    #[error("struct {0} has no field {1} in this kernel's BTF")]
    Missing(String, String),
    #[error("field {0}: {1}")]
    Field(String, String),
    /// The struct a request field starts from is not in this kernel: an io_uring opcode
    /// newer than the kernel.
    #[error("field {0}: this kernel has no struct {1} (an opcode newer than this kernel)")]
    NoStruct(String, String),
    /// The kernel's `enum io_uring_op` has no such opcode: newer than the kernel.
    #[error("this kernel has no {0} (an opcode newer than this kernel)")]
    NoOpcode(String),
    #[error("probes.toml gives {0} opcode {1}; this kernel numbers it {2}")]
    Opcode(String, u8, u64),
}

impl BtfError {
    /// Whether the kernel is older than what was asked for (said in the probe's row, not
    /// warned about on every run).
    pub fn is_absent(&self) -> bool {
        matches!(self, Self::NoStruct(..) | Self::NoOpcode(..))
    }
}

/// The value of enumerator `name` of `enum enom`: `Ok(None)` where the enum lacks it,
/// [`BtfError::Missing`] where this kernel's BTF has no such enum.
pub fn enumerator(btf: &KernelBtf, enom: &str, name: &str) -> Result<Option<u64>, BtfError> {
    let named = |m: &dyn btf_rs::BtfType| btf.resolve_name(m).is_ok_and(|n| n == name);
    let mut found = false;
    for t in btf.types_named(enom) {
        let value = match &t {
            Type::Enum(e) => e
                .members
                .iter()
                .find(|m| named(*m))
                .map(|m| u64::from(m.val())),
            Type::Enum64(e) => e.members.iter().find(|m| named(*m)).map(|m| m.val()),
            _ => continue,
        };
        found = true;
        if value.is_some() {
            return Ok(value);
        }
    }
    if found {
        Ok(None)
    } else {
        Err(BtfError::Missing(format!("enum {enom}"), name.into()))
    }
}

/// Byte offset of `field` in `struct strukt`, looking into anonymous unions and structs.
pub fn member_offset(btf: &KernelBtf, strukt: &str, field: &str) -> Result<u32, BtfError> {
    named_struct(btf, strukt)
        .and_then(|s| member(btf, &s, field))
        .map(|(_, off)| off)
        .ok_or_else(|| BtfError::Missing(strukt.into(), field.into()))
}

const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

/// The structs and enums the offsets here read, and io_uring's opcodes and command area:
/// looked up at start in one scan ([`KernelBtf::prefetch`]), with the run's tracepoints and
/// request structs.
pub const TYPES_READ: &[&str] = &[
    "address_space",
    "backing_dev_info",
    "bdev_inode",
    "bio",
    "block_device",
    "bvec_iter",
    "cgroup",
    "css_set",
    "dentry",
    "fdtable",
    "file",
    "files_struct",
    "folio",
    "fs_struct",
    "gendisk",
    "inode",
    "io_cmd_data",
    "io_kiocb",
    "io_uring_cqe",
    "io_uring_op",
    "kernfs_node",
    "linux_binprm",
    "mm_struct",
    "mnt_namespace",
    "ns_common",
    "nsproxy",
    "pageflags",
    "path",
    "req_flag_bits",
    "request",
    "request_queue",
    "super_block",
    "task_struct",
    "uprobes_state",
    "writeback_control",
    "xol_area",
];

/// The running kernel's BTF, read where it lies, its types found by name when asked. strata
/// needs some 50 types of 100,000 or more: parsing them all took 34 MiB and about 90 ms of
/// every start (parse and free); a scan of the type section for one name takes 0.5 ms, and
/// for all of them at once 4 ms.
pub struct KernelBtf {
    btf: Btf,
    named: Mutex<HashMap<String, Vec<u32>>>,
    scans: AtomicUsize,
}

impl std::ops::Deref for KernelBtf {
    type Target = Btf;

    fn deref(&self) -> &Btf {
        &self.btf
    }
}

impl KernelBtf {
    fn new(btf: Btf) -> Self {
        Self {
            btf,
            named: Mutex::default(),
            scans: AtomicUsize::new(0),
        }
    }

    /// Finds the types of all `names` in one scan; a name left out is found when asked, in a
    /// scan of its own.
    pub fn prefetch<S: AsRef<str>>(&self, names: &[S]) {
        let mut named = self.named.lock().unwrap_or_else(|e| e.into_inner());
        let mut wanted: Vec<&str> = names
            .iter()
            .map(AsRef::as_ref)
            .filter(|n| !named.contains_key(*n))
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        if wanted.is_empty() {
            return;
        }
        let alternatives: Vec<String> = wanted.iter().map(|n| regex::escape(n)).collect();
        let Ok(re) = regex::Regex::new(&format!("^(?:{})$", alternatives.join("|"))) else {
            return;
        };
        self.scans.fetch_add(1, Ordering::Relaxed);
        let Ok(ids) = self.btf.resolve_ids_by_regex(&re) else {
            return;
        };
        for n in wanted {
            named.insert(n.to_string(), Vec::new());
        }
        // In id order, as a scan for one name gives them.
        for id in ids {
            let Ok(t) = self.btf.resolve_type_by_id(id) else {
                continue;
            };
            let name = t.as_btf_type().and_then(|b| self.btf.resolve_name(b).ok());
            if let Some(found) = name.and_then(|n| named.get_mut(&n)) {
                found.push(id);
            }
        }
    }

    /// Scans of the type section so far: one per name not prefetched, beyond the prefetch.
    pub fn scans(&self) -> usize {
        self.scans.load(Ordering::Relaxed)
    }

    /// The types called `name` (a struct and its forward declarations, a typedef...).
    fn types_named(&self, name: &str) -> Vec<Type> {
        let mut named = self.named.lock().unwrap_or_else(|e| e.into_inner());
        let ids = named.entry(name.to_string()).or_insert_with(|| {
            self.scans.fetch_add(1, Ordering::Relaxed);
            self.btf.resolve_ids_by_name(name).unwrap_or_default()
        });
        ids.iter()
            .filter_map(|id| self.btf.resolve_type_by_id(*id).ok())
            .collect()
    }
}

/// The running kernel's BTF: mapped in place where the kernel allows it (Linux 6.16 and
/// later), else a copy in memory.
pub fn kernel() -> Result<KernelBtf, BtfError> {
    let read = |e: &dyn std::fmt::Display| BtfError::Read(e.to_string());
    let btf = match Btf::from_file_with_backend(VMLINUX, Backend::Mmap) {
        Ok(btf) => btf,
        Err(_) => {
            let bytes = std::fs::read(VMLINUX).map_err(|e| read(&e))?;
            mapped_copy(&bytes).map_err(|e| read(&e))?
        }
    };
    Ok(KernelBtf::new(btf))
}

/// BTF from `bytes`, through an anonymous memory file that btf-rs maps: its reader of
/// bytes in memory would parse every type.
fn mapped_copy(bytes: &[u8]) -> anyhow::Result<Btf> {
    let name = CString::new("strata-btf")?;
    // SAFETY: a plain syscall; the descriptor it returns is owned by `file` alone.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    // SAFETY: `fd` was just created and nothing else owns it.
    let mut file = unsafe { File::from_raw_fd(fd) };
    file.write_all(bytes)?;
    // The mapping keeps the memory file once `file` is closed.
    Ok(Btf::from_file_with_backend(
        format!("/proc/self/fd/{fd}"),
        Backend::Mmap,
    )?)
}

/// Offsets `of` the kernel's BTF, or why there are none (for a probe's `reason`).
pub fn offsets<const N: usize>(
    btf: &Result<KernelBtf, String>,
    of: fn(&KernelBtf) -> Result<[u32; N], BtfError>,
) -> Result<[u32; N], String> {
    of(btf.as_ref()?).map_err(|e| e.to_string())
}

/// (file.f_inode, inode.i_ino, inode.i_sb, super_block.s_dev).
pub fn file_offsets(btf: &KernelBtf) -> Result<[u32; 4], BtfError> {
    Ok([
        member_offset(btf, "file", "f_inode")?,
        member_offset(btf, "inode", "i_ino")?,
        member_offset(btf, "inode", "i_sb")?,
        member_offset(btf, "super_block", "s_dev")?,
    ])
}

/// Where an argument of an io_uring request lies, from the request's start: `size` bytes
/// at `off`, or behind the pointer at `off`, at `deref` into what it points to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestField {
    pub off: u32,
    pub deref: Option<u32>,
    pub size: u32,
    pub signed: bool,
    pub pointer: bool,
}

/// Resolves a request field (`io_rw.kiocb.ki_pos`, `io_open.filename->name`) in the
/// kernel's BTF. An opcode's command struct lives in the request's `cmd` area, which it
/// must fit (the kernel checks the same when it builds).
pub fn request_field(
    btf: &KernelBtf,
    f: &crate::probes::FieldPath,
) -> Result<RequestField, BtfError> {
    let fail = |why: String| BtfError::Field(f.to_string(), why);
    let root = named_struct(btf, &f.root)
        .ok_or_else(|| BtfError::NoStruct(f.to_string(), f.root.clone()))?;
    let base = if f.root == "io_kiocb" {
        0
    } else {
        let cmd = member_offset(btf, "io_kiocb", "cmd")
            .map_err(|_| fail("this kernel's io_kiocb has no command area (`cmd`)".into()))?;
        let room = named_struct(btf, "io_cmd_data").map_or(0, |s| s.size());
        if root.size() > room {
            return Err(fail(format!(
                "struct {} ({} bytes) is no request command: the command area holds {room}",
                f.root,
                root.size()
            )));
        }
        cmd
    };
    let (off, mut ty) = walk(btf, Type::Struct(root), &f.path, base).map_err(fail)?;
    let deref = if f.behind.is_empty() {
        None
    } else {
        let Type::Ptr(p) = &ty else {
            return Err(fail("`->` follows a pointer".into()));
        };
        let target = strip(
            btf,
            btf.resolve_chained_type(p)
                .map_err(|e| fail(e.to_string()))?,
        )?;
        let (d, t) = walk(btf, target, &f.behind, 0).map_err(fail)?;
        ty = t;
        Some(d)
    };
    let (size, signed, pointer) = match &ty {
        Type::Int(i) => (i.size() as u32, i.is_signed(), false),
        Type::Enum(e) => (e.size() as u32, e.is_signed(), false),
        Type::Enum64(e) => (e.size() as u32, e.is_signed(), false),
        Type::Ptr(_) => (8, false, true),
        other => {
            return Err(fail(format!("a {}, not a number or pointer", other.name())));
        }
    };
    if !matches!(size, 1 | 2 | 4 | 8) {
        return Err(fail(format!("{size} bytes: not a number strata reads")));
    }
    Ok(RequestField {
        off,
        deref,
        size,
        signed,
        pointer,
    })
}

fn named_struct(btf: &KernelBtf, name: &str) -> Option<btf_rs::Struct> {
    btf.types_named(name).into_iter().find_map(|t| match t {
        Type::Struct(s) if !s.members.is_empty() => Some(s),
        _ => None,
    })
}

/// Follows typedefs and qualifiers to the type they name.
fn strip(btf: &KernelBtf, mut t: Type) -> Result<Type, BtfError> {
    for _ in 0..16 {
        t = match &t {
            Type::Typedef(x) => btf.resolve_chained_type(x),
            Type::Const(x) => btf.resolve_chained_type(x),
            Type::Volatile(x) => btf.resolve_chained_type(x),
            Type::Restrict(x) => btf.resolve_chained_type(x),
            Type::TypeTag(x) => btf.resolve_chained_type(x),
            _ => return Ok(t),
        }
        .map_err(|e| BtfError::Read(e.to_string()))?;
    }
    Ok(t)
}

/// Offset (from `base`) and type of the member `path` names, from struct or union `t`.
fn walk(
    btf: &KernelBtf,
    mut t: Type,
    path: &[String],
    mut off: u32,
) -> Result<(u32, Type), String> {
    for name in path {
        let (Type::Struct(s) | Type::Union(s)) = &t else {
            return Err(format!(
                "{name}: a member of a {}, not of a struct",
                t.name()
            ));
        };
        let m = member(btf, s, name).ok_or_else(|| format!("no member {name} in this kernel"))?;
        if m.0.bitfield_size().is_some_and(|b| b != 0) {
            return Err(format!("{name} is a bit field"));
        }
        off += m.1;
        t = strip(
            btf,
            btf.resolve_chained_type(&m.0).map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())?;
    }
    Ok((off, t))
}

/// A member by name and its byte offset, looking into anonymous unions and structs.
fn member(btf: &KernelBtf, s: &btf_rs::Struct, name: &str) -> Option<(btf_rs::Member, u32)> {
    for m in &s.members {
        let at = m.bit_offset() / 8;
        let n = btf.resolve_name(m).unwrap_or_default();
        if n == name {
            return Some((m.clone(), at));
        }
        if n.is_empty() {
            if let Ok(Type::Struct(inner) | Type::Union(inner)) = btf.resolve_chained_type(m) {
                if let Some((found, off)) = member(btf, &inner, name) {
                    return Some((found, at + off));
                }
            }
        }
    }
    None
}

/// (task_struct.mm, mm_struct.arg_start, .arg_end, .env_start, .env_end): where a process's
/// arguments and environment are.
pub fn image_offsets(btf: &KernelBtf) -> Result<[u32; 5], BtfError> {
    Ok([
        member_offset(btf, "task_struct", "mm")?,
        member_offset(btf, "mm_struct", "arg_start")?,
        member_offset(btf, "mm_struct", "arg_end")?,
        member_offset(btf, "mm_struct", "env_start")?,
        member_offset(btf, "mm_struct", "env_end")?,
    ])
}

/// (mm_struct's `uprobes_state.xol_area`, xol_area.vaddr): where a process's uprobes area
/// is, whose first slot is the kernel's return trampoline.
pub fn trampoline_offsets(btf: &KernelBtf) -> Result<[u32; 2], BtfError> {
    Ok([
        member_offset(btf, "mm_struct", "uprobes_state")?
            + member_offset(btf, "uprobes_state", "xol_area")?,
        member_offset(btf, "xol_area", "vaddr")?,
    ])
}

/// (io_kiocb.opcode, io_kiocb.ctx, io_kiocb.flags, io_uring_cqe.res): what the io_uring
/// programs on BTF raw tracepoints read from the request and its completion entry.
pub fn uring_offsets(btf: &KernelBtf) -> Result<[u32; 4], BtfError> {
    Ok([
        member_offset(btf, "io_kiocb", "opcode")?,
        member_offset(btf, "io_kiocb", "ctx")?,
        member_offset(btf, "io_kiocb", "flags")?,
        member_offset(btf, "io_uring_cqe", "res")?,
    ])
}

/// Where the bio and request programs on BTF raw tracepoints read. Linux 5.15 and later:
/// before, the disk hung off the request itself, and the bio had no block device.
pub fn block_offsets(btf: &KernelBtf) -> Result<strata_common::BlockOffsets, BtfError> {
    let m = |s: &str, f: &str| member_offset(btf, s, f);
    let iter = m("bio", "bi_iter")?;
    Ok(strata_common::BlockOffsets {
        bio_bdev: m("bio", "bi_bdev")?,
        bio_sector: iter + m("bvec_iter", "bi_sector")?,
        bio_size: iter + m("bvec_iter", "bi_size")?,
        bio_opf: m("bio", "bi_opf")?,
        bdev_disk: m("block_device", "bd_disk")?,
        disk_major: m("gendisk", "major")?,
        disk_minor: m("gendisk", "first_minor")?,
        rq_q: m("request", "q")?,
        rq_sector: m("request", "__sector")?,
        rq_len: m("request", "__data_len")?,
        rq_flags: m("request", "cmd_flags")?,
        q_disk: m("request_queue", "disk")?,
        req_flag_bits: req_flag_bits(btf)?,
    })
}

/// Where the page-cache and writeback programs on BTF raw tracepoints read.
pub fn page_offsets(btf: &KernelBtf) -> Result<strata_common::PageOffsets, BtfError> {
    let m = |s: &str, f: &str| member_offset(btf, s, f);
    // A large folio's order: the low byte of `_flags_1` (Linux 6.6 on), `_folio_order` before.
    let folio_order = m("folio", "_flags_1").or_else(|_| m("folio", "_folio_order"))?;
    let pg_head = enumerator(btf, "pageflags", "PG_head")?
        .filter(|b| *b < 64)
        .ok_or_else(|| BtfError::Missing("enum pageflags".into(), "PG_head".into()))?;
    Ok(strata_common::PageOffsets {
        folio_flags: m("folio", "flags")?,
        folio_mapping: m("folio", "mapping")?,
        folio_index: m("folio", "index")?,
        folio_order,
        pg_head: pg_head as u32,
        mapping_host: m("address_space", "host")?,
        mapping_wb_index: m("address_space", "writeback_index")?,
        inode_mapping: m("inode", "i_mapping")?,
        inode_ino: m("inode", "i_ino")?,
        inode_sb: m("inode", "i_sb")?,
        inode_mode: m("inode", "i_mode")?,
        sb_dev: m("super_block", "s_dev")?,
        sb_bdi: m("super_block", "s_bdi")?,
        bdi_dev: m("backing_dev_info", "dev")?,
        bdi_name: m("backing_dev_info", "dev_name")?,
        wbc_nr_to_write: m("writeback_control", "nr_to_write")?,
        bdev_vfs_inode: m("bdev_inode", "vfs_inode")?,
        bdev_disk: m("block_device", "bd_disk")?,
        disk_bdi: m("gendisk", "bdi")?,
    })
}

/// The bit numbers of the request flags of `rwbs` (`strata_common::RWBS_FLAGS`), from the
/// kernel's `enum req_flag_bits`; `NO_FLAG_BIT` for one it lacks.
fn req_flag_bits(btf: &KernelBtf) -> Result<[u8; 8], BtfError> {
    let mut bits = [strata_common::NO_FLAG_BIT; 8];
    for (bit, (_, name)) in bits.iter_mut().zip(strata_common::RWBS_FLAGS) {
        if let Some(v) = enumerator(btf, "req_flag_bits", name)?.filter(|v| *v < 32) {
            *bit = v as u8;
        }
    }
    Ok(bits)
}

/// Where the programs read the current thread's ids (`task_struct.pid`, `.tgid`).
pub fn task_offsets(btf: &KernelBtf) -> Result<strata_common::TaskOffsets, BtfError> {
    let mut offsets = strata_common::TaskOffsets {
        pid: member_offset(btf, "task_struct", "pid")?,
        tgid: member_offset(btf, "task_struct", "tgid")?,
        bpf_storage: member_offset(btf, "task_struct", "bpf_storage").unwrap_or(0),
        ..cgroup_offsets(btf).unwrap_or_default()
    };
    // The same offsets as `Config`'s (`fd_offsets`), here for direct loads.
    if let Ok([files, fdt, max_fds, fd, _]) = fd_offsets(btf) {
        offsets.files = files;
        offsets.files_fdt = fdt;
        offsets.fdt_max_fds = max_fds;
        offsets.fdt_fd = fd;
    }
    Ok(offsets)
}

/// Where the programs read the current task's cgroup v2 id (all 0 where one is missing).
fn cgroup_offsets(btf: &KernelBtf) -> Result<strata_common::TaskOffsets, BtfError> {
    let m = |s: &str, f: &str| member_offset(btf, s, f);
    Ok(strata_common::TaskOffsets {
        cgroups: m("task_struct", "cgroups")?,
        css_dfl_cgrp: m("css_set", "dfl_cgrp")?,
        cgroup_kn: m("cgroup", "kn")?,
        kn_id: m("kernfs_node", "id")?,
        ..Default::default()
    })
}

/// (task_struct.pid, linux_binprm.interp): what the lifecycle programs on BTF raw
/// tracepoints read behind their arguments.
pub fn lifecycle_offsets(btf: &KernelBtf) -> Result<[u32; 2], BtfError> {
    Ok([
        member_offset(btf, "task_struct", "pid")?,
        member_offset(btf, "linux_binprm", "interp")?,
    ])
}

/// Where the lifecycle programs read the root a process sees its files from
/// ([`strata_common::RootId`]): task_struct.fs, fs_struct.root's dentry, dentry.d_inode,
/// dentry.d_sb, task_struct.nsproxy, nsproxy.mnt_ns, mnt_namespace.ns's inum.
pub fn root_offsets(btf: &KernelBtf) -> Result<[u32; 7], BtfError> {
    let m = |s: &str, f: &str| member_offset(btf, s, f);
    Ok([
        m("task_struct", "fs")?,
        m("fs_struct", "root")? + m("path", "dentry")?,
        m("dentry", "d_inode")?,
        m("dentry", "d_sb")?,
        m("task_struct", "nsproxy")?,
        m("nsproxy", "mnt_ns")?,
        m("mnt_namespace", "ns")? + m("ns_common", "inum")?,
    ])
}

/// The typedef of tracepoint `name`'s BTF raw tracepoint prototype.
pub fn trace_typedef(name: &str) -> String {
    format!("btf_trace_{name}")
}

/// How many arguments tracepoint `name` hands its BTF raw tracepoint programs (its
/// `TP_PROTO`), from the kernel's `btf_trace_NAME` typedef; a program that reads past them is
/// refused at load.
pub fn tracepoint_args(btf: &KernelBtf, name: &str) -> Result<usize, BtfError> {
    let missing = || BtfError::Missing(format!("tracepoint {name}"), "prototype".into());
    let typedef = btf
        .types_named(&trace_typedef(name))
        .into_iter()
        .find(|t| matches!(t, Type::Typedef(_)))
        .ok_or_else(missing)?;
    let Type::Ptr(ptr) = strip(btf, typedef)? else {
        return Err(missing());
    };
    match btf.resolve_chained_type(&ptr) {
        // The first parameter is the tracepoint's private data, not an argument.
        Ok(Type::FuncProto(f)) => Ok(f.parameters.len().saturating_sub(1)),
        _ => Err(missing()),
    }
}

/// (task_struct.files, files_struct.fdt, fdtable.max_fds, fdtable.fd, inode.i_mode): a
/// descriptor's file, and what it is.
pub fn fd_offsets(btf: &KernelBtf) -> Result<[u32; 5], BtfError> {
    Ok([
        member_offset(btf, "task_struct", "files")?,
        member_offset(btf, "files_struct", "fdt")?,
        member_offset(btf, "fdtable", "max_fds")?,
        member_offset(btf, "fdtable", "fd")?,
        member_offset(btf, "inode", "i_mode")?,
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
        // The three inode fields a descriptor's file is known by are read at once here.
        let [.., i_mode] = fd_offsets(&btf).unwrap();
        let (lo, words) = strata_common::inode_words(i_ino, i_sb, i_mode)
            .expect("struct inode keeps its number, superblock and mode close together");
        for (off, size) in [(i_ino, 8), (i_sb, 8), (i_mode, 2)] {
            assert!(
                off >= lo && off + size <= lo + 8 * words,
                "{off} in {lo}+{words} words"
            );
        }
    }

    /// Fields a helper read of a few words covers, each within one word, and those it does
    /// not: too far apart, or one straddling two words.
    #[test]
    fn inode_words_cover_the_three_fields_or_none() {
        use strata_common::{INODE_WORDS, inode_words};
        // Linux 6.x on x86-64: i_mode 0, i_sb 40, i_ino 64.
        assert_eq!(inode_words(64, 40, 0), Some((0, 9)));
        assert_eq!(inode_words(72, 48, 14), Some((8, 9)));
        assert_eq!(inode_words(8, 16, 2), Some((0, 3)));
        let last = 8 * INODE_WORDS as u32 - 8;
        assert_eq!(inode_words(last, 0, 2), Some((0, INODE_WORDS as u32)));
        assert_eq!(inode_words(last + 8, 0, 2), None, "one word too far");
        assert_eq!(inode_words(68, 40, 0), None, "i_ino across two words");
        assert_eq!(inode_words(64, 40, 7), None, "i_mode across two words");
    }

    /// Kernels before 6.16 cannot map their BTF in place; a copy in a memory file is read
    /// instead, and must give the same answers (so must a name asked for twice).
    #[test]
    fn a_copy_in_memory_reads_as_the_kernel_btf() {
        let btf = kernel().expect("this kernel has BTF");
        let copy = KernelBtf::new(mapped_copy(&std::fs::read(VMLINUX).unwrap()).unwrap());
        for b in [&btf, &copy, &btf] {
            assert_eq!(
                format!("{:?}", block_offsets(b).unwrap()),
                format!("{:?}", block_offsets(&btf).unwrap())
            );
            assert_eq!(fd_offsets(b).unwrap(), fd_offsets(&btf).unwrap());
            assert_eq!(tracepoint_args(b, "sys_enter").unwrap(), 2);
            assert!(enumerator(b, "pageflags", "PG_head").unwrap().is_some());
        }
        assert!(matches!(
            tracepoint_args(&copy, "no_such_event"),
            Err(BtfError::Missing(..))
        ));
    }

    /// Everything the offsets read is found in the one scan at start, and found the same as
    /// by a scan per name.
    #[test]
    fn the_types_read_are_found_in_one_scan_as_one_by_one() {
        let all = |b: &KernelBtf| {
            let cmd = request_field(b, &"io_rw.len".parse().unwrap()).unwrap();
            format!(
                "{:?}",
                (
                    file_offsets(b).unwrap(),
                    block_offsets(b).unwrap(),
                    page_offsets(b).unwrap(),
                    image_offsets(b).unwrap(),
                    uring_offsets(b).unwrap(),
                    fd_offsets(b).unwrap(),
                    lifecycle_offsets(b).unwrap(),
                    root_offsets(b).unwrap(),
                    task_offsets(b).unwrap(),
                    enumerator(b, "io_uring_op", "IORING_OP_READ").unwrap(),
                    cmd,
                    tracepoint_args(b, "sched_process_exec").unwrap(),
                )
            )
        };
        let one = kernel().expect("this kernel has BTF");
        one.prefetch(TYPES_READ);
        one.prefetch(&["io_rw".to_string(), trace_typedef("sched_process_exec")]);
        let by_name = kernel().unwrap();
        assert_eq!(all(&one), all(&by_name));
        assert_eq!(one.scans(), 2, "a scan per prefetch, none after");
        assert!(by_name.scans() > 20, "{}", by_name.scans());
    }

    /// struct fdtable begins with its size, then the array of files.
    #[test]
    fn finds_descriptor_table_fields() {
        let btf = kernel().expect("this kernel has BTF");
        let [files, fdt, max_fds, fd, mode] = fd_offsets(&btf).unwrap();
        assert!(files > 0 && files % 8 == 0 && fdt % 8 == 0);
        assert_eq!((max_fds, fd, mode), (0, 8, 0), "i_mode opens struct inode");
    }

    /// Request fields against this kernel: the request's file first (it is also `io_rw`'s
    /// `kiocb.ki_filp`), the CQE's fd after its user data and result, a read's offset past
    /// the kiocb's file pointer in the command area; an open's path behind its `filename`.
    #[test]
    fn finds_io_uring_request_fields() {
        let btf = kernel().expect("this kernel has BTF");
        let field = |s: &str| request_field(&btf, &s.parse().unwrap());
        let cmd = member_offset(&btf, "io_kiocb", "cmd").unwrap();
        let cqe = member_offset(&btf, "io_kiocb", "cqe").unwrap();
        let file = field("io_kiocb.file").unwrap();
        assert_eq!((file.off, file.size, file.pointer), (0, 8, true));
        let fd = field("io_kiocb.cqe.fd").unwrap();
        assert_eq!((fd.off, fd.size, fd.signed), (cqe + 12, 4, true));
        let pos = field("io_rw.kiocb.ki_pos").unwrap();
        assert_eq!((pos.off, pos.size, pos.signed), (cmd + 8, 8, true));
        let len = field("io_rw.len").unwrap();
        assert_eq!((len.size, len.signed), (4, false));
        let name = field("io_open.filename->name").unwrap();
        assert_eq!((name.deref, name.pointer), (Some(0), true));
        assert!(name.off > cmd && name.off < cmd + 64);
        for (bad, why) in [
            ("io_open.no_such", "no member no_such"),
            ("io_open.dfd->x", "`->` follows a pointer"),
            ("io_open.how", "a struct, not a number"),
            (
                "no_such_struct.x",
                "this kernel has no struct no_such_struct",
            ),
            ("task_struct.pid", "is no request command"),
        ] {
            let e = field(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    /// Opcodes by name from the kernel's `enum io_uring_op`; every built-in request's number
    /// is the kernel's (or the kernel is older than the opcode).
    #[test]
    fn finds_io_uring_opcodes() {
        let btf = kernel().expect("this kernel has BTF");
        let op = |name: &str| enumerator(&btf, "io_uring_op", name).unwrap();
        assert_eq!(op("IORING_OP_NOP"), Some(0));
        assert_eq!(op("IORING_OP_WRITE"), Some(23));
        assert_eq!(op("IORING_OP_NO_SUCH"), None);
        assert!(enumerator(&btf, "no_such_enum", "X").is_err());
        let probes = crate::probes::parse(crate::probes::BUILTIN, "probes.toml").unwrap();
        let mut checked = 0;
        for p in &probes {
            if let crate::probes::Target::Request { name, opcode, .. } = &p.target {
                if let Some(v) = op(name) {
                    assert_eq!(v, u64::from(*opcode), "{name}");
                    checked += 1;
                }
            }
        }
        assert!(checked >= 20, "{checked} requests checked");
    }

    /// struct request keeps its queue pointer first and the sector after the flags;
    /// gendisk's major and first minor are adjacent ints; bvec_iter begins with the sector,
    /// then the size; the rwbs flags are distinct bits above the operation's byte.
    #[test]
    fn finds_bio_and_request_fields_and_request_flag_bits() {
        let btf = kernel().expect("this kernel has BTF");
        let o = block_offsets(&btf).unwrap();
        assert_eq!(o.rq_q, 0, "request.q");
        assert_eq!(o.q_disk % 8, 0);
        assert_eq!(o.disk_minor, o.disk_major + 4);
        assert!(o.rq_flags < o.rq_sector && o.rq_sector.is_multiple_of(8));
        assert_eq!(o.bio_size, o.bio_sector + 8);
        assert!(o.bio_bdev.is_multiple_of(8) && o.bdev_disk.is_multiple_of(8));
        assert!(o.bio_opf.is_multiple_of(4) && o.rq_len.is_multiple_of(4));
        let bits = o.req_flag_bits;
        let mut known: Vec<u8> = bits[..strata_common::RWBS_FLAGS.len()].to_vec();
        assert!(known.iter().all(|b| (8..32).contains(b)), "{bits:?}");
        known.sort_unstable();
        known.dedup();
        assert_eq!(known.len(), strata_common::RWBS_FLAGS.len(), "{bits:?}");
        assert!(
            bits[strata_common::RWBS_FLAGS.len()..]
                .iter()
                .all(|b| *b == strata_common::NO_FLAG_BIT)
        );
    }

    /// A folio begins with its flags and keeps its order in its second page; the head flag
    /// is a low bit.
    #[test]
    fn finds_folio_and_writeback_fields() {
        let btf = kernel().expect("this kernel has BTF");
        let o = page_offsets(&btf).unwrap();
        assert_eq!(o.folio_flags, 0);
        assert_eq!(o.folio_index, o.folio_mapping + 8);
        assert!(o.folio_order >= 64, "order in the second page: {o:?}");
        assert!(o.pg_head < 32, "PG_head: {o:?}");
        assert_eq!(o.inode_mode, 0, "i_mode opens struct inode");
    }

    /// The lifecycle tracepoints' prototypes: task_newtask (task, clone_flags),
    /// sched_process_exec (p, old_pid, bprm), sched_process_exit (p[, group_dead]) as its
    /// trace event's format says; a name that is no tracepoint is an error.
    #[test]
    fn counts_tracepoint_arguments() {
        let btf = kernel().expect("this kernel has BTF");
        assert_eq!(tracepoint_args(&btf, "task_newtask").unwrap(), 2);
        assert_eq!(tracepoint_args(&btf, "sched_process_exec").unwrap(), 3);
        assert_eq!(tracepoint_args(&btf, "block_rq_complete").unwrap(), 3);
        let format = crate::tracefs::format(
            &crate::tracefs::root().unwrap(),
            "sched",
            "sched_process_exit",
        )
        .unwrap();
        let expected = if format.field("group_dead").is_some() {
            2
        } else {
            1
        };
        assert_eq!(
            tracepoint_args(&btf, "sched_process_exit").unwrap(),
            expected
        );
        assert!(tracepoint_args(&btf, "no_such_tracepoint").is_err());
        let [pid, interp] = lifecycle_offsets(&btf).unwrap();
        assert!(pid > 0 && pid % 4 == 0 && interp % 8 == 0);
    }

    /// mm_struct keeps the four bounds of the arguments and environment adjacent, in order.
    #[test]
    fn finds_the_tasks_ids() {
        let btf = kernel().expect("this kernel has BTF");
        let t = task_offsets(&btf).unwrap();
        // pid_t pid; pid_t tgid; one after the other in struct task_struct.
        assert!(t.pid > 0 && t.pid.is_multiple_of(4), "{t:?}");
        assert_eq!(t.tgid, t.pid + 4, "{t:?}");
        assert!(
            t.bpf_storage > 0 && t.bpf_storage.is_multiple_of(8),
            "{t:?}"
        );
        // Pointers (and the u64 id): 8-byte aligned; the kernfs node is not a cgroup's first
        // field, but a task's cgroups may be at any offset.
        for off in [t.cgroups, t.css_dfl_cgrp, t.cgroup_kn, t.kn_id] {
            assert!(off.is_multiple_of(8), "{t:?}");
        }
        assert!(t.cgroups > 0 && t.cgroup_kn > 0, "{t:?}");
    }

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
