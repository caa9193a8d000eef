/* SPDX-License-Identifier: MIT */
/*
 * libfp16_claim.so, an LD_PRELOAD interposer for test_cli_devices.sh: every
 * device's CL_DEVICE_EXTENSIONS answer gains " cl_khr_fp16". On a device
 * whose compiler cannot build half arithmetic (PoCL's CPU device on most
 * hosts) this reproduces a driver that advertises fp16 it does not compile:
 * clattn's fp16 probe build fails, and PoCL's clang writes its "N errors
 * generated." summary to the process's stderr. Everything else goes to the
 * real entry point (the ICD loader's, dlsym(RTLD_NEXT)).
 */
#define _GNU_SOURCE /* RTLD_NEXT */

#include <CL/cl.h>
#include <dlfcn.h>
#include <string.h>

static const char claim[] = " cl_khr_fp16";

typedef cl_int (*get_device_info_fn)(cl_device_id, cl_device_info, size_t, void *, size_t *);

CL_API_ENTRY cl_int CL_API_CALL clGetDeviceInfo(cl_device_id device, cl_device_info param,
                                                size_t size, void *value, size_t *size_ret)
{
    static get_device_info_fn real;
    if (!real)
        real = (get_device_info_fn)dlsym(RTLD_NEXT, "clGetDeviceInfo");
    if (!real)
        return CL_INVALID_OPERATION;
    if (param != CL_DEVICE_EXTENSIONS)
        return real(device, param, size, value, size_ret);
    size_t n = 0;
    cl_int err = real(device, param, 0, NULL, &n);
    if (err != CL_SUCCESS)
        return err;
    /* n counts the terminating NUL; the claim adds its characters. */
    const size_t total = n + sizeof claim - 1;
    if (size_ret)
        *size_ret = total;
    if (!value)
        return CL_SUCCESS;
    if (size < total)
        return CL_INVALID_VALUE;
    if ((err = real(device, param, size, value, NULL)) != CL_SUCCESS)
        return err;
    memcpy((char *)value + n - 1, claim, sizeof claim);
    return CL_SUCCESS;
}
