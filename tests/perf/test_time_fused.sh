#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/perf/time_fused in both of its forms (the positional one the
# comparison scripts call, and the options of the clattn commands, a KV
# cache form and the variants among them): one JSON line with the fields the scripts read,
# and a bad command line refused with status 2.
#
# Usage: test_time_fused.sh path/to/time_fused
# Exit: 0 pass, 1 fail, 77 skip (no python3, or no OpenCL device).
set -eu
TF=${1:?usage: test_time_fused.sh path/to/time_fused}
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT INT TERM
check() { # what, then the time_fused arguments
    what=$1
    shift
    if ! "$TF" "$@" >"$out" 2>/dev/null; then
        grep -q "no matching OpenCL device\|ENODEV" "$out" 2>/dev/null && exit 77
        echo "FAIL: $what: time_fused $*: status $?"
        exit 1
    fi
    python3 - "$out" "$what" <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).read())
for key in ("shape", "cache", "kernel", "splits", "times", "cpu_per_call", "device_per_call_s"):
    assert key in r, "%s: no %r in %r" % (sys.argv[2], key, r)
assert r["times"] and all(t > 0 for t in r["times"]), r
assert r["device_per_call_s"] > 0, r
print("ok: %s: %s, %d batches" % (sys.argv[2], r["kernel"], len(r["times"])))
PY
}
check "positional" 1,4,2,1,300,16 fp16 none auto 4 2
check "positional, tiles and splits" 1,4,2,1,300,16 fp16 bottom-right auto 4 2 16x32 2
check "positional, naive" 1,2,1,20,20,16 fp32 top-left naive 3
check "options" --shape 1,4,2,1,300,16 --dtype fp16 --split-kv 3 --reps 4 --batches 2
check "a q8_0 cache in pages" --shape 1,4,2,1,300,32 --dtype fp16 --kv-type q8_0 --page-size 16 \
    --reps 4 --batches 2
grep -q '"cache": "kv=q8_0 pages=16"' "$out" || { echo "FAIL: the cache form: $(cat "$out")"; exit 1; }
snippet=$(mktemp)
trap 'rm -f "$out" "$snippet"' EXIT INT TERM
echo 'float clattn_score_mod(float s, uint b, uint h, uint q, uint k) { return 2.0f * clattn_tanh(s * 0.5f); }' >"$snippet"
check "softcap and a window" --shape 1,4,2,9,70,16 --dtype fp16 --softcap 2 --window 8,0 \
    --causal top-left --reps 3 --batches 2
check "a score_mod snippet" --shape 1,4,2,9,70,16 --dtype fp16 --score-mod "$snippet" \
    --kernel portable --reps 3 --batches 2
set +e
"$TF" --shape 1,4,2 --reps 3 >/dev/null 2>&1
rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "FAIL: a bad --shape: status $rc, want 2"; exit 1; }
echo "ok: a bad --shape is a usage error"
set +e
"$TF" --shape 1,4,2,9,70,16 --softcap -1 --reps 3 >/dev/null 2>&1
rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "FAIL: --softcap -1: status $rc, want 2 (the variants' options unread?)"; exit 1; }
echo "ok: a bad --softcap is a usage error"
# A snippet that does not compile fails the call: the snippet reaches the build.
echo 'float clattn_score_mod(float s, uint b, uint h, uint q, uint k) { return s +; }' >"$snippet"
set +e
"$TF" --shape 1,4,2,9,70,16 --dtype fp16 --kernel portable --score-mod "$snippet" --reps 2 \
    --batches 1 >/dev/null 2>&1
rc=$?
set -e
[ "$rc" -eq 1 ] || { echo "FAIL: a snippet that does not compile: status $rc, want 1"; exit 1; }
echo "ok: a snippet that does not compile fails the call"
echo "PASS"
