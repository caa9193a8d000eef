/* A fused kernel described once: what it needs, how its tiles are chosen,
 * how its build options are formed and how it is launched. Path selection,
 * clattn devices, --kernel, clattn tune and clattn_describe_kernels all read
 * these descriptions (fused/table.c); adding a kernel is adding one and its
 * cl/ file. */
#ifndef CLATTN_SRC_FUSED_KERNEL_H
#define CLATTN_SRC_FUSED_KERNEL_H

#include <stddef.h>

#include "device/facts.h"
#include "context/call.h"

struct fused_tiles {
    size_t bm, bn; /* query rows per work-group, keys per block */
};

/* A kernel configured for one shape: its tiles and what follows from them. */
struct fused_plan {
    const struct fused_kernel *kernel;
    struct fused_tiles tiles;
    size_t local;           /* work-items per group */
    size_t threads_per_row; /* portable: work-items per query row */
    size_t padded_dim;      /* portable: d rounded up to a multiple of TPR */
    size_t warps, m_tiles;  /* tensor cores: BM = 16 x m_tiles x warps */
    char note[160];         /* why tuned tiles were set aside, "" otherwise */
};

struct fused_kernel {
    const char *name;       /* in --kernel, tune files and run info */
    clattn_fused_kernel id; /* the public enum value */
    const char *file;       /* its cl/ source */
    const char *summary;    /* one line, for clattn devices */
    /* Why it cannot run `s` on this device, or NULL (decided before any
     * build). */
    const char *(*cannot_run)(const struct device_facts *dev, const clattn_shape *s);
    /* A shape whose build proves that the compiler takes the kernel (NULL:
     * any OpenCL C 1.2 compiler does). The probe builds a real variant,
     * with the options the launch would use. */
    const clattn_shape *probe_shape;
    /* clattn tune's candidates, and the defaults' fallback order: the first
     * that configures wins when default_tiles is NULL. */
    const struct fused_tiles *candidates;
    size_t n_candidates;
    /* Tiles when neither the caller nor clattn tune chose them (may be NULL). */
    void (*default_tiles)(const struct device_facts *dev, const clattn_shape *s,
                          struct fused_tiles *out);
    /* Checks plan->tiles for `s` on this device and fills the rest of the
     * plan; CLATTN_EINVAL or CLATTN_EUNSUPPORTED naming why not. */
    int (*configure)(const struct device_facts *dev, const clattn_shape *s,
                     struct fused_plan *plan);
    /* The build options of a configured plan: the probe's and the launch's. */
    void (*options)(const clattn_shape *s, int causal, const struct fused_plan *plan, char *buf,
                    size_t cap);
    /* Sets the arguments of the built kernel and enqueues it. */
    int (*launch)(clattn_ctx *ctx, const struct attention_call *call,
                  const struct fused_plan *plan, cl_kernel kernel);
};

/* The kernel entry point every fused .cl file defines. */
#define FUSED_ENTRY "attention_fused"

/* The launch of kernels that take the standard argument list (q, k, v, o,
 * n_q, n_k, heads, group, n_qblocks, scale_log2, causal_off) on a grid of
 * ceil(Nq / BM) x B x H groups of plan->local work-items. */
int fused_launch_standard(clattn_ctx *ctx, const struct attention_call *call,
                          const struct fused_plan *plan, cl_kernel kernel);

/* The table, in AUTO's order of preference. */
extern const struct fused_kernel *const fused_kernels[];
extern const size_t fused_kernel_count;

/* The kernel with public id `id` or name `name`; NULL if none. */
const struct fused_kernel *fused_kernel_by_id(clattn_fused_kernel id);
const struct fused_kernel *fused_kernel_by_name(const char *name);

#endif
