//! The output tables (documented in docs/schema.md). Times are Int64 nanoseconds since the
//! Unix epoch; ids are Int64 so that Spark, which has no unsigned 64-bit type, reads them.
use crate::sink::table;

// Each file holds the calls of one thread together (in the order they ended, as they
// come): consecutive rows then share pid, tid, handles and argument values, and times and
// ids grow by small steps, which the dictionary, run-length and delta encodings store in
// far fewer bytes (4 ranks of parallel HDF5 writes: 10.6 -> 7.1 bytes per call).
table!(Calls, CallRow, "calls", grouped_by [tid], {
    call_id: I64,
    parent_id: OptI64,
    pid: I32,
    tid: I32,
    depth: I32,
    layer: Name,
    function: Name,
    op: Name,
    ts_begin_ns: I64,
    ts_end_ns: I64,
    handle_id: OptI64,
    file_id: OptI64,
    offset: OptI64,
    bytes_requested: OptI64,
    bytes_result: OptI64,
    ret: I64,
    errno: OptI32,
    flags: OptI64,
    collective: Bool,
    path: OptStr,
    path2: OptStr,
    strs: ListStr,
    args: ListI64,
    dims: ListI64,
});

table!(Handles, HandleRow, "handles", {
    handle_id: I64,
    parent_handle_id: OptI64,
    pid: I32,
    layer: Str,
    kind: Str,
    raw_handle: I64,
    file_id: OptI64,
    path: OptStr,
    mode: OptStr,
    flags: OptI64,
    created_by_call_id: OptI64,
    destroyed_by_call_id: OptI64,
    ts_created_ns: OptI64,
    ts_destroyed_ns: OptI64,
    group_key: OptStr,
});

table!(Files, FileRow, "files", {
    file_id: I64,
    path: Str,
    dev: OptStr,
    ino: OptI64,
    fs_type: OptStr,
    mount_point: OptStr,
    mount_source: OptStr,
    lustre_stripe_size: OptI64,
    lustre_stripe_count: OptI64,
    lustre_osts: ListI64,
    lustre_layout: OptStr,
});

table!(Processes, ProcessRow, "processes", {
    pid: I32,
    ppid: OptI32,
    exe: OptStr,
    cmdline: OptStr,
    comm: OptStr,
    rank: OptI32,
    world_size: OptI32,
    job_id: OptStr,
    step_id: OptStr,
    start_ns: OptI64,
    end_ns: OptI64,
    exit_code: OptI32,
    exit_signal: OptI32,
});

table!(Run, RunRow, "run", {
    run_id: Str,
    host: Str,
    kernel: Str,
    strata_version: Str,
    command: Str,
    start_ns: I64,
    end_ns: OptI64,
    clock_offset_ns: I64,
    clock_source: Str,
    clock_synchronized: Bool,
    clock_max_error_ns: OptI64,
    job: OptStr,
    events_recorded: I64,
    events_lost: I64,
    events_skipped: I64,
    str_read_failed: I64,
    stack_overflow: I64,
    stack_mismatch: I64,
    stack_unavailable: I64,
    calls_written: I64,
    peak_rss_kib: OptI64,
    cpu_ns: OptI64,
    bpf_run_ns: OptI64,
    bpf_runs: OptI64,
    complete: Bool,
});

table!(Probes, ProbeRow, "probes", {
    run_id: Str,
    function: Str,
    layer: Str,
    op: Str,
    mechanism: Str,
    target: Str,
    status: Str,
    reason: OptStr,
    probes_line: I32,
    single_step: OptBool,
});

table!(Block, BlockRow, "block", {
    pid: I32,
    tid: I32,
    call_id: OptI64,
    origin: Str,
    dev: Str,
    sector: I64,
    bytes: I64,
    request_bytes: I64,
    op: Str,
    rwbs: Str,
    ts_queue_ns: I64,
    ts_issue_ns: OptI64,
    ts_complete_ns: OptI64,
    error: OptI32,
    ino: OptI64,
    file_id: OptI64,
});

table!(Pagecache, PagecacheRow, "pagecache", {
    event: Str,
    pid: I32,
    tid: I32,
    call_id: OptI64,
    dev: OptStr,
    ino: I64,
    file_id: OptI64,
    first_page: I64,
    last_page: I64,
    pages: OptI64,
    ts_begin_ns: I64,
    ts_end_ns: I64,
});
