/* SPDX-License-Identifier: MIT */
/* A fused kernel described once: what it needs, how its tiles are chosen,
 * how its build options are formed and how it is launched. Path selection,
 * clattn devices, --kernel, clattn tune and clattn_describe_kernels all read
 * these descriptions (fused/table.c); adding a kernel is adding its room
 * (src/fused/<room>.c, cl/fused/<room>.cl) and its row in
 * src/fused/meson.build. */
#ifndef CLATTN_SRC_FUSED_KERNEL_H
#define CLATTN_SRC_FUSED_KERNEL_H

#include <stddef.h>

#include "device/facts.h"
#include "context/call.h"
#include "fused/tiles.h"
#include "core/params.h"
#include "model/splits.h" /* FUSED_SPLITS_MAX */


/* The kernel's own parameters beyond its tiles (struct fused_kernel's
 * `params`), and those of the fused path every kernel takes. */
#define FUSED_PARAMS_MAX 8
enum { FUSED_COMMON_COMBINE_PARTS, FUSED_COMMON_PARAMS };

/* Bytes of a plan that only its kernel reads: what its `configure` derives
 * from the tiles (warps, work-items per row, ring depth...), as a struct of
 * the kernel's own file, reached through FUSED_PLAN_OWN. */
#define FUSED_PLAN_OWN_BYTES 64
#define FUSED_PLAN_OWN(plan, type) ((type *)(void *)(plan)->own.bytes)
#define FUSED_PLAN_OWN_CHECK(type)                                                        \
    _Static_assert(sizeof(type) <= FUSED_PLAN_OWN_BYTES, #type " outgrows the plan's own " \
                   "bytes")

/* A kernel configured for one call: its tiles and what follows from them. */
struct fused_plan {
    const struct fused_kernel *kernel;
    struct fused_tiles tiles;
    /* params[i]: the value of the kernel's params[i] (the caller's, else
     * clattn tune's record), PARAM_AUTO where the kernel chooses; common[]
     * the same for fused_common_params. */
    int params[FUSED_PARAMS_MAX];
    int common[FUSED_COMMON_PARAMS];
    size_t local;           /* work-items per group */
    size_t groups_per_cu;   /* groups a compute unit holds at once (0: unknown);
                             * the split of the keys is sized to it */
    size_t fixed_blocks;    /* what a group costs beyond its keys, in key
                             * blocks (the split's wave model) */
    size_t n_rtiles;        /* row tiles per (sequence, key/value head) */
    size_t splits;          /* key chunks (split-KV); 1: none */
    size_t split_keys;      /* keys per chunk, a multiple of BN */
    size_t head_dim_v;      /* V's and O's head dimension (the call's) */
    int k_type, v_type;     /* K's and V's clattn_kv_type (the call's cache) */
    int kv_copy;            /* the largest of 16, 8 and 4 bytes dividing every
                             * K and V row's address and length as stored
                             * (0: none of them) */
    int steals_chunks;      /* the groups of a row tile take its chunks of
                             * split_keys in turn (`splits` groups, more
                             * chunks); else each group has one */
    int merges_chunks;      /* a split's last group combines the chunks: one
                             * launch, no cl/fused/combine.cl */
    union {
        unsigned char bytes[FUSED_PLAN_OWN_BYTES];
        uint64_t align;
    } own;                  /* the kernel's own derived values */
    char note[160];         /* why tuned tiles were set aside, "" otherwise */
};

struct fused_kernel {
    const char *name;       /* in --kernel, tune files and run info */
    clattn_fused_kernel id; /* the public enum value */
    const char *file;       /* its cl/ source */
    const char *summary;    /* one line, for clattn devices */
    /* What it takes beyond a causal mask, lengths and the split: the
     * FUSED_F_* variant bits (FUSED_F_VARIANTS), the storage dtypes (bits
     * 1 << dtype), and whether V's head dimension may differ from d. The
     * path refuses a call asking for more, naming it, before cannot_run. */
    unsigned variants;
    unsigned dtypes;
    int takes_dv;
    /* Why it cannot run call `c` on this device (its shape, layouts), or
     * NULL; decided before any build. NULL: it runs anything. */
    const char *(*cannot_run)(const struct device_facts *dev, const struct attention_call *c);
    /* Why AUTO should pass it over for `c` on this device though it can run
     * it (a CPU-shaped kernel on a GPU, say), or NULL; may be NULL. Asking
     * for the kernel by name still runs it. */
    const char *(*not_preferred)(const struct device_facts *dev, const struct attention_call *c);
    /* A shape whose build proves that the compiler takes the kernel (NULL:
     * any OpenCL C 1.2 compiler does). The probe builds a real variant,
     * with the options the launch would use. */
    const clattn_shape *probe_shape;
    /* clattn tune's candidates, and the defaults' fallback order: the first
     * that configures wins when default_tiles is NULL. */
    const struct fused_tiles *candidates;
    size_t n_candidates;
    /* Tiles when neither the caller nor clattn tune chose them (may be
     * NULL). `rows` is the packed rows per (sequence, key/value head):
     * H / Hkv x Nq, 1 to a few for decoding; `plan` the plan so far (its
     * parameters and the call's cache types). */
    void (*default_tiles)(const struct device_facts *dev, const clattn_shape *s, size_t rows,
                          const struct fused_plan *plan, struct fused_tiles *out);
    /* Its parameters beyond the tiles (clattn_options.kernel_params, the
     * tune files): at most FUSED_PARAMS_MAX; plan->params[i] holds params[i]'s
     * value or PARAM_AUTO. */
    const struct param_def *params;
    size_t n_params;
    /* Checks plan->tiles and plan->params for `s` on this device and fills
     * the rest of the plan: local, its own values, and groups_per_cu and
     * fixed_blocks where it knows them (else 0); CLATTN_EINVAL or
     * CLATTN_EUNSUPPORTED naming why not. */
    int (*configure)(const struct device_facts *dev, const clattn_shape *s,
                     struct fused_plan *plan);
    /* The kernel's own build options for a configured plan (the tiles);
     * fused_variant_options adds what every kernel takes. NULL for a
     * kernel made at build time (`binary`). */
    void (*options)(const clattn_shape *s, const struct fused_plan *plan, char *buf, size_t cap);
    /* A kernel made at build time, a PTX program binary (cl/ptxgen.py):
     * the embedded binary's name for a configured plan. It cannot be
     * rebuilt per call, so it takes the variant as three more arguments
     * after cl/include/fused_grid.clh's list: the GQA group, the FUSED_F_*
     * flags and the additive mask's storage dtype. NULL: built from `file`
     * with options. */
    void (*binary)(const struct attention_call *c, const struct fused_plan *plan, char *buf,
                   size_t cap);
    /* Runs the kernel on small problems in a context of its own and checks
     * the results, before the caller's context builds it: a binary that
     * the driver takes but that faults at launch then loses only that
     * context. CLATTN_OK, or an error saying why. May be NULL. */
    int (*probe_launch)(const clattn_ctx *ctx);
    /* Takes one more argument after the list (and the binary's): the
     * split's counters, two per row tile (cl/include/nv_chunk_merge.clh; NULL
     * without a split). */
    int takes_chunk_counter;
    /* Once the split is known (plan->splits > 1 of `blocks` key blocks):
     * sets steals_chunks (then split_keys, the chunk) and merges_chunks.
     * May be NULL: one chunk per group, cl/fused/combine.cl. */
    void (*plan_chunks)(struct fused_plan *plan, size_t blocks);
};


/* What call `c` with plan `p` asks of a kernel beyond its tiles: the
 * call's bits (cl/include/fused_variant.h) and the split's. */
unsigned fused_variant_flags(const struct attention_call *c, const struct fused_plan *p);


/* The kernel entry point every fused .cl file defines. */
#define FUSED_ENTRY "attention_fused"

/* The split workspace's buffers: partial O, (max, sum) pairs, and the
 * counters of a kernel that takes_chunk_counter (created zeroed). */
enum { FUSED_PART_O, FUSED_PART_ML, FUSED_PART_COUNTERS, FUSED_PARTS };

/* Enqueues a built fused kernel on cl/include/fused_grid.clh's argument list, a
 * grid of row tiles x chunks x B x Hkv groups of plan->local work-items;
 * the split workspace (or NULLs) is the chunks' outputs: partial O, (max,
 * sum), the arrival counters of a kernel that merges its chunks. */
int fused_launch(clattn_ctx *ctx, const struct attention_call *call,
                 const struct fused_plan *plan, cl_kernel kernel, const cl_mem part[FUSED_PARTS],
                 cl_event *done);

/* The program that runs `plan` for call `c`: its file (a .cl source or a
 * .ptx binary) and build options ("" for a binary). */
void fused_program_of(const struct attention_call *c, const struct fused_plan *plan, char *file,
                      size_t file_cap, char *options, size_t options_cap);

/* Enqueues cl/fused/combine.cl, which finishes the rows of a split call. */
int fused_combine(clattn_ctx *ctx, const struct attention_call *call,
                  const struct fused_plan *plan, cl_mem part_o, cl_mem part_ml);

/* A descriptor's tables, their sizes counted: .candidates/.n_candidates and
 * .params/.n_params. */
/* The dtypes bit of `dtype` (struct fused_kernel's dtypes). */
#define FUSED_DTYPE(dtype) (1u << (dtype))

#define FUSED_CANDIDATES(table) .candidates = (table), .n_candidates = sizeof(table) / sizeof((table)[0])
#define FUSED_PARAMS(table) .params = (table), .n_params = sizeof(table) / sizeof((table)[0])

/* An empty plan of kernel k: every parameter its kernel's choice. */
void fused_plan_init(struct fused_plan *plan, const struct fused_kernel *k);

/* The parameters every fused kernel takes (the combine's), and the
 * parameter groups of a plan: the kernel's own, then those. */
extern const struct param_def fused_common_params[FUSED_COMMON_PARAMS];
size_t fused_param_groups(struct fused_plan *plan, struct param_group groups[2]);

/* The table, in AUTO's order of preference. */
extern const struct fused_kernel *const fused_kernels[];
extern const size_t fused_kernel_count;

/* The kernel with public id `id` or name `name`; NULL if none. */
const struct fused_kernel *fused_kernel_by_id(clattn_fused_kernel id);
const struct fused_kernel *fused_kernel_by_name(const char *name);

#endif
