/* placeholder */
#include "npy.h"
