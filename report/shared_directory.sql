-- detector: shared_directory
-- title: Many processes creating or removing files in one directory
-- needs: calls, files, processes, mounts
-- definition: POSIX calls that add, remove or rename a directory's entries (opens with
--   O_CREAT, creat, mkdir, mknod, link, symlink, unlink, rmdir, rename; as syscalls or io_uring
--   requests) grouped by the directory the entry is in (a rename's: the one it renames from;
--   a link's: the new name's), made by several processes. The entry's path is the file strata
--   knows for the call (resolved against the working directory), or the path argument when it
--   is absolute; a relative name of a file strata never saw opened is left out. Reports the
--   calls of each kind (of them on subdirectories: mkdir and rmdir), their time, the slowest,
--   the most in one second, and the file system the directory is on (the deepest mount above
--   it in the mount namespace most of the calls' processes were in).
-- threshold: at least 4 processes and at least 100 such calls on files in one directory
--   (mkdir and rmdir do not count toward the 100: an MPI runtime makes and removes a
--   directory per rank in its node-local session directory, in every job).
-- rationale: a parallel file system keeps a directory on one metadata server (one Lustre MDT)
--   and each create, unlink or rename in it takes that directory's lock, so ranks that each
--   make their own files in one shared directory (file-per-process output, a file per rank
--   per step, mdtest without -u) queue on the lock: the job creates files at the rate of one
--   server, however many ranks it has. Per-rank or per-node subdirectories, a striped
--   directory (`lfs mkdir -c`), or fewer files shared by the ranks (MPI-IO, HDF5) spread or
--   remove the load.
WITH e AS (
  SELECT c.host, c.pid, c.op, c.errno, c.ts_begin_ns AS b, c.ts_end_ns AS e,
         c.ts_end_ns - c.ts_begin_ns AS ns,
         regexp_replace(CASE WHEN c.op = 'link' THEN COALESCE(c.path2, c.path)
                             ELSE COALESCE(f.path, c.path) END, '/+$', '') AS entry
  FROM calls c
  LEFT JOIN files f ON f.host = c.host AND f.file_id = c.file_id
  WHERE c.layer IN ('posix', 'uring')
    AND (c.op IN ('mkdir', 'rmdir', 'unlink', 'rename', 'link')
         OR (c.op = 'open' AND (c.function = 'creat' OR (c.flags & 64) <> 0))
         OR c.function IN ('mknod', 'mknodat'))
),
d AS (
  SELECT host, pid, op, errno, b, e, ns,
         CASE WHEN regexp_extract(entry, '^(.*)/[^/]*$', 1) = '' THEN '/'
              ELSE regexp_extract(entry, '^(.*)/[^/]*$', 1) END AS dir
  FROM e
  WHERE entry LIKE '/%'
),
per AS (
  SELECT host, dir AS path,
         count(DISTINCT pid) AS processes,
         count(*) AS entry_calls,
         sum(CASE WHEN op IN ('open', 'mkdir', 'link', 'meta') THEN 1 ELSE 0 END) AS creates,
         sum(CASE WHEN op IN ('unlink', 'rmdir') THEN 1 ELSE 0 END) AS removes,
         sum(CASE WHEN op = 'rename' THEN 1 ELSE 0 END) AS renames,
         sum(CASE WHEN op IN ('mkdir', 'rmdir') THEN 1 ELSE 0 END) AS directory_calls,
         sum(CASE WHEN errno IS NOT NULL AND errno <> 0 THEN 1 ELSE 0 END) AS failed,
         sum(ns) / 1e9 AS seconds,
         max(ns) / 1e9 AS slowest_seconds,
         min(b) AS first_ns,
         max(e) AS last_ns
  FROM d
  WHERE dir NOT LIKE '/dev/%' AND dir <> '/dev' AND dir NOT LIKE '/proc/%'
    AND dir NOT LIKE '/sys/%' AND dir NOT LIKE '/etc/%' AND dir <> '/etc'
    AND dir NOT LIKE '/usr/%'
  GROUP BY host, dir
),
-- The mount namespace most of a directory's calls came from, and its deepest mount above the
-- directory (of several at one point, the one mounted last).
spaces AS (
  SELECT d.host, d.dir, p.mnt_ns,
         ROW_NUMBER() OVER (PARTITION BY d.host, d.dir ORDER BY count(*) DESC, p.mnt_ns) AS r
  FROM d
  JOIN processes p ON p.host = d.host AND p.pid = d.pid
  WHERE p.mnt_ns IS NOT NULL
  GROUP BY d.host, d.dir, p.mnt_ns
),
mounted AS (
  SELECT s.host, s.dir, m.fs_type, m.mount_point, m.mount_source,
         ROW_NUMBER() OVER (PARTITION BY s.host, s.dir
                            ORDER BY length(m.mount_point) DESC, m.seen_ns DESC,
                                     m.mount_id DESC) AS r
  FROM spaces s
  JOIN mounts m ON m.host = s.host AND m.mnt_ns = s.mnt_ns
  WHERE s.r = 1
    AND (m.mount_point = '/' OR s.dir = m.mount_point
         OR substr(s.dir, 1, length(m.mount_point) + 1) = concat(m.mount_point, '/'))
),
peak AS (
  SELECT host, dir, max(n) AS peak_per_second
  FROM (SELECT host, dir, count(*) AS n FROM d GROUP BY host, dir, floor(b / 1000000000)) s
  GROUP BY host, dir
)
SELECT per.host, per.path, per.processes, per.entry_calls, per.creates, per.removes,
       per.renames, per.directory_calls, per.failed, per.seconds, per.slowest_seconds,
       peak.peak_per_second, mt.fs_type, mt.mount_point, mt.mount_source, per.first_ns,
       per.last_ns
FROM per
JOIN peak ON peak.host = per.host AND peak.dir = per.path
LEFT JOIN mounted mt ON mt.host = per.host AND mt.dir = per.path AND mt.r = 1
WHERE per.processes >= 4 AND per.entry_calls - per.directory_calls >= 100
ORDER BY per.entry_calls DESC, per.host, per.path
