/* SPDX-License-Identifier: MIT */
/*
 * The KV cache forms of the command line (options.h's cli_cache: --kv-type,
 * --k-type, --v-type, --page-size, --packed, with --q-lens and --kv-lens)
 * as the library takes them. From a problem's plain inputs (Q [B, H, Nq, d],
 * K and V [B, Hkv, Nk, d] in the shape's dtype) it makes:
 *   - the reference's form: K and V quantized into their types
 *     (clattn_quantize; fp8 with a per-tensor scale of the tensor's largest
 *     magnitude over 448), still plain, and options saying so;
 *   - the device's form of the same bytes: scattered into pages through a
 *     block table of its own (every sequence's pages in a shuffled order,
 *     page 0 left unused), or Q, K and V packed by cu_seqlens, and options
 *     pointing at them;
 * and puts a packed O back into the plain [B, H, Nq, d_v] (rows past a
 * sequence's queries zero). run, bench and verify build their inputs here,
 * predict its model of the cache.
 */
#ifndef CLATTN_CLI_KVCACHE_H
#define CLATTN_CLI_KVCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "clattn/clattn.h"
#include "options.h"

struct json;

/* Whether the call asks for a cache form (a type, pages, packing). */
int cli_cache_any(const cli_cache *c);

/* One problem's cache in both forms. */
typedef struct cli_cache_data {
    /* The reference's: K and V plain in their types (NULL: the caller's
     * own inputs, a type of the dtype), their bytes and fp8 scales. */
    void *k, *v;
    size_t k_bytes, v_bytes;
    float k_scale, v_scale;
    /* The device's: the arrays to upload (Q, K, V; each NULL where the
     * reference's serves), their bytes, and O's. */
    void *dq, *dk, *dv;
    size_t q_bytes, kd_bytes, vd_bytes, o_bytes;
    int32_t *block_table;
    size_t num_pages, table_stride;
    int32_t *cu_q, *cu_k;
    size_t total_q, total_k;
    uint32_t *q_lens;     /* the sequences' queries (packed: from cu_q); NULL: Nq */
} cli_cache_data;

/* Makes `c`'s forms of the problem `s` (V of dv columns) whose plain
 * inputs are q, k, v (the shape's dtype, contiguous), with `lens` the
 * per-sequence key counts (NULL: Nk) and `q_lens` the query counts (NULL:
 * Nq). `ref` and `dev` (set up by the caller, the call's other options in
 * them) get the types, scales and lengths, `dev` the pages or packing as
 * well. 0, or CLATTN_ENOMEM / CLATTN_EINVAL (d not a multiple of a block
 * type's 32: the library's detail) with *d needing cli_cache_free either
 * way. */
int cli_cache_make(const cli_cache *c, const clattn_shape *s, size_t dv, const void *q,
                   const void *k, const void *v, const uint32_t *lens, const uint32_t *q_lens,
                   cli_cache_data *d, clattn_options *ref, clattn_options *dev);
void cli_cache_free(cli_cache_data *d);

/* A cache form's problem in fresh device buffers b (Q, K, V, O; V and O of
 * dv columns): Q, K and V drawn on the device and read back
 * (clattn_random_fill_cl, seeds seed, seed + 1, seed + 2), made into form `c` by cli_cache_make (its arrays into d, its options
 * into dev, which holds the call's other options first), uploaded; the
 * lengths are the shape's. 0, or a CLATTN_E* code with the buffers made so
 * far in b (NULL the rest) and *d needing cli_cache_free either way. */
int cli_cache_upload(clattn_ctx *ctx, const cli_cache *c, const clattn_shape *s, size_t dv,
                     uint64_t seed, cli_cache_data *d, clattn_options *dev, cl_mem b[4]);

/* The device's O (d->o_bytes; packed [1, H, total_q, dv]) into the plain
 * [B, H, Nq, dv] `out`, rows past a sequence's queries zero; a copy where
 * nothing was packed. */
void cli_cache_unpack_o(const cli_cache_data *d, const clattn_shape *s, size_t dv,
                        const void *o, void *out);

/* `c` as a plan takes it, without any tensor: the types, pages of a pool
 * of B ceil(Nk / page) (a device table stands in), packed totals (the
 * lengths' sums) with the lengths moved to them. Into `o`. */
void cli_cache_plan_options(const cli_cache *c, const clattn_shape *s, const uint32_t *lens,
                            const uint32_t *q_lens, clattn_options *o);

/* `c` as the model counts it, for `s` with the query counts `q_lens`. */
void cli_cache_model(const cli_cache *c, const clattn_shape *s, const uint32_t *q_lens,
                     clattn_model_cache *mc);

/* The form in words for a row: "k=q8_0 v=q4_0 pages=16 packed", "" for
 * the plain cache. */
void cli_cache_describe(const cli_cache *c, const clattn_shape *s, char *buf, size_t cap);

/* The cache's fields of a JSON report, an object "cache": k_type, v_type,
 * page_size, packed, and where d is non-NULL num_pages, the fp8 scales,
 * total_q and total_k. */
void cli_cache_json(struct json *j, const cli_cache *c, const clattn_shape *s,
                    const cli_cache_data *d);

#endif
