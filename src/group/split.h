/* SPDX-License-Identifier: MIT */
/*
 * How one attention call is shared among a group's devices, and how the
 * shares' results become the call's. No OpenCL: each share is an ordinary
 * host call (shape, options, arrays) a device runs whole.
 *
 * Each device's share follows its weight (its relative speed). By keys (a
 * decoding step, Nq = 1): device i holds keys [a_i, a_i + S_i) of every
 * sequence, computes its partial O and LSE over them (the
 * sequence's keys in that range, through kv_lens), and the partials are
 * merged exactly (clattn_merge). Attention sinks join the first share's rows only,
 * so that they count once.
 *
 * By queries (prefill): device i computes query rows [a_i, e_i) of every
 * sequence against all of K and V, rows chosen so that each device's
 * visible (query, key) pairs are about equal under the causal mask. Its
 * rows' causal offset is kept by a bottom-right mask over kv_lens'
 * = L - Nq_b + a_i + Nq'_b keys (L, Nq_b the sequence's lengths, Nq'_b
 * its rows in the share): query i' of the share then sees the keys global
 * query a_i + i' sees, the window and ALiBi measured from the same
 * diagonal. The rows are put back in place.
 *
 * By query rows against key blocks (the ring): device i computes the
 * rows the query split gives it against the n blocks of about Nk / n keys
 * in turn, block i first (so that the devices read different blocks of
 * the host's K and V at a time), each pair of rows and block the calls
 * spread/pairs.h makes, merged in fp32: a device holds its rows and one
 * block, not all of K and V. The rows' sinks are folded in at the end.
 *
 * What none keeps (a mask tensor or snippet, which name absolute
 * positions; a KV cache form or a layout of the caller's; a window or
 * ALiBi when the split would move their diagonal, and under the ring) runs
 * on the first device as the caller gave it (GROUP_ONE, and `why` says
 * so), or, where the caller asked for the scheme, is refused.
 */
#ifndef CLATTN_SRC_GROUP_SPLIT_H
#define CLATTN_SRC_GROUP_SPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "clattn/clattn.h"

enum group_scheme { GROUP_AUTO, GROUP_ONE, GROUP_KEYS, GROUP_QUERIES, GROUP_RING };

/* One device's call: its shape and options, its arrays (copies it owns or
 * the caller's), its results. */
struct group_share {
    clattn_shape shape;
    clattn_options opts;
    const void *q, *k, *v;
    void *o;
    float *lse;
    size_t begin, count; /* keys (by keys) or query rows (by queries) */
    int empty;           /* no keys or rows: nothing to run */
    uint32_t *kv_lens, *q_lens; /* owned */
    void *owned[3];      /* copies of Q, K, V */
};

struct group_plan {
    enum group_scheme scheme;
    const char *why; /* GROUP_ONE: why the call was not split (static) */
    size_t n;
    clattn_shape shape; /* the caller's */
    clattn_options opts;
    size_t dv;
    double weight[CLATTN_GROUP_MAX];
    struct group_share share[CLATTN_GROUP_MAX];
};

/* What the plan is made for: n devices of relative speeds `weights` (each
 * > 0; device i's share is weights[i] / their sum of the keys, or of the
 * visible pairs) and memory `capacity` (bytes; 0 unknown), and the scheme
 * asked for (GROUP_AUTO: by keys for one query row, by query rows
 * otherwise, the ring where a device cannot hold its rows beside all of K
 * and V but can beside a block). */
struct group_devices {
    size_t n;
    const double *weights;
    const uint64_t *capacity;
    enum group_scheme want;
    const size_t *keys; /* by keys, the keys each device holds (NULL: by weight) */
};

/* The plan for `s` and the resolved options `o`: the shares and their
 * arrays (copies of the caller's q, k, v where a share needs its own;
 * with q, k and v NULL, for tensors already on the devices, none: the
 * shares' shapes, options and lengths alone).
 * CLATTN_ENOMEM or CLATTN_EOVERFLOW; CLATTN_EUNSUPPORTED where the scheme
 * asked for cannot split the call; a call AUTO does not split gets
 * GROUP_ONE. group_plan_free releases it. */
int group_plan_make(const clattn_shape *s, const clattn_options *o,
                    const struct group_devices *devices, const void *q, const void *k,
                    const void *v, struct group_plan *p);

/* Runs share i on `ctx` (a thread of its own may run each): its one call,
 * or under the ring its rows against each block in turn. */
int group_share_run(const struct group_plan *p, size_t i, clattn_ctx *ctx);
void group_plan_free(struct group_plan *p);

/* "auto", "one", "keys", "queries", "ring". */
const char *group_scheme_name(enum group_scheme scheme);

/* The shares' results into the call's O [B, H, Nq, d_v] and LSE (may be
 * NULL): merged (by keys) or put in place (by queries). */
int group_plan_gather(const struct group_plan *p, void *o, float *lse);

/* What ran, for the caller. */
void group_plan_info(const struct group_plan *p, clattn_group_info *info);

#endif
