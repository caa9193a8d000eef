/* SPDX-License-Identifier: MIT */
/* Error printing, device opening and formatting shared by the subcommands
 * (the option-value parsers are in cli_parse.c). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"

/* The real stderr while cli_quiet_begin has fd 2 elsewhere, else -1. */
static int real_stderr = -1;

/* The program the messages name. */
static const char *program = "clattn";

void cli_set_program(const char *name)
{
    program = name;
}

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (real_stderr >= 0) {
        dprintf(real_stderr, "%s: error: ", program);
        vdprintf(real_stderr, fmt, ap);
        dprintf(real_stderr, "\n");
    } else {
        fprintf(stderr, "%s: error: ", program);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
    }
    va_end(ap);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!strcmp(cmd, program)) /* a program of one command */
        cli_error("%s (see %s --help)", msg, program);
    else
        cli_error("%s: %s (see %s %s --help)", cmd, msg, program, cmd);
    return CLI_EXIT_USAGE;
}

/* The option as the user wrote it, for a message: argv[optind - 1] holds
 * it after getopt, except for a short option inside a cluster ("-xB"). */
static const char *option_text(char **argv, char *buf, size_t cap)
{
    const char *arg = argv[optind - 1];
    if (optopt && !(arg[0] == '-' && arg[1] == optopt && arg[2] == '\0') &&
        strncmp(arg, "--", 2) != 0) {
        snprintf(buf, cap, "-%c", optopt);
        return buf;
    }
    return arg;
}

int cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts,
               const struct option *longopts)
{
    opterr = 0;
    char buf[8];
    int opt = getopt_long(argc, argv, shortopts, longopts, NULL);
    if (opt == ':') {
        cli_usage_error(cmd, "option %s needs a value", option_text(argv, buf, sizeof buf));
        return '?';
    }
    if (opt == '?') {
        cli_usage_error(cmd, "unknown option '%s'", option_text(argv, buf, sizeof buf));
        return '?';
    }
    if (opt == -1 && optind < argc) {
        cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
        return '?';
    }
    if (opt != -1 && optarg && !*optarg) {
        /* "--out=" or "--out ''": name the option, not the empty word */
        const char *name = argv[optind - 1];
        if (!*name && optind >= 2)
            name = argv[optind - 2];
        cli_usage_error(cmd, "option %.*s needs a value", (int)strcspn(name, "="), name);
        return '?';
    }
    return opt;
}

int cli_quiet_begin(void)
{
    if (real_stderr >= 0)
        return -1;
    FILE *sink = tmpfile();
    if (!sink)
        return -1;
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    if (saved < 0 || dup2(fileno(sink), STDERR_FILENO) < 0) {
        if (saved >= 0)
            close(saved);
        fclose(sink);
        return -1;
    }
    fclose(sink); /* fd 2 keeps the file open (and tmpfile() unlinked it) */
    real_stderr = saved;
    return 0;
}

long cli_quiet_end(void)
{
    if (real_stderr < 0)
        return 0;
    fflush(stderr);
    struct stat st;
    long written = fstat(STDERR_FILENO, &st) == 0 ? (long)st.st_size : -1;
    dup2(real_stderr, STDERR_FILENO);
    close(real_stderr);
    real_stderr = -1;
    return written;
}

void cli_lib_error(const char *what, int code)
{
    const char *detail = clattn_last_error_detail();
    if (detail && *detail)
        cli_error("%s: %s (%s)", what, clattn_strerror(code), detail);
    else
        cli_error("%s: %s", what, clattn_strerror(code));
}

int cli_open(const char *selector, clattn_ctx **ctx)
{
    int rc = clattn_open(ctx, selector);
    if (rc < 0)
        cli_lib_error("cannot open an OpenCL device", rc);
    return rc;
}

int cli_open_with_report(const char *selector, const char *json, const char *command,
                         clattn_ctx **ctx, outfile *jf, struct json *j)
{
    if (cli_open(selector, ctx) < 0)
        return 1;
    if (!json)
        return 0;
    if (cli_output_open(json, jf)) {
        clattn_close(ctx);
        return 1;
    }
    json_begin_document(j, jf->stream, command);
    json_str(j, "device", clattn_device_name(*ctx));
    return 0;
}

/* The library's kernel table names the kernels: these need the library,
 * the parsers of cli_parse.c do not. */
int cli_parse_fused_kernel(const char *s, clattn_fused_kernel *out)
{
    return s && clattn_fused_kernel_find(s, out) == 0 ? 0 : -1;
}

void cli_kernel_names(char *buf, size_t cap)
{
    size_t len = (size_t)snprintf(buf, cap, "auto");
    clattn_kernel_info k;
    for (size_t i = 0; len < cap && clattn_fused_kernel_info(i, &k) == 0; i++)
        len += (size_t)snprintf(buf + len, cap - len, ", %s", k.name);
}

const char *cli_dtype_name(clattn_dtype d)
{
    return d == CLATTN_F16 ? "fp16" : d == CLATTN_BF16 ? "bf16" : "fp32";
}

const char *cli_causal_name(clattn_causal c)
{
    switch (c) {
    case CLATTN_CAUSAL_TOP_LEFT: return "top-left";
    case CLATTN_CAUSAL_BOTTOM_RIGHT: return "bottom-right";
    default: return "none";
    }
}

const char *cli_path_name(clattn_path p)
{
    switch (p) {
    case CLATTN_PATH_NAIVE: return "naive";
    case CLATTN_PATH_FUSED: return "fused";
    default: return "auto";
    }
}

void cli_release_buffers(cl_mem *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (b[i])
            clReleaseMemObject(b[i]);
        b[i] = NULL;
    }
}

int cli_cl_status(cl_int err)
{
    return err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ? CLATTN_EOOM
                                                                                  : CLATTN_ECL;
}

void cli_fmt_bytes(uint64_t bytes, char *buf, size_t cap)
{
    static const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
    double v = (double)bytes;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%" PRIu64 " B", bytes);
    else if (v == (double)(uint64_t)v)
        snprintf(buf, cap, "%.0f %s", v, units[u]);
    else
        snprintf(buf, cap, "%.2f %s", v, units[u]);
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int cli_output_check(const char *path)
{
    char err[4096 + 256];
    if (!path || outfile_check(path, err, sizeof err) == 0)
        return 0;
    cli_error("%s", err);
    return 1;
}

int cli_output_open(const char *path, outfile *f)
{
    char err[4096 + 256];
    if (outfile_open(f, path, err, sizeof err) == 0)
        return 0;
    cli_error("%s", err);
    return 1;
}

int cli_output_commit(outfile *f)
{
    char err[4096 + 256];
    if (outfile_commit(f, err, sizeof err) == 0)
        return 0;
    cli_error("%s", err);
    return 1;
}

void cli_model_tiles(const clattn_fused_plan *plan, clattn_model_problem *problem)
{
    const size_t group = problem->shape.heads / problem->shape.kv_heads;
    problem->block_m = plan->block_m / group ? plan->block_m / group : 1;
    problem->block_n = plan->block_n;
    problem->splits = plan->splits;
}
