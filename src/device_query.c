/* What a device reports (OpenCL and vendor attributes), a small table of known
 * devices, and the ceilings the model uses, each labelled with its source. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_query.h"
#include "internal.h"

/* Vendor attribute enums, spelled out so older headers suffice. */
enum {
    NV_COMPUTE_CAPABILITY_MAJOR = 0x4000,
    NV_COMPUTE_CAPABILITY_MINOR = 0x4001,
    NV_REGISTERS_PER_BLOCK = 0x4002,
    NV_WARP_SIZE = 0x4003,
    NV_SHARED_MEM_PER_SM = 0x400b, /* undocumented; the SM's shared memory */
    AMD_BOARD_NAME = 0x4038,
    AMD_GLOBAL_FREE_MEMORY = 0x4039,
    AMD_WAVEFRONT_WIDTH = 0x4043,
    INTEL_NUM_SLICES = 0x4252,
    INTEL_NUM_SUB_SLICES_PER_SLICE = 0x4253,
    INTEL_NUM_EUS_PER_SUB_SLICE = 0x4254,
    INTEL_NUM_THREADS_PER_EU = 0x4255,
    DEVICE_MAX_NUM_SUB_GROUPS = 0x105C, /* OpenCL 2.1 */
};

#define MiB (1024.0 * 1024.0)

/* Published figures of devices whose reported cache size is not the
 * last-level cache. Matched in order (case-insensitive substring of the
 * device name or AMD board name), so specific names come first. FLOP/s: fp16
 * is the dense matrix-unit rate with fp32 accumulation, fp32 the FMA rate. */
static const struct known_device {
    const char *match;
    double cache_bytes; /* last-level cache (L2, or AMD's Infinity Cache) */
    double bandwidth;   /* device memory, bytes/s */
    double flops_f16;
    double flops_f32;
} known_devices[] = {
    { "H200", 60 * MiB, 4.8e12, 989e12, 67e12 },
    { "H100 PCIe", 50 * MiB, 2.0e12, 756e12, 51e12 },
    { "H100 NVL", 50 * MiB, 3.9e12, 835e12, 60e12 },
    { "H100", 50 * MiB, 3.35e12, 989e12, 67e12 },
    { "A100-SXM4-80GB", 40 * MiB, 2.039e12, 312e12, 19.5e12 },
    { "A100 80GB PCIe", 40 * MiB, 1.935e12, 312e12, 19.5e12 },
    { "A100", 40 * MiB, 1.555e12, 312e12, 19.5e12 },
    { "RTX 4090", 72 * MiB, 1.008e12, 165.2e12, 82.6e12 },
    { "MI300X", 256 * MiB, 5.3e12, 1307.4e12, 81.7e12 },
};

const char *clattn_source_name(clattn_source src)
{
    switch (src) {
    case CLATTN_SRC_NONE: return "unknown";
    case CLATTN_SRC_REPORTED: return "reported";
    case CLATTN_SRC_VENDOR: return "vendor attribute";
    case CLATTN_SRC_MEASURED: return "measured";
    case CLATTN_SRC_TABLE: return "table";
    case CLATTN_SRC_GIVEN: return "given";
    case CLATTN_SRC_PRESET: return "preset";
    }
    return "unknown";
}

static int contains_nocase(const char *haystack, const char *needle)
{
    size_t n = strlen(needle);
    for (; *haystack; haystack++) {
        size_t i = 0;
        while (i < n && tolower((unsigned char)haystack[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return 1;
    }
    return n == 0;
}

int extension_listed(const char *extensions, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = extensions; (p = strstr(p, name)) != NULL; p += n) {
        int starts = p == extensions || p[-1] == ' ';
        int ends = p[n] == '\0' || p[n] == ' ';
        if (starts && ends)
            return 1;
    }
    return 0;
}

static int fail_device_info(cl_int err, const char *param)
{
    char call[96];
    snprintf(call, sizeof call, "clGetDeviceInfo(%s)", param);
    return clattn_fail_cl(err, call);
}

/* A fixed-size property. */
static int info_value(cl_device_id dev, cl_device_info param, const char *label, void *value,
                      size_t size)
{
    cl_int err = clGetDeviceInfo(dev, param, size, value, NULL);
    return err == CL_SUCCESS ? 0 : fail_device_info(err, label);
}

/* A string property in a new malloc'd buffer (*out), whatever its length. */
static int info_string_alloc(cl_device_id dev, cl_device_info param, const char *label,
                             char **out)
{
    size_t len = 0;
    cl_int err = clGetDeviceInfo(dev, param, 0, NULL, &len);
    if (err != CL_SUCCESS)
        return fail_device_info(err, label);
    char *s = malloc(len + 1);
    if (!s)
        return clattn_fail(CLATTN_ENOMEM, "%s: %zu bytes", label, len + 1);
    err = clGetDeviceInfo(dev, param, len, s, NULL);
    if (err != CL_SUCCESS) {
        free(s);
        return fail_device_info(err, label);
    }
    s[len] = '\0';
    *out = s;
    return 0;
}

/* A string property truncated to `cap` (trailing spaces removed). */
static int info_string(cl_device_id dev, cl_device_info param, const char *label, char *buf,
                       size_t cap)
{
    char *s = NULL;
    int rc = info_string_alloc(dev, param, label, &s);
    if (rc)
        return rc;
    snprintf(buf, cap, "%s", s);
    free(s);
    for (size_t n = strlen(buf); n > 0 && buf[n - 1] == ' '; n--)
        buf[n - 1] = '\0';
    return 0;
}

#define INFO_VALUE(dev, param, var) info_value(dev, param, #param, &(var), sizeof(var))
#define INFO_STRING(dev, param, buf) info_string(dev, param, #param, buf, sizeof(buf))

/* An integer vendor attribute of 4 or 8 bytes; 0 when it does not answer. */
static uint64_t vendor_uint(cl_device_id dev, cl_uint param)
{
    size_t size = 0;
    if (clGetDeviceInfo(dev, param, 0, NULL, &size) != CL_SUCCESS)
        return 0;
    if (size == sizeof(cl_uint)) {
        cl_uint v = 0;
        return clGetDeviceInfo(dev, param, size, &v, NULL) == CL_SUCCESS ? v : 0;
    }
    if (size == sizeof(cl_ulong)) {
        cl_ulong v = 0;
        return clGetDeviceInfo(dev, param, size, &v, NULL) == CL_SUCCESS ? v : 0;
    }
    return 0;
}

static void query_nv(cl_device_id dev, clattn_device_props *p)
{
    p->nv.present = 1;
    p->nv.cc_major = (uint32_t)vendor_uint(dev, NV_COMPUTE_CAPABILITY_MAJOR);
    p->nv.cc_minor = (uint32_t)vendor_uint(dev, NV_COMPUTE_CAPABILITY_MINOR);
    p->nv.registers_per_block = (uint32_t)vendor_uint(dev, NV_REGISTERS_PER_BLOCK);
    p->nv.warp_size = (uint32_t)vendor_uint(dev, NV_WARP_SIZE);
    p->nv.shared_mem_per_sm = vendor_uint(dev, NV_SHARED_MEM_PER_SM);
}

static void query_amd(cl_device_id dev, clattn_device_props *p)
{
    p->amd.present = 1;
    if (clGetDeviceInfo(dev, AMD_BOARD_NAME, sizeof p->amd.board_name, p->amd.board_name, NULL)
        != CL_SUCCESS)
        p->amd.board_name[0] = '\0';
    p->amd.board_name[sizeof p->amd.board_name - 1] = '\0';
    p->amd.wavefront_width = (uint32_t)vendor_uint(dev, AMD_WAVEFRONT_WIDTH);
    /* An array of size_t in KiB: total free, then the largest free block. */
    size_t free_kib[2] = { 0, 0 }, size = 0;
    if (clGetDeviceInfo(dev, AMD_GLOBAL_FREE_MEMORY, 0, NULL, &size) == CL_SUCCESS
        && size >= sizeof free_kib[0] && size <= sizeof free_kib
        && clGetDeviceInfo(dev, AMD_GLOBAL_FREE_MEMORY, size, free_kib, NULL) == CL_SUCCESS)
        p->amd.free_mem_bytes = (uint64_t)free_kib[0] * 1024;
}

static void query_intel(cl_device_id dev, clattn_device_props *p)
{
    p->intel.present = 1;
    p->intel.slices = (uint32_t)vendor_uint(dev, INTEL_NUM_SLICES);
    p->intel.sub_slices_per_slice = (uint32_t)vendor_uint(dev, INTEL_NUM_SUB_SLICES_PER_SLICE);
    p->intel.eus_per_sub_slice = (uint32_t)vendor_uint(dev, INTEL_NUM_EUS_PER_SUB_SLICE);
    p->intel.threads_per_eu = (uint32_t)vendor_uint(dev, INTEL_NUM_THREADS_PER_EU);
}

/* Builds measure.cl's fp16 variant (half2 FMA chains under cl_khr_fp16) in a
 * throwaway context: 1 if it builds, 0 if not, -1 if it could not be tried.
 * NVIDIA, for one, computes half correctly without advertising cl_khr_fp16. */
static int probe_fp16(cl_device_id dev, cl_platform_id platform)
{
    char *src = NULL;
    if (clattn_kernel_source("measure.cl", &src))
        return -1;
    int result = -1;
    cl_int err;
    cl_context_properties props[] = { CL_CONTEXT_PLATFORM, (cl_context_properties)platform, 0 };
    cl_context context = clCreateContext(props, 1, &dev, NULL, NULL, &err);
    if (err != CL_SUCCESS)
        goto free_src;
    const char *text = src;
    cl_program program = clCreateProgramWithSource(context, 1, &text, NULL, &err);
    if (err != CL_SUCCESS)
        goto release_context;
    err = clBuildProgram(program, 1, &dev, "-DMEASURE_FP16=1 -DFMA_TYPE=half2", NULL, NULL);
    result = err == CL_SUCCESS;
    clReleaseProgram(program);
release_context:
    clReleaseContext(context);
free_src:
    free(src);
    return result;
}

static clattn_vendor vendor_of(cl_uint vendor_id, const char *vendor)
{
    if (vendor_id == 0x10de || contains_nocase(vendor, "nvidia"))
        return CLATTN_VENDOR_NVIDIA;
    if (vendor_id == 0x1002 || contains_nocase(vendor, "advanced micro devices")
        || contains_nocase(vendor, "amd"))
        return CLATTN_VENDOR_AMD;
    if (vendor_id == 0x8086 || contains_nocase(vendor, "intel"))
        return CLATTN_VENDOR_INTEL;
    return CLATTN_VENDOR_OTHER;
}

clattn_vendor device_vendor(cl_device_id dev)
{
    cl_uint vendor_id = 0;
    char vendor[128] = "";
    clGetDeviceInfo(dev, CL_DEVICE_VENDOR_ID, sizeof vendor_id, &vendor_id, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_VENDOR, sizeof vendor, vendor, NULL);
    vendor[sizeof vendor - 1] = '\0';
    return vendor_of(vendor_id, vendor);
}

/* Names, versions and the platform's strings. */
static int query_strings(cl_device_id dev, clattn_device_props *p, cl_platform_id *platform)
{
    int rc;
    if ((rc = INFO_STRING(dev, CL_DEVICE_NAME, p->name))
        || (rc = INFO_STRING(dev, CL_DEVICE_VENDOR, p->vendor))
        || (rc = INFO_STRING(dev, CL_DRIVER_VERSION, p->driver_version))
        || (rc = INFO_STRING(dev, CL_DEVICE_VERSION, p->version))
        || (rc = INFO_STRING(dev, CL_DEVICE_OPENCL_C_VERSION, p->opencl_c_version))
        || (rc = INFO_VALUE(dev, CL_DEVICE_PLATFORM, *platform)))
        return rc;
    cl_int err = clGetPlatformInfo(*platform, CL_PLATFORM_NAME, sizeof p->platform_name,
                                   p->platform_name, NULL);
    if (err == CL_SUCCESS)
        err = clGetPlatformInfo(*platform, CL_PLATFORM_VERSION, sizeof p->platform_version,
                                p->platform_version, NULL);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "clGetPlatformInfo");
    p->platform_name[sizeof p->platform_name - 1] = '\0';
    p->platform_version[sizeof p->platform_version - 1] = '\0';
    if (sscanf(p->version, "OpenCL %d.%d", &p->cl_major, &p->cl_minor) != 2)
        p->cl_major = p->cl_minor = 0;
    return 0;
}

/* Sizes, counts and clocks. */
static int query_numbers(cl_device_id dev, clattn_device_props *p)
{
    cl_uint cu, clock, line, vendor_id;
    cl_ulong global, max_alloc, local, cache;
    size_t max_wg;
    int rc;
    if ((rc = INFO_VALUE(dev, CL_DEVICE_TYPE, p->type))
        || (rc = INFO_VALUE(dev, CL_DEVICE_VENDOR_ID, vendor_id))
        || (rc = INFO_VALUE(dev, CL_DEVICE_MAX_COMPUTE_UNITS, cu))
        || (rc = INFO_VALUE(dev, CL_DEVICE_MAX_CLOCK_FREQUENCY, clock))
        || (rc = INFO_VALUE(dev, CL_DEVICE_GLOBAL_MEM_SIZE, global))
        || (rc = INFO_VALUE(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, max_alloc))
        || (rc = INFO_VALUE(dev, CL_DEVICE_LOCAL_MEM_SIZE, local))
        || (rc = INFO_VALUE(dev, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, cache))
        || (rc = INFO_VALUE(dev, CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE, line))
        || (rc = INFO_VALUE(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, max_wg)))
        return rc;
    p->vendor_id = vendor_of(vendor_id, p->vendor);
    p->compute_units = cu;
    p->clock_mhz = clock;
    p->global_mem_bytes = global;
    p->max_alloc_bytes = max_alloc;
    p->local_mem_bytes = local;
    p->global_cache_bytes = cache;
    p->global_cache_line_bytes = line;
    p->global_cache_is_l1 = p->vendor_id == CLATTN_VENDOR_NVIDIA;
    p->max_work_group_size = max_wg;
    return 0;
}

/* Extensions: fp16, sub-groups, vendor attribute queries. */
static int query_extensions(cl_device_id dev, clattn_device_props *p)
{
    char *ext = NULL;
    int rc = info_string_alloc(dev, CL_DEVICE_EXTENSIONS, "CL_DEVICE_EXTENSIONS", &ext);
    if (rc)
        return rc;
    p->fp16_advertised = extension_listed(ext, "cl_khr_fp16");
    p->subgroups_khr = extension_listed(ext, "cl_khr_subgroups");
    p->subgroups_intel = extension_listed(ext, "cl_intel_subgroups");
    if (p->cl_major * 10 + p->cl_minor >= 21) {
        cl_uint n = 0;
        if (clGetDeviceInfo(dev, DEVICE_MAX_NUM_SUB_GROUPS, sizeof n, &n, NULL) == CL_SUCCESS)
            p->max_sub_groups = n;
    }
    if (extension_listed(ext, "cl_nv_device_attribute_query"))
        query_nv(dev, p);
    if (extension_listed(ext, "cl_amd_device_attribute_query"))
        query_amd(dev, p);
    if (extension_listed(ext, "cl_intel_device_attribute_query"))
        query_intel(dev, p);
    free(ext);
    return 0;
}

int clattn_device_query(cl_device_id dev, clattn_device_props *out)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(dev != NULL);
    CLATTN_CHECK_ARG(out != NULL);
    clattn_device_props p;
    memset(&p, 0, sizeof p);
    cl_platform_id platform = NULL;
    int rc;
    if ((rc = query_strings(dev, &p, &platform)) || (rc = query_numbers(dev, &p))
        || (rc = query_extensions(dev, &p)))
        return rc;
    p.fp16_builds = probe_fp16(dev, platform);
    clattn_clear_error();
    *out = p;
    return 0;
}

int device_identity(cl_device_id dev, char *name, size_t name_cap, char *driver,
                    size_t driver_cap, char *platform_version, size_t platform_cap)
{
    cl_platform_id platform;
    int rc;
    if ((rc = info_string(dev, CL_DEVICE_NAME, "CL_DEVICE_NAME", name, name_cap))
        || (rc = info_string(dev, CL_DRIVER_VERSION, "CL_DRIVER_VERSION", driver, driver_cap))
        || (rc = INFO_VALUE(dev, CL_DEVICE_PLATFORM, platform)))
        return rc;
    cl_int err = clGetPlatformInfo(platform, CL_PLATFORM_VERSION, platform_cap,
                                   platform_version, NULL);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "clGetPlatformInfo(CL_PLATFORM_VERSION)");
    platform_version[platform_cap - 1] = '\0';
    return 0;
}

static const struct known_device *known_device_lookup(cl_device_id dev, const char *name)
{
    char board[128] = "";
    size_t size = 0;
    if (clGetDeviceInfo(dev, AMD_BOARD_NAME, 0, NULL, &size) == CL_SUCCESS
        && size <= sizeof board
        && clGetDeviceInfo(dev, AMD_BOARD_NAME, size, board, NULL) == CL_SUCCESS)
        board[sizeof board - 1] = '\0';
    else
        board[0] = '\0';
    for (size_t i = 0; i < sizeof known_devices / sizeof known_devices[0]; i++)
        if (contains_nocase(name, known_devices[i].match)
            || (board[0] && contains_nocase(board, known_devices[i].match)))
            return &known_devices[i];
    return NULL;
}

static clattn_figure figure(double value, clattn_source source)
{
    clattn_figure f = { value, value > 0 ? source : CLATTN_SRC_NONE };
    if (!(value > 0))
        f.value = 0;
    return f;
}

/* Memory one process may really use on NVIDIA's OpenCL: the CUDA context
 * keeps part of the reported global memory. On an H200 (driver 580.159.04)
 * the naive path's buffers ran at 138.87 GiB and failed at 139.34 GiB of the
 * reported 139.80 GiB: 768 MiB sits between the two. */
#define NVIDIA_CONTEXT_RESERVE (768ull << 20)

int device_memory_limits(cl_device_id dev, clattn_figure *capacity, clattn_figure *max_alloc)
{
    cl_ulong global, largest;
    int rc;
    if ((rc = INFO_VALUE(dev, CL_DEVICE_GLOBAL_MEM_SIZE, global))
        || (rc = INFO_VALUE(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, largest)))
        return rc;
    *capacity = figure((double)global, CLATTN_SRC_REPORTED);
    *max_alloc = figure((double)largest, CLATTN_SRC_REPORTED);
    if (device_vendor(dev) == CLATTN_VENDOR_NVIDIA && global > 2 * NVIDIA_CONTEXT_RESERVE) {
        /* NVIDIA reports a quarter of memory as the largest buffer but
         * allocates more (34.96 GiB against 34.95 reported, and 67.5 GiB,
         * on the H200): only the memory itself bounds a buffer there. */
        *capacity = figure((double)(global - NVIDIA_CONTEXT_RESERVE), CLATTN_SRC_TABLE);
        *max_alloc = *capacity;
    }
    return 0;
}

int device_ceilings_unmeasured(cl_device_id dev, clattn_ceilings *out)
{
    char name[256];
    cl_ulong global, max_alloc, cache;
    int rc;
    if ((rc = INFO_STRING(dev, CL_DEVICE_NAME, name))
        || (rc = INFO_VALUE(dev, CL_DEVICE_GLOBAL_MEM_SIZE, global))
        || (rc = INFO_VALUE(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, max_alloc))
        || (rc = INFO_VALUE(dev, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, cache)))
        return rc;
    memset(out, 0, sizeof *out);
    if ((rc = device_memory_limits(dev, &out->global_mem_bytes, &out->max_alloc_bytes)))
        return rc;
    /* No vendor attribute reports the last-level cache (NVIDIA's reported
     * figure is the L1s; AMD's is the L2 without the Infinity Cache), so the
     * table comes first. */
    const struct known_device *known = known_device_lookup(dev, name);
    if (known && known->cache_bytes > 0)
        out->cache_bytes = figure(known->cache_bytes, CLATTN_SRC_TABLE);
    else
        out->cache_bytes = figure((double)cache, CLATTN_SRC_REPORTED);
    if (known) {
        out->bandwidth = figure(known->bandwidth, CLATTN_SRC_TABLE);
        out->flops_f32 = figure(known->flops_f32, CLATTN_SRC_TABLE);
        out->flops_f16 = figure(known->flops_f16, CLATTN_SRC_TABLE);
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
    /* A quick measurement (small buffers that may sit in a cache) is a
     * smoke test, not a ceiling. */
    if (clattn_measure_load(dev, m) == 0 && !m->quick) {
        if (m->bandwidth.samples)
            c.bandwidth = figure(m->bandwidth.median, CLATTN_SRC_MEASURED);
        if (m->flops_f32.samples)
            c.flops_f32 = figure(m->flops_f32.median, CLATTN_SRC_MEASURED);
        /* flops_f16 is the matrix units' rate where they exist: the measured
         * mma.sync rate first (what the tensor-core kernels can reach), then
         * a table's datasheet figure, and the half-vector rate only where
         * neither exists (on an H200 it is 15 times lower). */
        if (m->flops_tensor_f16.samples)
            c.flops_f16 = figure(m->flops_tensor_f16.median, CLATTN_SRC_MEASURED);
        else if (m->flops_f16.samples && c.flops_f16.source != CLATTN_SRC_TABLE)
            c.flops_f16 = figure(m->flops_f16.median, CLATTN_SRC_MEASURED);
        if (m->launch_latency_s.samples)
            c.launch_latency_s = figure(m->launch_latency_s.median, CLATTN_SRC_MEASURED);
        if (m->cache_bytes)
            c.cache_bytes = figure((double)m->cache_bytes, CLATTN_SRC_MEASURED);
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
