/* SPDX-License-Identifier: MIT */
/* The fused path (see fused.h): kernel choice, tile and split planning,
 * the split workspace, enqueue. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context/context.h"
#include "context/program.h"
#include "core/kv_type.h"
#include "fused/fused.h"
#include "fused/snippets.h"
#include "model/splits.h"
#include "tune/tune.h"

void fused_program_of(const struct attention_call *c, const struct fused_plan *p, char *file,
                      size_t file_cap, char *options, size_t options_cap)
{
    const struct fused_kernel *k = p->kernel;
    options[0] = '\0';
    if (k->binary) {
        k->binary(c, p, file, file_cap);
        return;
    }
    snprintf(file, file_cap, "%s", k->file);
    k->options(c->shape, p, options, options_cap);
    /* What every kernel built from source takes beside its own: the GQA
     * group, V's head dimension, the storage and the variant. */
    const clattn_dtype dt = c->shape->dtype;
    const size_t len = strlen(options);
    snprintf(options + len, options_cap > len ? options_cap - len : 0,
             " -DGROUP=%zu -DDV=%zu -DMASK_DTYPE=%d%s", c->shape->heads / c->shape->kv_heads,
             c->head_dim_v, (c->flags & FUSED_F_MASK) ? (int)c->opts->mask.dtype : 0,
             dt == CLATTN_F16 ? " -DDTYPE_F16" : dt == CLATTN_BF16 ? " -DDTYPE_BF16" : "");
    variant_options(fused_variant_flags(c, p), options, options_cap);
    const clattn_options *o = c->opts;
    const size_t end = strlen(options);
    snprintf(options + end, options_cap > end ? options_cap - end : 0,
             " -DK_TYPE=%d -DV_TYPE=%d -DKV_SCALE_HEAD=%d -DPAGE_SIZE=%zu", (int)o->k_type,
             (int)o->v_type, o->kv_scale_per_head != 0, o->page_size);
}

/* A call on the probe shape: contiguous, no mask, nothing extra. */
static void probe_call(const clattn_shape *s, struct attention_call *c, clattn_options *opts)
{
    clattn_default_options(opts);
    *c = (struct attention_call){ .shape = s, .opts = opts, .scale = 1.0f,
                                  .head_dim_v = s->head_dim };
    c->ql = (struct tensor_layout){ 0, (uint64_t)s->heads * s->q_len * s->head_dim,
                                    (uint64_t)s->q_len * s->head_dim, s->head_dim };
    c->kl = (struct tensor_layout){ 0, (uint64_t)s->kv_heads * s->kv_len * s->head_dim,
                                    (uint64_t)s->kv_len * s->head_dim, s->head_dim };
    c->vl = c->kl;
    c->ol = c->ql;
    c->contiguous = 1;
}

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
    struct attention_call c;
    clattn_options opts;
    probe_call(s, &c, &opts);
    struct fused_plan plan;
    fused_plan_init(&plan, k);
    plan.splits = 1;
    plan.head_dim_v = s->head_dim;
    char file[64], options[640];
    cl_program prog;
    int rc = k->probe_launch ? k->probe_launch(ctx) : CLATTN_OK;
    if (rc < 0)
        goto done;
    rc = CLATTN_EINVAL;
    if (k->default_tiles)
        k->default_tiles(&ctx->dev, s, s->q_len, &plan, &plan.tiles);
    else
        plan.tiles = k->candidates[0];
    if (k->configure(&ctx->dev, s, &plan) == CLATTN_OK) {
        fused_program_of(&c, &plan, file, sizeof file, options, sizeof options);
        rc = program_get(ctx, file, options, &prog);
    }
done:
    *state = rc < 0 ? PROBE_FAILED : PROBE_BUILDS;
    ctx->fused.probe_rc[k->id] = rc < 0 ? rc : CLATTN_OK;
    if (rc < 0)
        snprintf(ctx->fused.probe_failure[k->id], sizeof ctx->fused.probe_failure[0],
                 "%.199s", clattn_last_error_detail());
    clattn_clear_error();
    return rc >= 0;
}

/* The variant a call asks that kernel k does not take, by name, or NULL. */
static const char *variant_missing(const struct fused_kernel *k, const struct attention_call *c)
{
    static const struct {
        unsigned bit;
        const char *why;
    } names[] = {
        { FUSED_F_SOFTCAP, "takes no softcap" },
        { FUSED_F_ALIBI, "takes no ALiBi" },
        { FUSED_F_ALIBI_SEQ, "takes no ALiBi slopes per sequence" },
        { FUSED_F_WINDOW, "takes no sliding window" },
        { FUSED_F_SINKS, "takes no attention sinks" },
        { FUSED_F_MASK, "takes no additive mask" },
        { FUSED_F_MASK_BOOL, "takes no boolean mask" },
        { FUSED_F_SCORE_MOD, "takes no score_mod snippet" },
        { FUSED_F_MASK_MOD, "takes no mask_mod snippet" },
        { FUSED_F_PAGED, "takes no paged KV cache" },
        { FUSED_F_PACKED_Q, "takes no packed (varlen) queries" },
        { FUSED_F_PACKED_K, "takes no packed (varlen) keys" },
        { FUSED_F_KV_QUANT, "takes no quantized KV cache" },
    };
    const unsigned missing = c->flags & FUSED_F_VARIANTS & ~k->variants;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (missing & names[i].bit)
            return names[i].why;
    const unsigned dtypes = k->dtypes ? k->dtypes
                                      : FUSED_DTYPE(CLATTN_F32) | FUSED_DTYPE(CLATTN_F16);
    if (!(dtypes & FUSED_DTYPE(c->shape->dtype)))
        return c->shape->dtype == CLATTN_BF16 ? "takes no bf16 storage"
                                              : "takes no storage of this dtype";
    if (c->head_dim_v != c->shape->head_dim && !k->takes_dv)
        return "takes no V head dimension other than d";
    return NULL;
}

/* Why kernel k does not take call c here (a variant, dtype, or the
 * device's and shape's conditions), or NULL; its build aside. */
static const char *refuses(clattn_ctx *ctx, const struct fused_kernel *k,
                           const struct attention_call *c)
{
    const char *why = variant_missing(k, c);
    return why ? why : k->cannot_run ? k->cannot_run(&ctx->dev, c) : NULL;
}

const char *fused_cannot_run(clattn_ctx *ctx, const struct fused_kernel *k,
                             const struct attention_call *c)
{
    const char *why = refuses(ctx, k, c);
    if (why)
        return why;
    return probe_builds(ctx, k) ? NULL : ctx->fused.probe_failure[k->id];
}

/* Configures `base` with the caller's BM and BN (either may be 0: keep). */
static int try_tiles(const struct device_facts *dev, const clattn_shape *s,
                     const clattn_options *opts, struct fused_tiles base, struct fused_plan *plan)
{
    plan->tiles.bm = opts->block_m ? opts->block_m : base.bm;
    plan->tiles.bn = opts->block_n ? opts->block_n : base.bn;
    plan->tiles.tm = opts->rows_per_item ? opts->rows_per_item : base.tm;
    return plan->kernel->configure(dev, s, plan);
}

/* The kernel's own tiles: its default, else the first candidate that fits. */
static int default_plan(const struct device_facts *dev, const clattn_shape *s, size_t rows,
                        const clattn_options *opts, struct fused_plan *plan)
{
    const struct fused_kernel *k = plan->kernel;
    if (k->default_tiles) {
        struct fused_tiles t = { 0, 0, 0 }; /* a kernel without TM leaves it 0 */
        k->default_tiles(dev, s, rows, plan, &t);
        if (try_tiles(dev, s, opts, t, plan) == CLATTN_OK)
            return CLATTN_OK;
        clattn_clear_error();
    }
    int rc = CLATTN_EUNSUPPORTED;
    for (size_t i = 0; i < k->n_candidates; i++)
        if ((rc = try_tiles(dev, s, opts, k->candidates[i], plan)) == CLATTN_OK)
            return CLATTN_OK;
    return rc;
}

/* The caller's parameters over `base` (the tuned ones, or none). */
static int apply_params(const clattn_options *opts, struct fused_plan *plan, const char *base)
{
    struct param_group groups[2];
    const size_t n = fused_param_groups(plan, groups);
    params_reset(groups, n);
    int rc = params_apply(base, groups, n, plan->kernel->name);
    if (rc == CLATTN_OK)
        rc = params_apply(opts->kernel_params, groups, n, plan->kernel->name);
    const int parts = plan->common[FUSED_COMMON_COMBINE_PARTS];
    if (rc == CLATTN_OK && parts != PARAM_AUTO && (parts & (parts - 1)))
        rc = clattn_fail(CLATTN_EINVAL, "combine_parts=%d: it takes 1, 2, 4 or 8", parts);
    return rc;
}

/* Tiles and parameters: the caller's tiles when both are given, else
 * clattn tune's record (set aside, with a note, when the kernel cannot take
 * it), else the default; the caller's parameters over the record's. */
static int plan_tiles(clattn_ctx *ctx, const struct attention_call *c, struct fused_plan *plan)
{
    const clattn_shape *s = c->shape;
    const clattn_options *opts = c->opts;
    const struct fused_kernel *k = plan->kernel;
    const size_t rows = s->heads / s->kv_heads * s->q_len;
    struct tune_entry tuned;
    const char *file = "";
    int rc;
    if (!(opts->block_m && opts->block_n) &&
        tune_lookup(ctx, k->name, s->dtype, s->head_dim, (c->flags & FUSED_F_CAUSAL) != 0,
                    &tuned, &file)) {
        if ((rc = apply_params(opts, plan, tuned.params)) == CLATTN_OK &&
            (rc = try_tiles(&ctx->dev, s, opts, tuned.tiles, plan)) == CLATTN_OK)
            return CLATTN_OK;
        snprintf(plan->note, sizeof plan->note, "tuned tiles %zux%zu in %.60s ignored: %.60s",
                 tuned.tiles.bm, tuned.tiles.bn, file, clattn_last_error_detail());
        clattn_clear_error();
    }
    if ((rc = apply_params(opts, plan, NULL)) < 0)
        return rc;
    return default_plan(&ctx->dev, s, rows, opts, plan);
}

/* Split-KV: when the row tiles alone cannot fill the device, each
 * sequence's keys go to several groups, each chunk at least two key blocks. */
static void plan_splits(const struct device_facts *dev, const struct attention_call *c,
                        struct fused_plan *plan)
{
    const clattn_shape *s = c->shape;
    const size_t bn = plan->tiles.bn;
    const size_t blocks = (s->kv_len + bn - 1) / bn;
    const size_t groups = plan->n_rtiles * s->batch * s->kv_heads;
    size_t splits = c->opts->split_kv;
    if (splits == 0 && plan->groups_per_cu && !dev->is_cpu) {
        const size_t cus = dev->compute_units ? dev->compute_units : 1;
        splits = splits_fitted(cus * plan->groups_per_cu, groups, blocks, plan->fixed_blocks,
                               plan->kernel->takes_chunk_counter);
    } else if (splits == 0) {
        splits = splits_by_fill(dev->is_cpu, dev->compute_units, groups, plan->local, s->kv_len);
        if (splits > blocks / 2)
            splits = blocks / 2;
    }
    if (splits > blocks)
        splits = blocks;
    if (splits > FUSED_SPLITS_MAX)
        splits = FUSED_SPLITS_MAX;
    if (splits < 1)
        splits = 1;
    const size_t per = (blocks + splits - 1) / splits;
    plan->split_keys = per * bn;
    plan->splits = (s->kv_len + plan->split_keys - 1) / plan->split_keys;
    if (plan->splits > 1 && plan->kernel->plan_chunks)
        plan->kernel->plan_chunks(plan, blocks);
    /* A caller who asked for a split is told why another ran: chunks are
     * whole blocks of BN keys, so asking more than the keys' blocks allow,
     * or a count that does not divide them, gives fewer. */
    const uint32_t asked = c->opts->split_kv;
    if (asked > 1 && plan->splits != asked && !plan->note[0])
        snprintf(plan->note, sizeof plan->note, "split_kv %u asked: %zu chunks of %zu keys (whole "
                 "blocks of %zu) cover Nk = %zu", asked, plan->splits, plan->split_keys, bn,
                 s->kv_len);
}

/* fused_plan.kv_copy of call `c`: every byte address of a K or V row is
 * the buffer's (aligned far beyond 16) plus a sum of the layout's offset
 * and strides as stored, and a row spans its d values' bytes. */
static int kv_copy_bytes(const struct attention_call *c)
{
    const struct tensor_layout *l[2] = { &c->kl, &c->vl };
    const clattn_kv_type type[2] = { c->opts->k_type, c->opts->v_type };
    const size_t width[2] = { c->shape->head_dim, c->head_dim_v };
    uint64_t bits = 0;
    for (int i = 0; i < 2; i++) {
        const uint64_t values[5] = { l[i]->offset, l[i]->batch, l[i]->head, l[i]->token,
                                     width[i] };
        for (int j = 0; j < 5; j++) {
            uint64_t bytes;
            if (kv_bytes(type[i], c->shape->dtype, values[j], &bytes) < 0) {
                clattn_clear_error();
                return 0;
            }
            bits |= bytes;
        }
    }
    return bits % 16 == 0 ? 16 : bits % 8 == 0 ? 8 : bits % 4 == 0 ? 4 : 0;
}

/* Kernel `k` with its tiles and split for call `c`. */
static int plan_kernel(clattn_ctx *ctx, const struct attention_call *c,
                       const struct fused_kernel *k, struct fused_plan *plan)
{
    char note[sizeof plan->note];
    snprintf(note, sizeof note, "%s", plan->note);
    fused_plan_init(plan, k);
    plan->head_dim_v = c->head_dim_v;
    plan->k_type = c->opts->k_type;
    plan->v_type = c->opts->v_type;
    plan->kv_copy = kv_copy_bytes(c);
    snprintf(plan->note, sizeof plan->note, "%s", note);
    int rc = plan_tiles(ctx, c, plan);
    if (rc < 0)
        return rc;
    const clattn_shape *s = c->shape;
    const size_t rows = s->heads / s->kv_heads * s->q_len;
    plan->n_rtiles = (rows + plan->tiles.bm - 1) / plan->tiles.bm;
    plan_splits(&ctx->dev, c, plan);
    return CLATTN_OK;
}

const char *fused_cannot_plan(clattn_ctx *ctx, const struct fused_kernel *k,
                              const struct attention_call *c)
{
    const char *why = fused_cannot_run(ctx, k, c);
    if (why)
        return why;
    struct fused_plan plan;
    memset(&plan, 0, sizeof plan);
    if (plan_kernel(ctx, c, k, &plan) == CLATTN_OK)
        return NULL;
    snprintf(ctx->fused.plan_failure, sizeof ctx->fused.plan_failure, "%.199s",
             clattn_last_error_detail());
    clattn_clear_error();
    return ctx->fused.plan_failure;
}

/* The key of call `c`'s plan; 0 when it cannot be one (parameters too long
 * to keep). */
static int plan_key(const struct attention_call *c, struct fused_plan_key *key)
{
    const clattn_options *o = c->opts;
    memset(key, 0, sizeof *key); /* compared bytewise: padding too */
    const clattn_shape *s = c->shape; /* field by field: the caller's padding is not ours */
    key->shape.batch = s->batch, key->shape.heads = s->heads, key->shape.kv_heads = s->kv_heads;
    key->shape.q_len = s->q_len, key->shape.kv_len = s->kv_len, key->shape.head_dim = s->head_dim;
    key->shape.dtype = s->dtype;
    key->head_dim_v = c->head_dim_v;
    key->flags = c->flags;
    key->ql = c->ql, key->kl = c->kl, key->vl = c->vl, key->ol = c->ol;
    key->kernel = o->fused_kernel;
    key->block_m = o->block_m, key->block_n = o->block_n, key->rows_per_item = o->rows_per_item;
    key->split_kv = o->split_kv;
    key->k_type = (int)o->k_type, key->v_type = (int)o->v_type;
    const char *params = o->kernel_params ? o->kernel_params : "";
    if (strlen(params) >= sizeof key->kernel_params)
        return 0;
    strcpy(key->kernel_params, params);
    return 1;
}

void fused_forget_plan(struct fused_state *f)
{
    f->memo_valid = 0;
}

static int choose_kernel(clattn_ctx *ctx, const struct attention_call *c,
                         struct fused_plan *plan);

/* The plan of call `c`: the last one when it was made for the same call. */
int fused_plan(clattn_ctx *ctx, const struct attention_call *c, struct fused_plan *plan)
{
    struct fused_state *f = &ctx->fused;
    struct fused_plan_key key;
    const int keyed = plan_key(c, &key);
    if (keyed && f->memo_valid && !memcmp(&key, &f->memo_key, sizeof key)) {
        *plan = f->memo;
        return CLATTN_OK;
    }
    int rc = choose_kernel(ctx, c, plan);
    f->memo_valid = rc == CLATTN_OK && keyed;
    if (f->memo_valid) {
        f->memo_key = key;
        f->memo = *plan;
    }
    return rc;
}

/* The asked kernel, or AUTO's choice: the first of the table that can run
 * the call and has tiles for it on this device (d = 256 may not fit a
 * kernel's local memory where a smaller kernel's does). */
static int choose_kernel(clattn_ctx *ctx, const struct attention_call *c,
                         struct fused_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    const clattn_options *opts = c->opts;
    if (opts->fused_kernel != CLATTN_FUSED_AUTO) {
        const struct fused_kernel *k = fused_kernel_by_id(opts->fused_kernel);
        if (!k)
            return clattn_fail(CLATTN_EINVAL, "unknown fused kernel %d", (int)opts->fused_kernel);
        const char *why = refuses(ctx, k, c);
        if (why)
            return clattn_fail(CLATTN_EUNSUPPORTED, "fused kernel %s: %s", k->name, why);
        /* A kernel this device should run that does not build is a fault
         * (its build's own code), not a shape it does not take. */
        if (!probe_builds(ctx, k))
            return clattn_fail(ctx->fused.probe_rc[k->id], "fused kernel %s does not build "
                               "here: %s", k->name, ctx->fused.probe_failure[k->id]);
        return plan_kernel(ctx, c, k, plan);
    }
    char last[200] = "";
    for (size_t i = 0; i < fused_kernel_count; i++) {
        const struct fused_kernel *k = fused_kernels[i];
        if (refuses(ctx, k, c) || (k->not_preferred && k->not_preferred(&ctx->dev, c)))
            continue; /* not this device's or call's kernel: nothing to say */
        if (!probe_builds(ctx, k)) {
            if (!plan->note[0])
                snprintf(plan->note, sizeof plan->note, "%s kernel unavailable: %.120s", k->name,
                         ctx->fused.probe_failure[k->id]);
            continue;
        }
        if (plan_kernel(ctx, c, k, plan) == CLATTN_OK)
            return CLATTN_OK;
        snprintf(last, sizeof last, "%s: %.180s", k->name, clattn_last_error_detail());
        clattn_clear_error();
    }
    return clattn_fail(CLATTN_EUNSUPPORTED, "no fused kernel runs this call on %s%s%s",
                       ctx->dev.label, last[0] ? "; " : "", last);
}

/* The split workspace of `plan`: partial outputs and (max, sum) per group
 * and row, fp32, and for a kernel that counts its chunks two 32-bit
 * counters per row tile. */
static void workspace_bytes(const clattn_shape *s, const struct fused_plan *plan,
                            uint64_t bytes[FUSED_PARTS])
{
    const int split = plan->splits > 1;
    const uint64_t rows = (uint64_t)s->batch * s->heads * s->q_len * plan->splits;
    const uint64_t tiles = (uint64_t)plan->n_rtiles * s->batch * s->kv_heads;
    bytes[FUSED_PART_O] = split ? rows * plan->head_dim_v * 4 : 0;
    bytes[FUSED_PART_ML] = split ? rows * 2 * 4 : 0;
    bytes[FUSED_PART_COUNTERS] = split && plan->kernel->takes_chunk_counter ? tiles * 2 * 4 : 0;
}

static uint64_t workspace_total(const uint64_t b[FUSED_PARTS])
{
    return b[FUSED_PART_O] + b[FUSED_PART_ML] + b[FUSED_PART_COUNTERS];
}

uint64_t fused_plan_workspace(const clattn_shape *s, const struct fused_plan *plan)
{
    uint64_t b[FUSED_PARTS];
    workspace_bytes(s, plan, b);
    return workspace_total(b);
}

int fused_workspace_bytes(clattn_ctx *ctx, const struct attention_call *c, uint64_t *bytes)
{
    struct fused_plan own, *plan = c->fused_plan ? c->fused_plan : &own;
    int rc = fused_plan(ctx, c, plan);
    if (rc < 0) {
        plan->kernel = NULL; /* not a plan to run */
        return rc;
    }
    *bytes = fused_plan_workspace(c->shape, plan);
    return CLATTN_OK;
}

/* The workspace buffers, kept between calls; a larger request replaces them.
 * The arrival counters start at 0, and each call's last groups put them
 * back. */
static int workspace_get(clattn_ctx *ctx, const uint64_t bytes[FUSED_PARTS],
                         cl_mem out[FUSED_PARTS])
{
    struct fused_state *f = &ctx->fused;
    for (int i = 0; i < FUSED_PARTS; i++) {
        out[i] = NULL;
        if (!bytes[i])
            continue;
        int rc = kept_buffer_get(ctx->context, &f->part[i], bytes[i], i == FUSED_PART_COUNTERS,
                                 "clCreateBuffer(split-KV workspace)", &out[i]);
        if (rc < 0) {
            fused_state_release(f);
            return rc;
        }
    }
    return CLATTN_OK;
}

void fused_state_release(struct fused_state *f)
{
    for (int i = 0; i < FUSED_PARTS; i++)
        kept_buffer_release(&f->part[i]);
    mask_span_cache_release(&f->spans);
}

static void note_plan(const struct attention_call *c, const struct fused_plan *plan)
{
    clattn_run_info *info = c->info;
    snprintf(info->kernel, sizeof info->kernel, "fused/%s %zux%zu", plan->kernel->name,
             plan->tiles.bm, plan->tiles.bn);
    info->splits = (uint32_t)plan->splits;
    if (plan->note[0] && !info->note[0])
        snprintf(info->note, sizeof info->note, "%s", plan->note);
    else if (plan->note[0])
        snprintf(info->note + strlen(info->note), sizeof info->note - strlen(info->note), "; %s",
                 plan->note);
}

int fused_enqueue(clattn_ctx *ctx, const struct attention_call *c)
{
    struct fused_plan plan;
    int rc = CLATTN_OK;
    if (c->fused_plan && c->fused_plan->kernel)
        plan = *c->fused_plan; /* made by the path choice for this call */
    else if ((rc = fused_plan(ctx, c, &plan)) < 0)
        return rc;
    note_plan(c, &plan);
    cl_mem part[FUSED_PARTS] = { NULL, NULL, NULL };
    uint64_t bytes[FUSED_PARTS];
    workspace_bytes(c->shape, &plan, bytes);
    if (plan.splits > 1) {
        if ((rc = workspace_get(ctx, bytes, part)) < 0)
            return rc;
        c->info->allocated_bytes = workspace_total(bytes);
    }
    char file[64], options[640], *prelude;
    fused_program_of(c, &plan, file, sizeof file, options, sizeof options);
    cl_kernel kern;
    if ((rc = fused_snippets_prelude(c->opts->score_mod, c->opts->mask_mod, &prelude)) < 0)
        return rc;
    rc = kernel_get_with(ctx, file, prelude, options, FUSED_ENTRY, &kern);
    free(prelude);
    if (rc < 0)
        return rc;
    const int combine = plan.splits > 1 && !plan.merges_chunks;
    rc = fused_launch(ctx, c, &plan, kern, part, combine ? NULL : c->done);
    clReleaseKernel(kern);
    if (rc >= 0 && combine)
        rc = fused_combine(ctx, c, &plan, part[FUSED_PART_O], part[FUSED_PART_ML]);
    return rc;
}
