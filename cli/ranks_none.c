/* SPDX-License-Identifier: MIT */
/* The ranks of an mpirun launch (ranks.h) in a build without MPI: one
 * process is the only rank, and a launch of several is refused. */
#include <string.h>

#include "cli.h"
#include "ranks.h"

int cli_ranks_begin(int *argc, char ***argv, cli_ranks *r)
{
    (void)argc, (void)argv;
    *r = (cli_ranks){ 0, 1, 0 };
    const int n = cli_ranks_launched();
    if (n < 2)
        return 0;
    cli_error("mpirun started %d processes, but this clattn was built without MPI: install "
              "Open MPI (libopenmpi-dev) and build again to spread a call over ranks", n);
    return 1;
}

void cli_ranks_end(cli_ranks *r)
{
    (void)r;
}

int cli_ranks_status(const cli_ranks *r, int status)
{
    (void)r;
    return status;
}

int cli_ranks_bcast(const cli_ranks *r, int x)
{
    (void)r;
    return x;
}

double cli_ranks_max(const cli_ranks *r, double x)
{
    (void)r;
    return x;
}

void cli_ranks_barrier(const cli_ranks *r)
{
    (void)r;
}

double cli_ranks_peer_bandwidth(const cli_ranks *r)
{
    (void)r;
    return 0;
}

const char *cli_ranks_selector(const cli_ranks *r, const char *list, char *buf, size_t cap)
{
    (void)r, (void)buf, (void)cap;
    return list;
}

int cli_ranks_share_make(const cli_ranks *r, const clattn_shape *s, const clattn_options *o,
                         cli_ranks_scheme scheme, const void *q, const void *k, const void *v,
                         cli_ranks_share *sh)
{
    (void)r, (void)s, (void)o, (void)scheme, (void)q, (void)k, (void)v;
    memset(sh, 0, sizeof *sh);
    return clattn_set_error(CLATTN_EUNSUPPORTED, "this clattn was built without MPI");
}

int cli_ranks_share_run(const cli_ranks *r, clattn_ctx *ctx, cli_ranks_share *sh, char *what,
                        size_t cap, double *seconds)
{
    (void)r, (void)ctx, (void)sh, (void)what, (void)cap, (void)seconds;
    return clattn_set_error(CLATTN_EUNSUPPORTED, "this clattn was built without MPI");
}

int cli_ranks_share_gather(const cli_ranks *r, const cli_ranks_share *sh, void *o, float *lse)
{
    (void)r, (void)sh, (void)o, (void)lse;
    return clattn_set_error(CLATTN_EUNSUPPORTED, "this clattn was built without MPI");
}

void cli_ranks_share_free(cli_ranks_share *sh)
{
    (void)sh;
}
