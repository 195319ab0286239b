//! Multi-uprobe links (Linux 6.6+): one BPF link attaches a program at many offsets of one
//! file. Releasing perf-event uprobes waits for RCU grace periods once per probe, one probe
//! after another under a kernel-wide lock (measured on a loaded VM here: 50 s at exit for
//! strata's 278 default probes); a multi link waits once for all its offsets.
//!
//! aya 0.14 has no such link, and the kernel wants the attach type at load time: the two
//! uprobe programs are loaded once more here, from the same object, sharing the maps aya
//! created (the same stacks, ring buffer and specs). From Linux 6.13 a session link puts
//! entry and return on one link, one program at both ends, and sets up the return only for
//! a call whose entry asked for it.
use std::{
    collections::HashSet,
    ffi::{CStr, CString},
    io,
    os::{
        fd::{AsFd as _, AsRawFd as _, FromRawFd as _, OwnedFd, RawFd},
        unix::ffi::OsStrExt as _,
    },
    path::{Path, PathBuf},
};

use anyhow::{Context as _, anyhow};
use aya::{Ebpf, maps::Map};
use aya_obj::generated::{bpf_attach_type, bpf_cmd, bpf_insn, bpf_prog_type};

/// The kernel's attach type of plain multi-uprobe links.
const BPF_TRACE_UPROBE_MULTI: u32 = bpf_attach_type::BPF_TRACE_UPROBE_MULTI as u32;

/// The kernel's `attr.link_create.uprobe_multi.flags` bit for return probes.
const BPF_F_UPROBE_MULTI_RETURN: u32 = 1;

/// The kernel's `BPF_TRACE_UPROBE_SESSION` attach type (Linux 6.13+), newer than aya's
/// bindings.
const BPF_TRACE_UPROBE_SESSION: u32 = 57;

/// The programs loaded for multi links.
pub enum Programs {
    /// An entry and a return program, each on links of its own.
    Pair { entry: OwnedFd, ret: OwnedFd },
    /// One program at both ends, on session links (Linux 6.13+): the kernel sets up the
    /// return only when the entry asks for it, so a call strata drops at the entry (a
    /// process it does not trace) costs one trap instead of two. It serves the probes
    /// without a return too, whose entries never ask for one (their calls are recorded at
    /// the entry): a program fewer to verify at the start, and this one took longest.
    Session(OwnedFd),
}

/// The programs [`Programs::load`] loads, by name.
pub struct Names {
    pub entry: &'static str,
    pub ret: &'static str,
    /// The program for session links, loaded alone where the kernel has them.
    pub session: &'static str,
}

/// The two programs being verified on a thread of their own: the entry program's
/// verification is the longest single step of a start (about 80 of the 170 ms all program
/// loads take here), and nothing needs it before the first uprobe is linked.
pub struct Loading(std::thread::JoinHandle<anyhow::Result<Programs>>);

impl Loading {
    /// The programs, once verified.
    pub fn wait(self) -> anyhow::Result<Programs> {
        self.0
            .join()
            .map_err(|_| anyhow!("the thread loading the multi-uprobe programs panicked"))?
    }
}

impl Programs {
    /// Starts loading the programs `names` from `object`, whose maps aya has created in
    /// `ebpf`: the session program alone where the kernel has session links, else the entry
    /// and the return program. Fails at once on kernels without multi uprobes
    /// (before 6.6 the link fails instead).
    pub fn load(ebpf: &Ebpf, object: &[u8], names: Names) -> anyhow::Result<Loading> {
        supported(BPF_TRACE_UPROBE_MULTI)?;
        let session = supported(BPF_TRACE_UPROBE_SESSION)
            .map_err(|e| log::debug!("no session links, a return link beside each entry: {e:#}"))
            .is_ok();
        let mut obj = aya_obj::Object::parse(object).context("parsing the eBPF object")?;
        let text_sections: HashSet<usize> = obj.functions.keys().map(|(s, _)| *s).collect();
        let defs = obj.maps.clone();
        let fds = defs
            .iter()
            .map(|(name, def)| {
                let map = ebpf
                    .map(name)
                    .ok_or_else(|| anyhow!("map {name} was not created"))?;
                Ok((name.as_str(), map_fd(map), def))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        obj.relocate_maps(fds.into_iter(), &text_sections)?;
        obj.relocate_calls(&text_sections)?;
        let insns = |name: &str| -> anyhow::Result<(String, Vec<bpf_insn>)> {
            let prog = obj
                .programs
                .get(name)
                .ok_or_else(|| anyhow!("no program {name} in the object"))?;
            let insns = obj.functions[&prog.function_key()].instructions.clone();
            Ok((name.to_owned(), insns))
        };
        let (entry, ret) = match session {
            true => (insns(names.session)?, None),
            false => (insns(names.entry)?, Some(insns(names.ret)?)),
        };
        let license = obj.license.clone();
        Ok(Loading(std::thread::spawn(move || {
            // Signals are for the main thread: the verifier gives up with EAGAIN when one is
            // pending on its thread, as a SIGCHLD of a helper process can be.
            use nix::sys::signal::{SigSet, SigmaskHow, pthread_sigmask};
            pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&SigSet::all()), None)
                .context("blocking signals on the thread loading the uprobe programs")?;
            let load = |(name, insns): &(String, Vec<bpf_insn>), attach_type| {
                let started = std::time::Instant::now();
                let fd =
                    prog_load(name, insns, &license, attach_type).map_err(anyhow::Error::new)?;
                log::debug!(
                    "program {name}: verified in {} ms",
                    started.elapsed().as_millis()
                );
                anyhow::Ok(fd)
            };
            Ok(match ret {
                None => Self::Session(load(&entry, BPF_TRACE_UPROBE_SESSION)?),
                Some(ret) => Self::Pair {
                    entry: load(&entry, BPF_TRACE_UPROBE_MULTI)?,
                    ret: load(&ret, BPF_TRACE_UPROBE_MULTI)?,
                },
            })
        })))
    }

    /// Attaches entry and return at `offsets` of the file at `path`, the probe at
    /// `offsets[i]` with the cookie `cookies[i]`: one session link, or a return link and an
    /// entry link, the return first (an entry seen without its return would leave a stale
    /// frame under every later call of the thread). The links detach when dropped, the
    /// entry first.
    pub fn attach(
        &self,
        path: &Path,
        offsets: &[u64],
        cookies: &[u64],
    ) -> io::Result<Vec<OwnedFd>> {
        let path = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let link = |prog: &OwnedFd, attach_type, flags| {
            link_create(
                prog.as_raw_fd(),
                &path,
                offsets,
                cookies,
                attach_type,
                flags,
            )
        };
        Ok(match self {
            Self::Session(both) => vec![link(both, BPF_TRACE_UPROBE_SESSION, 0)?],
            Self::Pair { entry, ret } => {
                let ret = link(ret, BPF_TRACE_UPROBE_MULTI, BPF_F_UPROBE_MULTI_RETURN)?;
                vec![link(entry, BPF_TRACE_UPROBE_MULTI, 0)?, ret]
            }
        })
    }

    /// Whether [`Self::attach`] makes session links.
    pub fn session(&self) -> bool {
        matches!(self, Self::Session(_))
    }

    /// Attaches the entry alone at `offsets` (probes placed on calls of a function, where a
    /// return probe would take the caller's stack for a return address): the entry program,
    /// or the session program, whose entry asks for no return at these probes.
    pub fn attach_entry(
        &self,
        path: &Path,
        offsets: &[u64],
        cookies: &[u64],
    ) -> io::Result<OwnedFd> {
        let path = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let (prog, attach_type) = match self {
            Self::Session(both) => (both, BPF_TRACE_UPROBE_SESSION),
            Self::Pair { entry, .. } => (entry, BPF_TRACE_UPROBE_MULTI),
        };
        link_create(prog.as_raw_fd(), &path, offsets, cookies, attach_type, 0)
    }

    /// The programs (for their run statistics): the session program, or the entry's and
    /// the return's.
    pub fn fds(&self) -> Vec<RawFd> {
        match self {
            Self::Session(both) => vec![both.as_raw_fd()],
            Self::Pair { entry, ret } => vec![entry.as_raw_fd(), ret.as_raw_fd()],
        }
    }

    /// Links the entry program, and the return program when `with_return`, at `offsets` of
    /// the file at `path`, keeping what makes the links again after [`Linked::release`].
    pub fn link(
        &self,
        path: &Path,
        offsets: &[u64],
        cookies: &[u64],
        with_return: bool,
    ) -> io::Result<Linked> {
        let mut l = Linked {
            file: None,
            offsets: offsets.to_vec(),
            cookies: cookies.to_vec(),
            with_return,
            links: Vec::new(),
        };
        self.make(&mut l, path)?;
        l.file = std::fs::File::open(path).ok();
        Ok(l)
    }

    /// Makes a released link again (nothing for one that is attached).
    pub fn relink(&self, l: &mut Linked) -> io::Result<()> {
        if !l.links.is_empty() {
            return Ok(());
        }
        let file = l.file.as_ref().ok_or(io::ErrorKind::NotFound)?;
        let path = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        self.make(l, &path)
    }

    fn make(&self, l: &mut Linked, path: &Path) -> io::Result<()> {
        l.links = match l.with_return {
            true => self.attach(path, &l.offsets, &l.cookies)?,
            false => vec![self.attach_entry(path, &l.offsets, &l.cookies)?],
        };
        Ok(())
    }
}

/// One file's multi links (a session link, the entry and the return program, or the entry
/// alone), and what makes them again once released: the kernel keeps a breakpoint in every
/// process that maps a probed library, written into its own copy of the page at each exec,
/// and every call of a probed function traps, whoever makes it; an idle daemon releases its
/// links.
pub struct Linked {
    /// The library, held open: the path it was linked by may go with the process that mapped
    /// it (a container's library). None if it could not be opened: then it stays linked.
    file: Option<std::fs::File>,
    offsets: Vec<u64>,
    cookies: Vec<u64>,
    with_return: bool,
    /// The links, the entry first (they detach in that order when dropped); empty while
    /// released.
    links: Vec<OwnedFd>,
}

impl Linked {
    /// Takes the links out to be dropped (each drop waits for an RCU grace period), unless
    /// they could not be made again.
    pub fn release(&mut self) -> Option<Vec<OwnedFd>> {
        match (&self.file, self.links.is_empty()) {
            (Some(_), false) => Some(std::mem::take(&mut self.links)),
            _ => None,
        }
    }

    /// Whether the links are attached.
    pub fn attached(&self) -> bool {
        !self.links.is_empty()
    }

    /// The probes linked (for a warning naming what a failed relink left out).
    pub fn probes(&self) -> usize {
        self.offsets.len()
    }
}

/// Whether the kernel has multi-uprobe links of `attach_type`, tried with a two-instruction
/// program (before the real ones are verified): older kernels load such a program but
/// refuse its link, and a link on a directory fails with EBADF where they exist (libbpf
/// probes the same way).
fn supported(attach_type: u32) -> anyhow::Result<()> {
    let prog = prog_load(
        "strata_probe",
        &crate::verifier::smallest(),
        c"GPL",
        attach_type,
    )
    .context("loading a multi-uprobe program")?;
    match link_create(prog.as_raw_fd(), c"/", &[0], &[0], attach_type, 0) {
        Err(e) if e.raw_os_error() == Some(libc::EBADF) => Ok(()),
        Err(e) if attach_type == BPF_TRACE_UPROBE_SESSION => Err(anyhow!(
            "the kernel has no multi-uprobe session links ({e}; Linux 6.13+)"
        )),
        Err(e) => Err(anyhow!(
            "the kernel has no multi-uprobe links ({e}; Linux 6.6+)"
        )),
        Ok(_) => Err(anyhow!("the kernel linked a uprobe on a directory")),
    }
}

/// Any map's file descriptor (aya exposes it per map kind only).
fn map_fd(map: &Map) -> RawFd {
    let data = match map {
        Map::Array(d)
        | Map::ArrayOfMaps(d)
        | Map::BloomFilter(d)
        | Map::CgroupArray(d)
        | Map::CgroupStorage(d)
        | Map::CgrpStorage(d)
        | Map::CpuMap(d)
        | Map::DevMap(d)
        | Map::DevMapHash(d)
        | Map::HashMap(d)
        | Map::HashOfMaps(d)
        | Map::InodeStorage(d)
        | Map::LpmTrie(d)
        | Map::LruHashMap(d)
        | Map::PerCpuArray(d)
        | Map::PerCpuCgroupStorage(d)
        | Map::PerCpuHashMap(d)
        | Map::PerCpuLruHashMap(d)
        | Map::PerfEventArray(d)
        | Map::ProgramArray(d)
        | Map::Queue(d)
        | Map::ReusePortSockArray(d)
        | Map::RingBuf(d)
        | Map::SockHash(d)
        | Map::SockMap(d)
        | Map::SkStorage(d)
        | Map::Stack(d)
        | Map::StackTraceMap(d)
        | Map::Unsupported(d)
        | Map::XskMap(d) => d,
    };
    data.fd().as_fd().as_raw_fd()
}

/// `union bpf_attr` for BPF_LINK_CREATE of a multi uprobe. No implicit padding: the kernel
/// refuses an attr with any nonzero byte past the fields it knows.
#[repr(C)]
struct LinkCreateAttr {
    prog_fd: u32,
    target_fd: u32,
    attach_type: u32,
    flags: u32,
    path: u64,
    offsets: u64,
    ref_ctr_offsets: u64,
    cookies: u64,
    cnt: u32,
    multi_flags: u32,
    pid: u32,
    zero: u32,
}

fn bpf<T>(cmd: bpf_cmd, attr: &T) -> io::Result<OwnedFd> {
    // SAFETY: `attr` is the head of `union bpf_attr` for `cmd`, valid for the call, and
    // every pointer in it outlives the call.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd as libc::c_long,
            std::ptr::from_ref(attr),
            size_of::<T>() as u32,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the bpf call returned a new descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// A uprobe program for multi links of `attach_type`, loaded by hand: the kernel wants the
/// attach type at load time.
fn prog_load(
    name: &str,
    insns: &[bpf_insn],
    license: &CStr,
    attach_type: u32,
) -> Result<OwnedFd, crate::verifier::Rejection> {
    crate::verifier::load(
        &crate::verifier::ByHand {
            prog_type: bpf_prog_type::BPF_PROG_TYPE_KPROBE as u32,
            expected_attach_type: attach_type,
            name,
            insns,
            license,
        },
        crate::verifier::log_level(),
    )
}

fn link_create(
    prog: RawFd,
    path: &CStr,
    offsets: &[u64],
    cookies: &[u64],
    attach_type: u32,
    flags: u32,
) -> io::Result<OwnedFd> {
    assert_eq!(offsets.len(), cookies.len(), "a cookie for every offset");
    let attr = LinkCreateAttr {
        prog_fd: prog as u32,
        target_fd: 0,
        attach_type,
        flags: 0,
        path: path.as_ptr() as u64,
        offsets: offsets.as_ptr() as u64,
        ref_ctr_offsets: 0,
        cookies: cookies.as_ptr() as u64,
        cnt: offsets.len() as u32,
        multi_flags: flags,
        pid: 0,
        zero: 0,
    };
    bpf(bpf_cmd::BPF_LINK_CREATE, &attr)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel refuses attrs with stray bytes: the structs must have no padding.
    #[test]
    fn attrs_have_no_padding() {
        assert_eq!(size_of::<LinkCreateAttr>(), 64);
    }
}
