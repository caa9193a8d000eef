/*
 * clattn bench: the naive and fused paths over a list of cases (shapes, each
 * with its masks), each row measured beside the model's prediction (time,
 * bytes, the fraction of the device's bandwidth, FLOPs, memory, causal
 * speedup) and checked against the CPU reference. Rows the model predicts
 * will not fit are reported, not run.
 *
 * Exit status: 0 every row that ran passed its check (rows predicted out of
 * memory do not count against it), 1 a check failed or a row could not run,
 * 2 a usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "ceilings_auto.h"
#include "cli.h"
#include "commands.h"
#include "outfile.h"
#include "ranks.h"

/* ------------------------------------------------------------------ device */

static void device_string(cl_device_id d, cl_device_info what, char *buf, size_t cap)
{
    if (clGetDeviceInfo(d, what, cap, buf, NULL) != CL_SUCCESS)
        snprintf(buf, cap, "?");
    buf[cap - 1] = '\0';
}

static int describe_device(clattn_ctx *ctx, clattn_dtype dtype, bench_device *dev)
{
    memset(dev, 0, sizeof *dev);
    cl_device_id d = clattn_cl_device(ctx);
    snprintf(dev->name, sizeof dev->name, "%s", clattn_device_name(ctx));
    device_string(d, CL_DRIVER_VERSION, dev->driver, sizeof dev->driver);
    device_string(d, CL_DEVICE_VERSION, dev->version, sizeof dev->version);
    cl_device_type type = 0;
    clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    dev->is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
    /* A fresh machine has no measured ceilings: measure them, so that no
     * prediction is n/a for want of a bandwidth or a FLOP rate. */
    int rc = ceilings_measure_missing(ctx, &dev->ceil, dev->ceilings_note,
                                      sizeof dev->ceilings_note);
    if (rc < 0)
        return rc;
    int f32_stands_in;
    dev->peak = ceilings_peak(&dev->ceil, dtype, &f32_stands_in);
    if (dev->peak.source == CLATTN_SRC_NONE)
        snprintf(dev->peak_note, sizeof dev->peak_note, "no FLOP/s figure: predictions n/a");
    else if (f32_stands_in)
        snprintf(dev->peak_note, sizeof dev->peak_note,
                 "fp32 FLOP/s standing in for fp16 (no fp16 figure; fp16 here is half "
                 "storage with float arithmetic)");
    else
        snprintf(dev->peak_note, sizeof dev->peak_note,
                 dtype == CLATTN_F32 ? "fp32 FLOP/s" : "fp16 FLOP/s");
    return 0;
}

/* ------------------------------------------------------------------- rows */

static const clattn_causal mask_modes[] = { CLATTN_CAUSAL_NONE, CLATTN_CAUSAL_TOP_LEFT,
                                            CLATTN_CAUSAL_BOTTOM_RIGHT };

/* Rows of `cases`, in order: per case its masks (none, top-left,
 * bottom-right), per mask the paths (naive, fused). */
static size_t build_rows(const bench_config *c, const bench_case *cases, size_t n_cases,
                         const uint32_t *kv_lens, bench_row *rows)
{
    size_t n = 0;
    for (size_t i = 0; i < n_cases; i++)
        for (int m = 0; m < 3; m++)
            for (int p = 0; p < 2; p++) {
                const clattn_path path = p ? CLATTN_PATH_FUSED : CLATTN_PATH_NAIVE;
                if (!(cases[i].masks & CLI_MASK(mask_modes[m])) || !(c->paths & CLI_PATH_BIT(path)))
                    continue;
                bench_row *r = &rows[n++];
                memset(r, 0, sizeof *r);
                r->case_index = i;
                r->shape = cases[i].shape;
                r->causal = mask_modes[m];
                r->path = path;
                r->opts = &c->opts;
                r->kv_lens = kv_lens;
                /* The lengths given are the run's cases' (model-only rows have none). */
                r->q_lens = cases == c->cases ? c->args->call.q_lens : NULL;
            }
    return n;
}

static void set_status(bench_row *rows, size_t n, bench_status status, int oom,
                       const char *detail)
{
    for (size_t i = 0; i < n; i++) {
        rows[i].status = status;
        rows[i].predicted_oom |= oom;
        snprintf(rows[i].detail, sizeof rows[i].detail, "%s", detail);
    }
}

static const char *mask_word(clattn_causal c)
{
    return c == CLATTN_CAUSAL_NONE ? "no-mask" : c == CLATTN_CAUSAL_TOP_LEFT ? "causal"
                                                                             : "causal-br";
}

static void progress(size_t i, size_t n, const bench_row *r)
{
    fprintf(stderr, "[%zu/%zu] B=%zu Nq=%zu Nk=%zu %s %s\n", i + 1, n, r->shape.batch,
            r->shape.q_len, r->shape.kv_len, mask_word(r->causal), cli_path_name(r->path));
}

/* The rows of one case share their inputs. Returns CLATTN_EDEVLOST when the
 * device is gone. */
static int run_case(clattn_ctx *ctx, const bench_config *cfg, const bench_device *dev,
                    bench_row *rows, size_t n, size_t first, size_t total)
{
    int want = 0;
    for (size_t i = 0; i < n; i++)
        want |= !rows[i].predicted_oom || cfg->args->confirm_oom;
    if (!want) {
        for (size_t i = 0; i < n; i++) {
            progress(first + i, total, &rows[i]);
            rows[i].status = BENCH_OOM;
        }
        return 0;
    }
    char detail[320];
    if (!cfg->args->confirm_oom && bench_inputs_too_big(dev, &rows[0].shape, detail, sizeof detail)) {
        for (size_t i = 0; i < n; i++)
            progress(first + i, total, &rows[i]);
        set_status(rows, n, BENCH_OOM, 1, detail);
        return 0;
    }
    bench_inputs in;
    fprintf(stderr, "       B=%zu Nq=%zu Nk=%zu: generating and uploading inputs\n",
            rows[0].shape.batch, rows[0].shape.q_len, rows[0].shape.kv_len);
    int rc = bench_inputs_make(ctx, &rows[0].shape, cfg->opts.head_dim_v, cfg->args->call.seed,
                               &in, detail, sizeof detail);
    /* The variant's tensors for this case's shape; its rows run with them. */
    in.opts = cfg->opts;
    if (rc == 0 && cli_variant_load("bench", &cfg->args->call, &rows[0].shape,
                                    cfg->args->call.seed, CLI_EXIT_FAILURE, &in.variant,
                                    &in.opts)) {
        snprintf(detail, sizeof detail, "the variant's inputs could not be made (see above)");
        rc = CLATTN_EINVAL;
    }
    if (rc == 0)
        rc = bench_inputs_cache(ctx, cfg, &in, detail, sizeof detail);
    if (rc == 0)
        rc = bench_inputs_variant(ctx, &in, detail, sizeof detail);
    if (rc < 0) {
        /* Out of memory confirms a prediction; anywhere else it is an error. */
        for (size_t i = 0; i < n; i++)
            set_status(&rows[i], 1, rc == CLATTN_EOOM && rows[i].predicted_oom
                                        ? BENCH_OOM_CONFIRMED : BENCH_ERROR, 0, detail);
        bench_inputs_free(&in);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        rows[i].opts = &in.opts;
        rows[i].useful_flops *= in.variant.mask_keep; /* the keys the mask keeps */
    }
    for (size_t i = 0; i < n && rc != CLATTN_EDEVLOST; i++) {
        progress(first + i, total, &rows[i]);
        if (rows[i].predicted_oom && !cfg->args->confirm_oom) {
            rows[i].status = BENCH_OOM;
            continue;
        }
        rc = bench_run_row(ctx, cfg, dev, &in, &rows[i]);
    }
    for (size_t i = 0; i < n; i++)
        rows[i].opts = &cfg->opts; /* in.opts ends here */
    bench_inputs_free(&in);
    return rc == CLATTN_EDEVLOST ? rc : 0;
}

/* The measured causal speedup: the case's no-mask time over its causal
 * time, same path. */
static void measured_speedups(bench_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        bench_row *c = &rows[i];
        if (c->causal == CLATTN_CAUSAL_NONE || (c->status != BENCH_OK && c->status != BENCH_FAIL))
            continue;
        for (size_t j = 0; j < n; j++) {
            const bench_row *u = &rows[j];
            int ran = u->status == BENCH_OK || u->status == BENCH_FAIL;
            if (ran && u->causal == CLATTN_CAUSAL_NONE && u->path == c->path &&
                u->case_index == c->case_index && c->t_median > 0)
                c->speedup_measured = u->t_median / c->t_median;
        }
    }
}

/* A scaled preset's full shapes, model only: the verdicts a scaled-down run
 * cannot show. Their batches differ from the run's, so --kv-lens does not
 * apply to them. */
static size_t model_only_rows(clattn_ctx *ctx, const bench_config *cfg, const bench_device *dev,
                              bench_row *rows)
{
    size_t n = build_rows(cfg, cfg->model_cases, cfg->n_model_cases, NULL, rows);
    for (size_t i = 0; i < n; i++) {
        if (bench_predict_row(ctx, cfg, dev, &rows[i]) < 0)
            snprintf(rows[i].detail, sizeof rows[i].detail, "%s", clattn_last_error_detail());
        rows[i].status = BENCH_PREDICTED;
    }
    return n;
}

/* What --json and --csv are written from. */
struct bench_outputs {
    const bench_config *cfg;
    const bench_device *dev;
    const bench_row *rows;
    size_t n;
};

static int write_json(FILE *f, const char *path, const void *user, char *err, size_t cap)
{
    const struct bench_outputs *o = user;
    bench_write_json(f, o->cfg, o->dev, o->rows, o->n);
    return 0;
}

static int write_csv(FILE *f, const char *path, const void *user, char *err, size_t cap)
{
    const struct bench_outputs *o = user;
    bench_write_csv(f, o->rows, o->n);
    return 0;
}

void bench_files(const bench_args *a, cli_file out[2])
{
    out[0] = (cli_file){ "--json", a->call.json, write_json, NULL };
    out[1] = (cli_file){ "--csv", a->call.csv, write_csv, NULL };
}

/* --json and --csv, committed together. */
static int write_outputs(const bench_config *cfg, const bench_device *dev, const bench_row *rows,
                         size_t n)
{
    const struct bench_outputs o = { cfg, dev, rows, n };
    cli_file out[2];
    bench_files(cfg->args, out);
    out[0].user = out[1].user = &o;
    return cli_write_outputs(out, 2);
}

/* The header and the tables go to stdout, unless the JSON or the CSV does
 * (--json /dev/stdout on a pipe): then to stderr, so the data stays clean. */
static FILE *report_stream(const bench_config *cfg)
{
    const cli_call *call = &cfg->args->call;
    return outfile_is_stdout(call->json) || outfile_is_stdout(call->csv) ? stderr : stdout;
}

static int run_bench(clattn_ctx *ctx, const bench_config *cfg, const bench_device *dev,
                     FILE *report)
{
    const size_t cap = (BENCH_MAX_CASES + BENCH_MAX_MODEL_CASES) * BENCH_ROWS_PER_CASE;
    bench_row *rows = calloc(cap, sizeof *rows);
    if (!rows) {
        cli_error("bench: out of memory");
        return 1;
    }
    size_t n = build_rows(cfg, cfg->cases, cfg->n_cases, cfg->args->call.kv_lens, rows);
    for (size_t i = 0; i < n; i++) {
        int rc = bench_predict_row(ctx, cfg, dev, &rows[i]);
        if (rc < 0) {
            cli_lib_error("bench: model", rc);
            free(rows);
            return 1;
        }
    }
    int lost = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && rows[j].case_index == rows[i].case_index)
            j++;
        if (lost)
            set_status(rows + i, j - i, BENCH_SKIPPED, 0, "the device context was lost earlier");
        else
            lost = run_case(ctx, cfg, dev, rows + i, j - i, i, n) == CLATTN_EDEVLOST;
        i = j;
    }
    measured_speedups(rows, n);
    bench_print_table(report, rows, n);
    size_t total = n;
    if (cfg->n_model_cases) {
        total += model_only_rows(ctx, cfg, dev, rows + n);
        fprintf(report, "\n%s\n", cfg->model_title);
        bench_print_table(report, rows + n, total - n);
    }
    int failed = write_outputs(cfg, dev, rows, total);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += rows[i].status == BENCH_FAIL || rows[i].status == BENCH_ERROR ||
               rows[i].status == BENCH_SKIPPED;
    if (bad)
        fprintf(report, "\n%zu of %zu rows failed or could not run\n", bad, n);
    free(rows);
    return failed || bad ? 1 : 0;
}

int cmd_bench(int argc, char **argv)
{
    cli_ranks ranks;
    if (cli_ranks_begin(&argc, &argv, &ranks))
        return 1;
    bench_args a;
    int rc = bench_parse_args(argc, argv, &a);
    if (rc == 0 && !cli_spread_known(a.spread))
        rc = cli_usage_error("bench", "bad --spread '%.40s' (auto, one, keys, queries, "
                             "allgather or ring)", a.spread);
    if (rc) {
        cli_ranks_end(&ranks);
        return rc == 1 ? 0 : rc;
    }
    if (ranks.ranks > 1 || (a.call.device && strchr(a.call.device, ','))) {
        rc = bench_spread(&a, &ranks);
        cli_ranks_end(&ranks);
        cli_call_free(&a.call);
        return rc;
    }
    bench_config *cfg = malloc(sizeof *cfg);
    if (!cfg) {
        cli_error("bench: out of memory");
        cli_call_free(&a.call);
        return 1;
    }
    /* Usage errors before a device is opened (and outputs that cannot be
     * written found out now, not after minutes of benchmarking); the
     * device may still scale the preset's shapes below. */
    rc = bench_resolve_config(&a, 1, cfg);
    cli_file out[2];
    bench_files(&a, out);
    if (rc == 0 && cli_check_outputs(out, 2))
        rc = 1;
    clattn_ctx *ctx = NULL;
    if (rc == 0 && cli_open(a.call.device, &ctx) < 0)
        rc = 1;
    bench_device dev;
    if (rc == 0 && (rc = describe_device(ctx, cfg->dtype, &dev)) < 0) {
        cli_lib_error("bench: device ceilings", rc);
        rc = 1;
    }
    if (rc == 0)
        rc = bench_resolve_config(&a, dev.is_gpu, cfg);
    if (rc == 0) {
        FILE *report = report_stream(cfg);
        bench_print_header(report, cfg, &dev);
        fflush(report);
        rc = run_bench(ctx, cfg, &dev, report);
    }
    clattn_close(&ctx);
    free(cfg);
    cli_call_free(&a.call);
    return rc;
}
