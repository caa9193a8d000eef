/* Options as the modules read them. */
#ifndef CLATTN_SRC_CORE_OPTIONS_H
#define CLATTN_SRC_CORE_OPTIONS_H

#include "clattn/types.h"

/* `opts`, or the defaults written into `storage` when opts is NULL. */
const clattn_options *clattn_options_or_default(const clattn_options *opts,
                                                clattn_options *storage);

#endif
