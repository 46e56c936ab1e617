#!/bin/sh
# Installs what a fresh Debian machine needs to build and test p2pshim
# (the CUDA toolkit is assumed, as on our machines). Idempotent; run as root
# or with sudo available. On the GPU machine, which reaches no package
# registry, the build uses copies carried in .deps/ (uthash.h, jansson).
set -eu
need=""
[ -f /usr/include/uthash.h ] || need="$need uthash-dev"
[ -f /usr/include/jansson.h ] || need="$need libjansson-dev"
# headless Chromium renders the HTML report in its test
command -v chromium >/dev/null 2>&1 || need="$need chromium"
command -v cmake >/dev/null 2>&1 || need="$need cmake"
command -v make >/dev/null 2>&1 || need="$need make"
command -v gcc >/dev/null 2>&1 || need="$need gcc"
# clang with its libFuzzer runtime builds the fuzz targets (tests/fuzz)
fuzz_probe() {
    dir=$(mktemp -d)
    printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
        'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' \
        >"$dir/p.c"
    clang -fsanitize=fuzzer,address,undefined "$dir/p.c" -o "$dir/p" >/dev/null 2>&1
    rc=$?
    rm -rf "$dir"
    return $rc
}
command -v clang >/dev/null 2>&1 || need="$need clang"
fuzz_probe || need="$need libclang-rt-dev"
if [ -n "$need" ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get install -y --no-install-recommends $need ||
        { $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends $need; }
fi
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
    echo "setup: nvcc is at /usr/local/cuda/bin; add it to PATH for the GPU programs"
fi
echo "setup: ok"
