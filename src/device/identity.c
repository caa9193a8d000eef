/* SPDX-License-Identifier: MIT */
/* The identity saved files are keyed by (see identity.h). */
#include <string.h>

#include "device/cl_error.h"
#include "device/cl_info.h"
#include "core/fnv1a.h"
#include "device/identity.h"

/* Keeps a string to one line, as the key=value files need. */
static void one_line(char *s)
{
    for (; *s; s++)
        if (*s == '\n' || *s == '\r')
            *s = ' ';
}

int device_identity_read(cl_device_id dev, struct device_identity *out)
{
    cl_platform_id platform;
    memset(out, 0, sizeof *out);
    int rc;
    if ((rc = CL_INFO_STRING(dev, CL_DEVICE_NAME, out->device_name))
        || (rc = CL_INFO_STRING(dev, CL_DRIVER_VERSION, out->driver_version))
        || (rc = CL_INFO_VALUE(dev, CL_DEVICE_PLATFORM, platform)))
        return rc;
    cl_int err = clGetPlatformInfo(platform, CL_PLATFORM_VERSION, sizeof out->platform_version,
                                   out->platform_version, NULL);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "clGetPlatformInfo(CL_PLATFORM_VERSION)");
    out->platform_version[sizeof out->platform_version - 1] = '\0';
    one_line(out->device_name);
    one_line(out->driver_version);
    one_line(out->platform_version);
    return 0;
}

uint64_t device_identity_hash(const struct device_identity *id)
{
    const char *parts[] = { id->device_name, id->driver_version, id->platform_version };
    uint64_t h = FNV1A_OFFSET;
    for (size_t i = 0; i < 3; i++)
        h = fnv1a(fnv1a(h, parts[i], strlen(parts[i])), "\n", 1);
    return h;
}
