/* SPDX-License-Identifier: MIT */
/*
 * Reproducible pseudo-random buffer contents, for device-generated benchmark
 * inputs. Build options: -DDTYPE_F16 or -DDTYPE_BF16 (optional).
 */
#include "dtype.clh"

/* A 32-bit integer hash (xorshift-multiply rounds) of index and seed gives
 * uniform values in [-1, 1): no zeros by construction, no state to carry. */
__kernel void fill_random(__global store_t *x, const ulong n, const uint seed)
{
    for (size_t i = get_global_id(0); i < n; i += get_global_size(0)) {
        uint h = (uint)i * 0x9E3779B1u ^ (uint)(i >> 32) * 0x85EBCA77u ^ seed * 0xC2B2AE3Du;
        h ^= h >> 16;
        h *= 0x7FEB352Du;
        h ^= h >> 15;
        h *= 0x846CA68Bu;
        h ^= h >> 16;
        STORE(((float)(h >> 8) + 0.5f) * (2.0f / 16777216.0f) - 1.0f, x, i);
    }
}
