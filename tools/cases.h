/* The shapes every device path is checked on: none is a multiple of any tile
 * except two baselines, and together they cover N = 1, d = 1, d = 256, odd d,
 * Nq != Nk both ways, grouped- and multi-query heads, both dtypes, both
 * causal alignments (including rows that see no key), and softmax rows too
 * long to keep in registers. */
#ifndef CLATTN_TESTS_CASES_H
#define CLATTN_TESTS_CASES_H

#include "clattn/types.h"

struct test_case {
    size_t b, h, hkv, nq, nk, d;
    clattn_dtype dtype;
    clattn_causal causal;
};

#define F32 CLATTN_F32
#define F16 CLATTN_F16
#define NONE CLATTN_CAUSAL_NONE
#define TL CLATTN_CAUSAL_TOP_LEFT
#define BR CLATTN_CAUSAL_BOTTOM_RIGHT

static const struct test_case test_cases[] = {
    { 1, 1, 1, 1, 1, 1, F32, NONE },      { 1, 1, 1, 1, 1, 1, F16, NONE },
    { 1, 2, 1, 1, 17, 8, F32, TL },       { 1, 2, 1, 1, 17, 8, F32, BR },
    { 2, 3, 3, 37, 37, 16, F32, NONE },   { 2, 3, 3, 37, 37, 16, F16, TL },
    { 1, 4, 2, 65, 65, 64, F32, TL },     { 1, 4, 2, 65, 65, 64, F16, BR },
    { 1, 8, 1, 33, 70, 32, F32, NONE },   { 1, 8, 1, 33, 70, 32, F32, BR },
    { 1, 8, 1, 33, 70, 32, F16, TL },     { 1, 2, 2, 70, 33, 32, F32, BR },
    { 1, 2, 2, 70, 33, 32, F16, BR },     { 1, 2, 2, 70, 33, 32, F32, TL },
    { 1, 1, 1, 129, 129, 128, F32, NONE },{ 1, 1, 1, 129, 129, 128, F16, TL },
    { 1, 1, 1, 47, 61, 256, F32, NONE },  { 1, 1, 1, 47, 61, 256, F16, BR },
    { 1, 2, 1, 50, 50, 255, F32, TL },    { 1, 1, 1, 100, 3, 1, F32, NONE },
    { 1, 1, 1, 100, 3, 1, F16, TL },      { 3, 2, 2, 19, 23, 7, F32, NONE },
    { 3, 2, 2, 19, 23, 7, F16, NONE },    { 1, 6, 3, 77, 77, 96, F32, NONE },
    { 1, 6, 3, 77, 77, 96, F16, BR },     { 2, 4, 4, 130, 130, 80, F16, TL },
    { 1, 3, 1, 5, 200, 48, F32, BR },     { 1, 3, 1, 200, 5, 48, F16, TL },
    { 1, 1, 1, 1, 300, 64, F16, NONE },   { 1, 1, 1, 300, 1, 64, F32, BR },
    { 1, 2, 2, 64, 64, 64, F32, TL },     { 2, 2, 1, 31, 31, 3, F16, BR },
    { 1, 2, 2, 200, 200, 128, F16, NONE },{ 1, 1, 1, 257, 190, 40, F32, TL },
    { 1, 2, 1, 130, 136, 72, F16, TL },   { 2, 2, 2, 100, 64, 64, F16, BR },
    { 1, 1, 1, 3, 9000, 8, F16, BR }, /* rows longer than the softmax keeps in registers */
};

#undef F32
#undef F16
#undef NONE
#undef TL
#undef BR

#define N_TEST_CASES (sizeof test_cases / sizeof test_cases[0])

static inline clattn_shape test_case_shape(const struct test_case *c)
{
    clattn_shape s = { c->b, c->h, c->hkv, c->nq, c->nk, c->d, c->dtype };
    return s;
}

#endif
