#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Register and spill report for an NVIDIA kernel of cl/, without a GPU: the
# OpenCL C is compiled to PTX by clang + libclc (Debian: clang-15, llvm-15,
# libclc-15) and assembled for sm_90 by CUDA's ptxas. NVIDIA's own OpenCL
# compiler differs in detail (compare with CLATTN_BUILD_OPTIONS=-cl-nv-verbose
# on the GPU), but register pressure and spills track it closely enough to
# screen variants before spending device time. Static local memory above
# 48 KiB makes ptxas refuse the kernel here (the driver accepts up to 227 KiB).
# usage: tools/ptxcheck.sh cl/fused/nv_mma.cl -DD=128 -DBN=64 -DWARPS=4 -DMT=2 -DCAUSAL=0
set -euo pipefail
src=$1; shift
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# -Dasm=__asm__: clang spells GCC inline assembly __asm__ in OpenCL C.
clang-15 -x cl -cl-std=CL1.2 -target nvptx64-nvidia-nvcl -Xclang -finclude-default-header \
    -O3 -emit-llvm -c -Dasm=__asm__ -I "$(dirname "$0")/../cl/include" "$@" -o "$tmp/k.bc" "$src"
llvm-link-15 "$tmp/k.bc" /usr/lib/clc/nvptx64--nvidiacl.bc -o "$tmp/l.bc" 2>/dev/null
opt-15 -O3 "$tmp/l.bc" -o "$tmp/o.bc"
llc-15 -march=nvptx64 -mcpu=sm_86 -mattr=+ptx75 "$tmp/o.bc" -o "$tmp/k.ptx"
ptxas -arch=sm_90 -v "$tmp/k.ptx" -o "$tmp/k.cubin" 2>&1 | grep -E "registers|spill|error"
