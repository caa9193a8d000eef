#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The naive path (S = scale·Q·Kᵀ and P = softmax(S) written to device
# memory; on NVIDIA sm_80+ in fp16 its GEMMs on tensor cores) beside
# PyTorch's naive attention (matmul, softmax, matmul: S materialised too),
# fp16, B = 8, H = 32, d = 128, N = 1024..8192, no mask and causal; each
# clattn row beside the byte model's roofline time (meas/pred).
#
# How it times:
#   clattn   `clattn bench --path naive`: each call alone (the call, then
#            clFinish, on the host clock; S and P allocated and freed inside
#            it), repeated for 0.3 s (at least 3 calls), median; every row
#            checked against the CPU reference, the bench's exit status kept.
#   PyTorch  tools/compare/torch_attention.py sdpa --backends naive: CUDA
#            events around each of 5 calls back to back (2 untimed first),
#            median.
# Ratios are peer time / clattn time.
#
# usage: tools/compare/naive_vs_torch.sh [RAW.jsonl]
#   NAIVE_NS (default 1024,2048,4096,8192); QUICK=1: B = 1, H = 2,
#   N = 256, 512, a dry run on PoCL.
set -uo pipefail
# shellcheck source=tools/compare/lib.sh
source "$(dirname "$0")/lib.sh"
raw_file naive "${1:-}"

B=8 H=32 NS=${NAIVE_NS:-1024,2048,4096,8192}
[ "${QUICK:-0}" = 1 ] && B=1 H=2 NS=256,512
note "naive: clattn bench"
bench naive --path naive -B $B -H $H -d 128 -N "$NS" --causal both --reps-seconds 0.3
note "naive: PyTorch"
torch naive sdpa "$NS" $B $H 128 --backends naive

echo "### The naive path"
echo
"${TABLE[@]}" naive "$RAW"
