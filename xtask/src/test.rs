//! The README's second command and CI's: every test suite of the workspace.
use std::{
    io::{BufRead as _, BufReader},
    process::{Command, Stdio},
};

use anyhow::{Context as _, bail};

use crate::util::{is_root, root};

/// How long the suite's soak traces the node.
const SOAK: std::time::Duration = std::time::Duration::from_secs(60);

pub fn run(cargo_args: &[String], vm: bool) -> anyhow::Result<()> {
    if !is_root() {
        bail!(
            "the integration tests load eBPF programs and must run as root; run `cargo xtask test` as root"
        );
    }
    // One release build serves the binary under test and the test harnesses. The default
    // members leave out the eBPF crate, which userspace/build.rs builds for the BPF target.
    let mut child = Command::new("cargo")
        .current_dir(root())
        .args(["test", "--release"])
        .args(cargo_args)
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot start cargo test")?;
    // Pass the output through, adding up the results of every test binary.
    let (mut passed, mut failed) = (0u64, 0u64);
    let stdout = child.stdout.take().context("no stdout from cargo test")?;
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        println!("{line}");
        if let Some((p, f)) = crate::util::test_counts(&line) {
            passed += p;
            failed += f;
        }
    }
    let status = child.wait()?;
    if !status.success() {
        println!("tests: {passed} passed, {failed} failed");
        bail!("cargo test failed ({status})");
    }
    // Memory under a sustained overload, over time: alone, after the other suites (it loads
    // the node), and only with the whole suite (not with a test filter).
    if cargo_args.is_empty() {
        let json = crate::util::target_dir().join("soak.json");
        match crate::soak::run(SOAK, &json) {
            Ok(()) => passed += 1,
            Err(e) => {
                println!("soak: {e:#}");
                println!("tests: {passed} passed, {} failed", failed + 1);
                bail!("the soak failed");
            }
        }
    } else {
        println!("soak: left out (a test filter was given)");
    }
    if vm {
        // The kernel-layer tests again, inside other kernels (kprobes, older tracepoints).
        let kernels: Vec<String> = crate::vm::DEFAULT_KERNELS
            .iter()
            .map(ToString::to_string)
            .collect();
        let r = crate::vm::run(&kernels);
        if let Ok(t) = &r {
            passed += t.passed;
            failed += t.failed;
        }
        println!("tests: {passed} passed, {failed} failed");
        r?;
    } else {
        println!("tests: {passed} passed, {failed} failed");
    }
    Ok(())
}
