/* SPDX-License-Identifier: MIT */
/*
 * The ranks of an mpirun launch, for `clattn run` and `clattn bench`.
 * Started by mpirun (or mpiexec) as several processes, each rank opens its
 * own device and one attention call is spread over the ranks through
 * libclattn_mpi (clattn/mpi.h); rank 0 alone prints and writes. A launch
 * is recognised by the launcher's environment (OMPI_COMM_WORLD_SIZE,
 * PMI_SIZE, PMIX_RANK), so that a plain run never starts MPI. Without
 * MPI at build time (ranks_none.c) a launch of several ranks is an error.
 */
#ifndef CLATTN_TOOLS_RANKS_H
#define CLATTN_TOOLS_RANKS_H

#include <stddef.h>

#include "clattn/clattn.h"

typedef struct cli_ranks {
    int rank, ranks; /* 0 and 1 outside mpirun */
    int started;     /* MPI was initialised here */
} cli_ranks;

/* How the call is spread (clattn_mpi_call's shard and scheme). */
typedef enum cli_ranks_scheme {
    CLI_RANKS_AUTO = 0, /* keys for Nq = 1 or Nq != Nk, else tokens, AUTO's scheme */
    CLI_RANKS_KEYS,
    CLI_RANKS_ALLGATHER,
    CLI_RANKS_RING,
} cli_ranks_scheme;

/* The processes the launcher started (1 outside mpirun). */
int cli_ranks_launched(void);

/* Whether `name` is a --spread scheme of a group or of the ranks. */
int cli_spread_known(const char *name);

/* --spread under mpirun: "auto" (or NULL), "keys", "allgather" or "ring";
 * -1 for another name. */
int cli_ranks_scheme_of(const char *name, cli_ranks_scheme *out);

/* Starts MPI when launched by mpirun with several processes: 0, or 1
 * after printing why it cannot (a build without MPI, MPI_Init failing). */
int cli_ranks_begin(int *argc, char ***argv, cli_ranks *r);
void cli_ranks_end(cli_ranks *r);

/* The highest of every rank's status, on every rank (collective). */
int cli_ranks_status(const cli_ranks *r, int status);
/* Rank 0's x on every rank (collective). */
int cli_ranks_bcast(const cli_ranks *r, int x);
/* The largest of every rank's x, on every rank (collective). */
double cli_ranks_max(const cli_ranks *r, double x);
void cli_ranks_barrier(const cli_ranks *r);
/* Bytes per second between ranks 0 and 1: the best of three exchanges of
 * 16 MiB each way (collective; 0 on one rank or when it cannot). */
double cli_ranks_peer_bandwidth(const cli_ranks *r);

/* This rank's device from --device: a comma-separated list gives rank r
 * its (r mod count)-th selector, else every rank the one given (NULL: the
 * default). */
const char *cli_ranks_selector(const cli_ranks *r, const char *list, char *buf, size_t cap);

/* One call's share on this rank: its slices of the whole call's host
 * arrays (every rank holds the same whole arrays), and its outputs. */
typedef struct cli_ranks_share {
    int tokens;             /* sharded by tokens, else by keys */
    int zigzag;             /* tokens in a zigzag order (causal) */
    cli_ranks_scheme scheme;
    size_t local_len;       /* this rank's keys or tokens */
    size_t *lens;           /* [ranks] every rank's */
    void *q, *k, *v, *o;    /* the slices, and the share's O */
    float *lse;
    clattn_shape shape;
    clattn_options opts;
} cli_ranks_share;

/* The share of the call (s, o; its host arrays q, k, v) for this rank, as
 * `scheme` asks. A library code with the error set (ENOMEM, EUNSUPPORTED
 * for a scheme the shape cannot take). */
int cli_ranks_share_make(const cli_ranks *r, const clattn_shape *s, const clattn_options *o,
                         cli_ranks_scheme scheme, const void *q, const void *k, const void *v,
                         cli_ranks_share *sh);
/* The call over the ranks (collective): *seconds the slowest rank's time
 * in it, `what` the scheme that ran ("keys", "ring", "allgather"). Every
 * rank returns the same code. */
int cli_ranks_share_run(const cli_ranks *r, clattn_ctx *ctx, cli_ranks_share *sh, char *what,
                        size_t cap, double *seconds);
/* The whole O [B, H, Nq, d_v] and LSE (may be NULL) put together on rank
 * 0 from every rank's rows (collective). */
int cli_ranks_share_gather(const cli_ranks *r, const cli_ranks_share *sh, void *o, float *lse);
void cli_ranks_share_free(cli_ranks_share *sh);

#endif
