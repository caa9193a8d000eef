/* The library's internal state and the services its modules share. */
#ifndef CLATTN_SRC_INTERNAL_H
#define CLATTN_SRC_INTERNAL_H

#include <stddef.h>

#include "clattn/clattn.h"
#include "error.h"

/* One built program, keyed by kernel file and build options, with the
 * kernel objects made from it so far (each call reuses them: arguments are
 * captured at enqueue, and a context serves one thread at a time). */
#define CLATTN_KERNELS_PER_PROGRAM 8
struct program_entry {
    char *file;
    char *options;
    cl_program program;
    struct {
        char name[48];
        cl_kernel kernel;
    } kernels[CLATTN_KERNELS_PER_PROGRAM];
};

/* A tuned fused tile (src/tune.c). */
struct tune_entry {
    clattn_fused_kernel kernel;
    clattn_dtype dtype;
    size_t head_dim;
    int causal;
    size_t block_m, block_n;
};
#define CLATTN_MAX_TUNED 64

struct clattn_ctx {
    cl_context context;
    cl_command_queue queue;
    cl_device_id device;
    cl_platform_id platform;
    char name[256];            /* "platform: device" */
    int is_nvidia;
    int has_fp16;              /* cl_khr_fp16 advertised */
    int has_nv_attrs;          /* cl_nv_device_attribute_query */
    int nv_cc;                 /* NVIDIA compute capability x 10 (90 = sm_90), else 0 */
    int nv_mma_state;          /* tensor-core kernel: 0 untried, 1 builds, -1 failed */
    char nv_mma_failure[256];  /* why it failed, for the run note */
    int nv_gemm_state;         /* tensor-core GEMM: 0 untried, 1 builds, -1 failed or off */
    cl_ulong global_mem;
    cl_ulong max_alloc;
    cl_ulong local_mem;
    size_t max_wg;
    cl_uint compute_units;
    cl_mem scratch[2];         /* the naive path's S and P, kept between calls */
    size_t scratch_bytes[2];
    struct tune_entry tuned[CLATTN_MAX_TUNED];
    size_t n_tuned;
    int tune_loaded;
    struct program_entry *programs;
    size_t n_programs, cap_programs;
};

/* Returns the source of kernel file `name` (e.g. "fused.cl") in a new
 * NUL-terminated malloc'd buffer: from $CLATTN_KERNEL_DIR when set, else the
 * copy embedded at build time. */
int clattn_kernel_source(const char *name, char **out);

/* Returns the program built from `file` with `options` on the context's
 * device, building it on first use (the context keeps it). On a build
 * failure the detail holds the build log. */
int clattn_program_get(clattn_ctx *ctx, const char *file, const char *options,
                       cl_program *out);

/* Kernel `name` of a cached program, with a reference for the caller, who
 * releases it when done (the context keeps its own). */
int clattn_kernel_get(clattn_ctx *ctx, const char *file, const char *options,
                      const char *name, cl_kernel *out);

/* Tiles recorded by clattn tune for this device: 1 and the tiles if there
 * are some, else 0. */
int clattn_tuned_tiles(clattn_ctx *ctx, clattn_fused_kernel kernel, clattn_dtype dtype,
                       size_t head_dim, int causal, size_t *block_m, size_t *block_n);

/* `opts`, or the defaults written into `storage` when opts is NULL. */
const clattn_options *clattn_options_or_default(const clattn_options *opts,
                                                clattn_options *storage);

/* Releases every program the context built. */
void clattn_programs_release(clattn_ctx *ctx);

/* Checks (a, b) multiplication for overflow: returns 0 and sets *out. */
static inline int mul_overflows(size_t a, size_t b, size_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}

#endif
