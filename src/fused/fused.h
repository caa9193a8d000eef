/* The fused path: S never reaches global memory. It chooses a kernel from
 * the table (fused/kernel.h), plans its tiles (asked, tuned or default) and
 * launches it. */
#ifndef CLATTN_SRC_FUSED_FUSED_H
#define CLATTN_SRC_FUSED_FUSED_H

#include "fused/kernel.h"
#include "context/call.h"

/* Probe builds per context, indexed by clattn_fused_kernel. */
#define FUSED_IDS_MAX 16
enum { PROBE_UNTRIED = 0, PROBE_BUILDS = 1, PROBE_FAILED = -1 };

struct fused_state {
    signed char probe[FUSED_IDS_MAX];
    char probe_failure[FUSED_IDS_MAX][200]; /* why a probe failed, for notes */
};

/* The kernel and tiles the fused path would use for `s` with `opts`; a
 * kernel AUTO passed over for a failed probe is named in plan->note. */
int fused_plan(clattn_ctx *ctx, const clattn_shape *s, const clattn_options *opts,
               struct fused_plan *plan);

/* Why `kernel` cannot run `s` on the context's device (its predicate, then
 * its probe build), or NULL if it can. The text lives in the context. */
const char *fused_cannot_run(clattn_ctx *ctx, const struct fused_kernel *kernel,
                             const clattn_shape *s);

/* Plans and enqueues the call. */
int fused_enqueue(clattn_ctx *ctx, const struct attention_call *call);

#endif
