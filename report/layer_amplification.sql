-- detector: layer_amplification
-- title: Calls or bytes multiplied between a library layer and POSIX
-- needs: calls, files
-- definition: per file and library layer (MPI-IO, HDF5, NetCDF, stdio), the layer's reads and
-- writes whose bytes strata knows against the POSIX reads and writes they caused (up to three levels beneath, all
-- processes of the host together, so aggregation by other ranks evens out): calls and bytes on
-- each side and their ratios.
-- threshold: POSIX bytes at least 1.5 times the layer's and 1 MiB more, or POSIX calls at
-- least 4 times the layer's and 100 more
-- rationale: the thesis' multi-layer patterns: a layer that moves more bytes than asked
-- (read-modify-write, sieving, padding, metadata) or turns each call into many small ones
-- (non-contiguous selections, collective I/O without aggregation) costs what the upper layer
-- does not show; the ratio says how much, the layer pair says where to look.
WITH up AS (
  -- The layer's outermost calls whose bytes are known: one made by another of the same
  -- layer (glibc's getline calling getdelim) is part of its caller, and one that says no
  -- byte count (fscanf, an fputs of 511 bytes or more) is no measure of what it asked.
  SELECT c.host, c.call_id, c.layer, f.path, c.bytes_result, c.ts_begin_ns, c.ts_end_ns
  FROM calls c
  JOIN files f ON f.host = c.host AND f.file_id = c.file_id
  LEFT JOIN calls p ON p.host = c.host AND p.call_id = c.parent_id
  WHERE c.layer IN ('mpiio', 'hdf5', 'netcdf', 'stdio') AND c.op IN ('read', 'write')
    AND (p.layer IS NULL OR p.layer <> c.layer) AND c.bytes_result IS NOT NULL
),
d1 AS (
  SELECT u.host, u.call_id AS top_id, c.call_id, c.layer, c.op, c.bytes_result
  FROM up u JOIN calls c ON c.host = u.host AND c.parent_id = u.call_id
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
  SELECT host, top_id, count(*) AS calls, sum(coalesce(bytes_result, 0)) AS bytes
  FROM (SELECT * FROM d1 UNION ALL SELECT * FROM d2 UNION ALL SELECT * FROM d3) b
  WHERE layer = 'posix' AND op IN ('read', 'write')
  GROUP BY host, top_id
),
per AS (
  SELECT u.host, u.path, u.layer,
         count(*) AS layer_calls, sum(coalesce(u.bytes_result, 0)) AS layer_bytes,
         sum(coalesce(p.calls, 0)) AS posix_calls, sum(coalesce(p.bytes, 0)) AS posix_bytes,
         min(u.ts_begin_ns) AS first_ns, max(u.ts_end_ns) AS last_ns
  FROM up u
  LEFT JOIN posix p ON p.host = u.host AND p.top_id = u.call_id
  GROUP BY u.host, u.path, u.layer
)
SELECT host, path, layer, layer_calls, posix_calls,
       CAST(posix_calls AS DOUBLE) / layer_calls AS calls_ratio,
       layer_bytes, posix_bytes,
       CASE WHEN layer_bytes > 0 THEN CAST(posix_bytes AS DOUBLE) / layer_bytes END AS bytes_ratio,
       first_ns, last_ns
FROM per
WHERE (posix_bytes >= 1.5 * layer_bytes AND posix_bytes - layer_bytes >= 1048576)
   OR (posix_calls >= 4 * layer_calls AND posix_calls - layer_calls >= 100)
ORDER BY posix_bytes - layer_bytes DESC, host, path, layer
