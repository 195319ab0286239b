//! io_uring requests (`request` probes): installing them once the two kernel events that
//! record them are attached, and where each reads its arguments in this kernel's requests
//! (probes.toml `fields`, resolved through the BTF).
use anyhow::anyhow;
use aya::{Ebpf, maps::Array};
use strata_common::{
    FuncSpec, KernelEvent, NO_ARG, URING_FIELD_DEREF, URING_FIELD_SIGNED, URING_SPAN, UringField,
    UringOp, maps,
};

use crate::{
    attach::{Failure, ProbeStatus, record_result},
    btf::BtfError,
    probes::{ArgKind, FieldPath, Probe, Target},
};

/// io_uring requests (`request` probes) are recorded by the `uring_submit` and
/// `uring_complete` kernel events: once both are attached, each enabled request's spec is
/// installed and its opcode mapped to it, with where its fields lie in this kernel; else each
/// says which event is missing and why, or which field this kernel lacks.
pub(crate) fn attach_requests(
    ebpf: &mut Ebpf,
    probes: &[Probe],
    btf: &Result<crate::btf::KernelBtf, String>,
    statuses: &mut [ProbeStatus],
) -> anyhow::Result<()> {
    let events = [KernelEvent::UringSubmit, KernelEvent::UringComplete];
    let mut targets = Vec::new();
    let mut missing = Vec::new();
    for event in events {
        let status = probes
            .iter()
            .find(|p| matches!(&p.target, Target::Kernel { event: e, .. } if *e == event))
            .map(|p| &statuses[p.id as usize]);
        match status {
            Some(s) if s.status == "attached" => targets.push(s.target.clone()),
            Some(s) => missing.push(format!(
                "kernel event {} is {} (its own row says why)",
                event.name(),
                s.status,
            )),
            None => missing.push(format!(
                "kernel event {} is not in the probes file",
                event.name()
            )),
        }
    }
    if let (Err(e), true) = (btf, missing.is_empty()) {
        // Said once here, not once per opcode.
        log::warn!("io_uring requests not recorded: {e}");
        missing.push(e.clone());
    }
    for p in probes.iter().filter(|p| p.enabled) {
        let Target::Request { opcode, fields, .. } = &p.target else {
            continue;
        };
        let status = &mut statuses[p.id as usize];
        status.target = targets.join(" + ");
        let op = match btf {
            Ok(btf) if missing.is_empty() => uring_op(btf, p, fields),
            _ => {
                // Not logged once per opcode: the events' own failures were.
                status.status = "failed";
                status.reason = Some(missing.join("; "));
                continue;
            }
        };
        let op = match op {
            Ok(op) => op,
            // Expected on an older kernel: said in the row, not as a warning on every run.
            Err(e) if e.is_absent() => {
                record_result(status, Err(Failure::Absent(e.to_string())), probes);
                continue;
            }
            Err(e) => {
                record_result(status, Err(Failure::Failed(e.to_string())), probes);
                continue;
            }
        };
        let mut specs: Array<_, FuncSpec> = Array::try_from(
            ebpf.map_mut(maps::FUNC_SPECS)
                .ok_or_else(|| anyhow!("map {} missing", maps::FUNC_SPECS))?,
        )?;
        specs.set(p.id, p.spec(), 0)?;
        let mut ops: Array<_, UringOp> = Array::try_from(
            ebpf.map_mut(maps::URING_OPS)
                .ok_or_else(|| anyhow!("map {} missing", maps::URING_OPS))?,
        )?;
        ops.set(u32::from(*opcode), op, 0)?;
        record_result(status, Ok(()), probes);
    }
    Ok(())
}

/// How the kernel side reads request probe `p`'s arguments in this kernel: each field's
/// place from the BTF, and which arguments are the descriptor, the file and strings.
/// [`BtfError::is_absent`]: the opcode is newer than this kernel. Its number must be the
/// kernel's, where the BTF has `enum io_uring_op`: a wrong one would name other requests.
pub fn uring_op(
    btf: &crate::btf::KernelBtf,
    p: &Probe,
    fields: &[FieldPath],
) -> Result<UringOp, BtfError> {
    if let Target::Request { name, opcode, .. } = &p.target {
        match crate::btf::enumerator(btf, "io_uring_op", name) {
            Ok(Some(v)) if v == u64::from(*opcode) => {}
            Ok(Some(v)) => return Err(BtfError::Opcode(name.clone(), *opcode, v)),
            Ok(None) => return Err(BtfError::NoOpcode(name.clone())),
            // Not in this kernel's BTF: the number as given.
            Err(_) => {}
        }
    }
    let mut op = UringOp {
        probe: p.id + 1,
        fd_arg: NO_ARG,
        file_arg: NO_ARG,
        str_args: [NO_ARG; 2],
        ..Default::default()
    };
    let mut strs = 0;
    for (i, (field, role)) in fields.iter().zip(&p.args).enumerate() {
        let f = crate::btf::request_field(btf, field)?;
        let fail = |why: String| BtfError::Field(field.to_string(), why);
        let is_str = matches!(role, ArgKind::Path | ArgKind::Str);
        let want_pointer = is_str || *role == ArgKind::KFile;
        if want_pointer != f.pointer {
            return Err(fail(format!(
                "`{}` {} a pointer in this kernel",
                role.as_str(),
                if want_pointer { "needs" } else { "is not" }
            )));
        }
        let small =
            |v: u32| u16::try_from(v).map_err(|_| fail(format!("offset {v} is past 64 KiB")));
        match role {
            ArgKind::KFile if f.deref.is_some() => {
                return Err(fail("`kfile` is a field of the request itself".into()));
            }
            // Read at completion, not with the others.
            ArgKind::KFile => {
                (op.file_off, op.file_arg) = (small(f.off)?, i as u8);
                continue;
            }
            ArgKind::Fd => op.fd_arg = i as u8,
            _ if is_str => {
                *op.str_args
                    .get_mut(strs)
                    .ok_or_else(|| fail("at most two strings per io_uring request".into()))? =
                    i as u8;
                strs += 1;
            }
            _ => {}
        }
        let mut flags = 0;
        if f.signed {
            flags |= URING_FIELD_SIGNED;
        }
        if f.deref.is_some() {
            flags |= URING_FIELD_DEREF;
        }
        // The request's bytes the copy must hold: the field, or the pointer to follow.
        let end = f.off + if f.deref.is_some() { 8 } else { f.size };
        if end as usize > URING_SPAN {
            return Err(fail(format!(
                "ends {end} bytes into the request; strata copies at most {URING_SPAN}"
            )));
        }
        op.span = op.span.max(end as u16);
        op.fields[i] = UringField {
            off: small(f.off)?,
            deref: small(f.deref.unwrap_or(0))?,
            size: f.size as u8,
            flags,
            _pad: [0; 2],
        };
    }
    Ok(op)
}
