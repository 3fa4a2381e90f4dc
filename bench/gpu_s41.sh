#!/usr/bin/env bash
# Session 41's call (NOTES 42): the standalone look-back cLN forward prototype
# (bench/lookback/proto.cu: its checks, its timings with stages left out, a 16-byte copy kernel
# and cudaMemcpy of the same bytes) into $OUT/lbp.log, then the cLN benchmark of both compiled
# backends with their peers (gpu_bench_cln) on the unchanged kernels of main.
#   OUT=out bash bench/gpu_s41.sh          # both (the first call)
#   OUT=out bash bench/gpu_s41.sh proto    # the prototype alone (the final call, after its fixes;
#                                          # nvidia-h200-s41-lookback-proto.log is this one's)
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
t0=$(date +%s)
nvcc -O3 -std=c++17 -arch=sm_90 -Ibackends/cuda_ext/include -Ibench/lookback bench/lookback/proto.cu \
  -o /tmp/lbp && timeout -s KILL 150 /tmp/lbp > "$OUT/lbp.log" 2>&1
echo "prototype rc=$? ($(( $(date +%s) - t0 )) s)"; grep -E "^time|copy band" "$OUT/lbp.log"
[ "${1:-}" = proto ] && exit 0
t0=$(date +%s)
timeout 200 python3 -c "import backends.cuda_ext.kernels as k; k.extension()" 2>&1 | tail -3
echo "cuda_ext build: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/gpu.txt"
gpu_bench_cln 240
ls -la "$OUT"
