/* SPDX-License-Identifier: MIT */
/*
 * The temporaries of the outputs being written (outfile.h), removed when a
 * signal ends the process: SIGINT, SIGTERM, SIGHUP and SIGPIPE, each unless
 * the process ignores it (nohup keeps SIGHUP ignored). The handler unlinks
 * every registered path, from a fixed table, puts back what the signal did
 * before (the default, or a library's handler, which then runs too) and
 * raises it again, so the process still ends by it (a shell sees 128 + the
 * signal's number). It calls only unlink, sigaction and raise, which are
 * async-signal-safe.
 *
 * A slot is live before its file exists: outfile.c has mkstemp write the
 * name into the slot itself, so no moment passes with the file on disk and
 * its name unknown to the handler; after a rename or an unlink the slot is
 * freed (a signal in between unlinks a name that no longer exists).
 */
#ifndef CLATTN_CLI_TEMPFILES_H
#define CLATTN_CLI_TEMPFILES_H

#include <stddef.h>

/* A live slot holding "<path>.tmp.XXXXXX" for mkstemp to fill in, the
 * handlers installed on first use; NULL when the name does not fit a
 * path or every slot is taken (a command writes a few outputs). */
char *tempfiles_claim(const char *path);

/* Frees the slot tempfiles_claim returned (its file renamed or removed).
 * NULL-safe. */
void tempfiles_release(char *slot);

#endif
