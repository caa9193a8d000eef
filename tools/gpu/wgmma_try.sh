#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# First look at the Hopper wgmma PTX kernels on the H200 (issue 13): the
# wgmma rate as `clattn devices --measure` reports it (beside mma.sync's),
# then the standalone fused-kernel harness (check against the reference,
# then B=8 H=32 N=4096 timed). Each runs in a process of its own (a fault
# loses the process's context) and its exit status is printed right after.
# Run from the repository root with .gpu/ and build/ carried:
#   source .gpu/env.sh && bash tools/gpu/wgmma_try.sh
# Under a minute in all (each step has a timeout: 30 s and 25 s).
set -u
export XDG_CACHE_HOME=$(mktemp -d)   # the measurement file goes nowhere lasting
echo "== PTX reports (ptxas -v at build time)"
cat build/cl/*.ptxas.txt 2>/dev/null || echo "no PTX in this build"
echo "== clattn devices --measure --no-sweep (wgmma rate)"
timeout 30 build/tools/clattn devices --measure --no-sweep --repetitions 5
rc=$?; echo "devices --measure exit $rc"
echo "== wgmma_fused harness"
timeout 25 build/tests/perf/wgmma_fused
rc=$?; echo "wgmma_fused exit $rc"
rm -rf "$XDG_CACHE_HOME"
