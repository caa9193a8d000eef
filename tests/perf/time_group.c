/* SPDX-License-Identifier: MIT */
/*
 * time_group: one attention call across a device group beside the same
 * call on the group's first device, on the host clock, in one process.
 *
 * usage: time_group SELECTORS B,H,Hkv,Nq,Nk,d DTYPE CAUSAL [REPS [resident]]
 *   SELECTORS  clattn_group_open's, e.g. 0,1
 *   DTYPE      fp32, fp16 or bf16; CAUSAL none, top-left or bottom-right
 *   REPS       timed calls of each (default 5), after one untimed call
 *              of each (builds, first uploads)
 * Host arrays in, host arrays out, as clattn_attention_ex and
 * clattn_group_attention take them: each figure counts the copies to the
 * devices and back. With `resident`, the tensors are on the devices
 * first, as an engine keeps them (clattn_group_attention_cl: a decoding
 * step's keys split evenly over the devices, a longer call's whole Q, K, V
 * on each), beside clattn_attention_ex_cl on the first device holding the
 * whole call; each call waited for. Prints one JSON line: the scheme, the devices used,
 * the median seconds of the group's calls and of the one device's, and
 * their ratio. Exit status 1 when a call fails, 2 for a bad command line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <clattn/clattn.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int fail(const char *what, int rc)
{
    fprintf(stderr, "time_group: %s: %s: %s\n", what, clattn_error_name(rc),
            clattn_last_error_detail());
    return 1;
}

/* A buffer of n random elements on context c; NULL for none. */
static cl_mem random_buffer(clattn_ctx *c, size_t n, clattn_dtype dtype, uint32_t seed)
{
    cl_int err;
    cl_mem b = clCreateBuffer(clattn_cl_context(c), CL_MEM_READ_WRITE,
                              n * clattn_dtype_size(dtype) + 4, NULL, &err);
    if (err != CL_SUCCESS)
        return NULL;
    if (n && clattn_random_fill_cl(c, b, n, dtype, seed) < 0) {
        clReleaseMemObject(b);
        return NULL;
    }
    return b;
}

static int wait_call(clattn_ctx *c, const clattn_shape *s, const clattn_options *o,
                     const clattn_group_tensors *t)
{
    clattn_extras ex = CLATTN_EXTRAS_INIT;
    ex.lse = t->lse;
    int rc = clattn_attention_ex_cl(c, s, o, t->q, t->k, t->v, t->o, &ex, 0, NULL, NULL, NULL);
    return rc < 0 ? rc : clFinish(clattn_cl_queue(c)) == CL_SUCCESS ? 0 : CLATTN_EIO;
}

/* The resident form: tensors on the devices first. */
static int time_resident(clattn_group *g, const clattn_shape *s, const clattn_options *o,
                         int reps, const char *sel)
{
    const size_t n = clattn_group_size(g), decode = s->q_len == 1;
    const size_t nq = clattn_shape_q_elems(s), rows = s->batch * s->heads * s->q_len;
    const size_t per_key = s->batch * s->kv_heads * s->head_dim;
    clattn_group_tensors t[CLATTN_GROUP_MAX], whole;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        clattn_ctx *c = clattn_group_context(g, i);
        const size_t keys = decode ? s->kv_len * (i + 1) / n - s->kv_len * i / n : s->kv_len;
        t[i] = (clattn_group_tensors){ random_buffer(c, nq, s->dtype, 1),
                                       random_buffer(c, keys * per_key, s->dtype, 2),
                                       random_buffer(c, keys * per_key, s->dtype, 3),
                                       random_buffer(c, nq, s->dtype, 0),
                                       random_buffer(c, rows, CLATTN_F32, 0), decode ? keys : 0 };
        rc = t[i].q && t[i].k && t[i].v && t[i].o && t[i].lse ? 0 : CLATTN_EOOM;
    }
    clattn_ctx *first = clattn_group_context(g, 0);
    whole = t[0];
    if (rc == 0 && decode) { /* the first device alone holds every key */
        whole.k = random_buffer(first, s->kv_len * per_key, s->dtype, 2);
        whole.v = random_buffer(first, s->kv_len * per_key, s->dtype, 3);
        rc = whole.k && whole.v ? 0 : CLATTN_EOOM;
    }
    if (rc < 0)
        return fail("device buffers", rc);
    double *tg = malloc(reps * sizeof *tg), *t1 = malloc(reps * sizeof *t1);
    clattn_group_info info;
    for (int r = -1; r < reps && rc >= 0 && tg && t1; r++) {
        double t0 = now();
        rc = clattn_group_attention_cl(g, s, o, t, &info);
        const double a = now() - t0;
        if (rc < 0)
            return fail("clattn_group_attention_cl", rc);
        t0 = now();
        rc = wait_call(first, s, o, &whole);
        const double b = now() - t0;
        if (rc < 0)
            return fail("clattn_attention_ex_cl", rc);
        if (r >= 0)
            tg[r] = a, t1[r] = b;
    }
    if (!tg || !t1)
        return fail("host arrays", CLATTN_ENOMEM);
    qsort(tg, reps, sizeof *tg, cmp);
    qsort(t1, reps, sizeof *t1, cmp);
    printf("{\"devices\": \"%s\", \"resident\": true, \"scheme\": \"%s\", \"used\": %zu, "
           "\"group_s\": %.6g, \"one_s\": %.6g, \"one_over_group\": %.4g}\n", sel, info.scheme,
           info.devices, tg[reps / 2], t1[reps / 2], t1[reps / 2] / tg[reps / 2]);
    for (size_t i = 0; i < n; i++) {
        cl_mem all[5] = { t[i].q, t[i].k, t[i].v, t[i].o, t[i].lse };
        for (int b = 0; b < 5; b++)
            clReleaseMemObject(all[b]);
    }
    if (decode)
        clReleaseMemObject(whole.k), clReleaseMemObject(whole.v);
    free(tg), free(t1);
    return 0;
}

int main(int argc, char **argv)
{
    clattn_shape s;
    const char *dt = argc > 3 ? argv[3] : "", *mask = argc > 4 ? argv[4] : "";
    const int reps = argc > 5 ? atoi(argv[5]) : 5;
    const int resident = argc > 6 && !strcmp(argv[6], "resident");
    if (argc < 5 || argc > 7 || (argc == 7 && !resident) || reps < 1 || reps > 1000 ||
        sscanf(argv[2], "%zu,%zu,%zu,%zu,%zu,%zu", &s.batch, &s.heads, &s.kv_heads, &s.q_len,
               &s.kv_len, &s.head_dim) != 6) {
        fprintf(stderr, "usage: time_group SELECTORS B,H,Hkv,Nq,Nk,d fp32|fp16|bf16 "
                        "none|top-left|bottom-right [REPS [resident]]\n");
        return 2;
    }
    s.dtype = !strcmp(dt, "fp16") ? CLATTN_F16 : !strcmp(dt, "bf16") ? CLATTN_BF16 : CLATTN_F32;
    clattn_options o;
    clattn_default_options(&o);
    o.causal = !strcmp(mask, "top-left")       ? CLATTN_CAUSAL_TOP_LEFT
               : !strcmp(mask, "bottom-right") ? CLATTN_CAUSAL_BOTTOM_RIGHT
                                               : CLATTN_CAUSAL_NONE;
    if (clattn_shape_check(&s) < 0)
        return fail("the shape", CLATTN_EINVAL);
    clattn_group *g = NULL;
    int rc = clattn_group_open(&g, argv[1]);
    if (rc < 0)
        return fail("clattn_group_open", rc);
    if (resident) {
        rc = time_resident(g, &s, &o, reps, argv[1]);
        clattn_group_close(&g);
        return rc;
    }
    const size_t e = clattn_dtype_size(s.dtype);
    const size_t nq = clattn_shape_q_elems(&s), nk = clattn_shape_kv_elems(&s);
    void *q = malloc(nq * e), *k = malloc(nk * e), *v = malloc(nk * e), *out = malloc(nq * e);
    double *tg = malloc(reps * sizeof *tg), *t1 = malloc(reps * sizeof *t1);
    if (!q || !k || !v || !out || !tg || !t1)
        return fail("host arrays", CLATTN_ENOMEM);
    clattn_random_fill(q, nq, s.dtype, 1);
    clattn_random_fill(k, nk, s.dtype, 2);
    clattn_random_fill(v, nk, s.dtype, 3);
    clattn_ctx *first = clattn_group_context(g, 0);
    clattn_group_info info;
    for (int r = -1; r < reps && rc >= 0; r++) { /* r = -1: untimed */
        double t0 = now();
        rc = clattn_group_attention(g, &s, &o, q, k, v, out, NULL, &info);
        const double a = now() - t0;
        if (rc < 0)
            return fail("clattn_group_attention", rc);
        t0 = now();
        rc = clattn_attention_ex(first, &s, &o, q, k, v, out, NULL, NULL);
        const double b = now() - t0;
        if (rc < 0)
            return fail("clattn_attention_ex", rc);
        if (r >= 0)
            tg[r] = a, t1[r] = b;
    }
    qsort(tg, reps, sizeof *tg, cmp);
    qsort(t1, reps, sizeof *t1, cmp);
    printf("{\"devices\": \"%s\", \"scheme\": \"%s\", \"used\": %zu, \"group_s\": %.6g, "
           "\"one_s\": %.6g, \"one_over_group\": %.4g}\n", argv[1], info.scheme, info.devices,
           tg[reps / 2], t1[reps / 2], t1[reps / 2] / tg[reps / 2]);
    free(q), free(k), free(v), free(out), free(tg), free(t1);
    clattn_group_close(&g);
    return 0;
}
