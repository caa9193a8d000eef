#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Compiles an OpenCL C kernel with Hopper inline assembly into a PTX program
binary that NVIDIA's OpenCL driver takes through clCreateProgramWithBinary.

NVIDIA's OpenCL compiler targets sm_90 and rejects wgmma (it needs sm_90a),
so the kernel is compiled here instead: clang (-target nvptx64-nvidia-nvcl)
+ libclc + opt + llc, as tools/ptxcheck.sh does, then the PTX header is
rewritten for the driver:

  .version X.Y                    -> .version 8.0 (wgmma needs PTX ISA 8.0)
  .target sm_NN, texmode_independent -> .target sm_90a, texmode_independent

The driver faults at launch without texmode_independent, and with a pointer
parameter that is not `.param .u64 .ptr .global .align 4`
(../shared/gpu/README.md). clang's nvcl target already writes both, so they
are checked, not rewritten: a kernel whose parameters differ (a __local
pointer, a pointer to 2- or 16-byte elements) fails here, loudly, instead
of faulting on the GPU. With --ptxas the result is assembled for sm_90a and
its -v report (registers, spills) is written to --report.

With --maxnreg N the kernel entry gets `.maxnreg N` (setmaxnreg needs it).

usage: ptxgen.py --clang C --llvm-link L --opt O --llc C --libclc BC
                 [--ptxas P --report R] [--maxnreg N] -o OUT.ptx SRC.cl [clang options]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

PTX_VERSION = '8.0'
TARGET = 'sm_90a'


def fail(msg):
    sys.exit(f'ptxgen.py: {msg}')


def run(cmd, quiet=False):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # libclc's triple differs in spelling (nvptx64-unknown-nvidiacl); that
    # warning is expected, anything else is shown.
    out = '\n'.join(line for line in r.stdout.splitlines()
                    if 'Linking two modules of different target triples' not in line)
    if r.returncode:
        fail(f'{" ".join(cmd)} failed ({r.returncode}):\n{out}')
    if out.strip() and not quiet:
        print(out)
    return r.stdout


def replace_one(text, pattern, repl, what):
    new, n = re.subn(pattern, repl, text, flags=re.M | re.S)
    if n != 1:
        fail(f'expected exactly one {what} line in the PTX, found {n}')
    return new


def check_params(text):
    """Every .entry's parameters: scalars, or pointers to global memory
    declared the way the driver launches them."""
    entries = re.findall(r'^\.entry\s+(\w+)\(\s*$(.*?)^\)', text, flags=re.M | re.S)
    if not entries:
        fail('no .entry in the PTX')
    for name, params in entries:
        for line in params.strip().splitlines():
            p = line.strip().rstrip(',')
            if '.ptr' in p:
                if not re.fullmatch(r'\.param \.u64 \.ptr \.global \.align 4 \w+', p):
                    fail(f'kernel {name}: pointer parameter "{p}" is not '
                         '".param .u64 .ptr .global .align 4" (use __global pointers to '
                         '4-byte elements; no __local arguments)')
            elif not re.fullmatch(r'\.param \.(u|s|b|f)(32|64) \w+', p):
                fail(f'kernel {name}: unexpected parameter "{p}"')
    return [name for name, _ in entries]


def rewrite(text, maxnreg=None):
    if maxnreg:
        # A performance directive between the parameter list and the body:
        # setmaxnreg needs the kernel's register count known at entry.
        text = replace_one(text, r'^(\.entry\s+\w+\(\s*$.*?^\))$', rf'\1\n.maxnreg {maxnreg}',
                           '.entry')
    text = replace_one(text, r'^\.version \d+\.\d+$', f'.version {PTX_VERSION}', '.version')
    text = replace_one(text, r'^\.target sm_\d+a?, texmode_independent$',
                       f'.target {TARGET}, texmode_independent',
                       '.target sm_NN, texmode_independent')
    if not re.search(r'^\.address_size 64$', text, flags=re.M):
        fail('expected .address_size 64 in the PTX')
    check_params(text)
    return text


def main():
    ap = argparse.ArgumentParser()
    for tool in ('clang', 'llvm-link', 'opt', 'llc', 'libclc'):
        ap.add_argument('--' + tool, required=True)
    ap.add_argument('--ptxas')
    ap.add_argument('--report')
    ap.add_argument('--maxnreg', type=int, help='add .maxnreg N to the kernel entry')
    ap.add_argument('-o', dest='out', required=True)
    ap.add_argument('src')
    args, clang_opts = ap.parse_known_args()
    with tempfile.TemporaryDirectory() as tmp:
        bc, linked, opt, ptx = (os.path.join(tmp, n) for n in ('k.bc', 'l.bc', 'o.bc', 'k.ptx'))
        # -Dasm=__asm__: clang spells GCC inline assembly __asm__ in OpenCL C.
        run([args.clang, '-x', 'cl', '-cl-std=CL1.2', '-target', 'nvptx64-nvidia-nvcl',
             '-Xclang', '-finclude-default-header', '-O3', '-emit-llvm', '-c',
             '-Dasm=__asm__', '-I', os.path.dirname(os.path.abspath(args.src)),
             *clang_opts, '-o', bc, args.src])
        run([args.llvm_link, bc, args.libclc, '-o', linked])
        run([args.opt, '-O3', linked, '-o', opt])
        # sm_86/PTX 7.5 is what LLVM 15 writes; the header is rewritten below.
        run([args.llc, '-march=nvptx64', '-mcpu=sm_86', '-mattr=+ptx75', opt, '-o', ptx])
        with open(ptx) as f:
            text = rewrite(f.read(), args.maxnreg)
        with open(ptx, 'w') as f:
            f.write(text)
        if args.report and not args.ptxas:
            with open(args.report, 'w') as f:
                f.write('ptxas was not found at build time: the PTX is not validated\n')
        if args.ptxas:
            report = run([args.ptxas, '-arch=' + TARGET, '-v', ptx,
                          '-o', os.path.join(tmp, 'k.cubin')], quiet=True)
            if args.report:
                with open(args.report, 'w') as f:
                    f.write(report)
        tmp_out = args.out + '.tmp'
        with open(tmp_out, 'w') as f:
            f.write(text)
        os.replace(tmp_out, args.out)


if __name__ == '__main__':
    main()
