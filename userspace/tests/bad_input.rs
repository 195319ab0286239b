//! Bad input gets a clear message and exit code 2, and nothing is traced; what strata can
//! work around (a missing symbol or library, a kernel without BTF) is said and recorded.
mod common;

use std::process::Command;

use common::{require_root, run, scratch, strata};

fn fails_with(cmd: &mut Command, needle: &str) {
    let res = run(cmd);
    let err = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(2), "stderr: {err}");
    assert!(err.contains(needle), "expected {needle:?} in: {err}");
}

/// `strata record --probes PROBES -o OUT -- true`, which must succeed: its stderr.
fn record_true(probes: &std::path::Path, out: &std::path::Path) -> String {
    let res = run(strata()
        .args(["record", "-o"])
        .arg(out)
        .arg("--probes")
        .arg(probes)
        .args(["--", "true"]));
    assert!(res.status.success(), "{res:?}");
    String::from_utf8_lossy(&res.stderr).into_owned()
}

/// (status, reason) of `function`'s row of a run's `probes` table.
fn probe_status(rows: &[common::Row], function: &str) -> (String, String) {
    use common::RowExt as _;
    let p = rows
        .iter()
        .find(|p| p.s("function") == Some(function))
        .unwrap_or_else(|| panic!("no probes row for {function}"));
    (
        p.s("status").unwrap().to_string(),
        p.s("reason").unwrap_or("").to_string(),
    )
}

#[test]
fn malformed_probes_file_names_file_and_line() {
    require_root();
    let dir = scratch("bad_probes");
    let probes = dir.join("probes.toml");
    std::fs::write(
        &probes,
        "[[probe]]\nlayer = \"posix\"\nsyscall = \"write\"\nop = \"write\"\nargs = [\"fd\", \"buf\", \"size\"]\nret = \"bytes\"\n\n[[probe]]\nlayer = \"posix\"\nsyscall = \"read\"\nop = \"slurp\"\nret = \"bytes\"\n",
    )
    .unwrap();
    fails_with(
        strata()
            .args(["record", "-o"])
            .arg(dir.join("out"))
            .arg("--probes")
            .arg(&probes)
            .args(["--", "true"]),
        &format!("{}:8: unknown op \"slurp\"", probes.display()),
    );
    // The same check without tracing.
    fails_with(
        strata().arg("probes").arg("--probes").arg(&probes),
        "unknown op",
    );
}

/// `strata probes` tells how each uprobe will be hit in the library found here, from the
/// first instructions of Debian's glibc (objdump): fopen is `mov $1,%edx; jmp` (probed at the
/// jmp, 5 bytes in), fwrite opens with `push %r15`, printf with `sub $0xd8,%rsp`; and HDF5's
/// H5S_get_select_npoints, one load, is called twice in each of H5D__write and H5D__read.
/// It ends with the breakpoints each library found gets: one per function, one per call of
/// a function probed at its calls.
#[test]
fn probes_lists_how_each_uprobe_will_be_hit() {
    let dir = scratch("probes_entry");
    let probes = dir.join("probes.toml");
    let uprobe = |library: &str, symbol: &str| {
        format!(
            "[[probe]]\nlayer = \"stdio\"\nlibrary = \"{library}\"\nsymbol = \"{symbol}\"\nop = \"write\"\nargs = []\nret = \"status\"\n\n"
        )
    };
    let text = [
        uprobe("libc.so.6", "fopen"),
        uprobe("libc.so.6", "fwrite"),
        uprobe("libc.so.6", "printf"),
        uprobe("libc.so.6", "no_such_function_here"),
        uprobe("libnosuchlibrary.so.7", "fwrite"),
        "[[probe]]\nlayer = \"hdf5\"\nlibrary = \"libhdf5_openmpi.so.103\"\nsymbol = \"H5S_get_select_npoints\"\nop = \"meta\"\nargs = []\nret = \"count\"\ninternal = true\ncalls_in = [\"H5D__write\", \"H5D__read\"]\n\n".into(),
        "[[probe]]\nlayer = \"posix\"\nsyscall = \"write\"\nop = \"write\"\nargs = [\"fd\", \"buf\", \"size\"]\nret = \"bytes\"\n\n".into(),
        "[[probe]]\nlayer = \"posix\"\nsyscall = \"ioctl\"\nop = \"meta\"\nargs = [\"fd\", \"cmd\", \"ptr\"]\nret = \"status\"\n[probe.only.cmd]\nFICLONE = 0x40049409\nFIDEDUPERANGE = 0xc0189436\n\n".into(),
        "[[probe]]\nlayer = \"posix\"\nsyscall = \"mmap\"\nop = \"map\"\nargs = [\"ptr\", \"size\", \"int\", \"flags\", \"fd\", \"offset\"]\nret = \"ptr\"\nonly_files = true\n".into(),
    ]
    .concat();
    std::fs::write(&probes, text).unwrap();
    let out = run(strata().arg("probes").arg("--probes").arg(&probes));
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    // The probes, then after a blank line the breakpoints per library.
    let lines: Vec<&str> = stdout.lines().take_while(|l| !l.is_empty()).collect();
    let written: Vec<&str> = stdout.lines().skip(lines.len() + 2).collect();
    let entry_at = lines[0].find("entry").expect("an entry column");
    let target_at = lines[0].find("target").unwrap();
    let entries: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l[entry_at..target_at].trim())
        .collect();
    assert_eq!(
        entries,
        [
            "emulated +5",
            "emulated",
            "stepped",
            "missing",
            "no library",
            "4 calls",
            "-",
            "-",
            "-"
        ],
        "{stdout}"
    );
    // A breakpoint per function found (the missing one and the absent library have none),
    // and one per call of the function probed at its calls.
    let counts: Vec<(&str, &str)> = written
        .iter()
        .map(|l| {
            let (library, rest) = l.trim().split_once(' ').unwrap();
            (
                library,
                rest.rsplit("): ")
                    .next()
                    .unwrap()
                    .split(' ')
                    .next()
                    .unwrap(),
            )
        })
        .collect();
    assert_eq!(
        counts,
        [("libc.so.6", "3"), ("libhdf5_openmpi.so.103", "4")],
        "{stdout}"
    );
    // Where a syscall records only some values of an argument, which.
    let targets: Vec<&str> = lines[lines.len() - 3..]
        .iter()
        .map(|l| l[target_at..].trim())
        .collect();
    assert_eq!(
        targets,
        [
            "syscalls/sys_{enter,exit}_write",
            "syscalls/sys_{enter,exit}_ioctl, only cmd FICLONE FIDEDUPERANGE",
            "syscalls/sys_{enter,exit}_mmap, only files (fd >= 0)"
        ],
        "{stdout}"
    );
}

#[test]
fn unknown_pid_and_missing_command() {
    require_root();
    let out = scratch("bad_target").join("out");
    fails_with(
        strata()
            .args(["record", "--pid", "2147483000", "-o"])
            .arg(&out),
        "no process with pid 2147483000",
    );
    fails_with(
        strata()
            .args(["record", "-o"])
            .arg(&out)
            .args(["--", "no-such-command-anywhere"]),
        "command \"no-such-command-anywhere\" not found",
    );
    fails_with(
        strata().args(["record", "-o"]).arg(&out),
        "give exactly one target",
    );
    fails_with(
        strata()
            .args(["record", "--all", "--until-all-exit", "-o"])
            .arg(&out),
        "--until-all-exit is for a command",
    );
}

#[test]
fn unwritable_output_directory() {
    require_root();
    // Nothing, not even root, can create directories in /proc.
    fails_with(
        strata().args(["record", "-o", "/proc/strata-out", "--", "true"]),
        "cannot create output directory /proc/strata-out",
    );
}

#[test]
fn non_root_is_refused() {
    require_root();
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_strata"))
        .args(["record", "-o", "/tmp/strata-nonroot", "--", "true"]);
    fails_with(&mut cmd, "must run as root");
}

/// A kernel that refuses BPF to strata (here a seccomp filter, as container runtimes' default
/// profiles set) is named as the cause, whether it refuses every bpf() call or program loads
/// only (then aya's error was a relocation of a section its failed probes left out), and the
/// command does not run. Where BPF is allowed, the same question finds no refusal.
#[test]
fn a_kernel_refusing_bpf_is_named_as_the_cause() {
    require_root();
    assert_eq!(
        strata::bpf_access::refusal(),
        None,
        "root may load programs here"
    );
    let dir = scratch("deny_bpf");
    let deny = common::build_c("cc", "deny_bpf.c", &dir.join("deny_bpf"), &[]);
    let ran = dir.join("ran");
    for which in ["all", "prog"] {
        let mut cmd = Command::new(&deny);
        cmd.arg(which)
            .arg(env!("CARGO_BIN_EXE_strata"))
            .args(["record", "-o"])
            .arg(dir.join(format!("out-{which}")))
            .args(["--", "touch"])
            .arg(&ran);
        fails_with(
            &mut cmd,
            "the kernel refused to load even the smallest BPF program (Operation not permitted \
             (os error 1)), as root: a seccomp filter forbids bpf()",
        );
        assert!(!ran.exists(), "{which}: the command ran untraced");
        // The output directory strata made is gone again; one that was there keeps what it
        // held, and no table directory is left in it.
        let out = dir.join(format!("out-{which}"));
        assert!(
            !out.exists(),
            "{which}: a failed start left {}",
            out.display()
        );
        let kept = dir.join("kept");
        std::fs::create_dir_all(&kept).unwrap();
        std::fs::write(kept.join("notes.txt"), "mine").unwrap();
        let mut cmd = Command::new(&deny);
        cmd.arg(which)
            .arg(env!("CARGO_BIN_EXE_strata"))
            .args(["record", "-o"])
            .arg(&kept)
            .args(["--", "true"]);
        fails_with(
            &mut cmd,
            "the kernel refused to load even the smallest BPF program",
        );
        let left: Vec<_> = std::fs::read_dir(&kept)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            left,
            ["notes.txt"],
            "{which}: a failed start wrote into {kept:?}"
        );
    }
}

/// A program the verifier rejects is reported with the verifier's reason in one line, at
/// the default log level and with `-vv`'s walk of every instruction before it. The kernel's
/// own verdicts on two broken programs, loaded as strata loads its uprobe programs.
#[test]
fn a_program_the_verifier_rejects_is_named_with_its_reason() {
    use aya::VerifierLogLevel as Level;
    use strata::verifier::{ByHand, insn, load};
    require_root();
    let (mov0, ldx, exit) = (0xb7, 0x79, 0x95);
    let prog = |name, insns| ByHand {
        prog_type: 1, // a socket filter: needs nothing of the kernel but BPF
        expected_attach_type: 0,
        name,
        insns,
        license: c"GPL",
    };
    let fine = strata::verifier::smallest();
    assert!(load(&prog("strata_fine", &fine), Level::STATS).is_ok());
    // r0 never set; r0 = *(u64 *)(r1 + 0) with r1 = 0.
    let unset = [insn(exit, 0, 0)];
    let null = [
        insn(mov0, 0, 0),
        insn(mov0, 1, 0),
        insn(ldx, 0, 1),
        insn(exit, 0, 0),
    ];
    for level in [Level::STATS, Level::DEBUG | Level::STATS] {
        for (name, insns, reason, processed) in [
            ("strata_unset", &unset[..], "R0 !read_ok", 1),
            (
                "strata_null",
                &null[..],
                "R1 invalid mem access 'scalar'",
                3,
            ),
        ] {
            let r = load(&prog(name, insns), level).expect_err("the verifier accepted it");
            assert_eq!(r.reason(), [reason], "{level:?}, log: {}", r.log);
            assert_eq!(r.processed(), Some(processed), "log: {}", r.log);
            assert_eq!(
                r.to_string(),
                format!(
                    "the kernel rejected {name} (Permission denied (os error 13)); its \
                     verifier said: {reason} (after {processed} instructions)"
                )
            );
            // The walk is there with -vv, and left out of the reason.
            let walked = r.log.lines().any(|l| l.starts_with("0: "));
            assert_eq!(walked, level.contains(Level::DEBUG), "log: {}", r.log);
            // aya's error for the same log reads the same.
            let aya = aya::programs::ProgramError::LoadError {
                io_error: std::io::Error::from_raw_os_error(libc::EACCES),
                verifier_log: aya_obj::VerifierLog::new(r.log.clone()),
            };
            let again = strata::verifier::Rejection::from_aya(name, &aya).unwrap();
            assert_eq!(again.to_string(), r.to_string());
        }
    }
}

#[test]
fn missing_symbol_is_recorded_not_fatal() {
    require_root();
    let dir = scratch("missing_symbol");
    let not_elf = dir.join("libtext.so");
    std::fs::write(&not_elf, "not a shared object\n").unwrap();
    let probes = dir.join("probes.toml");
    std::fs::write(
        &probes,
        format!("[[probe]]\nlayer = \"posix\"\nsyscall = \"write\"\nop = \"write\"\nargs = [\"fd\", \"buf\", \"size\"]\nret = \"bytes\"\n\n\
         [[probe]]\nlayer = \"stdio\"\nlibrary = \"libc.so.6\"\nsymbol = \"no_such_function_xyz\"\nop = \"write\"\nargs = [\"handle\"]\nret = \"status\"\n\n\
         [[probe]]\nlayer = \"hdf5\"\nlibrary = \"libnot-installed.so.1\"\nsymbol = \"H5Dwrite\"\nop = \"write\"\nargs = [\"handle\"]\nret = \"status\"\n\n\
         [[probe]]\nlayer = \"hdf5\"\nlibrary = \"libnot-installed.so.1\"\nsymbol = \"H5Dread\"\nop = \"read\"\nargs = [\"handle\"]\nret = \"status\"\n\n\
         [[probe]]\nlayer = \"netcdf\"\nlibrary = \"{}\"\nsymbol = \"nc_close\"\nop = \"close\"\nargs = [\"handle\"]\nret = \"status\"\n",
            not_elf.display()
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let err = record_true(&probes, &out);
    assert!(err.contains("no_such_function_xyz"), "{err}");
    let rows = common::rows(&out, "probes");
    let status = |f: &str| probe_status(&rows, f);
    assert_eq!(status("write").0, "attached");
    let (st, reason) = status("no_such_function_xyz");
    assert_eq!(st, "failed");
    assert!(
        reason.contains("symbol no_such_function_xyz not found"),
        "{reason}"
    );
    for f in ["H5Dwrite", "H5Dread"] {
        let (st, reason) = status(f);
        assert_eq!(st, "failed");
        assert!(
            reason.contains("library \"libnot-installed.so.1\" not found")
                && reason.contains("its probes attach when a traced process loads it"),
            "{f}: {reason}"
        );
    }
    // A missing library is said once, with what it costs, not once per probe.
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("libnot-installed.so.1"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("2 probes (hdf5) not attached at start"),
        "{err}"
    );
    let (st, reason) = status("nc_close");
    assert_eq!(st, "failed");
    assert!(
        reason.contains(&format!("{} is not an ELF", not_elf.display())),
        "{reason}"
    );
}

/// An io_uring request probe whose field this kernel lacks, or whose field is no pointer
/// where its role needs one, fails alone, its row naming the field; one whose command
/// struct the kernel does not have at all is absent (an opcode newer than the kernel), with
/// no warning; the others attach. `strata probes` says the same before any tracing.
#[test]
fn an_io_uring_request_field_this_kernel_lacks_fails_that_probe_alone() {
    require_root();
    let dir = scratch("bad_uring_field");
    let probes = dir.join("probes.toml");
    let request = |name: &str, opcode: u8, args: &str, fields: &str| {
        format!(
            "[[probe]]\nlayer = \"uring\"\nrequest = \"{name}\"\nopcode = {opcode}\nop = \"meta\"\nargs = {args}\nfields = {fields}\nret = \"status\"\n\n"
        )
    };
    let text = [
        "[[probe]]\nlayer = \"uring\"\nkernel = \"uring_submit\"\nattach = [\"tracepoint:io_uring/io_uring_submit_req\", \"tracepoint:io_uring/io_uring_submit_sqe\"]\n\n".to_string(),
        "[[probe]]\nlayer = \"uring\"\nkernel = \"uring_complete\"\nattach = [\"tracepoint:io_uring/io_uring_complete\"]\n\n".to_string(),
        request("IORING_OP_FSYNC", 3, r#"["fd", "kfile"]"#, r#"["io_kiocb.cqe.fd", "io_kiocb.file"]"#),
        request("IORING_OP_WRITE", 23, r#"["fd", "size"]"#, r#"["io_kiocb.cqe.fd", "io_rw.no_such_member"]"#),
        request("IORING_OP_CLOSE", 19, r#"["fd"]"#, r#"["io_kiocb.file"]"#),
        request("IORING_OP_STATX", 21, r#"["path"]"#, r#"["io_statx.dfd"]"#),
        request("IORING_OP_FUTURE", 250, r#"["int"]"#, r#"["io_no_such_cmd.x"]"#),
        // A command struct this kernel has, but an opcode past the kernel's.
        request("IORING_OP_FUTURE2", 251, r#"["fd"]"#, r#"["io_kiocb.cqe.fd"]"#),
        // The number of another opcode (37 is MKDIRAT): its requests would be named wrong.
        request("IORING_OP_UNLINKAT", 37, r#"["dirfd"]"#, r#"["io_unlink.dfd"]"#),
    ]
    .concat();
    std::fs::write(&probes, text).unwrap();
    let listed = run(strata().arg("probes").arg("--probes").arg(&probes));
    assert!(listed.status.success(), "{listed:?}");
    let listed = String::from_utf8(listed.stdout).unwrap();
    for (f, entry) in [
        ("IORING_OP_FSYNC", "fields ok"),
        ("IORING_OP_WRITE", "bad field"),
        ("IORING_OP_CLOSE", "bad field"),
        ("IORING_OP_FUTURE", "absent"),
        ("IORING_OP_FUTURE2", "absent"),
        ("IORING_OP_UNLINKAT", "bad field"),
    ] {
        let line = listed.lines().find(|l| l.contains(f)).unwrap_or_default();
        assert!(line.contains(entry), "{f}: {line:?}");
    }
    let out = dir.join("out");
    let err = record_true(&probes, &out);
    assert!(err.contains("io_rw.no_such_member"), "{err}");
    assert!(!err.contains("io_no_such_cmd"), "{err}");
    let rows = common::rows(&out, "probes");
    let status = |f: &str| probe_status(&rows, f);
    assert_eq!(status("IORING_OP_FSYNC").0, "attached");
    for (f, why) in [
        (
            "IORING_OP_WRITE",
            "field io_rw.no_such_member: no member no_such_member in this kernel",
        ),
        (
            "IORING_OP_CLOSE",
            "field io_kiocb.file: `fd` is not a pointer",
        ),
        (
            "IORING_OP_STATX",
            "field io_statx.dfd: `path` needs a pointer",
        ),
        (
            "IORING_OP_UNLINKAT",
            "probes.toml gives IORING_OP_UNLINKAT opcode 37; this kernel numbers it 36",
        ),
    ] {
        let (st, reason) = status(f);
        assert_eq!(st, "failed", "{f}: {reason}");
        assert!(reason.contains(why), "{f}: {reason}");
    }
    for f in ["IORING_OP_FUTURE", "IORING_OP_FUTURE2"] {
        let (st, reason) = status(f);
        assert_eq!(st, "absent", "{reason}");
        assert!(
            reason.contains(&format!("this kernel has no {f}")),
            "{reason}"
        );
    }
}

/// An output file system that fills up: strata stops recording with a clear message, every
/// visible file of the dataset is valid (no half-written file is left), and the traced job
/// runs on to its end.
#[test]
fn a_full_output_disk_stops_recording_and_leaves_the_job_alone() {
    require_root();
    let dir = scratch("full_disk");
    let mnt = dir.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let st = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=96k", "tmpfs"])
        .arg(&mnt)
        .status()
        .unwrap();
    assert!(st.success(), "mounting a small tmpfs failed");
    struct Unmount<'a>(&'a std::path::Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _unmount = Unmount(&mnt);
    let marker = dir.join("job_finished");
    let out = mnt.join("out");
    fails_with(
        strata()
            .args(["record", "-q", "--layers", "posix", "-o"])
            .arg(&out)
            .args(["--", "sh", "-c"])
            .arg(format!(
                "i=0; while [ $i -lt 30000 ]; do echo x > /dev/null; i=$((i+1)); done; echo ok > {}",
                marker.display()
            )),
        "No space left on device",
    );
    // The job was not stopped with strata.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !marker.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the traced job did not finish"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // Only complete Parquet files are left, and each reads back.
    let mut files = 0;
    for table in ["run", "probes", "processes", "files", "handles", "calls"] {
        let Ok(dir) = std::fs::read_dir(out.join(table).join(format!(
            "host={}",
            nix::unistd::gethostname().unwrap().to_string_lossy()
        ))) else {
            continue;
        };
        for f in dir {
            let name = f.unwrap().file_name().to_string_lossy().into_owned();
            assert!(
                !name.starts_with('.'),
                "half-written file left: {table}/{name}"
            );
            files += 1;
        }
        strata::sink::read_table(&out, table).unwrap_or_else(|e| panic!("{table}: {e:#}"));
    }
    assert!(
        files > 0,
        "the files written before the disk filled are there"
    );
}

/// A kernel without BTF (here: /sys/kernel/btf hidden in a private mount namespace): the
/// syscall layer falls back to the raw_syscalls trace events, records the same calls, and
/// the probes table says why.
#[test]
fn a_kernel_without_btf_records_through_trace_events() {
    require_root();
    let dir = scratch("no_btf");
    let out = dir.join("out");
    let data = dir.join("data");
    // Direct writes: each reaches the disk inside its call, so its requests complete there.
    let script = format!(
        "mount -t tmpfs none /sys/kernel/btf && exec \"$0\" record --layers posix,block -o {} \
         -- dd if=/dev/zero of={} bs=4096 count=3 oflag=direct status=none",
        out.display(),
        data.display()
    );
    let res = run(Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .arg(env!("CARGO_BIN_EXE_strata")));
    assert!(res.status.success(), "{:?}", res.status);
    use common::RowExt as _;
    let probes = common::rows(&out, "probes");
    let probe = |function: &str| {
        probes
            .iter()
            .find(|p| p.s("function") == Some(function))
            .unwrap_or_else(|| panic!("no probes row for {function}"))
    };
    for (function, target) in [
        ("write", "raw_syscalls/sys_{enter,exit}"),
        ("rq_complete", "block/block_rq_complete"),
    ] {
        let p = probe(function);
        assert_eq!(
            (p.s("status"), p.s("mechanism"), p.s("target")),
            (Some("attached"), Some("tracepoint"), Some(target)),
            "{p:?}"
        );
        let reason = p.s("reason").unwrap_or_default();
        assert!(
            reason.starts_with("tp_btf") && reason.contains("BTF"),
            "{function}: {reason}"
        );
    }
    let data = data.to_str().unwrap();
    let calls = common::rows(&out, "calls");
    let files = common::rows(&out, "files");
    let file_id = files
        .iter()
        .find(|f| f.s("path") == Some(data))
        .and_then(|f| f.i("file_id"))
        .expect("file row of the written file");
    let mut writes: Vec<_> = calls
        .iter()
        .filter(|c| c.s("function") == Some("write") && c.i("file_id") == Some(file_id))
        .collect();
    writes.sort_by_key(|c| c.i("offset"));
    assert_eq!(
        writes
            .iter()
            .map(|c| (c.i("offset"), c.i("bytes_result")))
            .collect::<Vec<_>>(),
        vec![
            (Some(0), Some(4096)),
            (Some(4096), Some(4096)),
            (Some(8192), Some(4096))
        ]
    );
    // Each write's request, issued and completed inside it, through the trace events. A
    // completion interrupt that arrives while a probe's program runs on that CPU is skipped
    // by the kernel (trace events allow no nesting), and counted in the run row.
    let block = common::rows(&out, "block");
    let skipped = common::rows(&out, "run")[0]
        .i("events_skipped")
        .unwrap_or(0);
    let mut incomplete = 0;
    for w in writes {
        let reqs: Vec<_> = block
            .iter()
            .filter(|b| b.i("call_id") == w.i("call_id") && b.s("op") == Some("write"))
            .collect();
        assert_eq!(
            reqs.iter().map(|r| r.i("bytes").unwrap()).sum::<i64>(),
            4096,
            "{reqs:?}"
        );
        for r in reqs {
            match r.i("ts_complete_ns") {
                Some(complete) => assert!(complete <= w.i("ts_end_ns").unwrap(), "{r:?}"),
                None => incomplete += 1,
            }
        }
    }
    assert!(
        incomplete <= skipped,
        "{incomplete} requests without completion, {skipped} probe hits skipped"
    );
}

/// A kernel without kprobes (these development machines) cannot record the `vfs` layer. By
/// default that is said in the `probes` table alone (`absent`), not warned about on every
/// run; asked for by name, the layer gets one warning that says why. Where the kernel has
/// kprobes, the layer attaches and nothing is said.
#[test]
fn a_layer_the_kernel_cannot_record_is_said_once_when_asked_for() {
    require_root();
    let dir = scratch("no_kprobes");
    let kprobes = std::path::Path::new("/sys/bus/event_source/devices/kprobe").exists();
    let vfs = ["vfs_read", "vfs_write", "vfs_fsync_range"];
    for (layers, named) in [(None, false), (Some("posix,vfs"), true)] {
        let out = dir.join(format!("out-{named}"));
        let mut cmd = strata();
        cmd.arg("record");
        if let Some(l) = layers {
            cmd.args(["--layers", l]);
        }
        let res = run(cmd.arg("-o").arg(&out).args(["--", "true"]));
        assert!(res.status.success(), "{res:?}");
        let err = String::from_utf8_lossy(&res.stderr);
        let rows = common::rows(&out, "probes");
        for f in vfs {
            let (st, reason) = probe_status(&rows, f);
            if kprobes {
                assert_eq!(st, "attached", "{f}: {reason}");
            } else {
                assert_eq!(st, "absent", "{f}: {reason}");
                assert!(reason.contains("this kernel has no kprobes"), "{reason}");
            }
            assert!(!err.contains(&format!("probe {f}")), "{err}");
        }
        let warned = err
            .matches("layer vfs: nothing attached on this kernel (this kernel has no kprobes")
            .count();
        assert_eq!(warned, usize::from(named && !kprobes), "{err}");
    }
}
