//! The kernel's lockdown mode (the lockdown security module). Integrity mode, which Secure
//! Boot turns on, leaves strata everything it uses. Confidentiality mode keeps tracefs closed
//! even to root and lets no BPF program read kernel memory; without this check strata would
//! only report tracefs as unmounted.
use std::path::Path;

use thiserror::Error;

const LOCKDOWN: &str = "/sys/kernel/security/lockdown";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    None,
    Integrity,
    Confidentiality,
}

#[derive(Debug, Error)]
#[error(
    "this kernel is locked down in confidentiality mode ({LOCKDOWN}): it keeps tracefs closed, \
     even to root, and lets no eBPF program read kernel memory, and strata needs both. The mode \
     cannot be lowered while the kernel runs: boot without `lockdown=confidentiality` (integrity \
     mode, which Secure Boot sets, is enough for strata)"
)]
pub struct Confidential;

/// The mode in lockdown's file: the one in brackets among those it lists.
pub fn parse(text: &str) -> Option<Mode> {
    let word = text.split_whitespace().find(|w| w.starts_with('['))?;
    match word.trim_matches(['[', ']']) {
        "none" => Some(Mode::None),
        "integrity" => Some(Mode::Integrity),
        "confidentiality" => Some(Mode::Confidentiality),
        _ => None,
    }
}

/// The running kernel's mode; `None` without the lockdown module. Asked only when tracing
/// cannot start, so securityfs is mounted here when it is not (a minimal system's).
pub fn mode() -> Option<Mode> {
    let read = || std::fs::read_to_string(LOCKDOWN).ok();
    let text = read().or_else(|| {
        let dir = Path::new(LOCKDOWN).parent()?;
        nix::mount::mount(
            Some("securityfs"),
            dir,
            Some("securityfs"),
            nix::mount::MsFlags::empty(),
            None::<&str>,
        )
        .ok()?;
        read()
    })?;
    parse(&text)
}

/// Fails on a kernel locked down in confidentiality mode, saying why strata cannot trace.
pub fn check() -> Result<(), Confidential> {
    match mode() {
        Some(Mode::Confidentiality) => Err(Confidential),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bracketed_mode_is_the_one_in_force() {
        assert_eq!(
            parse("[none] integrity confidentiality\n"),
            Some(Mode::None)
        );
        assert_eq!(
            parse("none [integrity] confidentiality\n"),
            Some(Mode::Integrity)
        );
        assert_eq!(
            parse("none integrity [confidentiality]\n"),
            Some(Mode::Confidentiality)
        );
        assert_eq!(parse("none integrity confidentiality\n"), None);
        assert_eq!(parse("[paranoid]\n"), None);
        assert_eq!(parse(""), None);
    }
}
