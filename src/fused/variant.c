/* SPDX-License-Identifier: MIT */
/* What a call asks of a fused kernel beyond its tiles (cl/include/fused_grid.clh):
 * as build options for the kernels built from source, as flags for those
 * made at build time. */
#include <stdio.h>
#include <string.h>

#include "fused/kernel.h"

struct fused_variant fused_variant_of(const struct attention_call *c, const struct fused_plan *p)
{
    return (struct fused_variant){
        .group = c->shape->heads / c->shape->kv_heads,
        .causal = c->causal,
        .causal_br = c->causal_br,
        .lse = c->lse != NULL,
        .split = p->splits > 1,
        .kv_lens = c->kv_lens != NULL || c->opts->kv_lens != NULL,
        .q_lens = c->q_lens != NULL || c->opts->q_lens != NULL,
    };
}

void fused_variant_options(const struct fused_variant *v, char *buf, size_t cap)
{
    size_t len = strlen(buf);
    snprintf(buf + len, cap > len ? cap - len : 0,
             " -DGROUP=%zu -DCAUSAL=%d -DCAUSAL_BR=%d -DLSE_OUT=%d -DSPLIT=%d -DKV_LENS=%d "
             "-DQ_LENS=%d", v->group, v->causal, v->causal_br, v->lse, v->split, v->kv_lens,
             v->q_lens);
}

/* Kept in step with cl/include/fused_grid.clh's FUSED_F_*. */
unsigned fused_variant_flags(const struct fused_variant *v)
{
    return (v->causal ? 1u : 0u) | (v->causal_br ? 2u : 0u) | (v->lse ? 4u : 0u) |
           (v->split ? 8u : 0u) | (v->kv_lens ? 16u : 0u) | (v->q_lens ? 32u : 0u);
}
