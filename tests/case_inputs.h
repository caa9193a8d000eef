/* SPDX-License-Identifier: MIT */
/* The shape, inputs and options of a device test's case, set up alike in
 * the tests that share them (the variants and the KV caches; a call spread
 * over a device group and over MPI ranks, which check one contract). */
#ifndef CLATTN_TESTS_CASE_INPUTS_H
#define CLATTN_TESTS_CASE_INPUTS_H

#include <stddef.h>
#include <stdint.h>

#include "clattn/clattn.h"

/* Default options with the case's causal alignment, per-sequence lengths
 * (NULL: none) and softcap; with `with_sinks` a sink logit per head,
 * h / 2 - 1, written into sinks[0..heads). */
static inline void case_options(clattn_options *o, clattn_causal causal, const uint32_t *kv_lens,
                                const uint32_t *q_lens, float softcap, int with_sinks,
                                float *sinks, size_t heads)
{
    clattn_default_options(o);
    o->causal = causal;
    o->kv_lens = kv_lens;
    o->q_lens = q_lens;
    o->softcap = softcap;
    for (size_t h = 0; h < heads; h++)
        sinks[h] = 0.5f * (float)h - 1.0f;
    o->sinks = with_sinks ? sinks : NULL;
}

/* A [b, h, hkv, nq, nk, d] shape of `dt` and its default options with the
 * causal alignment and V's head dimension `dv` (0 in the options when it
 * is d). */
static inline void case_shape(clattn_shape *s, clattn_options *o, size_t b, size_t h, size_t hkv,
                              size_t nq, size_t nk, size_t d, size_t dv, clattn_dtype dt,
                              clattn_causal causal)
{
    *s = (clattn_shape){ b, h, hkv, nq, nk, d, dt };
    case_options(o, causal, NULL, NULL, 0.0f, 0, NULL, 0);
    o->head_dim_v = dv == d ? 0 : dv;
}

/* Q, K and V drawn from seed, seed + 1 and seed + 2: 0, or the first
 * draw's error code. */
static inline int case_inputs(void *q, size_t nq, void *k, size_t nk, void *v, size_t nv,
                              clattn_dtype dtype, uint64_t seed)
{
    int rc = clattn_random_fill(q, nq, dtype, seed);
    if (rc == CLATTN_OK)
        rc = clattn_random_fill(k, nk, dtype, seed + 1);
    if (rc == CLATTN_OK)
        rc = clattn_random_fill(v, nv, dtype, seed + 2);
    return rc;
}

#endif
