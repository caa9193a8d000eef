/* SPDX-License-Identifier: MIT */
/* What the two tensor-core fused kernels (nv-mma for prefill, nv-decode)
 * share on the host: the same predicate, since both are made of the same
 * mma.sync tile (cl/include/nv_mma_tile.clh). */
#ifndef CLATTN_SRC_FUSED_NV_MMA_H
#define CLATTN_SRC_FUSED_NV_MMA_H

#include "fused/kernel.h"

/* Why the tensor-core tile cannot run call `c` on this device (compute
 * capability, dtype, head dim, row alignment), or NULL. */
const char *nv_mma_cannot_run(const struct device_facts *dev, const struct attention_call *c);

#endif
