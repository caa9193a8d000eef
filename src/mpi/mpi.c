/* SPDX-License-Identifier: MIT */
/* clattn_mpi_attention: the call's arguments checked on every rank and
 * agreed among them, the way of spreading it run, the rows put together
 * and every rank's outcome made everyone's (see clattn/mpi.h). */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spread/rows.h"
#include "mpi/run.h"

void clattn_mpi_default_call(clattn_mpi_call *call)
{
    if (!call)
        return;
    memset(call, 0, sizeof *call);
    call->struct_size = sizeof *call;
}

/* What each rank tells the others before any tensor moves, and after. */
struct status {
    int32_t rc;
    int32_t unused;
    uint64_t local_len;
    uint64_t signature[12]; /* the shape and options every rank must share */
    char detail[200];
};

static int layout_given(const clattn_layout *l)
{
    return l->batch_stride || l->head_stride || l->token_stride || l->byte_offset;
}

/* What the ranks' calls cannot split: refused with the reason. */
static int unsupported(const clattn_options *o)
{
    const char *what = NULL;
    if (o->window_left >= 0 || o->window_right >= 0 || o->alibi_slopes)
        what = "a sliding window or ALiBi";
    else if (o->mask.kind != CLATTN_MASK_NONE || o->score_mod || o->mask_mod)
        what = "a mask tensor or a score or mask snippet";
    else if (o->k_type != CLATTN_KV_DTYPE || o->v_type != CLATTN_KV_DTYPE || o->page_size ||
             o->cu_seqlens_q || o->cu_seqlens_k)
        what = "a KV cache form (quantized, paged or packed)";
    else if (layout_given(&o->q_layout) || layout_given(&o->k_layout) ||
             layout_given(&o->v_layout) || layout_given(&o->o_layout))
        what = "a tensor layout (the ranks' tensors are contiguous)";
    if (!what)
        return CLATTN_OK;
    return mpi_fail(CLATTN_EUNSUPPORTED, "clattn_mpi_attention: %s is not spread over ranks: "
                    "run it on one device", what);
}

/* Whether [a, a + na) and [b, b + nb) share a byte. */
static int overlap(const void *a, size_t na, const void *b, size_t nb)
{
    const uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return a && b && na && nb && x < y + nb && y < x + na;
}

/* This rank's arguments. */
static int check_local(struct mpi_run *r, const clattn_mpi_call *call, const clattn_shape *s,
                       const clattn_options *opts, const void *q, const void *k,
                       const void *v, const void *o, const float *lse)
{
    if (!r->ctx || !call || !s || !opts || !q || !o)
        return mpi_fail(CLATTN_EINVAL, "clattn_mpi_attention: invalid argument: ctx, call, "
                        "shape, opts, q and o are required");
    if (call->struct_size != sizeof *call)
        return mpi_fail(CLATTN_EINVAL, "clattn_mpi_attention: call->struct_size %zu is not "
                        "%zu (set it up with clattn_mpi_default_call)", call->struct_size,
                        sizeof *call);
    r->call = *call;
    if ((unsigned)call->shard > CLATTN_MPI_SHARD_TOKENS ||
        (unsigned)call->order > CLATTN_MPI_ZIGZAG || (unsigned)call->scheme > CLATTN_MPI_RING)
        return mpi_fail(CLATTN_EINVAL, "clattn_mpi_attention: shard %d, order %d or scheme "
                        "%d unknown", (int)call->shard, (int)call->order, (int)call->scheme);
    int rc = clattn_shape_check(s);
    if (rc < 0)
        return rc;
    r->shape = *s;
    if (opts->struct_size == 0 || opts->struct_size > sizeof r->opts)
        return mpi_fail(CLATTN_EINVAL, "clattn_mpi_attention: opts->struct_size %zu (set the "
                        "options up with clattn_default_options)", opts->struct_size);
    clattn_default_options(&r->opts);
    memcpy(&r->opts, opts, opts->struct_size);
    r->opts.struct_size = sizeof r->opts;
    if ((rc = unsupported(&r->opts)) < 0)
        return rc;
    if (r->opts.head_dim_v > 512)
        return mpi_fail(CLATTN_EINVAL, "clattn_mpi_attention: head_dim_v %zu above 512",
                        r->opts.head_dim_v);
    r->dv = r->opts.head_dim_v ? r->opts.head_dim_v : s->head_dim;
    r->e = clattn_dtype_size(s->dtype);
    if (call->shard == CLATTN_MPI_SHARD_TOKENS && s->q_len != s->kv_len)
        return mpi_fail(CLATTN_EINVAL, "clattn_mpi_attention: sharded by tokens, the call's "
                        "queries and keys are the same %zu tokens (q_len %zu)", s->kv_len,
                        s->q_len);
    const size_t n = call->local_len;
    if (n > s->kv_len)
        return mpi_fail(CLATTN_EINVAL, "clattn_mpi_attention: local_len %zu past the call's "
                        "%zu keys", n, s->kv_len);
    if (n && (!k || !v))
        return mpi_fail(CLATTN_EINVAL, "clattn_mpi_attention: this rank holds %zu keys: k "
                        "and v are required", n);
    const size_t qrows = call->shard == CLATTN_MPI_SHARD_TOKENS ? n : s->q_len;
    const size_t bh = s->batch * s->heads, bk = s->batch * s->kv_heads;
    const size_t qb = bh * qrows * s->head_dim * r->e, ob = bh * qrows * r->dv * r->e;
    const size_t kb = bk * n * s->head_dim * r->e, vb = bk * n * r->dv * r->e;
    const size_t lb = bh * qrows * sizeof(float);
    if (overlap(o, ob, q, qb) || overlap(o, ob, k, kb) || overlap(o, ob, v, vb) ||
        overlap(lse, lb, q, qb) || overlap(lse, lb, k, kb) || overlap(lse, lb, v, vb) ||
        overlap(lse, lb, o, ob))
        return mpi_fail(CLATTN_EINVAL, "clattn_mpi_attention: o or lse shares memory with "
                        "an input or with each other");
    if (bk * s->kv_len > INT_MAX)
        return mpi_fail(CLATTN_EUNSUPPORTED, "clattn_mpi_attention: %zu key rows in all, past "
                        "an MPI count", bk * s->kv_len);
    return CLATTN_OK;
}

static void signature(const struct mpi_run *r, const clattn_mpi_call *call, uint64_t *sig)
{
    const clattn_shape *s = &r->shape;
    const uint64_t v[12] = { s->batch, s->heads, s->kv_heads, s->q_len, s->kv_len,
                             s->head_dim, (uint64_t)s->dtype, r->dv,
                             call ? (uint64_t)call->shard : 0, call ? (uint64_t)call->order : 0,
                             call ? (uint64_t)call->scheme : 0, (uint64_t)r->opts.causal };
    memcpy(sig, v, sizeof v);
}

/* Every rank's status made everyone's: the first failing rank's code
 * (its detail, naming it), else 0. */
static int agree_status(struct mpi_run *r, int rc, struct status *all)
{
    struct status mine;
    memset(&mine, 0, sizeof mine);
    mine.rc = rc;
    mine.local_len = r->call.local_len;
    signature(r, &r->call, mine.signature);
    snprintf(mine.detail, sizeof mine.detail, "%s", rc < 0 ? clattn_last_error_detail() : "");
    if (MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all, sizeof mine, MPI_BYTE, r->comm) !=
        MPI_SUCCESS)
        return mpi_fail(CLATTN_EIO, "MPI_Allgather of the ranks' status failed");
    /* A rank that only learned of another's failure (run_agree) has no
     * detail of its own: the first rank with one names the cause. */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < r->ranks; i++)
            if (all[i].rc < 0 && (pass || all[i].detail[0]))
                return mpi_fail(all[i].rc, "rank %d of %d: %s", i, r->ranks, all[i].detail);
    return CLATTN_OK;
}

/* The agreed lengths and shape: the same check on every rank. */
static int check_agreed(struct mpi_run *r, const struct status *all)
{
    const clattn_shape *s = &r->shape;
    size_t sum = 0;
    for (int i = 0; i < r->ranks; i++) {
        if (memcmp(all[i].signature, all[0].signature, sizeof all[0].signature))
            return mpi_fail(CLATTN_EINVAL, "clattn_mpi_attention: rank %d's shape, options or "
                            "call differ from rank 0's", i);
        r->local_len[i] = (size_t)all[i].local_len;
        sum += r->local_len[i];
    }
    if (sum != s->kv_len)
        return mpi_fail(CLATTN_EINVAL, "clattn_mpi_attention: the ranks hold %zu %s in all, "
                        "the call's shape %zu", sum, r->call.shard == CLATTN_MPI_SHARD_KEYS ?
                        "keys" : "tokens", s->kv_len);
    for (int i = 0; i < r->ranks; i++)
        r->info.ranks_with_keys += r->local_len[i] > 0;
    const int zigzag = r->call.shard == CLATTN_MPI_SHARD_TOKENS &&
                       r->call.order == CLATTN_MPI_ZIGZAG;
    for (int i = 0; i < r->ranks; i++)
        if (zigzag && r->local_len[i] % 2)
            return mpi_fail(CLATTN_EINVAL, "clattn_mpi_attention: in a zigzag order each rank "
                            "holds two chunks of half its tokens: rank %d's %zu is odd", i,
                            r->local_len[i]);
    for (int i = 0; i < r->ranks; i++)
        shard_chunks(r->local_len, (size_t)r->ranks, zigzag, (size_t)i, &r->chunks[i]);
    return CLATTN_OK;
}

/* The finished rows out: sinks folded in, O and LSE in the caller's arrays. */
static void finish(struct mpi_run *r, void *o, float *lse)
{
    const clattn_shape *s = &r->shape;
    const size_t rows = s->batch * s->heads * r->acc_rows;
    if (r->opts.sinks) {
        size_t *position = malloc(r->acc_rows * sizeof *position + 1);
        if (!position) {
            run_fail(r, mpi_fail(CLATTN_ENOMEM, "the rows' positions"), "sinks");
            return;
        }
        if (r->call.shard == CLATTN_MPI_SHARD_KEYS) {
            for (size_t i = 0; i < r->acc_rows; i++)
                position[i] = i;
        } else {
            const struct rank_chunks *mine = &r->chunks[r->rank];
            for (size_t c = 0; c < mine->n; c++)
                for (size_t i = 0; i < mine->c[c].len; i++)
                    position[mine->c[c].at + i] = mine->c[c].begin + i;
        }
        rows_fold_sinks(r->acc, r->dv, s->batch, s->heads, r->acc_rows, position,
                        r->opts.sinks, r->opts.q_lens, s->q_len);
        free(position);
    }
    rows_store(r->acc, rows, r->dv, s->dtype, o, lse);
}

static void run_free(struct mpi_run *r)
{
    free(r->local_len), free(r->chunks), free(r->lens), free(r->acc);
}

int clattn_mpi_attention(clattn_ctx *ctx, MPI_Comm comm, const clattn_mpi_call *call,
                         const clattn_shape *shape, const clattn_options *opts, const void *q,
                         const void *k, const void *v, void *o, float *lse,
                         clattn_mpi_info *info)
{
    clattn_set_error(CLATTN_OK, NULL);
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized || comm == MPI_COMM_NULL)
        return mpi_fail(CLATTN_EINVAL, "clattn_mpi_attention: MPI is not initialised, or "
                        "comm is MPI_COMM_NULL");
    const double t0 = run_clock();
    struct mpi_run r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.caller = comm;
    /* A communicator of the call's own: its messages never meet the
     * caller's. */
    if (MPI_Comm_dup(comm, &r.comm) != MPI_SUCCESS)
        return mpi_fail(CLATTN_EIO, "MPI_Comm_dup failed");
    MPI_Comm_rank(r.comm, &r.rank);
    MPI_Comm_size(r.comm, &r.ranks);
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    r.threads = level >= MPI_THREAD_FUNNELED;
    snprintf(r.info.scheme, sizeof r.info.scheme, "keys");
    r.info.ranks = r.ranks;

    int rc = check_local(&r, call, shape, opts, q, k, v, o, lse);
    const size_t batch = rc == CLATTN_OK ? shape->batch : 1;
    r.local_len = calloc((size_t)r.ranks, sizeof *r.local_len);
    r.chunks = calloc((size_t)r.ranks, sizeof *r.chunks);
    r.lens = calloc(7 * batch, sizeof *r.lens);
    struct status *all = calloc((size_t)r.ranks, sizeof *all);
    if (rc == CLATTN_OK && (!r.local_len || !r.chunks || !r.lens || !all))
        rc = mpi_fail(CLATTN_ENOMEM, "clattn_mpi_attention: the ranks' lengths");
    if (!all) { /* nothing to agree with: every other rank fails in MPI too */
        run_free(&r);
        MPI_Comm_free(&r.comm);
        return rc;
    }
    rc = agree_status(&r, rc, all);
    if (rc == CLATTN_OK)
        rc = check_agreed(&r, all);
    if (rc == CLATTN_OK) {
        rc = r.call.shard == CLATTN_MPI_SHARD_KEYS ? run_keys(&r, q, k, v)
                                                     : run_tokens(&r, q, k, v);
        /* A failure inside the steps (a device's, kept in r.rc) or of the
         * scheme itself, every rank's made everyone's. */
        if (rc == CLATTN_OK && r.rc < 0)
            rc = clattn_set_error(r.rc, r.detail);
        if (rc == CLATTN_OK)
            finish(&r, o, lse);
        if (rc == CLATTN_OK && r.rc < 0)
            rc = clattn_set_error(r.rc, r.detail);
        rc = agree_status(&r, rc, all);
    }
    r.info.seconds = run_clock() - t0;
    if (info)
        *info = r.info;
    free(all);
    run_free(&r);
    MPI_Comm_free(&r.comm);
    return rc;
}
