/* SPDX-License-Identifier: MIT */
/* A call's variant (cl/include/fused_variant.h's bits, which the kernels
 * read too) as the build options of a kernel built from source. No OpenCL. */
#ifndef CLATTN_SRC_CORE_VARIANT_H
#define CLATTN_SRC_CORE_VARIANT_H

#include <stddef.h>

#include "../../cl/include/fused_variant.h"

/* " -DCAUSAL=0|1 -DCAUSAL_BR=0|1 ..." for each bit of `flags`, appended to
 * buf[0..cap) (which holds a string). */
void variant_options(unsigned flags, char *buf, size_t cap);

#endif
