-- summary: jobs
-- title: Jobs, steps and their processes
-- needs: calls, processes
-- Job and step ids come from each process's environment (Slurm, Open MPI, MPICH/PMI, PMIx);
-- processes without them (the launcher) form their own row. Bytes are POSIX reads and writes
-- and io_uring and Linux AIO requests' (copies count as both).
SELECT p.host, p.job_id, p.step_id,
       count(DISTINCT p.pid) AS processes,
       count(DISTINCT p.rank) AS ranks,
       min(p.start_ns) AS start_ns,
       max(p.end_ns) AS end_ns,
       sum(CASE WHEN c.layer IN ('posix', 'uring', 'aio') AND c.op IN ('read', 'copy') THEN coalesce(c.bytes_result, 0) ELSE 0 END) AS posix_bytes_read,
       sum(CASE WHEN c.layer IN ('posix', 'uring', 'aio') AND c.op IN ('write', 'copy') THEN coalesce(c.bytes_result, 0) ELSE 0 END) AS posix_bytes_written
FROM processes p
LEFT JOIN calls c ON c.host = p.host AND c.pid = p.pid
GROUP BY p.host, p.job_id, p.step_id
ORDER BY p.host, p.job_id, p.step_id
