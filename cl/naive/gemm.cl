/*
 * Batched GEMM for the naive path when CLBlast cannot serve the case (e.g.
 * half precision on devices without cl_khr_fp16), shaped for GPUs (CPU
 * devices run cl/naive/gemm_cpu.cl):
 *     C[b] = alpha * A[b] * op(B[b]),  A: M x K, op(B): K x N, C: M x N,
 * all row-major in storage type, accumulated in float.
 *
 * Build options: -DTRANS_B=0|1 (1: B is stored N x K, i.e. C = A B^T),
 *   -DDTYPE_F16 (optional), -DTM=<rows per work-item, 4 or 8>,
 *   -DTN=<columns per work-item, 4 or 8>. A work-group of 16 x 16 work-items
 *   computes a BM x BN = 16 TM x 16 TN tile of C, each work-item TM x TN of
 *   it in registers: rows ty * 4 + {0..3} + 64 * {0 .. TM/4 - 1} and the
 *   same for columns with tx, so that its operands are float4 loads from
 *   local memory. K goes in steps of KS = 16: the A tile (transposed, k
 *   major) and the op(B) tile are staged in local memory, zero past M, N and
 *   K, so the inner loop has no bounds checks.
 * Launch: local (16, 16, 1), global (16 ceil(N / BN), 16 ceil(M / BM), batch).
 */
#include "dtype.clh"

#ifndef TM
#define TM 4
#endif
#ifndef TN
#define TN 4
#endif
#define BM (16 * TM)
#define BN (16 * TN)
#define KS 16 /* K step */

__kernel __attribute__((reqd_work_group_size(16, 16, 1)))
void gemm_batched(const uint M, const uint N, const uint K, const float alpha,
                  __global const store_t *A, const ulong a_off, const uint lda, const ulong a_stride,
                  __global const store_t *B, const ulong b_off, const uint ldb, const ulong b_stride,
                  __global store_t *C, const ulong c_off, const uint ldc, const ulong c_stride)
{
    /* k-major tiles, rows (columns) contiguous: float4 loads of 4
     * consecutive rows (columns) of one k. One float4 of padding per k row
     * spreads the transposing stores (consecutive work-items, consecutive
     * k) over the banks. */
    __local float4 a_tile[KS][BM / 4 + 1];
    __local float4 b_tile[KS][BN / 4 + 1];
    __local float *a_el = (__local float *)a_tile;
    __local float *b_el = (__local float *)b_tile;
    const uint tx = get_local_id(0), ty = get_local_id(1);
    const uint lid = ty * 16 + tx;
    const uint m0 = get_group_id(1) * BM, n0 = get_group_id(0) * BN;
    const size_t batch = get_global_id(2);
    A += a_off + batch * a_stride;
    B += b_off + batch * b_stride;
    C += c_off + batch * c_stride;

    float4 acc[TM][TN / 4];
    for (int i = 0; i < TM; i++)
        for (int j = 0; j < TN / 4; j++)
            acc[i][j] = (float4)(0.0f);

    for (uint k0 = 0; k0 < K; k0 += KS) {
        /* A: BM x KS elements, consecutive work-items along k (A's rows
         * are contiguous in k). */
        for (uint e = lid; e < BM * KS; e += 256) {
            const uint row = e / KS, kk = e % KS;
            const uint gm = m0 + row, gk = k0 + kk;
            a_el[kk * (BM + 4) + row] = (gm < M && gk < K) ? LOAD(A, (size_t)gm * lda + gk) : 0.0f;
        }
#if TRANS_B
        for (uint e = lid; e < BN * KS; e += 256) {
            const uint col = e / KS, kk = e % KS;
            const uint gn = n0 + col, gk = k0 + kk;
            b_el[kk * (BN + 4) + col] = (gn < N && gk < K) ? LOAD(B, (size_t)gn * ldb + gk) : 0.0f;
        }
#else
        /* B stored K x N: consecutive work-items along n. */
        for (uint e = lid; e < BN * KS; e += 256) {
            const uint kk = e / BN, col = e % BN;
            const uint gn = n0 + col, gk = k0 + kk;
            b_el[kk * (BN + 4) + col] = (gn < N && gk < K) ? LOAD(B, (size_t)gk * ldb + gn) : 0.0f;
        }
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
        for (int kk = 0; kk < KS; kk++) {
            float4 a[TM / 4], b[TN / 4];
#pragma unroll
            for (int i = 0; i < TM / 4; i++)
                a[i] = a_tile[kk][ty + 16 * i];
#pragma unroll
            for (int j = 0; j < TN / 4; j++)
                b[j] = b_tile[kk][tx + 16 * j];
#pragma unroll
            for (int i = 0; i < TM / 4; i++) {
                const float ar[4] = { a[i].x, a[i].y, a[i].z, a[i].w };
#pragma unroll
                for (int r = 0; r < 4; r++)
#pragma unroll
                    for (int j = 0; j < TN / 4; j++)
                        acc[4 * i + r][j] = fma((float4)(ar[r]), b[j], acc[4 * i + r][j]);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#pragma unroll
    for (int i = 0; i < TM; i++) {
        const uint gm = m0 + 64 * (i / 4) + 4 * ty + i % 4;
        if (gm >= M)
            continue;
        __global store_t *crow = C + (size_t)gm * ldc;
#pragma unroll
        for (int j = 0; j < TN / 4; j++) {
            const uint gn = n0 + 64 * j + 4 * tx;
            const float4 x = acc[i][j] * alpha;
            if (gn < N)
                STORE(x.x, crow, gn);
            if (gn + 1 < N)
                STORE(x.y, crow, gn + 1);
            if (gn + 2 < N)
                STORE(x.z, crow, gn + 2);
            if (gn + 3 < N)
                STORE(x.w, crow, gn + 3);
        }
    }
}
