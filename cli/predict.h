/*
 * clattn predict: what its parts share. cmd_predict.c settles the device
 * figures and runs the byte model (docs/MODEL.md) for every row,
 * predict_args.c parses the command line, predict_text.c prints the tables
 * and predict_json.c the same figures as one JSON object.
 */
#ifndef CLATTN_TOOLS_PREDICT_H
#define CLATTN_TOOLS_PREDICT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "clattn/clattn.h"
#include "clattn/device.h"
#include "clattn/model.h"
#include "options.h"

#define PREDICT_MAX_LENS CLI_MAX_LENS

/* A device figure and where it came from. */
struct predict_figures {
    clattn_figure capacity, max_alloc, cache, bandwidth, peak, latency;
    int peak_is_f32; /* fp16 shape, the device's fp32 rate standing in */
};

struct predict_args {
    cli_call call;       /* the shared options as given */
    clattn_shape shape;  /* lengths come from lens[] (Nk, and Nq unless q_len)
                          * or nq/nk */
    size_t lens[PREDICT_MAX_LENS];
    size_t n_lens;
    size_t nq, nk;       /* 0: not given */
    size_t q_len;        /* --q-len: Nq of every row of lens[]; 0: Nq = Nk */
    const uint32_t *kv_lens; /* --kv-lens, one per sequence; NULL: Nk for all */
    size_t n_kv_lens;
    uint32_t split_kv;   /* --split-kv: 0 the library's choice (none without a device) */
    int split_given;
    clattn_causal causal;
    size_t block_m, block_n; /* 0: the device's or the default */
    uint64_t workspace;
    const char *device;
    int preset;
    struct predict_figures given;
    const char *json;    /* --json: the file, "-" for stdout; NULL: tables */
    int has_variant;     /* a variant option was given */
    int has_cache;       /* a cache option (--kv-type, --page-size, --packed) or --q-lens */
    size_t layers;       /* --layers: the serving answer for a model of that many; 0: none */
    clattn_figure free;  /* --free: device memory for the cache; unknown: the capacity's */
    size_t devices;      /* --devices: Q9, the call over that many devices alike; 0: none */
    double link_bw, peer_bw; /* --link-bw, --peer-bw: bytes/s (0: none / half the link) */
};

/* One pair of lengths: the problem as modelled and its predictions. */
struct predict_row {
    clattn_model_problem problem; /* kv_lens point into predict_args */
    const char *tiles_source;
    const char *splits_source;    /* "device" (its plan), "given", "none" */
    clattn_model_variant variant; /* the variant options as the model counts them */
    clattn_options vopts;         /* ... and as the plan and the descriptions take them */
    uint64_t mask_bytes;          /* the fused path's mask traffic (0: no mask) */
    /* per path (0 naive, 1 fused), with a device: the kernel it would run
     * ("" unknown), its recorded efficiency where the row's roof binds and
     * the time to expect, the roofline over it (0 and 0: none recorded) */
    char kernel[2][64];
    double efficiency[2], expected_s[2];
    clattn_prediction pred;   /* with the requested mask */
    clattn_prediction causal; /* with the requested mask, else top-left (a what-if) */
    clattn_model_cache cache; /* the cache as the model counts it */
    clattn_cache_estimate cache_est; /* its figures in `pred` */
    /* --layers: a decoding step of the row's sequences over Nk keys of
     * context (Nq = --q-len, else 1), its tiles and split (the device's
     * plan, else the row's), and what fits and costs; the time to expect
     * over the step kernel's recorded efficiency (0: none recorded) */
    clattn_model_problem step;
    const char *step_tiles_source;
    char step_kernel[64];
    clattn_kv_capacity capacity;
    clattn_figure free;       /* the memory the capacity counts, and its source */
    double step_efficiency, step_expected_s;
    clattn_spread_prediction spread; /* --devices */
};

/* Q2: the largest N for each clattn_len_limit, where its figure is known. */
struct predict_limits {
    int known[5];
    size_t n[5];
    double root[5];
};

/* Parses the arguments after "predict" (argv[0]) into `a`.
 * 0: parsed (cli_call_free(&a->call) afterwards); 1: --help printed; 2: bad
 * arguments (error printed). */
int predict_parse_args(int argc, char **argv, struct predict_args *a);

/* The tables, Q1 to Q4, on stdout. rows[0] holds what every row shares (the
 * ridge, the tiles); n >= 1. */
void predict_print_text(const struct predict_args *a, clattn_ctx *ctx,
                        const struct predict_figures *f, const clattn_model_device *dev,
                        const struct predict_limits *l, const struct predict_row *rows,
                        size_t n);

/* The same figures as one JSON object and a newline on `f`; unknown
 * figures are null. */
void predict_print_json(FILE *out, const struct predict_args *a, clattn_ctx *ctx,
                        const struct predict_figures *f, const struct predict_limits *l,
                        const struct predict_row *rows, size_t n);

#endif
