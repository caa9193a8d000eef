#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Decoding over KV caches as engines keep them: clattn's fused path (AUTO:
# nv-decode on an H200) reading a contiguous fp16 cache, fp16 pages of 16
# and 256 keys through a block table, and q8_0, q4_0 and fp8 e4m3 caches,
# beside what a PyTorch user runs on the same cache: the pages
# gathered or the cache dequantized to fp16, then SDPA flash or cuDNN.
# fp16 queries, H = 32, Hkv = 8, d = 128, one query token over B = 8 x
# 16384 and 65536 keys, B = 1 x 131072 and B = 64 x 4096.
#
# How it times:
#   clattn   tests/perf/time_fused --kv-type / --page-size (the cache made
#            on the host from drawn K and V, as clattn bench makes it, then
#            uploaded): 20 calls back to back, clFinish, host clock, 3
#            times, the median; the device's own time per call, from which
#            the rate of the cache's bytes is taken. Each form is first
#            checked by `clattn verify --shape` with that form on CHECK's
#            shapes (against the reference on the same quantized K and V).
#   PyTorch  tools/compare/torch_attention.py kvcache: the whole step
#            (gather or dequantize, then SDPA) between CUDA events, 20
#            calls back to back, median.
# Ratios: the fp16 cache's time over each form's (clattn's own), and
# PyTorch's best step over clattn's on the same form.
#
# usage: tools/compare/kvcache_vs_torch.sh [RAW.jsonl]
#   from the repository root on the GPU machine; READ_BW=<bytes/s> adds
#   each form's rate as a fraction of it; QUICK=1: small shapes, a dry run
#   on PoCL; ROWS="B,H,Hkv,1,Nk,d ..." and FORMS="..." narrow the run.
set -uo pipefail
# shellcheck source=tools/compare/lib.sh
source "$(dirname "$0")/lib.sh"
raw_file kvcache "${1:-}"

ROWS=${ROWS:-"8,32,8,1,16384,128 8,32,8,1,65536,128 1,32,8,1,131072,128 64,32,8,1,4096,128"}
FORMS=${FORMS:-"fp16 paged16 paged256 q8_0 q4_0 fp8_e4m3"}
if [ "${QUICK:-0}" = 1 ]; then
    ROWS="1,8,2,1,8192,128"
fi

form_args() { # the time_fused / bench options of a form
    case $1 in
    fp16) ;;
    paged*) echo "--page-size ${1#paged}" ;;
    *) echo "--kv-type $1" ;;
    esac
}

CHECK=${CHECK:-"8,32,8,1,4096,128 2,32,8,2,3000,128"}
[ "${QUICK:-0}" = 1 ] && CHECK="1,8,2,1,1000,128"
for f in $FORMS; do
    for s in $CHECK; do
        note "kvcache: check $f $s"
        # shellcheck disable=SC2046
        verify "verify-kvcache" --shape "$s" --dtype fp16 --path fused $(form_args "$f")
    done
done
torch_forms=$(echo "$FORMS" | tr ' ' ',')
for s in $ROWS; do
    note "kvcache: $s"
    for f in $FORMS; do
        # shellcheck disable=SC2046
        record_run time_fused "kvcache/$f" "$s fp16 none $f" 300 "$TMP/tf" "$TIME_FUSED" \
            --shape "$s" --dtype fp16 --reps 20 --batches 3 $(form_args "$f") || true
    done
    torch "kvcache-torch" kvcache "$s,16,0" "$torch_forms"
done

echo "### Decoding over KV caches"
echo
extra=()
[ -n "${READ_BW:-}" ] && extra=(--read-bw "$READ_BW")
"${TABLE[@]}" kvcache "$RAW" "${extra[@]}"
