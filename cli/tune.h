/*
 * clattn tune: what its parts share. cmd_tune.c times the tile candidates
 * and records the fastest; tune_efficiency.c then times the kernels AUTO
 * runs on a shape each roof binds and records their efficiencies.
 */
#ifndef CLATTN_TOOLS_TUNE_H
#define CLATTN_TOOLS_TUNE_H

#include <stdio.h>

#include "clattn/clattn.h"
#include "json.h"
#include "options.h"
#include "kvcache.h"
#include "variant.h"

struct tune_settings {
    FILE *text;             /* the rows: stdout, or stderr when --json is stdout */
    struct json *json;      /* --json: the "results" array is open */
    double budget;          /* seconds of timed repetitions per candidate */
    int save, check;
    int save_failed;        /* a result could not be saved: no more are tried */
    int all_kernels;        /* --kernel all */
    clattn_fused_kernel kernel; /* --kernel NAME, or AUTO */
    clattn_tiles tiles[CLATTN_KERNEL_CANDIDATES_MAX]; /* --tiles, else the kernel's own */
    size_t n_tiles;
    const cli_call *call;   /* the variant options, for the shapes' tensors */
    int variant;            /* a variant was given */
};

struct tune_buffers {
    cl_mem b[4];
    cli_variant_data data;
    cli_cache_data cache; /* a KV cache form's arrays (kvcache.h) */
    clattn_options opts;
};

/* Q, K, V and O of `s` for the call's variant, K and V random: 0, or -1
 * after the message; tune_free_buffers releases them. */
int tune_make_buffers(clattn_ctx *ctx, const clattn_shape *s, const struct tune_settings *set,
                      struct tune_buffers *t);
void tune_free_buffers(struct tune_buffers *t);

/* Median kernel time of one configuration in seconds, through the
 * library's timing helper on the device's clock (the fused path's kernels'
 * profiling events, back to back) after one untimed call, which also
 * builds the variant; < 0 when the configuration fails. `info` (may be
 * NULL) receives the last call's run info. */
double tune_time_config(clattn_ctx *ctx, const clattn_shape *s, const clattn_options *o,
                        const struct tune_buffers *b, double budget, clattn_run_info *info);

/* The efficiency probes of one head dim (tune_efficiency.c): 0, or -1 when
 * a probe failed or a record could not be saved (said on stderr). */
int tune_efficiencies(clattn_ctx *ctx, const clattn_shape *tuned, struct tune_settings *set);

#endif
