#!/usr/bin/env bash
# Session 43's last two calls on the final code, on one warm machine: $1 = tests (make test-all,
# 4 xdist workers) or bench (the cLN benchmark with its peers, the README's cLN table, then the
# README's main job). The code differs from bench/gpu_s43_final.sh's only in common.cln's
# forward for training: it passes no mean_last (the state's mean read from the per-frame mean,
# as before session 43), so the training forward's kernel is session 42's again.
#   OUT=out bash bench/gpu_s43_final2.sh tests|bench
set -uo pipefail
source bench/gpu_env.sh
gpu_final_tests_bench "$1" s43-2
