/* SPDX-License-Identifier: MIT */
/*
 * NumPy .npy reading and atomic writing (see npy.h).
 *
 * The format (numpy/lib/format.py, NEP 1): the magic "\x93NUMPY", a major and
 * a minor version byte, the header length (uint16 LE in 1.0, uint32 LE in 2.0
 * and 3.0), then a Python dict literal such as
 *     {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and a newline, then the raw array bytes. The dict is
 * parsed by a small recursive-descent reader that knows exactly the three
 * keys the format defines, rather than by anything like a Python evaluator.
 */
#include "npy.h"

#include "outfile.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char npy_magic[6] = { '\x93', 'N', 'U', 'M', 'P', 'Y' };

/* numpy refuses headers above 10000 bytes by default, as a guard against
 * hostile files; we allow more but still refuse to allocate gigabytes for a
 * header length read from a corrupt file. */
#define NPY_MAX_HEADER ((size_t)1 << 20)

/* numpy pads the preamble + header to a multiple of 64 so the data is
 * aligned for memory mapping; we write the same layout. */
#define NPY_ALIGN 64

/* numpy's GROWTH_AXIS_MAX_DIGITS. */
#define NPY_GROWTH_DIGITS 21

/* Big enough for the longest 8-D header: descr, flags and 8 twenty-digit
 * dimensions, plus padding. */
#define NPY_HEADER_CAP 512

/* Formats "<path>: <message>" into err (outfile.h's format); returns
 * `code`. */
static int fail(char *err, size_t errcap, int code, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int fail(char *err, size_t errcap, int code, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    outfile_vfail(err, errcap, path, fmt, ap);
    va_end(ap);
    return code;
}

static size_t element_size(clattn_dtype dtype)
{
    switch (dtype) {
    case CLATTN_F32: return 4;
    case CLATTN_F16: return 2;
    case CLATTN_BF16: return 2;
    }
    return 0;
}

const char *npy_descr(clattn_dtype dtype)
{
    switch (dtype) {
    case CLATTN_F32: return "<f4";
    case CLATTN_F16: return "<f2";
    case CLATTN_BF16: return "<V2"; /* as numpy saves ml_dtypes.bfloat16 */
    }
    return NULL;
}

void npy_format_shape(const npy_array *a, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "(");
    for (int i = 0; i < a->ndim && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, i ? ", %zu" : "%zu", a->shape[i]);
    if (n < cap)
        snprintf(buf + n, cap - n, a->ndim == 1 ? ",)" : ")");
}

/* The .npy data we handle is little-endian; only a big-endian host has to
 * swap it. Checked at run time so the code needs no configure probe. */
static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

static void swap_elements(unsigned char *data, size_t nelems, size_t size)
{
    for (size_t i = 0; i < nelems; i++, data += size)
        for (size_t a = 0, b = size - 1; a < b; a++, b--) {
            unsigned char t = data[a];
            data[a] = data[b];
            data[b] = t;
        }
}

/* nelems = product of shape, nbytes = nelems * size, both checked. A zero
 * dimension makes the product 0 however large the others are. */
static int shape_bytes(int ndim, const size_t *shape, size_t size, size_t *nelems,
                       size_t *nbytes)
{
    size_t n = 1;
    for (int i = 0; i < ndim; i++)
        if (shape[i] == 0)
            n = 0;
    for (int i = 0; n != 0 && i < ndim; i++) {
        if (shape[i] > SIZE_MAX / n)
            return CLATTN_EOVERFLOW;
        n *= shape[i];
    }
    if (n > SIZE_MAX / size)
        return CLATTN_EOVERFLOW;
    *nelems = n;
    *nbytes = n * size;
    return 0;
}

/* ------------------------------------------------------------ header parser */

/* Parsed header dict. Each key must appear exactly once. */
typedef struct npy_header {
    char descr[32];
    int have_descr, have_order, have_shape;
    int fortran_order;
    int ndim;
    size_t shape[NPY_MAX_DIMS];
} npy_header;

typedef struct cursor {
    const char *p, *end;
    const char *path;
    char *err;
    size_t errcap;
} cursor;

static void skip_space(cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

/* Skips space, then consumes `ch` if it is next. */
static int accept(cursor *c, char ch)
{
    skip_space(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/* Skips space; true if `ch` is next (not consumed). */
static int peek(cursor *c, char ch)
{
    skip_space(c);
    return c->p < c->end && *c->p == ch;
}

/* Up to 12 characters at the cursor for a message, kept on one line. */
static void snippet(const cursor *c, char *buf, size_t cap)
{
    size_t n = 0;
    for (const char *q = c->p; q < c->end && n + 1 < cap && n < 12; q++)
        buf[n++] = (*q >= ' ' && *q <= '~') ? *q : ' ';
    buf[n] = '\0';
}

static int syntax(cursor *c, const char *expected)
{
    char at[16];
    snippet(c, at, sizeof at);
    if (c->p >= c->end)
        return fail(c->err, c->errcap, CLATTN_EFORMAT, c->path,
                    "malformed header: expected %s at the end of the header", expected);
    return fail(c->err, c->errcap, CLATTN_EFORMAT, c->path,
                "malformed header: expected %s at '%s'", expected, at);
}

/* A quoted string ('...' or "..."); the format's strings need no escapes.
 * Only printable ASCII is taken: the strings we accept (three keys and a
 * dtype such as '<f4') are ASCII, and a string is echoed in messages
 * ("unknown key '...'"), where a newline, an escape sequence or a NUL that
 * cut '<f4\0junk' down to '<f4' has no business. */
static int parse_string(cursor *c, char *out, size_t cap)
{
    skip_space(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
        return syntax(c, "a quoted string");
    char quote = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != quote) {
        unsigned char ch = (unsigned char)*c->p;
        if (ch < ' ' || ch > '~')
            return fail(c->err, c->errcap, CLATTN_EFORMAT, c->path,
                        "malformed header: byte 0x%02x in a string (only printable ASCII "
                        "is valid there)", ch);
        if (ch == '\\' || n + 1 >= cap)
            return syntax(c, "a short string without escapes");
        out[n++] = *c->p++;
    }
    if (c->p >= c->end)
        return syntax(c, "a closing quote");
    c->p++;
    out[n] = '\0';
    return 0;
}

/* True if the identifier `word` is next (and not the prefix of a longer one). */
static int accept_word(cursor *c, const char *word)
{
    size_t n = strlen(word);
    skip_space(c);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0)
        return 0;
    if (c->p + n < c->end && (c->p[n] == '_' || (c->p[n] >= 'a' && c->p[n] <= 'z') ||
                              (c->p[n] >= 'A' && c->p[n] <= 'Z')))
        return 0;
    c->p += n;
    return 1;
}

static int parse_bool(cursor *c, int *out)
{
    if (accept_word(c, "True"))
        *out = 1;
    else if (accept_word(c, "False"))
        *out = 0;
    else
        return syntax(c, "True or False");
    return 0;
}

/* A dimension: decimal digits, optionally with Python 2's 'L' suffix (old
 * numpy wrote "(3L, 4L)"). */
static int parse_dim(cursor *c, size_t *out)
{
    skip_space(c);
    if (c->p < c->end && *c->p == '-')
        return fail(c->err, c->errcap, CLATTN_EFORMAT, c->path,
                    "malformed header: negative dimension in shape");
    if (c->p >= c->end || *c->p < '0' || *c->p > '9')
        return syntax(c, "a dimension (an integer)");
    size_t v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        size_t digit = (size_t)(*c->p - '0');
        if (v > (SIZE_MAX - digit) / 10)
            return fail(c->err, c->errcap, CLATTN_EOVERFLOW, c->path,
                        "shape dimension too large for this machine");
        v = v * 10 + digit;
        c->p++;
    }
    if (c->p < c->end && (*c->p == 'L' || *c->p == 'l'))
        c->p++;
    *out = v;
    return 0;
}

/* "()", "(3,)", "(2, 3)", "(2, 3,)"; also "(3)", which Python reads as an
 * int but whose meaning is plain. */
static int parse_shape(cursor *c, npy_header *h)
{
    if (!accept(c, '('))
        return syntax(c, "'(' starting the shape");
    h->ndim = 0;
    if (accept(c, ')'))
        return 0;
    for (;;) {
        if (h->ndim == NPY_MAX_DIMS)
            return fail(c->err, c->errcap, CLATTN_EFORMAT, c->path,
                        "more than %d dimensions not supported", NPY_MAX_DIMS);
        int rc = parse_dim(c, &h->shape[h->ndim]);
        if (rc)
            return rc;
        h->ndim++;
        if (accept(c, ')'))
            return 0;
        if (!accept(c, ','))
            return syntax(c, "',' or ')' in the shape");
        if (accept(c, ')'))
            return 0;
    }
}

static int parse_entry(cursor *c, npy_header *h)
{
    char key[32];
    int rc = parse_string(c, key, sizeof key);
    if (rc)
        return rc;
    if (!accept(c, ':'))
        return syntax(c, "':' after a key");
    int *seen = !strcmp(key, "descr")           ? &h->have_descr
                : !strcmp(key, "fortran_order") ? &h->have_order
                : !strcmp(key, "shape")         ? &h->have_shape
                                                : NULL;
    if (!seen)
        return fail(c->err, c->errcap, CLATTN_EFORMAT, c->path,
                    "malformed header: unknown key '%s'", key);
    if (*seen)
        return fail(c->err, c->errcap, CLATTN_EFORMAT, c->path,
                    "malformed header: key '%s' appears twice", key);
    *seen = 1;
    if (seen == &h->have_order)
        return parse_bool(c, &h->fortran_order);
    if (seen == &h->have_shape)
        return parse_shape(c, h);
    if (peek(c, '['))
        return fail(c->err, c->errcap, CLATTN_EFORMAT, c->path,
                    "structured dtype not supported (need float32 '<f4' or float16 '<f2')");
    return parse_string(c, h->descr, sizeof h->descr);
}

/* The dict: entries separated by commas, a trailing comma allowed, keys in
 * any order; after the closing brace only padding. */
static int parse_header(cursor *c, npy_header *h)
{
    memset(h, 0, sizeof *h);
    if (!accept(c, '{'))
        return syntax(c, "'{'");
    while (!accept(c, '}')) {
        int rc = parse_entry(c, h);
        if (rc)
            return rc;
        if (!accept(c, ',') && !peek(c, '}'))
            return syntax(c, "',' or '}'");
    }
    skip_space(c);
    if (c->p != c->end)
        return syntax(c, "only padding after '}'");
    const char *missing = !h->have_descr ? "descr" : !h->have_order ? "fortran_order"
                        : !h->have_shape ? "shape" : NULL;
    if (missing)
        return fail(c->err, c->errcap, CLATTN_EFORMAT, c->path,
                    "malformed header: no '%s' key", missing);
    return 0;
}

/* '<' is little-endian; '=' (native) and '|' (byte order not applicable,
 * which numpy treats as native) are little-endian only on such a host. */
static int dtype_from_descr(const char *descr, const char *path, int allow_bool,
                            npy_array *a, char *err, size_t errcap)
{
    clattn_dtype *out = &a->dtype;
    char order = descr[0];
    const char *type = descr + 1;
    int little = order == '<' || ((order == '=' || order == '|') && host_is_little_endian());
    int big = order == '>' || ((order == '=' || order == '|') && !host_is_little_endian());
    /* A 2-byte void is bfloat16: numpy saves ml_dtypes.bfloat16 as '<V2'. */
    if ((order == '<' || order == '|') && !strcmp(type, "V2") && host_is_little_endian()) {
        *out = CLATTN_BF16;
        return 0;
    }
    /* numpy's bool: one byte, 0 or 1 ('|b1'; '?' in a hand-written header). */
    if (allow_bool && (!strcmp(descr, "|b1") || !strcmp(descr, "?") || !strcmp(descr, "<b1"))) {
        a->boolean = 1;
        return 0;
    }
    int known = !strcmp(type, "f4") || !strcmp(type, "f2");
    if (known && big)
        return fail(err, errcap, CLATTN_EFORMAT, path,
                    "big-endian dtype '%s' not supported (need little-endian '<f4' or '<f2'; "
                    "convert with arr.astype('<%s'))", descr, type);
    if (!known || !little)
        return fail(err, errcap, CLATTN_EFORMAT, path,
                    "dtype '%s' not supported (need float32 '<f4', float16 '<f2' or "
                    "bfloat16 '<V2')", descr);
    *out = !strcmp(type, "f4") ? CLATTN_F32 : CLATTN_F16;
    return 0;
}

/* ------------------------------------------------------------------ reading */

/* Reads the magic, the version and the header length; leaves the stream at
 * the start of the header text. */
static int read_preamble(FILE *f, const char *path, size_t *header_len, char *err,
                         size_t errcap)
{
    unsigned char b[12];
    size_t got = fread(b, 1, 8, f);
    if (ferror(f)) /* e.g. a directory, which fopen accepts */
        return fail(err, errcap, CLATTN_EIO, path, "cannot read: %s", strerror(errno));
    if (got >= 6 && memcmp(b, npy_magic, 6) != 0)
        return fail(err, errcap, CLATTN_EFORMAT, path, "not a .npy file (bad magic)");
    if (got < 8)
        return fail(err, errcap, CLATTN_EFORMAT, path,
                    "truncated header: file has only %zu bytes", got);
    unsigned major = b[6], minor = b[7];
    if ((major != 1 && major != 2 && major != 3) || minor != 0)
        return fail(err, errcap, CLATTN_EFORMAT, path,
                    "unsupported .npy format version %u.%u (need 1.0, 2.0 or 3.0)", major, minor);
    size_t len_bytes = major == 1 ? 2 : 4;
    got = fread(b + 8, 1, len_bytes, f);
    if (got < len_bytes)
        return fail(err, errcap, CLATTN_EFORMAT, path,
                    "truncated header: file ends inside the header length");
    size_t len = (size_t)b[8] | (size_t)b[9] << 8;
    if (major != 1)
        len |= (size_t)b[10] << 16 | (size_t)b[11] << 24;
    if (len > NPY_MAX_HEADER)
        return fail(err, errcap, CLATTN_EFORMAT, path,
                    "header length %zu is implausibly large (corrupt file?)", len);
    *header_len = len;
    return 0;
}

/* Reads and parses the header text into *h. */
static int read_header(FILE *f, const char *path, size_t len, npy_header *h, char *err,
                       size_t errcap)
{
    char *text = malloc(len + 1);
    if (!text)
        return fail(err, errcap, CLATTN_ENOMEM, path, "out of memory for the header");
    size_t got = fread(text, 1, len, f);
    int rc;
    if (got < len) {
        rc = fail(err, errcap, CLATTN_EFORMAT, path,
                  "truncated header: header length says %zu bytes, file has %zu", len, got);
    } else {
        cursor c = { text, text + len, path, err, errcap };
        rc = parse_header(&c, h);
    }
    free(text);
    return rc;
}

/* Bytes left in `f` after its position when it is a regular file, whose size
 * is known before reading; -1 for a pipe, FIFO, character device or memory
 * stream, whose length shows only when it ends. */
static long long bytes_left(FILE *f)
{
    int fd = fileno(f);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return -1;
    off_t pos = ftello(f);
    return pos < 0 || pos > st.st_size ? -1 : (long long)(st.st_size - pos);
}

/* Every read ends here: nothing may follow the data. */
static int expect_end(FILE *f, const char *path, size_t nbytes, char *err, size_t errcap)
{
    int c = fgetc(f);
    if (ferror(f))
        return fail(err, errcap, CLATTN_EIO, path, "read error: %s", strerror(errno));
    if (c != EOF)
        return fail(err, errcap, CLATTN_EFORMAT, path,
                    "trailing garbage after the %zu bytes of data the header declares", nbytes);
    return 0;
}

/* A regular file: its size is checked against the header before anything is
 * allocated, so a corrupt shape cannot make us ask for terabytes. */
static int read_sized(FILE *f, const char *path, npy_array *a, long long avail, char *err,
                      size_t errcap)
{
    if ((unsigned long long)avail < a->nbytes)
        return fail(err, errcap, CLATTN_EFORMAT, path,
                    "truncated: header says %zu bytes of data, file has %lld", a->nbytes, avail);
    if ((unsigned long long)avail > a->nbytes)
        return fail(err, errcap, CLATTN_EFORMAT, path,
                    "%llu bytes of trailing garbage after the data (header says %zu bytes "
                    "of data, file has %lld)", (unsigned long long)avail - a->nbytes, a->nbytes,
                    avail);
    a->data = malloc(a->nbytes ? a->nbytes : 1);
    if (!a->data)
        return fail(err, errcap, CLATTN_ENOMEM, path, "out of memory for %zu bytes of data",
                    a->nbytes);
    size_t got = fread(a->data, 1, a->nbytes, f);
    if (ferror(f))
        return fail(err, errcap, CLATTN_EIO, path, "read error: %s", strerror(errno));
    if (got < a->nbytes) /* it shrank since fstat */
        return fail(err, errcap, CLATTN_EFORMAT, path,
                    "truncated: header says %zu bytes of data, file has %zu", a->nbytes, got);
    return expect_end(f, path, a->nbytes, err, errcap);
}

/* The first buffer for data whose length shows only when the stream ends.
 * The fuzz harness's build makes it tiny, so that its small inputs make the
 * buffer grow too. */
#ifndef NPY_STREAM_CHUNK
#define NPY_STREAM_CHUNK ((size_t)1 << 16)
#endif

/* The next size of a growing buffer: doubling, so the copies cost O(n) in
 * all and at most half the buffer is unused, up to what the header
 * declares. */
static size_t grown(size_t cap, size_t want)
{
    if (cap == 0)
        return want < NPY_STREAM_CHUNK ? want : NPY_STREAM_CHUNK;
    return cap > want / 2 ? want : 2 * cap;
}

/* A pipe, FIFO or memory stream: the buffer grows with the bytes that
 * actually arrive, so memory follows the data rather than the header's
 * claim: a 100-byte stream declaring 64 GiB costs 64 KiB before it is
 * refused as truncated. */
static int read_growing(FILE *f, const char *path, npy_array *a, char *err, size_t errcap)
{
    size_t have = 0, cap = 0;
    do {
        if (have == cap) {
            size_t next = grown(cap, a->nbytes);
            void *p = realloc(a->data, next ? next : 1);
            if (!p)
                return fail(err, errcap, CLATTN_ENOMEM, path,
                            "out of memory for %zu bytes of data (%zu of the %zu declared "
                            "have arrived)", next, have, a->nbytes);
            a->data = p;
            cap = next;
        }
        have += fread((unsigned char *)a->data + have, 1, cap - have, f);
    } while (have == cap && have < a->nbytes);
    if (ferror(f))
        return fail(err, errcap, CLATTN_EIO, path, "read error: %s", strerror(errno));
    if (have < a->nbytes)
        return fail(err, errcap, CLATTN_EFORMAT, path,
                    "truncated: header says %zu bytes of data, the stream ended after %zu",
                    a->nbytes, have);
    return expect_end(f, path, a->nbytes, err, errcap);
}

/* The preamble and the header, into a's dtype and shape (a already zeroed);
 * leaves the stream at the first byte of data. */
static int read_meta(FILE *f, const char *path, int allow_bool, npy_array *a, char *err,
                     size_t errcap)
{
    size_t header_len = 0;
    int rc = read_preamble(f, path, &header_len, err, errcap);
    if (rc)
        return rc;
    npy_header h;
    rc = read_header(f, path, header_len, &h, err, errcap);
    if (rc)
        return rc;
    rc = dtype_from_descr(h.descr, path, allow_bool, a, err, errcap);
    if (rc)
        return rc;
    if (h.fortran_order)
        return fail(err, errcap, CLATTN_EFORMAT, path,
                    "fortran_order is True; only C-order arrays are supported "
                    "(save np.ascontiguousarray(arr))");
    a->ndim = h.ndim;
    memcpy(a->shape, h.shape, sizeof h.shape);
    if (shape_bytes(a->ndim, a->shape, a->boolean ? 1 : element_size(a->dtype), &a->nelems,
                    &a->nbytes))
        return fail(err, errcap, CLATTN_EOVERFLOW, path,
                    "shape's byte size overflows this machine's size_t");
    return 0;
}

static int read_stream(FILE *f, const char *name, int allow_bool, npy_array *out, char *err,
                       size_t errcap)
{
    if (err && errcap > 0)
        err[0] = '\0';
    if (!out)
        return CLATTN_EINVAL;
    memset(out, 0, sizeof *out);
    if (!f || !name)
        return CLATTN_EINVAL;
    int rc = read_meta(f, name, allow_bool, out, err, errcap);
    if (rc == 0) {
        long long avail = bytes_left(f);
        rc = avail >= 0 ? read_sized(f, name, out, avail, err, errcap)
                        : read_growing(f, name, out, err, errcap);
    }
    if (rc) {
        npy_free(out);
        return rc;
    }
    if (!host_is_little_endian() && !out->boolean)
        swap_elements(out->data, out->nelems, element_size(out->dtype));
    return 0;
}

int npy_read_stream(FILE *f, const char *name, npy_array *out, char *err, size_t errcap)
{
    return read_stream(f, name, 0, out, err, errcap);
}

static int read_path(const char *path, int allow_bool, npy_array *out, char *err, size_t errcap)
{
    if (err && errcap > 0)
        err[0] = '\0';
    if (!out)
        return CLATTN_EINVAL;
    memset(out, 0, sizeof *out);
    if (!path)
        return CLATTN_EINVAL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return fail(err, errcap, CLATTN_EIO, path, "cannot open: %s", strerror(errno));
    int rc = read_stream(f, path, allow_bool, out, err, errcap);
    fclose(f);
    return rc;
}

int npy_read(const char *path, npy_array *out, char *err, size_t errcap)
{
    return read_path(path, 0, out, err, errcap);
}

int npy_read_mask(const char *path, npy_array *out, char *err, size_t errcap)
{
    return read_path(path, 1, out, err, errcap);
}

void npy_free(npy_array *a)
{
    if (!a)
        return;
    free(a->data);
    memset(a, 0, sizeof *a);
}

/* ------------------------------------------------------------------ writing */

/* Preamble + dict + padding + newline, a multiple of NPY_ALIGN. numpy's
 * formula always pads at least one space, even when already aligned. */
static size_t padded_total(size_t preamble, size_t dict_len)
{
    size_t unpadded = preamble + dict_len + 1;
    return unpadded + (NPY_ALIGN - unpadded % NPY_ALIGN);
}

/* Builds magic, version, length and the padded header dict into buf; returns
 * the total length, or 0 if it does not fit (it always does for <= 8 dims). */
static size_t build_header(clattn_dtype dtype, int ndim, const size_t *shape, char *buf,
                           size_t cap)
{
    char dict[NPY_HEADER_CAP];
    size_t n = (size_t)snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, "
                                "'shape': (", npy_descr(dtype));
    for (int i = 0; i < ndim && n < sizeof dict; i++)
        n += (size_t)snprintf(dict + n, sizeof dict - n, i ? ", %zu" : "%zu", shape[i]);
    /* Python writes a 1-tuple as "(3,)"; "(3)" would be an int. */
    if (n < sizeof dict)
        n += (size_t)snprintf(dict + n, sizeof dict - n, "%s), }", ndim == 1 ? "," : "");
    if (n >= sizeof dict)
        return 0;

    /* numpy leaves room for the first dimension to grow to 21 digits, so
     * the header can be rewritten in place when appending; we match it so
     * our files are byte-identical to numpy's. */
    if (ndim > 0) {
        char digits[32];
        size_t used = (size_t)snprintf(digits, sizeof digits, "%zu", shape[0]);
        for (; used < NPY_GROWTH_DIGITS && n + 1 < sizeof dict; used++)
            dict[n++] = ' ';
    }

    /* Version 1.0 stores the header length in 16 bits; 2.0 in 32. Like
     * numpy, pad with 1..NPY_ALIGN spaces before the newline. */
    size_t preamble = 10;
    size_t total = padded_total(preamble, n);
    if (total - preamble > 0xffff) {
        preamble = 12;
        total = padded_total(preamble, n);
    }
    if (total > cap)
        return 0;
    size_t len = total - preamble;
    memcpy(buf, npy_magic, 6);
    buf[6] = preamble == 10 ? 1 : 2;
    buf[7] = 0;
    for (size_t i = 0; i < preamble - 8; i++)
        buf[8 + i] = (char)(len >> (8 * i) & 0xff);
    memcpy(buf + preamble, dict, n);
    memset(buf + preamble + n, ' ', total - preamble - n - 1);
    buf[total - 1] = '\n';
    return total;
}

/* Writes the data little-endian; a big-endian host swaps a chunk at a time so
 * the caller's array stays untouched. stdio carries a large fwrite() through
 * the kernel's partial writes. */
static int write_data(FILE *f, const void *data, size_t nbytes, size_t size)
{
    if (host_is_little_endian())
        return fwrite(data, 1, nbytes, f) == nbytes ? 0 : -1;
    unsigned char chunk[1 << 16];
    for (size_t off = 0; off < nbytes; off += sizeof chunk) {
        size_t n = nbytes - off < sizeof chunk ? nbytes - off : sizeof chunk;
        memcpy(chunk, (const unsigned char *)data + off, n);
        swap_elements(chunk, n / size, size);
        if (fwrite(chunk, 1, n, f) != n)
            return -1;
    }
    return 0;
}

static int write_checks(const char *path, clattn_dtype dtype, int ndim, const size_t *shape,
                        const void *data, size_t *nbytes, char *err, size_t errcap)
{
    const char *name = path ? path : "(null)";
    if (!path || !npy_descr(dtype) || ndim < 0 || ndim > NPY_MAX_DIMS || (ndim > 0 && !shape))
        return fail(err, errcap, CLATTN_EINVAL, name, "invalid arguments to npy_write_atomic");
    size_t nelems;
    if (shape_bytes(ndim, shape, element_size(dtype), &nelems, nbytes))
        return fail(err, errcap, CLATTN_EOVERFLOW, name, "array size overflows size_t");
    if (*nbytes > 0 && !data)
        return fail(err, errcap, CLATTN_EINVAL, name, "no data to write");
    return 0;
}

int npy_write_stream(FILE *f, const char *name, clattn_dtype dtype, int ndim,
                     const size_t *shape, const void *data, char *err, size_t errcap)
{
    if (err && errcap > 0)
        err[0] = '\0';
    size_t nbytes = 0;
    int rc = write_checks(name, dtype, ndim, shape, data, &nbytes, err, errcap);
    if (rc)
        return rc;
    if (!f)
        return fail(err, errcap, CLATTN_EINVAL, name, "invalid arguments to npy_write_stream");
    char header[NPY_HEADER_CAP + NPY_ALIGN];
    size_t header_len = build_header(dtype, ndim, shape, header, sizeof header);
    if (header_len == 0)
        return fail(err, errcap, CLATTN_EINVAL, name, "header does not fit");
    /* Reported here, where errno still says why; a commit would only see
     * the stream's error flag. */
    if (fwrite(header, 1, header_len, f) != header_len ||
        write_data(f, data, nbytes, element_size(dtype)))
        return fail(err, errcap, CLATTN_EIO, name, "write failed: %s", strerror(errno));
    return 0;
}

int npy_write_atomic(const char *path, clattn_dtype dtype, int ndim, const size_t *shape,
                     const void *data, char *err, size_t errcap)
{
    size_t nbytes = 0;
    int rc = write_checks(path, dtype, ndim, shape, data, &nbytes, err, errcap);
    if (rc)
        return rc;
    outfile o;
    if (outfile_open(&o, path, err, errcap))
        return CLATTN_EIO;
    if ((rc = npy_write_stream(o.stream, path, dtype, ndim, shape, data, err, errcap))) {
        outfile_abort(&o);
        return rc;
    }
    return outfile_commit(&o, err, errcap) ? CLATTN_EIO : 0;
}
