/* SPDX-License-Identifier: MIT */
/* Whether mpirun started this process among others, and the names of the
 * ways of spreading a call over the ranks (ranks.h). */
#include <stdlib.h>
#include <string.h>

#include "ranks.h"

int cli_ranks_launched(void)
{
    /* Open MPI's, then PMI's (MPICH's Hydra, Slurm), then PMIx's. */
    static const char *const vars[] = { "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE" };
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return atoi(v) > 0 ? atoi(v) : 1;
    }
    return getenv("PMIX_RANK") ? 2 : 1; /* a PMIx launch that does not say its size */
}

int cli_ranks_scheme_of(const char *name, cli_ranks_scheme *out)
{
    static const char *const names[] = { "auto", "keys", "allgather", "ring" };
    for (int i = 0; i < 4; i++)
        if (!name || !strcmp(name, names[i])) {
            *out = name ? (cli_ranks_scheme)i : CLI_RANKS_AUTO;
            return 0;
        }
    return -1;
}

int cli_spread_known(const char *name)
{
    cli_ranks_scheme unused;
    return !name || !strcmp(name, "one") || !strcmp(name, "queries") ||
           cli_ranks_scheme_of(name, &unused) == 0;
}
