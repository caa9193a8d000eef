# Correctness of every path on NVIDIA, then the naive path's GEMM variants
# (CLATTN_NV_GEMM: off = portable kernel, or BMxBNxBK:WMxWN:STAGES).
source .gpu/env.sh
c=build/tools/clattn
$c verify > $OUT/verify.txt 2>&1; echo "verify exit $?"; grep -E "FAIL|ERROR" $OUT/verify.txt | head; tail -2 $OUT/verify.txt
build/tests/test_attention > $OUT/test_attention.txt 2>&1; echo "test_attention exit $?"
$c devices --measure 2>&1 | grep -E "tensor|fp32 FMA|bandwidth \(|last-level" 
for g in off "" 128x128x32:2x4:2 128x128x64:2x4:2 128x256x32:2x4:3; do
  echo "== CLATTN_NV_GEMM=$g"
  CLATTN_NV_GEMM=$g $c bench -N 4096 --path naive --causal no --reps-seconds 0.5 2>/dev/null | grep -E "^ *4096"
done
