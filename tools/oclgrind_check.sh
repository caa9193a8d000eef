#!/usr/bin/env bash
# Runs the portable kernels under oclgrind (Debian: apt-get install oclgrind),
# which simulates an OpenCL device and reports data races, out-of-bounds
# accesses and API misuse. Small odd shapes, both dtypes, both causal
# alignments; fp32 checks the fused path only, because CLBlast (the naive
# path's fp32 GEMM) crashes inside the simulator.
# Usage: tools/oclgrind_check.sh [path/to/clattn]; exits 77 without oclgrind.
set -euo pipefail
clattn=${1:-build/tools/clattn}
command -v oclgrind >/dev/null || { echo "oclgrind not installed: skipped"; exit 77; }
cases=(
    "--shape 1,2,1,37,45,16 --dtype fp16 --causal bottom-right"
    "--shape 1,3,1,9,130,256 --dtype fp16 --causal none"
    "--shape 2,2,2,20,70,24 --dtype fp32 --causal top-left --path fused"
    "--shape 1,1,1,65,33,64 --dtype fp32 --causal bottom-right --path fused"
)
status=0
for c in "${cases[@]}"; do
    log=$(oclgrind --check-api --data-races "$clattn" verify $c 2>&1) || status=1
    # oclgrind reports problems on stderr in blocks that name the error kind.
    if grep -qiE "data race|invalid (read|write)|out-of-bounds|api error" <<<"$log"; then
        echo "$log" | head -40
        status=1
    fi
    echo "$(tail -1 <<<"$log")   [$c]"
done
exit $status
