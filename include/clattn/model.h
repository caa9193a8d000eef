/*
 * The byte-arithmetic model of attention (docs/MODEL.md): pure functions of a
 * shape and a few device figures, no OpenCL. Used by clattn predict / bench and
 * by the library itself to refuse runs that would not fit.
 */
#ifndef CLATTN_MODEL_H
#define CLATTN_MODEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Device memory one path needs, all buffers live at once. */
typedef struct clattn_memory_plan {
    uint64_t peak_bytes;       /* sum of every buffer the path holds at once */
    uint64_t largest_bytes;    /* largest single buffer */
    const char *largest_name;  /* its name: "Q", "K", "V", "O", "S", "P", "workspace" */
    uint64_t workspace_bytes;  /* extra_workspace_bytes plus the path's own */
} clattn_memory_plan;

/* Memory of `path` (NAIVE or FUSED) for `shape`: naive holds Q, K, V, O, S and
 * P (S and P are B*H*Nq*Nk elements each); fused holds Q, K, V, O.
 * `extra_workspace_bytes` (e.g. CLBlast's temporary buffers) is added.
 * CLATTN_EOVERFLOW if a size overflows 64 bits, CLATTN_EINVAL on bad input. */
CLATTN_API int clattn_model_memory(const clattn_shape *shape, clattn_path path,
                                   uint64_t extra_workspace_bytes, clattn_memory_plan *out);

#ifdef __cplusplus
}
#endif

#endif /* CLATTN_MODEL_H */
