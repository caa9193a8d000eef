/*
 * Unit tests of tools/npy.c: round trips, the header forms numpy has written
 * over the years, every malformed input the reader must refuse (with the
 * right code), and the atomic writer's promise that a failed write leaves no
 * file and does not clobber an existing one.
 *
 * Files are built byte by byte here rather than with numpy, so the tests
 * need nothing but the C library; they live in a mkdtemp directory removed
 * at the end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "npy.h"

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

/* A string literal's bytes, without its NUL. */
#define write_literal(path, lit) write_bytes((path), (lit), sizeof(lit) - 1)

/* Writes a .npy file with format `major`.0, the given header dict text
 * (padded here as numpy would) and `data_len` bytes of data. */
static const char *write_npy(const char *name, int major, const char *dict, const void *data,
                             size_t data_len, char *buf, size_t cap)
{
    const char *path = tmp_path(name, buf, cap);
    unsigned char out[4096];
    size_t pre = major == 1 ? 10 : 12;
    size_t dict_len = strlen(dict);
    size_t total = (pre + dict_len + 1 + 63) / 64 * 64;
    assert_true(total + data_len <= sizeof out);
    size_t hlen = total - pre;
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
    write_bytes(path, out, total + data_len);
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

static void bad_magic(void **state)
{
    (void)state;
    char path[512];
    tmp_path("magic.npy", path, sizeof path);
    write_literal(path, "PK\x03\x04 this is a zip file, not npy");
    expect_read_error(path, CLATTN_EFORMAT, "bad magic");
    write_literal(path, "");
    expect_read_error(path, CLATTN_EFORMAT, "truncated");
    write_literal(path, "\x93NUM");
    expect_read_error(path, CLATTN_EFORMAT, "truncated");
    write_literal(path, "\x93NUMPY\x04\x00\x10\x00");
    expect_read_error(path, CLATTN_EFORMAT, "version 4.0");
}

static void bad_dtype(void **state)
{
    (void)state;
    char path[512];
    double d[2] = { 1, 2 };
    write_npy("f8.npy", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", d,
              sizeof d, path, sizeof path);
    expect_read_error(path, CLATTN_EFORMAT,
                      "dtype '<f8' not supported (need float32 '<f4' or float16 '<f2')");
    write_npy("i4.npy", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (4,), }", d,
              sizeof d, path, sizeof path);
    expect_read_error(path, CLATTN_EFORMAT, "'<i4' not supported");
    write_npy("rec.npy", 1,
              "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }", d,
              sizeof d, path, sizeof path);
    expect_read_error(path, CLATTN_EFORMAT, "structured");
}

static void big_endian(void **state)
{
    (void)state;
    char path[512];
    float d[2] = { 1, 2 };
    write_npy("be.npy", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", d,
              sizeof d, path, sizeof path);
    expect_read_error(path, CLATTN_EFORMAT, "big-endian");
}

static void fortran_order(void **state)
{
    (void)state;
    char path[512];
    float d[6] = { 0 };
    write_npy("fortran.npy", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", d,
              sizeof d, path, sizeof path);
    expect_read_error(path, CLATTN_EFORMAT, "fortran_order");
}

static void truncated_header(void **state)
{
    (void)state;
    char path[512];
    tmp_path("trunc_header.npy", path, sizeof path);
    /* Says 118 bytes of header, holds 20. */
    write_literal(path, "\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'f");
    expect_read_error(path, CLATTN_EFORMAT, "truncated header");
    write_literal(path, "\x93NUMPY\x01\x00\x76");
    expect_read_error(path, CLATTN_EFORMAT, "truncated header");
    /* Complete length, but the dict stops short. */
    write_npy("open_dict.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)",
              NULL, 0, path, sizeof path);
    expect_read_error(path, CLATTN_EFORMAT, "malformed header");
}

static void truncated_data(void **state)
{
    (void)state;
    char path[512];
    float d[5] = { 0 };
    write_npy("trunc_data.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3), }",
              d, sizeof d, path, sizeof path);
    expect_read_error(path, CLATTN_EFORMAT, "truncated: header says 48 bytes of data, file has 20");
}

static void trailing_garbage(void **state)
{
    (void)state;
    char path[512];
    float d[5] = { 0 };
    write_npy("trailing.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", d,
              sizeof d, path, sizeof path);
    expect_read_error(path, CLATTN_EFORMAT, "trailing garbage");
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

/* rename() over a directory fails after all data was written: the temporary
 * must go, and the directory stay. */
static void write_over_directory(void **state)
{
    (void)state;
    char path[512];
    tmp_path("a_dir.npy", path, sizeof path);
    assert_int_equal(mkdir(path, 0700), 0);
    size_t before = count_entries();
    float d[2] = { 1, 2 };
    size_t shape[1] = { 2 };
    assert_int_equal(npy_write_atomic(path, CLATTN_F32, 1, shape, d, NULL, 0), CLATTN_EIO);
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
    tmp_path("keep.npy", path, sizeof path);
    write_literal(path, "old contents");
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

    char got[32] = { 0 };
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(got, 1, sizeof got, f);
    fclose(f);
    assert_int_equal(n, 12);
    assert_memory_equal(got, "old contents", 12);
    assert_int_equal(count_entries(), before);
}

/* A successful write replaces the target and gets a creat()-like mode, not
 * mkstemp's 0600. */
static void write_replaces_target(void **state)
{
    (void)state;
    char path[512];
    tmp_path("replace.npy", path, sizeof path);
    write_literal(path, "old contents");
    mode_t old_mask = umask(022);
    float d[3] = { 1, 2, 3 };
    size_t shape[1] = { 3 };
    int rc = npy_write_atomic(path, CLATTN_F32, 1, shape, d, NULL, 0);
    umask(old_mask);
    assert_int_equal(rc, 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    assert_int_equal(st.st_size, 128 + sizeof d);
    npy_array a;
    assert_int_equal(npy_read(path, &a, NULL, 0), 0);
    assert_memory_equal(a.data, d, sizeof d);
    npy_free(&a);
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
        cmocka_unit_test(bad_magic),
        cmocka_unit_test(bad_dtype),
        cmocka_unit_test(big_endian),
        cmocka_unit_test(fortran_order),
        cmocka_unit_test(truncated_header),
        cmocka_unit_test(truncated_data),
        cmocka_unit_test(trailing_garbage),
        cmocka_unit_test(malformed_dicts),
        cmocka_unit_test(shape_overflow),
        cmocka_unit_test(null_arguments),
        cmocka_unit_test(write_into_missing_dir),
        cmocka_unit_test(write_over_directory),
        cmocka_unit_test(failed_write_keeps_target),
        cmocka_unit_test(write_replaces_target),
    };
    return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
