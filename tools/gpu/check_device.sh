#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every correctness check on a GPU machine, each exit status read right
# after it runs: every test binary of the build (the device suites run
# against the GPU: test_special's fp16 scores beyond 65504 and
# test_variants' variants on every fused kernel that takes them among
# them; --full where a binary takes it), then `clattn verify` with AUTO and
# with each fused kernel forced. One line per check ("check NAME exit N"),
# the logs under $OUT; the last line counts the failures.
#
# usage: tools/gpu/check_device.sh [FULL=1]
#   from the repository root, with the build folder and .gpu/ carried (its
#   env.sh is sourced when present).
set -uo pipefail
# shellcheck disable=SC1091
[ -f .gpu/env.sh ] && source .gpu/env.sh
OUT=${OUT:-${TMPDIR:-/tmp}/clattn-check}
mkdir -p "$OUT"
CLATTN=${CLATTN:-build/cli/clattn}
failed=0
check() {
    local name=$1
    shift
    local t0=$SECONDS
    timeout "${CHECK_TIMEOUT:-300}" "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    echo "check $name exit $rc ($((SECONDS - t0)) s)"
    [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || { failed=$((failed + 1)); tail -5 "$OUT/$name.log"; }
}
for t in build/tests/test_*; do
    [ -x "$t" ] && [ -f "$t" ] || continue
    name=$(basename "$t")
    args=()
    case $name in
    test_attention | test_serving | test_variants) [ "${FULL:-0}" = 1 ] && args=(--full) ;;
    esac
    check "$name" "$t" "${args[@]}"
done
check verify-auto "$CLATTN" verify
# The kernels the first device runs in some dtype (clattn devices --json).
for k in $("$CLATTN" devices --json 2>/dev/null | python3 -c '
import json, sys
dev = json.load(sys.stdin)["devices"][0]
print(" ".join(k["name"] for k in dev["kernels"]
               if any(k.get(dt, {}).get("usable") for dt in ("fp16", "fp32"))))' 2>/dev/null); do
    check "verify-$k" "$CLATTN" verify --kernel "$k"
done
echo "checks failed: $failed"
