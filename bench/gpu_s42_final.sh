#!/usr/bin/env bash
# Session 42's final call on the final code (the defaults of session 41's kernels; the 4-byte
# pace knob off), within the 600-s limit: the cLN benchmark with its peers (the README's cLN
# table), then the README's main job (make bench, every backend and peer, plots). make test-all
# ran in the call before (bench/gpu_s42c.sh, at 28f14cc: the same code with the fp32 forward
# paced by default; both paths ran in it).
#   OUT=out bash bench/gpu_s42_final.sh
set -uo pipefail
source bench/gpu_env.sh
gpu_final_tests_bench bench s42
