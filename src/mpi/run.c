/* SPDX-License-Identifier: MIT */
/* A rank's pair calls, its failures and its clock (see run.h). */
#include <stdarg.h>
#include <stdio.h>

#include "mpi/run.h"
#include "spread/pairs.h"

int mpi_fail(int code, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return clattn_set_error(code, text);
}

int run_fail(struct mpi_run *r, int rc, const char *what)
{
    if (rc < 0 && r->rc == CLATTN_OK) {
        r->rc = rc;
        snprintf(r->detail, sizeof r->detail, "%s: %s", what, clattn_last_error_detail());
    }
    return rc;
}

int run_agree(struct mpi_run *r, int rc)
{
    int lowest = rc;
    if (MPI_Allreduce(&rc, &lowest, 1, MPI_INT, MPI_MIN, r->comm) != MPI_SUCCESS)
        return mpi_fail(CLATTN_EIO, "MPI_Allreduce of the ranks' status failed");
    if (lowest < 0 && rc == CLATTN_OK) /* another rank's: its detail names it */
        return clattn_set_error(lowest, "");
    return lowest;
}

double run_clock(void)
{
    return pair_clock();
}

int run_pair(struct mpi_run *r, const void *q, size_t qrows, const struct chunk *qc,
             const void *k, const void *v, size_t krows, const struct chunk *kc)
{
    clattn_options lo = r->opts;
    lo.sinks = NULL; /* folded in once the rows are whole */
    struct pair_runner p = { r->ctx, &r->shape, &lo, r->dv, r->e, r->acc, r->acc_rows,
                             r->lens, 0, 0 };
    const int rc = pair_run(&p, q, qrows, qc, k, v, krows, kc);
    r->info.calls += p.calls;
    r->info.compute_seconds += p.compute_seconds;
    return rc;
}
