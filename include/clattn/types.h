/* SPDX-License-Identifier: MIT */
/*
 * clattn's plain types and the functions that need no OpenCL: status codes,
 * shapes, options, the CPU reference and the comparison against it, half
 * conversions. Include this header alone (with clattn/model.h for the byte
 * model) in code that never touches a device: it does not include <CL/cl.h>.
 * clattn/clattn.h includes it.
 *
 * Structs that grow (the ABI rule)
 *   A program built against one version of these headers keeps working with
 *   a later library of the same API major (CLATTN_API_VERSION_MAJOR, the
 *   soname). Two kinds of struct allow that:
 *   - Structs with a leading `size_t struct_size`: clattn_options,
 *     clattn_extras, clattn_measure_options, clattn_measurement,
 *     clattn_timing_options. Set them up with their default function or
 *     initializer (clattn_default_options, CLATTN_EXTRAS_INIT,
 *     clattn_default_measure_options, clattn_measurement_init,
 *     clattn_default_timing_options), which sets struct_size to the size the
 *     caller's header gives the struct. The library reads and writes the
 *     first struct_size bytes and no more; fields the caller's header does
 *     not have take their defaults. Fields are only ever added at the end.
 *     Every function taking one returns CLATTN_EINVAL when struct_size is
 *     below the struct's first size (not set up), so a struct on the stack
 *     left uninitialised is refused rather than trusted.
 *   - Structs only the library writes, of a fixed size with reserved bytes
 *     at the end: clattn_run_info, clattn_check_result, clattn_timing. The
 *     library writes them whole (reserved bytes zeroed); a later version
 *     puts new fields in the reserved bytes, where zero means "not
 *     reported".
 *   Other structs (shapes, layouts, the model's records, device properties,
 *   kernel descriptions) change only with the API major.
 *   clattn_api_version() says which API the library implements.
 */
#ifndef CLATTN_TYPES_H
#define CLATTN_TYPES_H

#include <stddef.h>
#include <stdint.h>

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
/* Records `detail` (NULL: none) as the calling thread's
 * clattn_last_error_detail and returns `code` (API 1.5): a library built
 * on clattn's (libclattn_mpi) reports its failures where a caller of
 * clattn reads them. */
CLATTN_API int clattn_set_error(int code, const char *detail);

/* The library's version, "MAJOR.MINOR.PATCH", from clattn/version.h. */
CLATTN_API const char *clattn_version(void);

/* The API the library implements, CLATTN_API_VERSION of its own headers:
 * (major << 16) | minor. A program may check at run time that
 * CLATTN_API_MAJOR_OF(clattn_api_version()) == CLATTN_API_VERSION_MAJOR and
 * that the minor is at least the one it needs (the dynamic loader already
 * refuses another major through the soname). */
CLATTN_API unsigned clattn_api_version(void);

/* ------------------------------------------------------------------ shapes */

typedef enum clattn_dtype {
    CLATTN_F32 = 0,  /* float storage */
    CLATTN_F16 = 1,  /* IEEE half storage; arithmetic accumulates in float */
    CLATTN_BF16 = 2, /* bfloat16 storage (float's top 16 bits, stored rounded to
                      * nearest even); arithmetic accumulates in float */
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

/* The largest head dimension a shape may have (DeepSeek's MLA: 576). */
#define CLATTN_HEAD_DIM_MAX 576

typedef struct clattn_shape {
    size_t batch;    /* B >= 1 */
    size_t heads;    /* H >= 1, query heads */
    size_t kv_heads; /* Hkv >= 1, divides H */
    size_t q_len;    /* Nq >= 1 */
    size_t kv_len;   /* Nk >= 1 */
    size_t head_dim; /* d, 1..CLATTN_HEAD_DIM_MAX (a kernel may take fewer:
                      * clattn_fused_kernel_usable) */
    clattn_dtype dtype;
} clattn_shape;

/* How K or V is stored (clattn_options.k_type, v_type). The block types
 * follow ggml's: each row of d values (d a multiple of 32) is d / 32 blocks
 * of 32 consecutive values, each an fp16 scale then the values. */
typedef enum clattn_kv_type {
    CLATTN_KV_DTYPE = 0,    /* the shape's dtype */
    CLATTN_KV_Q8_0 = 1,     /* 34 bytes per block: scale amax / 127, then 32 int8
                             * round(x / scale) (ggml's q8_0) */
    CLATTN_KV_Q4_0 = 2,     /* 18 bytes per block: scale = the value of largest
                             * magnitude / -8, then 16 bytes, byte i holding value i
                             * in its low nibble and value i + 16 in its high, each
                             * the value / scale + 8 (0..15; ggml's q4_0) */
    CLATTN_KV_FP8_E4M3 = 3, /* one byte per value, OCP fp8 e4m3 (bias 7, largest
                             * 448, no infinities, 0x7f and 0xff NaN), times the
                             * tensor's (or head's) fp32 scale */
} clattn_kv_type;

/* Values per block of `type` (32 for q8_0 and q4_0, 1 otherwise) and bytes
 * per block (34, 18, 1; for CLATTN_KV_DTYPE the dtype's element size); 0
 * for an unknown type or dtype. */
CLATTN_API size_t clattn_kv_block_values(clattn_kv_type type);
CLATTN_API size_t clattn_kv_block_bytes(clattn_kv_type type, clattn_dtype dtype);
/* "f32", "f16", "bf16" (CLATTN_KV_DTYPE of each dtype), "q8_0", "q4_0",
 * "fp8_e4m3"; NULL for an unknown one. */
CLATTN_API const char *clattn_kv_type_name(clattn_kv_type type, clattn_dtype dtype);

/* Fills `dst` with `rows` rows of d values of `src` (storage `src_dtype`:
 * F32, F16 or BF16, contiguous) in `type`, exactly as ggml quantizes q8_0
 * and q4_0 (the scale's reciprocal multiplied, rounded half away from
 * zero; the scale stored in fp16) and fp8 e4m3 as x / scale rounded to
 * nearest even, saturated to +-448 (NaN stays NaN). `scale` is fp8's (0 or
 * ignored elsewhere: 1). dst holds rows * d / block_values * block_bytes
 * bytes. CLATTN_EINVAL for d not a multiple of the type's block or a
 * non-finite fp8 scale; CLATTN_EOVERFLOW past size_t. */
CLATTN_API int clattn_quantize(clattn_kv_type type, clattn_dtype src_dtype, const void *src,
                               size_t rows, size_t d, float scale, void *dst);
/* The values a kernel reads from `src` (rows x d of `type`, fp8 times
 * `scale`), as float: the dequantization every path and the reference
 * share (a block's fp16 scale times its integer, exact in float). */
CLATTN_API int clattn_dequantize(clattn_kv_type type, const void *src, size_t rows, size_t d,
                                 float scale, float *dst);

/* Bytes of one element of `dtype` (4 or 2); 0 for an unknown dtype. */
CLATTN_API size_t clattn_dtype_size(clattn_dtype dtype);

/* Checks a shape: every size >= 1, H % Hkv == 0, known dtype (CLATTN_EINVAL),
 * d <= CLATTN_HEAD_DIM_MAX (CLATTN_EUNSUPPORTED), and no element count or
 * byte size overflows (CLATTN_EOVERFLOW). */
CLATTN_API int clattn_shape_check(const clattn_shape *shape);

/* Elements of Q (= O) and of K (= V) for a valid shape (check it with
 * clattn_shape_check first); 0 for NULL. */
CLATTN_API size_t clattn_shape_q_elems(const clattn_shape *shape);
CLATTN_API size_t clattn_shape_kv_elems(const clattn_shape *shape);

/* ----------------------------------------------------------------- options */

/* Which fused kernel runs. AUTO picks the best one the device supports. */
typedef enum clattn_fused_kernel {
    CLATTN_FUSED_AUTO = 0,
    CLATTN_FUSED_PORTABLE = 1, /* OpenCL C 1.2, any device */
    CLATTN_FUSED_NV_MMA = 2,   /* NVIDIA tensor cores (sm_80+) via inline PTX */
    CLATTN_FUSED_CPU = 3,      /* shaped for CPUs: vectors, no local memory */
    CLATTN_FUSED_TILED = 4,    /* register-tiled GEMM-like, OpenCL C 1.2: GPUs of any vendor */
    CLATTN_FUSED_NV_DECODE = 5, /* NVIDIA tensor cores (sm_80+) for decoding: few rows, many keys */
    CLATTN_FUSED_NV_WGMMA = 6, /* NVIDIA Hopper (sm_90a) warpgroup MMA, a PTX binary made at build time */
} clattn_fused_kernel;

/* Where a tensor's elements are: element (b, h, t, x) of a [B, heads, N, d]
 * tensor is at element index
 *     byte_offset / element size + b * batch_stride + h * head_stride
 *         + t * token_stride + x,
 * the last dimension contiguous. All zero is the contiguous layout
 * [B, heads, N, d]; a stride of 0 takes the contiguous one. Examples:
 * [B, N, H, d] is head_stride = d, token_stride = H d, batch_stride = N H d;
 * a view of Nk tokens in a cache of Nmax is token_stride = d, head_stride =
 * Nmax d, batch_stride = Hkv Nmax d. byte_offset must be a multiple of the
 * element size. */
typedef struct clattn_layout {
    size_t batch_stride;
    size_t head_stride;
    size_t token_stride;
    size_t byte_offset;
} clattn_layout;

/* An additive or boolean mask over the scores (PyTorch's attn_mask), a
 * tensor [batch, heads, Nq, Nk] with batch 1 or B and heads 1 or H (a mask
 * of one index along a dimension serves every index there), laid out by
 * `layout` (its token stride is the stride between query rows; the key
 * dimension is contiguous; all zero: contiguous). On each call the device
 * finds every row tile's span of keys the mask leaves visible (one read of
 * the mask outside the spans), and the kernels built from source walk only
 * that span: a causal or padding mask skips the blocks it hides. */
typedef enum clattn_mask_kind {
    CLATTN_MASK_NONE = 0,
    CLATTN_MASK_ADD = 1,  /* values of `dtype` added to the scores; a score of -inf
                           * (the mask's or the data's) then hides its key */
    CLATTN_MASK_BOOL = 2, /* one byte per element: nonzero keeps the key, 0 hides it */
} clattn_mask_kind;

typedef struct clattn_mask {
    clattn_mask_kind kind;
    clattn_dtype dtype;   /* CLATTN_MASK_ADD: F32, F16 or BF16 */
    size_t batch, heads;  /* 1 or B, 1 or H (0 counts as 1) */
    clattn_layout layout; /* strides in elements of the mask */
    const void *host;     /* the mask in host memory (clattn_attention[_ex],
                           * clattn_reference_ex); device calls take it in
                           * clattn_extras.mask */
} clattn_mask;

/* What a call computes beyond the shape. Get one from clattn_default_options
 * and change what you need: it sets struct_size, by which later versions of
 * the library tell which fields a caller built against an older one knows
 * (fields may be added at the end; none is ever removed or moved). */
typedef struct clattn_options {
    size_t struct_size; /* sizeof(clattn_options) of the caller's header */
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
    size_t rows_per_item; /* register-tiled fused kernels: query rows per
                           * work-item; 0: tuned or default */
    /* Split-KV (flash-decoding): the fused path splits each sequence's keys
     * into this many chunks, run by separate work-groups and combined
     * exactly. 0 (default): the library chooses (none when the query tiles
     * fill the device); 1: never. */
    uint32_t split_kv;
    /* Per-sequence lengths, for a batch whose sequences differ: kv_lens[b]
     * keys (at most Nk) and q_lens[b] queries (at most Nq) for sequence b,
     * in host memory read during the call; NULL: Nk and Nq for all. Keys at
     * or past a sequence's length are never read; a query row at or past its
     * q_len outputs zeros (and LSE -inf); a bottom-right causal mask aligns
     * to each sequence's own lengths. clattn_attention_ex_cl also takes them
     * in device buffers. */
    const uint32_t *kv_lens;
    const uint32_t *q_lens;
    /* Layouts of Q, K, V and O (all zero: contiguous). */
    clattn_layout q_layout, k_layout, v_layout, o_layout;
    /* The parameters of the kernel that runs, beyond its tiles: "name=value"
     * pairs separated by commas (e.g. "stages=3,direct=0" for nv-decode,
     * "gemm=builtin" for the naive path), read during the call; NULL or ""
     * leaves each to clattn tune's record, else to the kernel's own choice.
     * clattn_kernel_param_info lists each kernel's parameters and their
     * ranges; an unknown name or a value out of range is CLATTN_EINVAL. */
    const char *kernel_params;
    /* Attention variants (API 1.1). Each score s = scale q.k of query i and
     * key j goes, in this order, through:
     *   - softcap > 0: s = softcap tanh(s / softcap) (Gemma 2's logit softcap,
     *     FlashAttention's softcap);
     *   - ALiBi, alibi_slopes non-NULL: s -= slope |i + off - j|, slope the
     *     query head's (alibi_slopes[h], or alibi_slopes[b H + h] with
     *     alibi_per_sequence), fp32, host memory (device calls may give
     *     clattn_extras.alibi_slopes instead); clattn_alibi_slopes turns
     *     ggml's max_bias into slopes;
     *   - mask, kind CLATTN_MASK_ADD: s += mask[b, h, i, j];
     *   - score_mod (OpenCL C, below): s = clattn_score_mod(s, b, h, i, j).
     * The key is hidden (weight 0) where a causal mask, the sliding window,
     * a boolean mask, mask_mod or a sequence's length hides it. The window
     * keeps key j for query i iff i + off - window_left <= j <= i + off +
     * window_right, -1 leaving that side unbounded (FlashAttention's
     * window_size; the default, -1 and -1, keeps every key); off is the
     * causal alignment's offset, 0 top-left and kv_len - q_len bottom-right
     * (per sequence), and bottom-right without a causal mask, as
     * FlashAttention aligns its windows and ALiBi. Attention sinks, sinks
     * non-NULL (host fp32 [H], or clattn_extras.sinks): each query head's
     * logit joins its rows' softmax denominator and adds no value (gpt-oss,
     * ggml's sinks), and the LSE. A row that sees no key outputs zeros and
     * LSE -inf (with a sink, its sink is the whole denominator: zeros, LSE
     * the sink). */
    float softcap;
    const float *alibi_slopes;
    int alibi_per_sequence;
    int32_t window_left, window_right;
    const float *sinks;
    clattn_mask mask;
    /* Custom score and mask in OpenCL C, compiled into the kernels built
     * from source at run time (kernels made at build time, nv-wgmma, refuse
     * them; AUTO takes the next kernel): score_mod defines
     *   float clattn_score_mod(float s, uint b, uint h, uint q, uint k)
     * receiving the score after the built-in variants above (FlexAttention's
     * score_mod), and mask_mod defines
     *   bool clattn_mask_mod(uint b, uint h, uint q, uint k)
     * where false hides the key (FlexAttention's mask_mod; h is the query
     * head, q and k the query and key positions in the sequence). Either
     * may be NULL. A snippet that does not compile fails the call with
     * CLATTN_EBUILD and the build log in the detail. Before the first call
     * of a shape, the device evaluates mask_mod over every (b, h, q, k) it
     * must to find each row tile's span of visible keys (FlexAttention's
     * block mask, for the span), which the context keeps for the calls of
     * that shape: the kernels walk only the span, so a window or prefix
     * written as mask_mod skips the blocks it hides, as the built-ins
     * do; keys hidden inside a span are evaluated one at a time. A mask
     * tensor's spans (clattn_mask) are found on every call, as its values
     * may change. */
    const char *score_mod;
    const char *mask_mod;
    /* V's and O's head dimension when it differs from Q's and K's
     * (DeepSeek's MLA: 192 and 128, 576 and 512); 0: head_dim. 1..512. */
    size_t head_dim_v;
    /* KV caches as engines keep them (API 1.3).
     * Storage types of K and V, each on its own (clattn_kv_type below):
     * CLATTN_KV_DTYPE (0) stores them in shape->dtype; the quantized types
     * store rows of d values in their own bytes, and a layout's strides and
     * offsets still count values (a byte offset counts bytes, a multiple of
     * the type's block), every stride a multiple of the block's values.
     * fp8 values are multiplied by k_scale / v_scale (host fp32: one value,
     * or one per key/value head with kv_scale_per_head; NULL: 1; device
     * calls may give clattn_extras.k_scale / v_scale). */
    clattn_kv_type k_type, v_type;
    const float *k_scale, *v_scale;
    int kv_scale_per_head;
    /* Paged K and V (vLLM's and FlashAttention's block table): page_size > 0
     * makes K and V tensors of num_pages pages of page_size keys, element
     * (p, hk, t, x) of a [num_pages, Hkv, page_size, d] tensor laid out by
     * k_layout / v_layout (batch_stride is the page stride; FlashAttention's
     * [num_pages, page_size, Hkv, d] is head_stride d, token_stride Hkv d).
     * Key j of sequence b is slot j % page_size of page
     * block_table[b * block_table_stride + j / page_size] (int32, host; or
     * clattn_extras.block_table). A sequence's keys are kv_lens[b] (or Nk);
     * a host table entry outside [0, num_pages) of a page the sequence
     * reads is CLATTN_EINVAL, a device one is clamped into that range. */
    size_t page_size;
    size_t num_pages;
    const int32_t *block_table;
    size_t block_table_stride; /* 0: ceil(Nk / page_size) */
    /* Packed (varlen) batches, FlashAttention's cu_seqlens: sequence b's
     * queries are tokens [cu_seqlens_q[b], cu_seqlens_q[b + 1]) of Q and O,
     * its keys tokens [cu_seqlens_k[b], cu_seqlens_k[b + 1]) of K and V
     * (int32 [B + 1], non-decreasing, host; or clattn_extras'), those
     * tensors then [1, heads, total, d] (FlashAttention's [total, H, d] is
     * head_stride d, token_stride H d), Nq and Nk the longest sequence's
     * lengths (max_seqlen_q, max_seqlen_k). total_q / total_k: the tokens
     * of the packed tensors (0: cu_seqlens[B] of a host array; required
     * with device ones). Packed keys take neither kv_lens nor pages;
     * packed queries take no q_lens. The LSE stays [B, H, Nq]. */
    const int32_t *cu_seqlens_q, *cu_seqlens_k;
    size_t total_q, total_k;
} clattn_options;

/* One parameter a kernel takes in clattn_options.kernel_params
 * (clattn_kernel_params lists them): integers from min to max, or, where
 * `values` names them, one of those names (values[i] is min + i). */
#define CLATTN_PARAM_VALUES_MAX 8
typedef struct clattn_param_info {
    const char *name;     /* "stages" */
    int min, max;
    const char *values[CLATTN_PARAM_VALUES_MAX]; /* NULL-terminated names, or all NULL */
    const char *summary;  /* what it sets and the kernel's own choice */
} clattn_param_info;

/* Fills `opts` with defaults: struct_size, no causal mask, scale 1/sqrt(d),
 * path AUTO, fused kernel AUTO, allow_oom 0, use_clblast 1, tiles and
 * splits chosen by the library, no per-sequence lengths, contiguous
 * layouts, no variant (window -1, -1), head_dim_v = head_dim. */
CLATTN_API void clattn_default_options(clattn_options *opts);

/* What a run did (filled by the attention functions when non-NULL). Fixed
 * size (see "Structs that grow" above): the library writes the whole
 * struct, reserved bytes zeroed, and fields added later take reserved
 * space, so it needs no set-up and can sit inside clattn_check_result. */
typedef struct clattn_run_info {
    clattn_path path;           /* path that ran (never AUTO) */
    char kernel[64];            /* e.g. "naive/clblast", "fused/portable 64x64" */
    uint64_t predicted_peak_bytes; /* model's device memory for the path */
    uint64_t allocated_bytes;   /* device memory the library holds for the run
                                 * (the naive path's S and P, the split-KV
                                 * partials; kept between calls) */
    char note[160];             /* why AUTO chose this path, "" otherwise */
    uint32_t splits;            /* key chunks per sequence on the fused path (1: none) */
    double build_seconds;       /* seconds of kernel builds this call waited
                                 * for (0 once the context has them) */
    uint8_t reserved[120];      /* zero; room for later fields (384 bytes in all) */
} clattn_run_info;

/* clattn_kv_append_cl on host arrays: the same keys written the same way
 * into k_cache and v_cache in host memory (no device). */
CLATTN_API int clattn_kv_append(const clattn_shape *shape, const clattn_options *opts,
                                size_t new_len, const clattn_layout *new_layout,
                                const void *k_new, const void *v_new, void *k_cache,
                                void *v_cache);

/* ---------------------------------------------------------- CPU reference */

/* Computes attention on the CPU in double precision from inputs stored in
 * shape->dtype, writing O as doubles ([B, H, Nq, d]). Every path of the
 * library computes the function this defines, but for the two exceptions
 * after it:
 *   - a query that sees no key (a causal mask with Nk < Nq) outputs zeros;
 *   - scores s = scale q.k are held in fp32, as the fused kernels accumulate
 *     them whatever the storage dtype (FlashAttention's and cuDNN's
 *     semantics): a score that rounds beyond FLT_MAX is infinite, and an fp16
 *     score above 65504 is an ordinary finite score;
 *   - NaN and infinities propagate as in IEEE arithmetic on
 *     softmax(s - max s) V over the visible keys: a NaN score, a +inf score
 *     or a row whose visible scores are all -inf gives a NaN row; a NaN or
 *     infinite V value of a visible key with nonzero weight reaches the row.
 * The exceptions: the naive path holds S in the storage dtype, as PyTorch's
 * math backend (matmul, softmax, matmul in fp16) does, so that an fp16
 * score of magnitude 65520 or more is infinite there (its row NaN for +inf,
 * the key unseen for -inf); and under a causal mask, a NaN or infinite V
 * value of a key that a query cannot see is still multiplied by its zero
 * weight where a kernel computes P V in blocks (0 * NaN is NaN): on the
 * naive path every query's row, on the fused path the rows of that key's
 * block. Keys past Nk are never read. Needs no OpenCL. */
CLATTN_API int clattn_reference(const clattn_shape *shape, const clattn_options *opts,
                                const void *q, const void *k, const void *v, double *o);

/* clattn_reference with opts' per-sequence lengths honoured and, when `lse`
 * is non-NULL, each row's log-sum-exp written there ([B, H, Nq], natural
 * log of the sum of exp(scale q.k) over the visible keys; -inf for a query
 * that sees no key). The arrays are contiguous (opts' layouts are the
 * device paths' business). */
CLATTN_API int clattn_reference_ex(const clattn_shape *shape, const clattn_options *opts,
                                   const void *q, const void *k, const void *v, double *o,
                                   double *lse);

/* clattn_reference_ex for the rows [first_row, first_row + rows) of query
 * head `head` of sequence `batch` alone, every variant and length of opts
 * honoured: o receives rows x d_v doubles and lse (may be NULL) rows
 * values. The inputs are the whole contiguous tensors. The rows are equal
 * to those clattn_reference_ex writes; checking a few blocks of rows of a
 * large problem costs their share of the work. CLATTN_EINVAL for a row
 * range, sequence or head outside the shape (API 1.1). */
CLATTN_API int clattn_reference_rows(const clattn_shape *shape, const clattn_options *opts,
                                     const void *q, const void *k, const void *v, size_t batch,
                                     size_t head, size_t first_row, size_t rows, double *o,
                                     double *lse);

/* ------------------------------------------------------------------ merge */

/* Combines two attention results over disjoint sets of keys into the exact
 * result over their union: (o1, lse1) and (o2, lse2) are `rows` rows of d
 * values (storage `dtype`) and their fp32 log-sum-exp; the merged row is
 * (exp(lse1 - lse) o1 + exp(lse2 - lse) o2) with lse = log(exp(lse1) +
 * exp(lse2)). A side with lse -inf (it saw no key) contributes nothing; both
 * -inf give zeros and -inf. This is how a sequence's keys split across
 * devices or processes are put back together (clattn_merge_cl on a
 * device). `o` and `lse` may be o1 and lse1 themselves (in place); an
 * output that shares memory with any other array (o with o2 or an LSE, an
 * LSE with an output row) is CLATTN_EINVAL, as is a byte count past
 * size_t (CLATTN_EOVERFLOW). */
CLATTN_API int clattn_merge(size_t rows, size_t d, clattn_dtype dtype, const void *o1,
                            const float *lse1, const void *o2, const float *lse2, void *o,
                            float *lse);

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

/* Fills `n` elements of `dtype` with uniform random values in [-1, 1) drawn
 * from `seed` (never zero). CLATTN_EINVAL for NULL data (with n > 0) or an
 * unknown dtype. */
CLATTN_API int clattn_random_fill(void *data, size_t n, clattn_dtype dtype, uint64_t seed);

/* IEEE half <-> float conversions (round to nearest even), for callers that
 * prepare fp16 data on the host. */
CLATTN_API uint16_t clattn_f32_to_f16(float x);
CLATTN_API float clattn_f16_to_f32(uint16_t h);
/* bfloat16 <-> float, round to nearest even (NaN stays NaN). */
CLATTN_API uint16_t clattn_f32_to_bf16(float x);
CLATTN_API float clattn_bf16_to_f32(uint16_t b);

/* ALiBi slopes from ggml's max_bias for `heads` query heads, written to
 * slopes[0..heads): with n = 2^floor(log2 heads), m0 = 2^(-max_bias / n),
 * m1 = 2^(-max_bias / 2 / n), head h < n takes m0^(h + 1) and the others
 * m1^(2 (h - n) + 1) (ggml's ggml_soft_max_ext). max_bias = 8 gives the
 * ALiBi paper's slopes for a power of two heads. */
CLATTN_API int clattn_alibi_slopes(float max_bias, size_t heads, float *slopes);

#ifdef __cplusplus
}
#endif

#endif /* CLATTN_TYPES_H */
