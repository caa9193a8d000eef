/* The kernel sources embedded at build time by cl/embed.py. */
#ifndef CLATTN_SRC_KERNEL_SOURCE_H
#define CLATTN_SRC_KERNEL_SOURCE_H

#include <stddef.h>

struct clattn_embedded_kernel {
    const char *name;
    const char *source;
    size_t length;
};

extern const struct clattn_embedded_kernel clattn_embedded_kernels[];
extern const size_t clattn_embedded_kernel_count;

#endif
