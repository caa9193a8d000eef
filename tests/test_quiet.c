/* SPDX-License-Identifier: MIT */
/*
 * A user sees no compiler chatter: kernels built from cold (fresh PoCL and
 * clattn caches) print nothing on the process's stderr, the split-KV
 * combine among them (PoCL's clang warns that it cannot unroll one of its
 * loops, "1 warning generated."). With $CLATTN_BUILD_LOG_DIR set, the
 * warnings are in the build logs instead. Exits 77 without an OpenCL device.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clattn/clattn.h"

static int fail(const char *what)
{
    fprintf(stderr, "test_quiet: %s (%s)\n", what, clattn_last_error_detail());
    return 1;
}

/* A split call AUTO runs here: the fused kernel's build and its combine's. */
static int run_calls(clattn_ctx *ctx)
{
    clattn_shape s = { 1, 4, 2, 3, 300, 64, CLATTN_F32 };
    clattn_options o;
    clattn_default_options(&o);
    o.split_kv = 3;
    clattn_check_result r;
    return clattn_check(ctx, &s, &o, 1, &r) < 0 || !r.passed ? -1 : 0;
}

int main(void)
{
    char tmp[] = "/tmp/clattn-quiet-XXXXXX";
    if (!mkdtemp(tmp))
        return fail("mkdtemp");
    setenv("XDG_CACHE_HOME", tmp, 1);
    char pocl[64];
    snprintf(pocl, sizeof pocl, "%s/pocl", tmp);
    setenv("POCL_CACHE_DIR", pocl, 1);
    char logs[64];
    snprintf(logs, sizeof logs, "%s/logs", tmp);
    mkdir(logs, 0700);
    /* stderr into a file while the builds run. */
    char err_path[80];
    snprintf(err_path, sizeof err_path, "%s/stderr", tmp);
    fflush(stderr);
    const int saved = dup(2), fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (saved < 0 || fd < 0 || dup2(fd, 2) < 0)
        return fail("redirecting stderr");
    close(fd);
    clattn_ctx *ctx = NULL;
    int rc = clattn_open(&ctx, NULL);
    int ran = rc == CLATTN_OK ? run_calls(ctx) : 0;
    /* The same calls again with the logs asked for, in a context of their
     * own (builds are kept per context). */
    clattn_close(&ctx);
    fflush(stderr);
    struct stat st;
    const long quiet_bytes = stat(err_path, &st) == 0 ? (long)st.st_size : -1;
    setenv("CLATTN_BUILD_LOG_DIR", logs, 1);
    snprintf(pocl, sizeof pocl, "%s/pocl2", tmp);
    setenv("POCL_CACHE_DIR", pocl, 1);
    if (rc == CLATTN_OK && ran == 0 && clattn_open(&ctx, NULL) == CLATTN_OK) {
        ran = run_calls(ctx);
        clattn_close(&ctx);
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    if (rc == CLATTN_ENODEV) {
        printf("SKIP: no OpenCL device\n");
        return 77;
    }
    if (rc < 0 || ran < 0)
        return fail("a call failed");
    if (quiet_bytes < 0)
        return fail("stat");
    /* Only the first context's builds count: the second asked for logs,
     * where a compiler may also print. */
    FILE *f = fopen(err_path, "r");
    char line[512];
    int printed = 0;
    while (f && ftell(f) < quiet_bytes && fgets(line, sizeof line, f)) {
        fprintf(stderr, "printed: %s", line);
        printed++;
    }
    if (f)
        fclose(f);
    /* The logs hold every build, warnings included where the compiler has
     * any. */
    DIR *d = opendir(logs);
    int n_logs = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n_logs += strstr(e->d_name, ".log") != NULL;
    if (d)
        closedir(d);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "test_quiet: could not remove %s\n", tmp);
    printf("%d lines on stderr; %d build logs with CLATTN_BUILD_LOG_DIR\n", printed, n_logs);
    return printed == 0 && n_logs > 0 ? 0 : 1;
}
