-- summary: failed_calls
-- title: Calls that failed, per layer, function and errno
-- needs: calls, handles
-- Every call with an errno failed (docs/schema.md): a syscall's own; a library call's from
-- the last failure beneath it, 0 when nothing beneath it failed. A failure is counted on
-- each layer it passed through (an H5Fopen and its openat). The 30 most frequent, with a
-- path one of them named (or the path of the handle it was on) and when they happened.
-- Errno names are Linux's.
SELECT c.host, c.layer, c.function, c.errno,
       CASE c.errno
         WHEN 0 THEN '' WHEN 1 THEN 'EPERM' WHEN 2 THEN 'ENOENT' WHEN 4 THEN 'EINTR'
         WHEN 5 THEN 'EIO' WHEN 9 THEN 'EBADF' WHEN 11 THEN 'EAGAIN' WHEN 13 THEN 'EACCES'
         WHEN 14 THEN 'EFAULT' WHEN 16 THEN 'EBUSY' WHEN 17 THEN 'EEXIST' WHEN 18 THEN 'EXDEV'
         WHEN 20 THEN 'ENOTDIR' WHEN 21 THEN 'EISDIR' WHEN 22 THEN 'EINVAL'
         WHEN 24 THEN 'EMFILE' WHEN 25 THEN 'ENOTTY' WHEN 27 THEN 'EFBIG' WHEN 28 THEN 'ENOSPC'
         WHEN 29 THEN 'ESPIPE' WHEN 30 THEN 'EROFS' WHEN 36 THEN 'ENAMETOOLONG'
         WHEN 39 THEN 'ENOTEMPTY' WHEN 61 THEN 'ENODATA' WHEN 95 THEN 'EOPNOTSUPP'
         WHEN 110 THEN 'ETIMEDOUT' WHEN 116 THEN 'ESTALE' WHEN 122 THEN 'EDQUOT'
         ELSE NULL
       END AS errno_name,
       count(*) AS calls,
       count(DISTINCT c.pid) AS processes,
       min(coalesce(c.path, h.path)) AS a_path,
       min(c.ts_begin_ns) AS first_ns,
       max(c.ts_end_ns) AS last_ns
FROM calls c
LEFT JOIN handles h ON h.host = c.host AND h.handle_id = c.handle_id
WHERE c.errno IS NOT NULL
GROUP BY c.host, c.layer, c.function, c.errno
ORDER BY calls DESC, c.host, c.layer, c.function, c.errno
LIMIT 30
