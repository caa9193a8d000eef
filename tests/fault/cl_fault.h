/* SPDX-License-Identifier: MIT */
/*
 * The one function libcl_fault.so adds to the OpenCL API it wraps.
 *
 * A test program does not link against the interposer (it runs with or
 * without LD_PRELOAD), so it looks the function up at run time:
 *
 *     cl_fault_mark_fn mark = (cl_fault_mark_fn)dlsym(RTLD_DEFAULT, CL_FAULT_MARK_SYMBOL);
 *     if (mark)
 *         mark("call1");
 */
#ifndef CLATTN_TESTS_CL_FAULT_H
#define CLATTN_TESTS_CL_FAULT_H

#define CL_FAULT_MARK_SYMBOL "cl_fault_mark"

/* Writes "# <label>" to $CL_FAULT_LOG, so that a driver can tell which
 * phase of the program each counted call belongs to. */
void cl_fault_mark(const char *label);

typedef void (*cl_fault_mark_fn)(const char *label);

#endif
