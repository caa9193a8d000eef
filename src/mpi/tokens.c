/* SPDX-License-Identifier: MIT */
/* Context parallelism: the ranks' tokens of Q, K and V, computed by
 * all-gathering K and V or by passing their blocks round the ring (see
 * clattn/mpi.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spread/rows.h"
#include "mpi/run.h"

/* Bytes of rank i's K block and V block. */
static size_t block_bytes(const struct mpi_run *r, size_t tokens, size_t width)
{
    return r->shape.batch * r->shape.kv_heads * tokens * width * r->e;
}

/* The all-gather: every rank's K and V, each chunk put at its positions
 * of [B, Hkv, N, .] in kall and vall. */
static int gather_all(struct mpi_run *r, const void *k, const void *v, void *kall, void *vall)
{
    const clattn_shape *s = &r->shape;
    const size_t blocks = s->batch * s->kv_heads;
    const void *mine[2] = { k, v };
    void *all[2] = { kall, vall };
    const size_t width[2] = { s->head_dim, r->dv };
    int rc = CLATTN_OK;
    for (int t = 0; t < 2 && rc == CLATTN_OK; t++) {
        /* Counted in rows of one key (d or d_v values): fewer than INT_MAX
         * rows in all, which the entry checked. */
        const size_t rowb = width[t] * r->e;
        MPI_Datatype row;
        MPI_Type_contiguous((int)rowb, MPI_BYTE, &row);
        MPI_Type_commit(&row);
        size_t at = 0;
        for (int i = 0; i < r->ranks; i++) {
            r->counts[i] = (int)(blocks * r->local_len[i]);
            r->displs[i] = (int)at;
            at += blocks * r->local_len[i];
        }
        if (MPI_Allgatherv(mine[t] ? mine[t] : r->gathered, r->counts[r->rank], row,
                           r->gathered, r->counts, r->displs, row, r->comm) != MPI_SUCCESS)
            rc = mpi_fail(CLATTN_EIO, "MPI_Allgatherv of the keys and values failed");
        for (int i = 0; i < r->ranks && rc == CLATTN_OK; i++)
            for (size_t c = 0; c < r->chunks[i].n; c++) {
                const struct chunk *ch = &r->chunks[i].c[c];
                for (size_t b = 0; b < blocks; b++)
                    memcpy((char *)all[t] + (b * s->kv_len + ch->begin) * rowb,
                           r->gathered + ((size_t)r->displs[i] + b * r->local_len[i] + ch->at) *
                                             rowb,
                           ch->len * rowb);
            }
        MPI_Type_free(&row);
    }
    r->info.bytes_sent += (size_t)(r->ranks - 1) *
                          (block_bytes(r, r->local_len[r->rank], s->head_dim) +
                           block_bytes(r, r->local_len[r->rank], r->dv));
    return rc;
}

static int run_allgather(struct mpi_run *r, const void *q, const void *k, const void *v)
{
    const clattn_shape *s = &r->shape;
    const size_t width = s->head_dim > r->dv ? s->head_dim : r->dv;
    void *kall = malloc(block_bytes(r, s->kv_len, s->head_dim) + 1);
    void *vall = malloc(block_bytes(r, s->kv_len, r->dv) + 1);
    r->gathered = malloc(block_bytes(r, s->kv_len, width) + 1);
    r->counts = malloc(2 * (size_t)r->ranks * sizeof *r->counts);
    r->displs = r->counts ? r->counts + r->ranks : NULL;
    int rc = kall && vall && r->gathered && r->counts
                 ? CLATTN_OK : mpi_fail(CLATTN_ENOMEM, "the whole K and V");
    if ((rc = run_agree(r, rc)) == CLATTN_OK && (rc = gather_all(r, k, v, kall, vall)) == 0) {
        const struct chunk whole = { 0, s->kv_len, 0 };
        const struct rank_chunks *mine = &r->chunks[r->rank];
        for (size_t c = 0; c < mine->n && r->rc == CLATTN_OK; c++)
            run_fail(r, run_pair(r, q, r->local_len[r->rank], &mine->c[c], kall, vall,
                                 s->kv_len, &whole),
                     "this rank's queries against the gathered keys");
    }
    free(kall), free(vall), free(r->gathered), free(r->counts);
    r->gathered = NULL, r->counts = r->displs = NULL;
    return rc;
}

/* One ring step's compute: this rank's query chunks against the chunks of
 * the block it holds. */
struct step {
    struct mpi_run *r;
    const void *q, *k, *v;
    int src; /* the rank whose block it is */
};

static void step_compute(void *arg)
{
    struct step *st = arg;
    struct mpi_run *r = st->r;
    const struct rank_chunks *mine = &r->chunks[r->rank], *theirs = &r->chunks[st->src];
    for (size_t i = 0; i < mine->n && r->rc == CLATTN_OK; i++)
        for (size_t j = 0; j < theirs->n && r->rc == CLATTN_OK; j++)
            run_fail(r, run_pair(r, st->q, r->local_len[r->rank], &mine->c[i], st->k, st->v,
                                 r->local_len[st->src], &theirs->c[j]),
                     "a ring step");
}

static int run_ring(struct mpi_run *r, const void *q, const void *k, const void *v)
{
    const clattn_shape *s = &r->shape;
    size_t most = 0;
    for (int i = 0; i < r->ranks; i++)
        most = r->local_len[i] > most ? r->local_len[i] : most;
    const size_t kb = block_bytes(r, most, s->head_dim), vb = block_bytes(r, most, r->dv);
    char *buf = malloc(2 * (kb + vb) + 1);
    int rc = buf ? CLATTN_OK : mpi_fail(CLATTN_ENOMEM, "the ring's two K/V blocks (%zu bytes)",
                                        2 * (kb + vb));
    if ((rc = run_agree(r, rc)) < 0) { /* before any block moves */
        free(buf);
        return rc;
    }
    char *cur_k = buf, *cur_v = buf + kb, *next_k = buf + kb + vb, *next_v = next_k + kb;
    const size_t n = r->local_len[r->rank];
    if (n) {
        memcpy(cur_k, k, block_bytes(r, n, s->head_dim));
        memcpy(cur_v, v, block_bytes(r, n, r->dv));
    }
    const int right = (r->rank + 1) % r->ranks, left = (r->rank + r->ranks - 1) % r->ranks;
    int src = r->rank;
    for (int t = 0; t < r->ranks; t++) {
        struct transfer tr = { 0 };
        if (t + 1 < r->ranks) {
            /* This step's block goes right while the next one comes from
             * the left: the block of rank src - 1. */
            const int next = (src + r->ranks - 1) % r->ranks;
            const size_t held = r->local_len[src], coming = r->local_len[next];
            int prc = transfer_post(&tr, 0, next_k, block_bytes(r, coming, s->head_dim), left,
                                    0, r->comm);
            if (prc == CLATTN_OK)
                prc = transfer_post(&tr, 0, next_v, block_bytes(r, coming, r->dv), left,
                                    1 << 12, r->comm);
            if (prc == CLATTN_OK)
                prc = transfer_post(&tr, 1, cur_k, block_bytes(r, held, s->head_dim), right, 0,
                                    r->comm);
            if (prc == CLATTN_OK)
                prc = transfer_post(&tr, 1, cur_v, block_bytes(r, held, r->dv), right, 1 << 12,
                                    r->comm);
            if (prc < 0 && rc == CLATTN_OK)
                rc = prc;
            r->info.bytes_sent += block_bytes(r, held, s->head_dim) + block_bytes(r, held, r->dv);
        }
        struct step st = { r, q, cur_k, cur_v, src };
        transfer_overlap(r, &tr, step_compute, &st);
        char *tk = cur_k, *tv = cur_v;
        cur_k = next_k, cur_v = next_v, next_k = tk, next_v = tv;
        src = (src + r->ranks - 1) % r->ranks;
    }
    free(buf);
    return rc;
}

int run_tokens(struct mpi_run *r, const void *q, const void *k, const void *v)
{
    const clattn_shape *s = &r->shape;
    const int ring = choose_ring(r);
    int rc;
    snprintf(r->info.scheme, sizeof r->info.scheme, "%s", ring ? "ring" : "allgather");
    const size_t n = r->local_len[r->rank], rows = s->batch * s->heads * n;
    r->acc_rows = n;
    r->acc = malloc(rows * (r->dv + 1) * sizeof *r->acc + 1);
    if ((rc = run_agree(r, r->acc ? CLATTN_OK : mpi_fail(CLATTN_ENOMEM, "the rows of %zu "
                                                         "queries", rows))) < 0)
        return rc;
    rows_clear(r->acc, rows, r->dv);
    return ring ? run_ring(r, q, k, v) : run_allgather(r, q, k, v);
}
