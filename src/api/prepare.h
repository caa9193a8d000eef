/* SPDX-License-Identifier: MIT */
/* The checks and set-up every attention entry shares (api/prepare.c). */
#ifndef CLATTN_SRC_API_PREPARE_H
#define CLATTN_SRC_API_PREPARE_H

#include <stdint.h>

#include "context/call.h"
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

/* c's buffers against the layouts' spans, and its LSE and lengths buffers. */
int prepare_buffers(const clattn_ctx *ctx, const clattn_shape *shape,
                    const struct attention_call *c, const uint64_t spans[4]);

/* Device copies of opts' host lengths where c has no device buffers; the
 * copies are in owned[0..2) (NULL where none), for the caller to release. */
int prepare_lens(clattn_ctx *ctx, const clattn_shape *shape, const clattn_options *opts,
                 struct attention_call *c, cl_mem owned[2]);

#endif
