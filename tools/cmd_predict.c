#include <stdio.h>
#include "commands.h"
int cmd_predict(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "clattn: predict: not implemented yet\n");
    return 1;
}
