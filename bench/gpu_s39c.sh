#!/usr/bin/env bash
# Session 39: the forward's last prefix words first loaded before the in-tile scan
# (CLN_FWD_EARLY_POLL, off by default): its GPU tests, then two rounds of bench.tune, forward
# and fwd+bwd, at the target shapes.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s39c.sh
# Runs at dea9a3d (its knob and tests): the early poll lost everywhere (forward +0.2 to +1.8 us)
# and was removed (NOTES 40).
set -uo pipefail
source bench/gpu_env.sh
T_TESTS=${T_TESTS:-150} gpu_paths_then_tune early39 "early" "default,fwd early poll" fwd,fwd_bwd
