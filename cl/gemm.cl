/*
 * Batched GEMM for the naive path when CLBlast cannot serve the case (e.g.
 * half precision on devices without cl_khr_fp16):
 *     C[b] = alpha * A[b] * op(B[b]),  A: M x K, op(B): K x N, C: M x N,
 * all row-major in storage type, accumulated in float.
 *
 * Build options: -DTRANS_B=0|1 (1: B is stored N x K, i.e. C = A B^T),
 *   -DDTYPE_F16 (optional). The work-group is 16 x 16 work-items computing a
 *   64 x 64 tile of C, 4 x 4 per work-item, with K in steps of 16 staged in
 *   local memory.
 */
#include "dtype.clh"

#define TS 64 /* tile of C per work-group, each dimension */
#define KS 16 /* K step */
#define WPT 4 /* outputs per work-item, each dimension */

__kernel __attribute__((reqd_work_group_size(16, 16, 1)))
void gemm_batched(const uint M, const uint N, const uint K, const float alpha,
                  __global const store_t *A, const ulong a_off, const uint lda, const ulong a_stride,
                  __global const store_t *B, const ulong b_off, const uint ldb, const ulong b_stride,
                  __global store_t *C, const ulong c_off, const uint ldc, const ulong c_stride)
{
    __local float a_tile[KS][TS + 1];
    __local float b_tile[KS][TS + 1];
    const uint tx = get_local_id(0), ty = get_local_id(1);
    const uint lid = ty * 16 + tx;
    const uint m0 = get_group_id(1) * TS, n0 = get_group_id(0) * TS;
    const size_t batch = get_global_id(2);
    A += a_off + batch * a_stride;
    B += b_off + batch * b_stride;
    C += c_off + batch * c_stride;

    float acc[WPT][WPT];
    for (int i = 0; i < WPT; i++)
        for (int j = 0; j < WPT; j++)
            acc[i][j] = 0.0f;

    for (uint k0 = 0; k0 < K; k0 += KS) {
        /* 64 x 16 elements of each operand, 4 per work-item. */
        for (uint e = lid; e < TS * KS; e += 256) {
            uint row = e / KS, kk = e % KS;
            uint gm = m0 + row, gk = k0 + kk;
            a_tile[kk][row] = (gm < M && gk < K) ? LOAD(A, (size_t)gm * lda + gk) : 0.0f;
#if TRANS_B
            uint gn = n0 + row;
            b_tile[kk][row] = (gn < N && gk < K) ? LOAD(B, (size_t)gn * ldb + gk) : 0.0f;
#else
            uint kr = e / TS, col = e % TS;
            uint gk2 = k0 + kr, gn = n0 + col;
            b_tile[kr][col] = (gn < N && gk2 < K) ? LOAD(B, (size_t)gk2 * ldb + gn) : 0.0f;
#endif
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < KS; kk++) {
            float a[WPT], b[WPT];
            for (int i = 0; i < WPT; i++)
                a[i] = a_tile[kk][ty + 16 * i];
            for (int j = 0; j < WPT; j++)
                b[j] = b_tile[kk][tx + 16 * j];
            for (int i = 0; i < WPT; i++)
                for (int j = 0; j < WPT; j++)
                    acc[i][j] = mad(a[i], b[j], acc[i][j]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int i = 0; i < WPT; i++) {
        uint gm = m0 + ty + 16 * i;
        for (int j = 0; j < WPT; j++) {
            uint gn = n0 + tx + 16 * j;
            if (gm < M && gn < N)
                STORE(alpha * acc[i][j], C, (size_t)gm * ldc + gn);
        }
    }
}
