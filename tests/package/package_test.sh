#!/bin/sh
# package_test.sh CASE: what users install (CPU tier). One case per CTest
# test; see CMakeLists.txt here for the cases and the variables:
#   PT_SRC      the source tree          PT_BUILD    the build folder
#   PT_LAUNCHER the built p2pshim        PT_DEMO     p2pdemo (a CUDA program)
#   PT_STANDIN  folder of the stand-in libcuda.so.1
#   PT_CMAKE, PT_CPACK, PT_PYTHON, PT_GENERATOR     the tools of the build
#   PT_VERSION  the project version      PT_LIBDIR   the install libdir
#   PT_MAN      the man page the build made
# Exit 0 passed, 1 failed, 77 skipped (a tool the case needs is missing;
# the message says which).
set -u
dir=$(mktemp -d "${TMPDIR:-/tmp}/pt.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
skip() { echo "SKIP: $*"; exit 77; }

# run_demo LAUNCHER WHAT: `LAUNCHER run` puts the shim in front of a CUDA
# program on the stand-in driver: every copy goes peer to peer, the bytes
# are right, and the shim's exit summary is printed.
run_demo() {
    env LD_LIBRARY_PATH="$PT_STANDIN" "$1" run --set LOG=info -- "$PT_DEMO" 4 3 \
        >"$dir/demo.out" 2>"$dir/demo.err"
    rc=$?
    [ "$rc" -eq 0 ] || bad "$2: run exited $rc"
    grep -q "bytes verified" "$dir/demo.out" || bad "$2: bytes not verified"
    grep -q "4 copies went peer-to-peer, 0 were staged" "$dir/demo.out" ||
        bad "$2: the shim did not upgrade the copies"
    grep -q "summary total copies=4 upgraded=4" "$dir/demo.err" ||
        bad "$2: no exit summary of the shim"
    [ "$fail" -eq 0 ] || cat "$dir/demo.out" "$dir/demo.err"
}

# expect_library LAUNCHER ROOT WHAT: --print-library names the library
# installed under ROOT.
expect_library() {
    want=$(realpath "$2/$PT_LIBDIR/libp2pshim.so" 2>/dev/null)
    got=$("$1" --print-library 2>"$dir/pl.err")
    [ -n "$want" ] && [ "$got" = "$want" ] ||
        bad "$3: --print-library gave '$got' ($(cat "$dir/pl.err")), expected $2/$PT_LIBDIR/libp2pshim.so"
}

# The files a package must hold, relative to its /usr.
package_files() {
    echo bin/p2pshim "$PT_LIBDIR/libp2pshim.so" share/doc/p2pshim/README.md \
        share/doc/p2pshim/LICENSE share/doc/p2pshim/LAUNCHER.md share/man/man1/p2pshim.1 \
        share/bash-completion/completions/p2pshim
}

# check_listing FILE WHAT: FILE lists a package's paths as /usr/...
check_listing() {
    for f in $(package_files); do
        grep -qx "/usr/$f" "$1" || bad "$2: no /usr/$f"
    done
    # One program and one library: no demo, benchmark or test programs.
    others=$(grep -E "^/usr/(bin|$PT_LIBDIR)/[^/]+$" "$1" |
        grep -vxE "/usr/bin/p2pshim|/usr/$PT_LIBDIR/libp2pshim.so")
    [ -z "$others" ] || bad "$2: holds other programs: $others"
    [ "$fail" -eq 0 ] || cat "$1"
}

# cpack GENERATOR: the package file, in $dir/pkg.
make_package() {
    "$PT_CPACK" -G "$1" -B "$dir/pkg" --config "$PT_BUILD/CPackConfig.cmake" \
        >"$dir/cpack.log" 2>&1 || { cat "$dir/cpack.log"; return 1; }
}

case_deb() {
    command -v dpkg-deb >/dev/null 2>&1 || skip "dpkg-deb not found"
    make_package DEB || { bad "cpack -G DEB failed"; return; }
    deb=$(ls "$dir"/pkg/*.deb)
    [ "$(echo "$deb" | wc -l)" -eq 1 ] || { bad "not one .deb: $deb"; return; }
    dpkg-deb -c "$deb" | awk '{ print $NF }' | sed 's|^\./|/|' >"$dir/list"
    check_listing "$dir/list" ".deb"
    [ "$(dpkg-deb -f "$deb" Package)" = p2pshim ] || bad ".deb: Package field"
    [ "$(dpkg-deb -f "$deb" Version)" = "$PT_VERSION" ] || bad ".deb: Version field"
    arch=$(dpkg --print-architecture)
    [ "$(dpkg-deb -f "$deb" Architecture)" = "$arch" ] || bad ".deb: Architecture field"
    dpkg-deb -f "$deb" Depends | grep -q libc6 || bad ".deb: Depends lacks libc6"

    # Installed by dpkg into a clean root with its own database. The
    # maintainer scripts (ldconfig) run outside a chroot, with PATH's
    # ldconfig a stand-in that records the call.
    root=$dir/root
    mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$dir/stub"
    : >"$root/var/lib/dpkg/status"
    printf '#!/bin/sh\necho "ldconfig $*" >>"%s/ldconfig.calls"\n' "$dir" >"$dir/stub/ldconfig"
    chmod +x "$dir/stub/ldconfig"
    dpkg_root() {
        PATH="$dir/stub:$PATH" dpkg --root="$root" --force-not-root --force-script-chrootless \
            --force-depends --log=/dev/null "$@"
    }
    dpkg_root -i "$deb" >"$dir/dpkg.log" 2>&1 || { bad "dpkg -i"; cat "$dir/dpkg.log"; return; }
    dpkg_root -s p2pshim | grep -q "^Status: install ok installed" || bad "dpkg: not installed"
    [ -s "$dir/ldconfig.calls" ] || bad "dpkg: the postinst did not run"
    expect_library "$root/usr/bin/p2pshim" "$root/usr" ".deb"
    run_demo "$root/usr/bin/p2pshim" ".deb"
    cmp -s "$root/usr/share/man/man1/p2pshim.1" "$PT_MAN" || bad ".deb: not the built man page"
    if command -v bash >/dev/null 2>&1; then
        bash -c ". '$root/usr/share/bash-completion/completions/p2pshim' && complete -p p2pshim" \
            2>&1 | grep -q -- "-F _p2pshim" || bad ".deb: the completion does not load"
    fi
    dpkg_root -r p2pshim >"$dir/dpkg.log" 2>&1 || { bad "dpkg -r"; cat "$dir/dpkg.log"; }
    for f in $(package_files); do
        [ -e "$root/usr/$f" ] && bad "dpkg -r left /usr/$f"
    done
}

case_rpm() {
    command -v rpmbuild >/dev/null 2>&1 ||
        skip "rpmbuild not found: cpack makes no .rpm here (tools/dev/setup.sh --tests installs rpm)"
    grep -q 'CPACK_GENERATOR "DEB;RPM"' "$PT_BUILD/CPackConfig.cmake" ||
        bad "rpmbuild is here but the configuration has no RPM generator"
    make_package RPM || { bad "cpack -G RPM failed"; return; }
    rpm=$(ls "$dir"/pkg/*.rpm)
    [ "$(echo "$rpm" | wc -l)" -eq 1 ] || { bad "not one .rpm: $rpm"; return; }
    rpm -qlp "$rpm" >"$dir/list" 2>/dev/null || bad "rpm -qlp"
    check_listing "$dir/list" ".rpm"
    [ "$(rpm -qp --queryformat '%{NAME} %{VERSION} %{LICENSE}' "$rpm" 2>/dev/null)" = \
        "p2pshim $PT_VERSION Apache-2.0" ] || bad ".rpm: name, version or licence"
    # Installed by rpm into a clean root with its own database (its
    # scriptlets would need a chroot).
    root=$dir/root
    mkdir -p "$root"
    rpm --root "$root" --initdb && rpm --root "$root" -i --nodeps --noscripts "$rpm" \
        >"$dir/rpm.log" 2>&1 || { bad "rpm -i"; cat "$dir/rpm.log"; return; }
    rpm --root "$root" -q p2pshim >/dev/null || bad "rpm: not installed"
    expect_library "$root/usr/bin/p2pshim" "$root/usr" ".rpm"
    run_demo "$root/usr/bin/p2pshim" ".rpm"
}

case_wheel() {
    [ -n "$PT_PYTHON" ] || skip "no python3"
    if ! "$PT_PYTHON" -m venv "$dir/venv" >"$dir/venv.log" 2>&1; then
        [ "${CI:-}" = true ] && { bad "python3 -m venv failed"; cat "$dir/venv.log"; return; }
        skip "python3 -m venv failed (Debian: python3-venv): $(tail -n 1 "$dir/venv.log")"
    fi
    pip=$dir/venv/bin/pip
    # An index must be reachable (the build needs scikit-build-core); in CI
    # it must be.
    if ! PIP_DEFAULT_TIMEOUT=20 PIP_RETRIES=1 "$pip" download -q --no-deps -d "$dir/probe" \
        scikit-build-core >"$dir/probe.log" 2>&1; then
        [ "${CI:-}" = true ] && { bad "pip cannot reach a package index"; cat "$dir/probe.log"; return; }
        skip "pip cannot reach a package index: $(tail -n 1 "$dir/probe.log")"
    fi
    CMAKE_BUILD_PARALLEL_LEVEL=2 "$pip" install -q "$PT_SRC" >"$dir/pip.log" 2>&1 ||
        { bad "pip install"; tail -n 40 "$dir/pip.log"; return; }
    site=$("$dir/venv/bin/python" -c 'import p2pshim, os; print(os.path.dirname(p2pshim.__file__))')
    case $site in "$dir"/venv/*) ;; *) bad "wheel: the package is not in the venv: $site" ;; esac
    [ -x "$dir/venv/bin/p2pshim" ] || { bad "wheel: no bin/p2pshim in the venv"; return; }
    [ -f "$site/lib/libp2pshim.so" ] || bad "wheel: no libp2pshim.so in the package"
    # `p2pshim` by name, from PATH, as a user types it.
    PATH="$dir/venv/bin:$PATH"
    [ "$(p2pshim --version)" = "p2pshim $PT_VERSION" ] || bad "wheel: --version: $(p2pshim --version)"
    expect_library p2pshim "$site" "wheel"
    run_demo p2pshim "wheel"
    # Its exit status is the launcher's, and `python -m p2pshim` works too.
    p2pshim run -- sh -c 'exit 7' >/dev/null 2>&1
    [ $? -eq 7 ] || bad "wheel: the program's exit status is not passed through"
    [ "$("$dir/venv/bin/python" -m p2pshim --print-library)" = "$(realpath "$site/lib/libp2pshim.so")" ] ||
        bad "wheel: python -m p2pshim --print-library"
}

case_configure() {
    # BUILD_TESTING=OFF configures no test; warnings fail the build only
    # with P2PSHIM_WERROR; a libdir of one's own is where the installed
    # launcher looks.
    b=$dir/b
    "$PT_CMAKE" -S "$PT_SRC" -B "$b" -G "$PT_GENERATOR" -DBUILD_TESTING=OFF \
        -DP2PSHIM_BUILD_GPU=OFF -DCMAKE_INSTALL_LIBDIR=lib/elsewhere >"$dir/cfg.log" 2>&1 ||
        { bad "configure with BUILD_TESTING=OFF"; cat "$dir/cfg.log"; return; }
    [ -e "$b/tests" ] && bad "BUILD_TESTING=OFF: tests/ was configured"
    (cd "$b" && ctest -N) | grep -q "^Total Tests: 0$" || bad "BUILD_TESTING=OFF: tests listed"
    werror() { grep -rl -- '-Werror' "$b" --include=flags.make --include=build.ninja; }
    [ -n "$(werror)" ] && bad "-Werror without P2PSHIM_WERROR: $(werror)"
    "$PT_CMAKE" --build "$b" -j 2 --target p2pshim_launcher >"$dir/build.log" 2>&1 ||
        { bad "build"; tail -n 30 "$dir/build.log"; return; }
    "$PT_CMAKE" --install "$b" --component runtime --prefix "$dir/prefix" >/dev/null ||
        bad "install --component runtime"
    (cd "$dir/prefix" && find . -type f | sort) >"$dir/files"
    printf './bin/p2pshim\n./lib/elsewhere/libp2pshim.so\n' | cmp -s - "$dir/files" ||
        bad "runtime component: $(cat "$dir/files")"
    PT_LIBDIR=lib/elsewhere expect_library "$dir/prefix/bin/p2pshim" "$dir/prefix" "own libdir"
    "$PT_CMAKE" -S "$PT_SRC" -B "$b" -DP2PSHIM_WERROR=ON >"$dir/cfg.log" 2>&1 || bad "reconfigure"
    [ -n "$(werror)" ] || bad "P2PSHIM_WERROR=ON: no -Werror in the compile flags"
}

case_man() {
    [ -n "$PT_PYTHON" ] || skip "no python3: the man page is not built"
    "$PT_PYTHON" "$PT_SRC/tests/package/test_md2man.py" >"$dir/unit.log" 2>&1 ||
        { bad "md2man unit tests"; cat "$dir/unit.log"; }
    [ -s "$PT_MAN" ] || { bad "no man page at $PT_MAN"; return; }
    command -v groff >/dev/null 2>&1 || { echo "groff not found: the page is not rendered"; return; }
    groff -man -Tutf8 -ww -z "$PT_MAN" >"$dir/warn" 2>&1
    [ -s "$dir/warn" ] && bad "groff warnings: $(cat "$dir/warn")"
    groff -man -Tascii -P-cbou -rLL=100n "$PT_MAN" 2>/dev/null >"$dir/page"
    grep -q "^NAME" "$dir/page" && grep -qE "^ +p2pshim - " "$dir/page" || bad "man: no NAME line"
    # Every heading of the source, and options in plain ASCII hyphens.
    sed -n 's/^## //p' "$PT_SRC/docs/LAUNCHER.md" | tr '[:lower:]' '[:upper:]' |
        while IFS= read -r h; do
            grep -qxF "$h" "$dir/page" || echo "$h"
        done >"$dir/missing"
    [ -s "$dir/missing" ] && bad "man: headings missing: $(cat "$dir/missing")"
    grep -q -- "--print-library" "$dir/page" || bad "man: --print-library not in ASCII"
    [ "$fail" -eq 0 ] || head -n 40 "$dir/page"
}

case_completion() {
    command -v bash >/dev/null 2>&1 || skip "bash not found"
    # complete WORDS...: what TAB offers for the last word.
    cat >"$dir/c.sh" <<'EOF'
. "$PT_SRC/tools/launcher/completion/p2pshim.bash"
complete_words() { COMP_WORDS=("$PT_LAUNCHER" "$@"); COMP_CWORD=$#; _p2pshim
    [ ${#COMPREPLY[@]} -eq 0 ] || printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' '; }
cd "$1"
echo "cmds: $(complete_words '')"
echo "r: $(complete_words r)"
echo "top: $(complete_words --)"
echo "run: $(complete_words run --)"
echo "mode: $(complete_words run --mode '')"
echo "format: $(complete_words report --format '')"
echo "topo: $(complete_words topo --)"
echo "report-file: $(complete_words run --report rep)"
echo "after-value: $(complete_words run --log x.jsonl --ob)"
echo "program-args: $(complete_words run --set LOG=info ./prog --ob)"
echo "after-dashdash: $(complete_words run --observe -- --ob)"
echo "help: $(complete_words help t)"
echo "trust: $(complete_words trust --)"
EOF
    mkdir -p "$dir/cwd" && : >"$dir/cwd/report.html" && : >"$dir/cwd/other"
    PT_SRC=$PT_SRC PT_LAUNCHER=$PT_LAUNCHER bash "$dir/c.sh" "$dir/cwd" >"$dir/got" 2>&1
    cat >"$dir/want" <<'EOF'
cmds: help report run topo trust 
r: report run 
top: --help --print-library --version 
run: --help --log --mode --observe --report --set 
mode: observe off upgrade 
format: html text trace 
topo: --help --json --measure --output 
report-file: report.html 
after-value: --observe 
program-args: 
after-dashdash: 
help: topo trust 
trust: --check --clear --help --show 
EOF
    # Options a later version adds are fine: each wanted word must be offered
    # and nothing else where the list is closed (values, program words).
    while IFS= read -r line; do
        key=${line%%:*}
        got=$(grep "^$key: " "$dir/got")
        for w in ${line#*:}; do
            case " ${got#*:} " in *" $w "*) ;; *) bad "completion $key: '$w' not offered: $got" ;; esac
        done
        case $key in mode | report-file | program-args | after-dashdash | help | r)
            [ "$got" = "$line" ] || bad "completion $key: got '$got', want '$line'" ;;
        esac
    done <"$dir/want"
    [ "$fail" -eq 0 ] || cat "$dir/got"
}

# ---- what an install holds: the product only ----
# case_install: `cmake --install` of this build (every component) into a
# fresh prefix holds the launcher, the library and their documentation: no
# demo or benchmark program (PT_BENCH_PROGRAMS, the names tools/bench
# builds), no other program or library, and no JSON data but the report's
# schema (the contract of `p2pshim report --format json`, docs/).
case_install() {
    "$PT_CMAKE" --install "$PT_BUILD" --prefix "$dir/prefix" >"$dir/install.log" 2>&1 ||
        { bad "cmake --install"; cat "$dir/install.log"; return; }
    (cd "$dir/prefix" && find . ! -type d | sed 's|^\./||' | sort) >"$dir/files"
    for f in bin/p2pshim "$PT_LIBDIR/libp2pshim.so" share/man/man1/p2pshim.1 \
        share/doc/p2pshim/README.md share/bash-completion/completions/p2pshim; do
        grep -qxF "$f" "$dir/files" || bad "install: no $f"
    done
    for prog in $PT_BENCH_PROGRAMS; do
        hit=$(grep -E "(^|/)$prog(_static|_shared)?$" "$dir/files")
        [ -z "$hit" ] || bad "install: a benchmark or demo program: $hit"
    done
    others=$(grep -E "^(bin|$PT_LIBDIR)/" "$dir/files" |
        grep -vxE "bin/p2pshim|$PT_LIBDIR/libp2pshim.so")
    [ -z "$others" ] || bad "install: other programs or libraries: $others"
    json=$(grep -E '\.(json|jsonl)(\.gz)?$' "$dir/files" |
        grep -vxF share/doc/p2pshim/report-schema.json)
    [ -z "$json" ] || bad "install: JSON data: $json"
    echo "install: $(wc -l <"$dir/files") files, $(du -sk "$dir/prefix" | cut -f1) KiB"
    [ "$fail" -eq 0 ] || cat "$dir/files"
}

# case_setup_list: the packages tools/dev/setup.sh installs (--list: name,
# set, why) are the rows of docs/INSTALL.md's table, in order and word for
# word, and the README names every package of the tests' set.
case_setup_list() {
    sh "$PT_SRC/tools/dev/setup.sh" --list >"$dir/list" 2>&1 ||
        { bad "setup.sh --list failed"; cat "$dir/list"; return; }
    [ -s "$dir/list" ] || { bad "setup.sh --list printed nothing"; return; }
    awk -F'|' '
        /^## / { in_table = ($0 == "## The packages a fresh machine needs"); next }
        in_table && /^\| `/ {
            for (i = 2; i <= 4; i++) { gsub(/^ +| +$|`/, "", $i) }
            print $2 "\t" $3 "\t" $4
        }' "$PT_SRC/docs/INSTALL.md" >"$dir/doc"
    diff -u "$dir/doc" "$dir/list" >"$dir/diff" ||
        { bad "docs/INSTALL.md's table (-) and setup.sh --list (+) differ:"; cat "$dir/diff"; }
    awk -F'\t' '$2 == "tests" { print $1 }' "$dir/list" | while read -r pkg; do
        grep -qw -- "$pkg" "$PT_SRC/README.md" || echo "$pkg"
    done >"$dir/unnamed"
    [ -s "$dir/unnamed" ] && bad "the README does not name: $(cat "$dir/unnamed")"
    echo "setup_list: $(wc -l <"$dir/list") packages"
}

# case_man_env: the built man page, as `man -l` shows it, has an ENVIRONMENT
# section with a tagged entry for every P2PSHIM_* variable of the shim's
# table (interpose/include/config_table.h) and of the launcher's
# (P2PSHIM_TOOL_VARS, interpose/core/config.h), read here from the sources;
# and nowhere does the page point at a source file (.c, .h, .def).
case_man_env() {
    command -v man >/dev/null 2>&1 || skip "man not found"
    [ -s "$PT_MAN" ] || { bad "no man page at $PT_MAN"; return; }
    sed -n 's/^ *ROW(X, \(P2PSHIM_[A-Z0-9_]*\),.*/\1/p' \
        "$PT_SRC/interpose/include/config_table.h" >"$dir/names"
    sed -n '/^#define P2PSHIM_TOOL_VARS/,/^$/s/^ *X(\(P2PSHIM_[A-Z0-9_]*\),.*/\1/p' \
        "$PT_SRC/interpose/core/config.h" >>"$dir/names"
    [ "$(wc -l <"$dir/names")" -ge 10 ] ||
        { bad "read only $(wc -l <"$dir/names") variables from the sources"; return; }
    MANWIDTH=100 MANPAGER=cat PAGER=cat man -l "$PT_MAN" 2>"$dir/man.err" |
        col -b >"$dir/page" || { bad "man -l failed: $(cat "$dir/man.err")"; return; }
    sed -n '/^ENVIRONMENT$/,/^[A-Z][A-Z ]*$/p' "$dir/page" | sed '1d;$d' >"$dir/env"
    [ -s "$dir/env" ] || { bad "man: no ENVIRONMENT section"; head -n 20 "$dir/page"; return; }
    while read -r name; do
        grep -qxE " +$name" "$dir/env" || bad "man: ENVIRONMENT has no entry for $name"
    done <"$dir/names"
    src=$(grep -noE '[A-Za-z0-9_./-]+\.(c|h|def)\b' "$dir/page")
    [ -z "$src" ] || bad "man: the page points at source files: $src"
    echo "man_env: $(wc -l <"$dir/names") variables in ENVIRONMENT"
}

# case_completion_table: the bash completion takes its words from the
# launcher's option table (`p2pshim --completion-table`), not from --help:
# completed through a launcher whose --help prints nothing and fails, it
# still offers every option of every command in the table; the launcher's
# parser takes each of them; every closed set of values is taken (each
# --mode runs, each --format renders a real run log, each --set name is a
# variable of config_table.h) and a word outside it is refused; and the
# hidden option shows neither in --help nor in what TAB offers.
case_completion_table() {
    command -v bash >/dev/null 2>&1 || skip "bash not found"
    L=$PT_LAUNCHER
    "$L" --completion-table >"$dir/table" || { bad "--completion-table failed"; return; }
    grep -q "^commands	" "$dir/table" || { bad "no commands line"; cat "$dir/table"; return; }
    printf '#!/bin/sh\nfor a; do [ "$a" = --help ] && exit 1; done\nexec "%s" "$@"\n' "$L" \
        >"$dir/nohelp"
    chmod +x "$dir/nohelp"
    cat >"$dir/c.sh" <<'EOF2'
. "$PT_SRC/tools/launcher/completion/p2pshim.bash"
complete_words() { COMP_WORDS=("$EXE" "$@"); COMP_CWORD=$#; _p2pshim
    printf '%s\n' "${COMPREPLY[@]}"; }
complete_words "$@"
EOF2
    offered() { EXE=$dir/nohelp PT_SRC=$PT_SRC bash "$dir/c.sh" "$@"; }
    offered '' >"$dir/cmds"
    for c in $(sed -n 's/^commands	//p' "$dir/table"); do
        grep -qx "$c" "$dir/cmds" || bad "command $c not offered: $(tr '\n' ' ' <"$dir/cmds")"
    done
    grep -v "^commands	" "$dir/table" | while IFS="$(printf '\t')" read -r cmd long shrt value choices; do
        if [ "$cmd" = p2pshim ]; then words="--"; else words="$cmd --"; fi
        # shellcheck disable=SC2086 # the words of a command line
        offered $words | grep -qx -- "$long" || echo "FAIL: $cmd $long not offered"
        # A value: the first of the option's choices, else a file name.
        arg=""; [ "$value" = VALUE ] && arg=${choices%% *} && arg=${arg:-x}
        if [ "$cmd" = p2pshim ]; then
            [ "$long" = --help ] || [ "$long" = --version ] || continue
            "$L" $long >/dev/null 2>&1 || echo "FAIL: the launcher refuses $long"
        else
            # shellcheck disable=SC2086 # an option and its value, or none
            "$L" "$cmd" $long $arg --help >/dev/null 2>&1 ||
                echo "FAIL: the launcher refuses $cmd $long"
        fi
    done >"$dir/opt_fails"
    [ -s "$dir/opt_fails" ] && { fail=1; cat "$dir/opt_fails"; }

    # The closed sets, from the table, against what the launcher takes.
    choices() { awk -F'\t' -v c="$1" -v o="$2" '$1 == c && $2 == o { print $5 }' "$dir/table"; }
    [ -n "$(choices run --mode)" ] || bad "run --mode has no choices"
    for m in $(choices run --mode) bogus; do
        env LD_LIBRARY_PATH="$PT_STANDIN" "$L" run --mode "$m" -- true >/dev/null 2>&1
        rc=$?
        case $m in bogus) [ $rc -eq 2 ] || bad "run --mode bogus exited $rc, not 2" ;;
        *) [ $rc -eq 0 ] || bad "run --mode $m exited $rc" ;; esac
    done
    env LD_LIBRARY_PATH="$PT_STANDIN" "$L" run --log "$dir/run.jsonl" -- "$PT_DEMO" 4 1 \
        >/dev/null 2>&1 || { bad "run --log with p2pdemo failed"; return; }
    [ -n "$(choices report --format)" ] || bad "report --format has no choices"
    for f in $(choices report --format) bogus; do
        "$L" report --format "$f" -o "$dir/out.$f" "$dir/run.jsonl" >/dev/null 2>&1
        rc=$?
        case $f in bogus) [ $rc -eq 2 ] || bad "report --format bogus exited $rc, not 2" ;;
        *) [ $rc -eq 0 ] && [ -s "$dir/out.$f" ] || bad "report --format $f exited $rc" ;; esac
    done
    for v in $(choices run --set); do
        grep -q "ROW(X, P2PSHIM_${v%=}," "$PT_SRC/interpose/include/config_table.h" ||
            bad "run --set offers $v, no variable of config_table.h"
    done
    [ "$(offered run --set MO)" = MODE= ] || bad "run --set MO: $(offered run --set MO)"
    [ "$(offered run --mode o | tr '\n' ' ')" = "observe off " ] ||
        bad "run --mode o: $(offered run --mode o)"
    "$L" --help | grep -q completion-table && bad "--help names --completion-table"
    offered -- | grep -q completion-table && bad "TAB offers --completion-table"
    [ "$fail" -eq 0 ] || cat "$dir/table"
}
# ---- end of what an install holds ----

case_$1
[ "$fail" -eq 0 ] && echo "package $1: passed"
exit "$fail"
