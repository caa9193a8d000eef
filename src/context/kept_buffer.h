/* SPDX-License-Identifier: MIT */
/* A device buffer a path keeps in the context between calls, as a
 * framework's caching allocator keeps its blocks: allocating gigabytes of
 * workspace per call would time the allocator, not attention. A request no
 * larger than the buffer reuses it; a larger one replaces it (the in-order
 * queue keeps one call's use ahead of the next one's). */
#ifndef CLATTN_SRC_CONTEXT_KEPT_BUFFER_H
#define CLATTN_SRC_CONTEXT_KEPT_BUFFER_H

#include <stdint.h>

#include "clattn/clattn.h"

struct kept_buffer {
    cl_mem mem;     /* NULL: none */
    uint64_t bytes; /* its size */
};

/* The buffer, of at least `bytes`, in *out; a new one is zeros where
 * `zeroed`. On failure the buffer is empty and the error, naming `what`
 * ("clCreateBuffer(S)"), recorded. */
int kept_buffer_get(cl_context context, struct kept_buffer *b, uint64_t bytes, int zeroed,
                    const char *what, cl_mem *out);

/* Releases the buffer; the struct is then empty. Harmless on an empty one. */
void kept_buffer_release(struct kept_buffer *b);

#endif
