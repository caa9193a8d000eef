/* SPDX-License-Identifier: MIT */
/*
 * What the runtime knows about its device: the properties OpenCL and vendor
 * extensions report, and ceilings measured on the device (clattn devices
 * --measure), each figure labelled with where it came from.
 */
#ifndef CLATTN_DEVICE_H
#define CLATTN_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "clattn/clattn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a figure came from. */
typedef enum clattn_source {
    CLATTN_SRC_NONE = 0,     /* unknown */
    CLATTN_SRC_REPORTED = 1, /* OpenCL clGetDeviceInfo */
    CLATTN_SRC_VENDOR = 2,   /* vendor attribute extension */
    CLATTN_SRC_MEASURED = 3, /* measured on the device */
    CLATTN_SRC_TABLE = 4,    /* built-in table of known devices */
    CLATTN_SRC_GIVEN = 5,    /* given by the user */
    CLATTN_SRC_PRESET = 6,   /* a preset's assumption (e.g. the seed's) */
} clattn_source;

/* "reported", "vendor attribute", "measured", "table", "given", "preset", "unknown" */
CLATTN_API const char *clattn_source_name(clattn_source src);

typedef struct clattn_figure {
    double value;
    clattn_source source;
} clattn_figure;

/* The figures the model needs about a device. */
typedef struct clattn_ceilings {
    clattn_figure global_mem_bytes; /* device memory capacity */
    clattn_figure max_alloc_bytes;  /* largest single buffer */
    clattn_figure cache_bytes;      /* last-level cache */
    clattn_figure bandwidth;        /* device memory, bytes/s (read + write) */
    clattn_figure flops_f32;        /* FLOP/s, fp32 FMA */
    clattn_figure flops_f16;        /* FLOP/s, fp16 (matrix units where used) */
    clattn_figure launch_latency_s; /* seconds per kernel launch */
} clattn_ceilings;

/* The best figures known for the context's device: measured ones (from the
 * per-device file clattn devices --measure saves; a quick measurement is
 * ignored) where present, else vendor attribute, table or reported values:
 *   global_mem_bytes, max_alloc_bytes: reported, except on NVIDIA (table:
 *     the memory less the CUDA context's reserve, and no smaller limit on one
 *     buffer, which is what that driver really allows);
 *   cache_bytes: measured knee, else the built-in table (known devices' L2 or
 *     Infinity Cache), else CL_DEVICE_GLOBAL_MEM_CACHE_SIZE (reported; on
 *     NVIDIA that is the SMs' L1, far below the L2);
 *   bandwidth, flops_f32: measured, else table, else NONE;
 *   flops_f16: the measured tensor-core (mma.sync) rate where there is one,
 *     else the table's matrix-unit rate, else the measured half-vector rate,
 *     else NONE;
 *   launch_latency_s: measured, else NONE.
 * Never fails for want of a measurement. Thread-safe. */
CLATTN_API int clattn_device_ceilings(clattn_ctx *ctx, clattn_ceilings *out);

/* The model's device (clattn/model.h) from a device's ceilings, priced for
 * `dtype`: its FLOP rate the dtype's, or fp32's where no 16-bit figure is
 * known (fp16 then is half storage with float arithmetic); a figure not
 * known stays 0 (API 1.6). */
struct clattn_model_device;
CLATTN_API void clattn_model_device_from_ceilings(const clattn_ceilings *c, clattn_dtype dtype,
                                                  struct clattn_model_device *out);

/* Like clattn_device_ceilings, for any device without opening a context. */
CLATTN_API int clattn_device_ceilings_cl(cl_device_id dev, clattn_ceilings *out);

/* ------------------------------------------------------------- properties */

typedef enum clattn_vendor {
    CLATTN_VENDOR_OTHER = 0,
    CLATTN_VENDOR_NVIDIA = 1,
    CLATTN_VENDOR_AMD = 2,
    CLATTN_VENDOR_INTEL = 3,
} clattn_vendor;

/* What a device reports. Every number comes from clGetDeviceInfo (source
 * "reported") except the vendor blocks ("vendor attribute") and fp16_builds
 * (a probe kernel compiled on the device). A vendor block's fields are valid
 * when its `present` is nonzero; within it a 0 means the attribute did not
 * answer. */
typedef struct clattn_device_props {
    char name[256];
    char vendor[128];
    char driver_version[128];
    char version[128];          /* CL_DEVICE_VERSION, "OpenCL 3.0 CUDA" */
    char opencl_c_version[128]; /* "OpenCL C 1.2 ..." */
    char platform_name[128];
    char platform_version[256];
    cl_device_type type;
    clattn_vendor vendor_id;
    int cl_major, cl_minor;     /* parsed from `version` */
    uint32_t compute_units;
    uint32_t clock_mhz;
    uint64_t global_mem_bytes;
    uint64_t max_alloc_bytes;
    uint64_t local_mem_bytes;
    uint64_t global_cache_bytes;   /* CL_DEVICE_GLOBAL_MEM_CACHE_SIZE as reported */
    uint32_t global_cache_line_bytes;
    int global_cache_is_l1;        /* nonzero on NVIDIA: the figure is SMs x L1,
                                    * not the L2 */
    size_t max_work_group_size;
    int fp16_advertised;           /* cl_khr_fp16 in the extensions */
    int fp16_builds;               /* 1: half arithmetic compiled under
                                    * cl_khr_fp16, 0: it did not, -1: not
                                    * tried (tried only where cl_khr_fp16 is
                                    * advertised, and on NVIDIA, which computes
                                    * half without advertising it) */
    char fp16_probe_log[1024];     /* fp16_builds 0: the probe's build error and
                                    * the start of its build log; "" otherwise.
                                    * (Some compilers, PoCL's among them, also
                                    * print a summary on the process's stderr,
                                    * which the library cannot prevent.) */
    int subgroups_khr;             /* cl_khr_subgroups */
    int subgroups_intel;           /* cl_intel_subgroups */
    uint32_t max_sub_groups;       /* CL_DEVICE_MAX_NUM_SUB_GROUPS (OpenCL 2.1+),
                                    * 0 below 2.1 or when none */
    struct {
        int present;               /* cl_nv_device_attribute_query */
        uint32_t cc_major, cc_minor;
        uint32_t registers_per_block;
        uint32_t warp_size;
        uint64_t shared_mem_per_sm; /* attribute 0x400b, 0 if it did not answer */
    } nv;
    struct {
        int present;               /* cl_amd_device_attribute_query */
        char board_name[128];
        uint32_t wavefront_width;
        uint64_t free_mem_bytes;
    } amd;
    struct {
        int present;               /* cl_intel_device_attribute_query */
        uint32_t slices;
        uint32_t sub_slices_per_slice;
        uint32_t eus_per_sub_slice;
        uint32_t threads_per_eu;
    } intel;
} clattn_device_props;

/* Fills *out with what `dev` reports. Creates a short-lived context on the
 * device to compile the fp16 probe kernel (tens of milliseconds). Returns
 * CLATTN_EINVAL for NULL arguments and CLATTN_ECL when the device does not
 * answer. Thread-safe. */
CLATTN_API int clattn_device_query(cl_device_id dev, clattn_device_props *out);

/* ------------------------------------------------------------ measurement */

/* Median and spread of repeated timings of one figure. */
typedef struct clattn_stat {
    double median, min, max;
    uint32_t samples; /* 0: not measured */
} clattn_stat;

/* Called between steps of clattn_measure: `stage` names the step
 * ("bandwidth, 1024 MiB copy", "cache sweep, 48 MiB", ...), `fraction` is the
 * share done, 0..1. */
typedef void (*clattn_progress_fn)(void *user, const char *stage, double fraction);

/* Set up with clattn_default_measure_options (struct_size: clattn/types.h,
 * "Structs that grow"). */
typedef struct clattn_measure_options {
    size_t struct_size;        /* sizeof(clattn_measure_options) of the caller's header */
    uint32_t repetitions;      /* timed runs per figure after an untimed
                                * warm-up; median and min-max are reported */
    double run_seconds;        /* work per timed run is scaled to last about
                                * this long; 0: automatic (GPU 5 ms, CPU 20 ms) */
    uint64_t bandwidth_bytes;  /* each of the copy's two buffers; 0: min(1 GiB,
                                * max alloc / 2, global / 8), 16 MiB if quick */
    int sweep;                 /* nonzero: sweep the working set to find the
                                * last-level cache */
    uint64_t sweep_min_bytes;  /* 0: 256 KiB */
    uint64_t sweep_max_bytes;  /* 0: 16 x the expected cache, within the
                                * device's allocation limits */
    int quick;                 /* nonzero: small buffers and 3 repetitions, a
                                * smoke test lasting seconds; figures are rough
                                * (clattn_device_ceilings ignores them) */
    clattn_progress_fn progress; /* may be NULL */
    void *progress_user;
} clattn_measure_options;

/* Defaults: struct_size, 7 repetitions, automatic sizes and run length,
 * sweep on, not quick, no progress callback. NULL-safe. */
CLATTN_API void clattn_default_measure_options(clattn_measure_options *opts);

#define CLATTN_SWEEP_MAX 64

typedef struct clattn_sweep_point {
    uint64_t footprint_bytes;  /* bytes read over and over */
    clattn_stat bandwidth;     /* read bytes/s */
} clattn_sweep_point;

/* Ceilings measured on one device. The identity strings key the saved file.
 * Set one up with clattn_measurement_init before the library fills or reads
 * it (struct_size: clattn/types.h, "Structs that grow"). */
typedef struct clattn_measurement {
    size_t struct_size;         /* sizeof(clattn_measurement) of the caller's header */
    char device_name[256];      /* CL_DEVICE_NAME */
    char driver_version[128];   /* CL_DRIVER_VERSION */
    char platform_version[256]; /* CL_PLATFORM_VERSION */
    int64_t unix_time;          /* when it was measured */
    int quick;                  /* measured with the quick option */
    uint64_t bandwidth_buffer_bytes;
    clattn_stat bandwidth;      /* bytes/s, read + write, float4 copy */
    clattn_stat flops_f32;      /* FLOP/s, independent fp32 FMA chains */
    clattn_stat flops_f16;      /* FLOP/s, half-vector multiply-add chains
                                 * (half2 on GPUs); samples 0 when half
                                 * arithmetic does not build (n/a) */
    clattn_stat flops_tensor_f16; /* FLOP/s of mma.sync m16n8k16 (fp16 in, fp32
                                   * accumulate) on NVIDIA sm_80+; samples 0
                                   * elsewhere */
    clattn_stat launch_latency_s;   /* per launch, many empty kernels queued
                                     * back to back, then clFinish */
    clattn_stat launch_roundtrip_s; /* one empty kernel, then clFinish */
    uint32_t n_sweep;
    clattn_sweep_point sweep[CLATTN_SWEEP_MAX];
    double sweep_plateau;       /* read bytes/s in the cache, before the fall */
    double sweep_floor;         /* read bytes/s at the largest footprints */
    uint64_t cache_bytes;       /* the knee: footprint where the bandwidth is
                                 * halfway (geometric) between plateau and
                                 * floor, after 4 extra footprints around it;
                                 * 0 when no fall was found */
    double seconds;             /* wall time clattn_measure took */
    /* API 1.x additions (struct_size tells whether a caller's struct has them). */
    clattn_stat flops_wgmma_f16; /* FLOP/s of Hopper's wgmma.mma_async m64n128k16
                                  * (fp16 in, fp32 accumulate, operands from
                                  * shared memory), an embedded PTX program
                                  * binary run in an OpenCL context of its own:
                                  * compute capability 9.0 and a library built
                                  * with it (meson option ptx); samples 0
                                  * elsewhere */
    int wgmma_status;           /* 0, or the CLATTN_E* code of a wgmma try that
                                 * failed (refused binary, launch fault): the
                                 * other figures stand */
    char wgmma_error[256];      /* that failure's detail, "" when none */
} clattn_measurement;

/* Zeroes *m and sets its struct_size. NULL-safe. */
CLATTN_API void clattn_measurement_init(clattn_measurement *m);

/* Measures the context's device: memory bandwidth, fp32 and fp16 FMA rates,
 * launch latency and (opts->sweep) the last-level cache by a working-set
 * sweep. Each figure: an untimed warm-up, work scaled to opts->run_seconds,
 * then opts->repetitions timed runs (median, min-max). Allocates device
 * buffers while it runs: 2 x bandwidth_bytes, then the largest sweep
 * footprint. `opts` may be NULL (defaults). Timing uses profiling events when
 * the queue has profiling enabled, else clFinish and a host clock. About 2 s
 * on an H200, under ~10 s on PoCL with 2 cores. Uses the context's queue, so
 * not concurrently with other work on the same context. Never prints: stages
 * go to opts->progress. *out must be set up with clattn_measurement_init. */
CLATTN_API int clattn_measure(clattn_ctx *ctx, const clattn_measure_options *opts,
                              clattn_measurement *out);

/* Writes `m` to the per-device file (see clattn_measure_path), atomically
 * (temporary file and rename), creating the directory. CLATTN_EIO on a file
 * system failure; CLATTN_EINVAL for NULL, a struct not set up, or a
 * measurement without a device name. */
CLATTN_API int clattn_measure_save(const clattn_measurement *m);

/* Reads the saved measurement of `dev` into *out (set up with
 * clattn_measurement_init). CLATTN_EIO when there is none (or it cannot be
 * read), CLATTN_EFORMAT when it is malformed or belongs to another device
 * or driver. */
CLATTN_API int clattn_measure_load(cl_device_id dev, clattn_measurement *out);

/* The file measurements of `dev` are saved in: $XDG_CACHE_HOME/clattn (or
 * ~/.cache/clattn) / <device name>-<hash of name, driver, platform version>.txt.
 * CLATTN_EOVERFLOW if it does not fit `cap`, CLATTN_EIO without a home. */
CLATTN_API int clattn_measure_path(cl_device_id dev, char *path, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* CLATTN_DEVICE_H */
