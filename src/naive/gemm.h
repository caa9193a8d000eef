/* The naive path's GEMMs: one strided-batched C[b] = alpha A[b] op(B[b])
 * (row-major), run by the first backend of the table (naive/gemm.c) that
 * serves it: CLBlast, the NVIDIA tensor-core kernel, the built-in kernel. */
#ifndef CLATTN_SRC_NAIVE_GEMM_H
#define CLATTN_SRC_NAIVE_GEMM_H

#include <stdint.h>

#include "clattn/clattn.h"
#include "core/params.h"
#include "device/facts.h"

/* The naive path's parameters (clattn_options.kernel_params on the naive
 * path; naive/gemm.c defines them): the GEMM backend tried first, the shape
 * of the built-in kernels, and tiles forced on the built-in CPU GEMM and
 * the tensor-core GEMM, each PARAM_AUTO for the library's choice. */
enum {
    NAIVE_GEMM,        /* clblast | nv-mma | builtin: the first backend tried */
    NAIVE_SHAPE,       /* cpu | gpu: the built-in GEMM's and the softmax's shape */
    NAIVE_CPU_RM, NAIVE_CPU_NV, NAIVE_CPU_RB, NAIVE_CPU_NS, NAIVE_CPU_KC,
    NAIVE_NV_BM, NAIVE_NV_BN, NAIVE_NV_BK, NAIVE_NV_WARPS_M, NAIVE_NV_WARPS_N, NAIVE_NV_STAGES,
    NAIVE_CLBLAST_INDEX_LIMIT,
    NAIVE_PARAMS
};
enum { NAIVE_GEMM_CLBLAST, NAIVE_GEMM_NV_MMA, NAIVE_GEMM_BUILTIN };
enum { NAIVE_SHAPE_CPU, NAIVE_SHAPE_GPU };
extern const struct param_def naive_params[NAIVE_PARAMS];

/* The naive path's parameter group, its values in `values` (NULL: none, for
 * listing the definitions). Returns the number of groups, 1. */
size_t naive_param_groups(int *values, struct param_group groups[2]);

/* opts->kernel_params as the naive path's values. */
int naive_params_of(const clattn_options *opts, int values[NAIVE_PARAMS]);

struct gemm_desc {
    size_t m, n, k, batch;
    float alpha;
    int trans_b;            /* B stored n x k */
    clattn_dtype dtype;
    cl_mem a, b, c;
    size_t lda, ldb, ldc;
    size_t a_stride, b_stride, c_stride; /* elements between batches */
    const int *params;      /* the call's naive parameters (NAIVE_PARAMS values) */
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
 * case, else the first other one that can run it and whose probe builds
 * (from the one g->params' NAIVE_GEMM names, when it names one). */
const struct gemm_backend *gemm_choose(clattn_ctx *ctx, const struct gemm_desc *g,
                                       int use_clblast);

/* Device bytes of the temporaries of gemm_choose's backend for `g`. */
int gemm_temp_bytes(clattn_ctx *ctx, const struct gemm_desc *g, int use_clblast,
                    uint64_t *bytes);

/* Enqueues `g` on gemm_choose's backend. */
int gemm_enqueue(clattn_ctx *ctx, const struct gemm_desc *g, int use_clblast);

/* Whether the naive path's own kernels (the built-in GEMM, the softmax) take
 * their CPU shape: on CPU devices, unless the NAIVE_SHAPE parameter says
 * otherwise. */
int naive_cpu_shaped(const clattn_ctx *ctx, const int *params);

/* The built-in backends share cl/naive/gemm.cl's argument list: sets it on
 * `kern` for `g`, enqueues `dims` dimensions of work-groups on `queue` and
 * releases the kernel. `label` ("gemm_batched cpu") names the kernel in the
 * recorded error. */
int gemm_enqueue_standard(cl_command_queue queue, cl_kernel kern, const struct gemm_desc *g,
                          cl_uint dims, const size_t *global, const size_t *local,
                          const char *label);

#endif
