/* SPDX-License-Identifier: MIT */
/* OpenCL statuses: their names, and which library code each one becomes. */
#include "device/cl_error.h"

const char *clattn_cl_status_name(cl_int err)
{
    switch (err) {
#define S(x) case x: return #x;
        S(CL_SUCCESS) S(CL_DEVICE_NOT_FOUND) S(CL_DEVICE_NOT_AVAILABLE)
        S(CL_COMPILER_NOT_AVAILABLE) S(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        S(CL_OUT_OF_RESOURCES) S(CL_OUT_OF_HOST_MEMORY) S(CL_BUILD_PROGRAM_FAILURE)
        S(CL_INVALID_VALUE) S(CL_INVALID_DEVICE) S(CL_INVALID_CONTEXT)
        S(CL_INVALID_COMMAND_QUEUE) S(CL_INVALID_MEM_OBJECT) S(CL_INVALID_BINARY)
        S(CL_INVALID_BUILD_OPTIONS) S(CL_INVALID_PROGRAM) S(CL_INVALID_KERNEL_NAME)
        S(CL_INVALID_KERNEL) S(CL_INVALID_ARG_INDEX) S(CL_INVALID_ARG_VALUE)
        S(CL_INVALID_ARG_SIZE) S(CL_INVALID_KERNEL_ARGS) S(CL_INVALID_WORK_DIMENSION)
        S(CL_INVALID_WORK_GROUP_SIZE) S(CL_INVALID_WORK_ITEM_SIZE)
        S(CL_INVALID_GLOBAL_OFFSET) S(CL_INVALID_EVENT_WAIT_LIST) S(CL_INVALID_EVENT)
        S(CL_INVALID_BUFFER_SIZE) S(CL_INVALID_GLOBAL_WORK_SIZE)
        S(CL_INVALID_PLATFORM) S(CL_INVALID_QUEUE_PROPERTIES)
        S(CL_INVALID_OPERATION) S(CL_INVALID_PROGRAM_EXECUTABLE)
        S(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
#undef S
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    case -9999: return "NVIDIA -9999 (context unusable after a fault)";
    }
    return "CL_UNKNOWN_ERROR";
}

int clattn_code_of_cl(cl_int err, int waiting)
{
    if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_INVALID_BUFFER_SIZE)
        return CLATTN_EOOM;
    if (err == -9999) /* NVIDIA: every call after a fault */
        return CLATTN_EDEVLOST;
    /* What a wait returns after a kernel faulted: NVIDIA answers -36 or -5
     * from clFinish, and -14 for the commands queued behind the fault. From
     * an enqueue or a create call the same codes are ordinary failures (a
     * launch that asks for too many resources, an invalid queue argument). */
    if (waiting && (err == CL_OUT_OF_RESOURCES || err == CL_INVALID_COMMAND_QUEUE ||
                    err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST))
        return CLATTN_EDEVLOST;
    return CLATTN_ECL;
}

int clattn_fail_cl(cl_int err, const char *call)
{
    return clattn_fail(clattn_code_of_cl(err, 0), "%s -> %s (%d)", call,
                       clattn_cl_status_name(err), (int)err);
}

int clattn_fail_cl_wait(cl_int err, const char *call)
{
    return clattn_fail(clattn_code_of_cl(err, 1), "%s -> %s (%d)", call,
                       clattn_cl_status_name(err), (int)err);
}
