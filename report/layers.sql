-- summary: layers
-- title: Calls, bytes and time per layer
-- needs: calls
-- Bytes and time are those of the layer's calls that were not made by another call of the
-- same layer (nested calls, as glibc's getline calling getdelim, would count twice). Bytes
-- are what the calls returned as moved; a copy between two files (copy_file_range,
-- sendfile) counts as read and as written.
WITH c AS (
  SELECT c.*, p.layer IS NULL OR p.layer <> c.layer AS outer_call
  FROM calls c
  LEFT JOIN calls p ON p.host = c.host AND p.call_id = c.parent_id
)
SELECT layer,
       count(*) AS calls,
       sum(CASE WHEN outer_call AND op IN ('read', 'copy') THEN coalesce(bytes_result, 0) ELSE 0 END) AS bytes_read,
       sum(CASE WHEN outer_call AND op IN ('write', 'copy') THEN coalesce(bytes_result, 0) ELSE 0 END) AS bytes_written,
       sum(CASE WHEN outer_call THEN ts_end_ns - ts_begin_ns ELSE 0 END) / 1e9 AS seconds
FROM c
GROUP BY layer
ORDER BY layer
