/* SPDX-License-Identifier: MIT */
/* The fused kernels, in AUTO's order of preference: the first that can run
 * a shape on the device (and whose probe builds) is chosen. */
#include <string.h>

#include "fused/kernel.h"

extern const struct fused_kernel fused_nv_decode, fused_nv_wgmma, fused_nv_mma, fused_cpu, fused_tiled,
    fused_portable;

const struct fused_kernel *const fused_kernels[] = {
    &fused_nv_decode, /* AUTO passes it over for prefill shapes */
    &fused_nv_wgmma,  /* Hopper; passed over for decoding */
    &fused_nv_mma,
    &fused_cpu,
    &fused_tiled,
    &fused_portable,
};
const size_t fused_kernel_count = sizeof fused_kernels / sizeof fused_kernels[0];

const struct fused_kernel *fused_kernel_by_id(clattn_fused_kernel id)
{
    for (size_t i = 0; i < fused_kernel_count; i++)
        if (fused_kernels[i]->id == id)
            return fused_kernels[i];
    return NULL;
}

const struct fused_kernel *fused_kernel_by_name(const char *name)
{
    for (size_t i = 0; name && i < fused_kernel_count; i++)
        if (!strcmp(fused_kernels[i]->name, name))
            return fused_kernels[i];
    return NULL;
}
