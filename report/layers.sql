-- summary: layers
-- title: Calls, bytes and time per layer
-- needs: calls
-- Time is the time spent in calls of the layer that were not made by another call of the
-- same layer (nested calls would count twice). Bytes are what the calls returned as moved; a
-- copy between two files (copy_file_range, sendfile) counts as read and as written.
SELECT c.layer,
       count(*) AS calls,
       sum(CASE WHEN c.op IN ('read', 'copy') THEN coalesce(c.bytes_result, 0) ELSE 0 END) AS bytes_read,
       sum(CASE WHEN c.op IN ('write', 'copy') THEN coalesce(c.bytes_result, 0) ELSE 0 END) AS bytes_written,
       sum(CASE WHEN p.layer IS NULL OR p.layer <> c.layer
                THEN c.ts_end_ns - c.ts_begin_ns ELSE 0 END) / 1e9 AS seconds
FROM calls c
LEFT JOIN calls p ON p.host = c.host AND p.call_id = c.parent_id
GROUP BY c.layer
ORDER BY c.layer
