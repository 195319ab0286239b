-- detector: clock_skew
-- title: Node clocks disagree (collective calls that could not have overlapped)
-- needs: calls, files
-- definition: MPI_File_open and MPI_File_close synchronise the ranks of the file's
-- communicator: every rank is inside the call at one common moment. Matching the k-th such
-- call on a file across processes, on any two hosts A and B the latest start on B cannot be
-- after the earliest end on A. When it appears to be, B's clock is ahead of A's by at least
-- that gap; the reverse direction bounds it from above. Reports each pair of hosts with the
-- bounds and the number of calls matched.
-- threshold: a proven offset (the largest gap over the matched calls) above 1 ms
-- rationale: cross-node timelines and comparisons are only as good as the nodes' clocks
-- (run.clock_synchronized, run.clock_max_error_ns); the bounds are the correction to apply
-- to B's times to compare them with A's.
WITH coll AS (
    SELECT c.host, c.pid, c.function, f.path, c.ts_begin_ns AS b, c.ts_end_ns AS e,
           row_number() OVER (PARTITION BY c.host, c.pid, c.function, f.path
                              ORDER BY c.ts_begin_ns) AS k
    FROM calls c
    JOIN files f ON f.host = c.host AND f.file_id = c.file_id
    WHERE c.function IN ('MPI_File_open', 'MPI_File_close') AND c.ts_end_ns IS NOT NULL
),
per_host AS (
    SELECT host, function, path, k, max(b) AS last_begin, min(e) AS first_end
    FROM coll
    GROUP BY host, function, path, k
),
pairs AS (
    SELECT hb.host AS host, ha.host AS reference,
           hb.last_begin - ha.first_end AS gap,
           hb.first_end - ha.last_begin AS room
    FROM per_host hb
    JOIN per_host ha
      ON ha.function = hb.function AND ha.path = hb.path AND ha.k = hb.k AND ha.host <> hb.host
)
SELECT host, reference, count(*) AS matched_calls,
       max(gap) / 1e9 AS ahead_at_least_seconds,
       min(room) / 1e9 AS ahead_at_most_seconds
FROM pairs
GROUP BY host, reference
HAVING max(gap) > 1000000
ORDER BY ahead_at_least_seconds DESC, host, reference
