/* SPDX-License-Identifier: MIT */
/*
 * The command line of every clattn command: the options the commands
 * share are defined once here (a table in options.c: spelling, value,
 * help line, parser), and one parser over getopt_long (cli_getopt) reads
 * them and each command's own. A command says which shared options it
 * takes (cli_command.takes) and lists its own (cli_option: spelling, help,
 * and where the value goes: a field of the command's state, or its
 * callback).
 *
 * Shared spellings: --device SEL; the shape as --shape B,H,Hkv,Nq,Nk,d or
 * -B/--batch, -H/--heads, --kv-heads, -d/--head-dim, -N/--len/--kv-len,
 * --q-len; --dtype; --causal[=MODE]; --kv-lens; --split-kv; --kernel;
 * --path; --params; --seed; --json[=FILE]; --csv[=FILE]; the variants
 * (--softcap, --window, --alibi, --alibi-max-bias, --alibi-slopes, --sinks,
 * --mask, --score-mod, --mask-mod, --dv); the KV cache (--kv-type,
 * --k-type, --v-type, --page-size, --packed) and --q-lens; -h/--help. An
 * option whose value is optional (--causal, --json, --csv) also takes it as
 * the next word when that word is not an option ("--causal both", "--json
 * out.json", "--json -"): no command takes operands, so nothing else could
 * be meant.
 */
#ifndef CLATTN_CLI_OPTIONS_H
#define CLATTN_CLI_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "clattn/clattn.h"

/* The shared options a command takes, as bits of cli_command.takes. */
enum {
    CLI_DEVICE = 1 << 0,   /* --device SEL */
    CLI_SHAPE = 1 << 1,    /* --shape B,H,Hkv,Nq,Nk,d */
    CLI_SIZES = 1 << 2,    /* -B -H --kv-heads -d -N --q-len and their long forms */
    CLI_DTYPE = 1 << 3,    /* --dtype */
    CLI_CAUSAL = 1 << 4,   /* --causal[=MODE] */
    CLI_KV_LENS = 1 << 5,  /* --kv-lens */
    CLI_SPLIT_KV = 1 << 6, /* --split-kv */
    CLI_KERNEL = 1 << 7,   /* --kernel */
    CLI_PATH = 1 << 8,     /* --path */
    CLI_PARAMS = 1 << 9,   /* --params */
    CLI_SEED = 1 << 10,    /* --seed */
    CLI_JSON = 1 << 11,    /* --json[=FILE] */
    CLI_CSV = 1 << 12,     /* --csv[=FILE] */
    CLI_VARIANTS = 1 << 13, /* --softcap --window --alibi[-max-bias|-slopes] --sinks --mask
                             * --score-mod --mask-mod */
    CLI_DV = 1 << 14,      /* --dv */
    CLI_CACHE = 1 << 15,   /* --kv-type --k-type --v-type --page-size --packed */
    CLI_Q_LENS = 1 << 22,  /* --q-lens */
    /* How a command takes some of them. */
    CLI_MASKS = 1 << 16,     /* --causal both: several masks, a row each */
    CLI_PATHS = 1 << 17,     /* --path both / naive,fused: several paths, not auto */
    CLI_ALL_KERNELS = 1 << 18, /* --kernel all */
    CLI_LENS = 1 << 19,      /* -N takes a list, a case per length */
    CLI_HEAD_DIMS = 1 << 20, /* -d takes a list */
    CLI_RANDOM_INPUTS = 1 << 21, /* --sinks random, --mask random: the command draws its
                                  * inputs */
};

#define CLI_MAX_LENS 64     /* -N's lengths */
#define CLI_MAX_HEAD_DIMS 8 /* -d's head dims */

/* The masks and paths --causal and --path give, as bits. */
#define CLI_MASK(causal) (1 << (causal)) /* CLI_MASK(CLATTN_CAUSAL_NONE) ... */
#define CLI_MASKS_BOTH (CLI_MASK(CLATTN_CAUSAL_NONE) | CLI_MASK(CLATTN_CAUSAL_TOP_LEFT))
#define CLI_PATH_BIT(path) (1 << (path))  /* CLI_PATH_BIT(CLATTN_PATH_NAIVE) ... */
#define CLI_PATHS_BOTH (CLI_PATH_BIT(CLATTN_PATH_NAIVE) | CLI_PATH_BIT(CLATTN_PATH_FUSED))

/* The attention variants as given (CLI_VARIANTS, CLI_DV); variant.h loads
 * the tensors and snippets they name. */
typedef struct cli_variant {
    float softcap;                     /* 0: none */
    int32_t window_left, window_right; /* -1, -1 (unbounded): no window */
    int alibi;                         /* --alibi, --alibi-max-bias or --alibi-slopes */
    float alibi_max_bias;              /* ggml's max_bias: 8 unless given */
    int alibi_max_bias_given;
    const char *alibi_slopes;          /* FILE.npy, or NULL */
    const char *sinks;                 /* FILE.npy, "random" or a number, or NULL */
    const char *mask;                  /* FILE.npy, "random" or "random-add", or NULL */
    const char *score_mod, *mask_mod;  /* FILE.cl, or NULL */
    size_t head_dim_v;                 /* --dv; 0: d */
} cli_variant;

/* The KV cache as given (CLI_CACHE); kvcache.h builds its tensors. */
typedef struct cli_cache {
    clattn_kv_type k_type, v_type; /* CLATTN_KV_DTYPE: the shape's dtype */
    size_t page_size;              /* 0: not paged */
    int packed;                    /* --packed: Q, K, V, O packed by cu_seqlens */
} cli_cache;

/* The shared options as given. A size, count or list of 0 entries was not
 * given; `given` has the CLI_* bit of every shared option that was. */
typedef struct cli_call {
    unsigned given;
    const char *device;
    size_t batch, heads, kv_heads, q_len;
    size_t head_dims[CLI_MAX_HEAD_DIMS], n_head_dims;
    size_t lens[CLI_MAX_LENS], n_lens; /* Nk: -N's, or --shape's one */
    clattn_dtype dtype;
    int masks;                         /* CLI_MASK bits */
    int paths;                         /* CLI_PATH_BIT bits */
    clattn_fused_kernel kernel;
    int all_kernels;                   /* --kernel all */
    uint32_t *kv_lens;                 /* malloc'd, n_kv_lens of them */
    size_t n_kv_lens;
    uint32_t *q_lens;                  /* --q-lens: malloc'd, n_q_lens of them */
    size_t n_q_lens;
    uint32_t split_kv;
    const char *params;
    uint64_t seed;
    const char *json, *csv;            /* "-": stdout */
    cli_variant variant;
    cli_cache cache;
} cli_call;

/* A shared option's default, shown in the command's --help. */
typedef struct cli_default {
    unsigned option; /* a CLI_* bit */
    const char *text;
} cli_default;

/* Where one of a command's own options puts its value. */
typedef enum cli_store {
    CLI_STORE_CALL = 0, /* set_own(state, option, value) */
    CLI_STORE_TRUE,     /* the int at `offset` in the state becomes 1 */
    CLI_STORE_FALSE,    /* the int at `offset` becomes 0 */
    CLI_STORE_TEXT,     /* the const char * at `offset` becomes the value */
} cli_store;

/* One of a command's own options: its spelling, where its value goes, and
 * what --help says of it. */
typedef struct cli_option {
    const char *name;
    int has_arg;
    int id;               /* for set_own to tell them apart */
    cli_store store;
    size_t offset;        /* in the command's state, for the CLI_STORE_* kinds */
    const char *synopsis; /* as --help shows it: "--seconds S" */
    const char *help;     /* lines separated by '\n'; NULL: described with the
                           * option before it */
} cli_option;

/* Table entries: a flag set or cleared, a text kept, a value parsed by
 * set_own. */
#define CLI_FLAG(name, type, field, help) \
    { name, no_argument, 0, CLI_STORE_TRUE, offsetof(type, field), "--" name, help }
#define CLI_UNFLAG(name, type, field, help) \
    { name, no_argument, 0, CLI_STORE_FALSE, offsetof(type, field), "--" name, help }
#define CLI_TEXT(name, metavar, type, field, help) \
    { name, required_argument, 0, CLI_STORE_TEXT, offsetof(type, field), "--" name " " metavar, \
      help }
#define CLI_VALUE(name, metavar, id, help) \
    { name, required_argument, id, CLI_STORE_CALL, 0, "--" name " " metavar, help }

typedef struct cli_command {
    const char *name;
    unsigned takes;                /* CLI_* bits */
    const cli_option *own;         /* `n_own` of them; may be NULL */
    size_t n_own;
    /* Stores a CLI_STORE_CALL option's value: 0, or CLI_EXIT_USAGE after
     * cli_usage_error. */
    int (*set_own)(void *state, const cli_option *option, const char *value);
    /* The whole --help on `f`; it prints the options' lines with
     * cli_print_options. */
    void (*usage)(const struct cli_command *cmd, FILE *f);
    const cli_default *defaults;   /* {0}-terminated; may be NULL */
} cli_command;

#define CLI_COUNT(array) (sizeof(array) / sizeof((array)[0]))

/* Parses argv (argv[0] the command's name) into *call and, through
 * set_own, the command's own state. 0 to go on (cli_call_free the call
 * afterwards), 1 after --help was printed, CLI_EXIT_USAGE after one usage
 * error line; *call holds nothing to free unless 0. */
int cli_parse_command(const cli_command *cmd, int argc, char **argv, cli_call *call,
                      void *state);
void cli_call_free(cli_call *call);

/* The help lines of the command's own options, then of the shared ones it
 * takes (with its defaults), then -h, --help. */
void cli_print_options(const cli_command *cmd, FILE *f);
/* One help line in the same layout: the synopsis, then the help's lines
 * ('\n' between them) in a column. */
void cli_print_option(FILE *f, const char *synopsis, const char *help);

/* What the call asks of the library: the mask and path (a command taking
 * one of each), kernel, split, lengths (kv_lens, q_lens) and parameters,
 * the softcap, window and d_v, the cache's storage types, over `o`'s other
 * fields (the variants' tensors and snippets: variant.h; the cache's pages
 * and packing: kvcache.h). */
void cli_call_options(const cli_call *call, clattn_options *o);

/* The one mask of --causal (none when not given) and the one path of
 * --path (auto when not given), for commands that take one. */
clattn_causal cli_call_causal(const cli_call *call);
clattn_path cli_call_path(const cli_call *call);

/* A shape the library refuses is a usage error, the same in every command:
 * "bad shape: <the library's detail>". 0, or CLI_EXIT_USAGE after the line. */
int cli_check_shape(const char *cmd, const clattn_shape *shape);

/* --kv-lens against a batch of `batch` sequences of at most `kv_len` keys:
 * one length each, none above Nk. `where` names what holds the shape ("the
 * rows", "q.npy"). 0, or `status` after the message (usage or failure). */
int cli_check_kv_lens(const char *cmd, const cli_call *call, size_t batch, size_t kv_len,
                      const char *where, int status);
/* --q-lens likewise against Nq. */
int cli_check_q_lens(const char *cmd, const cli_call *call, size_t batch, size_t q_len,
                     const char *where, int status);

/* q8_0, q4_0, fp8_e4m3 (fp8), or dtype (the shape's own): 0, or -1. */
int cli_parse_kv_type(const char *s, clattn_kv_type *out);
/* "q8_0", "q4_0", "fp8_e4m3", or the dtype's name for CLATTN_KV_DTYPE. */
const char *cli_kv_type_name(clattn_kv_type t, clattn_dtype dtype);

#endif
