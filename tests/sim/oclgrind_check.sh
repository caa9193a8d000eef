#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the portable kernels under oclgrind (Debian: apt-get install oclgrind),
# which simulates an OpenCL device and reports data races, out-of-bounds
# accesses and API misuse. Small odd shapes, both dtypes, both causal
# alignments, decoding with split-KV and per-sequence lengths (the combine
# and repack kernels with them), the register-tiled kernel (AUTO's choice on
# the simulated GPU; K and V in one tile and in two), the portable kernel,
# and the CPU-shaped kernels (fused, and the naive path's GEMM and softmax)
# forced onto the simulator; fp32 checks the fused path only, because
# CLBlast (the naive path's fp32 GEMM) crashes inside the simulator.
# Usage: tests/sim/oclgrind_check.sh [path/to/clattn]; exits 77 without oclgrind.
set -euo pipefail
clattn=${1:-build/cli/clattn}
command -v oclgrind >/dev/null || { echo "oclgrind not installed: skipped"; exit 77; }
cases=(
    "--shape 1,2,1,37,45,16 --dtype fp16 --causal bottom-right"
    "--shape 1,3,1,9,130,256 --dtype fp16 --causal none"
    "--shape 2,2,2,20,70,24 --dtype fp32 --causal top-left --path fused"
    "--shape 1,1,1,65,33,64 --dtype fp32 --causal bottom-right --path fused"
    "--shape 2,8,2,1,300,32 --dtype fp16 --causal none --split-kv 3"
    "--shape 3,4,1,2,150,16 --dtype fp32 --causal bottom-right --path fused --split-kv 4 --kv-lens 0,150,37"
    "--shape 2,4,2,3,90,24 --dtype fp16 --causal top-left --kv-lens 90,41"
    "--shape 2,8,2,1,300,32 --dtype fp16 --causal none --path fused --kernel cpu --split-kv 3"
    "--shape 1,2,1,37,45,16 --dtype fp32 --causal bottom-right --path fused --kernel cpu"
    "--shape 2,2,1,40,70,24 --dtype fp16 --causal top-left --path fused --kernel portable"
    "--shape 1,4,2,33,100,20 --dtype fp32 --causal bottom-right --path fused --kernel tiled --params kv_shared=1"
    "--shape 1,4,2,33,100,20 --dtype fp16 --causal none --path fused --kernel tiled --params kv_shared=0"
    # The portable kernel with every variant at once: the window's key range,
    # the mask's and the slopes' and sinks' reads, V of another head
    # dimension, the split's partials of d_v columns and the LSE.
    "--shape 2,4,2,9,70,24 --dtype fp16 --causal bottom-right --path fused --kernel portable --window 20,0 --mask random --sinks random --alibi --softcap 3 --dv 16 --kv-lens 70,33 --split-kv 2"
    "--shape 1,2,1,5,40,16 --dtype bf16 --causal none --path fused --kernel portable --mask random-add --window 7,3"
    # The naive path's CPU-shaped GEMM and softmax (PoCL's) on the simulator,
    # K past one chunk and every edge of the tiles.
    "--shape 1,2,1,37,45,16 --dtype fp16 --causal bottom-right --path naive --params gemm=builtin,shape=cpu"
    "--shape 1,3,1,9,130,256 --dtype fp16 --causal none --path naive --params gemm=builtin,shape=cpu,cpu_rm=5,cpu_nv=3,cpu_rb=3,cpu_ns=2,cpu_kc=32"
    "--shape 2,4,2,3,90,24 --dtype fp16 --causal top-left --kv-lens 90,41 --path naive --params gemm=builtin,shape=cpu"
)
status=0
# -cl-opt-disable: oclgrind 21.10 cannot run code in which LLVM's inliner left
# llvm.experimental.noalias.scope.decl (the kernel is then not found), and
# unoptimised code keeps every access the source makes for it to check.
for c in "${cases[@]}"; do
    # A leading VAR=VALUE word is the case's environment.
    envs=()
    if [[ $c == CLATTN_*=* ]]; then
        envs=("${c%% *}")
        c=${c#* }
    fi
    log=$(env "${envs[@]}" oclgrind --build-options -cl-opt-disable --check-api --data-races \
          "$clattn" verify $c 2>&1) || status=1
    # oclgrind reports problems on stderr in blocks that name the error kind.
    if grep -qiE "data race|invalid (read|write)|out-of-bounds|api error" <<<"$log"; then
        echo "$log" | head -40
        status=1
    fi
    echo "$(tail -1 <<<"$log")   [${envs[*]} $c]"
done
exit $status
