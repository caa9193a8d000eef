/* SPDX-License-Identifier: MIT */
/* Error codes, their messages, and the per-thread detail of the last failure. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"

/* Large enough for a kernel build log's first screens. */
#define DETAIL_CAP 8192
static _Thread_local char detail[DETAIL_CAP];

const char *clattn_strerror(int code)
{
    switch (code) {
#define X(name, value, msg) case CLATTN_##name: return msg;
        CLATTN_ERRNO_MAP(X)
#undef X
    }
    return "unknown error";
}

const char *clattn_error_name(int code)
{
    switch (code) {
#define X(name, value, msg) case CLATTN_##name: return "CLATTN_" #name;
        CLATTN_ERRNO_MAP(X)
#undef X
    }
    return "CLATTN_UNKNOWN";
}

const char *clattn_last_error_detail(void)
{
    return detail;
}

void clattn_clear_error(void)
{
    detail[0] = '\0';
}

int clattn_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return code;
}

void clattn_detail_append(const char *text)
{
    size_t len = strlen(detail);
    if (len + 1 < sizeof detail)
        snprintf(detail + len, sizeof detail - len, "%s", text);
}

int clattn_set_error(int code, const char *text)
{
    snprintf(detail, sizeof detail, "%s", text ? text : "");
    return code;
}
