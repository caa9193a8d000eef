/* SPDX-License-Identifier: MIT */
/*
 * clattn from C, both ways:
 *   1. the host-pointer call: arrays in host memory, clattn copies them to
 *      the device and back (clattn_attention);
 *   2. zero copy on your own OpenCL objects: your context, your in-order
 *      queue, your buffers, your events (clattn_open_cl +
 *      clattn_attention_cl), with strided layouts: Q stored [B, N, H, d] and
 *      K, V the first Nk tokens of a longer cache.
 * Each result is checked against the CPU reference (clattn_reference).
 *
 * Build against an installed clattn:
 *     cc -std=c11 attention.c $(pkg-config --cflags --libs clattn) -o attention
 * Exit status: 0 both checks passed, 1 a failure, 77 no OpenCL device.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <clattn/clattn.h>

#include <stdio.h>
#include <stdlib.h>

/* Grouped-query attention: 8 query heads over 2 KV heads, Nq != Nk. */
enum { B = 2, H = 8, HKV = 2, NQ = 48, NK = 80, NMAX = 128, D = 64 };

static int report(const char *what, int rc)
{
    fprintf(stderr, "%s: %s (%s)\n", what, clattn_strerror(rc), clattn_last_error_detail());
    return 1;
}

/* Largest |out - ref| over n values (a NaN counts as infinite). */
static double max_error(const float *out, const double *ref, size_t n)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double e = out[i] > ref[i] ? out[i] - ref[i] : ref[i] - out[i];
        if (!(e <= worst))
            worst = e == e ? e : 1e300;
    }
    return worst;
}

/* 1. Host pointers: clattn_open picks the device ($CLATTN_DEVICE, else the
 * largest GPU, else the CPU) and clattn_attention does the transfers. */
static int host_call(const float *q, const float *k, const float *v, const double *ref)
{
    /* README: begin host */
    clattn_ctx *ctx;
    int rc = clattn_open(&ctx, NULL);
    if (rc < 0)
        return rc == CLATTN_ENODEV ? 77 : report("clattn_open", rc);
    clattn_shape s = { .batch = B, .heads = H, .kv_heads = HKV, .q_len = NQ, .kv_len = NK,
                       .head_dim = D, .dtype = CLATTN_F32 };
    clattn_options o;
    clattn_default_options(&o); /* sets struct_size: always start from the defaults */
    o.causal = CLATTN_CAUSAL_BOTTOM_RIGHT;
    float *out = malloc(sizeof(float) * B * H * NQ * D);
    clattn_run_info info;
    rc = clattn_attention(ctx, &s, &o, q, k, v, out, &info);
    /* README: end host */
    if (rc < 0) {
        free(out);
        clattn_close(&ctx);
        return report("clattn_attention", rc);
    }
    double err = max_error(out, ref, (size_t)B * H * NQ * D);
    printf("host call on %s: %s, max error %.2e\n", clattn_device_name(ctx), info.kernel, err);
    free(out);
    clattn_close(&ctx);
    return err < 1e-4 ? 0 : 1;
}

/* 2. Zero copy on the caller's objects. */
static int cl_call(const float *q, const float *k, const float *v, const double *ref)
{
    cl_platform_id platform;
    cl_device_id device;
    cl_uint n = 0;
    if (clGetPlatformIDs(1, &platform, &n) != CL_SUCCESS || n == 0 ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL) != CL_SUCCESS)
        return 77;
    cl_int err;
    cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    cl_command_queue queue = clCreateCommandQueue(context, device, 0, &err); /* in order */

    /* (The OpenCL calls' statuses go unchecked here for brevity.) Your
     * layouts: Q as [B, N, H, d] (tokens outer, as a model's projections
     * produce it), K and V as the first NK tokens of a [B, Hkv, NMAX, d]
     * cache. Strides count elements; the last dimension is contiguous. */
    float *q_bnhd = malloc(sizeof(float) * B * NQ * H * D);
    float *k_cache = calloc((size_t)B * HKV * NMAX * D, sizeof(float));
    float *v_cache = calloc((size_t)B * HKV * NMAX * D, sizeof(float));
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < NQ; t++)
                for (size_t x = 0; x < D; x++)
                    q_bnhd[((b * NQ + t) * H + h) * D + x] = q[((b * H + h) * NQ + t) * D + x];
    for (size_t bh = 0; bh < B * HKV; bh++)
        for (size_t t = 0; t < NK; t++)
            for (size_t x = 0; x < D; x++) {
                k_cache[(bh * NMAX + t) * D + x] = k[(bh * NK + t) * D + x];
                v_cache[(bh * NMAX + t) * D + x] = v[(bh * NK + t) * D + x];
            }
    /* README: begin zero-copy */
    clattn_ctx *ctx;
    int rc = clattn_open_cl(&ctx, context, queue); /* retains both; work goes on `queue` */
    clattn_shape s = { .batch = B, .heads = H, .kv_heads = HKV, .q_len = NQ, .kv_len = NK,
                       .head_dim = D, .dtype = CLATTN_F32 };
    clattn_options o;
    clattn_default_options(&o);
    o.causal = CLATTN_CAUSAL_BOTTOM_RIGHT;
    o.q_layout = (clattn_layout){ .batch_stride = NQ * H * D, .head_stride = D,
                                  .token_stride = H * D };
    o.k_layout = o.v_layout = (clattn_layout){ .batch_stride = HKV * NMAX * D,
                                               .head_stride = NMAX * D, .token_stride = D };
    const size_t qbytes = sizeof(float) * B * NQ * H * D;
    const size_t kvbytes = sizeof(float) * B * HKV * NMAX * D;
    cl_mem bq = clCreateBuffer(context, CL_MEM_READ_ONLY, qbytes, NULL, &err);
    cl_mem bk = clCreateBuffer(context, CL_MEM_READ_ONLY, kvbytes, NULL, &err);
    cl_mem bv = clCreateBuffer(context, CL_MEM_READ_ONLY, kvbytes, NULL, &err);
    cl_mem bo = clCreateBuffer(context, CL_MEM_WRITE_ONLY, qbytes, NULL, &err);
    cl_event uploaded[3], done;
    clEnqueueWriteBuffer(queue, bq, CL_FALSE, 0, qbytes, q_bnhd, 0, NULL, &uploaded[0]);
    clEnqueueWriteBuffer(queue, bk, CL_FALSE, 0, kvbytes, k_cache, 0, NULL, &uploaded[1]);
    clEnqueueWriteBuffer(queue, bv, CL_FALSE, 0, kvbytes, v_cache, 0, NULL, &uploaded[2]);
    /* Enqueues only: waits for the uploads, hands back `done`. */
    if (rc == 0)
        rc = clattn_attention_cl(ctx, &s, &o, bq, bk, bv, bo, 3, uploaded, &done, NULL);
    float *out = malloc(qbytes);
    if (rc == 0) {
        clEnqueueReadBuffer(queue, bo, CL_TRUE, 0, qbytes, out, 1, &done, NULL);
        clReleaseEvent(done);
    }
    /* README: end zero-copy */
    int status = 1;
    if (rc < 0) {
        report("clattn_attention_cl", rc);
    } else {
        double e = max_error(out, ref, (size_t)B * H * NQ * D);
        printf("zero copy on the caller's queue, strided Q, K, V: max error %.2e\n", e);
        status = e < 1e-4 ? 0 : 1;
    }
    for (int i = 0; i < 3; i++)
        clReleaseEvent(uploaded[i]);
    clattn_close(&ctx);
    clReleaseMemObject(bq);
    clReleaseMemObject(bk);
    clReleaseMemObject(bv);
    clReleaseMemObject(bo);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
    free(out);
    free(q_bnhd);
    free(k_cache);
    free(v_cache);
    return status;
}

int main(void)
{
    const size_t nq = (size_t)B * H * NQ * D, nkv = (size_t)B * HKV * NK * D;
    float *q = malloc(nq * sizeof *q), *k = malloc(nkv * sizeof *k), *v = malloc(nkv * sizeof *v);
    double *ref = malloc(nq * sizeof *ref);
    clattn_random_fill(q, nq, CLATTN_F32, 1);
    clattn_random_fill(k, nkv, CLATTN_F32, 2);
    clattn_random_fill(v, nkv, CLATTN_F32, 3);
    clattn_shape s = { B, H, HKV, NQ, NK, D, CLATTN_F32 };
    clattn_options o;
    clattn_default_options(&o);
    o.causal = CLATTN_CAUSAL_BOTTOM_RIGHT;
    int status = clattn_reference(&s, &o, q, k, v, ref) < 0 ? 1 : host_call(q, k, v, ref);
    if (status == 0)
        status = cl_call(q, k, v, ref);
    free(q);
    free(k);
    free(v);
    free(ref);
    return status;
}
