/* SPDX-License-Identifier: MIT */
/*
 * The shared options, defined once (the table below: spelling, value, help,
 * what takes them), and the one parser every command uses (see options.h).
 */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "options.h"

/* The shared options' getopt values: above any character, below OWN_ID. */
enum shared_id {
    O_DEVICE = 256, O_SHAPE, O_BATCH, O_HEADS, O_KV_HEADS, O_HEAD_DIM, O_LEN, O_Q_LEN,
    O_DTYPE, O_CAUSAL, O_KV_LENS, O_SPLIT_KV, O_KERNEL, O_PATH, O_PARAMS, O_SEED, O_JSON,
    O_CSV, O_SOFTCAP, O_WINDOW, O_ALIBI, O_ALIBI_MAX_BIAS, O_ALIBI_SLOPES, O_SINKS, O_MASK,
    O_SCORE_MOD, O_MASK_MOD, O_DV, O_KV_TYPE, O_K_TYPE, O_V_TYPE, O_PAGE_SIZE, O_PACKED,
    O_Q_LENS,
};

/* One spelling of a shared option. An alias (help NULL) is another long
 * name of the entry before it. Where the command has `flag`, the option
 * reads a list or more words: its synopsis is synopsis_flag where given,
 * and help_flag follows its help, or replaces it where `replaces`. */
typedef struct shared_option {
    const char *name;
    char short_name;
    int has_arg;
    int id;
    unsigned bit;
    const char *synopsis, *help;
    unsigned flag;
    const char *synopsis_flag, *help_flag;
    int replaces;
} shared_option;

static const shared_option shared[] = {
    { "device", 0, required_argument, O_DEVICE, CLI_DEVICE, "--device SEL",
      "an index from clattn devices or a case-insensitive\n"
      "substring of \"platform: device\" (default\n"
      "$CLATTN_DEVICE, else the largest GPU, else the CPU)", 0, NULL, NULL, 0 },
    { "shape", 0, required_argument, O_SHAPE, CLI_SHAPE, "--shape B,H,Hkv,Nq,Nk,d",
      "batch, query heads, key/value heads (dividing H),\n"
      "query length, key length, head dim (1..576)", 0, NULL, NULL, 0 },
    { "batch", 'B', required_argument, O_BATCH, CLI_SIZES, "-B, --batch B",
      "batch: how many sequences", 0, NULL, NULL, 0 },
    { "heads", 'H', required_argument, O_HEADS, CLI_SIZES, "-H, --heads H", "query heads", 0,
      NULL, NULL, 0 },
    { "kv-heads", 0, required_argument, O_KV_HEADS, CLI_SIZES, "--kv-heads HKV",
      "key/value heads, dividing H (grouped-query\nattention)", 0, NULL, NULL, 0 },
    { "head-dim", 'd', required_argument, O_HEAD_DIM, CLI_SIZES, "-d, --head-dim D",
      "head dimension, 1..576", CLI_HEAD_DIMS, "-d, --head-dim D,...",
      "; several, separated by\ncommas, a shape each", 0 },
    { "len", 'N', required_argument, O_LEN, CLI_SIZES, "-N, --len, --kv-len N",
      "key length Nk; Nq = Nk unless --q-len", CLI_LENS, "-N, --len, --kv-len LIST",
      "; several,\nseparated by commas, a case each", 0 },
    { "kv-len", 0, required_argument, O_LEN, CLI_SIZES, NULL, NULL, 0, NULL, NULL, 0 },
    { "q-len", 0, required_argument, O_Q_LEN, CLI_SIZES, "--q-len NQ",
      "query length of every case (1: a decoding step)", 0, NULL, NULL, 0 },
    { "dtype", 0, required_argument, O_DTYPE, CLI_DTYPE, "--dtype T",
      "fp16 (f16, float16, half), fp32 (f32, float32,\nfloat) or bf16 (bfloat16)", 0, NULL,
      NULL, 0 },
    { "causal", 0, optional_argument, O_CAUSAL, CLI_CAUSAL, "--causal[=MODE]",
      "the causal mask: top-left (tl, yes; --causal alone)\n"
      "shows query i the keys j <= i, bottom-right (br)\n"
      "the keys j <= i + Nk - Nq, aligned to each\n"
      "sequence's length; none (no)", CLI_MASKS, NULL,
      "; both: none and\ntop-left, a row each", 0 },
    { "kv-lens", 0, required_argument, O_KV_LENS, CLI_KV_LENS, "--kv-lens L0,L1,...",
      "each sequence's number of keys: B values, each at\n"
      "most Nk (0: an empty sequence); keys past it are\n"
      "never read", 0, NULL, NULL, 0 },
    { "split-kv", 0, required_argument, O_SPLIT_KV, CLI_SPLIT_KV, "--split-kv N",
      "split each sequence's keys into N chunks on the\n"
      "fused path (flash-decoding); 0: the library's\n"
      "choice, 1: none", 0, NULL, NULL, 0 },
    { "kernel", 0, required_argument, O_KERNEL, CLI_KERNEL, "--kernel K",
      "the fused kernel: auto or a name clattn devices\n"
      "lists (an error where the device cannot run it)", CLI_ALL_KERNELS, NULL,
      ";\nall: every kernel of the table that runs here", 0 },
    { "path", 0, required_argument, O_PATH, CLI_PATH, "--path P", "naive, fused or auto",
      CLI_PATHS, NULL, "naive, fused, or both (also naive,fused)", 1 },
    { "params", 0, required_argument, O_PARAMS, CLI_PARAMS, "--params LIST",
      "the kernel's parameters beyond its tiles:\n"
      "name=value pairs separated by commas (an unknown\n"
      "name or a value out of range is an error)", 0, NULL, NULL, 0 },
    { "seed", 0, required_argument, O_SEED, CLI_SEED, "--seed N", "the random inputs' seed", 0,
      NULL, NULL, 0 },
    { "json", 0, optional_argument, O_JSON, CLI_JSON, "--json[=FILE]",
      "write the report as JSON to FILE (\"-\", or no\nFILE: stdout)", 0, NULL, NULL, 0 },
    { "csv", 0, optional_argument, O_CSV, CLI_CSV, "--csv[=FILE]",
      "write the rows as CSV to FILE (likewise)", 0, NULL, NULL, 0 },
    { "softcap", 0, required_argument, O_SOFTCAP, CLI_VARIANTS, "--softcap C",
      "cap each score: C tanh(s / C) (Gemma 2,\n"
      "FlashAttention's softcap); C > 0", 0, NULL, NULL, 0 },
    { "window", 0, required_argument, O_WINDOW, CLI_VARIANTS, "--window L,R",
      "sliding window: query i sees keys j with\n"
      "i + off - L <= j <= i + off + R, -1 leaving a side\n"
      "unbounded (FlashAttention's window_size; off is\n"
      "0 top-left, Nk - Nq otherwise)", 0, NULL, NULL, 0 },
    { "alibi", 0, no_argument, O_ALIBI, CLI_VARIANTS, "--alibi",
      "ALiBi: s -= slope |i + off - j|, the slopes from\n"
      "ggml's max_bias (8: the ALiBi paper's)", 0, NULL, NULL, 0 },
    { "alibi-max-bias", 0, required_argument, O_ALIBI_MAX_BIAS, CLI_VARIANTS,
      "--alibi-max-bias X", "ALiBi with slopes from max_bias X > 0", 0, NULL, NULL, 0 },
    { "alibi-slopes", 0, required_argument, O_ALIBI_SLOPES, CLI_VARIANTS,
      "--alibi-slopes FILE", "ALiBi with the slopes of a float32 .npy, [H] or\n"
      "[B, H] (one per sequence and head)", 0, NULL, NULL, 0 },
    { "sinks", 0, required_argument, O_SINKS, CLI_VARIANTS, "--sinks S",
      "attention sinks: each head's logit joins its\n"
      "softmax's denominator (gpt-oss); S a float32 .npy\n"
      "of [H] or a number for every head", CLI_RANDOM_INPUTS, NULL,
      ", or random\n(uniform in [-1, 1))", 0 },
    { "mask", 0, required_argument, O_MASK, CLI_VARIANTS, "--mask M",
      "a mask .npy broadcast to [B, H, Nq, Nk] (trailing\n"
      "dims Nq, Nk; leading ones B or 1, H or 1): bool\n"
      "keeps a key where true (PyTorch's attn_mask),\n"
      "float32, float16 or bfloat16 is added to the\n"
      "scores (-inf hides)", CLI_RANDOM_INPUTS, NULL,
      "; random: a boolean padding mask\n"
      "[B, 1, Nq, Nk] (each sequence's keys past a random\n"
      "length hidden, and 1 key in 8 at random), random-\n"
      "add: the same as float32 with values in [-1, 1)", 0 },
    { "score-mod", 0, required_argument, O_SCORE_MOD, CLI_VARIANTS, "--score-mod FILE",
      "OpenCL C defining float clattn_score_mod(float s,\n"
      "uint b, uint h, uint q, uint k) (FlexAttention's\n"
      "score_mod)", 0, NULL, NULL, 0 },
    { "mask-mod", 0, required_argument, O_MASK_MOD, CLI_VARIANTS, "--mask-mod FILE",
      "OpenCL C defining bool clattn_mask_mod(uint b,\n"
      "uint h, uint q, uint k), false hiding the key", 0, NULL, NULL, 0 },
    { "dv", 0, required_argument, O_DV, CLI_DV, "--dv N",
      "V's and O's head dimension when it differs from\n"
      "d (DeepSeek's MLA: 192 and 128), 1..512", 0, NULL, NULL, 0 },
    { "q-lens", 0, required_argument, O_Q_LENS, CLI_Q_LENS, "--q-lens L0,L1,...",
      "each sequence's number of queries: B values, each\n"
      "at most Nq (rows past it output zeros; with\n"
      "--packed, the packed queries)", 0, NULL, NULL, 0 },
    { "kv-type", 0, required_argument, O_KV_TYPE, CLI_CACHE, "--kv-type T",
      "the KV cache's storage, K and V: q8_0, q4_0 (34 and\n"
      "18 bytes per 32 values, ggml's), fp8_e4m3 (fp8: a\n"
      "byte per value times a per-tensor fp32 scale) or\n"
      "dtype (the shape's own)", 0, NULL, NULL, 0 },
    { "k-type", 0, required_argument, O_K_TYPE, CLI_CACHE, "--k-type T",
      "K's storage alone (the same names)", 0, NULL, NULL, 0 },
    { "v-type", 0, required_argument, O_V_TYPE, CLI_CACHE, "--v-type T",
      "V's storage alone", 0, NULL, NULL, 0 },
    { "page-size", 0, required_argument, O_PAGE_SIZE, CLI_CACHE, "--page-size N",
      "paged K and V: pages of N keys through a block\n"
      "table (vLLM's), 1..65536", 0, NULL, NULL, 0 },
    { "packed", 0, no_argument, O_PACKED, CLI_CACHE, "--packed",
      "pack Q, K, V and O by cu_seqlens (varlen) from\n"
      "--q-lens and --kv-lens (Nq and Nk without them)", 0, NULL, NULL, 0 },
};

#define N_SHARED (sizeof shared / sizeof shared[0])
#define HELP_COLUMN 24

/* ------------------------------------------------------------------ help */

void cli_print_option(FILE *f, const char *synopsis, const char *help)
{
    if (strlen(synopsis) + 2 >= HELP_COLUMN - 1)
        fprintf(f, "  %s\n%*s", synopsis, HELP_COLUMN, "");
    else
        fprintf(f, "  %-*s", HELP_COLUMN - 2, synopsis);
    for (const char *line = help; *line;) {
        const size_t n = strcspn(line, "\n");
        fprintf(f, "%.*s\n", (int)n, line);
        line += n + (line[n] == '\n');
        if (*line)
            fprintf(f, "%*s", HELP_COLUMN, "");
    }
}

static const char *default_of(const cli_command *cmd, unsigned bit)
{
    for (const cli_default *d = cmd->defaults; d && d->option; d++)
        if (d->option == bit)
            return d->text;
    return NULL;
}

/* A shared option's help as `cmd` takes it: the variant for its flag, and
 * its default (the sizes share one bit, so they show none). */
static const char *shared_help(const cli_command *cmd, const shared_option *o, char *buf,
                               size_t cap)
{
    const int flagged = o->flag && (cmd->takes & o->flag);
    const char *def = o->bit != CLI_SIZES ? default_of(cmd, o->bit) : NULL;
    if (flagged && o->replaces)
        snprintf(buf, cap, "%s", o->help_flag);
    else
        snprintf(buf, cap, "%s%s", o->help, flagged ? o->help_flag : "");
    if (def) {
        const size_t used = strlen(buf);
        const char *last = strrchr(buf, '\n');
        const size_t last_len = used - (last ? (size_t)(last + 1 - buf) : 0);
        snprintf(buf + used, cap - used, "%s(default %s)",
                 last_len + strlen(def) + 11 > 54 ? "\n" : " ", def);
    }
    return buf;
}

void cli_print_options(const cli_command *cmd, FILE *f)
{
    for (size_t i = 0; i < cmd->n_own; i++)
        if (cmd->own[i].help) /* NULL: listed with the entry before it */
            cli_print_option(f, cmd->own[i].synopsis, cmd->own[i].help);
    for (size_t i = 0; i < N_SHARED; i++) {
        const shared_option *o = &shared[i];
        if (!o->help || !(cmd->takes & o->bit))
            continue;
        char help[512];
        const int flagged = o->flag && (cmd->takes & o->flag) && o->synopsis_flag;
        cli_print_option(f, flagged ? o->synopsis_flag : o->synopsis,
                         shared_help(cmd, o, help, sizeof help));
    }
    cli_print_option(f, "-h, --help", "this text");
}

/* ---------------------------------------------------------------- values */

/* The option's first spelling, for messages. */
static const char *spelling(const shared_option *o, char *buf, size_t cap)
{
    if (o->short_name)
        snprintf(buf, cap, "-%c", o->short_name);
    else
        snprintf(buf, cap, "--%s", o->name);
    return buf;
}

static int positive(const char *cmd, const char *opt, const char *v, size_t *out)
{
    if (cli_parse_size(v, out) < 0 || *out == 0)
        return cli_usage_error(cmd, "bad %s '%.80s' (a positive integer)", opt, v);
    return 0;
}

/* A list of positive sizes, at most `cap`; a single one where `list` is 0. */
static int positive_list(const char *cmd, const char *opt, const char *v, int list, size_t *out,
                         size_t cap, size_t *n)
{
    if (!list) {
        *n = 1;
        return positive(cmd, opt, v, out);
    }
    int rc = cli_parse_size_list(v, out, cap, n);
    for (size_t i = 0; rc == 0 && i < *n; i++)
        rc = out[i] ? 0 : -1;
    if (rc < 0)
        return cli_usage_error(cmd, "bad %s '%.80s' (up to %zu positive integers separated by "
                               "commas)", opt, v, cap);
    return 0;
}

static int parse_shape(const char *cmd, const char *v, cli_call *c)
{
    size_t s[6], n;
    if (cli_parse_size_list(v, s, 6, &n) < 0 || n != 6)
        return cli_usage_error(cmd, "--shape needs B,H,Hkv,Nq,Nk,d, got '%.80s'", v);
    c->batch = s[0];
    c->heads = s[1];
    c->kv_heads = s[2];
    c->q_len = s[3];
    c->lens[0] = s[4];
    c->n_lens = 1;
    c->head_dims[0] = s[5];
    c->n_head_dims = 1;
    return 0;
}

static int parse_masks(const char *cmd, unsigned takes, const char *v, cli_call *c)
{
    clattn_causal mode;
    if ((takes & CLI_MASKS) && v && !strcmp(v, "both"))
        c->masks = CLI_MASKS_BOTH;
    else if (cli_parse_causal(v, &mode) == 0)
        c->masks = CLI_MASK(mode);
    else
        return cli_usage_error(cmd, "bad --causal '%.80s' (none, top-left or bottom-right%s)",
                               v, takes & CLI_MASKS ? ", or both" : "");
    return 0;
}

static int parse_paths(const char *cmd, unsigned takes, const char *v, cli_call *c)
{
    clattn_path one;
    const int several = takes & CLI_PATHS;
    if (!strcmp(v, "both") || !strcmp(v, "naive,fused") || !strcmp(v, "fused,naive"))
        c->paths = CLI_PATHS_BOTH;
    else if (cli_parse_path(v, &one) == 0)
        c->paths = CLI_PATH_BIT(one);
    else
        c->paths = 0;
    if (!c->paths || (several && c->paths == CLI_PATH_BIT(CLATTN_PATH_AUTO)) ||
        (!several && c->paths == CLI_PATHS_BOTH))
        return cli_usage_error(cmd, "bad --path '%.80s' (%s)", v,
                               several ? "naive, fused or both" : "naive, fused or auto");
    return 0;
}

/* --kv-lens, --q-lens: a list of lengths into a new array. */
static int parse_lens_list(const char *cmd, const char *opt, const char *v, uint32_t **lens,
                           size_t *n)
{
    const size_t cap = cli_list_items(v);
    free(*lens);
    *lens = malloc(cap * sizeof **lens);
    if (!*lens) {
        cli_error("%s: out of memory for %s", cmd, opt);
        return CLI_EXIT_FAILURE;
    }
    if (cli_parse_lens(v, *lens, cap, n) < 0)
        return cli_usage_error(cmd, "bad %s '%.80s' (lengths separated by commas)", opt, v);
    return 0;
}

static int parse_kv_lens(const char *cmd, const char *v, cli_call *c)
{
    return parse_lens_list(cmd, "--kv-lens", v, &c->kv_lens, &c->n_kv_lens);
}

int cli_parse_kv_type(const char *s, clattn_kv_type *out)
{
    static const struct { const char *name; clattn_kv_type type; } names[] = {
        { "q8_0", CLATTN_KV_Q8_0 }, { "q4_0", CLATTN_KV_Q4_0 },
        { "fp8_e4m3", CLATTN_KV_FP8_E4M3 }, { "fp8", CLATTN_KV_FP8_E4M3 },
        { "e4m3", CLATTN_KV_FP8_E4M3 }, { "dtype", CLATTN_KV_DTYPE },
    };
    for (size_t i = 0; s && i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(s, names[i].name)) {
            *out = names[i].type;
            return 0;
        }
    return -1;
}

const char *cli_kv_type_name(clattn_kv_type t, clattn_dtype dtype)
{
    if (t == CLATTN_KV_DTYPE)
        return cli_dtype_name(dtype);
    const char *name = clattn_kv_type_name(t, dtype);
    return name ? name : "?";
}

static int set_cache(const char *cmd, enum shared_id id, const char *v, cli_cache *c)
{
    clattn_kv_type t;
    size_t n;
    switch (id) {
    case O_KV_TYPE: case O_K_TYPE: case O_V_TYPE:
        if (cli_parse_kv_type(v, &t) < 0)
            return cli_usage_error(cmd, "bad --%s '%.80s' (q8_0, q4_0, fp8_e4m3 or dtype)",
                                   id == O_KV_TYPE ? "kv-type" : id == O_K_TYPE ? "k-type"
                                                                                : "v-type", v);
        if (id != O_V_TYPE)
            c->k_type = t;
        if (id != O_K_TYPE)
            c->v_type = t;
        return 0;
    case O_PAGE_SIZE:
        if (cli_parse_size(v, &n) < 0 || n < 1 || n > 65536)
            return cli_usage_error(cmd, "bad --page-size '%.80s' (keys per page, 1..65536)", v);
        c->page_size = n;
        return 0;
    case O_PACKED: c->packed = 1; return 0;
    default: break;
    }
    return CLI_EXIT_USAGE;
}

static int parse_kernel(const char *cmd, unsigned takes, const char *v, cli_call *c)
{
    c->all_kernels = (takes & CLI_ALL_KERNELS) && !strcmp(v, "all");
    if (!c->all_kernels && cli_parse_fused_kernel(v, &c->kernel) < 0)
        return cli_usage_error(cmd, "bad --kernel: %s", clattn_last_error_detail());
    return 0;
}

/* --window L,R: each side an integer >= -1 (-1: unbounded). */
static int parse_window(const char *cmd, const char *v, cli_variant *w)
{
    long side[2];
    const char *p = v;
    for (int i = 0; i < 2; i++) {
        char *end;
        errno = 0;
        side[i] = strtol(p, &end, 10);
        const int sep = i == 0 ? ',' : '\0';
        if (end == p || *end != sep || errno || side[i] < -1 || side[i] > INT32_MAX ||
            !(isdigit((unsigned char)*p) || *p == '-'))
            return cli_usage_error(cmd, "bad --window '%.80s' (L,R: keys before and after the "
                                   "diagonal, each -1 for unbounded or >= 0)", v);
        p = end + 1;
    }
    w->window_left = (int32_t)side[0];
    w->window_right = (int32_t)side[1];
    return 0;
}

/* A positive number a float holds (--softcap, --alibi-max-bias). */
static int positive_float(const char *cmd, const char *opt, const char *v, float *out)
{
    double x;
    if (cli_parse_double(v, &x) || !(x > 0) || x > FLT_MAX || !((float)x > 0))
        return cli_usage_error(cmd, "bad %s '%.80s' (a positive number)", opt, v);
    *out = (float)x;
    return 0;
}

/* The random forms of --sinks and --mask need a command that draws its
 * inputs. */
static int random_value(const char *cmd, unsigned takes, const char *opt, const char *v,
                        const char *const *forms)
{
    for (const char *const *f = forms; *f; f++)
        if (!strcmp(v, *f) && !(takes & CLI_RANDOM_INPUTS))
            return cli_usage_error(cmd, "%s %s: %s draws no inputs (give a .npy file)", opt, v,
                                   cmd);
    return 0;
}

static int set_variant(const char *cmd, unsigned takes, enum shared_id id, const char *v,
                       cli_variant *w)
{
    static const char *const sink_forms[] = { "random", NULL };
    static const char *const mask_forms[] = { "random", "random-add", NULL };
    size_t n;
    switch (id) {
    case O_SOFTCAP: return positive_float(cmd, "--softcap", v, &w->softcap);
    case O_WINDOW: return parse_window(cmd, v, w);
    case O_ALIBI: w->alibi = 1; return 0;
    case O_ALIBI_MAX_BIAS:
        w->alibi = 1;
        w->alibi_max_bias_given = 1;
        return positive_float(cmd, "--alibi-max-bias", v, &w->alibi_max_bias);
    case O_ALIBI_SLOPES: w->alibi = 1; w->alibi_slopes = v; return 0;
    case O_SINKS: w->sinks = v; return random_value(cmd, takes, "--sinks", v, sink_forms);
    case O_MASK: w->mask = v; return random_value(cmd, takes, "--mask", v, mask_forms);
    case O_SCORE_MOD: w->score_mod = v; return 0;
    case O_MASK_MOD: w->mask_mod = v; return 0;
    case O_DV:
        if (cli_parse_size(v, &n) < 0 || n == 0 || n > 512)
            return cli_usage_error(cmd, "bad --dv '%.80s' (V's head dimension, 1..512)", v);
        w->head_dim_v = n;
        return 0;
    default: break;
    }
    return CLI_EXIT_USAGE;
}

/* Stores one shared option's value; 0, or the status after the message. */
static int set_shared(const char *cmd, unsigned takes, const shared_option *o, const char *v,
                      cli_call *c)
{
    char name[32];
    const char *opt = spelling(o, name, sizeof name);
    size_t n, one;
    c->given |= o->bit;
    switch ((enum shared_id)o->id) {
    case O_DEVICE: c->device = v; return 0;
    case O_SHAPE: return parse_shape(cmd, v, c);
    case O_BATCH: return positive(cmd, opt, v, &c->batch);
    case O_HEADS: return positive(cmd, opt, v, &c->heads);
    case O_KV_HEADS: return positive(cmd, opt, v, &c->kv_heads);
    case O_Q_LEN: return positive(cmd, opt, v, &c->q_len);
    case O_HEAD_DIM:
        return positive_list(cmd, opt, v, takes & CLI_HEAD_DIMS, c->head_dims,
                             CLI_MAX_HEAD_DIMS, &c->n_head_dims);
    case O_LEN:
        if (c->n_lens)
            return cli_usage_error(cmd, "give the lengths once (-N, --len or --kv-len), not "
                                   "'%.80s' again", v);
        return positive_list(cmd, opt, v, takes & CLI_LENS, c->lens, CLI_MAX_LENS, &c->n_lens);
    case O_DTYPE:
        if (cli_parse_dtype(v, &c->dtype) < 0)
            return cli_usage_error(cmd, "bad --dtype '%.80s' (fp32, fp16 or bf16)", v);
        return 0;
    case O_CAUSAL: return parse_masks(cmd, takes, v, c);
    case O_KV_LENS: return parse_kv_lens(cmd, v, c);
    case O_SPLIT_KV:
        if (cli_parse_size(v, &n) < 0 || n > UINT32_MAX)
            return cli_usage_error(cmd, "bad --split-kv '%.80s' (0 .. 4294967295)", v);
        c->split_kv = (uint32_t)n;
        return 0;
    case O_KERNEL: return parse_kernel(cmd, takes, v, c);
    case O_PATH: return parse_paths(cmd, takes, v, c);
    case O_PARAMS:
        if (cli_parse_params(v) < 0)
            return cli_usage_error(cmd, "bad --params '%.80s' (name=value pairs separated by "
                                   "commas)", v);
        c->params = v;
        return 0;
    case O_SEED:
        if (cli_parse_size(v, &one) < 0)
            return cli_usage_error(cmd, "bad --seed '%.80s' (a non-negative integer)", v);
        c->seed = one;
        return 0;
    case O_JSON: c->json = v ? v : "-"; return 0;
    case O_CSV: c->csv = v ? v : "-"; return 0;
    case O_SOFTCAP: case O_WINDOW: case O_ALIBI: case O_ALIBI_MAX_BIAS: case O_ALIBI_SLOPES:
    case O_SINKS: case O_MASK: case O_SCORE_MOD: case O_MASK_MOD: case O_DV:
        return set_variant(cmd, takes, (enum shared_id)o->id, v, &c->variant);
    case O_KV_TYPE: case O_K_TYPE: case O_V_TYPE: case O_PAGE_SIZE: case O_PACKED:
        return set_cache(cmd, (enum shared_id)o->id, v, &c->cache);
    case O_Q_LENS: return parse_lens_list(cmd, "--q-lens", v, &c->q_lens, &c->n_q_lens);
    }
    return CLI_EXIT_USAGE;
}

/* ---------------------------------------------------------------- parser */

/* getopt_long's values for the command's own options: own[i] is OWN_ID + i. */
#define OWN_ID 1024

/* getopt_long's table: the shared options `takes` names, then the
 * command's own, then --help; and the short options among them. */
static int build_table(const cli_command *cmd, struct option *longs, size_t cap, char *shorts,
                       size_t shorts_cap)
{
    size_t n = 0, s = 0;
    shorts[s++] = '+'; /* options end at the first operand: no command takes one */
    shorts[s++] = ':';
    shorts[s++] = 'h';
    for (size_t i = 0; i < N_SHARED && n < cap; i++) {
        const shared_option *o = &shared[i];
        if (!(cmd->takes & o->bit))
            continue;
        longs[n++] = (struct option){ o->name, o->has_arg, NULL, o->id };
        if (o->short_name && s + 2 < shorts_cap) {
            shorts[s++] = o->short_name;
            shorts[s++] = ':';
        }
    }
    for (size_t i = 0; i < cmd->n_own && n < cap; i++)
        longs[n++] = (struct option){ cmd->own[i].name, cmd->own[i].has_arg, NULL,
                                      OWN_ID + (int)i };
    if (n + 2 > cap)
        return -1;
    longs[n++] = (struct option){ "help", no_argument, NULL, 'h' };
    longs[n] = (struct option){ NULL, 0, NULL, 0 };
    shorts[s] = '\0';
    return 0;
}

/* Stores one of the command's own options. */
static int set_own(const cli_command *cmd, const cli_option *o, const char *v, void *state)
{
    char *field = (char *)state + o->offset;
    switch (o->store) {
    case CLI_STORE_TRUE:
    case CLI_STORE_FALSE: {
        const int on = o->store == CLI_STORE_TRUE;
        memcpy(field, &on, sizeof on);
        return 0;
    }
    case CLI_STORE_TEXT: memcpy(field, &v, sizeof v); return 0;
    case CLI_STORE_CALL: return cmd->set_own(state, o, v);
    }
    return CLI_EXIT_USAGE;
}

static const shared_option *shared_of(int opt)
{
    for (size_t i = 0; i < N_SHARED; i++)
        if (shared[i].id == opt || (shared[i].short_name && shared[i].short_name == opt))
            return &shared[i];
    return NULL;
}

/* An optional value may come as the next word: it is not an option, or it
 * is "-" (stdout). */
static const char *optional_value(int argc, char **argv)
{
    if (optarg || optind >= argc)
        return optarg;
    const char *next = argv[optind];
    if (next[0] == '-' && next[1] != '\0')
        return NULL;
    optind++;
    return next;
}

/* What a single option cannot check: the shape given one way. */
static int check_call(const cli_command *cmd, const cli_call *c)
{
    if ((c->given & CLI_SHAPE) && (c->given & CLI_SIZES))
        return cli_usage_error(cmd->name, "give the shape once: --shape, or -B, -H, --kv-heads, "
                               "-d, -N, --q-len");
    if (c->variant.alibi_slopes && c->variant.alibi_max_bias_given)
        return cli_usage_error(cmd->name, "give the ALiBi slopes once: --alibi-slopes or "
                               "--alibi-max-bias");
    if (c->cache.packed && c->cache.page_size)
        return cli_usage_error(cmd->name, "--packed keys take no pages (--page-size): give one "
                               "of them");
    return 0;
}

int cli_parse_command(const cli_command *cmd, int argc, char **argv, cli_call *call,
                      void *state)
{
    struct option longs[96];
    char shorts[32];
    memset(call, 0, sizeof *call);
    call->variant.window_left = call->variant.window_right = -1;
    call->variant.alibi_max_bias = 8.0f;
    if (build_table(cmd, longs, 96, shorts, sizeof shorts) < 0) {
        cli_error("%s: too many options", cmd->name);
        return CLI_EXIT_FAILURE;
    }
    optind = 1;
    int rc = 0, opt;
    while (rc == 0 && (opt = cli_getopt(cmd->name, argc, argv, shorts, longs)) != -1) {
        const shared_option *o = opt >= OWN_ID ? NULL : shared_of(opt);
        if (opt == '?') {
            rc = CLI_EXIT_USAGE;
        } else if (opt == 'h') {
            cmd->usage(cmd, stdout);
            rc = 1;
        } else if (opt >= OWN_ID && (size_t)(opt - OWN_ID) < cmd->n_own) {
            rc = set_own(cmd, &cmd->own[opt - OWN_ID], optarg, state);
        } else if (o) {
            const char *v = o->has_arg == optional_argument ? optional_value(argc, argv) : optarg;
            rc = v && !*v ? cli_usage_error(cmd->name, "option --%s needs a value", o->name)
                          : set_shared(cmd->name, cmd->takes, o, v, call);
        } else {
            rc = CLI_EXIT_USAGE;
        }
    }
    if (rc == 0)
        rc = check_call(cmd, call);
    if (rc)
        cli_call_free(call);
    return rc;
}

void cli_call_free(cli_call *call)
{
    free(call->kv_lens);
    call->kv_lens = NULL;
    call->n_kv_lens = 0;
    free(call->q_lens);
    call->q_lens = NULL;
    call->n_q_lens = 0;
}

/* --------------------------------------------------------------- results */

clattn_causal cli_call_causal(const cli_call *c)
{
    for (int m = CLATTN_CAUSAL_NONE; m <= CLATTN_CAUSAL_BOTTOM_RIGHT; m++)
        if (c->masks & CLI_MASK(m))
            return (clattn_causal)m;
    return CLATTN_CAUSAL_NONE;
}

clattn_path cli_call_path(const cli_call *c)
{
    for (int p = CLATTN_PATH_AUTO; p <= CLATTN_PATH_FUSED; p++)
        if (c->paths & CLI_PATH_BIT(p))
            return (clattn_path)p;
    return CLATTN_PATH_AUTO;
}

void cli_call_options(const cli_call *c, clattn_options *o)
{
    o->causal = cli_call_causal(c);
    o->path = cli_call_path(c);
    o->fused_kernel = c->kernel;
    o->split_kv = c->split_kv;
    o->kv_lens = c->kv_lens;
    o->q_lens = c->q_lens;
    o->kernel_params = c->params;
    o->softcap = c->variant.softcap;
    o->window_left = c->variant.window_left;
    o->window_right = c->variant.window_right;
    o->head_dim_v = c->variant.head_dim_v;
    o->k_type = c->cache.k_type;
    o->v_type = c->cache.v_type;
}

int cli_check_shape(const char *cmd, const clattn_shape *s)
{
    if (clattn_shape_check(s) == CLATTN_OK)
        return 0;
    return cli_usage_error(cmd, "bad shape: %s", clattn_last_error_detail());
}

/* One list of lengths against B sequences of at most `max` each. */
static int check_lens(const char *cmd, const char *opt, const uint32_t *lens, size_t n,
                      size_t batch, size_t max, const char *dim, const char *where, int status)
{
    char msg[320];
    size_t b = 0;
    while (lens && n == batch && b < batch && lens[b] <= max)
        b++;
    if (!lens || b == batch)
        return 0;
    if (n != batch)
        snprintf(msg, sizeof msg, "%s gives %zu lengths; %s has B = %zu sequences (one "
                 "length each)", opt, n, where, batch);
    else
        snprintf(msg, sizeof msg, "%s: sequence %zu has %u %s, more than the %s = %zu of %s",
                 opt, b, lens[b], dim[0] == 'k' ? "keys" : "queries",
                 dim[0] == 'k' ? "Nk" : "Nq", max, where);
    if (status == CLI_EXIT_USAGE)
        return cli_usage_error(cmd, "%s", msg);
    cli_error("%s: %s", cmd, msg);
    return status;
}

int cli_check_kv_lens(const char *cmd, const cli_call *c, size_t batch, size_t kv_len,
                      const char *where, int status)
{
    return check_lens(cmd, "--kv-lens", c->kv_lens, c->n_kv_lens, batch, kv_len, "k", where,
                      status);
}

int cli_check_q_lens(const char *cmd, const cli_call *c, size_t batch, size_t q_len,
                     const char *where, int status)
{
    return check_lens(cmd, "--q-lens", c->q_lens, c->n_q_lens, batch, q_len, "q", where,
                      status);
}
