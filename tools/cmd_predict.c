/*
 * clattn predict: the byte model's tables (docs/MODEL.md) for a shape on a
 * device. Device figures come from the command line, a preset (the seed's
 * round numbers), or the device itself, and every figure is printed with
 * where it came from, so a prediction can be traced back to its inputs.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

#define MAX_LENS 64
#define DEFAULT_TILE 64
#define CELL 64 /* bytes of one formatted table cell */

static const char usage_text[] =
    "usage: clattn predict [options]\n"
    "\n"
    "Prints the byte model of naive vs fused attention: Q1 traffic per head and\n"
    "for all heads, Q2 where it stops fitting, Q3 intensity and the roofline,\n"
    "Q4 causal block accounting. Defaults are the seed's shape.\n"
    "\n"
    "shape\n"
    "  -B, --batch B          batch (8)\n"
    "  -H, --heads H          query heads (32)\n"
    "      --kv-heads HKV     key/value heads, divides H (H)\n"
    "  -d, --head-dim D       head dimension (128)\n"
    "  -N, --len LIST         sequence lengths, Nq = Nk (1024,4096,16384)\n"
    "      --nq NQ --nk NK    one pair of unequal lengths instead of -N\n"
    "      --dtype T          fp16 | fp32 (fp16)\n"
    "      --causal[=MODE]    top-left (the default MODE) | bottom-right | none\n"
    "      --block-m M        fused query tile (the device's choice, else 64)\n"
    "      --block-n N        fused key tile (the device's choice, else 64)\n"
    "      --workspace BYTES  naive path's extra workspace, e.g. CLBlast's (0)\n"
    "device figures (each overrides the device's or the preset's)\n"
    "      --device SEL       read the figures of this device (index or name)\n"
    "      --preset seed      the seed's figures: 256 MiB cache, 192 GiB,\n"
    "                         1000 TFLOP/s and 5 TB/s (ridge 200 FLOP/byte)\n"
    "      --capacity BYTES   device memory (K/M/G/T binary, KB/MB/GB/TB decimal)\n"
    "      --max-alloc BYTES  largest single buffer\n"
    "      --cache BYTES      last-level cache\n"
    "      --bandwidth RATE   bytes/s (5e12, 5T, 3.35TB)\n"
    "      --peak RATE        FLOP/s in the dtype (1e15, 989T)\n"
    "      --launch-latency S seconds per kernel launch\n"
    "output\n"
    "      --json             one JSON object instead of tables\n"
    "  -h, --help             this text\n"
    "\n"
    "Without --device, the default device is opened unless --preset or all of\n"
    "--capacity, --cache, --bandwidth and --peak are given.\n"
    "Reproduce the seed: clattn predict --preset seed\n";

/* ------------------------------------------------------------- arguments */

/* A device figure and where it came from. */
struct figures {
    clattn_figure capacity, max_alloc, cache, bandwidth, peak, latency;
};

struct predict_args {
    clattn_shape shape;  /* lengths come from lens[] or nq/nk */
    size_t lens[MAX_LENS];
    size_t n_lens;
    size_t nq, nk;       /* 0: not given */
    int lens_given;
    clattn_causal causal;
    int causal_given;
    size_t block_m, block_n; /* 0: the device's or the default */
    uint64_t workspace;
    const char *device;
    int preset;
    struct figures given;
    int json;
};

enum opt_id {
    OPT_BATCH, OPT_HEADS, OPT_KV_HEADS, OPT_HEAD_DIM, OPT_LEN, OPT_NQ, OPT_NK, OPT_DTYPE,
    OPT_CAUSAL, OPT_BLOCK_M, OPT_BLOCK_N, OPT_WORKSPACE, OPT_DEVICE, OPT_PRESET,
    OPT_CAPACITY, OPT_MAX_ALLOC, OPT_CACHE, OPT_BANDWIDTH, OPT_PEAK, OPT_LATENCY, OPT_JSON,
    OPT_HELP,
};

enum { ARG_NONE, ARG_REQUIRED, ARG_OPTIONAL };

static const struct option_spec {
    const char *name;
    char short_name;
    int arg;
    enum opt_id id;
} options[] = {
    { "batch", 'B', ARG_REQUIRED, OPT_BATCH },
    { "heads", 'H', ARG_REQUIRED, OPT_HEADS },
    { "kv-heads", 0, ARG_REQUIRED, OPT_KV_HEADS },
    { "head-dim", 'd', ARG_REQUIRED, OPT_HEAD_DIM },
    { "len", 'N', ARG_REQUIRED, OPT_LEN },
    { "nq", 0, ARG_REQUIRED, OPT_NQ },
    { "nk", 0, ARG_REQUIRED, OPT_NK },
    { "dtype", 0, ARG_REQUIRED, OPT_DTYPE },
    { "causal", 0, ARG_OPTIONAL, OPT_CAUSAL },
    { "block-m", 0, ARG_REQUIRED, OPT_BLOCK_M },
    { "block-n", 0, ARG_REQUIRED, OPT_BLOCK_N },
    { "workspace", 0, ARG_REQUIRED, OPT_WORKSPACE },
    { "device", 0, ARG_REQUIRED, OPT_DEVICE },
    { "preset", 0, ARG_REQUIRED, OPT_PRESET },
    { "capacity", 0, ARG_REQUIRED, OPT_CAPACITY },
    { "max-alloc", 0, ARG_REQUIRED, OPT_MAX_ALLOC },
    { "cache", 0, ARG_REQUIRED, OPT_CACHE },
    { "bandwidth", 0, ARG_REQUIRED, OPT_BANDWIDTH },
    { "peak", 0, ARG_REQUIRED, OPT_PEAK },
    { "launch-latency", 0, ARG_REQUIRED, OPT_LATENCY },
    { "json", 0, ARG_NONE, OPT_JSON },
    { "help", 'h', ARG_NONE, OPT_HELP },
};

static void default_args(struct predict_args *a)
{
    static const size_t seed_lens[] = { 1024, 4096, 16384 };
    memset(a, 0, sizeof *a);
    a->shape = (clattn_shape){ .batch = 8, .heads = 32, .head_dim = 128, .dtype = CLATTN_F16 };
    memcpy(a->lens, seed_lens, sizeof seed_lens);
    a->n_lens = 3;
    a->causal = CLATTN_CAUSAL_NONE;
}

/* A rate with an optional decimal prefix (k, M, G, T, P) and an optional
 * unit: "5e12", "5T", "3.35TB/s", "989TFLOP/s". Rates are decimal, unlike
 * the binary byte sizes of cli_parse_bytes. */
static int parse_rate(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || !(v >= 0) || !isfinite(v))
        return -1;
    static const char prefixes[] = "kMGTP";
    static const double scale[] = { 1e3, 1e6, 1e9, 1e12, 1e15 };
    const char *p = *end ? strchr(prefixes, *end) : NULL;
    if (p) {
        v *= scale[p - prefixes];
        end++;
    }
    if (*end && strcmp(end, "B") && strcmp(end, "B/s") && strcmp(end, "FLOP/s") &&
        strcmp(end, "FLOPS"))
        return -1;
    *out = v;
    return 0;
}

static int parse_positive(const char *s, size_t *out)
{
    return cli_parse_size(s, out) < 0 || *out == 0 ? -1 : 0;
}

static void give(clattn_figure *f, double value)
{
    f->value = value;
    f->source = CLATTN_SRC_GIVEN;
}

static int give_bytes(clattn_figure *f, const char *s)
{
    uint64_t v;
    if (cli_parse_bytes(s, &v) < 0)
        return -1;
    give(f, (double)v);
    return 0;
}

static int give_rate(clattn_figure *f, const char *s)
{
    double v;
    if (parse_rate(s, &v) < 0)
        return -1;
    give(f, v);
    return 0;
}

static int give_seconds(clattn_figure *f, const char *s)
{
    double v;
    if (cli_parse_double(s, &v) < 0 || !(v >= 0))
        return -1;
    give(f, v);
    return 0;
}

/* Applies one option; -1 when its value does not parse. */
static int apply_option(struct predict_args *a, enum opt_id id, const char *v)
{
    clattn_shape *s = &a->shape;
    switch (id) {
    case OPT_BATCH: return parse_positive(v, &s->batch);
    case OPT_HEADS: return parse_positive(v, &s->heads);
    case OPT_KV_HEADS: return parse_positive(v, &s->kv_heads);
    case OPT_HEAD_DIM: return parse_positive(v, &s->head_dim);
    case OPT_LEN:
        a->lens_given = 1;
        if (cli_parse_size_list(v, a->lens, MAX_LENS, &a->n_lens) < 0)
            return -1;
        for (size_t i = 0; i < a->n_lens; i++)
            if (!a->lens[i])
                return -1;
        return 0;
    case OPT_NQ: return parse_positive(v, &a->nq);
    case OPT_NK: return parse_positive(v, &a->nk);
    case OPT_DTYPE: return cli_parse_dtype(v, &s->dtype);
    case OPT_CAUSAL: a->causal_given = 1; return cli_parse_causal(v, &a->causal);
    case OPT_BLOCK_M: return parse_positive(v, &a->block_m);
    case OPT_BLOCK_N: return parse_positive(v, &a->block_n);
    case OPT_WORKSPACE: return cli_parse_bytes(v, &a->workspace);
    case OPT_DEVICE: a->device = v; return 0;
    case OPT_PRESET: a->preset = 1; return strcmp(v, "seed") ? -1 : 0;
    case OPT_CAPACITY: return give_bytes(&a->given.capacity, v);
    case OPT_MAX_ALLOC: return give_bytes(&a->given.max_alloc, v);
    case OPT_CACHE: return give_bytes(&a->given.cache, v);
    case OPT_BANDWIDTH: return give_rate(&a->given.bandwidth, v);
    case OPT_PEAK: return give_rate(&a->given.peak, v);
    case OPT_LATENCY: return give_seconds(&a->given.latency, v);
    case OPT_JSON: a->json = 1; return 0;
    case OPT_HELP: return 0;
    }
    return -1;
}

/* Finds the option `arg` names ("--name", "--name=value", "-X", "-Xvalue")
 * and its value, which may be the next argument. Returns the spec or NULL
 * after printing the error. */
static const struct option_spec *next_option(int argc, char **argv, int *i, const char **value)
{
    const char *arg = argv[*i], *inline_value = NULL;
    const struct option_spec *spec = NULL;
    size_t n_options = sizeof options / sizeof options[0];
    if (arg[0] == '-' && arg[1] == '-') {
        const char *eq = strchr(arg + 2, '=');
        size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        for (size_t k = 0; k < n_options && !spec; k++)
            if (strlen(options[k].name) == len && !strncmp(options[k].name, arg + 2, len))
                spec = &options[k];
        inline_value = eq ? eq + 1 : NULL;
    } else if (arg[0] == '-' && arg[1]) {
        for (size_t k = 0; k < n_options && !spec; k++)
            if (options[k].short_name == arg[1])
                spec = &options[k];
        inline_value = arg[2] ? arg + 2 : NULL;
    }
    if (!spec) {
        cli_error("predict: unknown argument '%s' (clattn predict --help)", arg);
        return NULL;
    }
    if (spec->arg == ARG_NONE && inline_value) {
        cli_error("predict: --%s takes no value", spec->name);
        return NULL;
    }
    *value = inline_value;
    if (spec->arg == ARG_REQUIRED && !inline_value) {
        if (*i + 1 >= argc) {
            cli_error("predict: --%s needs a value", spec->name);
            return NULL;
        }
        *value = argv[++*i];
    }
    return spec;
}

/* Checks what single options cannot: lengths given one way only. */
static int check_args(struct predict_args *a)
{
    if ((a->nq != 0) != (a->nk != 0)) {
        cli_error("predict: --nq and --nk go together");
        return -1;
    }
    if (a->nq && a->lens_given) {
        cli_error("predict: give -N or --nq/--nk, not both");
        return -1;
    }
    if (!a->shape.kv_heads)
        a->shape.kv_heads = a->shape.heads;
    if (a->shape.heads % a->shape.kv_heads) {
        cli_error("predict: -H %zu is not a multiple of --kv-heads %zu", a->shape.heads,
                  a->shape.kv_heads);
        return -1;
    }
    return 0;
}

/* 0: parsed; 1: --help printed; 2: bad arguments (error printed). */
static int parse_args(int argc, char **argv, struct predict_args *a)
{
    default_args(a);
    for (int i = 1; i < argc; i++) {
        const char *value;
        const struct option_spec *spec = next_option(argc, argv, &i, &value);
        if (!spec)
            return 2;
        if (spec->id == OPT_HELP) {
            fputs(usage_text, stdout);
            return 1;
        }
        if (apply_option(a, spec->id, value) < 0) {
            cli_error("predict: --%s: cannot use '%s'", spec->name, value ? value : "");
            return 2;
        }
    }
    return check_args(a) < 0 ? 2 : 0;
}

/* ---------------------------------------------------------- device figures */

static void preset_figure(clattn_figure *f, double value)
{
    f->value = value;
    f->source = CLATTN_SRC_PRESET;
}

/* The seed's round numbers: 1000 TFLOP/s over 5 TB/s is its 200 FLOP/byte
 * ridge. It assumes one tensor may fill the device. */
static void seed_figures(struct figures *f)
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

static void fill_figures(struct figures *to, const struct figures *from)
{
    fill_figure(&to->capacity, from->capacity);
    fill_figure(&to->max_alloc, from->max_alloc);
    fill_figure(&to->cache, from->cache);
    fill_figure(&to->bandwidth, from->bandwidth);
    fill_figure(&to->peak, from->peak);
    fill_figure(&to->latency, from->latency);
}

static void device_figures(clattn_ctx *ctx, clattn_dtype dtype, struct figures *out)
{
    clattn_ceilings c;
    memset(out, 0, sizeof *out);
    int rc = clattn_device_ceilings(ctx, &c);
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
    out->peak = dtype == CLATTN_F16 ? c.flops_f16 : c.flops_f32;
    out->latency = c.launch_latency_s;
}

static int have_all_figures(const struct figures *f)
{
    return f->capacity.source && f->cache.source && f->bandwidth.source && f->peak.source;
}

/* Settles the figures: given, then the device's, then the preset's. Opens
 * the device when asked to, or when nothing else supplies the figures; a
 * default device that cannot be opened only leaves figures unknown. Returns
 * 0, or 1 when the device the user named cannot be opened. */
static int resolve_figures(const struct predict_args *a, clattn_ctx **ctx, struct figures *f)
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
        struct figures dev;
        device_figures(*ctx, a->shape.dtype, &dev);
        fill_figures(f, &dev);
    }
    if (a->preset) {
        struct figures seed = { 0 };
        seed_figures(&seed);
        fill_figures(f, &seed);
    }
    return 0;
}

static clattn_model_device model_device(const struct figures *f)
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

struct row {
    clattn_model_problem problem;
    const char *tiles_source;
    clattn_prediction pred;   /* with the requested mask */
    clattn_prediction causal; /* with the requested mask, else top-left (a what-if) */
};

struct limits {
    int known[5];
    size_t n[5];
    double root[5];
};

/* The fused tiles: given, else the device's choice, else 64 x 64. */
static const char *choose_tiles(const struct predict_args *a, clattn_ctx *ctx,
                                clattn_model_problem *p)
{
    p->block_m = p->block_n = DEFAULT_TILE;
    const char *source = "default";
    if (ctx) {
        clattn_options opts;
        clattn_default_options(&opts);
        opts.causal = p->causal;
        size_t bm, bn;
        if (clattn_fused_tiles(ctx, &p->shape, &opts, &bm, &bn, NULL) == CLATTN_OK) {
            p->block_m = bm;
            p->block_n = bn;
            source = "device";
        }
    } else if (a->preset) {
        source = "preset";
    }
    if (a->block_m || a->block_n)
        source = "given";
    if (a->block_m)
        p->block_m = a->block_m;
    if (a->block_n)
        p->block_n = a->block_n;
    return source;
}

static int predict_row(const struct predict_args *a, clattn_ctx *ctx,
                       const clattn_model_device *dev, size_t nq, size_t nk, struct row *r)
{
    clattn_model_default_problem(&r->problem);
    r->problem.shape = a->shape;
    r->problem.shape.q_len = nq;
    r->problem.shape.kv_len = nk;
    r->problem.causal = a->causal;
    r->problem.naive_workspace_bytes = a->workspace;
    r->tiles_source = choose_tiles(a, ctx, &r->problem);
    int rc = clattn_model_predict(&r->problem, dev, &r->pred);
    if (rc < 0)
        return rc;
    clattn_model_problem what_if = r->problem;
    if (what_if.causal == CLATTN_CAUSAL_NONE)
        what_if.causal = CLATTN_CAUSAL_TOP_LEFT;
    return clattn_model_predict(&what_if, dev, &r->causal);
}

/* A limit whose figure is unknown stays unknown; other failures are errors. */
static int compute_limits(const struct predict_args *a, const clattn_model_device *dev,
                          struct limits *l)
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

/* ------------------------------------------------------------ formatting */

/* 14188 -> "14,188" */
static const char *fmt_count(uint64_t v, char *buf, size_t cap)
{
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%" PRIu64, v);
    size_t o = 0;
    for (int i = 0; i < n && o + 2 < cap; i++) {
        if (i && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

static const char *fmt_bytes(uint64_t bytes, char *buf, size_t cap)
{
    cli_fmt_bytes(bytes, buf, cap);
    return buf;
}

/* The seed writes large per-head sizes in MiB with GiB beside them. */
static const char *fmt_bytes_mib(uint64_t bytes, char *buf, size_t cap)
{
    const uint64_t mib = (uint64_t)1 << 20;
    if (bytes >= 1024 * mib && bytes % mib == 0) {
        char human[32];
        cli_fmt_bytes(bytes, human, sizeof human);
        snprintf(buf, cap, "%" PRIu64 " MiB (%s)", bytes / mib, human);
        return buf;
    }
    return fmt_bytes(bytes, buf, cap);
}

/* "9" for whole ratios, else two decimals. */
static const char *fmt_ratio(double r, char *buf, size_t cap)
{
    snprintf(buf, cap, fabs(r - round(r)) < 1e-9 ? "%.0f" : "%.2f", r);
    return buf;
}

/* Decimal prefixes up to T: "5 TB/s", "1000 TFLOP/s". */
static const char *fmt_rate(double v, const char *unit, char *buf, size_t cap)
{
    static const char *prefix[] = { "", "k", "M", "G", "T" };
    int p = 0;
    while (v >= 1000 && p < 4) {
        v /= 1000;
        p++;
    }
    snprintf(buf, cap, "%.4g %s%s", v, prefix[p], unit);
    return buf;
}

static const char *fmt_time(double s, char *buf, size_t cap)
{
    if (s <= 0)
        snprintf(buf, cap, "unknown");
    else if (s >= 1)
        snprintf(buf, cap, "%.3g s", s);
    else if (s >= 1e-3)
        snprintf(buf, cap, "%.3g ms", s * 1e3);
    else
        snprintf(buf, cap, "%.3g us", s * 1e6);
    return buf;
}

static const char *fmt_len(const clattn_shape *s, char *buf, size_t cap)
{
    if (s->q_len == s->kv_len)
        snprintf(buf, cap, "%zu", s->q_len);
    else
        snprintf(buf, cap, "%zu/%zu", s->q_len, s->kv_len);
    return buf;
}

/* ---------------------------------------------------------- text output */

static void print_figure(const char *name, clattn_figure f, int is_bytes, const char *unit)
{
    char buf[CELL];
    if (f.source == CLATTN_SRC_NONE || f.value <= 0)
        snprintf(buf, sizeof buf, "unknown");
    else if (is_bytes)
        fmt_bytes((uint64_t)f.value, buf, sizeof buf);
    else if (!strcmp(unit, "s"))
        fmt_time(f.value, buf, sizeof buf);
    else
        fmt_rate(f.value, unit, buf, sizeof buf);
    printf("  %-16s %-18s %s\n", name, buf, clattn_source_name(f.source));
}

static void print_header(const struct predict_args *a, clattn_ctx *ctx, const struct figures *f,
                         const struct row *rows)
{
    const clattn_shape *s = &a->shape;
    const clattn_prediction *p = &rows[0].pred;
    char buf[CELL];
    printf("shape    B=%zu H=%zu Hkv=%zu d=%zu %s (e = %zu bytes), causal: %s\n", s->batch,
           s->heads, s->kv_heads, s->head_dim, cli_dtype_name(s->dtype),
           clattn_dtype_size(s->dtype), cli_causal_name(a->causal));
    printf("device   %s\n", ctx ? clattn_device_name(ctx) : a->preset ? "preset seed" : "none");
    print_figure("capacity", f->capacity, 1, NULL);
    print_figure("max allocation", f->max_alloc, 1, NULL);
    print_figure("cache", f->cache, 1, NULL);
    print_figure("bandwidth", f->bandwidth, 0, "B/s");
    print_figure("peak", f->peak, 0, "FLOP/s");
    print_figure("launch latency", f->latency, 0, "s");
    if (p->ridge > 0)
        snprintf(buf, sizeof buf, "%.4g FLOP/byte", p->ridge);
    else
        snprintf(buf, sizeof buf, "unknown");
    printf("  %-16s %-18s peak / bandwidth\n", "ridge", buf);
    snprintf(buf, sizeof buf, "%zu x %zu", rows[0].problem.block_m, rows[0].problem.block_n);
    printf("  %-16s %-18s %s\n", "tiles (BM x BN)", buf, rows[0].tiles_source);
}

static void print_q1(const struct predict_args *a, const struct row *rows, size_t n)
{
    char c[7][CELL];
    printf("\nQ1  traffic per head (naive = endpoints + 4 S: write S, read S, write P, read P;"
           " fused = endpoints)\n");
    printf("  %11s %12s %12s %22s %12s %7s %11s\n", "N", "S matrix", "Q,K,V,O", "naive total",
           "fused total", "ratio", "closed form");
    for (size_t i = 0; i < n; i++) {
        const clattn_traffic *t = &rows[i].pred.traffic;
        printf("  %11s %12s %12s %22s %12s %6s× %11s\n",
               fmt_len(&rows[i].problem.shape, c[0], CELL),
               fmt_bytes_mib(t->head_score_bytes, c[1], CELL),
               fmt_bytes_mib(t->head_endpoint_bytes, c[2], CELL),
               fmt_bytes_mib(t->head_naive_bytes, c[3], CELL),
               fmt_bytes_mib(t->head_fused_bytes, c[4], CELL), fmt_ratio(t->head_ratio, c[5], CELL),
               fmt_ratio(t->closed_form, c[6], CELL));
    }
    printf("  closed form: 1 + 2 Nq Nk / ((Nq + Nk) d), 1 + N/d when Nq = Nk; the dtype cancels\n");
    printf("\nQ1  traffic for all B*H = %zu heads (K and V once per KV head)\n",
           a->shape.batch * a->shape.heads);
    printf("  %11s %12s %12s %7s\n", "N", "naive total", "fused total", "ratio");
    for (size_t i = 0; i < n; i++) {
        const clattn_traffic *t = &rows[i].pred.traffic;
        printf("  %11s %12s %12s %6s×\n", fmt_len(&rows[i].problem.shape, c[0], CELL),
               fmt_bytes(t->naive_bytes, c[1], CELL), fmt_bytes(t->fused_bytes, c[2], CELL),
               fmt_ratio(t->ratio, c[3], CELL));
    }
}

/* 14188.96 -> "14,188.96" */
static const char *fmt_real(double v, char *buf, size_t cap)
{
    char whole[32];
    double cents = round(v * 100);
    uint64_t integer = (uint64_t)(cents / 100);
    snprintf(buf, cap, "%s.%02d", fmt_count(integer, whole, sizeof whole),
             (int)(cents - (double)integer * 100));
    return buf;
}

/* The exact integer, the real root, and the root rounded when that differs
 * (the seed quotes rounded roots: 14,189 where 14,188 is the largest fit). */
static void print_limit(const char *what, const struct limits *l, int k, const char *unknown)
{
    char n[32], root[48], rounded[32];
    if (!l->known[k]) {
        printf("  %-60s unknown (%s)\n", what, unknown);
        return;
    }
    printf("  %-60s N <= %-9s", what, fmt_count(l->n[k], n, sizeof n));
    if (isfinite(l->root[k]) && l->root[k] < 1e15) {
        printf(" (root %s", fmt_real(l->root[k], root, sizeof root));
        uint64_t near = (uint64_t)llround(l->root[k]);
        if (near != (uint64_t)l->n[k])
            printf(" ~ %s", fmt_count(near, rounded, sizeof rounded));
        printf(")");
    }
    printf("\n");
}

static void print_q2_limits(const struct predict_args *a, const clattn_model_device *dev,
                            const struct limits *l)
{
    char what[160], b1[32], b2[32];
    size_t heads = a->shape.batch * a->shape.heads;
    printf("\nQ2  where it stops fitting (N = Nq = Nk)\n");
    snprintf(what, sizeof what, "one head's S in the cache (%s)",
             fmt_bytes(dev->cache_bytes, b1, sizeof b1));
    print_limit(what, l, CLATTN_LIMIT_HEAD_S_IN_CACHE, "cache size");
    snprintf(what, sizeof what, "each head's share of the cache (%s / %zu = %s)",
             fmt_bytes(dev->cache_bytes, b1, sizeof b1), heads,
             fmt_bytes(dev->cache_bytes / heads, b2, sizeof b2));
    print_limit(what, l, CLATTN_LIMIT_SHARED_S_IN_CACHE, "cache size");
    snprintf(what, sizeof what, "S and P of all heads in memory (%s)",
             fmt_bytes(dev->capacity_bytes, b1, sizeof b1));
    print_limit(what, l, CLATTN_LIMIT_SCORES_IN_MEMORY, "capacity");
    print_limit("naive path, every buffer (Q, K, V, O, S, P)", l, CLATTN_LIMIT_NAIVE_FITS,
                "capacity");
    print_limit("fused path, every buffer (Q, K, V, O)", l, CLATTN_LIMIT_FUSED_FITS, "capacity");
}

static void print_q2_table(const struct row *rows, size_t n)
{
    char c[8][CELL];
    printf("\n  %11s %14s %12s %12s %14s  %-23s %11s  %s\n", "N", "S per tensor", "S + P",
           "naive peak", "largest", "naive", "fused peak", "fused");
    for (size_t i = 0; i < n; i++) {
        const clattn_prediction *p = &rows[i].pred;
        int oom = p->naive.fit == CLATTN_FIT_OVER_CAPACITY ||
                  p->naive.fit == CLATTN_FIT_OVER_MAX_ALLOC;
        snprintf(c[3], CELL, "%.10s %.40s", p->naive.memory.largest_name,
                 fmt_bytes(p->naive.memory.largest_bytes, c[4], CELL));
        snprintf(c[5], CELL, "%s%.40s", oom ? "OOM: " : "", clattn_fit_name(p->naive.fit));
        printf("  %11s %14s %12s %12s %14s  %-23s %11s  %s\n",
               fmt_len(&rows[i].problem.shape, c[0], CELL),
               fmt_bytes(p->traffic.score_bytes, c[1], CELL),
               fmt_bytes(2 * p->traffic.score_bytes, c[7], CELL),
               fmt_bytes(p->naive.memory.peak_bytes, c[2], CELL), c[3], c[5],
               fmt_bytes(p->fused.memory.peak_bytes, c[6], CELL), clattn_fit_name(p->fused.fit));
    }
}

static void print_q3(const struct predict_args *a, const struct row *rows, size_t n)
{
    char c[7][CELL];
    const clattn_prediction *p0 = &rows[0].pred;
    printf("\nQ3  arithmetic intensity (FLOP/byte) and the roofline%s\n",
           a->causal != CLATTN_CAUSAL_NONE ? " (causal mask applied)" : "");
    printf("  %11s %12s %12s %9s %9s %11s %-8s %11s %s\n", "N", "naive FLOP", "fused FLOP",
           "naive AI", "fused AI", "naive time", "bound", "fused time", "bound");
    for (size_t i = 0; i < n; i++) {
        const clattn_prediction *p = &rows[i].pred;
        printf("  %11s %12s %12s %9.1f %9.1f %11s %-8s %11s %s\n",
               fmt_len(&rows[i].problem.shape, c[0], CELL),
               fmt_rate(p->naive.flops, "FLOP", c[1], CELL),
               fmt_rate(p->fused.flops, "FLOP", c[6], CELL), p->naive.intensity,
               p->fused.intensity, fmt_time(p->naive.time_s, c[2], CELL),
               clattn_bound_name(p->naive.bound), fmt_time(p->fused.time_s, c[3], CELL),
               clattn_bound_name(p->fused.bound));
    }
    printf("  naive AI -> d/e = %.4g FLOP/byte as N grows", p0->naive_intensity_limit);
    if (p0->ridge <= 0)
        printf(" (ridge unknown)\n");
    else if (p0->naive_compute_len)
        printf("; compute-bound from N >= %s\n", fmt_count(p0->naive_compute_len, c[4], CELL));
    else
        printf(", below the ridge (%.4g): memory-bound at every N\n", p0->ridge);
    printf("  fused AI = 2 H N / (e (H + Hkv)), unbounded");
    if (p0->fused_compute_len)
        printf("; compute-bound from N >= %s\n", fmt_count(p0->fused_compute_len, c[5], CELL));
    else
        printf(" (ridge unknown)\n");
}

static void print_q4(const struct predict_args *a, const struct row *rows, size_t n)
{
    char c[4][CELL];
    clattn_causal mode = a->causal == CLATTN_CAUSAL_NONE ? CLATTN_CAUSAL_TOP_LEFT : a->causal;
    printf("\nQ4  causal block accounting, %s, BLOCK_M x BLOCK_N = %zu x %zu%s\n",
           cli_causal_name(mode), rows[0].problem.block_m, rows[0].problem.block_n,
           a->causal == CLATTN_CAUSAL_NONE ? " (what-if: no --causal given)" : "");
    printf("  %11s %9s %9s %8s %10s %10s %9s %9s\n", "N", "blocks", "visited", "fraction",
           "(T+1)/(2T)", "empty rows", "speedup", "roofline");
    for (size_t i = 0; i < n; i++) {
        const clattn_causal_blocks *b = &rows[i].causal.blocks;
        if (b->closed_form > 0)
            snprintf(c[1], CELL, "%.4f", b->closed_form);
        else
            snprintf(c[1], CELL, "-");
        /* The × is two bytes, one column: pad the number, not the string. */
        if (rows[i].causal.causal_speedup > 0)
            snprintf(c[2], CELL, "%8.2f×", rows[i].causal.causal_speedup);
        else
            snprintf(c[2], CELL, "%9s", "unknown");
        printf("  %11s %9" PRIu64 " %9" PRIu64 " %8.4f %10s %10" PRIu64 " %8.2f× %s\n",
               fmt_len(&rows[i].problem.shape, c[0], CELL), b->total_blocks, b->visited_blocks,
               b->visited_fraction, c[1], b->empty_rows, b->speedup, c[2]);
    }
    printf("  visited / total = (T+1)/(2T) -> 1/2 as T grows (Nq = Nk, BM = BN); speedup is\n"
           "  total / computed pairs (compute-bound bound), roofline is the fused time ratio\n");
}

static void print_text(const struct predict_args *a, clattn_ctx *ctx, const struct figures *f,
                       const clattn_model_device *dev, const struct limits *l,
                       const struct row *rows, size_t n)
{
    print_header(a, ctx, f, rows);
    print_q1(a, rows, n);
    print_q2_limits(a, dev, l);
    print_q2_table(rows, n);
    print_q3(a, rows, n);
    print_q4(a, rows, n);
}

/* ---------------------------------------------------------- JSON output */

/* A minimal writer: it tracks whether a comma is due. */
struct json {
    int need_comma;
};

static void json_key(struct json *j, const char *key)
{
    printf("%s", j->need_comma ? "," : "");
    if (key)
        printf("\"%s\":", key);
    j->need_comma = 1;
}

static void json_open(struct json *j, const char *key, char bracket)
{
    json_key(j, key);
    putchar(bracket);
    j->need_comma = 0;
}

static void json_close(struct json *j, char bracket)
{
    putchar(bracket);
    j->need_comma = 1;
}

static void json_u64(struct json *j, const char *key, uint64_t v)
{
    json_key(j, key);
    printf("%" PRIu64, v);
}

/* Unknown figures (0) and non-finite values are null. */
static void json_num(struct json *j, const char *key, double v, int zero_is_null)
{
    json_key(j, key);
    if (!isfinite(v) || (zero_is_null && v == 0))
        printf("null");
    else if (v == floor(v) && fabs(v) < 0x1p63)
        printf("%.0f", v); /* byte counts and FLOPs, exactly */
    else
        printf("%.10g", v);
}

/* Strings here are our own names or device names; quotes and backslashes
 * are escaped, control characters dropped. */
static void json_str(struct json *j, const char *key, const char *s)
{
    json_key(j, key);
    putchar('"');
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            putchar('\\');
        if ((unsigned char)*s >= 0x20)
            putchar(*s);
    }
    putchar('"');
}

static void json_figure(struct json *j, const char *key, clattn_figure f)
{
    json_open(j, key, '{');
    json_num(j, "value", f.source ? f.value : 0, 1);
    json_str(j, "source", clattn_source_name(f.source));
    json_close(j, '}');
}

static void json_device(struct json *j, const struct predict_args *a, clattn_ctx *ctx,
                        const struct figures *f, const clattn_prediction *p0)
{
    json_open(j, "device", '{');
    json_str(j, "name", ctx ? clattn_device_name(ctx) : a->preset ? "preset seed" : "none");
    json_figure(j, "capacity_bytes", f->capacity);
    json_figure(j, "max_alloc_bytes", f->max_alloc);
    json_figure(j, "cache_bytes", f->cache);
    json_figure(j, "bandwidth_bytes_per_s", f->bandwidth);
    json_figure(j, "peak_flops", f->peak);
    json_figure(j, "launch_latency_s", f->latency);
    json_num(j, "ridge_flop_per_byte", p0->ridge, 1);
    json_close(j, '}');
}

static void json_limits(struct json *j, const struct limits *l, const clattn_prediction *p0)
{
    static const char *names[] = { "head_s_in_cache", "shared_s_in_cache", "scores_in_memory",
                                   "naive_fits", "fused_fits" };
    json_open(j, "limits", '{');
    for (int k = 0; k < 5; k++) {
        if (!l->known[k]) {
            json_key(j, names[k]);
            printf("null");
            continue;
        }
        json_open(j, names[k], '{');
        json_u64(j, "n", l->n[k]);
        json_num(j, "root", l->root[k], 0);
        json_close(j, '}');
    }
    json_num(j, "naive_intensity_limit", p0->naive_intensity_limit, 0);
    json_num(j, "naive_compute_bound_from", (double)p0->naive_compute_len, 1);
    json_num(j, "fused_compute_bound_from", (double)p0->fused_compute_len, 1);
    json_close(j, '}');
}

static void json_path(struct json *j, const char *key, const clattn_path_estimate *e)
{
    json_open(j, key, '{');
    json_u64(j, "bytes", e->bytes);
    json_num(j, "flops", e->flops, 0);
    json_num(j, "intensity", e->intensity, 0);
    json_u64(j, "launches", e->launches);
    json_num(j, "memory_time_s", e->memory_time_s, 1);
    json_num(j, "compute_time_s", e->compute_time_s, 1);
    json_num(j, "time_s", e->time_s, 1);
    json_str(j, "bound", clattn_bound_name(e->bound));
    json_u64(j, "peak_bytes", e->memory.peak_bytes);
    json_str(j, "largest_buffer", e->memory.largest_name);
    json_u64(j, "largest_bytes", e->memory.largest_bytes);
    json_u64(j, "workspace_bytes", e->memory.workspace_bytes);
    json_str(j, "fit", clattn_fit_name(e->fit));
    json_close(j, '}');
}

static void json_traffic(struct json *j, const clattn_traffic *t)
{
    json_open(j, "per_head", '{');
    json_u64(j, "score_bytes", t->head_score_bytes);
    json_u64(j, "endpoint_bytes", t->head_endpoint_bytes);
    json_u64(j, "naive_bytes", t->head_naive_bytes);
    json_u64(j, "fused_bytes", t->head_fused_bytes);
    json_num(j, "ratio", t->head_ratio, 0);
    json_num(j, "closed_form", t->closed_form, 0);
    json_close(j, '}');
    json_open(j, "all_heads", '{');
    json_u64(j, "score_bytes", t->score_bytes);
    json_u64(j, "endpoint_bytes", t->endpoint_bytes);
    json_u64(j, "naive_bytes", t->naive_bytes);
    json_u64(j, "fused_bytes", t->fused_bytes);
    json_num(j, "ratio", t->ratio, 0);
    json_close(j, '}');
}

static void json_blocks(struct json *j, const struct predict_args *a, const struct row *r)
{
    const clattn_causal_blocks *b = &r->causal.blocks;
    json_open(j, "causal", '{');
    json_str(j, "mode", cli_causal_name(r->problem.causal == CLATTN_CAUSAL_NONE
                                            ? CLATTN_CAUSAL_TOP_LEFT
                                            : r->problem.causal));
    json_key(j, "what_if");
    printf(a->causal == CLATTN_CAUSAL_NONE ? "true" : "false");
    json_u64(j, "q_blocks", b->q_blocks);
    json_u64(j, "k_blocks", b->k_blocks);
    json_u64(j, "total_blocks", b->total_blocks);
    json_u64(j, "visited_blocks", b->visited_blocks);
    json_num(j, "visited_fraction", b->visited_fraction, 0);
    json_num(j, "closed_form", b->closed_form, 1);
    json_u64(j, "empty_q_blocks", b->empty_q_blocks);
    json_u64(j, "empty_rows", b->empty_rows);
    json_u64(j, "total_pairs", b->total_pairs);
    json_u64(j, "computed_pairs", b->computed_pairs);
    json_u64(j, "visible_pairs", b->visible_pairs);
    json_u64(j, "kv_rows_read", b->kv_rows_read);
    json_u64(j, "kv_rows_streamed", b->kv_rows_streamed);
    json_num(j, "speedup", b->speedup, 0);
    json_num(j, "roofline_speedup", r->causal.causal_speedup, 1);
    json_close(j, '}');
}

static void json_row(struct json *j, const struct predict_args *a, const struct row *r)
{
    json_open(j, NULL, '{');
    json_u64(j, "q_len", r->problem.shape.q_len);
    json_u64(j, "kv_len", r->problem.shape.kv_len);
    json_u64(j, "block_m", r->problem.block_m);
    json_u64(j, "block_n", r->problem.block_n);
    json_str(j, "tiles_source", r->tiles_source);
    json_traffic(j, &r->pred.traffic);
    json_path(j, "naive", &r->pred.naive);
    json_path(j, "fused", &r->pred.fused);
    json_blocks(j, a, r);
    json_close(j, '}');
}

static void print_json(const struct predict_args *a, clattn_ctx *ctx, const struct figures *f,
                       const struct limits *l, const struct row *rows, size_t n)
{
    struct json j = { 0 };
    const clattn_shape *s = &a->shape;
    json_open(&j, NULL, '{');
    json_open(&j, "shape", '{');
    json_u64(&j, "batch", s->batch);
    json_u64(&j, "heads", s->heads);
    json_u64(&j, "kv_heads", s->kv_heads);
    json_u64(&j, "head_dim", s->head_dim);
    json_str(&j, "dtype", cli_dtype_name(s->dtype));
    json_u64(&j, "element_bytes", clattn_dtype_size(s->dtype));
    json_str(&j, "causal", cli_causal_name(a->causal));
    json_close(&j, '}');
    json_device(&j, a, ctx, f, &rows[0].pred);
    json_limits(&j, l, &rows[0].pred);
    json_open(&j, "rows", '[');
    for (size_t i = 0; i < n; i++)
        json_row(&j, a, &rows[i]);
    json_close(&j, ']');
    json_close(&j, '}');
    putchar('\n');
}

/* ------------------------------------------------------------- command */

/* Predicts every row before printing, so a bad shape prints nothing else. */
static int predict_all(const struct predict_args *a, clattn_ctx *ctx,
                       const clattn_model_device *dev, struct row *rows, size_t *n)
{
    int rc = 0;
    *n = a->nq ? 1 : a->n_lens;
    for (size_t i = 0; i < *n && rc == 0; i++)
        rc = predict_row(a, ctx, dev, a->nq ? a->nq : a->lens[i], a->nq ? a->nk : a->lens[i],
                         &rows[i]);
    return rc;
}

int cmd_predict(int argc, char **argv)
{
    struct predict_args args;
    struct figures figs;
    struct limits limits = { 0 };
    static struct row rows[MAX_LENS];
    clattn_ctx *ctx = NULL;
    size_t n_rows = 0;

    int status = parse_args(argc, argv, &args);
    if (status)
        return status == 1 ? 0 : 2;
    if (resolve_figures(&args, &ctx, &figs))
        return 1;
    clattn_model_device dev = model_device(&figs);
    int rc = predict_all(&args, ctx, &dev, rows, &n_rows);
    if (rc == 0)
        rc = compute_limits(&args, &dev, &limits);
    if (rc < 0) {
        /* The model rejects only shapes: an argument problem. */
        cli_lib_error("predict: cannot model this shape", rc);
        status = 2;
    } else if (args.json) {
        print_json(&args, ctx, &figs, &limits, rows, n_rows);
    } else {
        print_text(&args, ctx, &figs, &dev, &limits, rows, n_rows);
    }
    clattn_close(&ctx);
    return status;
}
