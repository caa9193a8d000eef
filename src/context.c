/* Device enumeration and selection, and the lifetime of a clattn_ctx. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "device_query.h"
#include "internal.h"

#define MAX_PLATFORMS 16
#define MAX_DEVICES_PER_PLATFORM 64

int clattn_list_devices(clattn_device_entry *entries, size_t cap, size_t *count)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(count);
    CLATTN_CHECK_ARG(entries || cap == 0);
    cl_platform_id platforms[MAX_PLATFORMS];
    cl_uint np = 0;
    *count = 0;
    cl_int err = clGetPlatformIDs(MAX_PLATFORMS, platforms, &np);
    if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR: no ICD installed */ || (err == CL_SUCCESS && np == 0))
        return clattn_fail(CLATTN_ENODEV, "no OpenCL platform is installed (is an ICD, e.g. "
                                          "pocl-opencl-icd, present?)");
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "clGetPlatformIDs");
    if (np > MAX_PLATFORMS)
        np = MAX_PLATFORMS;
    for (cl_uint p = 0; p < np; p++) {
        cl_device_id devs[MAX_DEVICES_PER_PLATFORM];
        cl_uint nd = 0;
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, MAX_DEVICES_PER_PLATFORM, devs,
                           &nd) != CL_SUCCESS)
            continue; /* a platform without devices is not an error */
        if (nd > MAX_DEVICES_PER_PLATFORM)
            nd = MAX_DEVICES_PER_PLATFORM;
        char pname[128] = "", dname[128] = "";
        clGetPlatformInfo(platforms[p], CL_PLATFORM_NAME, sizeof pname, pname, NULL);
        for (cl_uint d = 0; d < nd; d++, (*count)++) {
            if (*count >= cap)
                continue;
            clattn_device_entry *e = &entries[*count];
            e->platform = platforms[p];
            e->device = devs[d];
            clGetDeviceInfo(devs[d], CL_DEVICE_NAME, sizeof dname, dname, NULL);
            clGetDeviceInfo(devs[d], CL_DEVICE_TYPE, sizeof e->type, &e->type, NULL);
            snprintf(e->name, sizeof e->name, "%s: %s", pname, dname);
        }
    }
    if (*count == 0)
        return clattn_fail(CLATTN_ENODEV, "OpenCL platforms exist but expose no device");
    return CLATTN_OK;
}

static int contains_nocase(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] &&
               tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return 1;
    }
    return n == 0;
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

static int select_device(const char *selector, clattn_device_entry *chosen)
{
    clattn_device_entry list[MAX_PLATFORMS * 4];
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

static int has_extension(cl_device_id dev, const char *ext)
{
    size_t len = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, 0, NULL, &len) || !len)
        return 0;
    char *buf = malloc(len + 1);
    if (!buf)
        return 0;
    int found = 0;
    if (!clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, len, buf, NULL)) {
        buf[len] = '\0';
        found = strstr(buf, ext) != NULL;
    }
    free(buf);
    return found;
}

/* Reads the device facts the paths need to pick kernels and tile sizes. */
static int describe_device(clattn_ctx *ctx)
{
    cl_int err = 0;
    char pname[128] = "", dname[128] = "";
    err |= clGetDeviceInfo(ctx->device, CL_DEVICE_PLATFORM, sizeof ctx->platform, &ctx->platform,
                           NULL);
    err |= clGetDeviceInfo(ctx->device, CL_DEVICE_NAME, sizeof dname, dname, NULL);
    err |= clGetDeviceInfo(ctx->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof ctx->local_mem,
                           &ctx->local_mem, NULL);
    err |= clGetDeviceInfo(ctx->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof ctx->max_wg,
                           &ctx->max_wg, NULL);
    err |= clGetDeviceInfo(ctx->device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof ctx->compute_units,
                           &ctx->compute_units, NULL);
    if (err != CL_SUCCESS)
        return clattn_fail(CLATTN_ECL, "clGetDeviceInfo failed on the context's device");
    /* What the runtime refuses by: the same limits the model predicts with. */
    clattn_figure capacity, largest;
    int rc = device_memory_limits(ctx->device, &capacity, &largest);
    if (rc < 0)
        return rc;
    ctx->global_mem = (cl_ulong)capacity.value;
    ctx->max_alloc = (cl_ulong)largest.value;
    clGetPlatformInfo(ctx->platform, CL_PLATFORM_NAME, sizeof pname, pname, NULL);
    snprintf(ctx->name, sizeof ctx->name, "%s: %s", pname, dname);
    ctx->is_nvidia = device_vendor(ctx->device) == CLATTN_VENDOR_NVIDIA;
    ctx->has_fp16 = has_extension(ctx->device, "cl_khr_fp16");
    ctx->has_nv_attrs = has_extension(ctx->device, "cl_nv_device_attribute_query");
    if (ctx->has_nv_attrs) {
        /* CL_DEVICE_COMPUTE_CAPABILITY_{MAJOR,MINOR}_NV */
        cl_uint major = 0, minor = 0;
        if (!clGetDeviceInfo(ctx->device, 0x4000, sizeof major, &major, NULL) &&
            !clGetDeviceInfo(ctx->device, 0x4001, sizeof minor, &minor, NULL))
            ctx->nv_cc = (int)(major * 10 + minor);
    }
    return CLATTN_OK;
}

int clattn_open(clattn_ctx **out, const char *selector)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(out);
    *out = NULL;
    if (!selector || !*selector)
        selector = getenv("CLATTN_DEVICE");
    clattn_device_entry dev;
    int rc = select_device(selector, &dev);
    if (rc < 0)
        return rc;
    clattn_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return clattn_fail(CLATTN_ENOMEM, "context");
    ctx->device = dev.device;
    cl_int err;
    ctx->context = clCreateContext(NULL, 1, &dev.device, NULL, NULL, &err);
    if (err != CL_SUCCESS) {
        rc = clattn_fail_cl(err, "clCreateContext");
        goto fail;
    }
    ctx->queue = clCreateCommandQueue(ctx->context, dev.device, CL_QUEUE_PROFILING_ENABLE, &err);
    if (err != CL_SUCCESS) {
        rc = clattn_fail_cl(err, "clCreateCommandQueue");
        goto fail;
    }
    rc = describe_device(ctx);
    if (rc < 0)
        goto fail;
    *out = ctx;
    return CLATTN_OK;
fail:
    clattn_close(&ctx);
    return rc;
}

int clattn_open_cl(clattn_ctx **out, cl_context context, cl_command_queue queue)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(out);
    *out = NULL;
    CLATTN_CHECK_ARG(context);
    CLATTN_CHECK_ARG(queue);
    cl_context qctx;
    cl_command_queue_properties props = 0;
    cl_device_id dev;
    cl_int err = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, NULL);
    err |= clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL);
    err |= clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL);
    if (err != CL_SUCCESS)
        return clattn_fail(CLATTN_EINVAL, "queue is not a valid OpenCL command queue");
    if (qctx != context)
        return clattn_fail(CLATTN_EINVAL, "queue does not belong to the given context");
    if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
        return clattn_fail(CLATTN_EINVAL, "queue must be in-order (the paths chain their kernels)");
    clattn_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return clattn_fail(CLATTN_ENOMEM, "context");
    clRetainContext(context);
    clRetainCommandQueue(queue);
    ctx->context = context;
    ctx->queue = queue;
    ctx->device = dev;
    int rc = describe_device(ctx);
    if (rc < 0) {
        clattn_close(&ctx);
        return rc;
    }
    *out = ctx;
    return CLATTN_OK;
}

void clattn_close(clattn_ctx **pctx)
{
    if (!pctx || !*pctx)
        return;
    clattn_ctx *ctx = *pctx;
    clattn_release_workspace(ctx);
    clattn_programs_release(ctx);
    if (ctx->queue)
        clReleaseCommandQueue(ctx->queue);
    if (ctx->context)
        clReleaseContext(ctx->context);
    free(ctx);
    *pctx = NULL;
}

cl_context clattn_cl_context(const clattn_ctx *ctx)
{
    return ctx ? ctx->context : NULL;
}

cl_command_queue clattn_cl_queue(const clattn_ctx *ctx)
{
    return ctx ? ctx->queue : NULL;
}

cl_device_id clattn_cl_device(const clattn_ctx *ctx)
{
    return ctx ? ctx->device : NULL;
}

const char *clattn_device_name(const clattn_ctx *ctx)
{
    return ctx ? ctx->name : "";
}
