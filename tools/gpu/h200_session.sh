#!/usr/bin/env bash
# One device call's worth of checks and timings on the lent H200, by stage:
#   tests    every test binary, each status read right after it runs
#   verify   clattn verify: AUTO on both paths, then each fused kernel forced
#   regs     registers and spills of the GPU kernels (NVIDIA's -cl-nv-verbose)
#   tiled    the register-tiled kernel's candidates (clattn tune --no-save),
#            PyTorch's fp32/fp16 memory-efficient SDPA beside it
#   decode   the decode shapes of issue 10: clattn (tools/perf/time_fused)
#            and PyTorch's flash / cuDNN / memory-efficient in the same call
#   prefill  fp16 d=128 prefill, clattn AUTO beside torch_sdpa.py
# Run from the repository root with .gpu/ and build/ carried. Everything goes
# to $OUT/session.txt (and logs.tgz); the summary lines start with '##'.
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out/logs"
source .gpu/env.sh
c=build/tools/clattn
T=build/tools/time_fused
S=$out/session.txt
say() { echo "## $*" | tee -a "$S"; }
torch_cases() { PYTHONUNBUFFERED=1 python3 .gpu/torch_cases.py "$@" 2>&1 | tee -a "$S"; }
# One clattn timing: the median of the batches' per-call times, in ms.
tf() {
    local line
    line=$(timeout 120 "$T" "$@" 2>&1)
    local rc=$?
    echo "$line" >>"$S"
    if [ $rc -ne 0 ]; then say "time_fused $* FAILED rc=$rc: ${line:0:200}"; return; fi
    python3 - "$line" "$*" <<'EOF' | tee -a "$S"
import json, statistics, sys
r = json.loads(sys.argv[1])
print("## clattn %-40s %-28s %9.4f ms  splits %s" % (sys.argv[2][:40], r["kernel"], statistics.median(r["times"]) * 1e3, r["splits"]))
EOF
}

for stage in "$@"; do
    case $stage in
    tests)
        say "stage tests"
        nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader | tee -a "$S"
        for t in build/tests/test_*; do
            [ -f "$t" ] && [ -x "$t" ] || continue
            timeout 300 "$t" >"$out/logs/$(basename "$t").log" 2>&1
            rc=$?
            say "$(basename "$t") exit $rc"
        done ;;
    verify)
        say "stage verify"
        timeout 240 $c verify >"$out/logs/verify_auto.txt" 2>&1; rc=$?
        say "verify AUTO exit $rc: $(tail -1 "$out/logs/verify_auto.txt") / $(tail -2 "$out/logs/verify_auto.txt" | head -1)"
        for k in tiled portable nv-mma; do
            timeout 240 $c verify --path fused --kernel $k >"$out/logs/verify_$k.txt" 2>&1; rc=$?
            say "verify --kernel $k exit $rc: $(tail -1 "$out/logs/verify_$k.txt") / $(grep -c 'ERROR' "$out/logs/verify_$k.txt") errors / $(tail -2 "$out/logs/verify_$k.txt" | head -1)"
        done ;;
    regs)
        say "stage regs"
        export CLATTN_BUILD_LOG_DIR=$out/logs/build
        mkdir -p "$CLATTN_BUILD_LOG_DIR"
        CLATTN_BUILD_OPTIONS=-cl-nv-verbose $T 8,32,32,4096,4096,128 fp16 none auto 1 1 >/dev/null 2>&1
        CLATTN_BUILD_OPTIONS=-cl-nv-verbose $T 8,32,32,4096,4096,64 fp16 top-left auto 1 1 >/dev/null 2>&1
        CLATTN_BUILD_OPTIONS=-cl-nv-verbose $T 8,32,8,1,16384,128 fp16 none auto 1 1 >/dev/null 2>&1
        CLATTN_BUILD_OPTIONS=-cl-nv-verbose $T 8,32,32,4096,4096,128 fp32 none tiled 1 1 >/dev/null 2>&1
        CLATTN_BUILD_OPTIONS=-cl-nv-verbose $T 8,32,32,4096,4096,64 fp32 none tiled 1 1 >/dev/null 2>&1
        for f in "$CLATTN_BUILD_LOG_DIR"/*; do
            [ -f "$f" ] || continue
            echo "-- $(basename "$f")" >>"$S"
            grep -E "ptxas info *: (Used|Compiling)|spill|stack frame" "$f" | head -12 | tee -a "$S"
        done
        unset CLATTN_BUILD_LOG_DIR ;;
    tiled)
        say "stage tiled"
        for dt in fp32 fp16; do
            timeout 200 $c tune --kernel tiled -d 64,128 -B 8 -H 32 -N 4096 --dtype $dt --causal no \
                --seconds 0.1 --no-save >"$out/logs/tune_tiled_$dt.txt" 2>&1
            grep -E "TFLOP|best|WRONG|failed" "$out/logs/tune_tiled_$dt.txt" | sed "s/^/## $dt /" | tee -a "$S"
        done
        torch_cases 8,32,32,4096,4096,128,32,0 8,32,32,4096,4096,64,32,0 8,32,32,4096,4096,64,32,1 \
                    8,32,32,4096,4096,128,16,0 ;;
    decode)
        say "stage decode"
        for shape in 8,32,8,1,4096,128 8,32,8,1,16384,128 8,32,8,1,65536,128 1,32,8,1,131072,128 \
                     64,32,8,1,4096,128; do
            tf $shape fp16 none auto 20 5
        done
        tf 1,32,8,512,16384,128 fp16 bottom-right auto 20 5
        tf 8,32,8,1,65536,128 fp16 none portable 5 3
        torch_cases 8,32,8,1,4096,128,16,0 8,32,8,1,16384,128,16,0 8,32,8,1,65536,128,16,0 \
                    1,32,8,1,131072,128,16,0 64,32,8,1,4096,128,16,0 1,32,8,512,16384,128,16,0 ;;
    prefill)
        say "stage prefill"
        for n in 1024 4096 16384; do
            tf 8,32,32,$n,$n,128 fp16 none auto 5 5
            tf 8,32,32,$n,$n,128 fp16 top-left auto 5 5
        done
        PYTHONUNBUFFERED=1 python3 .gpu/torch_sdpa.py 1024,4096,16384 2>&1 | tee -a "$S" ;;
    *) say "unknown stage $stage" ;;
    esac
done
tar czf "$out/logs.tgz" -C "$out" logs 2>/dev/null && rm -rf "$out/logs"
