#!/bin/sh
# The test command (what .ci/run calls): builds p2pshim three ways and runs
# the CPU tier: a plain build (every test; GPU tests skip without a GPU),
# AddressSanitizer + UndefinedBehaviorSanitizer (every CPU test), and
# ThreadSanitizer (the tests labelled "threads"). Warnings are errors here
# (P2PSHIM_WERROR), and the benchmarks are built, with the tests that run
# them (P2PSHIM_BUILD_BENCHMARKS; a user's build has neither). The plain
# build's tests include the packages: the .deb (and .rpm) installed in a
# clean root, the pip package in a fresh venv (CI=true: a package index
# must be reachable, else that test skips).
set -eu
cd "$(dirname "$0")/../.."
export PATH="$PATH:/usr/local/cuda/bin"
jobs=$(nproc 2>/dev/null || echo 2)

build() { # dir, extra cmake args...
    dir=$1; shift
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DP2PSHIM_WERROR=ON \
        -DP2PSHIM_BUILD_BENCHMARKS=ON "$@" \
        >"$dir.configure.log" 2>&1 ||
        { cat "$dir.configure.log"; exit 1; }
    cmake --build "$dir" -j "$jobs"
}

# The tests must leave the user's files alone: the link-verdict cache in
# the home folder is where a test that forgot P2PSHIM_TRUST=skip (or its
# own P2PSHIM_TRUST_FILE) would write.
cache="${XDG_CACHE_HOME:-$HOME/.cache}/p2pshim/trust"
cache_state() { ls -l --time-style=full-iso "$cache" 2>/dev/null || echo none; }
cache_before=$(cache_state)
cache_check() {
    [ "$(cache_state)" = "$cache_before" ] ||
        { echo "test: a test wrote $cache (the user's link-verdict cache)"; exit 1; }
}

mkdir -p build-test
build build-test/plain
(cd build-test/plain && ctest --output-on-failure -j "$jobs")
cache_check
# The footprint figures (what the shim costs a process), for the CI log.
(cd build-test/plain && ctest -L footprint -V | grep "footprint: " || true)

build build-test/asan -DP2PSHIM_SANITIZE=address -DP2PSHIM_BUILD_GPU=OFF
(cd build-test/asan && ctest --output-on-failure -j "$jobs" -LE gpu)
cache_check

build build-test/tsan -DP2PSHIM_SANITIZE=thread -DP2PSHIM_BUILD_GPU=OFF
(cd build-test/tsan && ctest --output-on-failure -j "$jobs" -L threads)
cache_check
echo "test: all passed"
