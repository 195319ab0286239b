-- summary: handles
-- title: The handle tree of each file
-- needs: handles, files
-- Each chain of handles from a top-level one (an HDF5 file, an MPI_File, a FILE*, an fd no
-- other handle made) down to the handles made through it, per file: how many handles sit at
-- the end of the chain and in how many processes (four levels: HDF5 dataset -> HDF5 file ->
-- MPI_File -> fd). Kept to joins so that Spark SQL runs it too.
WITH h AS (
  SELECT h.host, h.handle_id, h.parent_handle_id, h.pid, h.layer || ':' || h.kind AS node,
         coalesce(f.path, h.path) AS path
  FROM handles h
  LEFT JOIN files f ON f.host = h.host AND f.file_id = h.file_id
),
l1 AS (
  SELECT host, handle_id, pid, path, node AS chain, 1 AS depth
  FROM h WHERE parent_handle_id IS NULL
),
l2 AS (
  SELECT c.host, c.handle_id, c.pid, coalesce(c.path, p.path) AS path,
         p.chain || ' > ' || c.node AS chain, 2 AS depth
  FROM l1 p JOIN h c ON c.host = p.host AND c.parent_handle_id = p.handle_id
),
l3 AS (
  SELECT c.host, c.handle_id, c.pid, coalesce(c.path, p.path) AS path,
         p.chain || ' > ' || c.node AS chain, 3 AS depth
  FROM l2 p JOIN h c ON c.host = p.host AND c.parent_handle_id = p.handle_id
),
l4 AS (
  SELECT c.host, c.handle_id, c.pid, coalesce(c.path, p.path) AS path,
         p.chain || ' > ' || c.node AS chain, 4 AS depth
  FROM l3 p JOIN h c ON c.host = p.host AND c.parent_handle_id = p.handle_id
),
chains AS (
  SELECT * FROM l1 UNION ALL SELECT * FROM l2 UNION ALL SELECT * FROM l3
  UNION ALL SELECT * FROM l4
)
SELECT host, path, depth, chain, count(*) AS handles, count(DISTINCT pid) AS processes
FROM chains
WHERE path LIKE '/%' AND path NOT IN ('/', '/dev', '/proc', '/sys') AND path NOT LIKE '/dev/%' AND path NOT LIKE '/proc/%'
  AND path NOT LIKE '/sys/%' AND path NOT LIKE '/etc/%' AND path NOT LIKE '/usr/%'
GROUP BY host, path, depth, chain
ORDER BY host, path, depth, chain
