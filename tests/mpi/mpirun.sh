#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs a test binary on NP MPI ranks of this machine: mpirun.sh NP BINARY
# [ARGS...]. Open MPI is told to run as root (CI's user), to place more
# ranks than cores, and not to bind them (PoCL's threads share the cores);
# each rank's PoCL keeps to one worker thread. Exits 77 (skipped) without
# an mpirun.
np=$1
shift
MPIRUN=$(command -v mpirun || command -v mpiexec) || {
    echo "SKIP: no mpirun"
    exit 77
}
export POCL_MAX_PTHREAD_COUNT=${POCL_MAX_PTHREAD_COUNT:-1}
if "$MPIRUN" --version 2>/dev/null | grep -q "Open MPI"; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    # Shared memory only: no network interface is needed or probed.
    export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
    exec "$MPIRUN" -np "$np" --oversubscribe --bind-to none "$@"
fi
exec "$MPIRUN" -np "$np" "$@"
