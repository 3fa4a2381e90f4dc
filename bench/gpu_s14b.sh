#!/usr/bin/env bash
# Session 14, second call: the cuda_ext forward's two-read path (NORMK_CLN_REREAD, NOTES 17)
# against the default, at the six target cases; ran at 3f699f3 (the path was then removed: slower).
#   OUT=out bash bench/gpu_s14b.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_TUNE:-330} python3 -m bench.tune --backend cuda_ext --ops cln --parts shapes \
  --variants "default,reread So1,reread So2,reread S2 So1,reread S2 So2,reread ppr8 S2 So2,reread ppr8 S3 So2,reread ppr16 S2 So2" \
  > "$OUT/tune-reread.log" 2>&1
echo "tune rc=$?"; cat "$OUT/tune-reread.log"
