#!/usr/bin/env bash
# Session 10, third call: the cuda_ext streaming backward with twice the producer and output
# warps (StreamRolesWide, 512 threads) where its ring leaves room for one block per SM,
# against the 256-thread kernel everywhere (A = commit b6254c6's code in exp_a/), alternated
# twice; then every test on the GPU (make test-all) on this tree.
#   rm -rf exp_a && mkdir exp_a && git archive b6254c6 backends common bench | tar -x -C exp_a
#   OUT=out bash bench/gpu_s10c.sh
# The logs bench/results/nvidia-h200-s10c-* are from this tree at commit cbf3ea0 (later
# commits also changed the forward).
set -uo pipefail
source bench/gpu_ab.sh
ab_setup
ab_tune --backend cuda_ext --ops cln --quick --parts shapes,long
source bench/gpu_env.sh > /dev/null  # (the tree's build is done: this only sets the environment)
T_TESTS=${T_TESTS:-330} gpu_test_all
