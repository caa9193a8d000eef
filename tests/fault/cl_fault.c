/* SPDX-License-Identifier: MIT */
/*
 * libcl_fault.so: an LD_PRELOAD interposer over the OpenCL entry points
 * that clattn and CLBlast call, in the manner of the ICD loader's own tests
 * with their stub driver. Each wrapper counts its calls, fails the one
 * CL_FAULT names, and forwards every other call to the real function (the
 * ICD loader's, found with dlsym(RTLD_NEXT)). The objects it sees created,
 * retained and released are tracked, so that what is still alive at exit
 * can be listed: a leak check that needs no valgrind.
 *
 * Environment
 *   CL_FAULT=<function>:<n>[:<code>]
 *       fail the n-th counted call (1-based) of <function> with <code>, a
 *       negative cl_int such as -5, -36 or -9999 (default: the function's
 *       usual failure, in CL_FAULT_FUNCTIONS below). The failed call does
 *       nothing else: a create sets *errcode_ret and returns NULL; no output
 *       is written, no event returned, nothing retained or released.
 *   CL_FAULT_LOG=<path>
 *       one line per counted call, "<function> <n> <caller>", with
 *       " FAULT <code>" on the failed one; cl_fault_mark() adds "# <label>".
 *   CL_FAULT_LEAKS=<path>
 *       at exit: "LIVE ..." per object still referenced; "MISUSE ..." per
 *       retain or release of an object that was not alive (refused, not
 *       forwarded: the implementation may have freed it) and per handle
 *       created while still tracked; then "END" (a report without it means
 *       the program did not exit normally).
 *   CL_FAULT_CALLERS=<name>[,<name>...]
 *       count (and fail) only calls made from objects whose file name starts
 *       with one of the names, e.g. "libclattn.so,libclblast.so", so that a
 *       test program's own setup is neither counted nor failed. Unset: every
 *       caller. Lifetimes are tracked whoever the caller is.
 *
 * A malformed setting stops the program at start-up with exit status 125:
 * a typo must not pass for a run in which nothing failed.
 *
 * Objects from entry points not wrapped here (images, pipes, samplers,
 * clCreateBufferWithProperties) are not tracked; releasing such a buffer
 * would be reported as MISUSE. clattn uses none of them.
 */
#define _GNU_SOURCE /* RTLD_NEXT, dladdr */

/* Every entry point up to 3.0 is declared, so that the variants clattn does
 * not call yet (clCreateCommandQueueWithProperties) have wrappers too. */
#undef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#ifndef CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#endif

#include <CL/cl.h>
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cl_fault.h"

/* X(function, default error): every wrapped entry point and the error a
 * failure of it returns unless CL_FAULT gives one. Queries fail as an
 * unsupported parameter does; allocations as memory running out; builds as
 * a compiler error; enqueues and waits as a device running out of
 * resources, which is also how a lost device first shows (-5). */
#define CL_FAULT_FUNCTIONS(X)                                          \
    X(clGetPlatformIDs, CL_OUT_OF_HOST_MEMORY)                         \
    X(clGetPlatformInfo, CL_INVALID_VALUE)                             \
    X(clGetDeviceIDs, CL_OUT_OF_HOST_MEMORY)                           \
    X(clGetDeviceInfo, CL_INVALID_VALUE)                               \
    X(clCreateContext, CL_OUT_OF_HOST_MEMORY)                          \
    X(clCreateContextFromType, CL_OUT_OF_HOST_MEMORY)                  \
    X(clRetainContext, CL_OUT_OF_HOST_MEMORY)                          \
    X(clReleaseContext, CL_OUT_OF_RESOURCES)                           \
    X(clCreateCommandQueue, CL_OUT_OF_RESOURCES)                       \
    X(clCreateCommandQueueWithProperties, CL_OUT_OF_RESOURCES)         \
    X(clRetainCommandQueue, CL_OUT_OF_HOST_MEMORY)                     \
    X(clReleaseCommandQueue, CL_OUT_OF_RESOURCES)                      \
    X(clGetCommandQueueInfo, CL_INVALID_VALUE)                         \
    X(clCreateBuffer, CL_MEM_OBJECT_ALLOCATION_FAILURE)                \
    X(clCreateSubBuffer, CL_MEM_OBJECT_ALLOCATION_FAILURE)             \
    X(clRetainMemObject, CL_OUT_OF_HOST_MEMORY)                        \
    X(clReleaseMemObject, CL_OUT_OF_RESOURCES)                         \
    X(clGetMemObjectInfo, CL_INVALID_VALUE)                            \
    X(clCreateProgramWithSource, CL_OUT_OF_HOST_MEMORY)                \
    X(clCreateProgramWithBinary, CL_OUT_OF_HOST_MEMORY)                \
    X(clCreateProgramWithBuiltInKernels, CL_OUT_OF_HOST_MEMORY)        \
    X(clCreateProgramWithIL, CL_OUT_OF_HOST_MEMORY)                    \
    X(clRetainProgram, CL_OUT_OF_HOST_MEMORY)                          \
    X(clReleaseProgram, CL_OUT_OF_RESOURCES)                           \
    X(clBuildProgram, CL_BUILD_PROGRAM_FAILURE)                        \
    X(clGetProgramInfo, CL_INVALID_VALUE)                              \
    X(clGetProgramBuildInfo, CL_INVALID_VALUE)                         \
    X(clCreateKernel, CL_OUT_OF_HOST_MEMORY)                           \
    X(clCreateKernelsInProgram, CL_OUT_OF_HOST_MEMORY)                 \
    X(clRetainKernel, CL_OUT_OF_HOST_MEMORY)                           \
    X(clReleaseKernel, CL_OUT_OF_RESOURCES)                            \
    X(clSetKernelArg, CL_OUT_OF_HOST_MEMORY)                           \
    X(clGetKernelWorkGroupInfo, CL_INVALID_VALUE)                      \
    X(clCreateUserEvent, CL_OUT_OF_HOST_MEMORY)                        \
    X(clRetainEvent, CL_OUT_OF_HOST_MEMORY)                            \
    X(clReleaseEvent, CL_OUT_OF_RESOURCES)                             \
    X(clWaitForEvents, CL_OUT_OF_RESOURCES)                            \
    X(clGetEventProfilingInfo, CL_PROFILING_INFO_NOT_AVAILABLE)        \
    X(clEnqueueReadBuffer, CL_OUT_OF_RESOURCES)                        \
    X(clEnqueueWriteBuffer, CL_OUT_OF_RESOURCES)                       \
    X(clEnqueueCopyBuffer, CL_OUT_OF_RESOURCES)                        \
    X(clEnqueueFillBuffer, CL_OUT_OF_RESOURCES)                        \
    X(clEnqueueNDRangeKernel, CL_OUT_OF_RESOURCES)                     \
    X(clEnqueueMarkerWithWaitList, CL_OUT_OF_RESOURCES)                \
    X(clEnqueueBarrierWithWaitList, CL_OUT_OF_RESOURCES)               \
    X(clFlush, CL_OUT_OF_RESOURCES)                                    \
    X(clFinish, CL_OUT_OF_RESOURCES)

enum fault_fn {
#define X(name, error) FN_##name,
    CL_FAULT_FUNCTIONS(X)
#undef X
    FN_COUNT
};

static const char *const fn_names[FN_COUNT] = {
#define X(name, error) #name,
    CL_FAULT_FUNCTIONS(X)
#undef X
};

static const cl_int fn_default_errors[FN_COUNT] = {
#define X(name, error) error,
    CL_FAULT_FUNCTIONS(X)
#undef X
};

enum kind { KIND_CONTEXT, KIND_QUEUE, KIND_MEM, KIND_PROGRAM, KIND_KERNEL, KIND_EVENT, KIND_COUNT };

static const char *const kind_names[KIND_COUNT] = {
    "context", "queue", "mem", "program", "kernel", "event",
};

/* What a retain or release of a handle that is not alive returns: the
 * implementation may have freed it already, so it is not forwarded. */
static const cl_int kind_invalid[KIND_COUNT] = {
    CL_INVALID_CONTEXT, CL_INVALID_COMMAND_QUEUE, CL_INVALID_MEM_OBJECT,
    CL_INVALID_PROGRAM, CL_INVALID_KERNEL,        CL_INVALID_EVENT,
};

#define MODULE_CAP 64
#define MISUSE_CAP 32
#define MISUSE_LEN 256

/* One call as a wrapper sees it. */
struct call {
    enum fault_fn fn;
    unsigned long n;         /* its number among the counted calls; 0: not counted */
    char module[MODULE_CAP]; /* file name of the caller's object */
};

/* An object alive as far as the API calls seen so far go. */
struct object {
    const void *handle;
    enum kind kind;
    long refs;
    enum fault_fn made_by;
    unsigned long made_call;
    char module[MODULE_CAP];
    int release_failed; /* a release of it was failed on purpose */
};

static struct {
    pthread_mutex_t lock;
    void *real[FN_COUNT];
    unsigned long calls[FN_COUNT];
    enum fault_fn fault_fn; /* FN_COUNT: nothing to fail */
    unsigned long fault_call;
    cl_int fault_error;
    FILE *log;
    char *leaks_path;
    char *callers;
    struct object *objects;
    size_t n_objects, cap_objects;
    char misuse[MISUSE_CAP][MISUSE_LEN];
    size_t n_misuse;
    int finished; /* the destructor ran: every change rewrites the report */
} st = { .lock = PTHREAD_MUTEX_INITIALIZER, .fault_fn = FN_COUNT };

/* ------------------------------------------------------------ settings */

static void die(const char *what, const char *value)
{
    fprintf(stderr, "cl_fault: %s: %s\n", what, value);
    _exit(125);
}

static enum fault_fn fn_by_name(const char *name, size_t len)
{
    for (int i = 0; i < FN_COUNT; i++)
        if (strlen(fn_names[i]) == len && !strncmp(fn_names[i], name, len))
            return (enum fault_fn)i;
    return FN_COUNT;
}

/* CL_FAULT=<function>:<n>[:<code>] */
static void parse_fault(const char *spec)
{
    const char *colon = strchr(spec, ':');
    enum fault_fn fn = colon ? fn_by_name(spec, (size_t)(colon - spec)) : FN_COUNT;
    if (fn == FN_COUNT)
        die("CL_FAULT names no wrapped function (want <function>:<n>[:<code>])", spec);
    const char *num = colon + 1;
    char *end;
    errno = 0;
    unsigned long n = strtoul(num, &end, 10);
    if (!isdigit((unsigned char)*num) || errno || n == 0 || (*end && *end != ':'))
        die("CL_FAULT needs a call number of 1 or more", spec);
    cl_int code = fn_default_errors[fn];
    if (*end == ':') {
        const char *text = end + 1;
        errno = 0;
        long c = strtol(text, &end, 10);
        if (end == text || *end || errno || c >= 0 || c < INT_MIN)
            die("CL_FAULT's code must be a negative cl_int", spec);
        code = (cl_int)c;
    }
    st.fault_fn = fn;
    st.fault_call = n;
    st.fault_error = code;
}

/* A copy of the variable, or NULL when it is unset or empty: the program
 * may change its environment later. */
static char *env_copy(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return NULL;
    char *copy = strdup(v);
    if (!copy)
        die("out of memory reading", name);
    return copy;
}

__attribute__((constructor)) static void fault_init(void)
{
    char *spec = env_copy("CL_FAULT");
    if (spec)
        parse_fault(spec);
    free(spec);
    char *log = env_copy("CL_FAULT_LOG");
    if (log) {
        st.log = fopen(log, "w");
        if (!st.log)
            die("cannot write CL_FAULT_LOG", log);
        /* Whole lines as they happen: a crash must not lose the last ones. */
        setvbuf(st.log, NULL, _IOLBF, 0);
        free(log);
    }
    st.leaks_path = env_copy("CL_FAULT_LEAKS");
    st.callers = env_copy("CL_FAULT_CALLERS");
}

/* -------------------------------------------------------------- calls */

/* Copies the file name, without directories, of the object holding `addr`
 * (argv[0]'s for the main program). */
static void module_of(const void *addr, char *out, size_t cap)
{
    Dl_info info;
    const char *name = "?";
    if (dladdr(addr, &info) && info.dli_fname && *info.dli_fname) {
        const char *slash = strrchr(info.dli_fname, '/');
        name = slash ? slash + 1 : info.dli_fname;
    }
    snprintf(out, cap, "%s", name);
}

static int in_scope(const char *module)
{
    if (!st.callers)
        return 1;
    for (const char *p = st.callers; *p;) {
        size_t len = strcspn(p, ",");
        if (len && !strncmp(module, p, len))
            return 1;
        p += len + (p[len] == ',');
    }
    return 0;
}

/* Every wrapper's first step: fills *c, counts the call if its caller is in
 * scope, logs it, and returns the error to fail it with, or CL_SUCCESS. */
static cl_int fault_enter(struct call *c, enum fault_fn fn, const void *caller)
{
    c->fn = fn;
    c->n = 0;
    module_of(caller, c->module, sizeof c->module);
    if (!in_scope(c->module))
        return CL_SUCCESS;
    pthread_mutex_lock(&st.lock);
    c->n = ++st.calls[fn];
    cl_int err = fn == st.fault_fn && c->n == st.fault_call ? st.fault_error : CL_SUCCESS;
    if (st.log && err != CL_SUCCESS)
        fprintf(st.log, "%s %lu %s FAULT %d\n", fn_names[fn], c->n, c->module, (int)err);
    else if (st.log)
        fprintf(st.log, "%s %lu %s\n", fn_names[fn], c->n, c->module);
    pthread_mutex_unlock(&st.lock);
    return err;
}

void cl_fault_mark(const char *label)
{
    pthread_mutex_lock(&st.lock);
    if (st.log)
        fprintf(st.log, "# %s\n", label ? label : "");
    pthread_mutex_unlock(&st.lock);
}

static void *real_function(enum fault_fn fn)
{
    pthread_mutex_lock(&st.lock);
    if (!st.real[fn])
        st.real[fn] = dlsym(RTLD_NEXT, fn_names[fn]);
    void *p = st.real[fn];
    pthread_mutex_unlock(&st.lock);
    if (!p)
        die("no real function to forward to", fn_names[fn]);
    return p;
}

/* The real entry point behind wrapper `fn`, with the wrapper's own type. */
#define REAL(fn) ((__typeof__(&fn))real_function(FN_##fn))

/* Opens a wrapper returning cl_int. A macro, so that the return address it
 * takes is the wrapper's, whose caller decides the scope. */
#define ENTER_STATUS(fn)                                                            \
    struct call call;                                                               \
    do {                                                                            \
        cl_int injected = fault_enter(&call, FN_##fn, __builtin_return_address(0)); \
        if (injected != CL_SUCCESS)                                                 \
            return injected;                                                        \
    } while (0)

/* Opens a wrapper that creates an object: a failure is NULL and *errcode_ret. */
#define ENTER_OBJECT(fn, errcode_ret)                                               \
    struct call call;                                                               \
    do {                                                                            \
        cl_int injected = fault_enter(&call, FN_##fn, __builtin_return_address(0)); \
        if (injected != CL_SUCCESS) {                                               \
            if (errcode_ret)                                                        \
                *(errcode_ret) = injected;                                          \
            return NULL;                                                            \
        }                                                                           \
    } while (0)

/* The body of a wrapper that only counts (and may fail) its call. */
#define FORWARD(fn, ...) \
    ENTER_STATUS(fn);    \
    return REAL(fn)(__VA_ARGS__)

/* The body of an enqueue: the event it returns, if any, is tracked. */
#define ENQUEUE(fn, event, ...) \
    ENTER_STATUS(fn);           \
    return track_event(&call, REAL(fn)(__VA_ARGS__), event)

/* ---------------------------------------------------------- lifetimes */

static void report_if_finished(void);

/* Records "<what> of <kind> <handle>, <why>, by <call> from <caller>".
 * Called with the lock held. */
static void note_misuse(const struct call *c, const char *what, enum kind kind,
                        const void *handle, const char *why)
{
    if (st.n_misuse < MISUSE_CAP)
        snprintf(st.misuse[st.n_misuse], MISUSE_LEN, "%s of %s %p, %s, by %s#%lu from %s", what,
                 kind_names[kind], handle, why, fn_names[c->fn], c->n, c->module);
    st.n_misuse++;
}

/* The tracked object with `handle`, or NULL. Called with the lock held. */
static struct object *find_object(const void *handle)
{
    for (size_t i = 0; i < st.n_objects; i++)
        if (st.objects[i].handle == handle)
            return &st.objects[i];
    return NULL;
}

static struct object *add_object(void)
{
    if (st.n_objects == st.cap_objects) {
        size_t cap = st.cap_objects ? 2 * st.cap_objects : 256;
        struct object *p = realloc(st.objects, cap * sizeof *p);
        if (!p)
            die("out of memory", "object table");
        st.objects = p;
        st.cap_objects = cap;
    }
    return &st.objects[st.n_objects++];
}

static void track_new(const struct call *c, enum kind kind, const void *handle)
{
    if (!handle)
        return;
    pthread_mutex_lock(&st.lock);
    struct object *o = find_object(handle);
    if (o)
        note_misuse(c, "creation", kind, handle,
                    "still tracked as alive (freed through an entry point not wrapped here)");
    else
        o = add_object();
    *o = (struct object){ .handle = handle, .kind = kind, .refs = 1, .made_by = c->fn,
                          .made_call = c->n };
    snprintf(o->module, sizeof o->module, "%s", c->module);
    report_if_finished();
    pthread_mutex_unlock(&st.lock);
}

/* An event a successful enqueue returned. */
static cl_int track_event(const struct call *c, cl_int err, const cl_event *event)
{
    if (err == CL_SUCCESS && event)
        track_new(c, KIND_EVENT, *event);
    return err;
}

/* Whether the object may be retained or released: it is alive. A NULL
 * handle goes through, for the implementation to refuse. */
static int alive(const struct call *c, const char *what, enum kind kind, const void *handle)
{
    if (!handle)
        return 1;
    pthread_mutex_lock(&st.lock);
    int ok = find_object(handle) != NULL;
    if (!ok) {
        note_misuse(c, what, kind, handle, "not alive");
        report_if_finished();
    }
    pthread_mutex_unlock(&st.lock);
    return ok;
}

/* Counts a reference gained (+1) or given back (-1) by a successful call. */
static void track_ref(const void *handle, long delta)
{
    pthread_mutex_lock(&st.lock);
    struct object *o = find_object(handle);
    if (o && (o->refs += delta) <= 0)
        *o = st.objects[--st.n_objects];
    report_if_finished();
    pthread_mutex_unlock(&st.lock);
}

static void mark_release_failed(const void *handle)
{
    pthread_mutex_lock(&st.lock);
    struct object *o = find_object(handle);
    if (o)
        o->release_failed = 1;
    report_if_finished();
    pthread_mutex_unlock(&st.lock);
}

/* The body of a wrapper that creates an object of `kind` (tracked when
 * made): a failure is NULL and *errcode_ret. */
#define CREATE(fn, kind, errcode_ret, ...)                        \
    ENTER_OBJECT(fn, errcode_ret);                                \
    __typeof__(fn(__VA_ARGS__)) made = REAL(fn)(__VA_ARGS__);     \
    track_new(&call, kind, made);                                 \
    return made

/* The body of clRetain<X>: retains only what is alive. */
#define RETAIN(fn, kind, handle)                                        \
    ENTER_STATUS(fn);                                                   \
    if (!alive(&call, "retain", kind, handle))                          \
        return kind_invalid[kind];                                      \
    cl_int err = REAL(fn)(handle);                                      \
    if (err == CL_SUCCESS && handle)                                    \
        track_ref(handle, +1);                                          \
    return err

/* The body of clRelease<X>: a release failed on purpose leaves the object
 * alive (the leak report says so); one of an object not alive is refused. */
#define RELEASE(fn, kind, handle)                                                   \
    struct call call;                                                               \
    cl_int injected = fault_enter(&call, FN_##fn, __builtin_return_address(0));     \
    if (injected != CL_SUCCESS) {                                                   \
        mark_release_failed(handle);                                                \
        return injected;                                                            \
    }                                                                               \
    if (!alive(&call, "release", kind, handle))                                     \
        return kind_invalid[kind];                                                  \
    cl_int err = REAL(fn)(handle);                                                  \
    if (err == CL_SUCCESS && handle)                                                \
        track_ref(handle, -1);                                                      \
    return err

static void write_leaks(void)
{
    FILE *f = fopen(st.leaks_path, "w");
    if (!f) {
        fprintf(stderr, "cl_fault: cannot write CL_FAULT_LEAKS %s: %s\n", st.leaks_path,
                strerror(errno));
        return;
    }
    for (size_t i = 0; i < st.n_objects; i++) {
        const struct object *o = &st.objects[i];
        fprintf(f, "LIVE %s %p refs=%ld made-by=%s#%lu from=%s%s\n", kind_names[o->kind],
                o->handle, o->refs, fn_names[o->made_by], o->made_call, o->module,
                o->release_failed ? " release-failed" : "");
    }
    for (size_t i = 0; i < st.n_misuse && i < MISUSE_CAP; i++)
        fprintf(f, "MISUSE %s\n", st.misuse[i]);
    if (st.n_misuse > MISUSE_CAP)
        fprintf(f, "MISUSE and %zu more\n", st.n_misuse - MISUSE_CAP);
    fprintf(f, "END\n");
    fclose(f);
}

/* Objects that other shared objects release from their own destructors
 * (CLBlast's program cache) go after this one's on exit: from here on, every
 * change to the table writes the report again. The log stays open for the
 * same reason; it is line-buffered, so nothing waits in it. */
__attribute__((destructor)) static void fault_fini(void)
{
    pthread_mutex_lock(&st.lock);
    st.finished = 1;
    report_if_finished();
    pthread_mutex_unlock(&st.lock);
}

/* Called with the lock held. */
static void report_if_finished(void)
{
    if (st.finished && st.leaks_path)
        write_leaks();
}

/* ------------------------------------------------- platforms, devices */

CL_API_ENTRY cl_int CL_API_CALL clGetPlatformIDs(cl_uint num_entries, cl_platform_id *platforms,
                                                 cl_uint *num_platforms)
{
    FORWARD(clGetPlatformIDs, num_entries, platforms, num_platforms);
}

CL_API_ENTRY cl_int CL_API_CALL clGetPlatformInfo(cl_platform_id platform,
                                                  cl_platform_info param, size_t size,
                                                  void *value, size_t *size_ret)
{
    FORWARD(clGetPlatformInfo, platform, param, size, value, size_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clGetDeviceIDs(cl_platform_id platform, cl_device_type type,
                                               cl_uint num_entries, cl_device_id *devices,
                                               cl_uint *num_devices)
{
    FORWARD(clGetDeviceIDs, platform, type, num_entries, devices, num_devices);
}

CL_API_ENTRY cl_int CL_API_CALL clGetDeviceInfo(cl_device_id device, cl_device_info param,
                                                size_t size, void *value, size_t *size_ret)
{
    FORWARD(clGetDeviceInfo, device, param, size, value, size_ret);
}

/* ----------------------------------------------------------- contexts */

CL_API_ENTRY cl_context CL_API_CALL
clCreateContext(const cl_context_properties *props, cl_uint num_devices,
                const cl_device_id *devices,
                void(CL_CALLBACK *notify)(const char *, const void *, size_t, void *),
                void *user_data, cl_int *errcode_ret)
{
    CREATE(clCreateContext, KIND_CONTEXT, errcode_ret, props, num_devices, devices, notify,
           user_data, errcode_ret);
}

CL_API_ENTRY cl_context CL_API_CALL
clCreateContextFromType(const cl_context_properties *props, cl_device_type type,
                        void(CL_CALLBACK *notify)(const char *, const void *, size_t, void *),
                        void *user_data, cl_int *errcode_ret)
{
    CREATE(clCreateContextFromType, KIND_CONTEXT, errcode_ret, props, type, notify, user_data,
           errcode_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clRetainContext(cl_context context)
{
    RETAIN(clRetainContext, KIND_CONTEXT, context);
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseContext(cl_context context)
{
    RELEASE(clReleaseContext, KIND_CONTEXT, context);
}

/* ------------------------------------------------------------- queues */

CL_API_ENTRY cl_command_queue CL_API_CALL
clCreateCommandQueue(cl_context context, cl_device_id device,
                     cl_command_queue_properties props, cl_int *errcode_ret)
{
    CREATE(clCreateCommandQueue, KIND_QUEUE, errcode_ret, context, device, props, errcode_ret);
}

CL_API_ENTRY cl_command_queue CL_API_CALL
clCreateCommandQueueWithProperties(cl_context context, cl_device_id device,
                                   const cl_queue_properties *props, cl_int *errcode_ret)
{
    CREATE(clCreateCommandQueueWithProperties, KIND_QUEUE, errcode_ret, context, device, props,
           errcode_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clRetainCommandQueue(cl_command_queue queue)
{
    RETAIN(clRetainCommandQueue, KIND_QUEUE, queue);
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseCommandQueue(cl_command_queue queue)
{
    RELEASE(clReleaseCommandQueue, KIND_QUEUE, queue);
}

CL_API_ENTRY cl_int CL_API_CALL clGetCommandQueueInfo(cl_command_queue queue,
                                                      cl_command_queue_info param, size_t size,
                                                      void *value, size_t *size_ret)
{
    FORWARD(clGetCommandQueueInfo, queue, param, size, value, size_ret);
}

/* ------------------------------------------------------ memory objects */

CL_API_ENTRY cl_mem CL_API_CALL clCreateBuffer(cl_context context, cl_mem_flags flags,
                                               size_t size, void *host, cl_int *errcode_ret)
{
    CREATE(clCreateBuffer, KIND_MEM, errcode_ret, context, flags, size, host, errcode_ret);
}

CL_API_ENTRY cl_mem CL_API_CALL clCreateSubBuffer(cl_mem buffer, cl_mem_flags flags,
                                                  cl_buffer_create_type type, const void *info,
                                                  cl_int *errcode_ret)
{
    CREATE(clCreateSubBuffer, KIND_MEM, errcode_ret, buffer, flags, type, info, errcode_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clRetainMemObject(cl_mem mem)
{
    RETAIN(clRetainMemObject, KIND_MEM, mem);
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseMemObject(cl_mem mem)
{
    RELEASE(clReleaseMemObject, KIND_MEM, mem);
}

CL_API_ENTRY cl_int CL_API_CALL clGetMemObjectInfo(cl_mem mem, cl_mem_info param, size_t size,
                                                   void *value, size_t *size_ret)
{
    FORWARD(clGetMemObjectInfo, mem, param, size, value, size_ret);
}

/* ----------------------------------------------------------- programs */

CL_API_ENTRY cl_program CL_API_CALL clCreateProgramWithSource(cl_context context, cl_uint count,
                                                              const char **strings,
                                                              const size_t *lengths,
                                                              cl_int *errcode_ret)
{
    CREATE(clCreateProgramWithSource, KIND_PROGRAM, errcode_ret, context, count, strings, lengths,
           errcode_ret);
}

CL_API_ENTRY cl_program CL_API_CALL
clCreateProgramWithBinary(cl_context context, cl_uint num_devices, const cl_device_id *devices,
                          const size_t *lengths, const unsigned char **binaries,
                          cl_int *binary_status, cl_int *errcode_ret)
{
    CREATE(clCreateProgramWithBinary, KIND_PROGRAM, errcode_ret, context, num_devices, devices,
           lengths, binaries, binary_status, errcode_ret);
}

CL_API_ENTRY cl_program CL_API_CALL
clCreateProgramWithBuiltInKernels(cl_context context, cl_uint num_devices,
                                  const cl_device_id *devices, const char *names,
                                  cl_int *errcode_ret)
{
    CREATE(clCreateProgramWithBuiltInKernels, KIND_PROGRAM, errcode_ret, context, num_devices,
           devices, names, errcode_ret);
}

CL_API_ENTRY cl_program CL_API_CALL clCreateProgramWithIL(cl_context context, const void *il,
                                                          size_t length, cl_int *errcode_ret)
{
    CREATE(clCreateProgramWithIL, KIND_PROGRAM, errcode_ret, context, il, length, errcode_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clRetainProgram(cl_program program)
{
    RETAIN(clRetainProgram, KIND_PROGRAM, program);
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseProgram(cl_program program)
{
    RELEASE(clReleaseProgram, KIND_PROGRAM, program);
}

CL_API_ENTRY cl_int CL_API_CALL clBuildProgram(cl_program program, cl_uint num_devices,
                                               const cl_device_id *devices, const char *options,
                                               void(CL_CALLBACK *notify)(cl_program, void *),
                                               void *user_data)
{
    FORWARD(clBuildProgram, program, num_devices, devices, options, notify, user_data);
}

CL_API_ENTRY cl_int CL_API_CALL clGetProgramInfo(cl_program program, cl_program_info param,
                                                 size_t size, void *value, size_t *size_ret)
{
    FORWARD(clGetProgramInfo, program, param, size, value, size_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clGetProgramBuildInfo(cl_program program, cl_device_id device,
                                                      cl_program_build_info param, size_t size,
                                                      void *value, size_t *size_ret)
{
    FORWARD(clGetProgramBuildInfo, program, device, param, size, value, size_ret);
}

/* ------------------------------------------------------------ kernels */

CL_API_ENTRY cl_kernel CL_API_CALL clCreateKernel(cl_program program, const char *name,
                                                  cl_int *errcode_ret)
{
    CREATE(clCreateKernel, KIND_KERNEL, errcode_ret, program, name, errcode_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clCreateKernelsInProgram(cl_program program, cl_uint num_kernels,
                                                         cl_kernel *kernels,
                                                         cl_uint *num_kernels_ret)
{
    ENTER_STATUS(clCreateKernelsInProgram);
    /* Only the first `made` entries are kernels; the rest are untouched. */
    cl_uint made = 0;
    cl_int err = REAL(clCreateKernelsInProgram)(program, num_kernels, kernels, &made);
    if (num_kernels_ret)
        *num_kernels_ret = made;
    for (cl_uint i = 0; err == CL_SUCCESS && kernels && i < made && i < num_kernels; i++)
        track_new(&call, KIND_KERNEL, kernels[i]);
    return err;
}

CL_API_ENTRY cl_int CL_API_CALL clRetainKernel(cl_kernel kernel)
{
    RETAIN(clRetainKernel, KIND_KERNEL, kernel);
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseKernel(cl_kernel kernel)
{
    RELEASE(clReleaseKernel, KIND_KERNEL, kernel);
}

CL_API_ENTRY cl_int CL_API_CALL clSetKernelArg(cl_kernel kernel, cl_uint index, size_t size,
                                               const void *value)
{
    FORWARD(clSetKernelArg, kernel, index, size, value);
}

CL_API_ENTRY cl_int CL_API_CALL clGetKernelWorkGroupInfo(cl_kernel kernel, cl_device_id device,
                                                         cl_kernel_work_group_info param,
                                                         size_t size, void *value,
                                                         size_t *size_ret)
{
    FORWARD(clGetKernelWorkGroupInfo, kernel, device, param, size, value, size_ret);
}

/* ------------------------------------------------------------- events */

CL_API_ENTRY cl_event CL_API_CALL clCreateUserEvent(cl_context context, cl_int *errcode_ret)
{
    CREATE(clCreateUserEvent, KIND_EVENT, errcode_ret, context, errcode_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clRetainEvent(cl_event event)
{
    RETAIN(clRetainEvent, KIND_EVENT, event);
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseEvent(cl_event event)
{
    RELEASE(clReleaseEvent, KIND_EVENT, event);
}

CL_API_ENTRY cl_int CL_API_CALL clWaitForEvents(cl_uint num_events, const cl_event *events)
{
    FORWARD(clWaitForEvents, num_events, events);
}

CL_API_ENTRY cl_int CL_API_CALL clGetEventProfilingInfo(cl_event event, cl_profiling_info param,
                                                        size_t size, void *value,
                                                        size_t *size_ret)
{
    FORWARD(clGetEventProfilingInfo, event, param, size, value, size_ret);
}

/* ------------------------------------------------------------ enqueues */

CL_API_ENTRY cl_int CL_API_CALL clEnqueueReadBuffer(cl_command_queue queue, cl_mem buffer,
                                                    cl_bool blocking, size_t offset, size_t size,
                                                    void *ptr, cl_uint num_wait,
                                                    const cl_event *wait_list, cl_event *event)
{
    ENQUEUE(clEnqueueReadBuffer, event, queue, buffer, blocking, offset, size, ptr, num_wait,
            wait_list, event);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueWriteBuffer(cl_command_queue queue, cl_mem buffer,
                                                     cl_bool blocking, size_t offset, size_t size,
                                                     const void *ptr, cl_uint num_wait,
                                                     const cl_event *wait_list, cl_event *event)
{
    ENQUEUE(clEnqueueWriteBuffer, event, queue, buffer, blocking, offset, size, ptr, num_wait,
            wait_list, event);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueCopyBuffer(cl_command_queue queue, cl_mem src,
                                                    cl_mem dst, size_t src_offset,
                                                    size_t dst_offset, size_t size,
                                                    cl_uint num_wait, const cl_event *wait_list,
                                                    cl_event *event)
{
    ENQUEUE(clEnqueueCopyBuffer, event, queue, src, dst, src_offset, dst_offset, size, num_wait,
            wait_list, event);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueFillBuffer(cl_command_queue queue, cl_mem buffer,
                                                    const void *pattern, size_t pattern_size,
                                                    size_t offset, size_t size, cl_uint num_wait,
                                                    const cl_event *wait_list, cl_event *event)
{
    ENQUEUE(clEnqueueFillBuffer, event, queue, buffer, pattern, pattern_size, offset, size,
            num_wait, wait_list, event);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueNDRangeKernel(cl_command_queue queue, cl_kernel kernel,
                                                       cl_uint dims, const size_t *offset,
                                                       const size_t *global, const size_t *local,
                                                       cl_uint num_wait,
                                                       const cl_event *wait_list,
                                                       cl_event *event)
{
    ENQUEUE(clEnqueueNDRangeKernel, event, queue, kernel, dims, offset, global, local, num_wait,
            wait_list, event);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueMarkerWithWaitList(cl_command_queue queue,
                                                            cl_uint num_wait,
                                                            const cl_event *wait_list,
                                                            cl_event *event)
{
    ENQUEUE(clEnqueueMarkerWithWaitList, event, queue, num_wait, wait_list, event);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueBarrierWithWaitList(cl_command_queue queue,
                                                             cl_uint num_wait,
                                                             const cl_event *wait_list,
                                                             cl_event *event)
{
    ENQUEUE(clEnqueueBarrierWithWaitList, event, queue, num_wait, wait_list, event);
}

CL_API_ENTRY cl_int CL_API_CALL clFlush(cl_command_queue queue)
{
    FORWARD(clFlush, queue);
}

CL_API_ENTRY cl_int CL_API_CALL clFinish(cl_command_queue queue)
{
    FORWARD(clFinish, queue);
}
