/*
 * clattn predict: the command line. Options are looked up in one table, so
 * --name, --name=value, -X and -Xvalue all parse the same way; values are
 * checked as they are applied, and what needs several options at the end.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "predict.h"

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
    "      --kv-len LIST      key lengths Nk, one row each (instead of -N)\n"
    "      --q-len NQ         query length of every row (Nq = Nk without it);\n"
    "                         1 is a decoding step\n"
    "      --nq NQ --nk NK    one pair of unequal lengths instead of -N\n"
    "      --kv-lens L0,...   each sequence's keys (B values, each <= every Nk):\n"
    "                         the fused path reads and computes only those\n"
    "      --split-kv N       split-KV chunks per sequence; with a device its plan\n"
    "                         for N (0: the library's choice), else N (0: none)\n"
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
    "--capacity, --cache, --bandwidth and --peak are given. A device with no saved\n"
    "measurement is measured first (seconds, saved; a note on stderr) unless\n"
    "--bandwidth and --peak are given.\n"
    "Reproduce the seed: clattn predict --preset seed\n";

enum opt_id {
    OPT_BATCH, OPT_HEADS, OPT_KV_HEADS, OPT_HEAD_DIM, OPT_LEN, OPT_KV_LEN, OPT_Q_LEN,
    OPT_KV_LENS, OPT_SPLIT_KV, OPT_NQ, OPT_NK, OPT_DTYPE,
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
    { "kv-len", 0, ARG_REQUIRED, OPT_KV_LEN },
    { "q-len", 0, ARG_REQUIRED, OPT_Q_LEN },
    { "kv-lens", 0, ARG_REQUIRED, OPT_KV_LENS },
    { "split-kv", 0, ARG_REQUIRED, OPT_SPLIT_KV },
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

static int parse_lens(const char *v, struct predict_args *a)
{
    if (cli_parse_size_list(v, a->lens, PREDICT_MAX_LENS, &a->n_lens) < 0)
        return -1;
    for (size_t i = 0; i < a->n_lens; i++)
        if (!a->lens[i])
            return -1;
    return 0;
}

/* Lengths of 0 are allowed (a sequence with no key yet); each must fit the
 * kernels' uint32. The count and the bound by Nk are checked at the end. */
static int parse_kv_lens(const char *v, struct predict_args *a)
{
    return cli_parse_lens(v, a->kv_lens, PREDICT_MAX_BATCH, &a->n_kv_lens);
}

static int parse_split(const char *v, struct predict_args *a)
{
    size_t n;
    if (cli_parse_size(v, &n) < 0 || n > UINT32_MAX)
        return -1;
    a->split_kv = (uint32_t)n;
    a->split_given = 1;
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
    case OPT_LEN: a->lens_given = 1; return parse_lens(v, a);
    case OPT_KV_LEN: a->kv_len_given = 1; return parse_lens(v, a);
    case OPT_Q_LEN: return parse_positive(v, &a->q_len);
    case OPT_KV_LENS: return parse_kv_lens(v, a);
    case OPT_SPLIT_KV: return parse_split(v, a);
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

/* --kv-lens: one length per sequence, none above any row's Nk. */
static int check_kv_lens(const struct predict_args *a)
{
    if (!a->n_kv_lens)
        return 0;
    if (a->n_kv_lens != a->shape.batch) {
        cli_error("predict: --kv-lens needs B = %zu lengths (one per sequence), got %zu",
                  a->shape.batch, a->n_kv_lens);
        return -1;
    }
    size_t nk = a->nk;
    for (size_t i = 0; !a->nq && i < a->n_lens; i++)
        nk = i == 0 || a->lens[i] < nk ? a->lens[i] : nk;
    for (size_t b = 0; b < a->n_kv_lens; b++)
        if (a->kv_lens[b] > nk) {
            cli_error("predict: --kv-lens: sequence %zu has %u keys, more than Nk = %zu", b,
                      a->kv_lens[b], nk);
            return -1;
        }
    return 0;
}

/* Checks what single options cannot: lengths given one way only. */
static int check_args(struct predict_args *a)
{
    if ((a->nq != 0) != (a->nk != 0)) {
        cli_error("predict: --nq and --nk go together");
        return -1;
    }
    if (a->lens_given && a->kv_len_given) {
        cli_error("predict: give -N or --kv-len, not both");
        return -1;
    }
    if (a->nq && (a->lens_given || a->kv_len_given || a->q_len)) {
        cli_error("predict: give -N, --kv-len and --q-len, or --nq/--nk, not both");
        return -1;
    }
    if (!a->shape.kv_heads)
        a->shape.kv_heads = a->shape.heads;
    if (a->shape.heads % a->shape.kv_heads) {
        cli_error("predict: -H %zu is not a multiple of --kv-heads %zu", a->shape.heads,
                  a->shape.kv_heads);
        return -1;
    }
    return check_kv_lens(a);
}

/* 0: parsed; 1: --help printed; 2: bad arguments (error printed). */
int predict_parse_args(int argc, char **argv, struct predict_args *a)
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
