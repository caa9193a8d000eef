/* SPDX-License-Identifier: MIT */
/* Kernel launches seen on their way to the OpenCL loader (launches.h). */
#define _GNU_SOURCE /* RTLD_NEXT */
#include "launches.h"

#include <dlfcn.h>
#include <string.h>

typedef cl_int (*enqueue_fn)(cl_command_queue, cl_kernel, cl_uint, const size_t *,
                             const size_t *, const size_t *, cl_uint, const cl_event *,
                             cl_event *);

static unsigned long count;
static int recording;
static launch recorded[LAUNCHES_MAX];
static size_t n_recorded;

CL_API_ENTRY cl_int CL_API_CALL clEnqueueNDRangeKernel(
    cl_command_queue queue, cl_kernel kernel, cl_uint dim, const size_t *offset,
    const size_t *global, const size_t *local, cl_uint n_wait, const cl_event *wait,
    cl_event *event)
{
    static enqueue_fn next;
    if (!next)
        next = (enqueue_fn)dlsym(RTLD_NEXT, "clEnqueueNDRangeKernel");
    if (!next)
        return CL_INVALID_OPERATION;
    count++;
    const int keep = recording && n_recorded < LAUNCHES_MAX;
    cl_event mine = NULL;
    cl_int err = next(queue, kernel, dim, offset, global, local, n_wait, wait,
                      keep || event ? &mine : NULL);
    if (err != CL_SUCCESS || !keep) {
        if (event)
            *event = mine;
        return err;
    }
    /* The caller's event is the same one, with a reference of its own;
     * without it, the caller keeps the event and the launch goes
     * unrecorded. */
    if (event) {
        *event = mine;
        if (clRetainEvent(mine) != CL_SUCCESS)
            return CL_SUCCESS;
    }
    launch *l = &recorded[n_recorded++];
    l->event = mine;
    l->kernel[0] = '\0';
    clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, sizeof l->kernel, l->kernel, NULL);
    l->kernel[sizeof l->kernel - 1] = '\0';
    return CL_SUCCESS;
}

unsigned long launches_count(void)
{
    return count;
}

void launches_record(int on)
{
    recording = on;
}

size_t launches_take(launch *out, size_t cap)
{
    const size_t n = n_recorded;
    for (size_t i = 0; i < n; i++) {
        if (i < cap)
            out[i] = recorded[i];
        else
            clReleaseEvent(recorded[i].event);
    }
    n_recorded = 0;
    return n;
}

double launches_device_seconds(size_t *n)
{
    double seconds = 0;
    int known = 1;
    *n = n_recorded;
    for (size_t i = 0; i < n_recorded; i++) {
        cl_event ev = recorded[i].event;
        cl_ulong start = 0, end = 0;
        known &= clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof start, &start,
                                         NULL) == CL_SUCCESS &&
                 clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end,
                                         NULL) == CL_SUCCESS;
        seconds += end > start ? 1e-9 * (double)(end - start) : 0;
        clReleaseEvent(ev);
    }
    n_recorded = 0;
    return known ? seconds : -1;
}
