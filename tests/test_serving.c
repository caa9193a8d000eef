/* SPDX-License-Identifier: MIT */
/*
 * Serving-shaped attention against the CPU reference: decoding (Nq = 1..17)
 * over long caches (Nk up to 2^17), split-KV with chunk boundaries that are
 * not multiples of anything, per-sequence KV and query lengths (0, 1, mixed
 * in one batch), both causal alignments, grouped-query ratios 1, 4, 8 and
 * multi-query, fp16 and fp32, the LSE, the merge of two halves, and the
 * caller's own layouts ([B, N, H, d], a view into a larger KV cache,
 * tensors at offsets in one buffer). Every fused kernel the device runs and
 * the naive path are checked. Exits 77 without an OpenCL device.
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "clattn/clattn.h"
#include "device_suite.h"

static clattn_ctx *ctx;

/* A problem: shape, options and contiguous host inputs. */
struct problem {
    clattn_shape s;
    clattn_options o;
    uint32_t kv_lens[16], q_lens[16];
    void *q, *k, *v;
};

static size_t esize(const struct problem *p)
{
    return clattn_dtype_size(p->s.dtype);
}

static void problem_init(struct problem *p, size_t b, size_t h, size_t hkv, size_t nq, size_t nk,
                         size_t d, clattn_dtype dt, clattn_causal causal, uint64_t seed)
{
    memset(p, 0, sizeof *p);
    p->s = (clattn_shape){ b, h, hkv, nq, nk, d, dt };
    clattn_default_options(&p->o);
    p->o.causal = causal;
    const size_t nqe = clattn_shape_q_elems(&p->s), nke = clattn_shape_kv_elems(&p->s);
    p->q = malloc(nqe * esize(p));
    p->k = malloc(nke * esize(p));
    p->v = malloc(nke * esize(p));
    assert_true(p->q && p->k && p->v);
    clattn_random_fill(p->q, nqe, dt, seed);
    clattn_random_fill(p->k, nke, dt, seed + 1);
    clattn_random_fill(p->v, nke, dt, seed + 2);
}

static void problem_free(struct problem *p)
{
    free(p->q);
    free(p->k);
    free(p->v);
}

static double get(const void *a, size_t i, clattn_dtype dt)
{
    return dt == CLATTN_F16 ? clattn_f16_to_f32(((const uint16_t *)a)[i]) : ((const float *)a)[i];
}

/* O (contiguous) and LSE against the reference; fails with `what`. */
static void compare(const struct problem *p, const void *out, const float *lse, const char *what,
                    const clattn_run_info *info)
{
    const size_t n = clattn_shape_q_elems(&p->s), rows = n / p->s.head_dim;
    double *ref = malloc(n * sizeof *ref), *ref_lse = malloc(rows * sizeof *ref_lse);
    assert_true(ref && ref_lse);
    assert_int_equal(clattn_reference_ex(&p->s, &p->o, p->q, p->k, p->v, ref, ref_lse),
                     CLATTN_OK);
    double tol_abs, tol_rel, diff2 = 0, ref2 = 0;
    clattn_tolerance(p->s.dtype, &tol_abs, &tol_rel);
    for (size_t i = 0; i < n; i++) {
        const double x = get(out, i, p->s.dtype), e = fabs(x - ref[i]);
        if (!(e <= tol_abs))
            fail_msg("%s [%s, %u splits]: O[%zu] = %g, the reference %g", what, info->kernel,
                     info->splits, i, x, ref[i]);
        diff2 += e * e;
        ref2 += ref[i] * ref[i];
    }
    if (ref2 > 0 && sqrt(diff2 / ref2) > tol_rel)
        fail_msg("%s [%s]: rel_l2 %.3e", what, info->kernel, sqrt(diff2 / ref2));
    for (size_t r = 0; lse && r < rows; r++) {
        const double want = ref_lse[r];
        if (isinf(want) ? lse[r] != want : !(fabs(lse[r] - want) <= 1e-3 * (1 + fabs(want))))
            fail_msg("%s [%s, %u splits]: LSE[%zu] = %g, the reference %g", what, info->kernel,
                     info->splits, r, lse[r], want);
    }
    free(ref);
    free(ref_lse);
}

/* Runs `p` on the path and kernel given, with `splits` (0: the library's
 * choice), and compares O and the LSE. */
static void run_one(struct problem *p, clattn_path path, clattn_fused_kernel kernel,
                    uint32_t splits, const char *what)
{
    const size_t n = clattn_shape_q_elems(&p->s), rows = n / p->s.head_dim;
    void *out = malloc(n * esize(p));
    float *lse = malloc(rows * sizeof *lse);
    assert_true(out && lse);
    memset(out, 0xff, n * esize(p)); /* NaN: an element left unwritten fails */
    p->o.path = path;
    p->o.fused_kernel = kernel;
    p->o.split_kv = splits;
    clattn_run_info info;
    int rc = clattn_attention_ex(ctx, &p->s, &p->o, p->q, p->k, p->v, out, lse, &info);
    if (rc < 0)
        fail_msg("%s: %s: %s", what, clattn_error_name(rc), clattn_last_error_detail());
    if (splits > 1 && path == CLATTN_PATH_FUSED && info.splits < 2 && p->s.kv_len > 256)
        fail_msg("%s: asked %u splits, ran %u", what, splits, info.splits);
    compare(p, out, lse, what, &info);
    free(out);
    free(lse);
}

/* --full (the heavy suite): every problem on every kernel at every split;
 * without it a sample that still runs each kernel, split and problem kind
 * (the default suite, which must finish on two loaded cores). */
static int full;

/* The naive path and every fused kernel the device runs, at the library's
 * split and at forced ones (without --full, a sample: AUTO's kernel at 7
 * chunks on every problem, each kernel on every other problem at one split
 * by turns, the naive path on every other problem). */
static void run_everywhere(struct problem *p, const char *what)
{
    static const uint32_t splits[] = { 0, 1, 3, 7 };
    static unsigned problems;
    const unsigned turn = problems++;
    if (full || turn % 2 == 0)
        run_one(p, CLATTN_PATH_NAIVE, CLATTN_FUSED_AUTO, 0, what);
    if (!full)
        run_one(p, CLATTN_PATH_FUSED, CLATTN_FUSED_AUTO, 7, what);
    clattn_kernel_info k;
    for (size_t i = 0; clattn_fused_kernel_info(i, &k) == 0; i++) {
        if (clattn_fused_kernel_usable(ctx, k.id, &p->s, NULL, 0) != 1)
            continue;
        if (!full && (i + turn) % 2)
            continue;
        for (size_t j = 0; j < sizeof splits / sizeof splits[0]; j++)
            if (full || j == (i + p->s.q_len) % 4)
                run_one(p, CLATTN_PATH_FUSED, k.id, splits[j], what);
    }
}

/* Decoding: Nq = 1..17 new tokens per sequence, GQA 1, 4, 8 and MQA. */
static void test_decode_shapes(void **state)
{
    (void)state;
    static const size_t nqs[] = { 1, 2, 5, 17 };
    static const size_t groups[][2] = { { 4, 4 }, { 8, 2 }, { 16, 2 }, { 8, 1 } };
    for (size_t g = 0; g < 4; g++) {
        for (size_t i = 0; i < 4; i++) {
            if (!full && g != i)
                continue; /* each group size and query count still runs once */
            struct problem p;
            char what[96];
            /* Sampled: fp32 and fp16 each with and without a mask. */
            const clattn_dtype dt = (full ? (g + i) % 2 : g / 2) ? CLATTN_F16 : CLATTN_F32;
            problem_init(&p, 2, groups[g][0], groups[g][1], nqs[i], 333, 64, dt,
                         i % 2 ? CLATTN_CAUSAL_BOTTOM_RIGHT : CLATTN_CAUSAL_NONE, 10 + g * 4 + i);
            snprintf(what, sizeof what, "decode H=%zu Hkv=%zu Nq=%zu", groups[g][0],
                     groups[g][1], nqs[i]);
            run_everywhere(&p, what);
            problem_free(&p);
        }
    }
}

/* A long cache: Nk = 2^17 - 5 (no multiple of any tile), one token. */
static void test_long_cache(void **state)
{
    (void)state;
    struct problem p;
    problem_init(&p, 1, 8, 2, 1, (1u << 17) - 5, 64, CLATTN_F32, CLATTN_CAUSAL_NONE, 40);
    run_one(&p, CLATTN_PATH_FUSED, CLATTN_FUSED_AUTO, 0, "Nk = 2^17 - 5");
    run_one(&p, CLATTN_PATH_FUSED, CLATTN_FUSED_AUTO, 13, "Nk = 2^17 - 5, 13 chunks");
    problem_free(&p);
    problem_init(&p, 1, 4, 1, 3, 70001, 32, CLATTN_F16, CLATTN_CAUSAL_BOTTOM_RIGHT, 41);
    run_one(&p, CLATTN_PATH_FUSED, CLATTN_FUSED_AUTO, 0, "Nk = 70001 fp16, bottom-right");
    problem_free(&p);
}

/* Many chunks per sequence, up to FUSED_SPLITS_MAX (256), at every head
 * dimension the tensor-core kernels take: the decode kernel's own combine
 * (cl/include/nv_chunk_merge.clh) holds 8 chunks per lane and 4 rows at a time, and
 * puts its arrival counters back for the next call, which the repeated
 * calls check. Lengths 0, 1 and partial; rows past a sequence's queries. */
static void test_many_chunks(void **state)
{
    (void)state;
    static const size_t dims[] = { 64, 128, 256 };
    static const uint32_t splits[] = { 2, 33, 100, 256, 33 }; /* 33 twice: counters reset */
    static const uint32_t kv[] = { 8200, 0, 1, 4097 };
    static const uint32_t ql[] = { 2, 1, 2, 1 };
    for (size_t i = 0; i < 3; i++) {
        struct problem p;
        const clattn_causal causal = i == 1 ? CLATTN_CAUSAL_BOTTOM_RIGHT : CLATTN_CAUSAL_NONE;
        problem_init(&p, 4, 16, 2, 2, 8200, dims[i], CLATTN_F16, causal, 90 + i);
        memcpy(p.kv_lens, kv, sizeof kv);
        memcpy(p.q_lens, ql, sizeof ql);
        p.o.kv_lens = p.kv_lens;
        p.o.q_lens = i == 2 ? p.q_lens : NULL;
        clattn_kernel_info k;
        for (size_t n = 0; clattn_fused_kernel_info(n, &k) == 0; n++) {
            if (clattn_fused_kernel_usable(ctx, k.id, &p.s, NULL, 0) != 1)
                continue;
            for (size_t j = 0; j < sizeof splits / sizeof splits[0]; j++) {
                /* Without --full, each kernel one of the first four
                 * splits, by turns, then 33 (the counters' reset). */
                if (!full && j != (n + i) % 4 && j != 4)
                    continue;
                char what[96];
                snprintf(what, sizeof what, "d=%zu, %u chunks asked", dims[i], splits[j]);
                run_one(&p, CLATTN_PATH_FUSED, k.id, splits[j], what);
            }
            /* cl/fused/combine.cl with a column's chunks summed in 8 parts, a
             * GPU's default (a CPU's is one: the combine_parts parameter). */
            p.o.kernel_params = "combine_parts=8";
            run_one(&p, CLATTN_PATH_FUSED, k.id, 100, "100 chunks, combine.cl in 8 parts");
            p.o.kernel_params = NULL;
        }
        problem_free(&p);
    }
}

/* Per-sequence lengths in one batch: 0 (no keys: zeros, LSE -inf), 1, a
 * length at a chunk edge, the full Nk; query lengths ragged too. */
static void test_sequence_lengths(void **state)
{
    (void)state;
    static const uint32_t kv[] = { 0, 1, 128, 257, 300, 33 };
    static const uint32_t ql[] = { 5, 1, 0, 3, 5, 2 };
    for (int causal = 0; causal < 3; causal++) {
        for (int dt = 0; dt < 2; dt++) {
            if (!full && (causal + dt) % 2)
                continue; /* each mask and dtype still runs */
            struct problem p;
            problem_init(&p, 6, 8, 2, 5, 300, 48, dt ? CLATTN_F16 : CLATTN_F32,
                         (clattn_causal)causal, 50 + causal * 2 + dt);
            memcpy(p.kv_lens, kv, sizeof kv);
            p.o.kv_lens = p.kv_lens;
            run_everywhere(&p, "kv_lens");
            memcpy(p.q_lens, ql, sizeof ql);
            p.o.q_lens = p.q_lens;
            run_everywhere(&p, "kv_lens and q_lens");
            problem_free(&p);
        }
    }
}

/* The device-side lengths and LSE of clattn_attention_ex_cl agree with the
 * host-side ones. */
static void test_device_side_lengths(void **state)
{
    (void)state;
    struct problem p;
    problem_init(&p, 3, 4, 2, 2, 200, 32, CLATTN_F32, CLATTN_CAUSAL_BOTTOM_RIGHT, 60);
    const uint32_t kv[3] = { 7, 200, 1 };
    const size_t nq = clattn_shape_q_elems(&p.s), nkv = clattn_shape_kv_elems(&p.s);
    const size_t rows = nq / p.s.head_dim;
    cl_context cl = clattn_cl_context(ctx);
    cl_int err;
    cl_mem b[6];
    const size_t sizes[6] = { nq * 4, nkv * 4, nkv * 4, nq * 4, rows * 4, sizeof kv };
    const void *host[6] = { p.q, p.k, p.v, NULL, NULL, kv };
    for (int i = 0; i < 6; i++) {
        b[i] = clCreateBuffer(cl, host[i] ? CL_MEM_COPY_HOST_PTR | CL_MEM_READ_ONLY
                                          : CL_MEM_READ_WRITE, sizes[i], (void *)host[i], &err);
        assert_int_equal(err, CL_SUCCESS);
    }
    clattn_extras ex = CLATTN_EXTRAS_INIT;
    ex.lse = b[4];
    ex.kv_lens = b[5];
    clattn_run_info info;
    cl_event done;
    assert_int_equal(clattn_attention_ex_cl(ctx, &p.s, &p.o, b[0], b[1], b[2], b[3], &ex, 0,
                                            NULL, &done, &info), CLATTN_OK);
    float *out = malloc(nq * 4), *lse = malloc(rows * 4);
    assert_int_equal(clEnqueueReadBuffer(clattn_cl_queue(ctx), b[3], CL_TRUE, 0, nq * 4, out, 1,
                                         &done, NULL), CL_SUCCESS);
    assert_int_equal(clEnqueueReadBuffer(clattn_cl_queue(ctx), b[4], CL_TRUE, 0, rows * 4, lse, 0,
                                         NULL, NULL), CL_SUCCESS);
    clReleaseEvent(done);
    memcpy(p.kv_lens, kv, sizeof kv);
    p.o.kv_lens = p.kv_lens; /* what the reference reads */
    compare(&p, out, lse, "device-side kv_lens", &info);
    /* A lengths buffer too small for B is refused. */
    ex.kv_lens = clCreateBuffer(cl, CL_MEM_READ_ONLY, 8, NULL, &err);
    assert_int_equal(clattn_attention_ex_cl(ctx, &p.s, NULL, b[0], b[1], b[2], b[3], &ex, 0,
                                            NULL, NULL, NULL), CLATTN_EINVAL);
    clReleaseMemObject(ex.kv_lens);
    for (int i = 0; i < 6; i++)
        clReleaseMemObject(b[i]);
    free(out);
    free(lse);
    problem_free(&p);
}

/* Sequence parallelism: the keys split in two, each half run alone with its
 * LSE, merged on the host and on the device, equal the one-shot result. */
static void test_merge_halves(void **state)
{
    (void)state;
    for (int dt = 0; dt < 2; dt++) {
        struct problem p;
        const clattn_dtype dtype = dt ? CLATTN_F16 : CLATTN_F32;
        problem_init(&p, 2, 4, 2, 3, 501, 40, dtype, CLATTN_CAUSAL_NONE, 70 + dt);
        const size_t nq = clattn_shape_q_elems(&p.s), rows = nq / p.s.head_dim, e = esize(&p);
        const size_t split = 222, d = p.s.head_dim;
        struct problem half[2] = { p, p };
        void *o[2], *merged = malloc(nq * e), *merged_cl = malloc(nq * e);
        float *lse[2], *mlse = malloc(rows * 4), *mlse_cl = malloc(rows * 4);
        for (int h = 0; h < 2; h++) {
            half[h].s.kv_len = h ? p.s.kv_len - split : split;
            const size_t nkv = clattn_shape_kv_elems(&half[h].s);
            half[h].k = malloc(nkv * e);
            half[h].v = malloc(nkv * e);
            for (size_t bh = 0; bh < p.s.batch * p.s.kv_heads; bh++) {
                const size_t from = (bh * p.s.kv_len + (h ? split : 0)) * d;
                memcpy((char *)half[h].k + bh * half[h].s.kv_len * d * e, (char *)p.k + from * e,
                       half[h].s.kv_len * d * e);
                memcpy((char *)half[h].v + bh * half[h].s.kv_len * d * e, (char *)p.v + from * e,
                       half[h].s.kv_len * d * e);
            }
            o[h] = malloc(nq * e);
            lse[h] = malloc(rows * 4);
            assert_int_equal(clattn_attention_ex(ctx, &half[h].s, &half[h].o, half[h].q,
                                                 half[h].k, half[h].v, o[h], lse[h], NULL),
                             CLATTN_OK);
        }
        assert_int_equal(clattn_merge(rows, d, dtype, o[0], lse[0], o[1], lse[1], merged, mlse),
                         CLATTN_OK);
        /* The same on the device, in place over the first half. */
        cl_int err;
        cl_mem b[4];
        const void *host[4] = { o[0], lse[0], o[1], lse[1] };
        const size_t sizes[4] = { nq * e, rows * 4, nq * e, rows * 4 };
        for (int i = 0; i < 4; i++) {
            b[i] = clCreateBuffer(clattn_cl_context(ctx), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                  sizes[i], (void *)host[i], &err);
            assert_int_equal(err, CL_SUCCESS);
        }
        assert_int_equal(clattn_merge_cl(ctx, rows, d, dtype, b[0], b[1], b[2], b[3], b[0], b[1],
                                         0, NULL, NULL), CLATTN_OK);
        clEnqueueReadBuffer(clattn_cl_queue(ctx), b[0], CL_TRUE, 0, nq * e, merged_cl, 0, NULL, NULL);
        clEnqueueReadBuffer(clattn_cl_queue(ctx), b[1], CL_TRUE, 0, rows * 4, mlse_cl, 0, NULL, NULL);
        clattn_run_info info = { .kernel = "clattn_merge" };
        compare(&p, merged, mlse, "merge of two halves", &info);
        snprintf(info.kernel, sizeof info.kernel, "clattn_merge_cl");
        compare(&p, merged_cl, mlse_cl, "merge of two halves", &info);
        for (int i = 0; i < 4; i++)
            clReleaseMemObject(b[i]);
        for (int h = 0; h < 2; h++) {
            free(half[h].k);
            free(half[h].v);
            free(o[h]);
            free(lse[h]);
        }
        free(merged);
        free(merged_cl);
        free(mlse);
        free(mlse_cl);
        problem_free(&p);
    }
}

/* Strided copy of a contiguous [B, heads, N, d] array into a layout. */
static void scatter(const void *src, void *dst, const clattn_layout *l, size_t b, size_t heads,
                    size_t n, size_t d, size_t e)
{
    for (size_t i = 0; i < b; i++)
        for (size_t h = 0; h < heads; h++)
            for (size_t t = 0; t < n; t++)
                memcpy((char *)dst + l->byte_offset +
                           (i * l->batch_stride + h * l->head_stride + t * l->token_stride) * e,
                       (const char *)src + (((i * heads + h) * n + t) * d) * e, d * e);
}

static void gather(const void *src, void *dst, const clattn_layout *l, size_t b, size_t heads,
                   size_t n, size_t d, size_t e)
{
    for (size_t i = 0; i < b; i++)
        for (size_t h = 0; h < heads; h++)
            for (size_t t = 0; t < n; t++)
                memcpy((char *)dst + (((i * heads + h) * n + t) * d) * e,
                       (const char *)src + l->byte_offset +
                           (i * l->batch_stride + h * l->head_stride + t * l->token_stride) * e,
                       d * e);
}

/* The caller's layouts: Q and O as [B, N, H, d]; K and V as views of Nk
 * tokens into a cache of Nmax with token stride above Hkv d; all four at
 * byte offsets in one host array. */
static void test_layouts(void **state)
{
    (void)state;
    for (int dt = 0; dt < 2; dt++) {
        struct problem p;
        problem_init(&p, 2, 8, 2, 9, 77, 64, dt ? CLATTN_F16 : CLATTN_F32,
                     dt ? CLATTN_CAUSAL_BOTTOM_RIGHT : CLATTN_CAUSAL_NONE, 80 + dt);
        const size_t B = 2, H = 8, Hk = 2, Nq = 9, Nk = 77, Nmax = 100, d = 64, e = esize(&p);
        clattn_layout ql = { Nq * H * d, d, H * d, 0 };
        clattn_layout kl = { Hk * Nmax * (d + 8), Nmax * (d + 8), d + 8, 0 };
        const size_t q_span = B * Nq * H * d, kv_span = B * Hk * Nmax * (d + 8);
        /* One array: Q, K, V, O one after the other, 64 bytes of slack each. */
        const size_t slot[4] = { 0, q_span + 32, q_span + kv_span + 64, q_span + 2 * kv_span + 96 };
        const size_t total = slot[3] + q_span + 32;
        char *all = malloc(total * e);
        assert_non_null(all);
        memset(all, 0x3c, total * e); /* gaps hold finite values */
        clattn_layout lq = ql, lk = kl, lv = kl, lo = ql;
        lq.byte_offset = slot[0] * e;
        lk.byte_offset = slot[1] * e;
        lv.byte_offset = slot[2] * e;
        lo.byte_offset = slot[3] * e;
        scatter(p.q, all, &lq, B, H, Nq, d, e);
        scatter(p.k, all, &lk, B, Hk, Nk, d, e);
        scatter(p.v, all, &lv, B, Hk, Nk, d, e);
        p.o.q_layout = lq;
        p.o.k_layout = lk;
        p.o.v_layout = lv;
        p.o.o_layout = lo;
        void *out = malloc(total * e), *flat = malloc(B * H * Nq * d * e);
        for (int path = 0; path < 2; path++) {
            memcpy(out, all, total * e);
            p.o.path = path ? CLATTN_PATH_FUSED : CLATTN_PATH_NAIVE;
            clattn_run_info info;
            int rc = clattn_attention(ctx, &p.s, &p.o, all, all, all, out, &info);
            if (rc < 0)
                fail_msg("layouts: %s", clattn_last_error_detail());
            gather(out, flat, &lo, B, H, Nq, d, e);
            clattn_options contiguous = p.o;
            memset(&contiguous.q_layout, 0, 4 * sizeof(clattn_layout));
            struct problem flat_p = p;
            flat_p.o = contiguous;
            compare(&flat_p, flat, NULL, "layouts", &info);
            /* Nothing outside O's rows was touched: Q, K and V as they were. */
            assert_memory_equal(out, all, slot[3] * e);
        }
        free(out);
        free(flat);
        free(all);
        problem_free(&p);
    }
}

int main(int argc, char **argv)
{
    full = device_suite_full(argc, argv);
    /* Longest first, so that --part 1/2 and 2/2 take about half each. */
    const struct CMUnitTest all[] = {
        cmocka_unit_test(test_decode_shapes),      cmocka_unit_test(test_many_chunks),
        cmocka_unit_test(test_sequence_lengths),   cmocka_unit_test(test_layouts),
        cmocka_unit_test(test_long_cache),         cmocka_unit_test(test_merge_halves),
        cmocka_unit_test(test_device_side_lengths),
    };
    return device_suite_main_parts(&ctx, "test_serving", "test_serving [--full] [--part K/N]",
                                   all, sizeof all / sizeof all[0], argc, argv);
}
