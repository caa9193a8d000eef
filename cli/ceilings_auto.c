/* Ceilings measured when none are saved (see ceilings_auto.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ceilings_auto.h"

/* Whether a full measurement of the device is saved: a quick one is a smoke
 * test (small buffers that may sit in a cache) and counts as none. */
static int have_saved(cl_device_id dev, clattn_measurement *m)
{
    return clattn_measure_load(dev, m) == CLATTN_OK && !m->quick;
}

/* Where the figures could not be saved, this run still uses them, in the
 * order clattn_device_ceilings would (the tensor-core rate first for fp16,
 * the half-vector rate only where nothing better is known). */
static void overlay(const clattn_measurement *m, clattn_ceilings *c)
{
    if (m->bandwidth.samples)
        c->bandwidth = (clattn_figure){ m->bandwidth.median, CLATTN_SRC_MEASURED };
    if (m->flops_f32.samples)
        c->flops_f32 = (clattn_figure){ m->flops_f32.median, CLATTN_SRC_MEASURED };
    if (m->flops_tensor_f16.samples)
        c->flops_f16 = (clattn_figure){ m->flops_tensor_f16.median, CLATTN_SRC_MEASURED };
    else if (m->flops_f16.samples && c->flops_f16.source == CLATTN_SRC_NONE)
        c->flops_f16 = (clattn_figure){ m->flops_f16.median, CLATTN_SRC_MEASURED };
    if (m->launch_latency_s.samples)
        c->launch_latency_s = (clattn_figure){ m->launch_latency_s.median, CLATTN_SRC_MEASURED };
}

/* "bandwidth 37.4 GB/s, fp32 117 GFLOP/s, 3.2 s" */
static void summary(const clattn_measurement *m, char *buf, size_t cap)
{
    snprintf(buf, cap, "bandwidth %.3g GB/s, fp32 %.3g GFLOP/s, %.2g s",
             m->bandwidth.median * 1e-9, m->flops_f32.median * 1e-9, m->seconds);
}

int ceilings_measure_missing(clattn_ctx *ctx, clattn_ceilings *out, char *note, size_t cap)
{
    note[0] = '\0';
    clattn_measurement *m = malloc(sizeof *m);
    if (!m) {
        snprintf(note, cap, "no host memory to measure the device: table and reported figures");
        return clattn_device_ceilings(ctx, out);
    }
    clattn_measurement_init(m); /* the library reads and fills it up to its struct_size */
    cl_device_id dev = clattn_cl_device(ctx);
    if (have_saved(dev, m)) {
        free(m);
        return clattn_device_ceilings(ctx, out);
    }
    clattn_measure_options opts;
    clattn_default_measure_options(&opts);
    opts.sweep = 0;
    int rc = clattn_measure(ctx, &opts, m);
    if (rc < 0) {
        snprintf(note, cap,
                 "no measured ceilings are saved for this device and measuring them failed "
                 "(%s: %.200s): the figures below come from the table and the device",
                 clattn_error_name(rc), clattn_last_error_detail());
        free(m);
        return clattn_device_ceilings(ctx, out);
    }
    char what[96], path[1024];
    summary(m, what, sizeof what);
    rc = clattn_measure_save(m);
    if (rc == CLATTN_OK && clattn_measure_path(dev, path, sizeof path) != CLATTN_OK)
        snprintf(path, sizeof path, "the cache directory");
    if (rc < 0) {
        snprintf(note, cap,
                 "no measured ceilings were saved for this device: measured them (%s) but "
                 "could not save them (%s: %.200s), so they serve this run only",
                 what, clattn_error_name(rc), clattn_last_error_detail());
        rc = clattn_device_ceilings(ctx, out);
        if (rc == CLATTN_OK)
            overlay(m, out);
    } else {
        snprintf(note, cap,
                 "no measured ceilings were saved for this device: measured them (%s; no cache "
                 "sweep: clattn devices --measure adds it) and saved them to %.600s",
                 what, path);
        rc = clattn_device_ceilings(ctx, out);
    }
    free(m);
    return rc;
}

clattn_figure ceilings_peak(const clattn_ceilings *c, clattn_dtype dtype, int *f32_stands_in)
{
    const int stands_in = dtype != CLATTN_F32 && c->flops_f16.source == CLATTN_SRC_NONE &&
                          c->flops_f32.source != CLATTN_SRC_NONE;
    if (f32_stands_in)
        *f32_stands_in = stands_in;
    return dtype == CLATTN_F32 || stands_in ? c->flops_f32 : c->flops_f16;
}
