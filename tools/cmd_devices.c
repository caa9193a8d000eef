#include <stdio.h>
#include "commands.h"
int cmd_devices(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "clattn: devices: not implemented yet\n");
    return 1;
}
