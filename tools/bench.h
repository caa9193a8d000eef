/*
 * clattn bench: what its parts share. cmd_bench.c parses options and walks
 * the rows, bench_run.c measures one row on the device, bench_check.c checks
 * its output against the CPU reference, bench_report.c prints the table and
 * writes the JSON and CSV files.
 */
#ifndef CLATTN_TOOLS_BENCH_H
#define CLATTN_TOOLS_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "clattn/clattn.h"
#include "clattn/device.h"

#define BENCH_MAX_LENS 32

/* What to run. Every row has Nq = Nk = N. */
typedef struct bench_config {
    size_t batch, heads, kv_heads, head_dim;
    clattn_dtype dtype;
    size_t lens[BENCH_MAX_LENS];
    size_t n_lens;
    int masks;            /* bit 0: no mask, bit 1: causal (top-left) */
    int paths;            /* bit 0: naive, bit 1: fused */
    const char *device;   /* NULL: $CLATTN_DEVICE or the default */
    const char *json_path, *csv_path;
    double reps_seconds;  /* target timed duration per row; < 0: automatic */
    int confirm_oom;      /* run rows predicted not to fit anyway */
    clattn_fused_kernel fused_kernel; /* --kernel (AUTO by default) */
    int preset_seed;      /* --preset seed was given */
    char preset_note[320];/* how the preset was adapted to the device, "" if not */
    uint64_t seed;        /* random inputs */
} bench_config;

/* The device and the ceilings the predictions use. */
typedef struct bench_device {
    char name[256];       /* "platform: device" */
    char driver[128];
    char version[128];
    int is_gpu;
    clattn_ceilings ceil;
    clattn_figure peak;   /* FLOP/s used for the dtype (see peak_note) */
    char peak_note[128];  /* "fp16", or why another figure stands in */
} bench_device;

/* Row outcome. */
typedef enum bench_status {
    BENCH_OK = 0,         /* ran and the check passed */
    BENCH_FAIL,           /* ran, but the check failed */
    BENCH_OOM,            /* predicted not to fit: not run */
    BENCH_OOM_CONFIRMED,  /* predicted not to fit, run anyway, and it failed */
    BENCH_ERROR,          /* another failure */
    BENCH_SKIPPED,        /* not run: an earlier row lost the device */
    BENCH_PREDICTED,      /* model only: a shape shown for reference, not run */
} bench_status;

typedef struct bench_row {
    /* what */
    clattn_shape shape;
    clattn_causal causal;
    clattn_path path;
    clattn_fused_kernel fused_kernel; /* --kernel */
    size_t block_m, block_n;     /* fused tiles (the causal block accounting) */
    char kernel[64];             /* run_info.kernel, "" if not run */
    /* outcome */
    bench_status status;
    int predicted_oom;           /* the model says it does not fit */
    char detail[320];            /* OOM verdict or error text, "" if none */
    /* measurement */
    unsigned reps;
    double t_median, t_min, t_max; /* seconds */
    /* model */
    double model_flops;          /* the model's FLOPs for the work the path does */
    double useful_flops;         /* 4 d B H x visible (query, key) pairs */
    uint64_t model_bytes;        /* the model's traffic for the path */
    double intensity;            /* model_flops / model_bytes */
    double pred_s;               /* roofline time, 0 when n/a */
    double pred_memory_s, pred_compute_s;
    clattn_bound bound;
    /* derived from measurement and model */
    double tflops_model, tflops_useful, gbps, ratio;
    /* memory */
    uint64_t mem_allocated;      /* run_info.allocated_bytes + Q, K, V, O */
    uint64_t mem_predicted;      /* run_info.predicted_peak_bytes, else the plan */
    /* causal blocks and speedup */
    uint64_t visited_blocks, total_blocks;
    double speedup_ideal;        /* total / visited tiles (fused), 1 (naive) */
    double speedup_roofline;     /* the model's fused time ratio, 0 if n/a */
    double speedup_measured;     /* no-mask time / causal time, 0 if n/a */
    /* correctness */
    char check_kind[48];         /* "full", "4 samples x 16 rows", "" */
    double max_abs, rel_l2, tol_abs, tol_rel;
    size_t nan_count;
    int check_ok;
} bench_row;

/* ------------------------------------------------------------ bench_run.c */

/* Inputs of one N on the device, generated on the host (kept there for the
 * reference) and uploaded. */
typedef struct bench_inputs {
    clattn_shape shape;
    void *q, *k, *v;               /* host copies, shape.dtype */
    cl_mem dq, dk, dv, dout;       /* device buffers */
    size_t q_bytes, kv_bytes;
} bench_inputs;

/* Fills the model's device figures from the ceilings. */
void bench_model_device(const bench_device *dev, clattn_model_device *out);

/* Fills the row's model fields (tiles, FLOPs, bytes, prediction, memory
 * plan, OOM verdict) without touching device memory. */
int bench_predict_row(clattn_ctx *ctx, const bench_device *dev, bench_row *row);

/* Checks that Q, K, V and O of `shape` fit the device; on failure writes
 * the verdict into `detail` and returns nonzero. */
int bench_inputs_too_big(const bench_device *dev, const clattn_shape *shape, char *detail,
                         size_t cap);

/* Generates and uploads the inputs of `shape` (seeded by `seed`). On failure
 * writes a message into `detail`; bench_inputs_free is safe either way. */
int bench_inputs_make(clattn_ctx *ctx, const clattn_shape *shape, uint64_t seed,
                      bench_inputs *in, char *detail, size_t cap);
void bench_inputs_free(bench_inputs *in);

/* Runs one predicted row: a poisoned verification run (which also builds the
 * kernels), the check, then timed repetitions. Returns CLATTN_EDEVLOST when
 * the device context is gone and nothing more can run, else 0 (the row's
 * status says how it went). */
int bench_run_row(clattn_ctx *ctx, const bench_config *cfg, const bench_device *dev,
                  bench_inputs *in, bench_row *row);

/* ---------------------------------------------------------- bench_check.c */

/* Compares the device output of `row` (in->dout after the verification run)
 * with the CPU reference, in full when cheap, else on sampled rows. The
 * reference is cached between the paths of one N and mask. */
int bench_check_row(clattn_ctx *ctx, bench_inputs *in, bench_row *row);
/* Drops the cached reference. */
void bench_check_reset(void);

/* --------------------------------------------------------- bench_report.c */

const char *bench_status_name(bench_status s);
void bench_print_header(FILE *f, const bench_config *cfg, const bench_device *dev);
void bench_print_table(FILE *f, const bench_row *rows, size_t n);
/* Written whole or not at all, or in place on a character device or FIFO
 * (outfile.h); 0, or -1 with "<path>: <problem>" in err. */
int bench_write_json(const char *path, const bench_config *cfg, const bench_device *dev,
                     const bench_row *rows, size_t n, char *err, size_t errcap);
int bench_write_csv(const char *path, const bench_row *rows, size_t n, char *err, size_t errcap);

#endif
