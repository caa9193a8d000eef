/*
 * The byte-arithmetic model of attention (docs/MODEL.md): pure functions of a
 * shape and a few device figures, no OpenCL. Used by clattn predict / bench and
 * by the library itself to refuse runs that would not fit.
 *
 * Conventions shared by every function here
 *   - "Bytes" are bytes crossing the device-memory boundary in either
 *     direction, counted once per tensor (the compulsory traffic of the seed:
 *     re-reads of K and V by other query blocks, or by the query heads of one
 *     GQA group, are assumed to hit the cache).
 *   - Byte counts are uint64_t and checked: a count that would overflow makes
 *     the function return CLATTN_EOVERFLOW. Rates, times and FLOP counts are
 *     doubles.
 *   - The model accepts any head dim d (the runtime's own limit is checked by
 *     clattn_shape_check); every other rule of clattn_shape applies.
 *   - Functions return 0 or a negative CLATTN_E* code, with the detail in
 *     clattn_last_error_detail(). They keep no state and are thread-safe.
 *   - A device figure of 0 means "unknown"; results that need it are 0 and
 *     the verdicts say CLATTN_FIT_UNKNOWN.
 */
#ifndef CLATTN_MODEL_H
#define CLATTN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "clattn/types.h" /* shapes, paths, CLATTN_API */

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- Q1 traffic */

/* The seed's traffic table, without a causal mask. Per head means one query
 * head of one batch element working alone: it reads its Q, the K and V of its
 * group, and writes its O. All heads counts K and V once per KV head, since
 * the query heads of a group share them; with Hkv = H it is B*H times the per
 * head figure. Naive = endpoints + 4 * S (write S, read S, write P, read P);
 * fused = endpoints, since S never reaches device memory. A causal mask does
 * not change the naive figures (the naive path materialises the full S); the
 * fused path's causal traffic is in clattn_causal_blocks. */
typedef struct clattn_traffic {
    uint64_t head_score_bytes;    /* one head's S: e*Nq*Nk */
    uint64_t head_endpoint_bytes; /* Q, K, V, O of one head: e*d*(2*Nq + 2*Nk) */
    uint64_t head_naive_bytes;    /* endpoints + 4 * S */
    uint64_t head_fused_bytes;    /* endpoints */
    double head_ratio;            /* naive / fused per head */
    double closed_form;           /* 1 + 2*Nq*Nk / ((Nq + Nk)*d): 1 + N/d when Nq = Nk */

    uint64_t score_bytes;         /* S of all heads: e*B*H*Nq*Nk (P is as large) */
    uint64_t endpoint_bytes;      /* e*B*d*(2*H*Nq + 2*Hkv*Nk) */
    uint64_t naive_bytes;         /* endpoint_bytes + 4 * score_bytes */
    uint64_t fused_bytes;         /* endpoint_bytes */
    double ratio;                 /* naive_bytes / fused_bytes */
} clattn_traffic;

/* Fills `out` for `shape`. CLATTN_EINVAL for a NULL pointer or a bad shape,
 * CLATTN_EOVERFLOW when a count does not fit 64 bits. */
CLATTN_API int clattn_model_traffic(const clattn_shape *shape, clattn_traffic *out);

/* ------------------------------------------------------ device and memory */

/* What the model needs to know about a device; 0 means unknown. */
typedef struct clattn_model_device {
    uint64_t capacity_bytes;  /* global memory */
    uint64_t max_alloc_bytes; /* largest single buffer */
    uint64_t cache_bytes;     /* last-level cache */
    double bandwidth;         /* device memory, bytes/s (read + write) */
    double peak_flops;        /* FLOP/s in the shape's dtype */
    double launch_latency_s;  /* seconds per kernel launch */
} clattn_model_device;

/* Sets every figure to 0 (unknown). */
CLATTN_API void clattn_model_default_device(clattn_model_device *dev);

/* Device memory one path needs, all buffers live at once. */
typedef struct clattn_memory_plan {
    uint64_t peak_bytes;       /* sum of every buffer the path holds at once */
    uint64_t largest_bytes;    /* largest single buffer */
    const char *largest_name;  /* its name: "Q", "K", "V", "O", "S", "P", "workspace" */
    uint64_t workspace_bytes;  /* extra_workspace_bytes plus the path's own */
} clattn_memory_plan;

/* Memory of `path` (NAIVE or FUSED) for `shape`: naive holds Q, K, V, O, S and
 * P (S and P are B*H*Nq*Nk elements each); fused holds Q, K, V, O.
 * `extra_workspace_bytes` (e.g. CLBlast's temporary buffers) is added.
 * CLATTN_EOVERFLOW if a size overflows 64 bits, CLATTN_EINVAL on bad input. */
CLATTN_API int clattn_model_memory(const clattn_shape *shape, clattn_path path,
                                   uint64_t extra_workspace_bytes, clattn_memory_plan *out);

/* A plan's verdict against a device. */
typedef enum clattn_fit {
    CLATTN_FIT_UNKNOWN = 0,       /* the device's capacity is unknown */
    CLATTN_FIT_OK = 1,            /* peak <= capacity, largest <= max alloc (if known) */
    CLATTN_FIT_OVER_CAPACITY = 2, /* peak > capacity (reported first) */
    CLATTN_FIT_OVER_MAX_ALLOC = 3 /* one buffer > max alloc */
} clattn_fit;

/* "unknown", "fits", "exceeds capacity", "exceeds max allocation". */
CLATTN_API const char *clattn_fit_name(clattn_fit fit);

/* The verdict of `plan` on `dev` (pure comparison; never fails on known
 * input). CLATTN_EINVAL for NULL pointers. */
CLATTN_API int clattn_model_fit(const clattn_memory_plan *plan, const clattn_model_device *dev,
                                clattn_fit *out);

/* ------------------------------------------------------ Q2 length limits */

/* Which constraint clattn_model_max_len solves. */
typedef enum clattn_len_limit {
    CLATTN_LIMIT_HEAD_S_IN_CACHE = 0,   /* one head's S <= cache (seed: 11,585) */
    CLATTN_LIMIT_SHARED_S_IN_CACHE = 1, /* the S of all B*H heads <= cache, i.e.
                                         * each head's fair share (seed: 724) */
    CLATTN_LIMIT_SCORES_IN_MEMORY = 2,  /* S and P of all heads <= capacity,
                                         * nothing else counted (seed: 14,188) */
    CLATTN_LIMIT_NAIVE_FITS = 3,        /* the naive plan fits (clattn_model_fit) */
    CLATTN_LIMIT_FUSED_FITS = 4,        /* the fused plan fits */
} clattn_len_limit;

/* The largest sequence length N, with Nq = Nk = N and the rest of `shape`
 * kept, that meets `limit` on `dev`: *n is the exact integer answer (0 when
 * even N = 1 does not fit), and *root (may be NULL) the real N at which the
 * constraint is met with equality (the seed quotes its root rounded: 14,189
 * for the largest integer 14,188). `extra_workspace_bytes` is added to the
 * plan for the *_FITS limits. The cache limits need dev->cache_bytes, the
 * others dev->capacity_bytes (dev->max_alloc_bytes is used when known):
 * CLATTN_EINVAL when the figure is unknown or an argument is bad. */
CLATTN_API int clattn_model_max_len(const clattn_shape *shape, clattn_len_limit limit,
                                    uint64_t extra_workspace_bytes,
                                    const clattn_model_device *dev, size_t *n, double *root);

/* ------------------------------------------------ Q4 causal block counts */

/* How many tiles the fused kernel visits under a causal mask. A query block
 * [q0, q0+BM) visits the key blocks whose start is below
 * min(Nk, q0 + BM + off), off = 0 (top-left) or Nk - Nq (bottom-right); with
 * no mask it visits all of them. Counts are per head. */
typedef struct clattn_causal_blocks {
    uint64_t q_blocks;        /* ceil(Nq / BM) */
    uint64_t k_blocks;        /* ceil(Nk / BN) */
    uint64_t total_blocks;    /* q_blocks * k_blocks */
    uint64_t visited_blocks;  /* tiles the kernel computes */
    double visited_fraction;  /* visited_blocks / total_blocks */
    double closed_form;       /* (T+1)/(2T), T = q_blocks, when Nq = Nk and BM = BN
                               * under a mask (1 with no mask, 0 when it does not apply) */
    uint64_t empty_q_blocks;  /* query blocks that visit no key block */
    uint64_t empty_rows;      /* queries that see no key (their output is 0) */
    uint64_t total_pairs;     /* Nq * Nk (query, key) pairs */
    uint64_t computed_pairs;  /* pairs inside visited tiles, clipped to Nq x Nk:
                               * what the kernel pays for, diagonal tiles in full */
    uint64_t visible_pairs;   /* pairs the mask lets through */
    uint64_t kv_rows_read;    /* key rows in blocks any query block visits: the
                               * K/V rows that must cross memory at all */
    uint64_t kv_rows_streamed;/* sum over query blocks of the key rows they
                               * visit: K/V rows loaded if nothing were cached */
    double speedup;           /* total_pairs / computed_pairs: the compute-bound
                               * speedup of skipping blocks, an upper bound */
} clattn_causal_blocks;

/* Fills `out` for `shape`, `causal` and the fused kernel's tiles
 * (block_m = BM query rows, block_n = BN key rows, each >= 1). */
CLATTN_API int clattn_model_causal_blocks(const clattn_shape *shape, clattn_causal causal,
                                          size_t block_m, size_t block_n,
                                          clattn_causal_blocks *out);

/* --------------------------------------- Q3 intensity, roofline, summary */

/* One problem: the shape and what the paths' costs depend on. */
typedef struct clattn_model_problem {
    clattn_shape shape;
    clattn_causal causal;
    size_t block_m, block_n;        /* the fused kernel's tiles: query rows of one
                                     * head and keys (a GQA-packed kernel's
                                     * BLOCK_M rows hold BLOCK_M / (H / Hkv)
                                     * tokens of each head) */
    uint64_t naive_workspace_bytes; /* CLBlast's temporaries and any other
                                     * workspace of the naive path */
    uint64_t fused_workspace_bytes; /* workspace of the fused path beyond the
                                     * split's, which `splits` adds */
    /* Decoding (fields added here last; zero keeps every result as it was):
     *   splits: split-KV chunks per sequence on the fused path (0 or 1:
     *     none; at most Nk). With more, each chunk writes fp32 partial rows
     *     and a (max, sum) pair, B*H*Nq*splits*(d+2)*4 bytes, which a second
     *     launch reads to combine them: the fused path is charged that
     *     workspace once written and once read, one more launch, and its
     *     memory plan holds it.
     *   kv_lens: B per-sequence key counts, each <= Nk (NULL: Nk for all),
     *     read during the call. The fused path then reads K and V once per
     *     KV head for each sequence's own length, with the causal block
     *     accounting of each sequence (bottom-right aligns to its own
     *     length: key j visible to query i iff j <= i + kv_lens[b] - Nq), and
     *     computes each sequence's own pairs. A sequence of length 0 costs
     *     its O write alone (its rows are zeros), the split workspace aside.
     *     The naive path still computes and stores the whole S. */
    uint32_t splits;
    const uint32_t *kv_lens;
} clattn_model_problem;

/* Zero shape (to be filled), no causal mask, tiles 64 x 64, no workspace,
 * no split, no per-sequence lengths. */
CLATTN_API void clattn_model_default_problem(clattn_model_problem *problem);

typedef enum clattn_bound {
    CLATTN_BOUND_UNKNOWN = 0, /* bandwidth or peak unknown */
    CLATTN_BOUND_MEMORY = 1,
    CLATTN_BOUND_COMPUTE = 2,
} clattn_bound;

/* "unknown", "memory", "compute". */
CLATTN_API const char *clattn_bound_name(clattn_bound bound);

/* The cost of one path for one problem, all heads, causal mask applied. */
typedef struct clattn_path_estimate {
    uint64_t bytes;          /* traffic; the naive path's ignores the mask and
                              * the per-sequence lengths */
    double flops;            /* 4*d per computed (query, key) pair */
    double intensity;        /* flops / bytes, FLOP/byte */
    unsigned launches;       /* kernel launches: naive 3 (QK^T, softmax, PV),
                              * fused 1, 2 with a split (the combine) */
    double memory_time_s;    /* bytes / bandwidth (0 if unknown) */
    double compute_time_s;   /* flops / peak (0 if unknown) */
    double time_s;           /* max(memory, compute) + launches * latency,
                              * 0 if bandwidth or peak is unknown */
    clattn_bound bound;      /* which roof the time comes from */
    clattn_memory_plan memory;
    clattn_fit fit;
} clattn_path_estimate;

/* The block accounting of the whole batch, each sequence at its own length
 * (problem->kv_lens, else Nk) and with its own causal alignment, summed over
 * the B sequences: per query head (like clattn_causal_blocks) except
 * kv_rows_*, which count key rows per KV head. Without kv_lens every field
 * is B times the matching clattn_causal_blocks field. */
typedef struct clattn_batch_blocks {
    uint64_t empty_sequences; /* sequences of length 0 */
    uint64_t total_blocks;    /* sum of ceil(Nq / BM) * ceil(len / BN) */
    uint64_t visited_blocks;  /* tiles the fused kernel computes */
    uint64_t total_pairs;     /* sum of Nq * len */
    uint64_t computed_pairs;  /* pairs inside visited tiles */
    uint64_t visible_pairs;   /* pairs the mask lets through */
    uint64_t kv_rows_total;   /* sum of len: the key rows with no mask */
    uint64_t kv_rows_read;    /* key rows some tile of the sequence visits */
    uint64_t split_workspace_bytes; /* B*H*Nq*splits*(d+2)*4 when splits > 1 */
} clattn_batch_blocks;

/* Everything the model says about one problem on one device. */
typedef struct clattn_prediction {
    clattn_traffic traffic;        /* Q1: mask-free, per head and all heads, every
                                    * sequence at Nk, no split */
    clattn_causal_blocks blocks;   /* Q4: for problem->causal and its tiles, one
                                    * head of a sequence of Nk keys */
    clattn_path_estimate naive;
    clattn_path_estimate fused;
    double ridge;                  /* peak / bandwidth, FLOP/byte (0 if unknown) */
    double naive_intensity_limit;  /* d / e (with d_v: (d + d_v) / 2e): where
                                    * the naive path's intensity saturates as N
                                    * grows (fused: unbounded) */
    uint64_t naive_compute_len;    /* smallest N = Nq = Nk at which the mask-free
                                    * naive path reaches the ridge; 0 if never
                                    * (ridge >= d/e), unknown, or beyond 2^61 */
    uint64_t fused_compute_len;    /* the same for the fused path (seed: 400) */
    double causal_speedup;         /* fused time without / with the mask on the
                                    * roofline: 1 with no mask, 0 if unknown */
    clattn_batch_blocks batch;     /* the whole batch at its lengths: what the
                                    * fused estimate counts (added last) */
} clattn_prediction;

/* Fills `out` for `problem` on `dev` (figures may be 0 = unknown).
 * CLATTN_EINVAL on a bad problem (splits > Nk, a kv_lens value > Nk among
 * them), CLATTN_EOVERFLOW when a count overflows. */
CLATTN_API int clattn_model_predict(const clattn_model_problem *problem,
                                    const clattn_model_device *dev, clattn_prediction *out);

/* ----------------------------------------------- attention variants (API 1.1) */

/* What a problem's attention variant (clattn_options' fields of the same
 * names) changes in the model. Set it up with clattn_model_default_variant,
 * which sets struct_size (clattn/types.h, "Structs that grow"); zero
 * changes nothing. Softcap, ALiBi and sinks change neither bytes nor
 * FLOPs here (their slopes and sinks, 4 H bytes each, are not counted). */
typedef struct clattn_model_variant {
    size_t struct_size;            /* sizeof(clattn_model_variant) of the caller's header */
    /* V's and O's head dimension (0: d). Q and K are read with d columns,
     * V read and O written with d_v; a pair costs 2 d FLOPs in Q K^T and
     * 2 d_v in P V; the split's partial rows hold d_v values. */
    size_t head_dim_v;
    /* The sliding window (-1: that side unbounded), aligned as the causal
     * mask (bottom-right without one). The block accounting counts exactly
     * the (query, key) pairs it keeps (visible_pairs) and the tiles the
     * kernel visits: a query block [q0, q0 + BM) walks the key blocks from
     * the one holding key q0 + off - window_left to the one holding its
     * last visible key, q0 + BM - 1 + off + window_right (or the causal
     * diagonal), whole blocks, the last cut at the sequence's length. */
    int32_t window_left, window_right;
    /* A mask the kernel reads (CLATTN_MASK_NONE: none), of mask_dtype
     * (CLATTN_MASK_ADD) or one byte (CLATTN_MASK_BOOL), broadcast as
     * [mask_batch, mask_heads, Nq, Nk] (each 1 or B, 1 or H; 0 counts as
     * 1). Its traffic: every query head's tiles read the mask elements of
     * the pairs they compute (batch.computed_pairs x H elements), a
     * broadcast mask read again by each head and sequence it serves (an
     * upper bound: cache hits among them are not counted); skipped tiles'
     * elements are not read. The fused memory plan holds the mask's buffer
     * ("mask"). A mask's content skips no tile: FLOPs are the tiles'. */
    clattn_mask_kind mask_kind;
    clattn_dtype mask_dtype;
    size_t mask_batch, mask_heads;
} clattn_model_variant;

/* Sets *variant to no variant (window -1, -1), struct_size set. NULL-safe. */
CLATTN_API void clattn_model_default_variant(clattn_model_variant *variant);

/* clattn_model_predict for `problem` with `variant` (NULL: none, the same
 * as clattn_model_predict): the traffic (Q1) with V and O of d_v columns,
 * blocks and batch counted under the window, the fused estimate with the
 * mask's bytes, d_v in bytes, FLOPs and the split workspace. The naive
 * estimate keeps its mask-free S (the naive path refuses these variants,
 * but for d_v, which it also refuses). CLATTN_EINVAL for a variant not set
 * up (struct_size), a window side below -1, an unknown mask kind or dtype,
 * a broadcast that does not fit the shape, or head_dim_v above
 * CLATTN_HEAD_DIM_MAX; otherwise as clattn_model_predict. */
CLATTN_API int clattn_model_predict_variant(const clattn_model_problem *problem,
                                            const clattn_model_variant *variant,
                                            const clattn_model_device *dev,
                                            clattn_prediction *out);

/* ------------------------------------------------------ KV caches (API 1.3) */

/* How the call keeps its KV cache and lays out its batch (clattn_options'
 * fields of the same names), as the model counts them. Set it up with
 * clattn_model_default_cache, which sets struct_size (clattn/types.h,
 * "Structs that grow"); all zero is the plain cache in the dtype, every
 * result as clattn_model_predict_variant gives it. */
typedef struct clattn_model_cache {
    size_t struct_size;            /* sizeof(clattn_model_cache) of the caller's header */
    /* K's and V's storage, each on its own: a row of d values (d_v for V)
     * is d / clattn_kv_block_values(type) * clattn_kv_block_bytes(type,
     * dtype) bytes: e d in the dtype, 34 d / 32 in q8_0, 18 d / 32 in
     * q4_0, d in fp8 e4m3 (d, d_v multiples of 32 for the block types).
     * fp8 adds its fp32 scales, 4 bytes per tensor, or per KV head with
     * kv_scale_per_head, read by every call and held beside K and V. */
    clattn_kv_type k_type, v_type;
    int kv_scale_per_head;
    /* Paged K and V: page_size > 0 keys per page. The fused path reads the
     * same K/V rows (a page's unused slots are never read) and, per
     * sequence with a query and a key, the block table's entries of the
     * pages holding its keys, 4 ceil(L_b / page_size) bytes. The memory
     * plan holds K and V as num_pages pages (0: B ceil(Nk / page_size)) of
     * Hkv page_size rows, and the table, B block_table_stride int32
     * entries (0: ceil(Nk / page_size)). */
    size_t page_size;
    size_t num_pages;
    size_t block_table_stride;
    /* Packed (varlen) Q, K, V and O by cu_seqlens: the tensors hold
     * sum q_b query and sum L_b key tokens per head, not B Nq and B Nk, O
     * is written for the packed rows alone, and the two offset arrays,
     * 2 (B + 1) int32, are read and held. Packed keys take no pages. */
    int packed;
    /* B per-sequence query counts, each <= Nq (NULL: Nq for all; the
     * packed batch's or clattn_options.q_lens), read during the call. A
     * sequence's grid is q_b x L_b (bottom-right aligned to L_b - q_b); a
     * sequence of no query reads neither its Q nor its K and V; the padded
     * O is written whole (rows past q_b are zeros). */
    const uint32_t *q_lens;
} clattn_model_cache;

/* Sets *cache to the plain cache (every field 0), struct_size set. NULL-safe. */
CLATTN_API void clattn_model_default_cache(clattn_model_cache *cache);

/* What the cache changes in a prediction (clattn_model_predict_cache).
 * Fixed size (see "Structs that grow"): the library writes it whole,
 * reserved bytes zeroed. */
typedef struct clattn_cache_estimate {
    uint64_t k_row_bytes, v_row_bytes; /* one key row of d values, one value row of d_v */
    uint64_t k_bytes, v_bytes;   /* K and V the fused path reads: Hkv x row bytes x
                                  * prediction.batch.kv_rows_read */
    uint64_t dtype_kv_bytes;     /* the same K and V rows stored in the dtype */
    uint64_t table_bytes;        /* block table entries read */
    uint64_t scale_bytes;        /* fp8 scales read (and held) */
    uint64_t seqlens_bytes;      /* cu_seqlens_q and _k read (and held) */
    uint64_t q_rows, kv_rows;    /* rows per head the Q and K tensors hold: B Nq or
                                  * sum q_b packed; B Nk, sum L_b packed or
                                  * num_pages x page_size paged */
    uint64_t k_buffer_bytes, v_buffer_bytes; /* K and V in the fused memory plan */
    uint64_t table_buffer_bytes; /* the block table in it */
    uint8_t reserved[152];       /* zero; room for later fields (256 bytes in all) */
} clattn_cache_estimate;

/* clattn_model_predict_variant for `problem` and `variant` (NULL: none)
 * with the KV cache `cache` (NULL: plain): the fused estimate's bytes
 * count K and V in their types, the block table, fp8 scales and packed
 * offsets read; its memory plan holds the tensors as stored (paged,
 * packed) and those arrays; per-sequence query counts (cache->q_lens)
 * shape the batch's block accounting, Q's reads and FLOPs. The traffic
 * table (Q1), the naive estimate (its contiguous copies of K and V in the
 * dtype; the gather's reads of the cache are not counted) and the
 * mask-free crossover lengths stay the dtype's. `cache_out` (may be NULL)
 * receives the cache's own figures. CLATTN_EINVAL for a cache not set up
 * (struct_size), an unknown type, d or d_v not a multiple of a block
 * type's 32, packed keys with pages, a q_lens value above Nq; otherwise as
 * clattn_model_predict_variant. */
CLATTN_API int clattn_model_predict_cache(const clattn_model_problem *problem,
                                          const clattn_model_variant *variant,
                                          const clattn_model_cache *cache,
                                          const clattn_model_device *dev,
                                          clattn_prediction *out,
                                          clattn_cache_estimate *cache_out);

/* What an engine asks of a device for a model: how many tokens of KV cache
 * fit, and what a decoding step costs at a context length. Fixed size, as
 * clattn_cache_estimate. Unknown figures are 0 (fit CLATTN_FIT_UNKNOWN). */
typedef struct clattn_kv_capacity {
    uint64_t token_bytes;    /* K and V of one token over every layer and KV head:
                              * layers Hkv (k_row_bytes + v_row_bytes) */
    uint64_t page_bytes;     /* one page of every layer: token_bytes page_size (1
                              * token when not paged) */
    uint64_t scale_bytes;    /* the fp8 scales of every layer, held beside the pages */
    uint64_t free_bytes;     /* the memory counted: the caller's, else the device's
                              * capacity; 0 unknown */
    uint64_t pages;          /* whole pages that fit: (free - scales) / page_bytes,
                              * and, with a known max allocation, at most the pages
                              * one layer's K (or V) buffer may hold */
    uint64_t tokens;         /* pages page_size: the tokens of cache that fit */
    uint64_t sequence_pages; /* pages a sequence of Nk keys takes: ceil(Nk / page_size) */
    uint64_t sequences;      /* sequences of Nk keys that fit: pages / sequence_pages */
    uint64_t batch_pages;    /* pages of the problem's batch at its lengths
                              * (kv_lens, else Nk each): sum ceil(L_b / page_size) */
    uint64_t batch_bytes;    /* batch_pages page_bytes + scale_bytes */
    clattn_fit fit;          /* the batch's cache against free_bytes (and the max
                              * allocation where it bounds pages) */
    int alloc_limited;       /* nonzero: the max allocation bounded `pages` */
    uint64_t step_bytes;     /* one decoding step over every layer: layers x the
                              * fused estimate's bytes (the whole cache read once
                              * per layer, Q, O, tables, split workspace) */
    double step_flops;       /* layers x its FLOPs */
    double layer_time_s;     /* one layer's fused roofline time (launches included) */
    double step_time_s;      /* layers x layer_time_s: each sequence's time per
                              * generated token at this context */
    double tokens_per_s;     /* the batch's query tokens per step over step_time_s */
    clattn_bound bound;      /* the roof of one layer's step */
    uint8_t reserved[124];   /* zero; room for later fields (256 bytes in all) */
} clattn_kv_capacity;

/* The KV cache of a model of `layers` attention layers, each of
 * problem->shape's heads (Hkv, d, and d_v from `variant`), stored as
 * `cache` says (NULL: plain; paged rounds to whole pages), against
 * `free_bytes` of device memory (0: dev->capacity_bytes): the tokens that
 * fit, and a decoding step of problem->shape (B sequences, Nq query tokens
 * each, Nk keys of context, per-sequence kv_lens, the split and tiles of
 * the problem) on `dev`: step_time_s = layers x the fused roofline time of
 * one layer, the whole cache read once per layer. CLATTN_EINVAL for
 * layers 0 or what clattn_model_predict_cache refuses, CLATTN_EOVERFLOW
 * for a count past 64 bits. */
CLATTN_API int clattn_model_kv_capacity(const clattn_model_problem *problem,
                                        const clattn_model_variant *variant,
                                        const clattn_model_cache *cache, size_t layers,
                                        uint64_t free_bytes, const clattn_model_device *dev,
                                        clattn_kv_capacity *out);

/* ------------------------------------------ several devices (API 1.5) */

/* How one call is spread over n devices (clattn_group_attention, and
 * libclattn_mpi over ranks). */
typedef enum clattn_spread {
    CLATTN_SPREAD_ONE = 0,     /* one device runs the whole call */
    CLATTN_SPREAD_KEYS = 1,    /* each device 1/n of the keys; partials merged */
    CLATTN_SPREAD_QUERIES = 2, /* each device 1/n of the visible pairs by query
                                * rows, reading all of K and V (the all-gather) */
    CLATTN_SPREAD_RING = 3,    /* each device 1/n of the tokens of Q, K, V; the
                                * K/V blocks passed round in n steps */
} clattn_spread;
#define CLATTN_SPREADS 4

/* "one", "keys", "queries", "ring". */
CLATTN_API const char *clattn_spread_name(clattn_spread spread);

/* The links between the devices and the host; 0 means unknown. */
typedef struct clattn_model_link {
    double host_bytes_per_s; /* each device's link to host memory, each way
                              * (PCIe; 0: the tensors are already on the
                              * devices, no host transfer counted) */
    double peer_bytes_per_s; /* a device to the next (a ring step): device
                              * to device, or host-staged (MPI); 0: half the
                              * host link (down, then up) */
    double latency_s;        /* per transfer */
} clattn_model_link;

typedef struct clattn_spread_estimate {
    int possible;           /* 0: the scheme does not run this problem */
    double compute_s;       /* the slowest device's kernel time (roofline) */
    uint64_t host_bytes;    /* per device, to and from host memory */
    uint64_t peer_bytes;    /* per device, sent to the next device */
    double transfer_s;      /* transfer time the compute does not hide */
    double time_s;          /* the call; 0 when a figure is unknown */
    uint64_t device_bytes;  /* device memory per device (the fused path's) */
    uint64_t max_len;       /* the largest N that fits every device: Nq = Nk
                             * = N, or Nk = N for one query row; 0 unknown */
} clattn_spread_estimate;

typedef struct clattn_spread_prediction {
    size_t devices;
    clattn_spread_estimate spread[CLATTN_SPREADS];
    clattn_spread best;     /* the fastest that runs and fits */
} clattn_spread_prediction;

/* The model of `problem`'s fused path spread over `devices` devices alike,
 * each `dev`, linked by `link`. Per scheme: each device's kernel time on
 * the roofline (clattn_model_predict of its share: by keys Nk / n keys;
 * by queries Nq / n rows against all Nk keys, its FLOPs 1/n of the call's
 * under the causal mask, balanced; the ring n steps of Nq / n rows against
 * Nk / n keys, each step's transfer of a block under its compute), the
 * bytes each moves (host arrays: its inputs in and outputs out, serial with
 * its kernel, the links of the devices independent; the partial rows
 * merged), and the memory each holds. KEYS runs any problem; QUERIES and
 * RING need Nq > 1. CLATTN_EINVAL for devices 0 or above 65536, or what
 * clattn_model_predict refuses. */
CLATTN_API int clattn_model_predict_spread(const clattn_model_problem *problem,
                                           const clattn_model_device *dev, size_t devices,
                                           const clattn_model_link *link,
                                           clattn_spread_prediction *out);

#ifdef __cplusplus
}
#endif

#endif /* CLATTN_MODEL_H */
