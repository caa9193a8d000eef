#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Hopper wgmma fused-attention variants on the H200 (issue 13), in one
# device call, under two minutes:
#   1. the PTX reports (ptxas -v at build time: registers, spills, C75xx);
#   2. `clattn devices --measure --no-sweep`: the wgmma and mma.sync rates;
#   3. every variant of cl/fused_wgmma.cl (cl/meson.build's list), each in a
#      process of its own (a fault loses the process's OpenCL context):
#      checked against the double-precision reference, then only if it
#      passes timed at B=8 H=32 N=4096 d=128 fp16, no mask and causal; its
#      exit status is printed right after it (0 PASS, 1 FAIL, 77 skipped);
#   4. the fastest passing variant at N=4096 (no mask) again at 1024 and 16384;
#   5. PyTorch SDPA flash (FA2) and cuDNN on the same shapes, same call.
# Lines starting RESULT are the timings; TFLOP/s = 4 B H N^2 d / time (half
# when causal). Run from the repository root with .gpu/ and the build folder
# carried:
#   source .gpu/env.sh && BUILD=build-wgmma bash tools/gpu/wgmma_try.sh
set -u
B=${BUILD:-build}
H=$B/tests/perf/wgmma_fused
export XDG_CACHE_HOME=$(mktemp -d)   # the measurement file goes nowhere lasting
LOG=$(mktemp)
VARIANTS="s1_w1_n64_o0_m0 s1_w1_n64_o0_m1 s2_w1_n64_o0_m1 s2_w2_n64_o0_m1 s3_w2_n64_o0_m1
s2_w2_n128_o0_m1 s4_w2_n64_o2_m1 s4_w2_n64_o1_m1"
start=$SECONDS

echo "== PTX reports (ptxas -v at build time)"
for f in "$B"/cl/fused_wgmma_*.ptxas.txt; do
  [ -f "$f" ] || { echo "no PTX in $B"; break; }
  echo "$(basename "$f" .ptxas.txt): $(grep -o 'Used [0-9]* registers' "$f"), $(grep -o '[0-9]* bytes spill stores' "$f"), $(grep -o '[0-9]* bytes smem' "$f") $(grep -o 'C75[0-9]*' "$f" | sort -u | tr '\n' ' ')"
done

echo "== clattn devices --measure --no-sweep (wgmma and mma.sync rates)"
timeout 25 "$B"/tools/clattn devices --measure --no-sweep --repetitions 5
rc=$?; echo "devices --measure exit $rc   [t=$((SECONDS - start)) s]"

echo "== variants: check, then B=8 H=32 N=4096 (no mask, causal)"
for v in $VARIANTS; do
  echo "-- $v"
  timeout 15 "$H" "$v" 4096 2>&1 | tee -a "$LOG"
  rc=${PIPESTATUS[0]}; echo "variant $v exit $rc   [t=$((SECONDS - start)) s]"
done

best=$(awk '/^RESULT/ && / N=4096 / && /causal=0:/ {
  for (i = 1; i <= NF; i++) if ($i == "median") { ms = $(i + 1) + 0 }
  if (best == "" || ms < bms) { best = $2; bms = ms } } END { print best }' "$LOG")
if [ -n "$best" ]; then
  echo "== fastest at N=4096: $best; N=1024 and 16384"
  timeout 20 "$H" "$best" 1024,16384
  rc=$?; echo "variant $best (1024,16384) exit $rc   [t=$((SECONDS - start)) s]"
else
  echo "== no variant passed and timed"
fi

echo "== PyTorch SDPA (JSON per N and causal: naive, flash = FA2, cudnn)"
timeout 50 python3 .gpu/torch_sdpa.py 1024,4096,16384
rc=$?; echo "torch_sdpa exit $rc   [t=$((SECONDS - start)) s]"
rm -rf "$XDG_CACHE_HOME" "$LOG"
