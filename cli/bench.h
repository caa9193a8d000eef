/*
 * clattn bench: what its parts share. bench_args.c parses the options and
 * settles the configuration (with bench_preset.c's presets), cmd_bench.c
 * opens the device and walks the rows, bench_run.c predicts and measures one
 * row, bench_check.c checks its output against the CPU reference,
 * bench_report.c prints the table and writes the JSON and CSV files.
 */
#ifndef CLATTN_TOOLS_BENCH_H
#define CLATTN_TOOLS_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "clattn/clattn.h"
#include "clattn/device.h"
#include "cli.h"
#include "kvcache.h"
#include "options.h"
#include "variant.h"

#define BENCH_MAX_CASES CLI_MAX_LENS /* -N lengths, or a preset's shapes */
#define BENCH_MAX_MODEL_CASES 8   /* a scaled preset's full shapes, model only */
#define BENCH_ROWS_PER_CASE 6     /* three masks times two paths */

/* How each row's output is checked. */
typedef enum bench_check_mode {
    BENCH_CHECK_AUTO = 0, /* in full when the reference is cheap, else sampled */
    BENCH_CHECK_FULL,
    BENCH_CHECK_SAMPLED,
} bench_check_mode;

/* One shape and the masks it runs under; its rows share their inputs. */
typedef struct bench_case {
    clattn_shape shape;
    int masks; /* CLI_MASK bits */
} bench_case;

/* The options as given, before a device is known: the shared ones and
 * bench's own. */
typedef struct bench_args {
    cli_call call;
    const char *preset;     /* "seed", "decode" or NULL */
    bench_check_mode check;
    int confirm_oom;        /* run rows predicted not to fit anyway */
    double reps_seconds;    /* timed work per row; < 0: by the device */
    uint32_t calls_per_sample; /* enqueued back to back per timed sample */
    const char *spread;     /* --spread SCHEME over devices or ranks; NULL: auto */
} bench_args;

/* What to run: the options, and the cases they settle to on the device. */
typedef struct bench_config {
    const bench_args *args; /* outlives the config */
    bench_case cases[BENCH_MAX_CASES];
    size_t n_cases;
    bench_case model_cases[BENCH_MAX_MODEL_CASES]; /* shown model-only, not run */
    size_t n_model_cases;
    char model_title[200]; /* the heading of the model-only rows */
    clattn_dtype dtype;    /* of every case */
    int paths;             /* CLI_PATH_BIT bits */
    const char *preset;    /* "seed", "decode" or NULL */
    char preset_note[400]; /* how the preset was adapted to the device, "" if not */
    double target_seconds; /* timed work per row */
    clattn_options opts;   /* the call's kernel, split, lengths and parameters, softcap,
                            * window and d_v; each row sets its own mask and path, and
                            * each case's inputs carry the variant's tensors */
    int has_variant;       /* a variant option was given */
    int has_cache;         /* a KV cache form was asked for (kvcache.h) */
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
    char ceilings_note[1024]; /* the ceilings were measured now, or could not be */
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
    size_t case_index;           /* rows of one case share their inputs */
    clattn_shape shape;
    clattn_causal causal;
    clattn_path path;
    const clattn_options *opts;  /* the call's kernel, split, lengths and parameters */
    const uint32_t *kv_lens;     /* B per-sequence lengths, NULL: Nk for all */
    const uint32_t *q_lens;      /* B per-sequence query counts, NULL: Nq for all */
    size_t block_m, block_n;     /* the fused kernel's tiles (clattn_plan_fused) */
    uint32_t planned_splits;     /* the fused plan's key chunks per sequence */
    uint32_t splits;             /* run_info.splits of the run, 0 if not run */
    char kernel[64];             /* run_info.kernel, "" if not run */
    /* outcome */
    bench_status status;
    int predicted_oom;           /* the model says it does not fit */
    char detail[320];            /* OOM verdict or error text, "" if none */
    /* measurement */
    unsigned reps;               /* timed samples */
    unsigned calls_per_sample;   /* calls back to back in each */
    double t_median, t_min, t_max; /* seconds per call */
    /* model: the path's estimate (its FLOPs for the work the path does, its
     * bytes, intensity, roofline times, 0 when n/a, bound, memory plan) */
    clattn_path_estimate est;
    double useful_flops;         /* 2 (d + d_v) H x visible (query, key) pairs of the
                                  * batch (times the kept fraction of a mask's elements,
                                  * once its inputs are drawn) */
    /* the time to expect: est.time_s over the kernel's recorded efficiency
     * where est's roof binds (clattn tune); 0 and 0 where none is recorded */
    double efficiency, expected_s;
    /* derived from measurement and model; ratio: the median over expected_s,
     * over the roofline est.time_s where no efficiency is recorded */
    double tflops_model, tflops_useful, gbps, ratio;
    double bandwidth_fraction;   /* gbps / the device's bandwidth, 0 if unknown */
    /* memory */
    uint64_t mem_allocated;      /* run_info.allocated_bytes + Q, K, V, O */
    uint64_t mem_predicted;      /* run_info.predicted_peak_bytes, else the plan */
    uint64_t split_workspace;    /* the model's split workspace (fused) */
    /* causal blocks and speedup */
    uint64_t visited_blocks, total_blocks; /* per head of a sequence of Nk keys */
    double speedup_ideal;        /* total / visited tiles of the batch (fused), 1 (naive) */
    double speedup_roofline;     /* the model's fused time ratio, 0 if n/a */
    double speedup_measured;     /* no-mask time / causal time, 0 if n/a */
    /* correctness */
    char check_kind[48];         /* "full", "4 samples x 16 rows", "" */
    double max_abs, rel_l2, tol_abs, tol_rel;
    size_t nan_count;
    size_t stray_count;          /* outputs not exactly 0 in rows that see no key */
    int check_ok;
} bench_row;

/* ----------------------------------------------------------- bench_args.c */

/* Parses the arguments after "bench". 0: parsed; 1: --help printed; 2: a
 * usage error (printed). */
int bench_parse_args(int argc, char **argv, bench_args *a);

/* Settles the configuration for a device that is (or is not) a GPU: the
 * preset (or plain `clattn bench`'s seed), scaled down where the device is
 * not a GPU, then the options given, which win. 0, or 2 after printing a
 * usage error. */
int bench_resolve_config(const bench_args *a, int is_gpu, bench_config *cfg);

/* ---------------------------------------------------------- bench_preset.c */

/* One shape of a preset; H, Hkv, d are the preset's. */
typedef struct bench_preset_case {
    size_t batch, q_len, kv_len;
    int masks;
} bench_preset_case;

typedef struct bench_preset {
    const char *name;         /* "seed", "decode" */
    size_t heads, kv_heads, head_dim;
    const bench_preset_case *cases;
    size_t n_cases;
    int paths;                /* the paths it runs unless --path says (CLI_PATH_BIT bits) */
    int masks;                /* the masks rows of -N lengths get unless --causal says */
} bench_preset;

/* The preset called `name` as a GPU runs it (`scaled` 0) or scaled down for
 * a device that is not a GPU (`scaled` 1); NULL for an unknown name. */
const bench_preset *bench_preset_find(const char *name, int scaled);
/* "seed, decode" */
const char *bench_preset_names(void);

/* ------------------------------------------------------------ bench_run.c */

/* Inputs of one case on the device, drawn on the device and read back for
 * the reference. */
typedef struct bench_inputs {
    clattn_shape shape;
    size_t head_dim_v;             /* V's and O's columns */
    void *q, *k, *v;               /* host copies, shape.dtype (K and V in the cache's
                                    * types, plain, once it is made) */
    cl_mem dq, dk, dv, dout;       /* device buffers */
    size_t q_bytes, kv_bytes, v_bytes, o_bytes; /* device bytes; o_bytes: the plain O's */
    size_t dout_bytes;             /* O's on the device (packed: its rows alone) */
    cl_mem dcheck;                 /* the plain O the check reads (packed runs), or NULL:
                                    * dout */
    cli_variant_data variant;      /* the variant's tensors for this shape */
    clattn_options opts;           /* the config's options pointing at them */
    clattn_extras extras;          /* ... and those tensors on the device, which the
                                    * rows' calls take (bench_inputs_variant) */
    int cached;                    /* the cache's forms were made: */
    cli_cache_data cache;          /* ... the device's (pages, packed, scales) */
    clattn_options ref_opts;       /* ... and the reference's options for in->k, in->v */
} bench_inputs;

/* Fills the model's device figures from the ceilings. */
void bench_model_device(const bench_device *dev, clattn_model_device *out);

/* Fills the row's model fields (the fused plan, FLOPs, bytes, prediction,
 * memory plan, OOM verdict) without touching device memory. */
int bench_predict_row(clattn_ctx *ctx, const bench_config *cfg, const bench_device *dev,
                      bench_row *row);

/* Checks that Q, K, V and O of `shape` fit the device; on failure writes
 * the verdict into `detail` and returns nonzero. */
int bench_inputs_too_big(const bench_device *dev, const clattn_shape *shape, char *detail,
                         size_t cap);

/* Generates and uploads the inputs of `shape` (seeded by `seed`). On failure
 * writes a message into `detail`; bench_inputs_free is safe either way. */
int bench_inputs_make(clattn_ctx *ctx, const clattn_shape *shape, size_t head_dim_v,
                      uint64_t seed, bench_inputs *in, char *detail, size_t cap);
void bench_inputs_free(bench_inputs *in);

/* The variant's tensors (ALiBi slopes, sinks, the mask) uploaded once for
 * the case into in->extras, as an engine keeps them on the device: from
 * the options' host arrays every timed call would copy them again (a
 * [1, 1, N, N] fp16 mask at N = 4096 is 32 MiB). 0, or a library code
 * with `detail` written. */
int bench_inputs_variant(clattn_ctx *ctx, bench_inputs *in, char *detail, size_t cap);

/* The KV cache's forms of the inputs (the config's --kv-type, --page-size,
 * --packed): K and V quantized on the host (the reference's copies replaced
 * by them), the device's form uploaded in place of the plain buffers, and
 * in->opts (the config's, variant tensors included) pointing at it. 0, or a
 * library code with `detail` written. */
int bench_inputs_cache(clattn_ctx *ctx, const bench_config *cfg, bench_inputs *in,
                       char *detail, size_t cap);

/* Runs one predicted row: a poisoned verification run (which also builds the
 * kernels), the check, then timed repetitions. Returns CLATTN_EDEVLOST when
 * the device context is gone and nothing more can run, else 0 (the row's
 * status says how it went). */
int bench_run_row(clattn_ctx *ctx, const bench_config *cfg, const bench_device *dev,
                  bench_inputs *in, bench_row *row);

/* --------------------------------------------------------- bench_spread.c */

struct cli_ranks;
/* The bench over several devices (--device 0,1) or the ranks of an mpirun
 * launch: each case's fused call whole on the first device and spread,
 * beside the model's speedup. The command's exit status. */
int bench_spread(const bench_args *a, const struct cli_ranks *ranks);

/* ---------------------------------------------------------- bench_check.c */

/* Compares the device output of `row` (in->dout after the verification run)
 * with the CPU reference: in full when `mode` says so or (AUTO) when that is
 * cheap, else on sampled rows. The reference is cached between the paths of
 * one case and mask. */
int bench_check_row(clattn_ctx *ctx, bench_inputs *in, bench_check_mode mode, bench_row *row);
/* Drops the cached reference. */
void bench_check_reset(void);

/* --------------------------------------------------------- bench_report.c */

const char *bench_status_name(bench_status s);
const char *bench_check_mode_name(bench_check_mode m); /* "auto", "full", "sampled" */
void bench_print_header(FILE *f, const bench_config *cfg, const bench_device *dev);
void bench_print_table(FILE *f, const bench_row *rows, size_t n);
/* The JSON report and the CSV rows, written to `f`. */
void bench_write_json(FILE *f, const bench_config *cfg, const bench_device *dev,
                      const bench_row *rows, size_t n);
void bench_write_csv(FILE *f, const bench_row *rows, size_t n);

/* --json and --csv as the command's outputs (cli.h), writers set. */
void bench_files(const bench_args *a, cli_file out[2]);

#endif
