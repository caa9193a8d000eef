/* SPDX-License-Identifier: MIT */
/* A range of rows out of every block of a contiguous host tensor, as the
 * shares of a call spread over devices (group/) or ranks (mpi/) take them.
 * No OpenCL, no error state: the one function links into both libraries. */
#ifndef CLATTN_SRC_CORE_COPY_ROWS_H
#define CLATTN_SRC_CORE_COPY_ROWS_H

#include <stddef.h>

/* Rows [at, at + count) of each of `blocks` blocks of `rows` rows of
 * `width` values of `e` bytes, copied into a new contiguous array (malloc'd,
 * at least one byte, so that a share of no rows still has a pointer). NULL
 * when out of memory; the caller has checked the sizes for overflow. */
void *copy_rows(const void *src, size_t blocks, size_t rows, size_t at, size_t count,
                size_t width, size_t e);

#endif
