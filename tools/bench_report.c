/*
 * clattn bench: the header and the aligned table, and the same rows as JSON
 * and CSV files, each written whole or not at all through outfile.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include "outfile.h"

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
    return c == CLATTN_CAUSAL_NONE ? "no" : "yes";
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

void bench_print_header(FILE *f, const bench_config *cfg, const bench_device *dev)
{
    fprintf(f, "clattn %s bench on %s (%s), driver %s, %s\n", clattn_version(), dev->name,
            dev->is_gpu ? "GPU" : "not a GPU", dev->driver, dev->version);
    fprintf(f, "shape: B=%zu H=%zu Hkv=%zu d=%zu %s, Nq = Nk = N =", cfg->batch, cfg->heads,
            cfg->kv_heads, cfg->head_dim, cli_dtype_name(cfg->dtype));
    for (size_t i = 0; i < cfg->n_lens; i++)
        fprintf(f, "%s%zu", i ? "," : " ", cfg->lens[i]);
    fprintf(f, "; causal = top-left mask\n");
    if (cfg->preset_note[0])
        fprintf(f, "preset seed: %s\n", cfg->preset_note);
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
    double target = cfg->reps_seconds >= 0 ? cfg->reps_seconds : (dev->is_gpu ? 1.0 : 0.2);
    fprintf(f,
            "timing: one untimed run (builds kernels; its output, poisoned with NaN before, is\n"
            "  checked), then calls until %.2g s of timed work (at least 3); each call is\n"
            "  clattn_attention_cl + clFinish on a monotonic host clock; median and min-max\n"
            "TFLOP/s: the model's FLOPs for the work the path does (naive: all Nq*Nk pairs;\n"
            "  fused: every pair of the visited tiles) / median; useful: 4*d*B*H*(visible\n"
            "  pairs) / median; GB/s: the model's bytes for the path / median\n"
            "causal x: no-mask time / causal time, same path and N; model x: total / visited\n"
            "  tiles of the fused kernel (the naive path computes all of S: 1)\n\n",
            target);
}

/* ------------------------------------------------------------------ table */

enum { COL_N, COL_CAUSAL, COL_PATH, COL_KERNEL, COL_REPS, COL_MEDIAN, COL_SPREAD, COL_TFLOPS,
       COL_USEFUL, COL_GBPS, COL_PRED, COL_BOUND, COL_RATIO, COL_MEM, COL_SPEEDUP,
       COL_MODEL_X, COL_CHECK, N_COLS };

static const struct {
    const char *title;
    int left;
} columns[N_COLS] = {
    { "N", 0 },        { "causal", 1 },  { "path", 1 },      { "kernel", 1 },
    { "reps", 0 },     { "median ms", 0 }, { "min-max ms", 0 }, { "TFLOP/s", 0 },
    { "useful", 0 },   { "GB/s", 0 },    { "pred ms", 0 },   { "bound", 1 },
    { "meas/pred", 0 }, { "memory / pred", 0 }, { "causal x", 0 }, { "model x", 0 },
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
        snprintf(buf, CELL, "%s max_abs %.1e rel_l2 %.1e (%s)%s%s",
                 r->check_ok ? "ok" : "FAIL", r->max_abs, r->rel_l2, r->check_kind,
                 r->nan_count ? ", unwritten outputs" : "", r->detail[0] ? "; " : "");
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
    snprintf(c[COL_N], CELL, "%zu", r->shape.q_len);
    snprintf(c[COL_CAUSAL], CELL, "%s", mask_name(r->causal));
    snprintf(c[COL_PATH], CELL, "%s", cli_path_name(r->path));
    snprintf(c[COL_KERNEL], CELL, "%s", r->kernel[0] ? r->kernel : "-");
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
    if (r->pred_s > 0)
        fmt_ms(r->pred_s, c[COL_PRED], CELL);
    else
        snprintf(c[COL_PRED], CELL, "n/a");
    snprintf(c[COL_BOUND], CELL, "%s",
             r->bound == CLATTN_BOUND_UNKNOWN ? "-" : clattn_bound_name(r->bound));
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
    return j == COL_N || j == COL_CAUSAL || j == COL_PATH || j == COL_PRED || j == COL_BOUND ||
           j == COL_MEM || j == COL_MODEL_X || j == COL_CHECK;
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

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* A number, or null when it is not available (`have` false) or not finite. */
static void json_num(FILE *f, double v, int have)
{
    if (have && isfinite(v))
        fprintf(f, "%.17g", v);
    else
        fputs("null", f);
}

static void json_figure(FILE *f, const char *name, clattn_figure fig, int last)
{
    fprintf(f, "    \"%s\": {\"value\": ", name);
    json_num(f, fig.value, fig.source != CLATTN_SRC_NONE && fig.value > 0);
    fprintf(f, ", \"source\": ");
    json_string(f, clattn_source_name(fig.source));
    fprintf(f, "}%s\n", last ? "" : ",");
}

static void json_row(FILE *f, const bench_row *r)
{
    const int ran = r->status == BENCH_OK || r->status == BENCH_FAIL;
    const int causal = r->causal != CLATTN_CAUSAL_NONE;
    const clattn_shape *s = &r->shape;
    fprintf(f, "    {\"status\": \"%s\", \"n\": %zu, \"batch\": %zu, \"heads\": %zu, "
               "\"kv_heads\": %zu, \"head_dim\": %zu, \"dtype\": \"%s\", \"causal\": \"%s\", "
               "\"path\": \"%s\", \"kernel\": ",
            bench_status_name(r->status), s->q_len, s->batch, s->heads, s->kv_heads,
            s->head_dim, cli_dtype_name(s->dtype), cli_causal_name(r->causal),
            cli_path_name(r->path));
    json_string(f, r->kernel);
    fprintf(f, ", \"block_m\": %zu, \"block_n\": %zu, \"predicted_oom\": %s, \"detail\": ",
            r->block_m, r->block_n, r->predicted_oom ? "true" : "false");
    json_string(f, r->detail);
    fprintf(f, ",\n     \"reps\": %u, \"time_median_s\": ", ran ? r->reps : 0);
    json_num(f, r->t_median, ran);
    fprintf(f, ", \"time_min_s\": ");
    json_num(f, r->t_min, ran);
    fprintf(f, ", \"time_max_s\": ");
    json_num(f, r->t_max, ran);
    fprintf(f, ",\n     \"model_flops\": ");
    json_num(f, r->model_flops, 1);
    fprintf(f, ", \"useful_flops\": ");
    json_num(f, r->useful_flops, 1);
    fprintf(f, ", \"model_bytes\": %llu, \"intensity\": ", (unsigned long long)r->model_bytes);
    json_num(f, r->intensity, 1);
    fprintf(f, ", \"tflops_model\": ");
    json_num(f, r->tflops_model, ran);
    fprintf(f, ", \"tflops_useful\": ");
    json_num(f, r->tflops_useful, ran);
    fprintf(f, ", \"gbps\": ");
    json_num(f, r->gbps, ran);
    fprintf(f, ",\n     \"predicted_s\": ");
    json_num(f, r->pred_s, r->pred_s > 0);
    fprintf(f, ", \"predicted_memory_s\": ");
    json_num(f, r->pred_memory_s, r->pred_memory_s > 0);
    fprintf(f, ", \"predicted_compute_s\": ");
    json_num(f, r->pred_compute_s, r->pred_compute_s > 0);
    fprintf(f, ", \"bound\": \"%s\", \"ratio\": ", clattn_bound_name(r->bound));
    json_num(f, r->ratio, ran && r->ratio > 0);
    fprintf(f, ",\n     \"mem_allocated_bytes\": ");
    json_num(f, (double)r->mem_allocated, ran);
    fprintf(f, ", \"mem_predicted_bytes\": %llu, \"visited_blocks\": %llu, "
               "\"total_blocks\": %llu, \"speedup_ideal\": ",
            (unsigned long long)r->mem_predicted, (unsigned long long)r->visited_blocks,
            (unsigned long long)r->total_blocks);
    json_num(f, r->speedup_ideal, causal && r->speedup_ideal > 0);
    fprintf(f, ", \"speedup_roofline\": ");
    json_num(f, r->speedup_roofline, causal && r->speedup_roofline > 0);
    fprintf(f, ", \"speedup_measured\": ");
    json_num(f, r->speedup_measured, causal && r->speedup_measured > 0);
    fprintf(f, ",\n     \"check\": ");
    json_string(f, r->check_kind);
    fprintf(f, ", \"max_abs\": ");
    json_num(f, r->max_abs, ran);
    fprintf(f, ", \"rel_l2\": ");
    json_num(f, r->rel_l2, ran);
    fprintf(f, ", \"tol_max_abs\": ");
    json_num(f, r->tol_abs, ran);
    fprintf(f, ", \"tol_rel_l2\": ");
    json_num(f, r->tol_rel, ran);
    fprintf(f, ", \"nan_count\": %zu, \"check_ok\": %s}", r->nan_count,
            ran ? (r->check_ok ? "true" : "false") : "null");
}

int bench_write_json(const char *path, const bench_config *cfg, const bench_device *dev,
                     const bench_row *rows, size_t n, char *err, size_t errcap)
{
    outfile o;
    if (outfile_open(&o, path, err, errcap))
        return -1;
    FILE *f = o.stream;
    fprintf(f, "{\n  \"tool\": \"clattn bench\", \"version\": ");
    json_string(f, clattn_version());
    fprintf(f, ",\n  \"device\": {\"name\": ");
    json_string(f, dev->name);
    fprintf(f, ", \"driver\": ");
    json_string(f, dev->driver);
    fprintf(f, ", \"version\": ");
    json_string(f, dev->version);
    fprintf(f, ", \"is_gpu\": %s},\n  \"ceilings\": {\n", dev->is_gpu ? "true" : "false");
    json_figure(f, "global_mem_bytes", dev->ceil.global_mem_bytes, 0);
    json_figure(f, "max_alloc_bytes", dev->ceil.max_alloc_bytes, 0);
    json_figure(f, "cache_bytes", dev->ceil.cache_bytes, 0);
    json_figure(f, "bandwidth", dev->ceil.bandwidth, 0);
    json_figure(f, "flops_f32", dev->ceil.flops_f32, 0);
    json_figure(f, "flops_f16", dev->ceil.flops_f16, 0);
    json_figure(f, "launch_latency_s", dev->ceil.launch_latency_s, 0);
    json_figure(f, "peak_flops_used", dev->peak, 1);
    fprintf(f, "  },\n  \"peak_flops_note\": ");
    json_string(f, dev->peak_note);
    fprintf(f, ",\n  \"config\": {\"batch\": %zu, \"heads\": %zu, \"kv_heads\": %zu, "
               "\"head_dim\": %zu, \"dtype\": \"%s\", \"lens\": [",
            cfg->batch, cfg->heads, cfg->kv_heads, cfg->head_dim, cli_dtype_name(cfg->dtype));
    for (size_t i = 0; i < cfg->n_lens; i++)
        fprintf(f, "%s%zu", i ? ", " : "", cfg->lens[i]);
    fprintf(f, "], \"preset\": %s, \"preset_note\": ", cfg->preset_seed ? "\"seed\"" : "null");
    json_string(f, cfg->preset_note);
    fprintf(f, ", \"reps_seconds\": ");
    json_num(f, cfg->reps_seconds >= 0 ? cfg->reps_seconds : (dev->is_gpu ? 1.0 : 0.2), 1);
    fprintf(f, ", \"confirm_oom\": %s, \"seed\": %llu},\n  \"rows\": [\n",
            cfg->confirm_oom ? "true" : "false", (unsigned long long)cfg->seed);
    for (size_t i = 0; i < n; i++) {
        json_row(f, &rows[i]);
        fputs(i + 1 < n ? ",\n" : "\n", f);
    }
    fputs("  ]\n}\n", f);
    return outfile_commit(&o, err, errcap);
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

int bench_write_csv(const char *path, const bench_row *rows, size_t n, char *err, size_t errcap)
{
    outfile o;
    if (outfile_open(&o, path, err, errcap))
        return -1;
    FILE *f = o.stream;
    fputs("status,n,batch,heads,kv_heads,head_dim,dtype,causal,path,kernel,block_m,block_n,"
          "predicted_oom,reps,time_median_s,time_min_s,time_max_s,model_flops,useful_flops,"
          "model_bytes,intensity,tflops_model,tflops_useful,gbps,predicted_s,bound,ratio,"
          "mem_allocated_bytes,mem_predicted_bytes,visited_blocks,total_blocks,speedup_ideal,"
          "speedup_roofline,speedup_measured,check,max_abs,rel_l2,tol_max_abs,tol_rel_l2,"
          "nan_count,check_ok,detail\n", f);
    for (size_t i = 0; i < n; i++) {
        const bench_row *r = &rows[i];
        const clattn_shape *s = &r->shape;
        const int ran = r->status == BENCH_OK || r->status == BENCH_FAIL;
        const int causal = r->causal != CLATTN_CAUSAL_NONE;
        fprintf(f, "%s,%zu,%zu,%zu,%zu,%zu,%s,%s,%s,", bench_status_name(r->status), s->q_len,
                s->batch, s->heads, s->kv_heads, s->head_dim, cli_dtype_name(s->dtype),
                cli_causal_name(r->causal), cli_path_name(r->path));
        csv_string(f, r->kernel);
        fprintf(f, ",%zu,%zu,%d,%u", r->block_m, r->block_n, r->predicted_oom,
                ran ? r->reps : 0);
        csv_num(f, r->t_median, ran);
        csv_num(f, r->t_min, ran);
        csv_num(f, r->t_max, ran);
        csv_num(f, r->model_flops, 1);
        csv_num(f, r->useful_flops, 1);
        fprintf(f, ",%llu", (unsigned long long)r->model_bytes);
        csv_num(f, r->intensity, 1);
        csv_num(f, r->tflops_model, ran);
        csv_num(f, r->tflops_useful, ran);
        csv_num(f, r->gbps, ran);
        csv_num(f, r->pred_s, r->pred_s > 0);
        fprintf(f, ",%s", clattn_bound_name(r->bound));
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
        fprintf(f, ",%zu,%s,", r->nan_count, ran ? (r->check_ok ? "1" : "0") : "");
        csv_string(f, r->detail);
        fputc('\n', f);
    }
    return outfile_commit(&o, err, errcap);
}
