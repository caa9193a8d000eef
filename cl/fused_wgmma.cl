/* SPDX-License-Identifier: MIT */
/*
 * Fused attention on Hopper with warpgroup MMA, first version (issue 13):
 * fp16 in and out, d = 128, no mask, N a multiple of 64. One work-group is
 * one warpgroup (128 work-items) owning 64 query rows of one (batch, head);
 * it walks the keys in blocks of 64:
 *
 *   S = Q K^T  8 x wgmma m64n64k16, Q and K from shared memory (K-major);
 *   online softmax on S's fp32 accumulator fragments (base 2);
 *   O += P V   4 x wgmma m64n128k16, P from registers (S's fragment repacked
 *              to f16 is wgmma's A fragment), V from shared memory (MN-major,
 *              the transpose bit).
 *
 * Tiles are single-buffered and loaded with cp.async; this version is for
 * correctness, the FlashAttention-3 schedule comes after it.
 *
 * Shared-memory layout of a 64 x 128 tile (Q, K and V alike): no swizzle,
 * 8x8 core matrices of 128 contiguous bytes; element (r, c) sits at byte
 *   (c / 8) * 1024 + (r / 8) * 128 + (r % 8) * 16 + (c % 8) * 2.
 * For Q and K (K = the head dimension c): the core matrices adjacent in K are
 * 1024 bytes apart (leading byte offset), those adjacent in M/N 128 (stride
 * byte offset), and k-step s starts at byte 2048 s. For V as B of P V
 * (K = the key r, N = c): adjacent in K 128 bytes, in N 1024, k-step t starts
 * at byte 256 t; which descriptor field holds which of those two for an
 * MN-major operand is an argument (v_lbo, v_sbo) so that the host can try
 * the other reading without a rebuild: both stay inside the tile.
 *
 * Q, K, V, O: [B*H][N][128] halves, passed as uint pointers (the driver wants
 * `.ptr .global .align 4` parameters). Launch: global (N/64 * 128, B*H),
 * local (128, 1).
 */
#include "nv_wgmma.clh"

#define D 128
#define BM 64
#define BN 64
#define THREADS 128
#define TILE_CHUNKS (BM * D * 2 / 16) /* 16-byte chunks of a tile: 1024 */

static inline uint tile_offset(uint r, uint c)
{
    return (c / 8) * 1024 + (r / 8) * 128 + (r % 8) * 16 + (c % 8) * 2;
}

static inline void cp_async16_u32(__local uint4 *tile, uint byte_offset,
                                  __global const uint *src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n"
                 :: "r"(wg_smem_addr(tile) + byte_offset), "l"(src) : "memory");
}

/* Rows [row0, row0 + 64) of a [N][128] half matrix into a tile: chunk i is
 * row i / 16, columns 8 (i % 16) .. +7 (16 work-items read a 256-byte row). */
static inline void load_tile(__local uint4 *tile, __global const uint *m, uint row0, uint lid)
{
    for (uint i = lid; i < TILE_CHUNKS; i += THREADS) {
        uint r = i / 16, c = (i % 16) * 8;
        cp_async16_u32(tile, tile_offset(r, c), m + (size_t)(row0 + r) * (D / 2) + c / 2);
    }
}

static inline void cp_async_commit_wait(void)
{
    asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
}

static inline float quad_max(float x)
{
    float y;
    asm volatile("shfl.sync.bfly.b32 %0, %1, 1, 0x1f, 0xffffffff;\n" : "=f"(y) : "f"(x));
    x = fmax(x, y);
    asm volatile("shfl.sync.bfly.b32 %0, %1, 2, 0x1f, 0xffffffff;\n" : "=f"(y) : "f"(x));
    return fmax(x, y);
}

static inline float quad_sum(float x)
{
    float y;
    asm volatile("shfl.sync.bfly.b32 %0, %1, 1, 0x1f, 0xffffffff;\n" : "=f"(y) : "f"(x));
    x += y;
    asm volatile("shfl.sync.bfly.b32 %0, %1, 2, 0x1f, 0xffffffff;\n" : "=f"(y) : "f"(x));
    return x + y;
}

static inline float fast_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

/* Two floats to a packed half2 (lo in the low 16 bits), round to nearest. */
static inline uint pack_half2(float lo, float hi)
{
    uint r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1)))
void fused_wgmma(__global const uint *q, __global const uint *k, __global const uint *v,
                 __global uint *o, const uint n, const float scale_log2, const uint v_lbo,
                 const uint v_sbo)
{
    __local uint4 q_tile[TILE_CHUNKS], k_tile[TILE_CHUNKS], v_tile[TILE_CHUNKS];
    const uint lid = get_local_id(0);
    const uint row0 = get_group_id(0) * BM;
    const size_t head = (size_t)get_group_id(1) * n * (D / 2); /* in uints */
    q += head;
    k += head;
    v += head;
    o += head;

    load_tile(q_tile, q, row0, lid);
    cp_async_commit_wait();

    const uint q_addr = wg_smem_addr(q_tile), k_addr = wg_smem_addr(k_tile);
    const uint v_addr = wg_smem_addr(v_tile);
    float acc_o[64], s[32];
#pragma unroll
    for (int i = 0; i < 64; i++)
        acc_o[i] = 0.0f;
#pragma unroll
    for (int i = 0; i < 32; i++)
        s[i] = 0.0f;
    /* Rows r0 = 16 w + l/4 and r0 + 8 of the fragment: running max (base-2
     * scaled) and this work-item's part of the row sum. */
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;

    for (uint kb = 0; kb < n; kb += BN) {
        load_tile(k_tile, k, kb, lid);
        load_tile(v_tile, v, kb, lid);
        cp_async_commit_wait();
        fence_proxy_async();
        barrier(CLK_LOCAL_MEM_FENCE);

        wgmma_fence();
#pragma unroll
        for (uint st = 0; st < D / 16; st++)
            WGMMA_SS_M64N64K16(s, wg_desc(q_addr + 2048 * st, 1024, 128),
                               wg_desc(k_addr + 2048 * st, 1024, 128), st > 0);
        wgmma_commit();
        WGMMA_WAIT(0);

        float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            mx0 = fmax(mx0, fmax(s[4 * j], s[4 * j + 1]));
            mx1 = fmax(mx1, fmax(s[4 * j + 2], s[4 * j + 3]));
        }
        const float new0 = fmax(m0, quad_max(mx0) * scale_log2);
        const float new1 = fmax(m1, quad_max(mx1) * scale_log2);
        const float alpha0 = fast_exp2(m0 - new0), alpha1 = fast_exp2(m1 - new1);
        m0 = new0;
        m1 = new1;
        float sum0 = 0.0f, sum1 = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            s[4 * j] = fast_exp2(s[4 * j] * scale_log2 - new0);
            s[4 * j + 1] = fast_exp2(s[4 * j + 1] * scale_log2 - new0);
            s[4 * j + 2] = fast_exp2(s[4 * j + 2] * scale_log2 - new1);
            s[4 * j + 3] = fast_exp2(s[4 * j + 3] * scale_log2 - new1);
            sum0 += s[4 * j] + s[4 * j + 1];
            sum1 += s[4 * j + 2] + s[4 * j + 3];
        }
        l0 = l0 * alpha0 + sum0;
        l1 = l1 * alpha1 + sum1;
#pragma unroll
        for (int j = 0; j < 16; j++) {
            acc_o[4 * j] *= alpha0;
            acc_o[4 * j + 1] *= alpha0;
            acc_o[4 * j + 2] *= alpha1;
            acc_o[4 * j + 3] *= alpha1;
        }

        /* P as wgmma's A fragments: keys 16t .. 16t+15 are S's columns
         * j = 2t, 2t+1, in the register order the A fragment wants. All are
         * packed before the fence, so no ordinary write falls between the
         * wgmmas (ptxas would insert a warpgroup.arrive before each). */
        uint pa[16];
#pragma unroll
        for (int i = 0; i < 16; i++)
            pa[i] = pack_half2(s[2 * i], s[2 * i + 1]);
        wgmma_fence(); /* acc_o and pa were written by ordinary instructions */
#pragma unroll
        for (uint t = 0; t < BN / 16; t++)
            WGMMA_RS_M64N128K16_TB(acc_o, pa[4 * t], pa[4 * t + 1], pa[4 * t + 2], pa[4 * t + 3],
                                   wg_desc(v_addr + 256 * t, v_lbo, v_sbo), 1);
        wgmma_commit();
        WGMMA_WAIT(0);
        barrier(CLK_LOCAL_MEM_FENCE); /* K and V are overwritten next */
    }

    const float inv0 = 1.0f / quad_sum(l0), inv1 = 1.0f / quad_sum(l1);
    const uint w = lid / 32, lane = lid % 32;
    const uint r0 = row0 + 16 * w + lane / 4;
#pragma unroll
    for (int j = 0; j < 16; j++) {
        const uint c = 8 * j + 2 * (lane % 4);
        o[((size_t)r0 * D + c) / 2] = pack_half2(acc_o[4 * j] * inv0, acc_o[4 * j + 1] * inv0);
        o[((size_t)(r0 + 8) * D + c) / 2] =
            pack_half2(acc_o[4 * j + 2] * inv1, acc_o[4 * j + 3] * inv1);
    }
}
