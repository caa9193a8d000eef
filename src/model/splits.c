/* SPDX-License-Identifier: MIT */
#include "model/splits.h"

static size_t pow2_floor(size_t x)
{
    size_t r = 1;
    while (2 * r <= x)
        r *= 2;
    return r;
}

/* A GPU whose groups already give every compute unit 1024 work-items is
 * full: a split then only adds the combine (fp16 prefill at N = 1024 on the
 * H200 lost 45% to 2 of them). Below that, about 8 groups per compute unit,
 * with chunks of about 2048 keys on long sequences -- what the H200's
 * decode sweep (docs/PERFORMANCE.md) ran fastest: 16 chunks for 64 groups
 * at 4096 and 16384 keys, 32 at 65536, 64 for 8 groups at 131072, 8 for
 * 128 groups of a chunked prefill. */
size_t splits_by_fill(int is_cpu, size_t compute_units, size_t groups, size_t local,
                      size_t kv_len)
{
    const size_t cus = compute_units ? compute_units : 1;
    if (groups == 0)
        return 1;
    if (is_cpu) {
        const size_t target = 4 * cus;
        return groups >= target ? 1 : (target + groups - 1) / groups;
    }
    if (groups * local >= 1024 * cus)
        return 1;
    const size_t fill = pow2_floor((8 * cus + groups - 1) / groups);
    const size_t by_length = pow2_floor(kv_len >= 2048 ? kv_len / 2048 : 1);
    const size_t cap = by_length > 16 ? by_length : 16;
    const size_t splits = fill < cap ? fill : cap;
    return splits > by_length ? splits : by_length;
}

/* One wave that leaves a few slots idle beats a second, mostly empty one.
 * Groups that take their row tile's chunks in turn even out their own
 * ends, so groups past one wave only add their fixed part (and, past the
 * kernel's own merge, cl/fused/combine.cl's launch): at B = 8 Nk = 65536 on an
 * H200 (H = 32, Hkv = 8, d = 128, tests/perf/time_fused with the split
 * forced), 16 splits in one wave ran 0.4903 ms, the 33 of two waves 0.5158. */
size_t splits_fitted(size_t slots, size_t groups, size_t blocks, size_t fixed, int takes_chunks)
{
    if (groups == 0 || slots == 0)
        return 1;
    size_t best = 1, best_cost = (size_t)-1;
    for (size_t s = 1; s <= FUSED_SPLITS_MAX && s <= blocks; s++) {
        const size_t waves = (groups * s + slots - 1) / slots;
        const size_t cost = waves * ((blocks + s - 1) / s + fixed);
        if (cost < best_cost) {
            best = s;
            best_cost = cost;
        }
    }
    if (takes_chunks && groups < slots && best > slots / groups)
        best = slots / groups;
    return best;
}
