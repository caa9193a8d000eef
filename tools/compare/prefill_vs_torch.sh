#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Prefill: clattn's fused path (AUTO: nv-wgmma on an H200) beside PyTorch's
# SDPA flash (FlashAttention-2) and cuDNN backends, fp16, B = 8, H = 32,
# Nq = Nk = N, no mask and causal (top-left), d = 128 at N = 1024..16384 and
# d = 64, 256 at N = 1024, 4096, 16384; then short bursts against a
# sustained run at d = 128, N = 4096, with the board's power beside them.
#
# How it times:
#   clattn   tests/perf/time_fused: 10 calls enqueued back to back, then
#            clFinish, on the host clock, 3 times; the median of the 3
#            per-call figures. Every row is first run and checked against
#            the CPU reference by `clattn bench` (its check column), and
#            `clattn bench`'s exit status is kept.
#   PyTorch  tools/compare/torch_attention.py sdpa: CUDA events around each
#            of 10 calls enqueued back to back (2 untimed first), median.
#   sustained: clattn 10 batches of 40 calls back to back; PyTorch every call
#            of 1.5 s back to back; nvidia-smi samples power and clock
#            every 100 ms meanwhile (the board's power limit shows there).
# Ratios are peer time / clattn time: above 1, clattn is faster.
#
# usage: tools/compare/prefill_vs_torch.sh [RAW.jsonl]
#   from the repository root, on the GPU machine (.gpu/env.sh sourced, the
#   build folder carried); prints the markdown tables, keeps every command's
#   output in RAW (default $OUT/prefill.jsonl).
#   PREFILL_D128_NS, PREFILL_NS (d = 64, 256), PREFILL_DS, FLEX=1 (adds
#   FlexAttention, compiled per shape: minutes), SUSTAINED=0 (skips the
#   sustained part), PREFILL_CHECK=0 (skips the check), QUICK=1 (B = 1, H = 2,
#   N = 256, 512: a dry run on PoCL).
set -uo pipefail
# shellcheck source=tools/compare/lib.sh
source "$(dirname "$0")/lib.sh"
raw_file prefill "${1:-}"

B=8 H=32
D128_NS=${PREFILL_D128_NS:-1024,2048,4096,8192,16384}
NS=${PREFILL_NS:-1024,4096,16384}
DS=${PREFILL_DS:-128 64 256}
SUST=8,32,32,4096,4096,128
if [ "${QUICK:-0}" = 1 ]; then
    B=1 H=2 D128_NS=256,512 NS=256 SUST=1,2,2,512,512,128
fi
flex=()
[ "${FLEX:-0}" = 1 ] && flex=(--flex)

for d in $DS; do
    ns=$NS
    [ "$d" = 128 ] && ns=$D128_NS
    note "prefill d=$d: check, time, PyTorch"
    # The check: every row against the CPU reference (d = 256 at N <= 4096:
    # the reference of a 16384-key d = 256 row takes minutes).
    check_ns=$ns
    [ "$d" = 256 ] && check_ns=${ns%,16384}
    [ "${PREFILL_CHECK:-1}" = 1 ] &&
        bench prefill-check --path fused -B $B -H $H -d "$d" -N "$check_ns" --causal both --reps-seconds 0.05
    for n in ${ns//,/ }; do
        for mask in none top-left; do
            tf prefill "$B,$H,$H,$n,$n,$d" fp16 $mask auto 10 3
        done
    done
    torch prefill sdpa "$ns" $B $H "$d" --backends flash,cudnn "${flex[@]}"
done

echo "### Prefill"
echo
"${TABLE[@]}" prefill "$RAW"

[ "${SUSTAINED:-1}" = 0 ] && exit 0
note "burst and sustained, $SUST"
power_start
sleep 1
phase "clattn burst" tf burst "$SUST" fp16 none auto 10 3
phase "clattn sustained" tf sustained "$SUST" fp16 none auto 40 10
for be in flash cudnn; do
    phase "torch $be" torch sustained sustained "${SUST},16,0" "$be" 1.5
done
power_stop
echo
echo "### Short bursts and sustained load ($SUST, fp16, no mask)"
echo
"${TABLE[@]}" sustained "$RAW"
