-- detector: pipe_stages
-- title: Processes joined by a pipe or FIFO (the stages of a workflow)
-- needs: calls, files, processes
-- definition: a pipe or FIFO (files.kind = 'fifo') that one process wrote and another read,
-- per writer and reader: their programs, the bytes and calls each moved through it, and the
-- regular file the reader wrote most bytes to (where the stream went: `job | gzip > out.gz`,
-- popen("cat > file")).
-- threshold: at least 64 KiB (a pipe's buffer) written by one process and read by another:
-- less fits in the buffer, so the writer need not wait for the reader (an MPI rank's few
-- lines of stderr that mpirun forwards are not a stage)
-- rationale: data through a pipe is copied into the kernel and out again in pieces of at
-- most the pipe's buffer (64 KiB), and the stages run in lockstep: the slowest stage (often
-- a single-threaded compressor) sets the rate at which the job's output reaches the file
-- system, and the file finally written is the reader's, not the job's. Writing the file
-- directly, or compressing in parallel, removes the stage.
WITH io AS (
  SELECT c.host, c.pid, c.file_id, f.path, c.op, c.bytes_result, c.ts_begin_ns, c.ts_end_ns
  FROM calls c
  JOIN files f ON f.host = c.host AND f.file_id = c.file_id
  WHERE f.kind = 'fifo' AND c.layer = 'posix' AND c.op IN ('read', 'write')
    AND c.bytes_result > 0
),
side AS (
  SELECT host, file_id, path, pid, op, count(*) AS calls, sum(bytes_result) AS bytes,
         min(ts_begin_ns) AS first_ns, max(ts_end_ns) AS last_ns
  FROM io
  GROUP BY host, file_id, path, pid, op
),
wrote AS (
  SELECT c.host, c.pid, f.path, sum(c.bytes_result) AS bytes
  FROM calls c
  JOIN files f ON f.host = c.host AND f.file_id = c.file_id
  WHERE f.kind = 'file' AND c.layer = 'posix' AND c.op = 'write' AND c.bytes_result > 0
  GROUP BY c.host, c.pid, f.path
),
main_output AS (
  SELECT host, pid, path, bytes,
         row_number() OVER (PARTITION BY host, pid ORDER BY bytes DESC, path) AS k
  FROM wrote
)
SELECT w.host, w.path,
       w.pid AS writer_pid, wp.exe AS writer_exe, w.calls AS writes, w.bytes AS bytes_written,
       r.pid AS reader_pid, rp.exe AS reader_exe, r.calls AS reads, r.bytes AS bytes_read,
       o.path AS reader_output, o.bytes AS reader_output_bytes,
       least(w.first_ns, r.first_ns) AS first_ns, greatest(w.last_ns, r.last_ns) AS last_ns
FROM side w
JOIN side r ON r.host = w.host AND r.file_id = w.file_id AND r.op = 'read' AND r.pid <> w.pid
LEFT JOIN processes wp ON wp.host = w.host AND wp.pid = w.pid
LEFT JOIN processes rp ON rp.host = r.host AND rp.pid = r.pid
LEFT JOIN main_output o ON o.host = r.host AND o.pid = r.pid AND o.k = 1
WHERE w.op = 'write' AND w.bytes >= 65536
ORDER BY bytes_written DESC, w.host, w.path, writer_pid, reader_pid
