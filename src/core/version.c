/* The library's version, from clattn/version.h. */
#include "clattn/types.h"

const char *clattn_version(void)
{
#define STR2(x) #x
#define STR(x) STR2(x)
    return STR(CLATTN_VERSION_MAJOR) "." STR(CLATTN_VERSION_MINOR) "." STR(CLATTN_VERSION_PATCH);
}

