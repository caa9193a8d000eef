/* SPDX-License-Identifier: MIT */
/* A call's variant for a fused kernel: the call's bits and the split's. */
#include "fused/kernel.h"

unsigned fused_variant_flags(const struct attention_call *c, const struct fused_plan *p)
{
    return c->flags | (p->splits > 1 ? FUSED_F_SPLIT : 0u);
}
