/* SPDX-License-Identifier: MIT */
/* K/V blocks between ranks while a step computes (see run.h). */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "mpi/run.h"

#define PIECE_BYTES ((size_t)1 << 30)

int transfer_post(struct transfer *t, int send, void *buf, size_t bytes, int peer, int tag,
                  MPI_Comm comm)
{
    const size_t pieces = (bytes + PIECE_BYTES - 1) / PIECE_BYTES;
    if (t->n + pieces > t->cap) {
        const size_t cap = 2 * (t->n + pieces);
        MPI_Request *req = realloc(t->req, cap * sizeof *req);
        if (!req)
            return mpi_fail(CLATTN_ENOMEM, "MPI requests");
        t->req = req, t->cap = cap;
    }
    for (size_t i = 0; i < pieces; i++) {
        const size_t at = i * PIECE_BYTES;
        const int count = (int)(bytes - at < PIECE_BYTES ? bytes - at : PIECE_BYTES);
        /* Tags count pieces from the message's: the pieces of one block
         * match in order whatever the order they complete in. */
        const int piece_tag = tag + (int)i;
        const int rc = send ? MPI_Isend((char *)buf + at, count, MPI_BYTE, peer, piece_tag, comm,
                                        &t->req[t->n])
                            : MPI_Irecv((char *)buf + at, count, MPI_BYTE, peer, piece_tag, comm,
                                        &t->req[t->n]);
        if (rc != MPI_SUCCESS)
            return mpi_fail(CLATTN_EIO, "MPI_I%s of %zu bytes to rank %d: MPI error %d",
                            send ? "send" : "recv", bytes, peer, rc);
        t->n++;
    }
    return CLATTN_OK;
}

struct compute {
    void (*fn)(void *);
    void *arg;
};

static void *compute_thread(void *p)
{
    struct compute *c = p;
    c->fn(c->arg);
    return NULL;
}

void transfer_overlap(struct mpi_run *r, struct transfer *t, void (*fn)(void *), void *arg)
{
    struct compute c = { fn, arg };
    pthread_t thread;
    const int threaded = r->threads && t->n && pthread_create(&thread, NULL, compute_thread,
                                                              &c) == 0;
    if (!threaded) {
        fn(arg);
    } else {
        /* The calling thread drives MPI's progress (a library that
         * progresses messages only inside its calls moves nothing while
         * the compute runs otherwise), sleeping between polls so that it
         * takes little of a core the compute may share. */
        int done = 0;
        const struct timespec nap = { 0, 100000 };
        while (!done) {
            MPI_Testall((int)t->n, t->req, &done, MPI_STATUSES_IGNORE);
            if (!done)
                nanosleep(&nap, NULL);
        }
        pthread_join(thread, NULL);
    }
    if (t->n)
        MPI_Waitall((int)t->n, t->req, MPI_STATUSES_IGNORE);
    free(t->req);
    t->req = NULL, t->n = t->cap = 0;
}
