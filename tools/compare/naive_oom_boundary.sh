#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Where the naive path stops fitting: for B = 8, H = 32, d = 128, fp16 (S
# and P are B·H·N² elements each), `clattn predict` on the device gives each
# N's buffers and the model's verdict, then `clattn bench --path naive
# --confirm-oom` runs every N anyway and reports what happened (ran and
# checked, or the allocation failure). On NVIDIA the model takes the
# reported memory less a 768 MiB context reserve and no per-buffer limit
# below it (the driver allocates past CL_DEVICE_MAX_MEM_ALLOC_SIZE).
#
# usage: tools/compare/naive_oom_boundary.sh [RAW.jsonl]
#   OOM_NS (default 8562,11940,11960: S past the H200's reported largest
#   allocation; the largest N that ran there; the smallest that did not);
#   QUICK=1: B = 1, H = 2, N = 512, 1024, a dry run on PoCL.
set -uo pipefail
# shellcheck source=tools/compare/lib.sh
source "$(dirname "$0")/lib.sh"
raw_file oom "${1:-}"

B=8 H=32 NS=${OOM_NS:-8562,11940,11960}
[ "${QUICK:-0}" = 1 ] && B=1 H=2 NS=512,1024
note "oom: predict"
timeout 60 "$CLATTN" predict -B $B -H $H -d 128 --dtype fp16 -N "$NS" --json >"$TMP/predict.json" 2>"$TMP/predict.err"
rc=$?
"${TABLE[@]}" record predict predict "$rc" "predict -B $B -H $H -d 128 --dtype fp16 -N $NS" "$TMP/predict.json" >>"$RAW"
note "oom: bench --confirm-oom"
bench oom --path naive -B $B -H $H -d 128 -N "$NS" --causal no --confirm-oom --reps-seconds 0.05

echo "### The naive path's memory boundary"
echo
"${TABLE[@]}" oom "$RAW"
