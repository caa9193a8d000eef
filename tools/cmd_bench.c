/*
 * clattn bench: the naive and fused paths over sequence lengths, with and
 * without the causal mask, each row measured beside the model's prediction
 * (time, bytes, FLOPs, memory, causal speedup) and checked against the CPU
 * reference. Rows the model predicts will not fit are reported, not run.
 *
 * Exit status: 0 every row that ran passed its check (rows predicted out of
 * memory do not count against it), 1 a check failed or a row could not run,
 * 2 a usage error.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"
#include "commands.h"
#include "outfile.h"

#define EXIT_USAGE 2

/* The seed's experiment (docs/MODEL.md): B=8, H=32, d=128, fp16. */
static const size_t seed_lens[] = { 1024, 4096, 16384 };
#define SEED_BATCH 8
#define SEED_HEADS 32
#define SEED_DIM 128

/* On a CPU device the seed shape would take hours (a call at N = 16384 alone
 * is 35 TFLOP), so the preset measures one batch element of two heads at the
 * lengths below (about two minutes on PoCL with two cores) and shows the full
 * seed shape as model-only rows. */
#define CPU_BATCH 1
#define CPU_HEADS 2
static const size_t cpu_lens[] = { 1024, 4096 };

/* Options as given; 0 / NULL means not given. */
struct bench_args {
    size_t batch, heads, kv_heads, head_dim;
    const char *dtype, *lens, *causal, *paths, *preset;
    int confirm_oom;
    double reps_seconds;
    size_t seed;
    bench_config cfg;
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: clattn bench [-B 8 -H 32 -d 128 -N 1024,4096,16384] [--kv-heads H]\n"
            "                    [--dtype fp16|fp32] [--causal both|yes|no]\n"
            "                    [--path naive,fused] [--device SEL] [--json FILE]\n"
            "                    [--csv FILE] [--reps-seconds S] [--confirm-oom]\n"
            "                    [--preset seed] [--seed N]\n"
            "\n"
            "Runs attention for every (N, mask, path) on random inputs (Nq = Nk = N) and\n"
            "prints, per row: median time and spread, TFLOP/s and GB/s against the\n"
            "model's FLOPs and bytes, the model's roofline time and the ratio, device\n"
            "memory allocated vs predicted, the causal speedup vs the model's tile count,\n"
            "and a check against the CPU reference (max_abs, rel_l2, ok/FAIL).\n"
            "\n"
            "  -B, -H, -d, -N    batch, heads, head dim, sequence lengths (comma list);\n"
            "                    default: the seed's 8, 32, 128, 1024,4096,16384\n"
            "  --kv-heads H      key/value heads (grouped-query attention; default H)\n"
            "  --dtype T         fp16 (default) or fp32\n"
            "  --causal M        both (default), yes (top-left mask) or no\n"
            "  --path P          naive,fused (default), naive, fused\n"
            "  --device SEL      device index or name substring\n"
            "  --json FILE       write every field as JSON (atomically; a character\n"
            "                    device or FIFO such as /dev/stdout is written in\n"
            "                    place, and the tables then go to stderr)\n"
            "  --csv FILE        write the rows as CSV (the same way)\n"
            "  --reps-seconds S  timed work per row (default 1 on a GPU, 0.2 otherwise;\n"
            "                    at least 3 repetitions)\n"
            "  --kernel K        fused kernel: auto (default) or a name clattn devices lists\n"
            "  --confirm-oom     run rows predicted not to fit anyway, and report what\n"
            "                    happened\n"
            "  --preset seed     the seed's experiment: B=8 H=32 d=128 fp16, N =\n"
            "                    1024,4096,16384, both masks and paths. On a device that is\n"
            "                    not a GPU it runs B=1 H=2 at N = 1024,4096 instead and adds\n"
            "                    the full shape as model-only rows. Options given beside it\n"
            "                    win. Plain `clattn bench` is this preset.\n"
            "  --seed N          random inputs (default 1)\n");
}

static int usage_error(const char *fmt, const char *what)
{
    char msg[256];
    snprintf(msg, sizeof msg, fmt, what);
    cli_error("bench: %s (see clattn bench --help)", msg);
    return EXIT_USAGE;
}

static int parse_positive(const char *s, size_t *out, const char *name)
{
    if (cli_parse_size(s, out) < 0 || *out == 0)
        return usage_error("%s wants a positive integer", name);
    return 0;
}

/* Returns 0, 1 after --help, or EXIT_USAGE. */
static int parse_args(int argc, char **argv, struct bench_args *a)
{
    static const struct option opts[] = {
        { "kv-heads", required_argument, 0, 'K' }, { "dtype", required_argument, 0, 't' },
        { "causal", required_argument, 0, 'c' },   { "path", required_argument, 0, 'p' },
        { "device", required_argument, 0, 'D' },   { "json", required_argument, 0, 'j' },
        { "csv", required_argument, 0, 'v' },      { "reps-seconds", required_argument, 0, 'r' },
        { "confirm-oom", no_argument, 0, 'o' },    { "preset", required_argument, 0, 'P' },
        { "seed", required_argument, 0, 's' },     { "help", no_argument, 0, 'h' },
        { "kernel", required_argument, 0, 'k' },
        { 0, 0, 0, 0 },
    };
    memset(a, 0, sizeof *a);
    a->reps_seconds = -1;
    a->seed = 1;
    opterr = 0;
    int opt, rc = 0;
    while (rc == 0 && (opt = getopt_long(argc, argv, ":B:H:d:N:h", opts, NULL)) != -1) {
        switch (opt) {
        case 'B': rc = parse_positive(optarg, &a->batch, "-B"); break;
        case 'H': rc = parse_positive(optarg, &a->heads, "-H"); break;
        case 'd': rc = parse_positive(optarg, &a->head_dim, "-d"); break;
        case 'K': rc = parse_positive(optarg, &a->kv_heads, "--kv-heads"); break;
        case 'N': a->lens = optarg; break;
        case 't': a->dtype = optarg; break;
        case 'c': a->causal = optarg; break;
        case 'p': a->paths = optarg; break;
        case 'D': a->cfg.device = optarg; break;
        case 'j': a->cfg.json_path = optarg; break;
        case 'v': a->cfg.csv_path = optarg; break;
        case 'o': a->confirm_oom = 1; break;
        case 'P': a->preset = optarg; break;
        case 'k':
            if (cli_parse_fused_kernel(optarg, &a->cfg.fused_kernel) < 0)
                rc = usage_error("bad --kernel: %s", clattn_last_error_detail());
            break;
        case 's':
            if (cli_parse_size(optarg, &a->seed) < 0)
                rc = usage_error("bad --seed '%s'", optarg);
            break;
        case 'r':
            if (cli_parse_double(optarg, &a->reps_seconds) < 0 || !(a->reps_seconds >= 0) ||
                a->reps_seconds > 3600)
                rc = usage_error("--reps-seconds wants 0..3600 seconds, not '%s'", optarg);
            break;
        case 'h': usage(stdout); return 1;
        case ':': return usage_error("option %s needs a value", argv[optind - 1]);
        default: return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (rc == 0 && optind < argc)
        rc = usage_error("unexpected argument '%s'", argv[optind]);
    if (rc == 0 && a->preset && strcmp(a->preset, "seed"))
        rc = usage_error("unknown --preset '%s' (known: seed)", a->preset);
    return rc;
}

static int parse_masks(const char *s, int *out)
{
    if (!s || !strcmp(s, "both"))
        *out = 3;
    else if (!strcmp(s, "no") || !strcmp(s, "none"))
        *out = 1;
    else if (!strcmp(s, "yes") || !strcmp(s, "top-left"))
        *out = 2;
    else
        return usage_error("--causal wants both, yes or no, not '%s'", s);
    return 0;
}

static int parse_paths(const char *s, int *out)
{
    char buf[64];
    if (!s || !strcmp(s, "both")) {
        *out = 3;
        return 0;
    }
    if (strlen(s) >= sizeof buf)
        return usage_error("bad --path '%.40s'", s);
    strcpy(buf, s);
    *out = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (!strcmp(tok, "naive"))
            *out |= 1;
        else if (!strcmp(tok, "fused"))
            *out |= 2;
        else
            return usage_error("--path wants naive, fused or both, not '%s'", s);
    }
    return *out ? 0 : usage_error("bad --path '%s'", s);
}

/* An output that cannot be written is found out now, not after minutes of
 * benchmarking; the write itself still has the last word. */
static int check_output(const char *path, const char *option)
{
    if (!path)
        return 0;
    if (!*path)
        return usage_error("bad %s file name", option);
    char err[PATH_MAX + 256];
    if (outfile_check(path, err, sizeof err)) {
        cli_error("bench: %s", err);
        return 1;
    }
    return 0;
}

/* Settles the configuration: the preset (or the seed defaults), adapted to
 * the device, then the options given, which win. */
static int resolve_config(struct bench_args *a, const bench_device *dev, int preset)
{
    bench_config *c = &a->cfg;
    const int scaled = preset && !dev->is_gpu;
    c->preset_seed = preset;
    c->batch = a->batch ? a->batch : (scaled ? CPU_BATCH : SEED_BATCH);
    c->heads = a->heads ? a->heads : (scaled ? CPU_HEADS : SEED_HEADS);
    c->kv_heads = a->kv_heads ? a->kv_heads : c->heads;
    c->head_dim = a->head_dim ? a->head_dim : SEED_DIM;
    c->dtype = CLATTN_F16;
    if (a->dtype && cli_parse_dtype(a->dtype, &c->dtype) < 0)
        return usage_error("--dtype wants fp16 or fp32, not '%s'", a->dtype);
    int rc = parse_masks(a->causal, &c->masks);
    if (rc == 0)
        rc = parse_paths(a->paths, &c->paths);
    if (rc)
        return rc;
    if (a->lens) {
        if (cli_parse_size_list(a->lens, c->lens, BENCH_MAX_LENS, &c->n_lens) < 0)
            return usage_error("-N wants up to 32 comma-separated lengths, not '%s'", a->lens);
    } else {
        const size_t *lens = scaled ? cpu_lens : seed_lens;
        c->n_lens = scaled ? sizeof cpu_lens / sizeof *cpu_lens
                           : sizeof seed_lens / sizeof *seed_lens;
        memcpy(c->lens, lens, c->n_lens * sizeof *lens);
    }
    for (size_t i = 0; i < c->n_lens; i++) {
        clattn_shape s = { c->batch, c->heads, c->kv_heads, c->lens[i], c->lens[i],
                           c->head_dim, c->dtype };
        if (c->lens[i] == 0 || clattn_shape_check(&s) < 0) {
            cli_error("bench: bad shape B=%zu H=%zu Hkv=%zu N=%zu d=%zu: %s", c->batch,
                      c->heads, c->kv_heads, c->lens[i], c->head_dim,
                      c->lens[i] ? clattn_last_error_detail() : "N must be positive");
            return EXIT_USAGE;
        }
    }
    c->reps_seconds = a->reps_seconds;
    c->confirm_oom = a->confirm_oom;
    c->seed = a->seed;
    if (scaled) {
        char lens[160] = "";
        for (size_t i = 0, used = 0; i < c->n_lens && used < sizeof lens; i++)
            used += (size_t)snprintf(lens + used, sizeof lens - used, "%s%zu", i ? "," : "",
                                     c->lens[i]);
        snprintf(c->preset_note, sizeof c->preset_note,
                 "the device is not a GPU, so B=%zu H=%zu at N = %s are measured (the seed's "
                 "B=8 H=32 is 35 TFLOP per call at N = 16384: hours on a CPU); the full seed "
                 "shape follows as model-only rows, OOM verdicts included",
                 c->batch, c->heads, lens);
    } else if (preset)
        snprintf(c->preset_note, sizeof c->preset_note, "the seed's shape, unscaled");
    return 0;
}

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
    int rc = clattn_device_ceilings(ctx, &dev->ceil);
    if (rc < 0)
        return rc;
    if (dtype == CLATTN_F32) {
        dev->peak = dev->ceil.flops_f32;
        snprintf(dev->peak_note, sizeof dev->peak_note, "fp32 FLOP/s");
    } else if (dev->ceil.flops_f16.source != CLATTN_SRC_NONE) {
        dev->peak = dev->ceil.flops_f16;
        snprintf(dev->peak_note, sizeof dev->peak_note, "fp16 FLOP/s");
    } else if (dev->ceil.flops_f32.source != CLATTN_SRC_NONE) {
        /* Half storage, float arithmetic: without an fp16 figure the float
         * rate is the roof the portable kernels actually meet. */
        dev->peak = dev->ceil.flops_f32;
        snprintf(dev->peak_note, sizeof dev->peak_note,
                 "fp32 FLOP/s standing in for fp16 (no fp16 figure; fp16 here is half "
                 "storage with float arithmetic)");
    } else {
        snprintf(dev->peak_note, sizeof dev->peak_note, "no FLOP/s figure: predictions n/a");
    }
    return 0;
}

/* ------------------------------------------------------------------- rows */

static size_t build_rows(const bench_config *c, bench_row *rows)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n_lens; i++)
        for (int m = 0; m < 2; m++)
            for (int p = 0; p < 2; p++) {
                if (!(c->masks & (1 << m)) || !(c->paths & (1 << p)))
                    continue;
                bench_row *r = &rows[n++];
                memset(r, 0, sizeof *r);
                r->shape = (clattn_shape){ c->batch, c->heads, c->kv_heads, c->lens[i],
                                           c->lens[i], c->head_dim, c->dtype };
                r->causal = m ? CLATTN_CAUSAL_TOP_LEFT : CLATTN_CAUSAL_NONE;
                r->path = p ? CLATTN_PATH_FUSED : CLATTN_PATH_NAIVE;
                r->fused_kernel = c->fused_kernel;
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

static void progress(size_t i, size_t n, const bench_row *r)
{
    fprintf(stderr, "[%zu/%zu] N=%zu %s %s\n", i + 1, n, r->shape.q_len,
            r->causal == CLATTN_CAUSAL_NONE ? "no-mask" : "causal", cli_path_name(r->path));
}

/* The rows of one N share their inputs. Returns CLATTN_EDEVLOST when the
 * device is gone. */
static int run_length(clattn_ctx *ctx, const bench_config *cfg, const bench_device *dev,
                      bench_row *rows, size_t n, size_t first, size_t total)
{
    int want = 0;
    for (size_t i = 0; i < n; i++)
        want |= !rows[i].predicted_oom || cfg->confirm_oom;
    if (!want) {
        for (size_t i = 0; i < n; i++) {
            progress(first + i, total, &rows[i]);
            rows[i].status = BENCH_OOM;
        }
        return 0;
    }
    char detail[320];
    if (!cfg->confirm_oom && bench_inputs_too_big(dev, &rows[0].shape, detail, sizeof detail)) {
        for (size_t i = 0; i < n; i++)
            progress(first + i, total, &rows[i]);
        set_status(rows, n, BENCH_OOM, 1, detail);
        return 0;
    }
    bench_inputs in;
    fprintf(stderr, "       N=%zu: generating and uploading inputs\n", rows[0].shape.q_len);
    int rc = bench_inputs_make(ctx, &rows[0].shape, cfg->seed, &in, detail, sizeof detail);
    if (rc < 0) {
        /* Out of memory confirms a prediction; anywhere else it is an error. */
        for (size_t i = 0; i < n; i++)
            set_status(&rows[i], 1, rc == CLATTN_EOOM && rows[i].predicted_oom
                                        ? BENCH_OOM_CONFIRMED : BENCH_ERROR, 0, detail);
        bench_inputs_free(&in);
        return 0;
    }
    for (size_t i = 0; i < n && rc != CLATTN_EDEVLOST; i++) {
        progress(first + i, total, &rows[i]);
        if (rows[i].predicted_oom && !cfg->confirm_oom) {
            rows[i].status = BENCH_OOM;
            continue;
        }
        rc = bench_run_row(ctx, cfg, dev, &in, &rows[i]);
    }
    bench_inputs_free(&in);
    return rc == CLATTN_EDEVLOST ? rc : 0;
}

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
                u->shape.q_len == c->shape.q_len && c->t_median > 0)
                c->speedup_measured = u->t_median / c->t_median;
        }
    }
}

/* The seed's full shape, model only: the OOM verdicts a scaled-down run
 * cannot show. */
static size_t model_only_rows(clattn_ctx *ctx, const bench_config *cfg, const bench_device *dev,
                              bench_row *rows)
{
    bench_config full = *cfg;
    full.batch = SEED_BATCH;
    full.heads = SEED_HEADS;
    full.kv_heads = SEED_HEADS;
    full.head_dim = SEED_DIM;
    full.n_lens = sizeof seed_lens / sizeof *seed_lens;
    memcpy(full.lens, seed_lens, sizeof seed_lens);
    size_t n = build_rows(&full, rows);
    for (size_t i = 0; i < n; i++) {
        if (bench_predict_row(ctx, dev, &rows[i]) < 0)
            snprintf(rows[i].detail, sizeof rows[i].detail, "%s", clattn_last_error_detail());
        rows[i].status = BENCH_PREDICTED;
    }
    return n;
}

static int write_outputs(const bench_config *cfg, const bench_device *dev, const bench_row *rows,
                         size_t n)
{
    int failed = 0;
    char err[PATH_MAX + 256];
    if (cfg->json_path && bench_write_json(cfg->json_path, cfg, dev, rows, n, err, sizeof err)) {
        cli_error("bench: %s", err);
        failed = 1;
    }
    if (cfg->csv_path && bench_write_csv(cfg->csv_path, rows, n, err, sizeof err)) {
        cli_error("bench: %s", err);
        failed = 1;
    }
    return failed;
}

/* The header and the tables go to stdout, unless the JSON or the CSV does
 * (--json /dev/stdout on a pipe): then to stderr, so the data stays clean. */
static FILE *report_stream(const bench_config *cfg)
{
    return outfile_is_stdout(cfg->json_path) || outfile_is_stdout(cfg->csv_path) ? stderr
                                                                                  : stdout;
}

static int run_bench(clattn_ctx *ctx, const bench_config *cfg, const bench_device *dev,
                     FILE *report)
{
    const size_t per_len = 4, cap = (BENCH_MAX_LENS + 3) * per_len;
    bench_row *rows = calloc(cap, sizeof *rows);
    if (!rows) {
        cli_error("bench: out of memory");
        return 1;
    }
    size_t n = build_rows(cfg, rows);
    for (size_t i = 0; i < n; i++) {
        int rc = bench_predict_row(ctx, dev, &rows[i]);
        if (rc < 0) {
            cli_lib_error("bench: model", rc);
            free(rows);
            return 1;
        }
    }
    int lost = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && rows[j].shape.q_len == rows[i].shape.q_len)
            j++;
        if (lost)
            set_status(rows + i, j - i, BENCH_SKIPPED, 0, "the device context was lost earlier");
        else
            lost = run_length(ctx, cfg, dev, rows + i, j - i, i, n) == CLATTN_EDEVLOST;
        i = j;
    }
    measured_speedups(rows, n);
    bench_print_table(report, rows, n);
    size_t total = n;
    if (cfg->preset_seed && !dev->is_gpu) {
        total += model_only_rows(ctx, cfg, dev, rows + n);
        fprintf(report,
                "\nthe seed's full shape B=%d H=%d d=%d %s on this device: model only, not run\n",
                SEED_BATCH, SEED_HEADS, SEED_DIM, cli_dtype_name(cfg->dtype));
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
    struct bench_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc == 1 ? 0 : rc;
    if (check_output(a.cfg.json_path, "--json") || check_output(a.cfg.csv_path, "--csv"))
        return 1;
    /* Plain `clattn bench` is the seed preset. */
    const int preset = a.preset || (!a.batch && !a.heads && !a.head_dim && !a.lens);
    /* Usage errors before a device is opened; the device may still scale
     * the preset's shape below. */
    struct bench_args check = a;
    rc = resolve_config(&check, &(bench_device){ .is_gpu = 1 }, preset);
    if (rc)
        return rc;
    clattn_ctx *ctx;
    if (cli_open(a.cfg.device, &ctx) < 0)
        return 1;
    bench_device dev;
    rc = describe_device(ctx, check.cfg.dtype, &dev);
    if (rc < 0) {
        cli_lib_error("bench: device ceilings", rc);
        clattn_close(&ctx);
        return 1;
    }
    rc = resolve_config(&a, &dev, preset);
    if (rc == 0) {
        FILE *report = report_stream(&a.cfg);
        bench_print_header(report, &a.cfg, &dev);
        fflush(report);
        rc = run_bench(ctx, &a.cfg, &dev, report);
    }
    clattn_close(&ctx);
    return rc;
}
