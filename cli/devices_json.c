/* SPDX-License-Identifier: MIT */
/* clattn devices --json: each device's properties, kernels and ceilings, and
 * the measurement report, through the one JSON writer (json.h). */
#include <stdio.h>

#include "devices.h"

/* A property with its source, as the text listing labels it. */
static void sourced(struct json *j, const char *key, double value, const char *source)
{
    json_open(j, key, '{');
    json_num(j, "value", value, 0);
    json_str(j, "source", source);
    json_close(j, '}');
}

static void props_strings(struct json *j, const clattn_device_props *p)
{
    json_str(j, "name", p->name);
    json_str(j, "type", devices_type_name(p->type));
    json_str(j, "vendor", p->vendor);
    json_str(j, "driver_version", p->driver_version);
    json_str(j, "version", p->version);
    json_str(j, "opencl_c_version", p->opencl_c_version);
    json_str(j, "platform", p->platform_name);
    json_str(j, "platform_version", p->platform_version);
}

static void props_numbers(struct json *j, const clattn_device_props *p)
{
    const char *rep = "reported";
    sourced(j, "compute_units", p->compute_units, rep);
    sourced(j, "clock_mhz", p->clock_mhz, rep);
    sourced(j, "global_mem_bytes", (double)p->global_mem_bytes, rep);
    sourced(j, "max_alloc_bytes", (double)p->max_alloc_bytes, rep);
    sourced(j, "local_mem_bytes", (double)p->local_mem_bytes, rep);
    sourced(j, "global_cache_bytes", (double)p->global_cache_bytes, rep);
    json_bool(j, "global_cache_is_l1", p->global_cache_is_l1);
    sourced(j, "global_cache_line_bytes", p->global_cache_line_bytes, rep);
    sourced(j, "max_work_group_size", (double)p->max_work_group_size, rep);
    json_open(j, "fp16", '{');
    json_bool(j, "cl_khr_fp16", p->fp16_advertised);
    if (p->fp16_builds < 0)
        json_null(j, "half_arithmetic_builds");
    else
        json_bool(j, "half_arithmetic_builds", p->fp16_builds);
    json_str(j, "probe_log", p->fp16_builds == 0 ? p->fp16_probe_log : NULL);
    json_close(j, '}');
    json_open(j, "sub_groups", '{');
    json_bool(j, "cl_khr_subgroups", p->subgroups_khr);
    json_bool(j, "cl_intel_subgroups", p->subgroups_intel);
    sourced(j, "max_num_sub_groups", p->max_sub_groups, rep);
    json_close(j, '}');
}

static void props_vendor(struct json *j, const clattn_device_props *p)
{
    const char *ven = "vendor attribute";
    if (p->nv.present) {
        json_open(j, "nv", '{');
        sourced(j, "compute_capability_major", p->nv.cc_major, ven);
        sourced(j, "compute_capability_minor", p->nv.cc_minor, ven);
        sourced(j, "registers_per_block", p->nv.registers_per_block, ven);
        sourced(j, "warp_size", p->nv.warp_size, ven);
        if (p->nv.shared_mem_per_sm)
            sourced(j, "shared_mem_per_sm", (double)p->nv.shared_mem_per_sm, ven);
        json_close(j, '}');
    }
    if (p->amd.present) {
        json_open(j, "amd", '{');
        json_str(j, "board_name", p->amd.board_name);
        sourced(j, "wavefront_width", p->amd.wavefront_width, ven);
        sourced(j, "free_mem_bytes", (double)p->amd.free_mem_bytes, ven);
        json_close(j, '}');
    }
    if (p->intel.present) {
        json_open(j, "intel", '{');
        sourced(j, "slices", p->intel.slices, ven);
        sourced(j, "sub_slices_per_slice", p->intel.sub_slices_per_slice, ven);
        sourced(j, "eus_per_sub_slice", p->intel.eus_per_sub_slice, ven);
        sourced(j, "threads_per_eu", p->intel.threads_per_eu, ven);
        json_close(j, '}');
    }
}

static void ceilings(struct json *j, const char *key, const clattn_ceilings *c)
{
    json_open(j, key, '{');
    json_ceilings_fields(j, c);
    json_close(j, '}');
}

/* Each kernel of the table at d = 128, fp16 and fp32: usable, or why not. */
static void kernels(struct json *j, size_t index)
{
    char sel[32], why[256];
    clattn_ctx *ctx = NULL;
    snprintf(sel, sizeof sel, "%zu", index);
    if (clattn_open(&ctx, sel) < 0)
        return;
    static const clattn_dtype dtypes[] = { CLATTN_F16, CLATTN_F32 };
    json_open(j, "kernels", '[');
    clattn_kernel_info k;
    for (size_t i = 0; clattn_fused_kernel_info(i, &k) == 0; i++) {
        json_open(j, NULL, '{');
        json_str(j, "name", k.name);
        json_str(j, "summary", k.summary);
        for (size_t t = 0; t < 2; t++) {
            clattn_shape s = devices_kernel_shape(dtypes[t]);
            int ok = clattn_fused_kernel_usable(ctx, k.id, &s, why, sizeof why);
            json_open(j, cli_dtype_name(dtypes[t]), '{');
            json_bool(j, "usable", ok == 1);
            json_str(j, "why_not", ok == 1 ? NULL : why);
            json_close(j, '}');
        }
        json_close(j, '}');
    }
    json_close(j, ']');
    clattn_close(&ctx);
}

void devices_print_json(struct json *j, size_t index, const clattn_device_props *p,
                        const clattn_ceilings *c, cl_device_id dev)
{
    json_open(j, NULL, '{');
    json_u64(j, "index", index);
    props_strings(j, p);
    props_numbers(j, p);
    props_vendor(j, p);
    kernels(j, index);
    ceilings(j, "ceilings", c);
    char path[4096];
    if (clattn_measure_path(dev, path, sizeof path) == 0)
        json_str(j, "measurement_file", path);
    json_close(j, '}');
}

static void stat(struct json *j, const char *key, const clattn_stat *s)
{
    if (!s->samples) {
        json_null(j, key);
        return;
    }
    json_open(j, key, '{');
    json_num(j, "median", s->median, 0);
    json_num(j, "min", s->min, 0);
    json_num(j, "max", s->max, 0);
    json_u64(j, "samples", s->samples);
    json_str(j, "source", "measured");
    json_close(j, '}');
}

void devices_print_measurement_json(struct json *j, const clattn_measurement *m,
                                    const clattn_ceilings *before, const char *path)
{
    json_str(j, "device", m->device_name);
    json_str(j, "driver_version", m->driver_version);
    json_str(j, "platform_version", m->platform_version);
    json_bool(j, "quick", m->quick);
    json_num(j, "seconds", m->seconds, 0);
    json_u64(j, "bandwidth_buffer_bytes", m->bandwidth_buffer_bytes);
    stat(j, "bandwidth", &m->bandwidth);
    stat(j, "flops_f32", &m->flops_f32);
    stat(j, "flops_f16", &m->flops_f16);
    stat(j, "flops_tensor_f16", &m->flops_tensor_f16);
    stat(j, "flops_wgmma_f16", &m->flops_wgmma_f16);
    json_num(j, "wgmma_status", m->wgmma_status, 0);
    json_str(j, "wgmma_error", m->wgmma_error);
    stat(j, "launch_latency_s", &m->launch_latency_s);
    stat(j, "launch_roundtrip_s", &m->launch_roundtrip_s);
    json_open(j, "sweep", '[');
    for (uint32_t i = 0; i < m->n_sweep; i++) {
        json_open(j, NULL, '{');
        json_u64(j, "footprint_bytes", m->sweep[i].footprint_bytes);
        stat(j, "bandwidth", &m->sweep[i].bandwidth);
        json_close(j, '}');
    }
    json_close(j, ']');
    json_num(j, "sweep_plateau", m->sweep_plateau, 1);
    json_num(j, "sweep_floor", m->sweep_floor, 1);
    json_num(j, "cache_bytes", (double)m->cache_bytes, 1);
    ceilings(j, "predicted", before);
    json_str(j, "saved_to", m->quick ? NULL : path);
}
