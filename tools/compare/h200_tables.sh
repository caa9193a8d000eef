#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every table of docs/PERFORMANCE.md's H200 section in one run: clattn
# verify (the 43 built-in shapes, both paths, AUTO), the device's ceilings
# (clattn devices --measure), then prefill_vs_torch.sh, decode_vs_torch.sh,
# kvcache_vs_torch.sh, fp32_vs_torch.sh, naive_vs_torch.sh and
# naive_oom_boundary.sh, each with
# PyTorch in the same run (see each script's header for how it times). The
# tables print as markdown, ready for docs/PERFORMANCE.md, and go to
# $OUT/tables.md; every command's output is kept in $OUT (9 files:
# device.jsonl, prefill.jsonl, decode.jsonl, kvcache.jsonl, fp32.jsonl, naive.jsonl,
# oom.jsonl, tables.md, log.txt). Each command has a timeout of its own.
#
# usage: tools/compare/h200_tables.sh [SECTION...]
#   on the GPU machine from the repository root, with the build folder and
#   .gpu/ (the OpenCL ICD loader; its env.sh is sourced when present)
#   carried. SECTION: device prefill decode kvcache fp32 naive oom (default: all,
#   in that order). VERIFY=0 skips clattn verify; FLEX=1 adds FlexAttention
#   to the prefill table (compiled per shape: minutes more); QUICK=1 runs
#   small shapes, a dry run of the scripts on any device. READ_BW and FMA
#   (bytes/s, FLOP/s) stand in for the device section's figures when a run
#   leaves it out.
set -uo pipefail
# shellcheck disable=SC1091
[ -f .gpu/env.sh ] && source .gpu/env.sh
# shellcheck source=tools/compare/lib.sh
source "$(dirname "$0")/lib.sh"
OUT=${OUT:-${TMPDIR:-/tmp}/clattn-compare}
export OUT
mkdir -p "$OUT"
LOG=$OUT/log.txt
TABLES=$OUT/tables.md
: >"$LOG"
: >"$TABLES"
sections=("$@")
[ ${#sections[@]} -gt 0 ] || sections=(device prefill decode kvcache fp32 naive oom)
t_start=$(date +%s)

say() { echo "$*" | tee -a "$TABLES"; }
elapsed() { echo "[$(($(date +%s) - t_start)) s] $*" >>"$LOG"; }
# A script's tables to stdout and tables.md, its notes to log.txt.
section() {
    local script=$1 raw=$2
    shift 2
    elapsed "start $script"
    env "$@" "$COMPARE/$script" "$raw" 2>>"$LOG" | tee -a "$TABLES"
    elapsed "end $script (exit ${PIPESTATUS[0]})"
    say ""
}

{
    command -v nvidia-smi >/dev/null &&
        nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
    "$CLATTN" -V
} >>"$LOG" 2>&1

READ_BW=${READ_BW:-} FMA=${FMA:-}
for s in "${sections[@]}"; do
    case $s in
    device)
        raw_file device "$OUT/device.jsonl"
        if [ "${VERIFY:-1}" = 1 ]; then
            elapsed "start verify"
            verify verify
        fi
        timeout 120 "$CLATTN" devices --json >"$TMP/devices.json" 2>>"$LOG"
        rc=$?
        "${TABLE[@]}" record devices devices "$rc" "devices --json" "$TMP/devices.json" >>"$RAW"
        elapsed "start devices --measure"
        timeout 180 "$CLATTN" devices --measure --json="$TMP/measure.json" >>"$LOG" 2>&1
        rc=$?
        "${TABLE[@]}" record devices measure "$rc" "devices --measure --json" "$TMP/measure.json" >>"$RAW"
        say "### The device and its ceilings"
        say ""
        "${TABLE[@]}" ceilings "$RAW" | tee -a "$TABLES"
        say ""
        READ_BW=$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1])).get("sweep_floor") or "")' "$TMP/measure.json" 2>/dev/null)
        FMA=$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["flops_f32"]["median"])' "$TMP/measure.json" 2>/dev/null) ;;
    prefill) section prefill_vs_torch.sh "$OUT/prefill.jsonl" ;;
    decode) section decode_vs_torch.sh "$OUT/decode.jsonl" READ_BW="$READ_BW" ;;
    kvcache) section kvcache_vs_torch.sh "$OUT/kvcache.jsonl" READ_BW="$READ_BW" ;;
    fp32) section fp32_vs_torch.sh "$OUT/fp32.jsonl" FMA="$FMA" ;;
    naive) section naive_vs_torch.sh "$OUT/naive.jsonl" ;;
    oom) section naive_oom_boundary.sh "$OUT/oom.jsonl" ;;
    *) echo "unknown section $s (device prefill decode kvcache fp32 naive oom)" >&2; exit 2 ;;
    esac
done
elapsed "done"
echo "took $(($(date +%s) - t_start)) s; raw output in $OUT" | tee -a "$LOG"
