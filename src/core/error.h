/* SPDX-License-Identifier: MIT */
/* Error reporting shared by every module: each failing path records a detail
 * for clattn_last_error_detail() and returns its code. No OpenCL here: the
 * OpenCL statuses are translated by device/cl_error.h. */
#ifndef CLATTN_SRC_CORE_ERROR_H
#define CLATTN_SRC_CORE_ERROR_H

#include <stddef.h>

#include "clattn/types.h"

/* Records the detail (printf-style) for the calling thread and returns code. */
int clattn_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends text to the current detail (e.g. a build log). */
void clattn_detail_append(const char *text);
/* Clears the detail: every int-returning public entry calls it first, so a
 * detail always belongs to the call that failed. */
void clattn_clear_error(void);

/* Returns early from a public function when a condition on its arguments fails. */
#define CLATTN_CHECK_ARG(cond) CLATTN_CHECK_ARG_OF(__func__, cond)
/* The same in a helper that checks on behalf of the public function `func`,
 * whose name the detail gives. */
#define CLATTN_CHECK_ARG_OF(func, cond)                                                \
    do {                                                                                \
        if (!(cond))                                                                    \
            return clattn_fail(CLATTN_EINVAL, "%s: invalid argument: %s", func, #cond); \
    } while (0)

/* Nonzero when a * b overflows size_t; otherwise *out = a * b. */
static inline int mul_overflows(size_t a, size_t b, size_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}

#endif
