#ifndef CLATTN_TOOLS_NPY_H
#define CLATTN_TOOLS_NPY_H
#endif
