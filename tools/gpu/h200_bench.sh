#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The H200 runs behind docs/PERFORMANCE.md: device query and measured
# ceilings, tuning, correctness, the seed's experiment (plus N = 2048, 8192
# and d = 64, 256), PyTorch's naive / SDPA flash / SDPA cuDNN on the same GPU
# in the same call, and the naive path's out-of-memory boundary.
# Run from the repository root with .gpu/ and build/ carried; files go to $OUT.
# All stages take about 11 minutes, more than one device call allows (10):
# give stages, e.g. `h200_bench.sh setup d128` in one call and
# `h200_bench.sh d64 d256 oom` in the next.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
source .gpu/env.sh
c=build/tools/clattn
log() { echo "== $*" | tee -a "$out/log.txt"; }
run() { "$@" 2>&1 | tee -a "$out/log.txt"; }
torch() { PYTHONUNBUFFERED=1 python3 .gpu/torch_sdpa.py "$@" >>"$out/torch.jsonl" 2>&1; }

stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(setup d128 d64 d256 oom)
for stage in "${stages[@]}"; do
    case $stage in
    setup)
        log "device"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv | tee -a "$out/log.txt"
        { $c devices; $c devices --measure; } >"$out/devices.txt" 2>&1; tail -25 "$out/devices.txt"
        log "tune"; $c tune -d 64,128,256 -B 4 -H 16 -N 4096 --seconds 0.15 >"$out/tune.txt" 2>&1
        grep best "$out/tune.txt" | tee -a "$out/log.txt"
        log "check"
        { $c verify; echo "verify exit $?"; } >"$out/check.txt" 2>&1
        # Each test's status is read right after it runs (not after basename).
        for t in build/tests/test_*; do
            [ -f "$t" ] && [ -x "$t" ] || continue
            "$t" >"$out/$(basename "$t").log" 2>&1
            rc=$?
            echo "$(basename "$t") exit $rc" >>"$out/check.txt"
        done
        tail -12 "$out/check.txt" | tee -a "$out/log.txt" ;;
    d128)
        log "bench d=128"; run $c bench --preset seed -N 1024,2048,4096,8192,16384 --reps-seconds 0.5 --json "$out/b128.json"
        log "torch d=128"; torch 1024,2048,4096,8192,16384 8 32 128 ;;
    d64|d256)
        d=${stage#d}
        log "bench d=$d"; run $c bench --preset seed -d $d -N 1024,4096,16384 --reps-seconds 0.3 --json "$out/b$d.json"
        log "torch d=$d"; torch 1024,4096,16384 8 32 $d ;;
    oom)
        log "naive OOM boundary (B=8 H=32 d=128 fp16)"
        run $c predict -B 8 -H 32 -d 128 --dtype fp16 -N 11940,11960
        run $c bench -B 8 -H 32 -d 128 -N 11940,11960 --path naive --causal no --confirm-oom --reps-seconds 0.05 ;;
    *) echo "unknown stage $stage (setup, d128, d64, d256, oom)"; exit 2 ;;
    esac
done
