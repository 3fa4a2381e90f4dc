#!/usr/bin/env bash
# Session 11, final call on the code of main (bench/results/nvidia-h200-s11-final-*): the same
# commands as session 10's final benchmark: cLN of both compiled backends with eager and
# torch.compile in one run (CUDA graphs), then the same-size copy and the long sequence.
# (make test-all ran on the same kernels in the gpu_s11b.sh call; the RMSNorm code is unchanged
# since nvidia-h200-s9-final-rms-peers.md.)
#   OUT=out bash bench/gpu_s11_final.sh
exec bash bench/gpu_s10_final.sh bench
