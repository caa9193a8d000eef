/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of cli/npy.c and cli/outfile.c: round trips, the header
 * forms numpy has written over the years, every malformed input the reader
 * must refuse (with the right code), reading from FIFOs, the atomic writer's
 * promise that a failed write leaves no file and does not clobber an
 * existing one, and what it does with outputs that are not regular files.
 *
 * Files are built byte by byte here rather than with numpy, so the tests
 * need nothing but the C library; they live in a mkdtemp directory removed
 * at the end.
 */
/* mknod() for the device nodes the tests make is an XSI function. */
#define _XOPEN_SOURCE 700

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "npy.h"
#include "outfile.h"

static char tmpdir[256];

static int make_tmpdir(void **state)
{
    (void)state;
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/test_npy.XXXXXX", base && *base ? base : "/tmp");
    return mkdtemp(tmpdir) ? 0 : -1;
}

/* Removes the directory and everything in it (one level; the tests make no
 * subdirectories). */
static int remove_tmpdir(void **state)
{
    (void)state;
    DIR *d = opendir(tmpdir);
    if (!d)
        return -1;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(path, sizeof path, "%s/%s", tmpdir, e->d_name);
        unlink(path);
    }
    closedir(d);
    return rmdir(tmpdir);
}

static const char *tmp_path(const char *name, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s", tmpdir, name);
    return buf;
}

static size_t count_entries(void)
{
    size_t n = 0;
    DIR *d = opendir(tmpdir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static void write_bytes(const char *path, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* The file `name` in the temporary directory, holding `text` (without its
 * NUL); its path in buf. */
static const char *tmp_file(const char *name, const char *text, char *buf, size_t cap)
{
    tmp_path(name, buf, cap);
    write_bytes(buf, text, strlen(text));
    return buf;
}

/* A .npy file in memory (malloc'd, *len bytes): format `major`.0, the given
 * header dict text (padded here as numpy would) and `data_len` bytes of
 * data. */
static unsigned char *build_npy(int major, const char *dict, const void *data, size_t data_len,
                                size_t *len)
{
    size_t pre = major == 1 ? 10 : 12;
    size_t dict_len = strlen(dict);
    size_t total = (pre + dict_len + 1 + 63) / 64 * 64;
    size_t hlen = total - pre;
    unsigned char *out = malloc(total + data_len);
    assert_non_null(out);
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (unsigned char)major;
    out[7] = 0;
    for (size_t i = 0; i < pre - 8; i++)
        out[8 + i] = (unsigned char)(hlen >> (8 * i));
    memcpy(out + pre, dict, dict_len);
    memset(out + pre + dict_len, ' ', hlen - dict_len - 1);
    out[total - 1] = '\n';
    if (data_len)
        memcpy(out + total, data, data_len);
    *len = total + data_len;
    return out;
}

/* build_npy into the file `name` in the temporary directory. */
static const char *write_npy(const char *name, int major, const char *dict, const void *data,
                             size_t data_len, char *buf, size_t cap)
{
    const char *path = tmp_path(name, buf, cap);
    size_t len;
    unsigned char *bytes = build_npy(major, dict, data, data_len, &len);
    write_bytes(path, bytes, len);
    free(bytes);
    return path;
}

/* Reads `path` expecting failure `code`; returns the message for checks. */
static void expect_read_error(const char *path, int code, const char *in_message)
{
    npy_array a;
    char err[256];
    int rc = npy_read(path, &a, err, sizeof err);
    if (rc != code)
        fail_msg("%s: got %s (%s), want %s", path, clattn_error_name(rc), err,
                 clattn_error_name(code));
    assert_null(a.data);
    assert_non_null(strstr(err, path));
    assert_null(strchr(err, '\n'));
    if (in_message && !strstr(err, in_message))
        fail_msg("message '%s' lacks '%s'", err, in_message);
}

/* -------------------------------------------------------------- round trips */

static void roundtrip_f32(void **state)
{
    (void)state;
    char path[512];
    tmp_path("f32.npy", path, sizeof path);
    float data[2 * 3 * 4];
    for (size_t i = 0; i < 24; i++)
        data[i] = (float)i * 0.25f - 3.0f;
    size_t shape[3] = { 2, 3, 4 };
    char err[256];
    assert_int_equal(npy_write_atomic(path, CLATTN_F32, 3, shape, data, err, sizeof err), 0);

    npy_array a;
    assert_int_equal(npy_read(path, &a, err, sizeof err), 0);
    assert_int_equal(a.dtype, CLATTN_F32);
    assert_int_equal(a.ndim, 3);
    assert_int_equal(a.shape[0], 2);
    assert_int_equal(a.shape[1], 3);
    assert_int_equal(a.shape[2], 4);
    assert_int_equal(a.nelems, 24);
    assert_int_equal(a.nbytes, sizeof data);
    assert_memory_equal(a.data, data, sizeof data);
    npy_free(&a);
    assert_null(a.data);
    npy_free(&a); /* harmless twice */
}

static void roundtrip_f16(void **state)
{
    (void)state;
    char path[512];
    tmp_path("f16.npy", path, sizeof path);
    const uint16_t data[5] = { 0x3c00, 0xc000, 0x0001, 0x7bff, 0x8000 };
    size_t shape[1] = { 5 };
    assert_int_equal(npy_write_atomic(path, CLATTN_F16, 1, shape, data, NULL, 0), 0);
    npy_array a;
    assert_int_equal(npy_read(path, &a, NULL, 0), 0);
    assert_int_equal(a.dtype, CLATTN_F16);
    assert_int_equal(a.ndim, 1);
    assert_int_equal(a.shape[0], 5);
    assert_memory_equal(a.data, data, sizeof data);
    npy_free(&a);
}

/* Scalars, 8-D arrays and empty arrays are all valid .npy files. */
static void roundtrip_ranks(void **state)
{
    (void)state;
    char path[512];
    tmp_path("ranks.npy", path, sizeof path);
    float one = 1.5f;
    npy_array a;
    assert_int_equal(npy_write_atomic(path, CLATTN_F32, 0, NULL, &one, NULL, 0), 0);
    assert_int_equal(npy_read(path, &a, NULL, 0), 0);
    assert_int_equal(a.ndim, 0);
    assert_int_equal(a.nelems, 1);
    assert_memory_equal(a.data, &one, 4);
    npy_free(&a);

    size_t shape8[8] = { 1, 2, 1, 2, 1, 2, 1, 3 };
    float data[24] = { 0 };
    data[23] = 7.0f;
    assert_int_equal(npy_write_atomic(path, CLATTN_F32, 8, shape8, data, NULL, 0), 0);
    assert_int_equal(npy_read(path, &a, NULL, 0), 0);
    assert_int_equal(a.ndim, 8);
    assert_memory_equal(a.shape, shape8, sizeof shape8);
    assert_memory_equal(a.data, data, sizeof data);
    npy_free(&a);

    size_t empty[2] = { 0, 4 };
    assert_int_equal(npy_write_atomic(path, CLATTN_F16, 2, empty, NULL, NULL, 0), 0);
    assert_int_equal(npy_read(path, &a, NULL, 0), 0);
    assert_int_equal(a.nelems, 0);
    assert_int_equal(a.nbytes, 0);
    npy_free(&a);
}

/* Reads the whole (small) file into buf as a NUL-terminated string. */
static size_t slurp(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    return n;
}

/* The writer's header is byte for byte what numpy (>= 1.24) writes,
 * including the room it leaves for the first dimension to grow and its
 * padding to 64 bytes. */
static void header_matches_numpy(void **state)
{
    (void)state;
    char path[512], buf[256];
    tmp_path("hdr.npy", path, sizeof path);
    float data[6] = { 0 };
    size_t shape[2] = { 2, 3 };
    assert_int_equal(npy_write_atomic(path, CLATTN_F32, 2, shape, data, NULL, 0), 0);
    size_t n = slurp(path, buf, sizeof buf);
    assert_int_equal(n, 128 + sizeof data);
    const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    assert_memory_equal(buf, "\x93NUMPY\x01\x00\x76\x00", 10);
    assert_memory_equal(buf + 10, dict, strlen(dict));
    for (size_t i = 10 + strlen(dict); i < 127; i++)
        assert_int_equal(buf[i], ' ');
    assert_int_equal(buf[127], '\n');

    /* A 1-tuple keeps its comma, as Python writes it. */
    size_t shape1[1] = { 6 };
    assert_int_equal(npy_write_atomic(path, CLATTN_F16, 1, shape1, data, NULL, 0), 0);
    n = slurp(path, buf, sizeof buf);
    assert_int_equal(n, 128 + 12);
    assert_non_null(strstr(buf + 10, "{'descr': '<f2', 'fortran_order': False, 'shape': (6,), }"));
}

/* Header forms other writers produce: format 2.0 and 3.0, keys in another
 * order, odd spacing, double quotes, no trailing comma, Python 2 longs, and
 * the byte-order marks that mean little-endian on this host. */
static void reads_header_variants(void **state)
{
    (void)state;
    static const struct {
        int major;
        const char *dict;
        size_t ndim, d0, d1;
    } cases[] = {
        { 2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 2, 2, 3 },
        { 3, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 2, 2, 3 },
        { 1, "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}", 2, 2, 3 },
        { 1, "{ \"descr\" :'<f4' ,'fortran_order':False,'shape':( 6 , ) , }", 1, 6, 0 },
        { 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }", 2, 2, 3 },
        { 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3,), }", 2, 2, 3 },
        { 1, "{'descr': '=f4', 'fortran_order': False, 'shape': (6,), }", 1, 6, 0 },
        { 1, "{'descr': '|f4', 'fortran_order': False, 'shape': (6,), }", 1, 6, 0 },
    };
    float data[6] = { 1, 2, 3, 4, 5, 6 };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512], err[256];
        write_npy("variant.npy", cases[i].major, cases[i].dict, data, sizeof data, path,
                  sizeof path);
        npy_array a;
        int rc = npy_read(path, &a, err, sizeof err);
        if (rc)
            fail_msg("case %zu: %s", i, err);
        assert_int_equal(a.ndim, cases[i].ndim);
        assert_int_equal(a.shape[0], cases[i].d0);
        if (cases[i].ndim == 2)
            assert_int_equal(a.shape[1], cases[i].d1);
        assert_memory_equal(a.data, data, sizeof data);
        npy_free(&a);
    }
}

/* --------------------------------------------------------------- bad inputs */

static void missing_file(void **state)
{
    (void)state;
    char path[512];
    expect_read_error(tmp_path("absent.npy", path, sizeof path), CLATTN_EIO, "cannot open");
    expect_read_error(tmpdir, CLATTN_EIO, "cannot read");
}

/* Files that are not .npy or stop short, as raw bytes, each refused as
 * malformed with the message a user can act on. */
static void bad_bytes(void **state)
{
    (void)state;
#define RAW(lit, message) { (lit), sizeof(lit) - 1, (message) }
    static const struct {
        const char *bytes;
        size_t len;
        const char *message;
    } files[] = {
        RAW("PK\x03\x04 this is a zip file, not npy", "bad magic"),
        RAW("", "truncated"),
        RAW("\x93NUM", "truncated"),
        RAW("\x93NUMPY\x04\x00\x10\x00", "version 4.0"),
        /* Says 118 bytes of header, holds 20. */
        RAW("\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'f", "truncated header"),
        RAW("\x93NUMPY\x01\x00\x76", "truncated header"),
    };
#undef RAW
    char path[512];
    tmp_path("raw.npy", path, sizeof path);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        write_bytes(path, files[i].bytes, files[i].len);
        expect_read_error(path, CLATTN_EFORMAT, files[i].message);
    }
}

/* Files whose header and data disagree with what the reader takes, each
 * refused as malformed with the message a user can act on. */
static void refused_files(void **state)
{
    (void)state;
    static const struct {
        const char *dict;
        size_t data_bytes;
        const char *message;
    } files[] = {
        { "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", 16,
          "dtype '<f8' not supported (need float32 '<f4', float16 '<f2' or bfloat16 '<V2')" },
        { "{'descr': '<i4', 'fortran_order': False, 'shape': (4,), }", 16, "'<i4' not supported" },
        { "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }", 16,
          "structured" },
        { "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8, "big-endian" },
        { "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24, "fortran_order" },
        { "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3), }", 20,
          "truncated: header says 48 bytes of data, file has 20" },
        { "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", 20, "trailing garbage" },
        /* The header's whole length, but the dict stops short. */
        { "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", 0, "malformed header" },
    };
    static const unsigned char data[64];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[512], name[32];
        snprintf(name, sizeof name, "refused%zu.npy", i);
        write_npy(name, 1, files[i].dict, data, files[i].data_bytes, path, sizeof path);
        expect_read_error(path, CLATTN_EFORMAT, files[i].message);
    }
}

static void malformed_dicts(void **state)
{
    (void)state;
    static const char *const dicts[] = {
        "{'descr': '<f4', 'fortran_order': False, 'shape': ('a', 3), }", /* non-numeric */
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,), }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3], }",
        "{'descr': '<f4', 'fortran_order': false, 'shape': (2,), }",
        "{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2,), }",
        "{'descr': '<f4', 'shape': (2,), }",                               /* missing key */
        "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}",
        "{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}",         /* no comma */
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,),, }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk",
        "['descr', '<f4']",
        "{'descr: '<f4', 'fortran_order': False, 'shape': (2,)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }",
    };
    float d[2] = { 0 };
    for (size_t i = 0; i < sizeof dicts / sizeof dicts[0]; i++) {
        char path[512];
        write_npy("dict.npy", 1, dicts[i], d, sizeof d, path, sizeof path);
        npy_array a;
        char err[256];
        int rc = npy_read(path, &a, err, sizeof err);
        if (rc != CLATTN_EFORMAT)
            fail_msg("dict %zu (%s): got %s (%s)", i, dicts[i], clattn_error_name(rc), err);
        assert_null(strchr(err, '\n'));
    }
}

/* Header strings take printable ASCII only: a NUL must not cut
 * '<f4\0junk' down to '<f4', and a control or non-ASCII byte must not reach
 * a message, which would then span lines or carry an escape sequence. Found
 * by fuzzing (tests/fuzz/corpus/npy/regress_*). */
static void string_bytes(void **state)
{
    (void)state;
    static const struct {
        const char *dict; /* '@' stands for the byte */
        unsigned char byte;
    } cases[] = {
        { "{'descr': '<f4@junk', 'fortran_order': False, 'shape': (2,), }", 0x00 },
        { "{'descr': '<f@[31m', 'fortran_order': False, 'shape': (2,), }", 0x1b },
        { "{'de@scr': '<f4', 'fortran_order': False, 'shape': (2,), }", '\n' },
        { "{'de@scr': '<f4', 'fortran_order': False, 'shape': (2,), }", 0xba },
    };
    float d[2] = { 0 };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len;
        unsigned char *bytes = build_npy(1, cases[i].dict, d, sizeof d, &len);
        unsigned char *at = memchr(bytes, '@', len);
        assert_non_null(at);
        *at = cases[i].byte;
        char path[512], want[64], err[256];
        tmp_path("string_bytes.npy", path, sizeof path);
        write_bytes(path, bytes, len);
        free(bytes);
        snprintf(want, sizeof want, "byte 0x%02x in a string", cases[i].byte);
        expect_read_error(path, CLATTN_EFORMAT, want);
        npy_array a;
        npy_read(path, &a, err, sizeof err);
        for (const char *p = err; *p; p++)
            if (*p < ' ' || *p > '~')
                fail_msg("case %zu: message not printable ASCII: %s", i, err);
    }
}

static void shape_overflow(void **state)
{
    (void)state;
    char path[512];
    float d[2] = { 0 };
    write_npy("huge.npy", 1,
              "{'descr': '<f4', 'fortran_order': False, "
              "'shape': (4294967296, 4294967296, 4294967296), }",
              d, sizeof d, path, sizeof path);
    expect_read_error(path, CLATTN_EOVERFLOW, "overflow");
    write_npy("huge_dim.npy", 1,
              "{'descr': '<f4', 'fortran_order': False, "
              "'shape': (123456789012345678901234567890,), }",
              d, sizeof d, path, sizeof path);
    expect_read_error(path, CLATTN_EOVERFLOW, "too large");
    /* Fits size_t as elements, not as bytes. */
    write_npy("huge_bytes.npy", 1,
              "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387905,), }", d,
              sizeof d, path, sizeof path);
    expect_read_error(path, CLATTN_EOVERFLOW, "overflow");
    /* Large but representable: refused as truncated before any allocation. */
    write_npy("large.npy", 1,
              "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000), }", d,
              sizeof d, path, sizeof path);
    expect_read_error(path, CLATTN_EFORMAT, "truncated");
    /* A zero dimension makes the product 0 whatever the others are. */
    write_npy("zero.npy", 1,
              "{'descr': '<f4', 'fortran_order': False, "
              "'shape': (4294967296, 4294967296, 0), }",
              NULL, 0, path, sizeof path);
    npy_array a;
    assert_int_equal(npy_read(path, &a, NULL, 0), 0);
    assert_int_equal(a.nbytes, 0);
    npy_free(&a);
}

static void null_arguments(void **state)
{
    (void)state;
    npy_array a;
    assert_int_equal(npy_read(NULL, &a, NULL, 0), CLATTN_EINVAL);
    assert_int_equal(npy_read("x.npy", NULL, NULL, 0), CLATTN_EINVAL);
    size_t shape[1] = { 2 };
    float d[2] = { 0 };
    char path[512];
    tmp_path("never.npy", path, sizeof path);
    assert_int_equal(npy_write_atomic(NULL, CLATTN_F32, 1, shape, d, NULL, 0), CLATTN_EINVAL);
    assert_int_equal(npy_write_atomic(path, (clattn_dtype)7, 1, shape, d, NULL, 0), CLATTN_EINVAL);
    assert_int_equal(npy_write_atomic(path, CLATTN_F32, 9, shape, d, NULL, 0), CLATTN_EINVAL);
    assert_int_equal(npy_write_atomic(path, CLATTN_F32, 1, NULL, d, NULL, 0), CLATTN_EINVAL);
    assert_int_equal(npy_write_atomic(path, CLATTN_F32, 1, shape, NULL, NULL, 0), CLATTN_EINVAL);
    size_t huge[2] = { SIZE_MAX / 2, 3 };
    assert_int_equal(npy_write_atomic(path, CLATTN_F32, 2, huge, d, NULL, 0), CLATTN_EOVERFLOW);
    assert_int_equal(access(path, F_OK), -1);
}

/* ------------------------------------------------------------------ streams */

/* npy_read on a FIFO fed by a child process: the reader sees a pipe, whose
 * length shows only when it ends. The child ignores SIGPIPE, so a reader
 * that stops early (an error) just ends its write. */
static int read_through_fifo(const void *bytes, size_t n, npy_array *a, char *err,
                             size_t errcap)
{
    char fifo[512];
    tmp_path("in.fifo", fifo, sizeof fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGPIPE, SIG_IGN);
        int fd = open(fifo, O_WRONLY);
        for (const char *p = bytes; fd >= 0 && n > 0;) {
            ssize_t w = write(fd, p, n);
            if (w <= 0)
                break;
            p += w;
            n -= (size_t)w;
        }
        _exit(0);
    }
    int rc = npy_read(fifo, a, err, errcap);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_int_equal(unlink(fifo), 0);
    return rc;
}

/* More data than the first buffer holds, so the buffer has to grow. */
static void reads_from_fifo(void **state)
{
    (void)state;
    enum { N = 3 * 50000 };
    static float data[N];
    for (size_t i = 0; i < N; i++)
        data[i] = (float)i;
    size_t len;
    unsigned char *bytes = build_npy(
        1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 50000), }", data,
        sizeof data, &len);
    npy_array a;
    char err[256];
    int rc = read_through_fifo(bytes, len, &a, err, sizeof err);
    free(bytes);
    if (rc)
        fail_msg("%s", err);
    assert_int_equal(a.ndim, 2);
    assert_int_equal(a.nbytes, sizeof data);
    assert_memory_equal(a.data, data, sizeof data);
    npy_free(&a);
}

static void fifo_truncated_or_trailing(void **state)
{
    (void)state;
    float d[5] = { 0 };
    size_t len;
    unsigned char *bytes = build_npy(
        1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3), }", d, sizeof d, &len);
    npy_array a;
    char err[256];
    assert_int_equal(read_through_fifo(bytes, len, &a, err, sizeof err), CLATTN_EFORMAT);
    assert_null(a.data);
    if (!strstr(err, "truncated: header says 48 bytes of data, the stream ended after 20"))
        fail_msg("message: %s", err);
    free(bytes);

    bytes = build_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", d,
                      sizeof d, &len);
    assert_int_equal(read_through_fifo(bytes, len, &a, err, sizeof err), CLATTN_EFORMAT);
    assert_null(a.data);
    if (!strstr(err, "trailing garbage"))
        fail_msg("message: %s", err);
    free(bytes);
}

/* The address-space limit below would starve AddressSanitizer's own
 * mappings, so under ASan only the result is checked. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

/* A header declaring 64 GiB followed by 100 bytes, read from a FIFO and
 * from a regular file, with the address space limited to 2 GiB: memory must
 * follow the data that arrives, not the header's claim, so both are refused
 * as truncated rather than as out of memory. */
static void declared_size_not_allocated(void **state)
{
    (void)state;
    if (SIZE_MAX >> 36 == 0)
        skip(); /* 64 GiB is no size_t here */
    unsigned char data[100] = { 0 };
    size_t len;
    unsigned char *bytes = build_npy(
        1, "{'descr': '<f4', 'fortran_order': False, 'shape': (16, 1073741824), }", data,
        sizeof data, &len);
    char path[512];
    tmp_path("claims_64g.npy", path, sizeof path);
    write_bytes(path, bytes, len);

    struct rlimit saved, small;
    assert_int_equal(getrlimit(RLIMIT_AS, &saved), 0);
    small = saved;
    if (!UNDER_ASAN && (saved.rlim_max == RLIM_INFINITY || saved.rlim_max > ((rlim_t)2 << 30)))
        small.rlim_cur = (rlim_t)2 << 30;
    assert_int_equal(setrlimit(RLIMIT_AS, &small), 0);
    npy_array a, b;
    char err_fifo[256], err_file[256];
    int rc_fifo = read_through_fifo(bytes, len, &a, err_fifo, sizeof err_fifo);
    int rc_file = npy_read(path, &b, err_file, sizeof err_file);
    assert_int_equal(setrlimit(RLIMIT_AS, &saved), 0);
    free(bytes);

    if (rc_fifo != CLATTN_EFORMAT || !strstr(err_fifo, "the stream ended after 100"))
        fail_msg("FIFO: %s (%s)", clattn_error_name(rc_fifo), err_fifo);
    if (rc_file != CLATTN_EFORMAT || !strstr(err_file, "68719476736 bytes of data, file has 100"))
        fail_msg("file: %s (%s)", clattn_error_name(rc_file), err_file);
}

/* ------------------------------------------------------------ atomic writes */

static void write_into_missing_dir(void **state)
{
    (void)state;
    char path[512];
    tmp_path("no/such/dir/out.npy", path, sizeof path);
    float d[2] = { 1, 2 };
    size_t shape[1] = { 2 };
    char err[256];
    size_t before = count_entries();
    assert_int_equal(npy_write_atomic(path, CLATTN_F32, 1, shape, d, err, sizeof err), CLATTN_EIO);
    assert_non_null(strstr(err, path));
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(count_entries(), before);
}

/* A directory is refused before anything is written: no temporary, and the
 * directory stays. */
static void write_over_directory(void **state)
{
    (void)state;
    char path[512];
    tmp_path("a_dir.npy", path, sizeof path);
    assert_int_equal(mkdir(path, 0700), 0);
    size_t before = count_entries();
    float d[2] = { 1, 2 };
    size_t shape[1] = { 2 };
    char err[512];
    assert_int_equal(npy_write_atomic(path, CLATTN_F32, 1, shape, d, err, sizeof err), CLATTN_EIO);
    assert_non_null(strstr(err, "is a directory"));
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(count_entries(), before);
    assert_int_equal(rmdir(path), 0);
}

/* A write that fails halfway (file size limit; works even as root, where
 * permission tricks do not) leaves the old target as it was. */
static void failed_write_keeps_target(void **state)
{
    (void)state;
    char path[512];
    tmp_file("keep.npy", "old contents", path, sizeof path);
    size_t before = count_entries();

    struct rlimit saved, small;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &saved), 0);
    small = saved;
    small.rlim_cur = 4096;
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);

    static float big[16384];
    size_t shape[2] = { 128, 128 };
    char err[256];
    int rc = npy_write_atomic(path, CLATTN_F32, 2, shape, big, err, sizeof err);

    assert_int_equal(setrlimit(RLIMIT_FSIZE, &saved), 0);
    signal(SIGXFSZ, old_handler);
    assert_int_equal(rc, CLATTN_EIO);
    assert_non_null(strstr(err, "write failed"));

    char got[32];
    assert_int_equal(slurp(path, got, sizeof got), 12);
    assert_string_equal(got, "old contents");
    assert_int_equal(count_entries(), before);
}

/* A successful write replaces the target, which keeps its permission bits;
 * a new file gets a creat()-like mode, not mkstemp's 0600. */
static void write_replaces_target(void **state)
{
    (void)state;
    char path[512], fresh[512];
    tmp_file("replace.npy", "old contents", path, sizeof path);
    tmp_path("fresh.npy", fresh, sizeof fresh);
    assert_int_equal(chmod(path, 0600), 0);
    mode_t old_mask = umask(027);
    float d[3] = { 1, 2, 3 };
    size_t shape[1] = { 3 };
    int rc = npy_write_atomic(path, CLATTN_F32, 1, shape, d, NULL, 0);
    int rc_fresh = npy_write_atomic(fresh, CLATTN_F32, 1, shape, d, NULL, 0);
    umask(old_mask);
    assert_int_equal(rc, 0);
    assert_int_equal(rc_fresh, 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(st.st_size, 128 + sizeof d);
    assert_int_equal(stat(fresh, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    npy_array a;
    assert_int_equal(npy_read(path, &a, NULL, 0), 0);
    assert_memory_equal(a.data, d, sizeof d);
    npy_free(&a);
}

/* Outputs committed together: one that fails (a write error on /dev/full,
 * seen at the flush) replaces none of the others and leaves no temporary;
 * when all succeed, all are replaced. */
static void commit_all_or_none(void **state)
{
    (void)state;
    char a[512], b[512];
    tmp_file("together_a", "old a", a, sizeof a);
    tmp_path("together_b", b, sizeof b);
    const size_t before = count_entries();
    outfile o[3], *all[3] = { &o[0], &o[1], &o[2] };
    char err[512];
    assert_int_equal(outfile_open(&o[0], a, err, sizeof err), 0);
    assert_int_equal(outfile_open(&o[1], b, err, sizeof err), 0);
    fputs("new a", o[0].stream);
    fputs("new b", o[1].stream);
    if (access("/dev/full", W_OK) == 0) {
        assert_int_equal(outfile_open(&o[2], "/dev/full", err, sizeof err), 0);
        fputs("never fits", o[2].stream);
        assert_int_equal(outfile_commit_all(all, 3, err, sizeof err), -1);
        assert_non_null(strstr(err, "/dev/full: write failed"));
        char got[16];
        assert_int_equal(slurp(a, got, sizeof got), 5);
        assert_string_equal(got, "old a");
        assert_int_equal(access(b, F_OK), -1);
        assert_int_equal(count_entries(), before);
        assert_int_equal(outfile_open(&o[0], a, err, sizeof err), 0);
        assert_int_equal(outfile_open(&o[1], b, err, sizeof err), 0);
        fputs("new a", o[0].stream);
        fputs("new b", o[1].stream);
    }
    assert_int_equal(outfile_commit_all(all, 2, err, sizeof err), 0);
    assert_int_equal(count_entries(), before + 1);
    assert_int_equal(access(b, F_OK), 0);
}

/* Two paths name one file: the same file however spelled, a hard link, a
 * new name in one directory; not a character device twice. */
static void same_file(void **state)
{
    (void)state;
    char a[512], b[512], dot[600], hard[512], fresh[512], fresh_dot[600];
    tmp_file("same_a", "a", a, sizeof a);
    tmp_file("same_b", "b", b, sizeof b);
    tmp_path("same_link", hard, sizeof hard);
    tmp_path("same_fresh", fresh, sizeof fresh);
    snprintf(dot, sizeof dot, "%s/./same_a", tmpdir);
    snprintf(fresh_dot, sizeof fresh_dot, "%s/./same_fresh", tmpdir);
    assert_int_equal(link(a, hard), 0);
    assert_true(outfile_same_file(a, a));
    assert_true(outfile_same_file(a, dot));
    assert_true(outfile_same_file(a, hard));
    assert_false(outfile_same_file(a, b));
    assert_true(outfile_same_file(fresh, fresh_dot));
    assert_false(outfile_same_file(fresh, a));
    assert_true(outfile_same_file("-", "-"));
    assert_false(outfile_same_file("-", a));
    assert_false(outfile_same_file("/dev/null", "/dev/null"));
    assert_false(outfile_same_file(NULL, a));
}

/* --------------------------------------------- outputs that are not files */

/* A FIFO output is written into, not replaced: the bytes reach its reader
 * and the FIFO stays. The read end is opened first, non-blocking, so the
 * writer's open does not wait; the small file fits the pipe's buffer. A
 * symbolic link to the FIFO leads to it as /dev/stdout leads to a pipe. */
static void write_into_fifo(void **state)
{
    (void)state;
    char fifo[512], link[512], file[512], err[256];
    tmp_path("out.fifo", fifo, sizeof fifo);
    tmp_path("fifo_link.npy", link, sizeof link);
    tmp_path("same.npy", file, sizeof file);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(symlink("out.fifo", link), 0);
    float d[3] = { 1, 2, 3 };
    size_t shape[1] = { 3 };
    assert_int_equal(npy_write_atomic(file, CLATTN_F32, 1, shape, d, NULL, 0), 0);
    char want[256];
    size_t want_len = slurp(file, want, sizeof want);

    for (int through_link = 0; through_link < 2; through_link++) {
        int rd = open(fifo, O_RDONLY | O_NONBLOCK);
        assert_true(rd >= 0);
        size_t before = count_entries();
        int rc = npy_write_atomic(through_link ? link : fifo, CLATTN_F32, 1, shape, d, err,
                                  sizeof err);
        char got[256];
        ssize_t n = read(rd, got, sizeof got);
        close(rd);
        if (rc)
            fail_msg("%s", err);
        struct stat st;
        assert_int_equal(lstat(fifo, &st), 0);
        assert_true(S_ISFIFO(st.st_mode));
        assert_int_equal(lstat(link, &st), 0);
        assert_true(S_ISLNK(st.st_mode));
        assert_int_equal(n, (ssize_t)want_len);
        assert_memory_equal(got, want, want_len);
        assert_int_equal(count_entries(), before);
    }
}

/* A node for the same device as `dev`, at `path`: the tests write to their
 * own /dev/null and /dev/full, so a writer that replaced its target would
 * replace those, not the system's. -1 without the privilege to make one. */
static int clone_device(const char *dev, const char *path)
{
    struct stat st;
    if (stat(dev, &st) != 0 || !S_ISCHR(st.st_mode))
        return -1;
    return mknod(path, S_IFCHR | 0666, st.st_rdev);
}

static void expect_char_device(const char *path, const char *like)
{
    struct stat st, orig;
    assert_int_equal(lstat(path, &st), 0);
    assert_int_equal(stat(like, &orig), 0);
    if (!S_ISCHR(st.st_mode) || st.st_rdev != orig.st_rdev)
        fail_msg("%s is no longer a character device like %s", path, like);
}

/* A character device is written in place: /dev/null swallows the array and
 * stays a device; /dev/full fails the write, which is reported, and stays a
 * device too. */
static void write_into_char_device(void **state)
{
    (void)state;
    char null[512], full[512], err[256];
    tmp_path("null", null, sizeof null);
    tmp_path("full", full, sizeof full);
    if (clone_device("/dev/null", null) != 0 || clone_device("/dev/full", full) != 0)
        skip(); /* not root, or a file system mounted nodev */
    float d[3] = { 1, 2, 3 };
    size_t shape[1] = { 3 };
    size_t before = count_entries();
    int rc = npy_write_atomic(null, CLATTN_F32, 1, shape, d, err, sizeof err);
    if (rc)
        fail_msg("%s", err);
    expect_char_device(null, "/dev/null");

    rc = npy_write_atomic(full, CLATTN_F32, 1, shape, d, err, sizeof err);
    assert_int_equal(rc, CLATTN_EIO);
    assert_non_null(strstr(err, full));
    if (!strstr(err, "write failed"))
        fail_msg("message: %s", err);
    expect_char_device(full, "/dev/full");
    assert_int_equal(count_entries(), before);
}

/* Writes `path` expecting a refusal that names it and says `why`, with the
 * directory unchanged (no temporary left, nothing created or replaced). */
static void expect_write_refused(const char *path, const char *why)
{
    float d[2] = { 1, 2 };
    size_t shape[1] = { 2 };
    char err[512];
    size_t before = count_entries();
    int rc = npy_write_atomic(path, CLATTN_F32, 1, shape, d, err, sizeof err);
    if (rc != CLATTN_EIO || !strstr(err, path) || !strstr(err, why))
        fail_msg("%s: got %s (%s), want CLATTN_EIO saying '%s'", path, clattn_error_name(rc),
                 err, why);
    assert_int_equal(count_entries(), before);
}

/* A symbolic link to a regular file is neither replaced nor written
 * through: the link and its target stay as they were. A dangling link does
 * not create its target. */
static void refuse_symlinks(void **state)
{
    (void)state;
    char target[512], link[512], dangling[512], absent[512], buf[64];
    tmp_file("target.npy", "old contents", target, sizeof target);
    tmp_path("link.npy", link, sizeof link);
    tmp_path("dangling.npy", dangling, sizeof dangling);
    tmp_path("absent.npy", absent, sizeof absent);
    assert_int_equal(symlink("target.npy", link), 0);
    assert_int_equal(symlink("absent.npy", dangling), 0);

    expect_write_refused(link, "symbolic link");
    expect_write_refused(link, "target.npy'"); /* names where it leads */
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(slurp(target, buf, sizeof buf), 12);
    assert_string_equal(buf, "old contents");

    expect_write_refused(dangling, "does not exist");
    assert_int_equal(lstat(dangling, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(access(absent, F_OK), -1);
}

static void refuse_socket(void **state)
{
    (void)state;
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    char path[512];
    tmp_path("out.sock", path, sizeof path);
    if (strlen(path) >= sizeof addr.sun_path)
        skip(); /* $TMPDIR too long for a socket's name */
    memcpy(addr.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof addr), 0);
    expect_write_refused(addr.sun_path, "is a socket");
    struct stat st;
    assert_int_equal(lstat(addr.sun_path, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    close(fd);
}

/* A block device node (number 0, never opened) is refused: an array is never
 * meant to overwrite a disk. */
static void refuse_block_device(void **state)
{
    (void)state;
    char path[512];
    tmp_path("block", path, sizeof path);
    if (mknod(path, S_IFBLK | 0600, 0) != 0)
        skip(); /* not root, or a file system mounted nodev */
    expect_write_refused(path, "is a block device");
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISBLK(st.st_mode));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(roundtrip_f32),
        cmocka_unit_test(roundtrip_f16),
        cmocka_unit_test(roundtrip_ranks),
        cmocka_unit_test(header_matches_numpy),
        cmocka_unit_test(reads_header_variants),
        cmocka_unit_test(missing_file),
        cmocka_unit_test(bad_bytes),
        cmocka_unit_test(refused_files),
        cmocka_unit_test(malformed_dicts),
        cmocka_unit_test(string_bytes),
        cmocka_unit_test(shape_overflow),
        cmocka_unit_test(null_arguments),
        cmocka_unit_test(reads_from_fifo),
        cmocka_unit_test(fifo_truncated_or_trailing),
        cmocka_unit_test(declared_size_not_allocated),
        cmocka_unit_test(write_into_missing_dir),
        cmocka_unit_test(write_over_directory),
        cmocka_unit_test(failed_write_keeps_target),
        cmocka_unit_test(write_replaces_target),
        cmocka_unit_test(commit_all_or_none),
        cmocka_unit_test(same_file),
        cmocka_unit_test(write_into_fifo),
        cmocka_unit_test(write_into_char_device),
        cmocka_unit_test(refuse_symlinks),
        cmocka_unit_test(refuse_socket),
        cmocka_unit_test(refuse_block_device),
    };
    return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
