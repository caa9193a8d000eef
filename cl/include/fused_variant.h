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
#define FUSED_F_SOFTCAP 64u   /* scores capped: softcap tanh(s / softcap) */
#define FUSED_F_ALIBI 128u    /* ALiBi: -slope |i + off - j| added */
#define FUSED_F_WINDOW 256u   /* a sliding window hides keys */
#define FUSED_F_SINKS 512u    /* each head's sink joins the softmax's denominator */
#define FUSED_F_MASK 1024u    /* an additive mask (MASK_DTYPE: its storage) */
#define FUSED_F_MASK_BOOL 2048u /* a boolean mask */
#define FUSED_F_SCORE_MOD 4096u /* the caller's clattn_score_mod */
#define FUSED_F_MASK_MOD 8192u  /* the caller's clattn_mask_mod */
#define FUSED_F_ALIBI_SEQ 16384u /* ALiBi slopes per (sequence, head), not per head */
#define FUSED_F_PAGED 32768u    /* K and V in pages through a block table */
#define FUSED_F_PACKED_Q 65536u /* packed queries: the q_lens argument holds cu_seqlens_q */
#define FUSED_F_PACKED_K 131072u /* packed keys: the kv_lens argument holds cu_seqlens_k */
#define FUSED_F_KV_QUANT 262144u /* K or V stored quantized (K_TYPE, V_TYPE) */

/* The bits beyond a causal mask, lengths and the split: the variants a
 * kernel says it takes. */
#define FUSED_F_VARIANTS                                                                   \
    (FUSED_F_SOFTCAP | FUSED_F_ALIBI | FUSED_F_WINDOW | FUSED_F_SINKS | FUSED_F_MASK |     \
     FUSED_F_MASK_BOOL | FUSED_F_SCORE_MOD | FUSED_F_MASK_MOD | FUSED_F_ALIBI_SEQ |       \
     FUSED_F_PAGED | FUSED_F_PACKED_Q | FUSED_F_PACKED_K | FUSED_F_KV_QUANT)

/* The cache forms among them: a kernel reads K and V through
 * cl/include/kv_cache.clh to take them. */
#define FUSED_F_CACHE (FUSED_F_PAGED | FUSED_F_PACKED_Q | FUSED_F_PACKED_K | FUSED_F_KV_QUANT)

/* A build-time binary's mask word (its argument after the flags): bits 0-1
 * an additive mask's storage (MASK_DTYPE's values: fp32, fp16, bf16),
 * and FUSED_MASK_ROWS16 when every mask row starts on a 16-byte boundary
 * and holds whole 16-byte chunks (offset, strides and Nk multiples of 16
 * bytes' elements), so that a kernel may copy the rows in chunks. */
#define FUSED_MASK_DTYPE_BITS 3u
#define FUSED_MASK_ROWS16 4u

/* X(NAME) for each bit FUSED_F_<NAME>, in order: the build options' names. */
#define FUSED_VARIANT_BITS(X)                                                              \
    X(CAUSAL) X(CAUSAL_BR) X(LSE_OUT) X(SPLIT) X(KV_LENS) X(Q_LENS) X(SOFTCAP) X(ALIBI)    \
    X(WINDOW) X(SINKS) X(MASK) X(MASK_BOOL) X(SCORE_MOD) X(MASK_MOD) X(ALIBI_SEQ)        \
    X(PAGED) X(PACKED_Q) X(PACKED_K) X(KV_QUANT)

#endif
