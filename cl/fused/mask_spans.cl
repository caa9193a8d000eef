/* SPDX-License-Identifier: MIT */
/*
 * The keys a row tile can see under the caller's mask_mod: for each
 * (sequence, key/value head, row tile of BM packed rows) the first key
 * some row of the tile sees and one past the last, (0, 0) where none does.
 * The fused kernels walk only that span of a tile's keys (fused_grid.clh's
 * fused_place_at), so the blocks a mask hides at either end of it are
 * never read: FlexAttention's block mask, for the spans a mask leaves
 * (windows, prefixes, documents, causal forms); keys hidden inside a span
 * are still evaluated one at a time.
 *
 * Built after the caller's snippet (src/fused/mask_spans.c), with
 * -DGROUP=<H / Hkv> (the packing of fused_grid.clh: packed row r is token
 * r / GROUP of head hk GROUP + r % GROUP), -DBM=<rows per tile> and
 * -DWG=<work-items per group>. One work-group per tile: its work-items take
 * the keys from the front WG at a time until one is seen, then from the
 * back, so that a span costs the hidden keys around it, not the tile's
 * every key.
 */
#if !defined(GROUP) || !defined(BM) || !defined(WG)
#error "build with -DGROUP -DBM -DWG (fused/mask_spans.c)"
#endif

/* Whether some row of the tile [r0, r0 + rows) sees key k. */
static int tile_sees(uint b, uint hk, uint r0, uint rows, uint k)
{
    for (uint r = r0; r < r0 + rows; r++)
        if (clattn_mask_mod(b, hk * GROUP + r % GROUP, r / GROUP, k))
            return 1;
    return 0;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void mask_spans(__global uint *spans, const uint n_q, const uint n_k, const uint kv_heads,
                const uint n_rtiles)
{
    __local uint first, last;
    const uint g = get_group_id(0), lid = get_local_id(0);
    const uint rt = g % n_rtiles, hk = (g / n_rtiles) % kv_heads, b = g / n_rtiles / kv_heads;
    const uint n_rows = n_q * GROUP, r0 = min(rt * BM, n_rows);
    const uint rows = min((uint)BM, n_rows - r0);
    if (lid == 0) {
        first = n_k;
        last = 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint k0 = 0; k0 < n_k; k0 += WG) {
        const uint k = k0 + lid;
        if (k < n_k && tile_sees(b, hk, r0, rows, k))
            atomic_min(&first, k);
        barrier(CLK_LOCAL_MEM_FENCE);
        const uint seen = first;
        barrier(CLK_LOCAL_MEM_FENCE); /* every work-item read it before the next turn's writes */
        if (seen < n_k)
            break;
    }
    const uint lo = first;
    for (uint k1 = n_k; k1 > lo;) {
        const uint k0 = k1 - min(k1 - lo, (uint)WG), k = k0 + lid;
        if (k < k1 && tile_sees(b, hk, r0, rows, k))
            atomic_max(&last, k + 1);
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
