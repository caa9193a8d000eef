/* SPDX-License-Identifier: MIT */
/*
 * The tiles cl/fused/nv_wgmma.cl is built with, per head dimension d, and
 * the variants its score flavour adds: the kernel (C preprocessor of
 * OpenCL C, through cl/ptxgen.py) and its host descriptor
 * (src/fused/nv_wgmma.c: configure, the split's key chunks, the binary's
 * name, the launch) read them from here, so that they cannot differ. Plain
 * preprocessor arithmetic, valid in #if.
 *
 * BM: packed rows per work-group (two consumer warpgroups of 64 rows).
 * BN: keys per block; d = 256 halves it to keep two stages of K and V
 *     (Q 64 KiB + 2 x 64 KiB) in shared memory and O's 128 accumulators in
 *     the consumers' registers; d = 64 takes 64 for two work-groups per SM.
 * STAGES: the K/V ring's depth.
 * THREADS: work-items per group (+ the producer warpgroup).
 */
#ifndef CLATTN_NV_WGMMA_GEOMETRY_H
#define CLATTN_NV_WGMMA_GEOMETRY_H

#define NV_WGMMA_BM 128u
#define NV_WGMMA_BN(d) ((d) == 128 ? 128u : 64u)
#define NV_WGMMA_STAGES(d) ((d) == 64 ? 4u : 2u)
#define NV_WGMMA_THREADS 384u
/* Work-groups one SM holds: d = 64 is built at .maxnreg 80 (cl/meson.build)
 * with an 80 KiB ring; the others at 168 fill the register file. */
#define NV_WGMMA_GROUPS_PER_SM(d) ((d) == 64 ? 2u : 1u)

/* The variants applied one score at a time, which the score flavour's
 * binaries (-DWG_SCORE=1) take and the plain ones do not
 * (cl/include/fused_variant.h's bits). */
#define NV_WGMMA_SCORE_BITS (FUSED_F_SOFTCAP | FUSED_F_ALIBI | FUSED_F_MASK | FUSED_F_MASK_BOOL)

#endif
