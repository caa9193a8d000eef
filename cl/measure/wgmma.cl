/* SPDX-License-Identifier: MIT */
/*
 * Warpgroup MMA rate on Hopper (sm_90a): each warpgroup issues ITERS rounds
 * of WGMMA_PER_ROUND wgmma.mma_async m64n128k16 (f16 in, f32 accumulate),
 * both operands from shared memory through no-swizzle descriptors, then
 * waits for them. 2 * 64 * 128 * 16 = 262144 FLOP per wgmma. The roof of a
 * Hopper attention kernel built the same way (cl/ptxgen.py makes the PTX
 * program binary; NVIDIA's OpenCL compiler cannot build this file).
 * Launch with 256 work-items per group: two warpgroups share the operands.
 */
#include "nv_wgmma.clh"

#define WGMMA_PER_ROUND 8
#define GROUP_SIZE 256

/* A: 64 x 16 halves (2 KiB), B: 128 x 16 halves (4 KiB), as 16-byte rows of
 * core matrices: core matrix (i, k) of rows 8i.. and columns 8k.. sits at
 * byte (2i + k) * 128, so the leading byte offset (K) is 128 and the stride
 * byte offset (M or N) 256. */
#define A_CHUNKS (64 * 16 * 2 / 16)
#define B_CHUNKS (128 * 16 * 2 / 16)

__kernel __attribute__((reqd_work_group_size(GROUP_SIZE, 1, 1)))
void measure_wgmma(__global float *out, const uint iters, const uint seed)
{
    __local uint4 tile[A_CHUNKS + B_CHUNKS];
    const uint lid = get_local_id(0);
    /* Small halves (0x2000-ish, about 0.008) that depend on the seed, so
     * nothing folds and the sums stay finite. */
    for (uint i = lid; i < A_CHUNKS + B_CHUNKS; i += GROUP_SIZE) {
        uint h = 0x20002000u | ((seed + i) & 0x00ff00ffu);
        tile[i] = (uint4)(h, h ^ 1u, h ^ 2u, h ^ 3u);
    }
    fence_proxy_async();
    barrier(CLK_LOCAL_MEM_FENCE);

    const ulong da = wg_desc(wg_smem_addr(tile), 128, 256);
    const ulong db = wg_desc(wg_smem_addr(tile + A_CHUNKS), 128, 256);
    float acc[64];
#pragma unroll
    for (int i = 0; i < 64; i++)
        acc[i] = 0.0f;
    for (uint it = 0; it < iters; it++) {
        /* Each round, as a GEMM main loop would (ptxas inserts it itself
         * otherwise: the accumulators enter the loop from ordinary moves). */
        wgmma_fence();
#pragma unroll
        for (int i = 0; i < WGMMA_PER_ROUND; i++)
            WGMMA_SS_M64N128K16(acc, da, db, 1);
        wgmma_commit();
        WGMMA_WAIT(0);
    }
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < 64; i++)
        sum += acc[i];
    out[get_global_id(0)] = sum;
}
