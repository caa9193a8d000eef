/* SPDX-License-Identifier: MIT */
/* The ranks of an mpirun launch (ranks.h), with libclattn_mpi. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "clattn/mpi.h"
#include "cli.h"
#include "ranks.h"

int cli_ranks_begin(int *argc, char ***argv, cli_ranks *r)
{
    *r = (cli_ranks){ 0, 1, 0 };
    if (cli_ranks_launched() < 2)
        return 0;
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        cli_error("MPI_Init_thread failed");
        return 1;
    }
    r->started = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &r->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &r->ranks);
    return 0;
}

void cli_ranks_end(cli_ranks *r)
{
    if (r->started)
        MPI_Finalize();
    r->started = 0;
}

int cli_ranks_status(const cli_ranks *r, int status)
{
    if (r->ranks > 1)
        MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return status;
}

int cli_ranks_bcast(const cli_ranks *r, int x)
{
    if (r->ranks > 1)
        MPI_Bcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return x;
}

double cli_ranks_max(const cli_ranks *r, double x)
{
    if (r->ranks > 1)
        MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return x;
}

void cli_ranks_barrier(const cli_ranks *r)
{
    if (r->ranks > 1)
        MPI_Barrier(MPI_COMM_WORLD);
}

double cli_ranks_peer_bandwidth(const cli_ranks *r)
{
    if (r->ranks < 2)
        return 0;
    const int bytes = 16 << 20;
    char *buf = malloc(2 * (size_t)bytes);
    int ok = buf != NULL;
    if (buf)
        memset(buf, 1, 2 * (size_t)bytes); /* its pages touched before the clock */
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    double best = 0;
    for (int i = 0; ok && i < 3; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        if (r->rank < 2)
            MPI_Sendrecv(buf, bytes, MPI_BYTE, 1 - r->rank, 7, buf + bytes, bytes, MPI_BYTE,
                         1 - r->rank, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        const double t = cli_ranks_max(r, MPI_Wtime() - t0);
        if (t > 0 && (best == 0 || bytes / t > best))
            best = bytes / t;
    }
    free(buf);
    return best;
}

const char *cli_ranks_selector(const cli_ranks *r, const char *list, char *buf, size_t cap)
{
    if (!list || !strchr(list, ','))
        return list;
    const size_t n = cli_list_items(list);
    size_t want = (size_t)r->rank % (n ? n : 1);
    const char *p = list;
    while (want-- && strchr(p, ','))
        p = strchr(p, ',') + 1;
    const size_t len = strcspn(p, ",");
    snprintf(buf, cap, "%.*s", (int)(len < cap ? len : cap - 1), p);
    return buf;
}

/* ---------------------------------------------------------------- shares */

/* The tokens' run `c` of rank `owner` (zigzag: c 0 is chunk owner, c 1
 * chunk 2P-1-owner): its first position in the sequence, its first row in
 * the rank's tensors, and its length. */
struct run {
    size_t begin, at, len;
};

static size_t token_runs(const cli_ranks_share *sh, int ranks, int owner, struct run *out)
{
    const size_t p = (size_t)ranks;
    if (!sh->zigzag) {
        size_t begin = 0;
        for (int i = 0; i < owner; i++)
            begin += sh->lens[i];
        out[0] = (struct run){ begin, 0, sh->lens[owner] };
        return sh->lens[owner] ? 1 : 0;
    }
    /* Chunk i (of 2P) belongs to rank i for i < P, else to rank 2P-1-i,
     * and is half of its owner's tokens. */
    size_t begin = 0, n = 0;
    for (size_t i = 0; i < 2 * p; i++) {
        const size_t who = i < p ? i : 2 * p - 1 - i, len = sh->lens[who] / 2;
        if (who == (size_t)owner && len)
            out[n++] = (struct run){ begin, i < p ? 0 : len, len };
        begin += len;
    }
    return n;
}

/* Rows [run] of every (b, head) block of a [blocks, n, width] tensor into
 * (to_local) or out of a rank's [blocks, local, width] tensor. */
static void copy_runs(char *whole, char *local, size_t blocks, size_t n, size_t local_n,
                      size_t row_bytes, const struct run *runs, size_t n_runs, int to_local)
{
    for (size_t b = 0; b < blocks; b++)
        for (size_t i = 0; i < n_runs; i++) {
            char *w = whole + (b * n + runs[i].begin) * row_bytes;
            char *l = local + (b * local_n + runs[i].at) * row_bytes;
            if (to_local)
                memcpy(l, w, runs[i].len * row_bytes);
            else
                memcpy(w, l, runs[i].len * row_bytes);
        }
}

int cli_ranks_share_make(const cli_ranks *r, const clattn_shape *s, const clattn_options *o,
                         cli_ranks_scheme scheme, const void *q, const void *k, const void *v,
                         cli_ranks_share *sh)
{
    memset(sh, 0, sizeof *sh);
    sh->shape = *s;
    sh->opts = *o;
    sh->scheme = scheme;
    sh->tokens = scheme == CLI_RANKS_AUTO ? s->q_len > 1 && s->q_len == s->kv_len
                                          : scheme != CLI_RANKS_KEYS;
    if (sh->tokens && s->q_len != s->kv_len)
        return clattn_set_error(CLATTN_EUNSUPPORTED, "spread by tokens over the ranks, the "
                                "call's queries and keys are the same tokens (Nq = Nk)");
    const size_t n = s->kv_len, p = (size_t)r->ranks;
    const size_t dv = o->head_dim_v ? o->head_dim_v : s->head_dim;
    const size_t e = clattn_dtype_size(s->dtype);
    sh->lens = calloc(p, sizeof *sh->lens);
    if (!sh->lens)
        return clattn_set_error(CLATTN_ENOMEM, "the ranks' lengths");
    /* Even shares; zigzag (a causal mask's work evened out) in pairs of
     * tokens, so that each rank's two chunks are of one length. */
    sh->zigzag = sh->tokens && o->causal != CLATTN_CAUSAL_NONE && n % 2 == 0;
    const size_t unit = sh->zigzag ? 2 : 1, units = n / unit;
    for (size_t i = 0; i < p; i++)
        sh->lens[i] = unit * (units / p + (i < units % p));
    const size_t mine = sh->local_len = sh->lens[r->rank];
    const size_t bh = s->batch * s->heads, bk = s->batch * s->kv_heads;
    const size_t qrows = sh->tokens ? mine : s->q_len;
    sh->q = sh->tokens ? malloc(bh * mine * s->head_dim * e + 1) : NULL;
    sh->k = malloc(bk * mine * s->head_dim * e + 1);
    sh->v = malloc(bk * mine * dv * e + 1);
    sh->o = malloc(bh * qrows * dv * e + 1);
    sh->lse = malloc(bh * qrows * sizeof(float) + 1);
    if ((sh->tokens && !sh->q) || !sh->k || !sh->v || !sh->o || !sh->lse)
        return clattn_set_error(CLATTN_ENOMEM, "this rank's share of the call");
    struct run runs[2];
    const size_t nr = sh->tokens ? token_runs(sh, r->ranks, r->rank, runs) : 0;
    if (!sh->tokens) { /* keys [a, a + mine) of every sequence */
        size_t a = 0;
        for (int i = 0; i < r->rank; i++)
            a += sh->lens[i];
        runs[0] = (struct run){ a, 0, mine };
    }
    const size_t kr = sh->tokens ? nr : 1;
    copy_runs((char *)k, sh->k, bk, n, mine, s->head_dim * e, runs, kr, 1);
    copy_runs((char *)v, sh->v, bk, n, mine, dv * e, runs, kr, 1);
    if (sh->tokens)
        copy_runs((char *)q, sh->q, bh, n, mine, s->head_dim * e, runs, nr, 1);
    else
        sh->q = (void *)q; /* every rank's queries are the call's */
    return CLATTN_OK;
}

int cli_ranks_share_run(const cli_ranks *r, clattn_ctx *ctx, cli_ranks_share *sh, char *what,
                        size_t cap, double *seconds)
{
    clattn_mpi_call call;
    clattn_mpi_default_call(&call);
    call.shard = sh->tokens ? CLATTN_MPI_SHARD_TOKENS : CLATTN_MPI_SHARD_KEYS;
    call.order = sh->zigzag ? CLATTN_MPI_ZIGZAG : CLATTN_MPI_CONTIGUOUS;
    call.scheme = sh->scheme == CLI_RANKS_RING ? CLATTN_MPI_RING
                  : sh->scheme == CLI_RANKS_ALLGATHER ? CLATTN_MPI_ALLGATHER : CLATTN_MPI_AUTO;
    call.local_len = sh->local_len;
    clattn_mpi_info info;
    memset(&info, 0, sizeof info);
    const int rc = clattn_mpi_attention(ctx, MPI_COMM_WORLD, &call, &sh->shape, &sh->opts, sh->q,
                                        sh->local_len ? sh->k : NULL,
                                        sh->local_len ? sh->v : NULL, sh->o, sh->lse, &info);
    if (what)
        snprintf(what, cap, "%s", info.scheme);
    if (seconds)
        *seconds = cli_ranks_max(r, info.seconds);
    return rc;
}

int cli_ranks_share_gather(const cli_ranks *r, const cli_ranks_share *sh, void *o, float *lse)
{
    const clattn_shape *s = &sh->shape;
    const size_t dv = sh->opts.head_dim_v ? sh->opts.head_dim_v : s->head_dim;
    const size_t e = clattn_dtype_size(s->dtype), bh = s->batch * s->heads;
    if (!sh->tokens) { /* every rank holds the whole result */
        if (r->rank == 0) {
            memcpy(o, sh->o, bh * s->q_len * dv * e);
            if (lse)
                memcpy(lse, sh->lse, bh * s->q_len * sizeof *lse);
        }
        return CLATTN_OK;
    }
    if (bh * s->q_len > INT_MAX)
        return clattn_set_error(CLATTN_EUNSUPPORTED, "more output rows than an MPI count "
                                "holds");
    int *counts = calloc(2 * (size_t)r->ranks, sizeof *counts);
    char *all_o = r->rank == 0 ? malloc(bh * s->q_len * dv * e + 1) : NULL;
    float *all_lse = r->rank == 0 ? malloc(bh * s->q_len * sizeof *all_lse + 1) : NULL;
    int ok = counts && (r->rank || (all_o && all_lse));
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    int rc = CLATTN_OK;
    if (!ok) {
        rc = clattn_set_error(CLATTN_ENOMEM, "the gathered output");
    } else {
        int *displs = counts + r->ranks;
        for (int i = 0, at = 0; i < r->ranks; i++) {
            counts[i] = (int)(bh * sh->lens[i]);
            displs[i] = at;
            at += counts[i];
        }
        MPI_Datatype row;
        MPI_Type_contiguous((int)(dv * e), MPI_BYTE, &row);
        MPI_Type_commit(&row);
        MPI_Gatherv(sh->o, counts[r->rank], row, all_o, counts, displs, row, 0, MPI_COMM_WORLD);
        MPI_Type_free(&row);
        MPI_Gatherv(sh->lse, counts[r->rank], MPI_FLOAT, all_lse, counts, displs, MPI_FLOAT, 0,
                    MPI_COMM_WORLD);
        for (int i = 0; r->rank == 0 && i < r->ranks; i++) {
            struct run runs[2];
            const size_t nr = token_runs(sh, r->ranks, i, runs);
            copy_runs(o, all_o + (size_t)displs[i] * dv * e, bh, s->q_len, sh->lens[i], dv * e,
                      runs, nr, 0);
            if (lse)
                copy_runs((char *)lse, (char *)(all_lse + displs[i]), bh, s->q_len, sh->lens[i],
                          sizeof *lse, runs, nr, 0);
        }
    }
    free(counts), free(all_o), free(all_lse);
    return rc;
}

void cli_ranks_share_free(cli_ranks_share *sh)
{
    if (sh->tokens)
        free(sh->q);
    free(sh->k), free(sh->v), free(sh->o), free(sh->lse), free(sh->lens);
    memset(sh, 0, sizeof *sh);
}
