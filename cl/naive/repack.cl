/* SPDX-License-Identifier: MIT */
/*
 * The naive path's copies between a caller's layout and the contiguous
 * [B, heads, N, d] its GEMMs take: Q, K and V in (with -DLENS, the rows of
 * sequence b at or past lens[b] become zeros, so that keys past a
 * sequence's length are never read by a GEMM), O out (-DUNPACK). One
 * work-item per element, grid-stride.
 *
 * Build options: -DUNPACK=0|1, -DLENS=0|1, -DDTYPE_F16 (optional).
 *
 * gather_kv: K or V kept as a cache (cl/include/kv_cache.clh: -DCACHE_TYPE
 * for the tensor's clattn_kv_type, -DPAGED=1 -DPAGE_SIZE=<keys> for pages
 * through the block table, -DKV_SCALE_HEAD=1 for fp8 scales per head)
 * into the same contiguous [B, Hkv, Nk, d] in the dtype: dequantized as
 * the reference dequantizes, the pages gathered, zeros past lens[b].
 */
#include "dtype.clh"
#include "kv_cache.clh"

__kernel void repack(__global const store_t *src, __global store_t *dst, const ulong off,
                     const ulong sb, const ulong sh, const ulong st, const uint heads,
                     const uint n, const uint d, const ulong count,
                     __global const uint *lens)
{
    for (ulong e = get_global_id(0); e < count; e += get_global_size(0)) {
        const uint x = (uint)(e % d), t = (uint)(e / d % n), h = (uint)(e / d / n % heads);
        const uint b = (uint)(e / d / n / heads);
        const ulong at = off + b * sb + h * sh + t * st + x;
#if UNPACK
        STORE(LOAD(src, e), dst, at);
#else
        int live = 1;
#if LENS
        live = t < lens[b];
#endif
        STORE(live ? LOAD(src, at) : 0.0f, dst, e);
#endif
    }
}

#ifdef CACHE_TYPE
__kernel void gather_kv(__global const uchar *src, __global store_t *dst, const ulong off,
                        const ulong sb, const ulong sh, const ulong st, const uint heads,
                        const uint n, const uint d, const ulong count,
                        __global const uint *lens, __global const int *block_table,
                        const uint bt_stride, const uint n_pages, __global const float *scales)
{
    for (ulong e = get_global_id(0); e < count; e += get_global_size(0)) {
        const uint x = (uint)(e % d), t = (uint)(e / d % n), h = (uint)(e / d / n % heads);
        const uint b = (uint)(e / d / n / heads);
        struct kv_head c;
        c.base = src;
        c.page_stride = sb;
        c.st = st;
#if PAGED
        c.head = off + h * sh;
        c.table = block_table + (ulong)b * bt_stride;
#else
        c.head = off + b * sb + h * sh;
        c.table = block_table;
#endif
        c.last_page = n_pages > 0 ? n_pages - 1 : 0;
        c.scale = scales ? scales[KV_SCALE_HEAD ? h : 0] : 1.0f;
        int live = 1;
#if LENS
        live = t < lens[b];
#endif
        STORE(live ? kv_load(&c, CACHE_TYPE, kv_row(&c, t) + x) : 0.0f, dst, e);
    }
}
#endif
