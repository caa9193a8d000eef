/* SPDX-License-Identifier: MIT */
/* Kernel sources: embedded at build time by cl/embed.py (the .cl kernels
 * and the shared .clh headers of cl/), or read from $CLATTN_KERNEL_DIR. */
#ifndef CLATTN_SRC_RUNTIME_KERNEL_SOURCE_H
#define CLATTN_SRC_RUNTIME_KERNEL_SOURCE_H

#include <stddef.h>

struct clattn_embedded_kernel {
    const char *name;
    const char *source;
    size_t length;
};

extern const struct clattn_embedded_kernel clattn_embedded_kernels[];
extern const size_t clattn_embedded_kernel_count;

/* The source of kernel file `name` (e.g. "fused.cl") with its headers
 * inlined, in a new NUL-terminated malloc'd buffer. */
int clattn_kernel_source(const char *name, char **out);

#endif
