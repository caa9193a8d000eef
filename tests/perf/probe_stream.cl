/* SPDX-License-Identifier: MIT */
/*
 * How fast can one warp per work-group stream K and V into local memory on
 * NVIDIA (sm_90), by copy method? The decode kernel's pattern without its
 * math: each group reads its own contiguous run of key rows (256 B each,
 * d = 128 fp16) of K and of V through a ring of STAGES tiles of BN rows,
 * and sums every word of every tile (the check, and a stand-in for the
 * kernel's reads of the tile). tests/perf/probe_stream.c drives it.
 *
 * -DMETHOD=0: cp.async.ca 16 B per lane (what cl/fused/nv_decode.cl does)
 *          1: cp.async.cg 16 B per lane
 *          2: cp.async.bulk, one row (256 B) per copy, into rows padded to
 *             272 B (what ldmatrix needs to read them without conflicts)
 *          3: cp.async.bulk, one copy per tile (BN rows, unpadded)
 *          4: no local memory: each lane loads its share of a tile into
 *             registers (16 B loads), the next tile's loads issued before
 *             this one's words are summed (STAGES unused)
 * -DBN=<rows per tile> -DSTAGES=<2..8>
 * -DINTERLEAVE=n: groups in sets of n read their set's tiles in turn (group
 *  i of a set reads tiles i, i + n, ...), so the set's groups read
 *  neighbouring memory at the same time; 1: each group its own run.
 * The bulk copies complete on one mbarrier per ring slot.
 */
#define CH 16 /* 16-byte chunks per row */
#if METHOD == 2
#define PITCH (CH + 1)
#else
#define PITCH CH
#endif
#define TILE (BN * PITCH)

static inline uint saddr(__local const void *p)
{
    return (uint)(size_t)p;
}

#if METHOD == 4
#define NL (BN * CH / 32) /* 16-byte loads per lane per tile of K or V */
#elif METHOD <= 1
#if METHOD == 0
#define CP_KIND "ca"
#else
#define CP_KIND "cg"
#endif
static inline void copy_tile(__local uint4 *dst, __global const uint4 *src, uint lane, uint bar)
{
#pragma unroll
    for (uint i = 0; i < BN * CH / 32; i++)
        asm volatile("cp.async." CP_KIND ".shared.global [%0], [%1], 16;\n"
                     :: "r"(saddr(dst + i * 32 + lane)), "l"(src + i * 32 + lane) : "memory");
}
#else
static inline void bulk(__local uint4 *dst, __global const uint4 *src, uint bytes, uint bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1], %2, [%3];\n"
                 :: "r"(saddr(dst)), "l"(src), "r"(bytes), "r"(bar) : "memory");
}
static inline void copy_tile(__local uint4 *dst, __global const uint4 *src, uint lane, uint bar)
{
#if METHOD == 2
#pragma unroll
    for (uint r = lane; r < BN; r += 32)
        bulk(dst + r * PITCH, src + r * CH, CH * 16, bar);
#else
    if (lane == 0)
        bulk(dst, src, BN * CH * 16, bar);
#endif
}
#endif

#if METHOD == 4
__kernel __attribute__((reqd_work_group_size(32, 1, 1)))
void probe_stream(__global const uint4 *k, __global const uint4 *v, uint blocks,
                  __global uint *out)
{
    const uint lane = get_local_id(0);
    const uint set = get_group_id(0) / INTERLEAVE, in_set = get_group_id(0) % INTERLEAVE;
    const size_t base = ((size_t)set * blocks * INTERLEAVE + in_set) * BN * CH + lane;
#define AT(b, i) (base + ((size_t)(b) * INTERLEAVE * BN + (i) * 32 / CH) * CH)
#define LOAD(kr, vr, b)                                                                \
    do {                                                                               \
        _Pragma("unroll") for (uint i_ = 0; i_ < NL; i_++) {                           \
            kr[i_] = k[AT(b, i_)];                                                     \
            vr[i_] = v[AT(b, i_)];                                                     \
        }                                                                              \
    } while (0)
#define SUM(kr, vr)                                                                    \
    do {                                                                               \
        _Pragma("unroll") for (uint i_ = 0; i_ < NL; i_++)                             \
            sum += kr[i_].x + kr[i_].y + kr[i_].z + kr[i_].w + vr[i_].x + vr[i_].y +   \
                   vr[i_].z + vr[i_].w;                                                \
    } while (0)
    uint4 ka[NL], va[NL], kb[NL], vb[NL];
    uint sum = 0;
    LOAD(ka, va, 0);
    for (uint b = 0; b < blocks; b += 2) {
        if (b + 1 < blocks)
            LOAD(kb, vb, b + 1);
        SUM(ka, va);
        if (b + 2 < blocks)
            LOAD(ka, va, b + 2);
        if (b + 1 < blocks)
            SUM(kb, vb);
    }
    out[get_global_id(0)] = sum;
}
#else
__kernel __attribute__((reqd_work_group_size(32, 1, 1)))
void probe_stream(__global const uint4 *k, __global const uint4 *v, uint blocks,
                  __global uint *out)
{
    __local uint4 ring[STAGES][2][TILE];
    __local ulong bars[STAGES];
    const uint lane = get_local_id(0);
    const uint set = get_group_id(0) / INTERLEAVE, in_set = get_group_id(0) % INTERLEAVE;
    const size_t base = ((size_t)set * blocks * INTERLEAVE + in_set) * BN * CH;
#define TILE_AT(b) ((size_t)(b) * INTERLEAVE * BN * CH)
    const uint bar0 = saddr(bars);
#if METHOD >= 2
    if (lane == 0) {
        for (uint s = 0; s < STAGES; s++)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" :: "r"(bar0 + 8 * s) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#endif

    /* Block b into slot s (nothing past the end; cp.async still commits). */
#if METHOD <= 1
#define ISSUE(b, s)                                                                    \
    do {                                                                               \
        if ((b) < blocks) {                                                            \
            copy_tile(ring[s][0], k + base + TILE_AT(b), lane, 0);          \
            copy_tile(ring[s][1], v + base + TILE_AT(b), lane, 0);          \
        }                                                                              \
        asm volatile("cp.async.commit_group;\n" ::: "memory");                         \
    } while (0)
#else
#define ISSUE(b, s)                                                                    \
    do {                                                                               \
        if ((b) < blocks) {                                                            \
            const uint bar_ = bar0 + 8 * (s);                                          \
            if (lane == 0)                                                             \
                asm volatile("{\n.reg .b64 st;\n"                                      \
                             "mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}\n" \
                             :: "r"(bar_), "r"(2 * BN * CH * 16) : "memory");          \
            copy_tile(ring[s][0], k + base + TILE_AT(b), lane, bar_);       \
            copy_tile(ring[s][1], v + base + TILE_AT(b), lane, bar_);       \
        }                                                                              \
    } while (0)
#endif

    for (uint s = 0; s < STAGES - 1; s++)
        ISSUE(s, s);
    uint sum = 0, slot = 0;
    for (uint b = 0; b < blocks; b++) {
#if METHOD <= 1
        asm volatile("cp.async.wait_group %0;\n" :: "n"(STAGES - 2) : "memory");
#else
        asm volatile("{\n.reg .pred p;\nWAIT:\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                     "@!p bra WAIT;\n}\n" :: "r"(bar0 + 8 * slot), "r"((b / STAGES) & 1)
                     : "memory");
#endif
        barrier(CLK_LOCAL_MEM_FENCE); /* slot in for all; the previous slot's reads done */
        ISSUE(b + STAGES - 1, slot == 0 ? STAGES - 1 : slot - 1);
#pragma unroll 4
        for (uint i = lane; i < BN * CH; i += 32) {
            const uint r = i / CH, c = i % CH;
            const uint4 a = ring[slot][0][r * PITCH + c], w = ring[slot][1][r * PITCH + c];
            sum += a.x + a.y + a.z + a.w + w.x + w.y + w.z + w.w;
        }
        slot = slot == STAGES - 1 ? 0 : slot + 1;
    }
#if METHOD <= 1
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
#endif
    out[get_global_id(0)] = sum;
}
#endif

/* The reference: every work-item reads float4s grid-stride, many warps per
 * SM, as the read sweep of `clattn devices --measure` does. */
__kernel void probe_read(__global const uint4 *k, __global const uint4 *v, uint n,
                         __global uint *out)
{
    uint sum = 0;
    for (size_t i = get_global_id(0); i < n; i += get_global_size(0)) {
        const uint4 a = k[i], w = v[i];
        sum += a.x + a.y + a.z + a.w + w.x + w.y + w.z + w.w;
    }
    out[get_global_id(0)] = sum;
}
