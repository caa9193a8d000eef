/*
 * clattn bench: the command line and the configuration it settles. A
 * preset's shapes (bench_preset.c) come first, scaled down on a device that
 * is not a GPU; the options given win over them. Every usage error is found
 * here, before a device is opened.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"

#define EXIT_USAGE 2

static void usage(FILE *f)
{
    fprintf(f,
            "usage: clattn bench [-B 8 -H 32 -d 128 -N 1024,4096,16384] [--kv-heads H]\n"
            "                    [--q-len Q] [--kv-len LIST] [--kv-lens L0,L1,...]\n"
            "                    [--split-kv N] [--dtype fp16|fp32]\n"
            "                    [--causal both|yes|no|top-left|bottom-right]\n"
            "                    [--path naive,fused] [--device SEL] [--json FILE]\n"
            "                    [--csv FILE] [--reps-seconds S] [--confirm-oom]\n"
            "                    [--check auto|full|sampled] [--preset seed|decode] [--seed N]\n"
            "\n"
            "Runs attention for every (shape, mask, path) on random inputs and prints, per\n"
            "row: median time and spread, TFLOP/s and GB/s against the model's FLOPs and\n"
            "bytes, the fraction of the device's bandwidth, the model's roofline time and\n"
            "the ratio, the split-KV chunks the run used, device memory allocated vs\n"
            "predicted, the causal speedup vs the model's tile count, and a check against\n"
            "the CPU reference (max_abs, rel_l2, ok/FAIL).\n"
            "\n"
            "  -B, -H, -d        batch, heads, head dim; default: the seed's 8, 32, 128\n"
            "  -N, --kv-len LIST key lengths Nk, one case each (comma list); default the\n"
            "                    seed's 1024,4096,16384. Nq = Nk unless --q-len\n"
            "  --q-len Q         the query length Nq of every row (1: a decoding step)\n"
            "  --kv-heads H      key/value heads (grouped-query attention; default H)\n"
            "  --kv-lens L,...   each sequence's keys: exactly B values, each <= every\n"
            "                    row's Nk (0 allowed: that sequence's rows are zeros)\n"
            "  --split-kv N      split each sequence's keys into N chunks (0: the\n"
            "                    library's choice, the default; 1: never)\n"
            "  --dtype T         fp16 (default) or fp32\n"
            "  --causal M        both (default: none and top-left), yes or top-left,\n"
            "                    bottom-right (aligned to each sequence's length), no\n"
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
            "  --check C         auto (default: the whole output where the reference is\n"
            "                    cheap, else sampled rows), full, sampled\n"
            "  --preset seed     the seed's experiment: B=8 H=32 d=128 fp16, N =\n"
            "                    1024,4096,16384, both masks and paths. On a device that is\n"
            "                    not a GPU it runs B=1 H=2 at N = 1024,4096 instead and adds\n"
            "                    the full shape as model-only rows. Plain `clattn bench` is\n"
            "                    this preset.\n"
            "  --preset decode   serving: H=32 Hkv=8 d=128 fp16, fused path, one query over\n"
            "                    B=8 x 4096, 16384, 65536 keys, B=1 x 131072, B=64 x 4096,\n"
            "                    and 512 queries over 16384 keys (bottom-right). Not on a\n"
            "                    GPU: H=8 Hkv=2 B=1 at 4096, 16384, 32768 keys and 128\n"
            "                    queries over 4096, the full shapes as model-only rows.\n"
            "                    Options given beside a preset win.\n"
            "  --seed N          random inputs (default 1)\n"
            "\n"
            "Without measured ceilings saved for the device, the bench measures them\n"
            "first (seconds) and saves them, so that every row has a prediction.\n");
}

static int usage_error(const char *fmt, const char *what)
{
    char msg[320];
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

static int parse_split(const char *s, bench_args *a)
{
    size_t n;
    if (cli_parse_size(s, &n) < 0 || n > UINT32_MAX)
        return usage_error("--split-kv wants a count of chunks, not '%s'", s);
    a->split_kv = (uint32_t)n;
    a->split_given = 1;
    return 0;
}

/* -N and --kv-len are one option under two names. */
static int set_lens(const char *s, const char *name, bench_args *a)
{
    if (a->lens)
        return usage_error("give the key lengths once (-N or --kv-len), not '%s' again", name);
    a->lens = s;
    return 0;
}

int bench_parse_args(int argc, char **argv, bench_args *a)
{
    static const struct option opts[] = {
        { "kv-heads", required_argument, 0, 'K' }, { "dtype", required_argument, 0, 't' },
        { "causal", required_argument, 0, 'c' },   { "path", required_argument, 0, 'p' },
        { "device", required_argument, 0, 'D' },   { "json", required_argument, 0, 'j' },
        { "csv", required_argument, 0, 'v' },      { "reps-seconds", required_argument, 0, 'r' },
        { "confirm-oom", no_argument, 0, 'o' },    { "preset", required_argument, 0, 'P' },
        { "seed", required_argument, 0, 's' },     { "help", no_argument, 0, 'h' },
        { "kernel", required_argument, 0, 'k' },   { "q-len", required_argument, 0, 'q' },
        { "kv-len", required_argument, 0, 'n' },   { "kv-lens", required_argument, 0, 'L' },
        { "split-kv", required_argument, 0, 'x' }, { "check", required_argument, 0, 'C' },
        { 0, 0, 0, 0 },
    };
    memset(a, 0, sizeof *a);
    a->reps_seconds = -1;
    a->seed = 1;
    opterr = 0;
    optind = 1;
    int opt, rc = 0;
    while (rc == 0 && (opt = getopt_long(argc, argv, ":B:H:d:N:h", opts, NULL)) != -1) {
        switch (opt) {
        case 'B': rc = parse_positive(optarg, &a->batch, "-B"); break;
        case 'H': rc = parse_positive(optarg, &a->heads, "-H"); break;
        case 'd': rc = parse_positive(optarg, &a->head_dim, "-d"); break;
        case 'K': rc = parse_positive(optarg, &a->kv_heads, "--kv-heads"); break;
        case 'q': rc = parse_positive(optarg, &a->q_len, "--q-len"); break;
        case 'N': rc = set_lens(optarg, "-N", a); break;
        case 'n': rc = set_lens(optarg, "--kv-len", a); break;
        case 'L': a->kv_lens = optarg; break;
        case 'x': rc = parse_split(optarg, a); break;
        case 't': a->dtype = optarg; break;
        case 'c': a->causal = optarg; break;
        case 'p': a->paths = optarg; break;
        case 'C': a->check = optarg; break;
        case 'D': a->device = optarg; break;
        case 'j': a->json_path = optarg; break;
        case 'v': a->csv_path = optarg; break;
        case 'o': a->confirm_oom = 1; break;
        case 'P': a->preset = optarg; break;
        case 'k':
            if (cli_parse_fused_kernel(optarg, &a->fused_kernel) < 0)
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
    if (rc == 0 && a->preset && !bench_preset_find(a->preset, 0)) {
        char msg[160];
        snprintf(msg, sizeof msg, "unknown --preset '%.40s' (known: %s)", a->preset,
                 bench_preset_names());
        rc = usage_error("%s", msg);
    }
    return rc;
}

/* ------------------------------------------------------------ resolution */

static int parse_masks(const char *s, int *out)
{
    if (!strcmp(s, "both"))
        *out = BENCH_MASK_NONE | BENCH_MASK_TOP_LEFT;
    else if (!strcmp(s, "no") || !strcmp(s, "none"))
        *out = BENCH_MASK_NONE;
    else if (!strcmp(s, "yes") || !strcmp(s, "top-left"))
        *out = BENCH_MASK_TOP_LEFT;
    else if (!strcmp(s, "bottom-right"))
        *out = BENCH_MASK_BOTTOM_RIGHT;
    else
        return usage_error("--causal wants both, yes, top-left, bottom-right or no, not '%s'", s);
    return 0;
}

static int parse_paths(const char *s, int *out)
{
    char buf[64];
    if (!strcmp(s, "both")) {
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

static int parse_check(const char *s, bench_check_mode *out)
{
    if (!s || !strcmp(s, "auto"))
        *out = BENCH_CHECK_AUTO;
    else if (!strcmp(s, "full"))
        *out = BENCH_CHECK_FULL;
    else if (!strcmp(s, "sampled"))
        *out = BENCH_CHECK_SAMPLED;
    else
        return usage_error("--check wants auto, full or sampled, not '%s'", s);
    return 0;
}

/* --kv-lens: one length per sequence of every case, none above its Nk. */
static int parse_kv_lens(const char *s, bench_config *c)
{
    uint32_t vals[BENCH_MAX_BATCH];
    size_t n = 0;
    if (cli_parse_lens(s, vals, BENCH_MAX_BATCH, &n) < 0)
        return usage_error("--kv-lens wants up to 4096 comma-separated lengths, not '%.200s'",
                           s);
    for (size_t i = 0; i < c->n_cases; i++) {
        const clattn_shape *sh = &c->cases[i].shape;
        char msg[200];
        if (n != sh->batch) {
            snprintf(msg, sizeof msg, "--kv-lens gives %zu lengths; the rows have B = %zu "
                     "sequences (one length each)", n, sh->batch);
            return usage_error("%s", msg);
        }
        for (size_t b = 0; b < n; b++)
            if (vals[b] > sh->kv_len) {
                snprintf(msg, sizeof msg, "--kv-lens: sequence %zu has %u keys, more than "
                         "the Nk = %zu of a row", b, vals[b], sh->kv_len);
                return usage_error("%s", msg);
            }
    }
    memcpy(c->kv_lens, vals, n * sizeof *vals);
    c->n_kv_lens = n;
    return 0;
}

/* The shape of a case: the preset's (or the seed's) sizes, those given
 * winning. A GQA preset keeps its Hkv under another H; an MHA one follows H. */
static clattn_shape case_shape(const bench_args *a, const bench_preset *p,
                               const bench_preset_case *pc, size_t kv_len, clattn_dtype dtype)
{
    clattn_shape s = { 0 };
    s.batch = a->batch ? a->batch : pc->batch;
    s.heads = a->heads ? a->heads : p->heads;
    s.kv_heads = a->kv_heads ? a->kv_heads : p->kv_heads == p->heads ? s.heads : p->kv_heads;
    s.q_len = a->q_len ? a->q_len : pc->q_len == pc->kv_len ? kv_len : pc->q_len;
    s.kv_len = kv_len;
    s.head_dim = a->head_dim ? a->head_dim : p->head_dim;
    s.dtype = dtype;
    return s;
}

static int check_case(const bench_case *c)
{
    const clattn_shape *s = &c->shape;
    if (clattn_shape_check(s) < 0) {
        cli_error("bench: bad shape B=%zu H=%zu Hkv=%zu Nq=%zu Nk=%zu d=%zu: %s", s->batch,
                  s->heads, s->kv_heads, s->q_len, s->kv_len, s->head_dim,
                  clattn_last_error_detail());
        return EXIT_USAGE;
    }
    return 0;
}

/* The rows to run: -N's lengths on the preset's first shape, else the
 * preset's shapes. */
static int resolve_cases(const bench_args *a, const bench_preset *p, bench_config *c)
{
    int masks = 0, rc;
    if (a->causal && (rc = parse_masks(a->causal, &masks)))
        return rc;
    size_t lens[BENCH_MAX_CASES], n;
    if (a->lens) {
        if (cli_parse_size_list(a->lens, lens, BENCH_MAX_CASES, &n) < 0)
            return usage_error("-N / --kv-len wants up to 32 comma-separated lengths, not '%s'",
                               a->lens);
        for (size_t i = 0; i < n; i++) {
            if (!lens[i])
                return usage_error("-N / --kv-len: a length must be positive ('%s')", a->lens);
            c->cases[i].shape = case_shape(a, p, &p->cases[0], lens[i], c->dtype);
            c->cases[i].masks = masks ? masks : p->masks;
        }
    } else {
        n = p->n_cases;
        for (size_t i = 0; i < n; i++) {
            c->cases[i].shape = case_shape(a, p, &p->cases[i], p->cases[i].kv_len, c->dtype);
            c->cases[i].masks = masks ? masks : p->cases[i].masks;
        }
    }
    c->n_cases = n;
    for (size_t i = 0; i < n; i++)
        if ((rc = check_case(&c->cases[i])))
            return rc;
    /* A scaled preset's full shapes, model only: the verdicts a scaled run
     * cannot show. The options of the run's shape do not apply to them. */
    const bench_preset *full = c->preset ? bench_preset_find(c->preset, 0) : NULL;
    if (full && full != p) {
        const bench_args none = { 0 };
        for (size_t i = 0; i < full->n_cases && i < BENCH_MAX_MODEL_CASES; i++) {
            bench_case *m = &c->model_cases[c->n_model_cases++];
            m->shape = case_shape(&none, full, &full->cases[i], full->cases[i].kv_len, c->dtype);
            m->masks = masks ? masks : full->cases[i].masks;
        }
    }
    return 0;
}

/* "1024,4096" for the notes. */
static void list_lens(const bench_config *c, char *buf, size_t cap)
{
    buf[0] = '\0';
    for (size_t i = 0, used = 0; i < c->n_cases && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%zu", i ? "," : "",
                                 c->cases[i].shape.kv_len);
}

static void describe_preset(bench_config *c, int scaled)
{
    char lens[160];
    list_lens(c, lens, sizeof lens);
    const clattn_shape *s = &c->cases[0].shape;
    int seed = !strcmp(c->preset, "seed");
    if (!scaled) {
        snprintf(c->preset_note, sizeof c->preset_note, "the %s shapes, unscaled",
                 seed ? "seed's" : "decode");
        return;
    }
    const clattn_shape *f = &c->model_cases[0].shape;
    size_t most_b = 0, most_k = 0;
    for (size_t i = 0; i < c->n_model_cases; i++) {
        const clattn_shape *m = &c->model_cases[i].shape;
        most_b = m->batch > most_b ? m->batch : most_b;
        most_k = m->kv_len > most_k ? m->kv_len : most_k;
    }
    if (seed)
        snprintf(c->preset_note, sizeof c->preset_note,
                 "the device is not a GPU, so B=%zu H=%zu at N = %s are measured (the seed's "
                 "B=8 H=32 is 35 TFLOP per call at N = 16384: hours on a CPU); the full seed "
                 "shape follows as model-only rows, OOM verdicts included",
                 s->batch, s->heads, lens);
    else
        snprintf(c->preset_note, sizeof c->preset_note,
                 "the device is not a GPU, so H=%zu Hkv=%zu at Nk = %s are measured; the full "
                 "decode shapes (H=%zu Hkv=%zu d=%zu, up to B=%zu and %zu keys) follow as "
                 "model-only rows",
                 s->heads, s->kv_heads, lens, f->heads, f->kv_heads, f->head_dim, most_b,
                 most_k);
    if (seed)
        snprintf(c->model_title, sizeof c->model_title,
                 "the seed's full shape B=%zu H=%zu d=%zu %s on this device: model only, not "
                 "run", f->batch, f->heads, f->head_dim, cli_dtype_name(c->dtype));
    else
        snprintf(c->model_title, sizeof c->model_title,
                 "the full decode shapes H=%zu Hkv=%zu d=%zu %s on this device: model only, "
                 "not run", f->heads, f->kv_heads, f->head_dim, cli_dtype_name(c->dtype));
}

int bench_resolve_config(const bench_args *a, int is_gpu, bench_config *c)
{
    memset(c, 0, sizeof *c);
    /* Plain `clattn bench` is the seed preset. */
    const int implicit = !a->preset && !a->batch && !a->heads && !a->head_dim && !a->lens &&
                         !a->q_len;
    c->preset = a->preset ? a->preset : implicit ? "seed" : NULL;
    const int scaled = c->preset && !is_gpu;
    /* Without a preset the seed's sizes are the defaults, unscaled. */
    const bench_preset *p = bench_preset_find(c->preset ? c->preset : "seed", scaled);
    c->dtype = CLATTN_F16;
    if (a->dtype && cli_parse_dtype(a->dtype, &c->dtype) < 0)
        return usage_error("--dtype wants fp16 or fp32, not '%s'", a->dtype);
    c->paths = p->paths;
    int rc = 0;
    if ((a->paths && (rc = parse_paths(a->paths, &c->paths))) ||
        (rc = parse_check(a->check, &c->check)) || (rc = resolve_cases(a, p, c)) ||
        (a->kv_lens && (rc = parse_kv_lens(a->kv_lens, c))))
        return rc;
    c->split_kv = a->split_given ? a->split_kv : 0;
    c->device = a->device;
    c->json_path = a->json_path;
    c->csv_path = a->csv_path;
    c->fused_kernel = a->fused_kernel;
    c->reps_seconds = a->reps_seconds;
    c->confirm_oom = a->confirm_oom;
    c->seed = a->seed;
    if (c->preset)
        describe_preset(c, scaled);
    return 0;
}
