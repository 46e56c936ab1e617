#!/bin/sh
# fake_srun.sh [-n N] [--export=ALL,NAME=VALUE,...] PROGRAM [ARGS...]: what
# srun does to the tasks of a job step, on the CPU: starts N tasks (no
# shell between: PROGRAM itself), each with SLURM_PROCID, SLURM_LOCALID and
# SLURM_NTASKS set and the --export variables added, waits for all, and
# exits 0 only when every task did. FAKE_SRUN_GPUS, a space-separated list,
# gives task i the i-th word as CUDA_VISIBLE_DEVICES (as --gpus-per-task
# binding does).
set -u
n=1
exports=""
while [ $# -gt 0 ]; do
    case $1 in
    -n) n=$2; shift 2 ;;
    --export=*) exports=${1#--export=}; shift ;;
    *) break ;;
    esac
done
# word K LIST...: the K-th (from 0) of the words after K.
word() { k=$1; shift; shift "$k"; echo "$1"; }
i=0
pids=""
while [ "$i" -lt "$n" ]; do
    (
        IFS=,
        for kv in $exports; do
            case $kv in ALL) ;; *=*) export "$kv" ;; esac
        done
        unset IFS
        if [ -n "${FAKE_SRUN_GPUS:-}" ]; then
            # shellcheck disable=SC2086
            CUDA_VISIBLE_DEVICES=$(word "$i" $FAKE_SRUN_GPUS)
            export CUDA_VISIBLE_DEVICES
        fi
        unset FAKE_SRUN_GPUS
        SLURM_PROCID=$i SLURM_LOCALID=$i SLURM_NTASKS=$n exec "$@"
    ) &
    pids="$pids $!"
    i=$((i + 1))
done
rc=0
for p in $pids; do
    wait "$p" || rc=1
done
exit $rc
