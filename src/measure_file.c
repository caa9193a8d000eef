/* The saved measurement: one key=value text file per device under the
 * user's cache directory (cache_file.c), and the identity it is keyed by. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_file.h"
#include "device_query.h"
#include "measure.h"

static void clean_line(char *s)
{
    for (; *s; s++)
        if (*s == '\n' || *s == '\r')
            *s = ' ';
}

int measurement_identity(cl_device_id dev, clattn_measurement *m)
{
    int rc = device_identity(dev, m->device_name, sizeof m->device_name, m->driver_version,
                             sizeof m->driver_version, m->platform_version,
                             sizeof m->platform_version);
    clean_line(m->device_name);
    clean_line(m->driver_version);
    clean_line(m->platform_version);
    return rc;
}

/* The measurement file of the device m was taken on (cache_file.c). */
static int path_for_identity(const clattn_measurement *m, char *path, size_t cap)
{
    return clattn_cache_path_for("", m->device_name, m->driver_version, m->platform_version, path,
                                 cap);
}

int clattn_measure_path(cl_device_id dev, char *path, size_t cap)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(dev != NULL);
    CLATTN_CHECK_ARG(path != NULL && cap > 0);
    clattn_measurement *m = calloc(1, sizeof *m);
    if (!m)
        return clattn_fail(CLATTN_ENOMEM, "clattn_measure_path");
    int rc = measurement_identity(dev, m);
    if (!rc)
        rc = path_for_identity(m, path, cap);
    free(m);
    return rc;
}

static void write_stat(FILE *f, const char *key, const clattn_stat *s)
{
    fprintf(f, "%s=%.17g %.17g %.17g %u\n", key, s->median, s->min, s->max, s->samples);
}

static void write_measurement(FILE *f, const clattn_measurement *m)
{
    fprintf(f, "# clattn device measurement (clattn devices --measure)\n"
               "# stats: median min max samples; bandwidth in bytes/s\n"
               "format=1\n");
    fprintf(f, "device_name=%s\ndriver_version=%s\nplatform_version=%s\n", m->device_name,
            m->driver_version, m->platform_version);
    fprintf(f, "unix_time=%lld\nquick=%d\nseconds=%.17g\n", (long long)m->unix_time, m->quick,
            m->seconds);
    fprintf(f, "bandwidth_buffer_bytes=%llu\n", (unsigned long long)m->bandwidth_buffer_bytes);
    write_stat(f, "bandwidth", &m->bandwidth);
    write_stat(f, "flops_f32", &m->flops_f32);
    write_stat(f, "flops_f16", &m->flops_f16);
    write_stat(f, "flops_tensor_f16", &m->flops_tensor_f16);
    write_stat(f, "launch_latency_s", &m->launch_latency_s);
    write_stat(f, "launch_roundtrip_s", &m->launch_roundtrip_s);
    fprintf(f, "sweep_plateau=%.17g\nsweep_floor=%.17g\ncache_bytes=%llu\n", m->sweep_plateau,
            m->sweep_floor, (unsigned long long)m->cache_bytes);
    /* One line per point: footprint, then the read bandwidth's stat. */
    for (uint32_t i = 0; i < m->n_sweep && i < CLATTN_SWEEP_MAX; i++) {
        const clattn_stat *s = &m->sweep[i].bandwidth;
        fprintf(f, "sweep=%llu %.17g %.17g %.17g %u\n",
                (unsigned long long)m->sweep[i].footprint_bytes, s->median, s->min, s->max,
                s->samples);
    }
}

int clattn_measure_save(const clattn_measurement *m)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(m != NULL);
    CLATTN_CHECK_ARG(m->device_name[0] != '\0');
    char path[4096 + 64];
    int rc = path_for_identity(m, path, sizeof path);
    if (rc)
        return rc;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return clattn_fail(CLATTN_ENOMEM, "measurement text");
    write_measurement(f, m);
    if (fclose(f) != 0 || !text) {
        free(text);
        return clattn_fail(CLATTN_ENOMEM, "measurement text");
    }
    rc = clattn_cache_write(path, text);
    free(text);
    return rc;
}

static int parse_stat(const char *v, clattn_stat *s)
{
    unsigned samples;
    char tail;
    if (sscanf(v, "%lf %lf %lf %u %c", &s->median, &s->min, &s->max, &samples, &tail) != 4)
        return -1;
    s->samples = samples;
    return 0;
}

static int parse_u64(const char *v, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || end == v || *end != '\0' || v[0] == '-')
        return -1;
    *out = x;
    return 0;
}

static int parse_double(const char *v, double *out)
{
    char *end;
    *out = strtod(v, &end);
    return end == v || *end != '\0' ? -1 : 0;
}

/* One "key=value" line into *m; unknown keys are skipped (newer files). */
static int parse_line(char *key, const char *v, clattn_measurement *m, int *format)
{
    uint64_t u = 0;
    if (!strcmp(key, "format")) {
        int bad = parse_u64(v, &u);
        *format = bad || u > 1000 ? -1 : (int)u;
        return bad;
    }
    if (!strcmp(key, "device_name"))
        return snprintf(m->device_name, sizeof m->device_name, "%s", v) < 0;
    if (!strcmp(key, "driver_version"))
        return snprintf(m->driver_version, sizeof m->driver_version, "%s", v) < 0;
    if (!strcmp(key, "platform_version"))
        return snprintf(m->platform_version, sizeof m->platform_version, "%s", v) < 0;
    if (!strcmp(key, "unix_time")) {
        int bad = parse_u64(v, &u);
        m->unix_time = (int64_t)u;
        return bad;
    }
    if (!strcmp(key, "quick")) {
        int bad = parse_u64(v, &u);
        m->quick = u != 0;
        return bad;
    }
    if (!strcmp(key, "seconds"))
        return parse_double(v, &m->seconds);
    if (!strcmp(key, "bandwidth_buffer_bytes"))
        return parse_u64(v, &m->bandwidth_buffer_bytes);
    if (!strcmp(key, "bandwidth"))
        return parse_stat(v, &m->bandwidth);
    if (!strcmp(key, "flops_f32"))
        return parse_stat(v, &m->flops_f32);
    if (!strcmp(key, "flops_f16"))
        return parse_stat(v, &m->flops_f16);
    if (!strcmp(key, "flops_tensor_f16"))
        return parse_stat(v, &m->flops_tensor_f16);
    if (!strcmp(key, "launch_latency_s"))
        return parse_stat(v, &m->launch_latency_s);
    if (!strcmp(key, "launch_roundtrip_s"))
        return parse_stat(v, &m->launch_roundtrip_s);
    if (!strcmp(key, "sweep_plateau"))
        return parse_double(v, &m->sweep_plateau);
    if (!strcmp(key, "sweep_floor"))
        return parse_double(v, &m->sweep_floor);
    if (!strcmp(key, "cache_bytes"))
        return parse_u64(v, &m->cache_bytes);
    if (!strcmp(key, "sweep")) {
        unsigned long long footprint;
        int used = 0;
        if (m->n_sweep >= CLATTN_SWEEP_MAX || sscanf(v, "%llu %n", &footprint, &used) != 1)
            return -1;
        clattn_sweep_point *p = &m->sweep[m->n_sweep];
        p->footprint_bytes = footprint;
        if (parse_stat(v + used, &p->bandwidth))
            return -1;
        m->n_sweep++;
    }
    return 0;
}

static int read_measurement(FILE *f, const char *path, clattn_measurement *m)
{
    char line[1024];
    int format = 0, lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        size_t len = strlen(line);
        if (len && line[len - 1] == '\n')
            line[--len] = '\0';
        if (line[0] == '#' || line[0] == '\0')
            continue;
        char *eq = strchr(line, '=');
        if (!eq)
            return clattn_fail(CLATTN_EFORMAT, "%s:%d: expected key=value", path, lineno);
        *eq = '\0';
        if (parse_line(line, eq + 1, m, &format))
            return clattn_fail(CLATTN_EFORMAT, "%s:%d: bad value for %s", path, lineno, line);
    }
    if (ferror(f))
        return clattn_fail(CLATTN_EIO, "read %s: %s", path, strerror(errno));
    if (format != 1)
        return clattn_fail(CLATTN_EFORMAT, "%s: unknown format %d", path, format);
    return 0;
}

int clattn_measure_load(cl_device_id dev, clattn_measurement *out)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(dev != NULL);
    CLATTN_CHECK_ARG(out != NULL);
    char path[4096 + 64];
    clattn_measurement *want = calloc(1, sizeof *want), *m = calloc(1, sizeof *m);
    int rc = CLATTN_ENOMEM;
    if (!want || !m) {
        clattn_fail(rc, "clattn_measure_load");
        goto free_all;
    }
    if ((rc = measurement_identity(dev, want)) || (rc = path_for_identity(want, path, sizeof path)))
        goto free_all;
    FILE *f = fopen(path, "r");
    if (!f) {
        rc = clattn_fail(CLATTN_EIO, "no saved measurement: %s: %s", path, strerror(errno));
        goto free_all;
    }
    rc = read_measurement(f, path, m);
    fclose(f);
    if (rc)
        goto free_all;
    if (strcmp(m->device_name, want->device_name) || strcmp(m->driver_version, want->driver_version)
        || strcmp(m->platform_version, want->platform_version)) {
        rc = clattn_fail(CLATTN_EFORMAT, "%s: measured on another device or driver", path);
        goto free_all;
    }
    *out = *m;
free_all:
    free(m);
    free(want);
    return rc;
}
