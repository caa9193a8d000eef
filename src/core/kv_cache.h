/* SPDX-License-Identifier: MIT */
/* The KV cache forms of clattn_options (storage types, pages, packed
 * batches): their checks, the tensors' dimensions they imply, and where a
 * sequence's rows are, for the host (the reference, the gathers) as the
 * kernels' cl/include/kv_cache.clh finds them. No OpenCL. */
#ifndef CLATTN_SRC_CORE_KV_CACHE_H
#define CLATTN_SRC_CORE_KV_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "clattn/types.h"

/* Whether opts asks for any cache form beyond the plain one. */
int kv_cache_any(const clattn_options *opts);

/* Checks the cache fields of opts for shape s: known types, d (and d_v) a
 * multiple of a block type's values, fp8 scales finite and > 0, pages of
 * 1.. keys with num_pages >= 1, packed offsets non-decreasing and each
 * sequence within Nq / Nk, and the combinations taken (packed keys with
 * neither pages nor kv_lens, packed queries without q_lens). With `host`
 * the tables must be in host memory (the reference); entries of host
 * tables are checked where present. CLATTN_EINVAL naming the field. */
int kv_cache_check(const clattn_shape *s, const clattn_options *opts, int host);

/* The dimensions of the tensors as stored: batch and tokens of Q (and O)
 * and of K (and V): pages and page size, 1 and the packed total, or B and
 * N. total_q / total_k of a call with device offsets come from opts. */
struct kv_dims {
    size_t q_batch, q_tokens;
    size_t k_batch, k_tokens;
};
void kv_cache_dims(const clattn_shape *s, const clattn_options *opts, struct kv_dims *out);

/* Sequence b's lengths (packed offsets, per-sequence lengths, or Nq / Nk)
 * and its first token in the packed tensors (0 otherwise), from host
 * arrays. */
struct kv_seq {
    size_t q_len, kv_len;
    size_t q_first, k_first;
};
void kv_cache_seq(const clattn_shape *s, const clattn_options *opts, size_t b,
                  struct kv_seq *out);

/* The value index of row (b, head, t) of the contiguous Q (`keys` 0) or K
 * (`keys` 1) tensor as stored: pages through the host block table, packed
 * tokens through the offsets. `heads` and `d` are the tensor's. */
uint64_t kv_cache_row(const clattn_shape *s, const clattn_options *opts, int keys, size_t b,
                      size_t heads, size_t head, size_t t, size_t d);

/* The block table's row stride: block_table_stride, or the pages of Nk
 * keys; 0 when not paged. */
size_t kv_cache_table_stride(const clattn_shape *s, const clattn_options *opts);

/* fp8's scale of key/value head hk for K (`v` 0) or V (1): 1 when none. */
float kv_cache_scale(const clattn_options *opts, int v, size_t hk);

#endif
