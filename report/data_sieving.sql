-- detector: data_sieving
-- title: Data sieving: MPI-IO writes that read before they write
-- needs: calls, files
-- definition: MPI-IO write calls on a file with POSIX reads beneath them (up to three levels):
-- the library read a covering extent, changed the requested pieces in memory and wrote the
-- extent back (read-modify-write). Per file and function: processes, MPI-IO calls and bytes,
-- and the POSIX bytes read and written beneath.
-- threshold: at least 64 KiB read beneath the writes
-- rationale: ROMIO's data sieving turns a non-contiguous independent write into reads and
-- writes of whole extents (ind_wr_buffer_size), under a lock on file systems that need one:
-- several times the bytes and serialised ranks. Collective buffering (romio_cb_write), a
-- contiguous file view or larger records avoid it.
WITH w AS (
  SELECT c.host, c.call_id, c.pid, c.function, f.path, c.bytes_result, c.ts_begin_ns,
         c.ts_end_ns
  FROM calls c
  JOIN files f ON f.host = c.host AND f.file_id = c.file_id
  WHERE c.layer = 'mpiio' AND c.op = 'write'
),
d1 AS (
  SELECT w.host, w.call_id AS top_id, c.call_id, c.layer, c.op, c.bytes_result
  FROM w JOIN calls c ON c.host = w.host AND c.parent_id = w.call_id
),
d2 AS (
  SELECT d.host, d.top_id, c.call_id, c.layer, c.op, c.bytes_result
  FROM d1 d JOIN calls c ON c.host = d.host AND c.parent_id = d.call_id
),
d3 AS (
  SELECT d.host, d.top_id, c.call_id, c.layer, c.op, c.bytes_result
  FROM d2 d JOIN calls c ON c.host = d.host AND c.parent_id = d.call_id
),
posix AS (
  SELECT host, top_id,
         sum(CASE WHEN op = 'read' THEN coalesce(bytes_result, 0) ELSE 0 END) AS read_bytes,
         sum(CASE WHEN op = 'write' THEN coalesce(bytes_result, 0) ELSE 0 END) AS written_bytes
  FROM (SELECT * FROM d1 UNION ALL SELECT * FROM d2 UNION ALL SELECT * FROM d3) b
  WHERE layer = 'posix' AND op IN ('read', 'write')
  GROUP BY host, top_id
),
per AS (
  SELECT w.host, w.path, w.function,
         count(DISTINCT w.pid) AS processes,
         count(DISTINCT CASE WHEN p.read_bytes > 0 THEN w.pid END) AS sieving_processes,
         count(*) AS mpi_calls, sum(coalesce(w.bytes_result, 0)) AS mpi_bytes,
         sum(coalesce(p.read_bytes, 0)) AS posix_read_bytes,
         sum(coalesce(p.written_bytes, 0)) AS posix_written_bytes,
         min(w.ts_begin_ns) AS first_ns, max(w.ts_end_ns) AS last_ns
  FROM w
  LEFT JOIN posix p ON p.host = w.host AND p.top_id = w.call_id
  GROUP BY w.host, w.path, w.function
)
SELECT host, path, function, processes, sieving_processes, mpi_calls, mpi_bytes,
       posix_read_bytes, posix_written_bytes,
       CAST(posix_read_bytes + posix_written_bytes AS DOUBLE) / greatest(mpi_bytes, 1)
         AS bytes_moved_per_byte, first_ns, last_ns
FROM per
WHERE posix_read_bytes >= 65536
ORDER BY posix_read_bytes DESC, host, path, function
