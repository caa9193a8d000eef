/* SPDX-License-Identifier: MIT */
/*
 * Tensor-core rate on NVIDIA (compute capability >= 8.0): each warp issues
 * ITERS rounds of 8 independent mma.sync.m16n8k16 (fp16 in, fp32 accumulate)
 * on register operands, the instruction cl/fused/nv_mma.cl is built from, so
 * the result is the roof that kernel can reach (below the datasheet's wgmma
 * rate). 4096 FLOP per mma. Needs the NVIDIA OpenCL compiler (inline PTX).
 */
#include "nv_ptx.clh"

__kernel void measure_mma(__global float *out, const uint iters, const uint seed)
{
    float c[8][4];
    for (int i = 0; i < 8; i++)
        c[i][0] = c[i][1] = c[i][2] = c[i][3] = 0.0f;
    /* Operands depend on the seed so nothing is folded at compile time. */
    uint a0 = seed | 0x3c003c00u, a1 = a0 ^ 1u, a2 = a0 ^ 2u, a3 = a0 ^ 3u;
    uint b0 = seed ^ 0x38003800u, b1 = b0 ^ 1u;
    for (uint it = 0; it < iters; it++) {
#pragma unroll
        for (int i = 0; i < 8; i++)
            MMA_16816(c[i], a0, a1, a2, a3, b0, b1);
    }
    float sum = 0.0f;
    for (int i = 0; i < 8; i++)
        sum += c[i][0] + c[i][1] + c[i][2] + c[i][3];
    out[get_global_id(0)] = sum;
}
