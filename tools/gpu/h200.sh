#!/usr/bin/env bash
# One device call on the lent H200 (see docs/PERFORMANCE.md): run from the
# repository root there, with .gpu/ (../shared/gpu/stage.sh) and build/
# carried. Writes logs under $OUT (or ./gpu-out) and prints a short summary.
#   tools/gpu/h200.sh check    verify + device tests on NVIDIA's OpenCL
#   tools/gpu/h200.sh tune     clattn tune for d = 64, 128, 256
#   tools/gpu/h200.sh torch N  PyTorch naive / flash / cuDNN at N (comma list)
#   tools/gpu/h200.sh CMD...   any other clattn command line
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out"
source .gpu/env.sh
export CLATTN_BUILD_LOG_DIR="$out/buildlogs"
mkdir -p "$CLATTN_BUILD_LOG_DIR"
clattn=build/tools/clattn

for step in "$@"; do
    case "$step" in
    info)
        nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv
        clinfo -l ;;
    check)
        $clattn verify >"$out/verify.txt" 2>&1; echo "verify exit $?"; tail -3 "$out/verify.txt"
        for t in build/tests/test_api build/tests/test_reference build/tests/test_attention build/tests/test_model build/tests/test_device; do
            [ -x "$t" ] || continue
            "$t" >"$out/$(basename "$t").log" 2>&1; echo "$(basename "$t") exit $?"
        done ;;
    tune)
        CLATTN_BUILD_OPTIONS=-cl-nv-verbose $clattn tune -d 64,128,256 -B 4 -H 16 -N 4096 --no-save 2>&1 | tee "$out/tune.txt" ;;
    torch:*)
        PYTHONUNBUFFERED=1 python3 .gpu/torch_sdpa.py "${step#torch:}" 2>&1 | tee -a "$out/torch.jsonl" ;;
    *)
        echo "+ clattn $step"; $clattn $step 2>&1 | tee -a "$out/commands.txt" ;;
    esac
done
tar czf "$out/buildlogs.tgz" -C "$out" buildlogs 2>/dev/null && rm -rf "$out/buildlogs"
