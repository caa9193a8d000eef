/* The built-in GEMM: portable OpenCL C, any device, any case, in two
 * shapes (docs/GEMM.md): cl/naive/gemm_cpu.cl on CPU devices (work-group size 1,
 * float16 register tiles) and cl/naive/gemm.cl elsewhere (local-memory tiles,
 * register micro-tiles per work-item). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context/context.h"
#include "naive/gemm.h"
#include "context/program.h"

/* The CPU kernel's tiles: RM x NV accumulator vectors, RB x NS micro-tiles
 * per work-item, K in chunks of KC. */
struct cpu_tiles {
    unsigned rm, nv, rb, ns, kc;
};

/* Private bytes of a work-item (the PoCL worker's stack): the A and op(B)
 * panels of one K chunk and the float C tile kept between chunks. */
static size_t cpu_private_bytes(const struct cpu_tiles *t)
{
    const size_t mb = (size_t)t->rm * t->rb, nb = (size_t)16 * t->nv * t->ns;
    return 4 * (mb * t->kc + nb * t->kc + mb * nb);
}
#define CPU_PRIVATE_MAX ((size_t)1 << 20) /* of the worker's 8 MiB stack */

/* The CPU shape: on CPU devices unless the shape parameter says gpu, and
 * elsewhere where it says cpu. */
int naive_cpu_shaped(const clattn_ctx *ctx, const int *params)
{
    const int asked = params ? params[NAIVE_SHAPE] : PARAM_AUTO;
    return asked == PARAM_AUTO ? ctx->dev.is_cpu : asked == NAIVE_SHAPE_CPU;
}

/* The CPU tiles the parameters force over the defaults in *t, checked
 * together. */
static int forced_cpu_tiles(const int *params, struct cpu_tiles *t)
{
    unsigned *field[] = { &t->rm, &t->nv, &t->rb, &t->ns, &t->kc };
    for (int i = 0; params && i < 5; i++)
        if (params[NAIVE_CPU_RM + i] != PARAM_AUTO)
            *field[i] = (unsigned)params[NAIVE_CPU_RM + i];
    if (t->rm * t->nv > 32 || t->kc % 16 || cpu_private_bytes(t) > CPU_PRIVATE_MAX)
        return clattn_fail(CLATTN_EINVAL, "naive CPU GEMM tiles cpu_rm=%u cpu_nv=%u cpu_rb=%u "
                           "cpu_ns=%u cpu_kc=%u: RM x NV must be at most 32, KC a multiple of "
                           "16, the tiles at most 1 MiB", t->rm, t->nv, t->rb, t->ns, t->kc);
    return CLATTN_OK;
}

static size_t div_up(size_t a, size_t b)
{
    return (a + b - 1) / b;
}

/* Default CPU tiles for `g` (docs/GEMM.md): 12 x 2 vectors (24 accumulators
 * and 2 B vectors of 32 zmm registers; M x 2, or M x 4 for P V, below 12
 * rows),
 * about 128 x 128 of C per work-item,
 * the whole of K up to 256 in one chunk; fewer rows per work-item where
 * that leaves the device's cores without work. */
static void cpu_default_tiles(const struct device_facts *dev, const struct gemm_desc *g,
                              struct cpu_tiles *t)
{
    t->rm = 12;
    t->nv = 2;
    if (g->m < 12) { /* few rows (decoding): no zero rows, wider vectors */
        t->rm = (unsigned)g->m;
        t->nv = g->m <= 6 && !g->trans_b ? 4 : 2;
    }
    t->ns = 4;
    t->rb = 10;
    const size_t kc = div_up(g->k, 16) * 16;
    t->kc = kc < 256 ? (unsigned)kc : 256;
    const size_t strips = div_up(g->n, 16 * t->nv), row_blocks = div_up(g->m, t->rm);
    if (strips < t->ns)
        t->ns = (unsigned)strips;
    if (row_blocks < t->rb)
        t->rb = (unsigned)row_blocks;
    const size_t want = 4 * (size_t)(dev->compute_units ? dev->compute_units : 1);
    while (t->rb > 1 &&
           div_up(g->m, t->rm * t->rb) * div_up(g->n, 16 * t->nv * t->ns) * g->batch < want)
        t->rb = (t->rb + 1) / 2;
}

static int enqueue_cpu(clattn_ctx *ctx, const struct gemm_desc *g, const struct cpu_tiles *t)
{
    char opts[192];
    snprintf(opts, sizeof opts, "-DTRANS_B=%d%s -DRM=%u -DNV=%u -DRB=%u -DNS=%u -DKC=%u "
             "-DCHUNKS=%d", g->trans_b ? 1 : 0, g->dtype == CLATTN_F16 ? " -DDTYPE_F16" : "",
             t->rm, t->nv, t->rb, t->ns, t->kc, g->k > t->kc);
    cl_kernel kern;
    int rc = kernel_get(ctx, "naive/gemm_cpu.cl", opts, "gemm_batched", &kern);
    if (rc < 0)
        return rc;
    size_t local[3] = { 1, 1, 1 };
    size_t global[3] = { div_up(g->n, 16 * t->nv * t->ns), div_up(g->m, t->rm * t->rb),
                         g->batch };
    return gemm_enqueue_standard(ctx->queue, kern, g, 3, global, local, "gemm_batched cpu");
}

/* GPU tiles: 8 x 8 outputs per work-item (a 128 x 128 tile) where M and N
 * fill it, 4 x 4 (64 x 64) along a dimension that does not. */
static int enqueue_gpu(clattn_ctx *ctx, const struct gemm_desc *g)
{
    const unsigned tm = g->m >= 128 ? 8 : 4, tn = g->n >= 128 ? 8 : 4;
    char opts[128];
    snprintf(opts, sizeof opts, "-cl-mad-enable -DTRANS_B=%d%s -DTM=%u -DTN=%u",
             g->trans_b ? 1 : 0, g->dtype == CLATTN_F16 ? " -DDTYPE_F16" : "", tm, tn);
    cl_kernel kern;
    int rc = kernel_get(ctx, "naive/gemm.cl", opts, "gemm_batched", &kern);
    if (rc < 0)
        return rc;
    /* 16 TM x 16 TN tiles of C, 16 x 16 work-items each. */
    size_t local[3] = { 16, 16, 1 };
    size_t global[3] = { div_up(g->n, 16 * tn) * 16, div_up(g->m, 16 * tm) * 16, g->batch };
    return gemm_enqueue_standard(ctx->queue, kern, g, 3, global, local, "gemm_batched");
}

static const char *cannot_run(const struct device_facts *dev, const struct gemm_desc *g)
{
    (void)dev;
    (void)g;
    return NULL;
}

static int enqueue(clattn_ctx *ctx, const struct gemm_desc *g)
{
    if (!naive_cpu_shaped(ctx, g->params))
        return enqueue_gpu(ctx, g);
    struct cpu_tiles t;
    cpu_default_tiles(&ctx->dev, g, &t);
    int rc = forced_cpu_tiles(g->params, &t);
    return rc < 0 ? rc : enqueue_cpu(ctx, g, &t);
}

const struct gemm_backend gemm_builtin = {
    .name = "builtin-gemm",
    .cannot_run = cannot_run,
    .enqueue = enqueue,
};
