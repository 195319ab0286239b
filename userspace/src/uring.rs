//! Requests (`request` probes of io_uring and Linux AIO): installing them once the kernel
//! events that record them are attached, and where each io_uring request reads its arguments
//! in this kernel's requests (probes.toml `fields`, resolved through the BTF).
use anyhow::anyhow;
use aya::{Ebpf, maps::Array};
use strata_common::{
    KernelEvent, NO_ARG, URING_FIELD_DEREF, URING_FIELD_SIGNED, URING_SPAN, UringField, UringOp,
    maps,
};

use crate::{
    attach::{Failure, ProbeStatus, record_result},
    btf::BtfError,
    probes::{ArgKind, FieldPath, Layer, Probe, Target},
};

/// Requests (`request` probes) are recorded by their layer's kernel events: io_uring's by
/// `uring_submit` and `uring_complete`, Linux AIO's by `aio_submit`, `aio_wait`, `aio_reaped`,
/// `aio_pwait` and `aio_preaped`. Once those are attached, each enabled io_uring request's
/// spec is installed and its opcode mapped to it, with where its fields lie in this kernel
/// (user space maps an AIO request's opcode itself), and each request's row says attached;
/// else each says which event is missing and why, or which field this kernel lacks.
pub(crate) fn attach_requests(
    ebpf: &mut Ebpf,
    probes: &[Probe],
    btf: &Result<crate::btf::KernelBtf, String>,
    statuses: &mut [ProbeStatus],
) -> anyhow::Result<()> {
    use KernelEvent::*;
    for (layer, events) in [
        (Layer::Uring, &[UringSubmit, UringComplete][..]),
        (
            Layer::Aio,
            &[AioSubmit, AioWait, AioReaped, AioPwait, AioPreaped][..],
        ),
    ] {
        let (targets, mechanism, mut missing) = events_attached(probes, statuses, events);
        if let (Err(e), true, Layer::Uring) = (btf, missing.is_empty(), layer) {
            // Said once here, not once per opcode.
            log::warn!("io_uring requests not recorded: {e}");
            missing.push(e.clone());
        }
        for p in probes.iter().filter(|p| p.enabled && p.layer == layer) {
            let Target::Request { opcode, fields, .. } = &p.target else {
                continue;
            };
            let status = &mut statuses[p.id as usize];
            status.target = targets.join(" + ");
            status.mechanism = mechanism;
            if !missing.is_empty() {
                // Not logged once per opcode: the events' own failures were.
                status.status = "failed";
                status.reason = Some(missing.join("; "));
                continue;
            }
            // User space maps an AIO request to its probe (`linux_aio`).
            if layer == Layer::Aio {
                record_result(status, Ok(()), probes);
                continue;
            }
            let Ok(btf) = btf else { continue };
            match uring_op(btf, p, fields) {
                Ok(op) => {
                    set(ebpf, maps::FUNC_SPECS, p.id, p.spec())?;
                    set(ebpf, maps::URING_OPS, u32::from(*opcode), op)?;
                    record_result(status, Ok(()), probes);
                }
                // Expected on an older kernel: said in the row, not as a warning on every run.
                Err(e) if e.is_absent() => {
                    record_result(status, Err(Failure::Absent(e.to_string())), probes);
                }
                Err(e) => record_result(status, Err(Failure::Failed(e.to_string())), probes),
            }
        }
    }
    Ok(())
}

/// The targets of `events` as attached, their mechanism (`tracepoint` when they differ),
/// and why each of the others is not.
fn events_attached(
    probes: &[Probe],
    statuses: &[ProbeStatus],
    events: &[KernelEvent],
) -> (Vec<String>, &'static str, Vec<String>) {
    let mut targets = Vec::new();
    let mut mechanisms = Vec::new();
    let mut missing = Vec::new();
    for &event in events {
        let status = probes
            .iter()
            .find(|p| matches!(&p.target, Target::Kernel { event: e, .. } if *e == event))
            .map(|p| &statuses[p.id as usize]);
        match status {
            Some(s) if s.status == "attached" => {
                targets.push(s.target.clone());
                mechanisms.push(s.mechanism);
            }
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
    let mechanism = match mechanisms.split_first() {
        Some((m, rest)) if rest.iter().all(|r| r == m) => *m,
        _ => "tracepoint",
    };
    (targets, mechanism, missing)
}

/// `map[index] = value` in one of the programs' arrays.
fn set<V: aya::Pod>(ebpf: &mut Ebpf, map: &str, index: u32, value: V) -> anyhow::Result<()> {
    let mut a: Array<_, V> = Array::try_from(
        ebpf.map_mut(map)
            .ok_or_else(|| anyhow!("map {map} missing"))?,
    )?;
    a.set(index, value, 0)?;
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
