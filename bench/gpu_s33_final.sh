#!/usr/bin/env bash
# Session 33's final call on the final code: make test-all, then the cLN benchmark with its peers
# (the README's cLN table), in one archive.
#   OUT=out bash bench/gpu_s33_final.sh
set -uo pipefail
source bench/gpu_env.sh
gpu_final_call all s33-final
ls -la "$OUT"
