# SPDX-License-Identifier: MIT
# Sourced by the command tests that run the clattn tool in a scratch folder
# (test_cli_bench.sh, test_cli_predict.sh, test_cli_run.sh) after they set CLATTN and
# TEST_NAME: makes CLATTN absolute, runs on the default device whatever the
# caller's shell chose, skips without python3 (exit 77), enters a scratch
# folder removed on exit, gives measured ceilings and tuned tiles a cache of
# the test's own (PoCL's compiled kernels stay where they were: recompiling
# them would take minutes), and defines
#   fail MESSAGE...        prints it with the last command's stdout/stderr, exits 1
#   run_clattn ARGS...     runs the tool into ./stdout and ./stderr, status in $rc
#   usage_error NAME PATTERN ARGS...  a usage error: status 2, one stderr line
case $CLATTN in
/*) ;;
*) CLATTN=$PWD/$CLATTN ;;
esac
unset CLATTN_DEVICE

command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/$TEST_NAME.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
cd "$dir"
export POCL_CACHE_DIR="${POCL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pocl/kcache}"
export XDG_CACHE_HOME="$dir/cache"

fail() {
    echo "FAIL: $*" >&2
    for f in stdout stderr; do
        [ -s "$f" ] && { echo "--- $f:" >&2; cat "$f" >&2; }
    done
    exit 1
}

run_clattn() {
    set +e
    "$CLATTN" "$@" >stdout 2>stderr
    rc=$?
    set -e
}

# usage_error NAME PATTERN ARGS...: status 2, nothing on stdout, exactly one
# line on stderr matching PATTERN (grep -E).
usage_error() {
    name=$1 pattern=$2
    shift 2
    run_clattn "$@"
    [ "$rc" -eq 2 ] || fail "$name: status $rc, want 2"
    [ ! -s stdout ] || fail "$name: output on stdout"
    [ "$(wc -l <stderr)" -eq 1 ] || fail "$name: stderr is not one line"
    grep -qE -- "$pattern" stderr || fail "$name: stderr does not match '$pattern'"
    echo "ok: $name"
}
