#!/usr/bin/env bash
# One GPU call after a cLN kernel change: the cuda_ext and Triton correctness tests that the
# change touches, the cuda_ext knob sweep, and the cLN benchmark against its peers.
#   bash bench/gpu_cln_session.sh
# Steps run in priority order, each under its own time limit, so that a slow step cannot take
# the ones before it down.  Logs and results go to $OUT (the device tool brings them back).
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_CUDA_TESTS:-150} python3 -m pytest tests/test_cln.py tests/test_devices.py \
  tests/test_errors.py tests/test_negative_controls.py --backend cuda_ext -q -rs \
  > "$OUT/test_cuda_ext.log" 2>&1; tail -3 "$OUT/test_cuda_ext.log"
timeout -s KILL ${T_TUNE:-100} python3 -m bench.tune --backend cuda_ext --ops cln \
  > "$OUT/tune_cuda_ext.log" 2>&1; tail -40 "$OUT/tune_cuda_ext.log"
timeout -s KILL ${T_BENCH:-200} python3 -m bench --op cln --backend triton,cuda_ext \
  --peers torch-eager,torch-compile --shapes targets --dtype fp32,bf16 --mode fwd,fwd_bwd \
  --cuda-graph all --tag "${TAG:-cln}" --out "$OUT" > "$OUT/bench.log" 2>&1
tail -3 "$OUT/bench.log"
timeout -s KILL ${T_TRITON_TESTS:-100} python3 -m pytest tests/test_cln.py tests/test_triton_paths.py \
  --backend triton -q -k "bfloat16 or float16 or large" > "$OUT/test_triton.log" 2>&1
tail -3 "$OUT/test_triton.log"
