/*
 * clattn bench: the command line and the configuration it settles. A
 * preset's shapes (bench_preset.c) come first, scaled down on a device that
 * is not a GPU; the options given win over them. Every usage error is found
 * here, before a device is opened.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"

#define CMD "bench"

static void usage(const cli_command *cmd, FILE *f)
{
    fprintf(f,
            "usage: clattn bench [options]\n"
            "\n"
            "Runs attention for every (shape, mask, path) on random inputs and prints, per\n"
            "row: median time and spread, TFLOP/s and GB/s against the model's FLOPs and\n"
            "bytes, the fraction of the device's bandwidth, the model's roofline time and\n"
            "the ratio, the split-KV chunks the run used, device memory allocated vs\n"
            "predicted, the causal speedup vs the model's tile count, and a check against\n"
            "the CPU reference (max_abs, rel_l2, ok/FAIL). Plain `clattn bench` is\n"
            "--preset seed; sizes not given are the seed's: B=8 H=32 d=128, N =\n"
            "1024,4096,16384, Nq = Nk, Hkv = H. A KV cache form (--kv-type, --k-type,\n"
            "--v-type, --page-size, --packed) quantizes the drawn K and V, scatters them\n"
            "into pages or packs the batch by --q-lens and --kv-lens; the model counts the\n"
            "cache's bytes and the check reads the same quantized K and V (fused rows\n"
            "only, unless --path asks for naive ones: they gather pages and quantized\n"
            "K and V into copies in the dtype, and refuse packed batches).\n"
            "With several devices (--device 0,1), or under mpirun with several processes\n"
            "(each rank on its own device: the r-th of --device's list, or the one\n"
            "given), each (shape, mask) runs through the fused path whole on the first\n"
            "device and spread over the devices (clattn_group_attention) or the ranks\n"
            "(libclattn_mpi: keys for a decoding step, else tokens), both from host\n"
            "arrays: the two medians, the speedup beside the model's\n"
            "(clattn_model_predict_spread, the bandwidth between ranks measured), the\n"
            "scheme that ran and both checks; --json writes those rows, --csv is refused.\n"
            "\n"
            "options:\n");
    cli_print_options(cmd, f);
    fprintf(f,
            "\n"
            "Options given beside a preset win. Outputs (--json, --csv) are written whole\n"
            "or not at all; a character device or FIFO such as /dev/stdout is written in\n"
            "place, and the tables then go to stderr. Without measured ceilings saved for\n"
            "the device, the bench measures them first (seconds) and saves them, so that\n"
            "every row has a prediction.\n" CLI_EXIT_HELP);
}

enum { OPT_REPS_SECONDS = 1, OPT_CALLS_PER_SAMPLE, OPT_CHECK, OPT_PRESET };

static const cli_option own_options[] = {
    CLI_VALUE("preset", "NAME", OPT_PRESET,
              "seed: the seed's experiment, B=8 H=32 d=128 fp16,\n"
              "N = 1024,4096,16384, both masks and paths; on a\n"
              "device that is not a GPU B=1 H=2 at N = 1024,4096,\n"
              "the full shape as model-only rows.\n"
              "decode: serving, H=32 Hkv=8 d=128 fp16, fused\n"
              "path, one query over B=8 x 4096, 16384, 65536\n"
              "keys, B=1 x 131072, B=64 x 4096, and 512 queries\n"
              "over 16384 keys (bottom-right); not on a GPU H=8\n"
              "Hkv=2 B=1 at 4096, 16384, 32768 keys and 128\n"
              "queries over 4096, the full shapes model-only"),
    CLI_VALUE("reps-seconds", "S", OPT_REPS_SECONDS,
              "timed work per row (default 1 on a GPU, 0.2\n"
              "otherwise; at least 3 repetitions)"),
    CLI_VALUE("calls-per-sample", "N", OPT_CALLS_PER_SAMPLE,
              "calls enqueued back to back per timed sample,\n"
              "one clFinish after them; the time per call is\n"
              "the sample's over N (default 1: each call waited\n"
              "for alone; decoding rows of microseconds want\n"
              "more, as a burst between two CUDA events times\n"
              "them)"),
    CLI_TEXT("spread", "SCHEME", bench_args, spread, "how a call is spread over several devices:\n"
              "auto, one, keys, queries or ring\n"
              "(clattn_group_set_scheme); under mpirun: auto,\n"
              "keys, allgather or ring"),
    CLI_FLAG("confirm-oom", bench_args, confirm_oom,
             "run rows predicted not to fit anyway, and\nreport what happened"),
    CLI_VALUE("check", "C", OPT_CHECK,
              "auto (default: the whole output where the\n"
              "reference is cheap, else sampled rows), full,\nsampled"),
};

static int parse_check(const char *s, bench_check_mode *out)
{
    if (!strcmp(s, "auto"))
        *out = BENCH_CHECK_AUTO;
    else if (!strcmp(s, "full"))
        *out = BENCH_CHECK_FULL;
    else if (!strcmp(s, "sampled"))
        *out = BENCH_CHECK_SAMPLED;
    else
        return cli_usage_error(CMD, "bad --check '%.40s' (auto, full or sampled)", s);
    return 0;
}

static int set_option(void *state, const cli_option *option, const char *value)
{
    bench_args *a = state;
    switch (option->id) {
    case OPT_CHECK: return parse_check(value, &a->check);
    case OPT_PRESET:
        if (!bench_preset_find(value, 0))
            return cli_usage_error(CMD, "unknown --preset '%.40s' (known: %s)", value,
                                   bench_preset_names());
        a->preset = value;
        return 0;
    case OPT_CALLS_PER_SAMPLE: {
        size_t n;
        if (cli_parse_size(value, &n) < 0 || n < 1 || n > 100000)
            return cli_usage_error(CMD, "bad --calls-per-sample '%.40s' (1 .. 100000)", value);
        a->calls_per_sample = (uint32_t)n;
        return 0;
    }
    case OPT_REPS_SECONDS:
        if (cli_parse_double(value, &a->reps_seconds) < 0 || !(a->reps_seconds >= 0) ||
            a->reps_seconds > 3600)
            return cli_usage_error(CMD, "bad --reps-seconds '%.40s' (0 .. 3600 seconds)", value);
        return 0;
    }
    return CLI_EXIT_USAGE;
}

static const cli_default bench_defaults[] = {
    { CLI_DTYPE, "fp16" }, { CLI_CAUSAL, "both" }, { CLI_PATH, "both" }, { CLI_KERNEL, "auto" },
    { CLI_SPLIT_KV, "0" }, { CLI_SEED, "1" },      { 0, NULL },
};

static const cli_command bench_command = {
    CMD, CLI_DEVICE | CLI_SHAPE | CLI_SIZES | CLI_LENS | CLI_DTYPE | CLI_CAUSAL | CLI_MASKS |
             CLI_PATH | CLI_PATHS | CLI_KERNEL | CLI_KV_LENS | CLI_SPLIT_KV | CLI_PARAMS |
             CLI_SEED | CLI_JSON | CLI_CSV | CLI_VARIANTS | CLI_DV | CLI_RANDOM_INPUTS |
             CLI_CACHE | CLI_Q_LENS,
    own_options, CLI_COUNT(own_options), set_option, usage, bench_defaults,
};

int bench_parse_args(int argc, char **argv, bench_args *a)
{
    memset(a, 0, sizeof *a);
    a->reps_seconds = -1;
    a->calls_per_sample = 1;
    int rc = cli_parse_command(&bench_command, argc, argv, &a->call, a);
    if (rc)
        return rc;
    if (!(a->call.given & CLI_SEED))
        a->call.seed = 1;
    if (!(a->call.given & CLI_DTYPE))
        a->call.dtype = CLATTN_F16;
    cli_file out[2];
    bench_files(a, out);
    if ((rc = cli_check_files(CMD, out, 2, NULL, 0)))
        cli_call_free(&a->call);
    return rc;
}

/* ------------------------------------------------------------ resolution */

/* The shape of a case: the preset's (or the seed's) sizes, those given
 * (`c`, NULL for none) winning. A GQA preset keeps its Hkv under another
 * H; an MHA one follows H. */
static clattn_shape case_shape(const cli_call *c, const bench_preset *p,
                               const bench_preset_case *pc, size_t kv_len, clattn_dtype dtype)
{
    const cli_call none = { 0 };
    if (!c)
        c = &none;
    clattn_shape s = { 0 };
    s.batch = c->batch ? c->batch : pc->batch;
    s.heads = c->heads ? c->heads : p->heads;
    s.kv_heads = c->kv_heads ? c->kv_heads : p->kv_heads == p->heads ? s.heads : p->kv_heads;
    s.q_len = c->q_len ? c->q_len : pc->q_len == pc->kv_len ? kv_len : pc->q_len;
    s.kv_len = kv_len;
    s.head_dim = c->n_head_dims ? c->head_dims[0] : p->head_dim;
    s.dtype = dtype;
    return s;
}

/* The rows to run: -N's lengths on the preset's first shape, else the
 * preset's shapes; each checked, and --kv-lens against each. */
static int resolve_cases(const cli_call *call, const bench_preset *p, bench_config *c)
{
    const int masks = call->masks;
    const size_t n = call->n_lens ? call->n_lens : p->n_cases;
    for (size_t i = 0; i < n; i++) {
        const bench_preset_case *pc = &p->cases[call->n_lens ? 0 : i];
        const size_t kv_len = call->n_lens ? call->lens[i] : pc->kv_len;
        c->cases[i].shape = case_shape(call, p, pc, kv_len, c->dtype);
        c->cases[i].masks = masks ? masks : call->n_lens ? p->masks : pc->masks;
        int rc = cli_check_shape(CMD, &c->cases[i].shape);
        if (rc == 0)
            rc = cli_check_kv_lens(CMD, call, c->cases[i].shape.batch, kv_len, "a row",
                                   CLI_EXIT_USAGE);
        if (rc == 0)
            rc = cli_check_q_lens(CMD, call, c->cases[i].shape.batch, c->cases[i].shape.q_len,
                                  "a row", CLI_EXIT_USAGE);
        if (rc)
            return rc;
    }
    c->n_cases = n;
    /* A scaled preset's full shapes, model only: the verdicts a scaled run
     * cannot show. The options of the run's shape do not apply to them. */
    const bench_preset *full = c->preset ? bench_preset_find(c->preset, 0) : NULL;
    if (full && full != p) {
        for (size_t i = 0; i < full->n_cases && i < BENCH_MAX_MODEL_CASES; i++) {
            bench_case *m = &c->model_cases[c->n_model_cases++];
            m->shape = case_shape(NULL, full, &full->cases[i], full->cases[i].kv_len, c->dtype);
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
    const cli_call *call = &a->call;
    memset(c, 0, sizeof *c);
    c->args = a;
    /* Plain `clattn bench` (--kv-heads aside) is the seed preset. */
    const int implicit = !a->preset && !call->batch && !call->heads && !call->n_head_dims &&
                         !call->n_lens && !call->q_len;
    c->preset = a->preset ? a->preset : implicit ? "seed" : NULL;
    const int scaled = c->preset && !is_gpu;
    /* Without a preset the seed's sizes are the defaults, unscaled. */
    const bench_preset *p = bench_preset_find(c->preset ? c->preset : "seed", scaled);
    c->dtype = call->dtype;
    c->paths = call->paths ? call->paths : p->paths;
    /* The naive path takes no variant, nor bf16: only fused rows unless
     * --path asks for naive ones (which then say why they did not run). */
    c->has_variant = cli_variant_any(&call->variant);
    c->has_cache = cli_cache_any(&call->cache);
    if (!call->paths && (c->has_variant || c->has_cache || call->q_lens ||
                         c->dtype == CLATTN_BF16))
        c->paths = CLI_PATH_BIT(CLATTN_PATH_FUSED);
    c->target_seconds = a->reps_seconds >= 0 ? a->reps_seconds : is_gpu ? 1.0 : 0.2;
    clattn_default_options(&c->opts);
    cli_call_options(call, &c->opts);
    int rc = resolve_cases(call, p, c);
    if (rc == 0 && c->preset)
        describe_preset(c, scaled);
    return rc;
}
