/* SPDX-License-Identifier: MIT */
/* OpenCL statuses as library errors. */
#ifndef CLATTN_SRC_DEVICE_CL_ERROR_H
#define CLATTN_SRC_DEVICE_CL_ERROR_H

#include "clattn/clattn.h"
#include "core/error.h"

/* The library code for an OpenCL status: EOOM for allocation failures,
 * EDEVLOST for a lost context, ECL otherwise. `waiting` says the status came
 * from a wait for completed work (clFinish, clWaitForEvents, a blocking
 * transfer), where a faulted kernel shows itself. */
int clattn_code_of_cl(cl_int err, int waiting);
/* Records a failed call ("clEnqueueNDRangeKernel(fused) -> CL_OUT_OF_RESOURCES
 * (-5)") and returns clattn_code_of_cl(err, 0). */
int clattn_fail_cl(cl_int err, const char *call);
/* The same for a wait: clattn_code_of_cl(err, 1). */
int clattn_fail_cl_wait(cl_int err, const char *call);
/* Name of an OpenCL status ("CL_INVALID_VALUE"). */
const char *clattn_cl_status_name(cl_int err);

#endif
