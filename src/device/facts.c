/* SPDX-License-Identifier: MIT */
/* The device facts record (see facts.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/cl_error.h"
#include "device/cl_info.h"
#include "device/facts.h"

/* Memory one process may really use on NVIDIA's OpenCL: the CUDA context
 * keeps part of the reported global memory. On an H200 (driver 580.159.04)
 * the naive path's buffers ran at 138.87 GiB and failed at 139.34 GiB of the
 * reported 139.80 GiB: 768 MiB sits between the two. */
#define NVIDIA_CONTEXT_RESERVE (768ull << 20)

static clattn_vendor vendor_of_device(cl_device_id dev)
{
    cl_uint vendor_id = 0;
    char vendor[128] = "";
    clGetDeviceInfo(dev, CL_DEVICE_VENDOR_ID, sizeof vendor_id, &vendor_id, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_VENDOR, sizeof vendor, vendor, NULL);
    vendor[sizeof vendor - 1] = '\0';
    return vendor_of(vendor_id, vendor);
}

int device_memory_limits(cl_device_id dev, clattn_figure *capacity, clattn_figure *max_alloc)
{
    cl_ulong global, largest;
    int rc;
    if ((rc = CL_INFO_VALUE(dev, CL_DEVICE_GLOBAL_MEM_SIZE, global))
        || (rc = CL_INFO_VALUE(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, largest)))
        return rc;
    *capacity = figure_of((double)global, CLATTN_SRC_REPORTED);
    *max_alloc = figure_of((double)largest, CLATTN_SRC_REPORTED);
    if (vendor_of_device(dev) == CLATTN_VENDOR_NVIDIA && global > 2 * NVIDIA_CONTEXT_RESERVE) {
        /* NVIDIA reports a quarter of memory as the largest buffer but
         * allocates more (34.96 GiB against 34.95 reported, and 67.5 GiB,
         * on the H200): only the memory itself bounds a buffer there. */
        *capacity = figure_of((double)(global - NVIDIA_CONTEXT_RESERVE), CLATTN_SRC_TABLE);
        *max_alloc = *capacity;
    }
    return 0;
}

static int read_extensions(cl_device_id dev, struct device_facts *f)
{
    int rc = cl_info_extensions(dev, &f->extensions);
    if (rc == 0 && f->extensions.nv_attributes)
        f->nv_cc = (int)(cl_info_vendor_uint(dev, NV_COMPUTE_CAPABILITY_MAJOR) * 10 +
                         cl_info_vendor_uint(dev, NV_COMPUTE_CAPABILITY_MINOR));
    return rc;
}

cl_ulong nv_static_local_bytes(int cc)
{
    switch (cc) {
    case 70: case 72: return 96 * 1024;
    case 75: return 64 * 1024;
    case 80: case 87: return 163 * 1024;
    case 86: case 89: return 99 * 1024;
    case 90: return 227 * 1024; /* seen: 226 KiB arrays build and run on the H200 */
    default: return cc > 90 ? 227 * 1024 : 0;
    }
}

int device_facts_read(cl_device_id dev, struct device_facts *f)
{
    memset(f, 0, sizeof *f);
    char platform_name[128] = "";
    int rc;
    if ((rc = device_identity_read(dev, &f->identity))
        || (rc = CL_INFO_VALUE(dev, CL_DEVICE_PLATFORM, f->platform))
        || (rc = CL_INFO_VALUE(dev, CL_DEVICE_TYPE, f->type))
        || (rc = CL_INFO_VALUE(dev, CL_DEVICE_LOCAL_MEM_SIZE, f->local_mem))
        || (rc = CL_INFO_VALUE(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, f->max_wg))
        || (rc = CL_INFO_VALUE(dev, CL_DEVICE_MAX_COMPUTE_UNITS, f->compute_units))
        || (rc = CL_INFO_VALUE(dev, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, f->native_float_width))
        || (rc = CL_INFO_VALUE(dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, f->base_align_bytes))
        || (rc = read_extensions(dev, f)))
        return rc;
    f->base_align_bytes = f->base_align_bytes >= 8 ? f->base_align_bytes / 8 : 1; /* bits */
    clattn_figure capacity, largest;
    if ((rc = device_memory_limits(dev, &capacity, &largest)))
        return rc;
    f->usable_mem = (cl_ulong)capacity.value;
    f->max_alloc = (cl_ulong)largest.value;
    /* A CPU, and only a CPU: oclgrind's simulated device reports every
     * type bit and is not one to shape kernels for. */
    f->is_cpu = (f->type & CL_DEVICE_TYPE_CPU) && !(f->type & CL_DEVICE_TYPE_GPU);
    f->vendor = vendor_of_device(dev);
    if (f->vendor != CLATTN_VENDOR_NVIDIA)
        f->nv_cc = 0;
    clGetPlatformInfo(f->platform, CL_PLATFORM_NAME, sizeof platform_name, platform_name, NULL);
    platform_name[sizeof platform_name - 1] = '\0';
    snprintf(f->label, sizeof f->label, "%s: %s", platform_name, f->identity.device_name);
    f->is_pocl = strstr(platform_name, "Portable Computing Language") != NULL;
    cl_device_fp_config fp = 0;
    f->fp32_div_rounded = clGetDeviceInfo(dev, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp,
                                          NULL) == CL_SUCCESS &&
                          (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT);
    f->static_local_mem = f->local_mem;
    if (f->vendor == CLATTN_VENDOR_NVIDIA && nv_static_local_bytes(f->nv_cc) > f->local_mem)
        f->static_local_mem = nv_static_local_bytes(f->nv_cc);
    return 0;
}
