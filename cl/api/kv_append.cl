/* SPDX-License-Identifier: MIT */
/*
 * A decoding step's keys (or values) written into a KV cache at each
 * sequence's current length (clattn_kv_append_cl), quantized exactly as
 * src/core/kv_type.c does on the host: one work-item per row of D values.
 *
 * Build options: -DD=<values per row> -DTYPE=<clattn_kv_type> -DPAGED=0|1
 * -DPAGE_SIZE=<keys per page> -DSCALE_HEAD=0|1, -DDTYPE_F16 or -DDTYPE_BF16
 * (the new rows' storage). Contraction is off: x / scale + 8.5 must round
 * as the host's separate multiply and add do.
 */
#pragma OPENCL FP_CONTRACT OFF
#include "dtype.clh"

#define QBLOCK 32

/* float -> fp8 e4m3, to nearest even, saturated to +-448 (kv_float_to_fp8). */
static inline uchar fp8_of(float x)
{
    if (isnan(x))
        return 0x7f;
    const uchar sign = signbit(x) ? 0x80 : 0;
    const float a = fabs(x);
    if (a >= 448.0f)
        return sign | 0x7e;
    int e2;
    frexp(a, &e2);
    const int unit = e2 - 1 < -6 ? -9 : e2 - 4;
    const float r = ldexp(rint(ldexp(a, -unit)), unit);
    if (r == 0.0f)
        return sign;
    int er;
    frexp(r, &er);
    const int exp = er + 6;
    if (exp <= 0)
        return sign | (uchar)ldexp(r, 9);
    return sign | (uchar)(exp << 3) | (uchar)((int)ldexp(r, 4 - er) - 8);
}

/* Row `dst` (bytes) of TYPE from the D floats read from `src`. */
static inline void store_row(__global const store_t *src, __global uchar *dst, float inv)
{
#if TYPE == 0
    /* The cache's dtype is the new rows': their bytes. */
    __global const uchar *from = (__global const uchar *)src;
    for (int x = 0; x < D * (int)sizeof(store_t); x++)
        dst[x] = from[x];
#elif TYPE == 3
    for (int x = 0; x < D; x++)
        dst[x] = fp8_of(LOAD(src, x) * inv);
#else
    for (int blk = 0; blk < D / QBLOCK; blk++) {
        float v[QBLOCK], amax = 0.0f, mx = 0.0f;
        for (int j = 0; j < QBLOCK; j++) {
            v[j] = LOAD(src, blk * QBLOCK + j);
            if (amax < fabs(v[j])) {
                amax = fabs(v[j]);
                mx = v[j];
            }
        }
#if TYPE == 1
        const float d = amax / 127.0f;
        __global uchar *b = dst + blk * (2 + QBLOCK);
#else
        const float d = mx / -8.0f;
        __global uchar *b = dst + blk * (2 + QBLOCK / 2);
#endif
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        vstore_half_rte(d, 0, (__global half *)b);
#if TYPE == 1
        for (int j = 0; j < QBLOCK; j++)
            b[2 + j] = as_uchar((char)round(v[j] * id));
#else
        for (int j = 0; j < QBLOCK / 2; j++) {
            const char lo = (char)(v[j] * id + 8.5f), hi = (char)(v[j + 16] * id + 8.5f);
            b[2 + j] = (uchar)(min(lo, (char)15) | (min(hi, (char)15) << 4));
        }
#endif
    }
#endif
}

__kernel void kv_append(__global const store_t *src, __global uchar *cache,
                        __global const uint *lens, __global const int *block_table,
                        const uint bt_stride, const uint n_pages, const ulong s_off,
                        const ulong s_sb, const ulong s_sh, const ulong s_st, const ulong c_off,
                        const ulong c_sb, const ulong c_sh, const ulong c_st, const uint kv_heads,
                        const uint new_len, const uint n_k, __global const float *scales,
                        const ulong block_values, const ulong block_bytes)
{
    const uint row = get_global_id(0);
    const uint t = row % new_len, hk = row / new_len % kv_heads, b = row / new_len / kv_heads;
    const uint pos = lens[b] + t;
    if (pos >= n_k || lens[b] > n_k)
        return; /* past the cache: dropped */
#if PAGED
    const uint page = min((uint)block_table[(ulong)b * bt_stride + pos / PAGE_SIZE], n_pages - 1);
    const ulong at = c_off + page * c_sb + hk * c_sh + (ulong)(pos % PAGE_SIZE) * c_st;
#else
    const ulong at = c_off + b * c_sb + hk * c_sh + (ulong)pos * c_st;
#endif
    const float scale = scales ? scales[SCALE_HEAD ? hk : 0] : 1.0f;
    store_row(src + s_off + b * s_sb + hk * s_sh + (ulong)t * s_st,
              cache + at / block_values * block_bytes, 1.0f / scale);
}

/* Each device length advanced by new_len, within the cache. */
__kernel void kv_append_lens(__global uint *lens, const uint new_len, const uint n_k)
{
    const uint b = get_global_id(0);
    lens[b] = min(lens[b] + new_len, n_k);
}
