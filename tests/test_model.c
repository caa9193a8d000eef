/*
 * The byte model (include/clattn/model.h) against the seed's numbers and
 * against hand computations written out here, independently of src/model.c:
 * literal products for the byte counts, brute-force loops over every
 * (query, key) pair and every tile for the causal accounting.
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "clattn/clattn.h"
#include "clattn/device.h"
#include "model/memory.h"

#define KiB ((uint64_t)1 << 10)
#define MiB ((uint64_t)1 << 20)
#define GiB ((uint64_t)1 << 30)

static clattn_shape shape_of(size_t b, size_t h, size_t hkv, size_t nq, size_t nk, size_t d,
                             clattn_dtype dtype)
{
    clattn_shape s = { .batch = b, .heads = h, .kv_heads = hkv, .q_len = nq, .kv_len = nk,
                       .head_dim = d, .dtype = dtype };
    return s;
}

/* The seed: B = 8, H = 32, d = 128, fp16. */
static clattn_shape seed_shape(size_t n)
{
    return shape_of(8, 32, 32, n, n, 128, CLATTN_F16);
}

/* The seed's device: 256 MiB cache, 192 GiB, 1000 TFLOP/s over 5 TB/s. */
static clattn_model_device seed_device(void)
{
    clattn_model_device dev;
    clattn_model_default_device(&dev);
    dev.capacity_bytes = 192 * GiB;
    dev.max_alloc_bytes = 192 * GiB;
    dev.cache_bytes = 256 * MiB;
    dev.bandwidth = 5e12;
    dev.peak_flops = 1e15;
    return dev;
}

static clattn_model_problem problem_of(clattn_shape shape, clattn_causal causal, size_t bm,
                                       size_t bn)
{
    clattn_model_problem p;
    clattn_model_default_problem(&p);
    p.shape = shape;
    p.causal = causal;
    p.block_m = bm;
    p.block_n = bn;
    return p;
}

/* ------------------------------------------------------ the seed, Q1 */

static void seed_traffic_per_head(void **state)
{
    (void)state;
    static const struct {
        size_t n;
        uint64_t s, endpoints, naive, fused;
        double ratio;
    } rows[] = {
        { 1024, 2 * MiB, 1 * MiB, 9 * MiB, 1 * MiB, 9 },
        { 4096, 32 * MiB, 4 * MiB, 132 * MiB, 4 * MiB, 33 },
        { 16384, 512 * MiB, 16 * MiB, 2064 * MiB, 16 * MiB, 129 },
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        clattn_shape s = seed_shape(rows[i].n);
        clattn_traffic t;
        assert_int_equal(clattn_model_traffic(&s, &t), CLATTN_OK);
        assert_int_equal(t.head_score_bytes, rows[i].s);
        assert_int_equal(t.head_endpoint_bytes, rows[i].endpoints);
        assert_int_equal(t.head_naive_bytes, rows[i].naive);
        assert_int_equal(t.head_fused_bytes, rows[i].fused);
        assert_true(t.head_ratio == rows[i].ratio);
        /* 1 + N/d */
        assert_true(t.closed_form == 1.0 + (double)rows[i].n / 128.0);
        assert_true(t.closed_form == rows[i].ratio);
    }
}

static void seed_traffic_all_heads(void **state)
{
    (void)state;
    static const struct {
        size_t n;
        uint64_t naive, fused;
    } rows[] = {
        { 1024, 9 * GiB / 4, 256 * MiB }, /* 2.25 GiB */
        { 4096, 33 * GiB, 1 * GiB },
        { 16384, 516 * GiB, 4 * GiB },
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        clattn_shape s = seed_shape(rows[i].n);
        clattn_traffic t;
        assert_int_equal(clattn_model_traffic(&s, &t), CLATTN_OK);
        assert_int_equal(t.naive_bytes, rows[i].naive);
        assert_int_equal(t.fused_bytes, rows[i].fused);
        assert_int_equal(t.score_bytes, 256 * t.head_score_bytes);
        assert_true(t.ratio == t.head_ratio);
    }
}

/* ------------------------------------------------------ the seed, Q2 */

static void seed_fit_limits(void **state)
{
    (void)state;
    clattn_model_device dev = seed_device();
    clattn_shape s = seed_shape(1);
    size_t n;
    double root;

    assert_int_equal(clattn_model_max_len(&s, CLATTN_LIMIT_HEAD_S_IN_CACHE, 0, &dev, &n, &root),
                     CLATTN_OK);
    assert_int_equal(n, 11585);
    assert_int_equal(clattn_model_max_len(&s, CLATTN_LIMIT_SHARED_S_IN_CACHE, 0, &dev, &n,
                                          &root),
                     CLATTN_OK);
    assert_int_equal(n, 724);
    /* 2 * 256 * 2N^2 <= 192 GiB: N^2 <= 201,326,592, whose root 14,188.96 the
     * seed quotes as 14,189; the largest integer that fits is 14,188. */
    assert_int_equal(clattn_model_max_len(&s, CLATTN_LIMIT_SCORES_IN_MEMORY, 0, &dev, &n,
                                          &root),
                     CLATTN_OK);
    assert_int_equal(n, 14188);
    assert_int_equal((long)lround(root), 14189);
    assert_true(14188ull * 14188ull <= 201326592ull && 14189ull * 14189ull > 201326592ull);
}

static void seed_oom_at_16384(void **state)
{
    (void)state;
    clattn_model_device dev = seed_device();
    clattn_shape s = seed_shape(16384);
    clattn_memory_plan plan;
    clattn_fit fit;

    assert_int_equal(clattn_model_memory(&s, CLATTN_PATH_NAIVE, 0, &plan), CLATTN_OK);
    assert_int_equal(plan.largest_bytes, 128 * GiB); /* one S: 128 GiB per tensor */
    assert_string_equal(plan.largest_name, "S");
    assert_int_equal(plan.peak_bytes, 256 * GiB + 4 * GiB); /* S, P, and Q, K, V, O */
    assert_int_equal(clattn_model_fit(&plan, &dev, &fit), CLATTN_OK);
    assert_int_equal(fit, CLATTN_FIT_OVER_CAPACITY);

    assert_int_equal(clattn_model_memory(&s, CLATTN_PATH_FUSED, 0, &plan), CLATTN_OK);
    assert_int_equal(plan.peak_bytes, 4 * GiB);
    assert_int_equal(clattn_model_fit(&plan, &dev, &fit), CLATTN_OK);
    assert_int_equal(fit, CLATTN_FIT_OK);
}

/* The whole naive plan, Q, K, V and O included: 1024 N^2 + 262,144 N bytes. */
static void seed_path_limits(void **state)
{
    (void)state;
    clattn_model_device dev = seed_device();
    clattn_shape s = seed_shape(1);
    uint64_t expect = 20000;
    while (1024 * expect * expect + 262144 * expect > 192 * GiB)
        expect--;
    size_t n;
    assert_int_equal(clattn_model_max_len(&s, CLATTN_LIMIT_NAIVE_FITS, 0, &dev, &n, NULL),
                     CLATTN_OK);
    assert_int_equal(n, expect);
    assert_int_equal(n, 14061);
    assert_int_equal(clattn_model_max_len(&s, CLATTN_LIMIT_FUSED_FITS, 0, &dev, &n, NULL),
                     CLATTN_OK);
    assert_int_equal(n, 192 * GiB / 262144); /* 786,432 */
}

/* ------------------------------------------------------ the seed, Q3 */

static void seed_intensity_and_ridge(void **state)
{
    (void)state;
    clattn_model_device dev = seed_device();
    clattn_model_problem p = problem_of(seed_shape(4096), CLATTN_CAUSAL_NONE, 64, 64);
    clattn_prediction pr;
    assert_int_equal(clattn_model_predict(&p, &dev, &pr), CLATTN_OK);

    /* 4096 * 128 / (2 * 4224) = 62.06..., printed as 62.1 */
    assert_int_equal((long)lround(pr.naive.intensity * 10), 621);
    assert_true(fabs(pr.naive.intensity - 4096.0 * 128 / (2 * 4224)) < 1e-9);
    assert_true(pr.naive_intensity_limit == 64);
    assert_true(pr.fused.intensity == 4096.0 / 2);
    assert_true(pr.ridge == 200);
    assert_int_equal(pr.fused_compute_len, 400);
    assert_int_equal(pr.naive_compute_len, 0); /* 64 < 200: never */
    assert_int_equal(pr.naive.bound, CLATTN_BOUND_MEMORY);
    assert_int_equal(pr.fused.bound, CLATTN_BOUND_COMPUTE);
    assert_int_equal(pr.naive.launches, 3);
    assert_int_equal(pr.fused.launches, 1);
}

static void seed_roofline_times(void **state)
{
    (void)state;
    clattn_model_device dev = seed_device();
    dev.launch_latency_s = 5e-6;
    clattn_model_problem p = problem_of(seed_shape(4096), CLATTN_CAUSAL_NONE, 64, 64);
    clattn_prediction pr;
    assert_int_equal(clattn_model_predict(&p, &dev, &pr), CLATTN_OK);

    double flops = 4.0 * 4096 * 4096 * 128 * 256;
    double naive = (double)(33 * GiB) / 5e12 + 3 * 5e-6;
    double fused = flops / 1e15 + 5e-6;
    assert_true(pr.naive.flops == flops && pr.fused.flops == flops);
    assert_true(fabs(pr.naive.time_s - naive) < 1e-12 * naive);
    assert_true(fabs(pr.fused.time_s - fused) < 1e-12 * fused);
    assert_true(pr.causal_speedup == 1.0);
}

/* ------------------------------------------------------ the seed, Q4 */

static void seed_causal_blocks(void **state)
{
    (void)state;
    static const size_t lens[] = { 1024, 4096, 16384 };
    double previous = 1;
    for (size_t i = 0; i < 3; i++) {
        clattn_shape s = seed_shape(lens[i]);
        clattn_causal_blocks cb;
        uint64_t t = lens[i] / 64;
        assert_int_equal(clattn_model_causal_blocks(&s, CLATTN_CAUSAL_TOP_LEFT, 64, 64, &cb),
                         CLATTN_OK);
        assert_int_equal(cb.total_blocks, t * t);
        assert_int_equal(cb.visited_blocks, t * (t + 1) / 2);
        assert_true(cb.visited_fraction == (double)(t + 1) / (double)(2 * t));
        assert_true(cb.closed_form == cb.visited_fraction);
        assert_true(cb.visited_fraction < previous && cb.visited_fraction > 0.5);
        previous = cb.visited_fraction;
    }
    assert_true(previous - 0.5 < 0.002); /* -> 1/2 */
}

/* ------------------------------------------------- general shapes by hand */

/* B=2, H=8, Hkv=2, N=100, d=64, fp32: K and V are a quarter of Q and O. */
static void gqa_traffic_and_memory(void **state)
{
    (void)state;
    clattn_shape s = shape_of(2, 8, 2, 100, 100, 64, CLATTN_F32);
    uint64_t q = 2 * 8 * 100 * 64 * 4, kv = 2 * 2 * 100 * 64 * 4, sc = 2 * 8 * 100 * 100 * 4;
    clattn_traffic t;
    assert_int_equal(clattn_model_traffic(&s, &t), CLATTN_OK);
    assert_int_equal(t.head_score_bytes, 100 * 100 * 4);
    assert_int_equal(t.head_endpoint_bytes, 4 * 100 * 64 * 4);
    assert_int_equal(t.head_naive_bytes, 4 * 100 * 64 * 4 + 4 * 100 * 100 * 4);
    assert_int_equal(t.endpoint_bytes, 2 * q + 2 * kv);
    assert_int_equal(t.naive_bytes, 2 * q + 2 * kv + 4 * sc);
    assert_int_equal(t.fused_bytes, 2 * q + 2 * kv);
    assert_true(fabs(t.ratio - (double)(2 * q + 2 * kv + 4 * sc) / (double)(2 * q + 2 * kv)) <
                1e-12);
    assert_true(fabs(t.closed_form - (1 + 100.0 / 64)) < 1e-12);

    clattn_memory_plan plan;
    assert_int_equal(clattn_model_memory(&s, CLATTN_PATH_NAIVE, 12345, &plan), CLATTN_OK);
    assert_int_equal(plan.peak_bytes, 2 * q + 2 * kv + 2 * sc + 12345);
    assert_int_equal(plan.workspace_bytes, 12345);
    assert_int_equal(plan.largest_bytes, sc);
    assert_string_equal(plan.largest_name, "S");
    assert_int_equal(clattn_model_memory(&s, CLATTN_PATH_FUSED, 10 * MiB, &plan), CLATTN_OK);
    assert_int_equal(plan.peak_bytes, 2 * q + 2 * kv + 10 * MiB);
    assert_string_equal(plan.largest_name, "workspace");
    assert_int_equal(clattn_model_memory(&s, CLATTN_PATH_FUSED, 0, &plan), CLATTN_OK);
    assert_string_equal(plan.largest_name, "Q");
    assert_int_equal(plan.largest_bytes, q);
}

/* Nq = 3 queries over Nk = 1000 keys (decoding), B=1, H=4, d=16, fp16. */
static void unequal_lengths(void **state)
{
    (void)state;
    clattn_shape s = shape_of(1, 4, 4, 3, 1000, 16, CLATTN_F16);
    clattn_traffic t;
    assert_int_equal(clattn_model_traffic(&s, &t), CLATTN_OK);
    assert_int_equal(t.head_score_bytes, 3 * 1000 * 2);
    assert_int_equal(t.head_endpoint_bytes, (2 * 3 + 2 * 1000) * 16 * 2);
    assert_int_equal(t.naive_bytes, 4 * ((2 * 3 + 2 * 1000) * 16 * 2 + 4 * 3 * 1000 * 2));
    double closed = 1 + 2.0 * 3 * 1000 / ((3 + 1000) * 16.0);
    assert_true(fabs(t.closed_form - closed) < 1e-12);
    assert_true(fabs(t.head_ratio - closed) < 1e-12);
}

/* GQA moves the fused crossover: 2*8*N / (2*(8+2)) >= 200 from N = 250. A
 * ridge below d/e lets the naive path cross too: at N = 128, d = 128, fp16,
 * 4*32*128*128 / (2*(2*64*128 + 4*32*128)) = 32. */
static void compute_bound_lengths(void **state)
{
    (void)state;
    clattn_model_device dev = seed_device();
    clattn_model_problem p = problem_of(shape_of(1, 8, 2, 512, 512, 128, CLATTN_F16),
                                        CLATTN_CAUSAL_NONE, 64, 64);
    clattn_prediction pr;
    assert_int_equal(clattn_model_predict(&p, &dev, &pr), CLATTN_OK);
    assert_int_equal(pr.fused_compute_len, 250);

    dev.peak_flops = 32e12;
    dev.bandwidth = 1e12;
    p = problem_of(seed_shape(512), CLATTN_CAUSAL_NONE, 64, 64);
    assert_int_equal(clattn_model_predict(&p, &dev, &pr), CLATTN_OK);
    assert_true(pr.ridge == 32);
    assert_int_equal(pr.naive_compute_len, 128);
    assert_int_equal(pr.fused_compute_len, 64);
}

/* ------------------------------------------ causal accounting by brute force */

struct brute {
    uint64_t visited, total, computed, visible, empty_rows, kv_read, kv_streamed;
};

/* The tiles and pairs of a causal mask and a sliding window (wl, wr; -1 a
 * side unbounded, both -1 none), straight from the definitions: query i
 * sees key j iff i + begin <= j <= i + end (a side absent where the window
 * and the causal mask leave it open); a query block visits a key tile from
 * the one holding its first row's first visible key (even where that key
 * is past Nk: the kernels walk from the block it rounds down to) to the one
 * before its last possible row's end. */
static struct brute brute_force(size_t nq, size_t nk, size_t bm, size_t bn, clattn_causal c,
                                int wl, int wr)
{
    struct brute r = { 0 };
    assert_true(nk <= 256);
    const long long align = c == CLATTN_CAUSAL_TOP_LEFT ? 0 : (long long)nk - (long long)nq;
    const int has_end = c != CLATTN_CAUSAL_NONE || wr >= 0;
    long long end = c != CLATTN_CAUSAL_NONE ? align : (long long)1 << 40;
    if (wr >= 0 && align + wr < end)
        end = align + wr;
    const long long begin = wl >= 0 ? align - wl : -((long long)1 << 40);
    static unsigned char key_read[256];
    memset(key_read, 0, sizeof key_read);
    for (size_t q0 = 0; q0 < nq; q0 += bm) {
        const long long first = (long long)q0 + begin;
        const long long bound = has_end ? (long long)(q0 + bm) + end : (long long)nk;
        for (size_t k0 = 0; k0 < nk; k0 += bn) {
            r.total++;
            if ((long long)(k0 + bn) <= first || (long long)k0 >= bound)
                continue;
            r.visited++;
            for (size_t j = k0; j < k0 + bn && j < nk; j++) {
                key_read[j] = 1;
                r.kv_streamed++;
                for (size_t i = q0; i < q0 + bm && i < nq; i++)
                    r.computed++;
            }
        }
    }
    for (size_t j = 0; j < nk; j++)
        r.kv_read += key_read[j];
    for (size_t i = 0; i < nq; i++) {
        uint64_t seen = 0;
        for (size_t j = 0; j < nk; j++)
            seen += (long long)j >= (long long)i + begin &&
                    (!has_end || (long long)j <= (long long)i + end);
        r.visible += seen;
        r.empty_rows += seen == 0;
    }
    return r;
}

static void check_against_brute(size_t nq, size_t nk, size_t bm, size_t bn, clattn_causal c)
{
    clattn_shape s = shape_of(1, 2, 1, nq, nk, 8, CLATTN_F16);
    clattn_causal_blocks cb;
    struct brute r = brute_force(nq, nk, bm, bn, c, -1, -1);
    assert_int_equal(clattn_model_causal_blocks(&s, c, bm, bn, &cb), CLATTN_OK);
    assert_int_equal(cb.total_blocks, r.total);
    assert_int_equal(cb.visited_blocks, r.visited);
    assert_int_equal(cb.computed_pairs, r.computed);
    assert_int_equal(cb.visible_pairs, r.visible);
    assert_int_equal(cb.empty_rows, r.empty_rows);
    assert_int_equal(cb.kv_rows_read, r.kv_read);
    assert_int_equal(cb.kv_rows_streamed, r.kv_streamed);
    assert_int_equal(cb.total_pairs, (uint64_t)nq * nk);
}

static void causal_small_cases_by_hand(void **state)
{
    (void)state;
    clattn_causal_blocks cb;
    /* N=10, tiles 4: query blocks visit 1, 2, 3 key blocks; (3+1)/(2*3). */
    clattn_shape s = shape_of(1, 1, 1, 10, 10, 8, CLATTN_F32);
    assert_int_equal(clattn_model_causal_blocks(&s, CLATTN_CAUSAL_TOP_LEFT, 4, 4, &cb), 0);
    assert_int_equal(cb.visited_blocks, 6);
    assert_int_equal(cb.total_blocks, 9);
    assert_true(cb.closed_form == 4.0 / 6.0);
    assert_int_equal(cb.computed_pairs, 4 * 4 + 4 * 8 + 2 * 10);
    assert_int_equal(cb.visible_pairs, 55);
    assert_true(fabs(cb.speedup - 100.0 / 68.0) < 1e-12);

    /* BM=4, BN=3: limits 4, 8, 10 -> 2, 3, 4 key blocks of 4 (no closed form). */
    assert_int_equal(clattn_model_causal_blocks(&s, CLATTN_CAUSAL_TOP_LEFT, 4, 3, &cb), 0);
    assert_int_equal(cb.visited_blocks, 9);
    assert_int_equal(cb.total_blocks, 12);
    assert_int_equal(cb.computed_pairs, 4 * 6 + 4 * 9 + 2 * 10);
    assert_true(cb.closed_form == 0);

    /* Bottom-right, Nq=6 < Nk=10, off=4: limits 8, 10 -> 2 and 3 blocks. */
    s = shape_of(1, 1, 1, 6, 10, 8, CLATTN_F32);
    assert_int_equal(clattn_model_causal_blocks(&s, CLATTN_CAUSAL_BOTTOM_RIGHT, 4, 4, &cb), 0);
    assert_int_equal(cb.visited_blocks, 5);
    assert_int_equal(cb.computed_pairs, 4 * 8 + 2 * 10);
    assert_int_equal(cb.visible_pairs, 5 + 6 + 7 + 8 + 9 + 10);

    /* Bottom-right, Nq=10 > Nk=4, off=-6: rows 0..5 see nothing, block 0 is
     * empty, blocks 1 and 2 visit the one key block. */
    s = shape_of(1, 1, 1, 10, 4, 8, CLATTN_F32);
    assert_int_equal(clattn_model_causal_blocks(&s, CLATTN_CAUSAL_BOTTOM_RIGHT, 4, 4, &cb), 0);
    assert_int_equal(cb.visited_blocks, 2);
    assert_int_equal(cb.total_blocks, 3);
    assert_int_equal(cb.empty_q_blocks, 1);
    assert_int_equal(cb.empty_rows, 6);
    assert_int_equal(cb.visible_pairs, 1 + 2 + 3 + 4);
    assert_int_equal(cb.computed_pairs, 4 * 4 + 2 * 4);
    assert_int_equal(cb.kv_rows_read, 4);

    /* Top-left, Nq=3 << Nk=100, BM=64, BN=16: the block's bound q0 + BM = 64
     * makes it visit 4 of 7 key blocks although 3 keys are visible. */
    s = shape_of(1, 1, 1, 3, 100, 8, CLATTN_F32);
    assert_int_equal(clattn_model_causal_blocks(&s, CLATTN_CAUSAL_TOP_LEFT, 64, 16, &cb), 0);
    assert_int_equal(cb.visited_blocks, 4);
    assert_int_equal(cb.total_blocks, 7);
    assert_int_equal(cb.computed_pairs, 3 * 64);
    assert_int_equal(cb.visible_pairs, 1 + 2 + 3);
    assert_int_equal(cb.kv_rows_read, 64);

    /* N=1000 is not a multiple of 64: T = 16 blocks, still (T+1)/(2T). */
    s = shape_of(1, 1, 1, 1000, 1000, 8, CLATTN_F32);
    assert_int_equal(clattn_model_causal_blocks(&s, CLATTN_CAUSAL_TOP_LEFT, 64, 64, &cb), 0);
    assert_int_equal(cb.visited_blocks, 16 * 17 / 2);
    assert_true(cb.visited_fraction == 17.0 / 32.0 && cb.closed_form == 17.0 / 32.0);
}

static void causal_sweep_against_brute_force(void **state)
{
    (void)state;
    static const size_t lens[] = { 1, 2, 5, 16, 17, 64, 65, 130 };
    static const size_t tiles[] = { 1, 3, 16, 64 };
    static const clattn_causal modes[] = { CLATTN_CAUSAL_NONE, CLATTN_CAUSAL_TOP_LEFT,
                                           CLATTN_CAUSAL_BOTTOM_RIGHT };
    for (size_t a = 0; a < 8; a++)
        for (size_t b = 0; b < 8; b++)
            for (size_t m = 0; m < 4; m++)
                for (size_t n = 0; n < 4; n++)
                    for (size_t c = 0; c < 3; c++)
                        check_against_brute(lens[a], lens[b], tiles[m], tiles[n], modes[c]);
}

/* The fused path under a mask: Q and O in full, the visited K/V rows, the
 * computed pairs' FLOPs; the naive path is unchanged. */
static void causal_prediction(void **state)
{
    (void)state;
    clattn_model_device dev = seed_device();
    clattn_model_problem p = problem_of(shape_of(2, 4, 2, 6, 10, 32, CLATTN_F16),
                                        CLATTN_CAUSAL_BOTTOM_RIGHT, 4, 4);
    clattn_prediction pr;
    assert_int_equal(clattn_model_predict(&p, &dev, &pr), CLATTN_OK);
    uint64_t q = 2 * 4 * 6 * 32 * 2, kv = 2 * 2 * 10 * 32 * 2, sc = 2 * 4 * 6 * 10 * 2;
    assert_int_equal(pr.naive.bytes, 2 * q + 2 * kv + 4 * sc);
    assert_true(pr.naive.flops == 4.0 * 32 * 2 * 4 * 6 * 10);
    assert_int_equal(pr.fused.bytes, 2 * q + 2 * kv); /* every key is visited */
    assert_true(pr.fused.flops == 4.0 * 32 * 2 * 4 * (4 * 8 + 2 * 10));
    /* Memory-bound and no K/V row skipped: skipping tiles saves no time. */
    assert_int_equal(pr.fused.bound, CLATTN_BOUND_MEMORY);
    assert_true(pr.causal_speedup == 1.0);

    /* The seed at N=4096, top-left, 64 x 64: compute-bound, so the speedup is
     * T^2 / (T(T+1)/2) = 128/65 with T = 64. */
    p = problem_of(seed_shape(4096), CLATTN_CAUSAL_TOP_LEFT, 64, 64);
    assert_int_equal(clattn_model_predict(&p, &dev, &pr), CLATTN_OK);
    assert_int_equal(pr.fused.bound, CLATTN_BOUND_COMPUTE);
    assert_true(fabs(pr.causal_speedup - 128.0 / 65.0) < 1e-12);
    assert_true(fabs(pr.blocks.speedup - 128.0 / 65.0) < 1e-12);

    /* Nq=3 over Nk=100 top-left: only 64 key rows are ever read. */
    p = problem_of(shape_of(1, 2, 1, 3, 100, 16, CLATTN_F32), CLATTN_CAUSAL_TOP_LEFT, 64, 16);
    assert_int_equal(clattn_model_predict(&p, &dev, &pr), CLATTN_OK);
    assert_int_equal(pr.fused.bytes, 2 * (2 * 3 * 16 * 4) + 2 * (1 * 64 * 16 * 4));
}

static void unknown_device(void **state)
{
    (void)state;
    clattn_model_device dev;
    clattn_model_default_device(&dev);
    clattn_model_problem p = problem_of(seed_shape(1024), CLATTN_CAUSAL_TOP_LEFT, 64, 64);
    clattn_prediction pr;
    assert_int_equal(clattn_model_predict(&p, &dev, &pr), CLATTN_OK);
    assert_true(pr.ridge == 0 && pr.naive.time_s == 0 && pr.fused.time_s == 0);
    assert_int_equal(pr.naive.bound, CLATTN_BOUND_UNKNOWN);
    assert_int_equal(pr.naive.fit, CLATTN_FIT_UNKNOWN);
    assert_int_equal(pr.fused_compute_len, 0);
    assert_true(pr.causal_speedup == 0);
    assert_true(pr.naive_intensity_limit == 64);
    assert_string_equal(clattn_fit_name(pr.naive.fit), "unknown");
}

static void max_alloc_verdict(void **state)
{
    (void)state;
    clattn_model_device dev = seed_device();
    dev.max_alloc_bytes = 64 * GiB; /* S is 128 GiB at N = 16384 */
    clattn_shape s = seed_shape(8192);
    clattn_memory_plan plan;
    clattn_fit fit;
    assert_int_equal(clattn_model_memory(&s, CLATTN_PATH_NAIVE, 0, &plan), CLATTN_OK);
    assert_int_equal(plan.largest_bytes, 32 * GiB);
    assert_int_equal(clattn_model_fit(&plan, &dev, &fit), CLATTN_OK);
    assert_int_equal(fit, CLATTN_FIT_OK);
    s = seed_shape(12000);
    assert_int_equal(clattn_model_memory(&s, CLATTN_PATH_NAIVE, 0, &plan), CLATTN_OK);
    assert_int_equal(clattn_model_fit(&plan, &dev, &fit), CLATTN_OK);
    assert_int_equal(fit, CLATTN_FIT_OVER_MAX_ALLOC);

    /* S = 512 N^2 <= 64 GiB -> N <= 11,585 (capacity alone would allow 14,061). */
    size_t n;
    s = seed_shape(1);
    assert_int_equal(clattn_model_max_len(&s, CLATTN_LIMIT_NAIVE_FITS, 0, &dev, &n, NULL), 0);
    assert_int_equal(n, 11585);
}

/* ------------------------------------------------------------- decoding */

/* docs/MODEL.md's worked example: B=8, H=32, Hkv=8, one query over 65,536
 * keys, d=128, fp16, on 4.6 TB/s and 989 TFLOP/s. */
static void decode_worked_example(void **state)
{
    (void)state;
    clattn_model_device dev = seed_device();
    dev.bandwidth = 4.6e12;
    dev.peak_flops = 989e12;
    clattn_model_problem p = problem_of(shape_of(8, 32, 8, 1, 65536, 128, CLATTN_F16),
                                        CLATTN_CAUSAL_NONE, 64, 64);
    clattn_prediction pr;
    assert_int_equal(clattn_model_predict(&p, &dev, &pr), CLATTN_OK);
    const uint64_t q = 8 * 32 * 1 * 128 * 2;              /* 64 KiB, O as much */
    const uint64_t kv = 2ull * 8 * 8 * 65536 * 128 * 2;    /* K and V: 2 GiB */
    assert_int_equal(q, 64 * KiB);
    assert_int_equal(kv, 2 * GiB);
    assert_int_equal(pr.fused.bytes, 2 * q + kv); /* 2,147,614,720 */
    assert_true(pr.fused.flops == 4.0 * 128 * 8 * 32 * 65536);
    assert_int_equal(pr.fused.bound, CLATTN_BOUND_MEMORY);
    assert_true(fabs(pr.fused.time_s - 2147614720.0 / 4.6e12) < 1e-15);
    assert_int_equal((long)lround(pr.fused.time_s * 1e6), 467); /* 0.467 ms */
    assert_int_equal(pr.fused.launches, 1);
    assert_int_equal(pr.batch.kv_rows_read, 8 * 65536);
    assert_int_equal(pr.batch.split_workspace_bytes, 0);

    /* 32 chunks: B*H*Nq*32*(128+2)*4 = 4,259,840 bytes written and read, a
     * second launch, and the workspace in the memory plan. */
    p.splits = 32;
    dev.launch_latency_s = 4e-6;
    assert_int_equal(clattn_model_predict(&p, &dev, &pr), CLATTN_OK);
    const uint64_t ws = 8 * 32 * 1 * 32 * 130 * 4;
    assert_int_equal(ws, 4259840);
    assert_int_equal(pr.batch.split_workspace_bytes, ws);
    assert_int_equal(pr.fused.bytes, 2 * q + kv + 2 * ws);
    assert_int_equal(pr.fused.launches, 2);
    assert_true(fabs(pr.fused.time_s - ((2147614720.0 + 2 * 4259840.0) / 4.6e12 + 8e-6)) <
                1e-15);
    assert_int_equal(pr.fused.memory.workspace_bytes, ws);
    assert_int_equal(pr.fused.memory.peak_bytes, 2 * q + kv + ws);
    /* The caller's own fused workspace adds to the split's. */
    p.fused_workspace_bytes = 1000;
    assert_int_equal(clattn_model_predict(&p, &dev, &pr), CLATTN_OK);
    assert_int_equal(pr.fused.memory.workspace_bytes, ws + 1000);
    /* The naive path neither splits nor changes. */
    assert_int_equal(pr.naive.launches, 3);
    assert_int_equal(pr.naive.bytes, pr.traffic.naive_bytes);

    /* Half the sequences hold 16,384 keys: K and V shrink to 327,680 rows of
     * 8 x 128 x 2 bytes each, 0.292 ms. */
    static const uint32_t lens[] = { 65536, 65536, 65536, 65536, 16384, 16384, 16384, 16384 };
    p.splits = 0;
    p.fused_workspace_bytes = 0;
    p.kv_lens = lens;
    dev.launch_latency_s = 0;
    assert_int_equal(clattn_model_predict(&p, &dev, &pr), CLATTN_OK);
    assert_int_equal(pr.fused.bytes, 2ull * 327680 * 2048 + 2 * q);
    assert_int_equal(pr.fused.bytes, 1342308352);
    assert_int_equal((long)lround(pr.fused.time_s * 1e6), 292);
}

/* Per-sequence lengths, no mask: B=4, H=4, Hkv=2, Nq=1, Nk=100, d=16, fp16,
 * lengths 100, 0, 37, 1. */
static void decode_kv_lens_by_hand(void **state)
{
    (void)state;
    static const uint32_t lens[] = { 100, 0, 37, 1 };
    clattn_model_device dev = seed_device();
    clattn_model_problem p = problem_of(shape_of(4, 4, 2, 1, 100, 16, CLATTN_F16),
                                        CLATTN_CAUSAL_NONE, 64, 64);
    p.kv_lens = lens;
    clattn_prediction pr;
    assert_int_equal(clattn_model_predict(&p, &dev, &pr), CLATTN_OK);
    assert_int_equal(pr.batch.empty_sequences, 1);
    assert_int_equal(pr.batch.kv_rows_read, 138);
    assert_int_equal(pr.batch.kv_rows_total, 138);
    assert_int_equal(pr.batch.total_blocks, 2 + 0 + 1 + 1);
    assert_int_equal(pr.batch.visited_blocks, 4);
    assert_int_equal(pr.batch.computed_pairs, 138);
    assert_int_equal(pr.batch.visible_pairs, 138);
    /* K, V: 138 rows x Hkv 2 x d 16 x 2 bytes each; Q of the three sequences
     * with keys (4 heads x 16 x 2 bytes each), O of all four. */
    assert_int_equal(pr.fused.bytes, 2 * 138 * 2 * 16 * 2 + 3 * 128 + 4 * 128);
    assert_int_equal(pr.fused.bytes, 18560);
    assert_true(pr.fused.flops == 4.0 * 16 * 4 * 138);
    assert_true(pr.causal_speedup == 1.0);
    /* The per-head blocks stay those of a sequence of Nk keys. */
    assert_int_equal(pr.blocks.kv_rows_read, 100);
    /* The naive path computes the whole S whatever the lengths. */
    assert_int_equal(pr.naive.bytes, pr.traffic.naive_bytes);

    /* Every sequence empty: O is written (zeros) and nothing else. */
    static const uint32_t none[] = { 0, 0, 0, 0 };
    p.kv_lens = none;
    assert_int_equal(clattn_model_predict(&p, &dev, &pr), CLATTN_OK);
    assert_int_equal(pr.fused.bytes, 4 * 128);
    assert_true(pr.fused.flops == 0);
    assert_int_equal(pr.batch.empty_sequences, 4);
    assert_int_equal(pr.fused.memory.peak_bytes,
                     2 * (4 * 4 * 16 * 2) + 2 * (4 * 2 * 100 * 16 * 2)); /* buffers at Nk */
}

/* Bottom-right aligns to each sequence's own length: B=2, H=2, Hkv=1, Nq=6,
 * Nk=10, d=8, fp32, tiles 4 x 4, lengths 10 and 3. */
static void decode_kv_lens_causal_by_hand(void **state)
{
    (void)state;
    static const uint32_t lens[] = { 10, 3 };
    clattn_model_device dev = seed_device();
    clattn_model_problem p = problem_of(shape_of(2, 2, 1, 6, 10, 8, CLATTN_F32),
                                        CLATTN_CAUSAL_BOTTOM_RIGHT, 4, 4);
    p.kv_lens = lens;
    clattn_prediction pr;
    assert_int_equal(clattn_model_predict(&p, &dev, &pr), CLATTN_OK);
    /* Sequence 0 (off 4): the by-hand case above, 5 tiles, 52 pairs, 45
     * visible. Sequence 1 (off 3 - 6 = -3): rows 0..2 see nothing, rows 3..5
     * see 1, 2, 3 keys; query block 0 is bounded by 4 - 3 = 1 key, block 1
     * by 8 - 3 = 5 > 3: one 4-key block each, clipped to 3 keys, so 4 x 3 +
     * 2 x 3 = 18 pairs in 2 tiles. */
    assert_int_equal(pr.batch.visited_blocks, 5 + 2);
    assert_int_equal(pr.batch.total_blocks, 2 * 3 + 2 * 1);
    assert_int_equal(pr.batch.computed_pairs, 52 + 18);
    assert_int_equal(pr.batch.visible_pairs, 45 + (1 + 2 + 3));
    assert_int_equal(pr.batch.total_pairs, 60 + 18);
    assert_int_equal(pr.batch.kv_rows_read, 10 + 3);
    /* K, V: 13 rows x 8 x 4 bytes each; Q and O of both: 2 x 6 x 8 x 4 each. */
    assert_int_equal(pr.fused.bytes, 2 * 13 * 32 + 2 * (2 * 384));
    assert_true(pr.fused.flops == 4.0 * 8 * 2 * 70);

    /* Top-left ignores the lengths' alignment: query i sees j <= i, j < len. */
    p.causal = CLATTN_CAUSAL_TOP_LEFT;
    assert_int_equal(clattn_model_predict(&p, &dev, &pr), CLATTN_OK);
    /* len 10: query blocks bounded by 4 and 8 keys, 1 and 2 tiles; len 3:
     * by min(4, 3) and min(8, 3) keys, one tile each. */
    assert_int_equal(pr.batch.visited_blocks, (1 + 2) + (1 + 1));
    assert_int_equal(pr.batch.computed_pairs, (4 * 4 + 2 * 8) + (4 * 3 + 2 * 3));
    assert_int_equal(pr.batch.visible_pairs, (1 + 2 + 3 + 4 + 5 + 6) + (1 + 2 + 3 * 4));
    assert_int_equal(pr.batch.kv_rows_read, 8 + 3);
}

/* kv_lens of Nk everywhere is no kv_lens at all. */
static void decode_full_lengths_change_nothing(void **state)
{
    (void)state;
    static const uint32_t lens[] = { 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096 };
    static const clattn_causal modes[] = { CLATTN_CAUSAL_NONE, CLATTN_CAUSAL_TOP_LEFT,
                                           CLATTN_CAUSAL_BOTTOM_RIGHT };
    clattn_model_device dev = seed_device();
    for (size_t m = 0; m < 3; m++) {
        clattn_model_problem p = problem_of(seed_shape(4096), modes[m], 64, 64);
        clattn_prediction a, b;
        assert_int_equal(clattn_model_predict(&p, &dev, &a), CLATTN_OK);
        p.kv_lens = lens;
        assert_int_equal(clattn_model_predict(&p, &dev, &b), CLATTN_OK);
        assert_int_equal(a.fused.bytes, b.fused.bytes);
        assert_true(a.fused.flops == b.fused.flops);
        assert_true(a.fused.time_s == b.fused.time_s);
        assert_true(a.causal_speedup == b.causal_speedup);
        assert_int_equal(a.batch.visited_blocks, b.batch.visited_blocks);
        assert_int_equal(a.batch.visited_blocks, 8 * a.blocks.visited_blocks);
        assert_int_equal(a.batch.visible_pairs, 8 * a.blocks.visible_pairs);
        assert_int_equal(a.batch.kv_rows_read, 8 * a.blocks.kv_rows_read);
        assert_int_equal(b.batch.empty_sequences, 0);
    }
}

/* Random lengths, both alignments, odd tiles: the batch's sums against the
 * brute-force count of each sequence's grid. */
static void decode_kv_lens_against_brute_force(void **state)
{
    (void)state;
    static const clattn_causal modes[] = { CLATTN_CAUSAL_NONE, CLATTN_CAUSAL_TOP_LEFT,
                                           CLATTN_CAUSAL_BOTTOM_RIGHT };
    static const size_t tiles[][2] = { { 1, 1 }, { 3, 5 }, { 16, 4 }, { 64, 64 } };
    const clattn_model_device dev = seed_device();
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    for (int round = 0; round < 40; round++) {
        uint32_t lens[5];
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        size_t nq = 1 + (size_t)(rng >> 58), nk = 1 + (size_t)((rng >> 40) % 150);
        for (int b = 0; b < 5; b++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            lens[b] = (uint32_t)((rng >> 33) % (nk + 1)); /* 0..Nk */
        }
        for (size_t m = 0; m < 3; m++)
            for (size_t t = 0; t < 4; t++) {
                clattn_model_problem p = problem_of(shape_of(5, 2, 1, nq, nk, 8, CLATTN_F16),
                                                    modes[m], tiles[t][0], tiles[t][1]);
                p.kv_lens = lens;
                clattn_prediction pr;
                assert_int_equal(clattn_model_predict(&p, &dev, &pr), CLATTN_OK);
                struct brute sum = { 0 };
                uint64_t empty = 0, keys = 0;
                for (int b = 0; b < 5; b++) {
                    keys += lens[b];
                    if (!lens[b]) {
                        empty++;
                        continue;
                    }
                    struct brute r =
                        brute_force(nq, lens[b], tiles[t][0], tiles[t][1], modes[m], -1, -1);
                    sum.visited += r.visited;
                    sum.total += r.total;
                    sum.computed += r.computed;
                    sum.visible += r.visible;
                    sum.kv_read += r.kv_read;
                }
                assert_int_equal(pr.batch.empty_sequences, empty);
                assert_int_equal(pr.batch.visited_blocks, sum.visited);
                assert_int_equal(pr.batch.total_blocks, sum.total);
                assert_int_equal(pr.batch.computed_pairs, sum.computed);
                assert_int_equal(pr.batch.visible_pairs, sum.visible);
                assert_int_equal(pr.batch.kv_rows_read, sum.kv_read);
                assert_int_equal(pr.batch.kv_rows_total, keys);
                /* Q of the sequences with keys, O of all, K and V read. */
                uint64_t q_seq = 2 * nq * 8 * 2, kv_row = 1 * 8 * 2;
                assert_int_equal(pr.fused.bytes,
                                 (5 - empty) * q_seq + 5 * q_seq + 2 * kv_row * sum.kv_read);
                assert_true(pr.fused.flops == 4.0 * 8 * 2 * (double)sum.computed);
            }
    }
}

static void decode_bad_arguments(void **state)
{
    (void)state;
    static const uint32_t too_long[] = { 10, 11 };
    static const uint32_t fine[] = { 10, 0 };
    clattn_model_device dev = seed_device();
    clattn_model_problem p = problem_of(shape_of(2, 2, 1, 1, 10, 8, CLATTN_F16),
                                        CLATTN_CAUSAL_NONE, 4, 4);
    clattn_prediction pr;
    p.kv_lens = too_long;
    assert_int_equal(clattn_model_predict(&p, &dev, &pr), CLATTN_EINVAL);
    assert_non_null(strstr(clattn_last_error_detail(), "kv_lens[1] = 11"));
    p.kv_lens = fine;
    assert_int_equal(clattn_model_predict(&p, &dev, &pr), CLATTN_OK);
    p.splits = 11; /* more chunks than keys */
    assert_int_equal(clattn_model_predict(&p, &dev, &pr), CLATTN_EINVAL);
    assert_non_null(strstr(clattn_last_error_detail(), "splits"));
    p.splits = 10;
    assert_int_equal(clattn_model_predict(&p, &dev, &pr), CLATTN_OK);
    assert_int_equal(pr.batch.split_workspace_bytes, 2 * 2 * 1 * 10 * (8 + 2) * 4);
    p.splits = 1; /* one chunk is no split */
    assert_int_equal(clattn_model_predict(&p, &dev, &pr), CLATTN_OK);
    assert_int_equal(pr.batch.split_workspace_bytes, 0);
    assert_int_equal(pr.fused.launches, 1);
    /* A workspace that wraps 64 bits (2^24 x 2^8 x 2^4 rows x 2^24 chunks x
     * 258 x 4 bytes) where everything else fits (S is 2^61 bytes). */
    p = problem_of(shape_of((size_t)1 << 24, 1 << 8, 1, 1 << 4, (size_t)1 << 24, 256,
                            CLATTN_F16),
                   CLATTN_CAUSAL_NONE, 64, 64);
    p.splits = 1;
    assert_int_equal(clattn_model_predict(&p, &dev, &pr), CLATTN_OK);
    p.splits = 1u << 24;
    assert_int_equal(clattn_model_predict(&p, &dev, &pr), CLATTN_EOVERFLOW);
}

/* ---------------------------------------------------------- failure paths */

static void bad_arguments(void **state)
{
    (void)state;
    clattn_shape good = seed_shape(64), s;
    clattn_traffic t;
    clattn_memory_plan plan;
    clattn_causal_blocks cb;
    clattn_model_device dev = seed_device();
    clattn_prediction pr;
    clattn_fit fit;
    size_t n;

    assert_int_equal(clattn_model_traffic(NULL, &t), CLATTN_EINVAL);
    assert_int_equal(clattn_model_traffic(&good, NULL), CLATTN_EINVAL);
    assert_int_equal(clattn_model_memory(&good, CLATTN_PATH_NAIVE, 0, NULL), CLATTN_EINVAL);
    assert_int_equal(clattn_model_memory(&good, CLATTN_PATH_AUTO, 0, &plan), CLATTN_EINVAL);
    assert_int_equal(clattn_model_fit(NULL, &dev, &fit), CLATTN_EINVAL);
    assert_int_equal(clattn_model_causal_blocks(&good, CLATTN_CAUSAL_TOP_LEFT, 0, 64, &cb),
                     CLATTN_EINVAL);
    assert_int_equal(clattn_model_causal_blocks(&good, (clattn_causal)7, 64, 64, &cb),
                     CLATTN_EINVAL);
    assert_int_equal(clattn_model_predict(NULL, &dev, &pr), CLATTN_EINVAL);
    assert_int_equal(clattn_model_max_len(&good, CLATTN_LIMIT_HEAD_S_IN_CACHE, 0, NULL, &n, NULL),
                     CLATTN_EINVAL);

    for (int i = 0; i < 6; i++) {
        s = good;
        size_t *sizes[] = { &s.batch, &s.heads, &s.kv_heads, &s.q_len, &s.kv_len, &s.head_dim };
        *sizes[i] = 0;
        assert_int_equal(clattn_model_traffic(&s, &t), CLATTN_EINVAL);
        assert_true(clattn_last_error_detail()[0] != '\0');
    }
    s = good;
    s.kv_heads = 5; /* 32 % 5 */
    assert_int_equal(clattn_model_traffic(&s, &t), CLATTN_EINVAL);
    s = good;
    s.dtype = (clattn_dtype)9;
    assert_int_equal(clattn_model_traffic(&s, &t), CLATTN_EINVAL);

    /* Figures the limit needs are unknown. */
    clattn_model_default_device(&dev);
    assert_int_equal(clattn_model_max_len(&good, CLATTN_LIMIT_SHARED_S_IN_CACHE, 0, &dev, &n,
                                          NULL),
                     CLATTN_EINVAL);
    assert_int_equal(clattn_model_max_len(&good, CLATTN_LIMIT_FUSED_FITS, 0, &dev, &n, NULL),
                     CLATTN_EINVAL);
}

static void overflow(void **state)
{
    (void)state;
    clattn_traffic t;
    clattn_memory_plan plan;
    clattn_prediction pr;
    clattn_model_device dev = seed_device();
    /* S = 2^20 * 2^20 * 2^12 * 2^12 * 2 bytes: 2^65. */
    clattn_shape s = shape_of((size_t)1 << 20, 1 << 20, 1 << 20, 1 << 12, 1 << 12, 64,
                              CLATTN_F16);
    assert_int_equal(clattn_model_traffic(&s, &t), CLATTN_EOVERFLOW);
    assert_int_equal(clattn_model_memory(&s, CLATTN_PATH_FUSED, 0, &plan), CLATTN_EOVERFLOW);
    clattn_model_problem p = problem_of(s, CLATTN_CAUSAL_NONE, 64, 64);
    assert_int_equal(clattn_model_predict(&p, &dev, &pr), CLATTN_EOVERFLOW);

    /* S alone is 2^64 bytes. */
    s = shape_of(1, 1, 1, (size_t)1 << 31, (size_t)1 << 31, 1, CLATTN_F32);
    assert_int_equal(clattn_model_memory(&s, CLATTN_PATH_FUSED, 0, &plan), CLATTN_EOVERFLOW);
    /* S = 3 * 2^62 fits, S + P wraps; the fused path holds no S. */
    s = shape_of(3, 1, 1, (size_t)1 << 30, (size_t)1 << 30, 1, CLATTN_F32);
    assert_int_equal(clattn_model_memory(&s, CLATTN_PATH_NAIVE, 0, &plan), CLATTN_EOVERFLOW);
    assert_int_equal(clattn_model_memory(&s, CLATTN_PATH_FUSED, 0, &plan), CLATTN_OK);
    /* A workspace that wraps the sum. */
    assert_int_equal(clattn_model_memory(&s, CLATTN_PATH_FUSED, UINT64_MAX - 10, &plan),
                     CLATTN_EOVERFLOW);
}

/* ------------------------------------------------- variants: windows, masks, d_v */

static clattn_model_variant window_variant(int wl, int wr)
{
    clattn_model_variant v;
    clattn_model_default_variant(&v);
    v.window_left = wl;
    v.window_right = wr;
    return v;
}

static void windows_against_brute_force(void **state)
{
    (void)state;
    static const size_t lens[] = { 1, 5, 17, 64, 100 };
    static const size_t tiles[] = { 1, 4, 16, 64 };
    static const int sides[][2] = { { 0, 0 }, { 3, -1 }, { -1, 2 }, { 7, 5 }, { 40, 0 },
                                    { 0, 30 }, { 200, 200 } };
    static const clattn_causal modes[] = { CLATTN_CAUSAL_NONE, CLATTN_CAUSAL_TOP_LEFT,
                                           CLATTN_CAUSAL_BOTTOM_RIGHT };
    clattn_model_device dev = seed_device();
    for (size_t a = 0; a < 5; a++)
        for (size_t b = 0; b < 5; b++)
            for (size_t t = 0; t < 4; t++)
                for (size_t w = 0; w < sizeof sides / sizeof sides[0]; w++)
                    for (int c = 0; c < 3; c++) {
                        const size_t bm = tiles[t], bn = tiles[(t + w) % 4];
                        struct brute r = brute_force(lens[a], lens[b], bm, bn, modes[c],
                                                     sides[w][0], sides[w][1]);
                        clattn_model_problem p = problem_of(
                            shape_of(2, 2, 1, lens[a], lens[b], 8, CLATTN_F16), modes[c], bm, bn);
                        clattn_model_variant v = window_variant(sides[w][0], sides[w][1]);
                        clattn_prediction pr;
                        assert_int_equal(clattn_model_predict_variant(&p, &v, &dev, &pr),
                                         CLATTN_OK);
                        const clattn_causal_blocks *cb = &pr.blocks;
                        if (cb->visited_blocks != r.visited || cb->computed_pairs != r.computed ||
                            cb->visible_pairs != r.visible || cb->empty_rows != r.empty_rows ||
                            cb->kv_rows_read != r.kv_read || cb->kv_rows_streamed != r.kv_streamed)
                            fail_msg("Nq=%zu Nk=%zu %zux%zu causal %d window (%d, %d): visited "
                                     "%llu/%llu computed %llu/%llu visible %llu/%llu empty "
                                     "%llu/%llu read %llu/%llu streamed %llu/%llu", lens[a],
                                     lens[b], bm, bn, (int)modes[c], sides[w][0], sides[w][1],
                                     (unsigned long long)cb->visited_blocks,
                                     (unsigned long long)r.visited,
                                     (unsigned long long)cb->computed_pairs,
                                     (unsigned long long)r.computed,
                                     (unsigned long long)cb->visible_pairs,
                                     (unsigned long long)r.visible,
                                     (unsigned long long)cb->empty_rows,
                                     (unsigned long long)r.empty_rows,
                                     (unsigned long long)cb->kv_rows_read,
                                     (unsigned long long)r.kv_read,
                                     (unsigned long long)cb->kv_rows_streamed,
                                     (unsigned long long)r.kv_streamed);
                        assert_int_equal(cb->total_blocks, r.total);
                        /* The batch: B = 2 sequences of the same grid. */
                        assert_int_equal(pr.batch.computed_pairs, 2 * r.computed);
                        assert_int_equal(pr.batch.kv_rows_read, 2 * r.kv_read);
                    }
}

/* A sliding window over a long sequence by hand: Nq = Nk = 2^20, 64 x 64
 * tiles, window (4095, 0) under a causal mask: each query block past the
 * first 64 visits the key blocks that hold keys q0 - 4095 .. q0 + 63, 65 of
 * them (floor((q0 - 4095) / 64) .. q0 / 64; i + 1 for block i < 64). The window's pairs: sum of
 * min(i + 1, 4096). And the fused bytes follow the key rows read (all of
 * them) and FLOPs the computed pairs. */
static void window_long_sequence_by_hand(void **state)
{
    (void)state;
    const uint64_t n = (uint64_t)1 << 20, w = 4096;
    clattn_model_problem p =
        problem_of(shape_of(1, 1, 1, n, n, 128, CLATTN_F16), CLATTN_CAUSAL_BOTTOM_RIGHT, 64, 64);
    clattn_model_variant v = window_variant((int)w - 1, -1);
    clattn_model_device dev = seed_device();
    clattn_prediction pr;
    assert_int_equal(clattn_model_predict_variant(&p, &v, &dev, &pr), CLATTN_OK);
    const uint64_t qb = n / 64;
    /* Block i visits key blocks max(0, i - 64) .. i (the first holds key
     * 64 i - 4095): min(i + 1, 65) blocks. */
    const uint64_t blocks = 64 * 65 / 2 + (qb - 64) * 65;
    assert_int_equal(pr.blocks.visited_blocks, blocks);
    assert_int_equal(pr.blocks.computed_pairs, blocks * 64 * 64);
    assert_int_equal(pr.blocks.visible_pairs, w * (w + 1) / 2 + (n - w) * w);
    assert_int_equal(pr.blocks.kv_rows_read, n);
    assert_int_equal(pr.blocks.empty_rows, 0);
    assert_int_equal(pr.fused.bytes, 2 * (n * 128 * 2) + n * 2 * 128 * 2);
    assert_true(pr.fused.flops == 4.0 * 128 * (double)(blocks * 64 * 64));
    assert_true(pr.blocks.closed_form == 0.0);
    /* Without the window: the causal triangle, qb (qb + 1) / 2 blocks. */
    clattn_prediction causal;
    assert_int_equal(clattn_model_predict(&p, &dev, &causal), CLATTN_OK);
    assert_int_equal(causal.blocks.visited_blocks, qb * (qb + 1) / 2);
    assert_true(pr.causal_speedup > causal.causal_speedup);
}

/* d_v != d by hand: Q and K of d columns, V and O of d_v; a pair's FLOPs 2
 * (d + d_v); the split workspace's partial rows d_v + 2 floats. */
static void head_dim_v_by_hand(void **state)
{
    (void)state;
    const uint64_t b = 2, h = 8, hkv = 2, nq = 100, nk = 300, d = 192, dv = 128, e = 2;
    clattn_model_problem p =
        problem_of(shape_of(b, h, hkv, nq, nk, d, CLATTN_BF16), CLATTN_CAUSAL_NONE, 64, 64);
    p.splits = 3;
    clattn_model_variant v;
    clattn_model_default_variant(&v);
    v.head_dim_v = dv;
    clattn_model_device dev = seed_device();
    clattn_prediction pr;
    assert_int_equal(clattn_model_predict_variant(&p, &v, &dev, &pr), CLATTN_OK);
    const uint64_t q = b * h * nq * d * e, o = b * h * nq * dv * e;
    const uint64_t k = b * hkv * nk * d * e, vv = b * hkv * nk * dv * e;
    const uint64_t ws = b * h * nq * 3 * (dv + 2) * 4;
    assert_int_equal(pr.traffic.endpoint_bytes, q + o + k + vv);
    assert_int_equal(pr.traffic.head_endpoint_bytes, (nq + nk) * (d + dv) * e);
    assert_int_equal(pr.batch.split_workspace_bytes, ws);
    assert_int_equal(pr.fused.bytes, q + o + k + vv + 2 * ws);
    assert_true(pr.fused.flops == 2.0 * (d + dv) * (double)(b * h * nq * nk));
    assert_int_equal(pr.fused.memory.peak_bytes, q + o + k + vv + ws);
    assert_int_equal(pr.naive.bytes, q + o + k + vv + 4 * b * h * nq * nk * e);
    assert_true(pr.naive_intensity_limit == (double)(d + dv) / 2 / e);
    /* head_dim_v = d, and a NULL variant, are clattn_model_predict. */
    clattn_prediction plain, same;
    v.head_dim_v = d;
    assert_int_equal(clattn_model_predict(&p, &dev, &plain), CLATTN_OK);
    assert_int_equal(clattn_model_predict_variant(&p, &v, &dev, &same), CLATTN_OK);
    assert_memory_equal(&plain, &same, sizeof plain);
    assert_int_equal(clattn_model_predict_variant(&p, NULL, &dev, &same), CLATTN_OK);
    assert_memory_equal(&plain, &same, sizeof plain);
}

/* A mask's bytes by hand: every query head reads the elements of the pairs
 * its tiles compute; the buffer joins the fused plan. */
static void mask_bytes_by_hand(void **state)
{
    (void)state;
    const uint64_t b = 2, h = 4, nq = 70, nk = 130;
    clattn_model_problem p = problem_of(shape_of(b, h, 2, nq, nk, 64, CLATTN_F16),
                                        CLATTN_CAUSAL_TOP_LEFT, 32, 64);
    clattn_model_device dev = seed_device();
    clattn_prediction plain, masked;
    assert_int_equal(clattn_model_predict(&p, &dev, &plain), CLATTN_OK);
    clattn_model_variant v;
    clattn_model_default_variant(&v);
    v.mask_kind = CLATTN_MASK_ADD;
    v.mask_dtype = CLATTN_F16;
    v.mask_batch = b;
    v.mask_heads = 1;
    assert_int_equal(clattn_model_predict_variant(&p, &v, &dev, &masked), CLATTN_OK);
    /* Top-left, 32-row blocks: block i sees keys [0, 32 (i + 1)) rounded up
     * to 64: 64, 64, 128 (the last block, rows 64..69, bound 96 -> 128). */
    const uint64_t computed = 32 * 64 + 32 * 64 + 6 * 128;
    assert_int_equal(plain.blocks.computed_pairs, computed);
    assert_int_equal(masked.fused.bytes, plain.fused.bytes + 2 * h * b * computed);
    assert_true(masked.fused.flops == plain.fused.flops);
    assert_int_equal(masked.fused.memory.peak_bytes,
                     plain.fused.memory.peak_bytes + b * nq * nk * 2);
    assert_int_equal(masked.naive.bytes, plain.naive.bytes);
    v.mask_kind = CLATTN_MASK_BOOL; /* one byte, whatever mask_dtype says */
    v.mask_heads = h;
    assert_int_equal(clattn_model_predict_variant(&p, &v, &dev, &masked), CLATTN_OK);
    assert_int_equal(masked.fused.bytes, plain.fused.bytes + h * b * computed);
    assert_int_equal(masked.fused.memory.peak_bytes,
                     plain.fused.memory.peak_bytes + b * h * nq * nk);
}

static void variant_bad_arguments(void **state)
{
    (void)state;
    clattn_model_problem p = problem_of(shape_of(2, 4, 2, 8, 8, 16, CLATTN_F32),
                                        CLATTN_CAUSAL_NONE, 16, 16);
    clattn_model_device dev = seed_device();
    clattn_prediction pr;
    clattn_model_variant v;
    memset(&v, 0, sizeof v); /* struct_size not set up */
    assert_int_equal(clattn_model_predict_variant(&p, &v, &dev, &pr), CLATTN_EINVAL);
    clattn_model_default_variant(&v);
    v.window_left = -2;
    assert_int_equal(clattn_model_predict_variant(&p, &v, &dev, &pr), CLATTN_EINVAL);
    clattn_model_default_variant(&v);
    v.mask_kind = CLATTN_MASK_ADD;
    v.mask_heads = 3;
    assert_int_equal(clattn_model_predict_variant(&p, &v, &dev, &pr), CLATTN_EINVAL);
    v.mask_heads = 4;
    v.mask_dtype = (clattn_dtype)9;
    assert_int_equal(clattn_model_predict_variant(&p, &v, &dev, &pr), CLATTN_EINVAL);
    clattn_model_default_variant(&v);
    v.head_dim_v = CLATTN_HEAD_DIM_MAX + 1;
    assert_int_equal(clattn_model_predict_variant(&p, &v, &dev, &pr), CLATTN_EINVAL);
    clattn_model_default_variant(NULL); /* NULL-safe */
}

/* ------------------------------------------------------------ KV caches */

static clattn_model_cache cache_of(clattn_kv_type k, clattn_kv_type v)
{
    clattn_model_cache c;
    clattn_model_default_cache(&c);
    c.k_type = k;
    c.v_type = v;
    return c;
}

/* K and V in their types, written out: B = 2, Hkv = 2, Nk = 1000, d = 128,
 * fp16, one query of H = 8 heads per sequence (Q and O 4096 bytes each). */
static void cache_types_by_hand(void **state)
{
    (void)state;
    clattn_model_problem p = problem_of(shape_of(2, 8, 2, 1, 1000, 128, CLATTN_F16),
                                        CLATTN_CAUSAL_NONE, 64, 64);
    clattn_model_device dev = seed_device();
    clattn_prediction plain, pr;
    clattn_cache_estimate ce;
    const uint64_t qo = 2 * 8 * 1 * 128 * 2; /* Q, and O */
    assert_int_equal(clattn_model_predict(&p, &dev, &plain), CLATTN_OK);
    assert_int_equal(plain.fused.bytes, 2 * 2 * 2 * 1000 * 128 * 2 + 2 * qo); /* 2,056,192 */
    /* The plain cache, and a NULL one, are clattn_model_predict. */
    clattn_model_cache c = cache_of(CLATTN_KV_DTYPE, CLATTN_KV_DTYPE);
    assert_int_equal(clattn_model_predict_cache(&p, NULL, &c, &dev, &pr, &ce), CLATTN_OK);
    assert_memory_equal(&plain, &pr, sizeof pr);
    assert_int_equal(ce.k_row_bytes, 256);
    assert_int_equal(ce.k_bytes + ce.v_bytes, ce.dtype_kv_bytes);
    assert_int_equal(clattn_model_predict_cache(&p, NULL, NULL, &dev, &pr, NULL), CLATTN_OK);
    assert_memory_equal(&plain, &pr, sizeof pr);

    /* q8_0: 34 bytes per 32 values, a row of 128 is 136 bytes. */
    c = cache_of(CLATTN_KV_Q8_0, CLATTN_KV_Q8_0);
    assert_int_equal(clattn_model_predict_cache(&p, NULL, &c, &dev, &pr, &ce), CLATTN_OK);
    assert_int_equal(ce.k_row_bytes, 136);
    assert_int_equal(ce.k_bytes, 2 * 2 * 1000 * 136); /* 544,000 */
    assert_int_equal(ce.v_bytes, 544000);
    assert_int_equal(ce.dtype_kv_bytes, 2048000);
    assert_int_equal(pr.fused.bytes, 2 * 544000 + 2 * qo); /* 1,096,192 */
    assert_int_equal(pr.fused.memory.peak_bytes, 2 * 544000 + 2 * qo);
    assert_true(pr.fused.flops == plain.fused.flops);
    assert_int_equal(pr.naive.bytes, plain.naive.bytes); /* the naive path takes no cache */
    assert_memory_equal(&pr.traffic, &plain.traffic, sizeof pr.traffic);

    /* K q4_0 (18 bytes per 32: 72 a row), V fp8 (128 a row) and its one
     * fp32 scale; per head, one scale per KV head. */
    c = cache_of(CLATTN_KV_Q4_0, CLATTN_KV_FP8_E4M3);
    assert_int_equal(clattn_model_predict_cache(&p, NULL, &c, &dev, &pr, &ce), CLATTN_OK);
    assert_int_equal(ce.k_bytes, 2 * 2 * 1000 * 72);
    assert_int_equal(ce.v_bytes, 2 * 2 * 1000 * 128);
    assert_int_equal(ce.scale_bytes, 4);
    assert_int_equal(pr.fused.bytes, 288000 + 512000 + 4 + 2 * qo); /* 808,196 */
    assert_int_equal(pr.fused.memory.peak_bytes, 288000 + 512000 + 4 + 2 * qo);
    c.kv_scale_per_head = 1;
    assert_int_equal(clattn_model_predict_cache(&p, NULL, &c, &dev, &pr, &ce), CLATTN_OK);
    assert_int_equal(ce.scale_bytes, 2 * 4);
    /* fp32 queries with an fp8 cache: the cache's bytes, the queries' own. */
    clattn_model_problem p32 = p;
    p32.shape.dtype = CLATTN_F32;
    c = cache_of(CLATTN_KV_FP8_E4M3, CLATTN_KV_FP8_E4M3);
    assert_int_equal(clattn_model_predict_cache(&p32, NULL, &c, &dev, &pr, &ce), CLATTN_OK);
    assert_int_equal(pr.fused.bytes, 2 * 2 * 2 * 1000 * 128 + 8 + 2 * 2 * qo);
}

/* Pages of 256 keys: the same K/V rows read, the block table's entries of
 * the pages holding each sequence's keys read, and the plan holding the
 * pages and the table. */
static void cache_pages_by_hand(void **state)
{
    (void)state;
    clattn_model_problem p = problem_of(shape_of(2, 8, 2, 1, 1000, 128, CLATTN_F16),
                                        CLATTN_CAUSAL_NONE, 64, 64);
    clattn_model_device dev = seed_device();
    clattn_prediction pr;
    clattn_cache_estimate ce;
    const uint64_t qo = 2 * 8 * 128 * 2;
    clattn_model_cache c = cache_of(CLATTN_KV_Q8_0, CLATTN_KV_Q8_0);
    c.page_size = 256;
    assert_int_equal(clattn_model_predict_cache(&p, NULL, &c, &dev, &pr, &ce), CLATTN_OK);
    /* ceil(1000 / 256) = 4 pages a sequence: 8 entries, 32 bytes. */
    assert_int_equal(ce.table_bytes, 2 * 4 * 4);
    assert_int_equal(pr.fused.bytes, 2 * 544000 + qo + qo + 32);
    /* 8 pages of Hkv x 256 rows of 136 bytes, K and V; the table B x 4. */
    assert_int_equal(ce.kv_rows, 8 * 256);
    assert_int_equal(ce.k_buffer_bytes, 8 * 2 * 256 * 136); /* 557,056 */
    assert_int_equal(ce.table_buffer_bytes, 32);
    assert_int_equal(pr.fused.memory.peak_bytes, 2 * 557056 + 2 * qo + 32);
    /* A pool of 100 pages, a table of 10 entries a sequence. */
    c.num_pages = 100;
    c.block_table_stride = 10;
    assert_int_equal(clattn_model_predict_cache(&p, NULL, &c, &dev, &pr, &ce), CLATTN_OK);
    assert_int_equal(ce.k_buffer_bytes, 100 * 2 * 256 * 136);
    assert_int_equal(ce.table_buffer_bytes, 2 * 10 * 4);
    assert_int_equal(pr.fused.bytes, 2 * 544000 + 2 * qo + 32); /* reads are the same */
    assert_string_equal(pr.fused.memory.largest_name, "K");
    /* Lengths 1000 and 17: 4 + 1 entries; the second sequence's rows alone. */
    static const uint32_t lens[2] = { 1000, 17 };
    p.kv_lens = lens;
    c.num_pages = 0;
    c.block_table_stride = 0;
    c.page_size = 16;
    assert_int_equal(clattn_model_predict_cache(&p, NULL, &c, &dev, &pr, &ce), CLATTN_OK);
    assert_int_equal(ce.table_bytes, 4 * (63 + 2));
    assert_int_equal(ce.k_bytes, 2 * (1000 + 17) * 136);
    assert_int_equal(pr.fused.bytes, 2 * 2 * 1017 * 136 + 2 * qo + 4 * 65);
}

/* A packed batch: queries 4 and 1, keys 1000 and 300, bottom-right; the
 * tensors hold the sequences' tokens and nothing more, O the packed rows. */
static void cache_packed_by_hand(void **state)
{
    (void)state;
    static const uint32_t q_lens[2] = { 4, 1 }, kv_lens[2] = { 1000, 300 };
    clattn_model_problem p = problem_of(shape_of(2, 8, 2, 4, 1000, 128, CLATTN_F16),
                                        CLATTN_CAUSAL_BOTTOM_RIGHT, 64, 64);
    p.kv_lens = kv_lens;
    clattn_model_device dev = seed_device();
    clattn_prediction pr;
    clattn_cache_estimate ce;
    clattn_model_cache c = cache_of(CLATTN_KV_DTYPE, CLATTN_KV_DTYPE);
    c.packed = 1;
    c.q_lens = q_lens;
    assert_int_equal(clattn_model_predict_cache(&p, NULL, &c, &dev, &pr, &ce), CLATTN_OK);
    const uint64_t q_row = 8 * 128 * 2, kv_row = 2 * 2 * 128 * 2; /* K and V of a token */
    assert_int_equal(ce.q_rows, 5);
    assert_int_equal(ce.kv_rows, 1300);
    assert_int_equal(ce.seqlens_bytes, 2 * 3 * 4);
    assert_int_equal(pr.batch.kv_rows_read, 1300);
    assert_int_equal(pr.fused.bytes, 5 * q_row + 5 * q_row + 1300 * kv_row + 24); /* 1,351,704 */
    assert_int_equal(pr.fused.memory.peak_bytes, 2 * 5 * q_row + 1300 * kv_row + 24);
    /* Visible: 997 + 998 + 999 + 1000 and 300; computed: every pair of the
     * one query block of each, 4 x 1000 + 300. */
    assert_int_equal(pr.batch.visible_pairs, 3994 + 300);
    assert_int_equal(pr.batch.computed_pairs, 4300);
    assert_true(pr.fused.flops == 2.0 * 256 * 8 * 4300);
    /* Padded with q_lens: the same reads but O whole, and B Nq, B Nk rows held. */
    c.packed = 0;
    assert_int_equal(clattn_model_predict_cache(&p, NULL, &c, &dev, &pr, &ce), CLATTN_OK);
    assert_int_equal(pr.fused.bytes, 5 * q_row + 8 * q_row + 1300 * kv_row);
    assert_int_equal(ce.q_rows, 8);
    assert_int_equal(ce.kv_rows, 2000);
    /* A sequence of no query reads nothing of its own. */
    static const uint32_t none[2] = { 4, 0 };
    c.q_lens = none;
    assert_int_equal(clattn_model_predict_cache(&p, NULL, &c, &dev, &pr, &ce), CLATTN_OK);
    assert_int_equal(pr.batch.kv_rows_read, 1000);
    assert_int_equal(pr.fused.bytes, 4 * q_row + 8 * q_row + 1000 * kv_row);
}

/* Tokens that fit and the time per token, by arithmetic: 32 layers of
 * Hkv = 8, d = 128, q8_0 in pages of 16, in 10 GiB. */
static void kv_capacity_by_hand(void **state)
{
    (void)state;
    clattn_model_problem p = problem_of(shape_of(8, 32, 8, 1, 4096, 128, CLATTN_F16),
                                        CLATTN_CAUSAL_BOTTOM_RIGHT, 64, 64);
    clattn_model_device dev;
    clattn_model_default_device(&dev);
    dev.bandwidth = 1e12;
    dev.peak_flops = 1e14;
    clattn_model_cache c = cache_of(CLATTN_KV_Q8_0, CLATTN_KV_Q8_0);
    c.page_size = 16;
    clattn_kv_capacity k;
    assert_int_equal(clattn_model_kv_capacity(&p, NULL, &c, 32, 10 * GiB, &dev, &k), CLATTN_OK);
    assert_int_equal(k.token_bytes, 32 * 8 * (136 + 136)); /* 69,632 */
    assert_int_equal(k.page_bytes, 69632 * 16);           /* 1,114,112 */
    assert_int_equal(k.free_bytes, 10 * GiB);
    /* 10 GiB / 1,114,112 = 9637.6: 9637 pages, 154,192 tokens. */
    assert_int_equal(k.pages, 9637);
    assert_true(9637 * k.page_bytes <= 10 * GiB && 9638 * k.page_bytes > 10 * GiB);
    assert_int_equal(k.tokens, 9637 * 16);
    assert_int_equal(k.sequence_pages, 4096 / 16);
    assert_int_equal(k.sequences, 9637 / 256); /* 37 */
    assert_int_equal(k.batch_pages, 8 * 256);
    assert_int_equal(k.batch_bytes, 2048 * k.page_bytes);
    assert_int_equal(k.fit, CLATTN_FIT_OK);
    assert_int_equal(k.alloc_limited, 0);
    /* A step: per layer K and V of 8 x 8 x 4096 rows of 136 bytes, Q and
     * O 8 x 32 x 128 x 2 each, entries 8 x 256 x 4; at 1 TB/s. */
    const uint64_t layer = 2 * 8 * 8 * 4096 * 136 + 2 * 8 * 32 * 128 * 2 + 8 * 256 * 4;
    assert_int_equal(k.step_bytes, 32 * layer);
    assert_true(fabs(k.layer_time_s - (double)layer / 1e12) < 1e-15);
    assert_true(fabs(k.step_time_s - 32 * (double)layer / 1e12) < 1e-12);
    assert_true(fabs(k.tokens_per_s - 8 / k.step_time_s) < 1e-6 * k.tokens_per_s);
    assert_int_equal(k.bound, CLATTN_BOUND_MEMORY);
    assert_true(k.step_flops == 32.0 * 4 * 128 * 8 * 32 * 4096);

    /* A known max allocation bounds one layer's K buffer: 64 MiB over
     * 8 x 16 x 136 bytes a page is 3855 pages. */
    dev.max_alloc_bytes = 64 * MiB;
    assert_int_equal(clattn_model_kv_capacity(&p, NULL, &c, 32, 10 * GiB, &dev, &k), CLATTN_OK);
    assert_int_equal(k.pages, 67108864 / 17408);
    assert_int_equal(k.alloc_limited, 1);
    assert_int_equal(k.fit, CLATTN_FIT_OK); /* 2048 pages still fit */
    dev.max_alloc_bytes = 0;

    /* fp8, unpaged: 65,536 bytes a token, the 32 layers' 2 scales first. */
    c = cache_of(CLATTN_KV_FP8_E4M3, CLATTN_KV_FP8_E4M3);
    assert_int_equal(clattn_model_kv_capacity(&p, NULL, &c, 32, 1 * GiB, &dev, &k), CLATTN_OK);
    assert_int_equal(k.token_bytes, 32 * 8 * 256);
    assert_int_equal(k.scale_bytes, 32 * 2 * 4);
    assert_int_equal(k.pages, (GiB - 256) / 65536); /* 16383 tokens */
    assert_int_equal(k.tokens, 16383);
    assert_int_equal(k.sequences, 3);
    assert_int_equal(k.batch_bytes, 8 * 4096 * 65536ull + 256);
    assert_int_equal(k.fit, CLATTN_FIT_OVER_CAPACITY);

    /* Unknown memory: the counts unknown, the step still priced. */
    assert_int_equal(clattn_model_kv_capacity(&p, NULL, &c, 32, 0, &dev, &k), CLATTN_OK);
    assert_int_equal(k.tokens, 0);
    assert_int_equal(k.fit, CLATTN_FIT_UNKNOWN);
    assert_true(k.step_time_s > 0);
    /* The device's capacity stands in for free memory. */
    dev.capacity_bytes = 1 * GiB;
    assert_int_equal(clattn_model_kv_capacity(&p, NULL, &c, 32, 0, &dev, &k), CLATTN_OK);
    assert_int_equal(k.tokens, 16383);
    /* Per-sequence contexts: the batch's pages at its own lengths. */
    static const uint32_t lens[8] = { 4096, 1, 0, 17, 4096, 4096, 100, 2 };
    p.kv_lens = lens;
    c = cache_of(CLATTN_KV_Q4_0, CLATTN_KV_Q4_0);
    c.page_size = 16;
    assert_int_equal(clattn_model_kv_capacity(&p, NULL, &c, 2, 0, &dev, &k), CLATTN_OK);
    assert_int_equal(k.token_bytes, 2 * 8 * (72 + 72));
    assert_int_equal(k.batch_pages, 256 + 1 + 0 + 2 + 256 + 256 + 7 + 1);
    assert_true(fabs(k.tokens_per_s - 7 / k.step_time_s) < 1e-6 * k.tokens_per_s);
}

static void cache_bad_arguments(void **state)
{
    (void)state;
    clattn_model_problem p = problem_of(shape_of(2, 4, 2, 8, 64, 64, CLATTN_F16),
                                        CLATTN_CAUSAL_NONE, 16, 16);
    clattn_model_device dev = seed_device();
    clattn_prediction pr;
    clattn_kv_capacity k;
    clattn_model_cache c;
    memset(&c, 0, sizeof c); /* struct_size not set up */
    assert_int_equal(clattn_model_predict_cache(&p, NULL, &c, &dev, &pr, NULL), CLATTN_EINVAL);
    c = cache_of((clattn_kv_type)9, CLATTN_KV_DTYPE);
    assert_int_equal(clattn_model_predict_cache(&p, NULL, &c, &dev, &pr, NULL), CLATTN_EINVAL);
    clattn_model_problem odd = p;
    odd.shape.head_dim = 48; /* not a multiple of a block's 32 */
    c = cache_of(CLATTN_KV_Q8_0, CLATTN_KV_DTYPE);
    assert_int_equal(clattn_model_predict_cache(&odd, NULL, &c, &dev, &pr, NULL), CLATTN_EINVAL);
    c = cache_of(CLATTN_KV_DTYPE, CLATTN_KV_FP8_E4M3); /* fp8 takes any d */
    assert_int_equal(clattn_model_predict_cache(&odd, NULL, &c, &dev, &pr, NULL), CLATTN_OK);
    clattn_model_variant v;
    clattn_model_default_variant(&v);
    v.head_dim_v = 40; /* V's rows: q4_0 needs a multiple of 32 */
    c = cache_of(CLATTN_KV_DTYPE, CLATTN_KV_Q4_0);
    assert_int_equal(clattn_model_predict_cache(&p, &v, &c, &dev, &pr, NULL), CLATTN_EINVAL);
    c = cache_of(CLATTN_KV_DTYPE, CLATTN_KV_DTYPE);
    c.packed = 1;
    c.page_size = 16;
    assert_int_equal(clattn_model_predict_cache(&p, NULL, &c, &dev, &pr, NULL), CLATTN_EINVAL);
    c = cache_of(CLATTN_KV_DTYPE, CLATTN_KV_DTYPE);
    c.num_pages = 4; /* without page_size */
    assert_int_equal(clattn_model_predict_cache(&p, NULL, &c, &dev, &pr, NULL), CLATTN_EINVAL);
    c = cache_of(CLATTN_KV_DTYPE, CLATTN_KV_DTYPE);
    c.page_size = 16;
    c.block_table_stride = 3; /* 64 keys take 4 pages */
    assert_int_equal(clattn_model_predict_cache(&p, NULL, &c, &dev, &pr, NULL), CLATTN_EINVAL);
    static const uint32_t q_lens[2] = { 8, 9 };
    c = cache_of(CLATTN_KV_DTYPE, CLATTN_KV_DTYPE);
    c.q_lens = q_lens; /* 9 > Nq */
    assert_int_equal(clattn_model_predict_cache(&p, NULL, &c, &dev, &pr, NULL), CLATTN_EINVAL);
    c.q_lens = NULL;
    assert_int_equal(clattn_model_kv_capacity(&p, NULL, &c, 0, 0, &dev, &k), CLATTN_EINVAL);
    assert_int_equal(clattn_model_kv_capacity(&p, NULL, &c, 1, 0, &dev, NULL), CLATTN_EINVAL);
    clattn_model_default_cache(NULL); /* NULL-safe */
}

/* The runtime's plan of a call with a cache (model_memory_options): the
 * tensors as stored, and the arrays beside them. */
static void cache_runtime_memory(void **state)
{
    (void)state;
    clattn_shape s = shape_of(2, 8, 2, 1, 1000, 128, CLATTN_F16);
    clattn_options o;
    clattn_default_options(&o);
    clattn_memory_plan plan, plain;
    assert_int_equal(model_memory_options(&s, &o, 0, CLATTN_PATH_FUSED, 0, &plan), CLATTN_OK);
    assert_int_equal(clattn_model_memory(&s, CLATTN_PATH_FUSED, 0, &plain), CLATTN_OK);
    assert_memory_equal(&plan, &plain, sizeof plan);
    /* q8_0 in 9 pages of 256 keys, a table of 4 entries a sequence. */
    static const int32_t table[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    o.k_type = o.v_type = CLATTN_KV_Q8_0;
    o.page_size = 256;
    o.num_pages = 9;
    o.block_table = table;
    assert_int_equal(model_memory_options(&s, &o, 0, CLATTN_PATH_FUSED, 100, &plan), CLATTN_OK);
    assert_int_equal(plan.peak_bytes, 2 * 9 * 2 * 256 * 136 + 2 * 4096 + 2 * 4 * 4 + 100);
    assert_string_equal(plan.largest_name, "K");
    /* The naive path's plan is the dtype's whatever the options say. */
    assert_int_equal(model_memory_options(&s, &o, 0, CLATTN_PATH_NAIVE, 0, &plan), CLATTN_OK);
    assert_int_equal(clattn_model_memory(&s, CLATTN_PATH_NAIVE, 0, &plain), CLATTN_OK);
    assert_memory_equal(&plan, &plain, sizeof plan);
    /* Packed: 2 query and 1300 key tokens, fp8 K with its scale, the offsets. */
    static const int32_t cu_q[3] = { 0, 1, 2 }, cu_k[3] = { 0, 1000, 1300 };
    static const float scale = 0.5f;
    clattn_default_options(&o);
    o.k_type = CLATTN_KV_FP8_E4M3;
    o.k_scale = &scale;
    o.cu_seqlens_q = cu_q;
    o.cu_seqlens_k = cu_k;
    assert_int_equal(model_memory_options(&s, &o, 0, CLATTN_PATH_FUSED, 0, &plan), CLATTN_OK);
    assert_int_equal(plan.peak_bytes, 2 * 2 * 8 * 128 * 2 + 1300 * 2 * 128 + 1300 * 2 * 256 +
                                          4 + 2 * 3 * 4);
    assert_int_equal(plan.largest_bytes, 1300 * 2 * 256); /* V, in the dtype */
}

/* One call over several devices: a decoding step split by keys halves the
 * time and doubles what fits; a causal prefill's key split leaves the
 * first device 3/4 of the FLOPs, the query split and the ring 1/2; host
 * bytes are the share's tensors; one query row has no query split. */
static void spread_by_hand(void **state)
{
    (void)state;
    clattn_model_device dev;
    clattn_model_default_device(&dev);
    dev.bandwidth = 4e12;
    dev.peak_flops = 6e14;
    dev.capacity_bytes = 64 * GiB;
    const clattn_model_link none = { 0, 0, 0 };
    clattn_spread_prediction sp;
    clattn_model_problem step = problem_of(shape_of(1, 32, 8, 1, 1 << 20, 128, CLATTN_F16),
                                           CLATTN_CAUSAL_BOTTOM_RIGHT, 64, 64);
    assert_int_equal(clattn_model_predict_spread(&step, &dev, 2, &none, &sp), CLATTN_OK);
    const clattn_spread_estimate *one = &sp.spread[CLATTN_SPREAD_ONE];
    const clattn_spread_estimate *keys = &sp.spread[CLATTN_SPREAD_KEYS];
    assert_true(one->possible && keys->possible);
    assert_false(sp.spread[CLATTN_SPREAD_QUERIES].possible);
    assert_false(sp.spread[CLATTN_SPREAD_RING].possible);
    assert_true(fabs(one->time_s / keys->time_s - 2) < 0.01);
    assert_int_equal(sp.best, CLATTN_SPREAD_KEYS);
    assert_true(keys->max_len >= 2 * one->max_len - 2 && keys->max_len <= 2 * one->max_len + 2);
    /* K and V of 2^19 keys, Q, O and the LSE of 32 rows. */
    const uint64_t kv = 2ull * 8 * (1 << 19) * 128 * 2, qo = 2ull * 32 * 128 * 2 + 32 * 4;
    assert_int_equal(keys->host_bytes, kv + qo);
    assert_int_equal(clattn_model_predict_spread(&step, &dev, 0, &none, &sp), CLATTN_EINVAL);

    clattn_model_problem pre = problem_of(shape_of(1, 32, 32, 65536, 65536, 128, CLATTN_F16),
                                          CLATTN_CAUSAL_BOTTOM_RIGHT, 128, 128);
    const clattn_model_link pcie = { 50e9, 0, 0 };
    assert_int_equal(clattn_model_predict_spread(&pre, &dev, 2, &pcie, &sp), CLATTN_OK);
    clattn_prediction whole;
    assert_int_equal(clattn_model_predict(&pre, &dev, &whole), CLATTN_OK);
    const double flops_s = whole.fused.compute_time_s;
    const double key_share = sp.spread[CLATTN_SPREAD_KEYS].compute_s / flops_s;
    const double row_share = sp.spread[CLATTN_SPREAD_QUERIES].compute_s / flops_s;
    const double ring_share = sp.spread[CLATTN_SPREAD_RING].compute_s / flops_s;
    assert_true(fabs(key_share - 0.75) < 0.01);
    assert_true(fabs(row_share - 0.5) < 0.01);
    assert_true(fabs(ring_share - 0.5) < 0.01);
    /* The ring's peer bytes: one block of K and V, sent on once. */
    assert_int_equal(sp.spread[CLATTN_SPREAD_RING].peer_bytes, 2ull * 32 * 32768 * 128 * 2);
    /* Host arrays at 50 GB/s: the query split reads all of K and V. */
    const uint64_t q_half = 32ull * 32768 * 128 * 2, kv_all = 2ull * 32 * 65536 * 128 * 2;
    assert_int_equal(sp.spread[CLATTN_SPREAD_QUERIES].host_bytes,
                     2 * q_half + kv_all + 32ull * 32768 * 4);
    assert_true(fabs(sp.spread[CLATTN_SPREAD_QUERIES].transfer_s -
                     (double)(2 * q_half + kv_all + 32ull * 32768 * 4) / 50e9) < 1e-9);
}

/* A device's ceilings as the model's device: each figure carried over,
 * the FLOP rate the dtype's, fp32's standing in where no 16-bit rate is
 * known, an unknown figure 0. */
static void device_from_ceilings(void **state)
{
    (void)state;
    clattn_ceilings c;
    memset(&c, 0, sizeof c);
    c.global_mem_bytes = (clattn_figure){ 80.0 * (double)GiB, CLATTN_SRC_TABLE };
    c.max_alloc_bytes = (clattn_figure){ 20.0 * (double)GiB, CLATTN_SRC_REPORTED };
    c.cache_bytes = (clattn_figure){ 50.0 * (double)MiB, CLATTN_SRC_MEASURED };
    c.bandwidth = (clattn_figure){ 3e12, CLATTN_SRC_MEASURED };
    c.flops_f32 = (clattn_figure){ 60e12, CLATTN_SRC_MEASURED };
    c.flops_f16 = (clattn_figure){ 900e12, CLATTN_SRC_MEASURED };
    c.launch_latency_s = (clattn_figure){ 4e-6, CLATTN_SRC_MEASURED };
    clattn_model_device d;
    clattn_model_device_from_ceilings(&c, CLATTN_F16, &d);
    assert_int_equal(d.capacity_bytes, 80 * GiB);
    assert_int_equal(d.max_alloc_bytes, 20 * GiB);
    assert_int_equal(d.cache_bytes, 50 * MiB);
    assert_true(d.bandwidth == 3e12 && d.peak_flops == 900e12 && d.launch_latency_s == 4e-6);
    clattn_model_device_from_ceilings(&c, CLATTN_BF16, &d);
    assert_true(d.peak_flops == 900e12);
    clattn_model_device_from_ceilings(&c, CLATTN_F32, &d);
    assert_true(d.peak_flops == 60e12);
    c.flops_f16 = (clattn_figure){ 0, CLATTN_SRC_NONE };
    clattn_model_device_from_ceilings(&c, CLATTN_F16, &d);
    assert_true(d.peak_flops == 60e12);
    c.launch_latency_s = (clattn_figure){ 0, CLATTN_SRC_NONE };
    clattn_model_device_from_ceilings(&c, CLATTN_F16, &d);
    assert_true(d.launch_latency_s == 0);
    clattn_model_device_from_ceilings(NULL, CLATTN_F16, &d); /* no crash */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed_traffic_per_head),
        cmocka_unit_test(seed_traffic_all_heads),
        cmocka_unit_test(seed_fit_limits),
        cmocka_unit_test(seed_oom_at_16384),
        cmocka_unit_test(seed_path_limits),
        cmocka_unit_test(seed_intensity_and_ridge),
        cmocka_unit_test(seed_roofline_times),
        cmocka_unit_test(seed_causal_blocks),
        cmocka_unit_test(gqa_traffic_and_memory),
        cmocka_unit_test(unequal_lengths),
        cmocka_unit_test(compute_bound_lengths),
        cmocka_unit_test(causal_small_cases_by_hand),
        cmocka_unit_test(causal_sweep_against_brute_force),
        cmocka_unit_test(causal_prediction),
        cmocka_unit_test(unknown_device),
        cmocka_unit_test(max_alloc_verdict),
        cmocka_unit_test(decode_worked_example),
        cmocka_unit_test(decode_kv_lens_by_hand),
        cmocka_unit_test(decode_kv_lens_causal_by_hand),
        cmocka_unit_test(decode_full_lengths_change_nothing),
        cmocka_unit_test(decode_kv_lens_against_brute_force),
        cmocka_unit_test(decode_bad_arguments),
        cmocka_unit_test(bad_arguments),
        cmocka_unit_test(overflow),
        cmocka_unit_test(windows_against_brute_force),
        cmocka_unit_test(window_long_sequence_by_hand),
        cmocka_unit_test(head_dim_v_by_hand),
        cmocka_unit_test(mask_bytes_by_hand),
        cmocka_unit_test(variant_bad_arguments),
        cmocka_unit_test(cache_types_by_hand),
        cmocka_unit_test(cache_pages_by_hand),
        cmocka_unit_test(cache_packed_by_hand),
        cmocka_unit_test(kv_capacity_by_hand),
        cmocka_unit_test(spread_by_hand),
        cmocka_unit_test(device_from_ceilings),
        cmocka_unit_test(cache_bad_arguments),
        cmocka_unit_test(cache_runtime_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
