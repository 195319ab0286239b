-- detector: small_operations
-- title: Many small POSIX, io_uring or AIO operations on a file
-- needs: calls, files
-- definition: a process's POSIX reads and writes and io_uring and Linux AIO read and write
--   requests on one regular file that each moved less than a small size: 4 KiB (a page, the
--   usual file-system block), or on Lustre 1/16 of the file's stripe size.
-- threshold: at least 100 such calls, making at least half of the process's data calls on
--   that file.
-- rationale: every call costs a syscall (an io_uring or AIO request a pass through the
--   kernel's I/O path) and, on a parallel file system, often a round trip to a server; a few
--   large requests move the same bytes far faster. Buffering (stdio, MPI-IO collective
--   buffering, HDF5 chunk caches) or larger application buffers remove the pattern.
WITH data AS (
  SELECT c.host, c.pid, c.file_id, f.path, c.bytes_result AS bytes,
         c.ts_end_ns - c.ts_begin_ns AS ns, c.ts_begin_ns AS b, c.ts_end_ns AS e,
         CASE WHEN f.lustre_stripe_size IS NOT NULL THEN CAST(f.lustre_stripe_size / 16 AS BIGINT)
              ELSE 4096 END AS small
  FROM calls c
  JOIN files f ON f.host = c.host AND f.file_id = c.file_id
  WHERE c.layer IN ('posix', 'uring', 'aio') AND c.op IN ('read', 'write') AND c.bytes_result > 0
    AND f.path LIKE '/%' AND f.path NOT LIKE '/dev/%' AND f.path NOT LIKE '/proc/%'
    AND f.path NOT LIKE '/sys/%' AND f.path NOT LIKE '/etc/%' AND f.path NOT LIKE '/usr/%'
),
per AS (
  SELECT host, pid, path, max(small) AS small_below,
         sum(CASE WHEN bytes < small THEN 1 ELSE 0 END) AS small_calls,
         count(*) AS data_calls,
         sum(CASE WHEN bytes < small THEN bytes ELSE 0 END) AS small_bytes,
         sum(CASE WHEN bytes < small THEN ns ELSE 0 END) / 1e9 AS small_seconds,
         min(CASE WHEN bytes < small THEN b END) AS first_ns,
         max(CASE WHEN bytes < small THEN e END) AS last_ns
  FROM data
  GROUP BY host, pid, path
)
SELECT per.host, per.pid, p.rank, per.path, per.small_below, per.small_calls, per.data_calls,
       per.small_bytes, per.small_seconds, per.first_ns, per.last_ns
FROM per
LEFT JOIN processes p ON p.host = per.host AND p.pid = per.pid
WHERE per.small_calls >= 100 AND 2 * per.small_calls >= per.data_calls
ORDER BY per.small_calls DESC, per.host, per.pid
