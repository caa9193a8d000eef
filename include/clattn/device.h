/*
 * What the runtime knows about its device: the properties OpenCL and vendor
 * extensions report, and ceilings measured on the device (clattn devices
 * --measure), each figure labelled with where it came from.
 */
#ifndef CLATTN_DEVICE_H
#define CLATTN_DEVICE_H

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
 * per-device file clattn devices --measure saves) where present, else vendor
 * attribute, table or reported values. */
CLATTN_API int clattn_device_ceilings(clattn_ctx *ctx, clattn_ceilings *out);

#ifdef __cplusplus
}
#endif

#endif /* CLATTN_DEVICE_H */
