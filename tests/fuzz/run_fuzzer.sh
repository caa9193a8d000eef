#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs a libFuzzer binary for a while from a committed corpus, without
# writing into it: new inputs go to a scratch directory, removed afterwards
# (kept, and its path printed, when FUZZ_KEEP is set). Inputs that crash or
# break a promise are saved under $FUZZ_ARTIFACTS (default ./fuzz-artifacts/)
# for a regression entry in the corpus.
#
# Usage: run_fuzzer.sh FUZZER CORPUS_DIR SECONDS [libFuzzer options...]
# e.g.   nice -n 19 tests/fuzz/run_fuzzer.sh build-fuzz/tests/fuzz/fuzz_npy \
#            tests/fuzz/corpus/npy 600 -dict=tests/fuzz/npy.dict
# Exit: the fuzzer's status (0: nothing found).
set -eu
fuzzer=${1:?usage: run_fuzzer.sh FUZZER CORPUS_DIR SECONDS [options...]}
corpus=${2:?corpus directory}
seconds=${3:?seconds}
shift 3
artifacts=${FUZZ_ARTIFACTS:-$PWD/fuzz-artifacts}
mkdir -p "$artifacts"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/fuzz-corpus.XXXXXX")
if [ -z "${FUZZ_KEEP:-}" ]; then
    trap 'rm -rf "$scratch"' EXIT INT TERM
else
    echo "run_fuzzer: new inputs in $scratch"
fi
# The first directory receives new inputs; the committed one is read only.
"$fuzzer" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$@" "$scratch" "$corpus"
