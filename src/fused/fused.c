/* The fused path (see fused.h): kernel choice, tile planning, enqueue. */
#include <stdio.h>
#include <string.h>

#include "context/context.h"
#include "fused/fused.h"
#include "context/program.h"
#include "tune/tune.h"

/* Builds the kernel's probe variant once per context: a compiler that
 * rejects it (inline PTX on a driver without it, say) rules the kernel out. */
static int probe_builds(clattn_ctx *ctx, const struct fused_kernel *k)
{
    signed char *state = &ctx->fused.probe[k->id];
    if (!k->probe_shape || *state == PROBE_BUILDS)
        return 1;
    if (*state == PROBE_FAILED)
        return 0;
    const clattn_shape *s = k->probe_shape;
    struct fused_plan plan = { .kernel = k };
    char options[256];
    cl_program prog;
    int rc = CLATTN_EINVAL;
    if (k->default_tiles)
        k->default_tiles(&ctx->dev, s, &plan.tiles);
    else
        plan.tiles = k->candidates[0];
    if (k->configure(&ctx->dev, s, &plan) == CLATTN_OK) {
        k->options(s, 0, &plan, options, sizeof options);
        rc = program_get(ctx, k->file, options, &prog);
    }
    *state = rc < 0 ? PROBE_FAILED : PROBE_BUILDS;
    if (rc < 0)
        snprintf(ctx->fused.probe_failure[k->id], sizeof ctx->fused.probe_failure[0],
                 "%.199s", clattn_last_error_detail());
    clattn_clear_error();
    return rc >= 0;
}

const char *fused_cannot_run(clattn_ctx *ctx, const struct fused_kernel *k, const clattn_shape *s)
{
    const char *why = k->cannot_run(&ctx->dev, s);
    if (why)
        return why;
    return probe_builds(ctx, k) ? NULL : ctx->fused.probe_failure[k->id];
}

/* The asked kernel, or AUTO's choice: the first of the table that can run. */
static int choose_kernel(clattn_ctx *ctx, const clattn_shape *s, const clattn_options *opts,
                         struct fused_plan *plan)
{
    if (opts->fused_kernel != CLATTN_FUSED_AUTO) {
        const struct fused_kernel *k = fused_kernel_by_id(opts->fused_kernel);
        if (!k)
            return clattn_fail(CLATTN_EINVAL, "unknown fused kernel %d", (int)opts->fused_kernel);
        const char *why = fused_cannot_run(ctx, k, s);
        if (why)
            return clattn_fail(CLATTN_EUNSUPPORTED, "fused kernel %s: %s", k->name, why);
        plan->kernel = k;
        return CLATTN_OK;
    }
    for (size_t i = 0; i < fused_kernel_count; i++) {
        const struct fused_kernel *k = fused_kernels[i];
        if (k->cannot_run(&ctx->dev, s))
            continue; /* not this device's or shape's kernel: nothing to say */
        if (!probe_builds(ctx, k)) {
            if (!plan->note[0])
                snprintf(plan->note, sizeof plan->note, "%s kernel unavailable: %.120s", k->name,
                         ctx->fused.probe_failure[k->id]);
            continue;
        }
        plan->kernel = k;
        return CLATTN_OK;
    }
    return clattn_fail(CLATTN_EUNSUPPORTED, "no fused kernel runs this shape on %s",
                       ctx->dev.label);
}

/* Configures `base` with the caller's BM and BN (either may be 0: keep). */
static int try_tiles(const struct device_facts *dev, const clattn_shape *s,
                     const clattn_options *opts, struct fused_tiles base, struct fused_plan *plan)
{
    plan->tiles.bm = opts->block_m ? opts->block_m : base.bm;
    plan->tiles.bn = opts->block_n ? opts->block_n : base.bn;
    return plan->kernel->configure(dev, s, plan);
}

/* The kernel's own tiles: its default, else the first candidate that fits. */
static int default_plan(const struct device_facts *dev, const clattn_shape *s,
                        const clattn_options *opts, struct fused_plan *plan)
{
    const struct fused_kernel *k = plan->kernel;
    if (k->default_tiles) {
        struct fused_tiles t;
        k->default_tiles(dev, s, &t);
        return try_tiles(dev, s, opts, t, plan);
    }
    int rc = CLATTN_EUNSUPPORTED;
    for (size_t i = 0; i < k->n_candidates; i++)
        if ((rc = try_tiles(dev, s, opts, k->candidates[i], plan)) == CLATTN_OK)
            return CLATTN_OK;
    return rc;
}

/* Tiles: the caller's when both are given, else clattn tune's record (set
 * aside, with a note, when the kernel cannot take it), else the default. */
static int plan_tiles(clattn_ctx *ctx, const clattn_shape *s, const clattn_options *opts,
                      struct fused_plan *plan)
{
    const struct fused_kernel *k = plan->kernel;
    struct fused_tiles tuned;
    const char *file = "";
    if (!(opts->block_m && opts->block_n) &&
        tune_lookup(ctx, k->name, s->dtype, s->head_dim, opts->causal != CLATTN_CAUSAL_NONE,
                    &tuned.bm, &tuned.bn, &file)) {
        if (try_tiles(&ctx->dev, s, opts, tuned, plan) == CLATTN_OK)
            return CLATTN_OK;
        snprintf(plan->note, sizeof plan->note, "tuned tiles %zux%zu in %.60s ignored: %.60s",
                 tuned.bm, tuned.bn, file, clattn_last_error_detail());
        clattn_clear_error();
    }
    return default_plan(&ctx->dev, s, opts, plan);
}

int fused_plan(clattn_ctx *ctx, const clattn_shape *s, const clattn_options *opts,
               struct fused_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    int rc = choose_kernel(ctx, s, opts, plan);
    return rc < 0 ? rc : plan_tiles(ctx, s, opts, plan);
}

int fused_enqueue(clattn_ctx *ctx, const struct attention_call *c)
{
    struct fused_plan plan;
    int rc = fused_plan(ctx, c->shape, c->opts, &plan);
    if (rc < 0)
        return rc;
    snprintf(c->info->kernel, sizeof c->info->kernel, "fused/%s %zux%zu", plan.kernel->name,
             plan.tiles.bm, plan.tiles.bn);
    if (plan.note[0] && !c->info->note[0])
        snprintf(c->info->note, sizeof c->info->note, "%s", plan.note);
    else if (plan.note[0])
        snprintf(c->info->note + strlen(c->info->note),
                 sizeof c->info->note - strlen(c->info->note), "; %s", plan.note);
    char options[256];
    plan.kernel->options(c->shape, c->causal, &plan, options, sizeof options);
    cl_kernel kern;
    rc = kernel_get(ctx, plan.kernel->file, options, FUSED_ENTRY, &kern);
    if (rc < 0)
        return rc;
    rc = plan.kernel->launch(ctx, c, &plan, kern);
    clReleaseKernel(kern);
    return rc;
}
