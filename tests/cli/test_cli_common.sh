#!/bin/sh
# SPDX-License-Identifier: MIT
# The conventions every clattn command shares: one argument parser and one
# usage-error format (one line, "clattn: error: CMD: ... (see clattn CMD
# --help)", status 2), the exit statuses in every --help, -V/--version,
# --json FILE with "-" for stdout (the human text then on stderr), and a
# device listing that keeps the OpenCL compiler's chatter off stderr.
#
# Usage: test_cli_common.sh path/to/clattn path/to/libfp16_claim.so
# Exit: 0 pass, 1 fail, 77 skip (no python3; or no OpenCL device for the
# part that needs one, after the rest ran).
set -eu

CLATTN=${1:?usage: test_cli_common.sh path/to/clattn path/to/libfp16_claim.so}
SHIM=${2:?usage: test_cli_common.sh path/to/clattn path/to/libfp16_claim.so}
unset CLATTN_DEVICE
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/test_cli_common.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
export XDG_CACHE_HOME="$dir/cache" # tune and devices write nothing of the user's

fail() {
    echo "FAIL: $*" >&2
    for f in stdout stderr; do
        [ -s "$dir/$f" ] && { echo "--- $f:" >&2; head -40 "$dir/$f" >&2; }
    done
    exit 1
}

# run_it ARGS...: clattn ARGS, output in $dir/stdout and $dir/stderr, status in $rc.
run_it() {
    set +e
    "$CLATTN" "$@" >"$dir/stdout" 2>"$dir/stderr"
    rc=$?
    set -e
}

# usage_error NAME PATTERN ARGS...: status 2, nothing on stdout, exactly one
# line on stderr matching PATTERN (grep -E).
usage_error() {
    name=$1 pattern=$2
    shift 2
    run_it "$@"
    [ "$rc" -eq 2 ] || fail "$name: status $rc, want 2"
    [ ! -s "$dir/stdout" ] || fail "$name: output on stdout"
    [ "$(wc -l <"$dir/stderr")" -eq 1 ] || fail "$name: stderr is not one line"
    grep -qE -- "$pattern" "$dir/stderr" || fail "$name: stderr does not match '$pattern'"
    echo "ok: $name"
}

is_json() { # FILE [KEY=VALUE...]: parses, and the top-level keys hold the values
    python3 - "$@" <<'PY'
import json, sys
with open(sys.argv[1]) as f:
    d = json.load(f)
for kv in sys.argv[2:]:
    k, v = kv.split('=', 1)
    if str(d.get(k)) != v:
        sys.exit('%s: %s is %r, want %r' % (sys.argv[1], k, d.get(k), v))
PY
}

# ------------------------------------------------------------ the tool itself
run_it --help
[ "$rc" -eq 0 ] && grep -q "^Exit status:" "$dir/stdout" && grep -q "2  usage error" "$dir/stdout" ||
    fail "clattn --help: status $rc or no exit statuses"
for v in -V --version; do
    run_it $v
    [ "$rc" -eq 0 ] || fail "$v: status $rc"
    grep -qE "^clattn [0-9]+\.[0-9]+\.[0-9]+$" "$dir/stdout" || fail "$v: no 'clattn X.Y.Z' line"
    grep -qE "^library [0-9.]+, API [0-9]+\.[0-9]+ \(built against API [0-9]+\.[0-9]+\)$" \
        "$dir/stdout" || fail "$v: no library line"
done
echo "ok: -V, --version"
usage_error "no command" "^clattn: error: no command \(see clattn --help\)$"
usage_error "unknown command" "^clattn: error: unknown command 'frob'" frob

# ------------------------------------------- every command, the same messages
for cmd in devices run verify tune; do
    run_it $cmd --help
    [ "$rc" -eq 0 ] || fail "$cmd --help: status $rc"
    grep -q "^Exit status: 0 ok, 1 failure (a run, a check or a file), 2 usage error.$" \
        "$dir/stdout" || fail "$cmd --help: no exit statuses"
    usage_error "$cmd: unknown option" \
        "^clattn: error: $cmd: unknown option '--frobnicate' \(see clattn $cmd --help\)$" \
        $cmd --frobnicate
    usage_error "$cmd: missing value" \
        "^clattn: error: $cmd: option --device needs a value \(see clattn $cmd --help\)$" \
        $cmd --device
    usage_error "$cmd: operand" \
        "^clattn: error: $cmd: unexpected argument 'stray' \(see clattn $cmd --help\)$" \
        $cmd --device=0 stray
done
usage_error "tune: bad value" "^clattn: error: tune: bad value 'x' for -d " tune -d x
usage_error "verify: bad --path" "^clattn: error: verify: --path must be naive" verify --path up
# bench and predict keep their own parsers; they agree on the prefix and status.
for cmd in bench predict; do
    usage_error "$cmd: unknown option" "^clattn: error: $cmd: .*--frobnicate" $cmd --frobnicate
done

# ------------------------------------------------- outputs that cannot be made
run_it verify --shape 1,1,1,2,2,2 --json "$dir/nodir/v.json"
[ "$rc" -eq 1 ] && grep -q "nodir.*No such file" "$dir/stderr" && [ ! -e "$dir/nodir" ] ||
    fail "verify --json into a missing directory: status $rc"
echo "ok: --json into a missing directory refused before the work"

# ------------------------------------------------------------- on a device
if ! "$CLATTN" devices >"$dir/stdout" 2>"$dir/stderr"; then
    echo "SKIP: 'clattn devices' fails: no OpenCL device"
    exit 77
fi
[ ! -s "$dir/stderr" ] || fail "clattn devices wrote on stderr"

# A driver that advertises fp16 it cannot compile (the shim adds cl_khr_fp16
# to the extensions): the probe fails, the compiler's summary stays off the
# terminal, and the listing shows the build log instead.
set +e
LD_PRELOAD=$SHIM "$CLATTN" devices >"$dir/stdout" 2>"$dir/stderr"
rc=$?
set -e
[ "$rc" -eq 0 ] || fail "devices with fp16 claimed: status $rc"
[ ! -s "$dir/stderr" ] || fail "devices with fp16 claimed: the compiler's output reached stderr"
grep -q "fp16: cl_khr_fp16 *yes" "$dir/stdout" || fail "the shim did not take (no cl_khr_fp16)"
if grep -q "fp16: half arithmetic *does not build" "$dir/stdout"; then
    grep -q "^    fp16 probe build:" "$dir/stdout" &&
        grep -q "CL_BUILD_PROGRAM_FAILURE" "$dir/stdout" ||
        fail "devices: the failed probe's log is not in the listing"
    echo "ok: failed fp16 probe: nothing on stderr, its build log in the listing"
else
    echo "ok: fp16 probe builds here; nothing on stderr"
fi
set +e
LD_PRELOAD=$SHIM "$CLATTN" devices --json >"$dir/stdout" 2>"$dir/stderr"
rc=$?
set -e
[ "$rc" -eq 0 ] && [ ! -s "$dir/stderr" ] || fail "devices --json with fp16 claimed"
is_json "$dir/stdout" command=devices || fail "devices --json: not JSON"
echo "ok: devices --json with fp16 claimed"

# --json FILE and --json - (the rows then on stderr), on verify and tune;
# devices' --json=FILE.
run_it verify --shape 1,2,1,5,7,8 --path fused --json -
[ "$rc" -eq 0 ] || fail "verify --json -: status $rc"
cp "$dir/stdout" "$dir/v.json"
is_json "$dir/v.json" command=verify run=1 failed=0 || fail "verify --json -: not the report"
grep -q "^fused fp32" "$dir/stderr" || fail "verify --json -: rows not on stderr"
run_it verify --shape 1,2,1,5,7,8 --path naive --json "$dir/v2.json"
[ "$rc" -eq 0 ] && is_json "$dir/v2.json" command=verify run=1 && grep -q "^naive" "$dir/stdout" ||
    fail "verify --json FILE"
echo "ok: verify --json"
run_it tune -d 8 -B 1 -H 1 -N 40 --causal no --seconds 0.001 --tiles 16x16 --no-save --json -
[ "$rc" -eq 0 ] || fail "tune --json -: status $rc"
cp "$dir/stdout" "$dir/t.json"
is_json "$dir/t.json" command=tune save=False failed=False || fail "tune --json -: not the report"
grep -q "^best d=8 full" "$dir/stderr" || fail "tune --json -: rows not on stderr"
echo "ok: tune --json"
run_it devices --json="$dir/d.json"
[ "$rc" -eq 0 ] && [ ! -s "$dir/stdout" ] && is_json "$dir/d.json" command=devices ||
    fail "devices --json=FILE"
echo "ok: devices --json=FILE"
echo "PASS"
