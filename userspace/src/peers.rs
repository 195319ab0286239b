//! Other strata processes on the node. A run that traces every process leaves them out:
//! their records are their own Parquet writes and /proc reads, and each run reading /proc for
//! the other's records made records for the other. Two `--all` runs side by side on an idle
//! node: 8,873 of one's 9,142 call rows, and 4,066 of the other's 4,188, were the other's.
use std::{fs, os::unix::fs::MetadataExt as _, path::Path};

use object::{Object as _, ReadCache};

/// The section the strata executable carries (`main.rs`), whatever its build or path.
pub const MARK_SECTION: &str = ".strata";

/// Whether process `pid`, whose command name is `comm`, runs strata: its executable is this
/// one, or one with strata's mark. The name is checked first, so that only a process named
/// like strata has its executable looked at.
pub fn runs_strata(pid: i32, comm: &str) -> bool {
    if !comm.starts_with("strata") {
        return false;
    }
    let exe = format!("/proc/{pid}/exe");
    let same = |a: &fs::Metadata, b: &fs::Metadata| a.dev() == b.dev() && a.ino() == b.ino();
    match (fs::metadata(&exe), fs::metadata("/proc/self/exe")) {
        (Ok(theirs), Ok(mine)) if same(&theirs, &mine) => true,
        (Ok(_), _) => has_mark(Path::new(&exe)),
        _ => false,
    }
}

/// Whether the ELF file at `path` has strata's mark (only its headers are read).
pub fn has_mark(path: &Path) -> bool {
    let Ok(file) = fs::File::open(path) else {
        return false;
    };
    let cache = ReadCache::new(file);
    object::File::parse(&cache).is_ok_and(|o| o.section_by_name(MARK_SECTION).is_some())
}

/// The other strata processes among `pids`.
pub fn among(pids: &[i32]) -> Vec<i32> {
    let me = std::process::id() as i32;
    (pids.iter().copied())
        .filter(|&pid| pid != me)
        .filter(|&pid| {
            fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| runs_strata(pid, c.trim_end()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_named_strata_is_not_taken_for_it() {
        let mut other = std::process::Command::new("sleep")
            .arg("10")
            .spawn()
            .unwrap();
        let pid = other.id() as i32;
        let named = runs_strata(pid, "strata");
        let _ = other.kill();
        let _ = other.wait();
        assert!(!named, "sleep, named strata");
        assert!(!runs_strata(i32::MAX, "strata"), "no such process");
        // Only the name is looked at, for other names: this process, named otherwise.
        assert!(!runs_strata(std::process::id() as i32, "cargo-test"));
    }

    #[test]
    fn an_elf_file_without_the_mark_has_none() {
        assert!(!has_mark(Path::new("/proc/self/exe")));
        assert!(!has_mark(Path::new("/nonexistent")));
    }
}
