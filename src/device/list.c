/* SPDX-License-Identifier: MIT */
/* Device enumeration and selection. The devices are enumerated once per
 * process, under pthread_once, and the list kept: ICD loaders and drivers
 * are not safe to start from several threads at once (cold clattn_open calls
 * from two threads crashed inside PoCL about half the time: ocl-icd's
 * platform start-up, then PoCL's lazy device start-up in clGetDeviceIDs). */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "device/cl_error.h"
#include "device/cl_info.h"
#include "device/list.h"

#define MAX_PLATFORMS 16
#define MAX_DEVICES_PER_PLATFORM 64
#define MAX_DEVICES 128

static struct {
    pthread_once_t once;
    cl_int err;        /* clGetPlatformIDs' status */
    cl_uint platforms; /* platforms found */
    size_t count;      /* devices found (at most MAX_DEVICES are kept) */
    clattn_device_entry devices[MAX_DEVICES];
} found = { .once = PTHREAD_ONCE_INIT };

static void enumerate_platform(cl_platform_id platform)
{
    cl_device_id devs[MAX_DEVICES_PER_PLATFORM];
    cl_uint nd = 0;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, MAX_DEVICES_PER_PLATFORM, devs, &nd) !=
        CL_SUCCESS)
        return; /* a platform without devices is not an error */
    if (nd > MAX_DEVICES_PER_PLATFORM)
        nd = MAX_DEVICES_PER_PLATFORM;
    char pname[128] = "", dname[128] = "";
    clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof pname, pname, NULL);
    pname[sizeof pname - 1] = '\0';
    for (cl_uint d = 0; d < nd && found.count < MAX_DEVICES; d++) {
        clattn_device_entry *e = &found.devices[found.count++];
        e->platform = platform;
        e->device = devs[d];
        dname[0] = '\0';
        clGetDeviceInfo(devs[d], CL_DEVICE_NAME, sizeof dname, dname, NULL);
        dname[sizeof dname - 1] = '\0';
        clGetDeviceInfo(devs[d], CL_DEVICE_TYPE, sizeof e->type, &e->type, NULL);
        snprintf(e->name, sizeof e->name, "%s: %s", pname, dname);
    }
}

static void enumerate(void)
{
    cl_platform_id ids[MAX_PLATFORMS];
    cl_uint n = 0;
    found.err = clGetPlatformIDs(MAX_PLATFORMS, ids, &n);
    found.platforms = found.err == CL_SUCCESS ? (n > MAX_PLATFORMS ? MAX_PLATFORMS : n) : 0;
    for (cl_uint p = 0; p < found.platforms; p++)
        enumerate_platform(ids[p]);
}

int clattn_list_devices(clattn_device_entry *entries, size_t cap, size_t *count)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(count);
    CLATTN_CHECK_ARG(entries || cap == 0);
    *count = 0;
    pthread_once(&found.once, enumerate);
    if (found.err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR: no ICD installed */ ||
        (found.err == CL_SUCCESS && found.platforms == 0))
        return clattn_fail(CLATTN_ENODEV, "no OpenCL platform is installed (is an ICD, e.g. "
                                          "pocl-opencl-icd, present?)");
    if (found.err != CL_SUCCESS)
        return clattn_fail_cl(found.err, "clGetPlatformIDs");
    if (found.count == 0)
        return clattn_fail(CLATTN_ENODEV, "OpenCL platforms exist but expose no device");
    for (size_t i = 0; i < found.count && i < cap; i++)
        entries[i] = found.devices[i];
    *count = found.count;
    return CLATTN_OK;
}

/* Besides its name, a device answers to its type ("gpu", "cpu") and its
 * platform's vendor ("pocl" for "The pocl project"). */
static int matches_extra(const clattn_device_entry *e, const char *selector)
{
    char vendor[128] = "";
    const char *type = (e->type & CL_DEVICE_TYPE_GPU) ? "gpu"
                       : (e->type & CL_DEVICE_TYPE_CPU) ? "cpu"
                       : (e->type & CL_DEVICE_TYPE_ACCELERATOR) ? "accelerator" : "";
    if (!strcasecmp(selector, type))
        return 1;
    clGetPlatformInfo(e->platform, CL_PLATFORM_VENDOR, sizeof vendor, vendor, NULL);
    vendor[sizeof vendor - 1] = '\0';
    return contains_nocase(vendor, selector);
}

/* A device's capability for the default choice: compute units x clock. */
static double device_score(cl_device_id dev)
{
    cl_uint cus = 0, mhz = 0;
    clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cus, &cus, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_MAX_CLOCK_FREQUENCY, sizeof mhz, &mhz, NULL);
    return (double)cus * (double)(mhz ? mhz : 1);
}

int device_select(const char *selector, clattn_device_entry *chosen)
{
    clattn_device_entry list[MAX_DEVICES];
    size_t n = 0;
    int rc = clattn_list_devices(list, sizeof list / sizeof list[0], &n);
    if (rc < 0)
        return rc;
    if (n > sizeof list / sizeof list[0])
        n = sizeof list / sizeof list[0];
    if (selector && *selector) {
        char *end;
        unsigned long idx = strtoul(selector, &end, 10);
        if (isdigit((unsigned char)*selector) && !*end) {
            if (idx >= n)
                return clattn_fail(CLATTN_ENODEV, "device index %lu out of range (%zu devices)",
                                   idx, n);
            *chosen = list[idx];
            return CLATTN_OK;
        }
        for (size_t i = 0; i < n; i++) {
            if (contains_nocase(list[i].name, selector) || matches_extra(&list[i], selector)) {
                *chosen = list[i];
                return CLATTN_OK;
            }
        }
        return clattn_fail(CLATTN_ENODEV, "no device matches \"%s\" (clattn devices lists them)",
                           selector);
    }
    /* Default: the most capable GPU; without one, the first other device. */
    size_t best = n;
    for (size_t i = 0; i < n; i++)
        if ((list[i].type & CL_DEVICE_TYPE_GPU) &&
            (best == n || device_score(list[i].device) > device_score(list[best].device)))
            best = i;
    *chosen = list[best == n ? 0 : best];
    return CLATTN_OK;
}

