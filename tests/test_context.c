/* SPDX-License-Identifier: MIT */
/*
 * The API contract of contexts: argument checks at every entry point that
 * takes one, device selection, the options a context refuses, tuned tiles
 * kept per device, and the cache files they live in. Exits 77 (skipped)
 * when there is no OpenCL device.
 */
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>

#include "clattn/clattn.h"
#include "clattn/device.h"

static void test_null_arguments(void **state)
{
    (void)state;
    clattn_shape s = { 1, 1, 1, 4, 4, 4, CLATTN_F32 };
    float x[16] = { 0 };
    assert_int_equal(clattn_open(NULL, NULL), CLATTN_EINVAL);
    assert_int_equal(clattn_open_cl(NULL, NULL, NULL), CLATTN_EINVAL);
    clattn_ctx *ctx = (clattn_ctx *)&s; /* must be reset to NULL on failure */
    assert_int_equal(clattn_open_cl(&ctx, NULL, NULL), CLATTN_EINVAL);
    assert_null(ctx);
    clattn_close(NULL);
    clattn_close(&ctx); /* NULL-safe */
    assert_int_equal(clattn_attention(NULL, &s, NULL, x, x, x, x, NULL), CLATTN_EINVAL);
    assert_int_equal(clattn_attention_cl(NULL, &s, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL,
                                         NULL), CLATTN_EINVAL);
    size_t n;
    assert_int_equal(clattn_list_devices(NULL, 4, &n), CLATTN_EINVAL);
    assert_int_equal(clattn_list_devices(NULL, 0, NULL), CLATTN_EINVAL);
    assert_int_equal(clattn_check(NULL, &s, NULL, 1, NULL), CLATTN_EINVAL);
}

/* Returns 1 when some OpenCL device exists. */
static int have_device(void)
{
    size_t n = 0;
    return clattn_list_devices(NULL, 0, &n) == CLATTN_OK && n > 0;
}

static void test_device_selection(void **state)
{
    (void)state;
    clattn_device_entry list[16];
    size_t n;
    assert_int_equal(clattn_list_devices(list, 16, &n), CLATTN_OK);
    clattn_ctx *ctx = NULL;
    assert_int_equal(clattn_open(&ctx, "no-such-device-xyz"), CLATTN_ENODEV);
    assert_null(ctx);
    assert_non_null(strstr(clattn_last_error_detail(), "no-such-device-xyz"));
    assert_int_equal(clattn_open(&ctx, "999"), CLATTN_ENODEV);
    assert_int_equal(clattn_open(&ctx, "0"), CLATTN_OK);
    assert_string_equal(clattn_device_name(ctx), list[0].name);
    clattn_close(&ctx);
    assert_null(ctx);
    /* A case-insensitive substring of the name selects the device. */
    char sub[8] = { 0 };
    const char *colon = strchr(list[0].name, ':');
    memcpy(sub, colon ? colon + 2 : list[0].name, 5);
    for (char *p = sub; *p; p++)
        *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
    assert_int_equal(clattn_open(&ctx, sub), CLATTN_OK);
    clattn_close(&ctx);
    /* The device type selects too. */
    const char *type = (list[0].type & CL_DEVICE_TYPE_GPU) ? "GPU"
                       : (list[0].type & CL_DEVICE_TYPE_CPU) ? "cpu" : NULL;
    if (type) {
        assert_int_equal(clattn_open(&ctx, type), CLATTN_OK);
        clattn_close(&ctx);
    }
    /* $CLATTN_DEVICE is the default selector. */
    setenv("CLATTN_DEVICE", "no-such-device-xyz", 1);
    assert_int_equal(clattn_open(&ctx, NULL), CLATTN_ENODEV);
    unsetenv("CLATTN_DEVICE");
}

static void test_bad_options_on_device(void **state)
{
    (void)state;
    clattn_ctx *ctx = NULL;
    assert_int_equal(clattn_open(&ctx, NULL), CLATTN_OK);
    clattn_shape s = { 1, 1, 1, 4, 4, 4, CLATTN_F32 };
    float x[16] = { 1 };
    clattn_options o;
    clattn_default_options(&o);
    o.causal = (clattn_causal)9;
    assert_int_equal(clattn_attention(ctx, &s, &o, x, x, x, x, NULL), CLATTN_EINVAL);
    clattn_default_options(&o);
    o.scale = NAN;
    assert_int_equal(clattn_attention(ctx, &s, &o, x, x, x, x, NULL), CLATTN_EINVAL);
    clattn_default_options(&o);
    o.path = (clattn_path)5;
    assert_int_equal(clattn_attention(ctx, &s, &o, x, x, x, x, NULL), CLATTN_EINVAL);
    s.kv_heads = 0;
    assert_int_equal(clattn_attention(ctx, &s, NULL, x, x, x, x, NULL), CLATTN_EINVAL);
    s.kv_heads = 1;
    assert_int_equal(clattn_attention(ctx, &s, NULL, NULL, x, x, x, NULL), CLATTN_EINVAL);
    assert_int_equal(clattn_attention_cl(ctx, &s, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL,
                                         NULL), CLATTN_EINVAL);
    /* Extras whose struct_size was never set up are refused. */
    clattn_extras ex = CLATTN_EXTRAS_INIT;
    ex.struct_size = 0;
    cl_int cerr;
    cl_mem buf = clCreateBuffer(clattn_cl_context(ctx), CL_MEM_READ_WRITE, sizeof x, NULL, &cerr);
    assert_int_equal(cerr, CL_SUCCESS);
    assert_int_equal(clattn_attention_ex_cl(ctx, &s, NULL, buf, buf, buf, buf, &ex, 0, NULL,
                                            NULL, NULL), CLATTN_EINVAL);
    assert_non_null(strstr(clattn_last_error_detail(), "CLATTN_EXTRAS_INIT"));
    clattn_default_extras(&ex);
    assert_int_equal(ex.struct_size, sizeof ex);
    assert_null(ex.lse);
    /* The run info is written whole: reserved bytes zero, whatever they held;
     * the first call of a shape waits for its builds, a second does not. */
    clattn_run_info info;
    memset(&info, 0x5a, sizeof info);
    clattn_shape fresh = { 1, 1, 1, 2, 3, 4, CLATTN_F32 }; /* within x */
    float out[8];
    assert_int_equal(clattn_attention(ctx, &fresh, NULL, x, x, x, out, &info), CLATTN_OK);
    for (size_t i = 0; i < sizeof info.reserved; i++)
        assert_int_equal(info.reserved[i], 0);
    assert_true(info.build_seconds > 0);
    assert_int_equal(clattn_attention(ctx, &fresh, NULL, x, x, x, out, &info), CLATTN_OK);
    assert_true(info.build_seconds == 0);
    /* The plan says what a call would do, and refuses what it would
     * refuse, without allocating. */
    clattn_run_info plan;
    assert_int_equal(clattn_attention_plan(ctx, &fresh, NULL, &plan), CLATTN_OK);
    assert_int_equal(plan.path, CLATTN_PATH_FUSED);
    assert_true(plan.predicted_peak_bytes >= 4 * (2 * 2 * 4 + 2 * 3 * 4));
    clattn_shape huge = { 1, 1, 1, 1 << 20, 1 << 20, 64, CLATTN_F32 };
    clattn_options naive_opts;
    clattn_default_options(&naive_opts);
    naive_opts.path = CLATTN_PATH_NAIVE;
    assert_int_equal(clattn_attention_plan(ctx, &huge, &naive_opts, &plan), CLATTN_EWOULDOOM);
    assert_non_null(strstr(clattn_last_error_detail(), "naive path"));
    assert_int_equal(clattn_attention_plan(NULL, &huge, NULL, NULL), CLATTN_EINVAL);
    clReleaseMemObject(buf);
    /* The kernel description names one fused and one naive implementation. */
    char fused[64], naive[64];
    clattn_shape ok = { 1, 2, 1, 100, 90, 64, CLATTN_F16 };
    assert_int_equal(clattn_describe_kernels(ctx, &ok, NULL, fused, sizeof fused, naive,
                                             sizeof naive), CLATTN_OK);
    assert_true(!strncmp(fused, "fused/", 6) && !strncmp(naive, "naive/", 6));
    assert_int_equal(clattn_describe_kernels(ctx, &ok, NULL, NULL, 5, NULL, 0), CLATTN_EINVAL);
    /* An out-of-order queue cannot chain the naive path's kernels. */
    cl_int err;
    cl_command_queue ooo = clCreateCommandQueue(clattn_cl_context(ctx), clattn_cl_device(ctx),
                                                CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
    if (err == CL_SUCCESS) {
        clattn_ctx *other = NULL;
        assert_int_equal(clattn_open_cl(&other, clattn_cl_context(ctx), ooo), CLATTN_EINVAL);
        clReleaseCommandQueue(ooo);
    }
    clattn_close(&ctx);
}

/* The default options, but for the portable fused kernel, which every
 * device takes. */
static void portable_options(clattn_options *o)
{
    clattn_default_options(o);
    o->path = CLATTN_PATH_FUSED;
    o->fused_kernel = CLATTN_FUSED_PORTABLE;
}

/* Kernel parameters: each kernel lists its own and the fused path's, the
 * naive path its own; a call with one its path or kernel does not take,
 * or a value out of range, is refused naming it; one it takes runs and is
 * right. */
static void test_kernel_parameters(void **state)
{
    (void)state;
    clattn_param_info info[32];
    size_t n = 0, n_portable = 0;
    assert_int_equal(clattn_kernel_params(CLATTN_PATH_FUSED, CLATTN_FUSED_NV_DECODE, info, 32,
                                          &n), CLATTN_OK);
    assert_true(n >= 2 && !strcmp(info[0].name, "stages") && info[0].min == 2);
    assert_string_equal(info[n - 1].name, "combine_parts");
    assert_int_equal(clattn_kernel_params(CLATTN_PATH_FUSED, CLATTN_FUSED_PORTABLE, NULL, 0,
                                          &n_portable), CLATTN_OK);
    assert_int_equal(n_portable, 1); /* combine_parts alone */
    assert_int_equal(clattn_kernel_params(CLATTN_PATH_NAIVE, CLATTN_FUSED_AUTO, info, 2, &n),
                     CLATTN_OK);
    assert_true(n > 2 && !strcmp(info[0].name, "gemm") && !strcmp(info[0].values[2], "builtin"));
    assert_int_equal(clattn_kernel_params(CLATTN_PATH_FUSED, CLATTN_FUSED_AUTO, info, 32, &n),
                     CLATTN_EINVAL);
    assert_int_equal(clattn_kernel_params(CLATTN_PATH_AUTO, CLATTN_FUSED_PORTABLE, info, 32,
                                          &n), CLATTN_EINVAL);
    assert_int_equal(clattn_kernel_params(CLATTN_PATH_NAIVE, CLATTN_FUSED_AUTO, NULL, 1, &n),
                     CLATTN_EINVAL);

    clattn_ctx *ctx = NULL;
    assert_int_equal(clattn_open(&ctx, NULL), CLATTN_OK);
    clattn_shape s = { 1, 2, 1, 33, 70, 32, CLATTN_F32 };
    clattn_options o;
    portable_options(&o);
    clattn_check_result r;
    static const char *const refused[] = { "stages=3", "combine_parts=0", "combine_parts=6",
                                           "combine_parts", "gemm=builtin" };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        o.kernel_params = refused[i];
        if (clattn_check(ctx, &s, &o, 3, &r) != CLATTN_EINVAL)
            fail_msg("kernel_params \"%s\" not refused", refused[i]);
    }
    o.kernel_params = "stages=3";
    assert_int_equal(clattn_check(ctx, &s, &o, 3, &r), CLATTN_EINVAL);
    assert_non_null(strstr(clattn_last_error_detail(), "portable has no parameter \"stages\""));
    o.kernel_params = "combine_parts=2";
    o.split_kv = 3;
    assert_int_equal(clattn_check(ctx, &s, &o, 4, &r), CLATTN_OK);
    assert_true(r.passed);
    /* The naive path takes its own, and refuses a fused kernel's. */
    o.path = CLATTN_PATH_NAIVE;
    o.kernel_params = "gemm=builtin,shape=gpu";
    assert_int_equal(clattn_check(ctx, &s, &o, 5, &r), CLATTN_OK);
    assert_true(r.passed);
    assert_string_equal(r.info.kernel, "naive/builtin-gemm");
    o.kernel_params = "combine_parts=2";
    assert_int_equal(clattn_check(ctx, &s, &o, 5, &r), CLATTN_EINVAL);
    clattn_close(&ctx);
}

/* A split that runs other than asked says why in the run's note: chunks are
 * whole key blocks (portable's 64 keys: 100 keys are 2 blocks, not 3). */
static void test_split_note(void **state)
{
    (void)state;
    clattn_ctx *ctx = NULL;
    assert_int_equal(clattn_open(&ctx, NULL), CLATTN_OK);
    clattn_shape s = { 1, 1, 1, 4, 100, 16, CLATTN_F32 };
    clattn_options o;
    portable_options(&o);
    o.block_m = 4;
    o.block_n = 64;
    o.split_kv = 3;
    clattn_check_result r;
    assert_int_equal(clattn_check(ctx, &s, &o, 9, &r), CLATTN_OK);
    assert_true(r.passed);
    assert_int_equal(r.info.splits, 2);
    if (!strstr(r.info.note, "split_kv 3 asked: 2 chunks of 64 keys"))
        fail_msg("note: \"%s\"", r.info.note);
    o.split_kv = 2; /* as asked: no note */
    assert_int_equal(clattn_check(ctx, &s, &o, 9, &r), CLATTN_OK);
    assert_int_equal(r.info.splits, 2);
    assert_null(strstr(r.info.note, "asked"));
    clattn_close(&ctx);
}

/* A buffer of `bytes` of the context's, filled with ones (not zeros). */
static cl_mem ones_buffer(clattn_ctx *ctx, size_t bytes)
{
    void *host = malloc(bytes);
    assert_non_null(host);
    for (size_t i = 0; i < bytes / 4; i++)
        ((float *)host)[i] = 1.0f;
    cl_int err;
    cl_mem m = clCreateBuffer(clattn_cl_context(ctx), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              bytes, host, &err);
    assert_int_equal(err, CL_SUCCESS);
    free(host);
    return m;
}

/* A sub-buffer of `parent`, bytes [origin, origin + size). */
static cl_mem sub_buffer(cl_mem parent, size_t origin, size_t size)
{
    cl_buffer_region r = { origin, size };
    cl_int err;
    cl_mem m = clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r,
                                 &err);
    assert_int_equal(err, CL_SUCCESS);
    return m;
}

/* An output that shares memory with another tensor of the call would race
 * the kernels or lose rows: an output layout whose rows overlap, an LSE or
 * O on an input's bytes (the same buffer, a sub-buffer of it, host arrays
 * that overlap), and merges into anything but o1 and lse1 themselves, are
 * refused before anything runs; disjoint parts of one buffer are fine. */
static void test_outputs_share_no_memory(void **state)
{
    (void)state;
    clattn_ctx *ctx = NULL;
    assert_int_equal(clattn_open(&ctx, NULL), CLATTN_OK);
    const size_t d = 16;
    clattn_shape s = { 1, 2, 1, 5, 8, d, CLATTN_F32 };
    const size_t qbytes = clattn_shape_q_elems(&s) * 4, kvbytes = clattn_shape_kv_elems(&s) * 4;
    float *q = calloc(1, qbytes), *k = calloc(1, kvbytes), *v = calloc(1, kvbytes);
    float *o = calloc(1, qbytes), lse[10];
    assert_true(q && k && v && o);
    clattn_options opts;
    /* Rows of the two heads on the same memory (head stride = token stride
     * = d), and two sequences on the same rows. */
    clattn_default_options(&opts);
    opts.o_layout = (clattn_layout){ 0, d, d, 0 };
    assert_int_equal(clattn_attention(ctx, &s, &opts, q, k, v, o, NULL), CLATTN_EINVAL);
    assert_non_null(strstr(clattn_last_error_detail(), "overlap"));
    clattn_shape two = s;
    two.batch = 2;
    float *o2 = calloc(2, qbytes), *q2 = calloc(2, qbytes), *k2 = calloc(2, kvbytes);
    assert_true(o2 && q2 && k2);
    opts.o_layout = (clattn_layout){ 5 * d, 0, 0, 0 }; /* batch stride: one head's rows */
    assert_int_equal(clattn_attention(ctx, &two, &opts, q2, k2, k2, o2, NULL), CLATTN_EINVAL);
    /* [B, N, H, d] interleaves heads and tokens without overlap; a stride of
     * a dimension of one index is never used. */
    opts.o_layout = (clattn_layout){ 0, d, 2 * d, 0 };
    assert_int_equal(clattn_attention(ctx, &s, &opts, q, k, v, o, NULL), CLATTN_OK);
    opts.o_layout = (clattn_layout){ 1, 0, 0, 0 }; /* batch of one */
    assert_int_equal(clattn_attention(ctx, &s, &opts, q, k, v, o, NULL), CLATTN_OK);
    free(o2);
    free(q2);
    free(k2);

    /* Host arrays: the LSE on K, O on V, O on Q; K = V is an input twice. */
    clattn_default_options(&opts);
    assert_int_equal(clattn_attention_ex(ctx, &s, &opts, q, k, v, o, k, NULL), CLATTN_EINVAL);
    assert_non_null(strstr(clattn_last_error_detail(), "LSE"));
    assert_int_equal(clattn_attention_ex(ctx, &s, &opts, q, k, v, v, NULL, NULL),
                     CLATTN_EINVAL);
    assert_int_equal(clattn_attention_ex(ctx, &s, &opts, q, k, v, q, NULL, NULL),
                     CLATTN_EINVAL);
    assert_int_equal(clattn_attention_ex(ctx, &s, &opts, q, k, k, o, (float *)o + 80, NULL),
                     CLATTN_EINVAL); /* the LSE in O's second head */
    assert_int_equal(clattn_attention_ex(ctx, &s, &opts, q, k, k, o, lse, NULL), CLATTN_OK);

    /* Buffers: the LSE = K, the LSE = O, O in a sub-buffer of K; O after Q
     * in one buffer is fine. */
    cl_mem bq = ones_buffer(ctx, qbytes), bk = ones_buffer(ctx, kvbytes),
           bv = ones_buffer(ctx, kvbytes), bo = ones_buffer(ctx, qbytes),
           blse = ones_buffer(ctx, sizeof lse);
    clattn_extras ex = CLATTN_EXTRAS_INIT;
    ex.lse = bk;
    assert_int_equal(clattn_attention_ex_cl(ctx, &s, NULL, bq, bk, bv, bo, &ex, 0, NULL, NULL,
                                            NULL), CLATTN_EINVAL);
    ex.lse = bo;
    assert_int_equal(clattn_attention_ex_cl(ctx, &s, NULL, bq, bk, bv, bo, &ex, 0, NULL, NULL,
                                            NULL), CLATTN_EINVAL);
    ex.lse = blse;
    assert_int_equal(clattn_attention_ex_cl(ctx, &s, NULL, bq, bk, bv, bk, &ex, 0, NULL, NULL,
                                            NULL), CLATTN_EINVAL);
    size_t align = 0;
    assert_int_equal(clGetDeviceInfo(clattn_cl_device(ctx), CL_DEVICE_MEM_BASE_ADDR_ALIGN,
                                     sizeof(cl_uint), &align, NULL), CL_SUCCESS);
    align = (align & 0xffffffffu) / 8;
    const size_t half = (kvbytes + align - 1) / align * align;
    cl_mem big = ones_buffer(ctx, half + qbytes);
    cl_mem kpart = sub_buffer(big, 0, kvbytes), opart = sub_buffer(big, half, qbytes);
    cl_mem whole_k = sub_buffer(big, 0, kvbytes); /* K again, through another sub-buffer */
    assert_int_equal(clattn_attention_ex_cl(ctx, &s, NULL, bq, kpart, bv, whole_k, &ex, 0, NULL,
                                            NULL, NULL), CLATTN_EINVAL);
    assert_int_equal(clattn_attention_ex_cl(ctx, &s, NULL, bq, kpart, bv, opart, &ex, 0, NULL,
                                            NULL, NULL), CLATTN_OK);
    clattn_options after_k;
    clattn_default_options(&after_k);
    after_k.o_layout.byte_offset = half; /* O on the same buffer as K, past it */
    assert_int_equal(clattn_attention_ex_cl(ctx, &s, &after_k, bq, kpart, bv, big, &ex, 0, NULL,
                                            NULL, NULL), CLATTN_OK);
    after_k.o_layout.byte_offset = half - 64; /* ... and overlapping its end */
    assert_int_equal(clattn_attention_ex_cl(ctx, &s, &after_k, bq, kpart, bv, big, &ex, 0, NULL,
                                            NULL, NULL), CLATTN_EINVAL);
    assert_int_equal(clFinish(clattn_cl_queue(ctx)), CL_SUCCESS);

    /* Merges: in place over o1 and lse1 is the documented use; over o2, or
     * the LSE over o1, is refused; a byte count past 64 bits is too. */
    cl_mem o1 = ones_buffer(ctx, 64), l1 = ones_buffer(ctx, 16), p2 = ones_buffer(ctx, 64),
           l2 = ones_buffer(ctx, 16);
    assert_int_equal(clattn_merge_cl(ctx, 4, 4, CLATTN_F32, o1, l1, p2, l2, o1, l1, 0, NULL,
                                     NULL), CLATTN_OK);
    assert_int_equal(clattn_merge_cl(ctx, 4, 4, CLATTN_F32, o1, l1, p2, l2, p2, l1, 0, NULL,
                                     NULL), CLATTN_EINVAL);
    assert_int_equal(clattn_merge_cl(ctx, 4, 4, CLATTN_F32, o1, l1, p2, l2, o1, o1, 0, NULL,
                                     NULL), CLATTN_EINVAL);
    assert_int_equal(clattn_merge_cl(ctx, ((size_t)1 << 62) + 1, 1, CLATTN_F32, l1, l1, l2, l2,
                                     o1, p2, 0, NULL, NULL), CLATTN_EOVERFLOW);
    float h1[4] = { 1, 2, 3, 4 }, hl1[1] = { 0 }, h2[4] = { 5, 6, 7, 8 }, hl2[1] = { 0 };
    assert_int_equal(clattn_merge(1, 4, CLATTN_F32, h1, hl1, h2, hl2, h1, hl1), CLATTN_OK);
    assert_true(fabsf(h1[0] - 3.0f) < 1e-6f);
    assert_int_equal(clattn_merge(1, 4, CLATTN_F32, h1, hl1, h2, hl2, h2, hl1), CLATTN_EINVAL);
    assert_int_equal(clattn_merge(1, 4, CLATTN_F32, h1, hl1, h2, hl2, h1, h1 + 3),
                     CLATTN_EINVAL);
    assert_int_equal(clattn_merge(((size_t)1 << 62) + 1, 1, CLATTN_F32, h1, hl1, h2, hl2, h1,
                                  hl1), CLATTN_EOVERFLOW);
    assert_int_equal(clFinish(clattn_cl_queue(ctx)), CL_SUCCESS);
    cl_mem all[] = { bq, bk, bv, bo, blse, kpart, opart, whole_k, big, o1, l1, p2, l2 };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        clReleaseMemObject(all[i]);
    free(q);
    free(k);
    free(v);
    free(o);
    clattn_close(&ctx);
}

/* A tuned tile is used by the context that recorded it and, through the file
 * under $XDG_CACHE_HOME, by a later context on the same device. */
static void test_tuned_tiles_persist(void **state)
{
    (void)state;
    char dir[] = "/tmp/clattn-tune-XXXXXX";
    assert_non_null(mkdtemp(dir));
    setenv("XDG_CACHE_HOME", dir, 1);
    clattn_ctx *ctx = NULL;
    assert_int_equal(clattn_open(&ctx, NULL), CLATTN_OK);
    clattn_shape s = { 1, 2, 2, 100, 100, 24, CLATTN_F32 };
    size_t bm, bn, bm0, bn0;
    clattn_fused_kernel kernel;
    assert_int_equal(clattn_fused_tiles(ctx, &s, NULL, &bm0, &bn0, &kernel), CLATTN_OK);
    /* Record a tile that differs from the default. */
    size_t want_m = bm0 == 16 ? 32 : 16, want_n = 16;
    assert_int_equal(clattn_tune_record(ctx, kernel, s.dtype, s.head_dim, 0,
                                        &(clattn_tiles){ want_m, want_n, 0 }),
                     CLATTN_OK);
    assert_int_equal(clattn_fused_tiles(ctx, &s, NULL, &bm, &bn, NULL), CLATTN_OK);
    assert_int_equal(bm, want_m);
    assert_int_equal(bn, want_n);
    /* Other d and the causal variant keep their defaults. */
    clattn_options causal;
    clattn_default_options(&causal);
    causal.causal = CLATTN_CAUSAL_TOP_LEFT;
    assert_int_equal(clattn_fused_tiles(ctx, &s, &causal, &bm, &bn, NULL), CLATTN_OK);
    assert_int_equal(bm, bm0);
    clattn_close(&ctx);
    assert_int_equal(clattn_open(&ctx, NULL), CLATTN_OK);
    assert_int_equal(clattn_fused_tiles(ctx, &s, NULL, &bm, &bn, NULL), CLATTN_OK);
    assert_int_equal(bm, want_m);
    assert_int_equal(bn, want_n);
    /* The tuned tile still computes the right thing. */
    clattn_check_result r;
    assert_int_equal(clattn_check(ctx, &s, NULL, 3, &r), CLATTN_OK);
    assert_true(r.passed);
    assert_int_equal(clattn_tune_record(ctx, kernel, s.dtype, 0, 0,
                                        &(clattn_tiles){ 16, 16, 0 }), CLATTN_EINVAL);
    assert_int_equal(clattn_tune_record(NULL, kernel, s.dtype, 24, 0,
                                        &(clattn_tiles){ 16, 16, 0 }), CLATTN_EINVAL);
    clattn_close(&ctx);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    unsetenv("XDG_CACHE_HOME");
}

int main(void)
{
    if (!have_device()) {
        printf("SKIP: no OpenCL device\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_null_arguments),
        cmocka_unit_test(test_device_selection),
        cmocka_unit_test(test_bad_options_on_device),
        cmocka_unit_test(test_tuned_tiles_persist),
        cmocka_unit_test(test_kernel_parameters),
        cmocka_unit_test(test_outputs_share_no_memory),
        cmocka_unit_test(test_split_note),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
