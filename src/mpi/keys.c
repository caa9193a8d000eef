/* SPDX-License-Identifier: MIT */
/* A KV cache sharded by keys: each rank's partial rows, merged by an
 * MPI_Allreduce whose operation is the exact LSE merge (see clattn/mpi.h). */
#include <limits.h>
#include <stdlib.h>

#include "spread/rows.h"
#include "mpi/run.h"

/* The reduction's operation: rows of d_v + 1 floats (the datatype is one
 * row, which tells d_v), merged pairwise; the merge commutes. */
static void merge_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    int bytes = 0;
    MPI_Type_size(*type, &bytes);
    rows_merge(inout, in, (size_t)*len, (size_t)bytes / sizeof(float) - 1);
}

/* Every rank's accumulator merged into every rank's, in pieces of at most
 * INT_MAX rows. */
static int allreduce_rows(struct mpi_run *r, size_t rows)
{
    MPI_Datatype row;
    MPI_Op op;
    if (MPI_Type_contiguous((int)(r->dv + 1), MPI_FLOAT, &row) != MPI_SUCCESS)
        return mpi_fail(CLATTN_EIO, "MPI_Type_contiguous failed");
    MPI_Type_commit(&row);
    MPI_Op_create(merge_op, 1, &op);
    int rc = CLATTN_OK;
    for (size_t at = 0; at < rows && rc == CLATTN_OK; at += INT_MAX) {
        const int n = (int)(rows - at < INT_MAX ? rows - at : INT_MAX);
        if (MPI_Allreduce(MPI_IN_PLACE, r->acc + at * (r->dv + 1), n, row, op, r->comm) !=
            MPI_SUCCESS)
            rc = mpi_fail(CLATTN_EIO, "MPI_Allreduce of the partial rows failed");
    }
    MPI_Op_free(&op);
    MPI_Type_free(&row);
    return rc;
}

int run_keys(struct mpi_run *r, const void *q, const void *k, const void *v)
{
    const clattn_shape *s = &r->shape;
    const struct chunk queries = { 0, s->q_len, 0 };
    size_t begin = 0, mine_begin = 0;
    for (int i = 0; i < r->ranks; i++) {
        if (i == r->rank)
            mine_begin = begin;
        begin += r->local_len[i];
    }
    r->acc_rows = s->q_len;
    const size_t rows = s->batch * s->heads * s->q_len;
    r->acc = malloc(rows * (r->dv + 1) * sizeof *r->acc + 1);
    int rc = run_agree(r, r->acc ? CLATTN_OK : mpi_fail(CLATTN_ENOMEM, "the rows of %zu "
                                                        "queries", rows));
    if (rc < 0)
        return rc;
    rows_clear(r->acc, rows, r->dv);
    const size_t n = r->local_len[r->rank];
    if (n) {
        const struct chunk kc = { mine_begin, n, 0 };
        run_fail(r, run_pair(r, q, s->q_len, &queries, k, v, n, &kc), "this rank's keys");
    }
    /* Every rank joins the reduction, a failed one too: none is left waiting. */
    return allreduce_rows(r, rows);
}
