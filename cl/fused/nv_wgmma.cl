/* SPDX-License-Identifier: MIT */
/*
 * The Hopper fused kernel (sm_90a, fp16): warpgroup MMA for both GEMMs and
 * FlashAttention-3's warp-specialised schedule, on the kernel contract of
 * every fused kernel (cl/include/fused_grid.clh: packed GQA rows, strided layouts,
 * per-sequence lengths, causal both ways, split-KV, the LSE). It is built
 * at build time by cl/ptxgen.py (clang + libclc; NVIDIA's OpenCL compiler
 * cannot emit wgmma), one PTX per head dimension (-DD=64, 128, 256), so the
 * call's variant comes as arguments: `group` (H / Hkv), `flags`
 * (FUSED_F_*) and `mask_dtype` (the mask word of fused_variant.h: an
 * additive mask's storage, FUSED_MASK_ROWS16), after the shared list.
 *
 * Builds per head dimension (cl/meson.build): fp16 or bf16 storage
 * (-DDTYPE_BF16: wgmma's bf16 form), and with -DWG_SCORE=1 the variants
 * that change scores one at a time (softcap, ALiBi, an additive or boolean
 * mask), whose loop over the key blocks is specialised for each alone
 * (an fp32 mask, a 16-bit or boolean one with its rows on 16-byte
 * boundaries), any mix taking the bits at run time. Every build takes
 * the key ranges (causal, windows, lengths), sinks, the split and the LSE:
 * a window costs one comparison a block, a sink one term a row.
 *
 * A work-group is three warpgroups of 128 work-items. The last (the
 * producer, 40 registers after setmaxnreg; 24 at d = 64) copies each BN-key block of K
 * and V into a ring of STAGES stages with cp.async; a "full" mbarrier per stage completes when
 * a block has landed (cp.async.mbarrier.arrive), an "empty" one when both
 * consumers are done with it. The two consumer warpgroups (232; 104)
 * copy the tile's BM = 128 packed Q rows themselves, then own 64 rows each
 * and, per key block:
 *
 *   S = Q K^T   D/16 x wgmma m64nBNk16, Q and K from shared memory;
 *   the online softmax on S's fp32 fragments (base 2), with the masks;
 *   O += P V    BN/16 x wgmma m64nDk16 (two n128 at D = 256), P from
 *               registers (S's fragment packed to f16 is the A fragment),
 *               V from shared memory (MN-major: the transpose bit).
 *
 * This is the fastest schedule of the variants measured with a standalone
 * harness (s2_w2_n128_o0_m3_p2: 4.41 ms at B=8 H=32 N=4096 d=128 on the
 * H200; the version tables are in docs/PERFORMANCE.md), with a leaner
 * producer (3.79 ms).
 *
 * Shared tiles are 128-byte swizzled: an R x D tile is D/64 column blocks
 * of R rows of 128 bytes, 1024-byte atoms of 8 rows in which the 16-byte
 * chunk index is XORed with the row:
 *   (c / 64) 128 R + (r / 8) 1024 + (r % 8) 128 + (((c % 64) / 8) ^ (r % 8)) 16 + (c % 8) 2.
 * Q and K (K-major): SBO 1024, LBO unused; k-step s (16 columns) at
 * (s / 4) 128 R + (s % 4) 32; warpgroup g's rows 8192 g on. V (MN-major):
 * SBO 1024 (8 keys), LBO 128 BN (the next 64 columns), 16-key step t at
 * 2048 t.
 *
 * Keys past the chunk's end and rows past the sequence's are zero-filled
 * (cp.async source size 0), so no read leaves the tensors and a masked
 * score meets a zero V row (0 x garbage could be NaN).
 */
#include "nv_ptx.clh"
#include "nv_wgmma.clh"
#define FUSED_RUNTIME_VARIANT
#include "fused_grid.clh"
#include "fused_finish.clh"
#define CLATTN_NV_TANH 1 /* softcap's tanh: the hardware's tanh.approx (snippet.clh) */
#include "fused_score.clh"
#include "nv_wgmma_geometry.h"

#ifndef WG_SCORE
#define WG_SCORE 0
#endif

#if !defined(D) || (D != 64 && D != 128 && D != 256)
#error "build with -DD=64, 128 or 256"
#endif

/* BN and STAGES per d, and why: nv_wgmma_geometry.h (the host reads them
 * there too). d = 64 runs two work-groups per SM at .maxnreg 80 (0
 * spills), so that one's ring fill and epilogue run under the other's
 * GEMMs (short sequences have few key blocks per tile); d = 128 and 256
 * need the consumers' 232 registers (.maxnreg 168, one group per SM). */
#define BN NV_WGMMA_BN(D)
#define STAGES NV_WGMMA_STAGES(D)
/* setmaxnreg's split of the group's registers (.maxnreg x 384; ptxas
 * allocates each side within its share): 40 + 2 x 232 of 168 x 3, and at
 * d = 64 24 + 2 x 104 of 80 x 3. */
#if D == 64
#define PRODUCER_REGS 24
#define CONSUMER_REGS 104
#else
#define PRODUCER_REGS 40
#define CONSUMER_REGS 232
#endif
#define NWG 2                 /* consumer warpgroups */
#define BM (64 * NWG)
#define THREADS (128 * (NWG + 1))
#if BM != NV_WGMMA_BM || THREADS != NV_WGMMA_THREADS
#error "nv_wgmma_geometry.h disagrees with the kernel's warpgroups"
#endif
#define CHUNKS (D / 8)        /* 16-byte chunks per row */
#define Q_BYTES (BM * D * 2)
#define KV_BYTES (BN * D * 2)
#define STAGE_BYTES (2 * KV_BYTES) /* K then V */
#define RING_BYTES (Q_BYTES + STAGES * STAGE_BYTES)
#define BARS_BYTES 128 /* the full and empty mbarriers (16 STAGES), padded */
/* The score build's mask tiles: each consumer warp's 16 rows of a key
 * block of a 16-bit or boolean mask (16 x 256 bytes at most: BN = 128 fp16
 * keys), which the warp copies itself with cp.async. */
#if WG_SCORE
#define MASK_WARP_BYTES (16 * BN * 2)
#else
#define MASK_WARP_BYTES 0
#endif
#define SMEM_BYTES (RING_BYTES + BARS_BYTES + 4 * NWG * MASK_WARP_BYTES)
#if 16 * STAGES > BARS_BYTES
#error "the mbarriers outgrow their room"
#endif

/* Copies `bytes` (0 or 16; the rest zero-filled) from `src` to the shared
 * byte address `dst`. */
static inline void cp_async16_at(uint dst, __global const uint *src, uint bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(dst), "l"(src), "r"(bytes) : "memory");
}

/* Where chunk `ch` of row `r` of an R-row swizzled tile lands. */
static inline uint swz_offset(uint R, uint r, uint ch)
{
    return (ch / 8) * 128 * R + (r / 8) * 1024 + (r % 8) * 128 + (((ch % 8) ^ (r % 8)) * 16);
}

/* Keys [j0, j0 + BN) of one head's K or V (rows `st` elements apart from
 * `head`) into the tile at `base`, by the producer's 128 work-items; keys
 * from `end` on are zero-filled. Eight consecutive work-items copy one
 * 128-byte row segment (whole sectors from global, one shared line):
 * work-item pl takes chunk pl % 8 of rows pl / 8 + 16 u in every 64-column
 * block. The producer is a single warp per scheduler with nothing to hide
 * its latencies, so this is its whole cost: one 64-bit add per row and an
 * address with an immediate offset per copy (measured on the H200: the
 * first version's per-copy 64-bit multiply and selects made the kernel
 * 13% slower, 6.02 against 5.33 ms at B=8 H=32 N=4096). */
static inline __attribute__((always_inline)) void load_keys(uint base, __global const uint *head,
                                                            ulong st, uint j0, uint end, uint pl)
{
    const uint r0 = pl / 8, l = pl % 8;
    uint dst = base + (r0 / 8) * 1024 + (r0 % 8) * 128 + ((l ^ (r0 % 8)) * 16);
    __global const uint *src = head + (j0 + r0) * st / 2 + l * 4;
    const ulong step = 8 * st; /* 16 rows, in uints */
    /* Rolled: unrolled, the compiler keeps every copy's shared address in
     * a register of its own, more than the producer's 40. */
    if (j0 + BN <= end) {
#pragma unroll 1
        for (uint u = 0; u < BN / 16; u++, src += step, dst += 2048)
#pragma unroll
            for (uint h = 0; h < D / 64; h++)
                cp_async16_at(dst + h * 128 * BN, src + h * 32, 16u);
        return;
    }
#pragma unroll 1
    for (uint u = 0; u < BN / 16; u++, src += step, dst += 2048) {
        const int valid = j0 + r0 + 16 * u < end;
#pragma unroll
        for (uint h = 0; h < D / 64; h++)
            cp_async16_at(dst + h * 128 * BN, valid ? src + h * 32 : head, valid ? 16u : 0u);
    }
}

/* The tile's BM packed query rows from at->r0, by the 256 consumer
 * work-items (c = 0..255: chunk c % 8 of rows c / 8 + 32 u); rows past the
 * sequence's are zero-filled. */
static inline __attribute__((always_inline)) void load_queries(uint base, __global const uint *q,
                                                               const struct fused_place *at,
                                                               ulong off, ulong sb, ulong sh,
                                                               ulong st, uint c)
{
    const uint r0 = c / 8, l = c % 8;
#pragma unroll
    for (uint u = 0; u < BM / 32; u++) {
        const uint r = r0 + 32 * u, row = at->r0 + r;
        const int valid = row < at->n_rows;
        __global const uint *src =
            q + (valid ? fused_row_index(at, row, off, sb, sh, st) / 2 : 0) + l * 4;
#pragma unroll
        for (uint h = 0; h < D / 64; h++)
            cp_async16_at(base + swz_offset(BM, r, 8 * h + l), src + h * 32, valid ? 16u : 0u);
    }
}

/* Shared-memory descriptors (nv_wgmma.clh) of k-step st of Q or K and of
 * 16-key step t of V's 128-column half n. */
#define QK_DESC(base, R, st) \
    wg_desc_sw128((base) + ((st) / 4) * 128 * (R) + ((st) % 4) * 32, 16, 1024)
#define V_DESC(base, t, n) wg_desc_sw128((base) + 256 * BN * (n) + 2048 * (t), 128 * BN, 1024)

/* s = Q_g K^T for one key block: one commit group. */
static inline __attribute__((always_inline)) void issue_s(float *s, uint q_addr, uint k_addr)
{
    wgmma_fence(); /* s was last read by ordinary instructions */
#pragma unroll
    for (uint st = 0; st < D / 16; st++)
#if BN == 64
        WGMMA_SS_M64N64K16(s, QK_DESC(q_addr, BM, st), QK_DESC(k_addr, BN, st), st > 0);
#else
        WGMMA_SS_M64N128K16(s, QK_DESC(q_addr, BM, st), QK_DESC(k_addr, BN, st), st > 0);
#endif
    wgmma_commit();
}

/* acc += P V for one key block: one commit group. */
static inline __attribute__((always_inline)) void issue_pv(float *acc, const uint *pa,
                                                           uint v_addr)
{
    wgmma_fence(); /* acc and pa were written by ordinary instructions */
#pragma unroll
    for (uint t = 0; t < BN / 16; t++) {
#if D == 64
        WGMMA_RS_M64N64K16_TB(acc, pa[4 * t], pa[4 * t + 1], pa[4 * t + 2], pa[4 * t + 3],
                              V_DESC(v_addr, t, 0), 1);
#else
#pragma unroll
        for (uint n = 0; n < D / 128; n++)
            WGMMA_RS_M64N128K16_TB((acc + 64 * n), pa[4 * t], pa[4 * t + 1], pa[4 * t + 2],
                                   pa[4 * t + 3], V_DESC(v_addr, t, n), 1);
#endif
    }
    wgmma_commit();
}

/* The score build's loops, one per kind of per-score work: a constant in
 * each of consume_blocks' copies, so that a loop holds only its own. */
#define WG_PLAIN 0u
#define WG_SOFTCAP 1u   /* softcap alone */
#define WG_ALIBI 2u     /* ALiBi alone */
#define WG_MASK_F32 3u  /* an additive mask alone, by storage; fp32 read from */
#define WG_MASK_F16 4u  /* global memory, the 16-bit ones (rows on 16-byte */
#define WG_MASK_BF16 5u /* boundaries) through the warp's mask tile */
#define WG_MASK_BOOL 6u /* a boolean mask alone (rows on 16-byte boundaries): the tile */
#define WG_GENERIC 7u   /* any mix: the bits read at run time */
#define WG_IS_MASK(lk) ((lk) >= WG_MASK_F32 && (lk) <= WG_MASK_BOOL)
#define WG_IS_TILED(lk) ((lk) >= WG_MASK_F16 && (lk) <= WG_MASK_BOOL) /* through the tile */

/* An fp32 mask's values of one block for this work-item's scores (keys
 * from kb), read from global memory while the block's Q K^T runs: score i
 * of the fragment's bits in mw[i]. Only keys inside a row's range are read:
 * a key past its end reads the row's last key instead (a clamped index,
 * where a predicate a load made the loop spill), and a row that sees no
 * key reads element 0; the range's masking hides those scores. */
static inline __attribute__((always_inline)) void wg_load_mask_f32(
    uint *mw, __global const uint *mask, const struct fused_row_variants *rv, const uint *end,
    uint kb, uint lane)
{
    const uint c0 = kb + 2 * (lane % 4);
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int sees = end[h] > c0;
        const uint last = sees ? end[h] - 1 - c0 : 0u; /* the last key to read, from c0 */
        __global const uint *base = mask + (sees ? rv[h].mask_row + c0 : 0);
#pragma unroll
        for (int j = 0; j < BN / 8; j++) {
            const int i = 4 * j + 2 * h; /* scores i, i + 1: keys c0 + 8 j + {0, 1} */
            mw[i] = base[min((uint)(8 * j), last)];
            mw[i + 1] = base[min((uint)(8 * j + 1), last)];
        }
    }
}

/* The warp's mask tile of one block of a 16-bit or boolean mask (esz
 * bytes a key): row r (0..15, this work-item's rows lane / 4 + 8 h) of
 * `chunks` 16-byte chunks (4 to 16), chunk c at ((c ^ (r % chunks)) 16)
 * (swizzled: the reads of a quad's words across eight rows fall in
 * distinct banks). Each lane quad copies its own two rows, lane q chunks
 * 4 u + q (64 contiguous bytes a row per copy); chunks from n_k on and rows
 * past the sequence's are zero-filled.
 * The rows must be 16-byte aligned (the host says so in mask_dtype). */
static inline __attribute__((always_inline)) void wg_copy_mask_tile(
    uint tile, __global const uint *mask, const struct fused_row_variants *rv, const uint *end,
    uint kb, uint n_k, uint lane, uint esz)
{
    const uint q = lane % 4, r0 = lane / 4, row_bytes = BN * esz, chunks = row_bytes / 16;
    NAMED_BAR_WARP_SYNC(); /* every lane is done with the last block's tile */
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const uint r = r0 + 8 * h;
        __global const uchar *src = (__global const uchar *)mask + rv[h].mask_row * esz + kb * esz;
#pragma unroll
        for (uint u = 0; u < chunks / 4; u++) {
            const uint c = 4 * u + q;
            const int valid = end[h] > 0 && kb + (c + 1) * (16 / esz) <= n_k;
            cp_async16_at(tile + r * row_bytes + ((c ^ (r % chunks)) * 16),
                          valid ? (__global const uint *)(src + 16 * c) : mask, valid ? 16u : 0u);
        }
    }
}

/* Score i's mask value (i = 4 j + 2 h + c: row h, key 8 j + 2 (lane % 4) + c
 * of the block), as an additive float (a boolean mask's hidden key: -inf):
 * from mw (fp32) or the warp's tile. */
static inline float wg_mask_value(const uint *mw, uint tile, int i, uint lane, const uint lk)
{
    if (lk == WG_MASK_F32)
        return as_float(mw[i]);
    const uint q = lane % 4, r = lane / 4 + 8 * ((i / 2) % 2), j = i / 4, c = i % 2;
    if (lk == WG_MASK_BOOL) { /* key 8 j + 2 q + c: chunk j / 2, byte 8 (j % 2) + 2 q + c */
        const uint at = tile + r * BN + (((j / 2) ^ (r % (BN / 16))) * 16) + 8 * (j % 2) + 2 * q + c;
        uint b;
        asm volatile("ld.shared.u8 %0, [%1];\n" : "=r"(b) : "r"(at));
        return b ? 0.0f : -INFINITY;
    }
    /* word q of chunk j: keys 8 j + 2 q, + 1 */
    const uint at = tile + r * BN * 2 + ((j ^ (r % (BN / 8))) * 16) + 4 * q;
    uint w;
    asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(w) : "r"(at));
    const uint x = c ? w >> 16 : w & 0xffffu;
    if (lk == WG_MASK_BF16)
        return as_float(x << 16);
    float f;
    asm("{\n.reg .b16 x;\ncvt.u16.u32 x, %1;\ncvt.f32.f16 %0, x;\n}\n" : "=f"(f) : "r"(x));
    return f;
}

/* The per-score variants of loop kind `lk` on one block's raw scores s
 * (keys from kb), in raw units: softcap leaves tanh(s scale / softcap)
 * (its loop's exponent scale is softcap log2 e), ALiBi adds -slope / scale
 * |distance|, a mask its value / scale (from mw or the warp's tile). Any mix (WG_GENERIC) goes
 * through fused_score.clh's order and arithmetic, as every kernel's. A
 * mask is read only inside a row's range; the range's masking follows. */
static inline __attribute__((always_inline)) void score_variants(
    float *s, const uint *mw, uint tile, const uint *end, uint kb, uint lane, const uint lk,
    uint sf, const struct fused_row_variants *rv, const struct fused_variants *fv)
{
    const uint c0 = kb + 2 * (lane % 4);
    if (lk == WG_SOFTCAP) {
        const float in = fv->scale * (1.0f / fv->softcap);
#pragma unroll
        for (int i = 0; i < BN / 2; i++)
            s[i] = clattn_tanh(s[i] * in);
        return;
    }
    if (WG_IS_MASK(lk)) {
#pragma unroll
        for (int i = 0; i < BN / 2; i++)
            s[i] = fma(wg_mask_value(mw, tile, i, lane, lk), fv->inv_scale, s[i]);
        return;
    }
#pragma unroll
    for (int h = 0; h < 2; h++) {
        /* ALiBi's distance to this work-item's first key of the block: one
         * conversion a row, then a constant less a score. */
        const float dist0 = (float)((int)rv[h].i + rv[h].align_off - (int)c0);
        const float slope = -rv[h].slope * fv->inv_scale;
#pragma unroll
        for (int j = 0; j < BN / 8; j++)
#pragma unroll
            for (int c = 0; c < 2; c++) {
                float *x = &s[4 * j + 2 * h + c];
                if (lk == WG_ALIBI) {
                    *x = fma(slope, fabs(dist0 - (float)(8 * j + c)), *x);
                    continue;
                }
                /* A key past the row's end reads the mask at its last key
                 * (a clamp: a predicate a score spills), one of a row that
                 * sees none at key 0 (its mask_row is 0 past the tensor). */
                const uint col = min(c0 + 8 * j + c, max(end[h], 1u) - 1);
                int hidden = 0;
                const float v = fused_variant_score_at(*x * fv->scale, col,
                                                       dist0 - (float)(8 * j + c), &rv[h], sf,
                                                       fv->softcap, fv->mask, &hidden);
                *x = hidden ? -INFINITY : v * fv->inv_scale;
            }
    }
}

/* The online softmax of one block's scores s (this work-item's rows a and
 * b = a + 8, whose visible keys are [begin[h], end[h]); the block's keys
 * start at kb), O's rescale, and P packed as wgmma A fragments. m: running
 * max of the scaled scores (base 2); l: this work-item's part of the row
 * sums. lk: the loop's kind of per-score work (WG_PLAIN in the plain
 * builds), sf its bits, mw and tile a mask's values (wg_mask_value). */
static inline __attribute__((always_inline)) void softmax_block(
    float *s, float *acc, float *m, float *l, uint *pa, const uint *begin, const uint *end,
    uint kb, uint lane, float scale_log2, const uint lk, uint sf, const uint *mw, uint tile,
    const struct fused_row_variants *rv, const struct fused_variants *fv)
{
    if (lk != WG_PLAIN)
        score_variants(s, mw, tile, end, kb, lane, lk, sf, rv, fv);
    /* The block crosses a row's end or a window's start. */
    if (kb + BN > min(end[0], end[1]) || kb < max(begin[0], begin[1])) {
        const uint c0 = kb + 2 * (lane % 4);
#pragma unroll
        for (int j = 0; j < BN / 8; j++) {
            const uint c = c0 + 8 * j;
            if (c >= end[0] || c < begin[0])
                s[4 * j] = -INFINITY;
            if (c + 1 >= end[0] || c + 1 < begin[0])
                s[4 * j + 1] = -INFINITY;
            if (c >= end[1] || c < begin[1])
                s[4 * j + 2] = -INFINITY;
            if (c + 1 >= end[1] || c + 1 < begin[1])
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
        s[4 * j] = fast_exp2(fma(s[4 * j], scale_log2, -use0));
        s[4 * j + 1] = fast_exp2(fma(s[4 * j + 1], scale_log2, -use0));
        s[4 * j + 2] = fast_exp2(fma(s[4 * j + 2], scale_log2, -use1));
        s[4 * j + 3] = fast_exp2(fma(s[4 * j + 3], scale_log2, -use1));
        sum0 += s[4 * j] + s[4 * j + 1];
        sum1 += s[4 * j + 2] + s[4 * j + 3];
    }
    l[0] = l[0] * alpha0 + sum0;
    l[1] = l[1] * alpha1 + sum1;
#pragma unroll
    for (int j = 0; j < D / 8; j++) {
        acc[4 * j] *= alpha0;
        acc[4 * j + 1] *= alpha0;
        acc[4 * j + 2] *= alpha1;
        acc[4 * j + 3] *= alpha1;
    }
    /* Keys 16t .. 16t+15 are S's column tiles 2t, 2t+1, in the register
     * order of the A fragment. */
#pragma unroll
    for (int i = 0; i < BN / 4; i++)
        pa[i] = pack_t2(s[2 * i], s[2 * i + 1]);
}

/* Finishes row `row` of this work-item (h: 0 for row a, 1 for b), whose
 * visible keys are [begin, end): the workspace with a split, else O = acc
 * / (l + the sink's term) and the LSE. Rows past the sequence's (inside
 * the tensor) get zeros. */
static inline __attribute__((always_inline)) void store_row(
    const float *acc, int h, float m, float l_part, uint row, uint begin, uint end, uint lane,
    const struct fused_place *at, uint flags, __global const float *sinks, __global uint *o,
    __global float *lse,
    __global float *part_o, __global float *part_ml, ulong o_off, ulong o_sb, ulong o_sh,
    ulong o_st, uint batch, uint heads, uint n_q)
{
    const float l = quad_sum(l_part);
    if (row >= n_q * at->group)
        return; /* a row of the last tile past the tensor */
    const int live = row < at->n_rows;
    const uint c0 = 2 * (lane % 4);
    if (flags & FUSED_F_SPLIT) {
        if (!live)
            return; /* cl/fused/combine.cl writes it */
        const ulong w = (ulong)at->split * batch * heads * n_q + fused_row_id(at, row, heads, n_q);
#pragma unroll
        for (int j = 0; j < D / 8; j++) {
            part_o[w * D + 8 * j + c0] = acc[4 * j + 2 * h];
            part_o[w * D + 8 * j + c0 + 1] = acc[4 * j + 2 * h + 1];
        }
        if (lane % 4 == 0) {
            part_ml[2 * w] = m;
            part_ml[2 * w + 1] = l;
        }
        return;
    }
    /* A row sees a key when its range holds one and, where a mask hides
     * keys one by one, one was left visible. */
    const int sees_key = end > begin && (!(flags & FUSED_F_HIDES) || m != -INFINITY);
    const float sink = live && (flags & FUSED_F_SINKS)
                           ? sinks[at->hk * at->group + row % at->group] * 1.44269504088896341f
                           : -INFINITY;
    const float inv = live ? fused_row_scale_sink(l, m, sees_key, sink) : 0.0f;
    __global uint *o_row = o + fused_row_index(at, row, o_off, o_sb, o_sh, o_st) / 2;
#pragma unroll
    for (int j = 0; j < D / 8; j++)
        o_row[(8 * j + c0) / 2] = pack_t2(acc[4 * j + 2 * h] * inv, acc[4 * j + 2 * h + 1] * inv);
    if ((flags & FUSED_F_LSE_OUT) && lane % 4 == 0)
        lse[fused_row_id(at, row, heads, n_q)] =
            live ? fused_row_lse_sink(l, m, sees_key, inv, sink) : -INFINITY;
}

/* The consumer's loop over the key blocks, of kind lk (a constant in each
 * copy; sf: the per-score bits) with the exponent's scale scale_log2. */
#define K_ADDR(b) (kv0 + ((b) % STAGES) * STAGE_BYTES)
#define V_ADDR(b) (K_ADDR(b) + KV_BYTES)
#define FULL(st) (bars + 8 * (st))
#define EMPTY(st) (bars + 8 * (STAGES + (st)))
static inline __attribute__((always_inline)) void consume_blocks(
    float *acc, float *m, float *l, const uint *begin, const uint *end, uint nb, uint kv_begin,
    uint q_addr_g, uint kv0, uint bars, uint tile, uint n_k, uint lane, float scale_log2,
    const uint lk, uint sf, const struct fused_row_variants *rv, const struct fused_variants *fv)
{
    float s[BN / 2];
    uint mw[BN / 2];
    uint pa[BN / 4];
    for (uint j = 0; j < nb; j++) {
        const uint st = j % STAGES;
        const uint kb = kv_begin + j * BN;
        if (WG_IS_TILED(lk)) /* while K lands */
            wg_copy_mask_tile(tile, fv->mask, rv, end, kb, n_k, lane, lk == WG_MASK_BOOL ? 1 : 2);
        mbar_wait(FULL(st), (j / STAGES) & 1);
        fence_proxy_async(); /* the producer's cp.async writes, for wgmma's async proxy */
        issue_s(s, q_addr_g, K_ADDR(j));
        if (lk == WG_MASK_F32) /* under the GEMM */
            wg_load_mask_f32(mw, fv->mask, rv, end, kb, lane);
        WGMMA_WAIT(0);
        if (WG_IS_TILED(lk)) {
            asm volatile("cp.async.wait_all;\n" ::: "memory");
            NAMED_BAR_WARP_SYNC(); /* the quad's copies, for all four lanes */
        }
        softmax_block(s, acc, m, l, pa, begin, end, kb, lane, scale_log2, lk, sf, mw, tile, rv,
                      fv);
        issue_pv(acc, pa, V_ADDR(j));
        WGMMA_WAIT(0);
        mbar_arrive(EMPTY(st));
    }
}

__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1)))
void attention_fused(FUSED_PARAMS(uint), const uint group, const uint flags,
                     const uint mask_dtype)
{
    __local uint4 smem[SMEM_BYTES / 16] __attribute__((aligned(1024))); /* swizzle atoms */
    const uint lid = get_local_id(0);
    const uint g = lid / 128, lane = lid % 32, w = (lid % 128) / 32;
    const struct fused_place at = fused_place_at(n_q, n_k, kv_heads, n_rtiles, splits,
                                                 split_keys, kv_lens, q_lens, BM, BN, win_left,
                                                 win_right, group, flags, mask_spans);
    const uint nb = (at.kv_end - at.kv_begin + BN - 1) / BN;
    const uint q_addr = wg_smem_addr(smem), kv0 = q_addr + Q_BYTES, bars = q_addr + RING_BYTES;
    if (lid == 0)
        for (uint st = 0; st < STAGES; st++) {
            mbar_init(FULL(st), 128);        /* one cp.async arrival per producer work-item */
            mbar_init(EMPTY(st), 128 * NWG); /* one arrival per consumer work-item */
        }
    barrier(CLK_LOCAL_MEM_FENCE); /* the only work-group barrier */

    if (g == NWG) { /* the producer; phase parity of block b: (b / STAGES) & 1 */
        SETMAXNREG_DEC(PRODUCER_REGS);
        const uint pl = lid - 128 * NWG;
        __global const uint *k_head = k + fused_key_index(&at, 0, k_off, k_sb, k_sh, 0) / 2;
        __global const uint *v_head = v + fused_key_index(&at, 0, v_off, v_sb, v_sh, 0) / 2;
        for (uint b = 0; b < nb; b++) {
            const uint st = b % STAGES, j0 = at.kv_begin + b * BN;
            if (b >= STAGES) /* the stage's previous block, b - STAGES, is consumed */
                mbar_wait(EMPTY(st), ((b / STAGES) & 1) ^ 1);
            load_keys(K_ADDR(b), k_head, k_st, j0, at.kv_end, pl);
            load_keys(V_ADDR(b), v_head, v_st, j0, at.kv_end, pl);
            mbar_arrive_cp_async(FULL(st));
        }
        asm volatile("cp.async.wait_all;\n" ::: "memory"); /* nothing in flight at exit */
        return;
    }
    SETMAXNREG_INC(CONSUMER_REGS);
    /* Q: the consumers' own copies, visible to both warpgroups' wgmma
     * after their barrier (named barrier 1: the 256 consumers), while the
     * producer starts on the keys. */
    load_queries(q_addr, q, &at, q_off, q_sb, q_sh, q_st, lid);
    asm volatile("cp.async.wait_all;\n" ::: "memory");
    fence_proxy_async();
    NAMED_BAR_SYNC(1, 128 * NWG);

    /* This work-item's rows a and a + 8 and their visible keys [begin, end)
     * in the chunk. */
    const uint row_a = at.r0 + 64 * g + 16 * w + lane / 4;
    uint begin[2], end[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const uint row = row_a + 8 * h;
        end[h] = row < at.n_rows
            ? min(fused_token_end(row / group, at.kv_len, at.causal_off), at.kv_end) : 0u;
        begin[h] = row < at.n_rows ? fused_token_begin(row / group, at.begin_off) : 0u;
    }
    float acc[D / 2], m[2] = { -INFINITY, -INFINITY }, l[2] = { 0.0f, 0.0f };
#pragma unroll
    for (int i = 0; i < D / 2; i++)
        acc[i] = 0.0f;
    const uint q_addr_g = q_addr + 8192 * g;
    const struct fused_variants fv = FUSED_VARIANTS_OF();
    struct fused_row_variants rv[2];
#if WG_SCORE
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const uint row = row_a + 8 * h;
        rv[h] = fused_row_variants_of(at.b, at.hk * group + row % group, row / group,
                                      at.align_off, heads, flags, alibi, m_off, m_sb, m_sh, m_sr);
        rv[h].mask_dtype = mask_dtype & FUSED_MASK_DTYPE_BITS;
        if (row >= at.n_rows)
            rv[h].mask_row = 0; /* a row past the sequence's reads the mask's first element */
    }
    /* Each variant alone, as models run them, gets a loop of its own with
     * its kind a constant; any mix reads the bits. */
    const uint sf = flags & NV_WGMMA_SCORE_BITS;
    /* The warp's mask tile (MASK_WARP_BYTES, after the mbarriers). */
    const uint tile = bars + BARS_BYTES + (4 * g + w) * MASK_WARP_BYTES;
    const uint mdt = mask_dtype & FUSED_MASK_DTYPE_BITS, rows16 = mask_dtype & FUSED_MASK_ROWS16;
#define CONSUME(lk, sl2)                                                                   \
    consume_blocks(acc, m, l, begin, end, nb, at.kv_begin, q_addr_g, kv0, bars, tile, n_k,    \
                   lane, sl2, lk, sf, rv, &fv)
    if (sf == FUSED_F_SOFTCAP)
        CONSUME(WG_SOFTCAP, softcap * 1.44269504088896341f);
    else if (sf == FUSED_F_ALIBI)
        CONSUME(WG_ALIBI, scale_log2);
    else if (sf == FUSED_F_MASK && mdt == 0)
        CONSUME(WG_MASK_F32, scale_log2);
    else if (sf == FUSED_F_MASK && mdt == 1 && rows16)
        CONSUME(WG_MASK_F16, scale_log2);
    else if (sf == FUSED_F_MASK && mdt == 2 && rows16)
        CONSUME(WG_MASK_BF16, scale_log2);
    else if (sf == FUSED_F_MASK_BOOL && rows16)
        CONSUME(WG_MASK_BOOL, scale_log2);
    else
        CONSUME(WG_GENERIC, scale_log2);
#undef CONSUME
#else
    (void)mask_dtype;
    consume_blocks(acc, m, l, begin, end, nb, at.kv_begin, q_addr_g, kv0, bars, 0u, n_k, lane,
                   scale_log2, WG_PLAIN, 0u, rv, &fv);
#endif
    /* The row of the fused_row_scale / LSE uses the row's own end; rows
     * before the chunk's keys (a split chunk past a causal diagonal) saw
     * none of them and keep m = -inf. */
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const uint row = row_a + 8 * h;
        const uint seen = row < at.n_rows
            ? fused_token_end(row / group, at.kv_len, at.causal_off) : 0u;
        store_row(acc, h, m[h], l[h], row, begin[h], seen, lane, &at, flags, sinks, o, lse,
                  part_o, part_ml, o_off, o_sb, o_sh, o_st, batch, heads, n_q);
    }
}
