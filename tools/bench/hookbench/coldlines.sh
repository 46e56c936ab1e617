#!/bin/sh
# coldlines.sh [BUILD [SHIM]]: the memory lines the shim adds to a copy
# between host and device made with cold caches (coldcopy.c says when
# programs make those), counted by a cache simulator (valgrind's
# callgrind) against the stand-in driver: per copy, the data lines read
# and written from memory, the lines of code fetched from memory (the
# simulated instruction cache is made tiny, so that no code stays in it
# from one copy to the next) and the instructions, with the shim minus
# without it, for a D2H below the bounce minimum (16 KiB), for bounce
# candidates (1 MiB D2H, pinned and pageable host memory) and for a 1 MiB
# upload from pinned memory, and the pages of the shim's code those copies
# run. Deterministic, unlike a timing: each line is a miss a real machine
# pays tens to a hundred ns for, each page a TLB entry. Exit 77 without
# valgrind, 1 when a run fails. SHIM: another build of libp2pshim.so to
# count (default BUILD/interpose/libp2pshim.so), to compare two versions.
set -eu
build=${1:-build}
reps=21
command -v valgrind >/dev/null 2>&1 || { echo "coldlines: SKIP: valgrind not found"; exit 77; }
prog=$build/tools/bench/hookbench/coldcopy
shim=${2:-$build/interpose/libp2pshim.so}
for f in "$prog" "$shim"; do
    [ -e "$f" ] || { echo "coldlines: $f not found (build first)"; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# totals PRELOAD BYTES HOST [DIRECTION]: "Ir ILmr DLmr DLmw PAGES" over the
# collected calls; PAGES: the 4 KiB pages of the shim's code they ran
# (each a TLB entry a cold copy may miss; 0 without the shim).
totals() {
    LD_LIBRARY_PATH=$build/standin-lib LD_PRELOAD=$1 valgrind --tool=callgrind \
        --cache-sim=yes --I1=1024,2,64 --D1=32768,8,64 --LL=2097152,16,64 \
        --dump-instr=yes --compress-pos=no --compress-strings=no \
        --collect-atstart=no --toggle-collect=cold_copy --callgrind-out-file="$tmp/out" \
        "$prog" --bytes "$2" --host "$3" ${4:+--to-device} --reps $reps >"$tmp/log" 2>&1 ||
        { echo "coldlines: coldcopy failed:"; tail -3 "$tmp/log"; exit 1; }
    pages=$(awk -v lib="$(basename "${1:-none}")" '
        /^ob=/ { mine = index($0, lib) > 0 }
        mine && /^0x/ { p[substr($1, 1, length($1) - 3)] = 1 }
        END { n = 0; for (k in p) n++; print n }' "$tmp/out")
    callgrind_annotate "$tmp/out" | sed 's/([^)]*)//g; s/,//g' |
        awk -v pages="$pages" '/PROGRAM TOTALS/ { print $1, $7, $8, $9, pages }'
}

echo "coldlines: added by the shim per copy ($reps copies, caches emptied before each)"
for case in "16384 pinned" "1048576 pinned" "1048576 pageable" "1048576 pinned h2d"; do
    # shellcheck disable=SC2086 # the case's words are the arguments
    set -- $case
    base=$(totals "" "$1" "$2" "${3:-}")
    with=$(totals "$(realpath "$shim")" "$1" "$2" "${3:-}")
    echo "$base $with" | awk -v b="$1" -v h="$2" -v d="${3:-d2h}" -v n=$reps '{
        printf "  %s %8d B %-8s %6.1f data lines (%4.1f read, %4.1f written) %6.1f code lines %6.0f instructions %3d code pages\n",
               toupper(d), b, h, ($8 + $9 - $3 - $4) / n, ($8 - $3) / n, ($9 - $4) / n,
               ($7 - $2) / n, ($6 - $1) / n, $10 }'
done
