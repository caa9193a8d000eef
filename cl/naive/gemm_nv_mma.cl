/* SPDX-License-Identifier: MIT */
/*
 * Batched GEMM on NVIDIA tensor cores (compute capability >= 8.0), from
 * OpenCL C through inline PTX, for the naive path's two products:
 *     C[b] = alpha * A[b] * op(B[b]),  A: M x K, op(B): K x N, C: M x N,
 * all row-major fp16 in storage, accumulated in fp32; alpha is applied in
 * fp32 before C is rounded to fp16 (to nearest even).
 *
 *   - a work-group of WARPS_M x WARPS_N warps owns a BM x BN tile of C; each
 *     warp owns a (BM / WARPS_M) x (BN / WARPS_N) sub-tile and keeps its
 *     accumulators in registers, fed by mma.sync.m16n8k16;
 *   - K advances in steps of BK. A and B tiles are copied to local memory
 *     with cp.async into a ring of STAGES buffers: the copies of step
 *     k + STAGES - 1 are in flight while step k computes. Rows and columns
 *     past M, N or K are zero-filled by the copy itself (source size below
 *     16 bytes), so the hot loop has no bounds checks;
 *   - local tiles are stored as 16-byte chunks, XOR-swizzled so the 8 rows
 *     one ldmatrix reads land in 8 different bank groups. A and, when
 *     TRANS_B = 1, B (stored N x K) are read with ldmatrix; when TRANS_B = 0
 *     (B stored K x N) with ldmatrix.trans;
 *   - the result goes through local memory (the drained pipeline buffers) so
 *     that C is written in 16-byte chunks along its rows.
 *
 * Build options: -DTRANS_B=0|1, -DBM, -DBN (multiples of 16 x WARPS_M and
 * 16 x WARPS_N), -DBK=32|64, -DWARPS_M, -DWARPS_N, -DSTAGES (2 to 8),
 * -DC_VEC=0|1 (1: ldc and the C batch stride are multiples of 8 elements, so
 * C rows may be written 16 bytes at a time).
 * The host must guarantee 16-byte alignment of every A and B row: lda, ldb,
 * a_off, b_off and both batch strides multiples of 8 elements. The
 * signature is cl/naive/gemm.cl's, with fp16 passed as ushort. Launch: local size
 * NTHREADS; global size ceil(M / BM) * ceil(N / BN) * NTHREADS by batch.
 * Needs the NVIDIA OpenCL compiler (inline PTX); other devices use gemm.cl.
 */
#if !defined(TRANS_B) || !defined(BM) || !defined(BN) || !defined(BK) || !defined(WARPS_M) || \
    !defined(WARPS_N) || !defined(STAGES) || !defined(C_VEC)
#error "build with -DTRANS_B -DBM -DBN -DBK -DWARPS_M -DWARPS_N -DSTAGES -DC_VEC (naive/gemm_nv_mma.c)"
#endif

#define NTHREADS (32 * WARPS_M * WARPS_N)
#define WTM (BM / WARPS_M) /* rows of C per warp */
#define WTN (BN / WARPS_N) /* columns of C per warp */
#define MI (WTM / 16)      /* 16-row mma tiles per warp */
#define NI (WTN / 8)       /* 8-column mma tiles per warp */

#if BK != 32 && BK != 64
#error "BK must be 32 or 64"
#endif
#if WTM % 16 || WTN % 16 || BM % WARPS_M || BN % WARPS_N
#error "each warp's tile must be a multiple of 16 x 16"
#endif
/* cp.async.wait_group takes an immediate: groups left in flight while the
 * oldest step is consumed. */
#if STAGES == 2
#define PIPE_PENDING "0"
#elif STAGES == 3
#define PIPE_PENDING "1"
#elif STAGES == 4
#define PIPE_PENDING "2"
#elif STAGES == 5
#define PIPE_PENDING "3"
#elif STAGES == 6
#define PIPE_PENDING "4"
#elif STAGES == 7
#define PIPE_PENDING "5"
#elif STAGES == 8
#define PIPE_PENDING "6"
#else
#error "STAGES must be 2 to 8"
#endif

/* 16-byte chunks per row of each local tile. */
#define A_CH (BK / 8) /* A tile: BM rows (m) of BK */
#if TRANS_B
#define B_ROWS BN     /* B tile: BN rows (n) of BK */
#define B_CH (BK / 8)
#else
#define B_ROWS BK     /* B tile: BK rows (k) of BN */
#define B_CH (BN / 8)
#endif
#define C_CH (BN / 8) /* C tile: BM rows of BN */

#define A_CHUNKS (BM * A_CH)
#define B_CHUNKS (B_ROWS * B_CH)
#define PIPE_CHUNKS (STAGES * (A_CHUNKS + B_CHUNKS))
#define C_CHUNKS (BM * C_CH)
#define SMEM_CHUNKS (PIPE_CHUNKS > C_CHUNKS ? PIPE_CHUNKS : C_CHUNKS)

/* Chunk `ch` of row `row` in a swizzled tile of `nch` chunks per row. A
 * 128-byte line of local memory holds 8 chunks; ldmatrix reads one chunk
 * from each of 8 consecutive rows, and the XOR spreads those over the 8
 * chunk positions of a line: with 8 or more chunks per row by the row's low
 * 3 bits, with 4 (2 rows per line) by bits 1-2. */
#define SWZ_KEY(row, nch) ((nch) >= 8 ? ((row) & 7u) : (((row) >> 1) & 3u))
#define SWZ(row, ch, nch) ((row) * (nch) + ((ch) ^ SWZ_KEY(row, nch)))

/* ---- PTX primitives (nv_ptx.clh), and the pipeline's wait ---- */
#include "nv_ptx.clh"

/* Waits until at most STAGES - 2 committed groups are still in flight. */
static inline void cp_async_wait_pipeline(void)
{
    asm volatile("cp.async.wait_group " PIPE_PENDING ";\n" ::: "memory");
}
/* ---- end of PTX primitives ---- */

/* The hot helpers must be inlined: acc then lives in registers. */
#define HOT static inline __attribute__((always_inline))

/* Issues the copies of K step `kt` into pipeline slot `slot`. */
HOT void load_stage(__local uint4 *smem, uint slot, uint kt,
                              __global const ushort *A, uint lda,
                              __global const ushort *B, uint ldb,
                              uint M, uint N, uint K, uint m0, uint n0, uint tid)
{
    __local uint4 *a_tile = smem + slot * A_CHUNKS;
    __local uint4 *b_tile = smem + STAGES * A_CHUNKS + slot * B_CHUNKS;
    const uint k0 = kt * BK;
    for (uint i = tid; i < A_CHUNKS; i += NTHREADS) {
        uint row = i / A_CH, ch = i % A_CH;
        uint gm = m0 + row, gk = k0 + ch * 8;
        uint bytes = gm < M && gk < K ? 2 * min(8u, K - gk) : 0u;
        __global const ushort *src = bytes ? A + (size_t)gm * lda + gk : A;
        cp_async16(a_tile + SWZ(row, ch, A_CH), src, bytes);
    }
    for (uint i = tid; i < B_CHUNKS; i += NTHREADS) {
        uint row = i / B_CH, ch = i % B_CH;
#if TRANS_B
        uint gn = n0 + row, gk = k0 + ch * 8;
        uint bytes = gn < N && gk < K ? 2 * min(8u, K - gk) : 0u;
        __global const ushort *src = bytes ? B + (size_t)gn * ldb + gk : B;
#else
        uint gk = k0 + row, gn = n0 + ch * 8;
        uint bytes = gk < K && gn < N ? 2 * min(8u, N - gn) : 0u;
        __global const ushort *src = bytes ? B + (size_t)gk * ldb + gn : B;
#endif
        cp_async16(b_tile + SWZ(row, ch, B_CH), src, bytes);
    }
}

/* One BK step of this warp's sub-tile from pipeline slot `slot`. */
HOT void compute_stage(__local uint4 *smem, uint slot, uint wm, uint wn, uint lane,
                                 float acc[MI][NI][4])
{
    __local uint4 *a_tile = smem + slot * A_CHUNKS;
    __local uint4 *b_tile = smem + STAGES * A_CHUNKS + slot * B_CHUNKS;
    /* ldmatrix x4: lanes 8i..8i+7 address the rows of matrix i. A's
     * matrices are (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15),
     * (rows 8-15, k 8-15): a0..a3 of the m16n8k16 A fragment. */
    const uint a_row = wm * WTM + (lane & 7) + 8 * ((lane >> 3) & 1), a_ch = lane >> 4;
#if TRANS_B
    /* B stored n-major: matrices (n 0-7, k 0-7), (n 0-7, k 8-15),
     * (n 8-15, k 0-7), (n 8-15, k 8-15) = b0, b1 of two 8-column tiles. */
    const uint b_row = wn * WTN + (lane & 7) + 8 * (lane >> 4), b_ch = (lane >> 3) & 1;
#else
    /* B stored k-major, transposed on the way: matrices (k 0-7, n 0-7),
     * (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15). */
    const uint b_row = (lane & 7) + 8 * ((lane >> 3) & 1), b_ch = wn * (WTN / 8) + (lane >> 4);
#endif
#pragma unroll
    for (uint ks = 0; ks < BK / 16; ks++) {
        uint a[MI][4], b[NI][2];
#pragma unroll
        for (uint mi = 0; mi < MI; mi++)
            LDSM_X4(smem_addr(a_tile + SWZ(a_row + 16 * mi, 2 * ks + a_ch, A_CH)), a[mi][0],
                    a[mi][1], a[mi][2], a[mi][3]);
#pragma unroll
        for (uint nj = 0; nj < NI / 2; nj++) {
#if TRANS_B
            LDSM_X4(smem_addr(b_tile + SWZ(b_row + 16 * nj, 2 * ks + b_ch, B_CH)),
                    b[2 * nj][0], b[2 * nj][1], b[2 * nj + 1][0], b[2 * nj + 1][1]);
#else
            LDSM_X4_T(smem_addr(b_tile + SWZ(16 * ks + b_row, 2 * nj + b_ch, B_CH)),
                      b[2 * nj][0], b[2 * nj][1], b[2 * nj + 1][0], b[2 * nj + 1][1]);
#endif
        }
#pragma unroll
        for (uint mi = 0; mi < MI; mi++) {
#pragma unroll
            for (uint nj = 0; nj < NI; nj++)
                MMA_16816(acc[mi][nj], a[mi][0], a[mi][1], a[mi][2], a[mi][3], b[nj][0], b[nj][1]);
        }
    }
}

/* Writes the scaled accumulators to the local C tile (fp16, swizzled like
 * the others), then the whole tile to C in 16-byte chunks where it may. */
HOT void store_tile(__local uint4 *smem, float acc[MI][NI][4], float alpha,
                              __global ushort *C, uint ldc, uint M, uint N, uint m0, uint n0,
                              uint wm, uint wn, uint lane, uint tid)
{
    __local uint *c_words = (__local uint *)smem;
    const uint g = lane >> 2, t = lane & 3;
#pragma unroll
    for (uint mi = 0; mi < MI; mi++) {
#pragma unroll
        for (uint nj = 0; nj < NI; nj++) {
            /* c0, c1: row g, columns 2t and 2t + 1; c2, c3: row g + 8. */
            const uint row = wm * WTM + 16 * mi + g, col = wn * WTN + 8 * nj + 2 * t;
            c_words[SWZ(row, col / 8, C_CH) * 4 + t] =
                pack_half2(alpha * acc[mi][nj][0], alpha * acc[mi][nj][1]);
            c_words[SWZ(row + 8, col / 8, C_CH) * 4 + t] =
                pack_half2(alpha * acc[mi][nj][2], alpha * acc[mi][nj][3]);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = tid; i < C_CHUNKS; i += NTHREADS) {
        const uint row = i / C_CH, ch = i % C_CH;
        const uint gm = m0 + row, gn = n0 + ch * 8;
        if (gm >= M || gn >= N)
            continue;
        __global ushort *dst = C + (size_t)gm * ldc + gn;
#if C_VEC
        if (gn + 8 <= N) {
            *(__global uint4 *)dst = smem[SWZ(row, ch, C_CH)];
            continue;
        }
#endif
        __local const ushort *h = (__local const ushort *)(smem + SWZ(row, ch, C_CH));
        for (uint e = 0; e < 8 && gn + e < N; e++)
            dst[e] = h[e];
    }
}

__kernel __attribute__((reqd_work_group_size(NTHREADS, 1, 1)))
void gemm_batched(const uint M, const uint N, const uint K, const float alpha,
                  __global const ushort *A, const ulong a_off, const uint lda, const ulong a_stride,
                  __global const ushort *B, const ulong b_off, const uint ldb, const ulong b_stride,
                  __global ushort *C, const ulong c_off, const uint ldc, const ulong c_stride)
{
    __local uint4 smem[SMEM_CHUNKS];

    const uint tid = get_local_id(0);
    const uint warp = tid / 32, lane = tid % 32;
    const uint wm = warp / WARPS_N, wn = warp % WARPS_N;
    /* Dimension 0 numbers the tiles of one product, N fastest: groups that
     * run together share the A rows they read. Dimension 1 is the batch. */
    const uint tiles_n = (N + BN - 1) / BN, tile = get_group_id(0);
    const uint m0 = tile / tiles_n * BM, n0 = tile % tiles_n * BN;
    const size_t batch = get_group_id(1);
    A += a_off + batch * a_stride;
    B += b_off + batch * b_stride;
    C += c_off + batch * c_stride;

    float acc[MI][NI][4];
#pragma unroll
    for (uint mi = 0; mi < MI; mi++) {
#pragma unroll
        for (uint nj = 0; nj < NI; nj++)
            acc[mi][nj][0] = acc[mi][nj][1] = acc[mi][nj][2] = acc[mi][nj][3] = 0.0f;
    }

    /* The ring: step kt lives in slot kt % STAGES. Every iteration commits
     * one group, empty or not, so "step kt has landed" is always "at most
     * STAGES - 2 groups pending" after the commit of step kt + STAGES - 2. */
    const uint ktiles = (K + BK - 1) / BK;
#pragma unroll
    for (uint s = 0; s < STAGES - 1; s++) {
        if (s < ktiles)
            load_stage(smem, s, s, A, lda, B, ldb, M, N, K, m0, n0, tid);
        cp_async_commit();
    }
    for (uint kt = 0; kt < ktiles; kt++) {
        cp_async_wait_pipeline();
        /* Step kt is in local memory for every thread, and every warp has
         * finished computing step kt - 1, whose slot is refilled next. */
        barrier(CLK_LOCAL_MEM_FENCE);
        const uint next = kt + STAGES - 1;
        if (next < ktiles)
            load_stage(smem, next % STAGES, next, A, lda, B, ldb, M, N, K, m0, n0, tid);
        cp_async_commit();
        compute_stage(smem, kt % STAGES, wm, wn, lane, acc);
    }
    /* Nothing in flight and every warp done reading before the pipeline
     * buffers are reused for C. */
    cp_async_wait_all();
    barrier(CLK_LOCAL_MEM_FENCE);
    store_tile(smem, acc, alpha, C, ldc, M, N, m0, n0, wm, wn, lane, tid);
}
