/* SPDX-License-Identifier: MIT */
/* What a device reports, for clattn devices and any caller: OpenCL's
 * properties, vendor attributes, and whether half arithmetic builds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/cl_error.h"
#include "device/cl_info.h"
#include "device/build.h"

const char *clattn_source_name(clattn_source src)
{
    switch (src) {
    case CLATTN_SRC_NONE: return "unknown";
    case CLATTN_SRC_REPORTED: return "reported";
    case CLATTN_SRC_VENDOR: return "vendor attribute";
    case CLATTN_SRC_MEASURED: return "measured";
    case CLATTN_SRC_TABLE: return "table";
    case CLATTN_SRC_GIVEN: return "given";
    case CLATTN_SRC_PRESET: return "preset";
    }
    return "unknown";
}

static void query_nv(cl_device_id dev, clattn_device_props *p)
{
    p->nv.present = 1;
    p->nv.cc_major = (uint32_t)cl_info_vendor_uint(dev, NV_COMPUTE_CAPABILITY_MAJOR);
    p->nv.cc_minor = (uint32_t)cl_info_vendor_uint(dev, NV_COMPUTE_CAPABILITY_MINOR);
    p->nv.registers_per_block = (uint32_t)cl_info_vendor_uint(dev, NV_REGISTERS_PER_BLOCK);
    p->nv.warp_size = (uint32_t)cl_info_vendor_uint(dev, NV_WARP_SIZE);
    p->nv.shared_mem_per_sm = cl_info_vendor_uint(dev, NV_SHARED_MEM_PER_SM);
}

static void query_amd(cl_device_id dev, clattn_device_props *p)
{
    p->amd.present = 1;
    if (clGetDeviceInfo(dev, AMD_BOARD_NAME, sizeof p->amd.board_name, p->amd.board_name, NULL)
        != CL_SUCCESS)
        p->amd.board_name[0] = '\0';
    p->amd.board_name[sizeof p->amd.board_name - 1] = '\0';
    p->amd.wavefront_width = (uint32_t)cl_info_vendor_uint(dev, AMD_WAVEFRONT_WIDTH);
    /* An array of size_t in KiB: total free, then the largest free block. */
    size_t free_kib[2] = { 0, 0 }, size = 0;
    if (clGetDeviceInfo(dev, AMD_GLOBAL_FREE_MEMORY, 0, NULL, &size) == CL_SUCCESS
        && size >= sizeof free_kib[0] && size <= sizeof free_kib
        && clGetDeviceInfo(dev, AMD_GLOBAL_FREE_MEMORY, size, free_kib, NULL) == CL_SUCCESS)
        p->amd.free_mem_bytes = (uint64_t)free_kib[0] * 1024;
}

static void query_intel(cl_device_id dev, clattn_device_props *p)
{
    p->intel.present = 1;
    p->intel.slices = (uint32_t)cl_info_vendor_uint(dev, INTEL_NUM_SLICES);
    p->intel.sub_slices_per_slice = (uint32_t)cl_info_vendor_uint(dev, INTEL_NUM_SUB_SLICES_PER_SLICE);
    p->intel.eus_per_sub_slice = (uint32_t)cl_info_vendor_uint(dev, INTEL_NUM_EUS_PER_SUB_SLICE);
    p->intel.threads_per_eu = (uint32_t)cl_info_vendor_uint(dev, INTEL_NUM_THREADS_PER_EU);
}

/* Builds measure.cl's fp16 variant (half2 FMA chains under cl_khr_fp16) in a
 * throwaway context: 1 if it builds, 0 if not, -1 if it could not be tried.
 * NVIDIA, for one, computes half correctly without advertising cl_khr_fp16. */
static int probe_fp16(cl_device_id dev, cl_platform_id platform, const char *label, char *log,
                      size_t cap)
{
    cl_int err;
    cl_context_properties props[] = { CL_CONTEXT_PLATFORM, (cl_context_properties)platform, 0 };
    cl_context context = clCreateContext(props, 1, &dev, NULL, NULL, &err);
    if (err != CL_SUCCESS)
        return -1;
    cl_program program = NULL;
    struct program_origin origin; /* not kept: the probe never runs it */
    int rc = program_build(context, dev, label, "measure/measure.cl", NULL,
                           "-DMEASURE_FP16=1 -DFMA_TYPE=half2", &program, &origin);
    if (program)
        clReleaseProgram(program);
    clReleaseContext(context);
    if (rc == CLATTN_EBUILD) /* the detail holds the error and the build log */
        snprintf(log, cap, "%s", clattn_last_error_detail());
    return rc == CLATTN_OK ? 1 : rc == CLATTN_EBUILD ? 0 : -1;
}

/* Names, versions and the platform's strings. */
static int query_strings(cl_device_id dev, clattn_device_props *p, cl_platform_id *platform)
{
    int rc;
    if ((rc = CL_INFO_STRING(dev, CL_DEVICE_NAME, p->name))
        || (rc = CL_INFO_STRING(dev, CL_DEVICE_VENDOR, p->vendor))
        || (rc = CL_INFO_STRING(dev, CL_DRIVER_VERSION, p->driver_version))
        || (rc = CL_INFO_STRING(dev, CL_DEVICE_VERSION, p->version))
        || (rc = CL_INFO_STRING(dev, CL_DEVICE_OPENCL_C_VERSION, p->opencl_c_version))
        || (rc = CL_INFO_VALUE(dev, CL_DEVICE_PLATFORM, *platform)))
        return rc;
    cl_int err = clGetPlatformInfo(*platform, CL_PLATFORM_NAME, sizeof p->platform_name,
                                   p->platform_name, NULL);
    if (err == CL_SUCCESS)
        err = clGetPlatformInfo(*platform, CL_PLATFORM_VERSION, sizeof p->platform_version,
                                p->platform_version, NULL);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "clGetPlatformInfo");
    p->platform_name[sizeof p->platform_name - 1] = '\0';
    p->platform_version[sizeof p->platform_version - 1] = '\0';
    if (sscanf(p->version, "OpenCL %d.%d", &p->cl_major, &p->cl_minor) != 2)
        p->cl_major = p->cl_minor = 0;
    return 0;
}

/* Sizes, counts and clocks. */
static int query_numbers(cl_device_id dev, clattn_device_props *p)
{
    cl_uint cu, clock, line, vendor_id;
    cl_ulong global, max_alloc, local, cache;
    size_t max_wg;
    int rc;
    if ((rc = CL_INFO_VALUE(dev, CL_DEVICE_TYPE, p->type))
        || (rc = CL_INFO_VALUE(dev, CL_DEVICE_VENDOR_ID, vendor_id))
        || (rc = CL_INFO_VALUE(dev, CL_DEVICE_MAX_COMPUTE_UNITS, cu))
        || (rc = CL_INFO_VALUE(dev, CL_DEVICE_MAX_CLOCK_FREQUENCY, clock))
        || (rc = CL_INFO_VALUE(dev, CL_DEVICE_GLOBAL_MEM_SIZE, global))
        || (rc = CL_INFO_VALUE(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, max_alloc))
        || (rc = CL_INFO_VALUE(dev, CL_DEVICE_LOCAL_MEM_SIZE, local))
        || (rc = CL_INFO_VALUE(dev, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, cache))
        || (rc = CL_INFO_VALUE(dev, CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE, line))
        || (rc = CL_INFO_VALUE(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, max_wg)))
        return rc;
    p->vendor_id = vendor_of(vendor_id, p->vendor);
    p->compute_units = cu;
    p->clock_mhz = clock;
    p->global_mem_bytes = global;
    p->max_alloc_bytes = max_alloc;
    p->local_mem_bytes = local;
    p->global_cache_bytes = cache;
    p->global_cache_line_bytes = line;
    p->global_cache_is_l1 = p->vendor_id == CLATTN_VENDOR_NVIDIA;
    p->max_work_group_size = max_wg;
    return 0;
}

/* Extensions: fp16, sub-groups, vendor attribute queries. */
static int query_extensions(cl_device_id dev, clattn_device_props *p)
{
    struct cl_extensions ext;
    int rc = cl_info_extensions(dev, &ext);
    if (rc)
        return rc;
    p->fp16_advertised = ext.fp16;
    p->subgroups_khr = ext.subgroups_khr;
    p->subgroups_intel = ext.subgroups_intel;
    if (p->cl_major * 10 + p->cl_minor >= 21) {
        cl_uint n = 0;
        if (clGetDeviceInfo(dev, DEVICE_MAX_NUM_SUB_GROUPS, sizeof n, &n, NULL) == CL_SUCCESS)
            p->max_sub_groups = n;
    }
    if (ext.nv_attributes)
        query_nv(dev, p);
    if (ext.amd_attributes)
        query_amd(dev, p);
    if (ext.intel_attributes)
        query_intel(dev, p);
    return 0;
}

int clattn_device_query(cl_device_id dev, clattn_device_props *out)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(dev != NULL);
    CLATTN_CHECK_ARG(out != NULL);
    clattn_device_props p;
    memset(&p, 0, sizeof p);
    cl_platform_id platform = NULL;
    int rc;
    if ((rc = query_strings(dev, &p, &platform)) || (rc = query_numbers(dev, &p))
        || (rc = query_extensions(dev, &p)))
        return rc;
    /* Only where half arithmetic is expected to build: a driver whose
     * compiler rejects it prints a summary on the caller's stderr (PoCL;
     * clattn devices keeps it off the terminal), and the log is kept in
     * fp16_probe_log. */
    p.fp16_builds = p.fp16_advertised || p.vendor_id == CLATTN_VENDOR_NVIDIA
                        ? probe_fp16(dev, platform, p.name, p.fp16_probe_log,
                                     sizeof p.fp16_probe_log)
                        : -1;
    clattn_clear_error();
    *out = p;
    return 0;
}

