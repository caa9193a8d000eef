/* SPDX-License-Identifier: MIT */
/*
 * The naive path's copies between a caller's layout and the contiguous
 * [B, heads, N, d] its GEMMs take: Q, K and V in (with -DLENS, the rows of
 * sequence b at or past lens[b] become zeros, so that keys past a
 * sequence's length are never read by a GEMM), O out (-DUNPACK). One
 * work-item per element, grid-stride.
 *
 * Build options: -DUNPACK=0|1, -DLENS=0|1, -DDTYPE_F16 (optional).
 */
#include "dtype.clh"

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
