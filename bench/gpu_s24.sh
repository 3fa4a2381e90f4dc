#!/usr/bin/env bash
# Session 24: the first-wave stagger and the ticket runs measured again now that tiles go by
# program id (CLN_TICKET_ATOMIC = False; the stagger was tuned with the atomic counter), two
# rounds of bench.tune each in one call: forward variants on the forward, backward variants
# on fwd+bwd.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s24.sh
set -uo pipefail
source bench/gpu_env.sh
T_TUNE=${T_TUNE_FWD:-125} gpu_tune_rounds fwd24 \
  "default,no stagger,stagger fwd 2us,stagger fwd 4us,stagger fwd 5us,run4" fwd
T_TUNE=${T_TUNE_BWD:-110} gpu_tune_rounds bwd24 "default,stagger bwd 2us,stagger bwd 4us" fwd_bwd
