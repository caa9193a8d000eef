/* SPDX-License-Identifier: MIT */
/* Tuned tiles: `clattn tune` measures each kernel's tile candidates and
 * records the fastest per (kernel, dtype, d, causal), with the kernel
 * parameters it ran them with; the kernel planners look them up before
 * their defaults. One small text file per device under the cache directory,
 * one line per entry:
 *     <kernel name> <dtype 0|1> <d> <causal 0|1> <block_m> <block_n> [<tm> [<params>]]
 * (tm: rows per work-item of a register-tiled kernel, absent means 0;
 * params: "name=value,..." as clattn_options.kernel_params, absent or "-"
 * means none). The file holds as many entries as there are keys. It only
 * suggests: a planner that finds an entry its kernel cannot take ignores it
 * (and says so), so a corrupt file costs speed, not runs.
 *
 * Beside the tiles, each kernel's efficiency: the fraction of the model's
 * roofline time it reaches on the shapes one roof binds, one line per key:
 *     efficiency <path/kernel> <dtype 0|1|2> <d> <memory|compute> <fraction>
 * ("fused/cpu", "naive/builtin-gemm"; dtype 0 fp32, 1 fp16, 2 bf16). */
#ifndef CLATTN_SRC_TUNE_TUNE_H
#define CLATTN_SRC_TUNE_TUNE_H

#include <stddef.h>

#include "clattn/clattn.h"
#include "fused/tiles.h"

#define TUNE_KERNEL_NAME_MAX 24
#define TUNE_PARAMS_MAX 96

struct tune_entry {
    char kernel[TUNE_KERNEL_NAME_MAX]; /* the kernel table's name */
    clattn_dtype dtype;
    size_t head_dim;
    int causal;
    struct fused_tiles tiles;
    char params[TUNE_PARAMS_MAX];      /* "" or a well-formed name=value list */
};

#define TUNE_EFFICIENCY_NAME_MAX 40

struct tune_efficiency {
    char kernel[TUNE_EFFICIENCY_NAME_MAX]; /* "fused/<table name>" or "naive/<gemm>" */
    clattn_dtype dtype;
    size_t head_dim;
    clattn_bound bound;           /* CLATTN_BOUND_MEMORY or CLATTN_BOUND_COMPUTE */
    double fraction;              /* roofline time / measured time, > 0 */
};

struct tune_state {
    int loaded;                   /* the file was read (or found absent) */
    char path[4200];              /* the device's tune file, "" without a cache */
    struct tune_entry *entries;   /* count of cap, malloc'd */
    size_t count, cap;
    struct tune_efficiency *effs; /* n_effs of cap_effs, malloc'd */
    size_t n_effs, cap_effs;
};

/* The file's text (tune_text.c, no OpenCL). */

/* Every entry of `text` into `t`; the last line of a key wins, lines that are
 * not entries are skipped. `text` is modified. CLATTN_ENOMEM when the table
 * cannot grow (the entries read so far stay). */
int tune_parse_text(char *text, struct tune_state *t);
/* The file's text for the entries of `t` (malloc'd), NULL without memory. */
char *tune_format_text(const struct tune_state *t);
/* The entry of a key, or NULL. */
struct tune_entry *tune_find(struct tune_state *t, const char *kernel, clattn_dtype dtype,
                             size_t head_dim, int causal);
/* Adds or replaces the entry of e's key: 0, or CLATTN_ENOMEM. */
int tune_put(struct tune_state *t, const struct tune_entry *e);
/* The efficiency of a key, or NULL; adding or replacing one: 0, or
 * CLATTN_ENOMEM. */
struct tune_efficiency *tune_find_efficiency(struct tune_state *t, const char *kernel,
                                             clattn_dtype dtype, size_t head_dim,
                                             clattn_bound bound);
int tune_put_efficiency(struct tune_state *t, const struct tune_efficiency *e);
/* Whether `kernel` is an efficiency's name as the file holds it: "path/name",
 * lower-case letters, digits and '-', shorter than TUNE_EFFICIENCY_NAME_MAX. */
int tune_efficiency_name_ok(const char *kernel);
/* Frees the entries (the state is then empty, not loaded). */
void tune_state_release(struct tune_state *t);

/* The tuned entry of (kernel, dtype, d, causal) on the context's device:
 * 1 and a copy in *out if recorded, else 0. *file (may be NULL) names the
 * file it came from, for messages. */
int tune_lookup(clattn_ctx *ctx, const char *kernel, clattn_dtype dtype, size_t head_dim,
                int causal, struct tune_entry *out, const char **file);

/* Records an entry for the context and in the device's file (merged under
 * a lock with what other processes wrote meanwhile). */
int tune_store(clattn_ctx *ctx, const struct tune_entry *e);

/* The recorded efficiency of a key on the context's device: 1 and *out,
 * else 0; recording one as tune_store records tiles. */
int tune_lookup_efficiency(clattn_ctx *ctx, const char *kernel, clattn_dtype dtype,
                           size_t head_dim, clattn_bound bound, struct tune_efficiency *out);
int tune_store_efficiency(clattn_ctx *ctx, const struct tune_efficiency *e);

#endif
