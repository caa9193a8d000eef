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
 * What neither keeps (a mask tensor or snippet, which name absolute
 * positions; a KV cache form or a layout of the caller's; a window or
 * ALiBi when the split would move their diagonal) runs on the first
 * device as the caller gave it (GROUP_ONE, and `why` says so).
 */
#ifndef CLATTN_SRC_GROUP_SPLIT_H
#define CLATTN_SRC_GROUP_SPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "clattn/clattn.h"

enum group_scheme { GROUP_ONE, GROUP_KEYS, GROUP_QUERIES };

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

/* The plan for `s` and the resolved options `o` over n devices of relative
 * speeds `weights` (each > 0; device i's share is weights[i] / their sum of
 * the keys, or of the visible pairs): the shares
 * and their arrays (copies of the caller's q, k, v where a share needs its
 * own). CLATTN_ENOMEM or CLATTN_EOVERFLOW; a call that is not split gets
 * GROUP_ONE. group_plan_free releases it. */
int group_plan_make(const clattn_shape *s, const clattn_options *o, size_t n,
                    const double *weights, const void *q, const void *k, const void *v,
                    struct group_plan *p);
void group_plan_free(struct group_plan *p);

/* The shares' results into the call's O [B, H, Nq, d_v] and LSE (may be
 * NULL): merged (by keys) or put in place (by queries). */
int group_plan_gather(const struct group_plan *p, void *o, float *lse);

/* What ran, for the caller. */
void group_plan_info(const struct group_plan *p, clattn_group_info *info);

#endif
