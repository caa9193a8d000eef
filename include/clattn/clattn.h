/* SPDX-License-Identifier: MIT */
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

/* The OpenCL headers print a note in every build that does not say which
 * OpenCL version it targets; this header needs 1.2's declarations alone,
 * so it takes the headers' own default, 3.0, where a program has not
 * chosen (define CL_TARGET_OPENCL_VERSION before including it to choose). */
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>

#include "clattn/types.h"
#include "clattn/model.h"

#ifdef __cplusplus
extern "C" {
#endif

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
 * next call (clattn_release_workspace() frees them). `opts` may be NULL
 * (defaults). Before allocating anything the chosen path's memory is
 * predicted and CLATTN_EWOULDOOM returned if it does not fit the device
 * (unless opts->allow_oom). The inputs may share memory (K = V, say); an
 * output may not share a byte with an input or another output (the same
 * buffer's bytes, or a sub-buffer's, checked over each layout's span), nor
 * O's layout put two rows (b, h, i) on one element: CLATTN_EINVAL. */
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

/* What clattn_attention_ex_cl takes beyond clattn_attention_cl's buffers.
 * Start from CLATTN_EXTRAS_INIT (or clattn_default_extras) and set what you
 * need: struct_size tells a later library which fields the caller knows
 * (clattn/types.h, "Structs that grow"). */
typedef struct clattn_extras {
    size_t struct_size;   /* sizeof(clattn_extras) */
    cl_mem lse;           /* written when non-NULL: fp32 [B, H, Nq], each row's
                           * log-sum-exp (natural log), -inf for a row that
                           * sees no key, as clattn_reference_ex */
    cl_mem kv_lens;       /* read when non-NULL: uint32 [B], each sequence's
                           * keys; instead of opts->kv_lens (engines that keep
                           * them on the device) */
    cl_mem q_lens;        /* read when non-NULL: uint32 [B], instead of
                           * opts->q_lens */
    /* The variants' tensors on the device, instead of opts' host ones
     * (API 1.1): fp32 ALiBi slopes ([H], or [B, H] with
     * opts->alibi_per_sequence), fp32 sinks [H], and the mask that
     * opts->mask describes (its `host` is then ignored). */
    cl_mem alibi_slopes;
    cl_mem sinks;
    cl_mem mask;
    /* The KV cache's tables on the device, instead of opts' host ones (API
     * 1.3): the block table (int32 [B, block_table_stride]), the packed
     * batches' offsets (int32 [B + 1]) and fp8's scales (fp32 [1] or
     * [Hkv]). */
    cl_mem block_table;
    cl_mem cu_seqlens_q, cu_seqlens_k;
    cl_mem k_scale, v_scale;
} clattn_extras;
#define CLATTN_EXTRAS_INIT                                                                 \
    { sizeof(clattn_extras), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL }

/* Sets *extras to CLATTN_EXTRAS_INIT (for bindings that cannot use the
 * macro). NULL-safe. */
CLATTN_API void clattn_default_extras(clattn_extras *extras);

/* clattn_attention_cl with the extras: LSE out and per-sequence lengths in
 * device buffers. `extras` may be NULL; CLATTN_EINVAL when its struct_size
 * was not set up. The lengths buffers must hold
 * values within the shape (kv_lens[b] <= Nk, q_lens[b] <= Nq): they are read
 * by the kernels, which clamp them. */
CLATTN_API int clattn_attention_ex_cl(clattn_ctx *ctx, const clattn_shape *shape,
                                      const clattn_options *opts, cl_mem q, cl_mem k,
                                      cl_mem v, cl_mem o, const clattn_extras *extras,
                                      cl_uint num_wait, const cl_event *wait_list,
                                      cl_event *done, clattn_run_info *info);

/* clattn_attention with the rows' log-sum-exp (fp32 [B, H, Nq]) written to
 * `lse` when non-NULL. Host arrays follow opts' layouts. */
CLATTN_API int clattn_attention_ex(clattn_ctx *ctx, const clattn_shape *shape,
                                   const clattn_options *opts, const void *q, const void *k,
                                   const void *v, void *o, float *lse, clattn_run_info *info);

/* What clattn_attention_cl would decide for `shape` and `opts` on the
 * context's device, without allocating or enqueueing anything: the path
 * (AUTO resolved), the model's peak memory and the note, in *info (may be
 * NULL). Returns CLATTN_EWOULDOOM, naming the buffer and the limit, where
 * the call would be refused as not fitting; a caller that allocates its own
 * buffers asks this first to keep the refusal ahead of its allocations.
 * May build the probe kernels the choice depends on. */
CLATTN_API int clattn_attention_plan(clattn_ctx *ctx, const clattn_shape *shape,
                                     const clattn_options *opts, clattn_run_info *info);

/* ------------------------------------------------------------------ timing */

/* What clattn_time_attention_cl reads to time a sample. */
typedef enum clattn_clock {
    /* clFinish and the host's monotonic clock around each sample: the time a
     * caller waiting for the calls sees, host overhead included. */
    CLATTN_CLOCK_HOST = 0,
    /* The device's profiling timestamps: a sample lasts from the end of the
     * command before it on the queue to the end of its last call's last
     * command (the event clattn_attention_ex_cl returns in `done`). Samples
     * are enqueued one ahead of the one waited for, so the device runs them
     * back to back and the host's enqueueing and waiting are hidden wherever
     * the device is the slower side, as a CUDA-event timing of calls in a
     * loop reads them. Needs a queue with profiling enabled (clattn_open's
     * is). */
    CLATTN_CLOCK_EVENTS = 1,
} clattn_clock;

/* How clattn_time_attention_cl times. Set it up with
 * clattn_default_timing_options, which sets struct_size (clattn/types.h,
 * "Structs that grow"), then change what you need. */
typedef struct clattn_timing_options {
    size_t struct_size;        /* sizeof(clattn_timing_options) of the caller's header */
    double target_seconds;     /* keep sampling until the samples add up to this
                                * (finite, >= 0; default 0.2) */
    uint32_t min_samples;      /* at least this many samples (>= 1; default 3) */
    uint32_t max_samples;      /* at most this many (min_samples ..
                                * CLATTN_TIMING_MAX_SAMPLES; default 1000) */
    uint32_t warmup_calls;     /* untimed calls first; the first builds the
                                * kernels (default 1) */
    uint32_t calls_per_sample; /* calls enqueued back to back per sample; the
                                * time per call is the sample's over this
                                * (>= 1; default 1) */
    clattn_clock clock;        /* default CLATTN_CLOCK_HOST */
} clattn_timing_options;

#define CLATTN_TIMING_MAX_SAMPLES 1000000u

/* Fills *opts with the defaults above. NULL-safe. */
CLATTN_API void clattn_default_timing_options(clattn_timing_options *opts);

/* What clattn_time_attention_cl measured, per call. Fixed size
 * (clattn/types.h, "Structs that grow"): written whole, reserved bytes
 * zeroed. */
typedef struct clattn_timing {
    double median_s, min_s, max_s; /* seconds per call: a sample's time over
                                    * calls_per_sample */
    double total_s;                /* the samples' sum (seconds, not per call) */
    uint32_t samples;              /* samples taken */
    uint32_t calls_per_sample;
    double build_seconds;          /* kernel builds the calls waited for */
    uint8_t reserved[80];          /* zero; room for later fields (128 bytes in all) */
} clattn_timing;

/* Times repeated clattn_attention_ex_cl calls on the caller's buffers (the
 * arguments as that function takes them; `extras` may be NULL): warmup_calls
 * untimed calls, then samples of calls_per_sample calls each until there
 * are min_samples and they add up to target_seconds, or there are
 * max_samples; *out receives the median, least and largest time per call.
 * `topts` NULL takes the defaults; `info` (may be NULL) receives the last
 * call's run info. O (and the LSE) hold the last call's result. Returns
 * CLATTN_EINVAL for a NULL ctx, shape or out, topts not set up (struct_size)
 * or out of range (target_seconds not finite or negative, min_samples 0,
 * max_samples below min_samples or above CLATTN_TIMING_MAX_SAMPLES,
 * calls_per_sample 0, an unknown clock); CLATTN_EUNSUPPORTED for
 * CLATTN_CLOCK_EVENTS on a queue without profiling; CLATTN_ENOMEM when the
 * samples do not fit in host memory; else what a call returns, after which
 * *out describes the samples taken before it. It returns once every call
 * it enqueued has completed. */
CLATTN_API int clattn_time_attention_cl(clattn_ctx *ctx, const clattn_shape *shape,
                                        const clattn_options *opts, cl_mem q, cl_mem k,
                                        cl_mem v, cl_mem o, const clattn_extras *extras,
                                        const clattn_timing_options *topts, clattn_timing *out,
                                        clattn_run_info *info);

/* clattn_merge on the device: enqueues the exact combination of two results
 * over disjoint keys (see clattn_merge in clattn/types.h). Buffers are
 * contiguous: `rows` rows of d `dtype` values, and fp32 LSEs; o and lse may
 * be o1 and lse1. */
CLATTN_API int clattn_merge_cl(clattn_ctx *ctx, size_t rows, size_t d, clattn_dtype dtype,
                               cl_mem o1, cl_mem lse1, cl_mem o2, cl_mem lse2, cl_mem o,
                               cl_mem lse, cl_uint num_wait, const cl_event *wait_list,
                               cl_event *done);

/* Appends a decoding step's keys and values to a KV cache in place
 * (FlashAttention's k, v and cache_seqlens; API 1.3): key t < new_len of
 * sequence b, K and V of shape->dtype laid out as a [B, Hkv, new_len, d]
 * (d_v for V) tensor by `new_layout` (NULL: contiguous; FlashAttention's
 * [B, new_len, Hkv, d] is head_stride d, token_stride Hkv d), is written
 * at position kv_lens[b] + t of the cache that shape and opts describe
 * (Nk its capacity per sequence; its types, quantized as clattn_quantize
 * does; its pages through the block table; its layouts), then attention
 * over kv_lens[b] + new_len keys is a call with those lengths. opts must
 * give the current lengths (kv_lens, or extras->kv_lens on the device); a
 * length that would pass Nk is CLATTN_EINVAL from a host array, and on the
 * device its keys past Nk are dropped. With `update_lens` the device
 * lengths (extras->kv_lens) are advanced by new_len, clamped to Nk, once
 * the keys are written. Packed keys are CLATTN_EINVAL. The caches may not
 * share memory with the new keys. Enqueued on the context's queue like
 * clattn_attention_cl: an attention call after it on that queue sees the
 * new keys, with no host synchronisation between the two. */
CLATTN_API int clattn_kv_append_cl(clattn_ctx *ctx, const clattn_shape *shape,
                                   const clattn_options *opts, size_t new_len,
                                   const clattn_layout *new_layout, cl_mem k_new, cl_mem v_new,
                                   cl_mem k_cache, cl_mem v_cache, const clattn_extras *extras,
                                   int update_lens, cl_uint num_wait, const cl_event *wait_list,
                                   cl_event *done);

/* A decoding step in one call, as FlashAttention's flash_attn_with_kvcache
 * with k, v and cache_seqlens (API 1.4): clattn_kv_append_cl's append of
 * new_len keys and values (k_new, v_new laid out by new_layout) into
 * k_cache and v_cache at the sequences' current lengths, then
 * clattn_attention_ex_cl over the grown cache (kv_lens[b] + new_len keys;
 * Q's new_len rows usually with opts->causal bottom-right). The current
 * lengths come from opts->kv_lens (left as they are: the caller advances
 * them, as FlashAttention's) or from extras->kv_lens, which the attention
 * reads once the append has advanced them: device lengths need
 * update_lens. With host tables the attention's plan is checked before the
 * cache is written; a call refused after the append (device tables, a
 * device fault) leaves the new keys written, as clattn_kv_append_cl would.
 * new_len 0 is the attention alone. The wait list gates the append, `done`
 * the attention. */
CLATTN_API int clattn_attention_with_kvcache_cl(
    clattn_ctx *ctx, const clattn_shape *shape, const clattn_options *opts, cl_mem q,
    cl_mem k_cache, cl_mem v_cache, cl_mem o, size_t new_len, const clattn_layout *new_layout,
    cl_mem k_new, cl_mem v_new, const clattn_extras *extras, int update_lens, cl_uint num_wait,
    const cl_event *wait_list, cl_event *done, clattn_run_info *info);

/* What the fused path would run for a shape and options on the context's
 * device (clattn_plan_fused): the model's causal block accounting and its
 * decode traffic depend on the tiles and the split. */
typedef struct clattn_fused_plan {
    clattn_fused_kernel kernel; /* the kernel AUTO (or opts) picks */
    size_t block_m;             /* packed query rows per work-group: the query
                                 * heads of one KV head times their tokens */
    size_t block_n;             /* keys per block */
    size_t rows_per_item;       /* register-tiled kernels: rows per work-item */
    size_t work_group_size;
    uint32_t splits;            /* key chunks per sequence (split-KV); 1: none.
                                 * nv-decode: work-groups per sequence and
                                 * KV head, which take its chunks of
                                 * split_keys in turn */
    size_t split_keys;          /* keys per chunk, a multiple of block_n */
    uint64_t workspace_bytes;   /* the split's fp32 partial outputs and (max,
                                 * sum) pairs (and nv-decode's two counters
                                 * per row tile), kept by the context */
    char note[160];             /* why tuned tiles or a kernel were passed
                                 * over, "" otherwise */
} clattn_fused_plan;

/* Fills *out without building or running anything (a kernel's first probe
 * build aside). */
CLATTN_API int clattn_plan_fused(clattn_ctx *ctx, const clattn_shape *shape,
                                 const clattn_options *opts, clattn_fused_plan *out);

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
 * probe kernels the choice depends on. Either buffer may be NULL (with a
 * cap of 0), and a path whose buffer is NULL is not planned: opts'
 * kernel_params belong to one path, and only that path's description may
 * be asked for with them. */
CLATTN_API int clattn_describe_kernels(clattn_ctx *ctx, const clattn_shape *shape,
                                       const clattn_options *opts, char *fused,
                                       size_t fused_cap, char *naive, size_t naive_cap);

/* ------------------------------------------------------------ kernel table */

/* One fused kernel of the library's table. The table's order is AUTO's
 * order of preference: AUTO runs the first kernel that can run a shape on
 * the device (and whose probe build succeeds there). */
typedef struct clattn_tiles {
    size_t block_m;       /* query rows per work-group */
    size_t block_n;       /* keys per block */
    size_t rows_per_item; /* register-tiled kernels: query rows each work-item
                           * holds (0: the kernel's choice, or none) */
} clattn_tiles;

#define CLATTN_KERNEL_CANDIDATES_MAX 16

typedef struct clattn_kernel_info {
    const char *name;        /* "nv-mma", "portable": --kernel, tune files, run info */
    clattn_fused_kernel id;  /* for clattn_options.fused_kernel */
    const char *summary;     /* one line: what it is and what it needs */
    size_t n_candidates;     /* clattn tune's tile candidates */
    clattn_tiles candidates[CLATTN_KERNEL_CANDIDATES_MAX];
} clattn_kernel_info;

/* How many fused kernels the library has. */
CLATTN_API size_t clattn_fused_kernel_count(void);

/* Fills *out for the index-th kernel of the table (0-based). CLATTN_EINVAL
 * past the end. The strings are static. */
CLATTN_API int clattn_fused_kernel_info(size_t index, clattn_kernel_info *out);

/* The kernel called `name` ("auto" gives CLATTN_FUSED_AUTO). CLATTN_EINVAL
 * for an unknown name, with the known ones in the detail. */
CLATTN_API int clattn_fused_kernel_find(const char *name, clattn_fused_kernel *out);

/* The kernel's name: "auto", a table name, or "unknown". Static. */
CLATTN_API const char *clattn_fused_kernel_name(clattn_fused_kernel id);

/* Whether kernel `id` can run `shape` on the context's device (its
 * requirements, its probe build, and tiles that fit the device): 1, or 0
 * with the reason in why[0..cap) (NULL-able). Builds the kernel's probe
 * program the first time. A negative code for bad arguments. */
CLATTN_API int clattn_fused_kernel_usable(clattn_ctx *ctx, clattn_fused_kernel id,
                                          const clattn_shape *shape, char *why, size_t cap);

/* The parameters clattn_options.kernel_params takes on `path`: for
 * CLATTN_PATH_FUSED those of `kernel` followed by those every fused kernel
 * takes (the split-KV combine's); for CLATTN_PATH_NAIVE the naive path's
 * (its GEMM backend and tiles; `kernel` is ignored). Fills up to `cap`
 * entries of `out` (NULL-able when cap is 0) and sets *count to how many
 * there are. The strings are static. CLATTN_EINVAL for an unknown path or
 * kernel (AUTO is not a kernel here). */
CLATTN_API int clattn_kernel_params(clattn_path path, clattn_fused_kernel kernel,
                                    clattn_param_info *out, size_t cap, size_t *count);

/* Records the fastest fused tiles for (kernel, dtype, d, causal) on the
 * context's device (clattn tune measures them): the context uses them from
 * now on, and they are saved under the user's cache directory for later
 * contexts on the same device and driver. */
CLATTN_API int clattn_tune_record(clattn_ctx *ctx, clattn_fused_kernel kernel,
                                  clattn_dtype dtype, size_t head_dim, int causal,
                                  const clattn_tiles *tiles);

/* clattn_tune_record with the kernel's parameters beside the tiles
 * ("name=value,...", as clattn_options.kernel_params; NULL or "": none),
 * which later calls take where their own kernel_params do not set them.
 * CLATTN_EINVAL for a parameter the kernel does not take. */
CLATTN_API int clattn_tune_record_params(clattn_ctx *ctx, clattn_fused_kernel kernel,
                                         clattn_dtype dtype, size_t head_dim, int causal,
                                         const clattn_tiles *tiles, const char *params);

/* The fraction of the model's roofline time (clattn_model_predict's
 * time_s: bytes at the bandwidth or FLOPs at the peak, whichever is longer)
 * that a kernel reaches on the context's device, where roof `bound`
 * (CLATTN_BOUND_MEMORY or CLATTN_BOUND_COMPUTE) binds: the roofline time
 * divided by it is the time to expect. clattn tune measures and records it
 * per (kernel, dtype, d) in the device's tune file; `kernel` is a kernel's
 * name as clattn_run_info names it, without its tiles ("fused/cpu",
 * "naive/builtin-gemm"), the fraction in (0, 100] (above 1: the kernel
 * beats the roofline, e.g. where the cache serves what the model counts
 * as memory traffic) (API 1.2). */
CLATTN_API int clattn_tune_record_efficiency(clattn_ctx *ctx, const char *kernel,
                                             clattn_dtype dtype, size_t head_dim,
                                             clattn_bound bound, double fraction);

/* The recorded efficiency of (kernel, dtype, d, bound): 1 and *fraction,
 * or 0 and *fraction = 0 where none is recorded (API 1.2). */
CLATTN_API int clattn_kernel_efficiency(clattn_ctx *ctx, const char *kernel, clattn_dtype dtype,
                                        size_t head_dim, clattn_bound bound, double *fraction);

/* What clattn_check found. Fixed size (clattn/types.h, "Structs that
 * grow"): written whole, reserved bytes zeroed. */
typedef struct clattn_check_result {
    double max_abs, rel_l2;         /* errors against the reference */
    double tol_max_abs, tol_rel_l2; /* tolerances for the dtype */
    size_t unwritten;               /* output elements left poisoned (NaN) */
    int passed;                     /* errors within tolerance, nothing unwritten */
    double seconds;                 /* device run, host clock around clFinish */
    clattn_run_info info;
    uint8_t reserved[72];           /* zero; room for later fields (512 bytes in all) */
} clattn_check_result;

/* Runs attention on the device on uniform random inputs in [-1, 1) drawn from
 * `seed`, into an output buffer poisoned with NaN beforehand, and compares
 * with clattn_reference(). Returns an error only when the run itself fails;
 * a numerical failure is reported in result->passed. */
CLATTN_API int clattn_check(clattn_ctx *ctx, const clattn_shape *shape,
                            const clattn_options *opts, uint64_t seed,
                            clattn_check_result *result);

/* Enqueues a device-side fill of `n` elements of `buf` with uniform values in
 * [-1, 1) (odd multiples of 2^-24 before rounding to dtype, so never zero),
 * a hash of the index and `seed`. For benchmark inputs too large to upload;
 * the values differ from clattn_random_fill()'s. */
CLATTN_API int clattn_random_fill_cl(clattn_ctx *ctx, cl_mem buf, size_t n, clattn_dtype dtype,
                                     uint32_t seed);

/* ------------------------------------------------- several devices at once */

/* A group of contexts, one per device (API 1.4), that one attention call
 * runs across: a decoding step (Nq = 1) split by keys, each device taking
 * about Nk / n keys of every sequence and its partial O and LSE merged
 * exactly (clattn_merge); a longer call split by query rows, each device
 * taking rows whose visible (query, key) pairs under the causal mask come
 * to about 1 / n of the call's against all of K and V, its rows' causal
 * alignment, window and ALiBi kept. Each device's share is an ordinary
 * clattn_attention_ex call on its context, all at once (a thread each), so
 * the results are each device's path's, within clattn_tolerance of the
 * reference. What a split would change runs on the first device as given
 * (a mask tensor or a snippet, a KV cache form, custom layouts, a window or
 * ALiBi the split would move, top-left with per-sequence lengths): the info
 * says so. The shares follow each device's weight (clattn_group_set_weights):
 * by default its read bandwidth for a decoding step and its FLOP rate in the
 * call's dtype otherwise (clattn_device_ceilings), equal where any device's
 * figure is unknown. */
#define CLATTN_GROUP_MAX 16
typedef struct clattn_group clattn_group;

/* What a group call ran. */
typedef struct clattn_group_info {
    size_t devices;                  /* devices that computed a share */
    char scheme[16];                 /* "keys", "queries", "ring" or "one" */
    char note[160];                  /* "one": why the call was not split */
    size_t begin[CLATTN_GROUP_MAX];  /* each device's first key or query row */
    size_t share[CLATTN_GROUP_MAX];  /* and how many (0: none, nothing ran there) */
    double weight[CLATTN_GROUP_MAX]; /* the weights the shares followed */
    uint8_t reserved[64];            /* zero */
} clattn_group_info;

/* Opens a context per comma-separated selector (clattn_open's: "0,1",
 * "h200,pocl"; one device may be named twice) into *out. CLATTN_EINVAL
 * for an empty list or more than CLATTN_GROUP_MAX; a selector's own error
 * otherwise, with nothing left open. */
CLATTN_API int clattn_group_open(clattn_group **out, const char *selectors);
CLATTN_API void clattn_group_close(clattn_group **group);
CLATTN_API size_t clattn_group_size(const clattn_group *group);
/* The i-th context (owned by the group), or NULL. */
CLATTN_API clattn_ctx *clattn_group_context(const clattn_group *group, size_t i);
/* Each device's relative speed (clattn_group_size values, each finite and
 * above 0), which the shares follow (device i takes weights[i] / sum of
 * the keys, or of the visible pairs); NULL goes back to the ceilings'.
 * CLATTN_EINVAL otherwise, the weights unchanged. */
CLATTN_API int clattn_group_set_weights(clattn_group *group, const double *weights);

/* The way the group spreads its calls (API 1.6): "auto" (or NULL, the
 * default: by keys for a decoding step, by query rows otherwise, and by
 * the ring where a device cannot hold its rows beside all of K and V but
 * can beside 1 / n of them), "keys", "queries", "ring" or "one" (the
 * first device runs every call). The ring: each device takes the rows the
 * query split gives it and computes them against the n blocks of about
 * Nk / n keys in turn, block i first on device i, the partials merged in
 * fp32, so that a device holds its rows and one block; each block is
 * uploaded before its step computes (host arrays; no overlap). A call
 * the scheme asked for cannot split (a window or ALiBi under the ring or
 * the key split, several query rows under a causal mask by keys, one
 * query row by rows, and what no scheme splits) is CLATTN_EUNSUPPORTED
 * with the reason; AUTO runs such a call on the first device instead.
 * CLATTN_EINVAL for another name, the scheme unchanged. */
CLATTN_API int clattn_group_set_scheme(clattn_group *group, const char *scheme);

/* clattn_attention_ex across the group's devices: host arrays in the
 * contiguous layouts (Q [B, H, Nq, d], K [B, Hkv, Nk, d], V and O of d_v),
 * O and the LSE (may be NULL) written whole once every device has
 * finished, or not at all. A device's failure is the call's, its device
 * named in the detail. `info` may be NULL. */
CLATTN_API int clattn_group_attention(clattn_group *group, const clattn_shape *shape,
                                      const clattn_options *opts, const void *q, const void *k,
                                      const void *v, void *o, float *lse,
                                      clattn_group_info *info);

/* One device's tensors for clattn_group_attention_cl, in that device's
 * context (clattn_group_context), contiguous (API 1.6). */
typedef struct clattn_group_tensors {
    cl_mem q, k, v, o;
    cl_mem lse;  /* fp32; may be NULL except by keys */
    size_t keys; /* a decoding step: the keys this device holds */
} clattn_group_tensors;

/* clattn_group_attention on tensors already on the devices, `tensors`
 * one per device of the group, as an engine keeps them:
 * - a decoding step (Nq = 1) is split by keys as the cache is: device i's
 *   K [B, Hkv, keys_i, d] and V [B, Hkv, keys_i, d_v] hold keys
 *   [keys_0 + ... + keys_(i-1), + keys_i) of every sequence (keys_i may be
 *   0: k and v unused; their sum is the shape's Nk) and every device's q
 *   the whole Q; each device computes its partial O and LSE into its own o
 *   [B, H, 1, d_v] and lse [B, H, 1] (both required), and the merged
 *   result is written to device 0's o and lse (the partials go through
 *   host memory: B H (d_v + 1) values a device);
 * - a longer call is split by query rows (the group's "queries" scheme):
 *   every device holds the whole Q, K and V (all-gathered) and writes the
 *   rows [begin_i, begin_i + share_i) the info gives into those rows of
 *   its o [B, H, Nq, d_v] (the other rows are left as they were) and,
 *   when lse is given, their LSE into its lse as [B, H, share_i].
 * The devices run at once (a thread each), each call waited for. What the
 * split cannot keep runs on device 0 as given (its tensors the call's
 * whole ones; the info says why); a scheme set that is not these two
 * (the ring, keys for several rows) is CLATTN_EUNSUPPORTED. CLATTN_EINVAL
 * for a missing buffer, keys that do not add up to Nk, or the options'
 * layouts (the tensors are contiguous). */
CLATTN_API int clattn_group_attention_cl(clattn_group *group, const clattn_shape *shape,
                                         const clattn_options *opts,
                                         const clattn_group_tensors *tensors,
                                         clattn_group_info *info);

#ifdef __cplusplus
}
#endif

#endif /* CLATTN_H */
