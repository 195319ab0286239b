-- detector: collective_buffering
-- title: Collective I/O done by a few aggregator ranks (two-phase I/O)
-- needs: calls, files
-- definition: for each collective MPI-IO data call (MPI_File_write_all, MPI_File_read_at_all,
-- ...) on a file, the processes of this host that made it and, among them, the aggregators:
-- those that issued POSIX reads or writes beneath their own call (up to three levels down).
-- Reports participants, aggregators and their share, the ranks' MPI-IO bytes and calls, and
-- the POSIX bytes and calls the aggregators moved for them.
-- threshold: at least 2 participants, at least 1 and fewer aggregators than participants
-- rationale: two-phase I/O (collective buffering) ships the ranks' data to a few aggregators
-- that write large contiguous pieces: it explains why most ranks show no POSIX I/O and a few
-- show all of it, and gives the aggregator share to set against the file system's
-- parallelism (Lustre stripe count; ROMIO cb_nodes, Open MPI OMPIO fcoll and
-- num_aggregators).
WITH coll AS (
  SELECT c.host, c.call_id, c.pid, c.function, f.path, c.bytes_result, c.ts_begin_ns,
         c.ts_end_ns
  FROM calls c
  JOIN files f ON f.host = c.host AND f.file_id = c.file_id
  WHERE c.layer = 'mpiio' AND c.collective AND c.op IN ('read', 'write')
),
d1 AS (
  SELECT k.host, k.call_id AS top_id, c.call_id, c.layer, c.op, c.bytes_result
  FROM coll k JOIN calls c ON c.host = k.host AND c.parent_id = k.call_id
),
d2 AS (
  SELECT d.host, d.top_id, c.call_id, c.layer, c.op, c.bytes_result
  FROM d1 d JOIN calls c ON c.host = d.host AND c.parent_id = d.call_id
),
d3 AS (
  SELECT d.host, d.top_id, c.call_id, c.layer, c.op, c.bytes_result
  FROM d2 d JOIN calls c ON c.host = d.host AND c.parent_id = d.call_id
),
below AS (
  SELECT * FROM d1 UNION ALL SELECT * FROM d2 UNION ALL SELECT * FROM d3
),
posix AS (
  SELECT host, top_id, count(*) AS calls, sum(coalesce(bytes_result, 0)) AS bytes
  FROM below
  WHERE layer = 'posix' AND op IN ('read', 'write')
  GROUP BY host, top_id
),
per AS (
  SELECT k.host, k.path, k.function,
         count(DISTINCT k.pid) AS participants,
         count(DISTINCT CASE WHEN p.calls > 0 THEN k.pid END) AS aggregators,
         count(*) AS mpi_calls,
         sum(coalesce(k.bytes_result, 0)) AS mpi_bytes,
         sum(coalesce(p.calls, 0)) AS posix_calls,
         sum(coalesce(p.bytes, 0)) AS posix_bytes,
         min(k.ts_begin_ns) AS first_ns, max(k.ts_end_ns) AS last_ns
  FROM coll k
  LEFT JOIN posix p ON p.host = k.host AND p.top_id = k.call_id
  GROUP BY k.host, k.path, k.function
)
SELECT host, path, function, participants, aggregators,
       CAST(aggregators AS DOUBLE) / participants AS aggregator_share,
       mpi_calls, mpi_bytes, posix_calls, posix_bytes, first_ns, last_ns
FROM per
WHERE participants >= 2 AND aggregators >= 1 AND aggregators < participants
ORDER BY mpi_bytes DESC, host, path, function
