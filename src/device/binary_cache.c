/* SPDX-License-Identifier: MIT */
/* Built programs kept on disk (see binary_cache.h). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "clattn/version.h"
#include "core/error.h"
#include "core/fnv1a.h"
#include "device/binary_cache.h"
#include "device/cache_file.h"

#define HEADER_MAX 96

void binary_key_make(const struct device_identity *id, const char *const *parts, size_t n,
                     struct binary_key *key)
{
    char version[64];
    snprintf(version, sizeof version, "clattn %d.%d.%d programs 1", CLATTN_VERSION_MAJOR,
             CLATTN_VERSION_MINOR, CLATTN_VERSION_PATCH);
    const char *head[] = { version, id->device_name, id->driver_version, id->platform_version };
    /* Two independent hashes (different offset bases): 128 bits between
     * the tens of thousands of variants a folder can see. */
    uint64_t a = FNV1A_OFFSET, b = 0x84222325cbf29ce4ull;
    for (size_t i = 0; i < 4 + n; i++) {
        const char *s = i < 4 ? head[i] : parts[i - 4] ? parts[i - 4] : "";
        const size_t len = strlen(s) + 1; /* the NUL ends each part */
        a = fnv1a(a, s, len), b = fnv1a(b, s, len);
    }
    key->h[0] = a;
    key->h[1] = b;
}

/* "<cache>/programs/<file, '/' as '-'>-<key>.bin". */
static int binary_path(const char *file, const struct binary_key *key, char *path, size_t cap)
{
    char dir[4096], stem[64];
    if (cache_dir(dir, sizeof dir))
        return -1;
    snprintf(stem, sizeof stem, "%s", file);
    for (char *c = stem; *c; c++)
        if (*c == '/' || *c == '.')
            *c = '-';
    const int len = snprintf(path, cap, "%s/programs/%s-%016llx%016llx.bin", dir, stem,
                             (unsigned long long)key->h[0], (unsigned long long)key->h[1]);
    return len < 0 || (size_t)len >= cap ? -1 : 0;
}

/* "clattn program <key> <length> <checksum of the binary>\n". */
static int header_of(const struct binary_key *key, const unsigned char *bin, size_t len,
                     char *out)
{
    return snprintf(out, HEADER_MAX, "clattn program %016llx%016llx %zu %016llx\n",
                    (unsigned long long)key->h[0], (unsigned long long)key->h[1], len,
                    (unsigned long long)fnv1a(FNV1A_OFFSET, bin, len));
}

/* "clattn mark <key> <builds>\n". */
static int mark_of(const struct binary_key *key, unsigned builds, char *out)
{
    return snprintf(out, HEADER_MAX, "clattn mark %016llx%016llx %u\n",
                    (unsigned long long)key->h[0], (unsigned long long)key->h[1], builds);
}

int binary_cache_load(cl_context context, cl_device_id device, const char *file,
                      const struct binary_key *key, const char *options, cl_program *out)
{
    char path[4400], *data = NULL;
    size_t len = 0;
    if (binary_path(file, key, path, sizeof path) ||
        cache_read_bytes(path, BINARY_CACHE_MAX_BYTES + HEADER_MAX, &data, &len) < 0) {
        clattn_clear_error();
        return -1;
    }
    /* The header names this key, the length that follows and its checksum:
     * a file cut short, damaged or written for another key is not handed to
     * the driver (and counts as built often enough to be replaced). A mark
     * names the key and how many builds it has seen. */
    const char *nl = memchr(data, '\n', len < HEADER_MAX ? len : HEADER_MAX);
    char expect[HEADER_MAX];
    const size_t head = nl ? (size_t)(nl - data) + 1 : 0;
    int rc = BINARY_CACHE_KEEP_AT - 1;
    const int mark = mark_of(key, 0, expect) - 2; /* "clattn mark <key> " */
    unsigned builds = 0;
    if (head && len >= (size_t)mark && !memcmp(data, expect, (size_t)mark) &&
        sscanf(data + mark, "%u", &builds) == 1 && builds > 0 && builds < BINARY_CACHE_KEEP_AT)
        rc = (int)builds;
    else if (head && len > head &&
        header_of(key, (const unsigned char *)data + head, len - head, expect) == (int)head &&
        !memcmp(data, expect, head)) {
        const unsigned char *bin = (const unsigned char *)data + head;
        const size_t size = len - head;
        cl_int status = CL_SUCCESS, err;
        cl_program prog = clCreateProgramWithBinary(context, 1, &device, &size, &bin, &status,
                                                    &err);
        if (prog && err == CL_SUCCESS && status == CL_SUCCESS &&
            clBuildProgram(prog, 1, &device, options, NULL, NULL) == CL_SUCCESS) {
            *out = prog;
            rc = 0;
            utimes(path, NULL); /* recently used: the last to be removed */
        } else if (prog) {
            clReleaseProgram(prog);
        }
    }
    free(data);
    return rc;
}

/* Whether `name` is a kept binary (and not a temporary or anything else). */
static int is_binary(const char *name)
{
    const size_t n = strlen(name);
    return n > 4 && !strcmp(name + n - 4, ".bin");
}

static int by_age(const void *a, const void *b)
{
    const time_t x = *(const time_t *)a, y = *(const time_t *)b;
    return x < y ? -1 : x > y;
}

/* Past BINARY_CACHE_MAX_FILES, the least recently used go until three
 * quarters remain. */
static void trim(const char *path)
{
    char dir[4400];
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    DIR *d = opendir(dir);
    if (!d)
        return;
    size_t n = 0, cap = BINARY_CACHE_MAX_FILES + 64;
    time_t *ages = malloc(cap * sizeof *ages);
    for (struct dirent *e; ages && (e = readdir(d));) {
        char full[4800];
        struct stat st;
        if (is_binary(e->d_name) &&
            snprintf(full, sizeof full, "%s/%s", dir, e->d_name) < (int)sizeof full &&
            stat(full, &st) == 0 && n < cap)
            ages[n++] = st.st_mtime;
    }
    if (ages && n > BINARY_CACHE_MAX_FILES) {
        qsort(ages, n, sizeof *ages, by_age);
        const time_t cut = ages[n - BINARY_CACHE_MAX_FILES * 3 / 4];
        rewinddir(d);
        for (struct dirent *e; (e = readdir(d));) {
            char full[4800];
            struct stat st;
            if (is_binary(e->d_name) &&
                snprintf(full, sizeof full, "%s/%s", dir, e->d_name) < (int)sizeof full &&
                stat(full, &st) == 0 && st.st_mtime < cut)
                unlink(full);
        }
    }
    free(ages);
    closedir(d);
}

void binary_cache_store(cl_program prog, const char *file, const struct binary_key *key,
                        int builds)
{
    char path[4400], header[HEADER_MAX];
    size_t size = 0;
    if (binary_path(file, key, path, sizeof path))
        return;
    if (builds + 1 < BINARY_CACHE_KEEP_AT) {
        /* The builds before the one that keeps the binary leave a mark. */
        if (cache_write_bytes(path, header, (size_t)mark_of(key, (unsigned)builds + 1, header)) == 0)
            trim(path);
        clattn_clear_error();
        return;
    }
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) != CL_SUCCESS ||
        !size || size > BINARY_CACHE_MAX_BYTES)
        return;
    char *data = malloc(HEADER_MAX + size);
    unsigned char *bin = (unsigned char *)data + HEADER_MAX;
    if (data && clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) == CL_SUCCESS) {
        const int head = header_of(key, bin, size, header);
        memmove(data + head, bin, size);
        memcpy(data, header, (size_t)head);
        if (cache_write_bytes(path, data, (size_t)head + size) == 0)
            trim(path);
    }
    free(data);
    clattn_clear_error();
}
