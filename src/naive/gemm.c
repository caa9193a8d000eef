/* The GEMM backends of the naive path, in order of preference, and the
 * choice among them (see gemm.h). */
#include "context/context.h"
#include "naive/gemm.h"

extern const struct gemm_backend gemm_clblast, gemm_nv_mma, gemm_builtin;

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

/* The first backend from `start` that serves `g`. */
static size_t choose_from(clattn_ctx *ctx, const struct gemm_desc *g, size_t start,
                          int use_clblast)
{
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
