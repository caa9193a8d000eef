/* The naive path, exactly the seed's model: S = scale Q K^T is written to
 * device memory for every head, softmax reads S and writes P to a second
 * buffer, and O = P V reads P: four passes over the N^2 scores. */
#ifndef CLATTN_SRC_NAIVE_NAIVE_H
#define CLATTN_SRC_NAIVE_NAIVE_H

#include <stdint.h>

#include "naive/gemm.h"
#include "context/call.h"
#include "context/kept_buffer.h"

/* What the path keeps in a context: S and P between calls (as a framework's
 * caching allocator keeps them), and the GEMM backends' probe results. */
#define NAIVE_SCRATCH 6
struct naive_state {
    struct kept_buffer scratch[NAIVE_SCRATCH]; /* S, P; contiguous copies of Q, K, V, O */
    struct gemm_state gemm;
};

/* The path's GEMM descriptors (Q K^T into S, P V into O). Grouped-query
 * heads share K and V, so the g = H / Hkv query heads of one key/value head
 * form one g*Nq-row GEMM: the batch is B*Hkv with constant strides. */
void naive_gemms(const clattn_shape *s, float scale, cl_mem q, cl_mem k, cl_mem v, cl_mem o,
                 cl_mem scores, cl_mem probs, struct gemm_desc *qk, struct gemm_desc *pv);

/* What runs the two GEMMs for `s` with `opts` (use_clblast, the naive
 * parameters): one backend name, or "A+B" when Q K^T and P V go to
 * different ones. May build probe programs. */
int naive_gemm_names(clattn_ctx *ctx, const clattn_shape *s, const clattn_options *opts,
                     char *buf, size_t cap);

/* Workspace bytes of call `c` beyond S and P: CLBlast's temporaries, and the
 * contiguous copies of tensors whose layout the GEMMs cannot take (or K and
 * V of sequences with their own lengths). */
int naive_extra_bytes(clattn_ctx *ctx, const struct attention_call *c, uint64_t *bytes);

int naive_enqueue(clattn_ctx *ctx, const struct attention_call *call);

/* CLATTN_EUNSUPPORTED naming what call `c` asks that the naive path does not
 * do, or CLATTN_OK. */
int naive_cannot_run(const struct attention_call *c);

/* Frees S and P. */
void naive_state_release(struct naive_state *state);

#endif
