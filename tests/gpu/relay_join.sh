#!/bin/sh
# relay_join.sh SHIM PROGRAM [ARGS...]: runs PROGRAM under SHIM with CUPTI
# joined to the run log, then checks that every relayed copy is one
# activity line joined to its decision (relay_join_check.py). Only PROGRAM
# gets the shim. Exit 77 (skip) when PROGRAM skips (fewer than two GPUs).
set -u
shim=$1
shift
dir=$(mktemp -d "${TMPDIR:-/tmp}/relay-join.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
LD_PRELOAD=$shim P2PSHIM_CUPTI=1 P2PSHIM_RUN_LOG=$dir/run.jsonl P2PSHIM_TRUST=skip "$@"
rc=$?
[ $rc -eq 77 ] && exit 77
[ $rc -eq 0 ] || { echo "relay_join: the program exited $rc"; exit 1; }
python3 "$(dirname "$0")/relay_join_check.py" "$dir/run.jsonl"
