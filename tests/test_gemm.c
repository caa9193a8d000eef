/*
 * Device test of the naive path's GEMM (src/naive/gemm.h) on its own, at
 * sizes the attention cases reach only in part: M, N and K not multiples of
 * any tile, K = 1, N = 1, d = 256, K beyond a CPU chunk, padded leading
 * dimensions and batch strides, both op(B), both dtypes, in each shape of
 * the built-in kernel (the naive path's parameters shape=cpu|gpu and CPU
 * tiles small enough that every edge path runs), and the device's own
 * choice (the tensor-core GEMM for fp16 on NVIDIA). C is poisoned (NaN) first,
 * padding included: every element of the M x N blocks must match a double
 * reference computed from the stored inputs, and nothing else may change.
 * Links the library's objects (the GEMM is internal). Exits 77 (skipped)
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
#include "device_suite.h"
#include "context/context.h"
#include "naive/gemm.h"

static clattn_ctx *ctx;

struct gemm_case {
    size_t m, n, k, batch;
    int trans_b;
    size_t pad_a, pad_b, pad_c; /* leading dimension beyond the row */
    size_t gap;                 /* elements between batch entries beyond the matrix */
};

static const struct gemm_case cases[] = {
    { 1, 1, 1, 1, 1, 0, 0, 0, 0 },
    { 1, 1, 1, 1, 0, 0, 0, 0, 0 },
    { 37, 45, 1, 2, 1, 0, 0, 0, 0 },     /* K = 1 (d = 1, Q K^T) */
    { 100, 1, 3, 1, 0, 0, 0, 0, 0 },     /* N = 1 (d = 1, P V) */
    { 13, 29, 300, 3, 0, 1, 2, 3, 5 },   /* K over a chunk, padded, gaps */
    { 129, 131, 128, 2, 1, 0, 0, 0, 0 }, /* one past the tiles */
    { 127, 128, 129, 1, 0, 3, 0, 1, 0 },
    { 47, 61, 256, 1, 1, 0, 0, 0, 0 },   /* d = 256, Q K^T */
    { 47, 256, 61, 1, 0, 0, 0, 0, 0 },   /* d = 256, P V */
    { 50, 255, 50, 2, 0, 0, 5, 0, 7 },   /* d = 255 */
    { 200, 7, 513, 2, 0, 0, 0, 0, 0 },   /* odd d, K past two chunks */
    { 260, 300, 17, 1, 1, 2, 1, 3, 1 },
    { 3, 9000, 8, 1, 1, 0, 0, 0, 0 },    /* a long S row */
    { 3, 8, 9000, 1, 0, 0, 0, 0, 0 },    /* ... and its P V */
};
#define N_CASES (sizeof cases / sizeof cases[0])

/* The shapes of the built-in kernel each case runs in, as the naive path's
 * parameters (clattn_options.kernel_params). */
static const char *const shapes[] = {
    "",                 /* the device's */
    "shape=cpu",
    "shape=gpu",
    /* one row, one vector, K in chunks of 16 */
    "shape=cpu,cpu_rm=1,cpu_nv=1,cpu_rb=1,cpu_ns=1,cpu_kc=16",
    "shape=cpu,cpu_rm=5,cpu_nv=3,cpu_rb=3,cpu_ns=2,cpu_kc=32",
    "shape=cpu,cpu_rm=28,cpu_nv=1,cpu_rb=2,cpu_ns=3,cpu_kc=48",
};

/* The naive path's parameter values of `text`, which must parse. */
static void params_of(const char *text, int values[NAIVE_PARAMS])
{
    clattn_options o;
    clattn_default_options(&o);
    o.kernel_params = text;
    assert_int_equal(naive_params_of(&o, values), CLATTN_OK);
}
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

static uint64_t rng = 88172645463325252ull;
static float uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* A host copy of a matrix batch in the storage dtype; values in [-1, 1),
 * read back through the dtype (fp16 rounded) for the reference. */
struct mat {
    size_t elems;
    void *host;
    double *value;
    cl_mem buf;
};

static void mat_make(struct mat *x, size_t elems, clattn_dtype dt, int poison)
{
    const size_t es = clattn_dtype_size(dt);
    x->elems = elems;
    x->host = malloc(elems * es);
    x->value = malloc(elems * sizeof(double));
    assert_non_null(x->host);
    assert_non_null(x->value);
    for (size_t i = 0; i < elems; i++) {
        const float f = poison ? NAN : uniform();
        if (dt == CLATTN_F16) {
            uint16_t h = clattn_f32_to_f16(f);
            ((uint16_t *)x->host)[i] = h;
            x->value[i] = clattn_f16_to_f32(h);
        } else {
            ((float *)x->host)[i] = f;
            x->value[i] = f;
        }
    }
    cl_int err;
    x->buf = clCreateBuffer(clattn_cl_context(ctx), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                            elems * es, x->host, &err);
    assert_int_equal(err, CL_SUCCESS);
}

static void mat_free(struct mat *x)
{
    clReleaseMemObject(x->buf);
    free(x->host);
    free(x->value);
}

static double read_back(const void *host, size_t i, clattn_dtype dt)
{
    return dt == CLATTN_F16 ? clattn_f16_to_f32(((const uint16_t *)host)[i])
                            : ((const float *)host)[i];
}

static void check_case(const struct gemm_case *t, clattn_dtype dt, const char *shape)
{
    struct gemm_desc g = {
        .m = t->m, .n = t->n, .k = t->k, .batch = t->batch, .alpha = 0.375f,
        .trans_b = t->trans_b, .dtype = dt,
        .lda = t->k + t->pad_a, .ldb = (t->trans_b ? t->k : t->n) + t->pad_b,
        .ldc = t->n + t->pad_c,
    };
    g.a_stride = t->m * g.lda + t->gap;
    g.b_stride = (t->trans_b ? t->n : t->k) * g.ldb + t->gap;
    g.c_stride = t->m * g.ldc + t->gap;
    struct mat a, b, c;
    mat_make(&a, g.a_stride * t->batch, dt, 0);
    mat_make(&b, g.b_stride * t->batch, dt, 0);
    mat_make(&c, g.c_stride * t->batch, dt, 1);
    g.a = a.buf;
    g.b = b.buf;
    g.c = c.buf;
    int params[NAIVE_PARAMS];
    params_of(shape, params);
    if (shape[0]) /* a shape of the built-in kernel; else the device's own choice */
        params[NAIVE_GEMM] = NAIVE_GEMM_BUILTIN;
    g.params = params;
    int rc = gemm_enqueue(ctx, &g, 0);
    if (rc < 0)
        fail_msg("gemm_enqueue: %s: %s", clattn_error_name(rc), clattn_last_error_detail());
    const size_t es = clattn_dtype_size(dt);
    assert_int_equal(clEnqueueReadBuffer(ctx->queue, c.buf, CL_TRUE, 0, c.elems * es, c.host, 0,
                                         NULL, NULL), CL_SUCCESS);
    size_t bad = 0, written_outside = 0;
    double worst = 0;
    for (size_t e = 0; e < t->batch; e++) {
        for (size_t i = 0; i < t->m; i++) {
            for (size_t j = 0; j < g.ldc; j++) {
                const size_t at = e * g.c_stride + i * g.ldc + j;
                if (at >= c.elems)
                    break;
                const double got = read_back(c.host, at, dt);
                if (j >= t->n) {
                    written_outside += !isnan(got);
                    continue;
                }
                double ref = 0, mag = 0;
                for (size_t k = 0; k < t->k; k++) {
                    const double x = a.value[e * g.a_stride + i * g.lda + k];
                    const double y = t->trans_b ? b.value[e * g.b_stride + j * g.ldb + k]
                                                : b.value[e * g.b_stride + k * g.ldb + j];
                    ref += x * y;
                    mag += fabs(x * y);
                }
                ref *= g.alpha;
                mag *= g.alpha;
                /* fp32 accumulation; fp16 rounds the result once more (half
                 * an ulp: 2^-11 relative, 2^-25 among the subnormals). */
                double tol = 2e-6 * mag + 1e-30;
                if (dt == CLATTN_F16)
                    tol += fabs(ref) / 2048 + 0x1p-25;
                const double err = fabs(got - ref);
                if (!(err <= tol))
                    bad++;
                if (err / (tol > 0 ? tol : 1) > worst)
                    worst = err / (tol > 0 ? tol : 1);
            }
        }
        /* The gap after each batch entry stays poisoned. */
        for (size_t at = e * g.c_stride + t->m * g.ldc; at < (e + 1) * g.c_stride && at < c.elems;
             at++)
            written_outside += !isnan(read_back(c.host, at, dt));
    }
    if (bad || written_outside)
        fail_msg("%s M=%zu N=%zu K=%zu batch=%zu trans_b=%d %s: %zu wrong (worst %.2f x tol), "
                 "%zu written outside C", shape[0] ? shape : "(device)", t->m, t->n, t->k,
                 t->batch, t->trans_b, dt == CLATTN_F16 ? "fp16" : "fp32", bad, worst,
                 written_outside);
    mat_free(&a);
    mat_free(&b);
    mat_free(&c);
}

/* --full (the heavy suite): every case on every shape in both dtypes;
 * without it, on the device's own shape ("") every case in fp32 and half
 * in fp16, and on each other shape a third of the cases in one dtype, by
 * turns (each case's tiles and K chunks are a kernel to build), so that
 * the default suite finishes on two loaded cores. */
static int full;

static void test_gemm_cases(void **state)
{
    (void)state;
    for (size_t s = 0; s < N_SHAPES; s++)
        for (int dt = 0; dt < 2; dt++)
            for (size_t i = 0; i < N_CASES; i++)
                if (full || (s == 0 && (dt == 0 || i % 2 == 0)) ||
                    ((size_t)dt == s % 2 && (i + s) % 3 == 0))
                    check_case(&cases[i], dt ? CLATTN_F16 : CLATTN_F32, shapes[s]);
}

/* Parameters the path cannot take are an error, not a silent default:
 * those the parser refuses, and tiles each within range that do not go
 * together. */
static void test_bad_tiles(void **state)
{
    (void)state;
    static const char *const unparsed[] = { "cpu_rm=0", "shape=CPU", "shape=gpu:8", "cpu_kc=8",
                                            "cpu_rm", "gemm=cublas", "tiles=1", "cpu_rm=1,",
                                            "cpu_rm=-1", "cpu_rm=1x" };
    static const char *const together[] = {
        "shape=cpu,cpu_rm=12,cpu_nv=3",  /* 36 accumulators */
        "shape=cpu,cpu_kc=20",           /* not a multiple of 16 */
        "shape=cpu,cpu_rm=16,cpu_nv=2,cpu_rb=64,cpu_ns=4,cpu_kc=1024", /* 5 MiB of tiles */
    };
    clattn_options o;
    clattn_default_options(&o);
    int params[NAIVE_PARAMS];
    for (size_t i = 0; i < sizeof unparsed / sizeof unparsed[0]; i++) {
        o.kernel_params = unparsed[i];
        assert_int_equal(naive_params_of(&o, params), CLATTN_EINVAL);
    }
    struct gemm_case t = { 4, 4, 4, 1, 1, 0, 0, 0, 0 };
    struct mat a, b, c;
    mat_make(&a, 16, CLATTN_F32, 0);
    mat_make(&b, 16, CLATTN_F32, 0);
    mat_make(&c, 16, CLATTN_F32, 1);
    struct gemm_desc g = { .m = t.m, .n = t.n, .k = t.k, .batch = 1, .alpha = 1, .trans_b = 1,
                           .dtype = CLATTN_F32, .a = a.buf, .b = b.buf, .c = c.buf,
                           .lda = 4, .ldb = 4, .ldc = 4, .a_stride = 16, .b_stride = 16,
                           .c_stride = 16 };
    g.params = params;
    for (size_t i = 0; i < sizeof together / sizeof together[0]; i++) {
        params_of(together[i], params);
        assert_int_equal(gemm_enqueue(ctx, &g, 0), CLATTN_EINVAL);
    }
    mat_free(&a);
    mat_free(&b);
    mat_free(&c);
}

int main(int argc, char **argv)
{
    full = device_suite_full(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_cases),
        cmocka_unit_test(test_bad_tiles),
    };
    return DEVICE_SUITE_MAIN(&ctx, tests);
}
