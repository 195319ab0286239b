-- summary: files
-- title: Bytes per file and layer
-- needs: calls, files
-- Each layer's reads and writes on the file, for reading amplification between layers
-- (HDF5 bytes against the MPI-IO and POSIX bytes beneath them). A copy between two files
-- (copy_file_range, sendfile) is a read of its first file and a write of its second. Calls
-- made by another call of the same layer (glibc's getline calling getdelim) are left out:
-- their bytes are the caller's.
WITH outer_calls AS (
  SELECT c.host, c.layer, c.op, c.file_id, c.file2_id, c.bytes_result
  FROM calls c
  LEFT JOIN calls p ON p.host = c.host AND p.call_id = c.parent_id
  WHERE c.op IN ('read', 'write', 'copy') AND (p.layer IS NULL OR p.layer <> c.layer)
),
moved AS (
  SELECT host, layer, op, file_id, bytes_result FROM outer_calls WHERE op IN ('read', 'write')
  UNION ALL
  SELECT host, layer, 'read', file_id, bytes_result FROM outer_calls WHERE op = 'copy'
  UNION ALL
  SELECT host, layer, 'write', file2_id, bytes_result FROM outer_calls WHERE op = 'copy'
)
SELECT f.host, f.path, f.fs_type, c.layer,
       count(*) AS calls,
       sum(CASE WHEN c.op = 'read' THEN coalesce(c.bytes_result, 0) ELSE 0 END) AS bytes_read,
       sum(CASE WHEN c.op = 'write' THEN coalesce(c.bytes_result, 0) ELSE 0 END) AS bytes_written
FROM moved c
JOIN files f ON f.host = c.host AND f.file_id = c.file_id
WHERE f.path LIKE '/%' AND f.path NOT LIKE '/dev/%' AND f.path NOT LIKE '/proc/%'
  AND f.path NOT LIKE '/sys/%'
GROUP BY f.host, f.path, f.fs_type, c.layer
ORDER BY sum(coalesce(c.bytes_result, 0)) DESC, f.host, f.path, c.layer
