-- detector: hidden_files
-- title: Files an I/O library touches on its own (library-internal hidden file access)
-- needs: calls, files
-- definition: POSIX calls made by an MPI-IO, HDF5 or NetCDF call (their direct parent) on a
-- file other than the one that call is about: lock-test, shared-file-pointer and metadata
-- files a library creates beside the data or in /tmp. Grouped per host, library call and
-- file: processes, calls, data calls and bytes. Shared libraries the call loads (plugins),
-- devices and system files (/dev, /proc, /sys, /etc, /usr) are left out.
-- threshold: any such file
-- rationale: these files are invisible in the program's source yet cost metadata operations
-- on the file system that holds the data (one create, lock and unlink per rank and open on a
-- Lustre MDS) and can be left behind; knowing the component that makes them (Open MPI's
-- sharedfp, fcoll) tells which setting avoids them.
WITH up AS (
  SELECT p.host, p.call_id, p.function, coalesce(pf.path, p.path) AS path
  FROM calls p
  LEFT JOIN files pf ON pf.host = p.host AND pf.file_id = p.file_id
  WHERE p.layer IN ('mpiio', 'hdf5', 'netcdf')
),
hidden AS (
  SELECT c.host, c.pid, u.function AS by_function, u.path AS by_path,
         coalesce(f.path, c.path) AS path, c.op, c.bytes_result, c.ts_begin_ns, c.ts_end_ns
  FROM calls c
  JOIN up u ON u.host = c.host AND u.call_id = c.parent_id
  LEFT JOIN files f ON f.host = c.host AND f.file_id = c.file_id
  WHERE c.layer = 'posix'
)
SELECT host, by_function, path, count(DISTINCT pid) AS processes, count(*) AS calls,
       sum(CASE WHEN op IN ('read', 'write') THEN 1 ELSE 0 END) AS data_calls,
       sum(CASE WHEN op IN ('read', 'write') THEN coalesce(bytes_result, 0) ELSE 0 END) AS bytes,
       min(ts_begin_ns) AS first_ns, max(ts_end_ns) AS last_ns
FROM hidden
WHERE path LIKE '/%' AND (by_path IS NULL OR path <> by_path)
  AND path NOT LIKE '/dev/%' AND path NOT LIKE '/proc/%' AND path NOT LIKE '/sys/%'
  AND path NOT LIKE '/etc/%' AND path NOT LIKE '/usr/%'
  AND path NOT LIKE '%.so' AND path NOT LIKE '%.so.%'
GROUP BY host, by_function, path
ORDER BY calls DESC, host, by_function, path
