/* SPDX-License-Identifier: MIT */
/* Device properties, ceilings, a quick measurement and its saved file, on the
 * first device clattn_open picks. Exits 77 (skipped) without a device.
 * Saved measurements go to a temporary $XDG_CACHE_HOME. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clattn/clattn.h"
#include "clattn/device.h"
#include "device_suite.h"

static clattn_ctx *ctx;
static char cache_home[] = "/tmp/clattn-test-device-XXXXXX";

/* One quick measurement, shared by the tests that need one. */
static clattn_measurement quick;
static int quick_done;

static void measure_quick_once(void)
{
    if (quick_done)
        return;
    clattn_measure_options opts;
    clattn_default_measure_options(&opts);
    opts.quick = 1;
    clattn_measurement_init(&quick);
    int rc = clattn_measure(ctx, &opts, &quick);
    if (rc)
        fail_msg("clattn_measure: %s (%s)", clattn_strerror(rc), clattn_last_error_detail());
    quick_done = 1;
}

static void test_query_first_device(void **state)
{
    (void)state;
    clattn_device_props p;
    int rc = clattn_device_query(clattn_cl_device(ctx), &p);
    assert_int_equal(rc, CLATTN_OK);
    assert_true(strlen(p.name) > 0);
    assert_true(strlen(p.version) > 0);
    assert_true(strlen(p.driver_version) > 0);
    assert_true(strncmp(p.version, "OpenCL ", 7) == 0);
    assert_true(p.cl_major >= 1);
    assert_true(p.compute_units >= 1);
    assert_true(p.global_mem_bytes > 0);
    assert_true(p.max_alloc_bytes > 0);
    assert_true(p.max_alloc_bytes <= p.global_mem_bytes);
    assert_true(p.local_mem_bytes > 0);
    assert_true(p.max_work_group_size >= 1);
    assert_true(p.fp16_builds >= -1 && p.fp16_builds <= 1);
    /* A device that advertises cl_khr_fp16 builds half arithmetic. */
    if (p.fp16_advertised)
        assert_int_equal(p.fp16_builds, 1);
    if (p.nv.present)
        assert_true(p.nv.warp_size > 0 && p.nv.cc_major > 0);
    /* The context's name is "platform: device". */
    assert_non_null(strstr(clattn_device_name(ctx), p.name));
}

static void test_source_names(void **state)
{
    (void)state;
    assert_string_equal(clattn_source_name(CLATTN_SRC_REPORTED), "reported");
    assert_string_equal(clattn_source_name(CLATTN_SRC_VENDOR), "vendor attribute");
    assert_string_equal(clattn_source_name(CLATTN_SRC_MEASURED), "measured");
    assert_string_equal(clattn_source_name(CLATTN_SRC_TABLE), "table");
    assert_string_equal(clattn_source_name(CLATTN_SRC_NONE), "unknown");
    assert_string_equal(clattn_source_name((clattn_source)99), "unknown");
}

static void test_ceilings_without_measurement(void **state)
{
    (void)state;
    clattn_ceilings c;
    assert_int_equal(clattn_device_ceilings(ctx, &c), CLATTN_OK);
    clattn_device_props p;
    assert_int_equal(clattn_device_query(clattn_cl_device(ctx), &p), CLATTN_OK);
    if (p.vendor_id == CLATTN_VENDOR_NVIDIA) {
        /* What the driver really allows: memory less the context's 768 MiB,
         * and no per-buffer limit below that (seen on an H200). */
        assert_int_equal(c.global_mem_bytes.source, CLATTN_SRC_TABLE);
        assert_true(c.global_mem_bytes.value == (double)(p.global_mem_bytes - (768ull << 20)));
        assert_int_equal(c.max_alloc_bytes.source, CLATTN_SRC_TABLE);
        assert_true(c.max_alloc_bytes.value == c.global_mem_bytes.value);
    } else {
        assert_int_equal(c.global_mem_bytes.source, CLATTN_SRC_REPORTED);
        assert_true(c.global_mem_bytes.value == (double)p.global_mem_bytes);
        assert_int_equal(c.max_alloc_bytes.source, CLATTN_SRC_REPORTED);
        assert_true(c.max_alloc_bytes.value == (double)p.max_alloc_bytes);
    }
    assert_true(c.max_alloc_bytes.value <= c.global_mem_bytes.value);
    /* Nothing measured yet in this fresh cache directory. */
    assert_true(c.bandwidth.source == CLATTN_SRC_NONE || c.bandwidth.source == CLATTN_SRC_TABLE);
    assert_true(c.flops_f32.source != CLATTN_SRC_MEASURED);
    assert_int_equal(c.launch_latency_s.source, CLATTN_SRC_NONE);
    if (c.cache_bytes.source != CLATTN_SRC_NONE)
        assert_true(c.cache_bytes.value > 0);
    /* No saved file: EIO, and the ceilings call above did not fail on it. */
    clattn_measurement m;
    clattn_measurement_init(&m);
    assert_int_equal(clattn_measure_load(clattn_cl_device(ctx), &m), CLATTN_EIO);
}

static void assert_stat_sane(const clattn_stat *s, uint32_t samples)
{
    assert_int_equal(s->samples, samples);
    assert_true(s->median > 0);
    assert_true(s->min <= s->median && s->median <= s->max);
}

static void test_measure_quick(void **state)
{
    (void)state;
    measure_quick_once();
    assert_true(quick.quick);
    assert_true(quick.device_name[0] != '\0');
    assert_true(quick.bandwidth_buffer_bytes > 0);
    assert_stat_sane(&quick.bandwidth, 3);
    assert_stat_sane(&quick.flops_f32, 3);
    assert_stat_sane(&quick.launch_latency_s, 3);
    assert_stat_sane(&quick.launch_roundtrip_s, 3);
    if (quick.flops_f16.samples)
        assert_stat_sane(&quick.flops_f16, 3);
    assert_true(quick.n_sweep >= 2 && quick.n_sweep <= CLATTN_SWEEP_MAX);
    for (uint32_t i = 0; i < quick.n_sweep; i++) {
        assert_stat_sane(&quick.sweep[i].bandwidth, 3);
        if (i)
            assert_true(quick.sweep[i].footprint_bytes > quick.sweep[i - 1].footprint_bytes);
    }
    assert_true(quick.seconds > 0);
}

static void assert_stat_equal(const clattn_stat *a, const clattn_stat *b)
{
    assert_true(a->median == b->median && a->min == b->min && a->max == b->max);
    assert_int_equal(a->samples, b->samples);
}

static void test_save_load_round_trip(void **state)
{
    (void)state;
    measure_quick_once();
    clattn_measurement m = quick;
    m.quick = 0; /* the ceilings ignore quick measurements */
    m.cache_bytes = 12345678; /* exercise every field */
    m.sweep_plateau = 1.0 / 3.0;
    m.sweep_floor = 0.1;
    assert_int_equal(clattn_measure_save(&m), CLATTN_OK);

    char path[4096];
    cl_device_id dev = clattn_cl_device(ctx);
    assert_int_equal(clattn_measure_path(dev, path, sizeof path), CLATTN_OK);
    assert_non_null(strstr(path, cache_home));
    assert_int_equal(access(path, R_OK), 0);

    clattn_measurement back;
    clattn_measurement_init(&back);
    assert_int_equal(clattn_measure_load(dev, &back), CLATTN_OK);
    assert_string_equal(back.device_name, m.device_name);
    assert_string_equal(back.driver_version, m.driver_version);
    assert_string_equal(back.platform_version, m.platform_version);
    assert_true(back.unix_time == m.unix_time);
    assert_int_equal(back.quick, m.quick);
    assert_true(back.seconds == m.seconds);
    assert_true(back.bandwidth_buffer_bytes == m.bandwidth_buffer_bytes);
    assert_stat_equal(&back.bandwidth, &m.bandwidth);
    assert_stat_equal(&back.flops_f32, &m.flops_f32);
    assert_stat_equal(&back.flops_f16, &m.flops_f16);
    assert_stat_equal(&back.flops_tensor_f16, &m.flops_tensor_f16);
    assert_stat_equal(&back.launch_latency_s, &m.launch_latency_s);
    assert_stat_equal(&back.launch_roundtrip_s, &m.launch_roundtrip_s);
    assert_true(back.cache_bytes == m.cache_bytes);
    assert_true(back.sweep_plateau == m.sweep_plateau);
    assert_true(back.sweep_floor == m.sweep_floor);
    assert_int_equal(back.n_sweep, m.n_sweep);
    for (uint32_t i = 0; i < m.n_sweep; i++) {
        assert_true(back.sweep[i].footprint_bytes == m.sweep[i].footprint_bytes);
        assert_stat_equal(&back.sweep[i].bandwidth, &m.sweep[i].bandwidth);
    }

    /* The ceilings now come from the measurement. */
    clattn_ceilings c;
    assert_int_equal(clattn_device_ceilings(ctx, &c), CLATTN_OK);
    assert_int_equal(c.bandwidth.source, CLATTN_SRC_MEASURED);
    assert_true(c.bandwidth.value == m.bandwidth.median);
    assert_int_equal(c.flops_f32.source, CLATTN_SRC_MEASURED);
    assert_int_equal(c.launch_latency_s.source, CLATTN_SRC_MEASURED);
    assert_int_equal(c.cache_bytes.source, CLATTN_SRC_MEASURED);
    assert_true(c.cache_bytes.value == 12345678.0);
    /* Memory: reported, except on NVIDIA, whose driver allows other limits
     * than it reports (the table's rule). */
    clattn_device_props p;
    assert_int_equal(clattn_device_query(dev, &p), CLATTN_OK);
    assert_int_equal(c.global_mem_bytes.source, p.vendor_id == CLATTN_VENDOR_NVIDIA
                                                    ? CLATTN_SRC_TABLE : CLATTN_SRC_REPORTED);
    /* fp16: the measured tensor-core rate where there is one, else the
     * table's matrix-unit rate, else the measured half-vector rate. */
    if (m.flops_tensor_f16.samples) {
        assert_int_equal(c.flops_f16.source, CLATTN_SRC_MEASURED);
        assert_true(c.flops_f16.value == m.flops_tensor_f16.median);
    } else if (c.flops_f16.source != CLATTN_SRC_TABLE && m.flops_f16.samples) {
        assert_int_equal(c.flops_f16.source, CLATTN_SRC_MEASURED);
        assert_true(c.flops_f16.value == m.flops_f16.median);
    }

    /* A quick measurement is saved and loaded, but not used as a ceiling. */
    m.quick = 1;
    assert_int_equal(clattn_measure_save(&m), CLATTN_OK);
    assert_int_equal(clattn_measure_load(dev, &back), CLATTN_OK);
    assert_int_equal(back.quick, 1);
    assert_int_equal(clattn_device_ceilings(ctx, &c), CLATTN_OK);
    assert_true(c.bandwidth.source != CLATTN_SRC_MEASURED);
    assert_true(c.cache_bytes.source != CLATTN_SRC_MEASURED);
}

/* A file at the device's path that names another device is refused. */
static void test_load_rejects_other_device(void **state)
{
    (void)state;
    measure_quick_once();
    clattn_measurement m = quick;
    assert_int_equal(clattn_measure_save(&m), CLATTN_OK);
    char path[4096], line[1024];
    cl_device_id dev = clattn_cl_device(ctx);
    assert_int_equal(clattn_measure_path(dev, path, sizeof path), CLATTN_OK);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "format=1\ndevice_name=some other device\ndriver_version=%s\n"
               "platform_version=%s\nbandwidth=1 1 1 1\n",
            m.driver_version, m.platform_version);
    fclose(f);
    clattn_measurement back;
    clattn_measurement_init(&back);
    assert_int_equal(clattn_measure_load(dev, &back), CLATTN_EFORMAT);
    /* Malformed values are refused too. */
    f = fopen(path, "w");
    assert_non_null(f);
    snprintf(line, sizeof line, "format=1\ndevice_name=%s\nbandwidth=fast\n", m.device_name);
    fputs(line, f);
    fclose(f);
    assert_int_equal(clattn_measure_load(dev, &back), CLATTN_EFORMAT);
    /* The ceilings fall back to what is known without it. */
    clattn_ceilings c;
    assert_int_equal(clattn_device_ceilings(ctx, &c), CLATTN_OK);
    assert_true(c.bandwidth.source != CLATTN_SRC_MEASURED);
    remove(path);
}

static void test_null_arguments(void **state)
{
    (void)state;
    cl_device_id dev = clattn_cl_device(ctx);
    clattn_device_props p;
    clattn_ceilings c;
    clattn_measurement m;
    clattn_measurement_init(&m);
    char path[64];
    assert_int_equal(clattn_device_query(NULL, &p), CLATTN_EINVAL);
    assert_int_equal(clattn_device_query(dev, NULL), CLATTN_EINVAL);
    assert_int_equal(clattn_device_ceilings(NULL, &c), CLATTN_EINVAL);
    assert_int_equal(clattn_device_ceilings(ctx, NULL), CLATTN_EINVAL);
    assert_int_equal(clattn_device_ceilings_cl(NULL, &c), CLATTN_EINVAL);
    assert_int_equal(clattn_measure(NULL, NULL, &m), CLATTN_EINVAL);
    assert_int_equal(clattn_measure(ctx, NULL, NULL), CLATTN_EINVAL);
    assert_int_equal(clattn_measure_save(NULL), CLATTN_EINVAL);
    assert_int_equal(clattn_measure_load(NULL, &m), CLATTN_EINVAL);
    assert_int_equal(clattn_measure_load(dev, NULL), CLATTN_EINVAL);
    assert_int_equal(clattn_measure_path(NULL, path, sizeof path), CLATTN_EINVAL);
    assert_int_equal(clattn_measure_path(dev, NULL, 10), CLATTN_EINVAL);
    /* A path that does not fit. */
    assert_int_equal(clattn_measure_path(dev, path, 8), CLATTN_EOVERFLOW);
    /* Repetitions outside 1..101. */
    clattn_measure_options opts;
    clattn_default_measure_options(&opts);
    opts.repetitions = 0;
    assert_int_equal(clattn_measure(ctx, &opts, &m), CLATTN_EINVAL);
    assert_true(strlen(clattn_last_error_detail()) > 0);
    /* A measurement without a device name cannot be keyed. */
    clattn_measurement_init(&m);
    assert_int_equal(clattn_measure_save(&m), CLATTN_EINVAL);
    /* Nor one whose struct_size was never set up (API 1.0's rule), in or out;
     * one from a later header (larger) is read up to what this library
     * knows. */
    snprintf(m.device_name, sizeof m.device_name, "x");
    m.struct_size = 0;
    assert_int_equal(clattn_measure_save(&m), CLATTN_EINVAL);
    assert_non_null(strstr(clattn_last_error_detail(), "clattn_measurement_init"));
    assert_int_equal(clattn_measure_load(dev, &m), CLATTN_EINVAL);
    m.struct_size = offsetof(clattn_measurement, seconds);
    assert_int_equal(clattn_measure(ctx, NULL, &m), CLATTN_EINVAL);
    clattn_default_measure_options(&opts);
    opts.struct_size = sizeof(size_t);
    clattn_measurement_init(&m);
    assert_int_equal(clattn_measure(ctx, &opts, &m), CLATTN_EINVAL);
    assert_non_null(strstr(clattn_last_error_detail(), "clattn_default_measure_options"));
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* The temporary cache home, with what the library (and PoCL, which keeps
 * its kernel cache under $XDG_CACHE_HOME too) wrote there. */
static void remove_cache_home(void)
{
    nftw(cache_home, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
    if (!mkdtemp(cache_home)) {
        perror("mkdtemp");
        return 1;
    }
    setenv("XDG_CACHE_HOME", cache_home, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_query_first_device),
        cmocka_unit_test(test_source_names),
        cmocka_unit_test(test_ceilings_without_measurement),
        cmocka_unit_test(test_measure_quick),
        cmocka_unit_test(test_save_load_round_trip),
        cmocka_unit_test(test_load_rejects_other_device),
        cmocka_unit_test(test_null_arguments),
    };
    const int rc = DEVICE_SUITE_MAIN(&ctx, tests);
    remove_cache_home();
    return rc;
}
