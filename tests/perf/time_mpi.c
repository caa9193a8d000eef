/* SPDX-License-Identifier: MIT */
/*
 * time_mpi: one clattn_mpi_attention call over the ranks of
 * MPI_COMM_WORLD, timed on the host clock (run it under mpirun; one rank
 * is the one-device figure).
 *
 * usage: time_mpi B,H,Hkv,N,d DTYPE CAUSAL SHARD [SCHEME] [REPS]
 *   DTYPE   fp32, fp16 or bf16; CAUSAL none, top-left or bottom-right
 *   SHARD   keys (a decoding step, Nq = 1, the N keys split evenly) or
 *           tokens (N tokens of Q, K and V split evenly, zigzag order)
 *   SCHEME  auto, allgather or ring (tokens; default auto)
 *   REPS    timed calls (default 5), after one untimed call (builds)
 * Each rank fills its own tensors; the ranks meet at a barrier before
 * each call, and a call's time is the slowest rank's. Rank 0 prints one
 * JSON line: the ranks, the scheme, the median seconds per call, the
 * compute seconds of the slowest rank, and the K/V bytes it sent. Exit
 * status 1 when a call fails, 2 for a bad command line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clattn/clattn.h>
#include <clattn/mpi.h>

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int usage(void)
{
    fprintf(stderr, "usage: time_mpi B,H,Hkv,N,d fp32|fp16|bf16 none|top-left|bottom-right "
                    "keys|tokens [auto|allgather|ring] [REPS]\n");
    return 2;
}

int main(int argc, char **argv)
{
    int provided = 0, rank = 0, ranks = 1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    clattn_shape s;
    size_t n = 0;
    const int reps = argc > 6 ? atoi(argv[6]) : 5;
    if (argc < 5 || argc > 7 || reps < 1 || reps > 1000 ||
        sscanf(argv[1], "%zu,%zu,%zu,%zu,%zu", &s.batch, &s.heads, &s.kv_heads, &n,
               &s.head_dim) != 5 || n < 2 * (size_t)ranks) {
        if (rank == 0)
            usage();
        MPI_Finalize();
        return 2;
    }
    s.dtype = !strcmp(argv[2], "fp16") ? CLATTN_F16 : !strcmp(argv[2], "bf16") ? CLATTN_BF16
                                                                               : CLATTN_F32;
    clattn_options o;
    clattn_default_options(&o);
    o.causal = !strcmp(argv[3], "top-left")       ? CLATTN_CAUSAL_TOP_LEFT
               : !strcmp(argv[3], "bottom-right") ? CLATTN_CAUSAL_BOTTOM_RIGHT
                                                  : CLATTN_CAUSAL_NONE;
    clattn_mpi_call call;
    clattn_mpi_default_call(&call);
    const int tokens = !strcmp(argv[4], "tokens");
    call.shard = tokens ? CLATTN_MPI_SHARD_TOKENS : CLATTN_MPI_SHARD_KEYS;
    call.order = CLATTN_MPI_ZIGZAG;
    const char *scheme = argc > 5 ? argv[5] : "auto";
    call.scheme = !strcmp(scheme, "ring")        ? CLATTN_MPI_RING
                  : !strcmp(scheme, "allgather") ? CLATTN_MPI_ALLGATHER
                                                 : CLATTN_MPI_AUTO;
    /* Even shares (zigzag needs even counts: pairs of tokens). */
    const size_t pairs = n / 2, base = pairs / (size_t)ranks, extra = pairs % (size_t)ranks;
    call.local_len = 2 * (base + ((size_t)rank < extra));
    s.kv_len = 2 * pairs;
    s.q_len = tokens ? s.kv_len : 1;
    const size_t e = clattn_dtype_size(s.dtype), qrows = tokens ? call.local_len : 1;
    const size_t nq = s.batch * s.heads * qrows * s.head_dim;
    const size_t nk = s.batch * s.kv_heads * call.local_len * s.head_dim;
    void *q = malloc(nq * e), *k = malloc(nk * e + 1), *v = malloc(nk * e + 1);
    void *out = malloc(nq * e);
    clattn_ctx *ctx = NULL;
    int rc = q && k && v && out ? clattn_open(&ctx, NULL) : CLATTN_ENOMEM;
    if (rc == CLATTN_OK) {
        clattn_random_fill(q, nq, s.dtype, 1 + (uint64_t)rank);
        clattn_random_fill(k, nk, s.dtype, 100 + (uint64_t)rank);
        clattn_random_fill(v, nk, s.dtype, 200 + (uint64_t)rank);
    }
    double *t = calloc((size_t)reps, sizeof *t), compute = 0;
    clattn_mpi_info info;
    memset(&info, 0, sizeof info);
    for (int i = -1; i < reps && rc == CLATTN_OK; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        rc = clattn_mpi_attention(ctx, MPI_COMM_WORLD, &call, &s, &o, q, k, v, out, NULL,
                                  &info);
        double worst = info.seconds, worst_compute = info.compute_seconds;
        MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, &worst_compute, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (i >= 0)
            t[i] = worst, compute += worst_compute / reps;
    }
    if (rc < 0 && rank == 0)
        fprintf(stderr, "time_mpi: %s: %s\n", clattn_error_name(rc), clattn_last_error_detail());
    if (rc == CLATTN_OK && rank == 0) {
        qsort(t, (size_t)reps, sizeof *t, cmp);
        printf("{\"ranks\": %d, \"shape\": \"%s\", \"dtype\": \"%s\", \"causal\": \"%s\", "
               "\"shard\": \"%s\", \"scheme\": \"%s\", \"seconds\": %.6g, "
               "\"compute_seconds\": %.6g, \"bytes_sent\": %llu, \"device\": \"%s\"}\n",
               ranks, argv[1], argv[2], argv[3], argv[4], info.scheme, t[reps / 2], compute,
               (unsigned long long)info.bytes_sent, clattn_device_name(ctx));
    }
    free(q), free(k), free(v), free(out), free(t);
    clattn_close(&ctx);
    MPI_Finalize();
    return rc < 0 ? 1 : 0;
}
