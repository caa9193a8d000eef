/* SPDX-License-Identifier: MIT */
/*
 * probe_fit: the most units that really allocate on a device, to check the
 * model's answer of what fits (clattn predict's tokens or pages of KV
 * cache) against the device itself.
 *
 * usage: probe_fit BUFFERS UNIT_BYTES MAX_UNITS [DEVICE]
 *   BUFFERS     buffers of UNIT_BYTES x units each, as an engine holds its
 *               cache (one K and one V buffer per layer: 2 x layers)
 *   MAX_UNITS   the bisection's upper end (give the predicted count x 1.05)
 * Each try creates the buffers and fills them (a driver that backs memory
 * on first use, as NVIDIA's does, refuses there rather than at creation),
 * then releases them; the largest count that succeeded is found by
 * bisection to one unit. Prints one JSON line: the count, its bytes, and
 * the tries. Exit status 1 when even one unit does not allocate, 2 for a
 * bad command line.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <clattn/clattn.h>

/* Whether `buffers` buffers of `bytes` each allocate and fill. */
static int fits(cl_context cl, cl_command_queue queue, size_t buffers, size_t bytes)
{
    cl_mem *m = calloc(buffers, sizeof *m);
    int ok = m != NULL;
    const cl_uchar zero = 0;
    for (size_t i = 0; i < buffers && ok; i++) {
        cl_int err;
        m[i] = clCreateBuffer(cl, CL_MEM_READ_WRITE, bytes, NULL, &err);
        ok = err == CL_SUCCESS &&
             clEnqueueFillBuffer(queue, m[i], &zero, 1, 0, bytes, 0, NULL, NULL) == CL_SUCCESS;
    }
    ok = ok && clFinish(queue) == CL_SUCCESS;
    for (size_t i = 0; m && i < buffers; i++)
        if (m[i])
            clReleaseMemObject(m[i]);
    clFinish(queue);
    free(m);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: probe_fit BUFFERS UNIT_BYTES MAX_UNITS [DEVICE]\n");
        return 2;
    }
    const size_t buffers = strtoull(argv[1], NULL, 10), unit = strtoull(argv[2], NULL, 10);
    const size_t max_units = strtoull(argv[3], NULL, 10);
    if (!buffers || !unit || !max_units || max_units > SIZE_MAX / unit) {
        fprintf(stderr, "probe_fit: BUFFERS, UNIT_BYTES and MAX_UNITS must be positive\n");
        return 2;
    }
    clattn_ctx *ctx = NULL;
    const int rc = clattn_open(&ctx, argc > 4 ? argv[4] : NULL);
    if (rc < 0) {
        fprintf(stderr, "probe_fit: %s\n", clattn_last_error_detail());
        return 1;
    }
    cl_context cl = clattn_cl_context(ctx);
    cl_command_queue queue = clattn_cl_queue(ctx);
    size_t lo = 0, hi = max_units + 1; /* lo fits (0 trivially), hi does not (assumed) */
    unsigned tries = 0;
    while (hi - lo > 1) {
        const size_t mid = lo + (hi - lo) / 2;
        tries++;
        if (fits(cl, queue, buffers, mid * unit))
            lo = mid;
        else
            hi = mid;
    }
    printf("{\"device\": \"%s\", \"buffers\": %zu, \"unit_bytes\": %zu, \"units\": %zu, "
           "\"bytes\": %llu, \"capped\": %s, \"tries\": %u}\n", clattn_device_name(ctx), buffers,
           unit, lo, (unsigned long long)lo * unit * buffers, lo == max_units ? "true" : "false",
           tries);
    clattn_close(&ctx);
    return lo ? 0 : 1;
}
