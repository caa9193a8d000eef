/* SPDX-License-Identifier: MIT */
/*
 * Fused attention on Hopper with warpgroup MMA (issue 13): fp16 in and out,
 * d = 128, no mask or a causal mask (top-left or bottom-right, a kernel
 * argument), Nq a multiple of BM and Nk a multiple of BN. NWG consumer
 * warpgroups (128 work-items each) own 64 query rows apiece and share every
 * K/V tile; the work-group walks the keys in blocks of BN:
 *
 *   S = Q K^T  8 x wgmma m64nBNk16, Q and K from shared memory (K-major);
 *   online softmax on S's fp32 accumulator fragments (base 2);
 *   O += P V   BN/16 x wgmma m64n128k16, P from registers (S's fragment
 *              repacked to f16 is wgmma's A fragment), V from shared memory
 *              (MN-major, the transpose bit).
 *
 * Compile-time variants (cl/meson.build builds one PTX per set, the
 * harness tests/perf/wgmma_fused times them side by side):
 *   NWG     consumer warpgroups per work-group, 1..3 (BM = 64 NWG rows)
 *   BN      keys per block, 64 or 128
 *   STAGES  K/V ring depth: 1 = load, wait, compute (the first version);
 *           >= 2: block j + STAGES - 1 is in flight while block j computes
 *   OVERLAP 1: FA3's intra-warpgroup pipelining: S_{j+1} = Q K_{j+1}^T is
 *           issued (async) before block j's softmax and waited for after
 *           O += P_j V_j is issued, so the softmax runs while the tensor
 *           cores work. Needs STAGES >= 4 (blocks j-1 .. j+2 live at once).
 *           ptxas (CUDA 12/13) still reports C7514 (wgmmas serialized) for
 *           it; 2: the same, but O += P_j V_j is waited for at once
 *           (wait_group 0), so only the softmax overlaps S_{j+1}: ptxas-clean.
 *   LOADMAP 0: 16 consecutive work-items copy one 256-byte row (their
 *           16-byte shared stores are 1024 B apart: one bank group, 4-way
 *           serialized); 1: 8 consecutive work-items take 8 rows of one
 *           core matrix (128 contiguous shared bytes, conflict-free) and
 *           work-items l, l+8, l+16, l+24 four adjacent 16-byte chunks of a
 *           row (64 contiguous global bytes: whole 32-byte sectors).
 *           2: Q and K in the 128-byte swizzled layout (below), V as in 1;
 *           3: Q, K and V swizzled.
 *   PRODUCER 0: every work-item loads and computes, a CTA barrier per block;
 *           1: warp specialization: one more warpgroup (the last) only
 *           loads, filling the STAGES ring; a "full" mbarrier per stage
 *           (cp.async.mbarrier.arrive.noinc) and an "empty" one (the
 *           consumers' arrivals), no CTA barrier in the loop; OVERLAP 0 or
 *           2 (any STAGES >= 2: the producer waits for a stage to empty).
 *           2: + setmaxnreg: producer 40 registers, consumers 232 (the PTX
 *           has .maxnreg 168); 3: + ping-pong: the two consumer warpgroups
 *           take turns issuing their S GEMM (named barriers 1 and 2), so
 *           one's softmax runs under the other's GEMMs.
 *           OVERLAP 3 (PRODUCER 1, 2): O += P_j V_j stays in flight until
 *           S_{j+1} has been issued behind it; one wait_group 0 for both.
 *   RESCALE 1: O is rescaled only when a row max of the warp changed (a
 *           vote per block); 0: always (64 multiplies per work-item).
 *
 * Shared-memory layout of an R x 128 tile (Q: R = BM, K and V: R = BN): no
 * swizzle, 8x8 core matrices of 128 contiguous bytes; element (r, c) sits at
 *   (c / 8) * 16 R + (r / 8) * 128 + (r % 8) * 16 + (c % 8) * 2.
 * For Q and K (K = the head dimension c) the leading byte offset (adjacent
 * in K) is 16 R, the stride byte offset (adjacent in M/N) 128, k-step s
 * starts at byte 32 R s; warpgroup g's Q rows start at byte 1024 g. For V as
 * B of P V (K = the key r, N = c): leading 128, stride 16 BN (measured on
 * the H200: the documented reading), k-step t starts at byte 256 t.
 *
 * 128-byte swizzled layout (LOADMAP 2: Q, K; 3: also V): the tile is two
 * column halves (c < 64, c >= 64) of R rows of 128 bytes, 1024-byte atoms
 * of 8 rows in which the 16-byte chunk index is XORed with the row:
 *   (c / 64) * 128 R + (r / 8) * 1024 + (r % 8) * 128
 *     + (((c % 64) / 8) ^ (r % 8)) * 16 + (c % 8) * 2.
 * Q and K (K-major): SBO 1024 (8-row groups), LBO unused; k-step s starts
 * at (s / 4) * 128 R + (s % 4) * 32; warpgroup g's Q rows at byte 8192 g.
 * V (MN-major, the same store layout): SBO 1024 (8 keys), LBO 128 BN (the
 * next 64 columns of d), k-step t at byte 2048 t. The shared array is
 * 1024-byte aligned and every tile a multiple of 1024 bytes.
 *
 * Q, K, V, O: [B*H][N][128] halves, passed as uint pointers (the driver wants
 * `.ptr .global .align 4` parameters). Launch: global (Nq/BM * THREADS, B*H),
 * local (THREADS, 1), THREADS = 128 NWG (+ 128 with a producer). causal: 0 none, 1 top-left (key j visible to query i
 * iff j <= i), 2 bottom-right (iff j <= i + Nk - Nq); a query that sees no
 * key outputs zeros. Under a mask the tiles run heaviest first and the key
 * blocks past the tile's last visible key are skipped.
 */
#include "nv_ptx.clh"
#include "nv_wgmma.clh"

#ifndef NWG
#define NWG 1
#endif
#ifndef BN
#define BN 64
#endif
#ifndef STAGES
#define STAGES 1
#endif
#ifndef OVERLAP
#define OVERLAP 0
#endif
#ifndef LOADMAP
#define LOADMAP 1
#endif
#if BN != 64 && BN != 128
#error "BN must be 64 or 128"
#endif
#ifndef PRODUCER
#define PRODUCER 0
#endif
#ifndef RESCALE
#define RESCALE 0
#endif
#if OVERLAP && STAGES < 4 && !PRODUCER
#error "OVERLAP needs STAGES >= 4"
#endif

#if PRODUCER && (OVERLAP == 1 || STAGES < 2)
#error "PRODUCER needs OVERLAP 0, 2 or 3 and STAGES >= 2"
#endif
#if OVERLAP == 3 && (!PRODUCER || PRODUCER >= 3)
#error "OVERLAP 3 needs PRODUCER 1 or 2"
#endif
#if PRODUCER >= 3 && OVERLAP
#error "PRODUCER 3 (ping-pong) needs OVERLAP 0"
#endif
#if PRODUCER >= 3 && NWG != 2
#error "PRODUCER 3 (ping-pong) needs NWG 2"
#endif

#define D 128
#define BM (64 * NWG)
#if PRODUCER
#define THREADS (128 * (NWG + 1)) /* + the producer warpgroup, the last */
#define LOADERS 128
#else
#define THREADS (128 * NWG)
#define LOADERS THREADS
#endif
#define Q_BYTES (BM * D * 2)
#define KV_BYTES (BN * D * 2)
#define STAGE_BYTES (2 * KV_BYTES) /* K then V */
#define RING_BYTES (Q_BYTES + (STAGES) * STAGE_BYTES)
#if PRODUCER
#define SMEM_BYTES (RING_BYTES + 16 * (STAGES)) /* + the full and empty mbarriers */
#else
#define SMEM_BYTES RING_BYTES
#endif

#define STR_(x) #x
#define STR(x) STR_(x)
#define CP_ASYNC_WAIT(N) asm volatile("cp.async.wait_group " STR(N) ";\n" ::: "memory")

/* Rows [row0, row0 + R) of a [N][128] half matrix into the tile at shared
 * byte address `base`, by the LOADERS work-items (lid < LOADERS). swz: the
 * 128-byte swizzled layout (LOADMAP >= 2, see the header), else the
 * no-swizzle core-matrix layout. */
static inline __attribute__((always_inline)) void load_tile_l(uint base, uint R, __global const uint *m, uint row0, uint lid, int swz)
{
    for (uint i = lid; i < R * 16; i += LOADERS) {
        uint r, ch, dst;
        if (swz) {
            /* 8 consecutive work-items copy one 128-byte half row: 128
             * contiguous global bytes, one whole 128-byte shared line. */
            const uint l = i % 8, rest = i / 8, h = rest / R;
            r = rest % R;
            ch = 8 * h + l;
            dst = base + h * 128 * R + (r / 8) * 1024 + (r % 8) * 128 + ((l ^ (r % 8)) * 16);
        } else {
#if LOADMAP
            const uint l = i % 32, blk = i / 32;
            r = (blk / 4) * 8 + l % 8;
            ch = (blk % 4) * 4 + l / 8;
#else
            r = i / 16;
            ch = i % 16;
#endif
            dst = base + ch * 16 * R + (r / 8) * 128 + (r % 8) * 16;
        }
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n"
                     :: "r"(dst), "l"(m + (size_t)(row0 + r) * (D / 2) + ch * 4) : "memory");
    }
}
/* Q and K: swizzled from LOADMAP 2 on; V: from LOADMAP 3 on. */
#define SWZ_QK (LOADMAP >= 2)
#define SWZ_V (LOADMAP >= 3)
#define load_tile(base, R, m, row0, lid) load_tile_l(base, R, m, row0, lid, SWZ_QK)
#define load_tile_v(base, R, m, row0, lid) load_tile_l(base, R, m, row0, lid, SWZ_V)

/* 1 when the predicate holds in any lane of the (converged) warp. */
static inline int warp_any(int pred)
{
    uint r;
    asm volatile("{\n.reg .pred p, q;\nsetp.ne.b32 p, %1, 0;\n"
                 "vote.sync.any.pred q, p, 0xffffffff;\nselp.u32 %0, 1, 0, q;\n}\n"
                 : "=r"(r) : "r"(pred));
    return (int)r;
}

#if STAGES == 1 || STAGES == 2
#define CPW_PIPE 0 /* STAGES - 2 */
#elif STAGES == 3
#define CPW_PIPE 1
#else
#define CPW_PIPE 2
#endif
#if STAGES <= 4
#define CPW_OV 0 /* STAGES - 4 */
#define CPW_OV0 1 /* STAGES - 3 */
#else
#define CPW_OV 1
#define CPW_OV0 2
#endif
#if STAGES > 5
#error "STAGES at most 5"
#endif

/* Pins registers in place: an empty asm that "reads and writes" each one,
 * ordered with the other volatile asm (the wgmma waits). Without it LLVM may
 * move ordinary arithmetic on an accumulator across the wait_group that
 * retires it, and ptxas then serializes every wgmma (C7514). */
static inline __attribute__((always_inline)) void reg_fence(float *r, int n)
{
#pragma unroll
    for (int i = 0; i < n; i++)
        asm volatile("" : "+f"(r[i])::"memory");
}

/* s = Q_g K^T for one key block: 8 k-steps, one commit group. */
#if SWZ_QK
/* 128-byte swizzle, K-major: k-step st is 32 bytes into a 1024-byte atom
 * (st % 4), in the tile's second column half from st = 4 on; 8-row groups
 * 1024 bytes apart (SBO), LBO unused (1). */
#define QK_DESC(base, R, st) wg_desc_sw128((base) + ((st) / 4) * 128 * (R) + ((st) % 4) * 32, 16, 1024)
#else
#define QK_DESC(base, R, st) wg_desc((base) + 32 * (R) * (st), 16 * (R), 128)
#endif
static inline __attribute__((always_inline)) void issue_s(float *s, uint q_addr_g, uint k_addr)
{
    wgmma_fence(); /* s was last read by ordinary instructions */
#pragma unroll
    for (uint st = 0; st < D / 16; st++)
#if BN == 64
        WGMMA_SS_M64N64K16(s, QK_DESC(q_addr_g, BM, st), QK_DESC(k_addr, BN, st), st > 0);
#else
        WGMMA_SS_M64N128K16(s, QK_DESC(q_addr_g, BM, st), QK_DESC(k_addr, BN, st), st > 0);
#endif
    wgmma_commit();
}

/* acc_o += P V for one key block: BN/16 k-steps, one commit group. */
#if SWZ_V
/* 128-byte swizzle, MN-major: k-step t (16 keys, two 8-row groups) starts
 * 2048 bytes on; 8-row groups along K 1024 bytes apart (SBO), the two
 * 64-column atoms along N 128 BN bytes apart (LBO). */
#define V_DESC(base, t) wg_desc_sw128((base) + 2048 * (t), 128 * BN, 1024)
#else
#define V_DESC(base, t) wg_desc((base) + 256 * (t), 128, 16 * BN)
#endif
static inline __attribute__((always_inline)) void issue_pv(float *acc_o, const uint *pa, uint v_addr)
{
    wgmma_fence(); /* acc_o and pa were written by ordinary instructions */
#pragma unroll
    for (uint t = 0; t < BN / 16; t++)
        WGMMA_RS_M64N128K16_TB(acc_o, pa[4 * t], pa[4 * t + 1], pa[4 * t + 2], pa[4 * t + 3],
                               V_DESC(v_addr, t), 1);
    wgmma_commit();
}

/* Online softmax of one block's scores s (rows ra = lim0 - off and ra + 8 of
 * this work-item), the rescale of acc_o, and P packed as wgmma A fragments.
 * lim0: the last key row ra sees (row ra + 8 sees lim0 + 8). m, l: running
 * max (base-2 scaled) and this work-item's part of the row sum, [2]. */
static inline __attribute__((always_inline)) void softmax_block(float *s, float *acc_o, float *m, float *l, uint *pa,
                                 float scale_log2, int kb, int lim0, uint lane)
{
    if (kb + BN - 1 > lim0) { /* the block crosses this work-item's diagonal */
        const int c0 = kb + 2 * (int)(lane % 4);
#pragma unroll
        for (int j = 0; j < BN / 8; j++) {
            const int c = c0 + 8 * j;
            if (c > lim0)
                s[4 * j] = -INFINITY;
            if (c + 1 > lim0)
                s[4 * j + 1] = -INFINITY;
            if (c > lim0 + 8)
                s[4 * j + 2] = -INFINITY;
            if (c + 1 > lim0 + 8)
                s[4 * j + 3] = -INFINITY;
        }
    }
    float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
    for (int j = 0; j < BN / 8; j++) {
        mx0 = fmax(mx0, fmax(s[4 * j], s[4 * j + 1]));
        mx1 = fmax(mx1, fmax(s[4 * j + 2], s[4 * j + 3]));
    }
    const float new0 = fmax(m[0], quad_max(mx0) * scale_log2);
    const float new1 = fmax(m[1], quad_max(mx1) * scale_log2);
    /* A row that has seen only masked keys keeps max -inf: subtract 0. */
    const float use0 = new0 == -INFINITY ? 0.0f : new0, use1 = new1 == -INFINITY ? 0.0f : new1;
    const float alpha0 = fast_exp2(m[0] - use0), alpha1 = fast_exp2(m[1] - use1);
    m[0] = new0;
    m[1] = new1;
    float sum0 = 0.0f, sum1 = 0.0f;
#pragma unroll
    for (int j = 0; j < BN / 8; j++) {
        s[4 * j] = fast_exp2(s[4 * j] * scale_log2 - use0);
        s[4 * j + 1] = fast_exp2(s[4 * j + 1] * scale_log2 - use0);
        s[4 * j + 2] = fast_exp2(s[4 * j + 2] * scale_log2 - use1);
        s[4 * j + 3] = fast_exp2(s[4 * j + 3] * scale_log2 - use1);
        sum0 += s[4 * j] + s[4 * j + 1];
        sum1 += s[4 * j + 2] + s[4 * j + 3];
    }
    l[0] = l[0] * alpha0 + sum0;
    l[1] = l[1] * alpha1 + sum1;
#if RESCALE
    /* O's 64 multiplies only when a row max of this warp's 16 rows moved
     * (alpha is exactly ex2(0) = 1 otherwise): one vote per block. */
    if (warp_any(alpha0 != 1.0f || alpha1 != 1.0f))
#endif
    {
#pragma unroll
        for (int j = 0; j < 16; j++) {
            acc_o[4 * j] *= alpha0;
            acc_o[4 * j + 1] *= alpha0;
            acc_o[4 * j + 2] *= alpha1;
            acc_o[4 * j + 3] *= alpha1;
        }
    }
    /* Keys 16t .. 16t+15 are S's columns j = 2t, 2t+1, in the register
     * order the A fragment wants; all packed before the fence of issue_pv. */
#pragma unroll
    for (int i = 0; i < BN / 4; i++)
        pa[i] = pack_half2(s[2 * i], s[2 * i + 1]);
}

#define K_ADDR(b) (kv0 + ((uint)(b) % STAGES) * STAGE_BYTES)
#define V_ADDR(b) (K_ADDR(b) + KV_BYTES)
#define LOAD_BLOCK(b)                                                                              \
    do {                                                                                           \
        load_tile(K_ADDR(b), BN, k, (uint)(b) * BN, lid);                                          \
        load_tile_v(V_ADDR(b), BN, v, (uint)(b) * BN, lid);                                          \
    } while (0)



#if OVERLAP == 2
#define OV_LASTW 0
#else
#define OV_LASTW 1
#endif
#if OVERLAP
/* One step of the pipelined loop (see the kernel); LASTW: the wait_group
 * after O += P_j V_j, 1 in the loop, 0 in the peeled last step (with 1 up to
 * the loop's exit ptxas serializes every wgmma, C7514). */
#define OV_STEP(J, LASTW)                                                                          \
    do {                                                                                           \
        const uint j_ = (J);                                                                       \
        CP_ASYNC_WAIT(CPW_OV);                                                                     \
        fence_proxy_async();                                                                       \
        barrier(CLK_LOCAL_MEM_FENCE); /* block j+1 visible; block j-2's stage free */           \
        if (j_ + STAGES - 2 < nb)                                                                  \
            LOAD_BLOCK(j_ + STAGES - 2);                                                           \
        cp_async_commit();                                                                         \
        issue_s(nxt, q_addr_g, K_ADDR(min(j_ + 1, nb - 1)));                                       \
        WGMMA_WAIT(1);                                                                             \
        reg_fence(acc_o, 64);                                                                      \
        reg_fence(cur, BN / 2);                                                                    \
        softmax_block(cur, acc_o, m, l, pa, scale_log2, (int)(j_ * BN), lim0, lane);               \
        issue_pv(acc_o, pa, V_ADDR(j_));                                                           \
        WGMMA_WAIT(LASTW);                                                                         \
        reg_fence(nxt, BN / 2);                                                                    \
        _Pragma("unroll") for (int i = 0; i < BN / 2; i++) cur[i] = nxt[i];                        \
    } while (0)
#endif

__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1)))
void fused_wgmma(__global const uint *q, __global const uint *k, __global const uint *v,
                 __global uint *o, const uint nq, const uint nk, const float scale_log2,
                 const uint causal)
{
    __local uint4 smem[SMEM_BYTES / 16] __attribute__((aligned(1024))); /* swizzle atoms */
    const uint lid = get_local_id(0);
    const uint g = lid / 128, lane = lid % 32, w = (lid % 128) / 32;
    const uint ntiles = nq / BM;
    const uint tile = causal ? ntiles - 1 - get_group_id(0) : get_group_id(0);
    const uint row0 = tile * BM;
    const size_t head = get_group_id(1);
    q += head * nq * (D / 2);
    o += head * nq * (D / 2);
    k += head * nk * (D / 2);
    v += head * nk * (D / 2);

    const int off = causal == 2 ? (int)nk - (int)nq : 0;
    uint nb = nk / BN;
    if (causal) { /* skip the blocks past the tile's last visible key */
        const int last = (int)(row0 + BM - 1) + off;
        const int kend = last < 0 ? 0 : min((int)nk, (last / BN + 1) * BN);
        nb = (uint)kend / BN;
    }
    const uint ra = row0 + 64 * g + 16 * w + lane / 4;
    const int lim0 = causal ? (int)ra + off : 0x3fffffff;

    const uint q_addr = wg_smem_addr(smem), q_addr_g = q_addr + (SWZ_QK ? 8192 : 1024) * g;
    const uint kv0 = q_addr + Q_BYTES;
    float acc_o[64], m[2] = { -INFINITY, -INFINITY }, l[2] = { 0.0f, 0.0f };
    uint pa[BN / 4];
#pragma unroll
    for (int i = 0; i < 64; i++)
        acc_o[i] = 0.0f;

#if PRODUCER /* OVERLAP 0 or 2 */
    /* Warp specialization: the last warpgroup only loads, into a STAGES-deep
     * ring; FULL(s) completes when block b's K and V (and, for b = 0, Q)
     * have landed in stage s = b % STAGES, EMPTY(s) when every consumer
     * work-item is done reading it. Phase parity: (b / STAGES) & 1. */
    const uint bars = q_addr + RING_BYTES;
#define FULL(st) (bars + 8 * (st))
#define EMPTY(st) (bars + 8 * (STAGES + (st)))
    if (lid == 0)
        for (uint st = 0; st < STAGES; st++) {
            mbar_init(FULL(st), 128);        /* one cp.async arrival per producer work-item */
            mbar_init(EMPTY(st), 128 * NWG); /* one arrival per consumer work-item */
        }
    barrier(CLK_LOCAL_MEM_FENCE); /* the only CTA-wide barrier */
    if (g == NWG) {
#if PRODUCER >= 2
        SETMAXNREG_DEC(40);
#endif
        const uint pl = lid - 128 * NWG;
        load_tile(q_addr, BM, q, row0, pl);
        for (uint b = 0; b < nb; b++) {
            const uint st = b % STAGES;
            if (b >= STAGES) /* stage st's previous block, b - STAGES, is consumed */
                mbar_wait(EMPTY(st), ((b / STAGES) & 1) ^ 1);
            load_tile(K_ADDR(b), BN, k, b * BN, pl);
            load_tile_v(V_ADDR(b), BN, v, b * BN, pl);
            mbar_arrive_cp_async(FULL(st));
        }
        asm volatile("cp.async.wait_all;\n" ::: "memory"); /* nothing in flight at exit */
        return;
    }
#if PRODUCER >= 2
    SETMAXNREG_INC(232);
#endif
#if OVERLAP == 3
    /* O += P_j V_j is issued and left in flight; the next step's S_{j+1} is
     * issued right behind it (the tensor cores see the two back-to-back)
     * and one wait_group 0 retires both before the softmax touches O; the
     * stage of block j is released after that wait. */
    float s[BN / 2];
    for (uint j = 0; j < nb; j++) {
        const uint st = j % STAGES;
        mbar_wait(FULL(st), (j / STAGES) & 1);
        fence_proxy_async();
        issue_s(s, q_addr_g, K_ADDR(j));
        WGMMA_WAIT(0);
        reg_fence(acc_o, 64);
        reg_fence(s, BN / 2);
        if (j > 0)
            mbar_arrive(EMPTY((j - 1) % STAGES));
        softmax_block(s, acc_o, m, l, pa, scale_log2, (int)(j * BN), lim0, lane);
        issue_pv(acc_o, pa, V_ADDR(j));
    }
    WGMMA_WAIT(0);
    reg_fence(acc_o, 64);
#elif OVERLAP
    /* OVERLAP 2 with the ring: at the top of step j, cur holds S_j; S_{j+1}
     * is issued into nxt, block j's softmax runs under it, O += P_j V_j is
     * issued and both are waited for; stage j is then released. The last
     * step issues a spare S on its own (still full) stage, so that every
     * step is the same straight-line code (see OVERLAP's kernel). */
    float cur[BN / 2], nxt[BN / 2];
#define PV_STEP(J)                                                                                 \
    do {                                                                                           \
        const uint j_ = (J), jn_ = min(j_ + 1, nb - 1);                                            \
        mbar_wait(FULL(jn_ % STAGES), (jn_ / STAGES) & 1);                                         \
        fence_proxy_async();                                                                       \
        issue_s(nxt, q_addr_g, K_ADDR(jn_));                                                       \
        reg_fence(acc_o, 64);                                                                      \
        reg_fence(cur, BN / 2);                                                                    \
        softmax_block(cur, acc_o, m, l, pa, scale_log2, (int)(j_ * BN), lim0, lane);               \
        issue_pv(acc_o, pa, V_ADDR(j_));                                                           \
        WGMMA_WAIT(0);                                                                             \
        mbar_arrive(EMPTY(j_ % STAGES));                                                           \
        reg_fence(nxt, BN / 2);                                                                    \
        _Pragma("unroll") for (int i = 0; i < BN / 2; i++) cur[i] = nxt[i];                        \
    } while (0)
    if (nb > 0) {
        mbar_wait(FULL(0), 0);
        fence_proxy_async();
        issue_s(cur, q_addr_g, K_ADDR(0));
        WGMMA_WAIT(0);
        for (uint j = 0; j + 1 < nb; j++)
            PV_STEP(j);
        PV_STEP(nb - 1);
    }
    reg_fence(acc_o, 64);
#else
    float s[BN / 2];
#if PRODUCER >= 3
    /* Ping-pong (FA3's inter-warpgroup schedule): warpgroup g issues its
     * S GEMM only after the other one has issued its own (named barrier
     * 1 + g, 256 work-items: g's 128 wait, the other's 128 arrive), so one
     * warpgroup's softmax runs while the other's GEMMs do. Warpgroup 0
     * goes first: warpgroup 1 arrives once ahead. */
    if (g == 1 && nb > 0)
        NAMED_BAR_ARRIVE(1, 256);
#endif
    for (uint j = 0; j < nb; j++) {
        const uint st = j % STAGES;
        mbar_wait(FULL(st), (j / STAGES) & 1);
        fence_proxy_async(); /* the producer's cp.async writes, for wgmma's async proxy */
#if PRODUCER >= 3
        NAMED_BAR_SYNC(1 + g, 256);
#endif
        issue_s(s, q_addr_g, K_ADDR(j));
#if PRODUCER >= 3
        if (g == 0 || j + 1 < nb) /* warpgroup 0 waits nb times */
            NAMED_BAR_ARRIVE(2 - g, 256);
#endif
        WGMMA_WAIT(0);
        softmax_block(s, acc_o, m, l, pa, scale_log2, (int)(j * BN), lim0, lane);
        issue_pv(acc_o, pa, V_ADDR(j));
        WGMMA_WAIT(0);
        mbar_arrive(EMPTY(st));
    }
#endif
#else
    load_tile(q_addr, BM, q, row0, lid);
    cp_async_commit();
#endif

#if PRODUCER
#elif STAGES == 1
    float s[BN / 2];
    for (uint j = 0; j < nb; j++) {
        LOAD_BLOCK(0);
        cp_async_commit();
        CP_ASYNC_WAIT(0);
        fence_proxy_async();
        barrier(CLK_LOCAL_MEM_FENCE);
        issue_s(s, q_addr_g, K_ADDR(0));
        WGMMA_WAIT(0);
        softmax_block(s, acc_o, m, l, pa, scale_log2, (int)(j * BN), lim0, lane);
        issue_pv(acc_o, pa, V_ADDR(0));
        WGMMA_WAIT(0);
        barrier(CLK_LOCAL_MEM_FENCE); /* K and V are overwritten next */
    }
#elif !OVERLAP
    float s[BN / 2];
    for (uint b = 0; b < STAGES - 1; b++) {
        if (b < nb)
            LOAD_BLOCK(b);
        cp_async_commit(); /* one group per block, empty or not: uniform counts */
    }
    for (uint j = 0; j < nb; j++) {
        CP_ASYNC_WAIT(CPW_PIPE); /* Q and block j have landed (this work-item's part) */
        fence_proxy_async();
        barrier(CLK_LOCAL_MEM_FENCE); /* all parts visible; block j-1's stage is free */
        if (j + STAGES - 1 < nb)
            LOAD_BLOCK(j + STAGES - 1);
        cp_async_commit();
        issue_s(s, q_addr_g, K_ADDR(j));
        WGMMA_WAIT(0);
        softmax_block(s, acc_o, m, l, pa, scale_log2, (int)(j * BN), lim0, lane);
        issue_pv(acc_o, pa, V_ADDR(j));
        WGMMA_WAIT(0);
    }
#else
    /* FA3's intra-warpgroup pipelining. At the top of step j, cur holds S_j
     * (complete) and O += P_{j-1} V_{j-1} may be pending; block j+1 has
     * landed (STAGES >= 4 keeps blocks j-1 .. j+2 in the ring). S_{j+1} is
     * issued into nxt; wait_group 1 then retires P_{j-1} V_{j-1} (groups
     * complete in order), so the softmax of cur runs while the tensor cores
     * compute S_{j+1}; O += P_j V_j is issued and wait_group 1 retires
     * S_{j+1}. The last step computes a spare S on its own block, so that
     * every step is the same straight-line code: ptxas serializes the
     * wgmmas when its register tracking cannot follow a branch. */
    float cur[BN / 2], nxt[BN / 2];
    for (uint b = 0; b < STAGES - 2; b++) {
        if (b < nb)
            LOAD_BLOCK(b);
        cp_async_commit();
    }
    if (nb > 0) { /* the loop's every exit goes through the peeled step */
        CP_ASYNC_WAIT(CPW_OV0); /* Q and block 0 */
        fence_proxy_async();
        barrier(CLK_LOCAL_MEM_FENCE);
        issue_s(cur, q_addr_g, K_ADDR(0));
        WGMMA_WAIT(0);
        for (uint j = 0; j + 1 < nb; j++)
            OV_STEP(j, OV_LASTW);
        OV_STEP(nb - 1, 0); /* peeled: ends with wait_group 0 */
    }
    reg_fence(acc_o, 64);
#endif

    const float s0 = quad_sum(l[0]), s1 = quad_sum(l[1]);
    const float inv0 = s0 > 0.0f ? 1.0f / s0 : 0.0f, inv1 = s1 > 0.0f ? 1.0f / s1 : 0.0f;
#pragma unroll
    for (int j = 0; j < 16; j++) {
        const uint c = 8 * j + 2 * (lane % 4);
        o[((size_t)ra * D + c) / 2] = pack_half2(acc_o[4 * j] * inv0, acc_o[4 * j + 1] * inv0);
        o[((size_t)(ra + 8) * D + c) / 2] =
            pack_half2(acc_o[4 * j + 2] * inv1, acc_o[4 * j + 3] * inv1);
    }
}
