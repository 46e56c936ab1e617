#!/bin/sh
# tools/dev/fetch_deps.sh [DIR]: fills DIR (default .deps, at the top of the
# tree) with the build's two libraries that the GPU machine lacks and cannot
# fetch (it reaches no package registry): uthash (headers), jansson and zlib (their
# headers and static libraries, so that nothing is needed at run time). Run it
# here, on a Debian machine that reaches the archive, then carry .deps with
# the tree (the run tool's carry list: [".deps"]); CMakeLists.txt finds
# them in .deps/include and .deps/lib before the system's.
#
# It downloads uthash-dev, libjansson-dev and libjansson4 (apt-get
# download: no root, nothing installed), unpacks them into DIR (dpkg -x:
# DIR/usr/...), and copies the headers to DIR/include and libjansson.a to
# DIR/lib. Idempotent. Exit 0, or 1 with the step that failed.
set -eu
cd "$(dirname "$0")/../.." || exit 1
dest=${1:-.deps}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fetch-deps.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
( cd "$tmp" && apt-get download uthash-dev libjansson-dev libjansson4 zlib1g-dev ) ||
    { echo "fetch_deps: apt-get download failed (no Debian archive reachable?)" >&2; exit 1; }
mkdir -p "$dest/include" "$dest/lib"
for deb in "$tmp"/*.deb; do
    dpkg -x "$deb" "$dest" || { echo "fetch_deps: dpkg -x $deb failed" >&2; exit 1; }
done
rm -rf "${dest:?}/usr/share"               # documentation and man pages
cp -f "$dest"/usr/include/*.h "$dest/include/"
cp -f "$dest"/usr/lib/*/libjansson.a "$dest"/usr/lib/*/libz.a "$dest/lib/"
for f in include/uthash.h include/jansson.h include/jansson_config.h include/zlib.h lib/libjansson.a lib/libz.a; do
    [ -s "$dest/$f" ] || { echo "fetch_deps: $dest/$f missing after unpacking" >&2; exit 1; }
done
echo "fetch_deps: $dest ready ($(du -sk "$dest" | cut -f1) KiB):"
find "$dest/include" "$dest/lib" -type f | sort | sed "s/^/  /"
