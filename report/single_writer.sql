-- detector: single_writer
-- title: One rank writes (nearly) everything
-- needs: calls, files, processes
-- definition: in a job of at least 4 MPI ranks, one rank issues at least 90% of the bytes the
--   ranks write to regular files through POSIX (syscalls, io_uring and Linux AIO requests).
-- threshold: 4 ranks, 90% of the bytes, at least 1 MiB written in all.
-- rationale: the other ranks wait while one funnels the job's output through a single
--   client and its network link; the write time grows with the rank count. Parallel I/O
--   (MPI-IO collective writes, parallel HDF5 or NetCDF) spreads the bytes over the ranks or
--   over a chosen set of aggregators.
WITH ranks AS (
  SELECT host, pid, rank FROM processes WHERE rank IS NOT NULL
),
w AS (
  SELECT c.host, c.pid, sum(c.bytes_result) AS bytes, min(c.ts_begin_ns) AS first_ns,
         max(c.ts_end_ns) AS last_ns
  FROM calls c
  JOIN ranks r ON r.host = c.host AND r.pid = c.pid
  JOIN files f ON f.host = c.host AND f.file_id = c.file_id
  WHERE c.layer IN ('posix', 'uring', 'aio') AND c.op = 'write' AND c.bytes_result > 0
    AND f.path LIKE '/%' AND f.path NOT LIKE '/dev/%' AND f.path NOT LIKE '/proc/%'
    AND f.path NOT LIKE '/sys/%' AND f.path NOT LIKE '/etc/%' AND f.path NOT LIKE '/usr/%'
  GROUP BY c.host, c.pid
),
total AS (SELECT sum(bytes) AS bytes FROM w),
n AS (SELECT count(*) AS ranks FROM ranks)
SELECT w.host, w.pid, r.rank, w.bytes AS bytes_written, total.bytes AS job_bytes_written,
       w.bytes / total.bytes AS share, n.ranks, w.first_ns, w.last_ns
FROM w
JOIN ranks r ON r.host = w.host AND r.pid = w.pid
CROSS JOIN total
CROSS JOIN n
WHERE n.ranks >= 4 AND total.bytes >= 1048576 AND w.bytes >= 0.9 * total.bytes
ORDER BY w.bytes DESC
