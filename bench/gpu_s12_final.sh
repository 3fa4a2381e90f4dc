#!/usr/bin/env bash
# Session 12, final calls on the code of main (bench/results/nvidia-h200-s12-final-*): the
# streaming kernels' stages refilled by the output warps with 3-stage plans (the TMA path's
# default since this session).  The same commands as sessions 10-11's final calls.
#   OUT=out bash bench/gpu_s12_final.sh bench   cLN of both compiled backends with eager and
#                                                torch.compile in one run (CUDA graphs), the
#                                                same-size copy and the long sequence
#   OUT=out bash bench/gpu_s12_final.sh tests   every test on the GPU (make test-all)
exec bash bench/gpu_s10_final.sh "${1:-bench}"
