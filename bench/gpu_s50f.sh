#!/usr/bin/env bash
# Session 50: sequences in flight in groups (CLN_FWD_SEQ_GROUP / CLN_BWD_SEQ_GROUP), after
# gpu_s50e.sh found the loads and stores alone at 0.85 / 0.91 (bf16 / fp32) at (16, 512, 4000)
# with one sequence after another instead of 0.73 / 0.83 with all 16 interleaved.  The GPU
# path tests of the knob (bitwise the default's outputs; -k seq_group / seq-groups) into
# $OUT/test-seqg50.log, then one round of bench.tune, fp32 and bf16, forward alone and
# fwd+bwd: default, seqg2, seqg4, seqg8 (both directions), "fwd seqg4" (forward only), with
# registers, into $OUT/tune-seqg50-1.log (at B = 2 every variant is the default: a control).
# Archived into $OUT/s50f.tgz.
#   OUT=out bash bench/gpu_s50f.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
date +%T
timeout -s KILL 150 python3 -m pytest -q tests/test_triton_paths.py -k "seq_group or seq-groups" \
  > "$OUT/test-seqg50.log" 2>&1
echo "tests rc=$?"; tail -3 "$OUT/test-seqg50.log"
date +%T
ROUNDS=1 T_TUNE=300 TUNE_ARGS=--regs gpu_tune_rounds seqg50 \
  "default,seqg2,seqg4,seqg8,fwd seqg4" fwd,fwd_bwd
date +%T
gpu_archive s50f
