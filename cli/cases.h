/* SPDX-License-Identifier: MIT */
/* The shapes every device path is checked on: none is a multiple of any tile
 * except two baselines, and together they cover N = 1, d = 1, d = 256, odd d,
 * Nq != Nk both ways, grouped- and multi-query heads, both dtypes, both
 * causal alignments (including rows that see no key), and softmax rows too
 * long to keep in registers. */
#ifndef CLATTN_TESTS_CASES_H
#define CLATTN_TESTS_CASES_H

#include <stdint.h>

#include "clattn/types.h"

#define TEST_CASE_MAX_BATCH 8

struct test_case {
    size_t b, h, hkv, nq, nk, d;
    clattn_dtype dtype;
    clattn_causal causal;
    uint32_t split_kv;                      /* clattn_options.split_kv */
    uint32_t kv_lens[TEST_CASE_MAX_BATCH];  /* all zero: Nk for every sequence */
};

#define F32 CLATTN_F32
#define F16 CLATTN_F16
#define NONE CLATTN_CAUSAL_NONE
#define TL CLATTN_CAUSAL_TOP_LEFT
#define BR CLATTN_CAUSAL_BOTTOM_RIGHT
/* A shape; with a split count; with a split count and per-sequence lengths. */
#define C(B, H, HKV, NQ, NK, D, DT, CAUSAL) \
    { .b = B, .h = H, .hkv = HKV, .nq = NQ, .nk = NK, .d = D, .dtype = DT, .causal = CAUSAL }
#define S(B, H, HKV, NQ, NK, D, DT, CAUSAL, SPLIT)                                          \
    { .b = B, .h = H, .hkv = HKV, .nq = NQ, .nk = NK, .d = D, .dtype = DT, .causal = CAUSAL, \
      .split_kv = SPLIT }
#define L(B, H, HKV, NQ, NK, D, DT, CAUSAL, SPLIT, ...)                                     \
    { .b = B, .h = H, .hkv = HKV, .nq = NQ, .nk = NK, .d = D, .dtype = DT, .causal = CAUSAL, \
      .split_kv = SPLIT, .kv_lens = { __VA_ARGS__ } }

static const struct test_case test_cases[] = {
    C(1, 1, 1, 1, 1, 1, F32, NONE),      C(1, 1, 1, 1, 1, 1, F16, NONE),
    C(1, 2, 1, 1, 17, 8, F32, TL),       C(1, 2, 1, 1, 17, 8, F32, BR),
    C(2, 3, 3, 37, 37, 16, F32, NONE),   C(2, 3, 3, 37, 37, 16, F16, TL),
    C(1, 4, 2, 65, 65, 64, F32, TL),     C(1, 4, 2, 65, 65, 64, F16, BR),
    C(1, 8, 1, 33, 70, 32, F32, NONE),   C(1, 8, 1, 33, 70, 32, F32, BR),
    C(1, 8, 1, 33, 70, 32, F16, TL),     C(1, 2, 2, 70, 33, 32, F32, BR),
    C(1, 2, 2, 70, 33, 32, F16, BR),     C(1, 2, 2, 70, 33, 32, F32, TL),
    C(1, 1, 1, 129, 129, 128, F32, NONE),C(1, 1, 1, 129, 129, 128, F16, TL),
    C(1, 1, 1, 47, 61, 256, F32, NONE),  C(1, 1, 1, 47, 61, 256, F16, BR),
    C(1, 2, 1, 50, 50, 255, F32, TL),    C(1, 1, 1, 100, 3, 1, F32, NONE),
    C(1, 1, 1, 100, 3, 1, F16, TL),      C(3, 2, 2, 19, 23, 7, F32, NONE),
    C(3, 2, 2, 19, 23, 7, F16, NONE),    C(1, 6, 3, 77, 77, 96, F32, NONE),
    C(1, 6, 3, 77, 77, 96, F16, BR),     C(2, 4, 4, 130, 130, 80, F16, TL),
    C(1, 3, 1, 5, 200, 48, F32, BR),     C(1, 3, 1, 200, 5, 48, F16, TL),
    C(1, 1, 1, 1, 300, 64, F16, NONE),   C(1, 1, 1, 300, 1, 64, F32, BR),
    C(1, 2, 2, 64, 64, 64, F32, TL),     C(2, 2, 1, 31, 31, 3, F16, BR),
    C(1, 2, 2, 200, 200, 128, F16, NONE),C(1, 1, 1, 257, 190, 40, F32, TL),
    C(1, 2, 1, 130, 136, 72, F16, TL),   C(2, 2, 2, 100, 64, 64, F16, BR),
    C(1, 1, 1, 3, 9000, 8, F16, BR), /* rows longer than the softmax keeps in registers */
    /* Decoding: one to a few queries over a long cache, split into chunks
     * (the library's choice, then odd counts), grouped heads packed into one
     * tile, per-sequence lengths including an empty one. */
    C(2, 8, 1, 1, 4099, 64, F16, NONE),  C(1, 32, 8, 1, 2053, 128, F32, NONE),
    S(1, 8, 2, 4, 3001, 64, F16, BR, 7), S(2, 4, 4, 1, 1000, 96, F32, NONE, 3),
    L(3, 8, 2, 1, 777, 64, F16, NONE, 0, 777, 1, 300),
    L(3, 4, 1, 2, 513, 32, F32, BR, 5, 0, 513, 129),
};

#undef F32
#undef F16
#undef NONE
#undef TL
#undef BR
#undef C
#undef S
#undef L

#define N_TEST_CASES (sizeof test_cases / sizeof test_cases[0])

static inline clattn_shape test_case_shape(const struct test_case *c)
{
    clattn_shape s = { c->b, c->h, c->hkv, c->nq, c->nk, c->d, c->dtype };
    return s;
}

/* The case's causal mask, split and lengths into `o` (which keeps the rest;
 * the lengths point into *c). */
static inline void test_case_options(const struct test_case *c, clattn_options *o)
{
    o->causal = c->causal;
    o->split_kv = c->split_kv;
    o->kv_lens = NULL;
    for (size_t i = 0; i < TEST_CASE_MAX_BATCH; i++)
        if (c->kv_lens[i])
            o->kv_lens = c->kv_lens;
}

#endif
