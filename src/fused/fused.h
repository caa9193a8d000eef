/* SPDX-License-Identifier: MIT */
/* The fused path: S never reaches global memory. It chooses a kernel from
 * the table (fused/kernel.h), plans its tiles (asked, tuned or default) and
 * its key split (split-KV), and launches it, then the combine where the
 * keys were split. */
#ifndef CLATTN_SRC_FUSED_FUSED_H
#define CLATTN_SRC_FUSED_FUSED_H

#include <stdint.h>

#include "context/call.h"
#include "context/kept_buffer.h"
#include "fused/kernel.h"
#include "fused/mask_spans.h"

/* Probe builds per context, indexed by clattn_fused_kernel. */
#define FUSED_IDS_MAX 16
enum { PROBE_UNTRIED = 0, PROBE_BUILDS = 1, PROBE_FAILED = -1 };

/* What a fused plan depends on beyond the device: one call's shape,
 * variant, layouts and the options the planner reads. */
#define FUSED_MEMO_PARAMS_MAX 128
struct fused_plan_key {
    clattn_shape shape;
    size_t head_dim_v;
    unsigned flags;
    struct tensor_layout ql, kl, vl, ol;
    clattn_fused_kernel kernel;
    size_t block_m, block_n, rows_per_item;
    uint32_t split_kv;
    int k_type, v_type; /* the cache's storage: what the kernels take differs */
    char kernel_params[FUSED_MEMO_PARAMS_MAX];
};

struct fused_state {
    signed char probe[FUSED_IDS_MAX];
    /* The last plan made and what it was made for: the path choice, the
     * enqueue and a caller's plan query of one call plan it once. */
    int memo_valid;
    struct fused_plan_key memo_key;
    struct fused_plan memo;
    char probe_failure[FUSED_IDS_MAX][200]; /* why a probe failed, for notes */
    int probe_rc[FUSED_IDS_MAX];            /* and its CLATTN_E* code */
    char plan_failure[200];                 /* fused_cannot_plan's last reason */
    struct kept_buffer part[FUSED_PARTS];   /* split-KV workspace: partial O, (max, sum),
                                             * the merging kernels' arrival counters */
    struct mask_span_cache spans;           /* mask_mod snippets' key spans */
};

/* The kernel, tiles and split the fused path would use for call `c`; a
 * kernel AUTO passed over for a failed probe is named in plan->note. */
int fused_plan(clattn_ctx *ctx, const struct attention_call *c, struct fused_plan *plan);

/* Why `kernel` cannot run call `c` on the context's device (its predicate,
 * then its probe build), or NULL if it can. The text lives in the context. */
const char *fused_cannot_run(clattn_ctx *ctx, const struct fused_kernel *kernel,
                             const struct attention_call *c);

/* The split workspace bytes of `plan` for shape `s` (0 without a split). */
uint64_t fused_plan_workspace(const clattn_shape *s, const struct fused_plan *plan);

/* Why `kernel` cannot run call `c` here, as fused_cannot_run, or has no
 * tiles for it on this device; NULL if it can. The text lives in the
 * context until the next call. */
const char *fused_cannot_plan(clattn_ctx *ctx, const struct fused_kernel *kernel,
                              const struct attention_call *c);

/* Device bytes the fused path holds for `c` beyond Q, K, V, O: the split
 * workspace, kept between calls. Plans the call, into c->fused_plan when
 * there is room for it. */
int fused_workspace_bytes(clattn_ctx *ctx, const struct attention_call *c, uint64_t *bytes);

/* Enqueues the call: c->fused_plan's plan when fused_workspace_bytes has
 * made it, else a plan made here. */
int fused_enqueue(clattn_ctx *ctx, const struct attention_call *call);

/* Frees the split workspace. */
void fused_state_release(struct fused_state *state);

/* Forgets the last plan (what it depends on changed: tuned tiles). */
void fused_forget_plan(struct fused_state *state);

#endif
