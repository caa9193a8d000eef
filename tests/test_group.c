/* SPDX-License-Identifier: MIT */
/*
 * clattn_group_attention: one call over several devices against the CPU
 * reference. The group names the default device's index two and three
 * times (contexts of their own on one device split the call as separate
 * devices would), and the first two devices where there are two. Decoding
 * steps split by keys (uneven shares, a device holding no keys, a
 * sequence shorter than a share, sinks counted once), prefill split by
 * query rows (both causal alignments, GQA, per-sequence lengths, window
 * and ALiBi), and calls the group runs on one device as given (a mask
 * tensor): O and the LSE against the reference, the scheme and shares as
 * documented, equal and weighted. Outputs are poisoned (NaN) first. Exits 77 without a device.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case_inputs.h"
#include "device_suite.h"

static clattn_ctx *ctx;

struct group_case {
    const char *what;
    clattn_shape s;
    clattn_causal causal;
    uint32_t kv_lens[4], q_lens[4]; /* zero-length arrays: none given */
    int lens, qlens;
    float softcap;
    int sinks, alibi, window, mask;
    const char *scheme; /* expected */
};

/* The case on `group`: O and LSE against the reference; the scheme. */
static void run_case(clattn_group *group, const struct group_case *c, uint64_t seed)
{
    const clattn_shape *s = &c->s;
    const size_t e = clattn_dtype_size(s->dtype);
    const size_t nq = clattn_shape_q_elems(s), nk = clattn_shape_kv_elems(s);
    const size_t rows = s->batch * s->heads * s->q_len;
    void *q = malloc(nq * e), *k = malloc(nk * e), *v = malloc(nk * e), *o = malloc(nq * e);
    float *lse = malloc(rows * sizeof *lse), sinks[16], slopes[16];
    double *ref = malloc(nq * sizeof *ref), *ref_lse = malloc(rows * sizeof *ref_lse);
    float *mask = malloc(s->q_len * s->kv_len * sizeof *mask);
    assert_true(q && k && v && o && lse && ref && ref_lse && mask);
    assert_int_equal(case_inputs(q, nq, k, nk, v, nk, s->dtype, seed), CLATTN_OK);
    clattn_options opts;
    case_options(&opts, c->causal, c->lens ? c->kv_lens : NULL, c->qlens ? c->q_lens : NULL,
                 c->softcap, c->sinks, sinks, s->heads);
    for (size_t h = 0; h < s->heads; h++)
        slopes[h] = 0.25f / (float)(h + 1);
    if (c->alibi)
        opts.alibi_slopes = slopes;
    if (c->window)
        opts.window_left = 17, opts.window_right = 0;
    if (c->mask) {
        assert_int_equal(clattn_random_fill(mask, s->q_len * s->kv_len, CLATTN_F32, seed + 3),
                         CLATTN_OK);
        opts.mask.kind = CLATTN_MASK_ADD;
        opts.mask.dtype = CLATTN_F32;
        opts.mask.host = mask;
    }
    assert_int_equal(clattn_reference_ex(s, &opts, q, k, v, ref, ref_lse), CLATTN_OK);
    memset(o, 0xff, nq * e); /* NaN */
    for (size_t i = 0; i < rows; i++)
        lse[i] = NAN;
    clattn_group_info info;
    const int rc = clattn_group_attention(group, s, &opts, q, k, v, o, lse, &info);
    if (rc < 0)
        fail_msg("%s: %s: %s", c->what, clattn_error_name(rc), clattn_last_error_detail());
    double max_abs, rel_l2, tol_abs, tol_rel, worst_lse = 0;
    size_t nans;
    assert_int_equal(clattn_compare(s, o, ref, &max_abs, &rel_l2, &nans), CLATTN_OK);
    clattn_tolerance(s->dtype, &tol_abs, &tol_rel);
    for (size_t i = 0; i < rows; i++) {
        const double d = isinf(ref_lse[i]) ? (lse[i] == ref_lse[i] ? 0 : INFINITY)
                                           : fabs(lse[i] - ref_lse[i]);
        worst_lse = d > worst_lse || isnan(d) ? d : worst_lse;
    }
    if (nans || !(max_abs <= tol_abs) || !(rel_l2 <= tol_rel) || !(worst_lse <= 1e-3))
        fail_msg("%s [%s over %zu devices]: max error %.3g, rel_l2 %.3g, %zu NaN, LSE %.3g "
                 "(tolerance %.3g, %.3g)", c->what, info.scheme, info.devices, max_abs, rel_l2,
                 nans, worst_lse, tol_abs, tol_rel);
    if (strcmp(info.scheme, c->scheme))
        fail_msg("%s: ran as \"%s\" (%s), not \"%s\"", c->what, info.scheme, info.note,
                 c->scheme);
    /* The shares tile the keys or rows, in order. */
    const size_t whole = !strcmp(c->scheme, "keys") ? s->kv_len : s->q_len;
    size_t at = 0, used = 0;
    for (size_t i = 0; i < clattn_group_size(group); i++) {
        if (!strcmp(c->scheme, "one"))
            break;
        assert_int_equal(info.begin[i], at);
        at += info.share[i];
        used += info.share[i] > 0;
    }
    if (strcmp(c->scheme, "one")) {
        assert_int_equal(at, whole);
        assert_int_equal(used, info.devices);
    }
    free(q), free(k), free(v), free(o), free(lse), free(ref), free(ref_lse), free(mask);
}

static const struct group_case cases[] = {
    { "decode fp16, GQA, uneven lengths", { 3, 8, 2, 1, 1001, 64, CLATTN_F16 },
      CLATTN_CAUSAL_BOTTOM_RIGHT, { 1001, 1, 517 }, { 0 }, 1, 0, 0, 0, 0, 0, 0, "keys" },
    { "decode fp32, sinks, softcap", { 2, 4, 4, 1, 300, 32, CLATTN_F32 }, CLATTN_CAUSAL_NONE,
      { 0 }, { 0 }, 0, 0, 20.0f, 1, 0, 0, 0, "keys" },
    { "decode over 2 keys: a device holds none", { 1, 4, 1, 1, 2, 32, CLATTN_F32 },
      CLATTN_CAUSAL_NONE, { 0 }, { 0 }, 0, 0, 0, 0, 0, 0, 0, "keys" },
    { "prefill bottom-right, GQA", { 2, 4, 2, 150, 200, 64, CLATTN_F16 },
      CLATTN_CAUSAL_BOTTOM_RIGHT, { 0 }, { 0 }, 0, 0, 0, 0, 0, 0, 0, "queries" },
    { "prefill top-left", { 1, 4, 4, 120, 160, 32, CLATTN_F32 }, CLATTN_CAUSAL_TOP_LEFT,
      { 0 }, { 0 }, 0, 0, 0, 0, 0, 0, 0, "queries" },
    { "prefill no mask, per-sequence lengths", { 3, 4, 2, 40, 90, 32, CLATTN_F32 },
      CLATTN_CAUSAL_NONE, { 90, 0, 33 }, { 40, 7, 0 }, 1, 1, 0, 0, 0, 0, 0, "queries" },
    { "prefill bottom-right, lengths, window, ALiBi, sinks", { 3, 4, 2, 50, 120, 32, CLATTN_F16 },
      CLATTN_CAUSAL_BOTTOM_RIGHT, { 120, 64, 5 }, { 50, 13, 9 }, 1, 1, 0, 1, 1, 1, 0,
      "queries" },
    { "an additive mask: one device", { 1, 4, 2, 30, 70, 32, CLATTN_F32 }, CLATTN_CAUSAL_NONE,
      { 0 }, { 0 }, 0, 0, 0, 0, 0, 0, 1, "one" },
};

static void test_split(const char *selectors)
{
    clattn_group *group = NULL;
    const int rc = clattn_group_open(&group, selectors);
    if (rc < 0)
        fail_msg("clattn_group_open(\"%s\"): %s", selectors, clattn_last_error_detail());
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(group, &cases[i], 100 + 10 * i);
    clattn_group_close(&group);
    assert_null(group);
}

/* The default device's index in clattn_list_devices' order. */
static size_t default_index(void)
{
    clattn_device_entry e[16];
    size_t n = 0;
    assert_int_equal(clattn_list_devices(e, 16, &n), CLATTN_OK);
    for (size_t i = 0; i < n && i < 16; i++)
        if (e[i].device == clattn_cl_device(ctx))
            return i;
    return 0;
}

static void test_two(void **state)
{
    (void)state;
    char sel[32];
    const size_t i = default_index();
    snprintf(sel, sizeof sel, "%zu,%zu", i, i);
    test_split(sel);
}

static void test_three(void **state)
{
    (void)state;
    char sel[32];
    const size_t i = default_index();
    snprintf(sel, sizeof sel, "%zu,%zu,%zu", i, i, i);
    test_split(sel);
}

/* The first two devices, where there are two (PoCL: POCL_DEVICES="pthread pthread"). */
static void test_devices(void **state)
{
    (void)state;
    size_t n = 0;
    assert_int_equal(clattn_list_devices(NULL, 0, &n), CLATTN_OK);
    if (n < 2) {
        printf("one device: the group of two devices is not tried\n");
        return;
    }
    test_split("0,1");
}

/* Shares follow the weights: 3 : 1 of the keys and of the visible pairs;
 * a device of weight 1e-6 holds nothing (the merge and the sinks then
 * start at the next); bad weights refused. */
static void test_weights(void **state)
{
    (void)state;
    char sel[32];
    const size_t d = default_index();
    snprintf(sel, sizeof sel, "%zu,%zu", d, d);
    clattn_group *group = NULL;
    assert_int_equal(clattn_group_open(&group, sel), CLATTN_OK);
    const double three_one[2] = { 3, 1 }, tiny_first[2] = { 1e-6, 1 };
    const double bad[3][2] = { { 0, 1 }, { 1, -2 }, { NAN, 1 } };
    for (int i = 0; i < 3; i++)
        assert_int_equal(clattn_group_set_weights(group, bad[i]), CLATTN_EINVAL);
    assert_int_equal(clattn_group_set_weights(group, three_one), CLATTN_OK);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(group, &cases[i], 500 + 10 * i);
    /* The key split by hand: 3 / 4 of 1001 keys, rounded. */
    clattn_shape s = { 1, 2, 1, 1, 1001, 16, CLATTN_F32 };
    float *q = malloc(32 * 4), *k = malloc(1001 * 16 * 4), *o = malloc(32 * 4);
    assert_true(q && k && o);
    clattn_random_fill(q, 32, CLATTN_F32, 7);
    clattn_random_fill(k, 1001 * 16, CLATTN_F32, 8);
    clattn_options opts;
    clattn_default_options(&opts);
    clattn_group_info info;
    assert_int_equal(clattn_group_attention(group, &s, &opts, q, k, k, o, NULL, &info), CLATTN_OK);
    assert_int_equal(info.share[0], 751);
    assert_int_equal(info.share[1], 250);
    assert_true(info.weight[0] == 3 && info.weight[1] == 1);
    assert_int_equal(clattn_group_set_weights(group, tiny_first), CLATTN_OK);
    for (size_t i = 0; i < 3; i++) /* the decoding cases, sinks among them */
        run_case(group, &cases[i], 900 + 10 * i);
    assert_int_equal(clattn_group_attention(group, &s, &opts, q, k, k, o, NULL, &info), CLATTN_OK);
    assert_int_equal(info.share[0], 0);
    assert_int_equal(info.devices, 1);
    assert_int_equal(clattn_group_set_weights(group, NULL), CLATTN_OK);
    free(q), free(k), free(o);
    clattn_group_close(&group);
}

/* The schemes by name: the ring (query rows against key blocks in turn)
 * on every prefill case it takes, by keys on a prefill without a causal
 * mask, one device when asked; refused where the scheme cannot split the
 * call, and an unknown name refused. */
static const struct group_case ring_cases[] = {
    { "ring: bottom-right, GQA", { 2, 4, 2, 150, 200, 64, CLATTN_F16 },
      CLATTN_CAUSAL_BOTTOM_RIGHT, { 0 }, { 0 }, 0, 0, 0, 0, 0, 0, 0, "ring" },
    { "ring: top-left, Nk < Nq", { 1, 4, 4, 160, 120, 32, CLATTN_F32 }, CLATTN_CAUSAL_TOP_LEFT,
      { 0 }, { 0 }, 0, 0, 0, 0, 0, 0, 0, "ring" },
    { "ring: top-left, per-sequence lengths", { 3, 4, 2, 70, 90, 32, CLATTN_F32 },
      CLATTN_CAUSAL_TOP_LEFT, { 90, 0, 33 }, { 40, 70, 0 }, 1, 1, 0, 0, 0, 0, 0, "ring" },
    { "ring: no mask, per-sequence lengths", { 3, 4, 2, 40, 90, 32, CLATTN_F32 },
      CLATTN_CAUSAL_NONE, { 90, 0, 33 }, { 40, 7, 0 }, 1, 1, 0, 0, 0, 0, 0, "ring" },
    { "ring: bottom-right, lengths, softcap, sinks", { 3, 4, 2, 50, 120, 32, CLATTN_F16 },
      CLATTN_CAUSAL_BOTTOM_RIGHT, { 120, 64, 5 }, { 50, 13, 9 }, 1, 1, 30.0f, 1, 0, 0, 0,
      "ring" },
};

static void test_schemes(void **state)
{
    (void)state;
    char sel[32];
    const size_t d = default_index();
    for (int n = 2; n <= 3; n++) {
        snprintf(sel, sizeof sel, n == 2 ? "%zu,%zu" : "%zu,%zu,%zu", d, d, d);
        clattn_group *group = NULL;
        assert_int_equal(clattn_group_open(&group, sel), CLATTN_OK);
        assert_int_equal(clattn_group_set_scheme(group, "ring"), CLATTN_OK);
        for (size_t i = 0; i < sizeof ring_cases / sizeof ring_cases[0]; i++)
            run_case(group, &ring_cases[i], 1300 + 10 * i + (uint64_t)n);
        /* What the ring cannot split is refused, not run elsewhere. */
        clattn_shape s = { 1, 4, 2, 30, 70, 32, CLATTN_F32 };
        const size_t nq = clattn_shape_q_elems(&s), nk = clattn_shape_kv_elems(&s);
        float *q = malloc(nq * 4), *k = malloc(nk * 4), *o = malloc(nq * 4);
        assert_true(q && k && o);
        clattn_random_fill(q, nq, CLATTN_F32, 3);
        clattn_random_fill(k, nk, CLATTN_F32, 4);
        clattn_options opts;
        clattn_default_options(&opts);
        opts.causal = CLATTN_CAUSAL_BOTTOM_RIGHT;
        opts.window_left = 5;
        assert_int_equal(clattn_group_attention(group, &s, &opts, q, k, k, o, NULL, NULL),
                         CLATTN_EUNSUPPORTED);
        assert_non_null(strstr(clattn_last_error_detail(), "window"));
        opts.window_left = -1;
        s.q_len = 1;
        assert_int_equal(clattn_group_attention(group, &s, &opts, q, k, k, o, NULL, NULL),
                         CLATTN_EUNSUPPORTED);
        s.q_len = 30;
        /* By keys: a prefill without a causal mask; several rows under one refused. */
        assert_int_equal(clattn_group_set_scheme(group, "keys"), CLATTN_OK);
        struct group_case keys = cases[5];
        keys.what = "keys: no mask, per-sequence lengths";
        keys.scheme = "keys";
        run_case(group, &keys, 1400 + (uint64_t)n);
        assert_int_equal(clattn_group_attention(group, &s, &opts, q, k, k, o, NULL, NULL),
                         CLATTN_EUNSUPPORTED);
        /* One device when asked, whatever the call. */
        assert_int_equal(clattn_group_set_scheme(group, "one"), CLATTN_OK);
        struct group_case one = cases[3];
        one.scheme = "one";
        run_case(group, &one, 1500 + (uint64_t)n);
        assert_int_equal(clattn_group_set_scheme(group, "sideways"), CLATTN_EINVAL);
        assert_int_equal(clattn_group_set_scheme(group, NULL), CLATTN_OK);
        run_case(group, &cases[3], 1600 + (uint64_t)n); /* AUTO again: by query rows */
        free(q), free(k), free(o);
        clattn_group_close(&group);
    }
}

/* A device buffer of `bytes` in the group's i-th context, from `host`
 * (NULL: poisoned with NaN). */
static cl_mem device_buffer(clattn_group *group, size_t i, const void *host, size_t bytes)
{
    clattn_ctx *c = clattn_group_context(group, i);
    cl_int err;
    cl_mem b = clCreateBuffer(clattn_cl_context(c), CL_MEM_READ_WRITE, bytes, NULL, &err);
    assert_int_equal(err, CL_SUCCESS);
    void *fill = host ? NULL : malloc(bytes);
    if (fill)
        memset(fill, 0xff, bytes);
    assert_int_equal(clEnqueueWriteBuffer(clattn_cl_queue(c), b, CL_TRUE, 0, bytes,
                                          host ? host : fill, 0, NULL, NULL), CL_SUCCESS);
    free(fill);
    return b;
}

static void read_buffer(clattn_group *group, size_t i, cl_mem b, void *host, size_t bytes)
{
    assert_int_equal(clEnqueueReadBuffer(clattn_cl_queue(clattn_group_context(group, i)), b,
                                         CL_TRUE, 0, bytes, host, 0, NULL, NULL), CL_SUCCESS);
}

/* clattn_group_attention_cl on tensors already on the devices: a decoding
 * step whose cache is held by keys as given (uneven, a device holding
 * none, sinks, per-sequence lengths), merged into device 0's output; a
 * prefill split by query rows over whole Q, K, V on every device, each
 * writing its rows (and their LSE) alone; what it refuses. */
static void test_resident(void **state)
{
    (void)state;
    char sel[32];
    const size_t d = default_index();
    snprintf(sel, sizeof sel, "%zu,%zu,%zu", d, d, d);
    clattn_group *group = NULL;
    assert_int_equal(clattn_group_open(&group, sel), CLATTN_OK);
    float sinks[8];
    for (int pass = 0; pass < 2; pass++) {
        const int decode = pass == 0;
        const clattn_shape s = decode ? (clattn_shape){ 2, 8, 2, 1, 500, 32, CLATTN_F16 }
                                      : (clattn_shape){ 2, 4, 2, 90, 130, 32, CLATTN_F32 };
        const size_t e = clattn_dtype_size(s.dtype), nq = clattn_shape_q_elems(&s);
        const size_t nk = clattn_shape_kv_elems(&s), rows = s.batch * s.heads * s.q_len;
        void *q = malloc(nq * e), *k = malloc(nk * e), *v = malloc(nk * e), *o = malloc(nq * e);
        float *lse = malloc(rows * sizeof *lse);
        double *ref = malloc(nq * sizeof *ref), *ref_lse = malloc(rows * sizeof *ref_lse);
        assert_true(q && k && v && o && lse && ref && ref_lse);
        assert_int_equal(case_inputs(q, nq, k, nk, v, nk, s.dtype, 40 + pass), CLATTN_OK);
        uint32_t kv_lens[2] = { 500, 311 }, q_lens[2] = { 90, 41 };
        clattn_options opts;
        case_options(&opts, CLATTN_CAUSAL_BOTTOM_RIGHT, decode ? kv_lens : NULL,
                     decode ? NULL : q_lens, 0, decode, sinks, s.heads);
        assert_int_equal(clattn_reference_ex(&s, &opts, q, k, v, ref, ref_lse), CLATTN_OK);
        const size_t held[3] = { 300, 0, 200 }; /* the decoding step's keys per device */
        clattn_group_tensors t[3];
        size_t at = 0;
        for (size_t i = 0; i < 3; i++) {
            const size_t mine = decode ? held[i] : s.kv_len, blocks = s.batch * s.kv_heads;
            void *lk = decode ? malloc(blocks * mine * s.head_dim * e + 1) : k;
            void *lv = decode ? malloc(blocks * mine * s.head_dim * e + 1) : v;
            for (size_t b = 0; decode && b < blocks; b++) {
                memcpy((char *)lk + b * mine * s.head_dim * e,
                       (char *)k + (b * s.kv_len + at) * s.head_dim * e, mine * s.head_dim * e);
                memcpy((char *)lv + b * mine * s.head_dim * e,
                       (char *)v + (b * s.kv_len + at) * s.head_dim * e, mine * s.head_dim * e);
            }
            t[i] = (clattn_group_tensors){ device_buffer(group, i, q, nq * e),
                                           mine ? device_buffer(group, i, lk, blocks * mine *
                                                                s.head_dim * e) : NULL,
                                           mine ? device_buffer(group, i, lv, blocks * mine *
                                                                s.head_dim * e) : NULL,
                                           device_buffer(group, i, NULL, nq * e),
                                           device_buffer(group, i, NULL, rows * sizeof(float)),
                                           decode ? mine : 0 };
            at += mine;
            if (decode)
                free(lk), free(lv);
        }
        clattn_group_info info;
        const int rc = clattn_group_attention_cl(group, &s, &opts, t, &info);
        if (rc < 0)
            fail_msg("%s: %s: %s", decode ? "decode" : "prefill", clattn_error_name(rc),
                     clattn_last_error_detail());
        assert_string_equal(info.scheme, decode ? "keys" : "queries");
        /* O as the devices hold it: device 0's merged, or each device's rows. */
        memset(o, 0xff, nq * e);
        for (size_t i = 0; i < 3; i++) {
            if (decode && i > 0)
                break;
            void *whole = malloc(nq * e);
            float *part = malloc(rows * sizeof *part);
            read_buffer(group, i, t[i].o, whole, nq * e);
            read_buffer(group, i, t[i].lse, part, rows * sizeof *part);
            const size_t a = decode ? 0 : info.begin[i], n = decode ? s.q_len : info.share[i];
            for (size_t bh = 0; bh < s.batch * s.heads; bh++) {
                memcpy((char *)o + (bh * s.q_len + a) * s.head_dim * e,
                       (char *)whole + (bh * s.q_len + a) * s.head_dim * e, n * s.head_dim * e);
                memcpy(lse + bh * s.q_len + a, part + bh * n, n * sizeof *lse);
            }
            free(whole), free(part);
        }
        double max_abs, rel_l2, tol_abs, tol_rel, worst_lse = 0;
        size_t nans;
        assert_int_equal(clattn_compare(&s, o, ref, &max_abs, &rel_l2, &nans), CLATTN_OK);
        clattn_tolerance(s.dtype, &tol_abs, &tol_rel);
        for (size_t i = 0; i < rows; i++) {
            const double dl = isinf(ref_lse[i]) ? (lse[i] == ref_lse[i] ? 0 : INFINITY)
                                                : fabs(lse[i] - ref_lse[i]);
            worst_lse = dl > worst_lse || isnan(dl) ? dl : worst_lse;
        }
        if (nans || !(max_abs <= tol_abs) || !(rel_l2 <= tol_rel) || !(worst_lse <= 1e-3))
            fail_msg("%s on the devices' tensors: max error %.3g, rel_l2 %.3g, %zu NaN, LSE "
                     "%.3g", decode ? "decode" : "prefill", max_abs, rel_l2, nans, worst_lse);
        /* Refusals: keys that do not add up; a missing buffer; the ring. */
        if (decode) {
            t[2].keys = 199;
            assert_int_equal(clattn_group_attention_cl(group, &s, &opts, t, NULL), CLATTN_EINVAL);
            t[2].keys = 200;
            cl_mem keep = t[0].lse;
            t[0].lse = NULL;
            assert_int_equal(clattn_group_attention_cl(group, &s, &opts, t, NULL), CLATTN_EINVAL);
            t[0].lse = keep;
            opts.window_left = 10; /* not split by keys, and no device holds all of them */
            assert_int_equal(clattn_group_attention_cl(group, &s, &opts, t, NULL),
                             CLATTN_EUNSUPPORTED);
        } else {
            assert_int_equal(clattn_group_set_scheme(group, "ring"), CLATTN_OK);
            assert_int_equal(clattn_group_attention_cl(group, &s, &opts, t, NULL),
                             CLATTN_EUNSUPPORTED);
            assert_int_equal(clattn_group_set_scheme(group, NULL), CLATTN_OK);
        }
        for (size_t i = 0; i < 3; i++) {
            cl_mem all[5] = { t[i].q, t[i].k, t[i].v, t[i].o, t[i].lse };
            for (int b = 0; b < 5; b++)
                if (all[b])
                    clReleaseMemObject(all[b]);
        }
        free(q), free(k), free(v), free(o), free(lse), free(ref), free(ref_lse);
    }
    clattn_group_close(&group);
}

static void test_refusals(void **state)
{
    (void)state;
    clattn_group *group = (clattn_group *)1;
    assert_int_equal(clattn_group_open(&group, ""), CLATTN_EINVAL);
    assert_null(group);
    assert_int_equal(clattn_group_open(&group, "0,,0"), CLATTN_EINVAL);
    assert_int_equal(clattn_group_open(&group, "no such device at all"), CLATTN_ENODEV);
    assert_null(group);
    assert_int_equal(clattn_group_open(&group, "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0"),
                     CLATTN_EINVAL);
    assert_int_equal(clattn_group_open(&group, "0,0"), CLATTN_OK);
    assert_int_equal(clattn_group_size(group), 2);
    assert_non_null(clattn_group_context(group, 1));
    assert_null(clattn_group_context(group, 2));
    clattn_shape s = { 1, 2, 2, 4, 8, 16, CLATTN_F32 };
    float q[128], k[256], v[256];
    clattn_options o;
    clattn_default_options(&o);
    clattn_random_fill(q, 128, CLATTN_F32, 1);
    clattn_random_fill(k, 256, CLATTN_F32, 2);
    clattn_random_fill(v, 256, CLATTN_F32, 3);
    /* O over K: refused, K unchanged. */
    assert_int_equal(clattn_group_attention(group, &s, &o, q, k, v, k, NULL, NULL),
                     CLATTN_EINVAL);
    assert_int_equal(clattn_group_attention(NULL, &s, &o, q, k, v, q, NULL, NULL),
                     CLATTN_EINVAL);
    s.head_dim = 0;
    float out[128];
    assert_int_equal(clattn_group_attention(group, &s, &o, q, k, v, out, NULL, NULL),
                     CLATTN_EINVAL);
    clattn_group_close(&group);
    clattn_group_close(&group); /* NULL-safe */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two),
        cmocka_unit_test(test_three),
        cmocka_unit_test(test_devices),
        cmocka_unit_test(test_weights),
        cmocka_unit_test(test_schemes),
        cmocka_unit_test(test_resident),
        cmocka_unit_test(test_refusals),
    };
    return DEVICE_SUITE_MAIN(&ctx, tests);
}
