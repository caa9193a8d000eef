/* SPDX-License-Identifier: MIT */
/*
 * What an attention call asks beyond its shape, as bits: the one definition
 * the host (src/: struct attention_call's flags) and the kernels (cl/) both
 * read. A kernel built from source gets each bit as a build option
 * -D<NAME>=0|1 (FUSED_VARIANT_BITS lists them); one made at build time (a
 * PTX binary) takes the bits as an argument. Plain preprocessor, valid C
 * and OpenCL C.
 */
#ifndef CLATTN_FUSED_VARIANT_H
#define CLATTN_FUSED_VARIANT_H

#define FUSED_F_CAUSAL 1u     /* a causal mask */
#define FUSED_F_CAUSAL_BR 2u  /* aligned bottom-right: per sequence, kv_len - q_len */
#define FUSED_F_LSE_OUT 4u    /* each row's log-sum-exp written */
#define FUSED_F_SPLIT 8u      /* the keys split into chunks: partial outputs */
#define FUSED_F_KV_LENS 16u   /* per-sequence key lengths */
#define FUSED_F_Q_LENS 32u    /* per-sequence query lengths */

/* X(NAME) for each bit FUSED_F_<NAME>, in order: the build options' names. */
#define FUSED_VARIANT_BITS(X) X(CAUSAL) X(CAUSAL_BR) X(LSE_OUT) X(SPLIT) X(KV_LENS) X(Q_LENS)

#endif
