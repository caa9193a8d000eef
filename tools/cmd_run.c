#include <stdio.h>
#include "commands.h"
int cmd_run(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "clattn: run: not implemented yet\n");
    return 1;
}
