/* SPDX-License-Identifier: MIT */
/* One record of what the library's modules need to know about a device,
 * read once when a context opens and read-only after: every kernel
 * predicate, tile choice and memory refusal reads it rather than asking the
 * driver again. */
#ifndef CLATTN_SRC_DEVICE_FACTS_H
#define CLATTN_SRC_DEVICE_FACTS_H

#include <stddef.h>

#include "clattn/device.h"
#include "device/cl_info.h"
#include "device/identity.h"

struct device_facts {
    char label[256];              /* "platform: device", for messages */
    struct device_identity identity;
    cl_platform_id platform;
    cl_device_type type;
    int is_cpu;                   /* CL_DEVICE_TYPE_CPU */
    int is_pocl;                  /* the platform is PoCL (its compiler's quirks) */
    int fp32_div_rounded;         /* CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT: the build option
                                   * -cl-fp32-correctly-rounded-divide-sqrt is allowed */
    clattn_vendor vendor;
    int nv_cc;                    /* NVIDIA compute capability x 10 (90 = sm_90), else 0 */
    struct cl_extensions extensions;
    cl_ulong local_mem;           /* CL_DEVICE_LOCAL_MEM_SIZE */
    cl_ulong static_local_mem;    /* __local bytes a kernel may declare in arrays of
                                   * fixed size: local_mem, except on NVIDIA, whose
                                   * reported 48 KiB bounds __local arguments only */
    cl_ulong usable_mem;          /* memory a run may really use (device_memory_limits) */
    cl_ulong max_alloc;           /* the largest buffer the driver really allocates */
    size_t max_wg;                /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
    cl_uint compute_units;
    cl_uint native_float_width;   /* CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT */
    cl_uint base_align_bytes;     /* CL_DEVICE_MEM_BASE_ADDR_ALIGN, in bytes: sub-buffer
                                   * origins must be multiples of it */
};

/* A figure from its source; a value that is not positive is unknown. */
static inline clattn_figure figure_of(double value, clattn_source source)
{
    clattn_figure f = { value > 0 ? value : 0, value > 0 ? source : CLATTN_SRC_NONE };
    return f;
}

/* Static __local bytes per block on an NVIDIA GPU of compute capability
 * `cc` (x 10) -- the opt-in shared memory ptxas accepts -- or 0 if unknown. */
cl_ulong nv_static_local_bytes(int cc);

/* Fills *out for `dev`. */
int device_facts_read(cl_device_id dev, struct device_facts *out);

/* The memory a run may really use and the largest buffer the driver really
 * allocates: the reported figures, except where a driver is known to differ
 * (NVIDIA: a context reserve, and no limit below the memory on one buffer),
 * then labelled CLATTN_SRC_TABLE. The model's ceilings and the runtime's
 * refusal both use it, so that both predict the same boundary. */
int device_memory_limits(cl_device_id dev, clattn_figure *capacity, clattn_figure *max_alloc);

#endif
