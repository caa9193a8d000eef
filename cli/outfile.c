/* SPDX-License-Identifier: MIT */
/*
 * Output files written whole or not at all (see outfile.h).
 *
 * The path is looked at with lstat() first, so a symbolic link is seen as
 * one; only a link to a character device or a FIFO is followed, by open()
 * itself, and the opened file is checked again with fstat() in case the
 * link changed in between. A temporary is renamed over the path only if the
 * path is still a regular file or absent just before the rename; rename()
 * never follows a link in the last component, so the window left between
 * that check and the rename can at worst replace a link, not write through
 * one.
 */
/* realpath() is an XSI function, beyond the project's POSIX 2008 base. */
#define _XOPEN_SOURCE 700

#include "outfile.h"
#include "tempfiles.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* How an output path is to be written. */
typedef enum out_kind {
    OUT_REPLACE,  /* absent or a regular file: temporary + rename */
    OUT_IN_PLACE, /* a character device or FIFO: opened as it is */
} out_kind;

void outfile_vfail(char *err, size_t errcap, const char *path, const char *fmt, va_list ap)
{
    if (err && errcap > 0) {
        int n = snprintf(err, errcap, "%s: ", path);
        if (n >= 0 && (size_t)n < errcap)
            vsnprintf(err + n, errcap - (size_t)n, fmt, ap);
    }
}

/* Formats "<path>: <message>" into err; returns -1. */
static int fail(char *err, size_t errcap, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errcap, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    outfile_vfail(err, errcap, path, fmt, ap);
    va_end(ap);
    return -1;
}

/* errno, or EIO when a failed call left none (stdio need not set it). */
static const char *last_error(void)
{
    return strerror(errno ? errno : EIO);
}

static const char *kind_name(mode_t mode)
{
    return S_ISDIR(mode)    ? "a directory"
           : S_ISSOCK(mode) ? "a socket"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISLNK(mode)  ? "a symbolic link"
                            : "not a regular file, character device or FIFO";
}

static int is_stream_device(mode_t mode)
{
    return S_ISCHR(mode) || S_ISFIFO(mode);
}

/* The refusal for a link to a regular file. It names where the link leads,
 * resolved through every link on the way (/dev/stdout goes through
 * /proc/self/fd/1), so the user can give that path instead. */
static int refuse_link(const char *path, char *err, size_t errcap)
{
    char *target = realpath(path, NULL);
    fail(err, errcap, path,
         "is a symbolic link to '%s'; not written through (give that path, or remove the "
         "link)", target ? target : "a regular file");
    free(target);
    return -1;
}

/* The refusal for a link stat() cannot follow (errno `why`): creating its
 * target would write wherever the link was aimed. */
static int refuse_broken_link(const char *path, int why, char *err, size_t errcap)
{
    char target[PATH_MAX];
    ssize_t n = readlink(path, target, sizeof target - 1);
    target[n > 0 ? n : 0] = '\0';
    if (why == ENOENT)
        return fail(err, errcap, path,
                    "is a symbolic link to '%s', which does not exist; not followed (give the "
                    "path to create, or remove the link)", target);
    return fail(err, errcap, path, "is a symbolic link to '%s', which cannot be followed: %s",
                target, strerror(why));
}

/* Decides how `path` is written, or refuses it (see outfile.h). */
static int classify(const char *path, out_kind *kind, char *err, size_t errcap)
{
    if (!path || !*path)
        return fail(err, errcap, path ? path : "(null)", "empty output path");
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno != ENOENT)
            return fail(err, errcap, path, "cannot inspect: %s", strerror(errno));
        *kind = OUT_REPLACE;
        return 0;
    }
    if (S_ISREG(st.st_mode)) {
        *kind = OUT_REPLACE;
        return 0;
    }
    if (S_ISLNK(st.st_mode)) {
        if (stat(path, &st) != 0)
            return refuse_broken_link(path, errno, err, errcap);
        if (S_ISREG(st.st_mode))
            return refuse_link(path, err, errcap);
    }
    if (!is_stream_device(st.st_mode))
        return fail(err, errcap, path, "is %s; cannot write an output there",
                    kind_name(st.st_mode));
    *kind = OUT_IN_PLACE;
    return 0;
}

/* The directory part of `path` ("." when there is none) into dir. */
static int dir_of(const char *path, char *dir, size_t cap)
{
    const char *slash = strrchr(path, '/');
    int n;
    if (!slash)
        n = snprintf(dir, cap, ".");
    else if (slash == path)
        n = snprintf(dir, cap, "/");
    else
        n = snprintf(dir, cap, "%.*s", (int)(slash - path), path);
    return n >= 0 && (size_t)n < cap ? 0 : -1;
}

/* The temporary and the rename need a directory we can write into. */
static int check_dir(const char *path, char *err, size_t errcap)
{
    char dir[PATH_MAX];
    if (dir_of(path, dir, sizeof dir))
        return fail(err, errcap, path, "directory name too long");
    struct stat st;
    int bad = stat(dir, &st) ? errno
              : !S_ISDIR(st.st_mode) ? ENOTDIR
              : access(dir, W_OK | X_OK) ? errno : 0;
    if (bad)
        return fail(err, errcap, path, "cannot write into directory '%s': %s", dir,
                    strerror(bad));
    return 0;
}

/* "-": the process's stdout. */
static int is_dash(const char *path)
{
    return path && !strcmp(path, "-");
}

int outfile_check(const char *path, char *err, size_t errcap)
{
    if (err && errcap > 0)
        err[0] = '\0';
    if (is_dash(path))
        return 0;
    out_kind kind;
    if (classify(path, &kind, err, errcap))
        return -1;
    if (kind == OUT_REPLACE)
        return check_dir(path, err, errcap);
    if (access(path, W_OK) != 0)
        return fail(err, errcap, path, "cannot write: %s", strerror(errno));
    return 0;
}

/* The mode open(path, O_CREAT, 0666) would give: mkstemp creates 0600, which
 * would surprise a user whose other outputs are group-readable. umask() can
 * only be read by setting it, hence not thread-safe; the CLI sets it from
 * one thread. */
static mode_t default_file_mode(void)
{
    mode_t mask = umask(0);
    umask(mask);
    return 0666 & ~mask;
}

/* The temporary takes the file it replaces: its owner and group where this
 * process may give them (root, or a group it is in), then its permission
 * bits (after fchown, which may clear some); a new file the mode creat()
 * would give. */
static int take_mode(int fd, const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return fchmod(fd, default_file_mode());
    if (fchown(fd, st.st_uid, st.st_gid) != 0 && fchown(fd, (uid_t)-1, st.st_gid) != 0)
        errno = 0; /* not permitted: the user's own, as creat() would make it */
    return fchmod(fd, st.st_mode & 0777);
}

/* A character device or FIFO, opened as it is: no O_CREAT, so nothing is
 * made where it vanished, and no O_TRUNC, so nothing is cut if it turned
 * into a regular file since classify() looked; fstat() then refuses that. */
static int open_in_place(outfile *o, const char *path, char *err, size_t errcap)
{
    int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return fail(err, errcap, path, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !is_stream_device(st.st_mode)) {
        close(fd);
        return fail(err, errcap, path, "changed while being opened; not written");
    }
    o->stream = fdopen(fd, "wb");
    if (!o->stream) {
        int saved = errno;
        close(fd);
        return fail(err, errcap, path, "cannot open: %s", strerror(saved));
    }
    return 0;
}

/* A temporary whose name extends the target's, so it is in the same
 * directory (rename is atomic only within one file system), registered to
 * be removed if a signal ends the process (tempfiles.h). */
static int open_temp(outfile *o, const char *path, char *err, size_t errcap)
{
    o->tmp = tempfiles_claim(path);
    if (!o->tmp)
        return fail(err, errcap, path, "cannot create a temporary file: name too long");
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        fail(err, errcap, path, "cannot create a temporary file: %s", strerror(errno));
        tempfiles_release(o->tmp);
        o->tmp = NULL;
        return -1;
    }
    if (take_mode(fd, path) != 0 || !(o->stream = fdopen(fd, "wb"))) {
        fail(err, errcap, path, "cannot create a temporary file: %s", strerror(errno));
        close(fd);
        outfile_abort(o);
        return -1;
    }
    return 0;
}

int outfile_open(outfile *o, const char *path, char *err, size_t errcap)
{
    if (err && errcap > 0)
        err[0] = '\0';
    memset(o, 0, sizeof *o);
    o->path = path;
    if (is_dash(path)) {
        o->stream = stdout;
        o->borrowed = 1;
        return 0;
    }
    out_kind kind;
    if (classify(path, &kind, err, errcap))
        return -1;
    return kind == OUT_IN_PLACE ? open_in_place(o, path, err, errcap)
                                : open_temp(o, path, err, errcap);
}

/* Makes the rename itself durable; failure is not an error, as some file
 * systems cannot fsync a directory and the data is already safe. */
static void sync_parent_dir(const char *path)
{
    char dir[PATH_MAX];
    if (dir_of(path, dir, sizeof dir))
        return;
    int fd = open(dir, O_RDONLY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/* Just before the rename: the path must still be absent or a regular file;
 * something else put there meanwhile (a device, a directory, a link) is
 * left alone. */
static int still_replaceable(const char *path, char *err, size_t errcap)
{
    struct stat st;
    if (lstat(path, &st) != 0 || S_ISREG(st.st_mode))
        return 0;
    return fail(err, errcap, path, "became %s while the output was written; not replaced",
                kind_name(st.st_mode));
}

/* Flushes the stream (and fsyncs a temporary), then closes it; close() can
 * report a delayed write error (NFS), so the output is not safe to publish
 * until it succeeded. */
static int flush_and_close(outfile *o, char *err, size_t errcap)
{
    FILE *f = o->stream;
    o->stream = NULL;
    errno = 0;
    int failed = ferror(f) || fflush(f) != 0 || (o->tmp && fsync(fileno(f)) != 0);
    if (failed)
        fail(err, errcap, o->path, "write failed: %s", last_error());
    if (o->borrowed) /* stdout stays open for the rest of the command */
        return failed ? -1 : 0;
    errno = 0;
    if (fclose(f) != 0 && !failed) {
        fail(err, errcap, o->path, "write failed: %s", last_error());
        failed = 1;
    }
    return failed ? -1 : 0;
}

/* Renames the complete temporary over the path. */
static int publish(const outfile *o, char *err, size_t errcap)
{
    if (rename(o->tmp, o->path) != 0)
        return fail(err, errcap, o->path, "cannot rename the temporary into place: %s",
                    strerror(errno));
    sync_parent_dir(o->path);
    return 0;
}

int outfile_commit(outfile *o, char *err, size_t errcap)
{
    return outfile_commit_all(&o, 1, err, errcap);
}

static void abort_all(outfile *const *o, size_t n)
{
    for (size_t i = 0; i < n; i++)
        outfile_abort(o[i]);
}

/* Flushed and closed, every one, and every target still replaceable,
 * before the first rename; the renames then go in order. */
int outfile_commit_all(outfile *const *o, size_t n, char *err, size_t errcap)
{
    if (err && errcap > 0)
        err[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (!o[i]->stream) {
            fail(err, errcap, o[i]->path ? o[i]->path : "(null)", "output is not open");
            abort_all(o, n);
            return -1;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (flush_and_close(o[i], err, errcap) ||
            (o[i]->tmp && still_replaceable(o[i]->path, err, errcap))) {
            abort_all(o, n);
            return -1;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (o[i]->tmp && publish(o[i], err, errcap)) {
            abort_all(o + i, n - i);
            return -1;
        }
        tempfiles_release(o[i]->tmp);
        o[i]->tmp = NULL;
    }
    return 0;
}

void outfile_abort(outfile *o)
{
    if (o->stream && o->borrowed) {
        fflush(o->stream);
        o->stream = NULL;
    } else if (o->stream) {
        fclose(o->stream);
        o->stream = NULL;
    }
    if (o->tmp) {
        unlink(o->tmp);
        tempfiles_release(o->tmp);
        o->tmp = NULL;
    }
}

int outfile_is_stdout(const char *path)
{
    struct stat out, std;
    return is_dash(path) || (path && stat(path, &out) == 0 && fstat(STDOUT_FILENO, &std) == 0 &&
           out.st_dev == std.st_dev && out.st_ino == std.st_ino);
}

int outfile_in_place(const char *path)
{
    out_kind kind;
    return is_dash(path) || (classify(path, &kind, NULL, 0) == 0 && kind == OUT_IN_PLACE);
}

/* A path that does not exist yet: the directory it would be made in and
 * its last component. */
static int same_new_file(const char *a, const char *b)
{
    const char *base_a = strrchr(a, '/'), *base_b = strrchr(b, '/');
    base_a = base_a ? base_a + 1 : a;
    base_b = base_b ? base_b + 1 : b;
    char dir_a[PATH_MAX], dir_b[PATH_MAX];
    struct stat sa, sb;
    return !strcmp(base_a, base_b) && dir_of(a, dir_a, sizeof dir_a) == 0 &&
           dir_of(b, dir_b, sizeof dir_b) == 0 && stat(dir_a, &sa) == 0 &&
           stat(dir_b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int outfile_same_file(const char *a, const char *b)
{
    if (!a || !b)
        return 0;
    if (is_dash(a) || is_dash(b))
        return is_dash(a) && is_dash(b);
    struct stat sa, sb;
    const int have_a = stat(a, &sa) == 0, have_b = stat(b, &sb) == 0;
    if (have_a && have_b)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino && !S_ISCHR(sa.st_mode);
    return !have_a && !have_b && same_new_file(a, b);
}
