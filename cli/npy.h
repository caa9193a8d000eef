/* SPDX-License-Identifier: MIT */
/*
 * NumPy .npy files: reading (format versions 1.0, 2.0, 3.0) and atomic
 * writing (1.0, or 2.0 when the header would not fit 1.0's 16-bit length).
 *
 * Only what attention needs: little-endian float32 ('<f4') and float16
 * ('<f2') in C order, up to NPY_MAX_DIMS dimensions. Anything else is refused
 * with a message naming the file and the problem, so a user can fix the input
 * instead of getting a wrong answer. float16 data is kept as raw IEEE half
 * bits (uint16_t), as clattn_attention() takes it.
 *
 * Functions return 0 or a negative CLATTN_E* code and, on failure, write a
 * one-line message (no trailing newline) into err[0..errcap) when err is
 * non-NULL. All are thread-safe except npy_write_atomic, which reads the
 * process umask by setting it (see npy.c).
 */
#ifndef CLATTN_TOOLS_NPY_H
#define CLATTN_TOOLS_NPY_H

#include <stddef.h>
#include <stdio.h>

#include "clattn/clattn.h"
#include "clattn/device.h"

#define NPY_MAX_DIMS 8

typedef struct npy_array {
    clattn_dtype dtype;
    int ndim;                   /* 0 (a scalar) .. NPY_MAX_DIMS */
    size_t shape[NPY_MAX_DIMS]; /* shape[0..ndim) */
    size_t nelems;              /* product of the shape (1 for a scalar) */
    size_t nbytes;              /* nelems * element size */
    void *data;                 /* malloc'd, host byte order; owned by the array */
    int boolean;                /* numpy bool ('|b1', npy_read_mask only): one byte
                                 * per element, `dtype` meaningless */
} npy_array;

/* Reads `path` into *out (which need not be initialised). `path` may also be a
 * pipe, FIFO or character device (/dev/stdin); see npy_read_stream. Returns
 *   CLATTN_EIO       the file cannot be opened or read;
 *   CLATTN_EFORMAT   bad magic or version, malformed or truncated header,
 *                    unsupported dtype, big-endian data, Fortran order, more
 *                    than NPY_MAX_DIMS dimensions, truncated data, or bytes
 *                    after the data;
 *   CLATTN_EOVERFLOW a dimension or the shape's byte size overflows size_t;
 *   CLATTN_ENOMEM    no memory for the data.
 * On failure *out is zeroed (npy_free on it is harmless). */
int npy_read(const char *path, npy_array *out, char *err, size_t errcap);

/* npy_read that also takes numpy's bool ('|b1'), for masks: out->boolean
 * set, one byte per element. */
int npy_read_mask(const char *path, npy_array *out, char *err, size_t errcap);

/* Reads one array from `f`, from its position to its end, as npy_read does;
 * `name` labels the messages. The stream is not closed. A regular file's size
 * is checked against the header before the data is allocated; a pipe's,
 * FIFO's or memory stream's buffer grows with the bytes that arrive, so a
 * header declaring more than the stream holds costs memory for what it holds,
 * not for what it declares. */
int npy_read_stream(FILE *f, const char *name, npy_array *out, char *err, size_t errcap);

/* Frees the data and zeroes the array. NULL-safe. */
void npy_free(npy_array *a);

/* Writes a C-order array of `dtype` with shape[0..ndim) from `data` (host byte
 * order, nelems * element size bytes) to `path`, through outfile.h: a new or
 * regular file is written to a temporary in the same directory, fsync'd and
 * renamed over `path` only once everything was written, so on failure an
 * existing `path` is left as it was; a character device or FIFO (/dev/null,
 * /dev/stdout on a pipe) is written in place; directories, sockets, block
 * devices and symbolic links to regular files are refused. A new file gets
 * the mode a plain creat() would give (0666 minus the umask). Returns
 * CLATTN_EINVAL for a bad argument, CLATTN_EOVERFLOW when the size overflows,
 * CLATTN_EIO otherwise. */
int npy_write_atomic(const char *path, clattn_dtype dtype, int ndim, const size_t *shape,
                     const void *data, char *err, size_t errcap);

/* The same array written to `f` (an output opened by the caller, e.g. one
 * of several committed together, outfile.h); `name` labels the messages.
 * Returns as npy_write_atomic; on failure part of it may have been
 * written. */
int npy_write_stream(FILE *f, const char *name, clattn_dtype dtype, int ndim,
                     const size_t *shape, const void *data, char *err, size_t errcap);

/* The .npy type string for `dtype` ("<f4", "<f2"); NULL if unknown. */
const char *npy_descr(clattn_dtype dtype);

/* The array's shape as Python writes a tuple, for messages: "(2, 3)",
 * "(5,)"; truncated to fit `cap` bytes. */
void npy_format_shape(const npy_array *a, char *buf, size_t cap);

#endif
