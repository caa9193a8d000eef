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
TEST_NAME=test_cli_common
# CLATTN absolute, the default device, python3 or exit 77, a scratch $dir
# (entered) whose cache tune and devices write into, fail and run_clattn.
. "$(dirname "$0")/cli_test_setup.sh"
run_it() { run_clattn "$@"; }


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
[ "$rc" -eq 0 ] && grep -q "^Exit status:" stdout && grep -q "2  usage error" stdout ||
    fail "clattn --help: status $rc or no exit statuses"
for v in -V --version; do
    run_it $v
    [ "$rc" -eq 0 ] || fail "$v: status $rc"
    grep -qE "^clattn [0-9]+\.[0-9]+\.[0-9]+$" stdout || fail "$v: no 'clattn X.Y.Z' line"
    grep -qE "^library [0-9.]+, API [0-9]+\.[0-9]+ \(built against API [0-9]+\.[0-9]+\)$" \
        stdout || fail "$v: no library line"
done
echo "ok: -V, --version"
usage_error "no command" "^clattn: error: no command \(see clattn --help\)$"
usage_error "unknown command" "^clattn: error: unknown command 'frob'" frob

# ------------------------------------------- every command, the same messages
# One parser for all: the same messages for the same mistakes, and the
# shared options spelled and described alike in every --help.
for cmd in devices predict run verify bench tune; do
    run_it $cmd --help
    [ "$rc" -eq 0 ] || fail "$cmd --help: status $rc"
    grep -q "^Exit status: 0 ok, 1 failure (a run, a check or a file), 2 usage error.$" \
        stdout || fail "$cmd --help: no exit statuses"
    grep -q "^  --device SEL          an index from clattn devices" stdout ||
        fail "$cmd --help: --device not described as the other commands describe it"
    usage_error "$cmd: unknown option" \
        "^clattn: error: $cmd: unknown option '--frobnicate' \(see clattn $cmd --help\)$" \
        $cmd --frobnicate
    usage_error "$cmd: missing value" \
        "^clattn: error: $cmd: option --device needs a value \(see clattn $cmd --help\)$" \
        $cmd --device
    usage_error "$cmd: empty value" \
        "^clattn: error: $cmd: option --device needs a value \(see clattn $cmd --help\)$" \
        $cmd --device=
    usage_error "$cmd: operand" \
        "^clattn: error: $cmd: unexpected argument 'stray' \(see clattn $cmd --help\)$" \
        $cmd --device=0 stray
done
# The shared options' values: one message each, whichever command reads them.
for cmd in predict run verify bench tune; do
    usage_error "$cmd: bad --causal" \
        "^clattn: error: $cmd: bad --causal 'sideways' \(none, top-left or bottom-right" \
        $cmd --causal sideways
done
for cmd in predict run verify bench; do
    usage_error "$cmd: bad --split-kv" "^clattn: error: $cmd: bad --split-kv 'x' \(0 \.\. " \
        $cmd --split-kv x
    usage_error "$cmd: bad --kv-lens" "^clattn: error: $cmd: bad --kv-lens '1,,2'" \
        $cmd --kv-lens 1,,2
done
for cmd in run verify bench; do
    usage_error "$cmd: bad --params" "^clattn: error: $cmd: bad --params 'stages'" \
        $cmd --params stages
    usage_error "$cmd: bad --kernel" "^clattn: error: $cmd: bad --kernel: " $cmd --kernel nope
done
for cmd in predict verify bench tune; do
    usage_error "$cmd: bad --dtype" "^clattn: error: $cmd: bad --dtype 'fp8' \(fp32, fp16 or bf16\)" \
        $cmd --dtype fp8
done
usage_error "tune: bad -d" "^clattn: error: tune: bad -d 'x' " tune -d x
usage_error "verify: bad --path" "^clattn: error: verify: bad --path 'up' \(naive, fused or both\)" \
    verify --path up
usage_error "run: bad --path" "^clattn: error: run: bad --path 'both' \(naive, fused or auto\)" \
    run --q q --k k --v v --out o --path both
usage_error "bench: the shape twice" "^clattn: error: bench: give the shape once" \
    bench --shape 1,1,1,8,8,8 -B 2
# A shape the library refuses is a usage error in every command, said once.
usage_error "verify: d = 0" "^clattn: error: verify: bad shape: every size must be >= 1" \
    verify --shape 1,1,1,1,1,0
usage_error "verify: d > 576" "^clattn: error: verify: bad shape: head dim d=577 > 576" \
    verify --shape 1,1,1,1,1,577
usage_error "tune: -d 0" "^clattn: error: tune: bad -d '0' " tune -d 0
usage_error "tune: -d 577" "^clattn: error: tune: bad shape: head dim d=577 > 576" tune -d 64,577
usage_error "bench: H not a multiple of Hkv" \
    "^clattn: error: bench: bad shape: H=5 is not a multiple of Hkv=2" bench -H 5 --kv-heads 2 -N 8
usage_error "predict: H not a multiple of Hkv" \
    "^clattn: error: predict: -H 5 is not a multiple of --kv-heads 2" predict -H 5 --kv-heads 2

# An optional value as the next word: "--causal both", "--json FILE".
run_it bench --causal both --help
[ "$rc" -eq 0 ] || fail "bench --causal both: status $rc"
usage_error "run: --causal both" "^clattn: error: run: bad --causal 'both' " \
    run --causal both --q q --k k --v v --out o

# ------------------------------------------------- outputs that cannot be made
run_it verify --shape 1,1,1,2,2,2 --json nodir/v.json
[ "$rc" -eq 1 ] && grep -q "nodir.*No such file" stderr && [ ! -e nodir ] ||
    fail "verify --json into a missing directory: status $rc"
echo "ok: --json into a missing directory refused before the work"

# ------------------------------------------------------------- on a device
if ! "$CLATTN" devices >stdout 2>stderr; then
    echo "SKIP: 'clattn devices' fails: no OpenCL device"
    exit 77
fi
[ ! -s stderr ] || fail "clattn devices wrote on stderr"

# A driver that advertises fp16 it cannot compile (the shim adds cl_khr_fp16
# to the extensions): the probe fails, the compiler's summary stays off the
# terminal, and the listing shows the build log instead.
set +e
LD_PRELOAD=$SHIM "$CLATTN" devices >stdout 2>stderr
rc=$?
set -e
[ "$rc" -eq 0 ] || fail "devices with fp16 claimed: status $rc"
[ ! -s stderr ] || fail "devices with fp16 claimed: the compiler's output reached stderr"
grep -q "fp16: cl_khr_fp16 *yes" stdout || fail "the shim did not take (no cl_khr_fp16)"
if grep -q "fp16: half arithmetic *does not build" stdout; then
    grep -q "^    fp16 probe build:" stdout &&
        grep -q "CL_BUILD_PROGRAM_FAILURE" stdout ||
        fail "devices: the failed probe's log is not in the listing"
    echo "ok: failed fp16 probe: nothing on stderr, its build log in the listing"
else
    echo "ok: fp16 probe builds here; nothing on stderr"
fi
set +e
LD_PRELOAD=$SHIM "$CLATTN" devices --json >stdout 2>stderr
rc=$?
set -e
[ "$rc" -eq 0 ] && [ ! -s stderr ] || fail "devices --json with fp16 claimed"
is_json stdout command=devices || fail "devices --json: not JSON"
echo "ok: devices --json with fp16 claimed"

# --json FILE and --json - (the rows then on stderr), on verify and tune;
# devices' --json=FILE.
run_it verify --shape 1,2,1,5,7,8 --path fused --json -
[ "$rc" -eq 0 ] || fail "verify --json -: status $rc"
cp stdout v.json
is_json v.json command=verify run=1 failed=0 || fail "verify --json -: not the report"
grep -q "^fused fp32" stderr || fail "verify --json -: rows not on stderr"
run_it verify --shape 1,2,1,5,7,8 --path naive --json v2.json
[ "$rc" -eq 0 ] && is_json v2.json command=verify run=1 && grep -q "^naive" stdout ||
    fail "verify --json FILE"
echo "ok: verify --json"
run_it tune -d 8 -B 1 -H 1 -N 40 --causal no --seconds 0.001 --tiles 16x16 --no-save --json -
[ "$rc" -eq 0 ] || fail "tune --json -: status $rc"
cp stdout t.json
is_json t.json command=tune save=False failed=False || fail "tune --json -: not the report"
grep -q "^best d=8 full" stderr || fail "tune --json -: rows not on stderr"
echo "ok: tune --json"

# verify's summary gives no figure for a path or dtype it never ran; tune's
# best line keeps the digits of a small rate (0.049, not 0.0).
run_it verify --shape 1,2,1,5,7,8 --path fused
[ "$rc" -eq 0 ] && grep -q "^worst rel_l2: naive fp32 not run, naive fp16 not run, fused fp32 [0-9.e-]*, fused fp16 not run, fused bf16 not run " stdout ||
    fail "verify: the summary gives figures for what did not run"
echo "ok: verify's summary: not run"
tiny_tune="tune -d 8 -B 1 -H 1 -N 40 --causal no --seconds 0.001 --tiles 16x16"
run_it $tiny_tune --no-save
rate=$(sed -n 's/^best d=8 full [a-z-]*: 16x16, \([^ ]*\) TFLOP\/s$/\1/p' stdout)
python3 -c "import sys; r = float(sys.argv[1]); sys.exit(not (0 < r and '%.3g' % r == sys.argv[1]))" \
    "$rate" || fail "tune: the best line's rate is '$rate', not three significant digits"
echo "ok: tune's best line: $rate TFLOP/s"

# tune fails (status 1, one error line) when its result cannot be saved: the
# cache folder a file, missing and impossible to create, its lock a
# symbolic link; read-only and full where a file system can be mounted
# here, without write permission where this is not root.
expect_unsaved() { # NAME CACHE_HOME
    set +e
    XDG_CACHE_HOME=$2 "$CLATTN" $tiny_tune >stdout 2>stderr
    rc=$?
    set -e
    [ "$rc" -eq 1 ] || fail "tune, $1: status $rc, want 1"
    [ "$(wc -l <stderr)" -eq 1 ] && grep -q "^clattn: error: tune: cannot save the tuning result" stderr ||
        fail "tune, $1: not one error line"
    echo "ok: tune fails when it cannot save: $1"
}
mkdir -p tune_file && : >tune_file/clattn
expect_unsaved "the cache folder is a file" "$PWD/tune_file"
: >not_a_dir
expect_unsaved "the cache folder cannot be created" "$PWD/not_a_dir/cache"
XDG_CACHE_HOME=$PWD/tune_lock "$CLATTN" $tiny_tune >tuned 2>&1 || fail "tune into a fresh cache"
# Beside the tiles, the efficiencies of the kernels AUTO runs, one line per
# kernel and roof; bench divides the roofline by the one its row's roof
# binds (the fused row's), and predict says the same.
grep -q "^efficiency fused, the tuned shape: fused/[a-z-]* fp16 [a-z]*-bound, " tuned ||
    fail "tune: no efficiency probe of the fused path: $(cat tuned)"
for k in "fused/[a-z-]* 1 8" "naive/[a-z-]* 1 8"; do
    [ "$(grep -c "^efficiency $k \(memory\|compute\) [0-9.e+-]*$" tune_lock/clattn/tune-*.txt)" -ge 1 ] ||
        fail "tune: no '$k' efficiency recorded: $(cat tune_lock/clattn/tune-*.txt)"
done
XDG_CACHE_HOME=$PWD/tune_lock "$CLATTN" bench -d 8 -B 1 -H 1 -N 40 --causal no --path fused \
    --reps-seconds 0.01 --json eff.json >/dev/null 2>&1 || fail "bench after tune"
python3 - eff.json tune_lock/clattn/tune-*.txt <<'PY' || fail "bench: the recorded efficiency"
import json, sys
row = json.load(open(sys.argv[1]))["rows"][0]
kernel = row["kernel"].split(" ")[0]
want = [float(l.split()[5]) for l in open(sys.argv[2])
        if l.startswith("efficiency %s 1 8 %s " % (kernel, row["bound"]))]
assert want and abs(row["efficiency"] - want[0]) < 1e-12, (row, want)
assert abs(row["expected_s"] - row["predicted_s"] / want[0]) < 1e-12 * row["expected_s"]
assert abs(row["ratio"] - row["time_median_s"] / row["expected_s"]) < 1e-9 * row["ratio"]
PY
XDG_CACHE_HOME=$PWD/tune_lock "$CLATTN" predict -d 8 -B 1 -H 1 -N 40 --json >eff_predict.json ||
    fail "predict after tune"
python3 -c '
import json, sys
f = json.load(open(sys.argv[1]))["rows"][0]["fused"]
assert f["kernel"] and f["efficiency"] > 0 and f["expected_time_s"] > f["time_s"] * 0 , f
' eff_predict.json || fail "predict: the recorded efficiency"
echo "ok: tune records the kernels' efficiencies; bench and predict use them"
for lock in tune_lock/clattn/*.lock; do
    rm -f "$lock"
    ln -s "$PWD/elsewhere" "$lock"
done
expect_unsaved "its lock is a symbolic link" "$PWD/tune_lock"
if [ "$(id -u)" != 0 ]; then
    mkdir -p tune_ro/clattn && chmod 555 tune_ro/clattn
    expect_unsaved "the cache folder is not writable" "$PWD/tune_ro"
    chmod 755 tune_ro/clattn
fi
mkdir tune_mnt
if unshare -m sh -c 'mount -t tmpfs -o size=8k tmpfs tune_mnt' 2>/dev/null; then
    for how in ro full; do
        set +e
        unshare -m sh -c 'mount -t tmpfs -o size=8k tmpfs tune_mnt && mkdir tune_mnt/clattn &&
            { head -c 1048576 /dev/zero >tune_mnt/fill 2>/dev/null; true; } &&
            { [ "$2" = full ] || mount -o remount,ro tune_mnt; } &&
            XDG_CACHE_HOME=$PWD/tune_mnt "$1" '"$tiny_tune" sh "$CLATTN" "$how" >stdout 2>stderr
        rc=$?
        set -e
        [ "$rc" -eq 1 ] && [ "$(wc -l <stderr)" -eq 1 ] &&
            grep -q "cannot save the tuning result.*\(Read-only file system\|No space left\)" stderr ||
            fail "tune, a $how file system: status $rc"
        echo "ok: tune fails when it cannot save: a $how file system"
    done
else
    echo "note: cannot mount a file system here: read-only and full caches not tested"
fi
run_it devices --json=d.json
[ "$rc" -eq 0 ] && [ ! -s stdout ] && is_json d.json command=devices ||
    fail "devices --json=FILE"
echo "ok: devices --json=FILE"
echo "PASS"
