/* The two attention paths and the GEMM service of the naive one. Arguments
 * were checked by attention.c; these functions only enqueue. */
#ifndef CLATTN_SRC_PATHS_H
#define CLATTN_SRC_PATHS_H

#include <stdint.h>

#include "internal.h"

/* What a path call needs beyond the caller's buffers. */
struct attention_call {
    const clattn_shape *shape;
    const clattn_options *opts;
    float scale;            /* resolved: never 0 */
    int causal_off;         /* 0 (top-left) or Nk - Nq (bottom-right) */
    cl_mem q, k, v, o;
    cl_uint num_wait;
    const cl_event *wait_list;
    cl_event *done;         /* may be NULL */
    clattn_run_info *info;  /* never NULL here */
};

/* One strided-batched GEMM: C[b] = alpha * A[b] * op(B[b]) (row-major). */
struct gemm_desc {
    size_t m, n, k, batch;
    float alpha;
    int trans_b;            /* B stored n x k */
    clattn_dtype dtype;
    cl_mem a, b, c;
    size_t lda, ldb, ldc;
    size_t a_stride, b_stride, c_stride; /* elements between batches */
};

/* Whether CLBlast serves `dtype` on this device (compiled in, and for fp16
 * the device advertises cl_khr_fp16, which CLBlast checks). */
int clattn_gemm_clblast_ok(const clattn_ctx *ctx, clattn_dtype dtype);
/* Device bytes of temporary buffers CLBlast allocates for `g` (0 for the
 * built-in kernel). */
int clattn_gemm_temp_bytes(clattn_ctx *ctx, const struct gemm_desc *g, int use_clblast,
                           uint64_t *bytes);
/* What runs the naive path's two GEMMs for shape `s`: "clblast",
 * "nv-mma-gemm", "builtin-gemm", or "nv-mma-gemm+builtin-gemm" (Q K^T on
 * tensor cores, P V on the portable kernel). May build the tensor-core
 * probe program. */
const char *clattn_naive_gemm_name(clattn_ctx *ctx, const clattn_shape *s, int use_clblast);
/* Enqueues the GEMM with CLBlast or the built-in kernel. */
int clattn_gemm_enqueue(clattn_ctx *ctx, const struct gemm_desc *g, int use_clblast);

/* The naive path's GEMM descriptors (Q K^T into S, P V into O). Grouped-query
 * heads share K and V, so the g = H / Hkv query heads of one key/value head
 * form one g*Nq-row GEMM: the batch is B*Hkv with constant strides. */
void clattn_naive_gemms(const clattn_shape *s, float scale, cl_mem q, cl_mem k, cl_mem v,
                        cl_mem o, cl_mem scores, cl_mem probs, struct gemm_desc *qk,
                        struct gemm_desc *pv);
/* Workspace bytes beyond S and P (CLBlast's temporaries). */
int clattn_naive_extra_bytes(clattn_ctx *ctx, const clattn_shape *s, int use_clblast,
                             uint64_t *bytes);
int clattn_naive_enqueue(clattn_ctx *ctx, const struct attention_call *call);

/* Fused tiles for a shape on this device. */
struct fused_config {
    clattn_fused_kernel kernel;
    size_t block_m, block_n, threads_per_row, padded_dim;
    size_t warps, m_tiles; /* tensor-core kernel: BM = 16 x m_tiles x warps */
};
int clattn_fused_config(clattn_ctx *ctx, const clattn_shape *s,
                        const clattn_options *opts, struct fused_config *cfg);
int clattn_fused_enqueue(clattn_ctx *ctx, const struct attention_call *call);


#endif
