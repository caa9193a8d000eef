/* SPDX-License-Identifier: MIT */
/*
 * AUTO's way of spreading a call sharded by tokens, from the model: the
 * all-gather where all of K and V fits every rank's device and gathering
 * them costs little beside the compute (it then runs one call per query
 * chunk, against the ring's one per pair of chunks and step), else the
 * ring (each step's transfer under the compute, two blocks held).
 *
 * The link between ranks is measured once per communicator: every rank
 * sends LINK_BYTES to its right neighbour while receiving from its left,
 * three times, the slowest rank's time the figure; it is kept as an
 * attribute of the caller's communicator (MPI's caching of library
 * state), so a communicator's later calls reuse it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clattn/device.h"
#include "clattn/model.h"
#include "mpi/run.h"

#define LINK_BYTES (8 << 20)
/* The gather's predicted transfer, as a fraction of the compute, up to
 * which AUTO takes the all-gather: the ring's extra calls (a pair of
 * chunks per step, each from host arrays) cost 4-12% over the all-gather
 * between two PoCL ranks of one host (tools/compare/mpi_scaling.py), where
 * gathering is 2-6% of the compute. */
#define GATHER_SHARE 0.10

static int link_keyval = MPI_KEYVAL_INVALID;

static int free_link(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm, (void)keyval, (void)extra;
    free(value);
    return MPI_SUCCESS;
}

/* Bytes per second between neighbouring ranks (collective; the same on
 * every rank; 0 when it could not be measured). */
static double link_bandwidth(struct mpi_run *r)
{
    if (link_keyval == MPI_KEYVAL_INVALID &&
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_link, &link_keyval, NULL) !=
            MPI_SUCCESS)
        link_keyval = MPI_KEYVAL_INVALID;
    double *kept = NULL;
    int found = 0;
    if (link_keyval != MPI_KEYVAL_INVALID)
        MPI_Comm_get_attr(r->caller, link_keyval, &kept, &found);
    if (found && kept)
        return *kept; /* set on every rank alike, by the same calls */
    char *buf = malloc(2 * (size_t)LINK_BYTES);
    int ok = buf != NULL;
    if (buf)
        memset(buf, 1, 2 * (size_t)LINK_BYTES); /* its pages touched before the clock */
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, r->comm);
    double best = 0;
    const int right = (r->rank + 1) % r->ranks, left = (r->rank + r->ranks - 1) % r->ranks;
    for (int i = 0; ok && i < 3; i++) {
        MPI_Barrier(r->comm);
        double t = MPI_Wtime();
        MPI_Sendrecv(buf, LINK_BYTES, MPI_BYTE, right, 1, buf + LINK_BYTES, LINK_BYTES,
                     MPI_BYTE, left, 1, r->comm, MPI_STATUS_IGNORE);
        t = MPI_Wtime() - t;
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, r->comm);
        if (t > 0 && LINK_BYTES / t > best)
            best = LINK_BYTES / t;
    }
    free(buf);
    double *keep = best > 0 && link_keyval != MPI_KEYVAL_INVALID ? malloc(sizeof *keep) : NULL;
    if (keep) {
        *keep = best;
        if (MPI_Comm_set_attr(r->caller, link_keyval, keep) != MPI_SUCCESS)
            free(keep);
    }
    return best;
}

/* This rank's device as the model sees it; 0 with nothing known. */
static int rank_device(const struct mpi_run *r, clattn_model_device *dev)
{
    clattn_ceilings c;
    if (clattn_device_ceilings(r->ctx, &c) < 0)
        return -1;
    clattn_model_device_from_ceilings(&c, r->shape.dtype, dev);
    return 0;
}

/* What every rank agrees on: whether all of K/V fits each device, the
 * gather's transfer and the compute (the largest over the ranks). */
struct verdict {
    double fits;      /* 1 or 0: the smallest over the ranks */
    double gather_s;  /* the all-gather's transfer */
    double compute_s; /* a rank's share of the compute (roofline) */
};

static void predict(struct mpi_run *r, double link, struct verdict *v)
{
    *v = (struct verdict){ 1, 0, 0 };
    clattn_model_device dev;
    clattn_model_problem p;
    clattn_model_default_problem(&p);
    p.shape = r->shape;
    p.causal = r->opts.causal;
    p.kv_lens = r->opts.kv_lens;
    clattn_spread_prediction sp;
    if (rank_device(r, &dev) == 0 && (size_t)r->ranks <= 65536) {
        const clattn_model_link l = { 0, link, 0 };
        if (clattn_model_predict_spread(&p, &dev, (size_t)r->ranks, &l, &sp) == CLATTN_OK) {
            const clattn_spread_estimate *q = &sp.spread[CLATTN_SPREAD_QUERIES];
            v->fits = !dev.capacity_bytes || (q->device_bytes && q->device_bytes <=
                                                                   dev.capacity_bytes);
            v->compute_s = q->compute_s;
        }
    }
    clattn_set_error(CLATTN_OK, NULL);
    const double kv = (double)(r->shape.batch * r->shape.kv_heads * r->shape.kv_len) *
                      (double)(r->shape.head_dim + r->dv) * (double)r->e;
    v->gather_s = link > 0 ? kv * (r->ranks - 1) / r->ranks / link : 0;
    double most[2] = { v->gather_s, v->compute_s };
    MPI_Allreduce(MPI_IN_PLACE, &v->fits, 1, MPI_DOUBLE, MPI_MIN, r->comm);
    MPI_Allreduce(MPI_IN_PLACE, most, 2, MPI_DOUBLE, MPI_MAX, r->comm);
    v->gather_s = most[0], v->compute_s = most[1];
}

int choose_ring(struct mpi_run *r)
{
    if (r->call.scheme != CLATTN_MPI_AUTO)
        return r->call.scheme == CLATTN_MPI_RING;
    if (r->ranks == 1) {
        snprintf(r->info.note, sizeof r->info.note, "one rank: its own keys");
        return 0;
    }
    const double link = link_bandwidth(r);
    struct verdict v;
    predict(r, link, &v);
    const int ring = !v.fits || !(link > 0 && v.compute_s > 0) ||
                     v.gather_s > GATHER_SHARE * v.compute_s;
    if (!v.fits)
        snprintf(r->info.note, sizeof r->info.note, "the ring: all of K and V does not fit "
                 "a rank's device");
    else if (!(link > 0 && v.compute_s > 0))
        snprintf(r->info.note, sizeof r->info.note, "the ring: the link or the device's "
                 "rates are unknown");
    else
        snprintf(r->info.note, sizeof r->info.note, "%s: gathering K and V takes %.3g ms "
                 "at %.3g GB/s, %.1f%% of the %.3g ms compute (the all-gather up to %.0f%%)",
                 ring ? "the ring" : "the all-gather", 1e3 * v.gather_s, link / 1e9,
                 100 * v.gather_s / v.compute_s, 1e3 * v.compute_s, 100 * GATHER_SHARE);
    return ring;
}
