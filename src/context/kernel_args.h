/* SPDX-License-Identifier: MIT */
/* Setting a kernel's arguments in order: the first failure is kept and
 * reported once, for the kernel (the fused launch, the KV append). */
#ifndef CLATTN_SRC_CONTEXT_KERNEL_ARGS_H
#define CLATTN_SRC_CONTEXT_KERNEL_ARGS_H

#include <stdint.h>

#include "clattn/clattn.h"
#include "core/layout.h"

struct kernel_args {
    cl_kernel kernel;
    cl_uint next;
    cl_int err;
};

static inline void arg(struct kernel_args *a, size_t size, const void *value)
{
    if (a->err == CL_SUCCESS)
        a->err = clSetKernelArg(a->kernel, a->next, size, value);
    a->next++;
}

static inline void arg_mem(struct kernel_args *a, cl_mem m)
{
    arg(a, sizeof m, &m); /* a NULL buffer is a NULL pointer */
}

static inline void arg_u64(struct kernel_args *a, uint64_t v)
{
    cl_ulong x = v;
    arg(a, sizeof x, &x);
}

static inline void arg_u32(struct kernel_args *a, size_t v)
{
    cl_uint x = (cl_uint)v;
    arg(a, sizeof x, &x);
}

static inline void arg_i32(struct kernel_args *a, int v)
{
    cl_int x = v;
    arg(a, sizeof x, &x);
}

static inline void arg_float(struct kernel_args *a, float v)
{
    arg(a, sizeof v, &v);
}

/* A layout as four ulongs: offset, batch, head and token strides. */
static inline void arg_layout(struct kernel_args *a, const struct tensor_layout *l)
{
    arg_u64(a, l->offset);
    arg_u64(a, l->batch);
    arg_u64(a, l->head);
    arg_u64(a, l->token);
}

#endif
