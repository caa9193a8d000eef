source .gpu/env.sh; export PATH=$PATH:/usr/local/cuda/bin
export CLATTN_BUILD_LOG_DIR=$OUT/bl; mkdir -p $CLATTN_BUILD_LOG_DIR
for q in volatile " "; do echo "== MMA_QUAL=[$q]"; CLATTN_BUILD_OPTIONS="-cl-nv-verbose -DMMA_QUAL=$q" build/tools/clattn tune -d 128 -B 4 -H 16 -N 4096 --no-save --causal no 2>&1 | grep -E "128x|64x64"; done
for d in 64 128 256; do python3 .gpu/torch_sdpa.py 4096 4 16 $d | tail -2; done
b=$(grep -l "DMT=2 -DCAUSAL=0" $CLATTN_BUILD_LOG_DIR/*.log | grep -v x | head -1)
for f in $(grep -l -- "-DD=128 -DBN=64 -DWARPS=4 -DMT=2 -DCAUSAL=0" $CLATTN_BUILD_LOG_DIR/*.log); do bin=${f%.log}.bin; echo $bin; grep -q "MMA_QUAL= " $f && n=nv || n=v; ptxas -arch=sm_90 -v $bin -o /tmp/k_$n.cubin 2>&1 | tail -2; cuobjdump -sass /tmp/k_$n.cubin > $OUT/sass_$n.txt; cp $bin $OUT/ptx_$n.txt; done
rm -rf $CLATTN_BUILD_LOG_DIR; ls $OUT
