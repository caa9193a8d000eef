/* The naive path's GEMMs: one strided-batched C[b] = alpha A[b] op(B[b])
 * (row-major), run by the first backend of the table (naive/gemm.c) that
 * serves it: CLBlast, the NVIDIA tensor-core kernel, the built-in kernel. */
#ifndef CLATTN_SRC_NAIVE_GEMM_H
#define CLATTN_SRC_NAIVE_GEMM_H

#include <stdint.h>

#include "clattn/clattn.h"
#include "device/facts.h"

struct gemm_desc {
    size_t m, n, k, batch;
    float alpha;
    int trans_b;            /* B stored n x k */
    clattn_dtype dtype;
    cl_mem a, b, c;
    size_t lda, ldb, ldc;
    size_t a_stride, b_stride, c_stride; /* elements between batches */
};

/* A GEMM backend described once. */
struct gemm_backend {
    const char *name; /* run info and clattn devices: "clblast", "nv-mma-gemm", ... */
    /* Why it cannot run `g` here (before any build), or NULL. */
    const char *(*cannot_run)(const struct device_facts *dev, const struct gemm_desc *g);
    /* Builds its probe variant: 0 if it builds, else an error (NULL: no probe). */
    int (*probe)(clattn_ctx *ctx);
    /* Device bytes of temporary buffers it allocates for `g` (NULL: none). */
    int (*temp_bytes)(clattn_ctx *ctx, const struct gemm_desc *g, uint64_t *bytes);
    /* Enqueues `g` on the context's queue, in order: 0, an error, or
     * GEMM_HAND_ON when this case's variant does not build here and the next
     * backend should run it. */
    int (*enqueue)(clattn_ctx *ctx, const struct gemm_desc *g);
};
#define GEMM_HAND_ON 1

/* Probe results per context. */
#define GEMM_BACKENDS_MAX 8
struct gemm_state {
    signed char probe[GEMM_BACKENDS_MAX]; /* 0 untried, 1 builds, -1 failed */
};

/* The backend that runs `g`: CLBlast when `use_clblast` and it serves the
 * case, else the first other one that can run it and whose probe builds. */
const struct gemm_backend *gemm_choose(clattn_ctx *ctx, const struct gemm_desc *g,
                                       int use_clblast);

/* Device bytes of the temporaries of gemm_choose's backend for `g`. */
int gemm_temp_bytes(clattn_ctx *ctx, const struct gemm_desc *g, int use_clblast,
                    uint64_t *bytes);

/* Enqueues `g` on gemm_choose's backend. */
int gemm_enqueue(clattn_ctx *ctx, const struct gemm_desc *g, int use_clblast);

/* Whether the naive path's own kernels (the built-in GEMM, the softmax) take
 * their CPU shape: on CPU devices, unless $CLATTN_BUILTIN_GEMM says "gpu"
 * (or, elsewhere, "cpu..."); an error for a value it cannot take. */
int naive_cpu_shaped(clattn_ctx *ctx);

/* The built-in backends share cl/naive/gemm.cl's argument list. */
cl_int gemm_set_standard_args(cl_kernel kern, const struct gemm_desc *g);

#endif
