/* Error codes, their messages, and the per-thread detail of the last failure. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

/* Large enough for a kernel build log's first screens. */
#define DETAIL_CAP 8192
static _Thread_local char detail[DETAIL_CAP];

const char *clattn_strerror(int code)
{
    switch (code) {
#define X(name, value, msg) case CLATTN_##name: return msg;
        CLATTN_ERRNO_MAP(X)
#undef X
    }
    return "unknown error";
}

const char *clattn_error_name(int code)
{
    switch (code) {
#define X(name, value, msg) case CLATTN_##name: return "CLATTN_" #name;
        CLATTN_ERRNO_MAP(X)
#undef X
    }
    return "CLATTN_UNKNOWN";
}

const char *clattn_last_error_detail(void)
{
    return detail;
}

void clattn_clear_error(void)
{
    detail[0] = '\0';
}

int clattn_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return code;
}

void clattn_detail_append(const char *text)
{
    size_t len = strlen(detail);
    if (len + 1 < sizeof detail)
        snprintf(detail + len, sizeof detail - len, "%s", text);
}

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

int clattn_fail_cl(cl_int err, const char *call)
{
    int code = CLATTN_ECL;
    if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_INVALID_BUFFER_SIZE)
        code = CLATTN_EOOM;
    else if (err == CL_OUT_OF_RESOURCES || err == -9999 ||
             err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
        code = CLATTN_EDEVLOST;
    return clattn_fail(code, "%s -> %s (%d)", call, clattn_cl_status_name(err), (int)err);
}
