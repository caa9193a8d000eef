/* SPDX-License-Identifier: MIT */
/* The checks and set-up every attention entry shares (api/prepare.c). */
#ifndef CLATTN_SRC_API_PREPARE_H
#define CLATTN_SRC_API_PREPARE_H

#include <stdint.h>

#include "context/call.h"
#include "core/extent.h"
#include "context/context.h"

/* Everything a call needs but its buffers and events, into `c`: the checked
 * shape and options, layouts (spans as prepare_layouts), scale, mask. */
int prepare_call(const clattn_shape *shape, const clattn_options *opts,
                 struct attention_call *c, uint64_t spans[4]);

/* The shape and the options, host lengths included. */
int prepare_options(const clattn_shape *shape, const clattn_options *opts);

/* Resolves the four layouts into `c` (ql..ol, contiguous); spans[i] is the
 * bytes each of Q, K, V, O spans in its buffer. */
int prepare_layouts(const clattn_shape *shape, const clattn_options *opts,
                    struct attention_call *c, uint64_t spans[4]);

/* A read-only device copy of `bytes` of a host array, made now (the
 * caller releases it once the commands using it are enqueued). */
int prepare_upload(clattn_ctx *ctx, const void *host, uint64_t bytes, const char *name,
                   cl_mem *out);

/* CLATTN_EINVAL unless m is a buffer of the context's OpenCL context of at
 * least `need` bytes (the kernels do not check bounds). */
int prepare_check_buffer(const clattn_ctx *ctx, cl_mem m, const char *name, uint64_t need);

/* The extent of bytes [lo, hi) of buffer m (NULL: an absent one), a
 * sub-buffer's resolved to its parent. */
int buffer_extent(cl_mem m, const char *name, uint64_t lo, uint64_t hi, int output,
                  struct extent *out);

/* c's buffers against the layouts' spans, and its LSE and lengths buffers;
 * no output sharing memory with another tensor of the call. */
int prepare_buffers(const clattn_ctx *ctx, const clattn_shape *shape,
                    const struct attention_call *c, const uint64_t spans[4]);

/* The host arrays of clattn_attention_ex (Q, K, V, O over their layouts'
 * spans, the LSE, opts' lengths): no output sharing memory with another. */
int prepare_host_arrays(const clattn_shape *shape, const clattn_options *opts,
                        const struct attention_call *c, const uint64_t spans[4],
                        const void *const arrays[4], const float *lse);

/* Device copies of opts' host arrays where c has no device buffers for
 * them: the lengths, the ALiBi slopes, the sinks, the mask and the KV
 * cache's tables (block table, packed offsets, fp8 scales); the copies
 * are in owned[0..PREPARE_OWNED) (NULL where none), for the caller to
 * release. CLATTN_EINVAL when a variant's tensor is in neither place. */
#define PREPARE_OWNED 10
int prepare_lens(clattn_ctx *ctx, const clattn_shape *shape, const clattn_options *opts,
                 struct attention_call *c, cl_mem owned[PREPARE_OWNED]);

#endif
