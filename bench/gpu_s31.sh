#!/usr/bin/env bash
# Session 31: the Triton forward's first-wave stagger again (4, 5, 6 us against the default 3),
# now with tiles by program id and both PDL chains: session 24 (27.3) saw 5 us gain 1.2 us at
# (2, 128, 64000) fp32 and stay within 0.2 us elsewhere, before PDL. Two rounds, fwd and fwd+bwd.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s31.sh
set -uo pipefail
source bench/gpu_env.sh
T_TUNE=${T_TUNE:-190} gpu_tune_rounds stagger31 \
  "default,stagger fwd 4us,stagger fwd 5us,stagger fwd 6us" fwd,fwd_bwd
