#!/bin/sh
# no_libc_alloc.sh LIB SRC: the shim never allocates from the program's
# heap. LIB (libp2pshim.so) must not import any C-library allocator, and
# no source under SRC may call one: the shim's memory comes from
# shim_alloc.h. bounce/libc.c is exempt: its free/realloc are the
# program's, wrapped and forwarded.
set -u
lib=$1
src=$2
fail=0
names='malloc|calloc|realloc|free|strdup|strndup|aligned_alloc|posix_memalign|memalign|valloc|pvalloc|asprintf|vasprintf|open_memstream|fopen|fdopen|getline|getdelim|qsort|scandir|realpath'
imports=$(nm -D --undefined-only "$lib" | awk '{print $NF}' | sed 's/@.*//' |
          grep -xE "($names)" || true)
if [ -n "$imports" ]; then
    echo "FAIL: $lib imports C-library allocation: $imports"
    fail=1
fi
# Comments and string literals do not count.
call="(^|[^_a-zA-Z0-9.>])($names)[[:space:]]*\\("
calls=$(find "$src" -name '*.c' ! -path '*/bounce/libc.c' -exec grep -nE "$call" {} + |
        grep -vE '^[^:]+:[0-9]+:[[:space:]]*(/?\*|//)' |
        sed 's/"\([^"\\]\|\\.\)*"/""/g' | grep -E "$call" || true)
if [ -n "$calls" ]; then
    echo "FAIL: calls to the C library's allocator in $src:"
    echo "$calls"
    fail=1
fi
[ "$fail" -eq 0 ] && echo "no C-library allocation in $lib or $src"
exit "$fail"
