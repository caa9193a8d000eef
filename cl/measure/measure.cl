/* SPDX-License-Identifier: MIT */
/*
 * Micro-benchmarks behind `clattn devices --measure` (src/measure.c).
 *
 * Options:
 *   -DFMA_TYPE=T      the FMA chains' type: float (GPUs), floatN (CPUs, at the
 *                     native vector width, since a work-item's inner loop is
 *                     not vectorised across work-items), half2, halfN;
 *                     default float
 *   -DMEASURE_FP16=1  enables cl_khr_fp16 (FMA_TYPE is a half vector)
 *
 * Memory kernels use grid-stride loops on GPUs (neighbouring work-items
 * touch neighbouring addresses: coalesced) and a contiguous run per
 * work-item on CPUs (each core streams). Every kernel
 * takes a repeat count so one launch lasts long enough to time, and writes a
 * value that depends on all it computed, so no compiler can drop the work.
 */
#ifdef MEASURE_FP16
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#endif
#ifndef FMA_TYPE
#define FMA_TYPE float
#endif
typedef FMA_TYPE fma_t;
#ifdef MEASURE_FP16
#define FMA_SPLAT(x) ((fma_t)((half)(x)))
/* NVIDIA declares no fma() for half; a multiply-add contracts to one. */
#define FMA(x, a, b) ((x) * (a) + (b))
#else
#define FMA_SPLAT(x) ((fma_t)(x))
#define FMA(x, a, b) fma(x, a, b)
#endif

/* Launch latency: does nothing. */
__kernel void measure_empty(__global float *unused)
{
}

/* Device-memory bandwidth: copies the n float4 of src to dst, `passes`
 * times; each work-item copies `count` elements. */
__kernel void measure_copy(__global const float4 *src, __global float4 *dst, uint n,
                           uint item_stride, uint step, uint count, uint passes)
{
    const uint base = (uint)get_global_id(0) * item_stride;
    for (uint p = 0; p < passes; p++) {
        for (uint k = 0; k < count; k++) {
            const uint i = base + k * step;
            if (i < n)
                dst[i] = src[i];
        }
    }
}

/* Working-set sweep on GPUs: `passes` times over the n float4 of the
 * footprint, in the same grid-stride order every pass. Repeating one order
 * matters: a cache that does not evict in LRU order still loses a cyclic
 * walk through more than its size, so the bandwidth falls off a cliff at the
 * capacity; a walk that shifts between passes re-reads recent lines and
 * blurs the cliff over several times the capacity. */
__kernel void measure_read(__global const float4 *src, __global float4 *out, uint n,
                           uint passes)
{
    const uint stride = (uint)get_global_size(0);
    float4 acc0 = (float4)(0.0f), acc1 = (float4)(0.0f);
    for (uint p = 0; p < passes; p++) {
        uint i = (uint)get_global_id(0);
        /* Two independent loads per iteration keep more in flight. */
        for (; i + stride < n; i += 2 * stride) {
            acc0 += src[i];
            acc1 += src[i + stride];
        }
        if (i < n)
            acc0 += src[i];
    }
    out[get_global_id(0)] = acc0 + acc1;
}

/* The working-set sweep on CPUs: work-item t reads `loads` consecutive
 * float16 (64-byte lines) from (t * item_stride + first) mod n on, wrapping
 * at n; the host sets item_stride = loads, so one launch reads one unbroken
 * stretch. A plain inner loop over wide vectors lets a core stream at its
 * cache's rate rather than at the rate of per-load index arithmetic. */
__kernel void measure_read_runs(__global const float16 *src, __global float16 *out, uint n,
                                uint item_stride, uint loads, uint first)
{
    uint i = (uint)(((ulong)get_global_id(0) * item_stride + first) % n);
    float16 acc0 = (float16)(0.0f), acc1 = (float16)(0.0f);
    uint left = loads;
    while (left > 0) {
        const uint run = min(left, n - i);
        __global const float16 *p = src + i;
        uint k = 0;
        for (; k + 2 <= run; k += 2) {
            acc0 += p[k];
            acc1 += p[k + 1];
        }
        if (k < run)
            acc0 += p[k];
        left -= run;
        i = 0;
    }
    out[get_global_id(0)] = acc0 + acc1;
}

/* Arithmetic rate: 8 independent FMA chains per work-item, 4 steps per
 * iteration: 32 FMAs (64 FLOP per lane) per iteration. With a = b = 0.5 every
 * chain converges to 1, so no value overflows or goes subnormal. */
__kernel void measure_fma(__global fma_t *out, uint iters, float a_in, float b_in)
{
    const fma_t a = FMA_SPLAT(a_in), b = FMA_SPLAT(b_in);
    const float seed = (float)(get_global_id(0) & 255) * (1.0f / 256.0f);
    fma_t x0 = FMA_SPLAT(seed), x1 = FMA_SPLAT(seed + 0.125f);
    fma_t x2 = FMA_SPLAT(seed + 0.25f), x3 = FMA_SPLAT(seed + 0.375f);
    fma_t x4 = FMA_SPLAT(seed + 0.5f), x5 = FMA_SPLAT(seed + 0.625f);
    fma_t x6 = FMA_SPLAT(seed + 0.75f), x7 = FMA_SPLAT(seed + 0.875f);
    for (uint it = 0; it < iters; it++) {
        for (int s = 0; s < 4; s++) {
            x0 = FMA(x0, a, b);
            x1 = FMA(x1, a, b);
            x2 = FMA(x2, a, b);
            x3 = FMA(x3, a, b);
            x4 = FMA(x4, a, b);
            x5 = FMA(x5, a, b);
            x6 = FMA(x6, a, b);
            x7 = FMA(x7, a, b);
        }
    }
    out[get_global_id(0)] = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
}
