/* SPDX-License-Identifier: MIT */
/*
 * A decoding step against a KV cache sharded over MPI ranks, and a causal
 * prefill whose tokens are spread over them (context parallelism), each
 * rank on a device of its own host; every rank checks its rows against
 * the reference of the whole call. Build and run:
 *
 *   mpicc -std=c11 examples/mpi_attention.c $(pkg-config --cflags --libs clattn-mpi) -o mpi_attention
 *   mpirun -np 2 ./mpi_attention
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clattn/clattn.h>
#include <clattn/mpi.h>

#define B 1
#define H 8
#define HKV 2
#define D 64
#define N 512 /* tokens (prefill) and cache length (decode) */

/* Rank r's even share of n, in pairs of tokens (a zigzag order cuts each
 * rank's tokens in two). */
static size_t share(size_t n, int r, int ranks)
{
    const size_t pairs = n / 2;
    return 2 * (pairs / (size_t)ranks + ((size_t)r < pairs % (size_t)ranks));
}

/* Rows [at, at + n) of each of `blocks` blocks of `rows` rows, to dst. */
static void take(float *dst, const float *src, size_t blocks, size_t rows, size_t at, size_t n)
{
    for (size_t b = 0; b < blocks; b++)
        memcpy(dst + b * n * D, src + (b * rows + at) * D, n * D * sizeof *dst);
}

static int check(int rank, const char *what, const float *got, const double *want, size_t n)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        const double e = got[i] > want[i] ? got[i] - want[i] : want[i] - got[i];
        worst = e > worst ? e : worst;
    }
    if (rank == 0 || worst >= 1e-4)
        printf("rank %d, %s: max error %.2g against the reference\n", rank, what, worst);
    return worst < 1e-4 ? 0 : 1;
}

int main(int argc, char **argv)
{
    int provided, rank, ranks, failed = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    clattn_ctx *ctx = NULL;
    if (clattn_open(&ctx, NULL) < 0) {
        fprintf(stderr, "rank %d: %s\n", rank, clattn_last_error_detail());
        MPI_Abort(MPI_COMM_WORLD, 77);
    }
    /* The whole call's tensors, the same on every rank (a real engine
     * holds only its share). */
    static float q[B * H * N * D], k[B * HKV * N * D], v[B * HKV * N * D];
    static double ref[B * H * N * D];
    clattn_random_fill(q, sizeof q / sizeof *q, CLATTN_F32, 1);
    clattn_random_fill(k, sizeof k / sizeof *k, CLATTN_F32, 2);
    clattn_random_fill(v, sizeof v / sizeof *v, CLATTN_F32, 3);
    size_t begin = 0;
    for (int r = 0; r < rank; r++)
        begin += share(N, r, ranks);
    const size_t mine = share(N, rank, ranks);
    static float lq[B * H * N * D], lk[B * HKV * N * D], lv[B * HKV * N * D], lo[B * H * N * D];

    /* README: begin mpi */
    /* Decoding: one query per head, this rank holding keys [begin, begin + mine). */
    clattn_shape step = { B, H, HKV, 1, N, D, CLATTN_F32 };
    clattn_options opts;
    clattn_default_options(&opts);
    opts.causal = CLATTN_CAUSAL_BOTTOM_RIGHT;
    clattn_mpi_call call;
    clattn_mpi_default_call(&call);
    call.shard = CLATTN_MPI_SHARD_KEYS;
    call.local_len = mine;
    take(lk, k, B * HKV, N, begin, mine);
    take(lv, v, B * HKV, N, begin, mine);
    int rc = clattn_mpi_attention(ctx, MPI_COMM_WORLD, &call, &step, &opts, q, lk, lv, lo,
                                  NULL, NULL); /* every rank gets all of O */
    /* README: end mpi */
    if (rc < 0 || clattn_reference(&step, &opts, q, k, v, ref) < 0) {
        fprintf(stderr, "rank %d: %s\n", rank, clattn_last_error_detail());
        failed = 1;
    } else {
        failed |= check(rank, "decode, keys over the ranks", lo, ref, B * H * D);
    }

    /* Prefill: the N tokens of Q, K and V spread over the ranks in zigzag
     * order (rank r holds chunks r and 2P-1-r of 2P), the ring passing
     * K/V blocks while each rank computes its queries. */
    clattn_shape prefill = { B, H, HKV, N, N, D, CLATTN_F32 };
    call.shard = CLATTN_MPI_SHARD_TOKENS;
    call.order = CLATTN_MPI_ZIGZAG;
    const size_t half = mine / 2, chunk_a = begin / 2;
    size_t chunk_b = 0; /* where chunk 2P-1-r starts */
    for (int c = 0; c < 2 * ranks - 1 - rank; c++)
        chunk_b += share(N, c < ranks ? c : 2 * ranks - 1 - c, ranks) / 2;
    for (size_t part = 0; part < 2; part++) {
        const size_t at = part ? chunk_b : chunk_a;
        for (size_t bh = 0; bh < B * H; bh++)
            memcpy(lq + (bh * mine + part * half) * D, q + (bh * N + at) * D, half * D * 4);
        for (size_t bh = 0; bh < B * HKV; bh++) {
            memcpy(lk + (bh * mine + part * half) * D, k + (bh * N + at) * D, half * D * 4);
            memcpy(lv + (bh * mine + part * half) * D, v + (bh * N + at) * D, half * D * 4);
        }
    }
    rc = clattn_mpi_attention(ctx, MPI_COMM_WORLD, &call, &prefill, &opts, lq, lk, lv, lo,
                              NULL, NULL);
    if (rc < 0 || clattn_reference(&prefill, &opts, q, k, v, ref) < 0) {
        fprintf(stderr, "rank %d: %s\n", rank, clattn_last_error_detail());
        failed = 1;
    } else {
        /* This rank's rows: chunk a then chunk b of each head. */
        static double want[B * H * N * D];
        for (size_t part = 0; part < 2; part++)
            for (size_t bh = 0; bh < B * H; bh++)
                for (size_t i = 0; i < half * D; i++)
                    want[(bh * mine + part * half) * D + i] =
                        ref[(bh * N + (part ? chunk_b : chunk_a)) * D + i];
        failed |= check(rank, "causal prefill, tokens over the ranks", lo, want, B * H * mine * D);
    }
    int any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    clattn_close(&ctx);
    MPI_Finalize();
    return any;
}
