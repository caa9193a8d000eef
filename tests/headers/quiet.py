#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A user's build that includes clattn/clattn.h and names no OpenCL version
compiles with nothing on stderr (no note from the OpenCL headers).

usage: quiet.py INCLUDE_DIR CC [CC ARGS...]
"""
import os
import subprocess
import sys
import tempfile


def main():
    include, cc = sys.argv[1], sys.argv[2:]
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, 'user.c')
        with open(src, 'w') as f:
            f.write('#include <clattn/clattn.h>\nint main(void) { return 0; }\n')
        r = subprocess.run(cc + ['-fsyntax-only', '-Wall', '-Wextra', '-I', include, src],
                           capture_output=True, text=True)
    if r.returncode != 0 or r.stderr.strip():
        sys.exit(f'quiet.py: compiling clattn/clattn.h printed:\n{r.stderr}')
    print('clattn/clattn.h compiles quietly without CL_TARGET_OPENCL_VERSION')


if __name__ == '__main__':
    main()
