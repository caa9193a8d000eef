/* SPDX-License-Identifier: MIT */
/*
 * Where each rank's tokens lie in the call's sequence (clattn/mpi.h), and
 * the attention calls that compute a run of queries against a run of keys
 * under the whole call's mask (libclattn_mpi's ring and all-gather, a
 * group's ring). No MPI, no OpenCL: pure arithmetic on the lengths,
 * checked against the mask by brute force (tests/test_spread.c).
 *
 * A rank's tokens are one or two runs of the sequence (a `chunk`: the
 * sequence's positions [begin, begin + len), held at rows [at, at + len)
 * of the rank's local tensors). Query chunk Q against key chunk K is one
 * call of shape [B, H, Q.len, d] x [B, Hkv, K.len, d] whose mask and
 * per-sequence lengths reproduce, for every sequence b, which keys of K
 * each query of Q sees in the whole call: key j < kv_len_b, and under a
 * causal mask j <= i + off_b (off_b = 0 top-left, kv_len_b - q_len_b
 * bottom-right). Per sequence that is one of: every query sees the first
 * c_b keys of K (a call without a mask, kv_lens c_b); query i' sees keys
 * j' <= i' + L_b - Q.len_b (a bottom-right call, kv_lens L_b <= c_b); or
 * the diagonal leaves its first t_b queries part of K and the rest all
 * of it (the first t_b rows in the bottom-right call, the rest in a call
 * of that sequence's rows t_b.. alone, without a mask). So a pair is at
 * most two batched calls, one per mask, each sequence's rows in one of
 * them (q_lens 0 in the other), and a call per sequence cut by the
 * diagonal.
 */
#ifndef CLATTN_SRC_SPREAD_SHARD_H
#define CLATTN_SRC_SPREAD_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "clattn/types.h"

#define SHARD_CHUNKS_MAX 2

struct chunk {
    size_t begin; /* the first position in the call's sequence */
    size_t len;
    size_t at;    /* the first row in the rank's local tensors */
};

struct rank_chunks {
    size_t n; /* 0 (no tokens), 1 or 2 */
    struct chunk c[SHARD_CHUNKS_MAX];
};

/* Rank r's chunks among `ranks` of the given local lengths: contiguous
 * (zigzag 0) or zigzag (chunk r and 2P-1-r, each half of local_len[r]).
 * CLATTN_EINVAL (no detail) when a zigzag length is odd. */
int shard_chunks(const size_t *local_len, size_t ranks, int zigzag, size_t r,
                 struct rank_chunks *out);

/* The calls of queries `qc` against keys `kc`: the bottom-right one
 * (part[0]) and the unmasked one (part[1]), each with its lengths per
 * sequence and whether it has any work; rest_rows[b] > 0 where sequence
 * b's rest_rows[b] rows from rest_from[b] see all rest_keys[b] keys (a
 * call of their own). */
struct pair_part {
    int used;
    uint32_t *kv_lens, *q_lens; /* [B], the caller's arrays */
};

struct pair_call {
    struct pair_part part[2];
    uint32_t *rest_from, *rest_rows, *rest_keys; /* [B], the caller's arrays */
    int rests;                       /* sequences with rest_from > 0 */
};

/* Fills p's arrays for queries at positions qc of the sequence against
 * keys kc, under the whole call's shape s (its q_len, kv_len) and options
 * o (causal, kv_lens, q_lens). */
void shard_pair(const clattn_shape *s, const clattn_options *o, const struct chunk *qc,
                const struct chunk *kc, struct pair_call *p);

#endif
