/* SPDX-License-Identifier: MIT */
/* Buffers kept between calls (see kept_buffer.h). */
#include <stdlib.h>

#include "context/kept_buffer.h"
#include "device/cl_error.h"

/* A buffer of `bytes` zeros. */
static cl_mem zeroed_buffer(cl_context context, uint64_t bytes, cl_int *err)
{
    void *zeros = calloc(1, (size_t)bytes);
    if (!zeros) {
        *err = CL_OUT_OF_HOST_MEMORY;
        return NULL;
    }
    cl_mem m = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, (size_t)bytes,
                              zeros, err);
    free(zeros);
    return m;
}

int kept_buffer_get(cl_context context, struct kept_buffer *b, uint64_t bytes, int zeroed,
                    const char *what, cl_mem *out)
{
    if (b->mem && b->bytes >= bytes) {
        *out = b->mem;
        return CLATTN_OK;
    }
    kept_buffer_release(b);
    cl_int err;
    cl_mem m = zeroed ? zeroed_buffer(context, bytes, &err)
                      : clCreateBuffer(context, CL_MEM_READ_WRITE, (size_t)bytes, NULL, &err);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, what);
    b->mem = *out = m;
    b->bytes = bytes;
    return CLATTN_OK;
}

void kept_buffer_release(struct kept_buffer *b)
{
    if (b->mem)
        clReleaseMemObject(b->mem);
    b->mem = NULL;
    b->bytes = 0;
}
