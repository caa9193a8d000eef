/* SPDX-License-Identifier: MIT */
/* How many chunks split-KV cuts a sequence's keys into when the caller
 * leaves it to the library: pure arithmetic on the device's and the call's
 * figures (src/fused/fused.c's plan_splits applies it), unit-tested in
 * tests/test_splits.c against the splits the H200 ran fastest. */
#ifndef CLATTN_MODEL_SPLITS_H
#define CLATTN_MODEL_SPLITS_H

#include <stddef.h>

/* Most key chunks per sequence; cl/fused/combine.cl holds a weight per chunk in
 * local memory. */
#define FUSED_SPLITS_MAX 256

/* For a kernel that says how many of its groups a compute unit holds
 * (`slots` on the device): the split of `blocks` key blocks among `groups`
 * row tiles whose waves of groups finish first, each group paying about
 * `fixed` blocks of its own. With `takes_chunks` (the groups of a row tile
 * take its chunks in turn, so they end together by themselves), no more
 * than one wave. */
size_t splits_fitted(size_t slots, size_t groups, size_t blocks, size_t fixed, int takes_chunks);

/* For the other kernels: a few groups per core on a CPU; on a GPU, none once
 * the groups fill it, else about 8 groups per compute unit with chunks of
 * about 2048 keys. `local`: work-items per group. */
size_t splits_by_fill(int is_cpu, size_t compute_units, size_t groups, size_t local,
                      size_t kv_len);

#endif
