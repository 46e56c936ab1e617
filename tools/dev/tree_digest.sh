#!/bin/sh
# tree_digest.sh: one digest of the source files' contents as they are in
# the work tree (tracked files and untracked ones git does not ignore:
# what a copy of the tree carries). A run on a machine that got such a
# copy, whose git HEAD may name an older commit, prints it; run here at a
# clean checkout of a commit, it tells whether that run was of the commit.
# Sorted by name: a copy's index lists the files new to it last.
# Prints 16 hex digits. Exit: 0; 1 outside the repository.
cd "$(dirname "$0")/../.." || exit 1
git ls-files -z --cached --others --exclude-standard -- CMakeLists.txt cmake interpose \
    kernels tests tools python 2>/dev/null | LC_ALL=C sort -z |
    xargs -0 sha256sum 2>/dev/null | sha256sum | cut -c1-16
