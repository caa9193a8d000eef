/* SPDX-License-Identifier: MIT */
/*
 * KV caches as engines keep them, on the device against the CPU reference:
 * K and V quantized (q8_0, q4_0, fp8 e4m3 with per-tensor and per-head
 * scales, each typed on its own) with fp32, fp16 and bf16 queries; paged
 * K and V (page sizes 1 to 256, scattered and shared pages, the head-major
 * and FlashAttention's token-major page layouts, sequences of 0 and 1 keys
 * and lengths not a multiple of a page) with host and device block tables;
 * packed (varlen) batches by cu_seqlens, host and device, with empty
 * sequences; GQA, both causal alignments, a window and softcap composed
 * with them, split-KV and the LSE. The device's paged and packed results
 * are checked against the reference of the same data laid out plainly (so
 * the gathers are checked, not shared), and the reference's own paging
 * against its plain form bit for bit. Every fused kernel that takes a case
 * runs it at the library's split (the portable kernel and the cpu
 * kernel's first layout at 3 chunks too; by turns without --full); the
 * portable and cpu kernels must
 * take every one, the cpu kernel in both its layouts (keys across the
 * lanes, rows across them) whatever the case's rows; nv-decode's two
 * register paths each on the caches they take (test_decode_register_paths).
 * Outputs are poisoned (NaN) first. Exits 77
 * without an OpenCL device.
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
#include "case_inputs.h"
#include "device_suite.h"

static clattn_ctx *ctx;

/* One problem in its plain form: contiguous Q [B, H, Nq, d], K and V
 * [B, Hkv, Nk, d] stored in the cache's types, per-sequence lengths. */
struct problem {
    clattn_shape s;
    clattn_options o;
    size_t dv;
    void *q, *k, *v;
    uint32_t kv_lens[8], q_lens[8];
    float k_scale[8], v_scale[8];
};

static size_t row_bytes(clattn_kv_type t, clattn_dtype dt, size_t d)
{
    return d / clattn_kv_block_values(t) * clattn_kv_block_bytes(t, dt);
}

/* Random values of the shape's dtype, quantized into `type` (fp8 scaled
 * by `scale`, so that the values span its range). */
static void *make_tensor(size_t rows, size_t d, clattn_dtype dt, clattn_kv_type type, float scale,
                         uint64_t seed)
{
    void *src = malloc(rows * d * clattn_dtype_size(dt));
    void *out = malloc(rows * row_bytes(type, dt, d) + 1);
    assert_true(src && out);
    clattn_random_fill(src, rows * d, dt, seed);
    assert_int_equal(clattn_quantize(type, dt, src, rows, d, scale, out), CLATTN_OK);
    free(src);
    return out;
}

static void problem_init(struct problem *p, size_t b, size_t h, size_t hkv, size_t nq, size_t nk,
                         size_t d, size_t dv, clattn_dtype dt, clattn_kv_type kt,
                         clattn_kv_type vt, clattn_causal causal, uint64_t seed)
{
    memset(p, 0, sizeof *p);
    case_shape(&p->s, &p->o, b, h, hkv, nq, nk, d, dv, dt, causal);
    p->dv = dv;
    p->o.k_type = kt;
    p->o.v_type = vt;
    for (size_t i = 0; i < 8; i++) {
        /* fp8 scales that put [-1, 1) over e4m3's range (up to 448, some saturated) */
        p->k_scale[i] = 0.002f * (float)(i + 1);
        p->v_scale[i] = 0.003f * (float)(i + 2);
    }
    if (kt == CLATTN_KV_FP8_E4M3)
        p->o.k_scale = p->k_scale;
    if (vt == CLATTN_KV_FP8_E4M3)
        p->o.v_scale = p->v_scale;
    const size_t nkv = b * hkv * nk;
    p->q = malloc(clattn_shape_q_elems(&p->s) * clattn_dtype_size(dt));
    assert_true(p->q);
    clattn_random_fill(p->q, clattn_shape_q_elems(&p->s), dt, seed);
    p->k = make_tensor(nkv, d, dt, kt, p->k_scale[0], seed + 1);
    p->v = make_tensor(nkv, dv, dt, vt, p->v_scale[0], seed + 2);
}

static void problem_free(struct problem *p)
{
    free(p->q);
    free(p->k);
    free(p->v);
}

static double out_value(clattn_dtype dt, const void *o, size_t i)
{
    return dt == CLATTN_F32   ? ((const float *)o)[i]
           : dt == CLATTN_F16 ? clattn_f16_to_f32(((const uint16_t *)o)[i])
                              : clattn_bf16_to_f32(((const uint16_t *)o)[i]);
}

/* How the device is handed the problem. */
struct form {
    size_t page_size;   /* 0: not paged */
    int token_major;    /* pages or packed tensors as [.., tokens, heads, d] */
    int shared;         /* sequences 0 and 1 share their first page */
    int packed;         /* Q, K, V, O packed by cu_seqlens */
    int device_tables;  /* block table and offsets in device buffers */
    const char *what;
};

/* The device's result in the plain [B, H, Nq, dv] form, rows past a
 * sequence's length zero (as the padded result has them). */
struct device_run {
    void *o;
    float *lse;
    clattn_run_info info;
};

/* Copies row (b, hk, t) of a plain [B, Hkv, N, d] tensor of `rb` bytes per
 * row to the element index `at` (in rows of d values) of `dst`. */
static void copy_row(void *dst, size_t at_row, const void *src, size_t src_row, size_t rb)
{
    memcpy((char *)dst + at_row * rb, (const char *)src + src_row * rb, rb);
}

/* A kernel's tiles, BM x BN (0: its choice). */
struct tiles {
    size_t bm, bn;
};

/* Runs the problem on `kernel` with `tiles` in form f; 1 when the kernel
 * does not take it, else 0 with *r filled. */
static int run_form(const struct problem *p, const struct form *f, clattn_fused_kernel kernel,
                    struct tiles tiles, uint32_t splits, struct device_run *r)
{
    const clattn_shape *s = &p->s;
    const size_t B = s->batch, H = s->heads, HK = s->kv_heads, NQ = s->q_len, NK = s->kv_len;
    const size_t d = s->head_dim, dv = p->dv, e = clattn_dtype_size(s->dtype);
    const size_t kb = row_bytes(p->o.k_type, s->dtype, d), vb = row_bytes(p->o.v_type, s->dtype, dv);
    clattn_options o = p->o;
    o.fused_kernel = kernel;
    o.path = kernel == CLATTN_FUSED_AUTO ? CLATTN_PATH_NAIVE : CLATTN_PATH_FUSED;
    o.split_kv = splits;
    o.block_m = tiles.bm;
    o.block_n = tiles.bn;
    size_t lens_k[8], lens_q[8];
    for (size_t b = 0; b < B; b++) {
        lens_k[b] = p->o.kv_lens ? p->o.kv_lens[b] : NK;
        lens_q[b] = p->o.q_lens ? p->o.q_lens[b] : NQ;
    }
    const void *q = p->q, *k = p->k, *v = p->v;
    void *qd = NULL, *kd = NULL, *vd = NULL;
    int32_t table[8 * 300], cu_q[9], cu_k[9];
    size_t total_q = 0;
    if (f->page_size) {
        const size_t P = f->page_size, per = (NK + P - 1) / P;
        size_t pages = B * per + 3;
        /* Pages in a scattered order: sequence b's page i at a permuted
         * place, sequence 1's first page sequence 0's with f->shared. */
        for (size_t b = 0; b < B; b++)
            for (size_t i = 0; i < per; i++)
                table[b * per + i] = (int32_t)((b * per + i) * 7 % (B * per) + 2);
        if (f->shared && B > 1)
            table[per] = table[0];
        kd = calloc(pages * HK * P, kb);
        vd = calloc(pages * HK * P, vb);
        assert_true(kd && vd);
        for (size_t b = 0; b < B; b++)
            for (size_t hk = 0; hk < HK; hk++)
                for (size_t j = 0; j < NK; j++) {
                    if (f->shared && b == 1 && j < P)
                        continue; /* the shared page holds sequence 0's keys */
                    const size_t page = (size_t)table[b * per + j / P], slot = j % P;
                    const size_t at = f->token_major ? (page * P + slot) * HK + hk
                                                     : (page * HK + hk) * P + slot;
                    const size_t from = (b * HK + hk) * NK + j;
                    copy_row(kd, at, k, from, kb);
                    copy_row(vd, at, v, from, vb);
                }
        o.page_size = P;
        o.num_pages = pages;
        o.block_table = table;
        o.block_table_stride = per;
        if (f->token_major) {
            o.k_layout = (clattn_layout){ P * HK * d, d, HK * d, 0 };
            o.v_layout = (clattn_layout){ P * HK * dv, dv, HK * dv, 0 };
        }
        k = kd;
        v = vd;
    }
    if (f->packed) {
        cu_q[0] = cu_k[0] = 0;
        for (size_t b = 0; b < B; b++) {
            cu_q[b + 1] = cu_q[b] + (int32_t)lens_q[b];
            cu_k[b + 1] = cu_k[b] + (int32_t)lens_k[b];
        }
        total_q = (size_t)cu_q[B];
        const size_t tq = total_q ? total_q : 1, tk = cu_k[B] ? (size_t)cu_k[B] : 1;
        qd = calloc(tq * H * d, e);
        kd = calloc(tk * HK, kb);
        vd = calloc(tk * HK, vb);
        assert_true(qd && kd && vd);
        for (size_t b = 0; b < B; b++) {
            for (size_t h = 0; h < H; h++)
                for (size_t i = 0; i < lens_q[b]; i++) {
                    const size_t t = (size_t)cu_q[b] + i;
                    copy_row(qd, f->token_major ? t * H + h : h * tq + t, p->q,
                             (b * H + h) * NQ + i, d * e);
                }
            for (size_t hk = 0; hk < HK; hk++)
                for (size_t j = 0; j < lens_k[b]; j++) {
                    const size_t t = (size_t)cu_k[b] + j;
                    const size_t at = f->token_major ? t * HK + hk : hk * tk + t;
                    copy_row(kd, at, p->k, (b * HK + hk) * NK + j, kb);
                    copy_row(vd, at, p->v, (b * HK + hk) * NK + j, vb);
                }
        }
        o.kv_lens = NULL;
        o.q_lens = NULL;
        o.cu_seqlens_q = cu_q;
        o.cu_seqlens_k = cu_k;
        if (f->token_major) {
            o.q_layout = o.o_layout = (clattn_layout){ 0, d, H * d, 0 };
            o.o_layout.head_stride = dv;
            o.o_layout.token_stride = H * dv;
            o.k_layout = (clattn_layout){ 0, d, HK * d, 0 };
            o.v_layout = (clattn_layout){ 0, dv, HK * dv, 0 };
        }
        q = qd;
        k = kd;
        v = vd;
    }
    const size_t rows = B * H * NQ, o_rows = f->packed ? (total_q ? total_q : 1) * H : rows;
    void *out = malloc(o_rows * dv * e);
    r->lse = malloc(rows * sizeof *r->lse);
    assert_true(out && r->lse);
    memset(out, 0xff, o_rows * dv * e); /* NaN */
    for (size_t i = 0; i < rows; i++)
        r->lse[i] = NAN;
    int rc;
    if (f->device_tables) {
        /* The tables in device buffers: clattn_attention_ex_cl. */
        cl_context cl = clattn_cl_context(ctx);
        cl_command_queue queue = clattn_cl_queue(ctx);
        cl_int err;
        struct { const void *host; size_t bytes; cl_mem m; } t[8] = {
            { q, f->packed ? (total_q ? total_q : 1) * H * d * e : rows * d * e, NULL },
            { k, 0, NULL }, { v, 0, NULL }, { NULL, o_rows * dv * e, NULL },
            { NULL, rows * 4, NULL },
            { o.block_table, B * o.block_table_stride * 4, NULL },
            { o.cu_seqlens_q, (B + 1) * 4, NULL }, { o.cu_seqlens_k, (B + 1) * 4, NULL } };
        t[1].bytes = f->page_size ? o.num_pages * HK * f->page_size * kb
                                  : f->packed ? (cu_k[B] ? (size_t)cu_k[B] : 1) * HK * kb
                                              : B * HK * NK * kb;
        t[2].bytes = t[1].bytes / kb * vb;
        for (int i = 0; i < 8; i++) {
            if (i >= 5 && !t[i].host)
                continue;
            t[i].m = clCreateBuffer(cl, t[i].host ? CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR
                                                  : CL_MEM_READ_WRITE,
                                    t[i].bytes, (void *)t[i].host, &err);
            assert_int_equal(err, CL_SUCCESS);
        }
        clattn_extras ex = CLATTN_EXTRAS_INIT;
        ex.lse = t[4].m;
        ex.block_table = t[5].m;
        ex.cu_seqlens_q = t[6].m;
        ex.cu_seqlens_k = t[7].m;
        if (f->packed) {
            o.total_q = total_q ? total_q : 1;
            o.total_k = cu_k[B] ? (size_t)cu_k[B] : 1;
        }
        o.block_table = NULL;
        o.cu_seqlens_q = o.cu_seqlens_k = NULL;
        assert_int_equal(clEnqueueWriteBuffer(queue, t[3].m, CL_TRUE, 0, t[3].bytes, out, 0,
                                              NULL, NULL), CL_SUCCESS);
        rc = clattn_attention_ex_cl(ctx, s, &o, t[0].m, t[1].m, t[2].m, t[3].m, &ex, 0, NULL,
                                    NULL, &r->info);
        if (rc == CLATTN_OK) {
            assert_int_equal(clEnqueueReadBuffer(queue, t[3].m, CL_TRUE, 0, t[3].bytes, out, 0,
                                                 NULL, NULL), CL_SUCCESS);
            assert_int_equal(clEnqueueReadBuffer(queue, t[4].m, CL_TRUE, 0, rows * 4, r->lse,
                                                 0, NULL, NULL), CL_SUCCESS);
        }
        for (int i = 0; i < 8; i++)
            if (t[i].m)
                clReleaseMemObject(t[i].m);
    } else {
        rc = clattn_attention_ex(ctx, s, &o, q, k, v, out, r->lse, &r->info);
    }
    free(qd);
    free(kd);
    free(vd);
    if (rc == CLATTN_EUNSUPPORTED) {
        free(out);
        free(r->lse);
        return 1;
    }
    if (rc < 0)
        fail_msg("%s [%s]: %s: %s", f->what, clattn_fused_kernel_name(kernel),
                 clattn_error_name(rc), clattn_last_error_detail());
    /* Back to the plain form: packed rows to their (b, h, i). */
    r->o = out;
    if (f->packed) {
        r->o = calloc(rows * dv, e);
        assert_true(r->o);
        for (size_t b = 0; b < B; b++)
            for (size_t h = 0; h < H; h++)
                for (size_t i = 0; i < lens_q[b]; i++) {
                    const size_t t = (size_t)cu_q[b] + i;
                    const size_t tq = total_q ? total_q : 1;
                    copy_row(r->o, (b * H + h) * NQ + i, out,
                             f->token_major ? t * H + h : h * tq + t, dv * e);
                }
        free(out);
    }
    return 0;
}

/* The device's result against the reference of the plain form. */
static void check_run(const struct problem *p, const struct form *f, const struct device_run *r,
                      const double *ref, const double *ref_lse)
{
    const clattn_shape *s = &p->s;
    const size_t rows = s->batch * s->heads * s->q_len;
    double tol_abs, tol_rel;
    clattn_tolerance(s->dtype, &tol_abs, &tol_rel);
    /* Rows past a packed sequence are zeros in both (run_form unpacks into
     * zeros; the reference writes them): they add no error. A NaN left in
     * the output makes both errors infinite. */
    double worst, rel;
    size_t nans;
    assert_int_equal(clattn_compare(s, r->o, ref, &worst, &rel, &nans), CLATTN_OK);
    if (worst > tol_abs || rel > tol_rel)
        fail_msg("%s [%s, %u splits]: max error %.3g, rel_l2 %.3g, %zu NaN (tolerance %.3g, "
                 "%.3g)", f->what, r->info.kernel, r->info.splits, worst, rel, nans, tol_abs,
                 tol_rel);
    for (size_t i = 0; i < rows; i++) {
        const double x = r->lse[i], want = ref_lse[i];
        if (isinf(want) ? x != want : !(fabs(x - want) <= 2e-3 * (1 + fabs(want))))
            fail_msg("%s [%s]: LSE of row %zu is %g, the reference %g", f->what, r->info.kernel,
                     i, x, want);
    }
}

/* The tiles each kernel runs a case with: its own, and for the cpu kernel
 * its two layouts whatever the case's rows (run_everywhere takes one per
 * case, both with --full), 4 rows per work-item with the keys across the
 * lanes and 2 x 16 with the rows across them, in blocks of 48 keys (not a
 * multiple of a page or of a q8_0 block). */
static size_t tiles_of(clattn_fused_kernel kernel, struct tiles *t)
{
    if (kernel != CLATTN_FUSED_CPU) {
        t[0] = (struct tiles){ 0, 0 };
        return 1;
    }
    t[0] = (struct tiles){ 4, 48 };
    t[1] = (struct tiles){ 32, 48 };
    return 2;
}

/* The heavy suite's --full: every case on every kernel, the cpu kernel in
 * both its layouts, and on the naive path, each CPU kernel at 3 chunks too.
 * The default run takes the cpu kernel (AUTO's choice on CPUs) on every
 * case in one layout per case, in turn; the portable and tiled kernels by
 * turns, and the naive path every other case, so that a cold first run
 * builds half their variants; and 3 chunks on three cases of four, by
 * turns: the portable kernel on the first (its turn), the cpu kernel on
 * the next two (one in each layout). */
static int full;

/* Whether `kernel` (portable or cpu) also runs the case at 3 chunks. */
static int chunked_turn(clattn_fused_kernel kernel, unsigned turn)
{
    if (kernel != CLATTN_FUSED_PORTABLE && kernel != CLATTN_FUSED_CPU)
        return 0;
    if (full)
        return 1;
    return kernel == CLATTN_FUSED_PORTABLE ? turn % 4 == 0 : turn % 4 == 1 || turn % 4 == 2;
}

static int left_to_full(clattn_fused_kernel kernel, unsigned turn)
{
    if (full)
        return 0;
    if (kernel == CLATTN_FUSED_PORTABLE)
        return turn % 2;
    if (kernel == CLATTN_FUSED_TILED)
        return turn % 2 == 0;
    return kernel == CLATTN_FUSED_AUTO && turn % 4 >= 2; /* AUTO: the naive path's turn */
}

/* The problem in form f on every fused kernel (the portable and cpu
 * kernels must take it), at the library's split and at 3 chunks; the
 * naive path must refuse what it does not take with CLATTN_EUNSUPPORTED. */
static void run_everywhere(const struct problem *p, const struct form *f)
{
    static unsigned cases_run;
    const unsigned turn = cases_run++;
    const clattn_shape *s = &p->s;
    const size_t rows = s->batch * s->heads * s->q_len;
    double *ref = malloc(rows * p->dv * sizeof *ref), *ref_lse = malloc(rows * sizeof *ref_lse);
    assert_true(ref && ref_lse);
    assert_int_equal(clattn_reference_ex(s, &p->o, p->q, p->k, p->v, ref, ref_lse), CLATTN_OK);
    static const uint32_t splits[] = { 0, 3 };
    clattn_kernel_info k;
    for (size_t i = 0; clattn_fused_kernel_info(i, &k) == 0; i++) {
        if (left_to_full(k.id, turn))
            continue;
        struct tiles t[2];
        const size_t n_tiles = tiles_of(k.id, t), first = full ? 0 : turn % n_tiles;
        for (size_t j = 2 * first; j < 2 * (full ? n_tiles : first + 1); j++) {
            /* 3 chunks for the kernels CPUs run (portable, cpu), in the
             * first layout run, on their turns (chunked_turn): a chunk
             * reads the cache as the whole call does, so the other layout
             * and the GPU kernels (their own device's suite splits them)
             * run at the library's split. */
            if (j % 2 && (j / 2 > first || !chunked_turn(k.id, turn)))
                continue;
            struct device_run r;
            if (run_form(p, f, k.id, t[j / 2], splits[j % 2], &r)) {
                if (k.id == CLATTN_FUSED_PORTABLE || k.id == CLATTN_FUSED_CPU)
                    fail_msg("%s: the %s kernel does not take it: %s", f->what, k.name,
                             clattn_last_error_detail());
                break;
            }
            check_run(p, f, &r, ref, ref_lse);
            free(r.o);
            free(r.lse);
        }
    }
    /* The naive path gathers pages and dequantizes into its contiguous
     * copies: it takes every case but a packed batch or bf16 storage. */
    struct device_run r;
    if (left_to_full(CLATTN_FUSED_AUTO, turn)) {
        /* the naive path's turn is another case's */
    } else if (run_form(p, f, CLATTN_FUSED_AUTO, (struct tiles){ 0, 0 }, 0, &r) == 0) {
        check_run(p, f, &r, ref, ref_lse);
        free(r.o);
        free(r.lse);
    } else if (!f->packed && s->dtype != CLATTN_BF16) {
        fail_msg("%s: the naive path does not take it: %s", f->what, clattn_last_error_detail());
    }
    free(ref);
    free(ref_lse);
}

static const struct form plain = { 0, 0, 0, 0, 0, "plain" };

static void test_quantized(void **state)
{
    (void)state;
    static const struct {
        clattn_kv_type k, v;
        clattn_dtype dt;
        size_t nq;
        clattn_causal causal;
        int per_head;
        const char *what;
    } cases[] = {
        { CLATTN_KV_Q8_0, CLATTN_KV_Q8_0, CLATTN_F16, 1, CLATTN_CAUSAL_NONE, 0, "q8_0 decode" },
        { CLATTN_KV_Q8_0, CLATTN_KV_Q8_0, CLATTN_F32, 19, CLATTN_CAUSAL_BOTTOM_RIGHT, 0, "q8_0 prefill" },
        { CLATTN_KV_Q4_0, CLATTN_KV_Q4_0, CLATTN_F16, 2, CLATTN_CAUSAL_TOP_LEFT, 0, "q4_0" },
        { CLATTN_KV_FP8_E4M3, CLATTN_KV_FP8_E4M3, CLATTN_BF16, 1, CLATTN_CAUSAL_NONE, 1, "fp8 per head" },
        { CLATTN_KV_FP8_E4M3, CLATTN_KV_FP8_E4M3, CLATTN_F32, 9, CLATTN_CAUSAL_BOTTOM_RIGHT, 0, "fp8" },
        { CLATTN_KV_Q8_0, CLATTN_KV_Q4_0, CLATTN_F16, 5, CLATTN_CAUSAL_NONE, 0, "K q8_0, V q4_0" },
        { CLATTN_KV_DTYPE, CLATTN_KV_FP8_E4M3, CLATTN_F16, 3, CLATTN_CAUSAL_NONE, 0, "K f16, V fp8" },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct problem p;
        problem_init(&p, 2, 8, 2, cases[c].nq, 150, 64, 64, cases[c].dt, cases[c].k, cases[c].v,
                     cases[c].causal, 100 + c);
        p.o.kv_scale_per_head = cases[c].per_head;
        p.kv_lens[0] = 150;
        p.kv_lens[1] = 77;
        p.o.kv_lens = p.kv_lens;
        struct form f = plain;
        f.what = cases[c].what;
        run_everywhere(&p, &f);
        problem_free(&p);
    }
}

static void test_paged(void **state)
{
    (void)state;
    static const struct {
        size_t page;
        int token_major, shared, device;
        clattn_kv_type type;
        clattn_causal causal;
        size_t d;
        clattn_dtype dt;
        const char *what;
    } cases[] = {
        { 16, 0, 0, 0, CLATTN_KV_DTYPE, CLATTN_CAUSAL_NONE, 32, CLATTN_F16, "paged 16" },
        { 16, 1, 1, 0, CLATTN_KV_DTYPE, CLATTN_CAUSAL_BOTTOM_RIGHT, 32, CLATTN_BF16, "paged 16 token-major, shared" },
        { 7, 0, 0, 1, CLATTN_KV_DTYPE, CLATTN_CAUSAL_TOP_LEFT, 32, CLATTN_F16, "paged 7, device table" },
        { 256, 1, 0, 0, CLATTN_KV_Q8_0, CLATTN_CAUSAL_NONE, 32, CLATTN_BF16, "paged 256 q8_0" },
        { 1, 0, 0, 0, CLATTN_KV_FP8_E4M3, CLATTN_CAUSAL_BOTTOM_RIGHT, 32, CLATTN_F16, "paged 1 fp8" },
        { 16, 1, 0, 0, CLATTN_KV_FP8_E4M3, CLATTN_CAUSAL_NONE, 32, CLATTN_F32, "paged 16 fp8 token-major" },
        { 32, 0, 0, 0, CLATTN_KV_Q4_0, CLATTN_CAUSAL_NONE, 32, CLATTN_F16, "paged 32 q4_0 d 32 decode" },
        { 300, 0, 0, 0, CLATTN_KV_FP8_E4M3, CLATTN_CAUSAL_NONE, 32, CLATTN_F16, "paged 300 fp8" },
        { 32, 1, 1, 1, CLATTN_KV_Q4_0, CLATTN_CAUSAL_BOTTOM_RIGHT, 32, CLATTN_F16, "paged 32 q4_0 shared, device" },
        /* rows of 32 + 16 + 8 values: every width a kernel reads them in */
        { 16, 0, 0, 0, CLATTN_KV_DTYPE, CLATTN_CAUSAL_TOP_LEFT, 56, CLATTN_F16, "paged 16 d 56" },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct problem p;
        const size_t d = cases[c].d;
        problem_init(&p, 4, 4, 2, c % 2 ? 4 : 1, 300, d, d, cases[c].dt, cases[c].type,
                     cases[c].type, cases[c].causal, 200 + c);
        /* Lengths 300, 0, 1 and one not a multiple of the page; a shared
         * first page needs sequence 1 as long as that page. */
        p.kv_lens[0] = 300;
        p.kv_lens[1] = cases[c].shared ? 300 : 0;
        p.kv_lens[2] = 1;
        p.kv_lens[3] = 173;
        p.o.kv_lens = p.kv_lens;
        if (cases[c].shared) { /* sequence 1 reads sequence 0's first page */
            const size_t kb = row_bytes(cases[c].type, CLATTN_F16, d);
            for (size_t hk = 0; hk < 2; hk++)
                for (size_t j = 0; j < cases[c].page; j++) {
                    copy_row(p.k, (1 * 2 + hk) * 300 + j, p.k, (0 * 2 + hk) * 300 + j, kb);
                    copy_row(p.v, (1 * 2 + hk) * 300 + j, p.v, (0 * 2 + hk) * 300 + j, kb);
                }
        }
        const struct form f = { cases[c].page, cases[c].token_major, cases[c].shared, 0,
                                cases[c].device, cases[c].what };
        run_everywhere(&p, &f);
        problem_free(&p);
    }
}

static void test_packed(void **state)
{
    (void)state;
    static const struct {
        int token_major, device;
        clattn_causal causal;
        clattn_kv_type type;
        int window;
        clattn_dtype dt;
        const char *what;
    } cases[] = {
        { 1, 0, CLATTN_CAUSAL_BOTTOM_RIGHT, CLATTN_KV_DTYPE, 0, CLATTN_F32, "packed [total, H, d]" },
        { 0, 1, CLATTN_CAUSAL_TOP_LEFT, CLATTN_KV_DTYPE, 0, CLATTN_BF16, "packed head-major bf16, device" },
        { 1, 1, CLATTN_CAUSAL_NONE, CLATTN_KV_Q8_0, 1, CLATTN_F32, "packed q8_0, window, softcap" },
        { 1, 0, CLATTN_CAUSAL_BOTTOM_RIGHT, CLATTN_KV_Q4_0, 0, CLATTN_F16, "packed q4_0 fp16" },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct problem p;
        problem_init(&p, 4, 6, 3, 21, 90, 32, 32, cases[c].dt, cases[c].type, cases[c].type,
                     cases[c].causal, 300 + c);
        static const uint32_t q_lens[4] = { 21, 0, 1, 13 }, kv_lens[4] = { 90, 0, 33, 60 };
        memcpy(p.q_lens, q_lens, sizeof q_lens);
        memcpy(p.kv_lens, kv_lens, sizeof kv_lens);
        p.o.q_lens = p.q_lens;
        p.o.kv_lens = p.kv_lens;
        if (cases[c].window) {
            p.o.window_left = 9;
            p.o.window_right = 4;
            p.o.softcap = 0.7f;
        }
        const struct form f = { 0, cases[c].token_major, 0, 1, cases[c].device, cases[c].what };
        run_everywhere(&p, &f);
        problem_free(&p);
    }
}

/* The reference's own paging and packing: bit for bit its plain form's. */
static void test_reference_forms(void **state)
{
    (void)state;
    struct problem p;
    problem_init(&p, 2, 2, 1, 3, 40, 32, 32, CLATTN_F32, CLATTN_KV_Q8_0, CLATTN_KV_Q8_0,
                 CLATTN_CAUSAL_BOTTOM_RIGHT, 400);
    p.kv_lens[0] = 40;
    p.kv_lens[1] = 17;
    p.o.kv_lens = p.kv_lens;
    const size_t rows = 2 * 2 * 3 * 32, kb = row_bytes(CLATTN_KV_Q8_0, CLATTN_F32, 32);
    double plain_o[2 * 2 * 3 * 32], paged_o[2 * 2 * 3 * 32];
    assert_int_equal(clattn_reference(&p.s, &p.o, p.q, p.k, p.v, plain_o), CLATTN_OK);
    /* Pages of 8 keys, [num_pages, Hkv, 8, d], in reverse order. */
    const size_t P = 8, per = 5, pages = 10;
    int32_t table[10];
    char *kd = calloc(pages * P, kb), *vd = calloc(pages * P, kb);
    assert_true(kd && vd);
    for (size_t b = 0; b < 2; b++)
        for (size_t i = 0; i < per; i++)
            table[b * per + i] = (int32_t)(pages - 1 - (b * per + i));
    for (size_t b = 0; b < 2; b++)
        for (size_t j = 0; j < 40; j++) {
            const size_t at = (size_t)table[b * per + j / P] * P + j % P;
            copy_row(kd, at, p.k, b * 40 + j, kb);
            copy_row(vd, at, p.v, b * 40 + j, kb);
        }
    clattn_options o = p.o;
    o.page_size = P;
    o.num_pages = pages;
    o.block_table = table;
    assert_int_equal(clattn_reference(&p.s, &o, p.q, kd, vd, paged_o), CLATTN_OK);
    assert_memory_equal(plain_o, paged_o, rows * sizeof(double));
    /* An entry outside the pages is refused, as a device call refuses it. */
    table[6] = 10;
    assert_int_equal(clattn_reference(&p.s, &o, p.q, kd, vd, paged_o), CLATTN_EINVAL);
    float of[2 * 2 * 3 * 32];
    o.fused_kernel = CLATTN_FUSED_PORTABLE;
    assert_int_equal(clattn_attention(ctx, &p.s, &o, p.q, kd, vd, of, NULL), CLATTN_EINVAL);
    free(kd);
    free(vd);
    problem_free(&p);
}

/* Bad cache arguments: clear errors, nothing run. */
static void test_refusals(void **state)
{
    (void)state;
    struct problem p;
    problem_init(&p, 2, 2, 1, 1, 64, 32, 32, CLATTN_F32, CLATTN_KV_Q8_0, CLATTN_KV_Q8_0,
                 CLATTN_CAUSAL_NONE, 500);
    float out[2 * 2 * 32];
    clattn_options o = p.o;
    clattn_shape s = p.s;
    s.head_dim = 48; /* not a multiple of q8_0's block */
    o.head_dim_v = 0;
    assert_int_equal(clattn_attention(ctx, &s, &o, p.q, p.k, p.v, out, NULL), CLATTN_EINVAL);
    o = p.o;
    o.k_type = (clattn_kv_type)9;
    assert_int_equal(clattn_attention(ctx, &p.s, &o, p.q, p.k, p.v, out, NULL), CLATTN_EINVAL);
    o = p.o;
    static int32_t cu[3] = { 0, 40, 64 };
    o.cu_seqlens_k = cu;
    o.kv_lens = p.kv_lens; /* packed keys take no kv_lens */
    assert_int_equal(clattn_attention(ctx, &p.s, &o, p.q, p.k, p.v, out, NULL), CLATTN_EINVAL);
    o = p.o;
    static int32_t bad[3] = { 0, 70, 64 }; /* past Nk, then decreasing */
    o.cu_seqlens_k = bad;
    assert_int_equal(clattn_attention(ctx, &p.s, &o, p.q, p.k, p.v, out, NULL), CLATTN_EINVAL);
    o = p.o;
    o.page_size = 16; /* without a block table */
    o.num_pages = 8;
    assert_int_equal(clattn_attention(ctx, &p.s, &o, p.q, p.k, p.v, out, NULL), CLATTN_EINVAL);
    o = p.o;
    float bad_scale = -1.0f;
    o.k_type = CLATTN_KV_FP8_E4M3;
    o.k_scale = &bad_scale;
    assert_int_equal(clattn_attention(ctx, &p.s, &o, p.q, p.k, p.v, out, NULL), CLATTN_EINVAL);
    o = p.o;
    o.path = CLATTN_PATH_NAIVE; /* a packed batch */
    static int32_t cu_ok[3] = { 0, 40, 64 };
    o.cu_seqlens_k = cu_ok;
    o.kv_lens = NULL;
    o.total_k = 64;
    assert_int_equal(clattn_attention(ctx, &p.s, &o, p.q, p.k, p.v, out, NULL),
                     CLATTN_EUNSUPPORTED);
    o = p.o;
    o.k_layout.token_stride = 40; /* not a multiple of the block's 32 values */
    assert_int_equal(clattn_attention(ctx, &p.s, &o, p.q, p.k, p.v, out, NULL), CLATTN_EINVAL);
    problem_free(&p);
}


/* The same step in one call (clattn_attention_with_kvcache_cl) on fresh
 * copies of the cache kc, vc (`cache_bytes` each): with the host lengths
 * `lens` (left as they are) and with device ones (advanced; refused
 * without update_lens, the cache untouched), O against `ref`. */
static void one_call(const clattn_shape *s, const clattn_options *attend,
                     const clattn_layout *nl, const void *kn, const void *vn, const void *kc,
                     const void *vc, size_t cache_bytes, const uint32_t *lens, const void *q,
                     const double *ref, size_t c)
{
    cl_context cl = clattn_cl_context(ctx);
    cl_command_queue queue = clattn_cl_queue(ctx);
    const clattn_dtype dt = s->dtype;
    const size_t e = clattn_dtype_size(dt), B = s->batch;
    const size_t nnew = B * s->kv_heads * s->q_len * s->head_dim * e;
    const size_t n = clattn_shape_q_elems(s);
    double tol_abs, tol_rel;
    clattn_tolerance(dt, &tol_abs, &tol_rel);
    for (int device_lens = 0; device_lens < 2; device_lens++) {
        const void *host[7] = { kn, vn, kc, vc, lens, q, NULL };
        const size_t bytes[7] = { nnew, nnew, cache_bytes, cache_bytes, B * 4, n * e, n * e };
        cl_mem m[7];
        cl_int err;
        for (int i = 0; i < 7; i++) {
            m[i] = clCreateBuffer(cl, CL_MEM_READ_WRITE | (host[i] ? CL_MEM_COPY_HOST_PTR : 0),
                                  bytes[i], (void *)host[i], &err);
            assert_int_equal(err, CL_SUCCESS);
        }
        clattn_options o = *attend;
        o.fused_kernel = CLATTN_FUSED_AUTO;
        o.kv_lens = lens;
        clattn_extras ex = CLATTN_EXTRAS_INIT;
        if (device_lens) {
            ex.kv_lens = m[4];
            o.kv_lens = NULL;
            assert_int_equal(clattn_attention_with_kvcache_cl(ctx, s, &o, m[5], m[2], m[3], m[6],
                                                              s->q_len, nl, m[0], m[1], &ex, 0,
                                                              0, NULL, NULL, NULL),
                             CLATTN_EINVAL);
        }
        void *out = malloc(n * e);
        uint32_t after[8];
        assert_true(out && B <= 8);
        memset(out, 0xff, n * e);
        assert_int_equal(clEnqueueWriteBuffer(queue, m[6], CL_TRUE, 0, n * e, out, 0, NULL,
                                              NULL), CL_SUCCESS);
        const int rc = clattn_attention_with_kvcache_cl(ctx, s, &o, m[5], m[2], m[3], m[6],
                                                        s->q_len, nl, m[0], m[1], &ex,
                                                        device_lens, 0, NULL, NULL, NULL);
        if (rc < 0)
            fail_msg("append %zu, one call: %s: %s", c, clattn_error_name(rc),
                     clattn_last_error_detail());
        assert_int_equal(clEnqueueReadBuffer(queue, m[6], CL_TRUE, 0, n * e, out, 0, NULL, NULL),
                         CL_SUCCESS);
        assert_int_equal(clEnqueueReadBuffer(queue, m[4], CL_TRUE, 0, B * 4, after, 0, NULL,
                                             NULL), CL_SUCCESS);
        double worst = 0;
        for (size_t i = 0; i < n; i++) {
            const double d = fabs(out_value(dt, out, i) - ref[i]);
            worst = d > worst || isnan(d) ? d : worst;
        }
        if (!(worst <= tol_abs))
            fail_msg("append %zu, one call (%s lengths): errs by %g", c,
                     device_lens ? "device" : "host", worst);
        for (size_t b = 0; b < B; b++)
            assert_int_equal(after[b], lens[b] + (device_lens ? s->q_len : 0));
        free(out);
        for (int i = 0; i < 7; i++)
            clReleaseMemObject(m[i]);
    }
}

/* A decoding step appended to a cache in place (contiguous and paged,
 * across a page boundary, each type), on the device and on the host: the
 * same bytes, quantized alike; the device lengths advanced; attention over
 * the grown cache against the reference. */
static void test_append(void **state)
{
    (void)state;
    static const struct {
        clattn_kv_type type;
        size_t page;
        clattn_dtype dt;
    } cases[] = {
        { CLATTN_KV_DTYPE, 0, CLATTN_F16 },  { CLATTN_KV_Q8_0, 16, CLATTN_F16 },
        { CLATTN_KV_Q4_0, 0, CLATTN_F32 },   { CLATTN_KV_FP8_E4M3, 16, CLATTN_BF16 },  { CLATTN_KV_FP8_E4M3, 0, CLATTN_F16 },
        { CLATTN_KV_Q8_0, 0, CLATTN_F32 },
    };
    cl_context cl = clattn_cl_context(ctx);
    cl_command_queue queue = clattn_cl_queue(ctx);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const size_t B = 3, HK = 2, H = 4, NK = 64, NNEW = 3, d = 32;
        const clattn_dtype dt = cases[c].dt;
        const size_t e = clattn_dtype_size(dt), rb = row_bytes(cases[c].type, dt, d);
        clattn_shape s = { B, H, HK, NNEW, NK, d, dt };
        clattn_options o;
        clattn_default_options(&o);
        o.k_type = o.v_type = cases[c].type;
        float scale = 0.01f;
        if (cases[c].type == CLATTN_KV_FP8_E4M3)
            o.k_scale = o.v_scale = &scale;
        uint32_t lens[3] = { 15, 0, 61 }, grown[3];
        o.kv_lens = lens;
        int32_t table[3 * 4];
        size_t rows = B * HK * NK;
        if (cases[c].page) { /* pages of 16 keys in reverse order, token-major */
            o.page_size = cases[c].page;
            o.num_pages = 12;
            for (int i = 0; i < 12; i++)
                table[i] = 11 - i;
            o.block_table = table;
            o.k_layout = o.v_layout = (clattn_layout){ 16 * HK * d, d, HK * d, 0 };
            rows = 12 * 16 * HK;
        }
        void *kc = make_tensor(rows, d, dt, cases[c].type, scale, 600 + c);
        void *vc = make_tensor(rows, d, dt, cases[c].type, scale, 700 + c);
        void *kh = malloc(rows * rb), *vh = malloc(rows * rb), *kd = malloc(rows * rb),
             *vd = malloc(rows * rb);
        void *kn = malloc(B * HK * NNEW * d * e), *vn = malloc(B * HK * NNEW * d * e);
        assert_true(kh && vh && kd && vd && kn && vn);
        memcpy(kh, kc, rows * rb);
        memcpy(vh, vc, rows * rb);
        clattn_random_fill(kn, B * HK * NNEW * d, dt, 800 + c);
        clattn_random_fill(vn, B * HK * NNEW * d, dt, 900 + c);
        /* The new keys as FlashAttention passes them: [B, Nnew, Hkv, d]. */
        const clattn_layout nl = { 0, d, HK * d, 0 };
        assert_int_equal(clattn_kv_append(&s, &o, NNEW, &nl, kn, vn, kh, vh), CLATTN_OK);
        cl_int err;
        cl_mem m[5];
        const void *host[5] = { kn, vn, kc, vc, lens };
        const size_t bytes[5] = { B * HK * NNEW * d * e, B * HK * NNEW * d * e, rows * rb,
                                  rows * rb, sizeof lens };
        for (int i = 0; i < 5; i++) {
            m[i] = clCreateBuffer(cl, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes[i],
                                  (void *)host[i], &err);
            assert_int_equal(err, CL_SUCCESS);
        }
        clattn_extras ex = CLATTN_EXTRAS_INIT;
        ex.kv_lens = m[4];
        clattn_options od = o;
        od.kv_lens = NULL;
        const int rc = clattn_kv_append_cl(ctx, &s, &od, NNEW, &nl, m[0], m[1], m[2], m[3], &ex,
                                           1, 0, NULL, NULL);
        if (rc < 0)
            fail_msg("append %zu: %s: %s", c, clattn_error_name(rc), clattn_last_error_detail());
        assert_int_equal(clEnqueueReadBuffer(queue, m[2], CL_TRUE, 0, rows * rb, kd, 0, NULL,
                                             NULL), CL_SUCCESS);
        assert_int_equal(clEnqueueReadBuffer(queue, m[3], CL_TRUE, 0, rows * rb, vd, 0, NULL,
                                             NULL), CL_SUCCESS);
        assert_int_equal(clEnqueueReadBuffer(queue, m[4], CL_TRUE, 0, sizeof grown, grown, 0,
                                             NULL, NULL), CL_SUCCESS);
        assert_memory_equal(kd, kh, rows * rb);
        assert_memory_equal(vd, vh, rows * rb);
        assert_memory_not_equal(kd, kc, rows * rb); /* the append wrote */
        for (size_t b = 0; b < B; b++)
            assert_int_equal(grown[b], lens[b] + NNEW);
        /* Attention over the grown cache on the device (its lengths there)
         * against the reference on the host's. */
        struct problem p;
        memset(&p, 0, sizeof p);
        p.s = s;
        p.dv = d;
        p.o = o;
        p.o.causal = CLATTN_CAUSAL_BOTTOM_RIGHT;
        memcpy(p.kv_lens, grown, sizeof grown);
        p.o.kv_lens = p.kv_lens;
        p.q = malloc(clattn_shape_q_elems(&s) * e);
        assert_true(p.q);
        clattn_random_fill(p.q, clattn_shape_q_elems(&s), dt, 1000 + c);
        const size_t n = B * H * NNEW * d;
        double *ref = malloc(n * sizeof *ref);
        void *out = malloc(n * e);
        assert_true(ref && out);
        /* The reference reads pages head-major: [num_pages, Hkv, 16, d]. */
        void *kr = malloc(rows * rb), *vr = malloc(rows * rb);
        assert_true(kr && vr);
        memcpy(kr, kh, rows * rb);
        memcpy(vr, vh, rows * rb);
        if (cases[c].page)
            for (size_t pg = 0; pg < 12; pg++)
                for (size_t slot = 0; slot < 16; slot++)
                    for (size_t hk = 0; hk < HK; hk++) {
                        copy_row(kr, (pg * HK + hk) * 16 + slot, kh, (pg * 16 + slot) * HK + hk, rb);
                        copy_row(vr, (pg * HK + hk) * 16 + slot, vh, (pg * 16 + slot) * HK + hk, rb);
                    }
        clattn_options ro = p.o;
        ro.k_layout = ro.v_layout = (clattn_layout){ 0, 0, 0, 0 };
        assert_int_equal(clattn_reference(&s, &ro, p.q, kr, vr, ref), CLATTN_OK);
        free(kr);
        free(vr);
        memset(out, 0xff, n * e);
        p.o.fused_kernel = CLATTN_FUSED_PORTABLE;
        assert_int_equal(clattn_attention(ctx, &s, &p.o, p.q, kd, vd, out, NULL), CLATTN_OK);
        double tol_abs, tol_rel, worst = 0;
        clattn_tolerance(dt, &tol_abs, &tol_rel);
        for (size_t i = 0; i < n; i++) {
            const double err2 = fabs(out_value(dt, out, i) - ref[i]);
            worst = err2 > worst || isnan(err2) ? err2 : worst;
        }
        if (!(worst <= tol_abs))
            fail_msg("append %zu: attention after it errs by %g", c, worst);
        one_call(&s, &p.o, &nl, kn, vn, kc, vc, rows * rb, lens, p.q, ref, c);
        /* Past the cache's capacity: refused from host lengths. */
        uint32_t at_capacity[3] = { 62, 0, 0 };
        o.kv_lens = at_capacity;
        assert_int_equal(clattn_kv_append(&s, &o, NNEW, &nl, kn, vn, kh, vh), CLATTN_EINVAL);
        if (cases[c].page) { /* a page the append would write is outside the cache */
            o.kv_lens = lens;
            table[1] = 12;
            assert_int_equal(clattn_kv_append(&s, &o, NNEW, &nl, kn, vn, kh, vh), CLATTN_EINVAL);
        }
        for (int i = 0; i < 5; i++)
            clReleaseMemObject(m[i]);
        free(kc), free(vc), free(kh), free(vh), free(kd), free(vd), free(kn), free(vn);
        free(p.q), free(ref), free(out);
    }
}

/* nv-decode's two register paths on the caches they take, each asked for
 * by name (AUTO picks one per cache): direct=1 holds the next block's
 * fragments, direct=2 stages rows as stored in a ring (2 to 8 stages,
 * 16- and 32-key blocks) and reads the fragments out of it. Each quantized
 * type on both tensors, mixed with fp16, contiguous and paged (pages of 16
 * keys token-major, 32 head-major), d = 64 and 128, 4 and 16 packed rows,
 * at the library's split and at 3 chunks, a length not a multiple of a
 * block. A q8_0 cache whose rows start on 2-byte boundaries (an offset of
 * one block, 34 bytes) is refused by direct=2 and runs on AUTO's choice.
 * Skipped where nv-decode does not run (not an NVIDIA device of compute
 * capability 8.9+). */
static void test_decode_register_paths(void **state)
{
    (void)state;
    static const struct {
        clattn_kv_type k, v;
        size_t d, nq, page;
        int token_major;
    } cases[] = {
        { CLATTN_KV_Q8_0, CLATTN_KV_Q8_0, 128, 1, 0, 0 },
        { CLATTN_KV_Q4_0, CLATTN_KV_Q4_0, 128, 4, 16, 1 },
        { CLATTN_KV_FP8_E4M3, CLATTN_KV_FP8_E4M3, 128, 1, 32, 0 },
        { CLATTN_KV_Q8_0, CLATTN_KV_DTYPE, 64, 4, 0, 0 },
        { CLATTN_KV_DTYPE, CLATTN_KV_Q4_0, 128, 1, 16, 1 },
        { CLATTN_KV_Q4_0, CLATTN_KV_FP8_E4M3, 64, 1, 0, 0 },
        { CLATTN_KV_DTYPE, CLATTN_KV_DTYPE, 128, 1, 16, 1 },
        { CLATTN_KV_Q8_0, CLATTN_KV_Q8_0, 64, 4, 32, 0 },
    };
    static const struct {
        const char *params;
        struct tiles tiles;
        uint32_t splits;
    } runs[] = {
        { "direct=1", { 16, 16 }, 0 },
        { "direct=2", { 16, 16 }, 0 },
        { "direct=2,stages=2", { 16, 16 }, 3 },
        { "direct=2,stages=8", { 16, 32 }, 0 },
        { "direct=2,stages=3", { 16, 32 }, 3 },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct problem p;
        const size_t d = cases[c].d;
        problem_init(&p, 2, 8, 2, cases[c].nq, 300, d, d, CLATTN_F16, cases[c].k, cases[c].v,
                     CLATTN_CAUSAL_BOTTOM_RIGHT, 900 + c);
        p.kv_lens[0] = 300;
        p.kv_lens[1] = 77;
        p.o.kv_lens = p.kv_lens;
        const size_t rows = p.s.batch * p.s.heads * p.s.q_len;
        double *ref = malloc(rows * d * sizeof *ref), *ref_lse = malloc(rows * sizeof *ref_lse);
        assert_true(ref && ref_lse);
        assert_int_equal(clattn_reference_ex(&p.s, &p.o, p.q, p.k, p.v, ref, ref_lse), CLATTN_OK);
        char what[96];
        for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
            snprintf(what, sizeof what, "case %zu, %s, %zux%zu", c, runs[i].params,
                     runs[i].tiles.bm, runs[i].tiles.bn);
            const struct form f = { cases[c].page, cases[c].token_major, 0, 0, 0, what };
            p.o.kernel_params = runs[i].params;
            struct device_run r;
            if (run_form(&p, &f, CLATTN_FUSED_NV_DECODE, runs[i].tiles, runs[i].splits, &r)) {
                if (c == 0 && i == 0) {
                    free(ref), free(ref_lse), problem_free(&p);
                    skip(); /* nv-decode does not run on this device */
                }
                fail_msg("%s: nv-decode does not take it: %s", what, clattn_last_error_detail());
            }
            check_run(&p, &f, &r, ref, ref_lse);
            free(r.o);
            free(r.lse);
        }
        free(ref), free(ref_lse), problem_free(&p);
    }

    /* K one q8_0 block (34 bytes) into its buffer; the reference takes the
     * contiguous K. */
    struct problem p;
    problem_init(&p, 2, 8, 2, 1, 300, 128, 128, CLATTN_F16, CLATTN_KV_Q8_0, CLATTN_KV_Q8_0,
                 CLATTN_CAUSAL_NONE, 950);
    const size_t rows = 2 * 8;
    double *ref = malloc(rows * 128 * sizeof *ref), *ref_lse = malloc(rows * sizeof *ref_lse);
    assert_true(ref && ref_lse);
    assert_int_equal(clattn_reference_ex(&p.s, &p.o, p.q, p.k, p.v, ref, ref_lse), CLATTN_OK);
    const size_t kb = 2 * 2 * 300 * row_bytes(CLATTN_KV_Q8_0, CLATTN_F16, 128);
    char *shifted = malloc(kb + 34);
    assert_non_null(shifted);
    memcpy(shifted + 34, p.k, kb);
    free(p.k);
    p.k = shifted;
    p.o.k_layout.byte_offset = 34;
    const struct form f = { 0, 0, 0, 0, 0, "q8_0 K at a 34-byte offset" };
    struct device_run r;
    p.o.kernel_params = "direct=2";
    assert_int_equal(run_form(&p, &f, CLATTN_FUSED_NV_DECODE, (struct tiles){ 16, 16 }, 0, &r), 1);
    p.o.kernel_params = NULL;
    assert_int_equal(run_form(&p, &f, CLATTN_FUSED_NV_DECODE, (struct tiles){ 0, 0 }, 0, &r), 0);
    check_run(&p, &f, &r, ref, ref_lse);
    free(r.o), free(r.lse), free(ref), free(ref_lse), problem_free(&p);
}

int main(int argc, char **argv)
{
    /* Ordered so that --part 1/2 (paged, append, refusals) and 2/2
     * (quantized, packed, reference forms) take about half each. */
    full = device_suite_full(argc, argv);
    const struct CMUnitTest all[] = {
        cmocka_unit_test(test_paged),           cmocka_unit_test(test_quantized),
        cmocka_unit_test(test_append),          cmocka_unit_test(test_packed),
        cmocka_unit_test(test_refusals),        cmocka_unit_test(test_reference_forms),
        cmocka_unit_test(test_decode_register_paths),
    };
    return device_suite_main_parts(&ctx, "test_kv_cache", "test_kv_cache [--full] [--part K/N]",
                                   all, sizeof all / sizeof all[0], argc, argv);
}
