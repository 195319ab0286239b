#!/bin/sh
# Slurm epilog: close this job's dataset on this node.
# slurm.conf:  Epilog=/etc/strata/slurm-epilog.sh
#
# The daemon also closes a job's dataset by itself when the job's cgroup is removed; this
# makes the dataset complete as soon as the job ends. Never fails (see the prolog).
STRATA=${STRATA:-/usr/local/bin/strata}
[ -n "$SLURM_JOB_ID" ] || exit 0
timeout 30 "$STRATA" ctl stop "$SLURM_JOB_ID" >/dev/null 2>&1 || true
exit 0
