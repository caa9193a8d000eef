/* SPDX-License-Identifier: MIT */
/*
 * clattn tune: times the fused kernel's tile candidates for each head dim on
 * the device and records the fastest, so later runs on this device use it
 * (clattn_tune_record). Timing is the library's helper on the device's
 * clock (clattn_time_attention_cl, CLATTN_CLOCK_EVENTS): the profiling
 * timestamps of calls run back to back.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "json.h"
#include "options.h"
#include "outfile.h"
#include "tune.h"
#include "variant.h"
#include "verify.h"

#define CMD "tune"

static void usage(const cli_command *cmd, FILE *f)
{
    fprintf(f,
            "usage: clattn tune [options]\n"
            "\n"
            "Times every tile candidate of a fused kernel per head dim (median of\n"
            "repetitions, kernel profiling events) and records the fastest for this\n"
            "device, unless --no-save. Each candidate is first checked against the CPU\n"
            "reference. The shape is B=4 H=16 N=4096 (Hkv = H, Nq = Nk = N) unless\n"
            "given. With a variant (--softcap, --window, --alibi, --sinks, --mask\n"
            "random, --score-mod, --mask-mod, --dv) or a KV cache form (--kv-type,\n"
            "--k-type, --v-type, --page-size, --packed) the candidates are timed and\n"
            "checked with it, its tensors drawn for each shape (the cache made from them\n"
            "as bench makes it), and nothing is recorded: the recorded tiles serve every\n"
            "call of a head dim, variant, cache form or not.\n"
            "Then, for each head dim, it times the kernels AUTO runs on a shape each\n"
            "roof binds (the shape above, and a decoding step over four times its\n"
            "keys; the naive path at N = 1024 at most) and records each kernel's\n"
            "efficiency: the model's roofline time over the measured time, which\n"
            "bench and predict divide the roofline by.\n"
            "\n"
            "options:\n");
    cli_print_options(cmd, f);
    fprintf(f, "\n--json writes every candidate's time and check; on stdout, the rows go to\n"
               "stderr. Status 1 when a candidate failed to run or the result could not\n"
               "be saved.\n" CLI_EXIT_HELP);
}

double tune_time_config(clattn_ctx *ctx, const clattn_shape *s, const clattn_options *o,
                        const struct tune_buffers *b, double budget, clattn_run_info *info)
{
    clattn_timing_options t;
    clattn_default_timing_options(&t);
    t.target_seconds = budget;
    t.min_samples = 3;
    t.max_samples = 50;
    t.warmup_calls = 1;
    t.clock = CLATTN_CLOCK_EVENTS;
    clattn_timing timing;
    return clattn_time_attention_cl(ctx, s, o, b->b[0], b->b[1], b->b[2], b->b[3], NULL, &t,
                                    &timing, info) < 0
               ? -1
               : timing.median_s;
}

/* FLOPs of the visible (query, key) pairs, 2 (d + d_v) each, counted by the
 * model (the convention of the PyTorch comparison: causal counts about
 * half, a window its own pairs). */
static double attention_flops(const clattn_shape *s, int causal, const clattn_options *o)
{
    clattn_model_problem p;
    clattn_model_default_problem(&p);
    p.shape = *s;
    p.causal = causal ? CLATTN_CAUSAL_TOP_LEFT : CLATTN_CAUSAL_NONE;
    clattn_model_variant v;
    clattn_model_default_variant(&v);
    v.window_left = o->window_left;
    v.window_right = o->window_right;
    v.head_dim_v = o->head_dim_v;
    clattn_model_device dev;
    clattn_model_default_device(&dev);
    clattn_prediction pred;
    if (clattn_model_predict_variant(&p, &v, &dev, &pred) < 0)
        return 0;
    const size_t dv = o->head_dim_v ? o->head_dim_v : s->head_dim;
    return 2.0 * (double)s->heads * (double)(s->head_dim + dv) *
           (double)pred.batch.visible_pairs;
}

/* Parses "128x64,64x32,64x64x4" (BMxBN, or BMxBNxTM for a register-tiled
 * kernel's rows per work-item). */
static int parse_tiles(const char *s, struct tune_settings *t)
{
    char buf[256];
    if (strlen(s) >= sizeof buf)
        return -1;
    strcpy(buf, s);
    t->n_tiles = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        size_t bm, bn, tm = 0;
        char end;
        int n = sscanf(tok, "%zux%zux%zu%c", &bm, &bn, &tm, &end);
        if (n == 2 && strchr(tok, 'x') != strrchr(tok, 'x'))
            return -1; /* "64x64x" */
        if (t->n_tiles == CLATTN_KERNEL_CANDIDATES_MAX || (n != 2 && n != 3) || !bm || !bn ||
            (n == 3 && !tm))
            return -1;
        t->tiles[t->n_tiles++] = (clattn_tiles){ bm, bn, tm };
    }
    return t->n_tiles ? 0 : -1;
}

/* "64x64", or "64x64x4" with rows per work-item. */
static void tile_name(const clattn_tiles *t, char *buf, size_t cap)
{
    if (t->rows_per_item)
        snprintf(buf, cap, "%zux%zux%zu", t->block_m, t->block_n, t->rows_per_item);
    else
        snprintf(buf, cap, "%zux%zu", t->block_m, t->block_n);
}

/* Whether the context was lost to a device fault (tune then stops). */
static int lost(clattn_ctx *ctx)
{
    size_t bm, bn;
    clattn_shape one = { 1, 1, 1, 1, 1, 1, CLATTN_F32 };
    if (clattn_fused_tiles(ctx, &one, NULL, &bm, &bn, NULL) != CLATTN_EDEVLOST)
        return 0;
    cli_error("tune: the device faulted and the context is lost; stopping");
    return 1;
}

/* The device buffers one shape is timed on: Q, K, V with random values, O;
 * and the variant's tensors for the shape, in `opts`. */
void tune_free_buffers(struct tune_buffers *t)
{
    cli_release_buffers(t->b, 4);
    cli_variant_free(&t->data);
    cli_cache_free(&t->cache);
}

int tune_make_buffers(clattn_ctx *ctx, const clattn_shape *s, const struct tune_settings *set,
                      struct tune_buffers *t)
{
    memset(t, 0, sizeof *t);
    clattn_default_options(&t->opts);
    if (cli_variant_load(CMD, set->call, s, 7, CLI_EXIT_FAILURE, &t->data, &t->opts))
        return -1;
    const size_t dv = t->opts.head_dim_v ? t->opts.head_dim_v : s->head_dim;
    if (cli_cache_any(&set->call->cache)) { /* made on the host, as bench makes it */
        const int rc = cli_cache_upload(ctx, &set->call->cache, s, dv, 11, &t->cache, &t->opts,
                                        t->b);
        if (rc < 0) {
            cli_lib_error("tune: the KV cache's inputs", rc);
            tune_free_buffers(t);
            return -1;
        }
        return 0;
    }
    const size_t rows[4] = { clattn_shape_q_elems(s), clattn_shape_kv_elems(s),
                             clattn_shape_kv_elems(s) / s->head_dim * dv,
                             clattn_shape_q_elems(s) / s->head_dim * dv };
    for (int i = 0; i < 4; i++) {
        cl_int err;
        const size_t bytes = rows[i] * clattn_dtype_size(s->dtype);
        t->b[i] = clCreateBuffer(clattn_cl_context(ctx), CL_MEM_READ_WRITE, bytes, NULL, &err);
        /* Random inputs: the softmax's work must be real. */
        if (err != CL_SUCCESS || (i < 3 && clattn_random_fill_cl(ctx, t->b[i], rows[i], s->dtype,
                                                                  11 + (uint32_t)i) < 0)) {
            cli_error("cannot prepare %zu bytes of inputs", bytes);
            tune_free_buffers(t);
            return -1;
        }
    }
    return 0;
}

/* The variant's and the KV cache's fields of `from` into `o`. */
static void copy_variant(const clattn_options *from, clattn_options *o)
{
    o->k_type = from->k_type;
    o->v_type = from->v_type;
    o->k_scale = from->k_scale;
    o->v_scale = from->v_scale;
    o->kv_scale_per_head = from->kv_scale_per_head;
    o->page_size = from->page_size;
    o->num_pages = from->num_pages;
    o->block_table = from->block_table;
    o->block_table_stride = from->block_table_stride;
    o->cu_seqlens_q = from->cu_seqlens_q;
    o->cu_seqlens_k = from->cu_seqlens_k;
    o->total_q = from->total_q;
    o->total_k = from->total_k;
    o->kv_lens = from->kv_lens;
    o->q_lens = from->q_lens;
    o->q_layout = from->q_layout;
    o->k_layout = from->k_layout;
    o->v_layout = from->v_layout;
    o->o_layout = from->o_layout;
    o->softcap = from->softcap;
    o->alibi_slopes = from->alibi_slopes;
    o->alibi_per_sequence = from->alibi_per_sequence;
    o->window_left = from->window_left;
    o->window_right = from->window_right;
    o->sinks = from->sinks;
    o->mask = from->mask;
    o->score_mod = from->score_mod;
    o->mask_mod = from->mask_mod;
    o->head_dim_v = from->head_dim_v;
}

/* A candidate with a variant, checked as clattn verify checks one: the
 * variant's tensors drawn for the small shape. */
static int check_variant_tile(clattn_ctx *ctx, const clattn_shape *small, const clattn_options *o,
                              const struct tune_settings *set, uint64_t seed, double *rel_l2)
{
    verify_variant v;
    memset(&v, 0, sizeof v);
    v.name = "tune";
    v.shape = *small;
    v.opts = *o;
    v.cache = set->call->cache; /* made from the drawn inputs by the run */
    /* The timed shape's cache arrays do not fit the small one: the run
     * makes its own. */
    clattn_options plain;
    clattn_default_options(&plain);
    v.opts.k_type = v.opts.v_type = CLATTN_KV_DTYPE;
    v.opts.k_scale = v.opts.v_scale = NULL;
    v.opts.page_size = v.opts.num_pages = v.opts.block_table_stride = 0;
    v.opts.block_table = NULL;
    v.opts.cu_seqlens_q = v.opts.cu_seqlens_k = NULL;
    v.opts.total_q = v.opts.total_k = 0;
    v.opts.kv_lens = v.opts.q_lens = NULL;
    v.opts.q_layout = plain.q_layout, v.opts.k_layout = plain.k_layout;
    v.opts.v_layout = plain.v_layout, v.opts.o_layout = plain.o_layout;
    int rc = cli_variant_load(CMD, set->call, small, seed, CLI_EXIT_FAILURE, &v.data, &v.opts);
    v.ref = v.opts;
    verify_result r;
    rc = rc ? CLATTN_EINVAL : verify_variant_run(ctx, &v, CLATTN_PATH_FUSED, seed, &r);
    verify_variant_free(&v);
    *rel_l2 = rc < 0 ? 0 : r.rel_l2;
    return rc < 0 ? rc : r.passed ? 0 : 1;
}

/* A fast wrong tile must never win: check it first on a shape that is not
 * a multiple of it, with grouped heads and the same mask. 0 if it passed, 1
 * if it computed something wrong, a CLATTN_E* code if it did not run. */
static int check_tile(clattn_ctx *ctx, const clattn_shape *s, const clattn_options *o,
                      const struct tune_settings *set, uint64_t seed, double *rel_l2)
{
    clattn_shape small = { 1, 4, 2, 2 * o->block_m + 37, 3 * o->block_n + 11, s->head_dim,
                           s->dtype };
    if (set->variant)
        return check_variant_tile(ctx, &small, o, set, seed, rel_l2);
    clattn_check_result chk;
    int rc = clattn_check(ctx, &small, o, seed, &chk);
    *rel_l2 = rc < 0 ? 0 : chk.rel_l2;
    return rc < 0 ? rc : chk.passed ? 0 : 1;
}

/* The candidates to time for `kernel`: --tiles, else the table's. */
static size_t candidates(clattn_fused_kernel kernel, const struct tune_settings *set,
                         const clattn_tiles **tiles, clattn_kernel_info *info)
{
    for (size_t i = 0; clattn_fused_kernel_info(i, info) == 0; i++) {
        if (info->id != kernel)
            continue;
        *tiles = set->n_tiles ? set->tiles : info->candidates;
        return set->n_tiles ? set->n_tiles : info->n_candidates;
    }
    return 0;
}

/* One candidate's outcome, for the row and the JSON report. */
struct candidate_result {
    int checked;   /* 0 passed (or not checked), 1 wrong, < 0 did not run */
    double rel_l2; /* of the check */
    double seconds;/* median kernel time; < 0 when the timing failed */
    int current;   /* the tiles the library would use now */
};

static void report_candidate(const struct tune_settings *set, const clattn_shape *s, int causal,
                             const char *kernel, const clattn_tiles *tile, double flops,
                             const struct candidate_result *c)
{
    char name[48];
    tile_name(tile, name, sizeof name);
    FILE *f = set->text;
    fprintf(f, "d=%-4zu %-6s %-9s %-11s ", s->head_dim, causal ? "causal" : "full", kernel, name);
    const char *status = c->checked == 1 ? "wrong" : c->checked < 0 || c->seconds < 0 ? "failed"
                                                                                      : "ok";
    if (c->checked == 1)
        fprintf(f, "WRONG: rel_l2 %.2e against the reference (or unwritten outputs)\n",
                c->rel_l2);
    else if (c->checked < 0 || c->seconds < 0)
        fprintf(f, "failed: %s\n", clattn_last_error_detail());
    else
        fprintf(f, "%9.3f ms %9.3g TFLOP/s  (%s rel_l2 %.1e)%s\n", c->seconds * 1e3,
                flops / c->seconds * 1e-12, set->check ? "check" : "NOT CHECKED", c->rel_l2,
                c->current ? "  (current default)" : "");
    fflush(f);
    struct json *j = set->json;
    if (!j)
        return;
    json_open(j, NULL, '{');
    json_str(j, "tiles", name);
    json_u64(j, "block_m", tile->block_m);
    json_u64(j, "block_n", tile->block_n);
    json_u64(j, "rows_per_item", tile->rows_per_item);
    json_str(j, "status", status);
    json_bool(j, "checked", set->check);
    json_num(j, "rel_l2", set->check && c->checked >= 0 ? c->rel_l2 : NAN, 0);
    const int timed = !strcmp(status, "ok");
    json_num(j, "seconds", timed ? c->seconds : NAN, 0);
    json_num(j, "tflops", timed ? flops / c->seconds * 1e-12 : NAN, 0);
    json_bool(j, "current_default", c->current);
    json_str(j, "detail", !strcmp(status, "failed") ? clattn_last_error_detail() : NULL);
    json_close(j, '}');
}

/* Records the fastest tiles for (kernel, d, causal); 1 when saved, 0 when
 * not asked to, -1 after the one error line that ends the saving (the
 * tuning goes on, unsaved, and the command fails). */
static int save_best(clattn_ctx *ctx, const clattn_shape *s, int causal,
                     clattn_fused_kernel kernel, const clattn_tiles *best,
                     struct tune_settings *set)
{
    if (!set->save || !set->check)
        return 0;
    int rc = clattn_tune_record(ctx, kernel, s->dtype, s->head_dim, causal, best);
    if (rc == 0)
        return 1;
    cli_lib_error("tune: cannot save the tuning result (what follows is timed, not saved)", rc);
    set->save = 0;
    set->save_failed = 1;
    return -1;
}

/* Tunes one kernel for one (d, causal): prints a row per candidate, records
 * the fastest unless told not to; 0, or -1 when no candidate ran or the
 * result could not be saved. */
static int tune_kernel(clattn_ctx *ctx, const clattn_shape *s, int causal,
                       clattn_fused_kernel kernel, struct tune_settings *set,
                       const struct tune_buffers *buf)
{
    clattn_options o;
    clattn_default_options(&o);
    o.path = CLATTN_PATH_FUSED;
    o.causal = causal ? CLATTN_CAUSAL_TOP_LEFT : CLATTN_CAUSAL_NONE;
    o.fused_kernel = kernel;
    copy_variant(&buf->opts, &o);
    clattn_fused_plan now;
    if (clattn_plan_fused(ctx, s, &o, &now) < 0)
        memset(&now, 0, sizeof now); /* nothing configures without a choice: none is "current" */
    const clattn_tiles *tiles = NULL;
    clattn_kernel_info info;
    const size_t n = candidates(kernel, set, &tiles, &info);
    const double flops = attention_flops(s, causal, &o);
    double best = 0;
    clattn_tiles best_tile = { 0, 0, 0 };
    struct json *j = set->json;
    if (j) {
        json_open(j, NULL, '{');
        json_u64(j, "head_dim", s->head_dim);
        json_bool(j, "causal", causal);
        json_str(j, "kernel", info.name);
        json_open(j, "candidates", '[');
    }
    int lost_ctx = 0;
    for (size_t i = 0; i < n && !lost_ctx; i++) {
        o.block_m = tiles[i].block_m;
        o.block_n = tiles[i].block_n;
        o.rows_per_item = tiles[i].rows_per_item;
        struct candidate_result c = { 0, 0, -1, 0 };
        c.checked = set->check ? check_tile(ctx, s, &o, set, 1234 + i, &c.rel_l2) : 0;
        if (c.checked == 0)
            c.seconds = tune_time_config(ctx, s, &o, buf, set->budget, NULL);
        c.current = o.block_m == now.block_m && o.block_n == now.block_n &&
                    (!o.rows_per_item || o.rows_per_item == now.rows_per_item);
        report_candidate(set, s, causal, info.name, &tiles[i], flops, &c);
        if (c.checked != 0 || c.seconds < 0) {
            lost_ctx = lost(ctx);
            continue;
        }
        if (best == 0 || c.seconds < best) {
            best = c.seconds;
            best_tile = tiles[i];
        }
    }
    int saved = 0;
    char name[48];
    tile_name(&best_tile, name, sizeof name);
    if (best > 0) {
        fprintf(set->text, "best d=%zu %s %s: %s, %.3g TFLOP/s\n", s->head_dim,
                causal ? "causal" : "full", info.name, name, flops / best * 1e-12);
        fflush(set->text);
        saved = save_best(ctx, s, causal, kernel, &best_tile, set);
    }
    if (j) {
        json_close(j, ']');
        json_str(j, "best", best > 0 ? name : NULL);
        json_num(j, "best_tflops", best > 0 ? flops / best * 1e-12 : NAN, 0);
        json_bool(j, "saved", saved);
        json_close(j, '}');
    }
    return best > 0 && !lost_ctx && saved >= 0 ? 0 : -1;
}

/* The kernels --kernel selects for `s`: AUTO's choice, one by name, or
 * every kernel of the table that runs it here. */
static size_t select_kernels(clattn_ctx *ctx, const clattn_shape *s, int causal,
                             const struct tune_settings *set, clattn_fused_kernel *out,
                             size_t cap)
{
    clattn_options o;
    clattn_default_options(&o);
    o.causal = causal ? CLATTN_CAUSAL_TOP_LEFT : CLATTN_CAUSAL_NONE;
    size_t n = 0, bm, bn;
    if (!set->all_kernels) {
        out[0] = set->kernel;
        if (set->kernel == CLATTN_FUSED_AUTO && clattn_fused_tiles(ctx, s, &o, &bm, &bn, &out[0]) < 0)
            return 0;
        return 1;
    }
    clattn_kernel_info info;
    for (size_t i = 0; n < cap && clattn_fused_kernel_info(i, &info) == 0; i++)
        if (clattn_fused_kernel_usable(ctx, info.id, s, NULL, 0) == 1)
            out[n++] = info.id;
    return n;
}

/* Tunes every selected kernel for one (d, causal). */
static int tune_one(clattn_ctx *ctx, const clattn_shape *s, int causal,
                    struct tune_settings *set)
{
    clattn_fused_kernel kernels[16];
    const size_t n = select_kernels(ctx, s, causal, set, kernels, 16);
    if (n == 0) {
        cli_lib_error("no fused kernel to tune", CLATTN_EUNSUPPORTED);
        return -1;
    }
    struct tune_buffers buf;
    if (tune_make_buffers(ctx, s, set, &buf) < 0)
        return -1;
    int failed = 0;
    for (size_t i = 0; i < n; i++)
        failed |= tune_kernel(ctx, s, causal, kernels[i], set, &buf) < 0;
    tune_free_buffers(&buf);
    return failed ? -1 : 0;
}

enum { OPT_SECONDS = 1, OPT_TILES };

static const cli_option own_options[] = {
    CLI_VALUE("seconds", "S", OPT_SECONDS, "timed work per candidate (default 0.3)"),
    CLI_VALUE("tiles", "BMxBN[xTM],...", OPT_TILES,
              "replaces the kernel's candidates; TM is the\n"
              "rows per work-item of a register-tiled kernel\n(tiled)"),
    CLI_UNFLAG("no-check", struct tune_settings, check,
               "skip the check (for timing experimental kernels\nonly; implies --no-save)"),
    CLI_UNFLAG("no-save", struct tune_settings, save,
               "print the results without recording them"),
};

/* --seconds, --tiles into *set: 0, or CLI_EXIT_USAGE. */
static int set_option(void *state, const cli_option *option, const char *v)
{
    struct tune_settings *set = state;
    if (option->id == OPT_SECONDS) {
        if (cli_parse_double(v, &set->budget) < 0 || !(set->budget >= 0))
            return cli_usage_error(CMD, "bad --seconds '%.40s' (seconds >= 0)", v);
        return 0;
    }
    if (parse_tiles(v, set) < 0)
        return cli_usage_error(CMD, "bad --tiles '%.80s' (BMxBN or BMxBNxTM, separated by "
                               "commas)", v);
    return 0;
}

static const cli_default tune_defaults[] = {
    { CLI_DTYPE, "fp16" }, { CLI_CAUSAL, "both" }, { CLI_KERNEL, "auto" }, { 0, NULL },
};

static const cli_command tune_command = {
    CMD, CLI_DEVICE | CLI_SIZES | CLI_HEAD_DIMS | CLI_DTYPE | CLI_CAUSAL | CLI_MASKS |
             CLI_KERNEL | CLI_ALL_KERNELS | CLI_JSON | CLI_VARIANTS | CLI_DV | CLI_RANDOM_INPUTS |
             CLI_CACHE,
    own_options, CLI_COUNT(own_options), set_option, usage, tune_defaults,
};

/* The shapes tuned: one per head dim, the sizes given or tune's own. */
struct tune_args {
    cli_call call;
    clattn_shape shapes[CLI_MAX_HEAD_DIMS];
    size_t n_shapes;
    int masks; /* CLI_MASK bits: none and top-left */
};

/* 0 to go on, -1 after --help, CLI_EXIT_USAGE. */
static int parse_args(int argc, char **argv, struct tune_args *a, struct tune_settings *set)
{
    static const size_t dims[] = { 64, 128, 256 };
    int rc = cli_parse_command(&tune_command, argc, argv, &a->call, set);
    if (rc)
        return rc == 1 ? -1 : rc;
    const cli_call *c = &a->call;
    set->call = c;
    set->variant = cli_variant_any(&c->variant) || cli_cache_any(&c->cache);
    if (set->variant)
        set->save = 0; /* tiles are recorded per head dim, for every variant and cache form */
    const cli_variant *v = &c->variant;
    double number;
    const char *file = v->alibi_slopes ? "--alibi-slopes"
                       : v->mask && strcmp(v->mask, "random") && strcmp(v->mask, "random-add")
                           ? "--mask"
                       : v->sinks && strcmp(v->sinks, "random") &&
                               cli_parse_double(v->sinks, &number) < 0
                           ? "--sinks"
                           : NULL;
    if (file)
        rc = cli_usage_error(CMD, "%s: tune draws its own shapes, so it takes no tensor file "
                             "(--mask random or random-add, --sinks random or a number, "
                             "--alibi or --alibi-max-bias)", file);
    set->all_kernels = c->all_kernels;
    set->kernel = c->kernel;
    a->masks = c->masks ? c->masks : CLI_MASKS_BOTH;
    if (a->masks & CLI_MASK(CLATTN_CAUSAL_BOTTOM_RIGHT))
        rc = cli_usage_error(CMD, "--causal: tune times none and top-left (the kernels' causal "
                             "variant serves both alignments)");
    const size_t n = c->lens[0] ? c->lens[0] : 4096, heads = c->heads ? c->heads : 16;
    a->n_shapes = c->n_head_dims ? c->n_head_dims : 3;
    for (size_t i = 0; rc == 0 && i < a->n_shapes; i++) {
        a->shapes[i] = (clattn_shape){ c->batch ? c->batch : 4, heads,
                                       c->kv_heads ? c->kv_heads : heads, c->q_len ? c->q_len : n,
                                       n, c->n_head_dims ? c->head_dims[i] : dims[i],
                                       c->given & CLI_DTYPE ? c->dtype : CLATTN_F16 };
        rc = cli_check_shape(CMD, &a->shapes[i]);
    }
    if (rc)
        cli_call_free(&a->call);
    return rc;
}

/* Tunes every (d, causal) asked for, then records each head dim's
 * efficiencies where the tiles are recorded; nonzero if any failed. */
static int tune_all(clattn_ctx *ctx, const struct tune_args *a, struct tune_settings *set)
{
    int failed = 0;
    for (size_t i = 0; i < a->n_shapes; i++) {
        for (int causal = 0; causal < 2; causal++) {
            if (!(a->masks & CLI_MASK(causal ? CLATTN_CAUSAL_TOP_LEFT : CLATTN_CAUSAL_NONE)))
                continue;
            if (tune_one(ctx, &a->shapes[i], causal, set) < 0) {
                failed = 1;
                if (lost(ctx))
                    return failed;
            }
        }
        if (set->save && set->check && !set->variant &&
            tune_efficiencies(ctx, &a->shapes[i], set) < 0) {
            failed = 1;
            if (lost(ctx))
                return failed;
        }
    }
    return failed;
}

int cmd_tune(int argc, char **argv)
{
    struct tune_args a;
    struct tune_settings set = { .budget = 0.3, .save = 1, .check = 1,
                                 .kernel = CLATTN_FUSED_AUTO };
    int status = parse_args(argc, argv, &a, &set);
    if (status)
        return status < 0 ? CLI_EXIT_OK : status;
    const char *json = a.call.json;
    const clattn_shape *s = &a.shapes[0];
    set.text = json && outfile_is_stdout(json) ? stderr : stdout;
    clattn_ctx *ctx = NULL;
    outfile jf;
    struct json j;
    if (cli_output_check(json) ||
        cli_open_with_report(a.call.device, json, "tune", &ctx, &jf, &j)) {
        cli_call_free(&a.call);
        return CLI_EXIT_FAILURE;
    }
    if (json) {
        set.json = &j;
        json_open(&j, "shape", '{');
        json_u64(&j, "batch", s->batch);
        json_u64(&j, "heads", s->heads);
        json_u64(&j, "kv_heads", s->kv_heads);
        json_u64(&j, "q_len", s->q_len);
        json_u64(&j, "len", s->kv_len);
        json_str(&j, "dtype", cli_dtype_name(s->dtype));
        json_close(&j, '}');
        if (cli_cache_any(&a.call.cache))
            cli_cache_json(&j, &a.call.cache, s, NULL);
        json_bool(&j, "save", set.save && set.check);
        json_open(&j, "results", '[');
    }
    fprintf(set.text, "device: %s\nshape: B=%zu H=%zu Hkv=%zu Nq=%zu Nk=%zu %s\n",
            clattn_device_name(ctx), s->batch, s->heads, s->kv_heads, s->q_len, s->kv_len,
            cli_dtype_name(s->dtype));
    int failed = tune_all(ctx, &a, &set);
    clattn_close(&ctx);
    if (json) {
        json_close(&j, ']');
        json_bool(&j, "failed", failed);
        json_end_document(&j);
        failed |= cli_output_commit(&jf);
    }
    cli_call_free(&a.call);
    return failed ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}
