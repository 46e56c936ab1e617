#!/bin/sh
# manylinux_test.sh: the pip package as a wheel one may publish. `pip
# wheel` builds it (a linux_x86_64 wheel: only this machine's glibc
# vouches for it), `auditwheel repair` grafts in any library it needs that
# a manylinux system need not have (none today: jansson is linked in, zlib
# is a manylinux library) and tags it manylinux_2_N by the glibc symbols it
# uses;
# the repaired wheel installs with no index into a fresh venv, and its
# launcher finds its own library and runs programs under it. The wheel
# is then kept in PT_BUILD/wheelhouse.
# PT_* variables as package_test.sh's, and PT_AUDITWHEEL.
# Exit 0 passed, 1 failed, 77 skipped (auditwheel, a venv or a package
# index missing; in CI only auditwheel may be).
set -u
dir=$(mktemp -d "${TMPDIR:-/tmp}/pt-ml.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
skip() { echo "SKIP: $*"; exit 77; }
need() { # WHAT, MESSAGE: skipped outside CI, failed in it
    [ "${CI:-}" = true ] && { echo "FAIL: $2"; exit 1; }
    skip "$2"
}

# CMake names a program it did not find NAME-NOTFOUND.
case ${PT_AUDITWHEEL:-} in "" | *-NOTFOUND)
    skip "auditwheel not found (tools/dev/setup.sh --tests installs it): no manylinux wheel" ;;
esac
[ -n "$PT_PYTHON" ] || skip "no python3"
"$PT_PYTHON" -m venv "$dir/build" >"$dir/venv.log" 2>&1 ||
    need venv "python3 -m venv failed (Debian: python3-venv): $(tail -n 1 "$dir/venv.log")"
pip=$dir/build/bin/pip
# The build needs scikit-build-core from an index.
PIP_DEFAULT_TIMEOUT=20 PIP_RETRIES=1 "$pip" download -q --no-deps -d "$dir/probe" \
    scikit-build-core >"$dir/probe.log" 2>&1 ||
    need index "pip cannot reach a package index: $(tail -n 1 "$dir/probe.log")"

CMAKE_BUILD_PARALLEL_LEVEL=2 "$pip" wheel -q --no-deps -w "$dir/dist" "$PT_SRC" \
    >"$dir/pip.log" 2>&1 || { bad "pip wheel"; tail -n 40 "$dir/pip.log"; exit 1; }
set -- "$dir"/dist/p2pshim-*.whl
[ "$#" -eq 1 ] && [ -f "$1" ] || { bad "pip wheel made no one wheel: $*"; exit 1; }
case $(basename "$1") in
*-linux_x86_64.whl | *-linux_aarch64.whl) ;;
*) bad "pip wheel: not a plain linux wheel: $(basename "$1")" ;;
esac

"$PT_AUDITWHEEL" repair -w "$dir/fixed" "$1" >"$dir/repair.log" 2>&1 ||
    { bad "auditwheel repair"; cat "$dir/repair.log"; exit 1; }
set -- "$dir"/fixed/p2pshim-*.whl
[ "$#" -eq 1 ] && [ -f "$1" ] || { bad "auditwheel made no one wheel: $*"; exit 1; }
whl=$1
# Its tag: manylinux_2_N (any older aliases beside it), N no newer than
# this glibc, which the wheel was built against.
tag=$(basename "$whl" .whl | sed 's/^.*-py3-none-//')
glibc=$(getconf GNU_LIBC_VERSION | sed 's/^glibc 2\.//')
n=$(echo "$tag" | tr '.' '\n' | sed -n 's/^manylinux_2_\([0-9]*\)_.*/\1/p' | sort -n | tail -n 1)
[ -n "$n" ] || bad "repaired wheel is not manylinux: $(basename "$whl")"
[ -z "$n" ] || [ "$n" -le "$glibc" ] || bad "tag $tag is newer than glibc 2.$glibc"
"$PT_AUDITWHEEL" show "$whl" >"$dir/show.log" 2>&1 || bad "auditwheel show the repaired wheel"
tr '\n' ' ' <"$dir/show.log" | grep -q "following platform tag: \"manylinux_2_${n}_" ||
    { bad "auditwheel show disagrees with the tag $tag"; cat "$dir/show.log"; }

# A fresh venv, no index: the wheel holds all it needs.
"$PT_PYTHON" -m venv "$dir/use" >"$dir/venv.log" 2>&1 || { bad "venv"; exit 1; }
"$dir/use/bin/pip" install -q --no-index --no-deps "$whl" >"$dir/install.log" 2>&1 ||
    { bad "pip install the repaired wheel"; cat "$dir/install.log"; exit 1; }
site=$("$dir/use/bin/python" -c 'import p2pshim, os; print(os.path.dirname(p2pshim.__file__))')
PATH="$dir/use/bin:$PATH"
lib=$(p2pshim --print-library 2>"$dir/pl.err")
case $lib in "$dir"/use/*) ;; *) bad "--print-library: '$lib' is not in the venv ($(cat "$dir/pl.err"))" ;; esac
[ -f "$lib" ] || bad "--print-library: '$lib' does not exist"
[ "$(realpath "$lib")" = "$(realpath "$site/lib/libp2pshim.so")" ] ||
    bad "--print-library: '$lib', not the package's lib/libp2pshim.so"
p2pshim run -- true >"$dir/run.out" 2>&1 || { bad "p2pshim run -- true"; cat "$dir/run.out"; }
p2pshim run -- sh -c 'exit 7' >/dev/null 2>&1
[ $? -eq 7 ] || bad "p2pshim run: the program's exit status is not passed through"
# Every library the launcher and the shim load is found, and jansson,
# where linked as a shared library, comes from the wheel.
for f in "$site/bin/p2pshim" "$site/lib/libp2pshim.so"; do
    ldd "$f" >"$dir/ldd" 2>&1 || { bad "ldd $f"; cat "$dir/ldd"; continue; }
    grep -q "not found" "$dir/ldd" && bad "$f: $(grep "not found" "$dir/ldd")"
    if grep -q libjansson "$dir/ldd"; then
        grep libjansson "$dir/ldd" | grep -q "=> $dir/use/" ||
            bad "$(basename "$f") loads jansson from outside the wheel: $(grep libjansson "$dir/ldd")"
    fi
done
# The shim in front of a CUDA program on the stand-in driver.
env LD_LIBRARY_PATH="$PT_STANDIN" P2PSHIM_TRUST=skip p2pshim run --set LOG=info -- "$PT_DEMO" 4 3 \
    >"$dir/demo.out" 2>"$dir/demo.err" || bad "run p2pdemo: exit $?"
grep -q "4 copies went peer-to-peer, 0 were staged" "$dir/demo.out" &&
    grep -q "summary total copies=4 upgraded=4" "$dir/demo.err" ||
    { bad "the wheel's shim did not upgrade p2pdemo's copies"; cat "$dir/demo.out" "$dir/demo.err"; }
"$dir/use/bin/python" -c 'import p2pshim.logs' || bad "import p2pshim.logs from the wheel"
# A wheel that passed is kept in the build folder, to publish.
if [ "$fail" -eq 0 ]; then
    rm -rf "$PT_BUILD/wheelhouse" && mkdir -p "$PT_BUILD/wheelhouse" &&
        cp "$whl" "$PT_BUILD/wheelhouse/" || bad "cannot keep the wheel in $PT_BUILD/wheelhouse"
fi
[ "$fail" -eq 0 ] && echo "package manylinux: passed ($PT_BUILD/wheelhouse/$(basename "$whl"))"
exit "$fail"
