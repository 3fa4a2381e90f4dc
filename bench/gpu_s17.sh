#!/usr/bin/env bash
# Session 17, first call: the dgamma / dbeta column sums of both backends finished in one launch
# by the last block of each column block (Triton COLSUM_ONE_PASS, cuda_ext colsum_last_kernel),
# and the 16-bit Triton backward over 8 warps per tile.  GPU tests of both (the split path
# needs > 256 tiles: the large shapes), then the Triton A/B in one run (bench.tune variants),
# then the backward alone with each backend's kernel list (ablate_cln --bwd).
#   OUT=out bash bench/gpu_s17.sh   (ran at 1a87ab6; the one-pass column sums were then removed: NOTES 20.1)
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_TESTS:-120} python3 -m pytest -q -p no:cacheprovider \
  tests/test_triton_paths.py tests/test_cln.py \
  -k "colsum or ((large_shapes or one_param) and (triton or cuda_ext))" \
  > "$OUT/test-colsum.log" 2>&1
echo "tests rc=$?"; tail -3 "$OUT/test-colsum.log"
timeout -s KILL ${T_TUNE16:-130} python3 -m bench.tune --backend triton --ops cln --parts shapes \
  --dtype bf16 --variants "default,colsum two pass,bwd16 ept32 nreg128,bwd16 ept32 nreg80" \
  > "$OUT/tune-bf16.log" 2>&1
echo "tune rc=$?"; cat "$OUT/tune-bf16.log"
timeout -s KILL ${T_TUNE32:-70} python3 -m bench.tune --backend triton --ops cln --parts shapes \
  --dtype fp32 --variants "default,colsum two pass" > "$OUT/tune-fp32.log" 2>&1
echo "tune rc=$?"; cat "$OUT/tune-fp32.log"
timeout -s KILL ${T_ABL:-170} python3 -m bench.ablate_cln --bwd > "$OUT/ablate-bwd.log" 2>&1
echo "ablate rc=$?"; grep -v Warn "$OUT/ablate-bwd.log"
