# Kernel variants in exp/<v>/ (CLATTN_KERNEL_DIR), timed by clattn tune.
source .gpu/env.sh
t() { CLATTN_KERNEL_DIR=exp/$1 build/tools/clattn tune -B 4 -H 16 -N 4096 --no-save "${@:2}" 2>&1 | grep -vE "^(device|shape)"; }
for v in v0 v5; do echo "== $v"; t $v -d 128 --tiles 128x32,128x64; t $v -d 64 --tiles 128x128; t $v -d 256 --tiles 128x64,128x128; done
