#!/usr/bin/env bash
# GPU call: where the cuda_ext streaming cLN forward spends its time (bench/diag_cln_stream.py
# levels; with TESTS=1 first the cLN tests of cuda_ext), the defaults' figures (bench.tune --quick), then (NCU=1) one ncu profile of the
# default kernel at (16, 512, 4000) fp32.
#   bash bench/gpu_stream_diag.sh
set -uo pipefail
source bench/gpu_env.sh
if [ "${TESTS:-0}" = 1 ]; then
  timeout -s KILL 150 python3 -m pytest -q -x -p no:cacheprovider tests/test_cuda_ext_paths.py \
    tests/test_cln.py -k "cuda_ext or paths" > "$OUT/tests-stream.log" 2>&1
  echo "tests rc=$?"; tail -3 "$OUT/tests-stream.log"
fi
timeout -s KILL ${T_DIAG:-150} python3 -m bench.diag_cln_stream > "$OUT/diag-stream.log" 2>&1
cat "$OUT/diag-stream.log"
timeout -s KILL ${T_TUNE:-120} python3 -m bench.tune --backend cuda_ext --ops cln --quick \
  > "$OUT/tune-cln-quick.log" 2>&1; cat "$OUT/tune-cln-quick.log"
if [ "${NCU:-0}" = 1 ]; then
  timeout -s KILL ${T_NCU:-150} ncu --clock-control none --kernel-name regex:cln_fwd_stream \
    --launch-skip 1 --launch-count 1 --section SpeedOfLight --section Occupancy \
    --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
    --section SourceCounters python3 -m bench.diag_cln_stream --once > "$OUT/ncu-stream.txt" 2>&1
  echo "ncu rc=$?"
fi
