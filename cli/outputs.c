/* SPDX-License-Identifier: MIT */
/* A command's outputs: distinct files, checked before the work and
 * committed together after it (see cli.h). */
#include <limits.h>
#include <stdio.h>

#include "cli.h"

int cli_check_files(const char *cmd, const cli_file *out, size_t n_out, const cli_file *in,
                    size_t n_in)
{
    for (size_t i = 0; i < n_out; i++) {
        if (!out[i].path)
            continue;
        for (size_t j = i + 1; j < n_out; j++) {
            if (!out[j].path)
                continue;
            if (outfile_is_stdout(out[i].path) && outfile_is_stdout(out[j].path))
                return cli_usage_error(cmd, "%s and %s cannot both go to stdout", out[i].option,
                                       out[j].option);
            if (outfile_same_file(out[i].path, out[j].path))
                return cli_usage_error(cmd, "%s '%s' and %s '%s' name the same file",
                                       out[i].option, out[i].path, out[j].option, out[j].path);
        }
        for (size_t j = 0; j < n_in; j++)
            if (in[j].path && outfile_same_file(out[i].path, in[j].path))
                return cli_usage_error(cmd, "%s '%s' names the input %s '%s'", out[i].option,
                                       out[i].path, in[j].option, in[j].path);
    }
    return 0;
}

int cli_check_outputs(const cli_file *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (cli_output_check(out[i].path))
            return 1;
    return 0;
}

int cli_write_outputs(const cli_file *out, size_t n)
{
    outfile files[CLI_MAX_OUTPUTS], *opened[CLI_MAX_OUTPUTS];
    size_t n_open = 0;
    char err[PATH_MAX + 256];
    for (int in_place = 0; in_place < 2; in_place++) {
        for (size_t i = 0; i < n && n_open < CLI_MAX_OUTPUTS; i++) {
            if (!out[i].path || outfile_in_place(out[i].path) != in_place)
                continue;
            outfile *f = &files[n_open];
            if (outfile_open(f, out[i].path, err, sizeof err) == 0) {
                opened[n_open++] = f;
                if (out[i].write(f->stream, out[i].path, out[i].user, err, sizeof err) == 0)
                    continue;
            }
            for (size_t k = 0; k < n_open; k++)
                outfile_abort(opened[k]);
            cli_error("%s", err);
            return 1;
        }
    }
    if (outfile_commit_all(opened, n_open, err, sizeof err)) {
        cli_error("%s", err);
        return 1;
    }
    return 0;
}
