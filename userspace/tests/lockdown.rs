//! A kernel locked down in confidentiality mode keeps tracefs closed, even to root, and lets
//! no eBPF program read kernel memory: strata must name the lockdown as the cause (a mounted
//! tracefs looks empty there, which alone would read as "not mounted").
//!
//! The host's kernel is not locked down: `cargo xtask vm-test` boots a Debian kernel with
//! `lockdown=confidentiality` and runs this there (`--ignored`). Its other boots run the
//! kernel-layer tests under `lockdown=integrity`, the mode Secure Boot sets.
mod common;

use common::{require_root, run, scratch, strata};
use strata::lockdown::{self, Mode};

#[test]
#[ignore = "needs a kernel booted with lockdown=confidentiality, which `cargo xtask vm-test` boots"]
fn a_kernel_locked_down_for_confidentiality_is_named_as_the_cause() {
    require_root();
    let dir = scratch("lockdown");
    // Before anything here mounts securityfs: strata reads the mode on its own.
    for layers in ["posix", "all"] {
        let out = dir.join(layers);
        let res = run(strata()
            .args(["record", "-q", "--layers", layers, "-o"])
            .arg(&out)
            .args(["--", "true"]));
        let err = String::from_utf8_lossy(&res.stderr);
        assert_eq!(res.status.code(), Some(2), "{layers}: {err}");
        assert!(
            err.contains("this kernel is locked down in confidentiality mode")
                && err.contains("boot without `lockdown=confidentiality`"),
            "{layers}: {err}"
        );
        assert!(!err.contains("tracefs is not mounted"), "{layers}: {err}");
    }
    assert_eq!(
        lockdown::mode(),
        Some(Mode::Confidentiality),
        "this test needs a kernel booted with lockdown=confidentiality"
    );
}
