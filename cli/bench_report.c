/*
 * clattn bench: the header and the aligned table, and the same rows as JSON
 * and CSV, written to the streams cmd_bench.c commits together.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include "json.h"

const char *bench_status_name(bench_status s)
{
    switch (s) {
    case BENCH_OK: return "ok";
    case BENCH_FAIL: return "fail";
    case BENCH_OOM: return "oom";
    case BENCH_OOM_CONFIRMED: return "oom-confirmed";
    case BENCH_ERROR: return "error";
    case BENCH_SKIPPED: return "skipped";
    case BENCH_PREDICTED: return "model-only";
    }
    return "unknown";
}

static const char *mask_name(clattn_causal c)
{
    return c == CLATTN_CAUSAL_NONE ? "no" : cli_causal_name(c);
}

const char *bench_check_mode_name(bench_check_mode m)
{
    return m == BENCH_CHECK_FULL ? "full" : m == BENCH_CHECK_SAMPLED ? "sampled" : "auto";
}

/* "13.4 GB/s"-style: value with an SI prefix. */
static void fmt_si(double v, const char *unit, char *buf, size_t cap)
{
    static const char *prefix[] = { "", "k", "M", "G", "T", "P", "E" };
    size_t p = 0;
    while (fabs(v) >= 1000 && p + 1 < sizeof prefix / sizeof prefix[0]) {
        v /= 1000;
        p++;
    }
    snprintf(buf, cap, "%.3g %s%s", v, prefix[p], unit);
}

static void print_figure(FILE *f, const char *label, clattn_figure fig, const char *unit,
                         int bytes)
{
    char v[48];
    if (fig.source == CLATTN_SRC_NONE || !(fig.value > 0)) {
        fprintf(f, "  %-16s n/a (unknown)\n", label);
        return;
    }
    if (bytes)
        cli_fmt_bytes((uint64_t)fig.value, v, sizeof v);
    else
        fmt_si(fig.value, unit, v, sizeof v);
    fprintf(f, "  %-16s %s (%s)\n", label, v, clattn_source_name(fig.source));
}

/* "none, top-left" */
static void mask_list(int masks, char *buf, size_t cap)
{
    static const char *names[] = { "none", "top-left", "bottom-right" };
    buf[0] = '\0';
    for (int m = 0, used = 0; m < 3; m++)
        if (masks & (1 << m))
            used += snprintf(buf + used, cap - (size_t)used, "%s%s", used ? ", " : "", names[m]);
}

static void print_cases(FILE *f, const bench_config *cfg)
{
    fprintf(f, "cases (the rows of one case share their inputs):\n");
    for (size_t i = 0; i < cfg->n_cases; i++) {
        const clattn_shape *s = &cfg->cases[i].shape;
        char masks[48];
        mask_list(cfg->cases[i].masks, masks, sizeof masks);
        fprintf(f, "  %2zu: B=%zu H=%zu Hkv=%zu Nq=%zu Nk=%zu d=%zu %s; masks: %s\n", i + 1,
                s->batch, s->heads, s->kv_heads, s->q_len, s->kv_len, s->head_dim,
                cli_dtype_name(s->dtype), masks);
    }
    const cli_call *call = &cfg->args->call;
    if (call->kv_lens) {
        fprintf(f, "per-sequence keys (--kv-lens):");
        for (size_t b = 0; b < call->n_kv_lens && b < 32; b++)
            fprintf(f, "%s%u", b ? "," : " ", call->kv_lens[b]);
        fprintf(f, "%s\n", call->n_kv_lens > 32 ? ",..." : "");
    } else {
        fprintf(f, "per-sequence keys: Nk for every sequence\n");
    }
    if (cfg->has_variant) {
        const cli_variant *v = &call->variant;
        fprintf(f, "variant:");
        if (v->softcap > 0)
            fprintf(f, " softcap=%g", v->softcap);
        if (v->window_left >= 0 || v->window_right >= 0)
            fprintf(f, " window=%d,%d", (int)v->window_left, (int)v->window_right);
        if (v->alibi)
            fprintf(f, " alibi");
        if (v->sinks)
            fprintf(f, " sinks=%s", v->sinks);
        if (v->mask)
            fprintf(f, " mask=%s", v->mask);
        if (v->score_mod)
            fprintf(f, " score_mod=%s", v->score_mod);
        if (v->mask_mod)
            fprintf(f, " mask_mod=%s", v->mask_mod);
        if (v->head_dim_v)
            fprintf(f, " dv=%zu", v->head_dim_v);
        fprintf(f, " (fused rows only unless --path asks: the naive path takes no variant;\n"
                   "  useful TFLOP/s count the pairs the window, lengths and mask keep)\n");
    }
    if (call->split_kv)
        fprintf(f, "split-KV: %u chunks per sequence asked for (--split-kv)\n", call->split_kv);
    else
        fprintf(f, "split-KV: the library's choice\n");
    fprintf(f, "causal: top-left = key j visible to query i iff j <= i; bottom-right: iff\n"
               "  j <= i + len - Nq, len the sequence's keys\n");
}

void bench_print_header(FILE *f, const bench_config *cfg, const bench_device *dev)
{
    fprintf(f, "clattn %s bench on %s (%s), driver %s, %s\n", clattn_version(), dev->name,
            dev->is_gpu ? "GPU" : "not a GPU", dev->driver, dev->version);
    print_cases(f, cfg);
    if (cfg->has_cache) {
        char what[128];
        cli_cache_describe(&cfg->args->call.cache, &cfg->cases[0].shape, what, sizeof what);
        fprintf(f, "KV cache: %s (K and V quantized on the host, fp8 scaled by the largest "
                "magnitude over 448; the check reads the same values)\n", what);
    }
    if (cfg->preset_note[0])
        fprintf(f, "preset %s: %s\n", cfg->preset, cfg->preset_note);
    if (dev->ceilings_note[0])
        fprintf(f, "ceilings: %s\n", dev->ceilings_note);
    fprintf(f, "ceilings used by the model (source):\n");
    print_figure(f, "memory", dev->ceil.global_mem_bytes, "", 1);
    print_figure(f, "max allocation", dev->ceil.max_alloc_bytes, "", 1);
    print_figure(f, "cache", dev->ceil.cache_bytes, "", 1);
    print_figure(f, "bandwidth", dev->ceil.bandwidth, "B/s", 0);
    print_figure(f, "fp32 FLOP/s", dev->ceil.flops_f32, "FLOP/s", 0);
    print_figure(f, "fp16 FLOP/s", dev->ceil.flops_f16, "FLOP/s", 0);
    print_figure(f, "launch latency", dev->ceil.launch_latency_s, "s", 0);
    char peak[48] = "n/a";
    if (dev->peak.value > 0)
        fmt_si(dev->peak.value, "FLOP/s", peak, sizeof peak);
    fprintf(f, "  %-16s %s: %s\n", "peak used", peak, dev->peak_note);
    fprintf(f,
            "timing: one untimed run (builds kernels; its output, poisoned with NaN before, is\n"
            "  checked), then samples until %.2g s of timed work (at least 3), each %u\n"
            "  call(s) of clattn_attention_cl back to back + clFinish on a monotonic host\n"
            "  clock (clattn_time_attention_cl); per call, median and min-max\n"
            "TFLOP/s: the model's FLOPs for the work the path does (naive: all Nq*Nk pairs;\n"
            "  fused: every pair of the visited tiles of each sequence) / median; useful:\n"
            "  2*(d+d_v)*H*(visible pairs of the batch) / median; GB/s: the model's bytes for the\n"
            "  path / median; of bw: GB/s / the bandwidth ceiling above; splits: the run's\n"
            "  split-KV chunks per sequence (the plan's for rows not run)\n"
            "pred ms: the model's roofline time (bytes at the bandwidth or FLOPs at the\n"
            "  peak, whichever is longer, plus the launches) over eff, the kernel's\n"
            "  efficiency where that roof binds as clattn tune recorded it for this\n"
            "  device; eff none: none recorded, pred is the roofline itself\n"
            "causal x: no-mask time / causal time, same path and case; model x: total /\n"
            "  visited tiles of the fused kernel (the naive path computes all of S: 1)\n\n",
            cfg->target_seconds, cfg->args->calls_per_sample);
}

/* ------------------------------------------------------------------ table */

enum { COL_B, COL_NQ, COL_NK, COL_CAUSAL, COL_PATH, COL_KERNEL, COL_SPLITS, COL_REPS,
       COL_MEDIAN, COL_SPREAD, COL_TFLOPS, COL_USEFUL, COL_GBPS, COL_BW_FRACTION, COL_PRED,
       COL_BOUND, COL_EFF, COL_RATIO, COL_MEM, COL_SPEEDUP, COL_MODEL_X, COL_CHECK, N_COLS };

static const struct {
    const char *title;
    int left;
} columns[N_COLS] = {
    { "B", 0 },        { "Nq", 0 },        { "Nk", 0 },         { "causal", 1 },
    { "path", 1 },     { "kernel", 1 },    { "splits", 0 },     { "reps", 0 },
    { "median ms", 0 }, { "min-max ms", 0 }, { "TFLOP/s", 0 },  { "useful", 0 },
    { "GB/s", 0 },     { "of bw", 0 },     { "pred ms", 0 },    { "bound", 1 },
    { "eff", 0 },      { "meas/pred", 0 }, { "memory / pred", 0 }, { "causal x", 0 }, { "model x", 0 },
    { "check", 1 },
};

#define CELL 400
typedef char cell_row[N_COLS][CELL];

static void fmt_g(double v, const char *fmt, char *buf)
{
    if (v > 0 && isfinite(v))
        snprintf(buf, CELL, fmt, v);
    else
        snprintf(buf, CELL, "-");
}

/* Milliseconds with four significant digits, but no exponent: "9874". */
static void fmt_ms(double seconds, char *buf, size_t cap)
{
    double ms = seconds * 1e3;
    snprintf(buf, cap, ms >= 1000 ? "%.0f" : "%.4g", ms);
}

static void fmt_check(const bench_row *r, char *buf)
{
    switch (r->status) {
    case BENCH_OK:
    case BENCH_FAIL:
        snprintf(buf, CELL, "%s max_abs %.1e rel_l2 %.1e (%s)%s%s%s",
                 r->check_ok ? "ok" : "FAIL", r->max_abs, r->rel_l2, r->check_kind,
                 r->nan_count ? ", unwritten outputs" : "",
                 r->stray_count ? ", nonzero rows that see no key" : "",
                 r->detail[0] ? "; " : "");
        if (r->detail[0])
            strncat(buf, r->detail, CELL - strlen(buf) - 1);
        break;
    case BENCH_OOM:
        snprintf(buf, CELL, "OOM (predicted: %.300s)", r->detail);
        break;
    case BENCH_PREDICTED:
        if (r->predicted_oom)
            snprintf(buf, CELL, "model only: OOM (predicted: %.300s)", r->detail);
        else
            snprintf(buf, CELL, "model only: fits");
        break;
    case BENCH_OOM_CONFIRMED:
        snprintf(buf, CELL, "OOM confirmed (%.300s)", r->detail);
        break;
    default:
        snprintf(buf, CELL, "%s: %.300s", r->status == BENCH_SKIPPED ? "SKIPPED" : "ERROR",
                 r->detail);
    }
}

static void fill_cells(const bench_row *r, cell_row c)
{
    const int ran = r->status == BENCH_OK || r->status == BENCH_FAIL;
    snprintf(c[COL_B], CELL, "%zu", r->shape.batch);
    snprintf(c[COL_NQ], CELL, "%zu", r->shape.q_len);
    snprintf(c[COL_NK], CELL, "%zu", r->shape.kv_len);
    snprintf(c[COL_CAUSAL], CELL, "%s", mask_name(r->causal));
    snprintf(c[COL_PATH], CELL, "%s", cli_path_name(r->path));
    snprintf(c[COL_KERNEL], CELL, "%s", r->kernel[0] ? r->kernel : "-");
    if (r->path == CLATTN_PATH_NAIVE)
        snprintf(c[COL_SPLITS], CELL, "-");
    else
        snprintf(c[COL_SPLITS], CELL, "%u", ran ? r->splits : r->planned_splits);
    snprintf(c[COL_REPS], CELL, ran ? "%u" : "-", r->reps);
    char lo[32], hi[32];
    fmt_ms(r->t_min, lo, sizeof lo);
    fmt_ms(r->t_max, hi, sizeof hi);
    if (ran) {
        fmt_ms(r->t_median, c[COL_MEDIAN], CELL);
        snprintf(c[COL_SPREAD], CELL, "%s-%s", lo, hi);
    } else {
        snprintf(c[COL_MEDIAN], CELL, "-");
        snprintf(c[COL_SPREAD], CELL, "-");
    }
    fmt_g(ran ? r->tflops_model : 0, "%.3g", c[COL_TFLOPS]);
    fmt_g(ran ? r->tflops_useful : 0, "%.3g", c[COL_USEFUL]);
    fmt_g(ran ? r->gbps : 0, "%.3g", c[COL_GBPS]);
    if (ran && r->bandwidth_fraction > 0)
        snprintf(c[COL_BW_FRACTION], CELL, "%.3g%%", 100 * r->bandwidth_fraction);
    else
        snprintf(c[COL_BW_FRACTION], CELL, "-");
    if (r->expected_s > 0)
        fmt_ms(r->expected_s, c[COL_PRED], CELL);
    else if (r->est.time_s > 0)
        fmt_ms(r->est.time_s, c[COL_PRED], CELL);
    else
        snprintf(c[COL_PRED], CELL, "n/a");
    if (r->efficiency > 0)
        snprintf(c[COL_EFF], CELL, "%.3g", r->efficiency);
    else
        snprintf(c[COL_EFF], CELL, r->est.time_s > 0 && ran ? "none" : "-");
    snprintf(c[COL_BOUND], CELL, "%s",
             r->est.bound == CLATTN_BOUND_UNKNOWN ? "-" : clattn_bound_name(r->est.bound));
    fmt_g(ran ? r->ratio : 0, "%.3g", c[COL_RATIO]);
    char a[32] = "-", p[32] = "-";
    if (ran)
        cli_fmt_bytes(r->mem_allocated, a, sizeof a);
    if (r->mem_predicted)
        cli_fmt_bytes(r->mem_predicted, p, sizeof p);
    if (r->status == BENCH_PREDICTED)
        snprintf(c[COL_MEM], CELL, "%s", p);
    else
        snprintf(c[COL_MEM], CELL, "%s / %s", a, p);
    const int causal = r->causal != CLATTN_CAUSAL_NONE;
    fmt_g(causal ? r->speedup_measured : 0, "%.3g", c[COL_SPEEDUP]);
    fmt_g(causal ? r->speedup_ideal : 0, "%.3g", c[COL_MODEL_X]);
    fmt_check(r, c[COL_CHECK]);
}

/* Model-only rows have no measurement: only these columns. */
static int model_column(int j)
{
    return j == COL_B || j == COL_NQ || j == COL_NK || j == COL_CAUSAL || j == COL_PATH ||
           j == COL_SPLITS || j == COL_PRED || j == COL_BOUND || j == COL_MEM ||
           j == COL_MODEL_X || j == COL_CHECK;
}

void bench_print_table(FILE *f, const bench_row *rows, size_t n)
{
    cell_row *cells = malloc((n + 1) * sizeof *cells);
    if (!cells)
        return;
    int model_only = n > 0;
    for (size_t i = 0; i < n; i++)
        model_only &= rows[i].status == BENCH_PREDICTED;
    size_t width[N_COLS];
    for (int j = 0; j < N_COLS; j++) {
        const char *title = model_only && j == COL_MEM ? "memory" : columns[j].title;
        snprintf(cells[0][j], CELL, "%s", title);
        width[j] = strlen(title);
    }
    for (size_t i = 0; i < n; i++) {
        fill_cells(&rows[i], cells[i + 1]);
        for (int j = 0; j < N_COLS; j++)
            if (strlen(cells[i + 1][j]) > width[j])
                width[j] = strlen(cells[i + 1][j]);
    }
    for (size_t i = 0; i <= n; i++) {
        for (int j = 0; j < N_COLS; j++) {
            const char *sep = j ? "  " : "";
            if (model_only && !model_column(j))
                continue;
            if (j == N_COLS - 1)
                fprintf(f, "%s%s\n", sep, cells[i][j]);
            else if (columns[j].left)
                fprintf(f, "%s%-*s", sep, (int)width[j], cells[i][j]);
            else
                fprintf(f, "%s%*s", sep, (int)width[j], cells[i][j]);
        }
    }
    free(cells);
}

/* ------------------------------------------------------------------- JSON */

/* A number, or null when it is not available (`have` false) or not finite. */
static void num_if(struct json *j, const char *key, double v, int have)
{
    if (have)
        json_num(j, key, v, 0);
    else
        json_null(j, key);
}

static void json_row(struct json *j, const bench_row *r)
{
    const int ran = r->status == BENCH_OK || r->status == BENCH_FAIL;
    const int causal = r->causal != CLATTN_CAUSAL_NONE;
    const int fused = r->path == CLATTN_PATH_FUSED;
    const clattn_shape *s = &r->shape;
    json_open(j, NULL, '{');
    json_str(j, "status", bench_status_name(r->status));
    json_u64(j, "n", s->kv_len); /* Nk: what the charts put on their axis */
    json_u64(j, "q_len", s->q_len);
    json_u64(j, "kv_len", s->kv_len);
    json_u64(j, "batch", s->batch);
    json_u64(j, "heads", s->heads);
    json_u64(j, "kv_heads", s->kv_heads);
    json_u64(j, "head_dim", s->head_dim);
    json_str(j, "dtype", cli_dtype_name(s->dtype));
    json_str(j, "causal", cli_causal_name(r->causal));
    json_str(j, "path", cli_path_name(r->path));
    json_str(j, "kernel", r->kernel);
    json_u64(j, "block_m", r->block_m);
    json_u64(j, "block_n", r->block_n);
    json_u32_list(j, "kv_lens", r->kv_lens, s->batch);
    json_u64(j, "split_kv", r->opts->split_kv);
    num_if(j, "splits", ran ? r->splits : r->planned_splits, fused);
    json_u64(j, "planned_splits", r->planned_splits);
    json_bool(j, "predicted_oom", r->predicted_oom);
    json_str(j, "detail", r->detail);
    json_u64(j, "reps", ran ? r->reps : 0);
    json_u64(j, "calls_per_sample", ran ? r->calls_per_sample : 0);
    num_if(j, "time_median_s", r->t_median, ran);
    num_if(j, "time_min_s", r->t_min, ran);
    num_if(j, "time_max_s", r->t_max, ran);
    json_num(j, "model_flops", r->est.flops, 0);
    json_num(j, "useful_flops", r->useful_flops, 0);
    json_u64(j, "model_bytes", r->est.bytes);
    json_num(j, "intensity", r->est.intensity, 0);
    num_if(j, "tflops_model", r->tflops_model, ran);
    num_if(j, "tflops_useful", r->tflops_useful, ran);
    num_if(j, "gbps", r->gbps, ran);
    num_if(j, "bandwidth_fraction", r->bandwidth_fraction, ran && r->bandwidth_fraction > 0);
    num_if(j, "predicted_s", r->est.time_s, r->est.time_s > 0);
    num_if(j, "efficiency", r->efficiency, r->efficiency > 0);
    num_if(j, "expected_s", r->expected_s, r->expected_s > 0);
    num_if(j, "predicted_memory_s", r->est.memory_time_s, r->est.memory_time_s > 0);
    num_if(j, "predicted_compute_s", r->est.compute_time_s, r->est.compute_time_s > 0);
    json_str(j, "bound", clattn_bound_name(r->est.bound));
    num_if(j, "ratio", r->ratio, ran && r->ratio > 0);
    num_if(j, "mem_allocated_bytes", (double)r->mem_allocated, ran);
    json_u64(j, "mem_predicted_bytes", r->mem_predicted);
    json_u64(j, "split_workspace_bytes", r->split_workspace);
    json_u64(j, "visited_blocks", r->visited_blocks);
    json_u64(j, "total_blocks", r->total_blocks);
    num_if(j, "speedup_ideal", r->speedup_ideal, causal && r->speedup_ideal > 0);
    num_if(j, "speedup_roofline", r->speedup_roofline, causal && r->speedup_roofline > 0);
    num_if(j, "speedup_measured", r->speedup_measured, causal && r->speedup_measured > 0);
    json_str(j, "check", r->check_kind);
    num_if(j, "max_abs", r->max_abs, ran);
    num_if(j, "rel_l2", r->rel_l2, ran);
    num_if(j, "tol_max_abs", r->tol_abs, ran);
    num_if(j, "tol_rel_l2", r->tol_rel, ran);
    json_u64(j, "nan_count", r->nan_count);
    json_u64(j, "stray_outputs", r->stray_count);
    if (ran)
        json_bool(j, "check_ok", r->check_ok);
    else
        json_null(j, "check_ok");
    json_close(j, '}');
}

static void json_config(struct json *j, const bench_config *cfg, const bench_device *dev)
{
    static const char *masks[] = { "none", "top-left", "bottom-right" };
    json_open(j, "config", '{');
    json_open(j, "cases", '[');
    for (size_t i = 0; i < cfg->n_cases; i++) {
        const clattn_shape *s = &cfg->cases[i].shape;
        json_open(j, NULL, '{');
        json_shape_fields(j, s);
        json_open(j, "masks", '[');
        for (int m = 0; m < 3; m++)
            if (cfg->cases[i].masks & (1 << m))
                json_str(j, NULL, masks[m]);
        json_close(j, ']');
        json_close(j, '}');
    }
    json_close(j, ']');
    json_str(j, "dtype", cli_dtype_name(cfg->dtype));
    {
        const cli_variant *v = &cfg->args->call.variant;
        json_open(j, "variant", '{');
        json_num(j, "softcap", v->softcap, 1);
        json_int(j, "window_left", v->window_left);
        json_int(j, "window_right", v->window_right);
        json_bool(j, "alibi", v->alibi);
        json_str(j, "sinks", v->sinks);
        json_str(j, "mask", v->mask);
        json_str(j, "score_mod", v->score_mod);
        json_str(j, "mask_mod", v->mask_mod);
        json_u64(j, "head_dim_v", v->head_dim_v ? v->head_dim_v : cfg->cases[0].shape.head_dim);
        json_close(j, '}');
    }
    const bench_args *a = cfg->args;
    if (cfg->has_cache || a->call.q_lens) {
        cli_cache_json(j, &a->call.cache, &cfg->cases[0].shape, NULL);
        json_u32_list(j, "q_lens", a->call.q_lens, a->call.n_q_lens);
    }
    json_u32_list(j, "kv_lens", a->call.kv_lens, a->call.n_kv_lens);
    json_u64(j, "split_kv", a->call.split_kv);
    json_open(j, "paths", '[');
    if (cfg->paths & CLI_PATH_BIT(CLATTN_PATH_NAIVE))
        json_str(j, NULL, "naive");
    if (cfg->paths & CLI_PATH_BIT(CLATTN_PATH_FUSED))
        json_str(j, NULL, "fused");
    json_close(j, ']');
    json_str(j, "preset", cfg->preset);
    json_str(j, "preset_note", cfg->preset_note);
    json_num(j, "reps_seconds", cfg->target_seconds, 0);
    json_u64(j, "calls_per_sample", a->calls_per_sample);
    json_bool(j, "confirm_oom", a->confirm_oom);
    json_u64(j, "seed", a->call.seed);
    json_str(j, "check", bench_check_mode_name(a->check));
    json_close(j, '}');
}

void bench_write_json(FILE *f, const bench_config *cfg, const bench_device *dev,
                      const bench_row *rows, size_t n)
{
    struct json j;
    json_begin_document(&j, f, "bench");
    json_open(&j, "device", '{');
    json_str(&j, "name", dev->name);
    json_str(&j, "driver", dev->driver);
    json_str(&j, "version", dev->version);
    json_bool(&j, "is_gpu", dev->is_gpu);
    json_close(&j, '}');
    json_open(&j, "ceilings", '{');
    json_ceilings_fields(&j, &dev->ceil);
    json_figure(&j, "peak_flops_used", dev->peak);
    json_close(&j, '}');
    json_str(&j, "peak_flops_note", dev->peak_note);
    json_str(&j, "ceilings_note", dev->ceilings_note);
    json_config(&j, cfg, dev);
    json_open(&j, "rows", '[');
    for (size_t i = 0; i < n; i++)
        json_row(&j, &rows[i]);
    json_close(&j, ']');
    json_end_document(&j);
}

/* -------------------------------------------------------------------- CSV */

/* Quoted only when needed (RFC 4180). */
static void csv_string(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void csv_num(FILE *f, double v, int have)
{
    if (have && isfinite(v))
        fprintf(f, ",%.6g", v);
    else
        fputc(',', f);
}

void bench_write_csv(FILE *f, const bench_row *rows, size_t n)
{
    fputs("status,n,batch,heads,kv_heads,head_dim,dtype,causal,path,kernel,block_m,block_n,"
          "predicted_oom,reps,time_median_s,time_min_s,time_max_s,model_flops,useful_flops,"
          "model_bytes,intensity,tflops_model,tflops_useful,gbps,predicted_s,bound,ratio,"
          "mem_allocated_bytes,mem_predicted_bytes,visited_blocks,total_blocks,speedup_ideal,"
          "speedup_roofline,speedup_measured,check,max_abs,rel_l2,tol_max_abs,tol_rel_l2,"
          "nan_count,check_ok,q_len,kv_len,splits,bandwidth_fraction,kv_lens,"
          "split_workspace_bytes,stray_outputs,detail\n", f);
    for (size_t i = 0; i < n; i++) {
        const bench_row *r = &rows[i];
        const clattn_shape *s = &r->shape;
        const int ran = r->status == BENCH_OK || r->status == BENCH_FAIL;
        const int causal = r->causal != CLATTN_CAUSAL_NONE;
        fprintf(f, "%s,%zu,%zu,%zu,%zu,%zu,%s,%s,%s,", bench_status_name(r->status), s->kv_len,
                s->batch, s->heads, s->kv_heads, s->head_dim, cli_dtype_name(s->dtype),
                cli_causal_name(r->causal), cli_path_name(r->path));
        csv_string(f, r->kernel);
        fprintf(f, ",%zu,%zu,%d,%u", r->block_m, r->block_n, r->predicted_oom,
                ran ? r->reps : 0);
        csv_num(f, r->t_median, ran);
        csv_num(f, r->t_min, ran);
        csv_num(f, r->t_max, ran);
        csv_num(f, r->est.flops, 1);
        csv_num(f, r->useful_flops, 1);
        fprintf(f, ",%llu", (unsigned long long)r->est.bytes);
        csv_num(f, r->est.intensity, 1);
        csv_num(f, r->tflops_model, ran);
        csv_num(f, r->tflops_useful, ran);
        csv_num(f, r->gbps, ran);
        csv_num(f, r->est.time_s, r->est.time_s > 0);
        fprintf(f, ",%s", clattn_bound_name(r->est.bound));
        csv_num(f, r->ratio, ran && r->ratio > 0);
        if (ran)
            fprintf(f, ",%llu", (unsigned long long)r->mem_allocated);
        else
            fputc(',', f);
        fprintf(f, ",%llu,%llu,%llu", (unsigned long long)r->mem_predicted,
                (unsigned long long)r->visited_blocks, (unsigned long long)r->total_blocks);
        csv_num(f, r->speedup_ideal, causal && r->speedup_ideal > 0);
        csv_num(f, r->speedup_roofline, causal && r->speedup_roofline > 0);
        csv_num(f, r->speedup_measured, causal && r->speedup_measured > 0);
        fputc(',', f);
        csv_string(f, r->check_kind);
        csv_num(f, r->max_abs, ran);
        csv_num(f, r->rel_l2, ran);
        csv_num(f, r->tol_abs, ran);
        csv_num(f, r->tol_rel, ran);
        fprintf(f, ",%zu,%s,%zu,%zu,", r->nan_count, ran ? (r->check_ok ? "1" : "0") : "",
                s->q_len, s->kv_len);
        if (r->path == CLATTN_PATH_FUSED)
            fprintf(f, "%u", ran ? r->splits : r->planned_splits);
        csv_num(f, r->bandwidth_fraction, ran && r->bandwidth_fraction > 0);
        fputc(',', f);
        /* Lengths apart by ';', so the cell needs no quotes. */
        for (size_t b = 0; r->kv_lens && b < s->batch; b++)
            fprintf(f, "%s%u", b ? ";" : "", r->kv_lens[b]);
        fprintf(f, ",%llu,%zu,", (unsigned long long)r->split_workspace, r->stray_count);
        csv_string(f, r->detail);
        fputc('\n', f);
    }
}
