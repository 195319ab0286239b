-- detector: metadata_storm
-- title: Many processes opening and closing the same file over and over
-- needs: calls, files
-- definition: POSIX metadata calls (open, close, stat, access, truncate, unlink, rename, link,
--   setattr, xattr, readdir; as syscalls or io_uring requests) on one file or directory by
--   several processes, outnumbering the reads and writes on it.
-- threshold: at least 4 processes, at least 100 metadata calls in all, and no fewer metadata
--   calls than data calls on the file.
-- rationale: on a parallel file system every open and close is a request to the metadata
--   server, which all clients share and which serialises on the file; ranks that reopen a
--   shared file per record queue behind each other (the slowest open shows in max_open_seconds).
--   Open once and keep the handle, or let one rank or MPI-IO's collective open do it.
WITH c AS (
  SELECT c.host, c.pid, c.file_id, f.path, c.op, c.ts_end_ns - c.ts_begin_ns AS ns,
         c.ts_begin_ns AS b, c.ts_end_ns AS e,
         c.op IN ('open', 'close', 'stat', 'access', 'truncate', 'unlink', 'rename', 'link',
                  'setattr', 'xattr', 'readdir') AS meta
  FROM calls c
  JOIN files f ON f.host = c.host AND f.file_id = c.file_id
  WHERE c.layer IN ('posix', 'uring')
    AND f.path LIKE '/%' AND f.path NOT LIKE '/dev/%' AND f.path NOT LIKE '/proc/%'
    AND f.path NOT LIKE '/sys/%' AND f.path NOT LIKE '/etc/%' AND f.path NOT LIKE '/usr/%'
),
per AS (
  SELECT host, path,
         count(DISTINCT pid) AS processes,
         sum(CASE WHEN meta THEN 1 ELSE 0 END) AS metadata_calls,
         sum(CASE WHEN op IN ('read', 'write') THEN 1 ELSE 0 END) AS data_calls,
         sum(CASE WHEN meta THEN ns ELSE 0 END) / 1e9 AS metadata_seconds,
         max(CASE WHEN op = 'open' THEN ns END) / 1e9 AS max_open_seconds,
         min(CASE WHEN op = 'open' THEN ns END) / 1e9 AS min_open_seconds,
         min(CASE WHEN meta THEN b END) AS first_ns,
         max(CASE WHEN meta THEN e END) AS last_ns
  FROM c
  GROUP BY host, path
)
SELECT host, path, processes, metadata_calls, data_calls, metadata_seconds, max_open_seconds,
       min_open_seconds, first_ns, last_ns
FROM per
WHERE processes >= 4 AND metadata_calls >= 100 AND metadata_calls >= data_calls
ORDER BY metadata_calls DESC, host, path
