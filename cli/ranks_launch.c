/* SPDX-License-Identifier: MIT */
/* Whether mpirun started this process among others (ranks.h). */
#include <stdlib.h>

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
