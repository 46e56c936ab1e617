#!/bin/sh
# The test command (what .ci/run calls): builds p2pshim three ways and runs
# the CPU tier: a plain build (every test; GPU tests skip without a GPU),
# AddressSanitizer + UndefinedBehaviorSanitizer (every CPU test), and
# ThreadSanitizer (the tests labelled "threads"). Warnings are errors here
# (P2PSHIM_WERROR). The plain build's tests include the packages: the .deb
# (and .rpm) installed in a clean root, the pip package in a fresh venv
# (CI=true: a package index must be reachable, else that test skips).
set -eu
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/cuda/bin"
jobs=$(nproc 2>/dev/null || echo 2)

build() { # dir, extra cmake args...
    dir=$1; shift
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DP2PSHIM_WERROR=ON "$@" \
        >"$dir.configure.log" 2>&1 ||
        { cat "$dir.configure.log"; exit 1; }
    cmake --build "$dir" -j "$jobs"
}

mkdir -p build-test
build build-test/plain
(cd build-test/plain && ctest --output-on-failure -j "$jobs")
# The footprint figures (what the shim costs a process), for the CI log.
(cd build-test/plain && ctest -L footprint -V | grep "footprint: " || true)

build build-test/asan -DP2PSHIM_SANITIZE=address -DP2PSHIM_BUILD_GPU=OFF
(cd build-test/asan && ctest --output-on-failure -j "$jobs" -LE gpu)

build build-test/tsan -DP2PSHIM_SANITIZE=thread -DP2PSHIM_BUILD_GPU=OFF
(cd build-test/tsan && ctest --output-on-failure -j "$jobs" -L threads)
echo "test: all passed"
