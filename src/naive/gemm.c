/* The GEMM backends of the naive path, in order of preference, and the
 * choice among them (see gemm.h). */
#include "context/context.h"
#include "naive/gemm.h"

#include <string.h>

extern const struct gemm_backend gemm_clblast, gemm_nv_mma, gemm_builtin;

static const char *const gemm_names[] = { "clblast", "nv-mma", "builtin", NULL };
static const char *const shape_names[] = { "cpu", "gpu", NULL };

const struct param_def naive_params[NAIVE_PARAMS] = {
    [NAIVE_GEMM] = { "gemm", NAIVE_GEMM_CLBLAST, NAIVE_GEMM_BUILTIN, gemm_names,
                     "the first GEMM backend tried: clblast, nv-mma (NVIDIA tensor cores) or "
                     "builtin (by default the first that serves the case, in that order)" },
    [NAIVE_SHAPE] = { "shape", NAIVE_SHAPE_CPU, NAIVE_SHAPE_GPU, shape_names,
                      "the built-in GEMM's and the softmax's shape: cpu (work-group size 1, "
                      "float16 tiles) or gpu (local-memory tiles); by default the device's" },
    [NAIVE_CPU_RM] = { "cpu_rm", 1, 32, NULL, "CPU GEMM: accumulator rows (RM x NV <= 32)" },
    [NAIVE_CPU_NV] = { "cpu_nv", 1, 8, NULL, "CPU GEMM: accumulator vectors of 16 per row" },
    [NAIVE_CPU_RB] = { "cpu_rb", 1, 64, NULL, "CPU GEMM: row blocks per work-item" },
    [NAIVE_CPU_NS] = { "cpu_ns", 1, 64, NULL, "CPU GEMM: column strips per work-item" },
    [NAIVE_CPU_KC] = { "cpu_kc", 16, 1024, NULL, "CPU GEMM: K chunk, a multiple of 16" },
    [NAIVE_NV_BM] = { "nv_bm", 16, 256, NULL, "tensor-core GEMM: rows of a tile" },
    [NAIVE_NV_BN] = { "nv_bn", 16, 256, NULL, "tensor-core GEMM: columns of a tile" },
    [NAIVE_NV_BK] = { "nv_bk", 32, 64, NULL, "tensor-core GEMM: K step, 32 or 64" },
    [NAIVE_NV_WARPS_M] = { "nv_warps_m", 1, 8, NULL, "tensor-core GEMM: warps along M" },
    [NAIVE_NV_WARPS_N] = { "nv_warps_n", 1, 8, NULL, "tensor-core GEMM: warps along N" },
    [NAIVE_NV_STAGES] = { "nv_stages", 2, 8, NULL, "tensor-core GEMM: copies in flight" },
    [NAIVE_CLBLAST_INDEX_LIMIT] = { "clblast_index_limit", 1, 1 << 30, NULL,
                                    "CLBlast: the largest index one call may form; a larger "
                                    "batch is split into calls (by default 2^30)" },
};

size_t naive_param_groups(int *values, struct param_group groups[2])
{
    static int unused[NAIVE_PARAMS];
    groups[0] = (struct param_group){ naive_params, NAIVE_PARAMS, values ? values : unused };
    return 1;
}

int naive_params_of(const clattn_options *opts, int values[NAIVE_PARAMS])
{
    struct param_group g[2];
    const size_t n = naive_param_groups(values, g);
    params_reset(g, n);
    return params_apply(opts->kernel_params, g, n, "the naive path");
}

/* CLBlast first (when the caller allows it), then the tensor cores; the
 * built-in kernel runs anything. */
static const struct gemm_backend *const backends[] = {
    &gemm_clblast,
    &gemm_nv_mma,
    &gemm_builtin,
};
#define N_BACKENDS (sizeof backends / sizeof backends[0])

/* Whether backend `i` builds here, probing once per context. */
static int probe_builds(clattn_ctx *ctx, size_t i)
{
    signed char *state = &ctx->naive.gemm.probe[i];
    if (!backends[i]->probe)
        return 1;
    if (*state == 0) {
        *state = backends[i]->probe(ctx) < 0 ? -1 : 1;
        clattn_clear_error();
    }
    return *state > 0;
}

/* The backend the NAIVE_GEMM parameter names first, or 0. */
static size_t first_backend(const struct gemm_desc *g)
{
    static const struct gemm_backend *const named[] = { &gemm_clblast, &gemm_nv_mma,
                                                        &gemm_builtin };
    const int asked = g->params ? g->params[NAIVE_GEMM] : PARAM_AUTO;
    for (size_t i = 0; asked != PARAM_AUTO && i < N_BACKENDS; i++)
        if (backends[i] == named[asked])
            return i;
    return 0;
}

/* The first backend from `start` that serves `g`. */
static size_t choose_from(clattn_ctx *ctx, const struct gemm_desc *g, size_t start,
                          int use_clblast)
{
    if (start < first_backend(g))
        start = first_backend(g);
    for (size_t i = start; i < N_BACKENDS; i++) {
        if (backends[i] == &gemm_clblast && !use_clblast)
            continue;
        if (!backends[i]->cannot_run(&ctx->dev, g) && probe_builds(ctx, i))
            return i;
    }
    return N_BACKENDS - 1; /* the built-in kernel takes every case */
}

const struct gemm_backend *gemm_choose(clattn_ctx *ctx, const struct gemm_desc *g,
                                       int use_clblast)
{
    return backends[choose_from(ctx, g, 0, use_clblast)];
}

int gemm_temp_bytes(clattn_ctx *ctx, const struct gemm_desc *g, int use_clblast,
                    uint64_t *bytes)
{
    const struct gemm_backend *b = gemm_choose(ctx, g, use_clblast);
    *bytes = 0;
    return b->temp_bytes ? b->temp_bytes(ctx, g, bytes) : CLATTN_OK;
}

int gemm_enqueue(clattn_ctx *ctx, const struct gemm_desc *g, int use_clblast)
{
    if (g->m > UINT32_MAX || g->n > UINT32_MAX || g->k > UINT32_MAX)
        return clattn_fail(CLATTN_EUNSUPPORTED, "GEMM dimension exceeds 2^32");
    for (size_t i = choose_from(ctx, g, 0, use_clblast);; i = choose_from(ctx, g, i + 1, 0)) {
        int rc = backends[i]->enqueue(ctx, g);
        /* A backend whose variant for this case does not build hands the
         * case on (its probe is marked failed), and the next one runs it. */
        if (rc != GEMM_HAND_ON || i == N_BACKENDS - 1)
            return rc == GEMM_HAND_ON ? clattn_fail(CLATTN_EBUILD, "no GEMM backend") : rc;
        ctx->naive.gemm.probe[i] = -1;
    }
}
