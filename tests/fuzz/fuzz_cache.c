/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness for the readers of the per-device cache files: the tune file
 * (src/tune/tune_text.c) and the saved measurement (src/measure/
 * file_text.c). Each input is read as both. What must hold:
 *   - the readers never read or write out of bounds (ASan) or hit undefined
 *     behaviour (UBSan), whatever the bytes;
 *   - tune: entries each with a known dtype, a causal flag of 0 or 1, a
 *     NUL-terminated kernel name and a well-formed parameter list (or
 *     none); no two with one key; formatting the entries and reading the
 *     text back gives the same entries;
 *   - measurement: an accepted file has no NaN, zero, negative or absurd
 *     figure; a refused one names the file in a one-line message; an
 *     accepted one formats and reads back to the same figures.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clattn/types.h"
#include "core/params.h"
#include "measure/file_text.h"
#include "tune/tune.h"

#define PATH "cache-file"

static void require(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_cache: %s\n", what);
        abort();
    }
}

static char *as_text(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    require(text != NULL, "out of memory");
    memcpy(text, data, size);
    text[size] = '\0';
    return text;
}

static void tune_file(const uint8_t *data, size_t size)
{
    struct tune_state a = { 0 }, b = { 0 };
    char *text = as_text(data, size);
    require(tune_parse_text(text, &a) == 0, "out of memory");
    require(a.count <= a.cap, "more entries than the table holds");
    for (size_t i = 0; i < a.count; i++) {
        const struct tune_entry *e = &a.entries[i];
        require(e->dtype == CLATTN_F32 || e->dtype == CLATTN_F16, "unknown dtype kept");
        require(e->causal == 0 || e->causal == 1, "causal flag not 0 or 1");
        require(memchr(e->kernel, '\0', sizeof e->kernel) != NULL, "kernel name not terminated");
        require(e->kernel[0] != '\0', "empty kernel name");
        require(memchr(e->params, '\0', sizeof e->params) != NULL, "params not terminated");
        require(params_well_formed(e->params), "malformed parameters kept");
        require(tune_find(&a, e->kernel, e->dtype, e->head_dim, e->causal) == e,
                "two entries of one key");
    }
    char *again = tune_format_text(&a);
    require(again != NULL, "out of memory");
    require(tune_parse_text(again, &b) == 0, "out of memory");
    require(b.count == a.count, "formatted entries read back to another count");
    for (size_t i = 0; i < a.count; i++)
        require(!memcmp(&a.entries[i], &b.entries[i], sizeof a.entries[i]) ||
                    (!strcmp(a.entries[i].kernel, b.entries[i].kernel) &&
                     a.entries[i].head_dim == b.entries[i].head_dim &&
                     a.entries[i].tiles.bm == b.entries[i].tiles.bm &&
                     a.entries[i].tiles.bn == b.entries[i].tiles.bn &&
                     a.entries[i].tiles.tm == b.entries[i].tiles.tm &&
                     !strcmp(a.entries[i].params, b.entries[i].params)),
                "formatted entry reads back differently");
    free(again);
    free(text);
    tune_state_release(&a);
    tune_state_release(&b);
}

static int same_stat(const clattn_stat *x, const clattn_stat *y)
{
    return x->samples == y->samples && (x->median == y->median || (isnan(x->median) && isnan(y->median)));
}

static void measurement_file(const uint8_t *data, size_t size)
{
    static clattn_measurement a, b;
    char *text = as_text(data, size);
    int rc = measurement_parse(text, PATH, &a);
    free(text);
    if (rc != 0) {
        const char *detail = clattn_last_error_detail();
        require(rc == CLATTN_EFORMAT || rc == CLATTN_EIO, "refused with an unexpected code");
        require(strstr(detail, PATH) != NULL, "refusal does not name the file");
        require(strchr(detail, '\n') == NULL, "refusal spans lines");
        return;
    }
    const clattn_stat *rates[] = { &a.bandwidth, &a.flops_f32, &a.flops_f16, &a.flops_tensor_f16 };
    for (size_t i = 0; i < 4; i++)
        require(!rates[i]->samples || (isfinite(rates[i]->median) && rates[i]->median > 0),
                "an implausible rate was accepted");
    require(a.n_sweep <= CLATTN_SWEEP_MAX, "more sweep points than the struct holds");
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    require(f != NULL, "out of memory");
    measurement_format(f, &a);
    require(fclose(f) == 0 && out != NULL, "out of memory");
    rc = measurement_parse(out, PATH, &b);
    free(out);
    require(rc == 0, "a formatted measurement is refused when read back");
    require(same_stat(&a.bandwidth, &b.bandwidth) && same_stat(&a.flops_f32, &b.flops_f32) &&
                a.cache_bytes == b.cache_bytes && a.n_sweep == b.n_sweep &&
                !strcmp(a.device_name, b.device_name),
            "a formatted measurement reads back differently");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 16))
        return 0; /* the files are a few KiB; the readers refuse > 1 MiB */
    tune_file(data, size);
    measurement_file(data, size);
    return 0;
}
