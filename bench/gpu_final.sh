#!/usr/bin/env bash
# The last GPU call of a session: every test on the GPU, then the figures of the code as it
# is (each backend's defaults, bench.tune --quick: checked against the float64 references,
# CUDA-graph timing, copy bandwidth of the same run).
#   bash bench/gpu_final.sh
# Steps run in priority order, each under its own time limit; logs go to $OUT.
set -uo pipefail
source bench/gpu_env.sh
gpu_test_all
timeout -s KILL ${T_CLN:-90} python3 -m bench.tune --backend ${CLN_BACKENDS:-cuda_ext,triton} \
  --ops cln --quick > "$OUT/tune-cln-defaults.log" 2>&1; cat "$OUT/tune-cln-defaults.log"
timeout -s KILL ${T_RMS:-60} python3 -m bench.tune --backend ${RMS_BACKENDS:-triton,cuda_ext} \
  --ops rmsnorm --quick > "$OUT/tune-rmsnorm-defaults.log" 2>&1; cat "$OUT/tune-rmsnorm-defaults.log"
