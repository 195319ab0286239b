//! `cargo xtask vm-test`: the privileged kernel-layer tests inside Debian kernels under qemu.
//!
//! Each kernel comes from Debian's package registry (`apt-get download`, unpacked with
//! `dpkg -x`, cached under target/vm/kernels). The initramfs holds busybox, the strata binary
//! and the test harness at the paths they were built with, prebuilt workloads, and every
//! shared library they load. A fresh ext4 disk on an emulated NVMe controller (built into
//! Debian's kernels, no modules needed) is mounted where the tests keep their scratch files,
//! so block requests are real. The guest prints a result line and powers off; the host streams
//! the console and fails on a test failure, a kernel panic or a timeout.
use std::{
    collections::BTreeSet,
    fs,
    io::{BufRead as _, BufReader},
    os::unix::fs::PermissionsExt as _,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};

use crate::util::{exec, output, root, target_dir};

/// Debian packages whose kernel the tests boot (metapackages resolve to the current build),
/// each optionally with `:lockdown=MODE`, booted in that lockdown mode. Under integrity
/// (which Secure Boot sets) the kernel-layer tests must all pass; under confidentiality
/// strata cannot trace, and `tests/lockdown.rs` checks that it says why.
pub const DEFAULT_KERNELS: &[&str] = &[
    "linux-image-cloud-amd64",
    "linux-image-6.12-cloud-amd64:lockdown=integrity",
    "linux-image-6.12-cloud-amd64:lockdown=confidentiality",
];

/// Test harnesses run inside the guest (integration tests of the `strata` package).
const GUEST_TESTS: &[&str] = &["kernel_layers", "lockdown"];

/// What the guest prints of /sys/kernel/security/lockdown, after its tests.
const LOCKDOWN_MARK: &str = "strata-vm-lockdown:";

/// Workloads the guest tests use, prebuilt on the host (the guest has no compiler).
const WORKLOADS: &[(&str, &str)] = &[
    ("kernel_io.c", "kernel_io"),
    ("uring.c", "uring"),
    ("uring_random.c", "uring_random"),
    ("aio.c", "aio"),
];

const RESULT_MARK: &str = "strata-vm-result:";
const BOOT_MARK: &str = "strata-vm: kernel";
/// A KVM guest that has not reached its init by then is taken as hung (nested KVM).
const KVM_BOOT_TIMEOUT: Duration = Duration::from_secs(45);
const RUN_TIMEOUT: Duration = Duration::from_secs(20 * 60);

pub struct Totals {
    pub passed: u64,
    pub failed: u64,
}

pub fn run(kernels: &[String]) -> anyhow::Result<Totals> {
    let vm = target_dir().join("vm");
    fs::create_dir_all(&vm)?;
    let tests = build_tests()?;
    let strata = target_dir().join("release/strata");
    let workloads = build_workloads(&vm)?;
    let initrd = build_initramfs(&vm, &strata, &tests, &workloads)?;
    let mut totals = Totals {
        passed: 0,
        failed: 0,
    };
    let mut accel = initial_accel();
    for spec in kernels {
        let (pkg, lockdown) = match spec.split_once(":lockdown=") {
            Some((pkg, mode)) => (pkg, Some(mode)),
            None => (spec.as_str(), None),
        };
        // Nothing traces under confidentiality: only the test that strata says so.
        let suite = match lockdown {
            Some("confidentiality") => "lockdown",
            _ => "kernel_layers",
        };
        let vmlinuz = kernel(&vm, pkg)?;
        let disk = fresh_disk(&vm)?;
        let append = lockdown
            .map(|m| format!(" lockdown={m}"))
            .unwrap_or_default();
        // Unknown `name=value` parameters reach init as environment variables.
        let append = format!("{append} strata_suite={suite}");
        println!(
            "vm-test: booting {}{} ({accel}) with {suite}",
            vmlinuz.display(),
            lockdown
                .map(|m| format!(", locked down ({m})"))
                .unwrap_or_default(),
        );
        let outcome = match boot(&vmlinuz, &initrd, &disk, accel, &append)? {
            Boot::Hung if accel == "kvm" => {
                println!("vm-test: the guest did not reach its init under KVM; using TCG");
                accel = "tcg";
                boot(&vmlinuz, &initrd, &fresh_disk(&vm)?, accel, &append)?
            }
            b => b,
        };
        match outcome {
            Boot::Done {
                code,
                passed,
                failed,
                lockdown: seen,
            } => {
                totals.passed += passed;
                totals.failed += failed;
                if code != 0 {
                    bail!("tests failed inside {spec} (exit {code})");
                }
                if passed == 0 {
                    bail!("no test ran inside {spec}");
                }
                // The mode asked for, in force: a kernel without the lockdown module would
                // run the tests unlocked and prove nothing.
                if let Some(mode) = lockdown {
                    if !seen.contains(&format!("[{mode}]")) {
                        bail!("{spec}: the guest's lockdown mode was {seen:?}, not {mode}");
                    }
                }
            }
            Boot::Hung => bail!("{pkg} did not reach its init"),
            Boot::Panic(line) => bail!("{pkg}: kernel panic: {line}"),
            Boot::Timeout => bail!("{pkg}: no result within {RUN_TIMEOUT:?}"),
            Boot::Exited => bail!("{pkg}: qemu exited without a result line"),
        }
    }
    Ok(totals)
}

/// KVM when /dev/kvm can be opened (and it is not turned off), else TCG.
fn initial_accel() -> &'static str {
    match std::env::var("STRATA_VM_ACCEL").as_deref() {
        Ok("tcg") => "tcg",
        Ok("kvm") => "kvm",
        _ if fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/kvm")
            .is_ok() =>
        {
            "kvm"
        }
        _ => "tcg",
    }
}

/// Builds the guest test harnesses; returns (name, executable).
fn build_tests() -> anyhow::Result<Vec<(String, PathBuf)>> {
    let mut cmd = Command::new("cargo");
    cmd.current_dir(root())
        .args(["test", "--release", "--no-run", "--message-format=json"]);
    for t in GUEST_TESTS {
        cmd.args(["--test", t]);
    }
    let out = output(cmd.stderr(Stdio::inherit()))?;
    let mut found = Vec::new();
    for line in out.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let name = v["target"]["name"].as_str().unwrap_or("");
        if v["reason"] == "compiler-artifact" && GUEST_TESTS.contains(&name) {
            if let Some(exe) = v["executable"].as_str() {
                found.push((name.to_string(), PathBuf::from(exe)));
            }
        }
    }
    if found.len() != GUEST_TESTS.len() {
        bail!("cargo built {found:?}, expected the harnesses {GUEST_TESTS:?}");
    }
    Ok(found)
}

fn build_workloads(vm: &Path) -> anyhow::Result<PathBuf> {
    let dir = vm.join("workloads");
    fs::create_dir_all(&dir)?;
    for (src, exe) in WORKLOADS {
        exec(
            Command::new("cc")
                .arg("-O1")
                .arg("-o")
                .arg(dir.join(exe))
                .arg(root().join("tests/workloads").join(src)),
        )?;
    }
    Ok(dir)
}

/// The vmlinuz of a Debian kernel package (or a metapackage naming one), downloaded once.
fn kernel(vm: &Path, pkg: &str) -> anyhow::Result<PathBuf> {
    let deps = output(Command::new("apt-cache").args(["depends", pkg]))
        .with_context(|| format!("apt-cache does not know {pkg} (apt-get update?)"))?;
    // A metapackage depends on the versioned image package.
    let image = deps
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Depends: "))
        .find(|d| d.starts_with("linux-image-") && d.chars().any(|c| c.is_ascii_digit()))
        .unwrap_or(pkg)
        .to_string();
    let dir = vm.join("kernels").join(&image);
    let boot = dir.join("boot");
    if !boot.is_dir() {
        let dl = vm.join("download");
        let _ = fs::remove_dir_all(&dl);
        fs::create_dir_all(&dl)?;
        println!("vm-test: downloading {image}");
        exec(
            Command::new("apt-get")
                .current_dir(&dl)
                .args(["download", "-q", &image])
                .stderr(Stdio::null()),
        )
        .with_context(|| format!("cannot download {image} from the Debian registry"))?;
        let deb = fs::read_dir(&dl)?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "deb"))
            .context("apt-get download left no .deb")?;
        let tmp = vm.join("kernels").join(format!(".{image}"));
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir_all(&tmp)?;
        exec(Command::new("dpkg").arg("-x").arg(&deb).arg(&tmp))?;
        fs::rename(&tmp, &dir)?;
        let _ = fs::remove_dir_all(&dl);
    }
    fs::read_dir(&boot)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("vmlinuz"))
        })
        .with_context(|| format!("no vmlinuz in {}", boot.display()))
}

fn fresh_disk(vm: &Path) -> anyhow::Result<PathBuf> {
    let disk = vm.join("disk.img");
    let _ = fs::remove_file(&disk);
    fs::File::create(&disk)?.set_len(1 << 30)?;
    exec(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&disk))?;
    Ok(disk)
}

/// Shared libraries an ELF file loads, as `ldd` lists them.
fn libraries(exe: &Path) -> anyhow::Result<BTreeSet<PathBuf>> {
    let out = output(Command::new("ldd").arg(exe))?;
    Ok(out
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let path = match l.split_once("=>") {
                Some((_, rest)) => rest.trim().split(' ').next()?,
                None => l.split(' ').next()?,
            };
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect())
}

/// Copies `src` to `root` + `at` (an absolute path), following symlinks.
fn place(root: &Path, src: &Path, at: &Path) -> anyhow::Result<()> {
    let dst = root.join(at.strip_prefix("/").unwrap_or(at));
    fs::create_dir_all(dst.parent().unwrap())?;
    fs::copy(src, &dst).with_context(|| format!("copying {}", src.display()))?;
    Ok(())
}

fn build_initramfs(
    vm: &Path,
    strata: &Path,
    tests: &[(String, PathBuf)],
    workloads: &Path,
) -> anyhow::Result<PathBuf> {
    let stage = vm.join("initramfs");
    let _ = fs::remove_dir_all(&stage);
    fs::create_dir_all(&stage)?;
    let busybox = Path::new("/bin/busybox");
    let static_bb = output(Command::new("file").arg("-L").arg(busybox))
        .map(|o| o.contains("statically linked"))
        .unwrap_or(false);
    if !static_bb {
        bail!("/bin/busybox is not the static build (install busybox-static)");
    }
    place(&stage, busybox, Path::new("/bin/busybox"))?;
    // The harnesses find strata where cargo built it, and keep scratch files in the target
    // dir's tmp (where the guest mounts its disk).
    let mut elves = vec![strata.to_owned()];
    place(&stage, strata, strata)?;
    for (name, exe) in tests {
        place(&stage, exe, &Path::new("/tests").join(name))?;
        elves.push(exe.clone());
    }
    for (_, exe) in WORKLOADS {
        let p = workloads.join(exe);
        place(&stage, &p, &Path::new("/workloads").join(exe))?;
        elves.push(p);
    }
    let mut libs = BTreeSet::new();
    for e in &elves {
        libs.extend(libraries(e)?);
    }
    for l in &libs {
        place(&stage, l, l)?;
    }
    let scratch = target_dir().join("tmp");
    // The harness the host names on the kernel's command line; the lockdown one's test
    // needs a locked-down kernel, so it is ignored elsewhere and asked for here.
    let runs: String = tests
        .iter()
        .map(|(name, _)| {
            let extra = if name == "lockdown" { " --ignored" } else { "" };
            format!(
                "[ \"$strata_suite\" = {name} ] && {{ /tests/{name} --test-threads=1{extra} || rc=1; }}\n"
            )
        })
        .collect();
    let init = format!(
        r#"#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mkdir -p /proc /sys /dev /tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug
mount -t bpf bpf /sys/fs/bpf
echo "{BOOT_MARK} $(uname -r)"
mkdir -p {scratch}
mount -t ext4 /dev/nvme0n1 {scratch} || echo "cannot mount the test disk"
# Debian's kernels have kprobes: the VFS layer must attach.
export STRATA_WORKLOADS_DIR=/workloads RUST_BACKTRACE=1 STRATA_EXPECT_KPROBES=1
rc=0
{runs}mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
echo "{LOCKDOWN_MARK} $(cat /sys/kernel/security/lockdown 2>/dev/null)"
echo "{RESULT_MARK} $rc"
sync
poweroff -f
"#,
        scratch = scratch.display()
    );
    let init_path = stage.join("init");
    fs::write(&init_path, init)?;
    fs::set_permissions(&init_path, fs::Permissions::from_mode(0o755))?;
    let initrd = vm.join("initramfs.cpio.gz");
    exec(
        Command::new("sh")
            .current_dir(&stage)
            .arg("-c")
            .arg(format!(
                "find . -print0 | cpio --null -o -H newc --quiet | gzip -1 > {}",
                initrd.display()
            )),
    )?;
    Ok(initrd)
}

enum Boot {
    Done {
        code: i32,
        passed: u64,
        failed: u64,
        /// The guest's /sys/kernel/security/lockdown (empty without the module).
        lockdown: String,
    },
    Hung,
    Panic(String),
    Timeout,
    Exited,
}

/// Boots `vmlinuz` with `append` added to the kernel's command line.
fn boot(
    vmlinuz: &Path,
    initrd: &Path,
    disk: &Path,
    accel: &str,
    append: &str,
) -> anyhow::Result<Boot> {
    let mut cmd = Command::new("qemu-system-x86_64");
    // Under TCG, one host thread runs both vCPUs: with a thread each, a vCPU could still run
    // its translation of kernel text another vCPU had just patched (the int3 of a static key
    // being switched as strata attached a tracepoint), and the guest oopsed on that int3.
    let accel = if accel == "tcg" {
        "tcg,thread=single"
    } else {
        accel
    };
    cmd.args([
        "-accel",
        accel,
        "-m",
        "2048",
        "-smp",
        "2",
        "-nographic",
        "-no-reboot",
    ])
    .args(["-cpu", if accel == "kvm" { "host" } else { "max" }])
    .arg("-kernel")
    .arg(vmlinuz)
    .arg("-initrd")
    .arg(initrd)
    .arg("-append")
    .arg(format!("console=ttyS0 quiet panic=-1{append}"))
    .arg("-drive")
    .arg(format!(
        "file={},if=none,id=disk0,format=raw",
        disk.display()
    ))
    .args(["-device", "nvme,serial=strata,drive=disk0"])
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit());
    let mut child = cmd
        .spawn()
        .context("cannot start qemu-system-x86_64 (run `cargo xtask setup`)")?;
    let stdout = child.stdout.take().context("no qemu stdout")?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let started = Instant::now();
    let (mut booted, mut passed, mut failed) = (false, 0, 0);
    let mut lockdown = String::new();
    let outcome = loop {
        let limit = if booted || accel != "kvm" {
            RUN_TIMEOUT
        } else {
            KVM_BOOT_TIMEOUT
        };
        let Some(left) = limit.checked_sub(started.elapsed()) else {
            break if booted { Boot::Timeout } else { Boot::Hung };
        };
        let line = match rx.recv_timeout(left) {
            Ok(l) => l,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                break if booted { Boot::Exited } else { Boot::Hung };
            }
        };
        let line = line.trim_end_matches('\r').to_string();
        println!("  | {line}");
        if line.contains(BOOT_MARK) {
            booted = true;
        }
        if line.contains("Kernel panic") {
            break Boot::Panic(line);
        }
        if let Some((p, f)) = crate::util::test_counts(&line) {
            passed += p;
            failed += f;
        }
        if let Some(mode) = line.strip_prefix(LOCKDOWN_MARK) {
            lockdown = mode.trim().to_string();
        }
        if let Some(code) = line.strip_prefix(RESULT_MARK) {
            break Boot::Done {
                code: code.trim().parse().unwrap_or(1),
                passed,
                failed,
                lockdown,
            };
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    Ok(outcome)
}
