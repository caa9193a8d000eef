#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fp32: clattn's fused path (AUTO in fp32 on NVIDIA: the portable
# register-tiled kernel `tiled`, OpenCL C 1.2, CUDA cores) beside PyTorch's
# fp32 SDPA, whose only fused fp32 backend is the memory-efficient one
# (flash and cuDNN refuse fp32); B = 8, H = 32, N = 4096, d = 64 and 128,
# no mask; TFLOP/s against the measured FMA rate.
#
# How it times:
#   clattn   tests/perf/time_fused: 2 calls enqueued back to back, then
#            clFinish, on the host clock, 3 times; the median. The rows are
#            first checked by `clattn bench` (its exit status kept).
#   PyTorch  tools/compare/torch_attention.py cases: CUDA events around each
#            of 20 calls back to back (3 untimed first), median.
# Ratios are peer time / clattn time.
#
# usage: tools/compare/fp32_vs_torch.sh [RAW.jsonl]
#   FMA=<FLOP/s> adds the fraction of the FMA rate (h200_tables.sh passes
#   the measured one); QUICK=1: B = 1, H = 2, N = 512, a dry run on PoCL.
set -uo pipefail
# shellcheck source=tools/compare/lib.sh
source "$(dirname "$0")/lib.sh"
raw_file fp32 "${1:-}"

B=8 H=32 N=4096
[ "${QUICK:-0}" = 1 ] && B=1 H=2 N=512
cases=()
for d in 64 128; do
    note "fp32 d=$d: check, time"
    bench fp32-check --path fused -B $B -H $H -d $d -N $N --dtype fp32 --causal no --reps-seconds 0.05
    tf fp32 "$B,$H,$H,$N,$N,$d" fp32 none auto 2 3
    cases+=("$B,$H,$H,$N,$N,$d,32,0")
done
note "fp32: PyTorch"
torch fp32 cases "${cases[@]}"

echo "### fp32"
echo
extra=()
[ -n "${FMA:-}" ] && extra=(--fma "$FMA")
"${TABLE[@]}" fp32 "$RAW" "${extra[@]}"
