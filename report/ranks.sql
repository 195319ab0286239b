-- summary: processes
-- title: I/O per process (MPI rank where known)
-- needs: calls, processes
-- Bytes are POSIX reads and writes and io_uring and AIO requests' (copies count as both);
-- time is the time in top-level calls (those no other traced call made), so each process's
-- I/O time counts once.
SELECT p.host, p.pid, p.rank, p.exe,
       count(*) AS calls,
       sum(CASE WHEN c.layer IN ('posix', 'uring', 'aio') AND c.op IN ('read', 'copy') THEN coalesce(c.bytes_result, 0) ELSE 0 END) AS posix_bytes_read,
       sum(CASE WHEN c.layer IN ('posix', 'uring', 'aio') AND c.op IN ('write', 'copy') THEN coalesce(c.bytes_result, 0) ELSE 0 END) AS posix_bytes_written,
       sum(CASE WHEN c.parent_id IS NULL THEN c.ts_end_ns - c.ts_begin_ns ELSE 0 END) / 1e9 AS io_seconds
FROM processes p
JOIN calls c ON c.host = p.host AND c.pid = p.pid
GROUP BY p.host, p.pid, p.rank, p.exe
ORDER BY p.host, p.rank, p.pid
