/* Helpers shared by the clattn subcommands: parsing, errors, formatting. */
#ifndef CLATTN_TOOLS_CLI_H
#define CLATTN_TOOLS_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "clattn/clattn.h"
#include "clattn/device.h"

/* Prints "clattn: error: <message>\n" to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints a library failure: "clattn: error: <what>: <strerror> (<detail>)". */
void cli_lib_error(const char *what, int code);

/* Opens a context on `selector` (NULL: $CLATTN_DEVICE or the default);
 * prints the error and returns nonzero on failure. */
int cli_open(const char *selector, clattn_ctx **ctx);

/* Parses a non-negative integer; 0 on success, -1 on junk or overflow. */
int cli_parse_size(const char *s, size_t *out);
/* Parses a byte count with optional suffix K/M/G/T (binary: KiB...) or
 * KB/MB/GB/TB (decimal). */
int cli_parse_bytes(const char *s, uint64_t *out);
/* Parses "1024,4096,16384" into out[0..*n). */
int cli_parse_size_list(const char *s, size_t *out, size_t cap, size_t *n);
int cli_parse_dtype(const char *s, clattn_dtype *out);     /* fp32|fp16|f32|f16|float32|float16 */
int cli_parse_causal(const char *s, clattn_causal *out);   /* none|top-left|bottom-right */
int cli_parse_path(const char *s, clattn_path *out);       /* auto|naive|fused */
/* "auto" or a name of the library's kernel table */
int cli_parse_fused_kernel(const char *s, clattn_fused_kernel *out);
/* "auto, nv-mma, portable": the names --kernel takes. */
void cli_kernel_names(char *buf, size_t cap);
int cli_parse_double(const char *s, double *out);

const char *cli_dtype_name(clattn_dtype d);   /* "fp32" / "fp16" */
const char *cli_causal_name(clattn_causal c); /* "none" / "top-left" / "bottom-right" */
const char *cli_path_name(clattn_path p);     /* "auto" / "naive" / "fused" */

/* Formats bytes in binary units ("2 MiB", "2.02 GiB", "512 B"). */
void cli_fmt_bytes(uint64_t bytes, char *buf, size_t cap);

/* Monotonic wall clock in seconds. */
double cli_now(void);

#endif
