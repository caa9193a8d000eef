/* SPDX-License-Identifier: MIT */
/* The saved measurement: one key=value text file per device under the
 * user's cache directory (cache_file.c), and the identity it is keyed by. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/cache_file.h"
#include "device/identity.h"
#include "measure/file_text.h"
#include "measure/measure.h"

void clattn_measurement_init(clattn_measurement *m)
{
    if (!abi_init(m, sizeof *m))
        return;
}

void measurement_set_identity(clattn_measurement *m, const struct device_identity *id)
{
    snprintf(m->device_name, sizeof m->device_name, "%s", id->device_name);
    snprintf(m->driver_version, sizeof m->driver_version, "%s", id->driver_version);
    snprintf(m->platform_version, sizeof m->platform_version, "%s", id->platform_version);
}

/* The identity a measurement carries, to find its file. */
static void identity_of(const clattn_measurement *m, struct device_identity *id)
{
    memset(id, 0, sizeof *id);
    snprintf(id->device_name, sizeof id->device_name, "%s", m->device_name);
    snprintf(id->driver_version, sizeof id->driver_version, "%s", m->driver_version);
    snprintf(id->platform_version, sizeof id->platform_version, "%s", m->platform_version);
}

int clattn_measure_path(cl_device_id dev, char *path, size_t cap)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(dev != NULL);
    CLATTN_CHECK_ARG(path != NULL && cap > 0);
    struct device_identity id;
    int rc = device_identity_read(dev, &id);
    return rc ? rc : cache_path("", &id, path, cap);
}

/* measure_save with the caller's struct read as this library's. */
static int save(const clattn_measurement *m)
{
    CLATTN_CHECK_ARG(m->device_name[0] != '\0');
    char path[4096 + 64];
    struct device_identity id;
    identity_of(m, &id);
    int rc = cache_path("", &id, path, sizeof path);
    if (rc)
        return rc;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return clattn_fail(CLATTN_ENOMEM, "measurement text");
    measurement_format(f, m);
    if (fclose(f) != 0 || !text) {
        free(text);
        return clattn_fail(CLATTN_ENOMEM, "measurement text");
    }
    rc = cache_write(path, text);
    free(text);
    return rc;
}

int clattn_measure_save(const clattn_measurement *caller)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(caller != NULL);
    clattn_measurement *m = malloc(sizeof *m);
    if (!m)
        return clattn_fail(CLATTN_ENOMEM, "clattn_measure_save: %zu bytes", sizeof *m);
    clattn_measurement_init(m);
    int rc = abi_read(caller, m, sizeof *m, MEASUREMENT_FIRST_SIZE, "measurement",
                      "clattn_measurement_init");
    if (rc == 0)
        rc = save(m);
    free(m);
    return rc;
}

int clattn_measure_load(cl_device_id dev, clattn_measurement *out)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(dev != NULL);
    size_t out_size;
    int rc = measurement_out_size(out, &out_size);
    if (rc < 0)
        return rc;
    char path[4096 + 64], *text = NULL;
    struct device_identity want;
    clattn_measurement *m = malloc(sizeof *m);
    if (!m)
        return clattn_fail(CLATTN_ENOMEM, "clattn_measure_load");
    clattn_measurement_init(m);
    if ((rc = device_identity_read(dev, &want)) || (rc = cache_path("", &want, path, sizeof path)))
        goto out;
    if ((rc = cache_read(path, &text))) {
        if (rc == CLATTN_EIO)
            clattn_detail_append(" (no saved measurement: clattn devices --measure saves one)");
        goto out;
    }
    if ((rc = measurement_parse(text, path, m)))
        goto out;
    if (strcmp(m->device_name, want.device_name) || strcmp(m->driver_version, want.driver_version)
        || strcmp(m->platform_version, want.platform_version)) {
        rc = clattn_fail(CLATTN_EFORMAT, "%s: measured on another device or driver", path);
        goto out;
    }
    abi_write(out, out_size, m, sizeof *m);
out:
    free(text);
    free(m);
    return rc;
}
