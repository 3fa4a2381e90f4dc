#!/usr/bin/env bash
# Session 24: with the backward's stagger on (CLN_BWD_STAGGER_NS = 4000): the Triton cLN tests
# on the GPU, then two rounds of bench.tune on fwd+bwd: the stagger's neighbours and the
# backward's tile variants measured again.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s24c.sh
set -uo pipefail
source bench/gpu_env.sh
par=$(gpu_xdist_args)
timeout -s KILL ${T_TESTS:-200} python3 -m pytest -q $par --backend triton tests/test_cln.py \
  tests/test_triton_paths.py tests/test_negative_controls.py > "$OUT/test-triton.log" 2>&1
echo "tests rc=$?"; tail -3 "$OUT/test-triton.log"
T_TUNE=${T_TUNE:-120} gpu_tune_rounds bwd24c \
  "default,no bwd stagger,stagger bwd 3us,stagger bwd 5us,bwd tile4096,bwd ept32,bwd16 tile8192" \
  fwd_bwd
