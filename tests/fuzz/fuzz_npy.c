/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the .npy reader (cli/npy.c).
 *
 * Each input is read twice through npy_read_stream: from a memory stream
 * (fmemopen: no file size, so the reader grows its buffer with the data)
 * and from a regular temporary file (its size known, so the reader checks
 * the declared size before allocating). Besides crashes, leaks and undefined
 * behaviour, the harness aborts when a promise of npy.h is broken:
 *   - the result is 0 or a code npy_read documents for a file that opened
 *     and reads without I/O errors: EFORMAT, EOVERFLOW or ENOMEM;
 *   - both reads agree on the code, and on success on the array;
 *   - a failure leaves the array zeroed and a message that starts with the
 *     name, and is one line of printable ASCII (it ends up on a terminal);
 *   - a success has at most NPY_MAX_DIMS dimensions, nelems the product of
 *     the shape, nbytes nelems times the element size, and data equal to
 *     the input's last nbytes bytes (on a little-endian host).
 *
 * Built as a fuzzer by -Dfuzz (clang), and with replay.c's main() for the
 * test suite, which runs the committed corpus (see README.md here).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NAME "fuzz.npy"

static void broken(const char *promise, const char *err)
{
    fprintf(stderr, "fuzz_npy: broken promise: %s (message: '%s')\n", promise, err);
    abort();
}

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

/* A regular file to read from, made once and rewritten for every input. */
static FILE *regular_file(const uint8_t *data, size_t size)
{
    static FILE *f;
    if (!f && !(f = tmpfile()))
        return NULL;
    rewind(f);
    if (ftruncate(fileno(f), 0) != 0 || fwrite(data, 1, size, f) != size || fflush(f) != 0)
        return NULL;
    rewind(f);
    return f;
}

static void check_failure(int rc, const npy_array *a, const char *err)
{
    if (rc != CLATTN_EFORMAT && rc != CLATTN_EOVERFLOW && rc != CLATTN_ENOMEM)
        broken("the code is EFORMAT, EOVERFLOW or ENOMEM", err);
    static const npy_array zero;
    if (memcmp(a, &zero, sizeof zero) != 0)
        broken("a failure leaves the array zeroed", err);
    if (strncmp(err, NAME ": ", strlen(NAME ": ")) != 0 || !err[strlen(NAME ": ")])
        broken("the message starts with the name and says something", err);
    for (const char *p = err; *p; p++)
        if (*p < ' ' || *p > '~')
            broken("the message is one line of printable ASCII", err);
}

static void check_success(const npy_array *a, const uint8_t *data, size_t size)
{
    if (a->ndim < 0 || a->ndim > NPY_MAX_DIMS || !a->data)
        broken("0..NPY_MAX_DIMS dimensions and data", "");
    size_t n = 1;
    for (int i = 0; i < a->ndim; i++)
        n *= a->shape[i]; /* may wrap before a zero dimension, which still gives 0 */
    size_t elem = a->dtype == CLATTN_F32 ? 4 : 2;
    if (n != a->nelems || a->nbytes != n * elem || a->nbytes > size)
        broken("nelems is the shape's product, nbytes nelems times the element size", "");
    if (host_is_little_endian() && memcmp(a->data, data + size - a->nbytes, a->nbytes) != 0)
        broken("the data are the input's last nbytes bytes", "");
}

/* Both reads gave the same code; on success the same array. */
static void check_agree(int rc_mem, const npy_array *m, int rc_file, const npy_array *f,
                        const char *err)
{
    if (rc_mem != rc_file)
        broken("a memory stream and a regular file give the same code", err);
    if (rc_mem == 0 && (m->dtype != f->dtype || m->ndim != f->ndim || m->nbytes != f->nbytes ||
                        memcmp(m->shape, f->shape, sizeof m->shape) != 0 ||
                        memcmp(m->data, f->data, m->nbytes) != 0))
        broken("a memory stream and a regular file give the same array", "");
}

/* One read; returns the code and leaves the array in *a for comparison. */
static int read_checked(FILE *f, npy_array *a, const uint8_t *data, size_t size, char *err,
                        size_t errcap)
{
    int rc = npy_read_stream(f, NAME, a, err, errcap);
    if (rc)
        check_failure(rc, a, err);
    else
        check_success(a, data, size);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* fmemopen wants a writable buffer (and refuses size 0 on older glibc);
     * a copy of exactly `size` bytes also lets ASan see any overread. */
    void *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    if (size)
        memcpy(copy, data, size);
    char err_mem[256] = "", err_file[256] = "";
    npy_array m, f;
    memset(&m, 0, sizeof m);
    memset(&f, 0, sizeof f);
    FILE *mem = size ? fmemopen(copy, size, "rb") : NULL;
    FILE *file = regular_file(data, size);
    int rc_mem = mem ? read_checked(mem, &m, data, size, err_mem, sizeof err_mem) : -1;
    int rc_file = file ? read_checked(file, &f, data, size, err_file, sizeof err_file) : -1;
    if (mem && file)
        check_agree(rc_mem, &m, rc_file, &f, err_mem);
    if (mem)
        fclose(mem);
    npy_free(&m);
    npy_free(&f);
    free(copy);
    return 0;
}
