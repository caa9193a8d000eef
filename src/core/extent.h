/* SPDX-License-Identifier: MIT */
/* Where the tensors of one call lie, to refuse an output that shares memory
 * with anything else the call reads or writes. No OpenCL: a root is any
 * pointer naming one address space (a buffer, or host memory). */
#ifndef CLATTN_SRC_CORE_EXTENT_H
#define CLATTN_SRC_CORE_EXTENT_H

#include <stddef.h>
#include <stdint.h>

/* Bytes [lo, hi) of `root` (NULL: the tensor is absent). */
struct extent {
    const char *name;
    const void *root;
    uint64_t lo, hi;
    int output;
};

/* The root of host memory: extents there hold addresses. */
extern const char extent_host_memory;
#define EXTENT_HOST ((const void *)&extent_host_memory)

/* A host array of `bytes` from `p` (NULL: absent). */
struct extent extent_host(const char *name, const void *p, uint64_t lo, uint64_t hi,
                          int output);

/* CLATTN_EINVAL naming the pair when an output shares a byte with any other
 * of the n extents. */
int extents_disjoint(const struct extent *e, size_t n);

#endif
