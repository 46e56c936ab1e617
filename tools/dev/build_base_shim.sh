#!/bin/sh
# build_base_shim.sh TARBALL DIR: the shim library of another source tree,
# for a run side by side with the tree under test (gpu_adv_base.sh,
# gpu_shim_ab.sh). TARBALL is that tree (`git archive --prefix=base/ -o
# .abtrees/base.tar.gz COMMIT`); it is unpacked into DIR (emptied first)
# and only its library is built there (Release, -j16), uthash and jansson
# from this tree's .deps/. Prints the library's path, and nothing else, on
# standard output.
# Exit: 0 built, 1 not (the build log's tail on stderr).
set -u
[ $# -eq 2 ] || { echo "usage: build_base_shim.sh TARBALL DIR" >&2; exit 1; }
tarball=$1 base=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$base" && mkdir -p "$base" || exit 1
tar -xzf "$tarball" -C "$base" || exit 1
src=$(find "$base" -mindepth 1 -maxdepth 1 -type d | head -n 1)
ln -sfn "$root/.deps" "$src/.deps"
cmake -S "$src" -B "$base/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
    >"$base/configure.log" 2>&1 &&
    cmake --build "$base/build" -j16 --target p2pshim >"$base/build.log" 2>&1 ||
    { echo "build_base_shim: the base tree did not build" >&2; tail -n 20 "$base/build.log" >&2
      exit 1; }
lib=$(find "$base/build" -name libp2pshim.so | head -n 1)
[ -n "$lib" ] || { echo "build_base_shim: no libp2pshim.so built" >&2; exit 1; }
echo "$lib"
