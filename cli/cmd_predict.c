/*
 * clattn predict: the byte model's tables (docs/MODEL.md) for a shape on a
 * device. Device figures come from the command line, a preset (the seed's
 * round numbers), or the device itself, and every figure is printed with
 * where it came from, so a prediction can be traced back to its inputs.
 */
#include <stdio.h>
#include <string.h>

#include "ceilings_auto.h"
#include "cli.h"
#include "efficiency.h"
#include "commands.h"
#include "kvcache.h"
#include "outfile.h"
#include "predict.h"
#include "variant.h"

#define DEFAULT_TILE 64

/* ---------------------------------------------------------- device figures */

static void preset_figure(clattn_figure *f, double value)
{
    f->value = value;
    f->source = CLATTN_SRC_PRESET;
}

/* The seed's round numbers: 1000 TFLOP/s over 5 TB/s is its 200 FLOP/byte
 * ridge. It assumes one tensor may fill the device. */
static void seed_figures(struct predict_figures *f)
{
    preset_figure(&f->capacity, 192.0 * 0x1p30);
    preset_figure(&f->max_alloc, 192.0 * 0x1p30);
    preset_figure(&f->cache, 256.0 * 0x1p20);
    preset_figure(&f->bandwidth, 5e12);
    preset_figure(&f->peak, 1e15);
}

/* Takes `from` where `to` is still unknown. */
static void fill_figure(clattn_figure *to, clattn_figure from)
{
    if (to->source == CLATTN_SRC_NONE && from.source != CLATTN_SRC_NONE && from.value > 0)
        *to = from;
}

static void fill_figures(struct predict_figures *to, const struct predict_figures *from)
{
    if (to->peak.source == CLATTN_SRC_NONE && from->peak.source != CLATTN_SRC_NONE)
        to->peak_is_f32 = from->peak_is_f32;
    fill_figure(&to->capacity, from->capacity);
    fill_figure(&to->max_alloc, from->max_alloc);
    fill_figure(&to->cache, from->cache);
    fill_figure(&to->bandwidth, from->bandwidth);
    fill_figure(&to->peak, from->peak);
    fill_figure(&to->latency, from->latency);
}

/* The device's ceilings; measured first (and saved) when none are saved and
 * the command line does not give the figures a measurement would. */
static void device_figures(clattn_ctx *ctx, clattn_dtype dtype, int measure,
                           struct predict_figures *out)
{
    clattn_ceilings c;
    char note[1024] = "";
    memset(out, 0, sizeof *out);
    int rc = measure ? ceilings_measure_missing(ctx, &c, note, sizeof note)
                     : clattn_device_ceilings(ctx, &c);
    if (note[0]) /* stderr: stdout may be the JSON */
        fprintf(stderr, "clattn: note: %s\n", note);
    if (rc < 0) {
        fprintf(stderr, "clattn: warning: cannot read the device's figures: %s (%s); "
                        "figures not given are unknown\n",
                clattn_strerror(rc), clattn_last_error_detail());
        return;
    }
    out->capacity = c.global_mem_bytes;
    out->max_alloc = c.max_alloc_bytes;
    out->cache = c.cache_bytes;
    out->bandwidth = c.bandwidth;
    out->peak = ceilings_peak(&c, dtype, &out->peak_is_f32);
    out->latency = c.launch_latency_s;
}

static int have_all_figures(const struct predict_figures *f)
{
    return f->capacity.source && f->cache.source && f->bandwidth.source && f->peak.source;
}

/* Settles the figures: given, then the device's, then the preset's. Opens
 * the device when asked to, or when nothing else supplies the figures; a
 * default device that cannot be opened only leaves figures unknown. Returns
 * 0, or 1 when the device the user named cannot be opened. */
static int resolve_figures(const struct predict_args *a, clattn_ctx **ctx,
                           struct predict_figures *f)
{
    *f = a->given;
    *ctx = NULL;
    if (a->device || (!a->preset && !have_all_figures(f))) {
        if (a->device) {
            if (cli_open(a->device, ctx) < 0)
                return 1;
        } else {
            int rc = clattn_open(ctx, NULL);
            if (rc < 0)
                fprintf(stderr, "clattn: warning: no OpenCL device (%s: %s); figures not "
                                "given are unknown\n",
                        clattn_strerror(rc), clattn_last_error_detail());
        }
    }
    if (*ctx) {
        struct predict_figures dev;
        const int measure = !f->bandwidth.source || !f->peak.source;
        device_figures(*ctx, a->shape.dtype, measure, &dev);
        fill_figures(f, &dev);
    }
    if (a->preset) {
        struct predict_figures seed = { 0 };
        seed_figures(&seed);
        fill_figures(f, &seed);
    }
    return 0;
}

static clattn_model_device model_device(const struct predict_figures *f)
{
    clattn_model_device dev;
    clattn_model_default_device(&dev);
    dev.capacity_bytes = (uint64_t)f->capacity.value;
    dev.max_alloc_bytes = (uint64_t)f->max_alloc.value;
    dev.cache_bytes = (uint64_t)f->cache.value;
    dev.bandwidth = f->bandwidth.value;
    dev.peak_flops = f->peak.value;
    dev.launch_latency_s = f->latency.value;
    return dev;
}

/* ------------------------------------------------------------ predictions */

/* The device's fused plan for problem p (its shape, mask and lengths, the
 * row's variant and the call's cache, `q_lens` the queries) into p's tiles
 * and split, its kernel into `kernel`; 1 when planned, 0 when not. */
static int plan_problem(const struct predict_args *a, clattn_ctx *ctx,
                        const struct predict_row *r, clattn_model_problem *p,
                        const uint32_t *q_lens, char *kernel, size_t cap)
{
    clattn_options opts;
    clattn_default_options(&opts);
    opts.causal = p->causal;
    opts.split_kv = a->split_kv;
    opts.kv_lens = p->kv_lens;
    opts.q_lens = q_lens;
    opts.softcap = r->vopts.softcap;
    opts.window_left = r->vopts.window_left;
    opts.window_right = r->vopts.window_right;
    opts.head_dim_v = r->vopts.head_dim_v;
    opts.alibi_slopes = r->vopts.alibi_slopes;
    opts.sinks = r->vopts.sinks;
    opts.mask = r->vopts.mask;
    opts.score_mod = r->vopts.score_mod;
    opts.mask_mod = r->vopts.mask_mod;
    cli_cache_plan_options(&a->call.cache, &p->shape, p->kv_lens, q_lens, &opts);
    clattn_fused_plan plan;
    if (clattn_plan_fused(ctx, &p->shape, &opts, &plan) != CLATTN_OK)
        return 0;
    snprintf(kernel, cap, "fused/%s", clattn_fused_kernel_name(plan.kernel));
    cli_model_tiles(&plan, p);
    return 1;
}

/* The fused tiles and split: given, else the device's plan, else 64 x 64
 * and --split-kv (none without it). The plan's BLOCK_M packs the H / Hkv
 * query heads of a KV head; the model's block_m counts one head's rows. */
static void choose_plan(const struct predict_args *a, clattn_ctx *ctx, struct predict_row *r)
{
    clattn_model_problem *p = &r->problem;
    r->kernel[0][0] = r->kernel[1][0] = '\0';
    r->efficiency[0] = r->efficiency[1] = r->expected_s[0] = r->expected_s[1] = 0;
    p->block_m = p->block_n = DEFAULT_TILE;
    p->splits = a->split_kv;
    r->tiles_source = a->preset ? "preset" : "default";
    r->splits_source = a->split_given ? "given" : "none";
    if (ctx && plan_problem(a, ctx, r, p, a->call.q_lens, r->kernel[1], sizeof r->kernel[1]))
        r->tiles_source = r->splits_source = "device";
    if (a->block_m || a->block_n)
        r->tiles_source = "given";
    if (a->block_m)
        p->block_m = a->block_m;
    if (a->block_n)
        p->block_n = a->block_n;
}

/* The naive path's kernel on the device and, for both paths, the time to
 * expect from the kernels' recorded efficiencies. */
static void expect_times(clattn_ctx *ctx, struct predict_row *r)
{
    if (!ctx)
        return;
    clattn_options opts;
    clattn_default_options(&opts);
    opts.causal = r->problem.causal;
    if (clattn_describe_kernels(ctx, &r->problem.shape, &opts, NULL, 0, r->kernel[0],
                                sizeof r->kernel[0]) < 0)
        r->kernel[0][0] = '\0';
    const clattn_path_estimate *est[2] = { &r->pred.naive, &r->pred.fused };
    for (int k = 0; k < 2; k++)
        r->expected_s[k] = efficiency_expected_time(ctx, r->kernel[k], r->problem.shape.dtype,
                                                    r->problem.shape.head_dim, est[k],
                                                    &r->efficiency[k]);
}

/* --layers: a decoding step of the row's batch (Nq = --q-len, else 1) over
 * its Nk keys of context, planned as the device would run it, and what
 * fits in --free bytes (else the capacity); the step's time to expect from
 * the step kernel's recorded efficiency. */
static int serving_row(const struct predict_args *a, clattn_ctx *ctx,
                       const clattn_model_device *dev, struct predict_row *r)
{
    clattn_model_problem *sp = &r->step;
    *sp = r->problem;
    sp->shape.q_len = a->q_len ? a->q_len : 1;
    r->step_kernel[0] = '\0';
    r->step_tiles_source = r->tiles_source;
    r->step_efficiency = r->step_expected_s = 0;
    if (sp->shape.q_len != r->problem.shape.q_len) {
        sp->splits = a->split_kv;
        if (ctx && plan_problem(a, ctx, r, sp, NULL, r->step_kernel, sizeof r->step_kernel))
            r->step_tiles_source = "device";
        if (a->block_m)
            sp->block_m = a->block_m;
        if (a->block_n)
            sp->block_n = a->block_n;
    } else {
        snprintf(r->step_kernel, sizeof r->step_kernel, "%s", r->kernel[1]);
    }
    clattn_model_cache sc = r->cache;
    sc.q_lens = NULL; /* the step's queries are Nq each */
    r->free = a->free.source != CLATTN_SRC_NONE && a->free.value > 0 ? a->free : r->free;
    int rc = clattn_model_kv_capacity(sp, &r->variant, &sc, a->layers,
                                      (uint64_t)r->free.value, dev, &r->capacity);
    if (rc < 0)
        return rc;
    clattn_path_estimate est;
    memset(&est, 0, sizeof est);
    est.time_s = r->capacity.layer_time_s;
    est.bound = r->capacity.bound;
    r->step_expected_s = (double)a->layers *
                         efficiency_expected_time(ctx, r->step_kernel, sp->shape.dtype,
                                                  sp->shape.head_dim, &est, &r->step_efficiency);
    return CLATTN_OK;
}

/* One row: its variant (a mask file must fit the row's shape: a usage
 * error, returned positive), its plan and its predictions (a negative
 * library code for a shape the model refuses). */
static int model_row(const struct predict_args *a, clattn_ctx *ctx, const clattn_model_device *dev,
                     size_t nq, size_t nk, struct predict_row *r)
{
    clattn_model_default_problem(&r->problem);
    r->problem.shape = a->shape;
    r->problem.shape.q_len = nq;
    r->problem.shape.kv_len = nk;
    r->problem.causal = a->causal;
    r->problem.naive_workspace_bytes = a->workspace;
    r->problem.kv_lens = a->n_kv_lens ? a->kv_lens : NULL;
    clattn_default_options(&r->vopts);
    int rc = cli_variant_model("predict", &a->call, &r->problem.shape, &r->variant, &r->vopts);
    if (rc)
        return rc;
    choose_plan(a, ctx, r);
    cli_cache_model(&a->call.cache, &r->problem.shape, a->call.q_lens, &r->cache);
    rc = clattn_model_predict_cache(&r->problem, &r->variant, &r->cache, dev, &r->pred,
                                    &r->cache_est);
    if (rc < 0)
        return rc;
    expect_times(ctx, r);
    if (a->layers && (rc = serving_row(a, ctx, dev, r)) < 0)
        return rc;
    if (a->devices) {
        const clattn_model_link link = { a->link_bw, a->peer_bw, 0 };
        if ((rc = clattn_model_predict_spread(&r->problem, dev, a->devices, &link,
                                              &r->spread)) < 0)
            return rc;
    }
    const uint64_t mask_e = r->variant.mask_kind == CLATTN_MASK_NONE ? 0
                            : r->variant.mask_kind == CLATTN_MASK_BOOL
                                ? 1 : clattn_dtype_size(r->variant.mask_dtype);
    r->mask_bytes = mask_e * a->shape.heads * r->pred.batch.computed_pairs;
    clattn_model_problem what_if = r->problem;
    if (what_if.causal == CLATTN_CAUSAL_NONE)
        what_if.causal = CLATTN_CAUSAL_TOP_LEFT;
    return clattn_model_predict_cache(&what_if, &r->variant, &r->cache, dev, &r->causal, NULL);
}

/* A limit whose figure is unknown stays unknown; other failures are errors. */
static int compute_limits(const struct predict_args *a, const clattn_model_device *dev,
                          struct predict_limits *l)
{
    clattn_shape unit = a->shape;
    unit.q_len = unit.kv_len = 1;
    for (int k = 0; k < 5; k++) {
        uint64_t ws = k == CLATTN_LIMIT_NAIVE_FITS ? a->workspace : 0;
        int known_figure = k <= CLATTN_LIMIT_SHARED_S_IN_CACHE ? dev->cache_bytes != 0
                                                                : dev->capacity_bytes != 0;
        l->known[k] = known_figure;
        if (!known_figure)
            continue;
        int rc = clattn_model_max_len(&unit, (clattn_len_limit)k, ws, dev, &l->n[k],
                                      &l->root[k]);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ------------------------------------------------------------- command */

/* Predicts every row before printing, so a bad shape prints nothing else. */
static int predict_all(const struct predict_args *a, clattn_ctx *ctx,
                       const clattn_model_device *dev, const struct predict_figures *f,
                       struct predict_row *rows, size_t *n)
{
    int rc = 0;
    *n = a->nq ? 1 : a->n_lens;
    for (size_t i = 0; i < *n && rc == 0; i++) {
        size_t nk = a->nq ? a->nk : a->lens[i];
        size_t nq = a->nq ? a->nq : a->q_len ? a->q_len : nk;
        rows[i].free = f->capacity; /* the cache's memory unless --free says */
        rc = model_row(a, ctx, dev, nq, nk, &rows[i]);
    }
    return rc;
}

/* --json into its file: 0, or 1 after the message. */
static int write_json(const struct predict_args *a, clattn_ctx *ctx,
                      const struct predict_figures *f, const struct predict_limits *l,
                      const struct predict_row *rows, size_t n)
{
    outfile jf;
    if (cli_output_open(a->json, &jf))
        return 1;
    predict_print_json(jf.stream, a, ctx, f, l, rows, n);
    return cli_output_commit(&jf);
}

int cmd_predict(int argc, char **argv)
{
    struct predict_args args;
    struct predict_figures figs;
    struct predict_limits limits = { 0 };
    static struct predict_row rows[PREDICT_MAX_LENS];
    clattn_ctx *ctx = NULL;
    size_t n_rows = 0;

    int status = predict_parse_args(argc, argv, &args);
    if (status)
        return status == 1 ? 0 : status;
    if (cli_output_check(args.json) || resolve_figures(&args, &ctx, &figs)) {
        cli_call_free(&args.call);
        return 1;
    }
    clattn_model_device dev = model_device(&figs);
    int rc = predict_all(&args, ctx, &dev, &figs, rows, &n_rows);
    if (rc == 0)
        rc = compute_limits(&args, &dev, &limits);
    if (rc > 0) {
        status = rc; /* a variant that does not fit a row, said already */
    } else if (rc < 0) {
        /* The model rejects only shapes: an argument problem. */
        status = cli_usage_error("predict", "bad shape: %s", clattn_last_error_detail());
    } else {
        /* JSON on stdout replaces the tables; into a file it goes beside them. */
        if (!args.json || !outfile_is_stdout(args.json))
            predict_print_text(&args, ctx, &figs, &dev, &limits, rows, n_rows);
        if (args.json)
            status = write_json(&args, ctx, &figs, &limits, rows, n_rows);
    }
    clattn_close(&ctx);
    cli_call_free(&args.call);
    return status;
}
