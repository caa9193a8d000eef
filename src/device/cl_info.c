/* SPDX-License-Identifier: MIT */
/* Reading device properties (see cl_info.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/cl_error.h"
#include "device/cl_info.h"

int contains_nocase(const char *haystack, const char *needle)
{
    size_t n = strlen(needle);
    for (; *haystack; haystack++) {
        size_t i = 0;
        while (i < n && tolower((unsigned char)haystack[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return 1;
    }
    return n == 0;
}

int extension_listed(const char *extensions, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = extensions; (p = strstr(p, name)) != NULL; p += n) {
        int starts = p == extensions || p[-1] == ' ';
        int ends = p[n] == '\0' || p[n] == ' ';
        if (starts && ends)
            return 1;
    }
    return 0;
}

int cl_info_extensions(cl_device_id dev, struct cl_extensions *out)
{
    char *ext = NULL;
    int rc = cl_info_string_alloc(dev, CL_DEVICE_EXTENSIONS, "CL_DEVICE_EXTENSIONS", &ext);
    if (rc)
        return rc;
    out->fp16 = extension_listed(ext, "cl_khr_fp16");
    out->subgroups_khr = extension_listed(ext, "cl_khr_subgroups");
    out->subgroups_intel = extension_listed(ext, "cl_intel_subgroups");
    out->nv_attributes = extension_listed(ext, "cl_nv_device_attribute_query");
    out->amd_attributes = extension_listed(ext, "cl_amd_device_attribute_query");
    out->intel_attributes = extension_listed(ext, "cl_intel_device_attribute_query");
    free(ext);
    return 0;
}

clattn_vendor vendor_of(cl_uint vendor_id, const char *vendor)
{
    if (vendor_id == 0x10de || contains_nocase(vendor, "nvidia"))
        return CLATTN_VENDOR_NVIDIA;
    if (vendor_id == 0x1002 || contains_nocase(vendor, "advanced micro devices")
        || contains_nocase(vendor, "amd"))
        return CLATTN_VENDOR_AMD;
    if (vendor_id == 0x8086 || contains_nocase(vendor, "intel"))
        return CLATTN_VENDOR_INTEL;
    return CLATTN_VENDOR_OTHER;
}

static int fail_device_info(cl_int err, const char *param)
{
    char call[96];
    snprintf(call, sizeof call, "clGetDeviceInfo(%s)", param);
    return clattn_fail_cl(err, call);
}

int cl_info_value(cl_device_id dev, cl_device_info param, const char *label, void *value,
                  size_t size)
{
    cl_int err = clGetDeviceInfo(dev, param, size, value, NULL);
    return err == CL_SUCCESS ? 0 : fail_device_info(err, label);
}

int cl_info_string_alloc(cl_device_id dev, cl_device_info param, const char *label, char **out)
{
    size_t len = 0;
    cl_int err = clGetDeviceInfo(dev, param, 0, NULL, &len);
    if (err != CL_SUCCESS)
        return fail_device_info(err, label);
    char *s = malloc(len + 1);
    if (!s)
        return clattn_fail(CLATTN_ENOMEM, "%s: %zu bytes", label, len + 1);
    err = clGetDeviceInfo(dev, param, len, s, NULL);
    if (err != CL_SUCCESS) {
        free(s);
        return fail_device_info(err, label);
    }
    s[len] = '\0';
    *out = s;
    return 0;
}

int cl_info_string(cl_device_id dev, cl_device_info param, const char *label, char *buf,
                   size_t cap)
{
    char *s = NULL;
    int rc = cl_info_string_alloc(dev, param, label, &s);
    if (rc)
        return rc;
    snprintf(buf, cap, "%s", s);
    free(s);
    for (size_t n = strlen(buf); n > 0 && buf[n - 1] == ' '; n--)
        buf[n - 1] = '\0';
    return 0;
}

uint64_t cl_info_vendor_uint(cl_device_id dev, cl_uint param)
{
    size_t size = 0;
    if (clGetDeviceInfo(dev, param, 0, NULL, &size) != CL_SUCCESS)
        return 0;
    if (size == sizeof(cl_uint)) {
        cl_uint v = 0;
        return clGetDeviceInfo(dev, param, size, &v, NULL) == CL_SUCCESS ? v : 0;
    }
    if (size == sizeof(cl_ulong)) {
        cl_ulong v = 0;
        return clGetDeviceInfo(dev, param, size, &v, NULL) == CL_SUCCESS ? v : 0;
    }
    return 0;
}
