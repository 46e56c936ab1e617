#!/bin/sh
# fake_torchrun.sh N PROGRAM [ARGS...]: what torchrun does to its workers,
# on the CPU: starts N children (no exec: the launcher stays their parent),
# each with RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set,
# waits for all, and exits 0 only when every worker did.
set -u
n=$1
shift
i=0
pids=""
while [ "$i" -lt "$n" ]; do
    RANK=$i LOCAL_RANK=$i WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 "$@" &
    pids="$pids $!"
    i=$((i + 1))
done
rc=0
for p in $pids; do
    wait "$p" || rc=1
done
exit $rc
