/* SPDX-License-Identifier: MIT */
/* The saved measurement's text (measure/file_text.c). */
#ifndef CLATTN_SRC_MEASURE_FILE_TEXT_H
#define CLATTN_SRC_MEASURE_FILE_TEXT_H

#include <stdio.h>

#include "clattn/device.h"

/* Writes `m` as key=value lines. */
void measurement_format(FILE *f, const clattn_measurement *m);

/* Parses the text of a saved measurement into *m (zeroed first): 0, or
 * CLATTN_EFORMAT naming `path` and the line for a malformed file, an unknown
 * format, or a value no device measures (NaN, zero, negative, absurd).
 * `text` is modified. */
int measurement_parse(char *text, const char *path, clattn_measurement *m);

#endif
