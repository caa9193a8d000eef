/* SPDX-License-Identifier: MIT */
/*
 * clattn_mpi_attention under mpirun (meson test runs it on 2 and 4 ranks,
 * tests/mpi/mpirun.sh), each rank on its own context of the default
 * device, against the CPU reference of the whole call: a KV cache
 * sharded by keys (decoding and chunked prefill; uneven shares, a rank
 * holding no keys, per-sequence lengths, GQA, sinks, softcap, d_v != d,
 * a causal diagonal that crosses shards) and tokens sharded for context
 * parallelism (the ring and the all-gather, contiguous and zigzag orders,
 * both causal alignments). Outputs are poisoned (NaN) first; each rank
 * checks its own rows. Then the refusals every rank must share: one
 * rank's bad argument, lengths that do not add up, a shape that differs,
 * an odd zigzag length, and an unsupported variant, each failing the
 * call on every rank with the same code, no rank left waiting. Exits 77
 * without a device on any rank.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clattn/clattn.h"
#include "clattn/mpi.h"
#include "case_inputs.h"

static int rank, ranks;
static clattn_ctx *ctx;

enum split { UNEVEN, EMPTY, EVEN };

struct mpi_case {
    const char *what;
    clattn_shape s;
    clattn_mpi_shard shard;
    clattn_mpi_order order;
    clattn_mpi_scheme scheme;
    enum split split;
    clattn_causal causal;
    uint32_t kv_lens[4], q_lens[4];
    int lens, qlens, sinks;
    float softcap;
    size_t dv;
};

/* Each rank's share of `whole` (in units of `unit`): by weight i + 1,
 * rank 1 holding none with EMPTY (2 ranks or more). */
static void split_lengths(enum split how, size_t whole, size_t unit, size_t *len)
{
    double w[64], sum = 0;
    for (int i = 0; i < ranks; i++) {
        w[i] = how == EVEN ? 1 : how == EMPTY && i == 1 ? 0 : i + 1;
        sum += w[i];
    }
    const size_t units = whole / unit;
    size_t at = 0;
    double before = 0;
    for (int i = 0; i < ranks; i++) {
        before += w[i];
        const size_t end = i + 1 == ranks ? units : (size_t)(before / sum * (double)units + 0.5);
        len[i] = (end - at) * unit;
        at = end;
    }
}

static double value(const void *x, size_t i, clattn_dtype t)
{
    return t == CLATTN_F16    ? clattn_f16_to_f32(((const uint16_t *)x)[i])
           : t == CLATTN_BF16 ? clattn_bf16_to_f32(((const uint16_t *)x)[i])
                              : ((const float *)x)[i];
}

/* Rows [at, at + n) of every (b, head) block of `rows` rows of `width`
 * values, from src (blocks of `rows`) to dst (blocks of `drows`, at dat). */
static void copy_rows(void *dst, size_t drows, size_t dat, const void *src, size_t rows,
                      size_t at, size_t n, size_t blocks, size_t width, size_t e)
{
    for (size_t b = 0; b < blocks; b++)
        memcpy((char *)dst + (b * drows + dat) * width * e,
               (const char *)src + (b * rows + at) * width * e, n * width * e);
}

/* This rank's chunks of the tokens: positions and local rows (the
 * library's rule, restated: contiguous, or chunk r and 2P-1-r). */
static size_t my_chunks(const size_t *len, int zigzag, size_t *begin, size_t *n, size_t *at)
{
    size_t count = 0, pos = 0;
    if (!zigzag) {
        for (int i = 0; i < rank; i++)
            pos += len[i];
        if (len[rank])
            begin[count] = pos, n[count] = len[rank], at[count++] = 0;
        return count;
    }
    for (int c = 0; c < 2 * ranks; c++) {
        const int owner = c < ranks ? c : 2 * ranks - 1 - c;
        const size_t l = len[owner] / 2;
        if (owner == rank && l)
            begin[count] = pos, n[count] = l, at[count++] = c < ranks ? 0 : l;
        pos += l;
    }
    return count;
}

/* The case on every rank: 1 when this rank's rows match the reference. */
static int run_case(const struct mpi_case *c, uint64_t seed)
{
    const clattn_shape *s = &c->s;
    const size_t e = clattn_dtype_size(s->dtype), d = s->head_dim, dv = c->dv ? c->dv : d;
    const size_t bh = s->batch * s->heads, bk = s->batch * s->kv_heads;
    const size_t nq = bh * s->q_len * d, nk = bk * s->kv_len * d, nv = bk * s->kv_len * dv;
    void *q = malloc(nq * e), *k = malloc(nk * e), *v = malloc(nv * e);
    double *ref = malloc(bh * s->q_len * dv * sizeof *ref);
    double *ref_lse = malloc(bh * s->q_len * sizeof *ref_lse);
    float sinks[16];
    clattn_options opts;
    case_options(&opts, c->causal, c->lens ? c->kv_lens : NULL, c->qlens ? c->q_lens : NULL,
                 c->softcap, c->sinks, sinks, s->heads);
    opts.head_dim_v = c->dv;
    if (!q || !k || !v || !ref || !ref_lse ||
        case_inputs(q, nq, k, nk, v, nv, s->dtype, seed) < 0 ||
        clattn_reference_ex(s, &opts, q, k, v, ref, ref_lse) < 0) {
        fprintf(stderr, "rank %d: %s: inputs or reference: %s\n", rank, c->what,
                clattn_last_error_detail());
        return 0;
    }
    /* This rank's tensors. */
    size_t len[64], begin[2], n[2], at[2];
    const int tokens = c->shard == CLATTN_MPI_SHARD_TOKENS;
    const int zigzag = tokens && c->order == CLATTN_MPI_ZIGZAG;
    split_lengths(c->split, s->kv_len, zigzag ? 2 : 1, len);
    const size_t mine = len[rank], qrows = tokens ? mine : s->q_len;
    size_t chunks = my_chunks(len, zigzag, begin, n, at);
    void *lq = malloc(bh * qrows * d * e + 1), *lk = malloc(bk * mine * d * e + 1);
    void *lv = malloc(bk * mine * dv * e + 1), *lo = malloc(bh * qrows * dv * e + 1);
    float *lse = malloc(bh * qrows * sizeof *lse + 1);
    for (size_t i = 0; i < chunks; i++) {
        copy_rows(lk, mine, at[i], k, s->kv_len, begin[i], n[i], bk, d, e);
        copy_rows(lv, mine, at[i], v, s->kv_len, begin[i], n[i], bk, dv, e);
        if (tokens)
            copy_rows(lq, mine, at[i], q, s->q_len, begin[i], n[i], bh, d, e);
    }
    if (!tokens) {
        memcpy(lq, q, nq * e);
        chunks = 1, begin[0] = 0, n[0] = s->q_len, at[0] = 0; /* the rows to check */
    }
    memset(lo, 0xff, bh * qrows * dv * e); /* NaN */
    for (size_t i = 0; i < bh * qrows; i++)
        lse[i] = NAN;
    clattn_mpi_call call;
    clattn_mpi_default_call(&call);
    call.shard = c->shard, call.order = c->order, call.scheme = c->scheme;
    call.local_len = mine;
    clattn_mpi_info info;
    const int rc = clattn_mpi_attention(ctx, MPI_COMM_WORLD, &call, s, &opts, lq,
                                        mine ? lk : NULL, mine ? lv : NULL, lo, lse, &info);
    int ok = rc == CLATTN_OK;
    if (!ok)
        fprintf(stderr, "rank %d: %s: %s: %s\n", rank, c->what, clattn_error_name(rc),
                clattn_last_error_detail());
    double tol_abs, tol_rel, worst = 0, err2 = 0, ref2 = 0, worst_lse = 0;
    clattn_tolerance(s->dtype, &tol_abs, &tol_rel);
    for (size_t ch = 0; ok && ch < chunks; ch++)
        for (size_t blk = 0; blk < bh; blk++)
            for (size_t i = 0; i < n[ch]; i++) {
                const size_t lrow = blk * qrows + at[ch] + i, grow = blk * s->q_len + begin[ch] + i;
                for (size_t x = 0; x < dv; x++) {
                    const double got = value(lo, lrow * dv + x, s->dtype), want = ref[grow * dv + x];
                    const double diff = fabs(got - want);
                    worst = diff > worst || isnan(diff) ? diff : worst;
                    err2 += (got - want) * (got - want), ref2 += want * want;
                }
                const double l = ref_lse[grow];
                const double dl = isinf(l) ? (lse[lrow] == l ? 0 : INFINITY) : fabs(lse[lrow] - l);
                worst_lse = dl > worst_lse || isnan(dl) ? dl : worst_lse;
            }
    const double rel = ref2 > 0 ? sqrt(err2 / ref2) : sqrt(err2);
    if (ok && (!(worst <= tol_abs) || !(rel <= tol_rel) || !(worst_lse <= 1e-3))) {
        fprintf(stderr, "rank %d: %s [%s]: max error %.3g, rel_l2 %.3g, LSE %.3g (tolerance "
                "%.3g, %.3g)\n", rank, c->what, info.scheme, worst, rel, worst_lse, tol_abs,
                tol_rel);
        ok = 0;
    }
    /* AUTO's choice between the ring and the all-gather says why, and
     * what it says is what ran (the same on every rank). */
    const int gathered = !strcmp(info.scheme, "allgather");
    if (ok && tokens && c->scheme == CLATTN_MPI_AUTO && ranks > 1 &&
        strncmp(info.note, gathered ? "the all-gather" : "the ring", gathered ? 14 : 8)) {
        fprintf(stderr, "rank %d: %s: AUTO ran %s, its note says \"%s\"\n", rank, c->what,
                info.scheme, info.note);
        ok = 0;
    }
    if (ok && rank == 0)
        printf("ok   %s [%s, %zu calls on rank 0, %d of %d ranks with keys]\n", c->what,
               info.scheme, info.calls, info.ranks_with_keys, info.ranks);
    free(q), free(k), free(v), free(ref), free(ref_lse);
    free(lq), free(lk), free(lv), free(lo), free(lse);
    return ok;
}

#define KEYS CLATTN_MPI_SHARD_KEYS
#define TOKENS CLATTN_MPI_SHARD_TOKENS
#define CONT CLATTN_MPI_CONTIGUOUS
#define ZIG CLATTN_MPI_ZIGZAG
#define BR CLATTN_CAUSAL_BOTTOM_RIGHT
#define TL CLATTN_CAUSAL_TOP_LEFT
#define NOMASK CLATTN_CAUSAL_NONE

static const struct mpi_case cases[] = {
    { "keys: decode fp16, GQA, uneven lengths", { 3, 8, 2, 1, 1001, 64, CLATTN_F16 }, KEYS,
      CONT, CLATTN_MPI_AUTO, UNEVEN, BR, { 1001, 1, 517 }, { 0 }, 1, 0, 0, 0, 0 },
    { "keys: decode fp32, sinks, softcap, a rank with no keys", { 2, 4, 4, 1, 300, 32,
      CLATTN_F32 }, KEYS, CONT, CLATTN_MPI_AUTO, EMPTY, NOMASK, { 0 }, { 0 }, 0, 0, 1, 20.0f, 0 },
    { "keys: chunked prefill fp16, lengths across shards", { 2, 4, 2, 24, 700, 64, CLATTN_F16 },
      KEYS, CONT, CLATTN_MPI_AUTO, UNEVEN, BR, { 700, 350 }, { 24, 10 }, 1, 1, 0, 0, 0 },
    { "keys: decode bf16, d_v 32 of d 64", { 2, 4, 1, 1, 257, 64, CLATTN_BF16 }, KEYS, CONT,
      CLATTN_MPI_AUTO, UNEVEN, BR, { 0 }, { 0 }, 0, 0, 0, 0, 32 },
    { "keys: top-left diagonal through every shard", { 1, 2, 2, 40, 40, 32, CLATTN_F32 }, KEYS,
      CONT, CLATTN_MPI_AUTO, UNEVEN, TL, { 0 }, { 0 }, 0, 0, 1, 0, 0 },
    { "tokens: ring, contiguous, bottom-right fp16, GQA", { 1, 4, 2, 256, 256, 64, CLATTN_F16 },
      TOKENS, CONT, CLATTN_MPI_RING, UNEVEN, BR, { 0 }, { 0 }, 0, 0, 0, 0, 0 },
    { "tokens: ring, zigzag, top-left fp32, kv_lens", { 2, 4, 4, 192, 192, 32, CLATTN_F32 },
      TOKENS, ZIG, CLATTN_MPI_AUTO, EVEN, TL, { 192, 155 }, { 0 }, 1, 0, 0, 0, 0 },
    { "tokens: all-gather, bottom-right fp16, lengths, sinks", { 2, 4, 2, 200, 200, 64,
      CLATTN_F16 }, TOKENS, CONT, CLATTN_MPI_ALLGATHER, EMPTY, BR, { 200, 120 }, { 200, 90 },
      1, 1, 1, 0, 0 },
    { "tokens: ring, zigzag, no mask bf16, d_v 32", { 1, 2, 1, 128, 128, 64, CLATTN_BF16 },
      TOKENS, ZIG, CLATTN_MPI_RING, UNEVEN, NOMASK, { 0 }, { 0 }, 0, 0, 0, 0, 32 },
    { "tokens: all-gather, zigzag, bottom-right fp32, sinks", { 1, 2, 2, 96, 96, 32,
      CLATTN_F32 }, TOKENS, ZIG, CLATTN_MPI_ALLGATHER, UNEVEN, BR, { 0 }, { 0 }, 0, 0, 1, 0, 0 },
};

/* A call every rank must refuse with `want`: `how` spoils one rank's
 * arguments. 1 when this rank got `want`. */
enum spoil { SPOIL_WINDOW, SPOIL_SUM, SPOIL_SHAPE, SPOIL_ODD, SPOIL_NULL_K };

static int refused(enum spoil how, int want, const char *what)
{
    clattn_shape s = { 1, 2, 2, 1, (size_t)(8 * ranks), 32, CLATTN_F32 };
    clattn_mpi_call call;
    clattn_mpi_default_call(&call);
    call.local_len = 8;
    if (how == SPOIL_ODD) {
        call.shard = TOKENS, call.order = ZIG;
        s.q_len = s.kv_len;
        call.local_len = rank == ranks - 1 ? 7 : 8;
        s.kv_len = s.q_len = (size_t)(8 * ranks - 1);
    }
    const size_t rows = s.batch * s.heads * s.q_len;
    float *q = calloc(rows * 32, sizeof *q), *k = calloc(8 * 2 * 32, sizeof *k);
    float *v = calloc(8 * 2 * 32, sizeof *v), *o = calloc(rows * 32, sizeof *o);
    clattn_random_fill(q, rows * 32, CLATTN_F32, 5);
    clattn_random_fill(k, 8 * 2 * 32, CLATTN_F32, 6);
    clattn_random_fill(v, 8 * 2 * 32, CLATTN_F32, 7);
    clattn_options opts;
    clattn_default_options(&opts);
    const int spoiler = ranks - 1;
    if (rank == spoiler) {
        if (how == SPOIL_WINDOW)
            opts.window_left = 4;
        if (how == SPOIL_SUM)
            call.local_len = 9;
        if (how == SPOIL_SHAPE)
            s.head_dim = 16;
    }
    const int rc = clattn_mpi_attention(ctx, MPI_COMM_WORLD, &call, &s, &opts, q,
                                        how == SPOIL_NULL_K && rank == spoiler ? NULL : k, v,
                                        o, NULL, NULL);
    const int ok = rc == want;
    if (!ok)
        fprintf(stderr, "rank %d: %s: got %s (%s), not %s\n", rank, what, clattn_error_name(rc),
                clattn_last_error_detail(), clattn_error_name(want));
    else if (rank == 0)
        printf("ok   refused on every rank: %s (%s)\n", what, clattn_last_error_detail());
    free(q), free(k), free(v), free(o);
    return ok;
}

/* Every rank's verdict: 1 when all passed. */
static int all_ranks(int ok)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    const int rc = clattn_open(&ctx, NULL);
    int mine = rc == CLATTN_ENODEV ? 77 : rc < 0 ? 1 : 0, worst = 0;
    if (rc < 0 && rc != CLATTN_ENODEV)
        fprintf(stderr, "rank %d: clattn_open: %s\n", rank, clattn_last_error_detail());
    MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (worst) {
        if (rank == 0 && worst == 77)
            printf("SKIP: no OpenCL device on a rank\n");
        clattn_close(&ctx);
        MPI_Finalize();
        return worst;
    }
    if (rank == 0)
        printf("%d ranks, device %s\n", ranks, clattn_device_name(ctx));
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        failed += !all_ranks(run_case(&cases[i], 1000 + 10 * i));
    failed += !all_ranks(refused(SPOIL_WINDOW, CLATTN_EUNSUPPORTED, "a window on one rank"));
    failed += !all_ranks(refused(SPOIL_SUM, CLATTN_EINVAL, "lengths that do not add up"));
    failed += !all_ranks(refused(SPOIL_SHAPE, CLATTN_EINVAL, "one rank's head dimension"));
    failed += !all_ranks(refused(SPOIL_ODD, CLATTN_EINVAL, "an odd zigzag length"));
    failed += !all_ranks(refused(SPOIL_NULL_K, CLATTN_EINVAL, "one rank's NULL keys"));
    if (rank == 0)
        printf("%s: %d failed\n", failed ? "FAIL" : "PASS", failed);
    clattn_close(&ctx);
    MPI_Finalize();
    return failed ? 1 : 0;
}
