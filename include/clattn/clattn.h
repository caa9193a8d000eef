/*
 * clattn: attention, O = softmax(scale * Q * K^T) * V, on any OpenCL device.
 *
 * Two paths compute the same function:
 *   - naive: S = scale * Q K^T and P = softmax(S) are written to device memory
 *     (four passes over the N^2 scores), as in the byte model of docs/MODEL.md;
 *   - fused: one kernel with tiles and an online softmax; S never reaches
 *     global memory.
 *
 * Conventions
 *   - Every function returning int returns 0 (CLATTN_OK) or a negative
 *     CLATTN_E* code; clattn_strerror() names it and clattn_last_error_detail()
 *     gives the detail of the last failure on the calling thread (the OpenCL
 *     call and its cl_int, the kernel build log, the buffer that would not fit).
 *   - The library never aborts, exits or prints.
 *   - Tensors are contiguous, row-major: Q and O are [B, H, Nq, d], K and V
 *     are [B, Hkv, Nk, d], with H a multiple of Hkv (grouped-query attention:
 *     query head h reads key/value head h / (H / Hkv)).
 *   - A clattn_ctx may be used from one thread at a time; distinct contexts
 *     are independent.
 */
#ifndef CLATTN_H
#define CLATTN_H

#include <stddef.h>
#include <stdint.h>

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include "clattn/version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(CLATTN_BUILDING_LIBRARY) && defined(__GNUC__)
#define CLATTN_API __attribute__((visibility("default")))
#else
#define CLATTN_API
#endif

/* ------------------------------------------------------------------ errors */

/* X(name, value, message): the one table of error codes. */
#define CLATTN_ERRNO_MAP(X)                                                        \
    X(OK, 0, "success")                                                           \
    X(EINVAL, -1, "invalid argument")                                             \
    X(ENOMEM, -2, "out of host memory")                                           \
    X(ENODEV, -3, "no matching OpenCL device")                                    \
    X(ECL, -4, "OpenCL call failed")                                              \
    X(EBUILD, -5, "kernel build failed")                                          \
    X(EUNSUPPORTED, -6, "not supported on this device")                           \
    X(EWOULDOOM, -7, "predicted to exceed device memory")                         \
    X(EOVERFLOW, -8, "size overflows")                                            \
    X(EIO, -9, "input/output error")                                              \
    X(EFORMAT, -10, "malformed input")                                            \
    X(EDEVLOST, -11, "device context lost (a kernel faulted)")                    \
    X(EOOM, -12, "device out of memory")

enum clattn_status {
#define CLATTN_X_ENUM(name, value, msg) CLATTN_##name = (value),
    CLATTN_ERRNO_MAP(CLATTN_X_ENUM)
#undef CLATTN_X_ENUM
};

/* A static string describing `code`; "unknown error" for codes not listed. */
CLATTN_API const char *clattn_strerror(int code);
/* The code's name ("CLATTN_EINVAL"); "CLATTN_UNKNOWN" for codes not listed. */
CLATTN_API const char *clattn_error_name(int code);
/* Detail of the last failure on the calling thread ("" if none). Valid until
 * the next clattn call on this thread. */
CLATTN_API const char *clattn_last_error_detail(void);

/* The library's version, "MAJOR.MINOR.PATCH", from clattn/version.h. */
CLATTN_API const char *clattn_version(void);

/* ------------------------------------------------------------------ shapes */

typedef enum clattn_dtype {
    CLATTN_F32 = 0, /* float storage */
    CLATTN_F16 = 1, /* IEEE half storage; arithmetic accumulates in float */
} clattn_dtype;

typedef enum clattn_causal {
    CLATTN_CAUSAL_NONE = 0,
    CLATTN_CAUSAL_TOP_LEFT = 1,     /* key j visible to query i iff j <= i */
    CLATTN_CAUSAL_BOTTOM_RIGHT = 2, /* iff j <= i + Nk - Nq */
} clattn_causal;

typedef enum clattn_path {
    CLATTN_PATH_AUTO = 0, /* fused: it moves 1 + N/d times fewer bytes; run_info
                           * notes whether naive would even have fit */
    CLATTN_PATH_NAIVE = 1,
    CLATTN_PATH_FUSED = 2,
} clattn_path;

typedef struct clattn_shape {
    size_t batch;    /* B >= 1 */
    size_t heads;    /* H >= 1, query heads */
    size_t kv_heads; /* Hkv >= 1, divides H */
    size_t q_len;    /* Nq >= 1 */
    size_t kv_len;   /* Nk >= 1 */
    size_t head_dim; /* d, 1..256 */
    clattn_dtype dtype;
} clattn_shape;

/* Bytes of one element of `dtype` (4 or 2); 0 for an unknown dtype. */
CLATTN_API size_t clattn_dtype_size(clattn_dtype dtype);

/* Checks a shape: every size >= 1, H % Hkv == 0, d <= 256, known dtype, and
 * no element count or byte size overflows. CLATTN_EINVAL / CLATTN_EOVERFLOW. */
CLATTN_API int clattn_shape_check(const clattn_shape *shape);

/* Elements of Q (= O) and of K (= V) for a valid shape. */
CLATTN_API size_t clattn_shape_q_elems(const clattn_shape *shape);
CLATTN_API size_t clattn_shape_kv_elems(const clattn_shape *shape);

/* ----------------------------------------------------------------- options */

/* Which fused kernel runs. AUTO picks the best one the device supports. */
typedef enum clattn_fused_kernel {
    CLATTN_FUSED_AUTO = 0,
    CLATTN_FUSED_PORTABLE = 1, /* OpenCL C 1.2, any device */
    CLATTN_FUSED_NV_MMA = 2,   /* NVIDIA tensor cores (sm_80+) via inline PTX */
} clattn_fused_kernel;

typedef struct clattn_options {
    clattn_causal causal;
    float scale;       /* 0 means 1/sqrt(d) */
    clattn_path path;
    clattn_fused_kernel fused_kernel;
    int allow_oom;     /* nonzero: run even when the model predicts the path
                        * will not fit (to confirm the prediction) */
    int use_clblast;   /* nonzero (default): CLBlast GEMMs on the naive path
                        * where it supports the dtype on the device */
    size_t block_m;    /* fused query rows per work-group; 0: tuned or default */
    size_t block_n;    /* fused keys per block; 0: tuned or default */
} clattn_options;

/* Fills `opts` with defaults: no causal mask, scale 1/sqrt(d), path AUTO,
 * fused kernel AUTO, allow_oom 0, use_clblast 1, tiles chosen by the library. */
CLATTN_API void clattn_default_options(clattn_options *opts);

/* What a run did (filled by the attention functions when non-NULL). */
typedef struct clattn_run_info {
    clattn_path path;           /* path that ran (never AUTO) */
    char kernel[64];            /* e.g. "naive/clblast", "fused/portable" */
    uint64_t predicted_peak_bytes; /* model's device memory for the path */
    uint64_t allocated_bytes;   /* device memory the library holds for the run
                                 * (the naive path's S and P, kept between calls) */
    char note[160];             /* why AUTO chose this path, "" otherwise */
} clattn_run_info;

/* ----------------------------------------------------------------- context */

typedef struct clattn_ctx clattn_ctx;

/* Opens a context on a device chosen by `selector`:
 *   NULL or ""   -> $CLATTN_DEVICE if set, else the default device: the GPU
 *                   with the most compute units x clock, else any other device
 *                   (PoCL's CPU device);
 *   "N"          -> the N-th device in clattn_list_devices() order;
 *   other text   -> the first device whose "platform: device" name contains
 *                   it (case-insensitive), e.g. "h200", "pocl", "cpu".
 * On success *out owns an OpenCL context and an in-order, profiling-enabled
 * queue. Returns CLATTN_ENODEV when nothing matches. */
CLATTN_API int clattn_open(clattn_ctx **out, const char *selector);

/* Wraps a caller's context and in-order queue (they are retained, and
 * released by clattn_close). Work is enqueued on `queue`. */
CLATTN_API int clattn_open_cl(clattn_ctx **out, cl_context context, cl_command_queue queue);

/* Releases everything the context holds and sets *ctx to NULL. NULL-safe. */
CLATTN_API void clattn_close(clattn_ctx **ctx);

CLATTN_API cl_context clattn_cl_context(const clattn_ctx *ctx);
CLATTN_API cl_command_queue clattn_cl_queue(const clattn_ctx *ctx);
CLATTN_API cl_device_id clattn_cl_device(const clattn_ctx *ctx);
/* "platform: device" of the context's device. */
CLATTN_API const char *clattn_device_name(const clattn_ctx *ctx);

/* One entry per OpenCL device of every platform, in enumeration order. */
typedef struct clattn_device_entry {
    cl_platform_id platform;
    cl_device_id device;
    cl_device_type type;
    char name[256]; /* "platform: device" */
} clattn_device_entry;

/* Fills up to `cap` entries and sets *count to the number of devices (which
 * may exceed cap). CLATTN_ENODEV when there is no platform at all. */
CLATTN_API int clattn_list_devices(clattn_device_entry *entries, size_t cap, size_t *count);

/* --------------------------------------------------------------- attention */

/* Enqueues attention on caller-owned buffers q, k, v (read) and o (written),
 * laid out as described above in shape->dtype. Waits for `wait_list`; when
 * `done` is non-NULL it receives an event that completes when O is written.
 * The naive path's S and P buffers stay allocated in the context for the
 * next call (clattn_release_workspace() frees them). `opts` may be NULL (defaults). Before allocating anything the
 * chosen path's memory is predicted and CLATTN_EWOULDOOM returned if it does
 * not fit the device (unless opts->allow_oom). */
CLATTN_API int clattn_attention_cl(clattn_ctx *ctx, const clattn_shape *shape,
                                   const clattn_options *opts, cl_mem q, cl_mem k, cl_mem v,
                                   cl_mem o, cl_uint num_wait, const cl_event *wait_list,
                                   cl_event *done, clattn_run_info *info);

/* Frees the naive path's score buffers, which the context keeps between
 * calls so that repeated calls do not pay for allocating them. Call it to
 * give the memory back; the next naive call allocates again. NULL-safe.
 * The work already enqueued keeps what it uses until it completes. */
CLATTN_API void clattn_release_workspace(clattn_ctx *ctx);

/* Host-memory convenience: copies q, k, v to the device, runs, copies O back
 * into `o`, and waits. Arrays hold elements of shape->dtype (uint16_t bits
 * for CLATTN_F16). */
CLATTN_API int clattn_attention(clattn_ctx *ctx, const clattn_shape *shape,
                                const clattn_options *opts, const void *q, const void *k,
                                const void *v, void *o, clattn_run_info *info);

/* The query and key tile sizes (BLOCK_M, BLOCK_N) the fused path uses for
 * `shape` on the context's device, and the kernel it would run (the model's
 * causal block accounting depends on them). `kernel` may be NULL. */
CLATTN_API int clattn_fused_tiles(clattn_ctx *ctx, const clattn_shape *shape,
                                  const clattn_options *opts, size_t *block_m,
                                  size_t *block_n, clattn_fused_kernel *kernel);

/* Names the kernels the context would run for `shape` and `opts` (NULL:
 * defaults): `fused` receives e.g. "fused/nv-mma 128x64" or
 * "fused/portable 64x64", `naive` the naive path's GEMMs, e.g.
 * "naive/clblast", "naive/nv-mma-gemm" or "naive/builtin-gemm". Builds the
 * probe kernels the choice depends on. Either buffer may be NULL. */
CLATTN_API int clattn_describe_kernels(clattn_ctx *ctx, const clattn_shape *shape,
                                       const clattn_options *opts, char *fused,
                                       size_t fused_cap, char *naive, size_t naive_cap);

/* Records the fastest fused tiles for (kernel, dtype, d, causal) on the
 * context's device (clattn tune measures them): the context uses them from
 * now on, and they are saved under the user's cache directory for later
 * contexts on the same device and driver. */
CLATTN_API int clattn_tune_record(clattn_ctx *ctx, clattn_fused_kernel kernel,
                                  clattn_dtype dtype, size_t head_dim, int causal,
                                  size_t block_m, size_t block_n);

/* ---------------------------------------------------------- CPU reference */

/* Computes attention on the CPU in double precision from inputs stored in
 * shape->dtype, writing O as doubles ([B, H, Nq, d]). Same semantics as the
 * device paths, including causal alignment and zero rows for queries that
 * see no key. Needs no OpenCL. */
CLATTN_API int clattn_reference(const clattn_shape *shape, const clattn_options *opts,
                                const void *q, const void *k, const void *v, double *o);

/* ------------------------------------------------------------ verification */

/* Tolerances a path must meet against the reference, per dtype: the largest
 * absolute error and the relative L2 error ||out - ref|| / ||ref||.
 * fp32: 1e-4 and 1e-5; fp16: 4e-3 and 2e-3 (half storage of inputs is shared
 * with the reference; what remains is the rounding of S, P and O). */
CLATTN_API void clattn_tolerance(clattn_dtype dtype, double *max_abs, double *rel_l2);

/* Compares a device result `out` (shape->dtype, [B, H, Nq, d]) with a
 * reference. NaN in `out` (e.g. an element left poisoned) makes both errors
 * infinite; *nan_count (may be NULL) receives how many. */
CLATTN_API int clattn_compare(const clattn_shape *shape, const void *out, const double *ref,
                              double *max_abs, double *rel_l2, size_t *nan_count);

typedef struct clattn_check_result {
    double max_abs, rel_l2;         /* errors against the reference */
    double tol_max_abs, tol_rel_l2; /* tolerances for the dtype */
    size_t unwritten;               /* output elements left poisoned (NaN) */
    int passed;                     /* errors within tolerance, nothing unwritten */
    double seconds;                 /* device run, host clock around clFinish */
    clattn_run_info info;
} clattn_check_result;

/* Runs attention on the device on uniform random inputs in [-1, 1) drawn from
 * `seed`, into an output buffer poisoned with NaN beforehand, and compares
 * with clattn_reference(). Returns an error only when the run itself fails;
 * a numerical failure is reported in result->passed. */
CLATTN_API int clattn_check(clattn_ctx *ctx, const clattn_shape *shape,
                            const clattn_options *opts, uint64_t seed,
                            clattn_check_result *result);

/* Fills `n` elements of `dtype` with uniform random values in [-1, 1) drawn
 * from `seed` (never zero). */
CLATTN_API void clattn_random_fill(void *data, size_t n, clattn_dtype dtype, uint64_t seed);

/* Enqueues a device-side fill of `n` elements of `buf` with uniform values in
 * [-1, 1) (odd multiples of 2^-24 before rounding to dtype, so never zero),
 * a hash of the index and `seed`. For benchmark inputs too large to upload;
 * the values differ from clattn_random_fill()'s. */
CLATTN_API int clattn_random_fill_cl(clattn_ctx *ctx, cl_mem buf, size_t n, clattn_dtype dtype,
                                     uint32_t seed);

/* IEEE half <-> float conversions (round to nearest even), for callers that
 * prepare fp16 data on the host. */
CLATTN_API uint16_t clattn_f32_to_f16(float x);
CLATTN_API float clattn_f16_to_f32(uint16_t h);

#ifdef __cplusplus
}
#endif

#include "clattn/model.h"
#include "clattn/device.h"

#endif /* CLATTN_H */
