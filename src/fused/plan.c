/* SPDX-License-Identifier: MIT */
/* A plan before its kernel configures it: every parameter its kernel's
 * choice, and the parameter groups a plan reads (the kernel's own, then
 * those of the fused path every kernel takes). */
#include <string.h>

#include "fused/kernel.h"

const struct param_def fused_common_params[FUSED_COMMON_PARAMS] = {
    [FUSED_COMMON_COMBINE_PARTS] = { "combine_parts", 1, 8, NULL,
                                     "work-items summing each output column's chunks in "
                                     "cl/fused/combine.cl: 1, 2, 4 or 8 (by default 8 on a "
                                     "GPU, 1 on a CPU)" },
};

void fused_plan_init(struct fused_plan *plan, const struct fused_kernel *k)
{
    memset(plan, 0, sizeof *plan);
    plan->kernel = k;
    plan->splits = 1;
    struct param_group groups[2];
    params_reset(groups, fused_param_groups(plan, groups));
}

size_t fused_param_groups(struct fused_plan *plan, struct param_group groups[2])
{
    groups[0] = (struct param_group){ plan->kernel->params, plan->kernel->n_params,
                                      plan->params };
    groups[1] = (struct param_group){ fused_common_params, FUSED_COMMON_PARAMS, plan->common };
    return 2;
}
