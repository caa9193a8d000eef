/* SPDX-License-Identifier: MIT */
/*
 * The keys a row tile can see under the caller's mask_mod and mask tensor:
 * for each (sequence, key/value head, row tile of BM packed rows) the first
 * key some row of the tile sees and one past the last, (0, 0) where none
 * does. The fused kernels walk only that span of a tile's keys
 * (fused_grid.clh's fused_place_at), so the blocks a mask hides at either
 * end of it are never read: FlexAttention's block mask, for the spans a
 * mask leaves (windows, prefixes, documents, causal forms, padding); keys
 * hidden inside a span are still evaluated one at a time.
 *
 * Built (src/fused/mask_spans.c) after the caller's snippet with
 * -DSPAN_MOD=1, and with -DSPAN_MASK=<0: none, 1: additive (-inf hides;
 * its storage fused_score.clh's -DMASK_DTYPE), 2: boolean (0 hides)>,
 * -DGROUP=<H / Hkv> (the packing of fused_grid.clh: packed row r is token
 * r / GROUP of head hk GROUP + r % GROUP), -DBM=<rows per tile> and
 * -DWG=<work-items per group>. One work-group per tile: its work-items take
 * the keys from the front WG at a time until one is seen, then from the
 * back, so that a span costs the hidden keys around it, not the tile's
 * every key.
 */
#if !defined(GROUP) || !defined(BM) || !defined(WG) || !defined(SPAN_MOD) || !defined(SPAN_MASK)
#error "build with -DGROUP -DBM -DWG -DSPAN_MOD -DSPAN_MASK (fused/mask_spans.c)"
#endif
#include "fused_score.clh" /* the additive mask's loads */

/* The mask tensor and its strides (elements; 0 along a broadcast
 * dimension). */
struct span_mask {
    __global const uint *data;
    ulong off, sb, sh, sr;
};

/* Element (b, h, i, k) of the mask tensor. */
static ulong mask_at(const struct span_mask *m, uint b, uint h, uint i, uint k)
{
    return m->off + b * m->sb + h * m->sh + i * m->sr + k;
}

/* Whether the mask tensor shows key k to query i of head h. */
static int mask_shows(const struct span_mask *m, uint b, uint h, uint i, uint k)
{
#if SPAN_MASK == 2
    return ((__global const uchar *)m->data)[mask_at(m, b, h, i, k)] != 0;
#elif SPAN_MASK == 1
    return fused_mask_value(m->data, mask_at(m, b, h, i, k)) != -INFINITY;
#else
    return 1;
#endif
}

/* Keys a work-item takes per turn: a mask tensor's rows are read 16 keys
 * to a vector load (on PoCL, 2 cores, B 1, H 4, N 2048, d 128 with a
 * causal fp32 mask, one key at a time took about as long as the attention
 * it spared); a mask_mod is a scalar function, one key at a time. */
#if SPAN_MOD || !SPAN_MASK
#define RUN 1
#else
#define RUN 16
#endif

/* The keys among [k, k + n) (n <= RUN) that some row of the tile
 * [r0, r0 + rows) sees, as bits (bit x: key k + x). */
static uint run_sees(const struct span_mask *m, uint b, uint hk, uint r0, uint rows, uint k,
                     uint n)
{
#if RUN == 16
    if (n == 16) {
        int16 seen = (int16)(0);
        for (uint r = r0; r < r0 + rows; r++) {
            const uint h = hk * GROUP + r % GROUP, i = r / GROUP;
            const ulong x = mask_at(m, b, h, i, k);
#if SPAN_MASK == 2
            seen |= convert_int16(vload16(0, (__global const uchar *)m->data + x) != (uchar16)(0));
#else
            seen |= MASK_LOAD_VEC(16, m->data, x) != (float16)(-INFINITY);
#endif
            if (all(seen))
                break;
        }
        int lanes[16];
        vstore16(seen, 0, lanes);
        uint bits = 0;
        for (int x = 0; x < 16; x++)
            bits |= lanes[x] ? 1u << x : 0u;
        return bits;
    }
#endif
    uint bits = 0;
    for (uint x = 0; x < n; x++)
        for (uint r = r0; r < r0 + rows; r++) {
            const uint h = hk * GROUP + r % GROUP, i = r / GROUP;
#if SPAN_MOD
            if (!clattn_mask_mod(b, h, i, k + x))
                continue;
#endif
            if (mask_shows(m, b, h, i, k + x)) {
                bits |= 1u << x;
                break;
            }
        }
    return bits;
}

/* The lowest and the highest set bit of a nonzero word. */
static uint lowest_bit(uint x)
{
    return 31u - clz(x & (0u - x));
}

static uint highest_bit(uint x)
{
    return 31u - clz(x);
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void mask_spans(__global uint *spans, const uint n_q, const uint n_k, const uint kv_heads,
                const uint n_rtiles, __global const uint *mask, const ulong m_off,
                const ulong m_sb, const ulong m_sh, const ulong m_sr)
{
    __local uint first, last;
    const struct span_mask m = { mask, m_off, m_sb, m_sh, m_sr };
    const uint g = get_group_id(0), lid = get_local_id(0);
    const uint rt = g % n_rtiles, hk = (g / n_rtiles) % kv_heads, b = g / n_rtiles / kv_heads;
    const uint n_rows = n_q * GROUP, r0 = min(rt * BM, n_rows);
    const uint rows = min((uint)BM, n_rows - r0);
    if (lid == 0) {
        first = n_k;
        last = 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint k0 = 0; k0 < n_k; k0 += WG * RUN) {
        const uint k = k0 + lid * RUN;
        const uint bits = k < n_k ? run_sees(&m, b, hk, r0, rows, k, min((uint)RUN, n_k - k)) : 0u;
        if (bits)
            atomic_min(&first, k + lowest_bit(bits));
        barrier(CLK_LOCAL_MEM_FENCE);
        const uint seen = first;
        barrier(CLK_LOCAL_MEM_FENCE); /* every work-item read it before the next turn's writes */
        if (seen < n_k)
            break;
    }
    const uint lo = first;
    for (uint k1 = n_k; k1 > lo;) {
        const uint k0 = k1 - min(k1 - lo, (uint)(WG * RUN)), k = k0 + lid * RUN;
        const uint bits = k < k1 ? run_sees(&m, b, hk, r0, rows, k, min((uint)RUN, k1 - k)) : 0u;
        if (bits)
            atomic_max(&last, k + highest_bit(bits) + 1);
        barrier(CLK_LOCAL_MEM_FENCE);
        const uint seen = last;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (seen > 0)
            break;
        k1 = k0;
    }
    if (lid == 0) {
        spans[2 * g] = lo < n_k ? lo : 0u;
        spans[2 * g + 1] = lo < n_k ? last : 0u;
    }
}
