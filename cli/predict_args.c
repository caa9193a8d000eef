/*
 * clattn predict: the command line. The shape, lengths, mask, split and
 * --json are the shared options (options.h); predict's own are the device
 * figures, the tiles and --nq/--nk. Values are checked as they are read,
 * and what needs several options at the end.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kvcache.h"
#include "predict.h"
#include "variant.h"

#define CMD "predict"

static void usage(const cli_command *cmd, FILE *f)
{
    fprintf(f,
            "usage: clattn predict [options]\n"
            "\n"
            "Prints the byte model of naive vs fused attention: Q1 traffic per head and\n"
            "for all heads, Q2 where it stops fitting, Q3 intensity and the roofline,\n"
            "Q4 causal block accounting, Q5 decoding. Sizes not given are the seed's:\n"
            "B=8 H=32 d=128, N = 1024,4096,16384, Hkv = H, Nq = Nk.\n"
            "\n"
            "options:\n");
    cli_print_options(cmd, f);
    fprintf(f,
            "\n"
            "--split-kv N: with a device its plan for N (0: the library's choice), else N\n"
            "(0: none). --json writes one JSON object instead of the tables when it goes\n"
            "to stdout, beside them into a FILE.\n"
            "Without --device, the default device is opened unless --preset or all of\n"
            "--capacity, --cache, --bandwidth and --peak are given. A device with no saved\n"
            "measurement is measured first (seconds, saved; a note on stderr) unless\n"
            "--bandwidth and --peak are given.\n"
            "A KV cache form (--kv-type, --k-type, --v-type, --page-size, --packed,\n"
            "--q-lens) adds the Q7 table: K and V in their types, the block table, fp8\n"
            "scales and packed offsets in the fused path's bytes and memory. --layers L\n"
            "adds Q8: for a model of L layers of these heads, the tokens of cache that fit\n"
            "in --free bytes (else the device's memory) and a decoding step's time per\n"
            "generated token at each row's Nk of context (Nq = --q-len, else 1).\n"
            "--devices N adds Q9: the call spread over N devices like this one (by keys,\n"
            "by query rows reading all of K and V, by a ring of K/V blocks), each scheme's\n"
            "time with its transfers over --link-bw (host arrays in and out; none when\n"
            "not given: the tensors already on the devices) and --peer-bw (a ring step;\n"
            "default half the link), and the longest call that fits.\n"
            "Reproduce the seed: clattn predict --preset seed\n" CLI_EXIT_HELP);
}

enum opt_id {
    OPT_NQ = 1, OPT_NK, OPT_BLOCK_M, OPT_BLOCK_N, OPT_WORKSPACE, OPT_PRESET, OPT_CAPACITY,
    OPT_MAX_ALLOC, OPT_CACHE, OPT_BANDWIDTH, OPT_PEAK, OPT_LATENCY, OPT_LAYERS, OPT_FREE,
    OPT_DEVICES, OPT_LINK_BW, OPT_PEER_BW,
};

static const cli_option own_options[] = {
    CLI_VALUE("nq", "NQ", OPT_NQ, "with --nk: one pair of unequal lengths instead\nof -N"),
    CLI_VALUE("nk", "NK", OPT_NK, "the key length of that pair"),
    CLI_VALUE("block-m", "M", OPT_BLOCK_M, "fused query tile (the device's choice, else 64)"),
    CLI_VALUE("block-n", "N", OPT_BLOCK_N, "fused key tile (the device's choice, else 64)"),
    CLI_VALUE("workspace", "BYTES", OPT_WORKSPACE,
              "naive path's extra workspace, e.g. CLBlast's (0)"),
    CLI_VALUE("preset", "seed", OPT_PRESET,
              "the seed's device figures: 256 MiB cache, 192\n"
              "GiB, 1000 TFLOP/s and 5 TB/s (ridge 200\n"
              "FLOP/byte); the figures below override it"),
    CLI_VALUE("capacity", "BYTES", OPT_CAPACITY,
              "device memory (K/M/G/T binary, KB/MB/GB/TB\ndecimal)"),
    CLI_VALUE("max-alloc", "BYTES", OPT_MAX_ALLOC, "largest single buffer"),
    CLI_VALUE("cache", "BYTES", OPT_CACHE, "last-level cache"),
    CLI_VALUE("bandwidth", "RATE", OPT_BANDWIDTH, "bytes/s (5e12, 5T, 3.35TB)"),
    CLI_VALUE("peak", "RATE", OPT_PEAK, "FLOP/s in the dtype (1e15, 989T)"),
    CLI_VALUE("launch-latency", "S", OPT_LATENCY, "seconds per kernel launch"),
    CLI_VALUE("layers", "L", OPT_LAYERS,
              "serving (Q8): a model of L attention layers of\n"
              "these heads: the tokens of KV cache that fit,\n"
              "and the decoding step's time per token at each\n"
              "row's Nk (Nq = --q-len, else 1)"),
    CLI_VALUE("free", "BYTES", OPT_FREE,
              "device memory for the KV cache (default: the\n"
              "device's capacity)"),
    CLI_VALUE("devices", "N", OPT_DEVICES,
              "Q9: the call spread over N devices like this\n"
              "one (2 to 65536)"),
    CLI_VALUE("link-bw", "RATE", OPT_LINK_BW,
              "each device's link to host memory, bytes/s\n"
              "each way (e.g. 50G for PCIe 5 x16)"),
    CLI_VALUE("peer-bw", "RATE", OPT_PEER_BW,
              "device to device, bytes/s (default: half\n"
              "--link-bw, host-staged)"),
};

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

/* How a device figure is written on the command line. */
enum figure_kind { FIGURE_BYTES, FIGURE_RATE, FIGURE_SECONDS };

static int give(clattn_figure *f, const char *s, enum figure_kind kind)
{
    uint64_t bytes = 0;
    double v = 0;
    int rc = kind == FIGURE_BYTES  ? cli_parse_bytes(s, &bytes)
             : kind == FIGURE_RATE ? parse_rate(s, &v)
                                   : cli_parse_double(s, &v);
    if (rc < 0 || !(v >= 0))
        return -1;
    f->value = kind == FIGURE_BYTES ? (double)bytes : v;
    f->source = CLATTN_SRC_GIVEN;
    return 0;
}

/* Stores one of predict's own options; 0, or CLI_EXIT_USAGE. */
static int set_option(void *state, const cli_option *option, const char *v)
{
    struct predict_args *a = state;
    struct predict_figures *g = &a->given;
    int rc = -1;
    switch ((enum opt_id)option->id) {
    case OPT_NQ: rc = parse_positive(v, &a->nq); break;
    case OPT_NK: rc = parse_positive(v, &a->nk); break;
    case OPT_BLOCK_M: rc = parse_positive(v, &a->block_m); break;
    case OPT_BLOCK_N: rc = parse_positive(v, &a->block_n); break;
    case OPT_WORKSPACE: rc = cli_parse_bytes(v, &a->workspace); break;
    case OPT_PRESET: a->preset = 1; rc = strcmp(v, "seed") ? -1 : 0; break;
    case OPT_CAPACITY: rc = give(&g->capacity, v, FIGURE_BYTES); break;
    case OPT_MAX_ALLOC: rc = give(&g->max_alloc, v, FIGURE_BYTES); break;
    case OPT_CACHE: rc = give(&g->cache, v, FIGURE_BYTES); break;
    case OPT_BANDWIDTH: rc = give(&g->bandwidth, v, FIGURE_RATE); break;
    case OPT_PEAK: rc = give(&g->peak, v, FIGURE_RATE); break;
    case OPT_LATENCY: rc = give(&g->latency, v, FIGURE_SECONDS); break;
    case OPT_LAYERS: rc = parse_positive(v, &a->layers); break;
    case OPT_FREE: rc = give(&a->free, v, FIGURE_BYTES); break;
    case OPT_DEVICES:
        rc = parse_positive(v, &a->devices) < 0 || a->devices < 2 || a->devices > 65536 ? -1 : 0;
        break;
    case OPT_LINK_BW: rc = parse_rate(v, &a->link_bw); break;
    case OPT_PEER_BW: rc = parse_rate(v, &a->peer_bw); break;
    }
    if (rc < 0)
        return cli_usage_error(CMD, "bad --%s '%.80s'", option->name, v ? v : "");
    return 0;
}

static const cli_default predict_defaults[] = {
    { CLI_DTYPE, "fp16" }, { CLI_CAUSAL, "none" }, { 0, NULL },
};

static const cli_command predict_command = {
    CMD, CLI_DEVICE | CLI_SHAPE | CLI_SIZES | CLI_LENS | CLI_DTYPE | CLI_CAUSAL | CLI_KV_LENS |
             CLI_SPLIT_KV | CLI_JSON | CLI_VARIANTS | CLI_DV | CLI_RANDOM_INPUTS | CLI_CACHE |
             CLI_Q_LENS,
    own_options, CLI_COUNT(own_options), set_option, usage, predict_defaults,
};

/* The shared options into the fields the tables read: the seed's shape
 * where nothing was given. */
static void from_call(struct predict_args *a)
{
    static const size_t seed_lens[] = { 1024, 4096, 16384 };
    const cli_call *c = &a->call;
    a->shape = (clattn_shape){
        .batch = c->batch ? c->batch : 8,
        .heads = c->heads ? c->heads : 32,
        .kv_heads = c->kv_heads,
        .head_dim = c->n_head_dims ? c->head_dims[0] : 128,
        .dtype = c->given & CLI_DTYPE ? c->dtype : CLATTN_F16,
    };
    if (!a->shape.kv_heads)
        a->shape.kv_heads = a->shape.heads;
    a->n_lens = c->n_lens ? c->n_lens : 3;
    memcpy(a->lens, c->n_lens ? c->lens : seed_lens, a->n_lens * sizeof a->lens[0]);
    a->q_len = c->q_len;
    a->kv_lens = c->kv_lens;
    a->n_kv_lens = c->n_kv_lens;
    a->split_kv = c->split_kv;
    a->split_given = (c->given & CLI_SPLIT_KV) != 0;
    a->causal = cli_call_causal(c);
    a->device = c->device;
    a->json = c->json;
    a->has_variant = cli_variant_any(&c->variant);
    a->has_cache = cli_cache_any(&c->cache) || c->q_lens;
}

/* Checks what single options cannot: lengths given one way only, the
 * heads, and --kv-lens against every row. */
static int check_args(const struct predict_args *a)
{
    if ((a->nq != 0) != (a->nk != 0))
        return cli_usage_error(CMD, "--nq and --nk go together");
    if (a->nq && (a->call.n_lens || a->q_len))
        return cli_usage_error(CMD, "give -N, --kv-len and --q-len, or --nq/--nk, not both");
    if (a->shape.heads % a->shape.kv_heads)
        return cli_usage_error(CMD, "-H %zu is not a multiple of --kv-heads %zu", a->shape.heads,
                               a->shape.kv_heads);
    size_t nk = a->nk, nq = a->nq;
    for (size_t i = 0; !a->nq && i < a->n_lens; i++)
        nk = i == 0 || a->lens[i] < nk ? a->lens[i] : nk;
    if (!a->nq)
        nq = a->q_len ? a->q_len : nk;
    int rc = cli_check_kv_lens(CMD, &a->call, a->shape.batch, nk, "the shape", CLI_EXIT_USAGE);
    if (rc == 0)
        rc = cli_check_q_lens(CMD, &a->call, a->shape.batch, nq, "the shape", CLI_EXIT_USAGE);
    /* A mask file must fit every row, before any device is opened. */
    for (size_t i = 0; rc == 0 && a->call.variant.mask && i < (a->nq ? 1 : a->n_lens); i++) {
        clattn_shape s = a->shape;
        s.kv_len = a->nq ? a->nk : a->lens[i];
        s.q_len = a->nq ? a->nq : a->q_len ? a->q_len : s.kv_len;
        clattn_model_variant v;
        clattn_options o;
        clattn_default_options(&o);
        rc = cli_variant_model(CMD, &a->call, &s, &v, &o);
    }
    return rc;
}

int predict_parse_args(int argc, char **argv, struct predict_args *a)
{
    memset(a, 0, sizeof *a);
    int rc = cli_parse_command(&predict_command, argc, argv, &a->call, a);
    if (rc)
        return rc;
    from_call(a);
    if ((rc = check_args(a)))
        cli_call_free(&a->call);
    return rc;
}
