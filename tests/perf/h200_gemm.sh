#!/usr/bin/env bash
# The built-in GEMM (cl/gemm.cl, the GPU shape) on the lent H200, in one
# device call (docs/GEMM.md): the seed's naive path stage by stage with the
# tensor-core GEMM off (fp16) and without CLBlast (fp32), the previous
# gemm.cl (a library built from it, in build/gpu/base) and this one in
# interleaved rounds; then the default backends for reference; then
# correctness of the built-in GEMM there (test_gemm, verify --path naive).
# Run from the repository root with build/ carried (build/gpu: the staged
# ICD loader, CLBlast and cmocka packages and ../shared/gpu/env.sh); files
# go to $OUT.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
source build/gpu/env.sh
t=build/tests/perf/time_naive
shape=${SHAPE:-8,32,32,4096,4096,128}
rounds=${ROUNDS:-3}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$out/log.txt"
build/tools/clattn devices --measure 2>&1 | grep -E "FMA|mma|bandwidth" | tee -a "$out/log.txt"
for r in $(seq "$rounds"); do
    for v in base current; do
        lib=; [ $v = base ] && lib=$PWD/build/gpu/base:
        for dt in fp16 fp32; do
            echo "{\"round\": $r, \"variant\": \"$v\", \"row\": $(CLATTN_NV_GEMM=off \
                LD_LIBRARY_PATH=$lib$LD_LIBRARY_PATH $t $shape $dt none builtin 5)}" \
                | tee -a "$out/rows.jsonl"
        done
    done
done
for dt in fp16 fp32; do
    echo "{\"round\": 0, \"variant\": \"default-backends\", \"row\": $($t $shape $dt none clblast 5)}" \
        | tee -a "$out/rows.jsonl"
done
{
    CLATTN_NV_GEMM=off build/tests/test_gemm; echo "test_gemm (tensor cores off) exit $?"
    build/tests/test_gemm; echo "test_gemm exit $?"
    CLATTN_NV_GEMM=off build/tests/test_attention; echo "test_attention (tensor cores off) exit $?"
    CLATTN_NV_GEMM=off build/tools/clattn verify --path naive; echo "verify naive (tensor cores off) exit $?"
} >"$out/check.txt" 2>&1
grep -E "exit|passed|FAIL" "$out/check.txt" | tee -a "$out/log.txt"
