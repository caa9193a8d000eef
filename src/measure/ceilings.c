/* SPDX-License-Identifier: MIT */
/* The ceilings the model uses for a device: measured figures where a saved
 * measurement exists, else the table of known devices, else what the device
 * reports; each figure says where it came from. */
#include <stdlib.h>
#include <string.h>

#include "measure/ceilings.h"
#include "device/cl_error.h"
#include "device/cl_info.h"
#include "context/context.h"
#include "device/facts.h"
#include "device/known_devices.h"

int device_ceilings_unmeasured(cl_device_id dev, clattn_ceilings *out)
{
    char name[256];
    cl_ulong global, max_alloc, cache;
    int rc;
    if ((rc = CL_INFO_STRING(dev, CL_DEVICE_NAME, name))
        || (rc = CL_INFO_VALUE(dev, CL_DEVICE_GLOBAL_MEM_SIZE, global))
        || (rc = CL_INFO_VALUE(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, max_alloc))
        || (rc = CL_INFO_VALUE(dev, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, cache)))
        return rc;
    memset(out, 0, sizeof *out);
    if ((rc = device_memory_limits(dev, &out->global_mem_bytes, &out->max_alloc_bytes)))
        return rc;
    /* No vendor attribute reports the last-level cache (NVIDIA's reported
     * figure is the L1s; AMD's is the L2 without the Infinity Cache), so the
     * table comes first. */
    const struct known_device *known = known_device_lookup(dev, name);
    if (known && known->cache_bytes > 0)
        out->cache_bytes = figure_of(known->cache_bytes, CLATTN_SRC_TABLE);
    else
        out->cache_bytes = figure_of((double)cache, CLATTN_SRC_REPORTED);
    if (known) {
        out->bandwidth = figure_of(known->bandwidth, CLATTN_SRC_TABLE);
        out->flops_f32 = figure_of(known->flops_f32, CLATTN_SRC_TABLE);
        out->flops_f16 = figure_of(known->flops_f16, CLATTN_SRC_TABLE);
    }
    return 0;
}

int clattn_device_ceilings_cl(cl_device_id dev, clattn_ceilings *out)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(dev != NULL);
    CLATTN_CHECK_ARG(out != NULL);
    clattn_ceilings c;
    int rc = device_ceilings_unmeasured(dev, &c);
    if (rc)
        return rc;
    clattn_measurement *m = malloc(sizeof *m);
    if (!m)
        return clattn_fail(CLATTN_ENOMEM, "clattn_device_ceilings: %zu bytes", sizeof *m);
    clattn_measurement_init(m);
    /* A quick measurement (small buffers that may sit in a cache) is a
     * smoke test, not a ceiling. */
    if (clattn_measure_load(dev, m) == 0 && !m->quick) {
        if (m->bandwidth.samples)
            c.bandwidth = figure_of(m->bandwidth.median, CLATTN_SRC_MEASURED);
        if (m->flops_f32.samples)
            c.flops_f32 = figure_of(m->flops_f32.median, CLATTN_SRC_MEASURED);
        /* flops_f16 is the matrix units' rate where they exist: the measured
         * mma.sync rate first (what the tensor-core kernels can reach), then
         * a table's datasheet figure, and the half-vector rate only where
         * neither exists (on an H200 it is 15 times lower). */
        if (m->flops_tensor_f16.samples)
            c.flops_f16 = figure_of(m->flops_tensor_f16.median, CLATTN_SRC_MEASURED);
        else if (m->flops_f16.samples && c.flops_f16.source != CLATTN_SRC_TABLE)
            c.flops_f16 = figure_of(m->flops_f16.median, CLATTN_SRC_MEASURED);
        if (m->launch_latency_s.samples)
            c.launch_latency_s = figure_of(m->launch_latency_s.median, CLATTN_SRC_MEASURED);
        if (m->cache_bytes)
            c.cache_bytes = figure_of((double)m->cache_bytes, CLATTN_SRC_MEASURED);
    }
    free(m);
    clattn_clear_error(); /* a missing measurement is not a failure */
    *out = c;
    return 0;
}

int clattn_device_ceilings(clattn_ctx *ctx, clattn_ceilings *out)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(ctx != NULL);
    CLATTN_CHECK_ARG(out != NULL);
    return clattn_device_ceilings_cl(ctx->device, out);
}
