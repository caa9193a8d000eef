/* SPDX-License-Identifier: MIT */
/*
 * One rank's part of a clattn_mpi_attention call: what every rank knows
 * once the call's arguments are agreed (the shape, the options, every
 * rank's length), and the pieces the two ways of spreading the call
 * share: a pair of chunks computed into the rank's fp32 accumulator, the
 * K/V blocks moved between ranks while a step computes.
 */
#ifndef CLATTN_SRC_MPI_RUN_H
#define CLATTN_SRC_MPI_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "clattn/mpi.h"
#include "spread/shard.h"

struct mpi_run {
    clattn_ctx *ctx;
    MPI_Comm comm;            /* the call's own (a duplicate of the caller's) */
    MPI_Comm caller;          /* the caller's, which keeps the measured link */
    int rank, ranks;
    int threads;              /* the MPI library lets a second thread compute */
    clattn_mpi_call call;
    clattn_shape shape;       /* the whole call's */
    clattn_options opts;      /* the caller's, resolved */
    size_t dv, e;
    size_t *local_len;        /* [ranks] */
    struct rank_chunks *chunks; /* [ranks] (TOKENS) */
    uint32_t *lens;           /* [7 B]: one pair's lengths (shard_pair's arrays) */
    float *acc;               /* this rank's rows: [B, H, rows, dv + 1] */
    size_t acc_rows;          /* rows per (b, h) */
    char *gathered;           /* the all-gather's receive buffer */
    int *counts, *displs;     /* [ranks] each, its counts */
    int rc;                   /* the first failure on this rank */
    char detail[256];
    clattn_mpi_info info;
};

/* Records the detail for clattn_last_error_detail (clattn_set_error) and
 * returns code. */
int mpi_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The first failure kept (with the thread's clattn detail when rc came
 * from a clattn call): every later step still runs its messages. */
int run_fail(struct mpi_run *r, int rc, const char *what);

/* Queries qc of `q` ([B, H, qrows, d], rows qc->at...) against keys kc of
 * `k`, `v` ([B, Hkv, krows, d], [B, Hkv, krows, d_v]), merged into the
 * accumulator at qc's rows: the calls shard_pair gives (none where the
 * mask leaves the pair empty). */
int run_pair(struct mpi_run *r, const void *q, size_t qrows, const struct chunk *qc,
             const void *k, const void *v, size_t krows, const struct chunk *kc);

/* The lowest of every rank's rc (collective): a rank that is about to
 * exchange blocks learns that another could not, and none waits for a
 * message that will not come. */
int run_agree(struct mpi_run *r, int rc);

double run_clock(void);

/* Whether a call sharded by tokens takes the ring (else the all-gather):
 * the caller's scheme, or AUTO's from the model (choose.c; collective,
 * the same on every rank; the reason in r->info.note). */
int choose_ring(struct mpi_run *r);

/* The two ways of spreading a call. */
int run_keys(struct mpi_run *r, const void *q, const void *k, const void *v);
int run_tokens(struct mpi_run *r, const void *q, const void *k, const void *v);

/* Bytes in messages of at most 1 GiB each (MPI counts are int): posted,
 * then completed by transport_wait. */
struct transfer {
    MPI_Request *req;
    size_t n, cap;
};
int transfer_post(struct transfer *t, int send, void *buf, size_t bytes, int peer, int tag,
                  MPI_Comm comm);
/* Waits for every posted message while fn(arg) computes (in a thread of
 * its own when r->threads, else first); frees the requests. */
void transfer_overlap(struct mpi_run *r, struct transfer *t, void (*fn)(void *), void *arg);

#endif
