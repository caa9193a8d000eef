/* SPDX-License-Identifier: MIT */
/*
 * The per-device cache files (tuned tiles, measurements) against what a
 * hostile or broken file system holds: links to /dev/zero and FIFOs (read
 * must not hang), planted symlinks (a write must not follow them), a
 * directory other users can write or do not own (not used), corrupt and
 * impossible entries (ignored, and said so), implausible measurements
 * (refused), and two processes recording tiles at once (both kept); the
 * built programs' binaries (a mark counting the first two builds, the
 * binary kept at the third and loaded at the fourth; a damaged, cut or
 * foreign file rebuilt and replaced, never handed to the driver). Each test runs in a fresh
 * $XDG_CACHE_HOME. Exits 77 without an OpenCL device.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>

#include "clattn/clattn.h"
#include "clattn/device.h"

static clattn_ctx *ctx;
static char home[64];

static int fresh_home(void **state)
{
    (void)state;
    snprintf(home, sizeof home, "/tmp/clattn-cache-XXXXXX");
    if (!mkdtemp(home))
        return -1;
    setenv("XDG_CACHE_HOME", home, 1);
    return clattn_open(&ctx, NULL) == CLATTN_OK ? 0 : -1;
}

static int remove_home(void **state)
{
    (void)state;
    clattn_close(&ctx);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "chmod -R u+rwx %s; rm -rf %s", home, home);
    return system(cmd) == 0 ? 0 : -1;
}

/* The measurement file's path, with its directory created 0700. */
static void measurement_path(char *path, size_t cap)
{
    assert_int_equal(clattn_measure_path(clattn_cl_device(ctx), path, cap), CLATTN_OK);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/clattn", home);
    assert_true(mkdir(dir, 0700) == 0 || errno == EEXIST);
}

/* Reading a link to /dev/zero or a FIFO returns at once with an error (the
 * alarm turns a hang into a failure), and the ceilings fall back. */
static void test_special_files_are_not_read(void **state)
{
    (void)state;
    char path[4096];
    measurement_path(path, sizeof path);
    clattn_measurement *m = malloc(sizeof *m);
    assert_non_null(m);
    clattn_measurement_init(m);
    assert_int_equal(symlink("/dev/zero", path), 0);
    alarm(10);
    assert_int_equal(clattn_measure_load(clattn_cl_device(ctx), m), CLATTN_EFORMAT);
    assert_non_null(strstr(clattn_last_error_detail(), "not a regular file"));
    clattn_ceilings c;
    assert_int_equal(clattn_device_ceilings(ctx, &c), CLATTN_OK);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(clattn_measure_load(clattn_cl_device(ctx), m), CLATTN_EFORMAT);
    assert_int_equal(clattn_device_ceilings(ctx, &c), CLATTN_OK);
    alarm(0);
    free(m);
}

/* A symlink planted where the file goes is replaced, not written through. */
static void test_planted_symlink_is_not_followed(void **state)
{
    (void)state;
    char path[4096], victim[128];
    measurement_path(path, sizeof path);
    snprintf(victim, sizeof victim, "%s/victim", home);
    FILE *f = fopen(victim, "w");
    assert_non_null(f);
    fputs("precious\n", f);
    fclose(f);
    assert_int_equal(symlink(victim, path), 0);
    clattn_measurement m;
    clattn_measurement_init(&m);
    snprintf(m.device_name, sizeof m.device_name, "x");
    /* The identity must be this device's for the path to match. */
    clattn_device_props p;
    assert_int_equal(clattn_device_query(clattn_cl_device(ctx), &p), CLATTN_OK);
    snprintf(m.device_name, sizeof m.device_name, "%s", p.name);
    snprintf(m.driver_version, sizeof m.driver_version, "%s", p.driver_version);
    snprintf(m.platform_version, sizeof m.platform_version, "%s", p.platform_version);
    assert_int_equal(clattn_measure_save(&m), CLATTN_OK);
    char buf[32] = "";
    f = fopen(victim, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_string_equal(buf, "precious\n");
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0600);
}

/* A directory other users can write into is not used, for reading or
 * writing; nor one owned by another user (checked when running as root). */
static void test_unsafe_directory_is_refused(void **state)
{
    (void)state;
    char dir[128];
    snprintf(dir, sizeof dir, "%s/clattn", home);
    assert_int_equal(mkdir(dir, 0700), 0);
    assert_int_equal(chmod(dir, 0777), 0);
    assert_int_equal(clattn_tune_record(ctx, CLATTN_FUSED_PORTABLE, CLATTN_F32, 24, 0,
                                        &(clattn_tiles){ 16, 16, 0 }),
                     CLATTN_EINVAL);
    assert_non_null(strstr(clattn_last_error_detail(), "writable by other users"));
    assert_int_equal(chmod(dir, 0700), 0);
    assert_int_equal(clattn_tune_record(ctx, CLATTN_FUSED_PORTABLE, CLATTN_F32, 24, 0,
                                        &(clattn_tiles){ 16, 16, 0 }),
                     CLATTN_OK);
    if (geteuid() == 0) {
        assert_int_equal(chown(dir, 65534, 65534), 0);
        assert_int_equal(clattn_tune_record(ctx, CLATTN_FUSED_PORTABLE, CLATTN_F32, 24, 0,
                                            &(clattn_tiles){ 16, 16, 0 }), CLATTN_EINVAL);
        assert_non_null(strstr(clattn_last_error_detail(), "owned by uid 65534"));
        assert_int_equal(chown(dir, 0, 0), 0);
    }
}

/* The device's tune file, written by hand. */
static void write_tune_file(const char *text)
{
    assert_int_equal(clattn_tune_record(ctx, CLATTN_FUSED_PORTABLE, CLATTN_F32, 7, 0,
                                        &(clattn_tiles){ 8, 8, 0 }),
                     CLATTN_OK);
    char pattern[256], cmd[512];
    snprintf(pattern, sizeof pattern, "%s/clattn/tune-*.txt", home);
    snprintf(cmd, sizeof cmd, "f=$(ls %s) && printf '%s' > \"$f\"", pattern, text);
    assert_int_equal(system(cmd), 0);
}

/* Impossible tuned tiles are set aside: the run uses the defaults, is
 * right, and its note names the file. */
static void test_impossible_tune_entries_are_ignored(void **state)
{
    (void)state;
    write_tune_file("portable 0 24 0 0 0\\nportable 0 24 1 1000 1000\\ngarbage line\\n"
                    "portable 7 24 0 16 16\\n");
    clattn_close(&ctx); /* a new context reads the file */
    assert_int_equal(clattn_open(&ctx, NULL), CLATTN_OK);
    clattn_shape s = { 1, 2, 2, 70, 70, 24, CLATTN_F32 };
    for (int causal = 0; causal < 2; causal++) {
        clattn_options o;
        clattn_default_options(&o);
        o.causal = causal ? CLATTN_CAUSAL_TOP_LEFT : CLATTN_CAUSAL_NONE;
        o.path = CLATTN_PATH_FUSED;
        o.fused_kernel = CLATTN_FUSED_PORTABLE; /* the kernel the file names */
        clattn_check_result r;
        assert_int_equal(clattn_check(ctx, &s, &o, 5, &r), CLATTN_OK);
        assert_true(r.passed);
        assert_non_null(strstr(r.info.note, "tuned tiles"));
        assert_non_null(strstr(r.info.note, "ignored"));
        assert_non_null(strstr(r.info.note, "tune-"));
    }
}

/* A measurement no device gives (NaN, zero, negative, absurd) is refused. */
static void test_implausible_measurement_is_refused(void **state)
{
    (void)state;
    static const char *bad[] = { "nan 1 1 3", "0 0 0 3", "-5 -6 -4 3", "1e30 1e30 1e30 3" };
    char path[4096];
    measurement_path(path, sizeof path);
    clattn_device_props p;
    assert_int_equal(clattn_device_query(clattn_cl_device(ctx), &p), CLATTN_OK);
    clattn_measurement *m = malloc(sizeof *m);
    assert_non_null(m);
    clattn_measurement_init(m);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fprintf(f, "format=1\ndevice_name=%s\ndriver_version=%s\nplatform_version=%s\n"
                   "bandwidth=%s\n", p.name, p.driver_version, p.platform_version, bad[i]);
        fclose(f);
        assert_int_equal(clattn_measure_load(clattn_cl_device(ctx), m), CLATTN_EFORMAT);
        assert_non_null(strstr(clattn_last_error_detail(), "plausible"));
        clattn_ceilings c;
        assert_int_equal(clattn_device_ceilings(ctx, &c), CLATTN_OK);
        assert_true(c.bandwidth.source != CLATTN_SRC_MEASURED);
    }
    free(m);
}

/* One of the recording processes: 12 entries at d = 100 c + 1.. (a fresh
 * process, not a fork: NVIDIA's driver does not work in a child forked
 * after the parent opened it). */
static int record_child(int c)
{
    clattn_ctx *own = NULL;
    int bad = clattn_open(&own, NULL) != CLATTN_OK;
    for (size_t d = 1; d <= 12 && !bad; d++)
        bad = clattn_tune_record(own, CLATTN_FUSED_PORTABLE, CLATTN_F32, 100 * (size_t)c + d, 0,
                                 &(clattn_tiles){ 8, 8, 0 }) != CLATTN_OK;
    clattn_close(&own);
    return bad;
}

/* Two processes recording tiles at once: every entry of both survives. */
static void test_concurrent_records_are_merged(void **state)
{
    (void)state;
    pid_t child[2];
    for (int c = 0; c < 2; c++) {
        child[c] = fork();
        assert_true(child[c] >= 0);
        if (child[c] == 0) {
            execl("/proc/self/exe", "test_cache", "--record-child", c ? "1" : "0", (char *)NULL);
            _exit(127);
        }
    }
    for (int c = 0; c < 2; c++) {
        int status;
        assert_int_equal(waitpid(child[c], &status, 0), child[c]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    clattn_close(&ctx);
    assert_int_equal(clattn_open(&ctx, NULL), CLATTN_OK);
    for (int c = 0; c < 2; c++) {
        for (size_t d = 1; d <= 12; d++) {
            clattn_shape s = { 1, 1, 1, 40, 40, 100 * (size_t)c + d, CLATTN_F32 };
            size_t bm, bn;
            clattn_options o;
            clattn_default_options(&o);
            o.fused_kernel = CLATTN_FUSED_PORTABLE; /* the kernel the records name */
            assert_int_equal(clattn_fused_tiles(ctx, &s, &o, &bm, &bn, NULL), CLATTN_OK);
            if (bm != 8 || bn != 8)
                fail_msg("d=%zu lost its tuned tiles (%zux%zu)", s.head_dim, bm, bn);
        }
    }
}

/* A writer killed between its temporary and the rename leaves the
 * temporary behind: the next write of the same file removes those older
 * than a minute, and leaves a fresh one (a live writer's) and other files. */
static void test_stale_temporaries_are_swept(void **state)
{
    (void)state;
    assert_int_equal(clattn_tune_record(ctx, CLATTN_FUSED_PORTABLE, CLATTN_F32, 24, 0,
                                        &(clattn_tiles){ 8, 8, 0 }), CLATTN_OK);
    char cmd[9000], line[4200];
    snprintf(cmd, sizeof cmd, "ls %s/clattn/tune-*.txt", home);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(line, sizeof line, p));
    pclose(p);
    line[strcspn(line, "\n")] = '\0';
    char stale[4300], fresh[4300], other[4300];
    snprintf(stale, sizeof stale, "%s.Ab3dEf", line);
    snprintf(fresh, sizeof fresh, "%s.Zz9yXw", line);
    snprintf(other, sizeof other, "%s/clattn/notes.Ab3dEf", home);
    const char *made[] = { stale, fresh, other };
    for (int i = 0; i < 3; i++) {
        FILE *f = fopen(made[i], "w");
        assert_non_null(f);
        fputs("half a tune file", f);
        fclose(f);
    }
    snprintf(cmd, sizeof cmd, "touch -d '-2 minutes' '%s' '%s'", stale, other);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(clattn_tune_record(ctx, CLATTN_FUSED_PORTABLE, CLATTN_F32, 25, 0,
                                        &(clattn_tiles){ 8, 8, 0 }), CLATTN_OK);
    struct stat st;
    assert_int_equal(stat(stale, &st), -1);
    assert_int_equal(stat(fresh, &st), 0);
    assert_int_equal(stat(other, &st), 0);
}

/* Tiles recorded with the kernel's parameters: the file holds them, a new
 * context plans with them, the caller's own parameters win, and a
 * parameter the kernel does not take is refused before anything is
 * written. More than 64 keys are all kept (the table has no cap). */
static void test_tuned_parameters(void **state)
{
    (void)state;
    const clattn_tiles t = { 32, 32, 0 };
    assert_int_equal(clattn_tune_record_params(ctx, CLATTN_FUSED_PORTABLE, CLATTN_F32, 40, 0, &t,
                                               "combine_parts=2"), CLATTN_OK);
    assert_int_equal(clattn_tune_record_params(ctx, CLATTN_FUSED_PORTABLE, CLATTN_F32, 41, 0, &t,
                                               "stages=3"), CLATTN_EINVAL);
    assert_int_equal(clattn_tune_record_params(ctx, CLATTN_FUSED_PORTABLE, CLATTN_F32, 41, 0, &t,
                                               "combine_parts=9"), CLATTN_EINVAL);
    for (size_t d = 101; d <= 180; d++) /* 80 keys */
        assert_int_equal(clattn_tune_record(ctx, CLATTN_FUSED_PORTABLE, CLATTN_F32, d, 1,
                                            &(clattn_tiles){ 16, 16, 0 }), CLATTN_OK);
    char path[4096], line[256];
    snprintf(path, sizeof path, "%s/clattn", home);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "cat %s/tune-* | grep -c '^portable'", path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(line, sizeof line, p));
    pclose(p);
    assert_int_equal(atoi(line), 81);
    snprintf(cmd, sizeof cmd, "grep -q '^portable 0 40 0 32 32 0 combine_parts=2$' %s/tune-*",
             path);
    assert_int_equal(system(cmd), 0);
    clattn_close(&ctx);
    assert_int_equal(clattn_open(&ctx, NULL), CLATTN_OK);
    clattn_shape s = { 1, 1, 1, 40, 400, 40, CLATTN_F32 };
    clattn_options o;
    clattn_default_options(&o);
    o.fused_kernel = CLATTN_FUSED_PORTABLE;
    o.split_kv = 4;
    clattn_check_result r;
    assert_int_equal(clattn_check(ctx, &s, &o, 6, &r), CLATTN_OK);
    assert_true(r.passed);
    assert_string_equal(r.info.kernel, "fused/portable 32x32");
    o.kernel_params = "combine_parts=4";
    assert_int_equal(clattn_check(ctx, &s, &o, 7, &r), CLATTN_OK);
    assert_true(r.passed);
    o.kernel_params = "combine_parts=3";
    assert_int_equal(clattn_check(ctx, &s, &o, 8, &r), CLATTN_EINVAL);
    for (size_t d = 101; d <= 180; d += 79) {
        clattn_shape w = { 1, 1, 1, 40, 40, d, CLATTN_F32 };
        size_t bm, bn;
        clattn_options c;
        clattn_default_options(&c);
        c.causal = CLATTN_CAUSAL_TOP_LEFT;
        c.fused_kernel = CLATTN_FUSED_PORTABLE;
        assert_int_equal(clattn_fused_tiles(ctx, &w, &c, &bm, &bn, NULL), CLATTN_OK);
        assert_true(bm == 16 && bn == 16);
    }
}

static int have_device(void)
{
    size_t n = 0;
    return clattn_list_devices(NULL, 0, &n) == CLATTN_OK && n > 0;
}

/* Efficiencies: recorded, read back by another context from the file
 * (beside tiles, which stay), refused for bad keys and fractions, and a
 * line an older or newer version wrote skipped. */
static void test_efficiencies(void **state)
{
    (void)state;
    double f = -1;
    assert_int_equal(clattn_kernel_efficiency(ctx, "fused/portable", CLATTN_F16, 64,
                                              CLATTN_BOUND_COMPUTE, &f), 0);
    assert_true(f == 0);
    assert_int_equal(clattn_tune_record(ctx, CLATTN_FUSED_PORTABLE, CLATTN_F32, 64, 0,
                                        &(clattn_tiles){ 32, 32, 0 }), CLATTN_OK);
    assert_int_equal(clattn_tune_record_efficiency(ctx, "fused/portable", CLATTN_F16, 64,
                                                   CLATTN_BOUND_COMPUTE, 0.625), CLATTN_OK);
    assert_int_equal(clattn_tune_record_efficiency(ctx, "naive/builtin-gemm", CLATTN_BF16, 64,
                                                   CLATTN_BOUND_MEMORY, 1.5), CLATTN_OK);
    const double bad_fraction[] = { 0, -1, 101, NAN };
    for (size_t i = 0; i < sizeof bad_fraction / sizeof bad_fraction[0]; i++)
        assert_int_equal(clattn_tune_record_efficiency(ctx, "fused/portable", CLATTN_F16, 64,
                                                       CLATTN_BOUND_COMPUTE, bad_fraction[i]),
                         CLATTN_EINVAL);
    const char *bad_name[] = { "portable", "fused/", "/cpu", "fused/a/b", "Fused/cpu",
                               "fused/cpu 64x64", NULL };
    for (size_t i = 0; bad_name[i]; i++)
        assert_int_equal(clattn_tune_record_efficiency(ctx, bad_name[i], CLATTN_F16, 64,
                                                       CLATTN_BOUND_COMPUTE, 0.5), CLATTN_EINVAL);
    assert_int_equal(clattn_tune_record_efficiency(ctx, "fused/cpu", CLATTN_F16, 64,
                                                   CLATTN_BOUND_UNKNOWN, 0.5), CLATTN_EINVAL);
    assert_int_equal(clattn_kernel_efficiency(ctx, NULL, CLATTN_F16, 64, CLATTN_BOUND_MEMORY, &f),
                     CLATTN_EINVAL);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "echo 'efficiency fused/portable 1 64 compute 0.9 extra' >> "
                              "$(ls %s/clattn/tune-*.txt)", home);
    assert_int_equal(system(cmd), 0);
    clattn_close(&ctx);
    assert_int_equal(clattn_open(&ctx, NULL), CLATTN_OK);
    assert_int_equal(clattn_kernel_efficiency(ctx, "fused/portable", CLATTN_F16, 64,
                                              CLATTN_BOUND_COMPUTE, &f), 1);
    assert_true(f == 0.625);
    assert_int_equal(clattn_kernel_efficiency(ctx, "naive/builtin-gemm", CLATTN_BF16, 64,
                                              CLATTN_BOUND_MEMORY, &f), 1);
    assert_true(f == 1.5);
    assert_int_equal(clattn_kernel_efficiency(ctx, "fused/portable", CLATTN_F16, 64,
                                              CLATTN_BOUND_MEMORY, &f), 0);
    assert_int_equal(clattn_kernel_efficiency(ctx, "fused/portable", CLATTN_F32, 64,
                                              CLATTN_BOUND_COMPUTE, &f), 0);
    snprintf(cmd, sizeof cmd, "grep -q '^portable 0 64 0 32 32 0 -$' %s/clattn/tune-*", home);
    assert_int_equal(system(cmd), 0);
}

/* One attention on a fresh context, checked against the reference; its
 * build seconds in *build. */
static void check_on_fresh_context(double *build)
{
    clattn_close(&ctx);
    assert_int_equal(clattn_open(&ctx, NULL), CLATTN_OK);
    const clattn_shape s = { 1, 2, 2, 9, 21, 32, CLATTN_F32 };
    clattn_options o;
    clattn_default_options(&o);
    o.path = CLATTN_PATH_FUSED;
    o.fused_kernel = CLATTN_FUSED_PORTABLE;
    clattn_check_result r;
    assert_int_equal(clattn_check(ctx, &s, &o, 5, &r), CLATTN_OK);
    assert_true(r.passed);
    *build = r.info.build_seconds;
    clattn_close(&ctx); /* the programs' binaries are kept at close */
    assert_int_equal(clattn_open(&ctx, NULL), CLATTN_OK);
}

/* The programs folder's files: how many, how many hold a binary (more than
 * their header line), and the path of the first that does. */
static size_t kept_files(size_t *binaries, char *first, size_t cap)
{
    char dir[256];
    snprintf(dir, sizeof dir, "%s/clattn/programs", home);
    DIR *d = opendir(dir);
    size_t n = 0;
    *binaries = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        char path[512];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (e->d_name[0] == '.' || stat(path, &st) != 0)
            continue;
        n++;
        if (st.st_size > 96 && (*binaries)++ == 0)
            snprintf(first, cap, "%s", path);
    }
    if (d)
        closedir(d);
    return n;
}

static void overwrite_at(const char *path, long at, const char *bytes, size_t n)
{
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, at, at < 0 ? SEEK_END : SEEK_SET), 0);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    fclose(f);
}

/* A file's bytes, malloc'd, *n of them. */
static char *contents(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = malloc(1 << 24);
    assert_non_null(buf);
    *n = fread(buf, 1, 1 << 24, f);
    fclose(f);
    return buf;
}

static void test_program_binaries_are_kept(void **state)
{
    (void)state;
    double build;
    char bin[512] = "", again[512];
    size_t binaries;
    check_on_fresh_context(&build);
    const size_t files = kept_files(&binaries, bin, sizeof bin);
    assert_true(files > 0);
    assert_int_equal(binaries, 0); /* the first build leaves its mark only */
    check_on_fresh_context(&build);
    assert_int_equal(kept_files(&binaries, bin, sizeof bin), files);
    assert_int_equal(binaries, 0); /* the second counts in the mark */
    check_on_fresh_context(&build);
    assert_int_equal(kept_files(&binaries, bin, sizeof bin), files);
    assert_int_equal(binaries, files); /* built a third time: kept */
    size_t size;
    char *kept = contents(bin, &size);
    check_on_fresh_context(&build); /* from the binaries: same files, same result */
    assert_int_equal(kept_files(&binaries, again, sizeof again), files);
    assert_int_equal(binaries, files);
    /* A damaged byte in the binary, a file cut short, a header of another
     * key: each is rebuilt from source (the result checked) and replaced by
     * the same bytes as before. */
    const char *what[] = { "damaged", "cut", "foreign" };
    for (int i = 0; i < 3; i++) {
        if (i == 0) {
            const char flipped = (char)~kept[size - 7];
            overwrite_at(bin, -7, &flipped, 1);
        } else if (i == 1) {
            assert_int_equal(truncate(bin, (off_t)size / 2), 0);
        } else {
            overwrite_at(bin, 15, kept[15] == '0' ? "1" : "0", 1); /* the key's first digit */
        }
        check_on_fresh_context(&build);
        size_t now_size;
        char *now = contents(bin, &now_size);
        if (now_size != size || memcmp(now, kept, size))
            fail_msg("%s binary: not replaced by the build's (%zu bytes, kept %zu)", what[i],
                     now_size, size);
        free(now);
    }
    free(kept);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--record-child"))
        return record_child(atoi(argv[2]));
    if (!have_device()) {
        printf("SKIP: no OpenCL device\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_special_files_are_not_read, fresh_home, remove_home),
        cmocka_unit_test_setup_teardown(test_planted_symlink_is_not_followed, fresh_home,
                                        remove_home),
        cmocka_unit_test_setup_teardown(test_unsafe_directory_is_refused, fresh_home, remove_home),
        cmocka_unit_test_setup_teardown(test_impossible_tune_entries_are_ignored, fresh_home,
                                        remove_home),
        cmocka_unit_test_setup_teardown(test_implausible_measurement_is_refused, fresh_home,
                                        remove_home),
        cmocka_unit_test_setup_teardown(test_concurrent_records_are_merged, fresh_home,
                                        remove_home),
        cmocka_unit_test_setup_teardown(test_tuned_parameters, fresh_home, remove_home),
        cmocka_unit_test_setup_teardown(test_stale_temporaries_are_swept, fresh_home,
                                        remove_home),
        cmocka_unit_test_setup_teardown(test_efficiencies, fresh_home, remove_home),
        cmocka_unit_test_setup_teardown(test_program_binaries_are_kept, fresh_home, remove_home),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
