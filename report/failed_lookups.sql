-- detector: failed_lookups
-- title: A process looking for files that are not there (search paths)
-- needs: calls, processes, mounts
-- definition: a process's POSIX path lookups (open, stat, access; as syscalls or io_uring
--   requests) that failed with ENOENT or ENOTDIR, outside /proc, /sys and /dev. Reports how
--   many, their time, the name looked for in the most directories (a search path walked for
--   it: LD_LIBRARY_PATH for a library, sys.path for a Python module) with its directory count,
--   and the directory with the most failures with the file system it is on (the deepest
--   mount above it in the process's mount namespace, its mount point named from the
--   namespace's root: a lookup on lustre or nfs is a metadata server's round trip, one on
--   tmpfs or overlay is not).
-- threshold: at least 100 failed lookups by one process, at least 8 of them for one name in
--   different directories.
-- rationale: each lookup that finds nothing still costs a metadata request, and on a parallel
--   or network file system a round trip to its metadata server, made by every rank: a job whose
--   ranks each walk a long search path at start-up (the dynamic loader through LD_LIBRARY_PATH
--   entries that module systems pile up, MPI components loading a library the node lacks,
--   Python imports) loads the server in proportion to ranks x directories before any data
--   moves. Shorter search paths, libraries found by RPATH or the loader's cache, or
--   software on node-local or container images remove them.
WITH f AS (
  SELECT host, pid, ts_begin_ns AS b, ts_end_ns AS e, ts_end_ns - ts_begin_ns AS ns,
         regexp_extract(path, '^(.*)/[^/]*$', 1) AS dir,
         regexp_extract(path, '[^/]*$', 0) AS name
  FROM calls
  WHERE layer IN ('posix', 'uring') AND op IN ('open', 'stat', 'access') AND errno IN (2, 20)
    AND path IS NOT NULL AND path NOT LIKE '/proc/%' AND path NOT LIKE '/sys/%'
    AND path NOT LIKE '/dev/%'
),
per AS (
  SELECT host, pid, count(*) AS failed_lookups, sum(ns) / 1e9 AS failed_seconds,
         count(DISTINCT dir) AS directories, min(b) AS first_ns, max(e) AS last_ns
  FROM f
  GROUP BY host, pid
),
names AS (
  SELECT host, pid, name, count(DISTINCT dir) AS name_directories,
         ROW_NUMBER() OVER (PARTITION BY host, pid ORDER BY count(DISTINCT dir) DESC, name)
           AS r
  FROM f
  GROUP BY host, pid, name
),
dirs AS (
  SELECT host, pid, dir, count(*) AS dir_failures,
         ROW_NUMBER() OVER (PARTITION BY host, pid ORDER BY count(*) DESC, dir) AS r
  FROM f
  GROUP BY host, pid, dir
),
-- The top directory named from its namespace's root, as mount points are (a chroot's
-- directory before it; none where the process's root is not known).
top AS (
  SELECT d.host, d.pid, p.mnt_ns,
         CASE WHEN p.root_dir = '/' THEN d.dir
              WHEN p.root_dir IS NOT NULL THEN concat(p.root_dir, d.dir) END AS dir
  FROM dirs d
  JOIN processes p ON p.host = d.host AND p.pid = d.pid
  WHERE d.r = 1 AND substr(d.dir, 1, 1) = '/'
),
-- Its mount: among the mounts of the process's namespace above it, the deepest, and of
-- several at one point the one mounted last (on top).
mounted AS (
  SELECT t.host, t.pid, m.fs_type, m.mount_point, m.mount_source,
         ROW_NUMBER() OVER (PARTITION BY t.host, t.pid
                            ORDER BY length(m.mount_point) DESC, m.seen_ns DESC,
                                     m.mount_id DESC) AS r
  FROM top t
  JOIN mounts m ON m.host = t.host AND m.mnt_ns = t.mnt_ns
  WHERE m.mount_point = '/' OR t.dir = m.mount_point
     OR substr(t.dir, 1, length(m.mount_point) + 1) = concat(m.mount_point, '/')
)
SELECT per.host, per.pid, p.rank, p.exe, per.failed_lookups, per.failed_seconds,
       per.directories, n.name AS most_searched_name, n.name_directories,
       d.dir AS top_directory, d.dir_failures AS top_directory_failures,
       mt.fs_type AS top_directory_fs_type, mt.mount_point AS top_directory_mount_point,
       mt.mount_source AS top_directory_mount_source, per.first_ns, per.last_ns
FROM per
JOIN names n ON n.host = per.host AND n.pid = per.pid AND n.r = 1
JOIN dirs d ON d.host = per.host AND d.pid = per.pid AND d.r = 1
LEFT JOIN processes p ON p.host = per.host AND p.pid = per.pid
LEFT JOIN mounted mt ON mt.host = per.host AND mt.pid = per.pid AND mt.r = 1
WHERE per.failed_lookups >= 100 AND n.name_directories >= 8
ORDER BY per.failed_lookups DESC, per.host, per.pid
