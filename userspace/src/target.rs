//! What to trace: a command strata starts, a running process tree, or everything.
//!
//! A started command is forked and held at a gate (a pipe) until its pid is in the kernel's
//! traced set and every probe is attached, so its first instruction is already traced.
use std::{
    ffi::CString,
    os::fd::{AsRawFd as _, OwnedFd},
    path::{Path, PathBuf},
};

use anyhow::{Context as _, bail};
use nix::{
    fcntl::OFlag,
    sys::wait::{WaitPidFlag, WaitStatus, waitpid},
    unistd::{ForkResult, Pid, execv, fork, pipe2},
};

/// A forked command waiting at the gate.
pub struct Spawned {
    pub pid: Pid,
    gate: Option<OwnedFd>,
}

/// Finds `cmd` like a shell would, so a typo fails before anything is loaded.
pub fn resolve_command(cmd: &str) -> anyhow::Result<PathBuf> {
    if cmd.contains('/') {
        let p = PathBuf::from(cmd);
        if !p.is_file() {
            bail!("command {cmd:?} not found");
        }
        return Ok(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join(cmd))
        .find(|p| is_executable(p))
        .with_context(|| format!("command {cmd:?} not found in PATH"))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Forks `argv`, stopped before exec until [`Spawned::release`].
pub fn spawn_gated(exe: &Path, argv: &[String]) -> anyhow::Result<Spawned> {
    let exe_c = CString::new(exe.as_os_str().as_encoded_bytes()).context("NUL in command path")?;
    let args: Vec<CString> = argv
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
        .context("NUL in a command argument")?;
    // Close-on-exec: the child must not close the gate itself, or that close(2) would be
    // traced as the command's first call.
    let (read_end, write_end) = pipe2(OFlag::O_CLOEXEC).context("pipe")?;
    // SAFETY: the child only calls async-signal-safe functions (read, close, execv, write,
    // _exit) on data prepared before the fork.
    match unsafe { fork() }.context("fork")? {
        ForkResult::Child => {
            drop(write_end);
            let mut b = [0u8; 1];
            // SAFETY: plain read(2) into a stack byte.
            let n = unsafe { libc::read(read_end.as_raw_fd(), b.as_mut_ptr().cast(), 1) };
            if n == 1 && b[0] == 1 {
                let _ = execv(&exe_c, &args);
                let msg = b"strata: exec of the traced command failed\n";
                // SAFETY: write(2) of a static message, then _exit.
                unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
            }
            // SAFETY: leaving the forked child without running the parent's destructors.
            unsafe { libc::_exit(127) }
        }
        ForkResult::Parent { child } => {
            drop(read_end);
            Ok(Spawned {
                pid: child,
                gate: Some(write_end),
            })
        }
    }
}

impl Spawned {
    /// Lets the command exec. Dropping a `Spawned` unreleased makes the child exit 127.
    pub fn release(&mut self) -> anyhow::Result<()> {
        if let Some(gate) = self.gate.take() {
            nix::unistd::write(&gate, &[1]).context("releasing the traced command")?;
        }
        Ok(())
    }

    /// Non-blocking: `Some((exit code, signal))` once the command has ended.
    pub fn try_wait(&self) -> anyhow::Result<Option<(Option<i32>, Option<i32>)>> {
        match waitpid(self.pid, Some(WaitPidFlag::WNOHANG)).context("waitpid")? {
            WaitStatus::Exited(_, code) => Ok(Some((Some(code), None))),
            WaitStatus::Signaled(_, sig, _) => Ok(Some((None, Some(sig as i32)))),
            _ => Ok(None),
        }
    }
}

/// `pid` and all its descendants, from /proc.
pub fn process_tree(pid: i32) -> anyhow::Result<Vec<i32>> {
    if !Path::new(&format!("/proc/{pid}")).exists() {
        bail!("no process with pid {pid}");
    }
    let mut children: std::collections::HashMap<i32, Vec<i32>> = Default::default();
    for p in procfs::process::all_processes().context("cannot list /proc")? {
        let Ok(p) = p else { continue };
        if let Ok(stat) = p.stat() {
            children.entry(stat.ppid).or_default().push(stat.pid);
        }
    }
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        for c in children.get(&out[i]).into_iter().flatten() {
            if !out.contains(c) {
                out.push(*c);
            }
        }
        i += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_commands() {
        assert!(resolve_command("sh").unwrap().is_absolute());
        assert!(resolve_command("definitely-not-a-command-xyz").is_err());
        assert!(resolve_command("/nonexistent/bin/x").is_err());
    }

    #[test]
    fn unknown_pid_is_an_error() {
        let e = process_tree(i32::MAX - 1).unwrap_err().to_string();
        assert!(e.contains("no process with pid"), "{e}");
        let me = std::process::id() as i32;
        assert_eq!(process_tree(me).unwrap()[0], me);
    }

    #[test]
    fn dropped_gate_never_runs_the_command() {
        let sp = spawn_gated(Path::new("/bin/true"), &["true".into()]).unwrap();
        let pid = sp.pid;
        drop(sp);
        match waitpid(pid, None).unwrap() {
            WaitStatus::Exited(_, code) => assert_eq!(code, 127),
            s => panic!("{s:?}"),
        }
    }
}
