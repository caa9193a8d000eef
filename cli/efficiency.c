/* The kernels' efficiencies: the time to expect (see efficiency.h). */
#include <stdio.h>
#include <string.h>

#include "efficiency.h"

void efficiency_kernel_name(const char *described, char *out, size_t cap)
{
    size_t n = strcspn(described, " ");
    if (n >= cap)
        n = cap - 1;
    memcpy(out, described, n);
    out[n] = '\0';
}

double efficiency_expected_time(clattn_ctx *ctx, const char *kernel, clattn_dtype dtype,
                                size_t head_dim, const clattn_path_estimate *est,
                                double *fraction)
{
    char name[64];
    double f = 0;
    if (fraction)
        *fraction = 0;
    if (!ctx || !kernel || !kernel[0] || !(est->time_s > 0) ||
        (est->bound != CLATTN_BOUND_MEMORY && est->bound != CLATTN_BOUND_COMPUTE))
        return 0;
    efficiency_kernel_name(kernel, name, sizeof name);
    if (clattn_kernel_efficiency(ctx, name, dtype, head_dim, est->bound, &f) != 1 || !(f > 0))
        return 0;
    if (fraction)
        *fraction = f;
    return est->time_s / f;
}
