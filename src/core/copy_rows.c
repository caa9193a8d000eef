/* SPDX-License-Identifier: MIT */
/* A range of rows out of every block of a host tensor (see copy_rows.h). */
#include <stdlib.h>
#include <string.h>

#include "core/copy_rows.h"

void *copy_rows(const void *src, size_t blocks, size_t rows, size_t at, size_t count,
                size_t width, size_t e)
{
    const size_t row_bytes = width * e;
    char *dst = malloc(blocks * count * row_bytes + 1);
    if (!dst)
        return NULL;
    for (size_t i = 0; i < blocks; i++)
        memcpy(dst + i * count * row_bytes, (const char *)src + (i * rows + at) * row_bytes,
               count * row_bytes);
    return dst;
}
