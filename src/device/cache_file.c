/* SPDX-License-Identifier: MIT */
/* Per-device files under the user's cache directory (see cache_file.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "device/cache_file.h"

int cache_dir(char *buf, size_t cap)
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

/* The directory part of `path` (everything before its last '/'). */
static int parent_of(const char *path, char *dir, size_t cap)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 0;
    if (n == 0 || n >= cap)
        return clattn_fail(CLATTN_EINVAL, "%s: no directory part", path);
    memcpy(dir, path, n);
    dir[n] = '\0';
    return 0;
}

/* A directory another user could write into could hold planted files. */
static int check_dir_safe(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        return clattn_fail(CLATTN_EIO, "cache directory %s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return clattn_fail(CLATTN_EINVAL, "cache directory %s is not a directory", dir);
    if (st.st_uid != geteuid())
        return clattn_fail(CLATTN_EINVAL, "cache directory %s is owned by uid %ld, not by this "
                           "user: not used", dir, (long)st.st_uid);
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return clattn_fail(CLATTN_EINVAL, "cache directory %s is writable by other users "
                           "(mode %03o): not used", dir, (unsigned)(st.st_mode & 0777));
    return 0;
}

/* Creates `dir` and its missing parents (0700 each). */
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

int cache_path(const char *prefix, const struct device_identity *id, char *path, size_t cap)
{
    char dir[4096], stem[49];
    int rc = cache_dir(dir, sizeof dir);
    if (rc)
        return rc;
    /* Letters, digits, '.' and '-' of the name, '_' for each other run. */
    size_t n = 0;
    for (const char *s = id->device_name; *s && n < sizeof stem - 1; s++) {
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
                       (unsigned long long)device_identity_hash(id));
    if (len < 0 || (size_t)len >= cap)
        return clattn_fail(CLATTN_EOVERFLOW, "cache file path longer than %zu", cap);
    return 0;
}

/* Reads an open regular file of known size whole. */
static int read_fd(int fd, const char *path, size_t size, char **text, size_t *len)
{
    char *buf = malloc(size + 1);
    if (!buf)
        return clattn_fail(CLATTN_ENOMEM, "%s: %zu bytes", path, size + 1);
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* a file that shrank while we read: keep what came */
        got += (size_t)n;
    }
    buf[got] = '\0';
    *text = buf;
    *len = got;
    return 0;
}

int cache_read_bytes(const char *path, size_t max_bytes, char **data, size_t *len)
{
    char dir[4096];
    int rc = parent_of(path, dir, sizeof dir);
    if (rc || (rc = check_dir_safe(dir)))
        return rc;
    /* O_NONBLOCK: opening a FIFO for reading must not wait for a writer. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return clattn_fail(CLATTN_EIO, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0)
        rc = clattn_fail(CLATTN_EIO, "%s: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = clattn_fail(CLATTN_EFORMAT, "%s is not a regular file: not read", path);
    else if ((uint64_t)st.st_size > max_bytes)
        rc = clattn_fail(CLATTN_EFORMAT, "%s holds %lld bytes, more than the %zu of its kind: "
                         "not read", path, (long long)st.st_size, max_bytes);
    else
        rc = read_fd(fd, path, (size_t)st.st_size, data, len);
    close(fd);
    return rc;
}

int cache_read(const char *path, char **text)
{
    size_t len;
    return cache_read_bytes(path, CACHE_FILE_MAX_BYTES, text, &len);
}

/* The directory of `path`, created if needed and checked. */
static int prepare_dir(const char *path)
{
    char dir[4096];
    int rc = parent_of(path, dir, sizeof dir);
    if (rc || (rc = make_dirs(dir)) || (rc = check_dir_safe(dir)))
        return rc;
    return 0;
}

static int write_whole(int fd, const void *data, size_t len)
{
    for (size_t done = 0; done < len;) {
        const ssize_t n = write(fd, (const char *)data + done, len - done);
        if (n > 0)
            done += (size_t)n;
        else if (n == 0 || errno != EINTR)
            return -1; /* interrupted before writing anything: again */
    }
    return fsync(fd);
}

/* Whether `name` is one of path's temporaries: its file name, a dot and
 * mkstemp's six characters. */
static int temporary_of(const char *base, const char *name)
{
    const size_t n = strlen(base);
    return !strncmp(name, base, n) && name[n] == '.' && strlen(name + n + 1) == 6 &&
           strcmp(name + n + 1, "lock");
}

/* Removes path's temporaries that a process killed while writing left
 * behind: this user's regular files older than a minute (a writer holds its
 * temporary for milliseconds, so a live one is never taken). Best effort. */
static void sweep_stale_temporaries(const char *path)
{
    char dir[4096];
    if (parent_of(path, dir, sizeof dir))
        return;
    const char *base = strrchr(path, '/') + 1;
    DIR *d = opendir(dir);
    if (!d)
        return;
    const time_t now = time(NULL);
    for (struct dirent *e; (e = readdir(d));) {
        char full[4400];
        struct stat st;
        if (!temporary_of(base, e->d_name) ||
            snprintf(full, sizeof full, "%s/%s", dir, e->d_name) >= (int)sizeof full ||
            lstat(full, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
            now - st.st_mtime < 60)
            continue;
        unlink(full);
    }
    closedir(d);
}

int cache_write_bytes(const char *path, const void *data, size_t len)
{
    char tmp[4200];
    int rc = prepare_dir(path);
    if (rc)
        return rc;
    sweep_stale_temporaries(path);
    if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp)
        return clattn_fail(CLATTN_EOVERFLOW, "cache file path too long");
    /* mkstemp opens with O_EXCL, mode 0600: nothing planted is followed. */
    int fd = mkstemp(tmp);
    if (fd < 0)
        return clattn_fail(CLATTN_EIO, "create a temporary for %s: %s", path, strerror(errno));
    int failed = write_whole(fd, data, len) != 0;
    failed |= close(fd) != 0;
    if (failed || rename(tmp, path) != 0) {
        rc = clattn_fail(CLATTN_EIO, "write %s: %s", path, strerror(errno));
        unlink(tmp);
        return rc;
    }
    return 0;
}

int cache_write(const char *path, const char *text)
{
    return cache_write_bytes(path, text, strlen(text));
}

int cache_update(const char *path, cache_merge_fn merge, void *user)
{
    char lock_path[4200];
    int rc = prepare_dir(path);
    if (rc)
        return rc;
    if (snprintf(lock_path, sizeof lock_path, "%s.lock", path) >= (int)sizeof lock_path)
        return clattn_fail(CLATTN_EOVERFLOW, "cache file path too long");
    int lock = open(lock_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (lock < 0)
        return clattn_fail(CLATTN_EIO, "%s: %s", lock_path, strerror(errno));
    while ((rc = flock(lock, LOCK_EX)) != 0 && errno == EINTR)
        ;
    if (rc != 0) {
        rc = clattn_fail(CLATTN_EIO, "lock %s: %s", lock_path, strerror(errno));
        close(lock);
        return rc;
    }
    char *current = NULL, *next = NULL;
    if (cache_read(path, &current) < 0) {
        current = NULL; /* none yet, or unreadable: start afresh */
        clattn_clear_error();
    }
    rc = merge(current, user, &next);
    if (rc >= 0)
        rc = cache_write(path, next);
    free(current);
    free(next);
    close(lock); /* releases the lock */
    return rc;
}
