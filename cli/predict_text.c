/*
 * clattn predict: the human-readable tables. Sizes are binary (MiB, GiB),
 * rates decimal (TB/s, TFLOP/s), counts grouped by thousands, as the seed
 * writes them; every device figure is printed with where it came from.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "kvcache.h"
#include "predict.h"
#include "variant.h"

#define CELL 64 /* bytes of one formatted table cell */

/* ------------------------------------------------------------ formatting */

/* 14188 -> "14,188" */
static const char *fmt_count(uint64_t v, char *buf, size_t cap)
{
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%" PRIu64, v);
    size_t o = 0;
    for (int i = 0; i < n && o + 2 < cap; i++) {
        if (i && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

static const char *fmt_bytes(uint64_t bytes, char *buf, size_t cap)
{
    cli_fmt_bytes(bytes, buf, cap);
    return buf;
}

/* The seed writes large per-head sizes in MiB with GiB beside them. */
static const char *fmt_bytes_mib(uint64_t bytes, char *buf, size_t cap)
{
    const uint64_t mib = (uint64_t)1 << 20;
    if (bytes >= 1024 * mib && bytes % mib == 0) {
        char human[32];
        cli_fmt_bytes(bytes, human, sizeof human);
        snprintf(buf, cap, "%" PRIu64 " MiB (%s)", bytes / mib, human);
        return buf;
    }
    return fmt_bytes(bytes, buf, cap);
}

/* "9" for whole ratios, else two decimals. */
static const char *fmt_ratio(double r, char *buf, size_t cap)
{
    snprintf(buf, cap, fabs(r - round(r)) < 1e-9 ? "%.0f" : "%.2f", r);
    return buf;
}

/* Decimal prefixes up to T: "5 TB/s", "1000 TFLOP/s". */
static const char *fmt_rate(double v, const char *unit, char *buf, size_t cap)
{
    static const char *prefix[] = { "", "k", "M", "G", "T" };
    int p = 0;
    while (v >= 1000 && p < 4) {
        v /= 1000;
        p++;
    }
    snprintf(buf, cap, "%.4g %s%s", v, prefix[p], unit);
    return buf;
}

static const char *fmt_time(double s, char *buf, size_t cap)
{
    if (s <= 0)
        snprintf(buf, cap, "unknown");
    else if (s >= 1)
        snprintf(buf, cap, "%.3g s", s);
    else if (s >= 1e-3)
        snprintf(buf, cap, "%.3g ms", s * 1e3);
    else
        snprintf(buf, cap, "%.3g us", s * 1e6);
    return buf;
}

static const char *fmt_len(const clattn_shape *s, char *buf, size_t cap)
{
    if (s->q_len == s->kv_len)
        snprintf(buf, cap, "%zu", s->q_len);
    else
        snprintf(buf, cap, "%zu/%zu", s->q_len, s->kv_len);
    return buf;
}

/* ---------------------------------------------------------- text output */

static void print_figure(const char *name, clattn_figure f, int is_bytes, const char *unit)
{
    char buf[CELL];
    if (f.source == CLATTN_SRC_NONE || f.value <= 0)
        snprintf(buf, sizeof buf, "unknown");
    else if (is_bytes)
        fmt_bytes((uint64_t)f.value, buf, sizeof buf);
    else if (!strcmp(unit, "s"))
        fmt_time(f.value, buf, sizeof buf);
    else
        fmt_rate(f.value, unit, buf, sizeof buf);
    printf("  %-16s %-18s %s\n", name, buf, clattn_source_name(f.source));
}

static void print_header(const struct predict_args *a, clattn_ctx *ctx,
                         const struct predict_figures *f, const struct predict_row *rows)
{
    const clattn_shape *s = &a->shape;
    const clattn_prediction *p = &rows[0].pred;
    char buf[CELL];
    printf("shape    B=%zu H=%zu Hkv=%zu d=%zu %s (e = %zu bytes), causal: %s\n", s->batch,
           s->heads, s->kv_heads, s->head_dim, cli_dtype_name(s->dtype),
           clattn_dtype_size(s->dtype), cli_causal_name(a->causal));
    if (a->has_variant) {
        char what[256];
        cli_variant_describe(&rows[0].problem.shape, &rows[0].vopts, what, sizeof what);
        printf("variant  %s\n", what);
    }
    printf("device   %s\n", ctx ? clattn_device_name(ctx) : a->preset ? "preset seed" : "none");
    print_figure("capacity", f->capacity, 1, NULL);
    print_figure("max allocation", f->max_alloc, 1, NULL);
    print_figure("cache", f->cache, 1, NULL);
    print_figure("bandwidth", f->bandwidth, 0, "B/s");
    print_figure("peak", f->peak, 0, "FLOP/s");
    if (f->peak_is_f32)
        printf("  %-16s %-18s no fp16 figure: fp16 is half storage with float arithmetic\n", "",
               "(the fp32 rate)");
    print_figure("launch latency", f->latency, 0, "s");
    if (p->ridge > 0)
        snprintf(buf, sizeof buf, "%.4g FLOP/byte", p->ridge);
    else
        snprintf(buf, sizeof buf, "unknown");
    printf("  %-16s %-18s peak / bandwidth\n", "ridge", buf);
    snprintf(buf, sizeof buf, "%zu x %zu", rows[0].problem.block_m, rows[0].problem.block_n);
    printf("  %-16s %-18s %s\n", "tiles (BM x BN)", buf, rows[0].tiles_source);
}

static void print_q1(const struct predict_args *a, const struct predict_row *rows, size_t n)
{
    char c[7][CELL];
    printf("\nQ1  traffic per head (naive = endpoints + 4 S: write S, read S, write P, read P;"
           " fused = endpoints)\n");
    printf("  %11s %12s %12s %22s %12s %7s %11s\n", "N", "S matrix", "Q,K,V,O", "naive total",
           "fused total", "ratio", "closed form");
    for (size_t i = 0; i < n; i++) {
        const clattn_traffic *t = &rows[i].pred.traffic;
        printf("  %11s %12s %12s %22s %12s %6s× %11s\n",
               fmt_len(&rows[i].problem.shape, c[0], CELL),
               fmt_bytes_mib(t->head_score_bytes, c[1], CELL),
               fmt_bytes_mib(t->head_endpoint_bytes, c[2], CELL),
               fmt_bytes_mib(t->head_naive_bytes, c[3], CELL),
               fmt_bytes_mib(t->head_fused_bytes, c[4], CELL), fmt_ratio(t->head_ratio, c[5], CELL),
               fmt_ratio(t->closed_form, c[6], CELL));
    }
    printf("  closed form: 1 + 2 Nq Nk / ((Nq + Nk) d), 1 + N/d when Nq = Nk; the dtype cancels\n");
    printf("\nQ1  traffic for all B*H = %zu heads (K and V once per KV head)\n",
           a->shape.batch * a->shape.heads);
    printf("  %11s %12s %12s %7s\n", "N", "naive total", "fused total", "ratio");
    for (size_t i = 0; i < n; i++) {
        const clattn_traffic *t = &rows[i].pred.traffic;
        printf("  %11s %12s %12s %6s×\n", fmt_len(&rows[i].problem.shape, c[0], CELL),
               fmt_bytes(t->naive_bytes, c[1], CELL), fmt_bytes(t->fused_bytes, c[2], CELL),
               fmt_ratio(t->ratio, c[3], CELL));
    }
}

/* 14188.96 -> "14,188.96" */
static const char *fmt_real(double v, char *buf, size_t cap)
{
    char whole[32];
    double cents = round(v * 100);
    uint64_t integer = (uint64_t)(cents / 100);
    snprintf(buf, cap, "%s.%02d", fmt_count(integer, whole, sizeof whole),
             (int)(cents - (double)integer * 100));
    return buf;
}

/* The exact integer, the real root, and the root rounded when that differs
 * (the seed quotes rounded roots: 14,189 where 14,188 is the largest fit). */
static void print_limit(const char *what, const struct predict_limits *l, int k,
                        const char *unknown)
{
    char n[32], root[48], rounded[32];
    if (!l->known[k]) {
        printf("  %-60s unknown (%s)\n", what, unknown);
        return;
    }
    printf("  %-60s N <= %-9s", what, fmt_count(l->n[k], n, sizeof n));
    if (isfinite(l->root[k]) && l->root[k] < 1e15) {
        printf(" (root %s", fmt_real(l->root[k], root, sizeof root));
        uint64_t near = (uint64_t)llround(l->root[k]);
        if (near != (uint64_t)l->n[k])
            printf(" ~ %s", fmt_count(near, rounded, sizeof rounded));
        printf(")");
    }
    printf("\n");
}

static void print_q2_limits(const struct predict_args *a, const clattn_model_device *dev,
                            const struct predict_limits *l)
{
    char what[160], b1[32], b2[32];
    size_t heads = a->shape.batch * a->shape.heads;
    printf("\nQ2  where it stops fitting (N = Nq = Nk)\n");
    snprintf(what, sizeof what, "one head's S in the cache (%s)",
             fmt_bytes(dev->cache_bytes, b1, sizeof b1));
    print_limit(what, l, CLATTN_LIMIT_HEAD_S_IN_CACHE, "cache size");
    snprintf(what, sizeof what, "each head's share of the cache (%s / %zu = %s)",
             fmt_bytes(dev->cache_bytes, b1, sizeof b1), heads,
             fmt_bytes(dev->cache_bytes / heads, b2, sizeof b2));
    print_limit(what, l, CLATTN_LIMIT_SHARED_S_IN_CACHE, "cache size");
    snprintf(what, sizeof what, "S and P of all heads in memory (%s)",
             fmt_bytes(dev->capacity_bytes, b1, sizeof b1));
    print_limit(what, l, CLATTN_LIMIT_SCORES_IN_MEMORY, "capacity");
    print_limit("naive path, every buffer (Q, K, V, O, S, P)", l, CLATTN_LIMIT_NAIVE_FITS,
                "capacity");
    print_limit("fused path, every buffer (Q, K, V, O)", l, CLATTN_LIMIT_FUSED_FITS, "capacity");
}

static void print_q2_table(const struct predict_row *rows, size_t n)
{
    char c[8][CELL];
    printf("\n  %11s %14s %12s %12s %14s  %-23s %11s  %s\n", "N", "S per tensor", "S + P",
           "naive peak", "largest", "naive", "fused peak", "fused");
    for (size_t i = 0; i < n; i++) {
        const clattn_prediction *p = &rows[i].pred;
        int oom = p->naive.fit == CLATTN_FIT_OVER_CAPACITY ||
                  p->naive.fit == CLATTN_FIT_OVER_MAX_ALLOC;
        snprintf(c[3], CELL, "%.10s %.40s", p->naive.memory.largest_name,
                 fmt_bytes(p->naive.memory.largest_bytes, c[4], CELL));
        snprintf(c[5], CELL, "%s%.40s", oom ? "OOM: " : "", clattn_fit_name(p->naive.fit));
        printf("  %11s %14s %12s %12s %14s  %-23s %11s  %s\n",
               fmt_len(&rows[i].problem.shape, c[0], CELL),
               fmt_bytes(p->traffic.score_bytes, c[1], CELL),
               fmt_bytes(2 * p->traffic.score_bytes, c[7], CELL),
               fmt_bytes(p->naive.memory.peak_bytes, c[2], CELL), c[3], c[5],
               fmt_bytes(p->fused.memory.peak_bytes, c[6], CELL), clattn_fit_name(p->fused.fit));
    }
}

static void print_q3(const struct predict_args *a, const struct predict_row *rows, size_t n)
{
    char c[7][CELL];
    const clattn_prediction *p0 = &rows[0].pred;
    printf("\nQ3  arithmetic intensity (FLOP/byte) and the roofline%s\n",
           a->causal != CLATTN_CAUSAL_NONE ? " (causal mask applied)" : "");
    printf("  %11s %12s %12s %9s %9s %11s %-8s %11s %s\n", "N", "naive FLOP", "fused FLOP",
           "naive AI", "fused AI", "naive time", "bound", "fused time", "bound");
    for (size_t i = 0; i < n; i++) {
        const clattn_prediction *p = &rows[i].pred;
        printf("  %11s %12s %12s %9.1f %9.1f %11s %-8s %11s %s\n",
               fmt_len(&rows[i].problem.shape, c[0], CELL),
               fmt_rate(p->naive.flops, "FLOP", c[1], CELL),
               fmt_rate(p->fused.flops, "FLOP", c[6], CELL), p->naive.intensity,
               p->fused.intensity, fmt_time(p->naive.time_s, c[2], CELL),
               clattn_bound_name(p->naive.bound), fmt_time(p->fused.time_s, c[3], CELL),
               clattn_bound_name(p->fused.bound));
    }
    int any = 0;
    for (size_t i = 0; i < n; i++)
        any |= rows[i].kernel[0][0] || rows[i].kernel[1][0];
    if (any) {
        printf("  the time to expect: the roofline over the kernel's efficiency recorded by "
               "clattn tune\n");
        for (size_t i = 0; i < n; i++) {
            printf("  %11s", fmt_len(&rows[i].problem.shape, c[0], CELL));
            for (int k = 0; k < 2; k++) {
                const struct predict_row *r = &rows[i];
                if (!r->kernel[k][0])
                    printf("  %s: no kernel", k ? "fused" : "naive");
                else if (r->expected_s[k] > 0)
                    printf("  %s: %s x%.3g -> %s", k ? "fused" : "naive", r->kernel[k],
                           r->efficiency[k], fmt_time(r->expected_s[k], c[1], CELL));
                else
                    printf("  %s: %s, no efficiency recorded", k ? "fused" : "naive",
                           r->kernel[k]);
            }
            printf("\n");
        }
    }
    printf("  naive AI -> d/e = %.4g FLOP/byte as N grows", p0->naive_intensity_limit);
    if (p0->ridge <= 0)
        printf(" (ridge unknown)\n");
    else if (p0->naive_compute_len)
        printf("; compute-bound from N >= %s\n", fmt_count(p0->naive_compute_len, c[4], CELL));
    else
        printf(", below the ridge (%.4g): memory-bound at every N\n", p0->ridge);
    printf("  fused AI = 2 H N / (e (H + Hkv)), unbounded");
    if (p0->fused_compute_len)
        printf("; compute-bound from N >= %s\n", fmt_count(p0->fused_compute_len, c[5], CELL));
    else
        printf(" (ridge unknown)\n");
}

static void print_q4(const struct predict_args *a, const struct predict_row *rows, size_t n)
{
    char c[4][CELL];
    clattn_causal mode = a->causal == CLATTN_CAUSAL_NONE ? CLATTN_CAUSAL_TOP_LEFT : a->causal;
    printf("\nQ4  causal block accounting, %s, BLOCK_M x BLOCK_N = %zu x %zu%s\n",
           cli_causal_name(mode), rows[0].problem.block_m, rows[0].problem.block_n,
           a->causal == CLATTN_CAUSAL_NONE ? " (what-if: no --causal given)" : "");
    printf("  %11s %9s %9s %8s %10s %10s %9s %9s\n", "N", "blocks", "visited", "fraction",
           "(T+1)/(2T)", "empty rows", "speedup", "roofline");
    for (size_t i = 0; i < n; i++) {
        const clattn_causal_blocks *b = &rows[i].causal.blocks;
        if (b->closed_form > 0)
            snprintf(c[1], CELL, "%.4f", b->closed_form);
        else
            snprintf(c[1], CELL, "-");
        /* The × is two bytes, one column: pad the number, not the string. */
        if (rows[i].causal.causal_speedup > 0)
            snprintf(c[2], CELL, "%8.2f×", rows[i].causal.causal_speedup);
        else
            snprintf(c[2], CELL, "%9s", "unknown");
        printf("  %11s %9" PRIu64 " %9" PRIu64 " %8.4f %10s %10" PRIu64 " %8.2f× %s\n",
               fmt_len(&rows[i].problem.shape, c[0], CELL), b->total_blocks, b->visited_blocks,
               b->visited_fraction, c[1], b->empty_rows, b->speedup, c[2]);
    }
    printf("  visited / total = (T+1)/(2T) -> 1/2 as T grows (Nq = Nk, BM = BN); speedup is\n"
           "  total / computed pairs (compute-bound bound), roofline is the fused time ratio\n");
}

/* The decoding table is printed when per-sequence lengths, a split or a
 * query length were asked for, or the device's plan splits a row. */
static int shows_decode(const struct predict_args *a, const struct predict_row *rows, size_t n)
{
    int split = 0;
    for (size_t i = 0; i < n; i++)
        split |= rows[i].problem.splits > 1;
    return a->n_kv_lens || a->split_given || a->q_len || split;
}

static void print_kv_lens(const struct predict_args *a, const clattn_batch_blocks *bb)
{
    if (!a->n_kv_lens) {
        printf("  per-sequence keys: Nk for every sequence\n");
        return;
    }
    printf("  per-sequence keys:");
    const size_t shown = a->n_kv_lens > 16 ? 16 : a->n_kv_lens;
    for (size_t b = 0; b < shown; b++)
        printf("%s%u", b ? "," : " ", a->kv_lens[b]);
    printf("%s (%" PRIu64 " empty: their rows are zeros; the model charges their O alone)\n",
           shown < a->n_kv_lens ? ",..." : "", bb->empty_sequences);
}

/* The fused path as the library would run it: K and V of each sequence's own
 * length, the split's workspace written and read, and the combine's launch. */
static void print_decode(const struct predict_args *a, const struct predict_row *rows, size_t n)
{
    char c[10][CELL];
    printf("\nQ5  decoding: the fused path per sequence (its own keys, split-KV)%s\n",
           a->causal != CLATTN_CAUSAL_NONE ? ", causal mask applied" : "");
    print_kv_lens(a, &rows[0].pred.batch);
    printf("  %11s %14s %10s %12s %12s %12s %12s %11s %-8s %12s  %s\n", "N", "splits",
           "K/V rows", "K + V", "Q + O", "workspace", "total", "time", "bound", "fused peak",
           "fit");
    for (size_t i = 0; i < n; i++) {
        const clattn_prediction *p = &rows[i].pred;
        const clattn_batch_blocks *bb = &p->batch;
        const clattn_cache_estimate *ce = &rows[i].cache_est; /* K and V in their types */
        const uint64_t kv = ce->k_bytes + ce->v_bytes, ws = 2 * bb->split_workspace_bytes;
        const uint64_t arrays = ce->table_bytes + ce->scale_bytes + ce->seqlens_bytes;
        const uint64_t rest = p->fused.bytes - kv - ws - rows[i].mask_bytes - arrays; /* Q + O */
        snprintf(c[1], CELL, "%u (%.8s)", rows[i].problem.splits ? rows[i].problem.splits : 1,
                 rows[i].splits_source);
        printf("  %11s %14s %10s %12s %12s %12s %12s %11s %-8s %12s  %s\n",
               fmt_len(&rows[i].problem.shape, c[0], CELL), c[1],
               fmt_count(bb->kv_rows_read, c[2], CELL), fmt_bytes(kv, c[3], CELL),
               fmt_bytes(rest, c[4], CELL),
               fmt_bytes(bb->split_workspace_bytes, c[5], CELL),
               fmt_bytes(p->fused.bytes, c[6], CELL), fmt_time(p->fused.time_s, c[7], CELL),
               clattn_bound_name(p->fused.bound),
               fmt_bytes(p->fused.memory.peak_bytes, c[8], CELL), clattn_fit_name(p->fused.fit));
    }
    printf("  K/V rows: key rows read per KV head, summed over the sequences; workspace: the\n"
           "  split's fp32 partials, B*H*Nq*splits*(d+2)*4, written and read once (total\n"
           "  counts it twice); time: the roofline plus one launch, two with a split (the\n"
           "  combine)\n");
}

/* The variant's view: the pairs it keeps, the tiles the fused kernel still
 * computes, the keys it reads and the mask's bytes. */
static void print_variant(const struct predict_args *a, const struct predict_row *rows, size_t n)
{
    char c[9][CELL], what[256];
    cli_variant_describe(&rows[0].problem.shape, &rows[0].vopts, what, sizeof what);
    printf("\nQ6  the variant: %s (fused path%s)\n", what,
           a->causal != CLATTN_CAUSAL_NONE ? ", causal mask applied" : "");
    printf("  %11s %14s %9s %14s %9s %12s %12s %12s %11s\n", "N", "visible pairs", "of all",
           "computed", "blocks", "K/V rows", "mask bytes", "fused bytes", "time");
    for (size_t i = 0; i < n; i++) {
        const clattn_prediction *p = &rows[i].pred;
        const clattn_batch_blocks *bb = &p->batch;
        snprintf(c[2], CELL, "%.3g%%", bb->total_pairs ? 100.0 * (double)bb->visible_pairs /
                                                             (double)bb->total_pairs : 0.0);
        snprintf(c[4], CELL, "%.3g%%", bb->total_blocks ? 100.0 * (double)bb->visited_blocks /
                                                              (double)bb->total_blocks : 0.0);
        printf("  %11s %14s %9s %14s %9s %12s %12s %12s %11s\n",
               fmt_len(&rows[i].problem.shape, c[0], CELL), fmt_count(bb->visible_pairs, c[1], CELL),
               c[2], fmt_count(bb->computed_pairs, c[3], CELL), c[4],
               fmt_count(bb->kv_rows_read, c[5], CELL), fmt_bytes(rows[i].mask_bytes, c[6], CELL),
               fmt_bytes(p->fused.bytes, c[7], CELL), fmt_time(p->fused.time_s, c[8], CELL));
    }
    printf("  visible: the (query, key) pairs the causal mask, window and lengths keep, per\n"
           "  query head over the batch; computed: the pairs of the tiles the kernel walks\n"
           "  (a window's key blocks from its first row's first key to its last row's last;\n"
           "  a mask's content skips no tile), which the FLOPs count, 2 (d + d_v) each;\n"
           "  blocks: visited tiles of all; mask bytes: each query head reads the mask's\n"
           "  elements of its computed pairs (a broadcast mask read again per head: an upper\n"
           "  bound); softcap, ALiBi and sinks change no figure here\n");
}

/* The cache's view: K and V in their types beside the dtype's, what the
 * pages and packing add, and the fused path's bytes, time and memory. */
static void print_cache(const struct predict_args *a, const struct predict_row *rows, size_t n)
{
    char c[10][CELL], what[128];
    const clattn_shape *s = &a->shape;
    cli_cache_describe(&a->call.cache, s, what, sizeof what);
    printf("\nQ7  the KV cache: %s (fused path%s)\n", what[0] ? what : cli_dtype_name(s->dtype),
           a->causal != CLATTN_CAUSAL_NONE ? ", causal mask applied" : "");
    printf("  K row %" PRIu64 " B, V row %" PRIu64 " B per KV head (%s: %zu B each)\n",
           rows[0].cache_est.k_row_bytes, rows[0].cache_est.v_row_bytes,
           cli_dtype_name(s->dtype), s->head_dim * clattn_dtype_size(s->dtype));
    printf("  %11s %12s %12s %7s %10s %10s %12s %11s %12s  %s\n", "N", "K + V read",
           "in the dtype", "saving", "table", "scales,cu", "fused bytes", "time", "fused peak",
           "fit");
    for (size_t i = 0; i < n; i++) {
        const clattn_prediction *p = &rows[i].pred;
        const clattn_cache_estimate *ce = &rows[i].cache_est;
        const uint64_t kv = ce->k_bytes + ce->v_bytes;
        snprintf(c[3], CELL, "%.3g×", kv ? (double)ce->dtype_kv_bytes / (double)kv : 1.0);
        printf("  %11s %12s %12s %8s %10s %10s %12s %11s %12s  %s\n",
               fmt_len(&rows[i].problem.shape, c[0], CELL), fmt_bytes(kv, c[1], CELL),
               fmt_bytes(ce->dtype_kv_bytes, c[2], CELL), c[3],
               fmt_bytes(ce->table_bytes, c[4], CELL),
               fmt_bytes(ce->scale_bytes + ce->seqlens_bytes, c[5], CELL),
               fmt_bytes(p->fused.bytes, c[6], CELL), fmt_time(p->fused.time_s, c[7], CELL),
               fmt_bytes(p->fused.memory.peak_bytes, c[8], CELL), clattn_fit_name(p->fused.fit));
    }
    printf("  K + V read: the K/V rows the fused path reads, Hkv x (K row + V row) each (q8_0\n"
           "  34 B and q4_0 18 B per 32 values, fp8 1 B per value); table: the block table's\n"
           "  entries of the pages holding each sequence's keys, 4 B each; scales,cu: fp8's fp32\n"
           "  scales and the packed offsets; fused peak holds the tensors as stored (pages,\n"
           "  packed tokens) and those arrays\n");
}

/* --layers: what fits and what a decoding step costs. */
static void print_serving(const struct predict_args *a, const struct predict_row *rows,
                          size_t n)
{
    char c[12][CELL], what[128];
    const clattn_shape *s = &a->shape;
    const clattn_kv_capacity *k0 = &rows[0].capacity;
    cli_cache_describe(&a->call.cache, s, what, sizeof what);
    printf("\nQ8  serving: %zu layers of Hkv=%zu d=%zu, cache %s; a decoding step of B=%zu x "
           "Nq=%zu\n", a->layers, s->kv_heads, s->head_dim, what[0] ? what : cli_dtype_name(s->dtype),
           s->batch, rows[0].step.shape.q_len);
    if (k0->free_bytes)
        printf("  memory for the cache %s (%s)", fmt_bytes(k0->free_bytes, c[0], CELL),
               clattn_source_name(rows[0].free.source));
    else
        printf("  memory for the cache unknown (give --free or --capacity)");
    printf("; a token %s over every layer, a page %s%s\n",
           fmt_bytes(k0->token_bytes, c[1], CELL), fmt_bytes(k0->page_bytes, c[2], CELL),
           k0->alloc_limited ? "; one layer's K or V buffer is bounded by the max allocation"
                             : "");
    printf("  %11s %12s %10s %12s %-16s %12s %11s %-7s %22s %12s\n", "N", "tokens fit",
           "sequences", "batch cache", "fit", "step bytes", "per token", "bound", "expected",
           "tokens/s");
    for (size_t i = 0; i < n; i++) {
        const struct predict_row *r = &rows[i];
        const clattn_kv_capacity *k = &r->capacity;
        if (k->free_bytes) {
            fmt_count(k->tokens, c[1], CELL);
            fmt_count(k->sequences, c[2], CELL);
        } else {
            snprintf(c[1], CELL, "unknown");
            snprintf(c[2], CELL, "unknown");
        }
        if (r->step_expected_s > 0)
            snprintf(c[7], CELL, "%.24s (x%.3g)", fmt_time(r->step_expected_s, c[8], CELL),
                     r->step_efficiency);
        else
            snprintf(c[7], CELL, "%s", r->step_kernel[0] ? "no efficiency" : "-");
        if (k->tokens_per_s > 0)
            snprintf(c[9], CELL, "%.4g", k->tokens_per_s);
        else
            snprintf(c[9], CELL, "unknown");
        printf("  %11zu %12s %10s %12s %-16s %12s %11s %-7s %22s %12s\n",
               r->step.shape.kv_len, c[1], c[2], fmt_bytes(k->batch_bytes, c[3], CELL),
               clattn_fit_name(k->fit), fmt_bytes(k->step_bytes, c[4], CELL),
               fmt_time(k->step_time_s, c[5], CELL), clattn_bound_name(k->bound), c[7], c[9]);
    }
    printf("  tokens fit: whole pages of every layer in the memory (less the fp8 scales);\n"
           "  sequences: of N keys each; batch cache: the B sequences at their lengths; per\n"
           "  token: one step, every layer's fused roofline time (the whole cache read once\n"
           "  per layer): each sequence's time per generated token; expected: over the step\n"
           "  kernel's efficiency recorded by clattn tune\n");
}

/* --devices: each scheme over the devices beside one. */
static void print_spread(const struct predict_args *a, const struct predict_row *rows,
                         size_t n)
{
    char c[9][CELL];
    printf("\nQ9  over %zu devices like this one; host link %s, device to device %s\n",
           a->devices, a->link_bw > 0 ? fmt_rate(a->link_bw, "B/s", c[0], CELL) : "not counted",
           a->peer_bw > 0 ? fmt_rate(a->peer_bw, "B/s", c[1], CELL)
           : a->link_bw > 0 ? "half the host link" : "unknown");
    printf("  %11s %-8s %11s %11s %12s %12s %11s %9s %12s %13s\n", "N", "scheme", "compute",
           "transfer", "host bytes", "peer bytes", "time", "speedup", "per device",
           "fits up to N");
    for (size_t i = 0; i < n; i++) {
        const clattn_spread_prediction *sp = &rows[i].spread;
        const double one = sp->spread[CLATTN_SPREAD_ONE].time_s;
        for (int k = 0; k < CLATTN_SPREADS; k++) {
            const clattn_spread_estimate *e = &sp->spread[k];
            if (!e->possible)
                continue;
            if (one > 0 && e->time_s > 0)
                snprintf(c[5], CELL, "%.2f", one / e->time_s);
            else
                snprintf(c[5], CELL, "-");
            if (e->max_len)
                fmt_count(e->max_len, c[6], CELL);
            else
                snprintf(c[6], CELL, "unknown");
            printf("  %11s %-8s %11s %11s %12s %12s %11s %9s %12s %13s%s\n",
                   k == 0 ? fmt_len(&rows[i].problem.shape, c[8], CELL) : "",
                   clattn_spread_name((clattn_spread)k), fmt_time(e->compute_s, c[0], CELL),
                   e->transfer_s > 0 ? fmt_time(e->transfer_s, c[1], CELL) : "-",
                   fmt_bytes(e->host_bytes, c[2], CELL),
                   fmt_bytes(e->peer_bytes, c[3], CELL), fmt_time(e->time_s, c[4], CELL), c[5],
                   fmt_bytes(e->device_bytes, c[7], CELL), c[6],
                   sp->best == (clattn_spread)k ? "  <- best" : "");
        }
    }
    printf("  compute: the slowest device's kernel on the roofline (a ring: its n steps);\n"
           "  transfer: what the compute does not hide (host arrays in and out, serial\n"
           "  with the kernel; a ring step's block sent under the next step); per device:\n"
           "  the memory each holds; fits up to N: the longest call (Nq = Nk = N, or Nk for\n"
           "  one query row) whose share fits each device\n");
}

void predict_print_text(const struct predict_args *a, clattn_ctx *ctx,
                        const struct predict_figures *f, const clattn_model_device *dev,
                        const struct predict_limits *l, const struct predict_row *rows,
                        size_t n)
{
    print_header(a, ctx, f, rows);
    print_q1(a, rows, n);
    print_q2_limits(a, dev, l);
    print_q2_table(rows, n);
    print_q3(a, rows, n);
    print_q4(a, rows, n);
    if (shows_decode(a, rows, n))
        print_decode(a, rows, n);
    if (a->has_variant)
        print_variant(a, rows, n);
    if (a->has_cache)
        print_cache(a, rows, n);
    if (a->layers)
        print_serving(a, rows, n);
    if (a->devices)
        print_spread(a, rows, n);
}
