/* SPDX-License-Identifier: MIT */
/*
 * clattn over MPI: one attention call whose tensors are spread over the
 * ranks of a communicator the caller owns. libclattn_mpi, a companion of
 * libclattn built when meson finds MPI (pkg-config clattn-mpi); each rank
 * runs its share on a clattn context of its own (a device of its host),
 * and the shares' results are put together exactly through their LSE, as
 * clattn_merge does. OpenCL has no RDMA: blocks travel through host
 * memory, and the ring's transfers run while the ranks compute.
 *
 * Two ways of spreading a call (clattn_mpi_call.shard):
 *
 * CLATTN_MPI_SHARD_KEYS, a KV cache sharded by keys (decoding, chunked
 *   prefill against a long cache): every rank passes the same Q
 *   [B, H, Nq, d] and its slice of the keys, K [B, Hkv, n_r, d] and V
 *   [B, Hkv, n_r, d_v] (local_len = n_r; a rank may hold none: 0, K and V
 *   NULL). The slices in rank order are the call's Nk = sum n_r keys.
 *   Every rank gets the whole O [B, H, Nq, d_v] and LSE [B, H, Nq]
 *   (an MPI_Allreduce of the partials).
 *
 * CLATTN_MPI_SHARD_TOKENS, context parallelism (prefill): the call's N
 *   tokens (Nq = Nk = N) are spread over the ranks, rank r holding n_r of
 *   them in Q, K and V ([B, H, n_r, d], [B, Hkv, n_r, d], [B, Hkv, n_r,
 *   d_v]; local_len = n_r, 0 allowed). With order CONTIGUOUS rank r's
 *   tokens follow rank r-1's; with ZIGZAG the sequence is cut into 2P
 *   chunks and rank r holds chunk r then chunk 2P-1-r, each half of its
 *   n_r (n_r even), which evens out a causal mask's work. Rank r gets O
 *   [B, H, n_r, d_v] and LSE for its own query tokens. Scheme ALLGATHER:
 *   every rank gathers all of K and V, then computes its queries in one
 *   call per query chunk; RING: the K/V blocks go round the ring, each
 *   rank computing against the block it holds while the next arrives,
 *   the partials merged; AUTO: the all-gather where all of K and V fits
 *   every rank's device (the model's memory plan, clattn_device_ceilings)
 *   and gathering them takes at most a tenth of a rank's compute (the
 *   model's roofline, over the link between ranks, measured once per
 *   communicator and kept as its attribute), else the ring (its transfers
 *   under the compute, no rank holding more than two blocks); the info's
 *   note gives the figures. Each pair of chunks is one attention call whose bottom-right
 *   mask and per-sequence lengths reproduce the whole call's mask (more
 *   calls where a sequence's causal diagonal cuts the pair).
 *
 * `shape` is the whole call's (its kv_len the sum of the ranks' local_len,
 * and with TOKENS its q_len too), the same on every rank, as are the
 * options. The options taken: causal (both alignments), scale, softcap,
 * sinks, head_dim_v, kv_lens and q_lens (the call's, per sequence), the
 * path and kernel choices; a window, ALiBi, a mask or snippet, a KV cache
 * form or a tensor layout is CLATTN_EUNSUPPORTED (the local tensors are
 * contiguous).
 *
 * The call is collective: every rank of `comm` calls it with the same
 * shape and options, and every rank returns the same code. An argument
 * one rank refuses fails the call on all ranks (the others' detail names
 * the rank that refused) before any tensor is sent; a device failure
 * during the call is reported by every rank after the call's messages
 * have all been exchanged, so no rank is left waiting. The caller
 * initialised MPI; with MPI_THREAD_FUNNELED or more the ring's compute
 * runs in a thread of its own while the calling thread moves the blocks,
 * else the two take turns.
 */
#ifndef CLATTN_MPI_H
#define CLATTN_MPI_H

#include <mpi.h>

#include "clattn/clattn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum clattn_mpi_shard {
    CLATTN_MPI_SHARD_KEYS = 0,
    CLATTN_MPI_SHARD_TOKENS = 1,
} clattn_mpi_shard;

typedef enum clattn_mpi_order {
    CLATTN_MPI_CONTIGUOUS = 0,
    CLATTN_MPI_ZIGZAG = 1,
} clattn_mpi_order;

typedef enum clattn_mpi_scheme {
    CLATTN_MPI_AUTO = 0,
    CLATTN_MPI_ALLGATHER = 1,
    CLATTN_MPI_RING = 2,
} clattn_mpi_scheme;

/* How the call is spread (clattn_mpi_default_call sets struct_size, KEYS,
 * CONTIGUOUS, AUTO, local_len 0). */
typedef struct clattn_mpi_call {
    size_t struct_size;
    clattn_mpi_shard shard;
    clattn_mpi_order order;   /* TOKENS */
    clattn_mpi_scheme scheme; /* TOKENS */
    size_t local_len;         /* this rank's keys (KEYS) or tokens (TOKENS) */
} clattn_mpi_call;

/* What ran (filled when non-NULL, the same on every rank but `seconds`). */
typedef struct clattn_mpi_info {
    char scheme[16];       /* "keys", "allgather" or "ring" */
    int ranks;             /* the communicator's size */
    int ranks_with_keys;   /* ranks whose local_len > 0 */
    size_t calls;          /* attention calls this rank ran */
    uint64_t bytes_sent;   /* K/V bytes this rank sent */
    double seconds;        /* this rank's time in the call */
    double compute_seconds; /* of which in its attention calls */
    char note[160];        /* why AUTO chose the scheme */
} clattn_mpi_info;

CLATTN_API void clattn_mpi_default_call(clattn_mpi_call *call);

CLATTN_API int clattn_mpi_attention(clattn_ctx *ctx, MPI_Comm comm, const clattn_mpi_call *call,
                                    const clattn_shape *shape, const clattn_options *opts,
                                    const void *q, const void *k, const void *v, void *o,
                                    float *lse, clattn_mpi_info *info);

#ifdef __cplusplus
}
#endif

#endif
