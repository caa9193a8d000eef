/* SPDX-License-Identifier: MIT */
/*
 * A device group (clattn_group_*) as its two entries share it:
 * clattn_group_attention on host arrays (group.c) and
 * clattn_group_attention_cl on tensors already on the devices
 * (resident.c). Both plan the call with split.h and run the shares on a
 * thread per device.
 */
#ifndef CLATTN_SRC_GROUP_GROUP_H
#define CLATTN_SRC_GROUP_GROUP_H

#include "clattn/clattn.h"
#include "group/split.h"

struct clattn_group {
    size_t n;
    clattn_ctx *ctx[CLATTN_GROUP_MAX];
    double weight[CLATTN_GROUP_MAX]; /* the caller's; 0: the ceilings' */
    enum group_scheme scheme;        /* the caller's, else GROUP_AUTO */
};

/* What a call is planned for: the group's weights (the caller's, else
 * each device's rate for what bounds the call), its devices' memory, the
 * scheme asked for; `w` and `cap` hold CLATTN_GROUP_MAX values. */
void group_devices_of(const clattn_group *g, const clattn_shape *s, double *w, uint64_t *cap,
                      struct group_devices *out);

/* One share's run, in a thread of its own. */
typedef int (*group_share_fn)(const struct group_plan *p, size_t i, clattn_ctx *ctx,
                              const void *arg);

/* Runs fn for every share with work at once, a thread each; the first
 * failure's code, its device named in the detail, else 0. */
int group_run_shares(const clattn_group *g, const struct group_plan *p, group_share_fn fn,
                     const void *arg);

#endif
