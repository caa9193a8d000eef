/* SPDX-License-Identifier: MIT */
/* Kernel sources: embedded at build time by cl/embed.py (the .cl kernels
 * and the shared .clh headers of cl/include/, named by their paths under cl/), or read from $CLATTN_KERNEL_DIR. */
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

/* The source of kernel file `name` (e.g. "fused/portable.cl") with its headers
 * inlined, in a new NUL-terminated malloc'd buffer. */
int clattn_kernel_source(const char *name, char **out);

/* The embedded PTX program binary `name` (e.g. "measure_wgmma.ptx", made by
 * cl/ptxgen.py at build time): *data points at NUL-terminated text of *len
 * bytes (the NUL not counted), owned by the library. CLATTN_EUNSUPPORTED
 * when this build has none (no clang + libclc, or -Dptx=disabled).
 * $CLATTN_KERNEL_DIR does not apply: the PTX is a build output, not a file
 * of cl/. */
int clattn_embedded_binary(const char *name, const char **data, size_t *len);

#endif
