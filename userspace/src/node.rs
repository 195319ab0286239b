//! Facts about this node recorded with every run: its name, kernel and clock.
//!
//! Timestamps are CLOCK_MONOTONIC in the kernel, turned into Unix-epoch time with the offset
//! read at the start of the run. Two nodes' rows are as comparable as their realtime clocks
//! are synchronised: the clock source and the NTP/PTP daemon's own error bound are recorded
//! so a reader knows how far to trust a cross-node comparison.

pub fn hostname() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "unknown".into())
}

pub fn kernel_release() -> String {
    nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The `run` row of a run starting now (its end and counts are filled in at the end).
pub fn run_row(
    run_id: &str,
    host: &str,
    command: String,
    start_ns: i64,
    clock: crate::correlate::Clock,
    job: Option<String>,
) -> crate::schema::RunRow {
    let facts = clock_facts();
    crate::schema::RunRow {
        run_id: run_id.to_string(),
        host: host.to_string(),
        kernel: kernel_release(),
        strata_version: env!("CARGO_PKG_VERSION").to_string(),
        command,
        start_ns,
        clock_offset_ns: clock.offset_ns,
        clock_source: facts.source,
        clock_synchronized: facts.synchronized,
        clock_max_error_ns: facts.max_error_ns,
        job,
        ..Default::default()
    }
}

/// CPU time strata itself used so far (user and system), in nanoseconds.
pub fn cpu_ns() -> Option<i64> {
    let u = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF).ok()?;
    let ns = |t: nix::sys::time::TimeVal| t.tv_sec() * 1_000_000_000 + t.tv_usec() * 1_000;
    Some(ns(u.user_time()) + ns(u.system_time()))
}

/// strata's own peak resident memory so far, in KiB.
pub fn peak_rss_kib() -> Option<i64> {
    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF)
        .ok()
        .map(|u| u.max_rss())
}

/// How far this node's realtime clock can be trusted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClockFacts {
    /// The kernel's clock source (`tsc`, `kvm-clock`, `hpet`, ...).
    pub source: String,
    /// Whether the kernel considers the clock synchronised (an NTP or PTP daemon steers it).
    pub synchronized: bool,
    /// The kernel's maximum error bound of realtime, as the time daemon last set it.
    pub max_error_ns: Option<i64>,
}

pub fn clock_facts() -> ClockFacts {
    let source =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
    // SAFETY: adjtimex with modes = 0 only reads the kernel's timekeeping state.
    let mut tx: libc::timex = unsafe { std::mem::zeroed() };
    let state = unsafe { libc::adjtimex(&mut tx) };
    if state < 0 {
        return ClockFacts {
            source,
            ..ClockFacts::default()
        };
    }
    ClockFacts {
        source,
        synchronized: state != libc::TIME_ERROR && tx.status & libc::STA_UNSYNC == 0,
        // `maxerror` is in microseconds.
        max_error_ns: Some(tx.maxerror * 1000),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_facts_are_read() {
        let f = clock_facts();
        assert!(!f.source.is_empty(), "no clock source in sysfs");
        assert!(f.max_error_ns.is_some_and(|e| e >= 0), "{f:?}");
    }
}
