/* CLBlast's strided-batched GEMMs, where the library was built with it. */
#include "context/context.h"
#include "naive/gemm.h"

#ifdef CLATTN_HAVE_CLBLAST
#include <pthread.h>
#include <stdlib.h>

#include <clblast_c.h>

/* CLBlast keeps process-wide caches (its tuning database, its programs)
 * that it does not guard: two threads each with their own clattn context
 * calling it at once read freed memory inside CLBlast's database set-up
 * (AddressSanitizer, tests/test_threads.c). Its calls only enqueue (or build
 * once), so one lock around them costs nothing that matters. */
static pthread_mutex_t clblast_lock = PTHREAD_MUTEX_INITIALIZER;

/* CLBlast's batched kernels index each buffer with 32-bit ints (batch *
 * stride + offset), so a batch whose buffers exceed 2^31 elements would
 * write out of bounds (the H200 faulted at 2^32 scores, B=8 H=32 N=4096
 * fp32). Such a batch is split into calls of `per_call` entries on
 * sub-buffers, each call's indices in range; where a single entry is too
 * large or sub-buffer origins would be misaligned, CLBlast does not take
 * the case. */
struct chunks {
    size_t per_call;           /* batch entries per call */
    size_t esize;
};

/* The largest index a call may form: 2^30, half of what an int holds, so
 * that CLBlast's padded temporaries (tiles rounded up) stay in range too;
 * the clblast_index_limit parameter lowers it, so that tests split small
 * batches. */
static size_t index_limit(const struct gemm_desc *g)
{
    const int asked = g->params ? g->params[NAIVE_CLBLAST_INDEX_LIMIT] : PARAM_AUTO;
    return asked != PARAM_AUTO ? (size_t)asked : (size_t)1 << 30;
}

/* Elements one batch entry of a (rows x cols, leading dim ld) matrix spans. */
static size_t footprint(size_t rows, size_t cols, size_t ld)
{
    return (rows - 1) * ld + cols;
}

/* How many entries of `stride` with `span` elements each fit under limit. */
static size_t fit(size_t span, size_t stride, size_t limit)
{
    if (span > limit)
        return 0;
    return stride ? (limit - span) / stride + 1 : SIZE_MAX;
}

/* Why `g` cannot be split into calls CLBlast indexes correctly, or NULL and
 * the split in *c. */
static const char *plan_chunks(const struct device_facts *dev, const struct gemm_desc *g,
                               struct chunks *c)
{
    const size_t limit = index_limit(g);
    const size_t spans[3] = {
        footprint(g->m, g->k, g->lda),
        g->trans_b ? footprint(g->n, g->k, g->ldb) : footprint(g->k, g->n, g->ldb),
        footprint(g->m, g->n, g->ldc),
    };
    const size_t strides[3] = { g->a_stride, g->b_stride, g->c_stride };
    c->esize = clattn_dtype_size(g->dtype);
    c->per_call = g->batch;
    for (int i = 0; i < 3; i++) {
        size_t n = fit(spans[i], strides[i], limit);
        if (n == 0)
            return "one GEMM of the batch spans more elements than CLBlast's 32-bit indices";
        if (n < c->per_call)
            c->per_call = n;
    }
    if (c->per_call >= g->batch)
        return NULL;
    for (int i = 0; i < 3; i++)
        if ((c->per_call * strides[i] * c->esize) % dev->base_align_bytes)
            return "the batch exceeds CLBlast's 32-bit indices and sub-buffers of it would "
                   "not be aligned";
    return NULL;
}

static const char *cannot_run(const struct device_facts *dev, const struct gemm_desc *g)
{
    /* CLBlast refuses half precision unless the device advertises
     * cl_khr_fp16 (NVIDIA computes half but does not advertise it). */
    if (g->dtype == CLATTN_F16 && !dev->extensions.fp16)
        return "CLBlast's half precision needs cl_khr_fp16";
    struct chunks c;
    return plan_chunks(dev, g, &c);
}

static int clblast_fail(CLBlastStatusCode st, const char *call)
{
    if (st == CLBlastNoHalfPrecision)
        return clattn_fail(CLATTN_EUNSUPPORTED, "%s: CLBlast has no half precision here", call);
    /* CLBlast's own codes are -1024..-1007 and -2050..-2039; every other
     * status is an OpenCL one passed through (NVIDIA's -9999 among them). */
    if (!((st <= -1007 && st >= -1024) || (st <= -2039 && st >= -2050)))
        return clattn_fail_cl((cl_int)st, call);
    return clattn_fail(CLATTN_ECL, "%s -> CLBlast status %d", call, (int)st);
}

static int temp_bytes(clattn_ctx *ctx, const struct gemm_desc *g, uint64_t *bytes)
{
    size_t one = 0;
    CLBlastTranspose tb = g->trans_b ? CLBlastTransposeYes : CLBlastTransposeNo;
    pthread_mutex_lock(&clblast_lock);
    CLBlastStatusCode st = g->dtype == CLATTN_F16
        ? CLBlastHGemmTempBufferSize(CLBlastLayoutRowMajor, CLBlastTransposeNo, tb, g->m, g->n,
                                     g->k, 0, g->lda, 0, g->ldb, 0, g->ldc, &ctx->queue, &one)
        : CLBlastSGemmTempBufferSize(CLBlastLayoutRowMajor, CLBlastTransposeNo, tb, g->m, g->n,
                                     g->k, 0, g->lda, 0, g->ldb, 0, g->ldc, &ctx->queue, &one);
    pthread_mutex_unlock(&clblast_lock);
    if (st != CLBlastSuccess)
        return clblast_fail(st, "CLBlastXGemmTempBufferSize");
    /* The strided-batched indirect kernel pads every batch entry: count the
     * single-GEMM figure once per batch entry, an upper bound. */
    if (__builtin_mul_overflow((uint64_t)one, (uint64_t)g->batch, bytes))
        return clattn_fail(CLATTN_EOVERFLOW, "CLBlast temporary buffer size");
    return CLATTN_OK;
}

static int enqueue_one(clattn_ctx *ctx, const struct gemm_desc *g)
{
    /* CLBlast's returned event belongs to its last helper kernel, so we ask
     * for none: ordering comes from the in-order queue. */
    CLBlastTranspose tb = g->trans_b ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastStatusCode st;
    pthread_mutex_lock(&clblast_lock);
    if (g->dtype == CLATTN_F16) {
        cl_half alpha = clattn_f32_to_f16(g->alpha), beta = 0;
        st = CLBlastHgemmStridedBatched(CLBlastLayoutRowMajor, CLBlastTransposeNo, tb, g->m,
                                        g->n, g->k, alpha, g->a, 0, g->lda, g->a_stride, g->b, 0,
                                        g->ldb, g->b_stride, beta, g->c, 0, g->ldc, g->c_stride,
                                        g->batch, &ctx->queue, NULL);
    } else {
        st = CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, CLBlastTransposeNo, tb, g->m,
                                        g->n, g->k, g->alpha, g->a, 0, g->lda, g->a_stride, g->b,
                                        0, g->ldb, g->b_stride, 0.0f, g->c, 0, g->ldc,
                                        g->c_stride, g->batch, &ctx->queue, NULL);
    }
    pthread_mutex_unlock(&clblast_lock);
    return st == CLBlastSuccess ? CLATTN_OK : clblast_fail(st, "CLBlastXgemmStridedBatched");
}

/* The part of `buf` that batch entries [first, first + count) of `stride`
 * elements use, as a sub-buffer (the last entry's span may end early). */
static cl_mem batch_part(cl_mem buf, size_t first, size_t count, size_t stride, size_t span,
                         size_t esize, cl_int *err)
{
    cl_buffer_region r = { first * stride * esize, ((count - 1) * stride + span) * esize };
    return clCreateSubBuffer(buf, 0, CL_BUFFER_CREATE_TYPE_REGION, &r, err);
}

/* A batch split into calls on sub-buffers (see plan_chunks). */
static int enqueue_split(clattn_ctx *ctx, const struct gemm_desc *g, const struct chunks *c)
{
    const size_t span_a = footprint(g->m, g->k, g->lda);
    const size_t span_b = g->trans_b ? footprint(g->n, g->k, g->ldb) : footprint(g->k, g->n, g->ldb);
    const size_t span_c = footprint(g->m, g->n, g->ldc);
    for (size_t first = 0; first < g->batch; first += c->per_call) {
        const size_t count = g->batch - first < c->per_call ? g->batch - first : c->per_call;
        struct gemm_desc part = *g;
        cl_int ea, eb, ec;
        part.batch = count;
        part.a = batch_part(g->a, first, count, g->a_stride, span_a, c->esize, &ea);
        part.b = batch_part(g->b, first, count, g->b_stride, span_b, c->esize, &eb);
        part.c = batch_part(g->c, first, count, g->c_stride, span_c, c->esize, &ec);
        int rc;
        if (ea != CL_SUCCESS || eb != CL_SUCCESS || ec != CL_SUCCESS)
            rc = clattn_fail_cl(ea != CL_SUCCESS ? ea : eb != CL_SUCCESS ? eb : ec,
                                "clCreateSubBuffer(CLBlast batch part)");
        else
            rc = enqueue_one(ctx, &part);
        /* Released now, kept by the queue until the call that uses them ends. */
        if (ea == CL_SUCCESS)
            clReleaseMemObject(part.a);
        if (eb == CL_SUCCESS)
            clReleaseMemObject(part.b);
        if (ec == CL_SUCCESS)
            clReleaseMemObject(part.c);
        if (rc < 0)
            return rc;
    }
    return CLATTN_OK;
}

/* Sub-buffers cannot be made of sub-buffers. */
static int is_sub_buffer(cl_mem m)
{
    cl_mem parent = NULL;
    return clGetMemObjectInfo(m, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof parent, &parent, NULL) !=
               CL_SUCCESS || parent != NULL;
}

static int enqueue(clattn_ctx *ctx, const struct gemm_desc *g)
{
    struct chunks c;
    if (plan_chunks(&ctx->dev, g, &c))
        return GEMM_HAND_ON;
    if (c.per_call >= g->batch)
        return enqueue_one(ctx, g);
    if (is_sub_buffer(g->a) || is_sub_buffer(g->b) || is_sub_buffer(g->c))
        return GEMM_HAND_ON;
    return enqueue_split(ctx, g, &c);
}

const struct gemm_backend gemm_clblast = {
    .name = "clblast",
    .cannot_run = cannot_run,
    .temp_bytes = temp_bytes,
    .enqueue = enqueue,
};

#else

static const char *cannot_run(const struct device_facts *dev, const struct gemm_desc *g)
{
    (void)dev;
    (void)g;
    return "the library was built without CLBlast";
}

static int enqueue(clattn_ctx *ctx, const struct gemm_desc *g)
{
    (void)ctx;
    (void)g;
    return GEMM_HAND_ON;
}

const struct gemm_backend gemm_clblast = {
    .name = "clblast",
    .cannot_run = cannot_run,
    .enqueue = enqueue,
};

#endif
