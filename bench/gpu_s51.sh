#!/usr/bin/env bash
# Ran at 948d6c9.  The knobs it sweeps were removed later in session 51 (NOTES 52.3), so at
# later commits bench.tune / diag_cln_stream reject its variant names.
# Session 51: cuda_ext's tiles with the sequences in groups (CLN_FWD_SEQ_GROUP /
# CLN_BWD_SEQ_GROUP, include/cln_kernels.cuh cln_tile_at), as session 50 did for Triton.  The
# extension built, its GPU tests of the knob (bitwise the interleaved outputs; -k seq_group)
# into $OUT/test-seqg51.log, the streaming forward's levels with and without groups
# (bench.diag_cln_stream: the kernel, no wait, loads and stores alone) into $OUT/diag51.log,
# then ROUNDS (default 1) rounds of bench.tune (cuda_ext; fp32 and bf16, forward alone and fwd+bwd: default,
# seqg1/2/4/8) into $OUT/tune-seqg51-N.log.  Archived into $OUT/s51.tgz.
#   OUT=out bash bench/gpu_s51.sh
set -uo pipefail
source bench/gpu_env.sh
date +%T
PATHS_TEST=tests/test_cuda_ext_paths.py T_TESTS=150 gpu_test_paths seqg51 "seq_group"
date +%T
timeout -s KILL 150 python3 -m bench.diag_cln_stream \
  --variants "stream,stream diag1 no-wait,stream diag2 load-store,seqg1,seqg1 diag1,seqg1 diag2,seqg2,seqg2 diag1,seqg2 diag2,seqg4,seqg4 diag2" \
  > "$OUT/diag51.log" 2>&1
echo "diag rc=$?"; cat "$OUT/diag51.log"
date +%T
TUNE_BACKEND=cuda_ext ROUNDS=${ROUNDS:-1} T_TUNE=200 gpu_tune_rounds seqg51 \
  "default,seqg1,seqg2,seqg4,seqg8" fwd,fwd_bwd
date +%T
gpu_archive s51
