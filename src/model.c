/* placeholder: being written */
#include "error.h"
