-- summary: slow_calls
-- title: The slowest top-level calls and what they caused beneath
-- needs: calls
-- The 10 slowest calls no other traced call made, each with the calls beneath it (four
-- levels: an nc_put_vara -> H5Dwrite -> MPI_File_write_at_all -> pwrite64 chain) counted per
-- layer with their bytes. Kept to joins (no recursive CTE) so that Spark SQL runs it too.
WITH top AS (
  SELECT host, call_id, pid, layer, function, ts_end_ns - ts_begin_ns AS ns, bytes_result
  FROM calls
  WHERE parent_id IS NULL
  ORDER BY ts_end_ns - ts_begin_ns DESC, host, call_id
  LIMIT 10
),
d1 AS (
  SELECT t.host, t.call_id AS top_id, c.call_id, c.layer, c.bytes_result
  FROM top t JOIN calls c ON c.host = t.host AND c.parent_id = t.call_id
),
d2 AS (
  SELECT d.host, d.top_id, c.call_id, c.layer, c.bytes_result
  FROM d1 d JOIN calls c ON c.host = d.host AND c.parent_id = d.call_id
),
d3 AS (
  SELECT d.host, d.top_id, c.call_id, c.layer, c.bytes_result
  FROM d2 d JOIN calls c ON c.host = d.host AND c.parent_id = d.call_id
),
d4 AS (
  SELECT d.host, d.top_id, c.call_id, c.layer, c.bytes_result
  FROM d3 d JOIN calls c ON c.host = d.host AND c.parent_id = d.call_id
),
below AS (
  SELECT * FROM d1 UNION ALL SELECT * FROM d2 UNION ALL SELECT * FROM d3 UNION ALL SELECT * FROM d4
)
SELECT t.host, t.pid, t.layer, t.function, t.ns / 1e9 AS seconds, t.bytes_result AS bytes,
       b.layer AS below_layer, count(b.call_id) AS below_calls,
       sum(coalesce(b.bytes_result, 0)) AS below_bytes
FROM top t
LEFT JOIN below b ON b.host = t.host AND b.top_id = t.call_id
GROUP BY t.host, t.call_id, t.pid, t.layer, t.function, t.ns, t.bytes_result, b.layer
ORDER BY seconds DESC, t.host, t.call_id, below_layer
