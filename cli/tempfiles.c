/* SPDX-License-Identifier: MIT */
/* Temporaries removed when a signal ends the process (see tempfiles.h). */
#include "tempfiles.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SLOTS 8

static char names[SLOTS][PATH_MAX];
static volatile sig_atomic_t live[SLOTS];

static const int signals[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
#define N_SIGNALS (sizeof signals / sizeof signals[0])
/* What each signal did before: the default, or a handler a library
 * installed (the LLVM inside an OpenCL compiler removes its own files on
 * them), which then runs too. */
static struct sigaction previous[N_SIGNALS];

/* SA_NODEFER leaves the signal unblocked, so raising it again once the
 * previous action is back runs that action now: a library's handler, or the
 * default, which ends the process by the signal. */
static void remove_temporaries(int sig)
{
    for (int i = 0; i < SLOTS; i++)
        if (live[i])
            unlink(names[i]);
    for (size_t i = 0; i < N_SIGNALS; i++)
        if (signals[i] == sig)
            sigaction(sig, &previous[i], NULL);
    raise(sig);
}

/* On every claim: a library may have put its handler in since. A signal
 * the process ignores stays ignored. */
static void install_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = remove_temporaries;
    sa.sa_flags = SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < N_SIGNALS; i++) {
        struct sigaction now;
        if (sigaction(signals[i], NULL, &now) != 0 || now.sa_handler == SIG_IGN ||
            now.sa_handler == remove_temporaries)
            continue;
        previous[i] = now;
        sigaction(signals[i], &sa, NULL);
    }
}

char *tempfiles_claim(const char *path)
{
    for (int i = 0; i < SLOTS; i++) {
        if (live[i])
            continue;
        int n = snprintf(names[i], PATH_MAX, "%s.tmp.XXXXXX", path);
        if (n < 0 || n >= PATH_MAX)
            return NULL;
        install_handlers();
        live[i] = 1;
        return names[i];
    }
    return NULL;
}

void tempfiles_release(char *slot)
{
    for (int i = 0; slot && i < SLOTS; i++)
        if (slot == names[i])
            live[i] = 0;
}
