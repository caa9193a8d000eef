#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 11 on the H200: the register-tiled kernel's variants at B=8 H=32
# N=4096 beside PyTorch's fp32 SDPA, in one device call of about 2.5 min.
# Run from the repository root after `source .gpu/env.sh`, with build/
# carried. Prints `clattn verify --kernel tiled`'s status, one line per
# variant (median ms of 3 batches, TFLOP/s as 4 B H N^2 d, registers and
# spills from NVIDIA's -cl-nv-verbose log), then PyTorch's rows; raw output
# goes to $OUT/tiled_sweep (or gpu-out/tiled_sweep).
#
# The variants are forced by environment variables that exist for measuring
# (src/fused/tiled.c): CLATTN_TILED_OUTER=0 the old float4-deep GEMM steps,
# CLATTN_TILED_KV_CHUNK loads in flight per K/V round, CLATTN_TILED_PREFETCH_K
# float4s per item of the next K block held during P V.
set -uo pipefail
out=${OUT:-gpu-out}/tiled_sweep
mkdir -p "$out"
c=build/tools/clattn
tf=build/tests/perf/time_fused
start=$SECONDS

timeout ${TILED_SWEEP_VERIFY_S:-60} "$c" verify --kernel tiled >"$out/verify.txt" 2>&1
echo "verify --kernel tiled exit $?"
tail -2 "$out/verify.txt"

# case LABEL SHAPE DTYPE TILES [VAR=VALUE...]: one time_fused line into
# $out/times.jsonl, the build log of its variant under $out/logs/LABEL.
case_() {
    local label=$1 shape=$2 dtype=$3 tiles=$4
    shift 4
    mkdir -p "$out/logs/$label"
    local line
    line=$(env "$@" CLATTN_BUILD_OPTIONS="${TILED_SWEEP_BUILD_OPTIONS--cl-nv-verbose}" CLATTN_BUILD_LOG_DIR="$out/logs/$label" \
           timeout 30 "$tf" "$shape" "$dtype" none tiled 4 3 "$tiles" 2>"$out/logs/$label/stderr")
    local rc=$?
    local regs
    regs=$(cat "$out/logs/$label"/*fused_tiled* 2>/dev/null |
           grep -oE "Used [0-9]+ registers|[0-9]+ bytes spill (stores|loads)" | sort -u | tr '\n' ' ')
    python3 - "$label" "$rc" "$regs" "$line" <<'EOF' | tee -a "$out/times.jsonl"
import json, sys
label, rc, regs, line = sys.argv[1:5]
row = {"label": label, "rc": int(rc), "regs": regs.strip()}
try:
    r = json.loads(line)
    t = sorted(r["times"])
    B, H, _, Nq, Nk, d = (int(x) for x in r["shape"].split(","))
    ms = 1e3 * t[len(t) // 2]
    row.update(ms=round(ms, 3), tflops=round(4 * B * H * Nq * Nk * d / ms / 1e9, 1),
               tiles="%dx%dx%d" % (r["block_m"], r["block_n"], r["rows_per_item"]),
               shape=r["shape"], dtype=r["dtype"])
except Exception as ex:
    row["error"] = (line or "no output")[:200]
print(json.dumps(row))
EOF
}

s128=${TILED_SWEEP_S128:-8,32,32,4096,4096,128} # (small shapes: a smoke test)
s64=${TILED_SWEEP_S64:-8,32,32,4096,4096,64}
# d=128 fp32: the old default first, then the new one and its neighbours.
case_ d128-old         $s128 fp32 128x128x8 CLATTN_TILED_OUTER=0
case_ d128-outer       $s128 fp32 128x128x8
case_ d128-outer-ch8   $s128 fp32 128x128x8 CLATTN_TILED_KV_CHUNK=8
case_ d128-outer-pf8   $s128 fp32 128x128x8 CLATTN_TILED_PREFETCH_K=8
case_ d128-outer-pf16  $s128 fp32 128x128x8 CLATTN_TILED_PREFETCH_K=16
case_ d128-outer-4x8   $s128 fp32 128x128x4 CLATTN_TILED_KV_CHUNK=2
# d=128 fp16 storage.
case_ d128h-old        $s128 fp16 128x128x8 CLATTN_TILED_OUTER=0
case_ d128h-outer      $s128 fp16 128x128x8
case_ d128h-outer-ch8  $s128 fp16 128x128x8 CLATTN_TILED_KV_CHUNK=8
# d=64 fp32.
case_ d64-old          $s64 fp32 128x64x8 CLATTN_TILED_OUTER=0
case_ d64-outer        $s64 fp32 128x64x8
case_ d64-outer-ch8    $s64 fp32 128x64x8 CLATTN_TILED_KV_CHUNK=8
case_ d64-outer-128    $s64 fp32 128x128x8
echo "clattn cases done at $((SECONDS - start)) s"

# PyTorch: B,H,Hkv,Nq,Nk,d,dtype (32: fp32),causal (0: none).
timeout 60 python3 .gpu/torch_cases.py 8,32,32,4096,4096,128,32,0 8,32,32,4096,4096,64,32,0 \
    2>&1 | tee "$out/torch.jsonl"
echo "done at $((SECONDS - start)) s"
