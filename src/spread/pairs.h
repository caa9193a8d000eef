/* SPDX-License-Identifier: MIT */
/*
 * A run of queries against a run of keys of one attention call, as the
 * attention calls shard_pair gives (shard.h), each on host arrays through
 * clattn_attention_ex and merged into an fp32 accumulator (rows.h). The
 * ring of libclattn_mpi and a group's key blocks (group/split.h) both
 * compute through it. Errors through clattn_set_error, so that they reach
 * libclattn's detail from libclattn_mpi as well.
 */
#ifndef CLATTN_SRC_SPREAD_PAIRS_H
#define CLATTN_SRC_SPREAD_PAIRS_H

#include <stddef.h>
#include <stdint.h>

#include "clattn/clattn.h"
#include "spread/shard.h"

struct pair_runner {
    clattn_ctx *ctx;
    const clattn_shape *shape;   /* the whole call's */
    const clattn_options *opts;  /* the whole call's, resolved (its sinks left out) */
    size_t dv, e;                /* V's columns; the dtype's bytes */
    float *acc;                  /* [B, H, acc_rows, dv + 1] (rows.h) */
    size_t acc_rows;             /* rows per (b, head): the query tensor's */
    uint32_t *lens;              /* scratch: 7 B values */
    size_t calls;                /* attention calls run */
    double compute_seconds;      /* their time */
};

/* Queries qc of `q` ([B, H, qrows, d], the chunk at rows qc->at...)
 * against keys kc of `k`, `v` ([B, Hkv, krows, d], [B, Hkv, krows, d_v]),
 * merged into the accumulator at qc's rows (qrows = acc_rows). A library
 * code. */
int pair_run(struct pair_runner *p, const void *q, size_t qrows, const struct chunk *qc,
             const void *k, const void *v, size_t krows, const struct chunk *kc);

double pair_clock(void);

#endif
