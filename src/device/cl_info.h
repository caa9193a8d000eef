/* SPDX-License-Identifier: MIT */
/* Reading device properties: fixed-size values, strings of any length,
 * vendor attributes that may not answer, extension lists. */
#ifndef CLATTN_SRC_DEVICE_CL_INFO_H
#define CLATTN_SRC_DEVICE_CL_INFO_H

#include <stddef.h>
#include <stdint.h>

#include "clattn/device.h"

/* A fixed-size property; 0 or a recorded CLATTN_ECL naming `label`. */
int cl_info_value(cl_device_id dev, cl_device_info param, const char *label, void *value,
                  size_t size);
/* A string property in a new malloc'd buffer (*out), whatever its length. */
int cl_info_string_alloc(cl_device_id dev, cl_device_info param, const char *label, char **out);
/* A string property truncated to `cap` (trailing spaces removed). */
int cl_info_string(cl_device_id dev, cl_device_info param, const char *label, char *buf,
                   size_t cap);
/* An integer vendor attribute of 4 or 8 bytes; 0 when it does not answer. */
uint64_t cl_info_vendor_uint(cl_device_id dev, cl_uint param);

#define CL_INFO_VALUE(dev, param, var) cl_info_value(dev, param, #param, &(var), sizeof(var))
#define CL_INFO_STRING(dev, param, buf) cl_info_string(dev, param, #param, buf, sizeof(buf))

/* Nonzero when `name` appears as a whole word in the space-separated list. */
int extension_listed(const char *extensions, const char *name);

/* The extensions of a device that clattn looks for. */
struct cl_extensions {
    int fp16;                       /* cl_khr_fp16 */
    int subgroups_khr;              /* cl_khr_subgroups */
    int subgroups_intel;            /* cl_intel_subgroups */
    int nv_attributes;              /* cl_nv_device_attribute_query */
    int amd_attributes;             /* cl_amd_device_attribute_query */
    int intel_attributes;           /* cl_intel_device_attribute_query */
};
/* Reads them from CL_DEVICE_EXTENSIONS; 0 or a recorded error. */
int cl_info_extensions(cl_device_id dev, struct cl_extensions *out);
/* Nonzero when `needle` occurs in `haystack`, ignoring ASCII case. */
int contains_nocase(const char *haystack, const char *needle);
/* The vendor from a PCI vendor id or, failing that, the vendor string. */
clattn_vendor vendor_of(cl_uint vendor_id, const char *vendor);

/* Vendor attribute enums, spelled out so that older headers suffice. */
enum {
    NV_COMPUTE_CAPABILITY_MAJOR = 0x4000,
    NV_COMPUTE_CAPABILITY_MINOR = 0x4001,
    NV_REGISTERS_PER_BLOCK = 0x4002,
    NV_WARP_SIZE = 0x4003,
    NV_SHARED_MEM_PER_SM = 0x400b, /* undocumented; the SM's shared memory */
    AMD_BOARD_NAME = 0x4038,
    AMD_GLOBAL_FREE_MEMORY = 0x4039,
    AMD_WAVEFRONT_WIDTH = 0x4043,
    INTEL_NUM_SLICES = 0x4252,
    INTEL_NUM_SUB_SLICES_PER_SLICE = 0x4253,
    INTEL_NUM_EUS_PER_SUB_SLICE = 0x4254,
    INTEL_NUM_THREADS_PER_EU = 0x4255,
    DEVICE_MAX_NUM_SUB_GROUPS = 0x105C, /* OpenCL 2.1 */
};

#endif
