#!/usr/bin/env bash
# One device call's worth of checks and timings on the lent H200, by stage:
#   tests    every test binary, each status read right after it runs
#   ptests   the same, all but test_large concurrently (shorter calls)
#   verify   clattn verify: AUTO on both paths, then each fused kernel forced
#   regs     registers and spills of the GPU kernels (NVIDIA's -cl-nv-verbose)
#   tiled    the register-tiled kernel's candidates (clattn tune --no-save),
#            PyTorch's fp32/fp16 memory-efficient SDPA beside it
#   decode   the decode shapes of issue 10: clattn (tests/perf/time_fused)
#            and PyTorch's flash / cuDNN / memory-efficient in the same call
#   dsweep   the decode kernel's tiles, ring depths and splits on the
#            decode shapes, nv-mma's beside them, PyTorch in the same call
#   prefill  fp16 d=128 prefill, clattn AUTO beside torch_sdpa.py
#   merge    the decode kernel's own split combine against cl/fused/combine.cl
#   chunks   the decode kernel's chunk size (CLATTN_NV_DECODE_CB)
#   closing  the decode rows as shipped beside build-before/ (if carried),
#            PyTorch before and after them, the chunked-prefill row,
#            bench --preset decode (closing2: the same)
#   ring     the decode kernel's ring shapes at B = 8
#   combine  cl/fused/combine.cl's parts per column at 66 chunks, test_serving
#   decode_ab the decode rows as shipped beside one chunk per group and
#            cl/fused/combine.cl, interleaved
#   trace    the decode kernel's per-group timeline
#            (-DTRACE=1, tools/gpu/trace_decode.py) beside its timing
#   ab       test_serving and verify nv-decode, then the decode rows of
#            this build and build-before/ interleaved, PyTorch after
#   dchunks  the register kernel's chunk size (CLATTN_NV_DECODE_CB: DCHUNKS,
#            default 1 2 4; DCHUNKS_VAR names another switch, e.g.
#            CLATTN_NV_DECODE_TAIL) on the decode rows, then test_serving
#            (unless SERVING=0)
#   probe    tests/perf/probe_stream: one warp per group streaming K/V
#            rows into local memory by copy method (PROBE_VARIANTS), the
#            many-warp read beside them, and the decode kernel's rows
#   direct   nv-decode with K/V in registers: verify, then the decode rows
#            beside the ring (CLATTN_NV_DECODE_DIRECT=0) interleaved, and
#            its splits at B = 8
#   hopper   nv-wgmma (the wgmma kernel in the fused table): verify, prefill
#            at d = 64/128/256, chunked prefill, PyTorch beside it
# Run from the repository root with .gpu/ and build/ carried. Everything goes
# to $OUT/session.txt (and logs.tgz); the summary lines start with '##'.
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out/logs"
source .gpu/env.sh
c=build/tools/clattn
T=build/tests/perf/time_fused
S=$out/session.txt
say() { echo "## $*" | tee -a "$S"; }
torch_cases() { PYTHONUNBUFFERED=1 python3 .gpu/torch_cases.py "$@" 2>&1 | tee -a "$S"; }
# The decode rows of issue 10 (B,H,Hkv,Nq,Nk,d), fp16, and PyTorch on them
# and on any shapes more (torch_cases' dtype and mask fields added).
DECODE_ROWS="8,32,8,1,4096,128 8,32,8,1,16384,128 8,32,8,1,65536,128 1,32,8,1,131072,128 64,32,8,1,4096,128"
torch_rows() {
    local cases=() x
    for x in "$@"; do cases+=("$x,16,0"); done
    torch_cases "${cases[@]}"
}
# One clattn timing (TF_BIN=<another build's time_fused> for an A/B): the median of the batches' per-call times, in ms.
tf() {
    local line
    line=$(timeout 120 "${TF_BIN:-$T}" "$@" 2>&1)
    local rc=$?
    [ -n "${TAG:-}" ] && echo "## [$TAG]" >>"$S"
    echo "$line" >>"$S"
    if [ $rc -ne 0 ]; then say "time_fused $* FAILED rc=$rc: ${line:0:200}"; return; fi
    python3 - "$line" "$*" "${TAG:-}" <<'EOF' | tee -a "$S"
import json, statistics, sys
r = json.loads(sys.argv[1])
print(("## [%s]" % sys.argv[3] if sys.argv[3] else "##") + " clattn %-40s %-22s %9.4f ms  splits %s%s" % (sys.argv[2][:40], r["kernel"], statistics.median(r["times"]) * 1e3, r["splits"], "  enqueue %.4f ms" % (r["enqueue_per_call"] * 1e3) if "enqueue_per_call" in r else "") + ("  last kernel %.4f ms, gap %.4f ms" % (r["last_kernel_s"] * 1e3, r["gap_s"] * 1e3) if "gap_s" in r else "") + ("  device/call %.4f ms" % (r["device_per_call_s"] * 1e3) if "device_per_call_s" in r else ""))
EOF
}

# The decode rows (and B = 8 Nk = 1024) in two rounds, this build
# interleaved with build-before/'s when it was carried.
decode_rounds() {
    local round shape
    for round in 1 2; do
        for shape in $DECODE_ROWS 8,32,8,1,1024,128; do
            TAG=new tf $shape fp16 none auto 20 3
            [ -x build-before/tests/perf/time_fused ] &&
                TF_BIN=build-before/tests/perf/time_fused TAG=before tf $shape fp16 none auto 20 3
        done
        [ -n "${1:-}" ] && TAG=new tf $1
    done
}
# `clattn bench --preset decode` (GB/s against the measured rate).
bench_decode() {
    timeout 120 $c bench --preset decode --reps-seconds 0.2 >"$out/logs/bench_decode.txt" 2>&1
    say "bench --preset decode exit $?"
    grep -E "fused/|GB/s|B +H" "$out/logs/bench_decode.txt" | head -20 | tee -a "$S"
}

# The fused rows of a `clattn bench` table, whichever build's column order
# (older builds print N first, newer B, Nq, Nk): N, mask, kernel, median ms.
prefill_rows() {
    python3 - "$1" "$2" <<'EOF' | tee -a "$S"
import sys
for line in open(sys.argv[1]):
    f = line.split()
    if not f or not f[0].isdigit() or not any(x.startswith("fused/") for x in f):
        continue
    k = next(i for i, x in enumerate(f) if x.startswith("fused/"))
    new = f[1].isdigit() and f[2].isdigit()
    n, mask = (f[1], f[3]) if new else (f[0], f[1])
    ms = f[k + 4] if new else f[k + 3]
    print("## prefill %s: N=%s mask=%s %s %s median_ms=%s" % (sys.argv[2], n, mask, f[k], f[k + 1], ms))
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
    direct)
        say "stage direct"
        timeout 240 $c verify --path fused --kernel nv-decode >"$out/logs/verify_nv-decode.txt" 2>&1; rc=$?
        say "verify --kernel nv-decode exit $rc: $(tail -1 "$out/logs/verify_nv-decode.txt") / $(tail -2 "$out/logs/verify_nv-decode.txt" | head -1)"
        for round in 1 2; do
            for shape in $DECODE_ROWS; do
                TAG=direct tf $shape fp16 none auto 20 3
                CLATTN_NV_DECODE_DIRECT=0 TAG=ring tf $shape fp16 none auto 20 3
            done
        done
        for sp in 8 12 16 24; do
            for shape in 8,32,8,1,4096,128 8,32,8,1,16384,128 8,32,8,1,65536,128; do
                TAG=direct-s$sp tf $shape fp16 none auto 20 3 0 $sp
            done
        done ;;
    dchunks)
        say "stage dchunks"
        for round in 1 2; do
            for shape in $DECODE_ROWS; do
                for cb in ${DCHUNKS:-1 2 4}; do
                    ( export "${DCHUNKS_VAR:-CLATTN_NV_DECODE_CB}=$cb"
                      TAG="${DCHUNKS_VAR:-CLATTN_NV_DECODE_CB}=$cb" tf $shape fp16 none auto 20 3 )
                done
            done
        done
        [ "${SERVING:-1}" = 0 ] && continue
        timeout 400 build/tests/test_serving >"$out/logs/test_serving.log" 2>&1; rc=$?
        say "test_serving exit $rc: $(grep -E 'PASSED|FAILED' "$out/logs/test_serving.log" | tr '\n' ' ')" ;;
    probe)
        say "stage probe"
        timeout 300 build/tests/perf/probe_stream tests/perf/probe_stream.cl ${PROBE_MB:-1024} 20 \
            ${PROBE_VARIANTS:-0,32,3,528 1,32,3,528 2,32,3,528 3,32,3,528 0,32,3,512 2,32,3,512 \
            3,64,3,264 0,32,2,792 2,32,2,792 3,32,2,792 2,32,4,396 3,128,2,132 0,16,4,528 2,16,4,528} \
            2>&1 | tee -a "$S"
        say "probe_stream exit ${PIPESTATUS[0]}"
        for shape in 8,32,8,1,16384,128 8,32,8,1,65536,128 1,32,8,1,131072,128; do
            tf $shape fp16 none auto 20 3
        done ;;
    ptests)
        # The same binaries, all but test_large at once (they only check
        # results; one device call holds them all), then test_large alone:
        # it allocates near the memory limit. Each status is its own.
        say "stage ptests"
        for t in build/tests/test_*; do
            [ -f "$t" ] && [ -x "$t" ] && [ "$(basename "$t")" != test_large ] || continue
            ( timeout 400 "$t" >"$out/logs/$(basename "$t").log" 2>&1; echo $? >"$out/logs/$(basename "$t").rc" ) &
        done
        wait
        timeout 300 build/tests/test_large >"$out/logs/test_large.log" 2>&1; echo $? >"$out/logs/test_large.rc"
        for f in "$out"/logs/test_*.rc; do say "$(basename "$f" .rc) exit $(cat "$f")"; done ;;
    verify)
        say "stage verify"
        timeout 240 $c verify >"$out/logs/verify_auto.txt" 2>&1; rc=$?
        say "verify AUTO exit $rc: $(tail -1 "$out/logs/verify_auto.txt") / $(tail -2 "$out/logs/verify_auto.txt" | head -1)"
        for k in ${VERIFY_KERNELS:-nv-wgmma nv-decode nv-mma tiled portable}; do
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
        CLATTN_BUILD_OPTIONS=-cl-nv-verbose $T 8,32,8,1,16384,128 fp16 none nv-mma 1 1 >/dev/null 2>&1
        CLATTN_BUILD_OPTIONS=-cl-nv-verbose $T 8,32,8,4,16384,128 fp16 none nv-decode 1 1 >/dev/null 2>&1
        CLATTN_BUILD_OPTIONS=-cl-nv-verbose $T 8,16,1,1,16384,256 fp16 none nv-decode 1 1 >/dev/null 2>&1
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
        for v in fp32:128:0 fp32:128:1 fp32:64: fp16:128: fp16:64:; do
            IFS=: read -r dt d sh <<<"$v"
            CLATTN_TILED_KV_SHARED=$sh timeout 150 $c tune --kernel tiled -d $d -B 8 -H 32 -N 4096 \
                --dtype $dt --causal no --seconds 0.05 --no-save >"$out/logs/tune_tiled_$dt$d$sh.txt" 2>&1
            grep -E "TFLOP|best|WRONG|failed" "$out/logs/tune_tiled_$dt$d$sh.txt" | grep -v "local memory\|floats per" |
                sed "s/^/## $dt kv_shared=${sh:-auto} /" | tee -a "$S"
        done
        torch_cases 8,32,32,4096,4096,128,32,0 8,32,32,4096,4096,64,32,0 ;;
    gemm)
        say "stage gemm"
        for dt in fp16 fp32; do
            CLATTN_NV_GEMM=off timeout 100 build/tests/perf/time_naive 8,32,32,4096,4096,128 $dt none builtin 5 2>&1 | tail -2 | tee -a "$S"
        done
        CLATTN_NV_GEMM=off timeout 120 build/tests/test_gemm >"$out/logs/test_gemm_nvoff.log" 2>&1; say "test_gemm (tensor cores off) exit $?" ;;
    decode)
        say "stage decode"
        for shape in $DECODE_ROWS; do
            for sp in 0 16 64 256; do tf $shape fp16 none auto 10 3 0 $sp; done
        done
        for sp in 0 8 32; do tf 1,32,8,512,16384,128 fp16 bottom-right auto 10 3 0 $sp; done
        torch_rows $DECODE_ROWS 1,32,8,512,16384,128 ;;
    dsweep)
        say "stage dsweep"
        for shape in $DECODE_ROWS; do
            tf $shape fp16 none nv-mma 10 3
            tf $shape fp16 none auto 10 3
            for v in 16x16:8 16x32:2 16x32:6 16x64:2 16x64:3; do
                CLATTN_NV_DECODE_STAGES=${v#*:} tf $shape fp16 none nv-decode 10 3 ${v%:*} 0
            done
            for sp in 4 8 16 32 64; do tf $shape fp16 none nv-decode 10 3 0 $sp; done
        done
        torch_rows $DECODE_ROWS ;;
    prefill)
        # This commit's fused path beside an older build's (build-before/,
        # carried when present), interleaved, then PyTorch.
        say "stage prefill"
        for round in 1; do
            for b in build build-before; do
                [ -x $b/tools/clattn ] || continue
                timeout 200 $b/tools/clattn bench --path fused -N 1024,4096,16384 --causal both \
                    --reps-seconds 0.3 >"$out/logs/prefill_${b}_$round.txt" 2>&1
                prefill_rows "$out/logs/prefill_${b}_$round.txt" "$b round $round"
            done
        done
        PYTHONUNBUFFERED=1 python3 .gpu/torch_sdpa.py 1024,4096,16384 2>&1 | tee -a "$S" ;;
    hopper)
        # The wgmma kernel of the fused table: its probe and listing, verify
        # with it forced, prefill timings at d = 64/128/256 and the chunked
        # prefill beside PyTorch's flash and cuDNN in the same call.
        say "stage hopper"
        timeout 120 $c devices >"$out/logs/devices.txt" 2>&1; rc=$?
        say "devices exit $rc: $(grep -i 'wgmma' "$out/logs/devices.txt" | head -3 | tr '\n' ' ')"
        timeout 300 $c verify --path fused --kernel nv-wgmma >"$out/logs/verify_nv-wgmma.txt" 2>&1; rc=$?
        say "verify --kernel nv-wgmma exit $rc: $(tail -1 "$out/logs/verify_nv-wgmma.txt") / $(grep -c 'ERROR' "$out/logs/verify_nv-wgmma.txt") errors"
        grep -iE "fail|error|wrong" "$out/logs/verify_nv-wgmma.txt" | head -20 | tee -a "$S"
        for N in ${WG_NS:-1024 2048 4096 8192 16384}; do
            for m in none top-left; do tf 8,32,32,$N,$N,128 fp16 $m nv-wgmma 10 3; done
        done
        for d in ${WG_DS:-64 256}; do
            for N in 1024 4096 16384; do
                for m in none top-left; do tf 8,32,32,$N,$N,$d fp16 $m nv-wgmma 10 3; done
            done
        done
        tf 8,32,32,4096,4096,128 fp16 none nv-mma 10 3
        tf 1,32,8,512,16384,128 fp16 bottom-right auto 10 3
        tf 1,32,8,512,16384,128 fp16 bottom-right nv-mma 10 3
        PYTHONUNBUFFERED=1 python3 .gpu/torch_sdpa.py ${WG_NS_CSV:-1024,2048,4096,8192,16384} 8 32 128 2>&1 | tee -a "$S"
        for d in ${WG_DS:-64 256}; do
            PYTHONUNBUFFERED=1 python3 .gpu/torch_sdpa.py 1024,4096,16384 8 32 $d 2>&1 | tee -a "$S"
        done
        torch_cases 1,32,8,512,16384,128,16,0 ;;
    final)
        # The defaults as shipped: decode and chunked prefill (auto splits),
        # the tiled kernel's default tiles, prefill beside the older build;
        # PyTorch in the same call.
        say "stage final"
        for shape in $DECODE_ROWS; do
            tf $shape fp16 none auto 10 3
        done
        tf 1,32,8,512,16384,128 fp16 bottom-right auto 10 3
        for d in 64 128; do for dt in fp32 fp16; do tf 8,32,32,4096,4096,$d $dt none tiled 2 3; done; done
        for b in build build-before build; do
            timeout 100 $b/tools/clattn bench --path fused -N 1024,4096 --causal both \
                --reps-seconds 0.2 >"$out/logs/final_prefill_$b.txt" 2>&1
            prefill_rows "$out/logs/final_prefill_$b.txt" "$b"
        done
        torch_rows $DECODE_ROWS 1,32,8,512,16384,128
        torch_cases 8,32,32,4096,4096,128,32,0 8,32,32,4096,4096,64,32,0
        PYTHONUNBUFFERED=1 python3 .gpu/torch_sdpa.py 1024,4096 2>&1 | grep -v naive_skip | tee -a "$S"
        timeout 100 $c tune --kernel nv-wgmma -d 128 -B 8 -H 32 -N 4096 --dtype fp16 --causal no \
            --seconds 0.05 --no-save >"$out/logs/tune_nv-wgmma.txt" 2>&1
        say "tune --kernel nv-wgmma exit $?"
        grep -E "TFLOP|best|WRONG|failed|ignored" "$out/logs/tune_nv-wgmma.txt" | head -6 | tee -a "$S"
        bench_decode ;;
    merge)
        # The decode kernel's own combine (cl/include/nv_chunk_merge.clh) against
        # cl/fused/combine.cl's second launch, chunks taken in turn against one
        # per group:
        # the serving tests, then the decode rows interleaved, a key sweep
        # at 8 chunks, PyTorch in the same call.
        say "stage merge"
        for t in test_serving test_attention test_special; do
            ( timeout 400 build/tests/$t >"$out/logs/$t.log" 2>&1; echo $? >"$out/logs/$t.rc" ) &
        done
        wait
        for t in test_serving test_attention test_special; do
            say "$t exit $(cat "$out/logs/$t.rc")"
            grep -E "FAILED|ERROR|fail" "$out/logs/$t.log" | head -8 | tee -a "$S"
        done
        timeout 240 $c verify --path fused --kernel nv-decode >"$out/logs/verify_nv-decode.txt" 2>&1; rc=$?
        say "verify --kernel nv-decode exit $rc: $(tail -1 "$out/logs/verify_nv-decode.txt")"
        for round in 1 2; do
            for shape in $DECODE_ROWS 8,32,8,1,1024,128; do
                TAG=default tf $shape fp16 none auto 20 3
                CLATTN_NV_DECODE_STEAL=0 CLATTN_NV_DECODE_MERGE=0 TAG="static, combine.cl" tf $shape fp16 none auto 20 3
                CLATTN_NV_DECODE_STEAL=0 TAG="static, default merge" tf $shape fp16 none auto 20 3
                CLATTN_NV_DECODE_MERGE=0 TAG="steal, combine.cl" tf $shape fp16 none auto 20 3
            done
        done
        for nk in 1024 2048 4096 8192 16384 32768 65536; do
            TAG="sweep 8 groups" tf 8,32,8,1,$nk,128 fp16 none nv-decode 20 3 0 8
        done
        for sp in 4 6 12 16; do TAG="B8 16384 $sp groups" tf 8,32,8,1,16384,128 fp16 none nv-decode 20 3 0 $sp; done
        TAG="one chunk" tf 8,32,8,1,32,128 fp16 none nv-decode 20 3 0 1
        torch_rows $DECODE_ROWS 8,32,8,1,1024,128 ;;
    decode_ab)
        # The decode rows as shipped beside the previous commit's scheme
        # (one chunk per group, cl/fused/combine.cl), interleaved, PyTorch after.
        say "stage decode_ab"
        for round in 1 2; do
            for shape in $DECODE_ROWS 8,32,8,1,1024,128; do
                TAG=default tf $shape fp16 none auto 20 3
                CLATTN_NV_DECODE_STEAL=0 CLATTN_NV_DECODE_MERGE=0 TAG="static, combine.cl" tf $shape fp16 none auto 20 3
            done
        done
        torch_rows $DECODE_ROWS 8,32,8,1,1024,128 ;;
    chunks)
        # The size of the chunks the decode kernel's groups take in turn.
        say "stage chunks"
        for round in 1 2; do
            for shape in 8,32,8,1,4096,128 8,32,8,1,16384,128 8,32,8,1,65536,128; do
                for cb in 2 4 8 16; do
                    CLATTN_NV_DECODE_CB=$cb TAG="cb $cb" tf $shape fp16 none auto 20 3
                done
            done
        done
        torch_rows 8,32,8,1,4096,128 8,32,8,1,16384,128 8,32,8,1,65536,128 ;;
    ring)
        # Ring shapes at about the same local memory per SM: more, smaller
        # blocks for more groups per SM, or fewer groups with deeper rings.
        say "stage ring"
        for shape in 8,32,8,1,16384,128 8,32,8,1,4096,128; do
            for round in 1 2; do
                TAG=default tf $shape fp16 none auto 20 3
                for v in 16x16:5 16x16:4 16x16:6 16x64:2 16x32:4; do
                    CLATTN_NV_DECODE_STAGES=${v#*:} TAG="ring $v" tf $shape fp16 none nv-decode 20 3 ${v%:*} 0
                done
            done
        done
        torch_rows 8,32,8,1,4096,128 8,32,8,1,16384,128 ;;
    combine)
        # cl/fused/combine.cl with a column's chunks in 1, 4 or 8 (a GPU's
        # default) parts on the 66-chunk decode row, then test_serving
        # (over 100 s on the H200).
        say "stage combine"
        for round in 1 2; do
            for p in 1 4 8; do CLATTN_COMBINE_PARTS=$p TAG="parts $p" tf 1,32,8,1,131072,128 fp16 none auto 20 3; done
        done
        torch_cases 1,32,8,1,131072,128,16,0
        timeout 400 build/tests/test_serving >"$out/logs/test_serving.log" 2>&1; say "test_serving exit $?"
        grep -E "FAILED|ERROR" "$out/logs/test_serving.log" | head -5 | tee -a "$S" ;;
    ab)
        say "stage ab"
        ( timeout 400 build/tests/test_serving >"$out/logs/test_serving.log" 2>&1; echo $? >"$out/logs/test_serving.rc" ) &
        timeout 300 $c verify --path fused --kernel nv-decode >"$out/logs/verify_nv-decode.txt" 2>&1; rc=$?
        wait
        say "test_serving exit $(cat "$out/logs/test_serving.rc")"
        grep -E "FAILED|ERROR|PASSED" "$out/logs/test_serving.log" | head -8 | tee -a "$S"
        say "verify --kernel nv-decode exit $rc: $(tail -1 "$out/logs/verify_nv-decode.txt")"
        decode_rounds
        torch_rows $DECODE_ROWS 8,32,8,1,1024,128 ;;
    closing|closing2)
        # The decode rows as shipped, beside build-before/ (the previous
        # stop) when carried, two rounds with the chunked-prefill row, and
        # PyTorch's flash and cuDNN both before and after them (its flash
        # runs at one of a few speeds from one process to the next), then
        # `clattn bench --preset decode`. (`closing2` in 2026-12-01e's calls;
        # 2026-12-01d's `closing` also forced the merge at 66 chunks, which
        # the kernel no longer takes.)
        say "stage closing"
        torch_rows $DECODE_ROWS 8,32,8,1,1024,128 1,32,8,512,16384,128
        decode_rounds "1,32,8,512,16384,128 fp16 bottom-right auto 20 3"
        torch_rows $DECODE_ROWS 8,32,8,1,1024,128 1,32,8,512,16384,128
        # Square prefill (kernels the decode work shares headers with),
        # beside build-before/ when carried.
        for case in "8,32,32,4096,4096,128 fp16 none" "8,32,32,4096,4096,128 fp16 top-left"; do
            TAG=new tf $case auto 5 3
            [ -x build-before/tests/perf/time_fused ] &&
                TF_BIN=build-before/tests/perf/time_fused TAG=before tf $case auto 5 3
        done
        bench_decode ;;
    trace)
        # Where the decode kernel's fixed time goes: every group's timeline
        # (cl/fused/nv_decode.cl -DTRACE=1) in the last launch of a traced
        # time_fused run, beside the untraced timing.
        say "stage trace"
        for shape in ${TRACE_ROWS:-8,32,8,1,4096,128 8,32,8,1,16384,128 1,32,8,1,131072,128 8,32,8,1,1024,128}; do
            TAG=default tf $shape fp16 none auto 20 3
            CLATTN_BUILD_OPTIONS=-DTRACE=1 timeout 100 "$T" $shape fp16 none auto 3 1 \
                >"$out/logs/trace_$shape.txt" 2>&1
            say "traced run exit $?"
            python3 tools/gpu/trace_decode.py "$out/logs/trace_$shape.txt" "$shape" | tee -a "$S"
        done ;;
    *) say "unknown stage $stage" ;;
    esac
done
tar czf "$out/logs.tgz" -C "$out" logs 2>/dev/null && rm -rf "$out/logs"
