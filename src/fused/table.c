/* SPDX-License-Identifier: MIT */
/* The fused kernels, in AUTO's order of preference: the first that can run
 * a call on the device (and whose probe builds) is chosen. The list is
 * src/fused/meson.build's (fused/fused_list.h, generated from it). */
#include <string.h>

#include "fused/fused_list.h"
#include "fused/kernel.h"

#define DECLARE(room) extern const struct fused_kernel fused_##room;
FUSED_KERNEL_ROWS(DECLARE)
#undef DECLARE

const struct fused_kernel *const fused_kernels[] = {
#define ROW(room) &fused_##room,
    FUSED_KERNEL_ROWS(ROW)
#undef ROW
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
