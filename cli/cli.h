/* SPDX-License-Identifier: MIT */
/* Helpers shared by the clattn subcommands: parsing, errors, formatting. */
#ifndef CLATTN_TOOLS_CLI_H
#define CLATTN_TOOLS_CLI_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>

#include "clattn/clattn.h"
#include "clattn/device.h"
#include "outfile.h"

/* The exit statuses of every command (clattn --help and README.md say so). */
#define CLI_EXIT_OK 0      /* it did what was asked */
#define CLI_EXIT_FAILURE 1 /* a run, a check or a file failed */
#define CLI_EXIT_USAGE 2   /* the command line is wrong */
/* The line every command's --help ends with. */
#define CLI_EXIT_HELP "Exit status: 0 ok, 1 failure (a run, a check or a file), 2 usage error.\n"

/* A usage error, the same on every command: one line on stderr,
 * "clattn: error: <cmd>: <message> (see clattn <cmd> --help)"; for a
 * program of one command (cli_set_program's name as `cmd`),
 * "<program>: error: <message> (see <program> --help)". Returns
 * CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* getopt_long for subcommand `cmd` with the tool's messages instead of
 * getopt's own: `shortopts` starts with ':'. Returns the next option; '?'
 * after printing a usage error for an unknown option, a missing value or
 * an empty one ("--out="); -1 when the options are done, or '?' when an
 * operand is left (no command takes operands). */
int cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts,
               const struct option *longopts);

/* The program the messages name: "clattn" unless set (tests/perf). */
void cli_set_program(const char *name);

/* Prints "clattn: error: <message>\n" to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints a library failure: "clattn: error: <what>: <strerror> (<detail>)". */
void cli_lib_error(const char *what, int code);

/* Keeps what others write to the process's stderr off the terminal while
 * the device is probed: some OpenCL compilers (PoCL's clang) print a
 * summary there when a probe build fails, and the library reports the
 * build's log itself. cli_quiet_begin points fd 2 at a temporary file (0,
 * or -1 when it could not, and nothing changed); cli_error still reaches
 * the real stderr. cli_quiet_end puts fd 2 back and returns how many bytes
 * were written to it meanwhile. */
int cli_quiet_begin(void);
long cli_quiet_end(void);

/* Output files (outfile.h) with the command's error printed: each returns
 * 0, or 1 after the message. cli_output_check (NULL: nothing to check)
 * catches a path that cannot be written before slow device work; open and
 * commit write it whole or not at all ("-" is stdout). */
int cli_output_check(const char *path);
int cli_output_open(const char *path, outfile *f);
int cli_output_commit(outfile *f);

/* A file a command reads or writes, by the option that names it (outputs.c):
 * for an output, what writes its bytes (0, or -1 with "<path>: <problem>"
 * in err). */
typedef struct cli_file {
    const char *option; /* "--out" */
    const char *path;   /* NULL: not given */
    int (*write)(FILE *f, const char *path, const void *user, char *err, size_t errcap);
    const void *user;
} cli_file;

#define CLI_MAX_OUTPUTS 4

/* The outputs go to distinct files, none of them an input, and at most one
 * to stdout (outfile_same_file: the same path however spelled, a hard
 * link); 0, or CLI_EXIT_USAGE after the line naming both options. */
int cli_check_files(const char *cmd, const cli_file *outputs, size_t n_out,
                    const cli_file *inputs, size_t n_in);
/* Every output given checked (cli_output_check) before slow work: 0 or 1. */
int cli_check_outputs(const cli_file *outputs, size_t n);
/* Writes the outputs given and commits them together (outfile_commit_all):
 * the temporaries of files first, then what is written in place (a FIFO's
 * open waits for its reader, and what it took cannot be taken back), then
 * the renames; any failure replaces nothing. 0, or 1 after the message. */
int cli_write_outputs(const cli_file *outputs, size_t n);

/* Opens a context on `selector` (NULL: $CLATTN_DEVICE or the default);
 * prints the error and returns nonzero on failure. */
int cli_open(const char *selector, clattn_ctx **ctx);

struct json;
/* cli_open, then, when `json` names a file, that report opened (outfile.h)
 * and its document begun for `command` with the device's name. 0, or 1
 * after the message with nothing left open. */
int cli_open_with_report(const char *selector, const char *json, const char *command,
                         clattn_ctx **ctx, outfile *jf, struct json *j);

/* Parsers of option values (cli_parse.c): 0 on success, -1 on anything else,
 * which leaves *out as it was. tests/fuzz/fuzz_cli.c checks each against
 * the grammar given here. */

/* One or more decimal digits (no sign, no space), at most SIZE_MAX. */
int cli_parse_size(const char *s, size_t *out);
/* A byte count: a number starting with a digit, as strtod reads it ("1.5",
 * "1e3"), then an optional suffix: B; K, M, G, T (also lower case) and KiB,
 * MiB, GiB, TiB binary; KB (kB), MB, GB, TB decimal. Rounded to a byte;
 * 2^64 or more is refused. */
int cli_parse_bytes(const char *s, uint64_t *out);
/* "1024,4096,16384": 1..cap sizes separated by single commas, into
 * out[0..*n). On failure out and *n hold what was parsed so far. */
int cli_parse_size_list(const char *s, size_t *out, size_t cap, size_t *n);
/* --kv-lens: "3,0,7", per-sequence lengths as cli_parse_size_list reads
 * them, each at most UINT32_MAX (the kernels' width), into out[0..*n). How
 * many, and the bound by Nk, are for each command to check against its
 * shape. */
int cli_parse_lens(const char *s, uint32_t *out, size_t cap, size_t *n);
/* How many items "a,b,c" has: the capacity cli_parse_lens needs for it. */
size_t cli_list_items(const char *s);
/* fp32|f32|float32|float, fp16|f16|float16|half */
int cli_parse_dtype(const char *s, clattn_dtype *out);
/* none|no, top-left|tl|yes, bottom-right|br; NULL (a bare --causal) is
 * top-left */
int cli_parse_causal(const char *s, clattn_causal *out);
int cli_parse_path(const char *s, clattn_path *out);       /* auto|naive|fused */
/* "auto" or a name of the library's kernel table (in cli.c: it asks the
 * library) */
int cli_parse_fused_kernel(const char *s, clattn_fused_kernel *out);
/* "auto, nv-mma, portable": the names --kernel takes. */
void cli_kernel_names(char *buf, size_t cap);
/* --params: "name=value" items separated by single commas; a name is
 * letters, digits, '_' and '-', a value one or more printable characters
 * other than space, ',' and '='. Which names a kernel has is the
 * library's to check. */
int cli_parse_params(const char *s);
/* A finite number as strtod reads the whole string, not starting with
 * space; out-of-range values (ERANGE) are refused. */
int cli_parse_double(const char *s, double *out);

const char *cli_dtype_name(clattn_dtype d);   /* "fp32" / "fp16" / "bf16" */
const char *cli_causal_name(clattn_causal c); /* "none" / "top-left" / "bottom-right" */
const char *cli_path_name(clattn_path p);     /* "auto" / "naive" / "fused" */

/* Releases the buffers b[0..n) that are not NULL and sets them NULL. */
void cli_release_buffers(cl_mem *b, size_t n);

/* The library code for a failed buffer creation, upload or fill:
 * CLATTN_EOOM where the device ran out of memory or resources, else
 * CLATTN_ECL. */
int cli_cl_status(cl_int err);

/* A fused plan's tiles and split into the model's problem (whose shape is
 * set): the kernel packs the H / Hkv query heads of a KV head into BLOCK_M
 * rows, the model counts one head's rows. */
void cli_model_tiles(const clattn_fused_plan *plan, clattn_model_problem *problem);

/* Formats bytes in binary units ("2 MiB", "2.02 GiB", "512 B"). */
void cli_fmt_bytes(uint64_t bytes, char *buf, size_t cap);

/* Monotonic wall clock in seconds. */
double cli_now(void);

#endif
