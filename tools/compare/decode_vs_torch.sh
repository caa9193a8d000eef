#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Decoding: clattn's fused path (AUTO: nv-decode on an H200) beside PyTorch's
# SDPA flash and cuDNN, fp16, H = 32, Hkv = 8, d = 128, one query token over
# B = 8 x 4096, 16384, 65536 keys, B = 1 x 131072 and B = 64 x 4096, and the
# chunked prefill of 512 queries over 16384 keys (bottom-right mask; PyTorch
# without the mask, which removes 1.6% of its pairs); K/V bytes streamed per
# second beside each row.
#
# How it times:
#   clattn   tests/perf/time_fused: 20 calls enqueued back to back, then
#            clFinish, on the host clock, 3 times (the median of the 3
#            per-call figures), in two rounds; plus the device's own time
#            per call (one call's start to the next, from the calls' events)
#            from which the K/V rate is taken. The rows are first run and
#            checked by `clattn bench --preset decode` (its exit status kept).
#   PyTorch  tools/compare/torch_attention.py cases: CUDA events around each
#            of 20 calls back to back (3 untimed first), median; once before
#            clattn's rounds and once after, each in its own process (its
#            flash kernel runs at one of a few speeds from one process to
#            the next).
# Ratios are peer time / clattn time (host clock), as a range over the
# rounds and PyTorch's two runs.
#
# usage: tools/compare/decode_vs_torch.sh [RAW.jsonl]
#   from the repository root on the GPU machine; READ_BW=<bytes/s> adds the
#   K/V rate as a fraction of it (h200_tables.sh passes the measured read
#   rate); QUICK=1: small shapes, a dry run on PoCL.
set -uo pipefail
# shellcheck source=tools/compare/lib.sh
source "$(dirname "$0")/lib.sh"
raw_file decode "${1:-}"

ROWS="8,32,8,1,4096,128 8,32,8,1,16384,128 8,32,8,1,65536,128 1,32,8,1,131072,128 64,32,8,1,4096,128"
CHUNK=1,32,8,512,16384,128
if [ "${QUICK:-0}" = 1 ]; then
    # The shapes `clattn bench --preset decode` checks on a device that is not a GPU.
    ROWS="1,8,2,1,4096,128 1,8,2,1,16384,128"
    CHUNK=1,8,2,128,4096,128
fi
cases=()
for s in $ROWS $CHUNK; do cases+=("$s,16,0"); done

note "decode: check"
bench decode-check --preset decode --reps-seconds 0.05
note "decode: PyTorch (before)"
torch decode-before cases "${cases[@]}"
for round in 1 2; do
    note "decode: clattn round $round"
    for s in $ROWS; do tf "decode/$round" "$s" fp16 none auto 20 3; done
    tf "decode/$round" $CHUNK fp16 bottom-right auto 20 3
done
note "decode: PyTorch (after)"
torch decode-after cases "${cases[@]}"

echo "### Decoding and chunked prefill"
echo
extra=()
[ -n "${READ_BW:-}" ] && extra=(--read-bw "$READ_BW")
"${TABLE[@]}" decode "$RAW" "${extra[@]}"
