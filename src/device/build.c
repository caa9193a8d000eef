/* SPDX-License-Identifier: MIT */
/* Building one kernel file into a program (see build.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device/cl_error.h"
#include "device/build.h"
#include "device/identity.h"
#include "device/kernel_source.h"

/* Appends the build log to the error detail, so a user sees why. */
static void attach_build_log(cl_program prog, cl_device_id device)
{
    size_t len = 0;
    if (clGetProgramBuildInfo(prog, device, CL_PROGRAM_BUILD_LOG, 0, NULL, &len) ||
        !len)
        return;
    char *log = malloc(len + 1);
    if (!log)
        return;
    if (!clGetProgramBuildInfo(prog, device, CL_PROGRAM_BUILD_LOG, len, log, NULL)) {
        log[len] = '\0';
        clattn_detail_append("\nbuild log:\n");
        clattn_detail_append(log);
    }
    free(log);
}

/* Developer aid: with $CLATTN_BUILD_LOG_DIR set, every build's options and
 * log (e.g. NVIDIA's -cl-nv-verbose register report) go to a file there. */
static void save_build_log(cl_program prog, cl_device_id device, const char *file,
                           const char *options)
{
    const char *dir = getenv("CLATTN_BUILD_LOG_DIR");
    if (!dir || !*dir)
        return;
    /* Builds are numbered per process so that each keeps its own files. */
    static _Atomic unsigned counter;
    const unsigned n = counter++;
    char name[128], path[4096];
    snprintf(name, sizeof name, "%s", file); /* "fused/portable.cl" -> "fused-portable.cl" */
    for (char *c = name; *c; c++)
        if (*c == '/')
            *c = '-';
    snprintf(path, sizeof path, "%s/build-%ld-%03u-%s.log", dir, (long)getpid(), n, name);
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    size_t len = 0;
    char *log = NULL;
    if (!clGetProgramBuildInfo(prog, device, CL_PROGRAM_BUILD_LOG, 0, NULL, &len) && len &&
        (log = malloc(len + 1)) &&
        !clGetProgramBuildInfo(prog, device, CL_PROGRAM_BUILD_LOG, len, log, NULL)) {
        log[len] = '\0';
    }
    fprintf(f, "file: %s\noptions: %s\n%s\n", file, options, log ? log : "");
    free(log);
    fclose(f);
    /* The program binary too: PTX text on NVIDIA, for ptxas / cuobjdump. */
    size_t bin_len = 0;
    unsigned char *bin = NULL;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof bin_len, &bin_len, NULL) ||
        !bin_len || !(bin = malloc(bin_len)))
        return;
    if (!clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL)) {
        snprintf(path, sizeof path, "%s/build-%ld-%03u-%s.bin", dir, (long)getpid(), n, name);
        if ((f = fopen(path, "wb"))) {
            fwrite(bin, 1, bin_len, f);
            fclose(f);
        }
    }
    free(bin);
}

int program_build(cl_context context, cl_device_id device, const char *label, const char *file,
                  const char *prelude, const char *options, cl_program *out,
                  struct program_origin *origin)
{
    char *body = NULL;
    int rc = clattn_kernel_source(file, &body);
    if (rc < 0)
        return rc;
    /* $CLATTN_BUILD_OPTIONS adds options to every build (e.g. -cl-nv-verbose).
     * -w keeps the compiler's warnings off the process's stderr (PoCL's
     * clang prints "N warnings generated." there for every build that has
     * one: a loop it could not unroll as asked); where
     * $CLATTN_BUILD_LOG_DIR asks for the build logs, they keep them, and
     * every build is made from source so that each has its log. */
    char all_options[1024];
    const char *extra = getenv("CLATTN_BUILD_OPTIONS"), *logs = getenv("CLATTN_BUILD_LOG_DIR");
    const int want_logs = logs && *logs;
    snprintf(all_options, sizeof all_options, "%s%s %s", options, want_logs ? "" : " -w",
             extra ? extra : "");
    const char *src[3] = { prelude ? prelude : "", "\n", body };
    struct device_identity id;
    memset(origin, 0, sizeof *origin);
    origin->keyed = device_identity_read(device, &id) == 0;
    if (origin->keyed) {
        const char *parts[] = { file, src[0], body, all_options };
        binary_key_make(&id, parts, 4, &origin->key);
    } else {
        clattn_clear_error();
    }
    if (origin->keyed && !want_logs) {
        const int loaded = binary_cache_load(context, device, file, &origin->key, all_options, out);
        if (loaded == 0) {
            free(body);
            return CLATTN_OK;
        }
        origin->builds = loaded > 0 ? loaded : 0;
    }
    origin->from_source = 1;
    cl_int err;
    cl_program prog = clCreateProgramWithSource(context, 3, src, NULL, &err);
    free(body);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "clCreateProgramWithSource");
    err = clBuildProgram(prog, 1, &device, all_options, NULL, NULL);
    save_build_log(prog, device, file, all_options);
    if (err != CL_SUCCESS) {
        /* A device that faulted fails every build (NVIDIA: -9999): that is
         * a lost context, not a kernel the compiler rejects. */
        int code = clattn_code_of_cl(err, 0) == CLATTN_EDEVLOST ? CLATTN_EDEVLOST : CLATTN_EBUILD;
        rc = clattn_fail(code, "building %s with \"%s\" on %s -> %s (%d)", file, options,
                         label, clattn_cl_status_name(err), (int)err);
        attach_build_log(prog, device);
        clReleaseProgram(prog);
        return rc;
    }
    *out = prog;
    return CLATTN_OK;
}

void program_keep(cl_program prog, const char *file, const struct program_origin *origin)
{
    if (origin->keyed && origin->from_source)
        binary_cache_store(prog, file, &origin->key, origin->builds);
}


int program_build_ptx(cl_context context, cl_device_id device, const char *label,
                      const char *name, cl_program *out)
{
    const char *text;
    size_t len;
    int rc = clattn_embedded_binary(name, &text, &len);
    if (rc < 0)
        return rc;
    /* The driver reads PTX text up to its NUL: hand it over with the NUL. */
    const size_t size = len + 1;
    const unsigned char *bin = (const unsigned char *)text;
    cl_int status = CL_SUCCESS, err;
    cl_program prog = clCreateProgramWithBinary(context, 1, &device, &size, &bin, &status, &err);
    if (err != CL_SUCCESS || status != CL_SUCCESS) {
        if (prog)
            clReleaseProgram(prog);
        return clattn_fail(CLATTN_EBUILD, "clCreateProgramWithBinary(%s) on %s -> %s (%d), "
                           "binary status %s (%d)", name, label, clattn_cl_status_name(err),
                           (int)err, clattn_cl_status_name(status), (int)status);
    }
    err = clBuildProgram(prog, 1, &device, "", NULL, NULL);
    save_build_log(prog, device, name, "");
    if (err != CL_SUCCESS) {
        int code = clattn_code_of_cl(err, 0) == CLATTN_EDEVLOST ? CLATTN_EDEVLOST : CLATTN_EBUILD;
        rc = clattn_fail(code, "building PTX binary %s on %s -> %s (%d)", name, label,
                         clattn_cl_status_name(err), (int)err);
        attach_build_log(prog, device);
        clReleaseProgram(prog);
        return rc;
    }
    *out = prog;
    return CLATTN_OK;
}
