/* SPDX-License-Identifier: MIT */
/*
 * Kernel launches seen on their way to the OpenCL loader. launches.c
 * defines clEnqueueNDRangeKernel, and a program that links it exports that
 * one symbol (launches.list, -Wl,--dynamic-list), so the dynamic linker
 * binds every library's launches to it (libclattn's, CLBlast's) before
 * libOpenCL's; each is handed on to the next definition (dlsym RTLD_NEXT:
 * the loader's, or an interposer preloaded before it).
 *
 * Why: the library returns one event per call, its last command's, and
 * PoCL compiles a kernel for its work-group size at its first launch, in
 * the device's own thread between the command's SUBMIT and START. Only
 * each launch's own START and END separate a call's kernels from that
 * compilation (clattn run's device time), or give the stages of the naive
 * path (tests/perf/time_naive.c); tests/test_timing.c counts launches.
 * Not thread-safe: the programs that link it launch from one thread.
 */
#ifndef CLATTN_CLI_LAUNCHES_H
#define CLATTN_CLI_LAUNCHES_H

#include <stddef.h>

#include <CL/cl.h>

/* One recorded launch: its profiling event (the taker releases it) and
 * its kernel's name. */
typedef struct launch {
    cl_event event;
    char kernel[64];
} launch;

#define LAUNCHES_MAX 256 /* recorded between two launches_take calls */

/* Kernel launches that reached the loader since the program started. */
unsigned long launches_count(void);

/* While on, every launch gets an event of its own and is recorded (past
 * LAUNCHES_MAX, counted but not recorded). */
void launches_record(int on);

/* The launches recorded since the last take, into out[0..cap) (the rest
 * released), and how many there were; the record is emptied. */
size_t launches_take(launch *out, size_t cap);

/* The seconds the device spent running the launches recorded since the
 * last take (each one's END - START, their sum; they are taken and
 * released), which the caller has waited for (clFinish): 0 with *n = 0
 * when none was, -1 when a timestamp could not be read (a queue without
 * profiling, a launch not complete). */
double launches_device_seconds(size_t *n);

#endif
