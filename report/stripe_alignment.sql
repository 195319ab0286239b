-- detector: stripe_alignment
-- title: Requests that cross Lustre stripe boundaries (and so span OSTs) needlessly
-- needs: calls, files, processes
-- definition: POSIX reads and writes (syscalls, io_uring and AIO requests) on a file whose
-- Lustre layout is known that touch more stripes than their size needs (a request of at most one stripe touching two, or any
-- request touching more than ceil(bytes / stripe size) stripes): they are not aligned to
-- the stripe size. Per process and file: data calls, crossing calls and their bytes, the
-- stripe size and count (with more than one stripe, each crossing reaches a second OST).
-- threshold: crossing calls at least half of the process's data calls on the file, and at
-- least 1 MiB in them
-- rationale: a request split across stripes becomes two OST RPCs, and with many writers
-- two clients contend for the lock of each boundary stripe; aligning the records (or the
-- stripe size, lfs setstripe -S) to the access makes each request one OST's.
WITH req AS (
  SELECT c.host, c.pid, f.path, f.lustre_stripe_size AS ss, f.lustre_stripe_count AS sc,
         c.bytes_result AS bytes, c.ts_begin_ns AS b, c.ts_end_ns AS e,
         floor((c.offset + c.bytes_result - 1) / f.lustre_stripe_size)
           - floor(c.offset / f.lustre_stripe_size) + 1 AS stripes,
         ceil(c.bytes_result / f.lustre_stripe_size) AS needed
  FROM calls c
  JOIN files f ON f.host = c.host AND f.file_id = c.file_id
  WHERE c.layer IN ('posix', 'uring', 'aio') AND c.op IN ('read', 'write') AND c.offset IS NOT NULL
    AND c.bytes_result > 0 AND f.lustre_stripe_size > 0
),
per AS (
  SELECT host, pid, path, max(ss) AS stripe_size, max(sc) AS stripe_count,
         count(*) AS data_calls,
         sum(CASE WHEN stripes > needed THEN 1 ELSE 0 END) AS crossing_calls,
         sum(CASE WHEN stripes > needed THEN bytes ELSE 0 END) AS crossing_bytes,
         min(CASE WHEN stripes > needed THEN b END) AS first_ns,
         max(CASE WHEN stripes > needed THEN e END) AS last_ns
  FROM req
  GROUP BY host, pid, path
)
SELECT per.host, per.pid, p.rank, per.path, per.stripe_size, per.stripe_count,
       per.data_calls, per.crossing_calls, per.crossing_bytes, per.first_ns, per.last_ns
FROM per
LEFT JOIN processes p ON p.host = per.host AND p.pid = per.pid
WHERE per.crossing_calls * 2 >= per.data_calls AND per.crossing_bytes >= 1048576
ORDER BY per.crossing_bytes DESC, per.host, per.path, per.pid
