/* Per-device files under the user's cache directory, written atomically. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_file.h"
#include "error.h"

int clattn_cache_dir(char *buf, size_t cap)
{
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int len;
    if (xdg && xdg[0] == '/')
        len = snprintf(buf, cap, "%s/clattn", xdg);
    else if (home && home[0])
        len = snprintf(buf, cap, "%s/.cache/clattn", home);
    else
        return clattn_fail(CLATTN_EIO, "no cache directory: neither XDG_CACHE_HOME nor HOME "
                                       "is set");
    if (len < 0 || (size_t)len >= cap)
        return clattn_fail(CLATTN_EOVERFLOW, "cache directory path longer than %zu", cap);
    return 0;
}

/* Creates `dir` and its missing parents. */
static int make_dirs(const char *dir)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
        return clattn_fail(CLATTN_EOVERFLOW, "directory path too long");
    for (char *p = path + 1;; p++) {
        char c = *p;
        if (c != '/' && c != '\0')
            continue;
        *p = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST)
            return clattn_fail(CLATTN_EIO, "mkdir %s: %s", path, strerror(errno));
        *p = c;
        if (c == '\0')
            return 0;
    }
}

static void device_string(cl_device_id dev, cl_device_info what, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (clGetDeviceInfo(dev, what, cap, buf, NULL) != CL_SUCCESS)
        buf[0] = '\0';
    buf[cap - 1] = '\0';
}

int clattn_cache_path_for(const char *prefix, const char *name, const char *driver,
                          const char *platform_version, char *path, size_t cap)
{
    char dir[4096], stem[49];
    int rc = clattn_cache_dir(dir, sizeof dir);
    if (rc)
        return rc;
    /* FNV-1a over the identity strings, each ended by a newline. */
    const char *parts[] = { name, driver, platform_version };
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < 3; i++) {
        for (const char *s = parts[i]; *s; s++)
            h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
        h = (h ^ '\n') * 0x100000001b3ull;
    }
    /* Letters, digits, '.' and '-' of the name, '_' for each other run. */
    size_t n = 0;
    for (const char *s = name; *s && n < sizeof stem - 1; s++) {
        unsigned char c = (unsigned char)*s;
        int keep = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                   c == '.' || c == '-';
        if (keep)
            stem[n++] = (char)c;
        else if (n > 0 && stem[n - 1] != '_')
            stem[n++] = '_';
    }
    while (n > 0 && stem[n - 1] == '_')
        n--;
    stem[n] = '\0';
    int len = snprintf(path, cap, "%s/%s%s-%016llx.txt", dir, prefix, n ? stem : "device",
                       (unsigned long long)h);
    if (len < 0 || (size_t)len >= cap)
        return clattn_fail(CLATTN_EOVERFLOW, "cache file path longer than %zu", cap);
    return 0;
}

int clattn_cache_path(cl_device_id dev, const char *prefix, char *path, size_t cap)
{
    char name[256], driver[256], platform_version[256];
    cl_platform_id platform = NULL;
    device_string(dev, CL_DEVICE_NAME, name, sizeof name);
    device_string(dev, CL_DRIVER_VERSION, driver, sizeof driver);
    platform_version[0] = '\0';
    if (clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof platform, &platform, NULL) ==
        CL_SUCCESS)
        clGetPlatformInfo(platform, CL_PLATFORM_VERSION, sizeof platform_version,
                          platform_version, NULL);
    platform_version[sizeof platform_version - 1] = '\0';
    return clattn_cache_path_for(prefix, name, driver, platform_version, path, cap);
}

int clattn_cache_write(const char *path, const char *text)
{
    char dir[4096], tmp[4200];
    int rc = clattn_cache_dir(dir, sizeof dir);
    if (rc || (rc = make_dirs(dir)))
        return rc;
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return clattn_fail(CLATTN_EIO, "open %s: %s", tmp, strerror(errno));
    int failed = fputs(text, f) < 0;
    failed |= fflush(f) != 0;
    failed |= fsync(fileno(f)) != 0;
    failed |= fclose(f) != 0;
    if (failed || rename(tmp, path) != 0) {
        rc = clattn_fail(CLATTN_EIO, "write %s: %s", path, strerror(errno));
        remove(tmp);
        return rc;
    }
    return 0;
}
