#!/bin/sh
# Slurm prolog: ask the node's strata daemon to trace this job.
# slurm.conf:  Prolog=/etc/strata/slurm-prolog.sh
#
# Runs as root on every node of the allocation before the job starts. The job's cgroup
# may not exist yet; the daemon waits for it. A prolog that fails drains the node, so
# this script never fails: if the daemon is unreachable, the job runs untraced.
STRATA=${STRATA:-/usr/local/bin/strata}
[ -n "$SLURM_JOB_ID" ] || exit 0
timeout 10 "$STRATA" ctl start "$SLURM_JOB_ID" --slurm-job "$SLURM_JOB_ID" >/dev/null 2>&1 ||
    logger -t strata "job $SLURM_JOB_ID: the strata daemon did not take the job; it runs untraced"
exit 0
