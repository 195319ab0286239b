//! The README's second command and CI's: every test suite of the workspace.
use std::process::Command;

use anyhow::bail;

use crate::util::{exec, is_root, root};

pub fn run(cargo_args: &[String]) -> anyhow::Result<()> {
    if !is_root() {
        bail!(
            "the integration tests load eBPF programs and must run as root; run `cargo xtask test` as root"
        );
    }
    // One release build serves the binary under test and the test harnesses. The default
    // members leave out the eBPF crate, which userspace/build.rs builds for the BPF target.
    exec(
        Command::new("cargo")
            .current_dir(root())
            .args(["test", "--release"])
            .args(cargo_args),
    )
}
