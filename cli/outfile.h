/* SPDX-License-Identifier: MIT */
/*
 * Output files written whole or not at all: clattn run --out, clattn bench
 * --json and --csv.
 *
 * What the output path names decides how it is written:
 *
 *   nothing, or a regular file
 *       The bytes go to a temporary file in the same directory, which
 *       outfile_commit fsyncs and renames over the path. Until then, and
 *       after any failure, an existing file is left as it was and no
 *       temporary remains, nor after a signal that ends the process
 *       (tempfiles.h). A file replaced keeps its permission bits, and its
 *       owner and group where the process may set them; a new file gets
 *       the mode creat() would give (0666 minus the umask).
 *   a character device or a FIFO, also through symbolic links
 *       (/dev/null; /dev/stdout on a pipe or a terminal)
 *       Written in place: opened without O_CREAT or O_TRUNC, so the device
 *       node stays what it is. Such a stream cannot be taken back: a reader
 *       may see part of the output before a failure. Opening a FIFO waits
 *       for a reader, as a shell redirection does.
 *   a symbolic link to a regular file, or to nothing
 *       Refused, naming what the link points at. Renaming over the link
 *       would replace the link rather than the file the user meant, and
 *       writing through it would let a link planted in a shared directory
 *       aim the write at any file the user can write.
 *   a directory, a socket, a block device
 *       Refused.
 *   "-"
 *       The process's stdout, whatever it is (a terminal, a pipe, a file
 *       the shell opened): written in place, flushed by outfile_commit and
 *       left open. Every command's --out, --json and --csv take it.
 *
 * Several outputs of one command are committed together
 * (outfile_commit_all): none is replaced unless every one was written.
 *
 * Only the last component of the path is examined this way; directories on
 * the way are the caller's choice. Functions return 0, or -1 with a one-line
 * "<path>: <problem>" in err[0..errcap) when err is non-NULL. Not
 * thread-safe: the temporary's mode is found by setting the umask.
 */
#ifndef CLATTN_TOOLS_OUTFILE_H
#define CLATTN_TOOLS_OUTFILE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

typedef struct outfile {
    FILE *stream;     /* write the output here */
    const char *path; /* the target as given; must outlive the outfile */
    char *tmp;        /* the temporary's name; NULL when writing in place */
    int borrowed;     /* stream is stdout ("-"): flushed, never closed */
} outfile;

/* Whether `path` could be opened as above, without opening or creating
 * anything, so that a long run finds out before the work rather than after.
 * outfile_open still has the last word. */
int outfile_check(const char *path, char *err, size_t errcap);

/* Opens the output for `path`. On failure *o holds nothing to release. */
int outfile_open(outfile *o, const char *path, char *err, size_t errcap);

/* Publishes what was written: flushes, and for a temporary fsyncs it and
 * renames it over the path. Closes the stream either way; on failure the
 * temporary is removed and an existing file kept. */
int outfile_commit(outfile *o, char *err, size_t errcap);

/* outfile_commit for o[0..n) together: every stream flushed (temporaries
 * fsynced) and every target checked first, and only then the temporaries
 * renamed, so that a failure of any (a full disk, a write error on a
 * device) replaces none and removes every temporary. Only a rename that
 * fails after others succeeded (which the checks before make unlikely:
 * each temporary sits in its target's directory) leaves the earlier ones
 * in place. */
int outfile_commit_all(outfile *const *o, size_t n, char *err, size_t errcap);

/* Closes without publishing; the temporary is removed. Harmless on an
 * outfile already committed or aborted. */
void outfile_abort(outfile *o);

/* True when `path` is written in place: "-", a character device or a FIFO
 * (what outfile_open would do with it now). */
int outfile_in_place(const char *path);

/* True when `a` and `b` name one file: both "-"; the same file, hard
 * links and other spellings of the path included; or, where neither
 * exists yet, the same name in the same directory. Two names of one
 * character device (/dev/null twice) are not one file: it is written in
 * place, each output in turn. */
int outfile_same_file(const char *a, const char *b);

/* "<path>: <message>" into err[0..errcap) (err may be NULL): the message
 * format of this file, for callers that report their own write errors. */
void outfile_vfail(char *err, size_t errcap, const char *path, const char *fmt, va_list ap);

/* True when `path` is "-" or the file stdout goes to (--out /dev/stdout on
 * a pipe, or the FIFO stdout is redirected to), so a command can move its
 * report to stderr rather than mix it into the output. */
int outfile_is_stdout(const char *path);

#endif
