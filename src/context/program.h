/* SPDX-License-Identifier: MIT */
/* The context's built programs: each (kernel file, options) variant is
 * built once per context and kept, with the kernel objects made from it,
 * until the context closes. */
#ifndef CLATTN_SRC_RUNTIME_PROGRAM_H
#define CLATTN_SRC_RUNTIME_PROGRAM_H

#include <stddef.h>

#include "clattn/clattn.h"
#include "device/build.h"

#define PROGRAM_KERNELS_MAX 8

/* One built program and the kernel objects made from it so far (each call
 * reuses them: arguments are captured at enqueue, and a context serves one
 * thread at a time). */
struct program_entry {
    char *file;
    char *prelude; /* source put before the file's ("" mostly: a caller's snippets) */
    char *options;
    cl_program program;
    struct program_origin origin; /* kept on disk at release when built from source */
    struct {
        char name[48];
        cl_kernel kernel;
    } kernels[PROGRAM_KERNELS_MAX];
};

struct program_cache {
    struct program_entry *entries;
    size_t count, cap;
    double build_seconds; /* wall time spent building, over the context's life
                           * (an entry point reports its own share) */
};

/* Returns the program built from `file` with `options` on the context's
 * device, building it on first use. On a build failure the detail holds the
 * build log. A `file` ending in ".ptx" is an embedded PTX program binary
 * (cl/ptxgen.py), built with no options (others are CLATTN_EINVAL). */
int program_get(clattn_ctx *ctx, const char *file, const char *options, cl_program *out);

/* Kernel `name` of a cached program, with a reference for the caller, who
 * releases it when done (the cache keeps its own). */
int kernel_get(clattn_ctx *ctx, const char *file, const char *options, const char *name,
               cl_kernel *out);

/* kernel_get with `prelude` (NULL or "": none) put before the file's source:
 * a caller's OpenCL C (clattn_options' score_mod and mask_mod). Programs are
 * kept per (file, prelude, options); a prelude that does not compile fails
 * with CLATTN_EBUILD and the build log. */
int kernel_get_with(clattn_ctx *ctx, const char *file, const char *prelude, const char *options,
                    const char *name, cl_kernel *out);

/* Releases every program and kernel of the cache, keeping the binaries
 * of those built from source (program_keep). */
void program_cache_release(struct program_cache *cache);

#endif
