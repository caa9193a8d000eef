#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The variant flags a build-time kernel takes (cl/include/fused_grid.clh's
FUSED_F_*) and the host's fused_variant_flags (src/fused/variant.c) are
written twice, once in OpenCL C and once in C: this checks that they agree,
bit for bit, and that every flag is set by the host.

usage: check_variant_flags.py SOURCE_ROOT
"""
import os
import re
import sys

# The host variant's fields and the kernel's flag names.
FIELDS = {'causal': 'CAUSAL', 'causal_br': 'CAUSAL_BR', 'lse': 'LSE_OUT', 'split': 'SPLIT',
          'kv_lens': 'KV_LENS', 'q_lens': 'Q_LENS'}


def main():
    root = sys.argv[1]
    clh = open(os.path.join(root, 'cl', 'include', 'fused_grid.clh')).read()
    host = open(os.path.join(root, 'src', 'fused', 'variant.c')).read()
    kernel = {m.group(1): int(m.group(2)) for m in
              re.finditer(r'^#define FUSED_F_(\w+) (\d+)u$', clh, flags=re.M)}
    body = re.search(r'unsigned fused_variant_flags\(.*?\{(.*?)\n\}', host, flags=re.S)
    if not kernel or not body:
        sys.exit('check_variant_flags: no FUSED_F_* defines or no fused_variant_flags')
    hostbits = {FIELDS.get(m.group(1), m.group(1)): int(m.group(2)) for m in
                re.finditer(r'v->(\w+) \? (\d+)u : 0u', body.group(1))}
    if kernel != hostbits:
        sys.exit(f'check_variant_flags: cl/include/fused_grid.clh {kernel} != '
                 f'src/fused/variant.c {hostbits}')
    if len(set(kernel.values())) != len(kernel) or any(v & (v - 1) for v in kernel.values()):
        sys.exit(f'check_variant_flags: flags are not distinct single bits: {kernel}')
    print(f'{len(kernel)} flags agree: {kernel}')


if __name__ == '__main__':
    main()
