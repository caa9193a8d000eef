/* Internal error reporting: every failing path records a detail for
 * clattn_last_error_detail() and returns its code. */
#ifndef CLATTN_SRC_ERROR_H
#define CLATTN_SRC_ERROR_H

#include "clattn/clattn.h"

/* Records the detail (printf-style) for the calling thread and returns code. */
int clattn_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Records an OpenCL failure ("clEnqueueNDRangeKernel(fused) -> CL_OUT_OF_RESOURCES
 * (-5)") and returns the matching library code: EOOM for allocation failures,
 * EDEVLOST for a lost context, ECL otherwise. */
int clattn_fail_cl(cl_int err, const char *call);
/* Appends text to the current detail (e.g. a build log). */
void clattn_detail_append(const char *text);
/* Clears the detail at the start of a public call. */
void clattn_clear_error(void);
/* Name of an OpenCL status ("CL_INVALID_VALUE"). */
const char *clattn_cl_status_name(cl_int err);

/* Returns early from a public function when a condition on its arguments fails. */
#define CLATTN_CHECK_ARG(cond)                                                             \
    do {                                                                                    \
        if (!(cond))                                                                        \
            return clattn_fail(CLATTN_EINVAL, "%s: invalid argument: %s", __func__, #cond); \
    } while (0)

#endif
