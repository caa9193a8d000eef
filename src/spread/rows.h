/* SPDX-License-Identifier: MIT */
/*
 * Partial attention rows put together in fp32: a rank's accumulator is
 * `rows` rows of d_v values followed by their LSE (row-major, d_v + 1
 * floats a row), the layout the MPI reduction sends. No MPI.
 */
#ifndef CLATTN_SRC_SPREAD_ROWS_H
#define CLATTN_SRC_SPREAD_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "clattn/types.h"

/* Every row empty: zeros and LSE -inf. */
void rows_clear(float *acc, size_t rows, size_t dv);

/* Row i of acc merged with row i of src (both accumulators): the exact
 * log-sum-exp merge (a side with LSE -inf adds nothing). */
void rows_merge(float *acc, const float *src, size_t rows, size_t dv);

/* A call's output merged in: O rows [rows, dv] of `dtype` at `o` (row i of
 * the call lands on accumulator row map(i): `blocks` blocks of `count`
 * rows, block j's rows at acc rows j * stride + at ...) and their LSE. */
void rows_merge_call(float *acc, size_t dv, size_t blocks, size_t stride, size_t at,
                     size_t count, clattn_dtype dtype, const void *o, const float *lse);

/* Attention sinks folded into finished rows: row (b, h, i) of the B * H
 * blocks of `count` rows, query position position[i] of its sequence,
 * gains head h's logit in its denominator; a row at or past its
 * sequence's query count (q_lens[b], or q_len) stays empty. */
void rows_fold_sinks(float *acc, size_t dv, size_t batch, size_t heads, size_t count,
                     const size_t *position, const float *sinks, const uint32_t *q_lens,
                     size_t q_len);

/* The accumulator's rows out as O [rows, dv] of `dtype` and LSE (may be
 * NULL). */
void rows_store(const float *acc, size_t rows, size_t dv, clattn_dtype dtype, void *o,
                float *lse);

#endif
