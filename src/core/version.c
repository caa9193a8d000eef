/* SPDX-License-Identifier: MIT */
/* The library's version and API number, from clattn/version.h. */
#include "clattn/types.h"

const char *clattn_version(void)
{
#define STR2(x) #x
#define STR(x) STR2(x)
    return STR(CLATTN_VERSION_MAJOR) "." STR(CLATTN_VERSION_MINOR) "." STR(CLATTN_VERSION_PATCH);
}

unsigned clattn_api_version(void)
{
    return CLATTN_API_VERSION;
}
