/* SPDX-License-Identifier: MIT */
/* A call's variant as build options (see variant.h). */
#include <stdio.h>
#include <string.h>

#include "core/variant.h"

void variant_options(unsigned flags, char *buf, size_t cap)
{
#define OPTION(NAME)                                                                   \
    do {                                                                               \
        const size_t len = strlen(buf);                                                \
        snprintf(buf + len, cap > len ? cap - len : 0, " -D" #NAME "=%d",              \
                 (flags & FUSED_F_##NAME) != 0);                                       \
    } while (0);
    FUSED_VARIANT_BITS(OPTION)
#undef OPTION
}
