# Experiment: tune d=128 (and optionally others) and dump the SASS of the
# 128x64 tensor-core variant. Usage: tools/gpu/exp1.sh "64,128,256"
source .gpu/env.sh; export PATH=$PATH:/usr/local/cuda/bin
dims=${1:-128}
export CLATTN_BUILD_LOG_DIR=$OUT/bl; mkdir -p $CLATTN_BUILD_LOG_DIR
CLATTN_BUILD_OPTIONS="-cl-nv-verbose" build/tools/clattn tune -d $dims -B 4 -H 16 -N 4096 --no-save 2>&1 | grep -E "x|best"
for f in $(grep -l -- "-DD=128 -DBN=64 -DWARPS=4 -DMT=2 -DCAUSAL=0" $CLATTN_BUILD_LOG_DIR/*.log | head -1); do
  bin=${f%.log}.bin; tr -d '\000' < $bin > /tmp/k.ptx
  ptxas -arch=sm_90 -v /tmp/k.ptx -o /tmp/k.cubin 2>&1 | tail -1; cuobjdump -sass /tmp/k.cubin > $OUT/sass.txt; cp /tmp/k.ptx $OUT/k.ptx
done
rm -rf $CLATTN_BUILD_LOG_DIR
